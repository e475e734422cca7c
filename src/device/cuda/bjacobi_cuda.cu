/* bjacobi_cuda.cu -- the cuda implementation of the batched block-Jacobi kernels
 * (device/bjacobi_kernels.h).
 *
 * factor   one launch for the whole variable-size batch: every warp takes one width class
 *          W = 4, 8, 16, 32 (blocks of <= 4, 5..8, 9..16 and 17..32 rows: 8, 4, 2 or 1
 *          blocks a warp).  A group of W lanes owns one block: for W <= 8 each lane walks
 *          its own row of the CSR (the block's columns: one range compare with identity
 *          rows, else the row -> block map); for W = 16, 32 the lanes read the entries of
 *          the block's rows together (the rows flattened, W consecutive entries a load, 4
 *          loads in flight, a binary search for the row of each entry); either way into a
 *          shared-memory tile (rows padded to W + 1: no bank conflict), each lane
 *          takes its row into registers (double a[W], W a template argument), and runs
 *          Gauss-Jordan inversion or LU with implicit pivoting: the pivot of step k is the
 *          lane with the largest |a(., k)| among the lanes not pivoted yet (two 32-bit max
 *          reductions of the bits of |a| and a ballot: the lowest lane on ties, as the cpu
 *          reference); the pivot lane writes its (scaled) row to the group's pivot row in
 *          shared memory, the others read it back as broadcast 16-byte loads, and no row
 *          moves.  kappa_1 comes from the column sums of the block and of its inverse (GJ:
 *          the inverse itself; LU: each lane solves for one column of the inverse from the
 *          factors in shared memory), summed in the cpu's order; then the storage
 *          precision and its power-of-two scale, and every lane writes its row of the
 *          result in that precision (cuda_fp16.h for fp16), column-major (coalesced).
 * storage  compact: block b holds s^2 values in its precision at soff[b] (16-byte
 *          aligned).  Without adaptive precision every block is fp64 and the factor writes
 *          there directly; with it the factor writes fp64-sized slots of a scratch buffer,
 *          then the compact offsets (cub scan of the sizes) and a 16-byte copy.
 * apply    one launch of persistent warps (the grid fills the device once), each walking warp
 *          units of the factor's classes (32 / W blocks a unit, a group of W lanes a block):
 *          the next unit's storage (16-byte cp.async, coalesced) and r of its rows (cp.async
 *          of one element a lane) are copied into the warp's second shared-memory buffer
 *          while the current unit computes, and the records (list position -> offset, rows,
 *          size, precision, scale) are loaded a unit before that.  GJ: lane k computes
 *          z_k = scale sum_j inv(k, j) r_j from the staged column-major values (consecutive
 *          lanes, consecutive addresses).  LU: lane k owns step row k: forward substitution
 *          by columns (y_k broadcast by a shuffle, the lanes below update), then backward
 *          (x_k = v_k / u_kk broadcast, the lanes above update); a warp whose blocks share
 *          one precision runs loops without a precision branch. */
#include "device/cuda/cuda_internal.h"
#include "device/bjacobi_kernels.h"

#include <cub/cub.cuh>
#include <cuda_fp16.h>
#include <float.h>
#include <string.h>

namespace {

struct bj_dev {
    const int32_t *rows, *off, *blk, *rowptr, *col;
    const uint8_t *pos;
    const long long *slot; /* nb + 1: byte offsets of the fp64-sized slots the factor writes */
    const long long *soff; /* nb + 1: byte offsets of the compact storage the apply reads */
    const double *val;
    uint8_t *piv, *bprec, *info;
    double *cond, *scale;
    int ident; /* rows[k] == k for every k: the row indirection is skipped */
};

/* warps of one launch by width class: class c (W = 4 << c) has the warps
 * [w[c + 1], w[c]) (the widest class first: the longest work starts first) and the blocks
 * list[l[c] .. l[c + 1]) */
struct classes {
    int w[5];
    int l[5];
};

struct cuda_bj {
    bj_dev d;
    unsigned char *store;   /* the apply's storage (compact) */
    unsigned char *scratch; /* adaptive: the factor's fp64-sized slots, compacted into store */
    long long *slot, *soff, *csize;
    void *scan_tmp;
    size_t scan_bytes;
    int32_t *list;    /* blocks grouped by width class */
    int4 *meta;       /* nb: the apply's record of list position g (k_meta) */
    double *gscale;   /* nb: the scale of list position g */
    long long cls[5]; /* class c holds list[cls[c] .. cls[c+1]) */
    void *mem[24];
    int nmem;
    long long nnz;
    int maxeb; /* the bytes of the widest precision stored (8 unless factor returned them) */
    int ap_key;            /* the apply's launch below is for maxeb 8 * variant + maxeb (0: not yet) */
    unsigned ap_grid[2];   /* its persistent grid (double, float vectors) */
};

static inline cudaStream_t stream_of(sap_context *ctx) { return (cudaStream_t)sap__cuda_stream(ctx); }

/* the maximum over the group of W lanes (mask gm, the group's lanes) */
template <int W> __device__ inline double group_max(double v, unsigned gm)
{
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) v = fmax(v, __shfl_xor_sync(gm, v, o, W));
    return v;
}

