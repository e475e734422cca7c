/* reorder_cuda.cu -- the GPU-friendly stages of the reorderings (src/reorder): the DB
 * weights (row maxima and c_ij = log a_i - log |a_ij|), the DB scaling of the permuted
 * matrix, and the pattern of A + A^T without its diagonal that Cuthill-McKee searches.
 * Each function takes host arrays, uploads what it needs (counted transfers, 32-bit
 * indices), works on the context's stream with device memory from the pool, and
 * downloads the result; the results equal the CPU code's (src/reorder) bit for bit,
 * except log(), which may differ from the host's in the last bit. */
#include <cuda_runtime.h>
#include <cub/cub.cuh>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device/cuda/cuda_internal.h"

#define BLOCK 256

static inline unsigned grid_for(sap_int items, int per_block)
{
    sap_int g = (items + per_block - 1) / per_block;
    if (g < 1) g = 1;
    if (g > 65535LL * 16) g = 65535LL * 16; /* grid-stride loops cover the rest */
    return (unsigned)g;
}

/* Pool memory for n elements of T. */
template <typename T> static sap_status dalloc(sap_context *ctx, T **p, sap_int n)
{
    return sap__cuda_malloc(ctx, sizeof(T) * (size_t)(n > 0 ? n : 0), (void **)p);
}

/* Row pointers narrowed to 32 bits on the host, then uploaded. */
static sap_status upload_rowptr(sap_context *ctx, const sap_int *rp, sap_int n, int32_t *d_rp)
{
    sap_status st = SAP_OK;
    int32_t *h = NULL;
    SAP_CUDA_HOST_ALLOC(ctx, h, n + 1);
    for (sap_int i = 0; i <= n; i++) h[i] = (int32_t)rp[i];
    st = sap__cuda_h2d(ctx, d_rp, h, sizeof(int32_t) * (size_t)(n + 1));
cleanup:
    sap__free(ctx, h);
    return st;
}

static sap_status upload_colind(sap_context *ctx, const sap_int *ci, sap_int nnz, int32_t *d_ci)
{
    sap_status st = SAP_OK;
    int32_t *h = NULL;
    SAP_CUDA_HOST_ALLOC(ctx, h, nnz);
    for (sap_int p = 0; p < nnz; p++) h[p] = (int32_t)ci[p];
    st = sap__cuda_h2d(ctx, d_ci, h, sizeof(int32_t) * (size_t)nnz);
cleanup:
    sap__free(ctx, h);
    return st;
}

static int fits32(const sap_csr *A, sap_int extra)
{
    return A->nrows < INT32_MAX && A->ncols < INT32_MAX && A->nnz <= (INT32_MAX - extra) / 2;
}

/* ---- DB weights ------------------------------------------------------------------------- */

/* One warp per row: the row maximum by a shuffle tree (max is exact in any order), then
 * the weights with the CPU's formula. */
__global__ void db_weights_kernel(int32_t n, const int32_t *__restrict__ rp, const double *__restrict__ val,
                                  double *__restrict__ c, double *__restrict__ loga,
                                  unsigned long long *__restrict__ nonfinite)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        const int32_t p0 = rp[i], p1 = rp[i + 1];
        double amax = 0.0;
        unsigned cnt = 0;
        for (int32_t p = p0 + lane; p < p1; p += 32) {
            double a = fabs(val[p]);
            if (!isfinite(a)) cnt++;
            if (a > amax) amax = a;
        }
        for (int o = 16; o > 0; o >>= 1) {
            amax = fmax(amax, __shfl_xor_sync(0xffffffffu, amax, o));
            cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
        }
        if (cnt) { /* NaN/Inf: the CPU only counts them (the call fails); amax is moot */
            if (lane == 0) atomicAdd(nonfinite, (unsigned long long)cnt);
        }
        const double la = amax > 0.0 ? log(amax) : 0.0;
        if (lane == 0) loga[i] = la;
        for (int32_t p = p0 + lane; p < p1; p += 32) {
            double a = fabs(val[p]);
            c[p] = a > 0.0 ? (a == amax ? 0.0 : la - log(a)) : (double)INFINITY;
        }
    }
}

