/*
 * sap.h -- the one public header of sap, a library that solves sparse, banded and
 * block-tridiagonal linear systems Ax = b on NVIDIA GPUs and multicore CPUs.
 *
 * Conventions (they hold for every function below):
 *  - Every function that can fail returns a sap_status: 0 is success, > 0 a warning
 *    (the result is usable, read the statistics), < 0 an error (outputs are untouched
 *    or freed; nothing leaks).  sap_status_string() names a status; after an error
 *    sap_context_last_error() holds a message with the file:line where it was raised.
 *  - All state lives in an explicit sap_context; the library has no global state and
 *    never calls exit() or abort().  Objects remember the context that created them
 *    and must not outlive it.  Every *_destroy() accepts NULL.
 *  - Public sizes and indices are 64-bit (sap_int), 0-based.  Kernels may use 32-bit
 *    indices internally where they fit.
 *  - Matrices are real (double).  Dense arrays are column-major.
 * This header documents contracts; policies, measured figures and plans are in docs/.
 */
#ifndef SAP_H
#define SAP_H

#include <signal.h> /* sig_atomic_t */
#include <stddef.h>
#include <stdint.h>

/* SAP_API marks the library's public functions: the library is built with
 * -fvisibility=hidden, so only these are exported from the shared library. */
#if defined(__GNUC__) || defined(__clang__)
#define SAP_API __attribute__((visibility("default")))
#else
#define SAP_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------ */
/* Version                                                                         */
/* ------------------------------------------------------------------------------ */

#define SAP_VERSION_MAJOR 0
#define SAP_VERSION_MINOR 1
#define SAP_VERSION_PATCH 0
#define SAP_VERSION_NUMBER (SAP_VERSION_MAJOR * 10000 + SAP_VERSION_MINOR * 100 + SAP_VERSION_PATCH)
#define SAP_VERSION_STRING "0.1.0"

/* Run-time version: SAP_VERSION_NUMBER of the library actually linked. */
SAP_API int sap_version(void);
/* Run-time version string, e.g. "0.1.0". */
SAP_API const char *sap_version_string(void);
/* 1 when the library was built with the CUDA backend, else 0. */
SAP_API int sap_has_cuda(void);
/* 1 when the library was built with zlib (.gz files, compressed PNG), else 0. */
SAP_API int sap_has_zlib(void);
/* 1 when the library was built with the feature: "cuda", "zlib", "lapack" (the band-pivot
 * method), "openmp", "mpi" (the distributed block-tridiagonal solvers), "metis" (the
 * partitions of bilu/bilut/ras), "suitesparse" (the direct-host method); 0 for those built
 * without and for any other name. */
SAP_API int sap_has_feature(const char *name);

/* ------------------------------------------------------------------------------ */
/* Status codes                                                                    */
/* ------------------------------------------------------------------------------ */

/* X(name, value, description): the one table every status comes from. */
#define SAP_STATUS_TABLE(X)                                                                      \
    X(SAP_OK, 0, "success")                                                                      \
    X(SAP_WARN_NOT_CONVERGED, 1, "iteration limit reached before the tolerance")                 \
    X(SAP_WARN_STAGNATED, 2, "iteration stagnated before the tolerance")                         \
    X(SAP_WARN_BREAKDOWN, 3, "solver breakdown (a scalar such as rho became zero)")              \
    X(SAP_WARN_BOOSTED_PIVOTS, 4, "small pivots were boosted during factorization")              \
    X(SAP_WARN_INEXACT, 5, "result is inexact (true residual above the tolerance)")              \
    X(SAP_WARN_MM_UPPER, 6, "symmetric Matrix Market file stores entries above the diagonal")    \
    X(SAP_WARN_INTERRUPTED, 7, "stopped by the caller (a monitor returned non-zero)")            \
    X(SAP_ERR_INVALID, -1, "invalid argument")                                                   \
    X(SAP_ERR_OUT_OF_MEMORY, -2, "out of memory")                                                \
    X(SAP_ERR_TOO_LARGE, -3, "problem too large (sizes would overflow)")                         \
    X(SAP_ERR_NO_DEVICE, -4, "no GPU device available")                                          \
    X(SAP_ERR_DEVICE, -5, "GPU device error")                                                    \
    X(SAP_ERR_NOT_COMPILED, -6, "feature not compiled into this build")                          \
    X(SAP_ERR_IO, -7, "I/O error")                                                               \
    X(SAP_ERR_PARSE, -8, "parse error (non-numeric, missing or extra value)")                    \
    X(SAP_ERR_BANNER, -9, "bad Matrix Market banner")                                            \
    X(SAP_ERR_SIZE_LINE, -10, "bad Matrix Market size line")                                     \
    X(SAP_ERR_COUNT, -11, "entry count does not match the size line")                            \
    X(SAP_ERR_INDEX, -12, "index out of range")                                                  \
    X(SAP_ERR_NONFINITE, -13, "NaN or Inf value")                                                \
    X(SAP_ERR_TRUNCATED, -14, "truncated input")                                                 \
    X(SAP_ERR_NOT_SQUARE, -15, "matrix is not square")                                           \
    X(SAP_ERR_UNSUPPORTED, -16, "unsupported input (e.g. complex field)")                        \
    X(SAP_ERR_STRUCTURALLY_SINGULAR, -17, "matrix is structurally singular")                     \
    X(SAP_ERR_SINGULAR, -18, "matrix is numerically singular")                                   \
    X(SAP_ERR_BREAKDOWN, -19, "solver breakdown with a non-finite value")

typedef enum sap_status {
#define SAP_X_ENUM(name, value, text) name = value,
    SAP_STATUS_TABLE(SAP_X_ENUM)
#undef SAP_X_ENUM
} sap_status;

/* Human-readable description of a status; never NULL ("unknown status" if unknown). */
SAP_API const char *sap_status_string(sap_status status);
/* The status' identifier, e.g. "SAP_ERR_PARSE"; never NULL. */
SAP_API const char *sap_status_name(sap_status status);

/* ------------------------------------------------------------------------------ */
/* Context                                                                         */
/* ------------------------------------------------------------------------------ */

typedef int64_t sap_int;

typedef enum sap_backend {
    SAP_BACKEND_AUTO = 0, /* cuda when a device is present and compiled in, else cpu */
    SAP_BACKEND_CPU = 1,
    SAP_BACKEND_CUDA = 2
} sap_backend;

/* "auto", "cpu", "cuda". */
SAP_API const char *sap_backend_name(sap_backend backend);
/* Parses "auto"/"cpu"/"cuda" into *backend; SAP_ERR_INVALID otherwise. */
SAP_API sap_status sap_backend_parse(const char *name, sap_backend *backend);

/* Allocator hooks.  Any NULL function pointer means the default (malloc/free,
 * cudaMalloc/cudaFree).  'state' is passed back unchanged.  Returning NULL from an
 * alloc hook makes the library report SAP_ERR_OUT_OF_MEMORY and clean up. */
typedef struct sap_allocator {
    void *(*host_alloc)(void *state, size_t bytes);
    void (*host_free)(void *state, void *ptr);
    void *(*device_alloc)(void *state, size_t bytes, int device);
    void (*device_free)(void *state, void *ptr, int device);
    void *state;
} sap_allocator;

/* Print levels: what the library itself writes (to the log hook, else stderr). */
enum {
    SAP_PRINT_SILENT = 0,
    SAP_PRINT_ERRORS = 1,
    SAP_PRINT_WARNINGS = 2, /* default */
    SAP_PRINT_INFO = 3,
    SAP_PRINT_DEBUG = 4
};

typedef void (*sap_log_fn)(void *state, int level, const char *message);

typedef struct sap_context_config {
    sap_backend backend; /* default SAP_BACKEND_AUTO */
    int device;          /* CUDA device id, default 0 */
    int threads;         /* CPU threads; 0 = OpenMP default */
    int print_level;     /* SAP_PRINT_*, default SAP_PRINT_WARNINGS */
    sap_allocator allocator;
    sap_log_fn log;      /* NULL: messages go to stderr */
    void *log_state;
} sap_context_config;

/* Fills *cfg with the defaults above. */
SAP_API void sap_context_config_init(sap_context_config *cfg);

typedef struct sap_context sap_context;

/* Creates a context.  cfg may be NULL for the defaults.  Asking for SAP_BACKEND_CUDA
 * returns SAP_ERR_NOT_COMPILED in a CPU-only build and SAP_ERR_NO_DEVICE where no GPU
 * is present; SAP_BACKEND_AUTO never fails for those reasons (it falls back to cpu and
 * says so at SAP_PRINT_INFO).  On error *ctx is NULL. */
SAP_API sap_status sap_context_create(sap_context **ctx, const sap_context_config *cfg);
SAP_API void sap_context_destroy(sap_context *ctx);

/* The backend in use after 'auto' was resolved. */
SAP_API sap_backend sap_context_backend(const sap_context *ctx);
/* A one-line description of the device or CPU in use (never NULL). */
SAP_API const char *sap_context_device_name(const sap_context *ctx);
SAP_API int sap_context_threads(const sap_context *ctx);
SAP_API sap_status sap_context_set_threads(sap_context *ctx, int threads);
SAP_API sap_status sap_context_set_print_level(sap_context *ctx, int level);
SAP_API int sap_context_print_level(const sap_context *ctx);

/* Message of the last error (or warning) raised in this context, "file.c:123: text";
 * empty string if none. */
SAP_API const char *sap_context_last_error(const sap_context *ctx);
SAP_API void sap_context_clear_error(sap_context *ctx);

typedef struct sap_context_stats {
    int64_t host_bytes_in_use, host_bytes_peak, host_allocs;
    int64_t device_bytes_in_use, device_bytes_peak, device_allocs;
    int64_t failed_allocs;
    int64_t h2d_bytes, d2h_bytes, h2d_copies, d2h_copies;
    /* cuda: the device memory the live blocks take at their pool size class (what the
     * device must hold at once: device_bytes_in_use rounded up per block) and its peak;
     * freed blocks the pool caches are not counted (they are given back before an
     * allocation fails).  0 on the cpu backend. */
    int64_t device_block_bytes, device_block_bytes_peak;
} sap_context_stats;

SAP_API sap_status sap_context_get_stats(const sap_context *ctx, sap_context_stats *stats);
SAP_API void sap_context_reset_transfer_stats(sap_context *ctx);
/* Sets every peak (host_bytes_peak, device_bytes_peak, device_block_bytes_peak) to the
 * current use, so that the next peak is that of the work that follows. */
SAP_API void sap_context_reset_peak_stats(sap_context *ctx);

/* Memory owned by the context's host allocator (use for arrays handed to sap objects). */
SAP_API void *sap_malloc(sap_context *ctx, size_t bytes);
SAP_API void sap_free(sap_context *ctx, void *ptr);

/* ------------------------------------------------------------------------------ */
/* Matrices: COO, CSR, dense                                                       */
/* ------------------------------------------------------------------------------ */

/* Coordinate (triplet) matrix.  Entries may be unsorted and repeated (repeats add). */
typedef struct sap_coo {
    sap_context *ctx; /* owner (read-only) */
    sap_int nrows, ncols;
    sap_int nnz;      /* entries in use */
    sap_int capacity; /* entries allocated */
    sap_int *row, *col;
    double *val;
} sap_coo;

/* Compressed sparse row matrix.  Every CSR the library returns is canonical: column
 * indices strictly increasing within each row (no duplicates), rowptr[0] = 0,
 * rowptr[nrows] = nnz.  Explicit zeros are kept. */
typedef struct sap_csr {
    sap_context *ctx; /* owner (read-only) */
    sap_int nrows, ncols, nnz;
    sap_int *rowptr; /* nrows + 1 */
    sap_int *colind; /* nnz */
    double *val;     /* nnz */
} sap_csr;

/* Dense column-major matrix (also a block of right-hand sides). */
typedef struct sap_dense {
    sap_context *ctx; /* owner (read-only) */
    sap_int nrows, ncols, ld;
    double *val; /* val[i + j * ld] */
} sap_dense;

SAP_API sap_status sap_coo_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_int capacity, sap_coo **A);
SAP_API void sap_coo_destroy(sap_coo *A);
/* Appends one entry, growing the storage as needed. */
SAP_API sap_status sap_coo_push(sap_coo *A, sap_int i, sap_int j, double v);

/* Allocates an n x m CSR with room for nnz entries (rowptr zeroed, rest uninitialized). */
SAP_API sap_status sap_csr_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_int nnz, sap_csr **A);
SAP_API void sap_csr_destroy(sap_csr *A);
SAP_API sap_status sap_csr_copy(const sap_csr *A, sap_csr **B);
/* Copies user arrays (any row order of columns, duplicates summed) into a canonical CSR;
 * validates the arrays (SAP_ERR_INVALID/SAP_ERR_INDEX with the offending position).
 * val may be NULL (all ones). */
SAP_API sap_status sap_csr_from_arrays(sap_context *ctx, sap_int nrows, sap_int ncols, const sap_int *rowptr,
                                       const sap_int *colind, const double *val, sap_csr **A);
/* Checks the canonical-form invariants; SAP_ERR_INVALID with a message if broken. */
SAP_API sap_status sap_csr_check(const sap_csr *A);

/* COO -> canonical CSR (sorted, duplicates summed). */
SAP_API sap_status sap_csr_from_coo(const sap_coo *C, sap_csr **A);
SAP_API sap_status sap_csr_to_coo(const sap_csr *A, sap_coo **C);
SAP_API sap_status sap_csr_to_dense(const sap_csr *A, sap_dense **D);
/* Dense -> CSR keeping only entries with |a_ij| > drop_tol (drop_tol < 0 keeps all;
 * NaN entries are always kept). */