template <int W> __device__ inline unsigned group_umax(unsigned v, unsigned gm)
{
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(gm, v);
#else
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) v = max(v, __shfl_xor_sync(gm, v, o, W));
    return v;
#endif
}

/* shared memory of one warp of the factor kernel: the groups' tiles (W x (W + 1) doubles
 * each, 32 (W + 1) in all), the pivot rows (32 doubles), and per group the row starts of
 * the flattened extraction, the rows' first entries and the pivot order (3 W + 2 ints) */
static inline size_t factor_smem_warp(int W, int) { return (size_t)(32 * (W + 1) + 32) * 8 + 112 * 4; }

#define TILE(i, j) tile[(i) * (W + 1) + (j)]

/* One group of W lanes factors block b (b < 0: an idle group that only takes part in the
 * group-wide operations).  Lane l owns row l in registers; the pivot of step k is the row
 * not pivoted yet with the largest |a(., k)| (the lowest lane on ties: two 32-bit max
 * reductions of the bits of |a| and a ballot), its row goes to the group's pivot row in
 * shared memory (one writer, broadcast reads: no bank conflict) and no row moves. */
template <int W, bool LU>
__device__ __forceinline__ void factor_group(const bj_dev &d, unsigned char *out, int b, unsigned char *sm, double c16,
                                             double c32, int adaptive)
{
    const int lane = threadIdx.x & 31, grp = lane / W, gbase = grp * W, l = lane - gbase;
    const unsigned gm = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << gbase;
    double *tile = (double *)sm + grp * W * (W + 1);
    double *prow = (double *)sm + 32 * (W + 1) + gbase;
    int *istart = (int *)((double *)sm + 32 * (W + 1) + 32) + grp * (3 * W + 2);
    int *ip0 = istart + W + 1, *iperm = ip0 + W;
    const bool valid = b >= 0;
    const int o = valid ? d.off[b] : 0;
    const int s = valid ? d.off[b + 1] - o : 0;
    const bool mine = l < s;
    int nonfinite = 0;
#pragma unroll
    for (int j = 0; j < W; j++) TILE(l, j) = 0.0;
    if (W <= 8) {
        /* narrow groups: each lane walks its own row (rowptr[r] .. rowptr[r + 1]) and keeps
         * the entries in the block's columns: with identity rows the block's columns are
         * o .. o + s - 1 (one compare), else the row -> block map */
        if (mine) {
            const int r = d.ident ? o + l : d.rows[o + l];
            const int p0 = __ldg(d.rowptr + r), p1 = __ldg(d.rowptr + r + 1);
#pragma unroll 4
            for (int p = p0; p < p1; p++) {
                const int c = __ldg(d.col + p);
                const double v = __ldg(d.val + p);
                int j;
                if (d.ident) j = (unsigned)(c - o) < (unsigned)s ? c - o : -1;
                else j = __ldg(d.blk + c) == b ? (int)__ldg(d.pos + c) : -1;
                if (j >= 0) {
                    TILE(l, j) = v;
                    if (!isfinite(v)) nonfinite = 1;
                }
            }
        }
    } else {
        /* wider groups: the entries of the block's rows, flattened, read by the group's
         * lanes together (coalesced), 4 W entries in flight */
        int p0 = 0, len = 0;
        if (mine) {
            const int r = d.ident ? o + l : d.rows[o + l];
            p0 = d.rowptr[r];
            len = d.rowptr[r + 1] - p0;
        }
        int inc = len;
#pragma unroll
        for (int x = 1; x < W; x <<= 1) {
            const int t = __shfl_up_sync(gm, inc, x, W);
            if (l >= x) inc += t;
        }
        const int E = __shfl_sync(gm, inc, W - 1, W);
        if (mine) {
            istart[l + 1] = inc;
            ip0[l] = p0;
        }
        if (l == 0) istart[0] = 0;
        __syncwarp(gm);
        for (int e0 = 0; e0 < E; e0 += 4 * W) {
            int cc[4], ii[4], bb[4], pp[4];
            double vv[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int e = e0 + u * W + l;
                cc[u] = -1;
                if (e < E) {
                    int lo = 0, hi = s;
                    while (hi - lo > 1) {
                        const int mid = (lo + hi) >> 1;
                        if (istart[mid] <= e) lo = mid;
                        else hi = mid;
                    }
                    const int p = ip0[lo] + e - istart[lo];
                    ii[u] = lo;
                    cc[u] = __ldg(d.col + p);
                    vv[u] = __ldg(d.val + p);
                }
            }
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (cc[u] >= 0) {
                    bb[u] = __ldg(d.blk + cc[u]);
                    pp[u] = __ldg(d.pos + cc[u]);
                }
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (cc[u] >= 0 && bb[u] == b) {
                    TILE(ii[u], pp[u]) = vv[u];
                    if (!isfinite(vv[u])) nonfinite = 1;
                }
        }
    }
    nonfinite = __any_sync(gm, nonfinite);
    __syncwarp(gm);
    double a[W];
#pragma unroll
    for (int j = 0; j < W; j++) a[j] = TILE(l, j);
    const double dii = TILE(l, l);
    /* ||A_b||_1: lane j sums column j in row order (the cpu's order) */
    double cs = 0;
    if (mine)
        for (int i = 0; i < s; i++) cs += fabs(TILE(i, l));
    const double nA = group_max<W>(cs, gm);
    const double tiny = (double)s * DBL_EPSILON * nA;
    int fail = nonfinite, mystep = -1;
    bool done = false;
#pragma unroll
    for (int k = 0; k < W; k++) {
        if (k >= s || fail) break; /* uniform over the group */
        const double av = fabs(a[k]);
        unsigned key = 0, lo = 0;
        if (mine && !done && !isnan(av)) {
            const unsigned long long u = (unsigned long long)__double_as_longlong(av);
            key = (unsigned)(u >> 32) + 1u;
            lo = (unsigned)u;
        }
        const unsigned m1 = group_umax<W>(key, gm);
        if (m1 == 0) { /* every candidate NaN */
            fail = k + 1;
            break;
        }
        unsigned bal = __ballot_sync(gm, key == m1) & gm;
        if (__popc(bal) > 1) {
            const unsigned m2 = group_umax<W>(key == m1 ? lo : 0u, gm);
            bal = __ballot_sync(gm, key == m1 && lo == m2) & gm;
        }
        const int p = __ffs(bal) - 1 - gbase;
        const double pv = __shfl_sync(gm, a[k], p, W);
        if (!(fabs(pv) > tiny)) {
            fail = k + 1;
            break;
        }
        if (l == 0) iperm[k] = p;
        if (!LU) {
            const double dinv = 1.0 / pv;
            if (l == p) {
#pragma unroll
                for (int j = 0; j < W; j += 2) {
                    const double t0 = j == k ? dinv : a[j] * dinv, t1 = j + 1 == k ? dinv : a[j + 1] * dinv;
                    a[j] = t0;
                    a[j + 1] = t1;
                    *(double2 *)(prow + j) = make_double2(t0, t1);
                }
                done = true;
                mystep = k;
            }
            __syncwarp(gm);
            if (l != p && mine) {
                const double f = a[k];
                a[k] = 0.0;
#pragma unroll
                for (int j = 0; j < W; j += 2) {
                    const double2 t = *(const double2 *)(prow + j);
                    a[j] -= f * t.x;
                    a[j + 1] -= f * t.y;
                }
            }
        } else {
            if (l == p) {
#pragma unroll
                for (int j = 0; j < W; j += 2) *(double2 *)(prow + j) = make_double2(a[j], a[j + 1]);
                done = true;
                mystep = k;
            }
            __syncwarp(gm);
            if (mine && !done) {
                const double lk = a[k] / pv;
                a[k] = lk;
#pragma unroll
                for (int j = 0; j < W; j += 2) {
                    const double2 t = *(const double2 *)(prow + j);
                    if (j > k) a[j] -= lk * t.x;
                    if (j + 1 > k) a[j + 1] -= lk * t.y;
                }
            }
        }
        __syncwarp(gm);
    }
    __syncwarp(gm);
    /* the result into the tile: GJ inv(k, perm[j]) = X(perm[k], j); LU row k of L\U */
    if (!fail && mine) {
#pragma unroll
        for (int j = 0; j < W; j++)
            if (j < s) {
                if (!LU) TILE(mystep, iperm[j]) = a[j];
                else TILE(mystep, j) = a[j];
            }
    }
    __syncwarp(gm);
    double c = 0;
    if (!fail && mine) {
        if (!LU) {
            for (int i = 0; i < s; i++) c += fabs(TILE(i, l));
        } else {
            double y[W];
#pragma unroll
            for (int k = 0; k < W; k++)
                if (k < s) {
                    double v = iperm[k] == l ? 1.0 : 0.0;
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
    const double nInv = group_max<W>(c, gm);
    __syncwarp(gm);
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
            for (int j = 0; j < W; j++) TILE(l, j) = 0.0;
            TILE(l, l) = LU ? aii : 1.0 / aii;
        }
    } else if (adaptive) {
        if (kappa <= c16) prec = SAP_BJ_FP16;
        else if (kappa <= c32) prec = SAP_BJ_FP32;
    }
    __syncwarp(gm);
    if (prec != SAP_BJ_FP64) { /* uniform over the group */
        double m = 0;
        if (mine)
            for (int j = LU ? l : 0; j < s; j++) m = fmax(m, fabs(TILE(l, j)));
        m = group_max<W>(m, gm);
        sc = m > 0 && isfinite(m) ? ldexp(1.0, ilogb(m) - 13) : 1.0;
    }
    if (valid && mine) {
        unsigned char *slot = out + d.slot[b];
        for (int j = 0; j < s; j++) {
            const double x = (LU && j < l) ? TILE(l, j) : TILE(l, j) / sc;
            const int idx = j * s + l;
            if (prec == SAP_BJ_FP64) ((double *)slot)[idx] = x;
            else if (prec == SAP_BJ_FP32) ((float *)slot)[idx] = __double2float_rn(x);
            else ((__half *)slot)[idx] = __double2half(x);
        }
        if (LU) d.piv[o + (info ? l : mystep)] = (uint8_t)l;
        if (l == 0) {
            d.bprec[b] = (uint8_t)prec;
            d.info[b] = (uint8_t)info;
            d.cond[b] = kappa;
            d.scale[b] = sc;
        }
    }
}

/* the group of W lanes of this thread in class c: its block, or -1 */
template <int W> __device__ __forceinline__ int group_block(const classes &cl, const int32_t *list, int c, int w)
{
    const int gi = (w - cl.w[c + 1]) * (32 / W) + (threadIdx.x & 31) / W;
    return gi < cl.l[c + 1] - cl.l[c] ? list[cl.l[c] + gi] : -1;
}

/* every block of the batch in one launch: each warp takes one width class (4 warps a
 * thread block, smem_warp bytes of shared memory each); MAXC, the widest class of the
 * batch, leaves the wider paths out (their registers would cut the occupancy of the
 * narrow ones) */
template <bool LU, int MAXC>
__global__ void __launch_bounds__(128) k_factor(bj_dev d, unsigned char *out, const int32_t *list, classes cl,
                                                int smem_warp, double c16, double c32, int adaptive)
{
    extern __shared__ __align__(16) unsigned char smraw[];
    const int w = blockIdx.x * 4 + threadIdx.x / 32;
    if (w >= cl.w[0]) return; /* whole warps */
    unsigned char *sm = smraw + (size_t)(threadIdx.x / 32) * smem_warp;
    if (MAXC >= 3 && w < cl.w[3]) factor_group<32, LU>(d, out, group_block<32>(cl, list, 3, w), sm, c16, c32, adaptive);
    else if (MAXC >= 2 && w < cl.w[2])
        factor_group<16, LU>(d, out, group_block<16>(cl, list, 2, w), sm, c16, c32, adaptive);
    else if (MAXC >= 1 && w < cl.w[1])
        factor_group<8, LU>(d, out, group_block<8>(cl, list, 1, w), sm, c16, c32, adaptive);
    else factor_group<4, LU>(d, out, group_block<4>(cl, list, 0, w), sm, c16, c32, adaptive);
}

__device__ __host__ inline long long slot_bytes(long long s, int prec)
{
    const long long eb = prec == SAP_BJ_FP64 ? 8 : prec == SAP_BJ_FP32 ? 4 : 2;
    return (s * s * eb + 15) / 16 * 16;
}

/* adaptive storage: the compact size of every block (csize[nb] = 0 for the scan) */
__global__ void k_csize(bj_dev d, int nb, long long *csize)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < nb) csize[b] = slot_bytes(d.off[b + 1] - d.off[b], d.bprec[b]);
    else if (b == nb) csize[b] = 0;
}

