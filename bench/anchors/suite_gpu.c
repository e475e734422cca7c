/* suite_gpu.c -- the GPU anchors of bench/suite:
 *   cudss          NVIDIA cuDSS (direct: analysis + factorization + solve), loaded at run
 *                  time by sap's loader (src/device/cuda/direct_cuda.cu: dlopen of $SAP_CUDSS_LIB, else
 *                  libcudss.so.1 / .so.0); matrix type
 *                  SPD when the matrix looks SPD (symmetric, positive diagonal; if that
 *                  factorization fails, the general type is tried, both timed), else general
 *   cusolver_qr    cusolverSpDcsrlsvqr, the sparse QR the paper compared with (section
 *                  4.3.4); skipped with a note on systems too large for its fill
 *   cusparse_ilu0  csrilu02 (ILU(0)) + cusparseSpSV triangular solves preconditioning a
 *                  right-preconditioned BiCGStab (cuBLAS vector operations, cusparseSpMV),
 *                  relative residual 1e-10, at most 1000 iterations: the common GPU
 *                  iterative baseline
 * All three start from the host CSR and end with x on the host: 32-bit index copies,
 * allocations, uploads, analysis, factorization, solve and the download are timed;
 * cudaFree(0), the library handles (cudssCreate, cusolverSpCreate, cusparseCreate,
 * cublasCreate) and loading cuDSS are init_s.  Every CUDA / cuSPARSE / cuBLAS / cuSOLVER
 * / cuDSS status is checked; a failure is the solver's failure with a message.
 * Without the CUDA backend every function returns SUITE_RUN_NA. */
#define _GNU_SOURCE
#include "suite_anchor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SAP_HAVE_CUDA

int suite_run_cudss(const suite_problem *p, double *x, suite_run *r)
{
    (void)p, (void)x;
    suite_note(r, "no CUDA in this build");
    return SUITE_RUN_NA;
}
int suite_run_cusolver_qr(const suite_problem *p, double *x, suite_run *r)
{
    (void)p, (void)x;
    suite_note(r, "no CUDA in this build");
    return SUITE_RUN_NA;
}
int suite_run_cusparse_ilu0(const suite_problem *p, double *x, suite_run *r)
{
    (void)p, (void)x;
    suite_note(r, "no CUDA in this build");
    return SUITE_RUN_NA;
}

#else

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverSp.h>
#include <cusparse.h>

#include "device/cuda/cudss_abi.h" /* the cuDSS 1.x declarations sap itself uses */

/* csrilu02 and cusolverSp are deprecated in CUDA 12/13 but still the standard calls */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define FAIL_CUDA(what, e)                                                                                        \
    do {                                                                                                          \
        suite_note(r, "%s: %s", what, cudaGetErrorString(e));                                                     \
        rc = ((e) == cudaErrorMemoryAllocation) ? SUITE_RUN_OOM : SUITE_RUN_FAILED;                               \
        goto done;                                                                                                \
    } while (0)
#define CK_CUDA(what, call)                                                                                       \
    do {                                                                                                          \
        cudaError_t e_ = (call);                                                                                  \
        if (e_ != cudaSuccess) FAIL_CUDA(what, e_);                                                               \
    } while (0)
#define CK_SP(what, call)                                                                                         \
    do {                                                                                                          \
        cusparseStatus_t e_ = (call);                                                                             \
        if (e_ != CUSPARSE_STATUS_SUCCESS) {                                                                      \
            suite_note(r, "%s: %s", what, cusparseGetErrorString(e_));                                            \
            rc = (e_ == CUSPARSE_STATUS_ALLOC_FAILED || e_ == CUSPARSE_STATUS_INSUFFICIENT_RESOURCES)             \
                     ? SUITE_RUN_OOM                                                                              \
                     : SUITE_RUN_FAILED;                                                                          \
            goto done;                                                                                            \
        }                                                                                                         \
    } while (0)
#define CK_BL(what, call)                                                                                         \
    do {                                                                                                          \
        cublasStatus_t e_ = (call);                                                                               \
        if (e_ != CUBLAS_STATUS_SUCCESS) {                                                                        \
            suite_note(r, "%s: cublas status %d", what, (int)e_);                                                 \
            rc = e_ == CUBLAS_STATUS_ALLOC_FAILED ? SUITE_RUN_OOM : SUITE_RUN_FAILED;                             \
            goto done;                                                                                            \
        }                                                                                                         \
    } while (0)