SAP_API sap_status sap_csr_from_dense(const sap_dense *D, double drop_tol, sap_csr **A);

/* The operations below take canonical CSR input (sap_csr_check) and return canonical
 * CSR; on error the output pointer is set to NULL.  Rectangular input is allowed unless
 * a function says "square" (SAP_ERR_NOT_SQUARE otherwise).  Results never depend on the
 * number of threads. */

/* AT = A^T (ncols x nrows), O(nnz + nrows + ncols). */
SAP_API sap_status sap_csr_transpose(const sap_csr *A, sap_csr **AT);

typedef enum sap_symmetry {
    SAP_GENERAL = 0,
    SAP_SYMMETRIC = 1,
    SAP_SKEW_SYMMETRIC = 2
} sap_symmetry;

/* Given one triangle (either; the diagonal as stored), returns the full matrix:
 * a_ji = a_ij (symmetric) or a_ji = -a_ij (skew; stored diagonal entries must be zero,
 * SAP_ERR_INVALID naming the first nonzero one; explicit zeros are kept).  T must be
 * square.  Where T stores both t_ij and t_ji (i != j; a mixed input) they add:
 * a_ij = t_ij + t_ji (symmetric) or t_ij - t_ji (skew).  SAP_GENERAL returns a copy. */
SAP_API sap_status sap_csr_symmetric_expand(const sap_csr *T, sap_symmetry symmetry, sap_csr **A);

/* B = alpha*A + beta*A^T over the union pattern (square A).  With alpha = beta = 1 its
 * pattern is the pattern of A + A^T (entries that cancel are kept as explicit zeros).
 * An entry whose mirror is not stored gets alpha*a_ij (b_ji = beta*a_ij). */
SAP_API sap_status sap_csr_add_transpose(const sap_csr *A, double alpha, double beta, sap_csr **B);

/* Permutations are arrays p of length n holding each of 0..n-1 once.
 * B(i, j) = A(p[i], q[j]), i.e. p and q map new positions to old ones; p has length
 * nrows, q length ncols.  p or q may be NULL (identity).  An invalid permutation gives
 * SAP_ERR_INVALID naming the position ("q[7] = 12 is outside 0..9"). */
SAP_API sap_status sap_csr_permute(const sap_csr *A, const sap_int *p, const sap_int *q, sap_csr **B);
/* Checks that p is a permutation of 0..n-1 (SAP_ERR_INVALID otherwise, the message
 * naming the offending position; p may be NULL when n = 0). */
SAP_API sap_status sap_perm_check(sap_context *ctx, sap_int n, const sap_int *p);
/* pinv[p[i]] = i.  p is checked first (pinv untouched on error); pinv must not alias p. */
SAP_API sap_status sap_perm_invert(sap_context *ctx, sap_int n, const sap_int *p, sap_int *pinv);

/* In place A = diag(r) * A * diag(c); r (length nrows) or c (length ncols) may be NULL
 * (identity). */
SAP_API sap_status sap_csr_scale(sap_csr *A, const double *r, const double *c);

/* y = alpha*A*x + beta*y on the host (OpenMP; bit-identical for any thread count).
 * beta = 0: y is output only (its old contents, NaN included, are ignored).  alpha = 0:
 * A and x are not read (x may be NULL).  x and y must not overlap. */
SAP_API sap_status sap_csr_spmv(const sap_csr *A, double alpha, const double *x, double beta, double *y);

typedef enum sap_norm_type {
    SAP_NORM_ONE = 1, /* max column sum */
    SAP_NORM_INF = 2, /* max row sum */
    SAP_NORM_FRO = 3, /* Frobenius */
    SAP_NORM_MAX = 4  /* max |a_ij| */
} sap_norm_type;

/* 0 for a matrix without entries; a NaN entry makes the norm NaN.  Bit-identical for
 * any thread count (the Frobenius sum runs over a fixed blocking of the rows and is
 * scaled against overflow and underflow). */
SAP_API sap_status sap_csr_norm(const sap_csr *A, sap_norm_type type, double *norm);

/* Statistics of a matrix, as the papers define them.  "Stored" entries include explicit
 * zeros (pattern quantities); values compare with a missing entry as 0.  Rectangular
 * matrices are allowed: the symmetry fields (structurally_symmetric,
 * numerically_symmetric, symmetry_deviation, spd_estimate) are then 0, and the diagonal
 * quantities (zero_diagonal, diag_dominance, dominant_rows) run over the rows
 * i < min(nrows, ncols).  NaN values propagate into diag_dominance and
 * symmetry_deviation where they enter them (and into the norms).
 * Bit-identical for any thread count. */
typedef struct sap_matrix_stats {
    sap_int nrows, ncols, nnz;
    sap_int half_bandwidth;  /* K = max |i - j| over stored entries, 0 if none */
    sap_int lower_bandwidth; /* max (i - j) over stored entries with i > j, else 0 */
    sap_int upper_bandwidth; /* max (j - i) over stored entries with j > i, else 0 */
    sap_int empty_rows;      /* rows without stored entries */
    sap_int max_row_nnz;
    double mean_row_nnz;     /* nnz / nrows (0 if nrows = 0) */
    double mean_row_width;   /* mean over rows of (last col - first col + 1), empty rows
                                counting 0 (0 if nrows = 0) */
    int structurally_symmetric; /* square and pattern(A) == pattern(A^T) */
    int numerically_symmetric;  /* square and a_ij == a_ji exactly (an explicit zero
                                   matches a missing entry) */
    double symmetry_deviation;  /* square: max |a_ij - a_ji| / max |a_ij| (0 if symmetric
                                   or A is all zero); rectangular: 0 */
    sap_int zero_diagonal;      /* diagonal entries that are missing or exactly zero */
    double diag_dominance;      /* d = min_i |a_ii| / sum_{j != i} |a_ij|; a row whose
                                   off-diagonal sum is 0 counts +inf (even if a_ii = 0),
                                   so d = +inf if all are 0 or there are no rows */
    sap_int dominant_rows;      /* rows with |a_ii| >= sum_{j != i} |a_ij| */
    int spd_estimate;           /* numerically symmetric with every a_ii > 0 (1 for 0x0) */
    double norm_one, norm_inf, norm_fro, norm_max; /* as sap_csr_norm */
} sap_matrix_stats;

SAP_API sap_status sap_csr_stats(const sap_csr *A, sap_matrix_stats *stats);

SAP_API sap_status sap_dense_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_dense **D);
SAP_API void sap_dense_destroy(sap_dense *D);

/* ------------------------------------------------------------------------------ */
/* Matrix Market I/O (files ending in .gz are read and written through zlib)       */
/* ------------------------------------------------------------------------------ */

typedef enum sap_mm_format { SAP_MM_COORDINATE = 0, SAP_MM_ARRAY = 1 } sap_mm_format;
typedef enum sap_mm_field { SAP_MM_REAL = 0, SAP_MM_INTEGER = 1, SAP_MM_PATTERN = 2 } sap_mm_field;

/* What the file said. */
typedef struct sap_mm_info {
    sap_mm_format format;
    sap_mm_field field;
    sap_symmetry symmetry;
    sap_int nrows, ncols;
    sap_int entries;    /* entries stored in the file (coordinate) or values (array) */
    int64_t bytes;      /* bytes of text parsed (after decompression) */
    int64_t lines;      /* lines read */
} sap_mm_info;

typedef struct sap_mm_read_options {
    int allow_nonfinite; /* accept NaN/Inf values (default 0: SAP_ERR_NONFINITE) */
    int require_square;  /* SAP_ERR_NOT_SQUARE for rectangular input (default 0) */
    int expand_symmetry; /* return the full matrix for symmetric/skew files (default 1);
                            0 returns the stored triangle as is */
    int symmetric_upper; /* sap_mm_upper: coordinate entries above the diagonal of a
                            symmetric or skew-symmetric file (default SAP_MM_UPPER_WARN) */
} sap_mm_read_options;

/* Entries above the diagonal in a symmetric or skew-symmetric coordinate file (the format
 * stores the lower triangle; some writers store the upper one, or both).  No choice sums
 * an entry with its stored mirror unless asked to (SAP_MM_UPPER_SUM):
 *   WARN   (default) every stored entry is taken as given, and only the mirrors the file
 *          does not store are filled in (negated for skew): a file holding only the lower
 *          triangle, only the upper one, or both (the full matrix) all read as the matrix
 *          they describe.  The read succeeds with SAP_WARN_MM_UPPER and a message naming
 *          the count of upper entries and how many of them have their mirror stored too
 *          (when the values differ there the result is not symmetric: as the file says).
 *   REJECT SAP_ERR_PARSE naming the count and the first such entry.
 *   SUM    the behaviour before: every off-diagonal entry is mirrored, so an entry stored
 *          in both triangles is summed (doubled); no warning.
 * With expand_symmetry = 0 entries are returned where the file puts them; WARN and SUM then
 * change nothing and REJECT still rejects. */
typedef enum sap_mm_upper { SAP_MM_UPPER_WARN = 0, SAP_MM_UPPER_REJECT = 1, SAP_MM_UPPER_SUM = 2 } sap_mm_upper;

SAP_API void sap_mm_read_options_init(sap_mm_read_options *opt);

/* Reads a coordinate or array file into a canonical CSR (duplicates summed; pattern
 * entries are 1.0; array files keep every value, zeros included).  opt and info may be
 * NULL.  Errors carry the line number in sap_context_last_error().
 * Right after the size line, before any allocation or work proportional to the sizes:
 *  - a declared count the rest of the input cannot hold (each entry line takes at least
 *    4 bytes "i j\n" in pattern files, 6 "i j v\n" in others, 2 "v\n" in array files; the
 *    size is that of the text after decompression) is SAP_ERR_COUNT naming the count and
 *    the most the input could hold;
 *  - the bytes the read will need at its peak (entry buffers, row counts and pointers, the
 *    CSR with mirrored entries) are compared with the machine's memory (more:
 *    SAP_ERR_TOO_LARGE) and with what this process can get now (MemAvailable, cgroup
 *    limit, RLIMIT_AS/RLIMIT_DATA: SAP_ERR_OUT_OF_MEMORY naming the file, the step, the
 *    bytes needed and available).  The read allocates nothing of the column count: what
 *    does later (sap_csr_stats, norms, transposes: ncols + 1 words) is checked there. */
SAP_API sap_status sap_mm_read_csr(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_csr **A,
                                   sap_mm_info *info);
/* The same from a memory buffer (len bytes of text; not necessarily NUL-terminated). */
SAP_API sap_status sap_mm_parse_csr(sap_context *ctx, const char *text, size_t len, const sap_mm_read_options *opt,
                                    sap_csr **A, sap_mm_info *info);
/* Reads an array (or coordinate) file into a dense matrix, e.g. right-hand sides. */
SAP_API sap_status sap_mm_read_dense(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_dense **X,
                                     sap_mm_info *info);

typedef struct sap_mm_write_options {
    sap_mm_format format;   /* default coordinate */
    sap_mm_field field;     /* default real; integer requires integral values */
    sap_symmetry symmetry;  /* default general; symmetric/skew write the lower triangle
                               and require the matrix to have that symmetry */
    int precision;          /* reals: 17 (default) writes the shortest text that reads
                               back as exactly the same double (at most 17 significant
                               digits, e.g. 0.1, 2.5e-07, 1e+22, -0); 1..16 round to that
                               many significant digits as printf("%.*g") */
    const char *comment;    /* optional comment line(s) written after the banner */
} sap_mm_write_options;

SAP_API void sap_mm_write_options_init(sap_mm_write_options *opt);

SAP_API sap_status sap_mm_write_csr(const sap_csr *A, const char *path, const sap_mm_write_options *opt);
SAP_API sap_status sap_mm_write_dense(const sap_dense *X, const char *path, const sap_mm_write_options *opt);

/* ------------------------------------------------------------------------------ */
/* Generators (deterministic from a seed)                                          */
/* ------------------------------------------------------------------------------ */

/* All generators build canonical CSR directly (memory: the CSR itself plus O(n)),
 * generate rows in parallel and give bit-identical output for any thread count: every
 * random value is a function of (seed, row, column).  Sizes must be >= 1 and parameters
 * in range (SAP_ERR_INVALID naming the parameter); sizes whose entry count would overflow
 * give SAP_ERR_TOO_LARGE. */

/* Dense banded N x N with half-bandwidth K (K >= N is clamped to N - 1): off-diagonal
 * entries uniform in [-1, 1], diagonal a_ii = d * sum_{j != i} |a_ij| (d finite, >= 0),
 * so the degree of diagonal dominance is exactly d up to rounding; a row without
 * off-diagonal entries (N = 1 or K = 0) gets a_ii = 1.  symmetric != 0 makes A = A^T
 * (SPD when d > 1). */
SAP_API sap_status sap_gen_banded(sap_context *ctx, sap_int n, sap_int k, double d, int symmetric, uint64_t seed,
                                  sap_csr **A);

/* Synthetic sparse: a banded matrix Band of half-bandwidth K (clamped as above) whose
 * off-diagonal band entries are each kept with probability 'fill' in (0, 1] (1 = dense
 * band; the diagonal is always kept), diagonal rescaled to d over the kept entries,
 * then hidden by independent random row and column permutations:
 * A(i, j) = Band(p[i], q[j]).  p and q (length n, may be NULL) receive the
 * permutations (new -> old).  With fill = 1, Band is sap_gen_banded(n, k, d, 0, seed). */