/* the blocks from their fp64-sized slots to the compact storage: 8 lanes a block, 16 bytes a
 * lane and a load */
__global__ void k_compact(bj_dev d, int nb, const unsigned char *from, unsigned char *to)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x, b = t / 8, l = t % 8;
    if (b >= nb) return;
    const uint4 *src = (const uint4 *)(from + d.slot[b]);
    uint4 *dst = (uint4 *)(to + d.soff[b]);
    const int nv = (int)((d.soff[b + 1] - d.soff[b]) / 16);
    for (int i = l; i < nv; i += 8) dst[i] = __ldcs(src + i);
}

/* the apply's record of the block at list position g (written after each factor): its
 * compact offset (low, high 32 bits), first row position, size | precision << 8; the scale
 * beside it.  One 16-byte load instead of list -> off, soff, bprec, scale (a shorter chain
 * of dependent loads before the block's storage is read). */
__global__ void k_meta(bj_dev d, const int32_t *list, int nb, int4 *meta, double *gscale)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nb) return;
    const int b = list[g];
    const long long so = d.soff[b];
    const int o = d.off[b];
    meta[g] = make_int4((int)(unsigned)(so & 0xffffffffLL), (int)(so >> 32), o, (d.off[b + 1] - o) | (int)d.bprec[b] << 8);
    gscale[g] = d.scale[b];
}

