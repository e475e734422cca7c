/* dense_cuda.cu -- the cuda implementation of the dense block kernels
 * (device/dense_kernels.h).  count == 1: cuSOLVER (getrf, getrs; getri as getrs of the
 * identity) and cublasDgemm; count > 1: cuBLAS batched routines (getrfBatched,
 * getrsBatched, getriBatched on pointer arrays built on the device; gemmStridedBatched).
 * Strided pivots are gathered into / scattered from a contiguous array with one 2D copy.
 * Everything runs on the context's stream, or between fork and join on one of NLANES
 * streams with their own handles and scratch (independent blocks run concurrently); getrf
 * waits for its singularity flags only when they are not left in device memory. */
#include "device/cuda/cuda_internal.h"

#include <cublas_v2.h>
#include <cusolverDn.h>

/* A lane: a stream with its own cuSOLVER / cuBLAS handles and device scratch.  Lanes
 * 0 .. NLANES-1 are created at the first fork; lane NLANES is the context's stream (its
 * cuBLAS handle is the context's). */
#define NLANES 16
typedef struct lane_state {
    cudaStream_t s;
    cusolverDnHandle_t solver;
    cublasHandle_t blas;  /* NULL on the context's lane: sap__cuda_cublas */
    void *scratch;        /* device: pointer arrays, contiguous pivots, infos, workspace */
    size_t scratch_bytes;
    cudaEvent_t done;
} lane_state;

typedef struct dense_state {
    lane_state ln[NLANES + 1];
    int lanes_ready;
    int cur;             /* the lane calls go to (NLANES: the context's stream) */
    cudaEvent_t forked;
    int *h_info;         /* host copy of the infos */
    size_t h_info_cap;
} dense_state;

static sap_status blas_err(sap_context *ctx, cublasStatus_t s, const char *what)
{
    return SAP_ERROR(ctx, s == CUBLAS_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE, "%s: %s", what,
                     cublasGetStatusString(s));
}

static sap_status solver_err(sap_context *ctx, cusolverStatus_t s, const char *what)
{
    return SAP_ERROR(ctx, s == CUSOLVER_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                     "%s: cusolver status %d", what, (int)s);
}

#define BLAS_CHECK(ctx, call)                                                                        \
    do {                                                                                             \
        cublasStatus_t s__ = (call);                                                                 \
        if (s__ != CUBLAS_STATUS_SUCCESS) return blas_err((ctx), s__, #call);                        \
    } while (0)
#define SOLVER_CHECK(ctx, call)                                                                      \
    do {                                                                                             \
        cusolverStatus_t s__ = (call);                                                               \
        if (s__ != CUSOLVER_STATUS_SUCCESS) return solver_err((ctx), s__, #call);                    \
    } while (0)

extern "C" void sap__cuda_dense_free(sap_context *ctx)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (!cs || !cs->dense) return;
    dense_state *d = (dense_state *)cs->dense;
    for (int i = 0; i <= NLANES; i++) {
        lane_state *l = &d->ln[i];
        if (l->solver) cusolverDnDestroy(l->solver);
        if (i < NLANES && l->blas) cublasDestroy(l->blas);
        if (i < NLANES && l->done) cudaEventDestroy(l->done);
        if (i < NLANES && l->s) cudaStreamDestroy(l->s);
        sap__cuda_free(ctx, l->scratch);
    }
    if (d->forked) cudaEventDestroy(d->forked);
    sap__free(ctx, d->h_info);
    sap__free(ctx, d);
    cs->dense = NULL;
}

/* the state with at least bytes of device scratch on the current lane and infos host ints */
static sap_status state(sap_context *ctx, size_t bytes, size_t infos, dense_state **out)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (!cs) return SAP_ERROR(ctx, SAP_ERR_INVALID, "not a cuda context");
    sap_status est = sap__cuda_enter(ctx);
    if (est != SAP_OK) return est;
    if (!cs->dense) {
        dense_state *d = (dense_state *)sap__alloc(ctx, 1, sizeof(dense_state), true, __FILE__, __LINE__);
        if (!d) return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "dense kernels: out of host memory");
        d->cur = NLANES;
        d->ln[NLANES].s = cs->stream;
        cusolverStatus_t s = cusolverDnCreate(&d->ln[NLANES].solver);
        if (s != CUSOLVER_STATUS_SUCCESS) {
            sap__free(ctx, d);
            return solver_err(ctx, s, "cusolverDnCreate");
        }
        s = cusolverDnSetStream(d->ln[NLANES].solver, cs->stream);
        cs->dense = d;
        if (s != CUSOLVER_STATUS_SUCCESS) return solver_err(ctx, s, "cusolverDnSetStream");
    }
    dense_state *d = (dense_state *)cs->dense;
    lane_state *l = &d->ln[d->cur];
    if (bytes > l->scratch_bytes) {
        SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(l->s));
        sap__cuda_free(ctx, l->scratch);
        l->scratch = NULL;
        l->scratch_bytes = 0;
        size_t want = bytes + bytes / 2;
        sap_status st = sap__cuda_malloc(ctx, want, &l->scratch);
        if (st != SAP_OK) return st;
        l->scratch_bytes = want;
    }
    if (infos > d->h_info_cap) {
        sap__free(ctx, d->h_info);
        d->h_info = (int *)sap__alloc(ctx, infos, sizeof(int), false, __FILE__, __LINE__);
        d->h_info_cap = d->h_info ? infos : 0;
        if (!d->h_info) return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "dense kernels: out of host memory");
    }
    *out = d;
    return SAP_OK;
}