extern "C" sap_status sap__cuda_db_weights(sap_context *ctx, const sap_csr *A, double *c, double *loga,
                                           sap_int *nonfinite)
{
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    const sap_int n = A->nrows, nnz = A->nnz;
    *nonfinite = 0;
    if (!fits32(A, 0)) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "GPU DB weights need 32-bit indices");
    if (n == 0) return SAP_OK;
    if (nnz == 0) {
        for (sap_int i = 0; i < n; i++) loga[i] = 0.0;
        return SAP_OK;
    }
    cudaStream_t s = sap__cuda_state(ctx)->stream;
    int32_t *d_rp = NULL;
    double *d_val = NULL, *d_c = NULL, *d_loga = NULL;
    unsigned long long *d_nf = NULL, h_nf = 0;
    SAP_TRY(dalloc(ctx, &d_rp, n + 1));
    SAP_TRY(dalloc(ctx, &d_val, nnz));
    SAP_TRY(dalloc(ctx, &d_c, nnz));
    SAP_TRY(dalloc(ctx, &d_loga, n));
    SAP_TRY(dalloc(ctx, &d_nf, 1));
    SAP_TRY(upload_rowptr(ctx, A->rowptr, n, d_rp));
    SAP_TRY(sap__cuda_h2d(ctx, d_val, A->val, sizeof(double) * (size_t)nnz));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_nf, 0, sizeof(*d_nf), s));
    db_weights_kernel<<<grid_for(n, BLOCK / 32), BLOCK, 0, s>>>((int32_t)n, d_rp, d_val, d_c, d_loga, d_nf);
    SAP_CUDA_TRY_LAUNCH(ctx, "db_weights_kernel");
    SAP_TRY(sap__cuda_d2h(ctx, c, d_c, sizeof(double) * (size_t)nnz));
    SAP_TRY(sap__cuda_d2h(ctx, loga, d_loga, sizeof(double) * (size_t)n));
    SAP_TRY(sap__cuda_d2h(ctx, &h_nf, d_nf, sizeof(h_nf)));
    *nonfinite = (sap_int)h_nf;
cleanup:
    sap__cuda_free(ctx, d_rp);
    sap__cuda_free(ctx, d_val);
    sap__cuda_free(ctx, d_c);
    sap__cuda_free(ctx, d_loga);
    sap__cuda_free(ctx, d_nf);
    return st;
}

/* ---- scaling ----------------------------------------------------------------------------- */

__global__ void scale_kernel(int32_t n, const int32_t *__restrict__ rp, const int32_t *__restrict__ ci,
                             double *__restrict__ val, const double *__restrict__ rs, const double *__restrict__ cs)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        const double ri = rs[i];
        for (int32_t p = rp[i] + lane; p < rp[i + 1]; p += 32) val[p] = __dmul_rn(__dmul_rn(ri, val[p]), cs[ci[p]]);
    }
}

extern "C" sap_status sap__cuda_scale_rows_cols(sap_context *ctx, sap_csr *M, const double *rs, const double *cs)
{
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    const sap_int n = M->nrows, nnz = M->nnz;
    if (!fits32(M, 0)) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "GPU scaling needs 32-bit indices");
    if (n == 0 || nnz == 0) return SAP_OK;
    cudaStream_t s = sap__cuda_state(ctx)->stream;
    int32_t *d_rp = NULL, *d_ci = NULL;
    double *d_val = NULL, *d_rs = NULL, *d_cs = NULL;
    SAP_TRY(dalloc(ctx, &d_rp, n + 1));
    SAP_TRY(dalloc(ctx, &d_ci, nnz));
    SAP_TRY(dalloc(ctx, &d_val, nnz));
    SAP_TRY(dalloc(ctx, &d_rs, n));
    SAP_TRY(dalloc(ctx, &d_cs, M->ncols));
    SAP_TRY(upload_rowptr(ctx, M->rowptr, n, d_rp));
    SAP_TRY(upload_colind(ctx, M->colind, nnz, d_ci));
    SAP_TRY(sap__cuda_h2d(ctx, d_val, M->val, sizeof(double) * (size_t)nnz));
    SAP_TRY(sap__cuda_h2d(ctx, d_rs, rs, sizeof(double) * (size_t)n));
    SAP_TRY(sap__cuda_h2d(ctx, d_cs, cs, sizeof(double) * (size_t)M->ncols));
    scale_kernel<<<grid_for(n, BLOCK / 32), BLOCK, 0, s>>>((int32_t)n, d_rp, d_ci, d_val, d_rs, d_cs);
    SAP_CUDA_TRY_LAUNCH(ctx, "scale_kernel");
    SAP_TRY(sap__cuda_d2h(ctx, M->val, d_val, sizeof(double) * (size_t)nnz));
