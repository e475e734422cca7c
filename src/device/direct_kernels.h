/* direct_kernels.h -- a sparse direct solver (analysis, factorization, solve) as a
 * sub-table of the device table (sap__ops(ctx)->direct): the cpu backend's is SuiteSparse
 * (CHOLMOD for SPD-looking matrices, UMFPACK otherwise; src/device/cpu/direct_cpu.c, built
 * when SuiteSparse was found), the cuda backend's is NVIDIA cuDSS, loaded at run time with
 * dlopen (src/device/cuda/direct_cuda.cu; never linked, never required).  The cpu one is
 * the host fallback and the reference the cuda one is tested against.
 *
 * Matrices are host CSR (any sap_context's); right-hand sides and solutions are host
 * arrays (the cuda implementation uploads and downloads them).  The solvers use their own
 * fill-reducing ordering and pivoting; nothing of sap's reorderings is needed.  Internal. */
#ifndef SAP_DEVICE_DIRECT_KERNELS_H
#define SAP_DEVICE_DIRECT_KERNELS_H

#include "base/base.h"

/* What a direct factorization predicts and did. */
typedef struct sap_direct_info {
    char solver[48];    /* e.g. "UMFPACK 5.7.9", "CHOLMOD 3.0.14", "cuDSS 0.7.1" */
    int cholesky;       /* 1: a Cholesky factorization (SPD) */
    double lu_nnz;      /* entries of the factors: predicted by analyse, exact after factor
                           (0: unknown) */
    double flops;       /* of the numeric factorization, as predicted by analyse (0: unknown) */
    int bound;          /* 1: lu_nnz and flops of analyse are upper bounds (UMFPACK's
                           unsymmetric strategy: partial pivoting unknown); 0: an estimate
                           without pivoting (CHOLMOD, UMFPACK's symmetric strategy: AMD) */
    double t_analyse, t_factor, t_solve; /* seconds of the latest call of each */
} sap_direct_info;

typedef struct sap_direct sap_direct; /* backend private */

typedef struct sap_direct_kernels {
    const char *name; /* "suitesparse", "cudss" */
    /* 1 when usable on ctx (library built in or loadable, a device there); else 0 and the
     * reason in why (e.g. "cuDSS not loadable (libcudss.so.1): ...") */
    int (*available)(sap_context *ctx, char *why, size_t wl);
    /* symbolic analysis of A's pattern (fill-reducing ordering, predicted fill and work);
     * spd: the matrix looks SPD (a Cholesky factorization is tried first).  info gets the
     * predictions.  Errors: SAP_ERR_NOT_COMPILED / SAP_ERR_UNSUPPORTED (not available),
     * SAP_ERR_TOO_LARGE (32-bit indices exceeded), SAP_ERR_OUT_OF_MEMORY. */
    sap_status (*analyse)(sap_context *ctx, const sap_csr *A, int spd, sap_direct **D, sap_direct_info *info);
    /* numeric factorization with A's values (A has the pattern analysed); a Cholesky that
     * finds the matrix not positive definite falls back to LU.  SAP_ERR_SINGULAR (with the
     * message) when the matrix is singular. */
    sap_status (*factor)(sap_direct *D, const sap_csr *A, sap_direct_info *info);
    /* X(:, j) = A^{-1} B(:, j) for the nrhs columns (host arrays, leading dimensions ldb,
     * ldx; X and B never alias) */
    sap_status (*solve)(sap_direct *D, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx,
                        sap_direct_info *info);
    void (*destroy)(sap_direct *D);
} sap_direct_kernels;

/* The cpu backend's (SuiteSparse) table: also reachable from a cuda context, for the
 * host fallback. */
const sap_direct_kernels *sap__direct_host_kernels(void);

#endif /* SAP_DEVICE_DIRECT_KERNELS_H */
