/* bjacobi_cuda.cu -- the cuda implementation of the batched block-Jacobi kernels
 * (device/bjacobi_kernels.h).
 *
 * factor   one kernel per group width W = 4, 8, 16, 32 (blocks of <= 4, 5..8, 9..16 and
 *          17..32 rows: 8, 4, 2 or 1 blocks per warp), all blocks of a width in one
 *          launch.  A group of W lanes owns one block, one row per lane: the lanes gather
 *          their rows from the CSR (the columns of the block found through the row ->
 *          block map) into a shared-memory tile, take their row into registers, and run
 *          Gauss-Jordan inversion or LU with implicit pivoting: the pivot of step k is the
 *          lane with the largest |a(., k)| among the lanes not pivoted yet (butterfly
 *          argmax over the group, the lowest lane on ties, as the cpu reference), its row
 *          is broadcast by warp shuffles, and no row moves.  kappa_1 comes from the
 *          column sums of the block and of its inverse (GJ: the inverse itself; LU: each
 *          lane solves for one column of the inverse from the factors in shared memory),
 *          summed in the cpu's order; then the storage precision and its power-of-two
 *          scale, and every lane writes its row of the result in that precision
 *          (cuda_fp16.h for fp16), column-major (coalesced across the lanes).
 * apply    GJ: one thread per row, z_i = scale * sum_j inv(k, j) r_(rows j) reading the
 *          block's column j (consecutive rows of a block read consecutive addresses), the
 *          storage precision switched per block.  LU: one thread per block (forward and
 *          backward substitution from its factors).
 * Not done: one launch for all widths; a warp-cooperative LU apply. */
#include "device/cuda/cuda_internal.h"
#include "device/bjacobi_kernels.h"

#include <cuda_fp16.h>
#include <float.h>
#include <string.h>

namespace {

struct bj_dev {
    const int32_t *rows, *off, *blk, *rowptr, *col;
    const uint8_t *pos;
    const long long *soff;
    const double *val;
    unsigned char *store;
    uint8_t *piv, *bprec, *info;
    double *cond, *scale;
};

struct cuda_bj {
    bj_dev d;
    int32_t *list;     /* blocks grouped by width class */
    long long cls[5];  /* class c holds list[cls[c] .. cls[c+1]) */
    void *mem[16];
    int nmem;
    long long nnz;
};

static inline cudaStream_t stream_of(sap_context *ctx) { return (cudaStream_t)sap__cuda_stream(ctx); }

/* the maximum over the group of W lanes; the shuffles name the whole warp, so every lane of
 * the warp calls this from the same place (never under a branch that is uniform over the
 * group only: undefined behaviour) */
template <int W> __device__ inline double group_max(double v)
{
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o, W));
    return v;
}

#define TILE(i, j) tile[(i) * (W + 1) + (j)]