SAP_API sap_status sap_gen_synthetic(sap_context *ctx, sap_int n, sap_int k, double d, double fill, uint64_t seed,
                                     sap_csr **A, sap_int *p, sap_int *q);

/* 5-point 2D Poisson on an nx x ny grid, 7-point 3D Poisson on nx x ny x nz
 * (Dirichlet, unscaled: 4 or 6 on the diagonal, -1 off it; SPD).  Natural ordering, x
 * fastest: grid point (x, y, z) is row x + nx (y + ny z).  nnz = 5n - 2(nx + ny) in 2D,
 * 7n - 2(nx ny + ny nz + nx nz) in 3D. */
SAP_API sap_status sap_gen_poisson2d(sap_context *ctx, sap_int nx, sap_int ny, sap_csr **A);
SAP_API sap_status sap_gen_poisson3d(sap_context *ctx, sap_int nx, sap_int ny, sap_int nz, sap_csr **A);
/* 3D convection-diffusion -lap u + beta (1,1,1) . grad u on an n^3 grid, 7-point central
 * differences scaled by h^2 (h = 1/(n+1)): 6 on the diagonal, -1 - beta h/2 for the
 * lower neighbours, -1 + beta h/2 for the upper ones (nonsymmetric; comparable to the
 * atmosmodd matrices for n ~ 108). */
SAP_API sap_status sap_gen_convdiff3d(sap_context *ctx, sap_int n, double beta, sap_csr **A);
/* 3D anisotropic diffusion with coefficient jumps: -div(k D grad u) on n^3 cells (finite
 * volumes, Dirichlet), D = diag(1, 1, eps), k = jump on a 4 x 4 x 4 checkerboard of
 * sub-cubes and 1 elsewhere (harmonic means on the faces), scaled by h^2.  SPD M-matrix,
 * weakly diagonally dominant; nnz = 7 n^3 - 6 n^2.  eps, jump in [1e-12, 1e12]. */
SAP_API sap_status sap_gen_aniso3d(sap_context *ctx, sap_int n, double eps, double jump, sap_csr **A);
/* 2D convection-diffusion with recirculation: -nu lap u + w . grad u on [-1, 1]^2 with
 * n^2 interior points, w = (2 y (1 - x^2), -2 x (1 - y^2)) (the "double glazing" wind),
 * first-order upwind convection, scaled by h^2 (h = 2 / (n + 1)).  Nonsymmetric M-matrix,
 * weakly diagonally dominant; nnz = 5 n^2 - 4 n.  nu in [1e-12, 1e12]. */
SAP_API sap_status sap_gen_recirc2d(sap_context *ctx, sap_int n, double nu, sap_csr **A);
/* Elasticity-like block system: dof (1..32) unknowns per node of an nx x ny x nz grid,
 * A = L (x) K, L the 7-point Laplacian with varying coefficients (node weights in [1, 10),
 * Dirichlet boundary), K the dof x dof SPD coupling (dof + 1 on the diagonal, 1 off it);
 * SPD.  Unknown a of grid point (x, y, z) is row dof (x + nx (y + ny z)) + a, so the rows
 * of a node share one pattern (the natural blocks of block-Jacobi). */
SAP_API sap_status sap_gen_elasticity3d(sap_context *ctx, sap_int nx, sap_int ny, sap_int nz, int dof, sap_csr **A);

/* Radiative transfer in stellar atmospheres: Galerkin matrix of
 * (T phi)(t) = albedo/2 * int_0^tau E1(|t - s|) phi(s) ds with n piecewise-constant
 * elements of width h = tau/n on [0, tau], A_ij = albedo/(2h) * (double integral of E1
 * over cells i and j) (exact through E3, evaluated without cancellation), minus
 * shift * I.  Entries with |i - j| > bw are dropped (bw >= n is clamped to n - 1);
 * bw < 0 takes the paper's formula bw = floor(n (1 - exp(-n / (tc tau)))),
 * tc = max(n/100, 5), about 100 n / tau for n >= 500 (where the kernel has decayed to
 * e^-100).  Off-diagonal entries that underflow to 0 are dropped too.  Symmetric
 * Toeplitz; interior row sums tend to albedo as tau grows.  tau > 0; albedo, shift
 * finite. */
SAP_API sap_status sap_gen_radiative(sap_context *ctx, sap_int n, double albedo, double tau, sap_int bw, double shift,
                                     sap_csr **A);

/* Block-tridiagonal, n = nb k, with nb x nb block rows of dense k x k blocks (the
 * diagonal block and both off-diagonal blocks): off-diagonal entries uniform in
 * [-1, 1], diagonal rescaled to degree of diagonal dominance d as in sap_gen_banded. */
SAP_API sap_status sap_gen_blocktridiag(sap_context *ctx, sap_int nb, sap_int k, double d, uint64_t seed, sap_csr **A);

/* Exponential integral E_n(x), n >= 0, x >= 0, to a few ulps (power series for x <= 1,
 * continued fraction above).  E_0(x) = e^-x / x; E_n(0) = 1/(n - 1) for n >= 2 and
 * +inf for n <= 1; E_n(+inf) = 0; NaN for n < 0, x < 0 or x NaN. */
SAP_API double sap_expint(int n, double x);

typedef enum sap_xstar {
    SAP_XSTAR_RANDOM = 0,  /* uniform in [-1, 1], a function of (seed, i) */
    SAP_XSTAR_PARABOLA = 1, /* 1 + 399 (1 - ((i - c) / c)^2), c = (n - 1) / 2: 1 at both
                               ends, 400 in the middle (n = 1: 400; the papers' choice) */
    SAP_XSTAR_ONES = 2
} sap_xstar;

/* Fills x (length n >= 0; may be NULL when n = 0) with a manufactured solution; the
 * seed matters for SAP_XSTAR_RANDOM only. */
SAP_API sap_status sap_gen_xstar(sap_context *ctx, sap_int n, sap_xstar kind, uint64_t seed, double *x);

/* Builds a matrix from a spec string "gen:NAME:key=value,..." (see sap_gen_spec_help
 * for the keys and their defaults) with NAME one of banded, synthetic, poisson2d,
 * poisson3d, radiative, blocktridiag, convdiff3d, elasticity3d, aniso3d, recirc2d.  Names and keys are case-insensitive; integers
 * accept 200000, 2e5, 200k, 0.2M.  An unknown generator or key, a missing required key,
 * a key given twice or a bad value gives SAP_ERR_INVALID with a message naming the key
 * and listing the valid ones. */
SAP_API sap_status sap_gen_spec(sap_context *ctx, const char *spec, sap_csr **A);
/* Text describing every generator and its keys (static, never NULL). */
SAP_API const char *sap_gen_spec_help(void);
/* A spec ("gen:...") or a Matrix Market path (opt may be NULL). */
SAP_API sap_status sap_matrix_load(sap_context *ctx, const char *path_or_spec, const sap_mm_read_options *opt,
                                   sap_csr **A);

/* ------------------------------------------------------------------------------ */
/* Backend matrices and SpMV                                                       */
/* ------------------------------------------------------------------------------ */

typedef enum sap_precision { SAP_DOUBLE = 0, SAP_FLOAT = 1 } sap_precision;

/* Storage formats for the sparse matrix-vector product. */
typedef enum sap_spmv_format {
    SAP_FORMAT_AUTO = 0, /* chosen from the matrix statistics and the backend */
    SAP_FORMAT_CSR = 1,  /* row-length-adaptive CSR */
    SAP_FORMAT_ELL = 2,  /* ELLPACK, column-major, padded to the longest row */
    SAP_FORMAT_SELLP = 3, /* sliced ELLPACK with padding (SELL-P) */
    SAP_FORMAT_HEC = 4,  /* hybrid ELL + CSR (ELL width chosen, the rest as CSR) */
    SAP_FORMAT_BAND = 5  /* dense band (DIA): the diagonals -kl..ku stored column-major
                            n x (kl + ku + 1), no column indices; for matrices whose band
                            is mostly full (the automatic choice on cuda when at least 70%
                            of the band's slots hold entries) */
} sap_spmv_format;

/* "auto", "csr", "ell", "sellp", "hec", "band" ("sell-p" is also parsed).  On the cpu backend
 * AUTO is CSR; the padded formats need ncols <= 2^31 - 1 (SAP_ERR_TOO_LARGE otherwise),
 * and ELL pads every row to the longest one. */
SAP_API const char *sap_spmv_format_name(sap_spmv_format format);
SAP_API sap_status sap_spmv_format_parse(const char *name, sap_spmv_format *format);

/* A sparse matrix resident on the context's backend (device memory for cuda), stored in
 * one SpMV format and precision.  Created from a canonical host CSR (checked; any shape);
 * the CSR is copied (the pattern and the values are also kept on the host: for
 * update_values, and for the copies some Krylov methods derive on first use -- A^T for
 * BiCG/QMR, a float A for IR, a CSR A for async-jacobi -- kept until the next
 * update_values or destroy). */
typedef struct sap_matrix sap_matrix;

typedef struct sap_matrix_options {
    sap_spmv_format format; /* default SAP_FORMAT_AUTO */
    sap_precision precision; /* values stored in double (default) or float */
} sap_matrix_options;

SAP_API void sap_matrix_options_init(sap_matrix_options *opt);
SAP_API sap_status sap_matrix_create(sap_context *ctx, const sap_csr *A, const sap_matrix_options *opt, sap_matrix **M);
SAP_API void sap_matrix_destroy(sap_matrix *M);
/* New values with the same pattern (val has A->nnz entries in the CSR order). */
SAP_API sap_status sap_matrix_update_values(sap_matrix *M, const double *val);
/* The format in use (never AUTO) and the reason it was chosen (static text). */
SAP_API sap_spmv_format sap_matrix_format(const sap_matrix *M);
SAP_API const char *sap_matrix_format_reason(const sap_matrix *M);
SAP_API sap_int sap_matrix_nrows(const sap_matrix *M);
SAP_API sap_int sap_matrix_ncols(const sap_matrix *M);
/* y = alpha*A*x + beta*y with host vectors (copied to and from the backend, converted
 * to and from the matrix' precision); beta = 0 does not read y. */
SAP_API sap_status sap_matrix_spmv(sap_matrix *M, double alpha, const double *x, double beta, double *y);

/* ------------------------------------------------------------------------------ */
/* Preconditioners                                                                 */
/* ------------------------------------------------------------------------------ */

/* A preconditioner M ~ A: symbolic setup (pattern only), numeric setup (values) and
 * apply z = M^{-1} r.  Its apply may run in float inside a double solve: the solver's
 * vectors are then converted to the preconditioner's precision and back (a float
 * preconditioner is not an exactly linear operator; FGMRES tolerates that best, the other
 * methods may stagnate near cond(A) * 1e-7).  Calls must come in the order symbolic ->
 * numeric -> apply; numeric setup does a missing symbolic setup itself, apply (or a solve)
 * before a successful numeric setup is SAP_ERR_INVALID.  A non-square A is
 * SAP_ERR_NOT_SQUARE. */
typedef struct sap_precond sap_precond;

/* name: "none" (identity) or "jacobi" (scalar Jacobi; zero diagonal entries give
 * SAP_ERR_SINGULAR at numeric setup); the banded "sap-d", "sap-c" and "sap" are described
 * with the banded systems below; the ILU family "ilu0", "iluk", "ilut", "ic0" (see the
 * README).  "NAME:V1,V2,..." also sets options: the i-th value the type's i-th option (the
 * order of its help), e.g. "iluk:2" (k = 2), "ilut:7,0.01" (p = 7, tau = 0.01); items
 * "key=value" may be mixed in. */
SAP_API sap_status sap_precond_create(sap_context *ctx, const char *name, sap_precond **P);
SAP_API void sap_precond_destroy(sap_precond *P);
SAP_API const char *sap_precond_name(const sap_precond *P);
/* Precision the preconditioner stores and applies in (default double).  Changing it after
 * the numeric setup requires a new numeric setup. */
SAP_API sap_status sap_precond_set_precision(sap_precond *P, sap_precision precision);
SAP_API sap_status sap_precond_setup_symbolic(sap_precond *P, const sap_csr *A);
SAP_API sap_status sap_precond_setup_numeric(sap_precond *P, const sap_csr *A);
/* z = M^{-1} r with host vectors (length n). */
SAP_API sap_status sap_precond_apply(sap_precond *P, const double *r, double *z);

/* ------------------------------------------------------------------------------ */
/* Krylov solvers                                                                  */
/* ------------------------------------------------------------------------------ */

typedef enum sap_krylov_type {
    SAP_KRYLOV_CG = 0,
    SAP_KRYLOV_BICGSTAB = 1,
    SAP_KRYLOV_BICGSTABL = 2, /* parameter l, default 2 */
    SAP_KRYLOV_GMRES = 3,     /* parameter m (restart), default 20 */
    SAP_KRYLOV_FGMRES = 4,    /* parameter m, default 30 */
    SAP_KRYLOV_IDR = 5,       /* parameter s, default 4 */
    SAP_KRYLOV_BICG = 6,      /* BiCG (uses A^T) */
    SAP_KRYLOV_CGS = 7,       /* conjugate gradients squared */
    SAP_KRYLOV_QMR = 8,       /* QMR without look-ahead (uses A^T) */
    SAP_KRYLOV_TFQMR = 9,     /* transpose-free QMR */
    SAP_KRYLOV_IR = 10,       /* mixed-precision iterative refinement; parameter: the inner
                                 method ("ir:gmres", the default, "ir:bicgstab", ...) */
    SAP_KRYLOV_ASYNC_JACOBI = 11, /* block-asynchronous Jacobi; parameter: local sweeps
                                    (default 2, 1..64) */
    SAP_KRYLOV_RICHARDSON = 12 /* preconditioned Richardson while every step contracts the
                                  residual 4x, then BiCGStab(l); parameter l (default 2) */
} sap_krylov_type;