cleanup:
    sap__cuda_free(ctx, d_rp);
    sap__cuda_free(ctx, d_ci);
    sap__cuda_free(ctx, d_val);
    sap__cuda_free(ctx, d_rs);
    sap__cuda_free(ctx, d_cs);
    return st;
}

/* ---- symmetrized pattern ------------------------------------------------------------------ */

/* Keys (i << 32 | j) and (j << 32 | i) of every off-diagonal entry (i, j); a diagonal
 * entry gives the key n << 32, which sorts after all others and is cut off. */
__global__ void sym_keys_kernel(int32_t n, const int32_t *__restrict__ rp, const int32_t *__restrict__ ci,
                                unsigned long long *__restrict__ keys)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        for (int32_t p = rp[i] + lane; p < rp[i + 1]; p += 32) {
            const unsigned long long j = (unsigned)ci[p], r = (unsigned long long)i;
            const bool diag = j == r;
            keys[2 * (int64_t)p] = diag ? (unsigned long long)n << 32 : (r << 32 | j);
            keys[2 * (int64_t)p + 1] = diag ? (unsigned long long)n << 32 : (j << 32 | r);
        }
    }
}

/* Sorted unique keys -> neighbour list and per-row counts. */
__global__ void sym_split_kernel(int64_t m, const unsigned long long *__restrict__ keys, int32_t *__restrict__ adj,
                                 int32_t *__restrict__ deg)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < m; k += (int64_t)gridDim.x * blockDim.x) {
        const unsigned long long key = keys[k];
        adj[k] = (int32_t)(key & 0xffffffffull);
        atomicAdd(&deg[key >> 32], 1);
    }
}

__global__ void count_valid_kernel(int32_t n, const unsigned long long *__restrict__ keys,
                                   const int32_t *__restrict__ nuniq, int32_t *__restrict__ m)
{
    const int32_t u = *nuniq;
    *m = (u > 0 && (keys[u - 1] >> 32) == (unsigned long long)n) ? u - 1 : u;
}

