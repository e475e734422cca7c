/* trsv_kernels.h -- sparse triangular solves T x = b (T lower or upper, unit diagonal or
 * not, float or double, one or many right-hand sides) as a sub-table of the device table
 * (sap__ops(ctx)->trsv), after the level-scheduling method of the seed (Li and Saad,
 * "GPU-accelerated preconditioned iterative linear solvers", 001_40d1a2c24465d634):
 *
 *   analysis   level(i) = 1 + max { level(j) : t_ij != 0, j before i }   (equation 2)
 *              rows reordered level by level (equation 3); an upper factor is handled
 *              as the lower one of the reversal map i -> n - 1 - i (its levels are
 *              computed from the last row up), so one code path serves both;
 *   storage    the reordered off-diagonal part (columns in the original numbering, so x
 *              and b keep the original order) plus the inverse diagonal in processing
 *              order; the cuda backend keeps it in HEC (ELL column-major + CSR remainder);
 *   solve      one parallel step per level (cpu: an OpenMP loop per level; cuda: one kernel
 *              per level), or on cuda the synchronization-free method: one launch, G
 *              threads per row in processing order spinning on the values they need
 *              (the solution vector, preset to a sentinel, is its own ready flag).
 * The cuda backend runs the analysis itself on the device (cuda/trsv_cuda.cu: a
 * synchronization-free depth pass for the levels, a radix sort for the order, a gather
 * into CSR or HEC); the host analysis here is the cpu backend's and the reference.
 *
 * The method choice (sap__trsv_pick) uses the level profile only; see there.  The cpu
 * implementation (cpu/trsv_cpu.c) is the reference the cuda one (cuda/trsv_cuda.cu) is
 * tested against; every row is summed sequentially in the stored order, so results are
 * identical for every thread count.  Internal. */
#ifndef SAP_DEVICE_TRSV_KERNELS_H
#define SAP_DEVICE_TRSV_KERNELS_H

#include "base/base.h"

#include <math.h>

typedef enum sap_trsv_method {
    SAP_TRSV_AUTO = 0,     /* sap__trsv_pick */
    SAP_TRSV_LEVEL = 1,    /* level scheduling: a parallel step per level */
    SAP_TRSV_SYNCFREE = 2  /* cuda: warp per row with ready flags (cpu: runs LEVEL) */
} sap_trsv_method;

/* Host form of an analysed triangular factor (device/trsv.c), shared by the backends. */
typedef struct sap_trsv_host {
    sap_int n, nlevels, max_level_rows;
    sap_int *level_ptr; /* nlevels + 1: level l is positions level_ptr[l] .. level_ptr[l+1] */
    sap_int *order;     /* n: the row solved at position k (level order, rows ascending in a level) */
    sap_int *rowptr;    /* n + 1: off-diagonal entries of row order[k], columns in the original numbering */
    sap_int *colind;
    double *val;
    double *dinv;       /* n: 1 / t_ii of row order[k] (1 for a unit diagonal) */
} sap_trsv_host;

/* Analyses T (square host CSR, rows sorted; only the lower (upper = 0) or upper triangle may
 * hold entries).  unit = 1: diagonal entries are ignored and taken as 1; unit = 0: every
 * row needs a nonzero finite diagonal entry.  SAP_ERR_INVALID names an entry outside the
 * triangle; SAP_ERR_SINGULAR names a row with a zero or missing diagonal; SAP_ERR_NONFINITE
 * a NaN/Inf value. */
sap_status sap__trsv_host_build(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_trsv_host *H);
void sap__trsv_host_free(sap_context *ctx, sap_trsv_host *H);

/* The method for a level profile (n rows in nlevels levels), with the reason (static
 * text).  LEVEL only when the levels are very few (nlevels <= SAP_TRSV_FEW_LEVELS) and wide
 * (n / nlevels >= SAP_TRSV_WIDE_LEVEL rows on average): then a launch per level costs
 * little next to the rows; SYNCFREE otherwise, which pays one memory round trip per level
 * instead of a kernel launch (measured on an H100, bench/results/trisolve.md).  On cpu the
 * level method is always used (the method is recorded but the loop is the same). */
#define SAP_TRSV_WIDE_LEVEL 2048
#define SAP_TRSV_FEW_LEVELS 16
sap_trsv_method sap__trsv_pick(sap_int n, sap_int nlevels, const char **reason);
const char *sap__trsv_method_name(sap_trsv_method m);