typedef enum sap_precond_side { SAP_PRECOND_RIGHT = 0, SAP_PRECOND_LEFT = 1 } sap_precond_side;

/* Parses "cg", "bicgstab", "bicgstabl:2", "gmres:20", "fgmres:30", "idr:4" (the number is
 * optional: *param = 0 means the default; l <= 16, m <= 1000, s <= 64), names
 * case-insensitive.  Methods registered at run time (sap_krylov_method_count lists them)
 * parse to ids >= 64 outside the enum's named values; those ids select them in
 * sap_krylov_options.type and sap_krylov_name names them. */
SAP_API sap_status sap_krylov_parse(const char *spec, sap_krylov_type *type, int *param);
SAP_API const char *sap_krylov_name(sap_krylov_type type);

/* Called after every iteration and every partial step (BiCGStab: half steps; BiCGStab(l):
 * steps of 1/(2l), quarter steps for l = 2) with the relative residual the iteration
 * monitors; return non-zero to stop (the solve then returns SAP_WARN_INTERRUPTED with x the
 * best iterate).  E.g. a SIGINT handler sets a flag the monitor returns. */
typedef int (*sap_krylov_monitor)(void *state, double iteration, double relative_residual);

typedef struct sap_krylov_options {
    sap_krylov_type type;     /* default SAP_KRYLOV_BICGSTABL */
    int param;                /* l, m or s; 0 = the method's default */
    sap_precond_side side;    /* default right.  Right preconditioning monitors the true
                                 residual; left monitors ||M^-1 r|| / ||M^-1 b||.  CG always
                                 uses the symmetric form (monitors ||r||), FGMRES is right
                                 only: for them side is ignored */
    double tol;               /* relative residual ||b - Ax|| / ||b||, default 1e-10; the
                                 true residual is checked at the end, and when only the
                                 recursive one met tol the method restarts from the true
                                 residual (at most 3 times, within maxit) */
    sap_int maxit;            /* default 1000 iterations (GMRES, FGMRES and IDR(s) count one
                                 per SpMV; BiCGStab(l) one per outer iteration of 2l SpMVs) */
    sap_int stagnation_window; /* iterations without a 1e-3 relative decrease of the best
                                  residual that count as stagnation; default 0 = off */
    int history;              /* record the residual history (default 1) */
    sap_krylov_monitor monitor;
    void *monitor_state;
    int sync_timing;          /* 1 (default): synchronise the device around each SpMV and
                                 preconditioner call so that time_spmv / time_precond are
                                 exact; 0: no extra synchronisation (faster on a GPU, where
                                 those two times then measure kernel launches only) */
} sap_krylov_options;

SAP_API void sap_krylov_options_init(sap_krylov_options *opt);

typedef struct sap_krylov_stats {
    double iterations;          /* BiCGStab(l): in steps of 1/(2l) (quarter steps for l = 2,
                                   as the SaP papers count); BiCGStab: half steps */
    double relative_residual;   /* as the iteration measured it (preconditioned if left) */
    double true_residual;       /* ||b - Ax|| / ||b|| recomputed at the end */
    sap_int spmv_count, precond_count; /* including the initial and final residuals (none
                                          for a zero guess; none at the end where the
                                          method's last residual is the true one) */
    double time_setup;          /* vectors, uploads, ||b|| */
    double time_spmv, time_precond; /* inside SpMVs and preconditioner applications */
    double time_vector;         /* the rest: vector kernels and host work */
    double time_total;          /* seconds */
    double time_transfer;       /* of time_total: the copies between the host and the backend
                                   of b, x0 and x (0 for backend vectors; the host's own
                                   memcpy on the cpu backend) */
    sap_int history_length;
    const double *history;      /* the initial relative residual, then one entry per monitor
                                   call (owned by the solver, valid until its next solve) */
    sap_status status;
} sap_krylov_stats;

/* A Krylov solver bound to a matrix and an optional preconditioner (NULL: none). */
typedef struct sap_krylov sap_krylov;

SAP_API sap_status sap_krylov_create(sap_context *ctx, const sap_krylov_options *opt, sap_krylov **K);
SAP_API void sap_krylov_destroy(sap_krylov *K);
/* Solves A x = b.  x holds the initial guess on entry (host, length n; an all-zero guess is
 * set on the backend instead of uploaded and its residual is b, no SpMV; Richardson's and
 * IR's last residual is the true one, no SpMV after them either).  Returns SAP_OK on
 * convergence (true residual <= tol; b = 0 gives x = 0), a warning with x the best
 * iterate (SAP_WARN_NOT_CONVERGED: maxit; SAP_WARN_INTERRUPTED: the monitor; SAP_WARN_STAGNATED;
 * SAP_WARN_BREAKDOWN: a scalar such as rho became 0), or an error (SAP_ERR_BREAKDOWN: a
 * NaN/Inf appeared, x is still the best iterate; SAP_ERR_NONFINITE: NaN/Inf in b or x0;
 * SAP_ERR_NOT_SQUARE; SAP_ERR_INVALID: e.g. P not set up or of another size).  The
 * message (sap_context_last_error) names the method, the iteration and the quantity.
 * The Krylov vectors work in the matrix' precision and stay allocated in K for the next
 * solve of the same size.  stats may be NULL; when given it is always filled. */
SAP_API sap_status sap_krylov_solve(sap_krylov *K, sap_matrix *A, sap_precond *P, const double *b, double *x,
                                    sap_krylov_stats *stats);
/* k right-hand sides of the same A and P (column c of B at B + c ldb, ldb >= n; likewise X,
 * which holds the initial guesses).  CG, BiCGStab, BiCGStab(l), GMRES, FGMRES, CGS, TFQMR,
 * IDR(s) and Richardson run up to 32 columns in lockstep: one SpMM and one block
 * preconditioner application a step for all of them (the SaP preconditioners: one pass over
 * their band factors for all columns), every column with its own scalars, iteration count
 * and stop (no residual history is recorded for them); BiCG, QMR (their A^T products),
 * iterative refinement, asynchronous Jacobi and a column whose b is 0 or tiny (the single
 * solve's scaling) solve column by column with sap_krylov_solve.  The monitor is called once a step
 * with the largest relative residual of the columns still iterating; a stop ends them all.
 * stats (k entries, may be NULL): each column's iterations, residuals and status; the
 * counts and times are those of its batch (the operator counts: k per block apply).
 * Returns the worst column status (an error before a warning). */
SAP_API sap_status sap_krylov_solve_many(sap_krylov *K, sap_matrix *A, sap_precond *P, sap_int k, const double *B,
                                         sap_int ldb, double *X, sap_int ldx, sap_krylov_stats *stats);

/* ------------------------------------------------------------------------------ */
/* Banded systems                                                                  */
/* ------------------------------------------------------------------------------ */
/* The split-and-parallelize (truncated SPIKE) solver for a banded A of half-bandwidth K:
 * A is split into P diagonal blocks A_i (sizes as sap_partition_offsets), each factored
 * independently and in parallel by LU without pivoting (small pivots boosted), and the
 * result preconditions Richardson steps while each contracts the residual 4x, then
 * BiCGStab(2) (CG for an SPD matrix with SaP-D).
 *   SaP-D: M = blockdiag(A_i) (the coupling blocks are dropped).
 *   SaP-C: M additionally couples neighbouring blocks through the truncated spikes
 *          V_i^(b), W_{i+1}^(t) and the 2K x 2K reduced systems, with purified
 *          right-hand sides for the final correction.
 *   DIRECT: one block (P = 1) factored in double and applied with iterative refinement,
 *          no Krylov iteration (runs on the host on every backend).
 * W_{i+1}^(t) comes from a UL factorization of the leading m + 3 K_{i+1} rows of A_{i+1}
 * only (an approximation of the full UL that the decay of the spikes makes accurate for
 * dominant matrices; the Krylov iteration absorbs the rest).  On the cuda backend the
 * factors live in device memory and every kernel runs there; the band itself is built
 * from the CSR on the host and uploaded (counted in T_BC).
 * The preconditioners are also registered as "sap-d", "sap-c" and "sap" (automatic) for
 * sap_precond_create.  Timings follow the papers: T_LU (partition factorizations), T_BC
 * (band and coupling blocks built and moved to the backend), T_SPK (spikes), T_LUrdcd
 * (reduced systems), T_Kry (the Krylov solve).
 * The Krylov solver's matrix uses the BAND SpMV format (chosen automatically for dense
 * bands) and the factors are filled from it on the backend.  Measured figures:
 * docs/performance.md. */

typedef enum sap_band_method {
    SAP_BAND_AUTO = 0,  /* chosen from N, K, d and the backend (stats.reason says why) */
    SAP_BAND_SAPD = 1,  /* decoupled */
    SAP_BAND_SAPC = 2,  /* coupled (truncated SPIKE) */
    SAP_BAND_DIRECT = 3 /* P = 1, double, iterative refinement */
} sap_band_method;

/* "auto", "sap-d", "sap-c", "direct". */
SAP_API const char *sap_band_method_name(sap_band_method method);
/* Parses the names above ("sapd", "sapc", "d", "c" also accepted); SAP_ERR_INVALID otherwise. */
SAP_API sap_status sap_band_method_parse(const char *name, sap_band_method *method);

typedef struct sap_band_options {
    sap_band_method method;  /* default SAP_BAND_AUTO: SaP-D when d >= 1 (d = min_i |a_ii| /
                                sum_{j != i} |a_ij|) or P = 1, else SaP-C */
    sap_int partitions;      /* P; 0 = automatic (default): cpu SaP-D 16, SaP-C 4 (never the
                                thread count: results are the same bits for any number of
                                threads); cuda SaP-D 16 per SM, SaP-C 2 per SM; then limited so that partitions keep
                                >= max(2K, 64) rows (cuda SaP-D: >= max(K/2, 64)).  1 <= P <= N */
    sap_int half_bandwidth;  /* 0 (default): K of the matrix.  K > 0 (K < N): entries with
                                |i - j| > K are dropped from the preconditioner and counted
                                in stats.dropped_entries (the Krylov solve uses them all) */
    int factor_precision;    /* -1 (default): automatic (float, double when d < 0.1 and for
                                DIRECT); SAP_FLOAT or SAP_DOUBLE: factors stored and applied
                                in that precision */
    double boost_threshold;  /* pivots with |u_kk| < threshold are boosted; < 0 (default):
                                eps(factor precision) * ||A_i||_inf for each block */
    double boost_value;      /* magnitude a boosted pivot gets (sign kept, + for 0);
                                <= 0 (default): sqrt(eps(factor precision)) * ||A_i||_inf */
    int krylov_auto;         /* 1 (default): CG for an SPD matrix with SaP-D, else
                                Richardson while each step contracts the residual 4x, then
                                BiCGStab(2) (SAP_KRYLOV_RICHARDSON; krylov.type/param
                                ignored); 0: krylov as given */
    sap_krylov_options krylov; /* tolerance, maxit, ... (defaults of sap_krylov_options_init) */
} sap_band_options;

/* Fills *opt with the defaults above. */
SAP_API void sap_band_options_init(sap_band_options *opt);

typedef struct sap_band_stats {
    sap_band_method method;         /* the method used (never AUTO) */
    sap_int partitions;             /* P used */
    sap_int half_bandwidth;         /* K: the largest K_i */
    sap_precision factor_precision; /* precision of the factors */
    sap_krylov_type krylov_type;    /* the Krylov method used (none for DIRECT: CG reported) */
    char reason[160];               /* why this method, P and precision */
    sap_int boosted_pivots;         /* pivots replaced by the boost value (LU and UL) */
    sap_int dropped_entries;        /* entries of A not represented in the preconditioner
                                       (beyond half_bandwidth, or coupling non-neighbouring
                                       blocks when blocks are smaller than K) */
    double time_lu, time_bc, time_spk, time_lurdcd; /* T_LU, T_BC, T_SPK, T_LUrdcd (s) */
    double time_setup;              /* the whole setup (s) */
    double time_kry;                /* T_Kry: the last solve (s), its transfers included */
    double time_kry_transfer;       /* of time_kry: b up and x down (the Krylov solve's
                                       time_transfer: the papers' T_Kry, the system on the
                                       device, is time_kry - time_kry_transfer) */
    double iterations;              /* of the last solve (BiCGStab(2): quarter steps; Richardson:
                                       steps, then its fallback's quarter steps; DIRECT:
                                       refinement steps) */
    double relative_residual;       /* true ||b - Ax|| / ||b|| of the last solve */
    sap_status status;              /* of the last solve */
} sap_band_stats;

/* A banded solver bound to one matrix. */
typedef struct sap_band_solver sap_band_solver;

/* From a square CSR (copied).  opt may be NULL (defaults).  Checks the options (P > N,
 * half_bandwidth >= N: SAP_ERR_INVALID; non-square: SAP_ERR_NOT_SQUARE; NaN/Inf entries:
 * SAP_ERR_NONFINITE). */
SAP_API sap_status sap_band_solver_create(sap_context *ctx, const sap_csr *A, const sap_band_options *opt,
                                          sap_band_solver **S);
/* From band arrays in the tall-and-thin layout: A(i, j) = band[(j - i + K) * n + i] for
 * |i - j| <= K (entries falling outside the matrix are ignored).  K < n, else
 * SAP_ERR_INVALID. */