extern "C" sap_status sap__cuda_sym_graph(sap_context *ctx, const sap_csr *A, sap_int *xadj, int32_t *adj,
                                          sap_int *nadj)
{
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    const sap_int n = A->nrows, nnz = A->nnz;
    *nadj = 0;
    if (A->nrows != A->ncols || !fits32(A, 2)) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "GPU graph needs 32-bit indices");
    if (n == 0 || nnz == 0) {
        for (sap_int i = 0; i <= n; i++) xadj[i] = 0;
        return SAP_OK;
    }
    cudaStream_t s = sap__cuda_state(ctx)->stream;
    const sap_int nk = 2 * nnz;
    int end_bit = 32;
    while (end_bit < 64 && ((unsigned long long)n >> (end_bit - 32)) != 0) end_bit++; /* row keys 0..n */
    int32_t *d_rp = NULL, *d_ci = NULL, *d_adj = NULL, *d_deg = NULL, *d_nu = NULL, *d_m = NULL;
    unsigned long long *d_k0 = NULL, *d_k1 = NULL;
    long long *d_x = NULL;
    void *d_tmp = NULL;
    size_t tmp_sort = 0, tmp_uniq = 0, tmp_scan = 0, tmp = 0;
    int32_t h_m = 0;
    SAP_TRY(dalloc(ctx, &d_rp, n + 1));
    SAP_TRY(dalloc(ctx, &d_ci, nnz));
    SAP_TRY(dalloc(ctx, &d_k0, nk));
    SAP_TRY(dalloc(ctx, &d_k1, nk));
    SAP_TRY(dalloc(ctx, &d_deg, n + 1));
    SAP_TRY(dalloc(ctx, &d_nu, 2));
    SAP_TRY(dalloc(ctx, &d_x, n + 1));
    d_m = d_nu + 1;
    SAP_TRY(upload_rowptr(ctx, A->rowptr, n, d_rp));
    SAP_TRY(upload_colind(ctx, A->colind, nnz, d_ci));
    if (nk > 0) {
        sym_keys_kernel<<<grid_for(n, BLOCK / 32), BLOCK, 0, s>>>((int32_t)n, d_rp, d_ci, d_k0);
        SAP_CUDA_TRY_LAUNCH(ctx, "sym_keys_kernel");
    }
    {
        cub::DoubleBuffer<unsigned long long> db(d_k0, d_k1);
        SAP_CUDA_TRY(ctx, cub::DeviceRadixSort::SortKeys(NULL, tmp_sort, db, (int)nk, 0, end_bit, s));
        SAP_CUDA_TRY(ctx, cub::DeviceSelect::Unique(NULL, tmp_uniq, d_k0, d_k1, d_nu, (int)nk, s));
        SAP_CUDA_TRY(ctx, cub::DeviceScan::ExclusiveSum(NULL, tmp_scan, d_deg, d_x, (int)(n + 1), s));
        tmp = tmp_sort > tmp_uniq ? tmp_sort : tmp_uniq;
        if (tmp_scan > tmp) tmp = tmp_scan;
        SAP_TRY(sap__cuda_malloc(ctx, tmp, &d_tmp));
        SAP_CUDA_TRY(ctx, cub::DeviceRadixSort::SortKeys(d_tmp, tmp_sort, db, (int)nk, 0, end_bit, s));
        unsigned long long *sorted = db.Current(), *other = db.Alternate();
        SAP_CUDA_TRY(ctx, cub::DeviceSelect::Unique(d_tmp, tmp_uniq, sorted, other, d_nu, (int)nk, s));
        count_valid_kernel<<<1, 1, 0, s>>>((int32_t)n, other, d_nu, d_m);
        SAP_CUDA_TRY_LAUNCH(ctx, "count_valid_kernel");
        SAP_TRY(sap__cuda_d2h(ctx, &h_m, d_m, sizeof(h_m)));
        /* the neighbour list goes into the buffer the sorted keys left free */
        d_adj = (int32_t *)sorted;
        SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_deg, 0, sizeof(int32_t) * (size_t)(n + 1), s));
        if (h_m > 0) {
            sym_split_kernel<<<grid_for(h_m, BLOCK * 4), BLOCK, 0, s>>>(h_m, other, d_adj, d_deg);
            SAP_CUDA_TRY_LAUNCH(ctx, "sym_split_kernel");
        }
        /* row pointers: the exclusive sum of the degrees, widened to 64 bits as it is
         * written (the sum itself fits 32 bits: at most 2 nnz) */
        SAP_CUDA_TRY(ctx, cub::DeviceScan::ExclusiveSum(d_tmp, tmp_scan, d_deg, d_x, (int)(n + 1), s));
        SAP_TRY(sap__cuda_d2h(ctx, xadj, d_x, sizeof(long long) * (size_t)(n + 1)));
        if (h_m > 0) SAP_TRY(sap__cuda_d2h(ctx, adj, d_adj, sizeof(int32_t) * (size_t)h_m));
    }
    *nadj = h_m;
cleanup:
    sap__cuda_free(ctx, d_rp);
    sap__cuda_free(ctx, d_ci);
    sap__cuda_free(ctx, d_k0);
    sap__cuda_free(ctx, d_k1);
    sap__cuda_free(ctx, d_deg);
    sap__cuda_free(ctx, d_nu);
    sap__cuda_free(ctx, d_tmp);
    sap__cuda_free(ctx, d_x);
    return st;
}