template <int W, bool LU>
__global__ void __launch_bounds__(128) k_factor(bj_dev d, const int32_t *list, int nlist, double c16, double c32,
                                                int adaptive)
{
    extern __shared__ double smem[];
    const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const int grp = gtid / W, lane = threadIdx.x % W;
    double *tile = smem + (threadIdx.x / W) * W * (W + 1);
    const bool valid = grp < nlist;
    const int b = valid ? list[grp] : 0;
    const int o = valid ? d.off[b] : 0;
    const int s = valid ? d.off[b + 1] - o : 0;
    const bool mine = lane < s;
    /* extraction into the tile */
#pragma unroll
    for (int j = 0; j < W; j++) TILE(lane, j) = 0.0;
    int nonfinite = 0;
    if (mine) {
        const int r = d.rows[o + lane];
        for (int p = d.rowptr[r]; p < d.rowptr[r + 1]; p++) {
            const int c = d.col[p];
            if (d.blk[c] == b) {
                const double v = d.val[p];
                TILE(lane, d.pos[c]) = v;
                if (!isfinite(v)) nonfinite = 1;
            }
        }
    }
    __syncwarp();
    double a[W];
#pragma unroll
    for (int j = 0; j < W; j++) a[j] = TILE(lane, j);
    const double dii = mine ? TILE(lane, lane) : 0.0;
    /* ||A_b||_1: lane j sums column j in row order (the cpu's order) */
    double cs = 0;
    if (mine)
        for (int i = 0; i < s; i++) cs += fabs(TILE(i, lane));
    const double nA = group_max<W>(cs);
    nonfinite = group_max<W>((double)nonfinite) > 0;
    const double tiny = (double)s * DBL_EPSILON * nA;
    /* the warp's largest block bounds the steps (shuffles need the whole warp) */
    const int smax = __reduce_max_sync(0xffffffffu, s);
    int perm[W];
    int fail = nonfinite, mystep = -1;
    bool done = false;
#pragma unroll
    for (int k = 0; k < W; k++) {
        if (k >= smax) break;
        double cv = (mine && !done && k < s) ? fabs(a[k]) : -1.0;
        int ci = lane;
#pragma unroll
        for (int off = W / 2; off > 0; off /= 2) {
            const double ov = __shfl_xor_sync(0xffffffffu, cv, off, W);
            const int oi = __shfl_xor_sync(0xffffffffu, ci, off, W);
            if (ov > cv || (ov == cv && oi < ci)) cv = ov, ci = oi;
        }
        const int p = ci;
        perm[k] = p;
        const double pv = __shfl_sync(0xffffffffu, a[k], p, W);
        const bool act = k < s && !fail;
        if (act && !(fabs(pv) > tiny)) fail = k + 1;
        const bool upd = k < s && !fail;
        if (!LU) {
            const double dinv = 1.0 / pv;
            const double f = a[k];
#pragma unroll
            for (int j = 0; j < W; j++) {
                const double t = __shfl_sync(0xffffffffu, a[j], p, W) * dinv;
                if (upd) {
                    if (lane == p) a[j] = j == k ? dinv : t;
                    else if (mine) a[j] = j == k ? -f * dinv : a[j] - f * t;
                }
            }
        } else {
            const bool elim = upd && mine && !done && lane != p;
            const double l = a[k] / pv;
            if (elim) a[k] = l;
#pragma unroll
            for (int j = 0; j < W; j++) {
                const double pj = __shfl_sync(0xffffffffu, a[j], p, W);
                if (elim && j > k) a[j] -= l * pj;
            }
        }
        if (upd && lane == p) {
            done = true;
            mystep = k;
        }
    }
    __syncwarp();
    /* the result into the tile: GJ inv(k, perm[j]) = X(perm[k], j); LU row k of L\U */
    if (!fail && mine) {
#pragma unroll
        for (int j = 0; j < W; j++)
            if (j < s) {
                if (!LU) TILE(mystep, perm[j]) = a[j];
                else TILE(mystep, j) = a[j];
            }
    }
    __syncwarp();
    /* (fail is uniform over the group but not over the warp: the warp-wide shuffles of
     * group_max run outside the branches, every lane of the warp at the same call site) */
    double c = 0;
    if (!fail) {
        if (mine) {
            if (!LU) {
                for (int i = 0; i < s; i++) c += fabs(TILE(i, lane));
            } else {
                double y[W];
#pragma unroll
                for (int k = 0; k < W; k++)
                    if (k < s) {
                        double v = perm[k] == lane ? 1.0 : 0.0;
#pragma unroll
                        for (int i = 0; i < k; i++) v -= TILE(k, i) * y[i];
                        y[k] = v;
                    }
#pragma unroll
                for (int k = W - 1; k >= 0; k--)
                    if (k < s) {
                        double v = y[k];
#pragma unroll
                        for (int j = k + 1; j < W; j++)
                            if (j < s) v -= TILE(k, j) * y[j];
                        y[k] = v / TILE(k, k);
                        c += fabs(y[k]);
                    }
            }
        }
    }
    const double nInv = group_max<W>(c);
    __syncwarp();
    const double kappa = fail ? (double)INFINITY : nA * nInv;
    int info = nonfinite ? SAP_BJ_NONFINITE : fail ? SAP_BJ_SINGULAR : SAP_BJ_OK;
    if (!info && !(kappa * DBL_EPSILON < 1.0)) info = SAP_BJ_ILL;
    int prec = SAP_BJ_FP64;
    double sc = 1.0;
    if (info) {
        /* scalar Jacobi for the block */
        if (mine) {
            const double aii = dii == 0.0 || !isfinite(dii) ? 1.0 : dii;
#pragma unroll
            for (int j = 0; j < W; j++) TILE(lane, j) = 0.0;
            TILE(lane, lane) = LU ? aii : 1.0 / aii;
        }
    } else if (adaptive) {
        if (kappa <= c16) prec = SAP_BJ_FP16;
        else if (kappa <= c32) prec = SAP_BJ_FP32;
    }
    __syncwarp();
    /* (prec is uniform over the group only: the reduction unconditional, as above) */
    double m = 0;
    if (prec != SAP_BJ_FP64 && mine)
        for (int j = LU ? lane : 0; j < s; j++) m = fmax(m, fabs(TILE(lane, j)));
    m = group_max<W>(m);
    if (prec != SAP_BJ_FP64) sc = m > 0 && isfinite(m) ? ldexp(1.0, ilogb(m) - 13) : 1.0;
    if (valid && mine) {
        unsigned char *slot = d.store + d.soff[b];
        for (int j = 0; j < s; j++) {
            const double x = (LU && j < lane) ? TILE(lane, j) : TILE(lane, j) / sc;
            const int idx = j * s + lane;
            if (prec == SAP_BJ_FP64) ((double *)slot)[idx] = x;
            else if (prec == SAP_BJ_FP32) ((float *)slot)[idx] = __double2float_rn(x);
            else ((__half *)slot)[idx] = __double2half(x);
        }
        if (LU) d.piv[o + (info ? lane : mystep)] = (uint8_t)lane;
        if (lane == 0) {
            d.bprec[b] = (uint8_t)prec;
            d.info[b] = (uint8_t)info;
            d.cond[b] = kappa;
            d.scale[b] = sc;
        }
    }
}