SAP_API sap_status sap_band_solver_create_band(sap_context *ctx, sap_int n, sap_int K, const double *band,
                                               const sap_band_options *opt, sap_band_solver **S);
SAP_API void sap_band_solver_destroy(sap_band_solver *S);
/* Automatic choices, partitioning, band and coupling extraction, factorizations, spikes,
 * reduced systems.  SAP_WARN_BOOSTED_PIVOTS when pivots were boosted.  Done by the first
 * solve when not called. */
SAP_API sap_status sap_band_solver_setup(sap_band_solver *S);
/* Solves A x = b (host vectors of length n; x holds the initial guess, ignored by
 * DIRECT).  Returns as sap_krylov_solve (DIRECT: SAP_WARN_INEXACT when 10 refinement
 * steps do not reach the tolerance; NaN/Inf in b: SAP_ERR_NONFINITE); when this call did
 * the setup itself and pivots were boosted, a converged solve returns
 * SAP_WARN_BOOSTED_PIVOTS.  stats may be NULL; when given it is filled. */
SAP_API sap_status sap_band_solver_solve(sap_band_solver *S, const double *b, double *x, sap_band_stats *stats);
/* The statistics of the setup and the last solve. */
SAP_API sap_status sap_band_solver_get_stats(const sap_band_solver *S, sap_band_stats *stats);
/* Predicted seconds of the banded SaP factorization (what sap_band_solver_setup and the
 * numeric setup of a "sap-d" / "sap-c" preconditioner spend in T_BC, T_LU and T_SPK) of an
 * n x n band of half-bandwidth K in P partitions (P = 0: one per thread of ctx) with factors
 * in precision prec, on ctx's backend: 2 n K^2 flops at the library's rate model (a CPU
 * thread ~4e9 flop/s while a partition's K x K update fits in its cache, memory-bound
 * beyond; a GPU ~2e12 flop/s, or ~1e10 a partition when few are given; on a GPU whose
 * blocked LU takes the band (K >= 32) a per-step model fitted on an H200: ~0.1 ms a step of
 * 64 columns plus the LU's own flops at ~1e13 flop/s in float) plus the band's bytes
 * written.  Good to a few times: it is meant to warn before work of minutes or
 * hours, which a factorization (not iterative) cannot be stopped during.  0 when n or K is 0 or ctx is NULL. */
SAP_API double sap_band_estimate_seconds(const sap_context *ctx, sap_int n, sap_int K, sap_int P,
                                         sap_precision prec);

/* For a "sap-d" / "sap-c" / "sap" preconditioner (sap_precond_create): sets the band
 * options it uses at its next numeric setup (method AUTO/SAPD/SAPC only matters for
 * "sap"; partitions, half_bandwidth, boost_*; the factor precision is the
 * preconditioner's, sap_precond_set_precision).  SAP_ERR_INVALID for another
 * preconditioner. */
SAP_API sap_status sap_precond_set_band_options(sap_precond *P, const sap_band_options *opt);
/* What its last numeric setup did: method, partitions, half_bandwidth, reason,
 * boosted_pivots, dropped_entries, time_lu/bc/spk/lurdcd (the solve fields are zero). */
SAP_API sap_status sap_precond_get_band_stats(const sap_precond *P, sap_band_stats *stats);

/* ------------------------------------------------------------------------------ */
/* Preconditioner types and Krylov methods: registries, options by name            */
/* ------------------------------------------------------------------------------ */
/* Every preconditioner type (and Krylov method) is listed once in the library's registry
 * (src/precond/registry.c, src/krylov/registry.c); more can be registered at run time
 * through the internal sap__precond_register / sap__krylov_register (precond_impl.h,
 * krylov_impl.h).  The functions below list what is registered, with help text generated
 * from each type's typed option table.  Indices run over 0 .. count - 1 in registration
 * order (built-ins first); they are stable (types are never unregistered). */

/* Number of preconditioner types ("none", "jacobi", "sap-d", "sap-c", "sap", then any
 * registered ones). */
SAP_API int sap_precond_type_count(void);
/* Name of type i (NULL when i is out of range). */
SAP_API const char *sap_precond_type_name(int i);
/* "name: description\n" followed by one line per option, "    name=ACCEPTED  help
 * (default X)\n" (static text; NULL when i is out of range). */
SAP_API const char *sap_precond_type_help(int i);
/* Sets one of the type's options by name (case-insensitive; the options of each type are
 * in its help), e.g. sap_precond_set_option(P, "partitions", "8") for "sap-d".  Takes
 * effect at the next numeric setup (a numeric setup already done must be redone).  Unknown
 * name or bad value: SAP_ERR_INVALID with a message naming the option, the value and the
 * accepted values or range (P unchanged). */
SAP_API sap_status sap_precond_set_option(sap_precond *P, const char *name, const char *value);
/* Several at once: "name=value,name=value" (all or none are applied). */
SAP_API sap_status sap_precond_set_options(sap_precond *P, const char *list);
/* The current value of an option as text (the form set_option accepts). */
SAP_API sap_status sap_precond_get_option(const sap_precond *P, const char *name, char *buf, size_t size);
/* The type, precision and every option value, then what the last numeric setup chose
 * (e.g. SaP's method, P and the reason), as text lines (json = 0) or one JSON object
 * {"type": ..., "precision": ..., "options": {...}, "report": "..."} (json != 0).
 * Truncated to size. */
SAP_API sap_status sap_precond_report(const sap_precond *P, int json, char *buf, size_t size);

/* Number of Krylov methods (the sap_krylov_type built-ins, then registered ones). */
SAP_API int sap_krylov_method_count(void);
/* Name of method i as sap_krylov_parse accepts it (NULL when i is out of range). */
SAP_API const char *sap_krylov_method_name(int i);
/* "name[:p]: description (p default D, 1..MAX; preconditioning left or right)\n" (static
 * text; NULL when i is out of range). */
SAP_API const char *sap_krylov_method_help(int i);

/* ------------------------------------------------------------------------------ */
/* Reorderings                                                                     */
/* ------------------------------------------------------------------------------ */
/* The SaP preprocessing chain: diagonal boosting (DB, a row permutation maximizing the
 * product of |diagonal| plus an optional scaling to I-matrix form), Cuthill-McKee
 * bandwidth reduction on A + A^T, drop-off of small far-from-diagonal entries, and the
 * third-stage CM inside each of the P diagonal blocks.  Permutations follow
 * sap_csr_permute: p[new] = old.  Explicit zeros are not entries for the matchings; for
 * the bandwidth orderings every stored entry counts. */

/* Result of sap_db_matching.  cost is the optimum of the assignment problem on the
 * weights c_ij = log a_i - log |a_ij| (a_ij != 0), a_i = max_j |a_ij| over row i (row
 * maxima, as in the papers' eq. (12)); it equals sum_i log a_i - log_product. */
typedef struct sap_db_info {
    sap_int n;
    sap_int matched;         /* pairs matched: n on success, the structural rank (the size
                                of a maximum matching) when SAP_ERR_STRUCTURALLY_SINGULAR */
    sap_int initial_matched; /* pairs matched by the cheap initial stage (DB-S2) */
    sap_int augmentations;   /* successful shortest augmenting path searches (DB-S3) */
    double cost;             /* sum of c_ij over the matching (>= 0) */
    double log_product;      /* sum of log |a_ij| over the matching */
    double time;             /* seconds for the whole call: T_DB */
    double time_weights;     /* DB-S1: row maxima and weights */
    double time_initial;     /* DB-S2: dual initialisation and greedy matching */
    double time_augment;     /* DB-S3: Dijkstra shortest augmenting paths */
    double time_extract;     /* DB-S4: permutation and scaling factors */
} sap_db_info;

/* Diagonal boosting of the square A (MC64 option 5 style): finds the row permutation
 * rowperm (length n, new -> old) such that B = A(rowperm, :) maximizes prod_i |b_ii|, by a
 * minimum-cost perfect matching on c_ij (dual initialisation and greedy matching, then
 * Dijkstra shortest augmenting paths with a binary heap on reduced costs).  When
 * row_scale and col_scale are non-NULL (both or neither) they receive factors, indexed
 * by the ORIGINAL row and column, that bring diag(row_scale) A diag(col_scale) to
 * I-matrix form once its rows are permuted: |b_ii| = 1 and |b_ij| <= 1 (to rounding);
 * they come from the matching's dual variables.  info may be NULL.  Structurally
 * singular A: SAP_ERR_STRUCTURALLY_SINGULAR, message with the structural rank, which is
 * also info->matched; the other outputs are untouched.  Non-finite values:
 * SAP_ERR_NONFINITE.  Threads: on large matrices weights and scaling run in parallel. */
SAP_API sap_status sap_db_matching(const sap_csr *A, sap_int *rowperm, double *row_scale, double *col_scale,
                                   sap_db_info *info);

/* Maximum transversal (zero-free diagonal) of the square A: a row permutation rowperm
 * (new -> old) with A(rowperm[k], k) != 0 for every k, by a depth-first search with
 * lookahead (MC21 style).  *matched (may be NULL) receives the size of the maximum
 * matching; when it is below n the result is SAP_ERR_STRUCTURALLY_SINGULAR (message with
 * the structural rank) and rowperm is untouched. */
SAP_API sap_status sap_max_transversal(const sap_csr *A, sap_int *rowperm, sap_int *matched);

/* Flags of the Cuthill-McKee orderings.  CM and its reverse always have the same
 * half-bandwidth on a symmetric pattern; AUTO keeps the one with the smaller envelope
 * (profile), which in practice is the reverse. */
enum {
    SAP_CM_AUTO = 0,      /* smaller envelope of CM and RCM (ties: RCM) */
    SAP_CM_FORCE_RCM = 1, /* reverse Cuthill-McKee */
    SAP_CM_FORCE_CM = 2   /* Cuthill-McKee */
};

/* Result of sap_cm_reorder. */
typedef struct sap_cm_info {
    sap_int K_before;    /* half-bandwidth max |i - j| over the stored entries of A */
    sap_int K_after;     /* the same after the symmetric permutation */
    int chosen;          /* the ordering returned: SAP_CM_FORCE_RCM, SAP_CM_FORCE_CM, or
                            SAP_CM_AUTO (0) when the identity was kept */
    sap_int components;  /* connected components of the graph of A + A^T */
    sap_int tries;       /* breadth-first searches run (start nodes tried) */
    sap_int profile_cm;  /* envelope sum_i (i - min col of row i) of both orderings */
    sap_int profile_rcm;
    double time;         /* seconds: T_CM (graph of A + A^T included) */
} sap_cm_info;

/* Bandwidth-reducing symmetric permutation perm (new -> old, length n) of the square A:
 * Cuthill-McKee on the pattern of A + A^T (diagonal ignored).  Each connected component
 * is ordered from the best of several start nodes (minimum degree node, George-Liu
 * pseudo-peripheral search, extra low-degree candidates of the last level, the next
 * lowest-degree nodes; at most 14 searches, the extra ones abandoned as soon as they
 * cannot win) and placed after the previous one.  Neighbours are pre-sorted by degree once, so each search is
 * O(nnz).  flags: SAP_CM_*.  info may be NULL.  B = A(perm, perm) has half-bandwidth
 * info->K_after.  With SAP_CM_AUTO the result is never wider than A's own order: when
 * no search beats it, perm is the identity (info->chosen = SAP_CM_AUTO).  Node indices
 * are 32-bit inside: n >= 2^28 gives SAP_ERR_TOO_LARGE. */
SAP_API sap_status sap_cm_reorder(const sap_csr *A, int flags, sap_int *perm, sap_cm_info *info);

/* Drop-off (eq. (13) of the SPIKE::GPU paper): the smallest half-bandwidth K such that
 * the entries with |i - j| <= K keep at least the fraction delta of the squared
 * Frobenius norm, sum_{|i-j|<=K} a_ij^2 >= delta * sum a_ij^2.  O(nnz + n) through a
 * histogram over |i - j|.  delta in [0, 1]: delta = 1 keeps every non-zero (K = the
 * largest |i - j| of a non-zero), delta = 0 gives K = 0.  kept_fraction (may be NULL)
 * receives the fraction actually kept (1 for a zero matrix). */
SAP_API sap_status sap_drop_off(const sap_csr *A, double delta, sap_int *K, double *kept_fraction);

/* B = the entries of A with |i - j| <= K (K >= 0), in a new canonical CSR. */
SAP_API sap_status sap_csr_band_drop(const sap_csr *A, sap_int K, sap_csr **B);

/* Partition of n rows into P blocks as SaP splits A: offsets[0..P] with the first
 * n mod P blocks of size floor(n/P) + 1 and the rest floor(n/P).  1 <= P <= n (n = 0
 * allows P = 1); SAP_ERR_INVALID otherwise (no context: no message). */
SAP_API sap_status sap_partition_offsets(sap_int n, sap_int P, sap_int *offsets);

/* Third-stage reordering: splits the square A into the P diagonal blocks of
 * sap_partition_offsets and reorders each block independently (in parallel) by CM on
 * the pattern of its own A_i + A_i^T (flags: SAP_CM_*).  perm (new -> old, length n) is
 * block diagonal: it maps each block onto itself.  Ki_before[b] (may be NULL) and Ki[b]
 * receive each block's half-bandwidth before and after; a block whose CM ordering does
 * not shrink it keeps the identity, so Ki[b] <= Ki_before[b]. */
