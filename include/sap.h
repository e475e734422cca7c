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
 */
#ifndef SAP_H
#define SAP_H

#include <stddef.h>
#include <stdint.h>

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
int sap_version(void);
/* Run-time version string, e.g. "0.1.0". */
const char *sap_version_string(void);
/* 1 when the library was built with the CUDA backend, else 0. */
int sap_has_cuda(void);
/* 1 when the library was built with zlib (.gz files, compressed PNG), else 0. */
int sap_has_zlib(void);

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
const char *sap_status_string(sap_status status);
/* The status' identifier, e.g. "SAP_ERR_PARSE"; never NULL. */
const char *sap_status_name(sap_status status);

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
const char *sap_backend_name(sap_backend backend);
/* Parses "auto"/"cpu"/"cuda" into *backend; SAP_ERR_INVALID otherwise. */
sap_status sap_backend_parse(const char *name, sap_backend *backend);

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
void sap_context_config_init(sap_context_config *cfg);

typedef struct sap_context sap_context;

/* Creates a context.  cfg may be NULL for the defaults.  Asking for SAP_BACKEND_CUDA
 * returns SAP_ERR_NOT_COMPILED in a CPU-only build and SAP_ERR_NO_DEVICE where no GPU
 * is present; SAP_BACKEND_AUTO never fails for those reasons (it falls back to cpu and
 * says so at SAP_PRINT_INFO).  On error *ctx is NULL. */
sap_status sap_context_create(sap_context **ctx, const sap_context_config *cfg);
void sap_context_destroy(sap_context *ctx);

/* The backend in use after 'auto' was resolved. */
sap_backend sap_context_backend(const sap_context *ctx);
/* A one-line description of the device or CPU in use (never NULL). */
const char *sap_context_device_name(const sap_context *ctx);
int sap_context_threads(const sap_context *ctx);
sap_status sap_context_set_threads(sap_context *ctx, int threads);
sap_status sap_context_set_print_level(sap_context *ctx, int level);
int sap_context_print_level(const sap_context *ctx);

/* Message of the last error (or warning) raised in this context, "file.c:123: text";
 * empty string if none. */
const char *sap_context_last_error(const sap_context *ctx);
void sap_context_clear_error(sap_context *ctx);

typedef struct sap_context_stats {
    int64_t host_bytes_in_use, host_bytes_peak, host_allocs;
    int64_t device_bytes_in_use, device_bytes_peak, device_allocs;
    int64_t failed_allocs;
    int64_t h2d_bytes, d2h_bytes, h2d_copies, d2h_copies;
} sap_context_stats;

sap_status sap_context_get_stats(const sap_context *ctx, sap_context_stats *stats);
void sap_context_reset_transfer_stats(sap_context *ctx);

/* Memory owned by the context's host allocator (use for arrays handed to sap objects). */
void *sap_malloc(sap_context *ctx, size_t bytes);
void sap_free(sap_context *ctx, void *ptr);

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

sap_status sap_coo_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_int capacity, sap_coo **A);
void sap_coo_destroy(sap_coo *A);
/* Appends one entry, growing the storage as needed. */
sap_status sap_coo_push(sap_coo *A, sap_int i, sap_int j, double v);

/* Allocates an n x m CSR with room for nnz entries (rowptr zeroed, rest uninitialized). */
sap_status sap_csr_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_int nnz, sap_csr **A);
void sap_csr_destroy(sap_csr *A);
sap_status sap_csr_copy(const sap_csr *A, sap_csr **B);
/* Copies user arrays (any row order of columns, duplicates summed) into a canonical CSR;
 * validates the arrays (SAP_ERR_INVALID/SAP_ERR_INDEX with the offending position).
 * val may be NULL (all ones). */
sap_status sap_csr_from_arrays(sap_context *ctx, sap_int nrows, sap_int ncols, const sap_int *rowptr,
                               const sap_int *colind, const double *val, sap_csr **A);
/* Checks the canonical-form invariants; SAP_ERR_INVALID with a message if broken. */
sap_status sap_csr_check(const sap_csr *A);

/* COO -> canonical CSR (sorted, duplicates summed). */
sap_status sap_csr_from_coo(const sap_coo *C, sap_csr **A);
sap_status sap_csr_to_coo(const sap_csr *A, sap_coo **C);
sap_status sap_csr_to_dense(const sap_csr *A, sap_dense **D);
/* Dense -> CSR keeping only entries with |a_ij| > drop_tol (drop_tol < 0 keeps all). */
sap_status sap_csr_from_dense(const sap_dense *D, double drop_tol, sap_csr **A);

sap_status sap_csr_transpose(const sap_csr *A, sap_csr **AT);

