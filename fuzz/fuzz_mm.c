/* fuzz_mm.c -- the Matrix Market reader from memory (sap_mm_parse_csr).
 *
 * The input is the file text itself (the seeds are ordinary .mtx files).  It is parsed
 * twice: with the default options and with (allow_nonfinite, keep the stored triangle).
 * Invariants: a success gives a canonical CSR (sap_csr_check) of the size the info
 * reports, finite values unless allowed; the stored-triangle parse of a general file
 * equals the default parse; a finite result written back (sap_mm_write_csr, 17 digits)
 * reads back bit-identical; every error leaves a message; nothing leaks.  The context's
 * allocator fails beyond 64 MB (size lines asking for more give an error, not an OOM). */
#include "fuzz_common.h"

#define FUZZ_MM_BUDGET ((size_t)64 << 20)

/* writes A and reads it back: the same matrix */
static void fuzz_mm_roundtrip(sap_context *ctx, const sap_csr *A)
{
    if (A->nnz > 4096 || A->nrows > 100000 || A->ncols > 100000) return; /* keep it quick */
    char path[300];
    fuzz_temp_path(path, sizeof(path), "_rt.mtx");
    sap_mm_write_options wo;
    sap_mm_write_options_init(&wo);
    sap_status st = sap_mm_write_csr(A, path, &wo);
    fuzz_check_error(ctx, st, "sap_mm_write_csr");
    if (st == SAP_ERR_OUT_OF_MEMORY) return;
    FUZZ_CHECK(st == SAP_OK, "sap_mm_write_csr of a parsed matrix: %s (%s)", sap_status_name(st),
               sap_context_last_error(ctx));
    sap_csr *B = NULL;
    st = sap_mm_read_csr(ctx, path, NULL, &B, NULL);
    fuzz_check_error(ctx, st, "sap_mm_read_csr (round trip)");
    if (st == SAP_OK) {
        FUZZ_CHECK(fuzz_csr_equal(A, B), "the matrix written and read back differs");
    } else {
        FUZZ_CHECK(st == SAP_ERR_OUT_OF_MEMORY, "reading back a written matrix: %s (%s)", sap_status_name(st),
                   sap_context_last_error(ctx));
    }
    sap_csr_destroy(B);
    remove(path);
}

static sap_status fuzz_mm_parse(sap_context *ctx, const char *text, size_t len, const sap_mm_read_options *opt,
                                sap_csr **A, sap_mm_info *info)
{
    memset(info, 0, sizeof(*info));
    sap_status st = sap_mm_parse_csr(ctx, text, len, opt, A, info);
    fuzz_check_error(ctx, st, "sap_mm_parse_csr");
    if (st < 0) {
        FUZZ_CHECK(*A == NULL, "an error (%s) left a matrix", sap_status_name(st));
        return st;
    }
    /* the one warning a read may give: a symmetric file storing entries above the diagonal */
    FUZZ_CHECK(st == SAP_OK || st == SAP_WARN_MM_UPPER, "sap_mm_parse_csr returned the warning %s",
               sap_status_name(st));
    FUZZ_CHECK(st == SAP_OK || sap_context_last_error(ctx)[0], "the warning %s has no message", sap_status_name(st));
    fuzz_check_csr(*A, opt->allow_nonfinite, "sap_mm_parse_csr");
    FUZZ_CHECK((*A)->nrows == info->nrows && (*A)->ncols == info->ncols, "CSR %lld x %lld, info %lld x %lld",
               (long long)(*A)->nrows, (long long)(*A)->ncols, (long long)info->nrows, (long long)info->ncols);
    FUZZ_CHECK(!opt->require_square || info->nrows == info->ncols, "require_square let a rectangular matrix through");
    FUZZ_CHECK(info->bytes == (int64_t)len, "info.bytes %lld for %zu bytes", (long long)info->bytes, len);
    return st;
}

int sap_fuzz_mm(const uint8_t *data, size_t size)
{
    fuzz_budget budget;
    sap_context *ctx = fuzz_context(&budget, FUZZ_MM_BUDGET);
    /* the exact bytes in their own allocation: ASan sees any read past the end */
    char *text = (char *)malloc(size ? size : 1);
    if (size) memcpy(text, data, size);

    sap_mm_read_options def, raw;
    sap_mm_read_options_init(&def);
    sap_mm_read_options_init(&raw);
    raw.allow_nonfinite = 1;
    raw.expand_symmetry = 0;
    raw.require_square = size % 2; /* both ways, over the inputs */

    sap_csr *A = NULL, *B = NULL;
    sap_mm_info ia, ib;
    sap_status sa = fuzz_mm_parse(ctx, text, size, &def, &A, &ia);
    sap_status sb = fuzz_mm_parse(ctx, text, size, &raw, &B, &ib);
    if (sa == SAP_OK) {
        /* what the default accepts, the laxer options accept too (unless not square) */
        FUZZ_CHECK(sb == SAP_OK || sb == SAP_ERR_NOT_SQUARE || sb == SAP_ERR_OUT_OF_MEMORY,
                   "default parse OK but allow_nonfinite/expand_symmetry=0 gives %s (%s)", sap_status_name(sb),
                   sap_context_last_error(ctx));
        if (sb == SAP_OK && ia.symmetry == SAP_GENERAL)
            FUZZ_CHECK(fuzz_csr_equal(A, B), "a general file parses differently with expand_symmetry=0");
        fuzz_mm_roundtrip(ctx, A);
    }
    sap_csr_destroy(A);
    sap_csr_destroy(B);
    free(text);
    fuzz_context_done(ctx, &budget);
    return 0;
}

#ifndef SAP_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return sap_fuzz_mm(data, size); }
#endif