/* ---- apply: persistent warps, the next unit's storage copied while this one computes ---- */

/* cp.async (sm_80 and later): global -> shared memory without registers, completion by
 * groups (commit / wait); below sm_80 a plain copy */
__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src)
                 : "memory");
#else
    *(uint4 *)dst = __ldcs((const uint4 *)src);
#endif
}

template <typename T> __device__ __forceinline__ void cp_async_elem(T *dst, const T *src)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "n"((int)sizeof(T))
                 : "memory");
#else
    *dst = *src;
#endif
}

__device__ __forceinline__ void cp_async_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/* every group of copies but the newest complete (this thread's copies) */
__device__ __forceinline__ void cp_async_wait_prev()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
#endif
}

__device__ __forceinline__ int warp_imax(int v)
{
#if __CUDA_ARCH__ >= 800
    return (int)__reduce_max_sync(0xffffffffu, (unsigned)v);
#else
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
#endif
}

__device__ __forceinline__ unsigned warp_uor(unsigned v)
{
#if __CUDA_ARCH__ >= 800
    return __reduce_or_sync(0xffffffffu, v);
#else
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v |= __shfl_xor_sync(0xffffffffu, v, o);
    return v;
#endif
}

/* the width class of warp unit u (the launch's warps, widest class first) */
__device__ __forceinline__ int unit_class(const classes &cl, int u)
{
    return u < cl.w[3] ? 3 : u < cl.w[2] ? 2 : u < cl.w[1] ? 1 : 0;
}

