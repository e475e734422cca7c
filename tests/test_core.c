/* test_core.c -- contexts, backends, statuses, errors, logging, allocator hooks and
 * accounting, version queries, NULL safety. */
#include "testing.h"

#include "base/base.h" /* sap__error / sap__log / rng for the logging and rng checks */

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- context creation and configuration ------------------------------------------------ */

static void test_config(void)
{
    sap_context_config cfg;
    memset(&cfg, 0x5a, sizeof(cfg));
    sap_context_config_init(&cfg);
    CHECK(cfg.backend == SAP_BACKEND_AUTO);
    CHECK(cfg.device == 0);
    CHECK(cfg.threads == 0);
    CHECK(cfg.print_level == SAP_PRINT_WARNINGS);
    CHECK(cfg.allocator.host_alloc == NULL && cfg.allocator.host_free == NULL);
    CHECK(cfg.allocator.device_alloc == NULL && cfg.allocator.device_free == NULL);
    CHECK(cfg.log == NULL && cfg.log_state == NULL);
    sap_context_config_init(NULL); /* no crash */

    /* defaults (cfg NULL) */
    sap_context *ctx = NULL;
    CHECK_STATUS(ctx, sap_context_create(&ctx, NULL), SAP_OK);
    CHECK(ctx != NULL);
    if (ctx) {
        CHECK(sap_context_threads(ctx) >= 1);
        CHECK(sap_context_print_level(ctx) == SAP_PRINT_WARNINGS);
        CHECK(strcmp(sap_context_last_error(ctx), "") == 0);
        CHECK(sap_context_device_name(ctx) != NULL && sap_context_device_name(ctx)[0] != '\0');
        sap_backend b = sap_context_backend(ctx);
        CHECK(b == SAP_BACKEND_CPU || (b == SAP_BACKEND_CUDA && sap_has_cuda()));
        sap_context_stats s;
        CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
        CHECK(s.failed_allocs == 0);
        if (b == SAP_BACKEND_CPU) CHECK(s.host_bytes_in_use == 0 && s.host_allocs == 0);
        else CHECK(s.host_bytes_peak >= s.host_bytes_in_use); /* cuda keeps its own state */
        sap_context_destroy(ctx);
    }

    /* threads */
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.threads = 3;
    cfg.print_level = SAP_PRINT_SILENT;
    ctx = NULL;
    CHECK_STATUS(ctx, sap_context_create(&ctx, &cfg), SAP_OK);
    if (ctx) {
        CHECK(sap_context_threads(ctx) == 3);
        CHECK(strstr(sap_context_device_name(ctx), "cpu") != NULL);
        CHECK(strstr(sap_context_device_name(ctx), "3 threads") != NULL);
        CHECK_OK(ctx, sap_context_set_threads(ctx, 1));
        CHECK(sap_context_threads(ctx) == 1);
        CHECK(strstr(sap_context_device_name(ctx), "1 thread") != NULL);
        CHECK_OK(ctx, sap_context_set_threads(ctx, 0)); /* back to the default */
        CHECK(sap_context_threads(ctx) >= 1);
        CHECK_STATUS(ctx, sap_context_set_threads(ctx, -2), SAP_ERR_INVALID);
        CHECK(strstr(sap_context_last_error(ctx), "threads") != NULL);
        CHECK_STATUS(ctx, sap_context_set_print_level(ctx, 5), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap_context_set_print_level(ctx, -1), SAP_ERR_INVALID);
        CHECK(sap_context_print_level(ctx) == SAP_PRINT_SILENT);
        CHECK_OK(ctx, sap_context_set_print_level(ctx, SAP_PRINT_DEBUG));
        CHECK(sap_context_print_level(ctx) == SAP_PRINT_DEBUG);
        sap_context_destroy(ctx);
    }

    /* invalid configurations: SAP_ERR_INVALID and *ctx NULL */
    struct {
        const char *what;
        int backend, device, threads, level;
    } bad[] = {{"negative threads", SAP_BACKEND_CPU, 0, -1, SAP_PRINT_WARNINGS},
               {"negative device", SAP_BACKEND_CPU, -1, 0, SAP_PRINT_WARNINGS},
               {"unknown backend", 7, 0, 0, SAP_PRINT_WARNINGS},
               {"negative backend", -1, 0, 0, SAP_PRINT_WARNINGS},
               {"print level too high", SAP_BACKEND_CPU, 0, 0, SAP_PRINT_DEBUG + 1},
               {"negative print level", SAP_BACKEND_CPU, 0, 0, -1}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        sap_context_config_init(&cfg);
        cfg.backend = (sap_backend)bad[k].backend;
        cfg.device = bad[k].device;
        cfg.threads = bad[k].threads;
        cfg.print_level = bad[k].level;
        ctx = (sap_context *)&cfg;
        sap_status st = sap_context_create(&ctx, &cfg);
        CHECK_MSG(st == SAP_ERR_INVALID, "%s: %s", bad[k].what, sap_status_name(st));
        CHECK_MSG(ctx == NULL, "%s: ctx not NULL", bad[k].what);
        if (st == SAP_OK) sap_context_destroy(ctx);
    }
    CHECK(sap_context_create(NULL, NULL) == SAP_ERR_INVALID);
}

