/* testing.h -- a small test harness: CHECK macros that count and report failures, and
 * helpers shared by the test programs. */
#ifndef SAP_TESTING_H
#define SAP_TESTING_H

#include "sap.h"

#include <stdio.h>

extern int sap_test_failures;
extern int sap_test_checks;

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        sap_test_checks++;                                                                          \
        if (!(cond)) {                                                                              \
            sap_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                \
        }                                                                                           \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                        \
    do {                                                                                            \
        sap_test_checks++;                                                                          \
        if (!(cond)) {                                                                              \
            sap_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fputc('\n', stderr);                                                                    \
        }                                                                                           \
    } while (0)

/* Checks a status; on mismatch prints both names and the context's last error. */
#define CHECK_STATUS(ctx, expr, expected)                                                           \
    do {                                                                                            \
        sap_status s__ = (expr);                                                                    \
        sap_test_checks++;                                                                          \
        if (s__ != (expected)) {                                                                    \
            sap_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #expr, \
                    sap_status_name(s__), sap_status_name(expected), sap_context_last_error(ctx));  \
        }                                                                                           \
    } while (0)

#define CHECK_OK(ctx, expr) CHECK_STATUS(ctx, expr, SAP_OK)

/* |a - b| <= tol * max(1, |a|, |b|) */
#define CHECK_CLOSE(a, b, tol)                                                                      \
    do {                                                                                            \
        double a__ = (a), b__ = (b);                                                                \
        sap_test_checks++;                                                                          \
        if (!sap_test_close(a__, b__, (tol))) {                                                     \
            sap_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: %s = %.17g, %s = %.17g differ by more than %g\n", __FILE__,     \
                    __LINE__, #a, a__, #b, b__, (double)(tol));                                     \
        }                                                                                           \
    } while (0)

int sap_test_close(double a, double b, double tol);

/* A context on the given backend, with warnings silenced (tests check statuses). */
sap_context *sap_test_context(sap_backend backend);

/* A context whose host allocator fails from the n-th allocation on (n >= 0), for
 * out-of-memory sweeps; *count receives the allocations made.  Free with
 * sap_test_context_destroy. */
typedef struct sap_test_failing_alloc {
    long fail_at;   /* allocation index that fails first (-1: never) */
    long count;     /* allocations attempted */
    long live;      /* allocations not yet freed */
} sap_test_failing_alloc;
sap_context *sap_test_failing_context(sap_test_failing_alloc *state);

/* Directory holding the SuiteSparse matrices: $SAP_MATRIX_DIR or the build default. */
const char *sap_test_matrix_dir(void);

/* 1 when the matrix collection (its MANIFEST.tsv) is readable, else prints a note naming
 * 'what' that is skipped and returns 0. */
int sap_test_have_matrices(const char *what);

/* The "gpu" context of a GPU test: a cuda context, or with SAP_TEST_GPU_DRYRUN=1 (when
 * allow_dryrun) a second cpu context that checks the test itself where no GPU exists.
 * Returns 0 with *G set (and *dryrun, which may be NULL), or the exit code for main()
 * after printing why: 77 (skipped: no CUDA support, no device) or 1 (creation failed). */
int sap_test_gpu_context(const char *name, int allow_dryrun, sap_context **G, int *dryrun);

/* NAME.mtx.gz of the collection, or NULL (with the reason printed) when it cannot be read. */
sap_csr *sap_test_load_matrix(sap_context *ctx, const char *name);

/* ||b - A x||_2 / ||b||_2 (||b - A x||_2 when b = 0), computed here on the host. */
double sap_test_rel_residual(const sap_csr *A, const double *x, const double *b);

/* Wall-clock seconds (CLOCK_MONOTONIC), for the timing lines of a test. */
double sap_test_wtime(void);

/* Directory for temporary files of this test (created). */
const char *sap_test_tmpdir(void);

/* 1 when SAP_TEST_SMOKE is set (non-empty, not "0"), or sap_test_tiny(): programs run a
 * smaller set of cases (used under the slow compute-sanitizer tools). */
int sap_test_smoke(void);

/* 1 when SAP_TEST_SANITIZE=racecheck (bench/gpu_run.sh sets SAP_TEST_SANITIZE to the
 * compute-sanitizer tool it runs) or SAP_TEST_TINY is set (non-empty, not "0"): the GPU
 * parts run every CUDA kernel variant once more at tiny sizes only (n ~ 100-2000), so that
 * racecheck, which follows every shared-memory access, finishes each program in seconds. */
int sap_test_tiny(void);

/* Prints the summary line and returns the exit code for main(). */
int sap_test_finish(const char *name);

/* main() of a test program, one per module, run per backend:
 *   NAME --backend cpu    (the default) runs cpu_part: the module's tests on the cpu backend;
 *   NAME --backend cuda   runs gpu_part: the same module on a cuda context compared with a
 *                         cpu reference context (see sap_test_gpu_context; 77 where there is
 *                         no CUDA build or device, SAP_TEST_GPU_DRYRUN=1 honored).
 * A part returns 0 when it ran (the CHECK counters decide the exit code, with the summary
 * line "NAME: ..." or "NAME --backend cuda: ..."), or an exit code returned as it is (77:
 * skipped, 1: could not run).  gpu_part is NULL for a module without a GPU part; a source
 * with one also holds the line "#define SAP_TEST_HAS_GPU_PART 1", from which
 * tests/CMakeLists.txt adds the test NAME_gpu (label gpu, --backend cuda). */
int sap_test_main(int argc, char **argv, const char *name, int (*cpu_part)(void), int (*gpu_part)(void));

/* The label of the running program and backend ("test_band", "test_band --backend cuda"):
 * the name for sap_test_gpu_context and for messages. */
const char *sap_test_name(void);

#endif