/* a[i] for a run-time i by selects (no local-memory copy of the kernel argument) */
__device__ __forceinline__ int pick5(const int (&a)[5], int i)
{
    return i == 0 ? a[0] : i == 1 ? a[1] : i == 2 ? a[2] : i == 3 ? a[3] : a[4];
}

/* the apply record of a lane's group in warp unit u (loaded a unit ahead of its copy: the
 * loads are not waited for until the copy is issued) */
struct unit_meta {
    int4 m;
    double sc;
    int valid;
};

__device__ __forceinline__ void load_meta(const int4 *__restrict__ meta, const double *__restrict__ gscale,
                                          const classes &cl, int u, unit_meta &um)
{
    const int lane = threadIdx.x & 31;
    um.valid = 0;
    if (u < cl.w[0]) { /* uniform over the warp */
        const int c = unit_class(cl, u), lw = 2 + c;
        const int g = pick5(cl.l, c) + (u - pick5(cl.w, c + 1)) * (32 >> lw) + (lane >> lw);
        if (g < pick5(cl.l, c + 1)) {
            um.m = __ldg(meta + g);
            um.sc = __ldg(gscale + g);
            um.valid = 1;
        }
    }
}

/* what a lane keeps of its group's block between the copy and the compute */
struct apply_item {
    int s, prec, row, piv;
    double sc;
};

/* the staging buffer of one warp unit: the groups' storage (group grp of a class of W lanes
 * at grp W^2 eb; mbytes = 32 W_max eb in all), then r of the 32 lanes' rows (lane order) */
template <typename T, bool LU>
__device__ __forceinline__ void apply_issue(const bj_dev &d, const unsigned char *__restrict__ store,
                                            const classes &cl, int u, const unit_meta &um, unsigned char *buf,
                                            int mbytes, int eb, const T *__restrict__ r, apply_item &it)
{
    const int lane = threadIdx.x & 31;
    it.s = 0;
    it.prec = SAP_BJ_FP64;
    if (um.valid) {
        const int c = unit_class(cl, u), lw = 2 + c, W = 1 << lw, grp = lane >> lw, l = lane & (W - 1);
        const long long so = (long long)(unsigned)um.m.x | (long long)um.m.y << 32;
        const int o = um.m.z;
        it.s = um.m.w & 0xff;
        it.prec = um.m.w >> 8;
        it.sc = um.sc;
        unsigned char *gs = buf + grp * W * W * eb;
        const int nv = (int)(slot_bytes(it.s, it.prec) / 16);
        const unsigned char *src = store + so;
        for (int i = l; i < nv; i += W) cp_async16(gs + 16 * i, src + 16 * i);
        if (l < it.s) {
            it.row = d.ident ? o + l : __ldg(d.rows + o + l);
            cp_async_elem((T *)(buf + mbytes) + lane, r + it.row);
            if (LU) it.piv = __ldg(d.piv + o + l);
        }
    }
    cp_async_commit();
}

/* element idx of staged storage in precision P (P < 0: the run-time prec) */
template <int P> __device__ __forceinline__ double staged_val(const unsigned char *m, int prec, int idx)
{
    if (P == SAP_BJ_FP64 || (P < 0 && prec == SAP_BJ_FP64)) return ((const double *)m)[idx];
    if (P == SAP_BJ_FP32 || (P < 0 && prec == SAP_BJ_FP32)) return (double)((const float *)m)[idx];
    return (double)__half2float(((const __half *)m)[idx]);
}

/* LU: lane l owns step row l: forward substitution by columns (y_k broadcast by a shuffle,
 * lanes > k update), then backward (x_k = v_k / u_kk broadcast, lanes < k update); the
 * shuffles span the warp (uniform trip count: the warp's largest block) */
template <typename T, int P>
__device__ __forceinline__ void lu_solve(const unsigned char *gs, const T *xs, const apply_item &it, int l, int gbase,
                                         int smax, T *__restrict__ z)
{
    const int s = it.s, prec = it.prec;
    const bool mine = l < s;
    /* forward: L unit lower, L(l, k) at k s + l */
    double v = mine ? (double)xs[it.piv] : 0.0;
    for (int k = 0; k < smax - 1; k++) {
        const double yk = __shfl_sync(0xffffffffu, v, gbase + k);
        if (mine && l > k) v -= staged_val<P>(gs, prec, k * s + l) * yk;
    }
    /* backward: U / scale, U(l, k) at k s + l */
    const double dinv = mine ? 1.0 / staged_val<P>(gs, prec, l * s + l) : 0.0;
    v = mine ? v / it.sc : 0.0;
    for (int k = smax - 1; k > 0; k--) {
        const double xk = __shfl_sync(0xffffffffu, v * dinv, gbase + k);
        if (l < k && k < s) v -= staged_val<P>(gs, prec, k * s + l) * xk;
    }
    if (mine) z[it.row] = (T)(v * dinv);
}