static lane_state *cur(dense_state *d) { return &d->ln[d->cur]; }
static cudaStream_t cur_stream(dense_state *d) { return d->ln[d->cur].s; }
static sap_status cur_blas(sap_context *ctx, dense_state *d, cublasHandle_t *h)
{
    if (d->cur < NLANES) return *h = d->ln[d->cur].blas, SAP_OK;
    void *hb;
    sap_status st = sap__cuda_cublas(ctx, &hb);
    *h = (cublasHandle_t)hb;
    return st;
}

static sap_status cu_fork(sap_context *ctx)
{
    dense_state *d;
    sap_status st = state(ctx, 0, 0, &d);
    if (st != SAP_OK) return st;
    cudaStream_t main_s = d->ln[NLANES].s;
    if (!d->lanes_ready) {
        SAP_CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->forked, cudaEventDisableTiming));
        for (int i = 0; i < NLANES; i++) {
            lane_state *l = &d->ln[i];
            SAP_CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&l->s, cudaStreamNonBlocking));
            SAP_CUDA_CHECK(ctx, cudaEventCreateWithFlags(&l->done, cudaEventDisableTiming));
            SOLVER_CHECK(ctx, cusolverDnCreate(&l->solver));
            SOLVER_CHECK(ctx, cusolverDnSetStream(l->solver, l->s));
            BLAS_CHECK(ctx, cublasCreate(&l->blas));
            BLAS_CHECK(ctx, cublasSetStream(l->blas, l->s));
        }
        d->lanes_ready = 1;
    }
    SAP_CUDA_CHECK(ctx, cudaEventRecord(d->forked, main_s));
    for (int i = 0; i < NLANES; i++) SAP_CUDA_CHECK(ctx, cudaStreamWaitEvent(d->ln[i].s, d->forked, 0));
    d->cur = NLANES;
    return SAP_OK;
}

static sap_status cu_lane(sap_context *ctx, int i)
{
    dense_state *d;
    sap_status st = state(ctx, 0, 0, &d);
    if (st != SAP_OK) return st;
    if (!d->lanes_ready) return SAP_ERROR(ctx, SAP_ERR_INVALID, "dense kernels: lane without fork");
    d->cur = (i < 0 ? -i : i) % NLANES;
    return SAP_OK;
}

static sap_status cu_join(sap_context *ctx)
{
    dense_state *d;
    sap_status st = state(ctx, 0, 0, &d);
    if (st != SAP_OK) return st;
    d->cur = NLANES;
    if (!d->lanes_ready) return SAP_OK;
    for (int i = 0; i < NLANES; i++) {
        SAP_CUDA_CHECK(ctx, cudaEventRecord(d->ln[i].done, d->ln[i].s));
        SAP_CUDA_CHECK(ctx, cudaStreamWaitEvent(d->ln[NLANES].s, d->ln[i].done, 0));
    }
    return SAP_OK;
}

