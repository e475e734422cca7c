/* sap_internal.h -- definitions shared by the library's sources (not installed). */
#ifndef SAP_INTERNAL_H
#define SAP_INTERNAL_H

#include "sap.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAP_ERRMSG_LEN 1024

struct sap_context {
    sap_backend backend; /* resolved: cpu or cuda */
    int device;
    int threads;
    int print_level;
    sap_allocator alloc;
    sap_log_fn log;
    void *log_state;
    char errmsg[SAP_ERRMSG_LEN];
    char device_name[256];
    sap_context_stats stats;
    void *cuda; /* backend-private state (src/kernels/cuda), NULL on cpu */
    /* reorderings on a cuda context: smallest nnz for which the A + A^T graph and the DB
     * weights/scaling run on the GPU (see sap__reorder_on_gpu) */
    sap_int reorder_gpu_min_nnz_graph, reorder_gpu_min_nnz_db;
};

/* ---- errors --------------------------------------------------------------------- */

/* Records "file:line: message" in ctx (if non-NULL), prints it at the print level
 * and returns status. */
sap_status sap__error(sap_context *ctx, sap_status status, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
sap_status sap__verror(sap_context *ctx, sap_status status, const char *file, int line, const char *fmt,
                       va_list ap);

/* Raise an error (or warning) with the current file and line. */
#define SAP_ERROR(ctx, status, ...) sap__error((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)

/* Inside a function with a local 'sap_status st' and a 'cleanup:' label: run expr and
 * jump to cleanup when it returns an error (< 0).  Warnings are kept in st. */
#define SAP_TRY(expr)                                                                                  \
    do {                                                                                               \
        sap_status sap__s = (expr);                                                                    \
        if (sap__s < 0) {                                                                              \
            st = sap__s;                                                                               \
            goto cleanup;                                                                              \
        }                                                                                              \
        if (sap__s > 0 && st == SAP_OK) st = sap__s;                                                   \
    } while (0)

/* Raise an error and jump to cleanup. */
#define SAP_FAIL(ctx, status, ...)                                                                     \
    do {                                                                                               \
        st = SAP_ERROR((ctx), (status), __VA_ARGS__);                                                  \
        goto cleanup;                                                                                  \
    } while (0)

/* Writes a message at the given level (no error recorded). */
void sap__log(sap_context *ctx, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- host memory ------------------------------------------------------------------ */

/* Allocates n * size bytes through the context's allocator; on overflow or failure
 * records SAP_ERR_OUT_OF_MEMORY / SAP_ERR_TOO_LARGE in ctx and returns NULL.
 * Memory is 64-byte aligned. */
void *sap__alloc(sap_context *ctx, size_t n, size_t size, bool zero, const char *file, int line);
void sap__free(sap_context *ctx, void *ptr);
/* The status a failed sap__alloc(n, size) recorded: SAP_ERR_TOO_LARGE when n * size
 * overflows, else SAP_ERR_OUT_OF_MEMORY. */
sap_status sap__alloc_failure(size_t n, size_t size);
/* Grows (or shrinks) a block to n * size bytes, keeping the old contents. */
void *sap__realloc(sap_context *ctx, void *ptr, size_t n, size_t size, const char *file, int line);

/* ptr = allocation of n elements of *ptr; on failure sets st and jumps to cleanup. */
#define SAP_ALLOC(ctx, ptr, n)                                                                          \
    do {                                                                                                \
        (ptr) = sap__alloc((ctx), (size_t)(n), sizeof(*(ptr)), false, __FILE__, __LINE__);              \
        if (!(ptr) && (n) > 0) {                                                                        \
            st = sap__alloc_failure((size_t)(n), sizeof(*(ptr)));                                       \
            goto cleanup;                                                                               \
        }                                                                                               \
    } while (0)
#define SAP_CALLOC(ctx, ptr, n)                                                                         \
    do {                                                                                                \
        (ptr) = sap__alloc((ctx), (size_t)(n), sizeof(*(ptr)), true, __FILE__, __LINE__);               \
        if (!(ptr) && (n) > 0) {                                                                        \
            st = sap__alloc_failure((size_t)(n), sizeof(*(ptr)));                                       \
            goto cleanup;                                                                               \
        }                                                                                               \
    } while (0)
#define SAP_FREE(ctx, ptr)                                                                              \
    do {                                                                                                \
        sap__free((ctx), (ptr));                                                                        \
        (ptr) = NULL;                                                                                   \
    } while (0)

/* ---- misc helpers --------------------------------------------------------------------- */

/* Validates a context argument of a public function. */
#define SAP_CHECK_CTX(ctx)                                                                              \
    do {                                                                                                \
        if (!(ctx)) return SAP_ERR_INVALID;                                                             \
    } while (0)

/* a * b > limit or overflow of int64 */
static inline bool sap__mul_overflows(int64_t a, int64_t b, int64_t limit)
{
    if (a < 0 || b < 0) return true;
    if (a == 0 || b == 0) return false;
    return a > limit / b;
}

/* Largest entry count a CSR may have: colind + val (16 bytes per entry) fit in int64 bytes. */
#define SAP_NNZ_MAX (INT64_MAX / 16)

/* Sorts n (column, value) pairs by column in place (src/matrix/sort_pairs.c). */
void sap__sort_pairs(sap_int *c, double *v, sap_int n);

/* Wall-clock seconds (monotonic). */
double sap__wtime(void);

/* Deterministic random numbers: splitmix64 seeding a xoshiro256** stream. */
typedef struct sap_rng {
    uint64_t s[4];
} sap_rng;

void sap__rng_seed(sap_rng *r, uint64_t seed);
uint64_t sap__rng_next(sap_rng *r);
/* Uniform double in [0, 1). */
double sap__rng_uniform(sap_rng *r);
/* Uniform integer in [0, n). */
uint64_t sap__rng_below(sap_rng *r, uint64_t n);
/* Random permutation of 0..n-1 (Fisher-Yates). */
void sap__rng_permutation(sap_rng *r, sap_int n, sap_int *p);

/* Number of threads for an OpenMP region in this context. */
static inline int sap__threads(const sap_context *ctx)
{
    return ctx && ctx->threads > 0 ? ctx->threads : 1;
}

/* OpenMP: SAP_OMP("omp ...") is a pragma that vanishes in a build without OpenMP;
 * SAP_OMP_FOR(nt) for (...) and SAP_OMP_FOR_DYNAMIC(nt, chunk) are the common loops (they
 * still use nt without OpenMP).  Loops of less work than SAP_PAR_MIN_WORK entries run
 * serially. */
#ifdef _OPENMP
#include <omp.h>
#define SAP_OMP(x) _Pragma(x)
#define SAP_PRAGMA(x) _Pragma(#x)
#define SAP_OMP_FOR(nt) SAP_PRAGMA(omp parallel for schedule(static) num_threads(nt))
#define SAP_OMP_FOR_DYNAMIC(nt, chunk) SAP_PRAGMA(omp parallel for schedule(dynamic, chunk) num_threads(nt))
#else
#define SAP_OMP(x)
#define SAP_OMP_FOR(nt) (void)(nt);
#define SAP_OMP_FOR_DYNAMIC(nt, chunk) (void)(nt);
#endif
#define SAP_PAR_MIN_WORK 32768

/* First row r in 0..n with rowptr[r] + r >= target: splits rows into ranges of about
 * equal work (entries + rows) for threads (src/matrix/csr_split.c). */
sap_int sap__split_rows(const sap_int *rowptr, sap_int n, sap_int target);

/* Lower and upper bandwidth of a CSR with sorted rows: *kl = max(i - j), *ku = max(j - i)
 * over the stored entries (0 when there are none), from the first and last entry of each
 * row, on nt threads for large matrices (src/matrix/csr_split.c). */
void sap__csr_lower_upper(const sap_csr *A, int nt, sap_int *kl, sap_int *ku);

/* ---- backends ------------------------------------------------------------------------- */

#ifdef SAP_HAVE_CUDA
/* src/kernels/cuda/cuda_context.cu */
sap_status sap__cuda_device_count(int *count, char *msg, size_t msglen);
sap_status sap__cuda_context_init(sap_context *ctx);
void sap__cuda_context_free(sap_context *ctx);
/* src/kernels/cuda/reorder_cuda.cu: the GPU-friendly reordering stages on host arrays
 * (upload, kernels, download; 32-bit indices inside, SAP_ERR_TOO_LARGE beyond).
 * DB weights: c (nnz) and loga (nrows) as the CPU's S1 computes them, *nonfinite the
 * count of NaN/Inf values.  Scaling: M->val[p] = (rs[i] * M->val[p]) * cs[j] in place.
 * Graph: the pattern of A + A^T without its diagonal, each row sorted by index (what
 * sap__cm_build_graph puts in xadj/adj2); *nadj = xadj[n]. */
sap_status sap__cuda_db_weights(sap_context *ctx, const sap_csr *A, double *c, double *loga, sap_int *nonfinite);
sap_status sap__cuda_scale_rows_cols(sap_context *ctx, sap_csr *M, const double *rs, const double *cs);
sap_status sap__cuda_sym_graph(sap_context *ctx, const sap_csr *A, sap_int *xadj, int32_t *adj, sap_int *nadj);
#endif

/* ---- reorderings on the GPU ------------------------------------------------------------ */

/* A cuda context builds the symmetrized graph of Cuthill-McKee on the GPU when the
 * matrix has at least ctx->reorder_gpu_min_nnz_graph stored entries, and computes the DB
 * weights and the DB scaling there from ctx->reorder_gpu_min_nnz_db entries on.  Measured
 * on an H200 with 16 host cores (bench/results/reorder_gpu.md): the graph build pays from
 * about 0.5M entries (1.5-1.8x, transfers included); the weights and the scaling never
 * pay while the matrix lives on the host (the PCIe transfers cost 2-30x the host's
 * OpenMP loops), so they are off by default and kept for
 * device-resident use and the tests.  The defaults are set by sap_context_create; the
 * tests set both to 0 to force the GPU path. */
#define SAP_REORDER_GPU_MIN_NNZ_GRAPH 500000
#define SAP_REORDER_GPU_MIN_NNZ_DB INT64_MAX

static inline int sap__reorder_on_gpu(const sap_context *ctx, sap_int nnz, sap_int min_nnz)
{
#ifdef SAP_HAVE_CUDA
    return ctx->backend == SAP_BACKEND_CUDA && ctx->cuda != NULL && nnz >= min_nnz && nnz < ((sap_int)1 << 30);
#else
    (void)ctx;
    (void)nnz;
    (void)min_nnz;
    return 0;
#endif
}

#endif /* SAP_INTERNAL_H */