/* GJ: lane k of the group: z_k = scale sum_j inv(k, j) r_j from the staged column-major
 * values (consecutive lanes, consecutive addresses; r_j a broadcast).  LU: lu_solve. */
template <typename T, bool LU>
__device__ __forceinline__ void apply_compute(const classes &cl, int u, const unsigned char *buf, int mbytes, int eb,
                                              const apply_item &it, T *__restrict__ z)
{
    const int lane = threadIdx.x & 31;
    const int c = unit_class(cl, u), lw = 2 + c, W = 1 << lw, grp = lane >> lw, l = lane & (W - 1);
    const int gbase = grp * W, s = it.s, prec = it.prec;
    const unsigned char *gs = buf + grp * W * W * eb;
    const T *xs = (const T *)(buf + mbytes) + gbase;
    const bool mine = l < s;
    if (!LU) {
        if (!mine) return;
        double y = 0;
        if (prec == SAP_BJ_FP64) {
            const double *m = (const double *)gs;
#pragma unroll 4
            for (int j = 0; j < s; j++) y += m[j * s + l] * (double)xs[j];
        } else if (prec == SAP_BJ_FP32) {
            const float *m = (const float *)gs;
#pragma unroll 4
            for (int j = 0; j < s; j++) y += (double)m[j * s + l] * (double)xs[j];
        } else {
            const __half *m = (const __half *)gs;
#pragma unroll 4
            for (int j = 0; j < s; j++) y += (double)__half2float(m[j * s + l]) * (double)xs[j];
        }
        z[it.row] = (T)(y * it.sc);
    } else {
        /* the warp's precisions: one (the usual case) gives loops without a precision
         * branch; the branches below are uniform over the warp */
        const int smax = warp_imax(s);
        const unsigned pm = warp_uor(mine ? 1u << prec : 0u);
        if (pm == 1u << SAP_BJ_FP64) lu_solve<T, SAP_BJ_FP64>(gs, xs, it, l, gbase, smax, z);
        else if (pm == 1u << SAP_BJ_FP32) lu_solve<T, SAP_BJ_FP32>(gs, xs, it, l, gbase, smax, z);
        else if (pm == 1u << SAP_BJ_FP16) lu_solve<T, SAP_BJ_FP16>(gs, xs, it, l, gbase, smax, z);
        else lu_solve<T, -1>(gs, xs, it, l, gbase, smax, z);
    }
}

/* one launch, persistent warps (the grid fills the device once): warp unit u (the factor's
 * classes: 32 / W blocks a unit) is staged while unit u - nw computes (two buffers a warp,
 * cp.async groups) */