static sap_status cu_get_ints(sap_context *ctx, const int32_t *src, int64_t count, int32_t *host)
{
    if (count <= 0) return SAP_OK;
    dense_state *d;
    sap_status st = state(ctx, 0, 0, &d);
    if (st != SAP_OK) return st;
    SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(host, src, (size_t)count * 4, cudaMemcpyDeviceToHost, cur_stream(d)));
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(cur_stream(d)));
    return SAP_OK;
}

static size_t align256(size_t b) { return (b + 255) / 256 * 256; }

__global__ void k_ptrs(double **p, const double *base, int64_t stride, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) p[i] = (double *)base + (int64_t)i * stride;
}

__global__ void k_lacpy(int m, int n, int64_t total, const double *a, int lda, int64_t sa, double *b, int ldb,
                        int64_t sb)
{
    int64_t mn = (int64_t)m * n;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        int64_t bt = t / mn, r = t % mn;
        int64_t j = r / m, i = r % m;
        b[bt * sb + j * ldb + i] = a[bt * sa + j * lda + i];
    }
}

__global__ void k_set(int m, int n, int64_t total, double *a, int lda, int64_t sa, int eye)
{
    int64_t mn = (int64_t)m * n;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        int64_t bt = t / mn, r = t % mn;
        int64_t j = r / m, i = r % m;
        a[bt * sa + j * lda + i] = (eye && i == j) ? 1.0 : 0.0;
    }
}

static int grid_for(int64_t total)
{
    int64_t g = (total + 255) / 256;
    return (int)(g < 1 ? 1 : (g > 65535 ? 65535 : g));
}

static sap_status set_matrices(sap_context *ctx, int m, int n, int count, double *a, int lda, int64_t sa, int eye)
{
    int64_t total = (int64_t)m * n * count;
    if (total <= 0) return SAP_OK;
    dense_state *d;
    sap_status st = state(ctx, 0, 0, &d);
    if (st != SAP_OK) return st;
    k_set<<<grid_for(total), 256, 0, cur_stream(d)>>>(m, n, total, a, lda, sa, eye);
    SAP_CUDA_LAUNCHED(ctx, "k_set");
    return SAP_OK;
}

static sap_status make_ptrs(sap_context *ctx, dense_state *d, double **p, const double *base, int64_t stride,
                            int count)
{
    k_ptrs<<<(count + 255) / 256, 256, 0, cur_stream(d)>>>(p, base, stride, count);
    SAP_CUDA_LAUNCHED(ctx, "k_ptrs");
    return SAP_OK;
}

/* contiguous <-> strided ints (n per matrix: pivots, infos) */
static sap_status copy_piv(sap_context *ctx, dense_state *d, int32_t *dst, int64_t sd, const int32_t *src, int64_t ss,
                           int n, int count)
{
    SAP_CUDA_CHECK(ctx, cudaMemcpy2DAsync(dst, (size_t)sd * 4, src, (size_t)ss * 4, (size_t)n * 4, (size_t)count,
                                          cudaMemcpyDeviceToDevice, cur_stream(d)));
    return SAP_OK;
}

static sap_status first_bad(sap_context *ctx, dense_state *d, const int *d_info, int count, int64_t *bad)
{
    cudaStream_t s = cur_stream(d);
    SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(d->h_info, d_info, (size_t)count * sizeof(int), cudaMemcpyDeviceToHost, s));
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(s));
    *bad = -1;
    for (int i = 0; i < count; i++) {
        if (d->h_info[i] < 0) return SAP_ERROR(ctx, SAP_ERR_DEVICE, "getrf: argument %d invalid", -d->h_info[i]);
        if (d->h_info[i] > 0) {
            *bad = i;
            break;
        }
    }
    return SAP_OK;
}