/* cudaFree(0): creates the CUDA context.  SUITE_RUN_NA when there is no usable GPU. */
static int gpu_init(suite_run *r)
{
    cudaError_t e = cudaFree(0);
    if (e != cudaSuccess) {
        suite_note(r, "no usable GPU: %s", cudaGetErrorString(e));
        return SUITE_RUN_NA;
    }
    int dev = 0;
    struct cudaDeviceProp prop;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
        suite_note(r, "gpu=%.40s", prop.name);
    return SUITE_RUN_DONE;
}

/* Device copy of the CSR (32-bit indices) and of b; x allocated. */
typedef struct dev_sys {
    int *rp, *ci;
    double *val, *b, *x;
} dev_sys;

static int dev_upload(const suite_problem *p, dev_sys *d, suite_run *r)
{
    int rc = SUITE_RUN_DONE;
    int *rp = suite_int32_rowptr(p, 0, r);
    int *ci = suite_int32_colind(p, 0, r);
    memset(d, 0, sizeof *d);
    if (!rp || !ci) {
        rc = SUITE_RUN_OOM;
        goto done;
    }
    size_t n = (size_t)p->n, nnz = (size_t)(p->nnz > 0 ? p->nnz : 1);
    CK_CUDA("cudaMalloc rowptr", cudaMalloc((void **)&d->rp, sizeof(int) * (n + 1)));
    CK_CUDA("cudaMalloc colind", cudaMalloc((void **)&d->ci, sizeof(int) * nnz));
    CK_CUDA("cudaMalloc val", cudaMalloc((void **)&d->val, sizeof(double) * nnz));
    CK_CUDA("cudaMalloc b", cudaMalloc((void **)&d->b, sizeof(double) * n));
    CK_CUDA("cudaMalloc x", cudaMalloc((void **)&d->x, sizeof(double) * n));
    CK_CUDA("upload rowptr", cudaMemcpy(d->rp, rp, sizeof(int) * (n + 1), cudaMemcpyHostToDevice));
    CK_CUDA("upload colind", cudaMemcpy(d->ci, ci, sizeof(int) * (size_t)p->nnz, cudaMemcpyHostToDevice));
    CK_CUDA("upload val", cudaMemcpy(d->val, p->val, sizeof(double) * (size_t)p->nnz, cudaMemcpyHostToDevice));
    CK_CUDA("upload b", cudaMemcpy(d->b, p->b, sizeof(double) * n, cudaMemcpyHostToDevice));
    CK_CUDA("memset x", cudaMemset(d->x, 0, sizeof(double) * n));
done:
    free(rp);
    free(ci);
    return rc;
}

static void dev_free(dev_sys *d)
{
    cudaFree(d->rp);
    cudaFree(d->ci);
    cudaFree(d->val);
    cudaFree(d->b);
    cudaFree(d->x);
    memset(d, 0, sizeof *d);
}

/* x back to the host after everything queued has finished. */
static int dev_download(const suite_problem *p, const dev_sys *d, double *x, suite_run *r)
{
    int rc = SUITE_RUN_DONE;
    CK_CUDA("synchronize", cudaDeviceSynchronize());
    CK_CUDA("download x", cudaMemcpy(x, d->x, sizeof(double) * (size_t)p->n, cudaMemcpyDeviceToHost));
done:
    return rc;
}

/* ---- cuSOLVER sparse QR ------------------------------------------------------------- */

static const char *cusolver_status_name(cusolverStatus_t s)
{
    switch (s) {
    case CUSOLVER_STATUS_SUCCESS: return "success";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUSOLVER_STATUS_INVALID_VALUE: return "invalid value";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "arch mismatch";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "internal error";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "matrix type not supported";
    default: return "other error";
    }
}

static double env_double(const char *name, double def)
{
    const char *s = getenv(name);
    return (s && *s) ? atof(s) : def;
}