__device__ inline double load_val(const unsigned char *slot, int prec, int idx)
{
    if (prec == SAP_BJ_FP64) return ((const double *)slot)[idx];
    if (prec == SAP_BJ_FP32) return (double)((const float *)slot)[idx];
    return (double)__half2float(((const __half *)slot)[idx]);
}

template <typename T> __global__ void k_apply_gj(bj_dev d, int n, const T *__restrict__ r, T *__restrict__ z)
{
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n) return;
    const int i = d.rows[q];
    const int b = d.blk[i];
    const int o = d.off[b], s = d.off[b + 1] - o, k = q - o;
    const unsigned char *slot = d.store + d.soff[b];
    const int prec = d.bprec[b];
    double y = 0;
    if (prec == SAP_BJ_FP64) {
        const double *m = (const double *)slot;
        for (int j = 0; j < s; j++) y += m[j * s + k] * (double)r[d.rows[o + j]];
    } else if (prec == SAP_BJ_FP32) {
        const float *m = (const float *)slot;
        for (int j = 0; j < s; j++) y += (double)m[j * s + k] * (double)r[d.rows[o + j]];
    } else {
        const __half *m = (const __half *)slot;
        for (int j = 0; j < s; j++) y += (double)__half2float(m[j * s + k]) * (double)r[d.rows[o + j]];
    }
    z[i] = (T)(y * d.scale[b]);
}

template <typename T> __global__ void k_apply_lu(bj_dev d, int nb, const T *__restrict__ r, T *__restrict__ z)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    const int o = d.off[b], s = d.off[b + 1] - o;
    const unsigned char *slot = d.store + d.soff[b];
    const int prec = d.bprec[b];
    const double sc = d.scale[b];
    double y[32];
    for (int k = 0; k < s; k++) {
        double v = (double)r[d.rows[o + d.piv[o + k]]];
        for (int i = 0; i < k; i++) v -= load_val(slot, prec, i * s + k) * y[i];
        y[k] = v;
    }
    for (int k = s - 1; k >= 0; k--) {
        double v = y[k] / sc;
        for (int j = k + 1; j < s; j++) v -= load_val(slot, prec, j * s + k) * y[j];
        y[k] = v / load_val(slot, prec, k * s + k);
    }
    for (int k = 0; k < s; k++) z[d.rows[o + k]] = (T)y[k];
}

static void c_release(sap_bj_fact *F)
{
    cuda_bj *pv = (cuda_bj *)F->dev;
    if (!pv) return;
    for (int i = 0; i < pv->nmem; i++) sap__cuda_free(F->ctx, pv->mem[i]);
    sap__free(F->ctx, pv);
    F->dev = NULL;
}

/* device copy of bytes of host data (NULL: allocation only) */
static sap_status dev_array(sap_context *ctx, cuda_bj *pv, const void *host, size_t bytes, void **out)
{
    sap_status st = sap__cuda_malloc(ctx, bytes ? bytes : 8, out);
    if (st < 0) return st;
    pv->mem[pv->nmem++] = *out;
    if (host) st = sap__cuda_h2d(ctx, *out, host, bytes);
    return st;
}

static int width_class(long long s) { return s <= 4 ? 0 : s <= 8 ? 1 : s <= 16 ? 2 : 3; }