static sap_status cu_getrf(sap_context *ctx, int n, int count, double *a, int64_t sa, int32_t *piv, int64_t sp,
                           int32_t *info, int64_t si, int64_t *bad)
{
    *bad = -1;
    if (count <= 0 || n <= 0) return SAP_OK;
    dense_state *d;
    sap_status st;
    if (count == 1) {
        if ((st = state(ctx, 0, 1, &d)) != SAP_OK) return st;
        int lwork = 0;
        SOLVER_CHECK(ctx, cusolverDnDgetrf_bufferSize(cur(d)->solver, n, n, a, n, &lwork));
        size_t bytes = align256(sizeof(int)) + (size_t)lwork * sizeof(double);
        if ((st = state(ctx, bytes, 1, &d)) != SAP_OK) return st;
        int *d_info = info ? (int *)info : (int *)cur(d)->scratch;
        double *work = (double *)((char *)cur(d)->scratch + align256(sizeof(int)));
        SOLVER_CHECK(ctx, cusolverDnDgetrf(cur(d)->solver, n, n, a, n, work, (int *)piv, d_info));
        return info ? SAP_OK : first_bad(ctx, d, d_info, 1, bad);
    }
    size_t o1 = align256((size_t)count * sizeof(double *)), o2 = o1 + align256((size_t)count * n * 4);
    if ((st = state(ctx, o2 + align256((size_t)count * 4), (size_t)count, &d)) != SAP_OK) return st;
    cublasHandle_t hb;
    if ((st = cur_blas(ctx, d, &hb)) != SAP_OK) return st;
    double **ptrs = (double **)cur(d)->scratch;
    int *cpiv = (int *)((char *)cur(d)->scratch + o1), *d_info = (int *)((char *)cur(d)->scratch + o2);
    if ((st = make_ptrs(ctx, d, ptrs, a, sa, count)) != SAP_OK) return st;
    BLAS_CHECK(ctx, cublasDgetrfBatched(hb, n, ptrs, n, cpiv, d_info, count));
    if ((st = copy_piv(ctx, d, piv, sp, cpiv, n, n, count)) != SAP_OK) return st;
    if (info) return copy_piv(ctx, d, info, si, d_info, 1, 1, count);
    return first_bad(ctx, d, d_info, count, bad);
}

static sap_status cu_getrs(sap_context *ctx, int n, int nrhs, int count, const double *a, int64_t sa,
                           const int32_t *piv, int64_t sp, double *b, int ldb, int64_t sb)
{
    if (count <= 0 || n <= 0 || nrhs <= 0) return SAP_OK;
    dense_state *d;
    sap_status st;
    if (count == 1) {
        if ((st = state(ctx, 256, 1, &d)) != SAP_OK) return st;
        SOLVER_CHECK(ctx, cusolverDnDgetrs(cur(d)->solver, CUBLAS_OP_N, n, nrhs, a, n, (const int *)piv, b, ldb,
                                           (int *)cur(d)->scratch));
        return SAP_OK;
    }
    size_t o1 = align256((size_t)count * sizeof(double *)), o2 = o1 + o1;
    if ((st = state(ctx, o2 + align256((size_t)count * n * 4), 1, &d)) != SAP_OK) return st;
    cublasHandle_t hb;
    if ((st = cur_blas(ctx, d, &hb)) != SAP_OK) return st;
    double **pa = (double **)cur(d)->scratch, **pb = (double **)((char *)cur(d)->scratch + o1);
    int *cpiv = (int *)((char *)cur(d)->scratch + o2);
    if ((st = make_ptrs(ctx, d, pa, a, sa, count)) != SAP_OK) return st;
    if ((st = make_ptrs(ctx, d, pb, b, sb, count)) != SAP_OK) return st;
    if ((st = copy_piv(ctx, d, cpiv, n, piv, sp, n, count)) != SAP_OK) return st;
    int info = 0;
    BLAS_CHECK(ctx, cublasDgetrsBatched(hb, CUBLAS_OP_N, n, nrhs, (const double *const *)pa, n, cpiv, pb, ldb, &info,
                                        count));
    if (info != 0) return SAP_ERROR(ctx, SAP_ERR_DEVICE, "cublasDgetrsBatched: argument %d invalid", -info);
    return SAP_OK;
}

