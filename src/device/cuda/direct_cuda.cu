/* direct_cuda.cu -- the cuda backend's sparse direct solver (device/direct_kernels.h):
 * NVIDIA cuDSS, loaded at run time with dlopen (never linked, never required).
 *
 * Where it is found: the file named by $SAP_CUDSS_LIB (e.g. the library of PyPI's
 * nvidia-cudss-cu13 under .../site-packages/nvidia/cu13/lib/, as bench/suite), else
 * "libcudss.so.1" then "libcudss.so.0" on the loader's path.  Only cuDSS 1.x is used
 * (the declarations of cudss_abi.h); another version is reported as not loadable.  The
 * library is loaded once per process (thread-safe) and never unloaded.
 *
 * Per analysis: a cuDSS handle bound to the context's stream, the CSR (32-bit indices) in
 * device memory from the context's pool, ANALYSIS (reordering + symbolic factorization);
 * factor: the values uploaded, FACTORIZATION, CUDSS_DATA_INFO checked (a non-zero info
 * is a zero pivot: singular; for an SPD matrix type a non-positive pivot, and the LU is
 * redone as a general matrix); solve: B uploaded, SOLVE, X downloaded. */
#include "device/cuda/cuda_internal.h"
#include "device/cuda/cudss_abi.h"
#include "device/direct_kernels.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The api of one library file (a.ok = 0 and a.why when it cannot be used). */
static sap_cudss_api load_one(const char *name)
{
    sap_cudss_api a;
    memset(&a, 0, sizeof(a));
    a.major = a.minor = a.patch = -1;
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        snprintf(a.why, sizeof(a.why), "cuDSS not loadable (%s): %.120s; set SAP_CUDSS_LIB to libcudss.so", name,
                 err ? err : "?");
        return a;
    }
    struct {
        void **fn;
        const char *name;
    } syms[] = {{(void **)&a.Create, "cudssCreate"},
                {(void **)&a.Destroy, "cudssDestroy"},
                {(void **)&a.SetStream, "cudssSetStream"},
                {(void **)&a.GetProperty, "cudssGetProperty"},
                {(void **)&a.ConfigCreate, "cudssConfigCreate"},
                {(void **)&a.ConfigDestroy, "cudssConfigDestroy"},
                {(void **)&a.DataCreate, "cudssDataCreate"},
                {(void **)&a.DataDestroy, "cudssDataDestroy"},
                {(void **)&a.DataGet, "cudssDataGet"},
                {(void **)&a.MatrixCreateCsr, "cudssMatrixCreateCsr"},
                {(void **)&a.MatrixCreateDn, "cudssMatrixCreateDn"},
                {(void **)&a.MatrixDestroy, "cudssMatrixDestroy"},
                {(void **)&a.Execute, "cudssExecute"}};
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        *syms[i].fn = dlsym(lib, syms[i].name);
        if (!*syms[i].fn) {
            snprintf(a.why, sizeof(a.why), "the cuDSS library %s lacks %s", name, syms[i].name);
            return a;
        }
    }
    a.GetProperty(MAJOR_VERSION, &a.major);
    a.GetProperty(MINOR_VERSION, &a.minor);
    a.GetProperty(PATCH_LEVEL, &a.patch);
    if (a.major != 1) {
        snprintf(a.why, sizeof(a.why), "cuDSS %d.%d.%d found (%s); sap uses the cuDSS 1.x interface", a.major,
                 a.minor, a.patch, name);
        return a;
    }
    a.ok = 1;
    return a;
}

/* $SAP_CUDSS_LIB, else the sonames of cuDSS 1.x and 0.x: the first usable one. */
static sap_cudss_api load(void)
{
    const char *env = getenv("SAP_CUDSS_LIB");
    if (env && env[0]) return load_one(env);
    sap_cudss_api a = load_one("libcudss.so.1");
    if (!a.ok) {
        sap_cudss_api b = load_one("libcudss.so.0");
        if (b.ok || strstr(a.why, "not loadable")) a = b;
    }
    return a;
}

/* loaded at the first use; C++ initialises the static once */
extern "C" const sap_cudss_api *sap__cudss_api(void)
{
    static const sap_cudss_api a = load();
    return &a;
}