SAP_API sap_status sap_third_stage(const sap_csr *A, sap_int P, int flags, sap_int *perm, sap_int *Ki_before,
                                   sap_int *Ki);

/* What sap_reorder does first: diagonal boosting by weighted matching (default), by the
 * maximum transversal only (no scaling), or not at all. */
typedef enum sap_db_mode {
    SAP_DB_NONE = 0,
    SAP_DB_PRODUCT = 1,
    SAP_DB_TRANSVERSAL = 2
} sap_db_mode;

typedef struct sap_reorder_options {
    sap_db_mode db;       /* default SAP_DB_PRODUCT */
    int scale;            /* apply the DB scaling (I-matrix form), default 1; only with
                             SAP_DB_PRODUCT */
    int cm;               /* Cuthill-McKee stage on A + A^T, default 1 */
    int cm_flags;         /* SAP_CM_*, default SAP_CM_AUTO (also used by the third stage) */
    double drop_delta;    /* drop-off keeping this fraction of ||A||_F^2; >= 1 (default):
                             no drop-off */
    sap_int partitions;   /* P of the third stage; <= 1 (default): no third stage */
    int stats;            /* fill the per-stage statistics (sap_csr_stats), default 1 */
} sap_reorder_options;

SAP_API void sap_reorder_options_init(sap_reorder_options *opt);

/* Stages of sap_reorder, indexes of sap_reorder_result.stage[]. */
enum {
    SAP_STAGE_ORIGINAL = 0, /* the input */
    SAP_STAGE_DB = 1,       /* after the row permutation and scaling (T_DB) */
    SAP_STAGE_CM = 2,       /* after CM on A + A^T (T_CM) */
    SAP_STAGE_DROP = 3,     /* the banded matrix after drop-off (T_Drop) */
    SAP_STAGE_THIRD = 4,    /* the banded matrix after the third stage (T_3rd) */
    SAP_REORDER_STAGES = 5
};

/* Statistics of the matrix after one stage. */
typedef struct sap_reorder_stage {
    int done;              /* the stage ran (the original always counts as done) */
    sap_int K;             /* half-bandwidth (third stage: max_i K_i) */
    sap_int nnz;           /* stored entries */
    double mean_row_width; /* sap_matrix_stats.mean_row_width */
    double band_fill;      /* nnz / entries of the band of half-width K; third stage: the
                              entries inside the diagonal blocks over the entries of the
                              blocks' own bands of half-width K_i */
    double diag_dominance; /* d = min_i |a_ii| / sum_{j != i} |a_ij| */
    sap_int zero_diagonal; /* diagonal entries missing or zero */
    double time;           /* seconds spent in this stage */
} sap_reorder_stage;

/* The reordered system.  With p = row_perm, q = col_perm, r = row_scale, c = col_scale
 * (r = c = 1 without scaling):  A(i, j) = r[p[i]] * A_orig(p[i], q[j]) * c[q[j]].
 * A_orig x = b becomes A y = bhat with bhat_i = r[p[i]] b[p[i]] and x[q[j]] = c[q[j]] y_j
 * (sap_reorder_apply_rhs, sap_reorder_undo_solution). */
typedef struct sap_reorder_result {
    sap_context *ctx;
    sap_int n;
    sap_int *row_perm;       /* new -> old rows */
    sap_int *col_perm;       /* new -> old columns */
    double *row_scale;       /* by original row; NULL without scaling */
    double *col_scale;       /* by original column; NULL without scaling */
    sap_csr *A;              /* the reordered (and scaled) matrix, every entry kept */
    sap_csr *A_band;         /* the matrix after drop-off in the final order (entries that
                                were within K_drop after CM); NULL without drop-off */
    sap_int K_drop;          /* drop-off half-bandwidth (the CM-stage K without drop-off) */
    double kept_fraction;    /* fraction of ||A||_F^2 kept by the drop-off (1 without) */
    sap_int P;               /* third-stage blocks (1 without third stage) */
    sap_int *offsets;        /* P + 1 block offsets (sap_partition_offsets) */
    sap_int *Ki_before;      /* P: block half-bandwidths before the third stage */
    sap_int *Ki;             /* P: block half-bandwidths after it */
    sap_db_info db;          /* DB details (zero without DB) */
    sap_cm_info cm;          /* CM details (zero without CM) */
    sap_reorder_stage stage[SAP_REORDER_STAGES];
    double time_total;       /* seconds for the whole call, statistics excluded */
} sap_reorder_result;

/* Runs DB(+scaling) -> CM on A + A^T -> drop-off -> third stage on the square A as opt
 * asks (NULL: defaults) and returns everything in *res (NULL on error).  A structurally
 * singular A with DB on gives SAP_ERR_STRUCTURALLY_SINGULAR (message with the rank). */
SAP_API sap_status sap_reorder(const sap_csr *A, const sap_reorder_options *opt, sap_reorder_result **res);
SAP_API void sap_reorder_result_destroy(sap_reorder_result *res);

/* bhat = the right-hand side of the reordered system: bhat[i] = r[p[i]] * b[p[i]]. */
SAP_API sap_status sap_reorder_apply_rhs(const sap_reorder_result *res, const double *b, double *bhat);
/* x = the solution of the original system from y of the reordered one:
 * x[q[j]] = c[q[j]] * y[j]. */
SAP_API sap_status sap_reorder_undo_solution(const sap_reorder_result *res, const double *y, double *x);
/* y = x mapped into the reordered system (e.g. an initial guess): y[j] = x[q[j]] / c[q[j]]. */
SAP_API sap_status sap_reorder_apply_solution(const sap_reorder_result *res, const double *x, double *y);
/* The original matrix back from a matrix B in the reordered form (res->A, or A_band):
 * A(p[i], q[j]) = B(i, j) / c[q[j]] / r[p[i]].  Exact without scaling; with scaling to
 * a few ulps. */
SAP_API sap_status sap_reorder_undo_matrix(const sap_reorder_result *res, const sap_csr *B, sap_csr **A);


/* ------------------------------------------------------------------------------ */
/* Sparse systems: the SaP pipeline                                                */
/* ------------------------------------------------------------------------------ */
/* sap_solver solves a general sparse A x = b by the SaP pipeline of the papers:
 *   diagonal boosting (DB: max-product matching + scaling; skipped for SPD matrices)
 *   -> Cuthill-McKee on A + A^T -> drop-off to the band that keeps most of ||A||_F^2
 *   -> partition into P blocks with a third-stage CM inside each block (K_i per block)
 *   -> dense banded SaP-D or SaP-C preconditioner (float factors by default)
 *   -> Richardson steps while each contracts the residual 4x, then BiCGStab(2) (CG for SPD
 *      matrices with SaP-D) on the reordered system,
 * and maps the solution back.  Every stage is chosen automatically from the matrix
 * statistics and the backend (stats.reason says what and why), can be forced through the
 * options, and with fallback = 1, when a choice fails the next method of the chain is
 * tried; stats.tried lists every attempt with its outcome.  The residual of the original
 * system is checked after every solve (stats.relative_residual).
 *
 * Reuse: one setup serves any number of right-hand sides (sap_solver_solve_many takes
 * several at once); sap_solver_refactor takes new values on the same pattern and redoes
 * only the numeric work (band, factorization), keeping the permutations, the DB scaling
 * factors of the setup, the partitioning and the band shapes.
 *
 * The automatic choices, the fallback chain and their thresholds are policy, not
 * contract: docs/solver-policy.md. */
typedef enum sap_solver_method {
    SAP_METHOD_AUTO = 0,   /* SaP with the automatic choices and the fallback chain */
    SAP_METHOD_SAPD = 1,   /* SaP-D preconditioner (decoupled) */
    SAP_METHOD_SAPC = 2,   /* SaP-C preconditioner (coupled, truncated SPIKE) */
    SAP_METHOD_BAND_LU = 3, /* P = 1: one banded LU of the reordered band (no pivoting,
                               boosting, double) inside the Krylov method */
    SAP_METHOD_BAND_PIVOT = 4, /* banded LU with partial pivoting (LAPACK dgbtrf on the
                                  host) of the reordered band with iterative refinement: the
                                  most robust fallback, for bands that fit the memory */
    SAP_METHOD_JACOBI = 5, /* the Krylov method with a Jacobi preconditioner (last resort) */
    SAP_METHOD_DIRECT_HOST = 6, /* sparse direct on the host: SuiteSparse CHOLMOD (SPD-looking)
                                   or UMFPACK, refined in double; SAP_ERR_NOT_COMPILED when the
                                   library was built without SuiteSparse */
    SAP_METHOD_DIRECT_CUDSS = 7, /* sparse direct on the GPU: NVIDIA cuDSS loaded at run time
                                   ($SAP_CUDSS_LIB, else libcudss.so.1 / .so.0), refined in
                                   double; needs a cuda context (SAP_ERR_UNSUPPORTED otherwise
                                   or when cuDSS is not loadable, with the reason) */
    SAP_METHOD_BCYCLIC = 8, /* block-tridiagonal: block cyclic reduction (sap_btd_*) of the
                               original matrix, block width "block" or detected; direct */
    SAP_METHOD_SPIKE = 9,   /* block-tridiagonal: Spike ("partitions" partitions); direct */
    SAP_METHOD_REDUCED_SPIKE = 10, /* block-tridiagonal: truncated Spike, with refinement */
    SAP_METHOD_ILU = 11,    /* incomplete factorization in the Krylov method: IC(0) + CG for an
                               SPD-looking matrix, else ILU(0) + BiCGStab(2); ILUT when
                               ILU(0) / IC(0) meets zero or tiny pivots */
    SAP_METHOD_BJACOBI = 12 /* block-Jacobi on the natural blocks (supervariables of identical
                               row pattern, agglomerated up to 32 rows) in the Krylov method;
                               SAP_ERR_UNSUPPORTED when the blocks average one row */
} sap_solver_method;

/* ---- strategy methods: the registry ---- */
/* Every strategy method of sap_solver is listed once in the library's registry
 * (src/solver/methods.c, one file per method); more can be registered at run time through
 * the internal sap__solver_method_register (src/solver/solver_internal.h).  Index i of
 * the enumeration IS the sap_solver_method value: 0 is "auto" (not a method: the plan
 * picks the first one and the fallback chain), 1..7 the built-ins in enum order, then the
 * registered methods (values 8, 9, ... in registration order).  Indices are stable
 * (methods are never unregistered). */

/* Number of entries: "auto", the built-in methods, then any registered ones. */
SAP_API int sap_solver_method_count(void);
/* Name of method i, as sap_solver_method_parse accepts it: "auto", "sap-d", "sap-c",
 * "band-lu", "band-pivot", "jacobi", "direct-host", "direct-cudss", then registered names;
 * "unknown" out of range.  The
 * index is the enum value, so this one function serves both. */
SAP_API const char *sap_solver_method_name(sap_solver_method method);
/* "name: description\n" (static text; NULL when i is out of range). */
SAP_API const char *sap_solver_method_help(int i);
/* Name (or alias: "sapd", "sapc", "bandlu", "bandpivot", "directhost", "cudss"),
 * case-insensitive, to its value;
 * SAP_ERR_INVALID for an unknown name or a NULL argument. */
SAP_API sap_status sap_solver_method_parse(const char *name, sap_solver_method *method);

/* Progress of sap_solver (sap_solver_options.monitor): one event at a time. */
typedef struct sap_solver_progress {
    const char *step;         /* the method of the attempt running, e.g. "sap-c" */
    int setup;                /* 1: the attempt's setup (band, factorization: the monitor
                                 is not called inside it; sap_solver_options.interrupt
                                 stops it on the cpu) is about to start; 0: a Krylov step */
    double predicted_seconds; /* setup events: the setup's predicted time (0: negligible) */
    double iteration;         /* Krylov events: as sap_krylov_monitor (0 at a setup) */
    double relative_residual; /* Krylov events: as sap_krylov_monitor (NaN at a setup) */
} sap_solver_progress;
/* Return non-zero to stop: the setup or solve returns SAP_WARN_INTERRUPTED with the best x
 * so far (the initial guess when no attempt was built) and tries no other method. */
typedef int (*sap_solver_monitor)(void *state, const sap_solver_progress *progress);