/* ---- backends ------------------------------------------------------------------------- */

typedef struct log_capture {
    int count[5];
    char last[5][SAP_ERRMSG_LEN];
} log_capture;

static void capture_log(void *state, int level, const char *message)
{
    log_capture *c = state;
    if (level >= 0 && level < 5) {
        c->count[level]++;
        snprintf(c->last[level], sizeof(c->last[level]), "%s", message);
    }
}

static void test_backends(void)
{
    CHECK(strcmp(sap_backend_name(SAP_BACKEND_AUTO), "auto") == 0);
    CHECK(strcmp(sap_backend_name(SAP_BACKEND_CPU), "cpu") == 0);
    CHECK(strcmp(sap_backend_name(SAP_BACKEND_CUDA), "cuda") == 0);
    CHECK(sap_backend_name((sap_backend)42) != NULL);
    sap_backend b = SAP_BACKEND_AUTO;
    CHECK(sap_backend_parse("cpu", &b) == SAP_OK && b == SAP_BACKEND_CPU);
    CHECK(sap_backend_parse("cuda", &b) == SAP_OK && b == SAP_BACKEND_CUDA);
    CHECK(sap_backend_parse("auto", &b) == SAP_OK && b == SAP_BACKEND_AUTO);
    CHECK(sap_backend_parse("tpu", &b) == SAP_ERR_INVALID && b == SAP_BACKEND_AUTO);
    CHECK(sap_backend_parse(NULL, &b) == SAP_ERR_INVALID);
    CHECK(sap_backend_parse("cpu", NULL) == SAP_ERR_INVALID);

    sap_context_config cfg;
    sap_context *ctx = NULL;

    /* cpu always works, and computes */
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    CHECK_STATUS(ctx, sap_context_create(&ctx, &cfg), SAP_OK);
    if (ctx) {
        CHECK(sap_context_backend(ctx) == SAP_BACKEND_CPU);
        sap_csr *A = NULL;
        sap_int rp[] = {0, 1, 2}, ci[] = {1, 0};
        double v[] = {2, 3}, x[] = {1, 1}, y[] = {0, 0};
        CHECK_OK(ctx, sap_csr_from_arrays(ctx, 2, 2, rp, ci, v, &A));
        CHECK_OK(ctx, sap_csr_spmv(A, 1.0, x, 0.0, y));
        CHECK(y[0] == 2 && y[1] == 3);
        sap_csr_destroy(A);
        sap_context_destroy(ctx);
    }

    /* cuda: not compiled, or no device (this test may also run where a GPU exists) */
    log_capture cap;
    memset(&cap, 0, sizeof(cap));
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CUDA;
    cfg.log = capture_log;
    cfg.log_state = &cap;
    cfg.print_level = SAP_PRINT_ERRORS;
    ctx = (sap_context *)&cfg;
    sap_status st = sap_context_create(&ctx, &cfg);
    int cuda_works = 0;
    if (!sap_has_cuda()) {
        CHECK_MSG(st == SAP_ERR_NOT_COMPILED, "cuda in a CPU-only build: %s", sap_status_name(st));
        CHECK(ctx == NULL);
        CHECK(cap.count[SAP_PRINT_ERRORS] == 1);
        CHECK(strstr(cap.last[SAP_PRINT_ERRORS], "CUDA") != NULL);
    } else if (st == SAP_OK) {
        cuda_works = 1;
        CHECK(ctx && sap_context_backend(ctx) == SAP_BACKEND_CUDA);
        CHECK(strstr(sap_context_device_name(ctx), "cuda") != NULL);
        sap_context_destroy(ctx);
    } else {
        CHECK_MSG(st == SAP_ERR_NO_DEVICE, "cuda without a GPU: %s", sap_status_name(st));
        CHECK(ctx == NULL);
        CHECK(cap.count[SAP_PRINT_ERRORS] == 1);
        printf("test_core: cuda backend unavailable: %s\n", cap.last[SAP_PRINT_ERRORS]);
    }
    /* a device id past the last device */
    if (sap_has_cuda()) {
        cfg.device = 1000;
        ctx = (sap_context *)&cfg;
        CHECK(sap_context_create(&ctx, &cfg) == SAP_ERR_NO_DEVICE);
        CHECK(ctx == NULL);
        cfg.device = 0;
    }

    /* auto: cuda where it works, else cpu, saying so at SAP_PRINT_INFO */
    memset(&cap, 0, sizeof(cap));
    cfg.backend = SAP_BACKEND_AUTO;
    cfg.print_level = SAP_PRINT_INFO;
    ctx = NULL;
    CHECK_STATUS(ctx, sap_context_create(&ctx, &cfg), SAP_OK);
    if (ctx) {
        CHECK(sap_context_backend(ctx) == (cuda_works ? SAP_BACKEND_CUDA : SAP_BACKEND_CPU));
        if (!cuda_works) {
            CHECK(cap.count[SAP_PRINT_INFO] == 1);
            CHECK(strstr(cap.last[SAP_PRINT_INFO], "cpu") != NULL);
        }
        CHECK(cap.count[SAP_PRINT_ERRORS] == 0);
        sap_context_destroy(ctx);
    }
    /* ... and silently below SAP_PRINT_INFO */
    memset(&cap, 0, sizeof(cap));
    cfg.print_level = SAP_PRINT_WARNINGS;
    ctx = NULL;
    CHECK_STATUS(ctx, sap_context_create(&ctx, &cfg), SAP_OK);
    CHECK(cap.count[SAP_PRINT_INFO] == 0 && cap.count[SAP_PRINT_ERRORS] == 0);
    sap_context_destroy(ctx);
}

