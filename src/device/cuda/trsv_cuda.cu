/* trsv_cuda.cu -- the cuda triangular solves (device/trsv_kernels.h).
 *
 *   LEVEL     the seed's method: the factor reordered by levels in HEC (ELL part
 *             column-major over the processing positions, CSR remainder) and one kernel
 *             launch per level, a thread per row (each right-hand side in turn), the row
 *             summed in the stored order (ELL, then the remainder) like the cpu reference.
 *   SYNCFREE  for many thin levels: one launch; a warp per row, rows handed out in
 *             processing order by an atomic ticket (so every row a warp waits on has been
 *             taken by a running warp: no deadlock), lanes spin on the ready flag of each
 *             dependency (flags hold the solve's generation number, so nothing is reset
 *             between solves), then a warp reduction; lane 0 writes x, fences, publishes.
 * The analysis (levels, order) is computed on the host by sap__trsv_host_build and
 * uploaded.  PARTIAL: no device-side level analysis yet. */
#include "device/cuda/cuda_internal.h"

#include <string.h>

namespace {

struct trsv_dev {
    int method;
    int32_t n, width;
    int32_t *level_ptr_h; /* host: nlevels + 1 */
    int32_t *order;
    /* LEVEL: HEC over positions */
    int32_t *ell_col;
    void *ell_val;
    int32_t *rem_ptr, *rem_col;
    void *rem_val;
    /* SYNCFREE: CSR over positions */
    int32_t *rowptr, *colind;
    void *val;
    void *dinv;
    int *ready;
    unsigned int *ticket;
    int gen;
};

inline cudaStream_t stream_of(sap_context *ctx) { return (cudaStream_t)sap__cuda_stream(ctx); }

template <typename T>
__global__ void k_level(int32_t k0, int32_t k1, int32_t n, int32_t nrhs, const int32_t *__restrict__ order,
                        int32_t width, const int32_t *__restrict__ ell_col, const T *__restrict__ ell_val,
                        const int32_t *__restrict__ rem_ptr, const int32_t *__restrict__ rem_col,
                        const T *__restrict__ rem_val, const T *__restrict__ dinv, const T *__restrict__ b, T *x)
{
    const int32_t k = k0 + (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (k >= k1) return;
    const int32_t i = order[k];
    const T d = dinv[k];
    for (int32_t r = 0; r < nrhs; r++) {
        const size_t off = (size_t)r * (size_t)n;
        T s = b[off + i];
        for (int32_t e = 0; e < width; e++) {
            const T v = ell_val[k + (size_t)e * n];
            if (v != T(0)) s -= v * x[off + ell_col[k + (size_t)e * n]]; /* padding: value 0 */
        }
        for (int32_t p = rem_ptr[k]; p < rem_ptr[k + 1]; p++) s -= rem_val[p] * x[off + rem_col[p]];
        x[off + i] = s * d;
    }
}

template <typename T>
__global__ void k_syncfree(int32_t n, int32_t nrhs, const int32_t *__restrict__ order,
                           const int32_t *__restrict__ rowptr, const int32_t *__restrict__ colind,
                           const T *__restrict__ val, const T *__restrict__ dinv, const T *__restrict__ b, T *x,
                           volatile int *ready, int gen, unsigned int *ticket)
{
    const int lane = threadIdx.x & 31;
    unsigned int pos = 0;
    if (lane == 0) pos = atomicAdd(ticket, 1u);
    pos = __shfl_sync(0xffffffffu, pos, 0);
    if (pos >= (unsigned int)n) return;
    const int32_t i = order[pos];
    const int32_t p0 = rowptr[pos], p1 = rowptr[pos + 1];
    for (int32_t p = p0 + lane; p < p1; p += 32)
        while (ready[colind[p]] != gen) {
        }
    __syncwarp();
    __threadfence();
    const T d = dinv[pos];
    for (int32_t r = 0; r < nrhs; r++) {
        const size_t off = (size_t)r * (size_t)n;
        T s = T(0);
        for (int32_t p = p0 + lane; p < p1; p += 32) s += val[p] * __ldcg(x + off + colind[p]);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0) x[off + i] = (b[off + i] - s) * d;
    }
    if (lane == 0) {
        __threadfence();
        ready[i] = gen;
    }
}

sap_status upload_idx(sap_context *ctx, const sap_int *h, size_t n, int32_t **d)
{
    sap_status st = SAP_OK;
    int32_t *tmp = NULL;
    if (n == 0) n = 1;
    SAP_CUDA_HOST_ALLOC(ctx, tmp, n);
    for (size_t k = 0; k < n; k++) tmp[k] = h ? (int32_t)h[k] : 0;
    st = sap__cuda_malloc(ctx, n * sizeof(int32_t), (void **)d);
    if (st >= 0) st = sap__cuda_h2d(ctx, *d, tmp, n * sizeof(int32_t));
cleanup:
    sap__free(ctx, tmp);
    return st;
}

/* n values of h into new device memory in prec (float: converted on the host). */
sap_status upload_vals_any(sap_context *ctx, sap_precision prec, const double *h, size_t n, void **d)
{
    sap_status st = SAP_OK;
    float *tmp = NULL;
    if (n == 0) return sap__cuda_malloc(ctx, sizeof(double), d);
    SAP_TRY(sap__cuda_malloc(ctx, n * (prec == SAP_FLOAT ? sizeof(float) : sizeof(double)), d));
    if (prec != SAP_FLOAT) return sap__cuda_h2d(ctx, *d, h, n * sizeof(double));
    SAP_CUDA_HOST_ALLOC(ctx, tmp, n);
    for (size_t k = 0; k < n; k++) tmp[k] = (float)h[k];
    st = sap__cuda_h2d(ctx, *d, tmp, n * sizeof(float));
cleanup:
    sap__free(ctx, tmp);
    return st;
}

void cuda_trsv_destroy(sap_trsv *S)
{
    if (!S) return;
    sap_context *ctx = S->ctx;
    trsv_dev *t = (trsv_dev *)S->impl;
    if (t) {
        sap__free(ctx, t->level_ptr_h);
        void *ptrs[] = {t->order,  t->ell_col, t->ell_val, t->rem_ptr, t->rem_col, t->rem_val,
                        t->rowptr, t->colind,  t->val,     t->dinv,    t->ready,   t->ticket};
        for (size_t k = 0; k < sizeof(ptrs) / sizeof(ptrs[0]); k++) sap__cuda_free(ctx, ptrs[k]);
        sap__free(ctx, t);
    }
    sap__free(ctx, S);
}

extern const sap_trsv_kernels cuda_trsv_table;

sap_status cuda_trsv_analyze(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_precision prec,
                             sap_trsv_method method, sap_trsv **out)
{
    sap_status st = SAP_OK;
    const double t0 = sap__wtime();
    sap_trsv *S = NULL;
    trsv_dev *t = NULL;
    sap_trsv_host H;
    sap_hec_host hec;
    memset(&H, 0, sizeof(H));
    memset(&hec, 0, sizeof(hec));
    *out = NULL;
    SAP_CUDA_HOST_ALLOC(ctx, S, 1);
    memset(S, 0, sizeof(*S));
    S->ctx = ctx;
    S->kt = &cuda_trsv_table;
    SAP_CUDA_HOST_ALLOC(ctx, t, 1);
    memset(t, 0, sizeof(*t));
    S->impl = t;
    SAP_TRY(sap__trsv_host_build(ctx, T, upper, unit, &H));
    if (H.n >= INT32_MAX || H.rowptr[H.n] >= INT32_MAX)
        SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "trsv: %lld rows / %lld entries exceed the 32-bit indices of the cuda kernels",
                 (long long)H.n, (long long)H.rowptr[H.n]);
    S->n = H.n;
    S->nnz_offdiag = H.rowptr[H.n];
    S->nlevels = H.nlevels;
    S->max_level_rows = H.max_level_rows;
    S->upper = upper;
    S->unit = unit;
    S->prec = prec;
    S->method = method == SAP_TRSV_AUTO ? sap__trsv_pick(S->n, S->nlevels, &S->reason) : method;
    if (method != SAP_TRSV_AUTO) S->reason = "requested";
    t->method = (int)S->method;
    t->n = (int32_t)H.n;
    SAP_TRY(upload_idx(ctx, H.order, (size_t)H.n, &t->order));
    SAP_TRY(upload_vals_any(ctx, prec, H.dinv, (size_t)H.n, &t->dinv));
    if (S->method == SAP_TRSV_LEVEL) {
        SAP_CUDA_HOST_ALLOC(ctx, t->level_ptr_h, H.nlevels + 1);
        for (sap_int l = 0; l <= H.nlevels; l++) t->level_ptr_h[l] = (int32_t)H.level_ptr[l];
        sap_csr R;
        memset(&R, 0, sizeof(R));
        R.ctx = ctx;
        R.nrows = H.n;
        R.ncols = H.n;
        R.nnz = H.rowptr[H.n];
        R.rowptr = H.rowptr;
        R.colind = H.colind;
        R.val = H.val;
        SAP_TRY(sap__hec_from_csr(ctx, &R, &hec));
        t->width = (int32_t)hec.ell.width;
        const size_t ne = (size_t)hec.ell.width * (size_t)H.n;
        SAP_TRY(sap__cuda_malloc(ctx, (ne ? ne : 1) * sizeof(int32_t), (void **)&t->ell_col));
        if (ne) SAP_TRY(sap__cuda_h2d(ctx, t->ell_col, hec.ell.col, ne * sizeof(int32_t)));
        SAP_TRY(upload_vals_any(ctx, prec, hec.ell.val, ne, &t->ell_val));
        SAP_TRY(upload_idx(ctx, hec.csr_rowptr, (size_t)H.n + 1, &t->rem_ptr));
        const size_t nr = (size_t)hec.csr_rowptr[H.n];
        SAP_TRY(sap__cuda_malloc(ctx, (nr ? nr : 1) * sizeof(int32_t), (void **)&t->rem_col));
        if (nr) SAP_TRY(sap__cuda_h2d(ctx, t->rem_col, hec.csr_col, nr * sizeof(int32_t)));
        SAP_TRY(upload_vals_any(ctx, prec, hec.csr_val, nr, &t->rem_val));
    } else {
        SAP_TRY(upload_idx(ctx, H.rowptr, (size_t)H.n + 1, &t->rowptr));
        SAP_TRY(upload_idx(ctx, H.colind, (size_t)H.rowptr[H.n], &t->colind));
        SAP_TRY(upload_vals_any(ctx, prec, H.val, (size_t)H.rowptr[H.n], &t->val));
        SAP_TRY(sap__cuda_malloc(ctx, (size_t)(H.n > 0 ? H.n : 1) * sizeof(int), (void **)&t->ready));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(unsigned int), (void **)&t->ticket));
        SAP_CUDA_TRY(ctx, cudaMemsetAsync(t->ready, 0, (size_t)(H.n > 0 ? H.n : 1) * sizeof(int), stream_of(ctx)));
        t->gen = 0;
    }
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize(stream_of(ctx)));
    S->t_analysis = sap__wtime() - t0;
    *out = S;