/* The pivot rule of the incomplete factorizations (precond/ilu_factor.h), shared by the
 * host ones and the cuda ILU(0): a pivot p of a row with original diagonal aii and
 * ||a_i||_inf = rnorm is kept when nonzero and |p| >= tol * rnorm, else replaced by
 * sign(p) * |aii| (rnorm when |aii| is below the threshold too, 1 for a zero row) and
 * *shifted set to 1 (0 otherwise). */
#ifdef __CUDACC__
#define SAP_HOST_DEVICE __host__ __device__
#else
#define SAP_HOST_DEVICE
#endif
static inline SAP_HOST_DEVICE double sap__ilu_fix_pivot(double p, double aii, double rnorm, double tol, int *shifted)
{
    const double thr = tol * rnorm;
    *shifted = 0;
    if (p != 0.0 && fabs(p) >= thr) return p;
    *shifted = 1;
    double v = fabs(aii) >= thr && aii != 0.0 ? fabs(aii) : rnorm;
    if (!(v > 0.0)) v = 1.0;
    return p < 0.0 ? -v : v;
}

/* An analysed factor in backend memory. */
typedef struct sap_trsv {
    sap_context *ctx;
    const struct sap_trsv_kernels *kt;
    sap_int n, nnz_offdiag, nlevels, max_level_rows;
    int upper, unit;
    sap_precision prec;
    sap_trsv_method method; /* never AUTO */
    const char *reason;
    double t_analysis; /* seconds of the analysis (cpu: host levels; cuda: upload + device analysis) */
    double t_upload;   /* the part of t_analysis that copied the host factor to the backend (cuda) */
    void *impl;        /* backend private */
} sap_trsv;

typedef struct sap_trsv_kernels {
    const char *name;
    /* analysis of T (see sap__trsv_host_build) into *S in backend memory, precision prec */
    sap_status (*analyze)(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_precision prec,
                          sap_trsv_method method, sap_trsv **S);
    /* x = T^{-1} b for nrhs right-hand sides stored one after the other (column-major,
     * leading dimension n), b and x in backend memory in S->prec; x != b */
    sap_status (*solve)(sap_trsv *S, sap_int nrhs, const void *b, void *x);
    void (*destroy)(sap_trsv *S);
    /* ParILU (Chow and Patel, "Fine-grained parallel incomplete LU factorization"):
     * 'sweeps' fixed-point sweeps for the ILU(0) factors on the pattern of S (square host
     * CSR, rows sorted, every diagonal present; S->val = A's values on it).  Jacobi style:
     * each sweep computes every entry from the previous sweep's values (deterministic),
     * with F the combined factor (strictly lower part L, unit diagonal implied; the rest U):
     *     i > j:   F_ij = (a_ij - sum_{k<j} F_ik F_kj) / F_jj   (F_jj = 0: entry kept)
     *     i <= j:  F_ij =  a_ij - sum_{k<i} F_ik F_kj
     * lu (host, S->nnz) holds the initial guess on entry and the result on return; the
     * sweeps run on the backend (cuda: upload, a thread per entry, download). */
    sap_status (*parilu)(sap_context *ctx, const sap_csr *S, int sweeps, double *lu);
    /* ILU(0) on the backend (NULL where there is none: cpu, which runs sap__ilu_numeric).
     * A: square host CSR; uploaded once, then on the device: the diagonal positions, the
     * row-wise factorization of sap__ilu_numeric (same pivot rule and shift count, same
     * operations per entry in the same order: the factors equal the host ones), the split
     * into L (strictly lower, unit diagonal) and U, and their analysis (AUTO method,
     * precision prec) without a host round trip.  Returns SAP_OK with *L = *U = NULL when
     * the device declines A (a row without a diagonal entry, unsorted columns, a NaN/Inf
     * value): the caller then runs the host path, which adds the diagonal or reports.  A
     * factor entry that overflows is SAP_ERR_SINGULAR naming the row (as the host).  lu
     * (host, A->nnz, or NULL): the combined factor on return (tests); *t_factor: seconds of
     * the upload and the factorization; *shifted: the pivots shifted. */
    sap_status (*ilu0)(sap_context *ctx, const sap_csr *A, double pivot_tol, sap_precision prec, sap_trsv **L,
                       sap_trsv **U, sap_int *shifted, double *lu, double *t_factor);
} sap_trsv_kernels;

#endif /* SAP_DEVICE_TRSV_KERNELS_H */
