/* testing.c -- the test harness shared by the test programs. */
#define _POSIX_C_SOURCE 200809L
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sap_test_failures = 0;
int sap_test_checks = 0;

int sap_test_close(double a, double b, double tol)
{
    if (isnan(a) || isnan(b)) return 0;
    if (a == b) return 1;
    double scale = fmax(1.0, fmax(fabs(a), fabs(b)));
    return fabs(a - b) <= tol * scale;
}

sap_context *sap_test_context(sap_backend backend)
{
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = backend;
    cfg.print_level = SAP_PRINT_SILENT;
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) return NULL;
    return ctx;
}

static void *failing_alloc(void *state, size_t bytes)
{
    sap_test_failing_alloc *s = state;
    long k = s->count++;
    if (s->fail_at >= 0 && k >= s->fail_at) return NULL;
    void *p = malloc(bytes);
    if (p) s->live++;
    return p;
}

static void failing_free(void *state, void *p)
{
    sap_test_failing_alloc *s = state;
    if (p) s->live--;
    free(p);
}

sap_context *sap_test_failing_context(sap_test_failing_alloc *state)
{
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.print_level = SAP_PRINT_SILENT;
    cfg.allocator.host_alloc = failing_alloc;
    cfg.allocator.host_free = failing_free;
    cfg.allocator.state = state;
    long saved = state->fail_at;
    state->fail_at = -1; /* the context itself always gets its memory */
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, &cfg);
    state->fail_at = saved < 0 ? -1 : saved + state->count;
    return st == SAP_OK ? ctx : NULL;
}

const char *sap_test_matrix_dir(void)
{
    const char *d = getenv("SAP_MATRIX_DIR");
    if (d && *d) return d;
#ifdef SAP_MATRIX_DIR_DEFAULT
    return SAP_MATRIX_DIR_DEFAULT;
#else
    return "../shared/matrices";
#endif
}

int sap_test_have_matrices(const char *what)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/MANIFEST.tsv", sap_test_matrix_dir());
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return 1;
    }
    printf("note: matrix collection not found in %s (set SAP_MATRIX_DIR): %s skipped\n", sap_test_matrix_dir(), what);
    return 0;
}

double sap_test_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *sap_test_tmpdir(void)
{
    static char dir[512];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/sap_test_%ld", base && *base ? base : "/tmp", (long)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

int sap_test_finish(const char *name)
{
    int passed = sap_test_checks - sap_test_failures;
    printf("%s: %d passed, %d failed\n", name, passed, sap_test_failures);
    return sap_test_failures ? 1 : 0;
}

sap_csr *sap_test_load_matrix(sap_context *ctx, const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.mtx.gz", sap_test_matrix_dir(), name);
    sap_csr *A = NULL;
    if (sap_mm_read_csr(ctx, path, NULL, &A, NULL) != SAP_OK) {
        printf("  %s: %s\n", path, sap_context_last_error(ctx));
        return NULL;
    }
    return A;
}

double sap_test_rel_residual(const sap_csr *A, const double *x, const double *b)
{
    double nr = 0, nb = 0;
    for (sap_int i = 0; i < A->nrows; i++) {
        double s = b[i];
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) s -= A->val[p] * x[A->colind[p]];
        nr += s * s;
        nb += b[i] * b[i];
    }
    return nb > 0 ? sqrt(nr / nb) : sqrt(nr);
}

int sap_test_gpu_context(const char *name, int allow_dryrun, sap_context **G, int *dryrun)
{
    *G = NULL;
    if (dryrun) *dryrun = 0;
    if (!sap_has_cuda()) {
        printf("%s: no CUDA support, skipped\n", name);
        return 77;
    }
    const char *dr = getenv("SAP_TEST_GPU_DRYRUN");
    const int dry = allow_dryrun && dr && dr[0] == '1';
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = dry ? SAP_BACKEND_CPU : SAP_BACKEND_CUDA;
    cfg.print_level = SAP_PRINT_SILENT;
    sap_status st = sap_context_create(G, &cfg);
    if (st == SAP_ERR_NO_DEVICE || st == SAP_ERR_NOT_COMPILED) {
        printf("%s: no CUDA device (%s), skipped\n", name, sap_status_name(st));
        return 77;
    }
    if (st != SAP_OK) {
        printf("%s: creating a cuda context failed: %s\n", name, sap_status_name(st));
        return 1;
    }
    if (dryrun) *dryrun = dry;
    return 0;
}

static char test_label[256] = "test";

const char *sap_test_name(void) { return test_label; }

int sap_test_main(int argc, char **argv, const char *name, int (*cpu_part)(void), int (*gpu_part)(void))
{
    const char *backend = "cpu";
    /* the cost model measures its rates in each test process (no per-machine file shared
     * between test runs, sanitized or not), unless the caller names a cache folder */
    setenv("SAP_CACHE_DIR", "off", 0);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            backend = argv[++i];
        } else if (strncmp(argv[i], "--backend=", 10) == 0) {
            backend = argv[i] + 10;
        } else {
            fprintf(stderr, "usage: %s [--backend cpu|cuda]\n", name);
            return 2;
        }
    }
    int (*part)(void) = NULL;
    if (strcmp(backend, "cpu") == 0) {
        snprintf(test_label, sizeof test_label, "%s", name);
        part = cpu_part;
    } else if (strcmp(backend, "cuda") == 0 || strcmp(backend, "gpu") == 0) {
        snprintf(test_label, sizeof test_label, "%s --backend cuda", name);
        if (!gpu_part) {
            printf("%s: this test has no GPU part, skipped\n", test_label);
            return 77;
        }
        part = gpu_part;
    } else {
        fprintf(stderr, "%s: unknown backend '%s' (cpu or cuda)\n", name, backend);
        return 2;
    }
    int rc = part();
    if (rc) return rc;
    return sap_test_finish(test_label);
}

static int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

int sap_test_tiny(void)
{
    const char *t = getenv("SAP_TEST_SANITIZE");
    return env_on("SAP_TEST_TINY") || (t && strcmp(t, "racecheck") == 0);
}

int sap_test_smoke(void) { return env_on("SAP_TEST_SMOKE") || sap_test_tiny(); }