template <typename T, bool LU>
__global__ void __launch_bounds__(128) k_apply(bj_dev d, const unsigned char *__restrict__ store,
                                               const int4 *__restrict__ meta, const double *__restrict__ gscale,
                                               classes cl, int mbytes, int eb, const T *__restrict__ r,
                                               T *__restrict__ z)
{
    extern __shared__ __align__(16) unsigned char smraw[];
    const int bufb = mbytes + 32 * 8;
    unsigned char *b0 = smraw + (size_t)(threadIdx.x / 32) * 2 * bufb, *b1 = b0 + bufb;
    const int nw = gridDim.x * 4;
    int u = blockIdx.x * 4 + threadIdx.x / 32;
    if (u >= cl.w[0]) return; /* whole warps */
    apply_item cur, nxt;
    unit_meta um;
    load_meta(meta, gscale, cl, u, um);
    apply_issue<T, LU>(d, store, cl, u, um, b0, mbytes, eb, r, cur);
    load_meta(meta, gscale, cl, u + nw, um);
    for (int i = 0; u < cl.w[0]; u += nw, i++) {
        unsigned char *bc = i & 1 ? b1 : b0, *bn = i & 1 ? b0 : b1;
        apply_issue<T, LU>(d, store, cl, u + nw, um, bn, mbytes, eb, r, nxt);
        load_meta(meta, gscale, cl, u + 2 * nw, um); /* waited for at the next issue */
        cp_async_wait_prev();
        __syncwarp();
        apply_compute<T, LU>(cl, u, bc, mbytes, eb, cur, z);
        __syncwarp(); /* bc is the next unit's but one */
        cur = nxt;
    }
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

/* the warps of one launch over the class lists */
static classes make_classes(const cuda_bj *pv)
{
    classes cl;
    cl.w[4] = 0;
    for (int c = 3; c >= 0; c--) {
        const long long cnt = pv->cls[c + 1] - pv->cls[c], per = 32 >> (2 + c); /* blocks a warp */
        cl.w[c] = cl.w[c + 1] + (int)((cnt + per - 1) / per);
    }
    for (int c = 0; c < 5; c++) cl.l[c] = (int)pv->cls[c];
    return cl;
}

static sap_status c_prepare(sap_bj_fact *F, const sap_csr *A)
{
    sap_context *ctx = F->ctx;
    sap_status st = SAP_OK;
    const long long n = F->n, nb = F->nb, nnz = A->nnz;
    int32_t *h32 = NULL;
    uint8_t *h8 = NULL;
    long long *h64 = NULL;
    cuda_bj *pv = NULL;
    /* (the launch counts warps in an int: 4 nb < 2^31) */
    if (n >= INT32_MAX || nnz >= INT32_MAX || nb >= INT32_MAX / 4 || F->soff[nb] >= (long long)INT32_MAX * 8)
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
    /* rows (and whether they are the identity) */
    pv->d.ident = 1;
    for (long long i = 0; i < n; i++) {
        h32[i] = (int32_t)F->rows[i];
        if (F->rows[i] != i) pv->d.ident = 0;
    }
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
    /* the fp64-sized slots (F->soff as sap__bj_init set it): also the compact offsets while
     * every block is fp64 */
    for (long long b = 0; b <= nb; b++) h64[b] = F->soff[b];
    SAP_TRY(dev_array(ctx, pv, h64, sizeof(long long) * (size_t)(nb + 1), &p));
    pv->slot = (long long *)p;
    pv->d.slot = pv->d.soff = pv->slot;
    SAP_TRY(dev_array(ctx, pv, NULL, (size_t)F->soff[nb], &p));
    pv->store = (unsigned char *)p;
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
    SAP_TRY(dev_array(ctx, pv, NULL, sizeof(int4) * (size_t)nb, &p));
    pv->meta = (int4 *)p;
    SAP_TRY(dev_array(ctx, pv, NULL, sizeof(double) * (size_t)nb, &p));
    pv->gscale = (double *)p;
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

/* the largest per-warp shared memory over the classes present */
static size_t max_smem_warp(const cuda_bj *pv, size_t (*per)(int, int), int eb)
{
    size_t m = 16;
    for (int c = 0; c < 4; c++)
        if (pv->cls[c + 1] > pv->cls[c] && per(4 << c, eb) > m) m = per(4 << c, eb);
    return m;
}

/* adaptive storage: the compaction's buffers (the fp64-sized scratch the factor writes, the
 * sizes and the scan), made at the first adaptive factor */
static sap_status adaptive_buffers(sap_bj_fact *F, cuda_bj *pv)
{
    if (pv->scratch) return SAP_OK;
    sap_context *ctx = F->ctx;
    const int nb = (int)F->nb;
    void *p;
    sap_status st = dev_array(ctx, pv, NULL, (size_t)F->soff[nb] > 0 ? (size_t)F->soff[nb] : 16, &p);
    if (st < 0) return st;
    unsigned char *scratch = (unsigned char *)p;
    if ((st = dev_array(ctx, pv, NULL, sizeof(long long) * (size_t)(nb + 1), &p)) < 0) return st;
    pv->csize = (long long *)p;
    if ((st = dev_array(ctx, pv, NULL, sizeof(long long) * (size_t)(nb + 1), &p)) < 0) return st;
    pv->soff = (long long *)p;
    size_t tb = 0;
    SAP_CUDA_CHECK(ctx, cub::DeviceScan::ExclusiveSum(NULL, tb, pv->csize, pv->soff, nb + 1, stream_of(ctx)));
    if ((st = dev_array(ctx, pv, NULL, tb, &p)) < 0) return st;
    pv->scan_tmp = p;
    pv->scan_bytes = tb;
    pv->scratch = scratch;
    return SAP_OK;
}

static sap_status c_factor(sap_bj_fact *F)
{
    sap_context *ctx = F->ctx;
    cuda_bj *pv = (cuda_bj *)F->dev;
    sap_status st = SAP_OK;
    SAP_TRY(sap__cuda_enter(ctx));
    pv->maxeb = 8; /* unless the precisions come back */
    {
        const int nb = (int)F->nb;
        cudaStream_t s = stream_of(ctx);
        if (F->adaptive) SAP_TRY(adaptive_buffers(F, pv));
        unsigned char *out = F->adaptive ? pv->scratch : pv->store;
        pv->d.soff = pv->slot;
        const classes cl = make_classes(pv);
        if (cl.w[0] > 0) {
            const size_t sw = max_smem_warp(pv, factor_smem_warp, 8);
            const unsigned grid = (unsigned)((cl.w[0] + 3) / 4);
            int maxc = 0;
            for (int c = 0; c < 4; c++)
                if (pv->cls[c + 1] > pv->cls[c]) maxc = c;
            void (*kern)(bj_dev, unsigned char *, const int32_t *, classes, int, double, double, int);
            if (F->variant == SAP_BJ_LU)
                kern = maxc == 0   ? k_factor<true, 0>
                       : maxc == 1 ? k_factor<true, 1>
                       : maxc == 2 ? k_factor<true, 2>
                                   : k_factor<true, 3>;
            else
                kern = maxc == 0   ? k_factor<false, 0>
                       : maxc == 1 ? k_factor<false, 1>
                       : maxc == 2 ? k_factor<false, 2>
                                   : k_factor<false, 3>;
            kern<<<grid, 128, 4 * sw, s>>>(pv->d, out, pv->list, cl, (int)sw, F->cond_fp16, F->cond_fp32, F->adaptive);
            SAP_CUDA_LAUNCHED(ctx, "block-Jacobi factor");
        }
        if (F->adaptive && nb > 0) {
            /* the compact storage: sizes by precision, their scan, the copy */
            k_csize<<<(unsigned)((nb + 1 + 255) / 256), 256, 0, s>>>(pv->d, nb, pv->csize);
            SAP_CUDA_LAUNCHED(ctx, "block-Jacobi storage sizes");
            size_t tb = pv->scan_bytes;
            SAP_CUDA_CHECK(ctx, cub::DeviceScan::ExclusiveSum(pv->scan_tmp, tb, pv->csize, pv->soff, nb + 1, s));
            pv->d.soff = pv->soff;
            k_compact<<<(unsigned)(((long long)nb * 8 + 255) / 256), 256, 0, s>>>(pv->d, nb, pv->scratch, pv->store);
            SAP_CUDA_LAUNCHED(ctx, "block-Jacobi compaction");
        }
        if (nb > 0) {
            k_meta<<<(unsigned)((nb + 255) / 256), 256, 0, s>>>(pv->d, pv->list, nb, pv->meta, pv->gscale);
            SAP_CUDA_LAUNCHED(ctx, "block-Jacobi apply records");
        }
    }
    if (F->no_results) goto cleanup;
    SAP_TRY(sap__cuda_d2h(ctx, F->bprec, pv->d.bprec, (size_t)F->nb));
    SAP_TRY(sap__cuda_d2h(ctx, F->info, pv->d.info, (size_t)F->nb));
    SAP_TRY(sap__cuda_d2h(ctx, F->cond, pv->d.cond, sizeof(double) * (size_t)F->nb));
    SAP_TRY(sap__cuda_d2h(ctx, F->scale, pv->d.scale, sizeof(double) * (size_t)F->nb));
    SAP_TRY(sap__cuda_d2h(ctx, F->soff, pv->d.soff, sizeof(long long) * (size_t)(F->nb + 1)));
    /* the widest precision stored (the apply's staging) */
    pv->maxeb = 2;
    for (sap_int b = 0; b < F->nb && pv->maxeb < 8; b++) {
        const int eb = F->bprec[b] == SAP_BJ_FP64 ? 8 : F->bprec[b] == SAP_BJ_FP32 ? 4 : 2;
        if (eb > pv->maxeb) pv->maxeb = eb;
    }
cleanup:
    return st;
}

/* the staging bytes of a warp unit's groups: 32 W_max eb (W_max the widest class present) */
static int apply_mbytes(const cuda_bj *pv)
{
    int wmax = 4;
    for (int c = 0; c < 4; c++)
        if (pv->cls[c + 1] > pv->cls[c]) wmax = 4 << c;
    return 32 * wmax * pv->maxeb;
}

/* the persistent launch of k_apply<T, LU>: as many 4-warp blocks as fit the device at once
 * (two staging buffers a warp), no more than the units need */
template <typename T, bool LU>
static sap_status launch_apply(sap_bj_fact *F, cuda_bj *pv, const T *r, T *z, unsigned *grid)
{
    sap_context *ctx = F->ctx;
    const classes cl = make_classes(pv);
    const int mbytes = apply_mbytes(pv);
    const size_t smem = 4 * 2 * ((size_t)mbytes + 32 * 8);
    if (!*grid) {
        int per = 0;
        SAP_CUDA_CHECK(ctx, cudaFuncSetAttribute(k_apply<T, LU>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        SAP_CUDA_CHECK(ctx, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k_apply<T, LU>, 128, smem));
        const long long fill = (long long)(per > 0 ? per : 1) * sap__cuda_sm_count(ctx), need = (cl.w[0] + 3) / 4;
        *grid = (unsigned)(need < fill ? need : fill);
    }
    k_apply<T, LU><<<*grid, 128, smem, stream_of(ctx)>>>(pv->d, pv->store, pv->meta, pv->gscale, cl, mbytes, pv->maxeb,
                                                          r, z);
    SAP_CUDA_LAUNCHED(ctx, "block-Jacobi apply");
    return SAP_OK;
}

static sap_status c_apply(sap_bj_fact *F, const void *r, void *z, sap_precision prec)
{
    sap_context *ctx = F->ctx;
    cuda_bj *pv = (cuda_bj *)F->dev;
    sap_status st = sap__cuda_enter(ctx);
    if (st < 0) return st;
    if (F->n == 0 || F->nb == 0) return SAP_OK;
    const int key = 8 * F->variant + pv->maxeb;
    if (pv->ap_key != key) {
        pv->ap_key = key;
        pv->ap_grid[0] = pv->ap_grid[1] = 0;
    }
    const int lu = F->variant == SAP_BJ_LU;
    if (prec == SAP_FLOAT)
        return lu ? launch_apply<float, true>(F, pv, (const float *)r, (float *)z, &pv->ap_grid[1])
                  : launch_apply<float, false>(F, pv, (const float *)r, (float *)z, &pv->ap_grid[1]);
    return lu ? launch_apply<double, true>(F, pv, (const double *)r, (double *)z, &pv->ap_grid[0])
              : launch_apply<double, false>(F, pv, (const double *)r, (double *)z, &pv->ap_grid[0]);
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