/* ---- statuses --------------------------------------------------------------------------- */

static void test_statuses(void)
{
    struct {
        sap_status value;
        const char *name, *text;
    } table[] = {
#define ROW(name, value, text) {name, #name, text},
        SAP_STATUS_TABLE(ROW)
#undef ROW
    };
    size_t n = sizeof(table) / sizeof(table[0]);
    CHECK(n >= 20);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++)
            CHECK_MSG(table[i].value != table[j].value, "%s and %s share the value %d", table[i].name,
                      table[j].name, (int)table[i].value);
        const char *s = sap_status_string(table[i].value);
        CHECK_MSG(s && s[0] && strcmp(s, table[i].text) == 0, "%s: string '%s'", table[i].name, s ? s : "(null)");
        CHECK_MSG(strcmp(s, "unknown status") != 0, "%s", table[i].name);
        CHECK_MSG(strcmp(sap_status_name(table[i].value), table[i].name) == 0, "%s: name '%s'", table[i].name,
                  sap_status_name(table[i].value));
        if (strncmp(table[i].name, "SAP_WARN_", 9) == 0) CHECK_MSG(table[i].value > 0, "%s", table[i].name);
        else if (strncmp(table[i].name, "SAP_ERR_", 8) == 0) CHECK_MSG(table[i].value < 0, "%s", table[i].name);
        else CHECK_MSG(strcmp(table[i].name, "SAP_OK") == 0 && table[i].value == 0, "%s", table[i].name);
    }
    CHECK(SAP_OK == 0);
    static const int unknown[] = {12345, -999, 6, -20, INT32_MIN};
    for (size_t k = 0; k < sizeof(unknown) / sizeof(unknown[0]); k++) {
        int known = 0;
        for (size_t i = 0; i < n; i++) known |= (int)table[i].value == unknown[k];
        if (known) continue;
        CHECK(strcmp(sap_status_string((sap_status)unknown[k]), "unknown status") == 0);
        CHECK(strcmp(sap_status_name((sap_status)unknown[k]), "SAP_UNKNOWN") == 0);
    }
}