cleanup:
    sap__trsv_host_free(ctx, &H);
    sap__hec_free(ctx, &hec);
    if (st < 0) cuda_trsv_destroy(S);
    return st;
}

template <typename T> sap_status solve_t(sap_trsv *S, int32_t nrhs, const T *b, T *x)
{
    sap_context *ctx = S->ctx;
    trsv_dev *t = (trsv_dev *)S->impl;
    cudaStream_t s = stream_of(ctx);
    if (t->n == 0 || nrhs == 0) return SAP_OK;
    if (t->method == SAP_TRSV_LEVEL) {
        for (sap_int l = 0; l < S->nlevels; l++) {
            const int32_t k0 = t->level_ptr_h[l], k1 = t->level_ptr_h[l + 1];
            const int bs = 128;
            const int grid = (k1 - k0 + bs - 1) / bs;
            k_level<T><<<grid, bs, 0, s>>>(k0, k1, t->n, nrhs, t->order, t->width, t->ell_col, (const T *)t->ell_val,
                                           t->rem_ptr, t->rem_col, (const T *)t->rem_val, (const T *)t->dinv, b, x);
        }
        SAP_CUDA_LAUNCHED(ctx, "trsv level kernels");
    } else {
        if (++t->gen <= 0) { /* wrapped: reset the flags */
            SAP_CUDA_CHECK(ctx, cudaMemsetAsync(t->ready, 0, (size_t)t->n * sizeof(int), s));
            t->gen = 1;
        }
        SAP_CUDA_CHECK(ctx, cudaMemsetAsync(t->ticket, 0, sizeof(unsigned int), s));
        const int bs = 128;
        const long long grid = ((long long)t->n * 32 + bs - 1) / bs;
        k_syncfree<T><<<(unsigned int)grid, bs, 0, s>>>(t->n, nrhs, t->order, t->rowptr, t->colind, (const T *)t->val,
                                                        (const T *)t->dinv, b, x, t->ready, t->gen, t->ticket);
        SAP_CUDA_LAUNCHED(ctx, "trsv syncfree kernel");
    }
    return SAP_OK;
}