int suite_run_cusolver_qr(const suite_problem *p, double *x, suite_run *r)
{
    /* Skip rule (an estimate, not a measurement): the QR factor of a sparse matrix fills
     * far beyond A; the paper's cuSOLVER ran out of memory on 69 of 114 systems.  Beyond
     * these sizes (adjustable) it is not attempted. */
    double max_n = env_double("SAP_SUITE_QR_MAX_N", 250000), max_nnz = env_double("SAP_SUITE_QR_MAX_NNZ", 2e7);
    if ((double)p->n > max_n || (double)p->nnz > max_nnz) {
        suite_note(r, "skipped: N=%lld nnz=%lld above the QR limits (N<=%.0f, nnz<=%.0f; SAP_SUITE_QR_MAX_N/_NNZ)",
                   (long long)p->n, (long long)p->nnz, max_n, max_nnz);
        return SUITE_RUN_NA;
    }
    int rc = SUITE_RUN_DONE;
    cusolverSpHandle_t h = NULL;
    cusparseMatDescr_t descr = NULL;
    dev_sys d;
    memset(&d, 0, sizeof d);
    double t0 = suite_now();
    rc = gpu_init(r);
    if (rc != SUITE_RUN_DONE) return rc;
    cusolverStatus_t cs = cusolverSpCreate(&h);
    if (cs != CUSOLVER_STATUS_SUCCESS) {
        suite_note(r, "cusolverSpCreate: %s", cusolver_status_name(cs));
        return SUITE_RUN_FAILED;
    }
    CK_SP("cusparseCreateMatDescr", cusparseCreateMatDescr(&descr));
    CK_SP("cusparseSetMatType", cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_GENERAL));
    CK_SP("cusparseSetMatIndexBase", cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ZERO));
    r->init_s = suite_now() - t0;

    t0 = suite_now();
    rc = dev_upload(p, &d, r);
    if (rc != SUITE_RUN_DONE) goto done;
    int reorder = (int)env_double("SAP_SUITE_QR_REORDER", 1); /* 1: symrcm (the paper's "with RCM") */
    int singularity = -1;
    const double tol = 1e-12;
    cs = cusolverSpDcsrlsvqr(h, (int)p->n, (int)p->nnz, descr, d.val, d.rp, d.ci, d.b, tol, reorder, d.x,
                             &singularity);
    if (cs == CUSOLVER_STATUS_INVALID_VALUE && reorder != 0) {
        suite_note(r, "reorder=%d rejected, retried without reordering", reorder);
        reorder = 0;
        cs = cusolverSpDcsrlsvqr(h, (int)p->n, (int)p->nnz, descr, d.val, d.rp, d.ci, d.b, tol, reorder, d.x,
                                 &singularity);
    }
    if (cs != CUSOLVER_STATUS_SUCCESS) {
        suite_note(r, "cusolverSpDcsrlsvqr: %s", cusolver_status_name(cs));
        rc = cs == CUSOLVER_STATUS_ALLOC_FAILED ? SUITE_RUN_OOM : SUITE_RUN_FAILED;
        goto done;
    }
    rc = dev_download(p, &d, x, r);
    r->time_s = suite_now() - t0;
    if (rc == SUITE_RUN_DONE) {
        suite_note(r, "reorder=%d", reorder);
        if (singularity >= 0) {
            suite_note(r, "singular: |R(%d,%d)| <= %.0e", singularity, singularity, tol);
            rc = SUITE_RUN_FAILED;
        }
    }
done:
    if (rc != SUITE_RUN_DONE && r->time_s == 0) r->time_s = suite_now() - t0;
    dev_free(&d);
    if (descr) cusparseDestroyMatDescr(descr);
    if (h) cusolverSpDestroy(h);
    return rc;
}

/* ---- cuSPARSE ILU(0) + BiCGStab ---------------------------------------------------- */