/* ---- errors and logging ------------------------------------------------------------------ */

/* "file.c:NNN: " somewhere in msg, with that file name */
static int has_file_line(const char *msg, const char *file)
{
    const char *p = strstr(msg, file);
    if (!p) return 0;
    p += strlen(file);
    if (*p++ != ':') return 0;
    if (!isdigit((unsigned char)*p)) return 0;
    while (isdigit((unsigned char)*p)) p++;
    return *p == ':';
}

static void test_errors_and_log(void)
{
    log_capture cap;
    memset(&cap, 0, sizeof(cap));
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.log = capture_log;
    cfg.log_state = &cap;
    sap_context *ctx = NULL;
    CHECK_STATUS(ctx, sap_context_create(&ctx, &cfg), SAP_OK);
    if (!ctx) return;
    CHECK(strcmp(sap_context_last_error(ctx), "") == 0);

    /* an error from the library: file:line and the reason; logged at SAP_PRINT_ERRORS */
    sap_csr *A = (sap_csr *)&cfg;
    CHECK_STATUS(ctx, sap_csr_create(ctx, -1, 3, 0, &A), SAP_ERR_INVALID);
    CHECK(A == NULL);
    const char *msg = sap_context_last_error(ctx);
    CHECK_MSG(has_file_line(msg, "csr.c"), "message '%s'", msg);
    CHECK_MSG(strstr(msg, "negative") != NULL, "message '%s'", msg);
    CHECK(strchr(msg, '/') == NULL); /* the base name of the file only */
    CHECK(cap.count[SAP_PRINT_ERRORS] == 1);
    CHECK(strcmp(cap.last[SAP_PRINT_ERRORS], msg) == 0);
    sap_context_clear_error(ctx);
    CHECK(strcmp(sap_context_last_error(ctx), "") == 0);

    /* another library error keeps the newest message */
    sap_int bad[] = {0, 0};
    CHECK_STATUS(ctx, sap_perm_check(ctx, 2, bad), SAP_ERR_INVALID);
    CHECK(has_file_line(sap_context_last_error(ctx), "csr_permute.c"));
    CHECK(strstr(sap_context_last_error(ctx), "p[1]") != NULL);
    CHECK(cap.count[SAP_PRINT_ERRORS] == 2);

    /* warnings are printed from SAP_PRINT_WARNINGS, errors from SAP_PRINT_ERRORS */
    sap_status st = SAP_ERROR(ctx, SAP_WARN_INEXACT, "residual %g", 1e-3);
    CHECK(st == SAP_WARN_INEXACT);
    CHECK(has_file_line(sap_context_last_error(ctx), "test_core.c"));
    CHECK(strstr(sap_context_last_error(ctx), "residual 0.001") != NULL);
    CHECK(cap.count[SAP_PRINT_WARNINGS] == 1);
    sap__log(ctx, SAP_PRINT_INFO, "info %d", 1);
    sap__log(ctx, SAP_PRINT_DEBUG, "debug %d", 1);
    CHECK(cap.count[SAP_PRINT_INFO] == 0 && cap.count[SAP_PRINT_DEBUG] == 0);

    CHECK_OK(ctx, sap_context_set_print_level(ctx, SAP_PRINT_ERRORS));
    SAP_ERROR(ctx, SAP_WARN_STAGNATED, "not printed");
    CHECK(cap.count[SAP_PRINT_WARNINGS] == 1);
    CHECK(strstr(sap_context_last_error(ctx), "not printed") != NULL); /* but recorded */
    SAP_ERROR(ctx, SAP_ERR_IO, "printed");
    CHECK(cap.count[SAP_PRINT_ERRORS] == 3);

    CHECK_OK(ctx, sap_context_set_print_level(ctx, SAP_PRINT_SILENT));
    SAP_ERROR(ctx, SAP_ERR_IO, "silent");
    CHECK(cap.count[SAP_PRINT_ERRORS] == 3);
    CHECK(strstr(sap_context_last_error(ctx), "silent") != NULL);

    CHECK_OK(ctx, sap_context_set_print_level(ctx, SAP_PRINT_DEBUG));
    sap__log(ctx, SAP_PRINT_INFO, "info %d", 2);
    sap__log(ctx, SAP_PRINT_DEBUG, "debug %d", 2);
    CHECK(cap.count[SAP_PRINT_INFO] == 1 && strcmp(cap.last[SAP_PRINT_INFO], "info 2") == 0);
    CHECK(cap.count[SAP_PRINT_DEBUG] == 1 && strcmp(cap.last[SAP_PRINT_DEBUG], "debug 2") == 0);
    CHECK(strstr(sap_context_last_error(ctx), "silent") != NULL); /* logging is not an error */

    /* a long message is truncated, not overflowed */
    char big[3 * SAP_ERRMSG_LEN];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    SAP_ERROR(ctx, SAP_ERR_INVALID, "%s", big);
    CHECK(strlen(sap_context_last_error(ctx)) == SAP_ERRMSG_LEN - 1);

    /* errors without a context do not crash */
    CHECK(SAP_ERROR(NULL, SAP_ERR_INVALID, "nowhere") == SAP_ERR_INVALID);
    sap__log(NULL, SAP_PRINT_ERRORS, "nowhere");
    sap_context_destroy(ctx);
}

