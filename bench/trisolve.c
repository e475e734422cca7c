/* trisolve.c -- GPU sparse triangular solves and ILU(0)-GMRES(20) against cuSPARSE.
 *
 * Part 1: the ILU(0) factors L (unit lower) and U of each matrix (host ILU(0), the same
 * factors for everyone) solved as L y = b, U x = y by the device table's triangular solves
 * (methods auto, level, syncfree) and by cusparseSpSV (CSR, 32-bit indices) in the same
 * run, in double and float: analysis time (ours: upload of the host factor + the device
 * analysis, also shown without the upload; cuSPARSE: bufferSize + analysis)
 * and the solve time (median of batches of back-to-back L + U solves, CUDA events), the
 * speedup, and the largest difference between the two solutions; and the device ILU(0)
 * (trsv_kernels.h ilu0: upload, factorization, split, analyses) against the host one.
 * Part 2: GMRES(20) to 1e-8 with our ilu0 preconditioner (factored on the device) against the same Krylov loop
 * (sap_krylov_solve) with a preconditioner built here on cusparseDcsrilu02 + SpSV,
 * registered at run time: setup, solve and iterations.
 *
 * Matrices: gen:poisson3d:n=P (default 100), gen:convdiff3d:n=C (default 108), a random
 * many-level matrix (--random N, default 200000), and G3_circuit, cage11, Andrews from the
 * matrix directory when present.
 *
 * Part 3 (--tables): the seed's Tables 1 and 2, GMRES(20) with BILU (16, 128, 512 blocks),
 * BILUT (ILUT(7, 0.1) on Poisson, (7, 0.01) on convection-diffusion) and RAS (256 and 2048
 * subdomains, overlap 1) on the GPU and (unless --tables-no-cpu) the CPU backend, with
 * the seed's times printed beside ours (trisolve_tables.csv).
 *
 * Usage: trisolve [--out DIR] [--matrix-dir DIR] [--poisson N] [--convdiff N] [--random N]
 *                 [--no-matrices] [--no-gmres] [--gmres-only] [--tables [--tables-no-cpu]] [--batches N]
 * Writes DIR/trisolve.csv and DIR/trisolve.md (default DIR: bench/results of the source tree). */
#define _POSIX_C_SOURCE 200809L
#include "sap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SAP_HAVE_CUDA
int main(void)
{
    printf("bench/trisolve needs the CUDA backend; this build has none.\n");
    return 0;
}
#else

#include "device/cuda/cuda_internal.h"
#include "precond/ilu_factor.h"

#include <cuda_runtime_api.h>
/* csrilu02 is deprecated in CUDA 12/13 but still cuSPARSE's ILU(0) (the anchor) */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cusparse.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_out.h"

#define OK(call)                                                                                     \
    do {                                                                                             \
        sap_status s_ = (call);                                                                      \
        if (s_ < 0) {                                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, sap_status_name(s_));      \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)