int suite_run_cusparse_ilu0(const suite_problem *p, double *x, suite_run *r)
{
    int rc = SUITE_RUN_DONE;
    cusparseHandle_t sp = NULL;
    cublasHandle_t bl = NULL;
    cusparseMatDescr_t descr = NULL;
    csrilu02Info_t info = NULL;
    cusparseSpMatDescr_t matA = NULL, matL = NULL, matU = NULL;
    cusparseSpSVDescr_t svL = NULL, svU = NULL;
    cusparseDnVecDescr_t vp = NULL, vs = NULL, vtmp = NULL, vph = NULL, vsh = NULL, vv = NULL, vt = NULL;
    double *ilu = NULL, *dr = NULL, *drh = NULL, *dp = NULL, *dv = NULL, *ds = NULL, *dt = NULL, *dph = NULL,
           *dsh = NULL, *dtmp = NULL;
    void *buf_ilu = NULL, *buf_L = NULL, *buf_U = NULL, *buf_mv = NULL;
    dev_sys d;
    memset(&d, 0, sizeof d);
    const int n = (int)p->n, nnz = (int)p->nnz;
    const double tol = env_double("SAP_SUITE_ILU_TOL", 1e-10);
    const int maxit = (int)env_double("SAP_SUITE_ILU_MAXIT", 1000);

    double t0 = suite_now();
    rc = gpu_init(r);
    if (rc != SUITE_RUN_DONE) return rc;
    CK_SP("cusparseCreate", cusparseCreate(&sp));
    CK_BL("cublasCreate", cublasCreate(&bl));
    r->init_s = suite_now() - t0;

    t0 = suite_now();
    rc = dev_upload(p, &d, r);
    if (rc != SUITE_RUN_DONE) goto done;
    size_t vb = sizeof(double) * (size_t)n;
    CK_CUDA("cudaMalloc ilu", cudaMalloc((void **)&ilu, sizeof(double) * (size_t)(nnz > 0 ? nnz : 1)));
    CK_CUDA("copy ilu", cudaMemcpy(ilu, d.val, sizeof(double) * (size_t)nnz, cudaMemcpyDeviceToDevice));
    double **vecs[] = {&dr, &drh, &dp, &dv, &ds, &dt, &dph, &dsh, &dtmp};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
        CK_CUDA("cudaMalloc vectors", cudaMalloc((void **)vecs[i], vb));
        CK_CUDA("cudaMemset vectors", cudaMemset(*vecs[i], 0, vb));
    }

    /* ILU(0) in place on the copy of the values */
    CK_SP("cusparseCreateMatDescr", cusparseCreateMatDescr(&descr));
    CK_SP("cusparseSetMatType", cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_GENERAL));
    CK_SP("cusparseSetMatIndexBase", cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ZERO));
    CK_SP("cusparseCreateCsrilu02Info", cusparseCreateCsrilu02Info(&info));
    int ilu_bytes = 0;
    CK_SP("csrilu02_bufferSize", cusparseDcsrilu02_bufferSize(sp, n, nnz, descr, ilu, d.rp, d.ci, info, &ilu_bytes));
    CK_CUDA("cudaMalloc ilu buffer", cudaMalloc(&buf_ilu, (size_t)(ilu_bytes > 0 ? ilu_bytes : 1)));
    CK_SP("csrilu02_analysis", cusparseDcsrilu02_analysis(sp, n, nnz, descr, ilu, d.rp, d.ci, info,
                                                          CUSPARSE_SOLVE_POLICY_USE_LEVEL, buf_ilu));
    int zp = -1;
    cusparseStatus_t zs = cusparseXcsrilu02_zeroPivot(sp, info, &zp);
    if (zs == CUSPARSE_STATUS_ZERO_PIVOT) {
        suite_note(r, "ILU(0): structural zero pivot at row %d (diagonal entry missing)", zp);
        rc = SUITE_RUN_FAILED;
        goto done;
    }
    CK_SP("csrilu02", cusparseDcsrilu02(sp, n, nnz, descr, ilu, d.rp, d.ci, info, CUSPARSE_SOLVE_POLICY_USE_LEVEL,
                                        buf_ilu));
    zs = cusparseXcsrilu02_zeroPivot(sp, info, &zp);
    if (zs == CUSPARSE_STATUS_ZERO_PIVOT) {
        suite_note(r, "ILU(0): numerical zero pivot U(%d,%d) = 0", zp, zp);
        rc = SUITE_RUN_FAILED;
        goto done;
    }

    /* triangular solves L (unit lower) and U (upper) on the factors, SpMV on A */
    CK_SP("cusparseCreateCsr A", cusparseCreateCsr(&matA, n, n, nnz, d.rp, d.ci, d.val, CUSPARSE_INDEX_32I,
                                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    CK_SP("cusparseCreateCsr L", cusparseCreateCsr(&matL, n, n, nnz, d.rp, d.ci, ilu, CUSPARSE_INDEX_32I,
                                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    CK_SP("cusparseCreateCsr U", cusparseCreateCsr(&matU, n, n, nnz, d.rp, d.ci, ilu, CUSPARSE_INDEX_32I,
                                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    cusparseFillMode_t lower = CUSPARSE_FILL_MODE_LOWER, upper = CUSPARSE_FILL_MODE_UPPER;
    cusparseDiagType_t unit = CUSPARSE_DIAG_TYPE_UNIT, nonunit = CUSPARSE_DIAG_TYPE_NON_UNIT;
    CK_SP("SetAttribute L fill", cusparseSpMatSetAttribute(matL, CUSPARSE_SPMAT_FILL_MODE, &lower, sizeof lower));
    CK_SP("SetAttribute L diag", cusparseSpMatSetAttribute(matL, CUSPARSE_SPMAT_DIAG_TYPE, &unit, sizeof unit));
    CK_SP("SetAttribute U fill", cusparseSpMatSetAttribute(matU, CUSPARSE_SPMAT_FILL_MODE, &upper, sizeof upper));
    CK_SP("SetAttribute U diag",
          cusparseSpMatSetAttribute(matU, CUSPARSE_SPMAT_DIAG_TYPE, &nonunit, sizeof nonunit));
    CK_SP("CreateDnVec", cusparseCreateDnVec(&vp, n, dp, CUDA_R_64F));
    CK_SP("CreateDnVec", cusparseCreateDnVec(&vs, n, ds, CUDA_R_64F));
    CK_SP("CreateDnVec", cusparseCreateDnVec(&vtmp, n, dtmp, CUDA_R_64F));
    CK_SP("CreateDnVec", cusparseCreateDnVec(&vph, n, dph, CUDA_R_64F));
    CK_SP("CreateDnVec", cusparseCreateDnVec(&vsh, n, dsh, CUDA_R_64F));
    CK_SP("CreateDnVec", cusparseCreateDnVec(&vv, n, dv, CUDA_R_64F));
    CK_SP("CreateDnVec", cusparseCreateDnVec(&vt, n, dt, CUDA_R_64F));
    const double one = 1.0, zero = 0.0;
    const cusparseOperation_t NT = CUSPARSE_OPERATION_NON_TRANSPOSE;
    size_t bytes = 0;
    CK_SP("SpSV_createDescr", cusparseSpSV_createDescr(&svL));
    CK_SP("SpSV_createDescr", cusparseSpSV_createDescr(&svU));
    CK_SP("SpSV_bufferSize L",
          cusparseSpSV_bufferSize(sp, NT, &one, matL, vp, vtmp, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svL, &bytes));
    CK_CUDA("cudaMalloc SpSV L", cudaMalloc(&buf_L, bytes ? bytes : 1));
    CK_SP("SpSV_analysis L",
          cusparseSpSV_analysis(sp, NT, &one, matL, vp, vtmp, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svL, buf_L));
    bytes = 0;
    CK_SP("SpSV_bufferSize U",
          cusparseSpSV_bufferSize(sp, NT, &one, matU, vtmp, vph, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svU, &bytes));
    CK_CUDA("cudaMalloc SpSV U", cudaMalloc(&buf_U, bytes ? bytes : 1));
    CK_SP("SpSV_analysis U",
          cusparseSpSV_analysis(sp, NT, &one, matU, vtmp, vph, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svU, buf_U));
    bytes = 0;
    CK_SP("SpMV_bufferSize",
          cusparseSpMV_bufferSize(sp, NT, &one, matA, vph, &zero, vv, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes));
    CK_CUDA("cudaMalloc SpMV", cudaMalloc(&buf_mv, bytes ? bytes : 1));

    /* BiCGStab, right preconditioned, x0 = 0: r = b */
    double nb = 0;
    CK_BL("nrm2 b", cublasDnrm2(bl, n, d.b, 1, &nb));
    CK_CUDA("copy r", cudaMemcpy(dr, d.b, vb, cudaMemcpyDeviceToDevice));
    CK_CUDA("copy rh", cudaMemcpy(drh, d.b, vb, cudaMemcpyDeviceToDevice));
    double rho_old = 1, alpha = 1, omega = 1, res = nb > 0 ? 1 : 0;
    double it = 0;
    const char *why = NULL;
    if (nb == 0) why = "b = 0";
    for (int k = 1; k <= maxit && !why; k++) {
        double rho = 0;
        CK_BL("dot", cublasDdot(bl, n, drh, 1, dr, 1, &rho));
        if (rho == 0 || !isfinite(rho)) {
            why = "breakdown (rho)";
            break;
        }
        if (k == 1) {
            CK_CUDA("copy p", cudaMemcpy(dp, dr, vb, cudaMemcpyDeviceToDevice));
        } else {
            double beta = (rho / rho_old) * (alpha / omega), mo = -omega;
            CK_BL("axpy", cublasDaxpy(bl, n, &mo, dv, 1, dp, 1)); /* p = p - omega v */
            CK_BL("scal", cublasDscal(bl, n, &beta, dp, 1));      /* p = beta p */
            CK_BL("axpy", cublasDaxpy(bl, n, &one, dr, 1, dp, 1)); /* p = r + beta (p - omega v) */
        }
        /* ph = U^-1 L^-1 p; v = A ph */
        CK_SP("SpSV L", cusparseSpSV_solve(sp, NT, &one, matL, vp, vtmp, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svL));
        CK_SP("SpSV U", cusparseSpSV_solve(sp, NT, &one, matU, vtmp, vph, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svU));
        CK_SP("SpMV", cusparseSpMV(sp, NT, &one, matA, vph, &zero, vv, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, buf_mv));
        double rv = 0;
        CK_BL("dot", cublasDdot(bl, n, drh, 1, dv, 1, &rv));
        if (rv == 0 || !isfinite(rv)) {
            why = "breakdown (r^ . v)";
            break;
        }
        alpha = rho / rv;
        double ma = -alpha;
        CK_CUDA("copy s", cudaMemcpy(ds, dr, vb, cudaMemcpyDeviceToDevice));
        CK_BL("axpy", cublasDaxpy(bl, n, &ma, dv, 1, ds, 1));     /* s = r - alpha v */
        CK_BL("axpy", cublasDaxpy(bl, n, &alpha, dph, 1, d.x, 1)); /* x += alpha ph */
        double ns = 0;
        CK_BL("nrm2", cublasDnrm2(bl, n, ds, 1, &ns));
        it = k - 0.5;
        res = ns / nb;
        if (!isfinite(res)) {
            why = "non-finite residual";
            break;
        }
        if (res <= tol) break;
        /* sh = M^-1 s; t = A sh */
        CK_SP("SpSV L", cusparseSpSV_solve(sp, NT, &one, matL, vs, vtmp, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svL));
        CK_SP("SpSV U", cusparseSpSV_solve(sp, NT, &one, matU, vtmp, vsh, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, svU));
        CK_SP("SpMV", cusparseSpMV(sp, NT, &one, matA, vsh, &zero, vt, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, buf_mv));
        double ts = 0, tt = 0;
        CK_BL("dot", cublasDdot(bl, n, dt, 1, ds, 1, &ts));
        CK_BL("dot", cublasDdot(bl, n, dt, 1, dt, 1, &tt));
        if (tt == 0 || !isfinite(tt)) {
            why = "breakdown (t . t)";
            break;
        }
        omega = ts / tt;
        double mw = -omega;
        CK_BL("axpy", cublasDaxpy(bl, n, &omega, dsh, 1, d.x, 1)); /* x += omega sh */
        CK_CUDA("copy r", cudaMemcpy(dr, ds, vb, cudaMemcpyDeviceToDevice));
        CK_BL("axpy", cublasDaxpy(bl, n, &mw, dt, 1, dr, 1)); /* r = s - omega t */
        double nr = 0;
        CK_BL("nrm2", cublasDnrm2(bl, n, dr, 1, &nr));
        it = k;
        res = nr / nb;
        if (!isfinite(res)) {
            why = "non-finite residual";
            break;
        }
        if (res <= tol) break;
        if (omega == 0) {
            why = "breakdown (omega)";
            break;
        }
        rho_old = rho;
    }
    rc = dev_download(p, &d, x, r);
    r->time_s = suite_now() - t0;
    if (rc == SUITE_RUN_DONE) {
        suite_note(r, "it=%.1f res=%.2e%s%s", it, res, why ? " " : (res <= tol ? "" : " not converged"),
                   why ? why : "");
    }
done:
    if (rc != SUITE_RUN_DONE && r->time_s == 0) r->time_s = suite_now() - t0;
    if (vp) cusparseDestroyDnVec(vp);
    if (vs) cusparseDestroyDnVec(vs);
    if (vtmp) cusparseDestroyDnVec(vtmp);
    if (vph) cusparseDestroyDnVec(vph);
    if (vsh) cusparseDestroyDnVec(vsh);
    if (vv) cusparseDestroyDnVec(vv);
    if (vt) cusparseDestroyDnVec(vt);
    if (svL) cusparseSpSV_destroyDescr(svL);
    if (svU) cusparseSpSV_destroyDescr(svU);
    if (matA) cusparseDestroySpMat(matA);
    if (matL) cusparseDestroySpMat(matL);
    if (matU) cusparseDestroySpMat(matU);
    if (info) cusparseDestroyCsrilu02Info(info);
    if (descr) cusparseDestroyMatDescr(descr);
    cudaFree(buf_ilu), cudaFree(buf_L), cudaFree(buf_U), cudaFree(buf_mv);
    cudaFree(ilu), cudaFree(dr), cudaFree(drh), cudaFree(dp), cudaFree(dv), cudaFree(ds), cudaFree(dt);
    cudaFree(dph), cudaFree(dsh), cudaFree(dtmp);
    dev_free(&d);
    if (bl) cublasDestroy(bl);
    if (sp) cusparseDestroy(sp);
    return rc;
}

/* ---- cuDSS through sap's loader (dlopen) ---------------------------------------------- */

static const char *cudss_status_name(int s)
{
    static const char *names[] = {"success",          "not initialized", "allocation failed", "invalid value",
                                  "not supported",    "execution failed", "internal error",   "IR failed"};
    return (s >= 0 && s < 8) ? names[s] : "unknown status";
}

#define CK_DSS(what, call)                                                                                        \
    do {                                                                                                          \
        int e_ = (call);                                                                                          \
        if (e_ != SAP_CUDSS_STATUS_SUCCESS) {                                                                   \
            suite_note(r, "%s: %s", what, cudss_status_name(e_));                                                 \
            rc = e_ == SAP_CUDSS_STATUS_ALLOC_FAILED ? SUITE_RUN_OOM : SUITE_RUN_FAILED;                        \
            goto done;                                                                                            \
        }                                                                                                         \
    } while (0)

/* One analysis + factorization with matrix type mtype.  *info receives CUDSS_DATA_INFO
 * (0: success; otherwise e.g. a zero pivot or, for SPD, a non-positive pivot). */
static int cudss_factor(const sap_cudss_api *api, sap_cudssHandle_t h, sap_cudssConfig_t cfg, const suite_problem *p,
                        const dev_sys *d, int mtype, sap_cudssData_t *data, sap_cudssMatrix_t *A,
                        sap_cudssMatrix_t B, sap_cudssMatrix_t X, int *info, suite_run *r)
{
    int rc = SUITE_RUN_DONE;
    size_t written = 0;
    *info = 0;
    CK_DSS("cudssDataCreate", api->DataCreate(h, data));
    CK_DSS("cudssMatrixCreateCsr",
           api->MatrixCreateCsr(A, p->n, p->n, p->nnz, d->rp, NULL, d->ci, d->val, CUDA_R_32I, CUDA_R_32I, CUDA_R_64F,
                                mtype, SAP_CUDSS_MVIEW_FULL, SAP_CUDSS_BASE_ZERO));
    CK_DSS("cudssExecute(ANALYSIS)", api->Execute(h, SAP_CUDSS_PHASE_ANALYSIS, cfg, *data, *A, X, B));
    CK_DSS("cudssExecute(FACTORIZATION)", api->Execute(h, SAP_CUDSS_PHASE_FACTORIZATION, cfg, *data, *A, X, B));
    CK_CUDA("synchronize after factorization", cudaDeviceSynchronize());
    CK_DSS("cudssDataGet(INFO)", api->DataGet(h, *data, SAP_CUDSS_DATA_INFO, info, sizeof *info, &written));
done:
    return rc;
}

int suite_run_cudss(const suite_problem *p, double *x, suite_run *r)
{
    int rc = SUITE_RUN_DONE;
    if (p->n > 2147483647 || p->nnz > 2147483647) {
        suite_note(r, "N or nnz exceeds the 32-bit indices used");
        return SUITE_RUN_NA;
    }
    double t0 = suite_now();
    /* sap's loader ($SAP_CUDSS_LIB, else libcudss.so.1 / .so.0; cuDSS 1.x only) */
    const sap_cudss_api *api = sap__cudss_api();
    if (api->major >= 0) suite_note(r, "cuDSS %d.%d.%d", api->major, api->minor, api->patch);
    if (!api->ok) {
        suite_note(r, "%.300s", api->why);
        return SUITE_RUN_NA;
    }
    rc = gpu_init(r);
    if (rc != SUITE_RUN_DONE) return rc;
    sap_cudssHandle_t h = NULL;
    sap_cudssConfig_t cfg = NULL;
    sap_cudssData_t data = NULL;
    sap_cudssMatrix_t A = NULL, B = NULL, X = NULL;
    dev_sys d;
    memset(&d, 0, sizeof d);
    CK_DSS("cudssCreate", api->Create(&h));
    r->init_s = suite_now() - t0;

    t0 = suite_now();
    rc = dev_upload(p, &d, r);
    if (rc != SUITE_RUN_DONE) goto done;
    CK_DSS("cudssConfigCreate", api->ConfigCreate(&cfg));
    CK_DSS("cudssMatrixCreateDn(b)",
           api->MatrixCreateDn(&B, p->n, 1, p->n, d.b, CUDA_R_64F, SAP_CUDSS_LAYOUT_COL_MAJOR));
    CK_DSS("cudssMatrixCreateDn(x)",
           api->MatrixCreateDn(&X, p->n, 1, p->n, d.x, CUDA_R_64F, SAP_CUDSS_LAYOUT_COL_MAJOR));
    const char *use_spd = getenv("SAP_SUITE_CUDSS_SPD");
    int mtype = (p->spd && !(use_spd && use_spd[0] == '0')) ? SAP_CUDSS_MTYPE_SPD : SAP_CUDSS_MTYPE_GENERAL;
    int info = 0;
    rc = cudss_factor(api, h, cfg, p, &d, mtype, &data, &A, B, X, &info, r);
    if (mtype == SAP_CUDSS_MTYPE_SPD && (rc == SUITE_RUN_FAILED || info != 0)) {
        suite_note(r, "SPD factorization failed (info=%d), retried as general", info);
        if (A) api->MatrixDestroy(A);
        if (data) api->DataDestroy(h, data);
        A = NULL, data = NULL;
        mtype = SAP_CUDSS_MTYPE_GENERAL;
        rc = cudss_factor(api, h, cfg, p, &d, mtype, &data, &A, B, X, &info, r);
    }
    if (rc != SUITE_RUN_DONE) goto done;
    if (info != 0) {
        suite_note(r, "factorization info=%d (singular or zero pivot)", info);
        rc = SUITE_RUN_FAILED;
        goto done;
    }
    CK_DSS("cudssExecute(SOLVE)", api->Execute(h, SAP_CUDSS_PHASE_SOLVE, cfg, data, A, X, B));
    rc = dev_download(p, &d, x, r);
    r->time_s = suite_now() - t0;
    if (rc == SUITE_RUN_DONE) {
        int64_t lunnz = 0;
        size_t written = 0;
        if (api->DataGet(h, data, SAP_CUDSS_DATA_LU_NNZ, &lunnz, sizeof lunnz, &written) == 0)
            suite_note(r, "mtype=%s nnz(LU)=%lld", mtype == SAP_CUDSS_MTYPE_SPD ? "spd" : "general",
                       (long long)lunnz);
    }
done:
    if (rc != SUITE_RUN_DONE && r->time_s == 0) r->time_s = suite_now() - t0;
    if (A) api->MatrixDestroy(A);
    if (B) api->MatrixDestroy(B);
    if (X) api->MatrixDestroy(X);
    if (data) api->DataDestroy(h, data);
    if (cfg) api->ConfigDestroy(cfg);
    dev_free(&d);
    if (h) api->Destroy(h);
    /* no dlclose: the child exits right after */
    return rc;
}

#endif /* SAP_HAVE_CUDA */