struct sap_direct {
    sap_context *ctx;
    const sap_cudss_api *f;
    sap_int n, nnz;
    int mtype;
    sap_cudssHandle_t h;
    sap_cudssConfig_t cfg;
    sap_cudssData_t data;
    sap_cudssMatrix_t A;
    int32_t *d_rp, *d_ci;
    double *d_val;
    double *d_b, *d_x;
    sap_int cap; /* columns d_b / d_x hold */
    /* one column each, for the analysis and factorization phases (which take the
     * solution and right-hand side matrices too) */
    double *d_b1, *d_x1;
    sap_cudssMatrix_t b1, x1;
};

static const char *status_name(int s)
{
    static const char *names[] = {"success",       "not initialized",  "allocation failed", "invalid value",
                                  "not supported", "execution failed", "internal error",    "IR failed"};
    return (s >= 0 && s < 8) ? names[s] : "unknown status";
}

static sap_status dss_error(sap_context *ctx, const char *what, int s)
{
    return SAP_ERROR(ctx, s == SAP_CUDSS_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                     "cuDSS %s: %s (status %d)", what, status_name(s), s);
}

#define DSS_TRY(what, call)                                                                                   \
    do {                                                                                                      \
        int e_ = (call);                                                                                      \
        if (e_ != SAP_CUDSS_STATUS_SUCCESS) {                                                                 \
            st = dss_error(ctx, what, e_);                                                                    \
            goto cleanup;                                                                                     \
        }                                                                                                     \
    } while (0)

static int available(sap_context *ctx, char *why, size_t wl)
{
    const sap_cudss_api *f = sap__cudss_api();
    if (why && wl) why[0] = 0;
    if (!f->ok) {
        if (why && wl) snprintf(why, wl, "%s", f->why);
        return 0;
    }
    if (!ctx || ctx->backend != SAP_BACKEND_CUDA) {
        if (why && wl) snprintf(why, wl, "cuDSS needs a cuda context");
        return 0;
    }
    return 1;
}

static void destroy(sap_direct *D)
{
    if (!D) return;
    sap_context *ctx = D->ctx;
    const sap_cudss_api *f = D->f;
    sap__cuda_enter(ctx);
    if (D->A) f->MatrixDestroy(D->A);
    if (D->b1) f->MatrixDestroy(D->b1);
    if (D->x1) f->MatrixDestroy(D->x1);
    if (D->data) f->DataDestroy(D->h, D->data);
    if (D->cfg) f->ConfigDestroy(D->cfg);
    if (D->h) f->Destroy(D->h);
    sap__cuda_free(ctx, D->d_rp);
    sap__cuda_free(ctx, D->d_ci);
    sap__cuda_free(ctx, D->d_val);
    sap__cuda_free(ctx, D->d_b);
    sap__cuda_free(ctx, D->d_x);
    sap__cuda_free(ctx, D->d_b1);
    sap__cuda_free(ctx, D->d_x1);
    sap__free(ctx, D);
}

/* Data + matrix of type mtype and the ANALYSIS phase. */
static sap_status analysis(sap_direct *D, int mtype, sap_direct_info *info)
{
    sap_context *ctx = D->ctx;
    const sap_cudss_api *f = D->f;
    sap_status st = SAP_OK;
    size_t written = 0;
    int64_t lunnz = 0;
    if (D->A) f->MatrixDestroy(D->A);
    if (D->data) f->DataDestroy(D->h, D->data);
    D->A = NULL;
    D->data = NULL;
    D->mtype = mtype;
    DSS_TRY("cudssDataCreate", f->DataCreate(D->h, &D->data));
    DSS_TRY("cudssMatrixCreateCsr", f->MatrixCreateCsr(&D->A, D->n, D->n, D->nnz, D->d_rp, NULL, D->d_ci, D->d_val,
                                                       CUDA_R_32I, CUDA_R_32I, CUDA_R_64F, mtype,
                                                       SAP_CUDSS_MVIEW_FULL, SAP_CUDSS_BASE_ZERO));
    DSS_TRY("ANALYSIS", f->Execute(D->h, SAP_CUDSS_PHASE_ANALYSIS, D->cfg, D->data, D->A, D->x1, D->b1));
    if (f->DataGet(D->h, D->data, SAP_CUDSS_DATA_LU_NNZ, &lunnz, sizeof(lunnz), &written) == 0)
        info->lu_nnz = (double)lunnz;
    snprintf(info->solver, sizeof(info->solver), "cuDSS %d.%d.%d", f->major, f->minor, f->patch);
    info->cholesky = mtype == SAP_CUDSS_MTYPE_SPD;
cleanup:
    return st;
}