typedef struct sap_solver_options {
    sap_solver_method method; /* default SAP_METHOD_AUTO */
    int fallback;             /* 1 (default): on failure try the next method; 0: report it */
    int db;                   /* -1 (default): automatic (off for SPD-looking matrices, else
                                 SAP_DB_PRODUCT); or a sap_db_mode */
    int scale;                /* -1 (default): with DB product; 0/1 forces */
    int cm;                   /* -1 (default) / 1: Cuthill-McKee on A + A^T; 0: off */
    double drop_delta;        /* drop-off fraction of ||A||_F^2 kept, in [0, 1]; < 0
                                 (default): automatic; 1: no drop-off */
    sap_int partitions;       /* P; 0 (default): automatic */
    sap_int block;            /* block-tridiagonal methods: block width k; 0 (default):
                                 detected from the pattern */
    int third_stage;          /* -1 (default): automatic; 0/1 */
    int factor_precision;     /* -1 (default): automatic; SAP_FLOAT / SAP_DOUBLE */
    double boost_threshold;   /* as sap_band_options (< 0: automatic) */
    double boost_value;       /* as sap_band_options (<= 0: automatic) */
    int krylov_auto;          /* 1 (default): CG for SPD with SaP-D, else BiCGStab(2); with a
                                 SaP band preconditioner (sap-d, sap-c, band-lu) Richardson
                                 while each step contracts the residual 4x, then BiCGStab(2) */
    sap_krylov_options krylov; /* tol (default 1e-10), maxit, ...; used as given when
                                  krylov_auto = 0.  krylov.monitor, when set, is called by
                                  every attempt's Krylov solve; non-zero stops as monitor.
                                  krylov.sync_timing defaults to 0 here (option
                                  "sync_timing"): the solver reports T_Kry whole */
    int64_t memory_limit;     /* bytes the band and factors may take on the backend; 0
                                 (default): 90% of the free device memory (cuda) or of the
                                 physical memory (cpu) */
    int host_small;           /* 1 (default): on a cuda context, systems too small for the
                                 GPU to pay off (N < 20000 and band < 2M entries) run on
                                 the host; 0: always on the context's backend */
    int host_direct;          /* 1 (default): AUTO on the host (a cpu context, or a small
                                 system with host_small) solves directly by the banded LU
                                 with pivoting of the CM band (BAND_PIVOT) when that costs
                                 at most 4e9 flops (4 N K^2); 0: SaP first */
    sap_solver_monitor monitor; /* NULL (default): none; see sap_solver_progress */
    void *monitor_state;
    double long_step;         /* seconds, default 5: an attempt's setup predicted to take
                                 longer (its band factorization: what, why, the estimate)
                                 is announced before it starts by a SAP_PRINT_WARNINGS
                                 message beginning "sap_solver: long step:" (also for an
                                 attempt that has a fallback); 0: never */
    const volatile sig_atomic_t *interrupt; /* NULL (default); else a flag the caller may set
                                 at any time (a SIGINT handler: async-signal-safe): non-zero
                                 stops the setup inside the band factorization (cpu: between
                                 partitions and every few pivot steps) and the solve at the
                                 next Krylov step, as a monitor's stop does
                                 (SAP_WARN_INTERRUPTED, the best x so far, no fallback) */
    double time_budget;       /* seconds an attempt that has a fallback may take (setup +
                                 solve; a setup predicted longer is skipped) before the
                                 chain moves on; 0 (default): automatic, 2x the predicted
                                 time of the sparse direct method after it in the chain
                                 (from a symbolic analysis), at least 2 s, none when
                                 nothing is predicted and for a forced first method; < 0:
                                 none.  A budget makes the method chosen depend on timing
                                 (docs/solver-policy.md). */
} sap_solver_options;
/* In the options: krylov.stagnation_window is honoured too ("stagnation" by name). */

SAP_API void sap_solver_options_init(sap_solver_options *opt);
/* Sets one option by name: "method", "fallback", "db" (none|product|transversal|auto),
 * "scale", "cm", "drop" / "drop_delta", "partitions", "third_stage", "precision"
 * (float|double|auto), "boost_threshold", "boost_value", "krylov" (as sap_krylov_parse,
 * or auto), "tol", "maxit", "memory_limit" (bytes, suffixes k/M/G), "host_small",
 * "host_direct", "long_step" (seconds), "time_budget" (seconds, auto, off).
 * Unknown name or bad value: SAP_ERR_INVALID (opt unchanged). */
SAP_API sap_status sap_solver_options_set(sap_solver_options *opt, const char *name, const char *value);
/* The same, writing why a name or value was refused into msg (the option, the value and
 * the accepted names, values or range; msg may be NULL). */
SAP_API sap_status sap_solver_options_set_msg(sap_solver_options *opt, const char *name, const char *value, char *msg,
                                              size_t msglen);
/* Text listing the option names, values and defaults (static). */
SAP_API const char *sap_solver_options_help(void);

#define SAP_SOLVER_MAX_TRIES 8

typedef struct sap_solver_try {
    sap_solver_method method;
    sap_int partitions;
    sap_int half_bandwidth;
    sap_status status;        /* of that attempt */
    double iterations;
    double time;              /* seconds */
    double predicted;         /* seconds predicted before it started: its setup (direct
                                 methods: analysis + factorization + one solve); 0: none */
    double budget;            /* seconds it was given (time_budget); 0: none */
    char note[96];            /* e.g. "not converged in 1000 iterations", "band 3.2 GB > limit" */
} sap_solver_try;

typedef struct sap_solver_stats {
    sap_int n, nnz;
    sap_solver_method method;  /* the method that produced the solution (never AUTO) */
    char reason[384];          /* why this method, DB, CM, drop-off, P and precision */
    int spd;                   /* the matrix looked SPD (numerically symmetric, positive
                                  diagonal) */
    int db_used, scaled, cm_used, third_stage_used;
    sap_int K_original, K_cm, K_drop, K_max; /* half-bandwidths: input, after CM, after
                                                drop-off, largest K_i used */
    double kept_fraction;      /* of ||A||_F^2 kept by the drop-off */
    sap_int partitions;        /* P */
    sap_precision factor_precision;
    sap_krylov_type krylov_type;
    int on_host;               /* the solver ran on the host (cpu kernels) */
    sap_int boosted_pivots, dropped_entries;
    int64_t memory_estimate;   /* bytes of band + factors + Krylov vectors estimated */
    /* times (s) with the papers' names */
    double time_create;        /* T_create: sap_solver_create's checks (and copy) of A */
    double time_stats;         /* T_stats: setup's statistics pass, skip rules, entry map
                                  and plan (what no other T_ entry of setup counts) */
    double time_probe;         /* part of T_stats: the automatic plan's probe (its Krylov
                                  matrix, preconditioner and steps) */
    double time_structure;     /* part of T_stats: the plan's structure passes (triangular
                                  levels, natural blocks) */
    double time_analysis;      /* host symbolic analyses run to predict a sparse direct
                                  method (the attempt reuses them): part of T_stats when
                                  the plan asked, of the solve when a learned cut did */
    double time_db, time_cm, time_drop, time_third; /* T_DB, T_CM, T_Drop, third stage */
    double time_transfer;      /* T_Dtransf: host <-> device copies of matrices and vectors */
    double time_asmbl;         /* T_Asmbl / T_BC: band and coupling blocks assembled */
    double time_lu, time_spk, time_lurdcd; /* T_LU, T_SPK, T_LUrdcd */
    double time_kry;           /* T_Kry of the last solve (all its right-hand sides) */
    double time_refine;        /* T_refine: the rest of the last solve (right-hand side and
                                  solution mappings, the refinement's true residuals) */
    double time_setup;         /* the whole setup or last refactor */
    double time_solve;         /* the whole last solve call */
    double iterations;         /* last solve (sum over its right-hand sides) */
    double relative_residual;  /* true ||b - Ax|| / ||b|| (largest over the right-hand sides) */
    sap_int nrhs;              /* right-hand sides of the last solve */
    int ntries;
    sap_solver_try tried[SAP_SOLVER_MAX_TRIES]; /* every attempt since the setup (or the
                                 last refactor), one entry per method in the order tried;
                                 status, iterations, time and note are its latest outcome
                                 (setup or solve) */
    sap_status status;
} sap_solver_stats;

typedef struct sap_solver sap_solver;

/* From a square CSR (copied).  opt may be NULL (defaults).  Non-square:
 * SAP_ERR_NOT_SQUARE; NaN/Inf: SAP_ERR_NONFINITE; bad options: SAP_ERR_INVALID. */
SAP_API sap_status sap_solver_create(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, sap_solver **S);
/* The same without the copy: the solver keeps A, which must stay valid and unchanged until
 * sap_solver_destroy (it is never written: sap_solver_refactor copies it first).  Saves a
 * copy of the CSR in memory and its time (what `sap solve` uses). */
SAP_API sap_status sap_solver_create_borrowed(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt,
                                              sap_solver **S);
SAP_API void sap_solver_destroy(sap_solver *S);
/* Symbolic (reorderings, partitioning, band shapes, memory estimate) and numeric
 * (values, band, factorization) setup.  Done by the first solve when not called.
 * SAP_WARN_BOOSTED_PIVOTS when pivots were boosted; SAP_ERR_STRUCTURALLY_SINGULAR with
 * the structural rank in the message; SAP_WARN_INTERRUPTED when the monitor stopped it
 * before an attempt was built (nothing is kept: the next solve sets up again). */
SAP_API sap_status sap_solver_setup(sap_solver *S);
/* The same with the first right-hand side known (host, length n; NULL: as sap_solver_setup):
 * the automatic plan's probe (a few Jacobi-preconditioned steps that predict the iterative
 * methods' cost) solves this b instead of a synthetic one, and its iterate starts the first
 * Krylov solve of this same b, so its steps are not lost.  The setup inside the first solve
 * does this with that solve's first column. */
SAP_API sap_status sap_solver_setup_rhs(sap_solver *S, const double *b);
/* New values in the CSR order of the matrix given at create (same pattern): redoes the
 * numeric setup only, in O(nnz) plus the factorization: the values go through the
 * entry map computed at setup, scaled with the setup's DB scaling factors (the DB
 * permutation and scaling depend on values, but are kept: the Krylov iteration absorbs
 * the change), and the current method rebuilds its band, factors and Krylov matrix
 * values.  When that method now fails (too many boosted pivots) the chain goes on.  NaN
 * values: SAP_ERR_NONFINITE (solver unchanged). */
SAP_API sap_status sap_solver_refactor(sap_solver *S, const double *values);
/* Solves A x = b (host vectors of length n; x holds the initial guess, 0 is fine).
 * Returns SAP_OK when converged, a warning (SAP_WARN_NOT_CONVERGED, ...) with the best x
 * when every method tried failed to reach the tolerance, SAP_WARN_INTERRUPTED with the best
 * x so far when a monitor stopped it (no fallback follows; stats.relative_residual is x's
 * true residual), or an error. */
SAP_API sap_status sap_solver_solve(sap_solver *S, const double *b, double *x);
/* nrhs right-hand sides at once: column k of B is B + k * ldb (ldb >= n), likewise X.
 * The status is the worst over the columns.  Batched: BAND_PIVOT (one dgbtrs for all
 * columns per step), the direct and block-tridiagonal methods (one solve per step), and
 * SAPD, SAPC and BAND_LU (sap_krylov_solve_many: their Krylov method in lockstep, one pass
 * over the band factors per step for up to 32 columns); a column the batch leaves above the
 * tolerance goes on alone through the fallback chain.  JACOBI and the other Krylov
 * preconditioners run the columns one after another. */
SAP_API sap_status sap_solver_solve_many(sap_solver *S, sap_int nrhs, const double *B, sap_int ldb, double *X,
                                         sap_int ldx);
SAP_API sap_status sap_solver_get_stats(const sap_solver *S, sap_solver_stats *stats);

/* ---- the caller's device arrays (a cuda context: CuPy, PyTorch, the application's own
 * CUDA memory).  The pointers are device memory of the context's device (checked with
 * cudaPointerGetAttributes: a host pointer, memory of another device or a cpu context
 * give SAP_ERR_INVALID with a message).  The caller's work on them must be complete (its
 * streams synchronized); each call returns after sap's stream finished with them.
 *
 * Data flow: sap_solver_create_device computes the statistics of the plan on the device
 * (bandwidths, row lengths, dominance, zero diagonal, symmetry, the checks of the pattern
 * and of NaN/Inf, with the host path's errors).  Krylov + Jacobi (method jacobi, or the
 * automatic method when every row is diagonally dominant with a nonzero diagonal; no DB or
 * CM given; a Krylov method without A^T) then needs no host copy of A: the solver keeps a
 * device copy of the CSR (device->device) for the Jacobi diagonal and the refactors, and
 * download_bytes stays 0.  Otherwise create downloads the CSR ONCE into sap's own host
 * memory (the host stages: DB and CM reorderings, the preconditioner's band; counted as
 * device->host bytes, T_download; download_reason says why), as does a later call that
 * needs it (a host-vector solve or refactor, a solve through the host, or the failure of
 * the automatic Jacobi attempt, after which the host plan is set up).  The Krylov matrix is
 * built on the device from the caller's arrays (indices converted to 32 bits and values
 * copied device->device, CSR format): no byte of A goes host->device.  Only the preconditioner's own data (band,
 * factors, diagonal) and the reorderings' permutations and scaling factors go up.  The
 * arrays are read during the call only.  sap_solver_solve_device: b and x stay on the
 * device; the method's Krylov iteration runs in the original order with the reorderings
 * applied inside the preconditioner (device gathers), and the true residual and the
 * iterative refinement are computed on the device.  Methods without a device-vector
 * solve (band-pivot, the sparse direct methods, a system the solver moved to the host,
 * Krylov methods that build A^T or a float copy on the host: bicg, qmr, ir) solve through
 * the host instead: b and x are copied, the solver builds its own copy of A on the device
 * where the method needs one, and sap_solver_device_stats says so (host_solves,
 * host_reason, a_h2d_bytes).  The automatic host_small rule is off for these solvers (the
 * caller's data is on the device).  Not for a solver made by sap_solver_create. */
SAP_API sap_status sap_solver_create_device(sap_context *ctx, sap_int n, sap_int nnz, const sap_int *d_rowptr,
                                            const sap_int *d_colind, const double *d_val,
                                            const sap_solver_options *opt, sap_solver **S);
/* x = A^{-1} b with device vectors of length n; d_x holds the initial guess (0 is fine).
 * Statuses as sap_solver_solve; the statistics (sap_solver_get_stats) as for a host solve. */
SAP_API sap_status sap_solver_solve_device(sap_solver *S, const double *d_b, double *d_x);
/* nrhs columns (column k at d_B + k * ldb, ldb >= n; likewise d_X).  The first column is
 * solved alone (the setup, the chain's choices and fallbacks); where the method then solved
 * has a batch form with device vectors (SAPD, SAPC, BAND_LU: their Krylov method in
 * lockstep, one SpMM and one block application of the preconditioner per step for up to 32
 * columns), the other columns go together, and a column the batch leaves above the
 * tolerance goes on alone from its iterate; otherwise one column after another.  The
 * status is the worst over the columns. */