static double wtime(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int g_batches = 11;


/* ---- ours ------------------------------------------------------------------------------ */

typedef struct ours_run {
    const sap_backend_ops *ops;
    sap_trsv *L, *U;
    void *b, *y, *x;
} ours_run;

static void run_ours(void *arg)
{
    ours_run *o = arg;
    if (o->ops->trsv->solve(o->L, 1, o->b, o->y) < 0 || o->ops->trsv->solve(o->U, 1, o->y, o->x) < 0) {
        fprintf(stderr, "trsv solve failed\n");
        exit(1);
    }
}

/* ---- cuSPARSE SpSV ------------------------------------------------------------------------- */

typedef struct cusp_tri {
    int32_t *rp, *ci;
    void *val;
    cusparseSpMatDescr_t A;
    cusparseSpSVDescr_t d;
    void *buf;
} cusp_tri;

typedef struct cusp_run {
    cusparseHandle_t h;
    cudaDataType dt;
    cusp_tri L, U;
    cusparseDnVecDescr_t vb, vy, vx;
} cusp_run;

static void cusp_upload(cusp_tri *T, const sap_csr *M, cudaDataType dt, int lower)
{
    const sap_int n = M->nrows, nnz = M->nnz;
    int32_t *rp = malloc(sizeof(int32_t) * (size_t)(n + 1)), *ci = malloc(sizeof(int32_t) * (size_t)(nnz + 1));
    const size_t es = dt == CUDA_R_64F ? 8 : 4;
    void *v = malloc(es * (size_t)(nnz + 1));
    for (sap_int i = 0; i <= n; i++) rp[i] = (int32_t)M->rowptr[i];
    for (sap_int p = 0; p < nnz; p++) {
        ci[p] = (int32_t)M->colind[p];
        if (dt == CUDA_R_64F) ((double *)v)[p] = M->val[p];
        else ((float *)v)[p] = (float)M->val[p];
    }
    CU(cudaMalloc((void **)&T->rp, sizeof(int32_t) * (size_t)(n + 1)));
    CU(cudaMalloc((void **)&T->ci, sizeof(int32_t) * (size_t)(nnz + 1)));
    CU(cudaMalloc(&T->val, es * (size_t)(nnz + 1)));
    CU(cudaMemcpy(T->rp, rp, sizeof(int32_t) * (size_t)(n + 1), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(T->ci, ci, sizeof(int32_t) * (size_t)(nnz + 1), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(T->val, v, es * (size_t)(nnz + 1), cudaMemcpyHostToDevice));
    free(rp);
    free(ci);
    free(v);
    CUSP(cusparseCreateCsr(&T->A, n, n, nnz, T->rp, T->ci, T->val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                           CUSPARSE_INDEX_BASE_ZERO, dt));
    cusparseFillMode_t fm = lower ? CUSPARSE_FILL_MODE_LOWER : CUSPARSE_FILL_MODE_UPPER;
    cusparseDiagType_t dg = lower ? CUSPARSE_DIAG_TYPE_UNIT : CUSPARSE_DIAG_TYPE_NON_UNIT;
    CUSP(cusparseSpMatSetAttribute(T->A, CUSPARSE_SPMAT_FILL_MODE, &fm, sizeof(fm)));
    CUSP(cusparseSpMatSetAttribute(T->A, CUSPARSE_SPMAT_DIAG_TYPE, &dg, sizeof(dg)));
}

/* bufferSize + analysis of one factor (returns seconds, synchronised) */
static double cusp_analyse(cusp_run *c, cusp_tri *T, cusparseDnVecDescr_t in, cusparseDnVecDescr_t out,
                           cudaStream_t s)
{
    const double one = 1.0;
    const float onef = 1.0f;
    const void *alpha = c->dt == CUDA_R_64F ? (const void *)&one : (const void *)&onef;
    CU(cudaStreamSynchronize(s));
    const double t0 = wtime();
    size_t bytes = 0;
    CUSP(cusparseSpSV_createDescr(&T->d));
    CUSP(cusparseSpSV_bufferSize(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, T->A, in, out, c->dt,
                                 CUSPARSE_SPSV_ALG_DEFAULT, T->d, &bytes));
    CU(cudaMalloc(&T->buf, bytes ? bytes : 1));
    CUSP(cusparseSpSV_analysis(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, T->A, in, out, c->dt,
                               CUSPARSE_SPSV_ALG_DEFAULT, T->d, T->buf));
    CU(cudaStreamSynchronize(s));
    return wtime() - t0;
}

static void run_cusp(void *arg)
{
    cusp_run *c = arg;
    const double one = 1.0;
    const float onef = 1.0f;
    const void *alpha = c->dt == CUDA_R_64F ? (const void *)&one : (const void *)&onef;
    CUSP(cusparseSpSV_solve(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, c->L.A, c->vb, c->vy, c->dt,
                            CUSPARSE_SPSV_ALG_DEFAULT, c->L.d));
    CUSP(cusparseSpSV_solve(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, c->U.A, c->vy, c->vx, c->dt,
                            CUSPARSE_SPSV_ALG_DEFAULT, c->U.d));
}

static void cusp_free(cusp_tri *T)
{
    cusparseSpSV_destroyDescr(T->d);
    cusparseDestroySpMat(T->A);
    cudaFree(T->rp);
    cudaFree(T->ci);
    cudaFree(T->val);
    cudaFree(T->buf);
}

/* ---- part 1 ------------------------------------------------------------------------------ */

static FILE *csv;
typedef struct summary {
    char name[64];
    double speed_d, an_ratio_d, an_dev_d;
} summary;
static summary sums[64];
static int nsums;

static void bench_matrix(sap_context *ctx, const char *name, const sap_csr *A)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    cudaStream_t s = (cudaStream_t)sap__cuda_stream(ctx);
    sap_csr *LU = NULL, *L = NULL, *U = NULL;
    const double tf0 = wtime();
    OK(sap__iluk_pattern(ctx, A, 0, &LU));
    OK(sap__ilu_numeric(ctx, LU, 1e-8, NULL));
    OK(sap__lu_split(ctx, LU, &L, &U));
    const double tfac = wtime() - tf0;
    const sap_int n = A->nrows;
    double *hb = malloc(sizeof(double) * (size_t)n), *h1 = malloc(sizeof(double) * (size_t)n),
           *h2 = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) hb[i] = 1.0 + 0.5 * sin((double)i);
    say("\n%s: n = %lld, nnz(A) = %lld, nnz(L) = %lld, nnz(U) = %lld (host ILU(0) %.3f s)\n", name, (long long)n,
        (long long)A->nnz, (long long)L->nnz, (long long)U->nnz, tfac);
    if (ops->trsv->ilu0) { /* the device ILU(0) (pc ilu0 on cuda) on the same pattern, against the host factor */
        sap_csr *S = NULL;
        sap_trsv *dL = NULL, *dU = NULL;
        sap_int sh = 0;
        double tf = 0.0, e = 0.0, m = 0.0;
        double *lu = malloc(sizeof(double) * (size_t)(LU->nnz > 0 ? LU->nnz : 1));
        OK(sap__iluk_pattern(ctx, A, 0, &S));
        const double td0 = wtime();
        OK(ops->trsv->ilu0(ctx, S, 1e-8, SAP_DOUBLE, &dL, &dU, &sh, lu, &tf));
        const double tdev = wtime() - td0;
        if (dL && dU) {
            for (sap_int p = 0; p < LU->nnz; p++) {
                e = fmax(e, fabs(lu[p] - LU->val[p]));
                m = fmax(m, fabs(LU->val[p]));
            }
            say("  device ILU(0): upload + factorization %.2f ms, with the L/U split and both analyses %.2f ms "
                "(host ILU(0) + split %.1f ms, no analysis); %lld pivots shifted; max |device - host| / max |host| = "
                "%.1e\n", 1e3 * tf, 1e3 * tdev, 1e3 * tfac, (long long)sh, e / (m > 0 ? m : 1.0));
            ops->trsv->destroy(dL);
            ops->trsv->destroy(dU);
        } else {
            say("  device ILU(0): declined the pattern (unexpected)\n");
        }
        free(lu);
        sap_csr_destroy(S);
    }
    say("  %-6s %-9s %7s %7s %12s %10s %10s %12s %10s %8s %8s %8s %9s\n", "prec", "method", "lev L", "lev U",
        "analysis ms", "upload ms", "solve us", "cuSP an. ms", "cuSP us", "speedup", "an.ratio", "an.dev", "max diff");
    summary *sm = nsums < 64 ? &sums[nsums++] : &sums[63];
    snprintf(sm->name, sizeof(sm->name), "%s", name);
    sm->speed_d = sm->an_ratio_d = sm->an_dev_d = 0;
    for (int pi = 0; pi < 2; pi++) {
        const sap_precision prec = pi ? SAP_FLOAT : SAP_DOUBLE;
        const cudaDataType dt = pi ? CUDA_R_32F : CUDA_R_64F;
        sap_vec vb, vy, vx;
        OK(ops->vec_create(ctx, n, prec, &vb));
        OK(ops->vec_create(ctx, n, prec, &vy));
        OK(ops->vec_create(ctx, n, prec, &vx));
        OK(ops->vec_upload(ctx, &vb, hb));
        /* cuSPARSE */
        cusp_run c;
        memset(&c, 0, sizeof(c));
        OK(sap__cuda_cusparse(ctx, (void **)&c.h));
        c.dt = dt;
        cusp_upload(&c.L, L, dt, 1);
        cusp_upload(&c.U, U, dt, 0);
        CUSP(cusparseCreateDnVec(&c.vb, n, vb.data, dt));
        CUSP(cusparseCreateDnVec(&c.vy, n, vy.data, dt));
        CUSP(cusparseCreateDnVec(&c.vx, n, vx.data, dt));
        const double tca = cusp_analyse(&c, &c.L, c.vb, c.vy, s) + cusp_analyse(&c, &c.U, c.vy, c.vx, s);
        const double tcs = bench_time_calls(s, run_cusp, &c, g_batches, 2.0);
        OK(ops->vec_download(ctx, &vx, h1));
        for (int m = 0; m < 3; m++) {
            const sap_trsv_method meth = m == 0 ? SAP_TRSV_AUTO : m == 1 ? SAP_TRSV_LEVEL : SAP_TRSV_SYNCFREE;
            ours_run o = {ops, NULL, NULL, vb.data, vy.data, vx.data};
            OK(ops->synchronize(ctx));
            const double t0 = wtime();
            OK(ops->trsv->analyze(ctx, L, 0, 1, prec, meth, &o.L));
            OK(ops->trsv->analyze(ctx, U, 1, 0, prec, meth, &o.U));
            OK(ops->synchronize(ctx));
            const double toa = wtime() - t0, tup = o.L->t_upload + o.U->t_upload;
            const double tdev = toa - tup > 1e-9 ? toa - tup : 1e-9;
            OK(ops->set(ctx, &vx, 0.0));
            const double tos = bench_time_calls(s, run_ours, &o, g_batches, 2.0);
            OK(ops->vec_download(ctx, &vx, h2));
            double e = 0.0, sc = 0.0;
            for (sap_int i = 0; i < n; i++) {
                e = fmax(e, fabs(h1[i] - h2[i]));
                sc = fmax(sc, fabs(h1[i]));
            }
            e /= sc > 0 ? sc : 1.0;
            const char *mn = m == 0 ? (o.L->method == SAP_TRSV_LEVEL ? "auto:lev" : "auto:sf") : m == 1 ? "level" : "syncfree";
            say("  %-6s %-9s %7lld %7lld %12.3f %10.3f %10.1f %12.3f %10.1f %7.2fx %7.2fx %7.2fx %9.1e\n",
                pi ? "float" : "double", mn, (long long)o.L->nlevels, (long long)o.U->nlevels, toa * 1e3, tup * 1e3,
                tos * 1e6, tca * 1e3, tcs * 1e6, tcs / tos, tca / toa, tca / tdev, e);
            fprintf(csv, "%s,%lld,%lld,%s,%s,%lld,%lld,%.6e,%.6e,%.6e,%.6e,%.3e,%.6e\n", name, (long long)n,
                    (long long)(L->nnz + U->nnz), pi ? "float" : "double", mn, (long long)o.L->nlevels,
                    (long long)o.U->nlevels, toa, tos, tca, tcs, e, tup);
            if (m == 0 && pi == 0) {
                sm->speed_d = tcs / tos;
                sm->an_ratio_d = tca / toa;
                sm->an_dev_d = tca / tdev;
            }
            ops->trsv->destroy(o.L);
            ops->trsv->destroy(o.U);
        }
        cusparseDestroyDnVec(c.vb);
        cusparseDestroyDnVec(c.vy);
        cusparseDestroyDnVec(c.vx);
        cusp_free(&c.L);
        cusp_free(&c.U);
        ops->vec_destroy(ctx, &vb);
        ops->vec_destroy(ctx, &vy);
        ops->vec_destroy(ctx, &vx);
    }
    free(hb);
    free(h1);
    free(h2);
    sap_csr_destroy(LU);
    sap_csr_destroy(L);
    sap_csr_destroy(U);
}

/* ---- part 2: a preconditioner on cuSPARSE's csrilu02 + SpSV --------------------------------- */

typedef struct csp_pc {
    cusparseHandle_t h;
    int32_t n, nnz;
    int32_t *rp, *ci;
    double *val, *tmp;
    cusparseSpMatDescr_t L, U;
    cusparseSpSVDescr_t dl, du;
    void *bl, *bu;
    cusparseDnVecDescr_t vr, vt, vz;
} csp_pc;

static sap_status csp_create(sap_precond *P)
{
    P->data = calloc(1, sizeof(csp_pc));
    return P->data ? SAP_OK : SAP_ERR_OUT_OF_MEMORY;
}

static void csp_destroy(sap_precond *P)
{
    csp_pc *c = P->data;
    if (!c) return;
    if (c->dl) cusparseSpSV_destroyDescr(c->dl);
    if (c->du) cusparseSpSV_destroyDescr(c->du);
    if (c->L) cusparseDestroySpMat(c->L);
    if (c->U) cusparseDestroySpMat(c->U);
    if (c->vr) cusparseDestroyDnVec(c->vr);
    if (c->vt) cusparseDestroyDnVec(c->vt);
    if (c->vz) cusparseDestroyDnVec(c->vz);
    cudaFree(c->rp);
    cudaFree(c->ci);
    cudaFree(c->val);
    cudaFree(c->tmp);
    cudaFree(c->bl);
    cudaFree(c->bu);
    free(c);
    P->data = NULL;
}

static sap_status csp_numeric(sap_precond *P, const sap_csr *A)
{
    csp_pc *c = P->data;
    sap_context *ctx = P->ctx;
    cudaStream_t s = (cudaStream_t)sap__cuda_stream(ctx);
    OK(sap__cuda_cusparse(ctx, (void **)&c->h));
    const sap_int n = A->nrows, nnz = A->nnz;
    c->n = (int32_t)n;
    c->nnz = (int32_t)nnz;
    int32_t *rp = malloc(sizeof(int32_t) * (size_t)(n + 1)), *ci = malloc(sizeof(int32_t) * (size_t)nnz);
    for (sap_int i = 0; i <= n; i++) rp[i] = (int32_t)A->rowptr[i];
    for (sap_int p = 0; p < nnz; p++) ci[p] = (int32_t)A->colind[p];
    CU(cudaMalloc((void **)&c->rp, sizeof(int32_t) * (size_t)(n + 1)));
    CU(cudaMalloc((void **)&c->ci, sizeof(int32_t) * (size_t)nnz));
    CU(cudaMalloc((void **)&c->val, sizeof(double) * (size_t)nnz));
    CU(cudaMalloc((void **)&c->tmp, sizeof(double) * (size_t)n));
    CU(cudaMemcpy(c->rp, rp, sizeof(int32_t) * (size_t)(n + 1), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(c->ci, ci, sizeof(int32_t) * (size_t)nnz, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(c->val, A->val, sizeof(double) * (size_t)nnz, cudaMemcpyHostToDevice));
    free(rp);
    free(ci);
    /* csrilu02 in place */
    cusparseMatDescr_t md;
    csrilu02Info_t info;
    int bs = 0;
    void *buf = NULL;
    CUSP(cusparseCreateMatDescr(&md));
    CUSP(cusparseCreateCsrilu02Info(&info));
    CUSP(cusparseDcsrilu02_bufferSize(c->h, c->n, c->nnz, md, c->val, c->rp, c->ci, info, &bs));
    CU(cudaMalloc(&buf, bs > 0 ? (size_t)bs : 1));
    CUSP(cusparseDcsrilu02_analysis(c->h, c->n, c->nnz, md, c->val, c->rp, c->ci, info,
                                    CUSPARSE_SOLVE_POLICY_USE_LEVEL, buf));
    CUSP(cusparseDcsrilu02(c->h, c->n, c->nnz, md, c->val, c->rp, c->ci, info, CUSPARSE_SOLVE_POLICY_USE_LEVEL, buf));
    CU(cudaStreamSynchronize(s));
    cudaFree(buf);
    cusparseDestroyCsrilu02Info(info);
    cusparseDestroyMatDescr(md);
    /* SpSV of L (unit lower) and U on the combined factor */
    cusparseFillMode_t lo = CUSPARSE_FILL_MODE_LOWER, up = CUSPARSE_FILL_MODE_UPPER;
    cusparseDiagType_t un = CUSPARSE_DIAG_TYPE_UNIT, nu = CUSPARSE_DIAG_TYPE_NON_UNIT;
    CUSP(cusparseCreateCsr(&c->L, n, n, nnz, c->rp, c->ci, c->val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                           CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    CUSP(cusparseCreateCsr(&c->U, n, n, nnz, c->rp, c->ci, c->val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                           CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    CUSP(cusparseSpMatSetAttribute(c->L, CUSPARSE_SPMAT_FILL_MODE, &lo, sizeof(lo)));
    CUSP(cusparseSpMatSetAttribute(c->L, CUSPARSE_SPMAT_DIAG_TYPE, &un, sizeof(un)));
    CUSP(cusparseSpMatSetAttribute(c->U, CUSPARSE_SPMAT_FILL_MODE, &up, sizeof(up)));
    CUSP(cusparseSpMatSetAttribute(c->U, CUSPARSE_SPMAT_DIAG_TYPE, &nu, sizeof(nu)));
    CUSP(cusparseCreateDnVec(&c->vr, n, c->tmp, CUDA_R_64F)); /* re-pointed at apply */
    CUSP(cusparseCreateDnVec(&c->vt, n, c->tmp, CUDA_R_64F));
    CUSP(cusparseCreateDnVec(&c->vz, n, c->tmp, CUDA_R_64F));
    const double one = 1.0;
    size_t b1 = 0, b2 = 0;
    CUSP(cusparseSpSV_createDescr(&c->dl));
    CUSP(cusparseSpSV_createDescr(&c->du));
    CUSP(cusparseSpSV_bufferSize(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, c->L, c->vr, c->vt, CUDA_R_64F,
                                 CUSPARSE_SPSV_ALG_DEFAULT, c->dl, &b1));
    CUSP(cusparseSpSV_bufferSize(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, c->U, c->vt, c->vz, CUDA_R_64F,
                                 CUSPARSE_SPSV_ALG_DEFAULT, c->du, &b2));
    CU(cudaMalloc(&c->bl, b1 ? b1 : 1));
    CU(cudaMalloc(&c->bu, b2 ? b2 : 1));
    CUSP(cusparseSpSV_analysis(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, c->L, c->vr, c->vt, CUDA_R_64F,
                               CUSPARSE_SPSV_ALG_DEFAULT, c->dl, c->bl));
    CUSP(cusparseSpSV_analysis(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, c->U, c->vt, c->vz, CUDA_R_64F,
                               CUSPARSE_SPSV_ALG_DEFAULT, c->du, c->bu));
    CU(cudaStreamSynchronize(s));
    return SAP_OK;
}

static sap_status csp_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    csp_pc *c = P->data;
    const double one = 1.0;
    CUSP(cusparseDnVecSetValues(c->vr, r->data));
    CUSP(cusparseDnVecSetValues(c->vz, z->data));
    CUSP(cusparseSpSV_solve(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, c->L, c->vr, c->vt, CUDA_R_64F,
                            CUSPARSE_SPSV_ALG_DEFAULT, c->dl));
    CUSP(cusparseSpSV_solve(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, c->U, c->vt, c->vz, CUDA_R_64F,
                            CUSPARSE_SPSV_ALG_DEFAULT, c->du));
    return SAP_OK;
}

static const sap_precond_type csp_type = {
    .name = "cusparse-ilu0",
    .help = "bench only: cusparseDcsrilu02 + SpSV",
    .create = csp_create,
    .setup_numeric = csp_numeric,
    .apply = csp_apply,
    .destroy = csp_destroy,
};

typedef struct one_run {
    double setup, solve, per_apply, iters, residual;
    double per_spmv, vector_per_it; /* with sync_timing: a SpMV, the vector work an iteration */
    sap_status st;
} one_run;
static one_run gmres_run(sap_context *ctx, const sap_csr *A, const char *spec, int sync_timing);

static void bench_gmres(sap_context *ctx, const char *name, const sap_csr *A, FILE *gcsv)
{
    const char *pcs[2] = {"ilu0", "cusparse-ilu0"};
    double tt[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        const one_run r = gmres_run(ctx, A, pcs[k], 0);
        tt[k] = r.setup + r.solve;
        say("  %-14s setup %8.3f s  solve %8.3f s  total %8.3f s  %6.0f iterations  residual %.2e  %s\n", pcs[k], r.setup,
            r.solve, tt[k], r.iters, r.residual, sap_status_name(r.st));
        fprintf(gcsv, "%s,%lld,%s,%.6e,%.6e,%.0f,%.3e,%s\n", name, (long long)A->nrows, pcs[k], r.setup, r.solve, r.iters,
                r.residual, sap_status_name(r.st));
    }
    say("  ours / cuSPARSE time to solution: %.2f (target <= 0.5)\n", tt[0] / tt[1]);
    /* where an iteration's time goes: the same solves with a device synchronization around
     * each SpMV and preconditioner application (slower in all; the parts are exact) */
    for (int k = 0; k < 2; k++) {
        const one_run r = gmres_run(ctx, A, pcs[k], 1);
        say("  %-14s timed parts: %.1f us an iteration = apply %.1f us + SpMV %.1f us + vector work %.1f us "
            "(solve %.3f s synchronized)\n", pcs[k], r.iters > 0 ? 1e6 * r.solve / r.iters : 0.0, 1e6 * r.per_apply,
            1e6 * r.per_spmv, 1e6 * r.vector_per_it, r.solve);
    }
}

/* ---- part 3: the seed's Tables 1 and 2 ------------------------------------------------------ */

/* The seed's numbers (Li and Saad, Tables 1 and 2): solve seconds CPU, GPU, and seconds of
 * one preconditioner application CPU, GPU. */
typedef struct seed_row {
    const char *spec_poisson, *spec_convdiff;
    double p_cpu, p_gpu, p_pcpu, p_pgpu; /* Table 1 (Poisson 1M) */
    double a_cpu, a_gpu, a_pcpu, a_pgpu; /* Table 2 (atmosmodd) */
} seed_row;
static const seed_row seed_rows[] = {
    {"bilu:16", "bilu:16", 20.12, 2.53, 0.0197, 0.0057, 20.61, 2.63, 0.0248, 0.0072},
    {"bilu:128", "bilu:128", 20.2, 2.39, 0.0192, 0.0055, 23.94, 2.80, 0.0244, 0.0072},
    {"bilu:512", "bilu:512", 22.76, 2.70, 0.0188, 0.0052, 24.13, 2.72, 0.0241, 0.0070},
    {"bilut:16,7,0.1", "bilut:16,7,0.01", 14.85, 2.38, 0.0241, 0.010, 14.70, 2.37, 0.028669, 0.0114},
    {"bilut:128,7,0.1", "bilut:128,7,0.01", 14.56, 2.30, 0.0239, 0.011, 16.58, 2.43, 0.028380, 0.0100},
    {"bilut:512,7,0.1", "bilut:512,7,0.01", 18.59, 2.71, 0.0234, 0.010, 19.91, 2.64, 0.027945, 0.0113},
    {"ras:256,1", "ras:256,1", 18.70, 2.16, 0.0306, 0.0051, 23.45, 2.66, 0.0428, 0.0072},
    {"ras:2048,1", "ras:2048,1", 22.03, 2.35, 0.0390, 0.0056, 25.75, 3.28, 0.0546, 0.0083},
};

static one_run gmres_run(sap_context *ctx, const sap_csr *A, const char *spec, int sync_timing)
{
    one_run r = {0, 0, 0, 0, 0, 0, 0, SAP_OK};
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0;
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_krylov_options opt;
    sap_krylov_options_init(&opt);
    opt.type = SAP_KRYLOV_GMRES;
    opt.param = 20;
    opt.tol = 1e-8;
    opt.maxit = 5000;
    opt.sync_timing = sync_timing; /* 1: exact time per preconditioner application */
    OK(sap_matrix_create(ctx, A, NULL, &M));
    OK(sap_krylov_create(ctx, &opt, &K));
    OK(sap_precond_create(ctx, spec, &P));
    const double t0 = wtime();
    r.st = sap_precond_setup_numeric(P, A);
    OK(sap__ops(ctx)->synchronize(ctx));
    const double t1 = wtime();
    sap_krylov_stats ks;
    memset(&ks, 0, sizeof(ks));
    if (r.st >= 0) r.st = sap_krylov_solve(K, M, P, b, x, &ks);
    r.setup = t1 - t0;
    r.solve = wtime() - t1;
    r.iters = ks.iterations;
    r.residual = ks.true_residual;
    r.per_apply = ks.precond_count > 0 ? ks.time_precond / (double)ks.precond_count : 0.0;
    r.per_spmv = ks.spmv_count > 0 ? ks.time_spmv / (double)ks.spmv_count : 0.0;
    r.vector_per_it = ks.iterations > 0 ? ks.time_vector / ks.iterations : 0.0;
    sap_precond_destroy(P);
    sap_krylov_destroy(K);
    sap_matrix_destroy(M);
    free(b);
    free(x);
    return r;
}

static void seed_tables(sap_context *gpu, int with_cpu, sap_csr *const *mats, FILE *tcsv)
{
    sap_context *cpu = NULL;
    if (with_cpu) {
        sap_context_config cfg;
        sap_context_config_init(&cfg);
        cfg.backend = SAP_BACKEND_CPU;
        cfg.print_level = SAP_PRINT_SILENT;
        OK(sap_context_create(&cpu, &cfg));
    }
    for (int t = 0; t < 2; t++) {
        say("\nTable %d (%s): GMRES(20) to 1e-8, b = 1; ours (GPU and CPU backend, all host cores) beside the seed's\n",
            t + 1, t ? "convection-diffusion, the seed: atmosmodd" : "3D Poisson, the seed: N = 1,000,000");
        say("  %-18s %6s %9s %9s %9s %8s %10s %10s | %9s %9s %10s %10s\n", "precond", "iters", "setup s", "GPU s",
            "CPU s", "speedup", "GPU M^-1 s", "CPU M^-1 s", "seed CPU", "seed GPU", "seed M CPU", "seed M GPU");
        for (size_t k = 0; k < sizeof(seed_rows) / sizeof(seed_rows[0]); k++) {
            const seed_row *sr = &seed_rows[k];
            const char *spec = t ? sr->spec_convdiff : sr->spec_poisson;
            one_run g = gmres_run(gpu, mats[t], spec, 1), c = {0, 0, 0, 0, 0, 0, 0, SAP_OK};
            if (cpu) c = gmres_run(cpu, mats[t], spec, 1);
            say("  %-18s %6.0f %9.3f %9.3f %9.3f %7.2fx %10.2e %10.2e | %9.2f %9.2f %10.4f %10.4f %s\n", spec, g.iters,
                g.setup, g.solve, c.solve, c.solve > 0 ? c.solve / g.solve : 0.0, g.per_apply, c.per_apply,
                t ? sr->a_cpu : sr->p_cpu, t ? sr->a_gpu : sr->p_gpu, t ? sr->a_pcpu : sr->p_pcpu,
                t ? sr->a_pgpu : sr->p_pgpu, g.st == SAP_OK ? "" : sap_status_name(g.st));
            fprintf(tcsv, "%d,%s,%.0f,%.6e,%.6e,%.6e,%.6e,%.6e,%s,%s\n", t + 1, spec, g.iters, g.setup, g.solve, c.solve,
                    g.per_apply, c.per_apply, sap_status_name(g.st), sap_status_name(c.st));
        }
    }
    sap_context_destroy(cpu);
}

/* a random lower-heavy sparse matrix with many thin levels: row i couples to a few random
 * earlier rows within a window (and a few later ones), diagonally dominant */
static sap_csr *random_many_levels(sap_context *ctx, sap_int n)
{
    sap_csr *A = NULL;
    const int per = 4;
    OK(sap_csr_create(ctx, n, n, n * (2 * per + 1), &A));
    uint64_t st = 88172645463325252ULL;
    sap_int nz = 0;
    A->rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int cols[16];
        int m = 0;
        for (int k = 0; k < 2 * per; k++) {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            const sap_int w = 1 + (sap_int)(st % 64);
            const sap_int j = k < per ? i - w : i + w;
            if (j >= 0 && j < n) cols[m++] = j;
        }
        cols[m++] = i;
        for (int a = 1; a < m; a++) /* sort, drop duplicates */
            for (int c = a; c > 0 && cols[c - 1] > cols[c]; c--) {
                const sap_int t = cols[c];
                cols[c] = cols[c - 1];
                cols[c - 1] = t;
            }
        for (int a = 0; a < m; a++) {
            if (a && cols[a] == cols[a - 1]) continue;
            A->colind[nz] = cols[a];
            A->val[nz++] = cols[a] == i ? 2.0 * per + 1.0 : -1.0;
        }
        A->rowptr[i + 1] = nz;
    }
    A->nnz = nz;
    return A;
}

int main(int argc, char **argv)
{
    const char *outdir = SAP_SOURCE_DIR "/bench/results";
    const char *matdir = getenv("SAP_MATRIX_DIR");
    if (!matdir || !*matdir) matdir = SAP_MATRIX_DIR_DEFAULT;
    int poisson = 100, convdiff = 108, no_matrices = 0, no_gmres = 0, tables = 0, tables_cpu = 1, gmres_only = 0;
    sap_int nrand = 200000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) outdir = argv[++i];
        else if (!strcmp(argv[i], "--matrix-dir") && i + 1 < argc) matdir = argv[++i];
        else if (!strcmp(argv[i], "--poisson") && i + 1 < argc) poisson = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--convdiff") && i + 1 < argc) convdiff = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--random") && i + 1 < argc) nrand = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--no-matrices")) no_matrices = 1;
        else if (!strcmp(argv[i], "--no-gmres")) no_gmres = 1;
        else if (!strcmp(argv[i], "--gmres-only")) gmres_only = no_matrices = 1;
        else if (!strcmp(argv[i], "--tables")) tables = 1;
        else if (!strcmp(argv[i], "--tables-no-cpu")) tables_cpu = 0;
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) g_batches = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--out DIR] [--matrix-dir DIR] [--poisson N] [--convdiff N] [--random N] "
                            "[--no-matrices] [--no-gmres] [--gmres-only] [--tables [--tables-no-cpu]] [--batches N]\n", argv[0]);
            return 2;
        }
    }
    if (g_batches < 1) g_batches = 1;
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CUDA;
    cfg.print_level = getenv("SAP_TRSV_TRACE") ? SAP_PRINT_WARNINGS : SAP_PRINT_SILENT; /* the analysis trace logs */
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) {
        printf("bench/trisolve: no CUDA device; nothing to measure.\n");
        return 0;
    }
    OK(sap__precond_register(&csp_type));
    mkdir(outdir, 0755);
    char path[1024];
    snprintf(path, sizeof(path), "%s/trisolve.csv", outdir);
    csv = fopen(path, "w");
    snprintf(path, sizeof(path), "%s/trisolve_gmres.csv", outdir);
    FILE *gcsv = fopen(path, "w");
    if (!csv || !gcsv) {
        fprintf(stderr, "cannot write under %s\n", outdir);
        return 1;
    }
    fprintf(csv, "matrix,n,nnz_lu,precision,method,levels_l,levels_u,ours_analysis_s,ours_solve_s,cusparse_analysis_s,"
                 "cusparse_solve_s,max_rel_diff,ours_upload_s\n");
    fprintf(gcsv, "matrix,n,precond,setup_s,solve_s,iterations,true_residual,status\n");
    char cmd[1024] = "";
    for (int i = 0; i < argc; i++) {
        strncat(cmd, argv[i], sizeof(cmd) - strlen(cmd) - 2);
        strncat(cmd, " ", sizeof(cmd) - strlen(cmd) - 1);
    }
    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    const char *commit = getenv("SAP_COMMIT");
    say("sap bench/trisolve  %s\ndevice: %s\ncommit: %s\ncommand: %s\n", date, sap_context_device_name(ctx),
        commit ? commit : "unknown", cmd);
    say("solve = L y = b then U x = y (ILU(0) factors); speedup = cuSPARSE SpSV time / ours; an.ratio = cuSPARSE "
        "analysis / ours (ours includes the upload of the host factors, 'upload ms'; cuSPARSE's factors are\n"
        "already on the device); an.dev = cuSPARSE analysis / our analysis without the upload\n");

    char spec[128];
    const char *names[8];
    sap_csr *mats[8];
    int nm = 0;
    snprintf(spec, sizeof(spec), "gen:poisson3d:n=%d", poisson);
    OK(sap_matrix_load(ctx, spec, NULL, &mats[nm]));
    names[nm++] = "poisson3d";
    snprintf(spec, sizeof(spec), "gen:convdiff3d:n=%d", convdiff);
    OK(sap_matrix_load(ctx, spec, NULL, &mats[nm]));
    names[nm++] = "convdiff3d";
    mats[nm] = random_many_levels(ctx, nrand);
    names[nm++] = "random-levels";
    static const char *coll[] = {"G3_circuit", "cage11", "Andrews"};
    for (int k = 0; k < 3 && !no_matrices; k++) {
        char p[1024];
        snprintf(p, sizeof(p), "%s/%s.mtx.gz", matdir, coll[k]);
        if (sap_matrix_load(ctx, p, NULL, &mats[nm]) == SAP_OK) names[nm++] = coll[k];
        else say("(%s not readable: skipped)\n", p);
    }
    for (int k = 0; k < nm && !gmres_only; k++) bench_matrix(ctx, names[k], mats[k]);
    if (!no_gmres) {
        say("\nILU(0)-GMRES(20) to 1e-8 (b = 1, x0 = 0), the same sap_krylov_solve loop, double:\n");
        for (int k = 0; k < 2; k++) {
            say("%s:\n", names[k]);
            bench_gmres(ctx, names[k], mats[k], gcsv);
        }
    }
    if (tables) {
        snprintf(path, sizeof(path), "%s/trisolve_tables.csv", outdir);
        FILE *tcsv = fopen(path, "w");
        if (tcsv) {
            fprintf(tcsv, "table,precond,iterations,setup_s,gpu_solve_s,cpu_solve_s,gpu_apply_s,cpu_apply_s,gpu_status,"
                          "cpu_status\n");
            seed_tables(ctx, tables_cpu, mats, tcsv);
            fclose(tcsv);
        }
    }
    double lg = 0.0, med[64];
    for (int k = 0; k < nsums; k++) {
        med[k] = sums[k].speed_d;
        lg += log(sums[k].speed_d > 0 ? sums[k].speed_d : 1e-9);
    }
    qsort(med, (size_t)nsums, sizeof(double), bench_cmp_double);
    say("\ndouble, auto method: median speedup over cusparseSpSV %.2fx (target >= 3), geometric mean %.2fx\n",
        nsums ? med[nsums / 2] : 0.0, nsums ? exp(lg / nsums) : 0.0);
    for (int k = 0; k < nsums; k++)
        say("  %-14s solve speedup %.2fx, analysis ratio (cuSPARSE / ours) %.2fx, without the upload %.2fx\n",
            sums[k].name, sums[k].speed_d, sums[k].an_ratio_d, sums[k].an_dev_d);
    snprintf(path, sizeof(path), "%s/trisolve.md", outdir);
    FILE *md = fopen(path, "w");
    if (md) {
        fprintf(md, "# GPU triangular solves and ILU(0)-GMRES(20) vs cuSPARSE (bench/trisolve)\n\n");
        fprintf(md, "- date: %s\n- device: %s\n- commit: %s\n- command: `%s`\n\n", date, sap_context_device_name(ctx),
                commit ? commit : "unknown", cmd);
        fprintf(md, "Tables: trisolve.csv (every method and precision), trisolve_gmres.csv.\n\n```\n%s```\n",
                bench_out_text());
        fclose(md);
    }
    fclose(csv);
    fclose(gcsv);
    for (int k = 0; k < nm; k++) sap_csr_destroy(mats[k]);
    bench_out_free();
    sap_context_destroy(ctx);
    return 0;
}
#endif
