/* base.h -- the base layer shared by every source of the library: the context, errors and
 * messages, host memory, random numbers, OpenMP helpers.  Knows no backend.  Internal. */
#ifndef SAP_BASE_H
#define SAP_BASE_H

#include "sap.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAP_ERRMSG_LEN 1024

/* Operations the device layer may move from the host to an accelerator, each with a size
 * threshold in the context (src/device/device.h: sap__offload). */
typedef enum sap_offload_op { SAP_OFFLOAD_GRAPH = 0, SAP_OFFLOAD_DB = 1, SAP_OFFLOAD_COUNT = 2 } sap_offload_op;

struct sap_context {
    sap_backend backend; /* resolved: cpu or cuda */
    /* a stop request the long loops poll (sap__stop_requested): installed by the layer
     * that runs them (the sparse solver: sap_solver_options.interrupt), NULL otherwise */
    const volatile sig_atomic_t *stop_flag;
    sap_backend backend_asked; /* as configured: auto, cpu or cuda (auto lets the sparse
                                  solver move a system the device cannot hold to the host) */
    int device;
    int threads;
    int print_level;
    sap_allocator alloc;
    sap_log_fn log;
    void *log_state;
    char errmsg[SAP_ERRMSG_LEN];
    char device_name[256];
    sap_context_stats stats;
    const struct sap_backend_ops *ops; /* the backend's kernel table (src/device/device.h) */
    void *cuda;                         /* device-layer private state, NULL on cpu */
    sap_int offload_min_nnz[SAP_OFFLOAD_COUNT]; /* thresholds of sap__offload (device.h) */
    int try_depth; /* > 0 inside sap__try_begin/end: expected failures are not printed */
    /* choices measured on this context's device, cached by key (sap__tune_get/put) */
    struct { int64_t key; int value; } tune[16];
    int ntune;
};

/* A measured choice cached in the context: *value for key, 0 when absent (1 found). */
static inline int sap__tune_get(const sap_context *ctx, int64_t key, int *value)
{
    for (int i = 0; i < ctx->ntune; i++)
        if (ctx->tune[i].key == key) return *value = ctx->tune[i].value, 1;
    return 0;
}
/* Records a choice (the oldest entry goes when the cache is full). */
static inline void sap__tune_put(sap_context *ctx, int64_t key, int value)
{
    int n = (int)(sizeof ctx->tune / sizeof ctx->tune[0]);
    if (ctx->ntune == n) {
        for (int i = 1; i < n; i++) ctx->tune[i - 1] = ctx->tune[i];
        ctx->ntune--;
    }
    ctx->tune[ctx->ntune].key = key;
    ctx->tune[ctx->ntune++].value = value;
}

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

/* Expected failures: between sap__try_begin(ctx) and sap__try_end(ctx) (nested calls count)
 * errors and warnings are recorded in the context (sap_context_last_error) but not printed;
 * the caller reads the status and decides.  Used for attempts that have a fallback, so
 * the user's print level is never rewritten. */
static inline void sap__try_begin(sap_context *ctx)
{
    if (ctx) ctx->try_depth++;
}
static inline void sap__try_end(sap_context *ctx)
{
    if (ctx && ctx->try_depth > 0) ctx->try_depth--;
}

/* The base part of sap_context_create (src/device/device.c opens the backend): a
 * context on the host with cfg's allocator, threads, print level and log, backend cpu.
 * NULL when cfg is invalid or memory is short (*st says which). */
sap_context *sap__context_new(const sap_context_config *cfg, sap_status *st);
/* Frees what sap__context_new allocated (the device layer closed the backend first). */
void sap__context_free(sap_context *ctx);
/* Sets ctx->device_name for the cpu backend from the thread count. */
void sap__context_describe_cpu(sap_context *ctx);

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

/* Bytes of host memory this process can still get (the least of MemAvailable, the cgroup
 * limit less usage, RLIMIT_AS / RLIMIT_DATA less what is mapped), -1 when unknown;
 * *source (may be NULL) names the limit that decided (src/base/hostmem.c). */
