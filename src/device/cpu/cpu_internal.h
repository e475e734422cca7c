/* cpu_internal.h -- shared definitions of the cpu backend (src/device/cpu): the OpenMP
 * helper, the fixed reduction chunking and the private matrix layout.  Internal. */
#ifndef SAP_CPU_INTERNAL_H
#define SAP_CPU_INTERNAL_H

#include "device/device.h"

/* Vectors shorter than this are processed by one thread (the fork/join would cost more
 * than the work).  Parallel loops hand out fixed blocks dynamically (schedule(dynamic)):
 * on a machine shared with other processes a descheduled thread then holds up the others
 * for one block only, where a static split made every kernel wait for it; which thread
 * computes a block never changes the result. */
#define SAP_CPU_PAR_MIN 32768

#ifdef SAP_HAVE_LAPACK
/* Fortran BLAS (column-major, 32-bit integers, hidden character lengths last): the
 * dense kernels and the blocked band LU */
extern void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
                   const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
                   const int *ldc, size_t, size_t);
extern void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const float *alpha,
                   const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
                   const int *ldc, size_t, size_t);
extern void dtrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
                   const double *alpha, const double *a, const int *lda, double *b, const int *ldb, size_t, size_t,
                   size_t, size_t);
extern void strsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
                   const float *alpha, const float *a, const int *lda, float *b, const int *ldb, size_t, size_t,
                   size_t, size_t);
/* LAPACK's LU with partial pivoting (the dense kernels, SaP-C's reduced systems) */
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
#endif

/* The cpu's blocked LU (band_lu_blocked) in steps of SAP_CPU_BAND_BS columns: narrower than
 * the GPU's SAP_BAND_BS, since the cpu's cost per step is the diagonal block's and the
 * triangular products' (jb^2 K), not a kernel launch.  Its skewed work layout is the one of
 * band_kernels.h with this block: ku = K + SAP_CPU_BAND_BS - 1, ldm = 2 ku. */
#define SAP_CPU_BAND_BS 32
/* The columns of a partition of n rows (half-bandwidth K) the blocked LU keeps in its skewed
 * work array at once (band_lu_blocked slides this window along the partition): a step
 * touches BS + K columns; twice that slides once every K + BS columns */
static inline int64_t sap__cpu_blk_cols(int64_t n, int64_t K)
{
    const int64_t w = 2 * (K + SAP_CPU_BAND_BS);
    return w < n ? w : n;
}
/* The blocked LU's work elements for a partition of n rows: the window's columns (ldm + 1
 * each, offset ku), then the inverses of a diagonal block's two factors (BS x BS each) and a
 * copy of its L21 or U12 (K x BS). */
static inline int64_t sap__cpu_blk_elems(int64_t n, int64_t K)
{
    const int64_t ku = K + SAP_CPU_BAND_BS - 1;
    return sap__cpu_blk_cols(n, K) * (2 * ku + 1) + ku + 1 + 2 * SAP_CPU_BAND_BS * (SAP_CPU_BAND_BS + K);
}

/* The band kernels of the cpu table (band_cpu.c). */
extern const sap_band_kernels sap__cpu_band_kernels;
/* The triangular solves of the cpu table (trsv_cpu.c). */
extern const sap_trsv_kernels sap__cpu_trsv_kernels;
extern const sap_direct_kernels sap__cpu_direct_kernels; /* direct_cpu.c (SuiteSparse) */
/* The block-Jacobi kernels of the cpu table (bjacobi_cpu.c). */
extern const sap_bjacobi_kernels sap__cpu_bjacobi_kernels;
/* The dense block kernels of the cpu table (dense_cpu.c). */
extern const sap_dense_kernels sap__cpu_dense_kernels;

/* Deterministic reductions: a vector of length n is cut into chunks whose size depends
 * only on n (never on the thread count); each chunk is summed sequentially into its own
 * partial sum and the partial sums are added in chunk order.  The result is therefore
 * bit-identical for every thread count and every run.  At most SAP_CPU_PARTIALS partial
 * sums are kept (on the stack), shared by the k results of an mdot. */