sap_status cuda_trsv_solve(sap_trsv *S, sap_int nrhs, const void *b, void *x)
{
    if (nrhs < 0 || nrhs >= INT32_MAX || (nrhs > 0 && (!b || !x)))
        return SAP_ERROR(S->ctx, SAP_ERR_INVALID, "trsv: bad right-hand sides (%lld)", (long long)nrhs);
    if (S->prec == SAP_FLOAT) return solve_t<float>(S, (int32_t)nrhs, (const float *)b, (float *)x);
    return solve_t<double>(S, (int32_t)nrhs, (const double *)b, (double *)x);
}

__device__ inline double parilu_find(const int32_t *rp, const int32_t *ci, const double *f, int32_t k, int32_t j)
{
    int32_t lo = rp[k], hi = rp[k + 1];
    while (lo < hi) {
        const int32_t m = lo + (hi - lo) / 2;
        if (ci[m] < j) lo = m + 1;
        else hi = m;
    }
    return lo < rp[k + 1] && ci[lo] == j ? f[lo] : 0.0;
}

/* one Jacobi sweep of ParILU, a thread per entry (the formulas of trsv_kernels.h) */
__global__ void k_parilu(int32_t nnz, const int32_t *__restrict__ rowidx, const int32_t *__restrict__ rp,
                         const int32_t *__restrict__ ci, const int32_t *__restrict__ dpos, const double *__restrict__ a,
                         const double *__restrict__ cur, double *__restrict__ nxt)
{
    const int32_t p = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (p >= nnz) return;
    const int32_t i = rowidx[p], j = ci[p], m = i < j ? i : j;
    double s = a[p];
    for (int32_t q = rp[i]; q < rp[i + 1] && ci[q] < m; q++) s -= cur[q] * parilu_find(rp, ci, cur, ci[q], j);
    if (i > j) {
        const double d = cur[dpos[j]];
        nxt[p] = d != 0.0 ? s / d : cur[p];
    } else {
        nxt[p] = s;
    }
}