double sap__host_mem_available(const char **source);
/* Bytes of address space the process may still map under RLIMIT_AS (its limit less
 * VmSize); -1 when there is no such limit (or it cannot be read). */
double sap__host_address_space_left(void);
/* SAP_ERR_OUT_OF_MEMORY, naming the step, the bytes it needs and the bytes available, when
 * a step about to allocate 'bytes' (>= SAP_MEM_CHECK_MIN) in all cannot get them; SAP_OK
 * otherwise.  sap__alloc checks every block this large itself; a step that allocates
 * several arrays (or does O(N) work first) checks their sum before starting. */
#define SAP_MEM_CHECK_MIN (64.0 * 1024 * 1024)
sap_status sap__mem_check(sap_context *ctx, const char *step, double bytes);

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

/* Inside a parallel region run by a team of nb threads, called by all of them: cnt holds
 * nb blocks of m per-thread column counts (thread b's at cnt + b m).  Sets tp[j + 1] to
 * column j's total and tp[1..m] to the prefix sums over tp[0] as given, then turns each
 * count into that thread's first position in its column (threads in order), so rows
 * scattered thread by thread come out in order.  Ends at a barrier
 * (src/matrix/csr_transpose.c). */
void sap__par_col_offsets(sap_int *cnt, int nb, sap_int m, sap_int *tp);

/* nt windows of *wcap = min(4 maxlen + 64, cap, m) sap_int each, every entry -1: the dense
 * windows a parallel loop orders rows of at most maxlen entries through (thread t's at
 * t * wcap; each use must leave its entries -1 again); NULL (and a recorded error) when
 * the allocation fails (src/matrix/csr_permute.c). */
sap_int *sap__window_slots(sap_context *ctx, int nt, sap_int maxlen, sap_int m, sap_int cap, sap_int *wcap);

/* sap_csr_permute(A, p, q) with the entries scaled on the way: B(i, j) = (rs[p[i]] * a) *
 * cs[q[j]] for a = A(p[i], q[j]) (rs, cs indexed by A's rows and columns; both or neither
 * NULL), the same values as permuting first and then scaling each entry in that order. */
sap_status sap__csr_permute_scaled(const sap_csr *A, const sap_int *p, const sap_int *q, const double *rs,
                                   const double *cs, sap_csr **out);
/* ... with the result's values written into val (A->nnz doubles of A's context, or NULL: a
 * new array), which the call takes in every case (A must not be NULL then): pages already
 * touched cost no page faults (the DB weights' array: sap__db_matching). */
sap_status sap__csr_permute_scaled_into(const sap_csr *A, const sap_int *p, const sap_int *q, const double *rs,
                                        const double *cs, double *val, sap_csr **out);

/* What a pass that writes a copy of a matrix learns of the copy on the way, so the caller
 * reads it no second and third time (a DB's result: gen:banded N = 50,000, K = 1,500, 150M
 * entries on 16 cores: ~75 ms of sap__band_shape and ~30 ms of sap__drop_hist): */
typedef struct sap__copy_shape {
    int want_hist; /* in: make the distance histogram too */
    int done;      /* out: 1 when K, d (and hist, when wanted) below describe the copy */
    sap_int K;     /* its half-bandwidth, and ... */
    double d;      /* ... least row dominance: sap__band_shape's, the same figures */
    double *hist;  /* sap__drop_hist's histogram, bit for bit (hist_len entries of the
                      context, the caller's to free; NULL unless want_hist and done) */
    sap_int hist_len;
} sap__copy_shape;
/* The end of such a pass that went over nb histogram blocks: sh gets K = kmax, d = the
 * least of the blocks' dmin_b, and *h (NULL: none) merged (sap__dist_hist_merge on nt
 * threads), which it takes (*h = NULL). */
void sap__copy_shape_finish(sap__copy_shape *sh, sap_int kmax, const double *dmin_b, sap_int nb, double **h,
                            sap_int hl, int nt);