/* ---- allocator hooks and accounting ---------------------------------------------------- */

typedef struct counting_alloc {
    long allocs, frees, live;
    size_t bytes;
} counting_alloc;

static void *count_alloc(void *state, size_t bytes)
{
    counting_alloc *c = state;
    c->allocs++;
    c->live++;
    c->bytes += bytes;
    return malloc(bytes);
}

static void count_free(void *state, void *p)
{
    counting_alloc *c = state;
    if (!p) return;
    c->frees++;
    c->live--;
    free(p);
}

static void test_allocator(void)
{
    counting_alloc ca = {0, 0, 0, 0};
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.allocator.host_alloc = count_alloc;
    cfg.allocator.host_free = count_free;
    cfg.allocator.state = &ca;
    cfg.print_level = SAP_PRINT_SILENT;
    sap_context *ctx = NULL;
    CHECK_STATUS(ctx, sap_context_create(&ctx, &cfg), SAP_OK);
    if (!ctx) return;
    long base = ca.allocs;
    CHECK(base >= 1); /* the context itself */

    void *p = sap_malloc(ctx, 1000);
    CHECK(p != NULL);
    CHECK(((uintptr_t)p & 63) == 0); /* 64-byte aligned */
    memset(p, 1, 1000);
    CHECK(ca.allocs == base + 1);
    sap_context_stats s;
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
    CHECK(s.host_bytes_in_use == 1000 && s.host_bytes_peak == 1000 && s.host_allocs == 1);

    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 10, 10, 50, &A));
    CHECK(ca.allocs == base + 5); /* struct, rowptr, colind, val */
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
    CHECK(s.host_bytes_in_use >= 1000 + 11 * 8 + 50 * 16);
    CHECK(s.host_bytes_peak >= s.host_bytes_in_use);
    int64_t peak = s.host_bytes_peak;

    sap_free(ctx, p);
    CHECK(ca.frees == 1);
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
    CHECK(s.host_bytes_in_use > 0 && s.host_bytes_peak == peak);
    sap_csr_destroy(A);
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
    CHECK(s.host_bytes_in_use == 0);
    CHECK(s.host_bytes_peak == peak && peak >= 1000);
    CHECK(s.host_allocs == 5);
    CHECK(s.failed_allocs == 0);
    CHECK(ca.live == 1); /* the context */

    /* a zero-byte request still gives a freeable pointer */
    void *z = sap_malloc(ctx, 0);
    CHECK(z != NULL);
    sap_free(ctx, z);
    sap_free(ctx, NULL);
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
    CHECK(s.host_bytes_in_use == 0);

    /* an impossible size fails cleanly */
    void *huge = sap_malloc(ctx, SIZE_MAX - 8);
    CHECK(huge == NULL);
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
    CHECK(s.failed_allocs == 1);
    CHECK(sap_context_last_error(ctx)[0] != '\0');

    /* transfer statistics reset */
    sap_context_reset_transfer_stats(ctx);
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
    CHECK(s.h2d_bytes == 0 && s.d2h_bytes == 0 && s.h2d_copies == 0 && s.d2h_copies == 0);
    CHECK_STATUS(ctx, sap_context_get_stats(ctx, NULL), SAP_ERR_INVALID);

    sap_context_destroy(ctx);
    CHECK(ca.live == 0);
    CHECK(ca.allocs == ca.frees);

    /* a failing allocator: sap_malloc returns NULL and the context counts it */
    sap_test_failing_alloc fs = {.fail_at = 0};
    ctx = sap_test_failing_context(&fs);
    CHECK(ctx != NULL);
    if (ctx) {
        CHECK(sap_malloc(ctx, 16) == NULL);
        sap_csr *B = (sap_csr *)&fs;
        CHECK_STATUS(ctx, sap_csr_create(ctx, 2, 2, 2, &B), SAP_ERR_OUT_OF_MEMORY);
        CHECK(B == NULL);
        CHECK_OK(ctx, sap_context_get_stats(ctx, &s));
        CHECK(s.failed_allocs == 2);
        sap_context_destroy(ctx);
    }
    CHECK(fs.live == 0);

    /* every allocation of sap_csr_create can fail without leaking */
    for (long k = 0; k < 10; k++) {
        sap_test_failing_alloc f2 = {.fail_at = k};
        ctx = sap_test_failing_context(&f2);
        sap_csr *B = NULL;
        sap_status st = sap_csr_create(ctx, 4, 4, 8, &B);
        CHECK(st == SAP_OK || st == SAP_ERR_OUT_OF_MEMORY);
        CHECK((st == SAP_OK) == (B != NULL));
        sap_csr_destroy(B);
        sap_context_destroy(ctx);
        CHECK(f2.live == 0);
        if (st == SAP_OK) break;
    }
}