SAP_API sap_status sap_solver_solve_many_device(sap_solver *S, sap_int nrhs, const double *d_B, sap_int ldb,
                                                double *d_X, sap_int ldx);
/* New values (device memory, the CSR order of create): checked for NaN/Inf and copied
 * device->device into the Krylov matrix; downloaded for the host stages (the
 * preconditioner's numeric setup) only when the solver has a host copy of A. */
SAP_API sap_status sap_solver_refactor_device(sap_solver *S, const double *d_val);

/* Where the data of a device-array solver went (context transfer counters split by
 * phase).  All zero for a solver made by sap_solver_create. */
typedef struct sap_solver_device_stats {
    int device_arrays;          /* 1: made by sap_solver_create_device */
    int64_t device_solves;      /* right-hand sides solved on the device */
    int64_t host_solves;        /* right-hand sides solved through the host (see host_reason) */
    char host_reason[160];      /* why the last one went through the host ("" when none did) */
    double time_download;       /* T_download: seconds of the copies of A to sap's host memory */
    int64_t download_bytes;     /* device->host bytes of A (create and every refactor) */
    double time_matrix;         /* seconds building the Krylov matrix from the caller's arrays */
    int64_t a_h2d_bytes;        /* host->device bytes of A: 0 unless a host solve needed the
                                   solver's own device copy of A (then its size) */
    int64_t setup_h2d_bytes;    /* host->device bytes of create, setups and refactors: the
                                   preconditioner's data (the band methods: the band of the
                                   reordered matrix their factors are filled from) and the
                                   permutations (never A in the caller's order) */
    int64_t perm_h2d_bytes;     /* of which the reorderings' permutations and scaling factors */
    int64_t solve_h2d_bytes;    /* host->device bytes during device solves (0: nothing went up) */
    int64_t solve_d2h_bytes;    /* device->host bytes during device solves (reduction scalars) */
    int64_t host_solve_bytes;   /* host<->device bytes of the host solves (b, x, what they built) */
    char download_reason[128];  /* why A was downloaded ("" while it was not: no host copy) */
    int64_t stats_d2h_bytes;    /* device->host bytes of the device statistics and checks of A
                                   (a few scalars per pass, never A) */
} sap_solver_device_stats;
SAP_API sap_status sap_solver_get_device_stats(const sap_solver *S, sap_solver_device_stats *stats);

/* ------------------------------------------------------------------------------ */
/* Block-tridiagonal direct solvers (src/btd/): T has nb block rows of dense k x k blocks,
 *   row i:  A_i x_{i-1} + B_i x_i + C_i x_{i+1} = b_i   (A_0 and C_{nb-1} absent),
 * factored once and solved for many right-hand sides.  Algorithms (after Lamas Davina and
 * Roman 2018): block cyclic reduction (BCYCLIC) and Spike on partitions of block rows,
 * exact or with the truncated (reduced) spike system, direct or as the preconditioner of
 * an iterative refinement (inexact).  Diagonal blocks are factored with partial pivoting
 * inside each block (no pivoting across blocks: the algorithms need the diagonal blocks
 * met during the reduction to be nonsingular, which diagonal dominance guarantees).
 * Block operations run on the context's backend (cpu: LAPACK/BLAS + OpenMP over batches;
 * cuda: cuBLAS/cuSOLVER batched and non-batched).  Over MPI processes: sap_btd_create_dist
 * below (BCYCLIC, Spike and reduced Spike).  Blocks are given in host memory. */

typedef enum sap_btd_algo {
    SAP_BTD_AUTO = 0,          /* BCYCLIC */
    SAP_BTD_BCYCLIC = 1,       /* block cyclic reduction */
    SAP_BTD_SPIKE = 2,         /* Spike, exact reduced system (itself solved by BCYCLIC) */
    SAP_BTD_REDUCED_SPIKE = 3  /* truncated Spike: one 2k x 2k system per interface;
                                  exact only in the limit of decaying spikes (diagonally
                                  dominant T); inexact = 1 refines to the tolerance */
} sap_btd_algo;

/* How BCYCLIC applies the inverse of the eliminated diagonal blocks. */
typedef enum sap_btd_variant {
    SAP_BTD_VARIANT_AUTO = 0,  /* the fastest of the four for one factorization followed by
                                  opt.solves single right-hand-side solves, measured once per
                                  block size and solve count on the context's device (a
                                  short calibration, cached in the context) */
    SAP_BTD_GETRS_BATCHED = 1, /* getrf + getrs, one batched call per level */
    SAP_BTD_GETRS = 2,         /* getrf + getrs, one call per block (cuda: the blocks of a
                                  level run concurrently on several streams) */
    SAP_BTD_GETRI_BATCHED = 3, /* getrf + getri (explicit inverse) + gemm, batched */
    SAP_BTD_GETRI = 4          /* the same, one call per block */
} sap_btd_variant;

/* "auto", "bcyclic", "spike", "reduced-spike". */
SAP_API const char *sap_btd_algo_name(sap_btd_algo algo);
SAP_API sap_status sap_btd_algo_parse(const char *name, sap_btd_algo *algo);
/* "auto", "getrs-batched", "getrs", "getri-batched", "getri". */
SAP_API const char *sap_btd_variant_name(sap_btd_variant variant);
SAP_API sap_status sap_btd_variant_parse(const char *name, sap_btd_variant *variant);

typedef struct sap_btd_options {
    sap_btd_algo algo;         /* default AUTO */
    sap_btd_variant variant;   /* default AUTO */
    sap_int partitions;        /* Spike: block-row partitions (each >= 2 block rows); 0
                                  (default): 4, limited by nb / 2 */
    int inexact;               /* reduced Spike: 1 = iterate x += M^{-1}(b - T x) with the
                                  truncated Spike M until ||b - T x|| <= tol ||b|| (default 0) */
    double tol;                /* inexact: default 1e-12 */
    int maxit;                 /* inexact: default 50 */
    int solves;                /* variant AUTO: the variant minimising the time of one
                                  factorization + this many single right-hand-side solves
                                  (default 16, as SLEPc's shift-and-invert Krylov-Schur) */
} sap_btd_options;

SAP_API void sap_btd_options_init(sap_btd_options *opt);

typedef struct sap_btd_stats {
    sap_btd_algo algo;         /* used (never AUTO) */
    sap_btd_variant variant;   /* used (never AUTO) */
    sap_int k, nb, partitions;
    double time_factor;        /* last factorization (s), calibration excluded */
    double time_calibrate;     /* the variant calibration done by this object (s) */
    double time_solve;         /* last solve (s) */
    double time_comm;          /* communication (s): 0 in one process */
    sap_int solves;            /* right-hand sides solved since the last factorization */
    sap_int singular_block;    /* -1, or the block row whose diagonal block (as met
                                  during the reduction) was exactly singular */
    int iterations;            /* inexact: refinement steps of the last solve */
    double relative_residual;  /* inexact: ||b - T x|| / ||b|| of the last solve (else 0) */
    const char *transport;     /* the exchanges between processes: "none" (one process),
                                  "host" (MPI, device buffers staged through host memory),
                                  or the device-to-device transport, e.g. "nccl 2.28.3"
                                  (distributed BCYCLIC; $SAP_BTD_TRANSPORT: auto|host|nccl) */
} sap_btd_stats;

typedef struct sap_btd sap_btd;

/* From host block arrays, each nb blocks of k x k column-major (block i at + i k^2):
 * lower A_i (block 0 ignored), diag B_i, upper C_i (block nb - 1 ignored); the values are
 * copied.  opt may be NULL.  k >= 1, nb >= 1, k nb within 32-bit LAPACK sizes; NaN/Inf:
 * SAP_ERR_NONFINITE. */
SAP_API sap_status sap_btd_create(sap_context *ctx, sap_int k, sap_int nb, const double *lower, const double *diag,
                                  const double *upper, const sap_btd_options *opt, sap_btd **T);
/* The smallest block width k dividing n such that every entry of A lies in the
 * block-tridiagonal pattern (|i / k - j / k| <= 1); SAP_ERR_NOT_SQUARE for a non-square A. */
SAP_API sap_status sap_btd_detect_block(const sap_csr *A, sap_int *k);
/* From a square CSR: k > 0 is checked (n % k == 0 and every entry inside the pattern, else
 * SAP_ERR_INVALID naming the first entry outside); k = 0 detects it.  Blocks are dense
 * (entries absent from A are zeros). */
SAP_API sap_status sap_btd_create_csr(sap_context *ctx, const sap_csr *A, sap_int k, const sap_btd_options *opt,
                                      sap_btd **T);
SAP_API void sap_btd_destroy(sap_btd *T);
SAP_API sap_int sap_btd_block_size(const sap_btd *T);
SAP_API sap_int sap_btd_block_rows(const sap_btd *T);
/* Factors T (done by the first solve when not called).  An exactly singular diagonal
 * block met during the reduction: SAP_ERR_SINGULAR naming the block row (also in
 * stats.singular_block); the object stays usable for a refactor. */
SAP_API sap_status sap_btd_factor(sap_btd *T);
/* New values (same k, nb; arrays as for sap_btd_create), then factor. */
SAP_API sap_status sap_btd_refactor(sap_btd *T, const double *lower, const double *diag, const double *upper);
/* New values from a CSR of the same size and block width, then factor. */
SAP_API sap_status sap_btd_refactor_csr(sap_btd *T, const sap_csr *A);
/* x = T^{-1} b (host vectors of length k nb; x may equal b). */
SAP_API sap_status sap_btd_solve(sap_btd *T, const double *b, double *x);
/* nrhs right-hand sides at once (column j of B at B + j ldb, ldb >= n; likewise X). */
SAP_API sap_status sap_btd_solve_many(sap_btd *T, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx);
/* y = T x (host vectors), with the values given at create / refactor. */
SAP_API sap_status sap_btd_matvec(sap_btd *T, const double *x, double *y);
SAP_API sap_status sap_btd_get_stats(const sap_btd *T, sap_btd_stats *stats);

/* ---- distributed over MPI processes (a build with MPI: sap_has_mpi()) ---- */
/* 1 when the library was built with MPI. */
SAP_API int sap_has_mpi(void);
/* MPI_Init when MPI is not initialised yet (argc/argv may be NULL); returns the number of
 * processes of MPI_COMM_WORLD (1 without MPI).  sap_mpi_finalize: MPI_Finalize when this
 * process initialised MPI and has not finalised it. */
SAP_API int sap_mpi_init(int *argc, char ***argv);
SAP_API int sap_mpi_rank(void);
SAP_API void sap_mpi_finalize(void);
/* Collective over the MPI communicator *mpi_comm (an MPI_Comm*, NULL: MPI_COMM_WORLD):
 * this process' nb_local consecutive block rows (the ranks in order; >= 2, >= 1 for bcyclic), the arrays as for
 * sap_btd_create but lower block 0 is the coupling to the previous process' last row and
 * upper block nb_local - 1 the coupling to the next process' first row.  Each process
 * factors its rows (BCYCLIC) and its spikes on its context's device; the reduced system is
 * gathered and solved on every process.  Algorithms: spike (default), reduced-spike
 * (direct) and bcyclic (the cyclic reduction over the global block rows: each level's
 * boundary rows are sent to the neighbouring process that needs them, point to point; the
 * last row is solved by process 0: $SAP_BTD_DIST=levels at creation; by default, or with
 * "interior", interior first: each process eliminates its rows but its interface rows
 * locally, the interface rows of all processes are reduced, then each process
 * back-substitutes locally; that reduced system is replicated (every process gathers all
 * interface rows and solves them itself: one all-gather per solve) up to 9 processes where
 * the exchanges go device to device or the backend works in host memory, else reduced over
 * the processes as above; "interior-repl" / "interior-dist" force either; another value:
 * SAP_ERR_INVALID); the inexact reduced Spike returns SAP_ERR_UNSUPPORTED
 * over more than one process.  Solves (sap_btd_solve_many, collective) take and give this process' rows;
 * stats.time_comm is the time spent communicating (MPI; for BCYCLIC also the copies staging
 * the exchanged blocks through host memory, page-locked on a GPU).  Host staging: device
 * buffers go through host memory.  SAP_ERR_NOT_COMPILED without MPI. */
SAP_API sap_status sap_btd_create_dist(sap_context *ctx, void *mpi_comm, sap_int k, sap_int nb_local,
                                       const double *lower, const double *diag, const double *upper,
                                       const sap_btd_options *opt, sap_btd **T);
/* The same from the whole matrix given on every process (k = 0: detected): process r takes
 * an even share of the block rows (the first nb % size get one more). */
SAP_API sap_status sap_btd_create_csr_dist(sap_context *ctx, void *mpi_comm, const sap_csr *A, sap_int k,
                                           const sap_btd_options *opt, sap_btd **T);
/* This process' first row and row count (0 and n for an object of one process). */
SAP_API sap_status sap_btd_dist_range(const sap_btd *T, sap_int *first_row, sap_int *nrows);
/* Processes the object spans (1 when not distributed). */
SAP_API int sap_btd_processes(const sap_btd *T);
/* Collective: x_global (every process, length n) := the processes' x_local in order. */
SAP_API sap_status sap_btd_gather(sap_btd *T, const double *x_local, double *x_global);

#ifdef __cplusplus
}
#endif

#endif /* SAP_H */