static sap_status c_prepare(sap_bj_fact *F, const sap_csr *A)
{
    sap_context *ctx = F->ctx;
    sap_status st = SAP_OK;
    const long long n = F->n, nb = F->nb, nnz = A->nnz;
    int32_t *h32 = NULL;
    uint8_t *h8 = NULL;
    long long *h64 = NULL;
    cuda_bj *pv = NULL;
    if (n >= INT32_MAX || nnz >= INT32_MAX || F->soff[nb] >= (long long)INT32_MAX * 8)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "block-Jacobi on cuda: %lld rows, %lld entries exceed 32-bit indices",
                         n, nnz);
    SAP_TRY(sap__cuda_enter(ctx));
    c_release(F);
    SAP_CUDA_HOST_ALLOC(ctx, pv, 1);
    memset(pv, 0, sizeof(*pv));
    F->dev = pv;
    pv->nnz = nnz;
    {
        const size_t m32 = (size_t)(n + 1 > nnz ? n + 1 : nnz) + (size_t)nb + 1;
        SAP_CUDA_HOST_ALLOC(ctx, h32, m32);
        SAP_CUDA_HOST_ALLOC(ctx, h8, n + 1);
        SAP_CUDA_HOST_ALLOC(ctx, h64, nb + 1);
    }
    void *p;
    /* rows */
    for (long long i = 0; i < n; i++) h32[i] = (int32_t)F->rows[i];
    SAP_TRY(dev_array(ctx, pv, h32, sizeof(int32_t) * (size_t)n, &p));
    pv->d.rows = (const int32_t *)p;
    for (long long b = 0; b <= nb; b++) h32[b] = (int32_t)F->off[b];
    SAP_TRY(dev_array(ctx, pv, h32, sizeof(int32_t) * (size_t)(nb + 1), &p));
    pv->d.off = (const int32_t *)p;
    /* row -> block, position */
    for (long long b = 0; b < nb; b++)
        for (long long k = F->off[b]; k < F->off[b + 1]; k++) {
            h32[F->rows[k]] = (int32_t)b;
            h8[F->rows[k]] = (uint8_t)(k - F->off[b]);
        }
    SAP_TRY(dev_array(ctx, pv, h32, sizeof(int32_t) * (size_t)n, &p));
    pv->d.blk = (const int32_t *)p;
    SAP_TRY(dev_array(ctx, pv, h8, (size_t)n, &p));
    pv->d.pos = (const uint8_t *)p;
    /* the pattern */
    for (long long i = 0; i <= n; i++) h32[i] = (int32_t)A->rowptr[i];
    SAP_TRY(dev_array(ctx, pv, h32, sizeof(int32_t) * (size_t)(n + 1), &p));
    pv->d.rowptr = (const int32_t *)p;
    for (long long q = 0; q < nnz; q++) h32[q] = (int32_t)A->colind[q];
    SAP_TRY(dev_array(ctx, pv, h32, sizeof(int32_t) * (size_t)nnz, &p));
    pv->d.col = (const int32_t *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, sizeof(double) * (size_t)nnz, &p));
    pv->d.val = (const double *)p;
    /* blocks by width class */
    {
        long long cnt[4] = {0, 0, 0, 0};
        for (long long b = 0; b < nb; b++) cnt[width_class(F->off[b + 1] - F->off[b])]++;
        pv->cls[0] = 0;
        for (int c = 0; c < 4; c++) pv->cls[c + 1] = pv->cls[c] + cnt[c];
        long long fill[4] = {pv->cls[0], pv->cls[1], pv->cls[2], pv->cls[3]};
        for (long long b = 0; b < nb; b++) h32[fill[width_class(F->off[b + 1] - F->off[b])]++] = (int32_t)b;
        SAP_TRY(dev_array(ctx, pv, h32, sizeof(int32_t) * (size_t)nb, &p));
        pv->list = (int32_t *)p;
    }
    for (long long b = 0; b <= nb; b++) h64[b] = F->soff[b];
    SAP_TRY(dev_array(ctx, pv, h64, sizeof(long long) * (size_t)(nb + 1), &p));
    pv->d.soff = (const long long *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, (size_t)F->soff[nb], &p));
    pv->d.store = (unsigned char *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, (size_t)n, &p));
    pv->d.piv = (uint8_t *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, (size_t)nb, &p));
    pv->d.bprec = (uint8_t *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, (size_t)nb, &p));
    pv->d.info = (uint8_t *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, sizeof(double) * (size_t)nb, &p));
    pv->d.cond = (double *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, sizeof(double) * (size_t)nb, &p));
    pv->d.scale = (double *)p;
cleanup:
    sap__free(ctx, h32);
    sap__free(ctx, h8);
    sap__free(ctx, h64);
    if (st < 0) c_release(F);
    return st;
}