/* ---- version, NULL safety, rng -------------------------------------------------------------- */

static void test_version(void)
{
    CHECK(sap_version() == SAP_VERSION_NUMBER);
    CHECK(SAP_VERSION_NUMBER == SAP_VERSION_MAJOR * 10000 + SAP_VERSION_MINOR * 100 + SAP_VERSION_PATCH);
    CHECK(strcmp(sap_version_string(), SAP_VERSION_STRING) == 0);
    char buf[64];
    snprintf(buf, sizeof(buf), "%d.%d.%d", SAP_VERSION_MAJOR, SAP_VERSION_MINOR, SAP_VERSION_PATCH);
    CHECK(strcmp(buf, sap_version_string()) == 0);
    CHECK(sap_has_cuda() == 0 || sap_has_cuda() == 1);
    CHECK(sap_has_zlib() == 0 || sap_has_zlib() == 1);
#ifdef SAP_HAVE_CUDA
    CHECK(sap_has_cuda() == 1);
#else
    CHECK(sap_has_cuda() == 0);
#endif
#ifdef SAP_HAVE_ZLIB
    CHECK(sap_has_zlib() == 1);
#else
    CHECK(sap_has_zlib() == 0);
#endif
}

static void test_null_safety(void)
{
    sap_csr_destroy(NULL);
    sap_coo_destroy(NULL);
    sap_dense_destroy(NULL);
    sap_context_destroy(NULL);
    sap_context_clear_error(NULL);
    sap_context_reset_transfer_stats(NULL);
    CHECK(sap_context_last_error(NULL) != NULL);
    CHECK(strcmp(sap_context_last_error(NULL), "") == 0);
    CHECK(sap_context_device_name(NULL) != NULL);
    CHECK(sap_context_threads(NULL) == 0);
    CHECK(sap_context_print_level(NULL) == 0);
    CHECK(sap_context_set_threads(NULL, 1) == SAP_ERR_INVALID);
    CHECK(sap_context_set_print_level(NULL, 1) == SAP_ERR_INVALID);
    sap_context_stats s;
    CHECK(sap_context_get_stats(NULL, &s) == SAP_ERR_INVALID);
    CHECK(sap_malloc(NULL, 16) == NULL);
    sap_free(NULL, NULL);
    sap_csr *A = NULL;
    sap_coo *C = NULL;
    sap_dense *D = NULL;
    CHECK(sap_csr_create(NULL, 1, 1, 1, &A) == SAP_ERR_INVALID && A == NULL);
    CHECK(sap_coo_create(NULL, 1, 1, 1, &C) == SAP_ERR_INVALID && C == NULL);
    CHECK(sap_dense_create(NULL, 1, 1, &D) == SAP_ERR_INVALID && D == NULL);
    CHECK(sap_csr_copy(NULL, &A) == SAP_ERR_INVALID);
    CHECK(sap_csr_from_coo(NULL, &A) == SAP_ERR_INVALID);
    CHECK(sap_csr_to_coo(NULL, &C) == SAP_ERR_INVALID);
    CHECK(sap_csr_to_dense(NULL, &D) == SAP_ERR_INVALID);
    CHECK(sap_csr_from_dense(NULL, 0.0, &A) == SAP_ERR_INVALID);
    CHECK(sap_coo_push(NULL, 0, 0, 1.0) == SAP_ERR_INVALID);
    CHECK(sap_csr_check(NULL) == SAP_ERR_INVALID);

    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    CHECK(ctx != NULL);
    if (ctx) {
        CHECK_STATUS(ctx, sap_csr_create(ctx, 1, 1, 1, NULL), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap_coo_create(ctx, 1, 1, -1, &C), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap_dense_create(ctx, -1, 1, &D), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap_dense_create(ctx, INT64_MAX / 2, 4, &D), SAP_ERR_TOO_LARGE);
        CHECK(C == NULL && D == NULL);
        sap_context_destroy(ctx);
    }
}