/* The rows of B = A(p, :) (p NULL: A's order), scaled r_i a_ij c_j (rs and cs NULL: not),
 * into B->val at B->rowptr (B made by the caller; their columns copied into B->colind too
 * unless B shares A's), in sap__dist_hist_blocks' blocks of B on up to nt threads, one pass:
 * sh (may be NULL) gets B's K, least dominance and, sh->want_hist, distance histogram (the
 * figures of sap__band_shape and the sums of sap__drop_hist, bit for bit).  dg (may be NULL;
 * p NULL then): |a_jj| of every row j, for DB's S0 test in the same pass: *s0 = 0 where an
 * entry is not finite or larger than its row's |a_ii| (the rows after the first such one are
 * skipped), 2 where it holds but some |a_ij|^2 > |a_ii a_jj|, else 1; sh is filled only
 * where *s0 = 1 (always without dg). */
sap_status sap__csr_rows_shape(const sap_csr *A, const sap_int *p, const double *rs, const double *cs,
                               const double *dg, sap_csr *B, int nt, sap__copy_shape *sh, int *s0);
/* sap__csr_permute_scaled_into; with q == NULL and sh given, the pass also fills sh for B
 * (sap__csr_rows_shape). */
sap_status sap__csr_permute_scaled_shape(const sap_csr *A, const sap_int *p, const sap_int *q, const double *rs,
                                         const double *cs, double *val, sap__copy_shape *sh, sap_csr **out);

/* Wall-clock seconds (monotonic). */
double sap__wtime(void);

/* splitmix64's finalizer: a bijective 64-bit mix (counter-based random numbers, hashes). */
static inline uint64_t sap__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

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
/* Whether the caller asked the running work to stop (ctx->stop_flag set and non-zero): a
 * plain read, safe from any thread; long loops poll it between independent pieces. */
static inline int sap__stop_requested(const sap_context *ctx) { return ctx && ctx->stop_flag && *ctx->stop_flag; }

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

/* Threads for a loop over 'work' entries: one per SAP_PAR_MIN_WORK of them, at most nt
 * (sap__threads_cap) or the context's (sap__threads_for).  A small loop that wakes every
 * core waits for the slowest of them: on a host where one core runs anything else (another
 * process, a driver thread) that is a time slice of the scheduler, milliseconds for
 * microseconds of work. */
static inline int sap__threads_cap(int nt, double work)
{
    const double k = work / (double)SAP_PAR_MIN_WORK;
    return nt < 1 ? 1 : k >= (double)nt ? nt : k >= 2.0 ? (int)k : 1;
}
static inline int sap__threads_for(const sap_context *ctx, double work)
{
    return sap__threads_cap(sap__threads(ctx), work);
}

/* OpenBLAS's own thread count (blas_threads.c; where the BLAS linked is not OpenBLAS these
 * do nothing): sap__blas_threads(n) lowers it to at most n, sap__blas_threads_for(flops,
 * per) to one thread per 'per' flops of the coming call (at least one); both return the
 * count to give back with sap__blas_threads_restore (0: none was changed). */
int sap__blas_threads(int n);
int sap__blas_threads_for(double flops, double per);
/* The count now (1 where the BLAS is not OpenBLAS). */
int sap__blas_threads_now(void);
void sap__blas_threads_restore(int was);

/* Scans of a host vector on the context's threads (hostscan.c): 1 when every entry is +0
 * or -0 (NaN and Inf are not zero); the index of the first NaN or Inf, n when none. */
int sap__host_all_zero(const sap_context *ctx, const double *x, sap_int n);
sap_int sap__host_first_nonfinite(const sap_context *ctx, const double *x, sap_int n);
/* memcpy(dst, src, bytes) on the context's threads (from 2 MB on); the areas must not overlap */
void sap__host_copy(const sap_context *ctx, void *dst, const void *src, size_t bytes);

/* This thread's number and its team's size (0 and 1 outside a parallel region and
 * without OpenMP). */