static sap_status c_load(sap_bj_fact *F, const sap_csr *A)
{
    cuda_bj *pv = (cuda_bj *)F->dev;
    if (!pv || A->nnz != pv->nnz) return SAP_ERROR(F->ctx, SAP_ERR_INVALID, "block-Jacobi: load of another pattern");
    sap_status st = sap__cuda_enter(F->ctx);
    if (st < 0) return st;
    return sap__cuda_h2d(F->ctx, (void *)pv->d.val, A->val, sizeof(double) * (size_t)A->nnz);
}

template <int W> static sap_status launch_factor(sap_bj_fact *F, cuda_bj *pv, int c)
{
    const long long nl = pv->cls[c + 1] - pv->cls[c];
    if (nl == 0) return SAP_OK;
    const int threads = 128;
    const size_t smem = sizeof(double) * (size_t)(threads / W) * W * (W + 1);
    const long long grid = (nl * W + threads - 1) / threads;
    cudaStream_t s = stream_of(F->ctx);
    if (F->variant == SAP_BJ_LU)
        k_factor<W, true><<<(unsigned)grid, threads, smem, s>>>(pv->d, pv->list + pv->cls[c], (int)nl, F->cond_fp16,
                                                                 F->cond_fp32, F->adaptive);
    else
        k_factor<W, false><<<(unsigned)grid, threads, smem, s>>>(pv->d, pv->list + pv->cls[c], (int)nl, F->cond_fp16,
                                                                  F->cond_fp32, F->adaptive);
    SAP_CUDA_LAUNCHED(F->ctx, "block-Jacobi factor");
    return SAP_OK;
}

static sap_status c_factor(sap_bj_fact *F)
{
    sap_context *ctx = F->ctx;
    cuda_bj *pv = (cuda_bj *)F->dev;
    sap_status st = SAP_OK;
    SAP_TRY(sap__cuda_enter(ctx));
    SAP_TRY(launch_factor<4>(F, pv, 0));
    SAP_TRY(launch_factor<8>(F, pv, 1));
    SAP_TRY(launch_factor<16>(F, pv, 2));
    SAP_TRY(launch_factor<32>(F, pv, 3));
    if (F->no_results) goto cleanup;
    SAP_TRY(sap__cuda_d2h(ctx, F->bprec, pv->d.bprec, (size_t)F->nb));
    SAP_TRY(sap__cuda_d2h(ctx, F->info, pv->d.info, (size_t)F->nb));
    SAP_TRY(sap__cuda_d2h(ctx, F->cond, pv->d.cond, sizeof(double) * (size_t)F->nb));
    SAP_TRY(sap__cuda_d2h(ctx, F->scale, pv->d.scale, sizeof(double) * (size_t)F->nb));
cleanup:
    return st;
}

static sap_status c_apply(sap_bj_fact *F, const void *r, void *z, sap_precision prec)
{
    sap_context *ctx = F->ctx;
    cuda_bj *pv = (cuda_bj *)F->dev;
    sap_status st = sap__cuda_enter(ctx);
    if (st < 0) return st;
    cudaStream_t s = stream_of(ctx);
    const int threads = 256;
    if (F->n == 0) return SAP_OK;
    if (F->variant == SAP_BJ_GJ) {
        const unsigned grid = (unsigned)((F->n + threads - 1) / threads);
        if (prec == SAP_FLOAT) k_apply_gj<float><<<grid, threads, 0, s>>>(pv->d, (int)F->n, (const float *)r, (float *)z);
        else k_apply_gj<double><<<grid, threads, 0, s>>>(pv->d, (int)F->n, (const double *)r, (double *)z);
    } else {
        const unsigned grid = (unsigned)((F->nb + 127) / 128);
        if (prec == SAP_FLOAT) k_apply_lu<float><<<grid, 128, 0, s>>>(pv->d, (int)F->nb, (const float *)r, (float *)z);
        else k_apply_lu<double><<<grid, 128, 0, s>>>(pv->d, (int)F->nb, (const double *)r, (double *)z);
    }
    SAP_CUDA_LAUNCHED(ctx, "block-Jacobi apply");
    return SAP_OK;
}

sap_bjacobi_kernels make_table()
{
    sap_bjacobi_kernels t;
    memset(&t, 0, sizeof(t));
    t.name = "cuda";
    t.prepare = c_prepare;
    t.release = c_release;
    t.load = c_load;
    t.factor = c_factor;
    t.apply = c_apply;
    return t;
}

const sap_bjacobi_kernels cuda_bj_table = make_table();

} // namespace

extern "C" const sap_bjacobi_kernels *sap__bjacobi_kernels_cuda(void) { return &cuda_bj_table; }