sap_status cuda_parilu(sap_context *ctx, const sap_csr *S, int sweeps, double *lu)
{
    sap_status st = SAP_OK;
    const sap_int n = S->nrows, nnz = S->nnz;
    int32_t *h_row = NULL, *h_dp = NULL, *d_row = NULL, *d_rp = NULL, *d_ci = NULL, *d_dp = NULL;
    double *d_a = NULL, *d_x = NULL, *d_y = NULL;
    cudaStream_t s = stream_of(ctx);
    if (n >= INT32_MAX || nnz >= INT32_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "parilu: %lld entries exceed the 32-bit indices of the cuda kernels",
                         (long long)nnz);
    if (nnz == 0 || sweeps <= 0) return SAP_OK;
    SAP_CUDA_HOST_ALLOC(ctx, h_row, nnz);
    SAP_CUDA_HOST_ALLOC(ctx, h_dp, n);
    for (sap_int i = 0; i < n; i++) {
        h_dp[i] = (int32_t)S->rowptr[i];
        for (sap_int p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
            h_row[p] = (int32_t)i;
            if (S->colind[p] == i) h_dp[i] = (int32_t)p;
        }
    }
    SAP_TRY(upload_idx(ctx, S->rowptr, (size_t)n + 1, &d_rp));
    SAP_TRY(upload_idx(ctx, S->colind, (size_t)nnz, &d_ci));
    SAP_TRY(sap__cuda_malloc(ctx, (size_t)nnz * sizeof(int32_t), (void **)&d_row));
    SAP_TRY(sap__cuda_h2d(ctx, d_row, h_row, (size_t)nnz * sizeof(int32_t)));
    SAP_TRY(sap__cuda_malloc(ctx, (size_t)n * sizeof(int32_t), (void **)&d_dp));
    SAP_TRY(sap__cuda_h2d(ctx, d_dp, h_dp, (size_t)n * sizeof(int32_t)));
    SAP_TRY(upload_vals_any(ctx, SAP_DOUBLE, S->val, (size_t)nnz, (void **)&d_a));
    SAP_TRY(upload_vals_any(ctx, SAP_DOUBLE, lu, (size_t)nnz, (void **)&d_x));
    SAP_TRY(sap__cuda_malloc(ctx, (size_t)nnz * sizeof(double), (void **)&d_y));
    for (int sw = 0; sw < sweeps; sw++) {
        k_parilu<<<(unsigned int)((nnz + 255) / 256), 256, 0, s>>>((int32_t)nnz, d_row, d_rp, d_ci, d_dp, d_a, d_x, d_y);
        double *t = d_x;
        d_x = d_y;
        d_y = t;
    }
    SAP_CUDA_TRY_LAUNCH(ctx, "parilu sweeps");
    SAP_TRY(sap__cuda_d2h(ctx, lu, d_x, (size_t)nnz * sizeof(double)));
cleanup:
    sap__free(ctx, h_row);
    sap__free(ctx, h_dp);
    sap__cuda_free(ctx, d_row);
    sap__cuda_free(ctx, d_rp);
    sap__cuda_free(ctx, d_ci);
    sap__cuda_free(ctx, d_dp);
    sap__cuda_free(ctx, d_a);
    sap__cuda_free(ctx, d_x);
    sap__cuda_free(ctx, d_y);
    return st;
}

const sap_trsv_kernels cuda_trsv_table = {"cuda", cuda_trsv_analyze, cuda_trsv_solve, cuda_trsv_destroy, cuda_parilu};

} /* namespace */

extern "C" const sap_trsv_kernels *sap__trsv_kernels_cuda(void) { return &cuda_trsv_table; }