#define SAP_CPU_CHUNK_MIN 2048
#define SAP_CPU_PARTIALS 4096

/* Chunk length for a reduction of k results over n entries (a multiple of 64). */
static inline sap_int sap__cpu_chunk(sap_int n, int k)
{
    sap_int maxchunks = SAP_CPU_PARTIALS / (k > 0 ? k : 1);
    sap_int c = (n + maxchunks - 1) / maxchunks;
    if (c < SAP_CPU_CHUNK_MIN) c = SAP_CPU_CHUNK_MIN;
    return (c + 63) / 64 * 64;
}

/* Threads for a loop over n elements. */
static inline int sap__cpu_nt(const sap_context *ctx, sap_int n)
{
    int nt = sap__threads(ctx);
    return n < SAP_CPU_PAR_MIN ? 1 : nt;
}

/* The cpu backend's matrix (sap_spmat.impl).  Values are double* or float* (prec). */
typedef struct sap_cpu_mat {
    /* CSR (format CSR) and the CSR part of HEC */
    sap_int *rowptr; /* nrows + 1 */
    int32_t *col32;  /* column indices when ncols fits in 32 bits */
    sap_int *col64;  /* otherwise (CSR only) */
    void *val;
    /* ELL (format ELL) and the ELL part of HEC: column-major nrows x width */
    sap_int width;
    int32_t *ell_col;
    void *ell_val;
    /* SELL-P */
    sap_int nslices;
    sap_int *slice_ptr, *slice_width;
    int32_t *sl_col;
    void *sl_val;
    /* BAND: column-major nrows x (kl + ku + 1) */
    sap_int kl, ku;
    void *band_val;
} sap_cpu_mat;

/* block_relax of the cpu table (cpu_relax.c). */
/* The csr_stats op (stats_cpu.c). */
sap_status sap__cpu_csr_stats(sap_context *ctx, const sap_dev_csr *A, sap_dev_csr_check *chk, sap_matrix_stats *ms,
                              double *dinv);
sap_status sap__cpu_block_relax(sap_context *ctx, const sap_spmat *M, int sweeps, const sap_vec *b, sap_vec *x,
                                sap_vec *scratch);

/* Kernels per precision (cpu_blas.c, cpu_spmv.c). */
#define SAP_CPU_DECLARE(S, REAL)                                                                                       \
    void sap__cpu_set_##S(sap_context *ctx, sap_int n, REAL *x, double a);                                             \
    void sap__cpu_scale_##S(sap_context *ctx, sap_int n, REAL *x, double a);                                           \
    void sap__cpu_axpby_##S(sap_context *ctx, sap_int n, double a, const REAL *x, double b, REAL *y);                  \
    void sap__cpu_axpbypcz_##S(sap_context *ctx, sap_int n, double a, const REAL *x, double b, const REAL *y,          \
                               double c, REAL *z);                                                                     \
    void sap__cpu_pmult_##S(sap_context *ctx, sap_int n, const REAL *x, const REAL *y, REAL *z);                       \
    void sap__cpu_maxpy_##S(sap_context *ctx, sap_int n, int k, const double *a, const REAL *const *x, REAL *y);       \
    void sap__cpu_mdot_##S(sap_context *ctx, sap_int n, int k, const REAL *const *x, const REAL *y, double *r);        \
    double sap__cpu_axpby_nrm2_##S(sap_context *ctx, sap_int n, double a, const REAL *x, double b, REAL *y);           \
    double sap__cpu_cg_update_##S(sap_context *ctx, sap_int n, double alpha, const REAL *p, const REAL *q, REAL *x,    \
                                  REAL *r);                                                                            \
    void sap__cpu_spmv_##S(sap_context *ctx, const sap_spmat *M, double alpha, const REAL *x, double beta, REAL *y);

SAP_CPU_DECLARE(d, double)
SAP_CPU_DECLARE(s, float)

#endif /* SAP_CPU_INTERNAL_H */