static void test_rng(void)
{
    sap_rng a, b;
    sap__rng_seed(&a, 42);
    sap__rng_seed(&b, 42);
    int same = 1, in_range = 1;
    for (int i = 0; i < 1000; i++) same &= sap__rng_next(&a) == sap__rng_next(&b);
    CHECK(same);
    sap__rng_seed(&b, 43);
    CHECK(sap__rng_next(&a) != sap__rng_next(&b));
    double mean = 0;
    for (int i = 0; i < 10000; i++) {
        double u = sap__rng_uniform(&a);
        in_range &= u >= 0.0 && u < 1.0;
        mean += u;
        in_range &= sap__rng_below(&a, 7) < 7;
    }
    CHECK(in_range);
    CHECK(mean / 10000 > 0.45 && mean / 10000 < 0.55);
    CHECK(sap__rng_below(&a, 0) == 0 && sap__rng_below(&a, 1) == 0);
    sap_int p[100];
    sap__rng_permutation(&a, 100, p);
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    CHECK_OK(ctx, sap_perm_check(ctx, 100, p));
    sap_context_destroy(ctx);
}

/* the host scans (hostscan.c) against the entry-by-entry loops, on lengths around the scan's
 * block and the thread split, with the special values where a bit test could go wrong */
static void test_host_scans(void)
{
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.threads = 4;
    sap_context *ctx = NULL;
    CHECK(sap_context_create(&ctx, &cfg) == SAP_OK);
    const sap_int lens[] = {0, 1, 7, 4095, 4096, 4097, 100003, 262144};
    const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 0x1p-1074, -0x1p-1074, 1e308, -1.0};
    sap_rng r;
    sap__rng_seed(&r, 7);
    int ok_zero = 1, ok_fin = 1;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        const sap_int n = lens[l];
        double *x = calloc((size_t)n + 1, sizeof(double));
        for (size_t v = 0; v < sizeof specials / sizeof specials[0]; v++)
            for (int rep = 0; rep < 3 && n > 0; rep++) {
                for (sap_int i = 0; i < n; i++) x[i] = (i % 3) ? 0.0 : -0.0;
                const sap_int at = rep == 0 ? 0 : rep == 1 ? n - 1 : (sap_int)sap__rng_below(&r, (uint64_t)n);
                x[at] = specials[v];
                if (rep == 2 && n > 2) x[(at + n / 2) % n] = NAN; /* a second one, before or after */
                int zero = 1;
                sap_int first = n;
                for (sap_int i = 0; i < n; i++) {
                    if (x[i] != 0.0) zero = 0;
                    if (!isfinite(x[i]) && first == n) first = i;
                }
                ok_zero &= sap__host_all_zero(ctx, x, n) == zero;
                ok_fin &= sap__host_first_nonfinite(ctx, x, n) == first;
            }
        for (sap_int i = 0; i < n; i++) x[i] = -0.0;
        ok_zero &= sap__host_all_zero(ctx, x, n) == 1;
        ok_fin &= sap__host_first_nonfinite(ctx, x, n) == n;
        free(x);
    }
    CHECK(ok_zero);
    CHECK(ok_fin);
    /* the threaded copy: byte lengths around its 1 MB slices and the 4 threads' split */
    const size_t blens[] = {0, 1, 1000, ((size_t)1 << 20) - 1, (size_t)1 << 20, ((size_t)1 << 20) + 1,
                            ((size_t)4 << 20) + 3, ((size_t)9 << 20) + 17};
    int ok_copy = 1;
    for (size_t l = 0; l < sizeof blens / sizeof blens[0]; l++) {
        const size_t nb = blens[l];
        unsigned char *a = malloc(nb + 2), *b = malloc(nb + 2);
        for (size_t i = 0; i < nb + 2; i++) a[i] = (unsigned char)(i * 131 + 7), b[i] = 0xA5;
        sap__host_copy(ctx, b + 1, a + 1, nb);
        ok_copy &= b[0] == 0xA5 && b[nb + 1] == 0xA5 && memcmp(a + 1, b + 1, nb) == 0;
        free(a);
        free(b);
    }
    CHECK(ok_copy);
    sap_context_destroy(ctx);
}

int main(void)
{
    test_config();
    test_backends();
    test_statuses();
    test_errors_and_log();
    test_allocator();
    test_version();
    test_null_safety();
    test_rng();
    test_host_scans();
    return sap_test_finish("test_core");
}