static sap_status analyse(sap_context *ctx, const sap_csr *A, int spd, sap_direct **out, sap_direct_info *info)
{
    sap_status st = SAP_OK;
    sap_direct *D = NULL;
    int32_t *rp = NULL, *ci = NULL;
    char why[200];
    *out = NULL;
    memset(info, 0, sizeof(*info));
    const double t0 = sap__wtime();
    if (!available(ctx, why, sizeof(why))) return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, "sap direct-cudss: %s", why);
    if (A->nrows > INT32_MAX || A->nnz > INT32_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "sap direct-cudss: N = %lld, nnz = %lld exceed 32-bit indices",
                         (long long)A->nrows, (long long)A->nnz);
    SAP_TRY(sap__cuda_enter(ctx));
    SAP_CUDA_HOST_ALLOC(ctx, D, 1);
    memset(D, 0, sizeof(*D));
    D->ctx = ctx;
    D->f = sap__cudss_api();
    D->n = A->nrows;
    D->nnz = A->nnz;
    SAP_CUDA_HOST_ALLOC(ctx, rp, A->nrows + 1);
    SAP_CUDA_HOST_ALLOC(ctx, ci, A->nnz > 0 ? A->nnz : 1);
    for (sap_int i = 0; i <= A->nrows; i++) rp[i] = (int32_t)A->rowptr[i];
    for (sap_int p = 0; p < A->nnz; p++) ci[p] = (int32_t)A->colind[p];
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)(A->nrows + 1), (void **)&D->d_rp));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)(A->nnz > 0 ? A->nnz : 1), (void **)&D->d_ci));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(A->nnz > 0 ? A->nnz : 1), (void **)&D->d_val));
    SAP_TRY(sap__cuda_h2d(ctx, D->d_rp, rp, sizeof(int32_t) * (size_t)(A->nrows + 1)));
    SAP_TRY(sap__cuda_h2d(ctx, D->d_ci, ci, sizeof(int32_t) * (size_t)A->nnz));
    SAP_TRY(sap__cuda_h2d(ctx, D->d_val, A->val, sizeof(double) * (size_t)A->nnz));
    DSS_TRY("cudssCreate", D->f->Create(&D->h));
    DSS_TRY("cudssSetStream", D->f->SetStream(D->h, sap__cuda_stream(ctx)));
    DSS_TRY("cudssConfigCreate", D->f->ConfigCreate(&D->cfg));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(A->nrows > 0 ? A->nrows : 1), (void **)&D->d_b1));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(A->nrows > 0 ? A->nrows : 1), (void **)&D->d_x1));
    DSS_TRY("cudssMatrixCreateDn(b)",
            D->f->MatrixCreateDn(&D->b1, D->n, 1, D->n, D->d_b1, CUDA_R_64F, SAP_CUDSS_LAYOUT_COL_MAJOR));
    DSS_TRY("cudssMatrixCreateDn(x)",
            D->f->MatrixCreateDn(&D->x1, D->n, 1, D->n, D->d_x1, CUDA_R_64F, SAP_CUDSS_LAYOUT_COL_MAJOR));
    SAP_TRY(analysis(D, spd ? SAP_CUDSS_MTYPE_SPD : SAP_CUDSS_MTYPE_GENERAL, info));
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize((cudaStream_t)sap__cuda_stream(ctx)));
    info->t_analyse = sap__wtime() - t0;
    *out = D;
    D = NULL;
cleanup:
    sap__free(ctx, rp);
    sap__free(ctx, ci);
    destroy(D);
    return st;
}

/* FACTORIZATION and its info (0: success). */
static sap_status factorize(sap_direct *D, int *dinfo)
{
    sap_context *ctx = D->ctx;
    const sap_cudss_api *f = D->f;
    sap_status st = SAP_OK;
    size_t written = 0;
    *dinfo = 0;
    DSS_TRY("FACTORIZATION", f->Execute(D->h, SAP_CUDSS_PHASE_FACTORIZATION, D->cfg, D->data, D->A, D->x1, D->b1));
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize((cudaStream_t)sap__cuda_stream(ctx)));
    DSS_TRY("cudssDataGet(INFO)", f->DataGet(D->h, D->data, SAP_CUDSS_DATA_INFO, dinfo, sizeof(*dinfo), &written));