typedef enum sap_symmetry {
    SAP_GENERAL = 0,
    SAP_SYMMETRIC = 1,
    SAP_SKEW_SYMMETRIC = 2
} sap_symmetry;

/* Given one triangle (either; the diagonal as stored), returns the full matrix:
 * a_ji = a_ij (symmetric) or a_ji = -a_ij (skew; diagonal entries must be zero). */
sap_status sap_csr_symmetric_expand(const sap_csr *T, sap_symmetry symmetry, sap_csr **A);

/* B = alpha*A + beta*A^T over the union pattern (square A).  With alpha = beta = 1 its
 * pattern is the pattern of A + A^T (entries that cancel are kept as explicit zeros). */
sap_status sap_csr_add_transpose(const sap_csr *A, double alpha, double beta, sap_csr **B);

/* Permutations are arrays p of length n holding each of 0..n-1 once.
 * B(i, j) = A(p[i], q[j]), i.e. p and q map new positions to old ones.
 * p or q may be NULL (identity). */
sap_status sap_csr_permute(const sap_csr *A, const sap_int *p, const sap_int *q, sap_csr **B);
/* Checks that p is a permutation of 0..n-1 (SAP_ERR_INVALID otherwise). */
sap_status sap_perm_check(sap_context *ctx, sap_int n, const sap_int *p);
/* pinv[p[i]] = i. */
sap_status sap_perm_invert(sap_context *ctx, sap_int n, const sap_int *p, sap_int *pinv);

/* In place A = diag(r) * A * diag(c); r or c may be NULL (identity). */
sap_status sap_csr_scale(sap_csr *A, const double *r, const double *c);

/* y = alpha*A*x + beta*y on the host (OpenMP). */
sap_status sap_csr_spmv(const sap_csr *A, double alpha, const double *x, double beta, double *y);

typedef enum sap_norm_type {
    SAP_NORM_ONE = 1, /* max column sum */
    SAP_NORM_INF = 2, /* max row sum */
    SAP_NORM_FRO = 3, /* Frobenius */
    SAP_NORM_MAX = 4  /* max |a_ij| */
} sap_norm_type;

sap_status sap_csr_norm(const sap_csr *A, sap_norm_type type, double *norm);

/* Statistics of a matrix, as the papers define them. */
typedef struct sap_matrix_stats {
    sap_int nrows, ncols, nnz;
    sap_int half_bandwidth;  /* K = max |i - j| over stored entries */
    sap_int lower_bandwidth; /* max (i - j) over stored entries with i > j, else 0 */
    sap_int upper_bandwidth; /* max (j - i) over stored entries with j > i, else 0 */
    sap_int empty_rows;
    sap_int max_row_nnz;
    double mean_row_nnz;
    double mean_row_width;   /* mean over rows of (last col - first col + 1), 0 for empty */
    int structurally_symmetric; /* pattern(A) == pattern(A^T) */
    int numerically_symmetric;  /* a_ij == a_ji exactly (requires square) */
    double symmetry_deviation;  /* max |a_ij - a_ji| / max |a_ij| (0 if symmetric) */
    sap_int zero_diagonal;      /* diagonal entries that are missing or exactly zero */
    double diag_dominance;      /* d = min_i |a_ii| / sum_{j != i} |a_ij|; +inf if all
                                   off-diagonal sums are 0 */
    sap_int dominant_rows;      /* rows with |a_ii| >= sum_{j != i} |a_ij| */
    int spd_estimate;           /* numerically symmetric with every a_ii > 0 */
    double norm_one, norm_inf, norm_fro, norm_max;
} sap_matrix_stats;

sap_status sap_csr_stats(const sap_csr *A, sap_matrix_stats *stats);

sap_status sap_dense_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_dense **D);
void sap_dense_destroy(sap_dense *D);

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
} sap_mm_read_options;

void sap_mm_read_options_init(sap_mm_read_options *opt);

/* Reads a coordinate or array file into a canonical CSR (duplicates summed; pattern
 * entries are 1.0; array files keep every value, zeros included).  opt and info may be
 * NULL.  Errors carry the line number in sap_context_last_error(). */
sap_status sap_mm_read_csr(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_csr **A,
                           sap_mm_info *info);
/* The same from a memory buffer (len bytes of text; not necessarily NUL-terminated). */
sap_status sap_mm_parse_csr(sap_context *ctx, const char *text, size_t len, const sap_mm_read_options *opt,
                            sap_csr **A, sap_mm_info *info);
/* Reads an array (or coordinate) file into a dense matrix, e.g. right-hand sides. */
sap_status sap_mm_read_dense(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_dense **X,
                             sap_mm_info *info);