static inline void sap__omp_team(int *t, int *T)
{
#ifdef _OPENMP
    *t = omp_get_thread_num();
    *T = omp_get_num_threads();
#else
    *t = 0;
    *T = 1;
#endif
}

/* First row r in 0..n with rowptr[r] + r >= target: splits rows into ranges of about
 * equal work (entries + rows) for threads (src/matrix/csr_split.c). */
sap_int sap__split_rows(const sap_int *rowptr, sap_int n, sap_int target);

/* Lower and upper bandwidth of a CSR with sorted rows: *kl = max(i - j), *ku = max(j - i)
 * over the stored entries (0 when there are none), from the first and last entry of each
 * row, on nt threads for large matrices (src/matrix/csr_split.c). */
void sap__csr_lower_upper(const sap_csr *A, int nt, sap_int *kl, sap_int *ku);

/* sap_csr_stats without the norms and the symmetry deviation, for a solver's one pass
 * (src/matrix/csr_stats.c): the bandwidths, row counts, zero diagonal, dominance, and the
 * SPD estimate (numerical symmetry, checked only when every diagonal entry is positive,
 * stopping at the first asymmetric row: structurally_symmetric and symmetry_deviation
 * are left 0, numerically_symmetric is the check's answer or 0 when it did not run). */
sap_status sap__csr_stats_quick(const sap_csr *A, sap_matrix_stats *stats);
/* Its symmetry check alone (1: numerically symmetric), on nt threads. */
int sap__csr_numerically_symmetric(const sap_csr *A, int nt);

/* The blocks of the distance histogram h[k] = sum of a_ij^2 over |i - j| = k (sap_drop_off
 * and sap__csr_scan: the same blocks, so the same sums whatever the thread count): nb
 * blocks of about equal work, at most 64, one per 200,000 entries, few enough that nb
 * histograms of hl entries take at most about nnz doubles; block b is rows
 * [*r0, *r1). */
sap_int sap__dist_hist_blocks(const sap_csr *A, sap_int hl);
void sap__dist_hist_block_rows(const sap_csr *A, sap_int nb, sap_int b, sap_int *r0, sap_int *r1);
/* h[k] += h[b * hl + k] for the blocks b = 1 .. nb - 1 in block order (bit-identical for any
 * thread count), the distances k spread over nt threads */
void sap__dist_hist_merge(double *h, sap_int nb, sap_int hl, int nt);

/* One parallel pass over a square CSR whose row pointer was checked (rowptr[0] = 0,
 * non-decreasing, rowptr[n] = nnz; sap__csr_check_rowptr), on ctx's threads and allocator:
 * the column checks of sap_csr_check, the first
 * non-finite value, the statistics of sap__csr_stats_quick without the symmetry check,
 * and (with_hist) the distance histogram of sap_drop_off, so that a solver reads its
 * matrix once for all of them (src/matrix/csr_stats.c). */
typedef struct sap_csr_scan {
    sap_matrix_stats stats; /* as sap__csr_stats_quick, symmetry not checked (0) */
    int diag_positive;      /* every diagonal entry > 0: the symmetry check may make the SPD guess */
    int diag_row_max;       /* every row's diagonal entry stored, nonzero and its largest |a_ij|: DB's
                             * maximum-product matching is the identity (sap_db_matching's S0) */
    sap_int bad_row;        /* the first row with a column out of range or not increasing (nrows: none) */
    sap_int bad_entry;      /* the first non-finite value (nnz: none) */
    double *hist;           /* the distance histogram (hist_len entries, the matrix' context), or
                             * NULL: not asked, the matrix is invalid, too wide for the pass,
                             * or its band wider than n / 8 (kept for the matrix CM makes) */
    sap_int hist_len;
} sap_csr_scan;
sap_status sap__csr_scan(sap_context *ctx, const sap_csr *A, int with_hist, sap_csr_scan *out);
/* The first part of sap_csr_check: sizes, arrays and the row pointer (O(n)). */
sap_status sap__csr_check_rowptr(const sap_csr *A);

#endif /* SAP_BASE_H */
