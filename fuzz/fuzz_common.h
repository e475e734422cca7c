/* fuzz_common.h -- what every harness of fuzz/ shares: a context whose host allocator
 * fails beyond a byte budget (so a fuzzed size line or spec cannot exhaust the machine,
 * and the out-of-memory paths run), the invariant check that aborts with a message, and
 * the library-side leak check (the context's own accounting must be back at zero).
 *
 * Each harness is one file fuzz/fuzz_NAME.c defining sap_fuzz_NAME(data, size) and, unless
 * SAP_FUZZ_NO_ENTRY is defined, libFuzzer's LLVMFuzzerTestOneInput calling it; the
 * regression test tests/test_fuzz_regress.c includes the harness files with
 * SAP_FUZZ_NO_ENTRY and replays fuzz/regress/NAME/... through the same functions. */
#ifndef SAP_FUZZ_COMMON_H
#define SAP_FUZZ_COMMON_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* getpid */
#endif
#include <sap.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Invariant: print what broke and abort (libFuzzer saves the input as a crash). */
#define FUZZ_CHECK(cond, ...)                                                                \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

/* ---- a host allocator with a byte budget ------------------------------------------- */

typedef struct fuzz_budget {
    size_t limit, used, peak;
    int64_t failed;
} fuzz_budget;

/* each block carries its size in a 16-byte header (keeps malloc's alignment) */
#define FUZZ_HDR 16

static inline void *fuzz_budget_alloc(void *state, size_t bytes)
{
    fuzz_budget *b = (fuzz_budget *)state;
    if (bytes > b->limit - b->used || bytes > SIZE_MAX - FUZZ_HDR) {
        b->failed++;
        return NULL;
    }
    unsigned char *p = (unsigned char *)malloc(bytes + FUZZ_HDR);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof(bytes));
    b->used += bytes;
    if (b->used > b->peak) b->peak = b->used;
    return p + FUZZ_HDR;
}

static inline void fuzz_budget_free(void *state, void *ptr)
{
    if (!ptr) return;
    fuzz_budget *b = (fuzz_budget *)state;
    unsigned char *p = (unsigned char *)ptr - FUZZ_HDR;
    size_t bytes;
    memcpy(&bytes, p, sizeof(bytes));
    FUZZ_CHECK(bytes <= b->used, "freeing %zu bytes with %zu in use", bytes, b->used);
    b->used -= bytes;
    free(p);
}

/* A CPU context, one thread, silent, allocating through *budget (limit bytes). */
static inline sap_context *fuzz_context(fuzz_budget *budget, size_t limit)
{
    memset(budget, 0, sizeof(*budget));
    budget->limit = limit;
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.threads = 1;
    cfg.print_level = SAP_PRINT_SILENT;
    cfg.allocator.host_alloc = fuzz_budget_alloc;
    cfg.allocator.host_free = fuzz_budget_free;
    cfg.allocator.state = budget;
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, &cfg);
    FUZZ_CHECK(st == SAP_OK && ctx, "sap_context_create: %s", sap_status_name(st));
    return ctx;
}

/* After every object of ctx is destroyed: nothing of it is still allocated. */
static inline void fuzz_context_done(sap_context *ctx, const fuzz_budget *budget)
{
    sap_context_stats s;
    FUZZ_CHECK(sap_context_get_stats(ctx, &s) == SAP_OK, "sap_context_get_stats");
    FUZZ_CHECK(s.host_bytes_in_use == 0, "%lld host bytes still in use after every object was destroyed",
               (long long)s.host_bytes_in_use);
    sap_context_destroy(ctx);
    FUZZ_CHECK(budget->used == 0, "%zu bytes of the allocator hook never freed", budget->used);
}

/* An error status leaves a message. */
static inline void fuzz_check_error(const sap_context *ctx, sap_status st, const char *what)
{
    if (st >= 0) return;
    const char *msg = sap_context_last_error(ctx);
    FUZZ_CHECK(msg && msg[0], "%s returned %s without a message", what, sap_status_name(st));
}

/* A parsed/generated CSR is canonical, its values finite unless allowed. */
static inline void fuzz_check_csr(const sap_csr *A, int allow_nonfinite, const char *what)
{
    FUZZ_CHECK(A, "%s succeeded without a matrix", what);
    sap_status st = sap_csr_check(A);
    FUZZ_CHECK(st == SAP_OK, "%s gave a CSR that fails sap_csr_check: %s (%s)", what, sap_status_name(st),
               sap_context_last_error(A->ctx));
    if (!allow_nonfinite)
        for (sap_int k = 0; k < A->nnz; k++)
            FUZZ_CHECK(isfinite(A->val[k]), "%s gave a non-finite value at entry %lld", what, (long long)k);
}

/* Same shape, pattern and bit-identical values. */
static inline int fuzz_csr_equal(const sap_csr *A, const sap_csr *B)
{
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz) return 0;
    if (memcmp(A->rowptr, B->rowptr, (size_t)(A->nrows + 1) * sizeof(sap_int))) return 0;
    if (A->nnz && memcmp(A->colind, B->colind, (size_t)A->nnz * sizeof(sap_int))) return 0;
    for (sap_int k = 0; k < A->nnz; k++)
        if (!(A->val[k] == B->val[k] || (isnan(A->val[k]) && isnan(B->val[k])))) return 0;
    return 1;
}

/* NUL-terminated copy of the input (malloc'd). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = (char *)malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A private temporary file name for this process (reused by every input). */
static inline void fuzz_temp_path(char *path, size_t size, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, size, "%s/sap_fuzz_%ld%s", dir && dir[0] ? dir : "/tmp", (long)getpid(), suffix);
}

#endif /* SAP_FUZZ_COMMON_H */