static sap_status cu_getri(sap_context *ctx, int n, int count, const double *a, int64_t sa, const int32_t *piv,
                           int64_t sp, double *c, int64_t sc)
{
    if (count <= 0 || n <= 0) return SAP_OK;
    sap_status st;
    if (count == 1) {
        if ((st = set_matrices(ctx, n, n, 1, c, n, 0, 1)) != SAP_OK) return st;
        return cu_getrs(ctx, n, n, 1, a, 0, piv, 0, c, n, 0);
    }
    dense_state *d;
    size_t o1 = align256((size_t)count * sizeof(double *)), o2 = o1 + o1, o3 = o2 + align256((size_t)count * n * 4);
    if ((st = state(ctx, o3 + align256((size_t)count * 4), 1, &d)) != SAP_OK) return st;
    cublasHandle_t hb;
    if ((st = cur_blas(ctx, d, &hb)) != SAP_OK) return st;
    double **pa = (double **)cur(d)->scratch, **pc = (double **)((char *)cur(d)->scratch + o1);
    int *cpiv = (int *)((char *)cur(d)->scratch + o2), *d_info = (int *)((char *)cur(d)->scratch + o3);
    if ((st = make_ptrs(ctx, d, pa, a, sa, count)) != SAP_OK) return st;
    if ((st = make_ptrs(ctx, d, pc, c, sc, count)) != SAP_OK) return st;
    if ((st = copy_piv(ctx, d, cpiv, n, piv, sp, n, count)) != SAP_OK) return st;
    BLAS_CHECK(ctx, cublasDgetriBatched(hb, n, (const double *const *)pa, n, cpiv, pc, n, d_info, count));
    return SAP_OK;
}

static sap_status cu_gemm(sap_context *ctx, int m, int n, int kk, double alpha, const double *a, int lda,
                          int64_t sa, const double *b, int ldb, int64_t sb, double beta, double *c, int ldc,
                          int64_t sc, int count)
{
    if (count <= 0 || m <= 0 || n <= 0) return SAP_OK;
    dense_state *d;
    cublasHandle_t h;
    sap_status st = state(ctx, 0, 0, &d);
    if (st == SAP_OK) st = cur_blas(ctx, d, &h);
    if (st != SAP_OK) return st;
    if (n == 1) { /* one column: the matrix-vector kernels (memory-bound, what a solve is) */
        if (count == 1) BLAS_CHECK(ctx, cublasDgemv(h, CUBLAS_OP_N, m, kk, &alpha, a, lda, b, 1, &beta, c, 1));
        else
            BLAS_CHECK(ctx, cublasDgemvStridedBatched(h, CUBLAS_OP_N, m, kk, &alpha, a, lda, sa, b, 1, sb, &beta, c,
                                                      1, sc, count));
        return SAP_OK;
    }
    if (count == 1) {
        BLAS_CHECK(ctx, cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, kk, &alpha, a, lda, b, ldb, &beta, c, ldc));
        return SAP_OK;
    }
    BLAS_CHECK(ctx, cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, kk, &alpha, a, lda, sa, b, ldb, sb,
                                              &beta, c, ldc, sc, count));
    return SAP_OK;
}

static sap_status cu_lacpy(sap_context *ctx, int m, int n, int count, const double *a, int lda, int64_t sa,
                           double *b, int ldb, int64_t sb)
{
    int64_t total = (int64_t)m * n * count;
    if (total <= 0) return SAP_OK;
    dense_state *d;
    sap_status st = state(ctx, 0, 0, &d);
    if (st != SAP_OK) return st;
    k_lacpy<<<grid_for(total), 256, 0, cur_stream(d)>>>(m, n, total, a, lda, sa, b, ldb, sb);
    SAP_CUDA_LAUNCHED(ctx, "k_lacpy");
    return SAP_OK;
}

static sap_status cu_zero(sap_context *ctx, int m, int n, int count, double *a, int lda, int64_t sa)
{
    return set_matrices(ctx, m, n, count, a, lda, sa, 0);
}

static sap_dense_kernels make_table(void)
{
    sap_dense_kernels t = {};
    t.name = "cuda";
    t.getrf = cu_getrf;
    t.get_ints = cu_get_ints;
    t.fork = cu_fork;
    t.lane = cu_lane;
    t.join = cu_join;
    t.getrs = cu_getrs;
    t.getri = cu_getri;
    t.gemm = cu_gemm;
    t.lacpy = cu_lacpy;
    t.zero = cu_zero;
    return t;
}

static const sap_dense_kernels cuda_dense = make_table();

extern "C" const sap_dense_kernels *sap__dense_kernels_cuda(void) { return &cuda_dense; }