typedef struct sap_mm_write_options {
    sap_mm_format format;   /* default coordinate */
    sap_mm_field field;     /* default real; integer requires integral values */
    sap_symmetry symmetry;  /* default general; symmetric/skew write the lower triangle
                               and require the matrix to have that symmetry */
    int precision;          /* significant digits for reals, default 17 (round-trip) */
    const char *comment;    /* optional comment line(s) written after the banner */
} sap_mm_write_options;

void sap_mm_write_options_init(sap_mm_write_options *opt);

sap_status sap_mm_write_csr(const sap_csr *A, const char *path, const sap_mm_write_options *opt);
sap_status sap_mm_write_dense(const sap_dense *X, const char *path, const sap_mm_write_options *opt);

/* ------------------------------------------------------------------------------ */
/* Generators (deterministic from a seed)                                          */
/* ------------------------------------------------------------------------------ */

/* Dense banded N x N with half-bandwidth K: off-diagonal entries uniform in [-1, 1],
 * diagonal a_ii = d * sum_{j != i} |a_ij| (positive), so the degree of diagonal
 * dominance is exactly d.  symmetric != 0 makes A = A^T (SPD when d > 1). */
sap_status sap_gen_banded(sap_context *ctx, sap_int n, sap_int k, double d, int symmetric, uint64_t seed,
                          sap_csr **A);

/* Synthetic sparse: a banded matrix of half-bandwidth K whose off-diagonal band entries
 * are kept with probability 'fill' (1 = dense band), diagonal rescaled to d, then
 * hidden by independent random row and column permutations: A = Band(p, q).
 * p and q (length n, may be NULL) receive the permutations (new -> old). */
sap_status sap_gen_synthetic(sap_context *ctx, sap_int n, sap_int k, double d, double fill, uint64_t seed,
                             sap_csr **A, sap_int *p, sap_int *q);

/* 5-point 2D Poisson on an nx x ny grid, 7-point 3D Poisson on nx x ny x nz
 * (Dirichlet, unscaled: 4 or 6 on the diagonal, -1 off it; SPD). */
sap_status sap_gen_poisson2d(sap_context *ctx, sap_int nx, sap_int ny, sap_csr **A);
sap_status sap_gen_poisson3d(sap_context *ctx, sap_int nx, sap_int ny, sap_int nz, sap_csr **A);

/* Radiative transfer in stellar atmospheres: Galerkin matrix of
 * (T phi)(t) = albedo/2 * int_0^tau E1(|t - s|) phi(s) ds with n piecewise-constant
 * elements on [0, tau] (exact entries through E3), minus shift * I.  Entries with
 * |i - j| > bw are dropped; bw < 0 takes the paper's formula
 * bw = n (1 - exp(-n / (tc tau))), tc = max(n/100, 5).  Symmetric Toeplitz. */
sap_status sap_gen_radiative(sap_context *ctx, sap_int n, double albedo, double tau, sap_int bw, double shift,
                             sap_csr **A);

/* Block-tridiagonal with nb x nb dense k x k blocks: off-diagonal entries uniform in
 * [-1, 1], diagonal rescaled to degree of diagonal dominance d. */
sap_status sap_gen_blocktridiag(sap_context *ctx, sap_int nb, sap_int k, double d, uint64_t seed, sap_csr **A);

/* Exponential integral E_n(x), n >= 0, x >= 0 (x > 0 for n <= 1). */
double sap_expint(int n, double x);

typedef enum sap_xstar {
    SAP_XSTAR_RANDOM = 0,  /* uniform in [-1, 1] */
    SAP_XSTAR_PARABOLA = 1, /* 1 at both ends, 400 in the middle (the papers' choice) */
    SAP_XSTAR_ONES = 2
} sap_xstar;

/* Fills x (length n) with a manufactured solution. */
sap_status sap_gen_xstar(sap_context *ctx, sap_int n, sap_xstar kind, uint64_t seed, double *x);

/* Builds a matrix from a spec string "gen:NAME:key=value,..." (see sap_gen_spec_help)
 * with NAME one of banded, synthetic, poisson2d, poisson3d, radiative, blocktridiag. */
sap_status sap_gen_spec(sap_context *ctx, const char *spec, sap_csr **A);
/* Text describing every generator and its keys (static, never NULL). */
const char *sap_gen_spec_help(void);
/* A spec ("gen:...") or a Matrix Market path (opt may be NULL). */
sap_status sap_matrix_load(sap_context *ctx, const char *path_or_spec, const sap_mm_read_options *opt,
                           sap_csr **A);

#ifdef __cplusplus
}
#endif

#endif /* SAP_H */