cleanup:
    return st;
}

static sap_status factor(sap_direct *D, const sap_csr *A, sap_direct_info *info)
{
    sap_context *ctx = D->ctx;
    sap_status st = SAP_OK;
    const double t0 = sap__wtime();
    int dinfo = 0;
    size_t written = 0;
    int64_t lunnz = 0;
    if (A->nrows != D->n || A->nnz != D->nnz)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap direct-cudss: the matrix is not the one analysed");
    SAP_TRY(sap__cuda_enter(ctx));
    SAP_TRY(sap__cuda_h2d(ctx, D->d_val, A->val, sizeof(double) * (size_t)A->nnz));
    st = factorize(D, &dinfo);
    if ((st < 0 || dinfo != 0) && D->mtype == SAP_CUDSS_MTYPE_SPD) {
        /* not positive definite: LU with pivoting */
        sap_context_clear_error(ctx);
        sap__log(ctx, SAP_PRINT_INFO, "sap direct-cudss: SPD factorization failed (info %d), general LU instead", dinfo);
        SAP_TRY(analysis(D, SAP_CUDSS_MTYPE_GENERAL, info));
        st = factorize(D, &dinfo);
    }
    if (st < 0) goto cleanup;
    if (dinfo != 0)
        SAP_FAIL(ctx, SAP_ERR_SINGULAR, "sap direct-cudss: the matrix is singular (cuDSS factorization info %d: a zero "
                 "pivot)", dinfo);
    if (D->f->DataGet(D->h, D->data, SAP_CUDSS_DATA_LU_NNZ, &lunnz, sizeof(lunnz), &written) == 0)
        info->lu_nnz = (double)lunnz;
    info->cholesky = D->mtype == SAP_CUDSS_MTYPE_SPD;
cleanup:
    info->t_factor = sap__wtime() - t0;
    return st;
}

static sap_status solve(sap_direct *D, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx,
                        sap_direct_info *info)
{
    sap_context *ctx = D->ctx;
    const sap_cudss_api *f = D->f;
    sap_status st = SAP_OK;
    const double t0 = sap__wtime();
    const sap_int n = D->n;
    sap_cudssMatrix_t b = NULL, x = NULL;
    if (nrhs <= 0) return SAP_OK;
    SAP_TRY(sap__cuda_enter(ctx));
    if (nrhs > D->cap) {
        sap__cuda_free(ctx, D->d_b);
        sap__cuda_free(ctx, D->d_x);
        D->d_b = D->d_x = NULL;
        D->cap = 0;
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(n * nrhs), (void **)&D->d_b));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(n * nrhs), (void **)&D->d_x));
        D->cap = nrhs;
    }
    for (sap_int j = 0; j < nrhs; j++) SAP_TRY(sap__cuda_h2d(ctx, D->d_b + j * n, B + j * ldb, sizeof(double) * (size_t)n));
    DSS_TRY("cudssMatrixCreateDn(b)", f->MatrixCreateDn(&b, n, nrhs, n, D->d_b, CUDA_R_64F, SAP_CUDSS_LAYOUT_COL_MAJOR));
    DSS_TRY("cudssMatrixCreateDn(x)", f->MatrixCreateDn(&x, n, nrhs, n, D->d_x, CUDA_R_64F, SAP_CUDSS_LAYOUT_COL_MAJOR));
    DSS_TRY("SOLVE", f->Execute(D->h, SAP_CUDSS_PHASE_SOLVE, D->cfg, D->data, D->A, x, b));
    for (sap_int j = 0; j < nrhs; j++) SAP_TRY(sap__cuda_d2h(ctx, X + j * ldx, D->d_x + j * n, sizeof(double) * (size_t)n));
cleanup:
    if (b) f->MatrixDestroy(b);
    if (x) f->MatrixDestroy(x);
    info->t_solve = sap__wtime() - t0;
    return st;
}

static sap_direct_kernels make_table()
{
    sap_direct_kernels t;
    memset(&t, 0, sizeof(t));
    t.name = "cudss";
    t.available = available;
    t.analyse = analyse;
    t.factor = factor;
    t.solve = solve;
    t.destroy = destroy;
    return t;
}

static const sap_direct_kernels cuda_direct_table = make_table();

extern "C" const sap_direct_kernels *sap__direct_kernels_cuda(void) { return &cuda_direct_table; }
