/* band_cuda.cu -- the cuda implementation of the band kernels (device/band_kernels.h).
 *
 * Every kernel gives one thread block to one partition (or one interface) and spreads
 * the threads across the band window of the current step, so that the P independent
 * factorizations and sweeps run concurrently and each one is itself parallel:
 *   factor        (below CUDA_BLOCKED_KMIN, and the UL windows) right-looking LU (UL)
 *                 without pivoting, one pivot per step: the kk x kk Schur update is done diagonal by diagonal, consecutive
 *                 threads on consecutive rows of one diagonal (coalesced in the
 *                 tall-and-thin layout); multipliers and the pivot row in shared memory.
 *   block_solve   chunked sweeps (k_block_solve_chunked, the default for P <= 4 per SM
 *                 where its staging fits in shared memory; sweep_plan): chunks of BW columns, the next chunk's factor
 *                 entries copied into shared memory (cp.async) while the current one is
 *                 solved as a BW x BW triangle by one warp plus one dense update of the K
 *                 rows next to it: 2 barriers per BW columns.  Else (or SAP_BAND_SWEEP=
 *                 step) column sweeps: after z[k] is final, threads update z[k+1..k+K]
 *                 (one barrier per step, the next step's coefficients loaded before it);
 *                 a warp per partition (__syncwarp only) for K <= 32, a block otherwise.
 *                 k > 1 columns (MULTI): the same launch shapes, each staged chunk or step's
 *                 coefficients applied to every column (k_block_solve_chunked_many, a warp
 *                 per column for the triangles); their unknowns in shared memory when all
 *                 fit, else in z.
 *   spikes        from m = CUDA_SPIKES_BLOCKED_MMIN on: the factors' m x m coupling blocks
 *                 made dense, then cuBLAS's batched TRSM (spikes_blocked_t); below it a
 *                 thread per right-hand-side column of the m x m triangular solves.
 *   reduced_*     I - W V by cuBLAS's batched GEMM where the spikes are blocked (else in
 *                 the kernel below), then LU with partial pivoting: a block per interface,
 *                 or cuSOLVER's getrf a call each where predicted faster (rdcd_solver_mmin);
 *                 solves a block per interface
 *                 (in chunks of 32 columns as the block solve, unless SAP_BAND_SWEEP=step);
 *                 the solves of k right-hand sides in one launch, a block per interface
 *                 and column.
 *   purify        a block per interface (and column), two launches (bottom rows, then top
 *                 rows).
 * From K = CUDA_BLOCKED_KMIN on the partitions' LU is blocked instead of k_factor (see
 * blocked_lu_t: BS-column steps over all partitions at once, cuBLAS's batched GEMMs for
 * the updates; partitions of at most SMALL_NMAX rows whole in shared memory, k_blk_small),
 * and so are SaP-C's UL windows, as the LU of their reversal (sap_band_fact.ul_blocked).
 * Not done: tensor-core (TF32 / FP16) updates.  Where each kernel sits against the H200's floors:
 * bench/results/banded.md, bench/results/banded_factor_h200.md. */
#include "device/cuda/cuda_internal.h"

#include <cublas_v2.h>
#include <cuda_pipeline.h>
#include <cusolverDn.h>
#include <math.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

namespace {

struct band_dev {
    long long *off, *Ki, *m, *w;
    long long *boff, *coff, *uoff, *roff, *xoff;
    double *thr, *bst;
    unsigned long long *counter;
};

template <typename T> __device__ inline T dabs(T x) { return x < T(0) ? -x : x; }

/* One step-by-step LU (ul = false) or UL (ul = true) of the band at a (n rows, ld = n). */
template <typename T, bool UL>
__device__ void factor_band(T *a, long long n, long long K, T thr, T bst, unsigned long long *counter, T *sl, T *su)
{
    __shared__ T piv_s;
    unsigned long long nb = 0;
    for (long long s = 0; s < n; s++) {
        const long long k = UL ? n - 1 - s : s;
        if (threadIdx.x == 0) {
            T p = a[K * n + k];
            if (!(p >= thr || p <= -thr)) {
                p = p < T(0) ? -bst : bst;
                a[K * n + k] = p;
                nb++;
            }
            piv_s = p;
        }
        __syncthreads();
        const long long kk = UL ? (K < k ? K : k) : (K < n - 1 - k ? K : n - 1 - k);
        if (kk == 0) {
            __syncthreads();
            continue;
        }
        const T inv = T(1) / piv_s;
        for (long long j = threadIdx.x; j < kk; j += blockDim.x) {
            if (!UL) {
                T *p = a + (K - 1 - j) * n + k + 1 + j; /* a(k+1+j, k) */
                T v = *p * inv;
                *p = v;
                sl[j] = v;
                su[j] = a[(K + 1 + j) * n + k]; /* a(k, k+1+j) */
            } else {
                T *p = a + (K + 1 + j) * n + (k - 1 - j); /* a(k-1-j, k) */
                T v = *p * inv;
                *p = v;
                su[j] = v;
                sl[j] = a[(K - 1 - j) * n + k]; /* a(k, k-1-j) */
            }
        }
        __syncthreads();
        /* Schur update, one diagonal dd = -(kk-1)..kk-1 per warp at a time, the lanes on
         * consecutive rows of that diagonal (coalesced, no integer division) */
        {
            const int kki = (int)kk, lane = threadIdx.x & 31, nwarp = blockDim.x >> 5;
            for (int dd = -(kki - 1) + (int)(threadIdx.x >> 5); dd <= kki - 1; dd += nwarp) {
                if (!UL) {
                    /* a(k+1+j, k+1+j+dd) -= l_j u_{j+dd} */
                    const int j0 = dd < 0 ? -dd : 0, j1 = kki - 1 - (dd > 0 ? dd : 0);
                    T *ar = a + (dd + K) * n + k + 1;
                    for (int j = j0 + lane; j <= j1; j += 32) ar[j] -= sl[j] * su[j + dd];
                } else {
                    /* a(k-1-j, k-1-j+dd) -= u_j l_{j-dd} */
                    const int j0 = dd > 0 ? dd : 0, j1 = kki - 1 + (dd < 0 ? dd : 0);
                    T *ar = a + (dd + K) * n + k - 1;
                    for (int j = j0 + lane; j <= j1; j += 32) ar[-j] -= su[j] * sl[j - dd];
                }
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && nb) atomicAdd(counter, nb);
}

template <typename T>
__global__ void __launch_bounds__(1024) k_factor(T *lu, T *ulw, band_dev d, long long P, int coupled, long long first)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *sl = reinterpret_cast<T *>(smem_raw);
    const long long task = blockIdx.x + first;
    const long long b = task < P ? task : task - P;
    const long long K = d.Ki[b];
    T *su = sl + K + 1;
    if (task < P) {
        factor_band<T, false>(lu + d.boff[b], d.off[b + 1] - d.off[b], K, (T)d.thr[b], (T)d.bst[b], d.counter, sl, su);
    } else if (coupled && b > 0) {
        factor_band<T, true>(ulw + d.uoff[b], d.w[b], K, (T)d.thr[b], (T)d.bst[b], d.counter, sl, su);
    }
}


/* ---- the blocked LU (sap_band_fact.blocked) ------------------------------------------------
 * Every partition is copied into its skewed column-major array (band_kernels.h: M(r, c) =
 * m[ku + r + c ldm]) and factored in steps of BS columns j .. j + jb - 1, all partitions'
 * step s at once: k_blk_diag (a block per partition) factors the jb x jb diagonal block in
 * shared memory with the per-row kernels' boosting, stores it and writes the inverses of its
 * triangles; cuBLAS's batched GEMMs then form L21 = A21 U11^{-1} and U12 = L11^{-1} A12 in
 * work arrays and update A22 -= L21 U12 in the skewed copy (one batched call per shape);
 * k_blk_store writes L21 and U12 into the factors.  The factors are those of the per-row
 * kernels up to rounding; the block solve reads them as before. */
#define BS SAP_BAND_BS

struct blk_meta {
    const long long *moff; /* P + 1: element offsets of the skewed copies */
    const long long *toff; /* P + 1: element offsets of the L21 / U12 work (BS K_b each) */
};

/* the storage index of element (r, c) of a band of n rows, half-bandwidth K: A(r, c), or with
 * rev that of (J A J)(r, c) = A(n-1-r, n-1-c) (the UL windows: sap_band_fact.ul_blocked) */
__device__ inline long long bidx(long long n, long long K, long long r, long long c, int rev)
{
    return rev ? (r - c + K) * n + (n - 1 - r) : (c - r + K) * n + r;
}

/* every slot of the skewed copies (zeros beyond the band): the copy of partition b is
 * LAPACK's band storage with ldab = 2 ku + 1 (column c's slots ku + r - c contiguous), the
 * factors' array its transpose (diagonal t = c - r + K contiguous along r), so the copy goes
 * through 32 x 32 tiles in shared memory: slots (delta = r - c, c) of a tile read along c
 * (consecutive entries of one diagonal) and written along delta (one column of M) */
template <typename T>
__global__ void __launch_bounds__(256) k_blk_to_skew(const T *__restrict__ lu, T *M, band_dev d, blk_meta mt, long long P,
                                                     int rev)
{
    __shared__ T tile[32][33];
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5; /* 32 x 8 */
    for (long long b = blockIdx.y; b < P; b += gridDim.y) {
        const long long n = d.off[b + 1] - d.off[b], K = d.Ki[b], ku = K + BS - 1, ldab = 2 * ku + 1;
        const T *a = lu + d.boff[b];
        T *m = M + mt.moff[b];
        const long long tc = (n + 31) / 32, td = (ldab + 31) / 32;
        for (long long tl = blockIdx.x; tl < tc * td; tl += gridDim.x) {
            const long long c0 = (tl % tc) * 32, s0 = (tl / tc) * 32; /* slot s = ku + delta */
            for (int i = ty; i < 32; i += 8) { /* read: slot row s0 + i, columns c0 + tx */
                const long long c = c0 + tx, delta = s0 + i - ku, r = c + delta;
                T v = T(0);
                if (c < n && r >= 0 && r < n && delta <= K && -delta <= K) v = a[bidx(n, K, r, c, rev)];
                tile[i][tx] = v;
            }
            __syncthreads();
            for (int i = ty; i < 32; i += 8) { /* write: column c0 + i, slots s0 + tx */
                const long long c = c0 + i, sl = s0 + tx;
                if (c < n && sl < ldab) m[sl + c * ldab] = tile[tx][i];
            }
            __syncthreads();
        }
    }
}

/* LU without pivoting of the jb x jb column-major tile (leading dimension ld) in shared
 * memory by the whole block, the per-row kernels' boosting; the boosted pivots are added to
 * *counter.  kb: the tile's half-bandwidth (>= jb - 1: dense); each step updates only the
 * kb x kb window below and right of its pivot: outside it the multipliers and the pivot
 * row are zero without pivoting, so the result is the same bit for bit (x - 0 y = x) at
 * K^2 instead of (jb - k)^2 work a step (k_blk_small: partitions of n <= 128 rows with
 * 32 <= K < n - 1; narrower bands use the per-row kernels).  Ends with the tile complete
 * for every thread. */
template <typename T>
__device__ void tile_lu(T *tile, int ld, int jb, T thr, T bst, unsigned long long *counter, int kb)
{
    const int tid = threadIdx.x, nth = blockDim.x;
    unsigned long long nb = 0;
    for (int k = 0; k < jb; k++) {
        if (tid == 0) {
            T p = tile[k * ld + k];
            if (!(p >= thr || p <= -thr)) {
                tile[k * ld + k] = p < T(0) ? -bst : bst;
                nb++;
            }
        }
        __syncthreads();
        const int w = jb - 1 - k < kb ? jb - 1 - k : kb;
        if (w == 0) continue; /* the last pivot, or kb = 0 (a diagonal partition): no update */
        const T inv = T(1) / tile[k * ld + k];
        T *lk = tile + k * ld + k + 1;
        for (int r = tid; r < w; r += nth) lk[r] *= inv;
        __syncthreads();
        for (int e = tid; e < w * w; e += nth) {
            const int r = e % w, c = e / w;
            tile[(k + 1 + c) * ld + k + 1 + r] -= lk[r] * tile[(k + 1 + c) * ld + k];
        }
        __syncthreads();
    }
    if (tid == 0 && nb) atomicAdd(counter, nb);
}

/* Partitions of at most SMALL_NMAX rows: the whole partition's LU in shared memory, one
 * block each (loaded from the band along its diagonals, the band entries stored back the
 * same way): one launch, no skewed copy and no GEMMs (N = 200,000, K = 200 at P = 2000:
 * partitions of 100 rows). */
#define SMALL_NMAX 128
template <typename T> __global__ void __launch_bounds__(256) k_blk_small(T *lu, band_dev d, long long P, int rev)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *tile = reinterpret_cast<T *>(smem_raw);
    const int tid = threadIdx.x, nth = blockDim.x;
    for (long long b = blockIdx.x; b < P; b += gridDim.x) {
        const int n = (int)(d.off[b + 1] - d.off[b]), K = (int)d.Ki[b], ld = n + 1;
        T *a = lu + d.boff[b];
        for (int e = tid; e < n * ld; e += nth) tile[e] = T(0);
        __syncthreads();
        for (int e = tid; e < (2 * K + 1) * n; e += nth) { /* diagonal t = e / n, row r = e % n */
            const int t = e / n, r = e % n, c = r + t - K;
            if (c >= 0 && c < n) tile[rev ? (n - 1 - c) * ld + n - 1 - r : c * ld + r] = a[e];
        }
        __syncthreads();
        tile_lu<T>(tile, ld, n, (T)d.thr[b], (T)d.bst[b], d.counter, K);
        for (int e = tid; e < (2 * K + 1) * n; e += nth) {
            const int t = e / n, r = e % n, c = r + t - K;
            if (c >= 0 && c < n) a[e] = tile[rev ? (n - 1 - c) * ld + n - 1 - r : c * ld + r];
        }
        __syncthreads(); /* the tile is reused by the next partition */
    }
}

/* step s: LU of the diagonal block of every partition with j = s BS < n_b, in place in M and
 * into lu; Wv[b] receives L11^{-1} (unit lower) then U11^{-1}, column-major BS x BS each */
template <typename T>
__global__ void __launch_bounds__(256) k_blk_diag(T *lu, T *M, T *Wv, band_dev d, blk_meta mt, long long P, long long s,
                                                  int rev)
{
    __shared__ T tile[BS * (BS + 1)]; /* column-major, ld BS + 1 */
    const int tid = threadIdx.x, nth = blockDim.x;
    for (long long b = blockIdx.x; b < P; b += gridDim.x) {
        const long long n = d.off[b + 1] - d.off[b], K = d.Ki[b], j = s * BS;
        if (j >= n) continue;
        const int jb = (int)(n - j < BS ? n - j : BS);
        const long long ku = K + BS - 1, ldm = 2 * ku;
        T *m = M + mt.moff[b] + ku + j + j * ldm;
        for (int e = tid; e < jb * jb; e += nth) {
            const int r = e % jb, c = e / jb;
            tile[c * (BS + 1) + r] = m[r + c * ldm];
        }
        __syncthreads();
        tile_lu<T>(tile, BS + 1, jb, (T)d.thr[b], (T)d.bst[b], d.counter, jb);
        /* the band entries of the factored block into lu (no later step reads it in M) */
        T *a = lu + d.boff[b];
        for (int e = tid; e < (2 * jb - 1) * jb; e += nth) { /* along the diagonals dd = c - r */
            const int dd = e / jb - (jb - 1), r = e % jb, c = r + dd;
            if (c >= 0 && c < jb && dd <= K && -dd <= K) a[bidx(n, K, j + r, j + c, rev)] = tile[c * (BS + 1) + r];
        }
        /* inverses: thread c < jb the column c of L11^{-1}, thread BS + c that of U11^{-1} */
        T *Li = Wv + b * 2 * BS * BS, *Ui = Li + BS * BS;
        if (tid < jb) {
            const int c = tid;
            T *x = Li + c * BS;
            for (int r = 0; r < c; r++) x[r] = T(0);
            x[c] = T(1);
            for (int r = c + 1; r < jb; r++) {
                T acc = T(0);
                for (int k = c; k < r; k++) acc += tile[k * (BS + 1) + r] * x[k];
                x[r] = -acc;
            }
        } else if (tid >= BS && tid < BS + jb) {
            const int c = tid - BS;
            T *x = Ui + c * BS;
            for (int r = c + 1; r < jb; r++) x[r] = T(0);
            x[c] = T(1) / tile[c * (BS + 1) + c];
            for (int r = c - 1; r >= 0; r--) {
                T acc = T(0);
                for (int k = r + 1; k <= c; k++) acc += tile[k * (BS + 1) + r] * x[k];
                x[r] = -acc / tile[r * (BS + 1) + r];
            }
        }
        __syncthreads(); /* the tile is reused by the next partition */
    }
}

/* step s: L21 (h x jb, ld K_b, at T2) and U12 (jb x h, ld BS, at T1) of every partition into
 * the band entries of lu */
template <typename T>
__global__ void k_blk_store(T *lu, const T *__restrict__ Tw, band_dev d, blk_meta mt, long long P, long long s, int rev)
{
    for (long long b = blockIdx.y; b < P; b += gridDim.y) {
        const long long n = d.off[b + 1] - d.off[b], K = d.Ki[b], j = s * BS;
        if (j >= n) continue;
        const long long jb = n - j < BS ? n - j : BS, h = K < n - j - jb ? K : n - j - jb;
        if (h <= 0) continue;
        const T *T2 = Tw + 2 * mt.toff[b], *T1 = T2 + BS * K;
        T *a = lu + d.boff[b];
        /* thread e: diagonal p = 1 + e / jb (distance from the main one) at position i = e % jb,
         * so that consecutive threads write consecutive entries of one diagonal of lu */
        const long long nd = jb + h - 1 < K ? jb + h - 1 : K;
        for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < 2 * nd * jb;
             e += (long long)gridDim.x * blockDim.x) {
            const long long f = e < nd * jb ? e : e - nd * jb, p = 1 + f / jb, i = f % jb;
            if (e < nd * jb) { /* L21(r, c), c = i, r = p - jb + c: row j + p + i, column j + i */
                const long long r = p - jb + i;
                if (r >= 0 && r < h) a[bidx(n, K, j + p + i, j + i, rev)] = T2[r + i * K];
            } else { /* U12(r, c), r = i, c = p - jb + i: row j + i, column j + p + i */
                const long long c = p - jb + i;
                if (c >= 0 && c < h) a[bidx(n, K, j + i, j + p + i, rev)] = T1[i + c * BS];
            }
        }
    }
}

template <typename T> __device__ inline T band_at(const T *a, long long ld, long long K, long long r, long long c)
{
    long long dd = c - r;
    return (dd > K || -dd > K) ? T(0) : a[(dd + K) * ld + r];
}

/* V_i^(b) (blockIdx.y = 0) and W_{i+1}^(t) (blockIdx.y = 1), a thread per column. */
template <typename T>
__global__ void __launch_bounds__(1024) k_spikes(const T *lu, const T *ulw, const T *B, const T *C, T *V, T *W, band_dev d)
{
    const long long i = blockIdx.x;
    const long long m = d.m[i];
    if (blockIdx.y == 0) {
        const long long nb = d.off[i + 1] - d.off[i], K = d.Ki[i], s = nb - m;
        const T *a = lu + d.boff[i];
        for (long long col = threadIdx.x; col < m; col += blockDim.x) {
            T *x = V + d.coff[i] + col * m;
            const T *bc = B + d.coff[i] + col * m;
            for (long long r = 0; r < m; r++) x[r] = bc[r];
            for (long long r = 1; r < m; r++) {
                T acc = x[r];
                long long j0 = r - K > 0 ? r - K : 0;
                for (long long j = j0; j < r; j++) acc -= band_at(a, nb, K, s + r, s + j) * x[j];
                x[r] = acc;
            }
            for (long long r = m - 1; r >= 0; r--) {
                T acc = x[r];
                long long j1 = r + K < m - 1 ? r + K : m - 1;
                for (long long j = r + 1; j <= j1; j++) acc -= band_at(a, nb, K, s + r, s + j) * x[j];
                x[r] = acc / a[K * nb + s + r];
            }
        }
    } else {
        const long long b = i + 1, K = d.Ki[b], w = d.w[b];
        const T *win = ulw + d.uoff[b];
        for (long long col = threadIdx.x; col < m; col += blockDim.x) {
            T *x = W + d.coff[i] + col * m;
            const T *cc = C + d.coff[i] + col * m;
            for (long long r = 0; r < m; r++) x[r] = cc[r];
            for (long long r = m - 2; r >= 0; r--) {
                T acc = x[r];
                long long j1 = r + K < m - 1 ? r + K : m - 1;
                for (long long j = r + 1; j <= j1; j++) acc -= band_at(win, w, K, r, j) * x[j];
                x[r] = acc;
            }
            for (long long r = 0; r < m; r++) {
                T acc = x[r];
                long long j0 = r - K > 0 ? r - K : 0;
                for (long long j = j0; j < r; j++) acc -= band_at(win, w, K, r, j) * x[j];
                x[r] = acc / win[K * w + r];
            }
        }
    }
}

/* R_i = I, a block per interface (the batched GEMM then subtracts W V) */
template <typename T> __global__ void __launch_bounds__(256) k_identity_blocks(T *Rall, band_dev d)
{
    const long long i = blockIdx.x, m = d.m[i];
    T *R = Rall + d.coff[i];
    for (long long e = threadIdx.x; e < m * m; e += blockDim.x) R[e] = (e % m == e / m) ? T(1) : T(0);
}

/* The blocked spikes' dense blocks (blockIdx.y = 0: the bottom-right m x m block of
 * partition i's LU, L strictly below the diagonal, U on and above it; 1: the top-left
 * m x m block of the UL window of partition i + 1, U strictly above, L on and below),
 * column-major m x m at coff[i] like V and W; a block per interface. */
template <typename T>
__global__ void __launch_bounds__(256) k_spike_blocks(const T *lu, const T *ulw, T *Dv, T *Dw, band_dev d)
{
    const long long i = blockIdx.x;
    const long long m = d.m[i];
    if (blockIdx.y == 0) {
        const long long nb = d.off[i + 1] - d.off[i], K = d.Ki[i], s = nb - m;
        const T *a = lu + d.boff[i];
        T *o = Dv + d.coff[i];
        for (long long e = threadIdx.x; e < m * m; e += blockDim.x) o[e] = band_at(a, nb, K, s + e % m, s + e / m);
    } else {
        const long long b = i + 1, K = d.Ki[b], w = d.w[b];
        const T *win = ulw + d.uoff[b];
        T *o = Dw + d.coff[i];
        for (long long e = threadIdx.x; e < m * m; e += blockDim.x) o[e] = band_at(win, w, K, e % m, e / m);
    }
}

/* R = I (product = 0: R already holds I - W V, from the batched GEMM) or R = I - W V
 * (product = 1), then LU with partial pivoting, a block per interface first + blockIdx.x;
 * skip_from > 0: interfaces of m >= skip_from stop before the LU (cuSOLVER's getrf takes
 * them: reduced_factor_solver_t) */
template <typename T>
__global__ void __launch_bounds__(512) k_reduced_factor(const T *V, const T *W, T *Rall, int *pivall, band_dev d,
                                                         int product, long long first, long long skip_from)
{
    const long long i = blockIdx.x + first;
    const long long m = d.m[i];
    const T *v = V + d.coff[i], *w = W + d.coff[i];
    T *R = Rall + d.coff[i];
    int *piv = pivall + d.roff[i];
    for (long long e = threadIdx.x; product && e < m * m; e += blockDim.x) {
        const long long r = e % m, c = e / m;
        T acc = (r == c) ? T(1) : T(0);
        for (long long k = 0; k < m; k++) acc -= w[r + k * m] * v[k + c * m];
        R[e] = acc;
    }
    if (skip_from > 0 && m >= skip_from) return;
    __syncthreads();
    __shared__ long long p_s;
    for (long long k = 0; k < m; k++) {
        if (threadIdx.x == 0) {
            long long p = k;
            T best = dabs(R[k + k * m]);
            for (long long r = k + 1; r < m; r++) {
                T a = dabs(R[r + k * m]);
                if (a > best) best = a, p = r;
            }
            if (!(best > T(0))) R[p + k * m] = T(1); /* singular: keep the preconditioner usable */
            piv[k] = (int)p;
            p_s = p;
        }
        __syncthreads();
        const long long p = p_s;
        if (p != k)
            for (long long c = threadIdx.x; c < m; c += blockDim.x) {
                T t = R[k + c * m];
                R[k + c * m] = R[p + c * m];
                R[p + c * m] = t;
            }
        __syncthreads();
        const T inv = T(1) / R[k + k * m];
        for (long long r = k + 1 + threadIdx.x; r < m; r += blockDim.x) R[r + k * m] *= inv;
        __syncthreads();
        const long long t = m - 1 - k;
        for (long long e = threadIdx.x; e < t * t; e += blockDim.x) {
            const long long r = k + 1 + e % t, c = k + 1 + e / t;
            R[r + c * m] -= R[r + k * m] * R[k + c * m];
        }
        __syncthreads();
    }
}

/* LAPACK's 1-based pivots (cuSOLVER getrf) of the interfaces of m >= mmin to the 0-based
 * ones of k_reduced_factor, which the reduced solve reads */
__global__ void k_piv_zero_based(int *pivall, band_dev d, long long mmin)
{
    const long long i = blockIdx.x, m = d.m[i];
    if (m < mmin) return;
    int *piv = pivall + d.roff[i];
    for (long long k = threadIdx.x; k < m; k += blockDim.x) piv[k] -= 1;
}

/* z = A_b^{-1} r for every partition b = blockIdx.x. */
template <typename T, bool WARP> __device__ inline void bsync()
{
    if (WARP) __syncwarp();
    else __syncthreads();
}

/* MULTI: nrhs columns (column c of r and z at c ld); the coefficients of a step, held in
 * registers, are applied to every column before the step's barrier, so the factors are
 * read once for all columns.  The columns' unknowns sit in shared memory (column stride n)
 * when all of them fit (SMEM), else in z.  !MULTI: one column, the code of the
 * single-vector solve (nv = 1 and the column offsets fold away). */
template <typename T, bool WARP, bool SMEM, bool MULTI>
__global__ void __launch_bounds__(1024) k_block_solve(const T *lu, const T *r, T *z, band_dev d, int nrhs, long long ld)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const long long b = blockIdx.x;
    const long long o = d.off[b], n = d.off[b + 1] - o, K = d.Ki[b];
    const T *a = lu + d.boff[b];
    const int nv = MULTI ? nrhs : 1;
    const long long xs = SMEM ? n : ld; /* column stride of x */
    /* the partition's unknowns: in shared memory when they fit (SMEM), else in z */
    T *x = SMEM ? reinterpret_cast<T *>(smem_raw) : z + o;
    if (SMEM || r != z)
        for (int c = 0; c < nv; c++)
            for (long long e = threadIdx.x; e < n; e += blockDim.x) x[c * xs + e] = r[c * ld + o + e];
    bsync<T, WARP>();
    /* forward, unit L: after step k, x[k] is final.  Each step is one barrier; the
     * coefficients of step k + 1 are loaded before the barrier of step k (they do not
     * depend on x), so the global-memory latency overlaps the previous step instead of
     * adding to every one of the n dependent steps. */
    if (blockDim.x >= K) {
        const long long j = threadIdx.x;
        T cf = (j < (K < n - 1 ? K : n - 1)) ? a[(K - 1 - j) * n + 1 + j] : T(0);
        for (long long k = 0; k < n - 1; k++) {
            const long long kk = K < n - 1 - k ? K : n - 1 - k;
            const long long kn = K < n - 2 - k ? K : n - 2 - k; /* window of step k + 1 */
            const T nx = (j < kn) ? a[(K - 1 - j) * n + k + 2 + j] : T(0);
            for (int c = 0; c < nv; c++) {
                T *xc = x + c * xs;
                const T xk = xc[k];
                if (j < kk) xc[k + 1 + j] -= cf * xk;
            }
            cf = nx;
            bsync<T, WARP>();
        }
    } else {
        for (long long k = 0; k < n - 1; k++) {
            const long long kk = K < n - 1 - k ? K : n - 1 - k;
            if (!MULTI) {
                const T xk = x[k];
                for (long long j = threadIdx.x; j < kk; j += blockDim.x) x[k + 1 + j] -= a[(K - 1 - j) * n + k + 1 + j] * xk;
            } else {
                for (long long j = threadIdx.x; j < kk; j += blockDim.x) {
                    const T cf = a[(K - 1 - j) * n + k + 1 + j];
                    for (int c = 0; c < nv; c++) x[c * xs + k + 1 + j] -= cf * x[c * xs + k];
                }
            }
            bsync<T, WARP>();
        }
    }
    if (SMEM && blockDim.x >= K) {
        /* backward, column oriented: x[k] /= u_kk is final (written to z, never read
         * again here), then the rows above subtract u(row, k) x[k]; coefficients and the
         * pivot of the next step prefetched as in the forward sweep */
        const long long j = threadIdx.x;
        long long k = n - 1;
        T piv = a[K * n + k];
        T cf = (j < (K < k ? K : k)) ? a[(K + 1 + j) * n + k - 1 - j] : T(0);
        for (; k >= 0; k--) {
            const long long kk = K < k ? K : k;
            T npiv = T(1), nx = T(0);
            if (k > 0) {
                npiv = a[K * n + k - 1];
                const long long kn = K < k - 1 ? K : k - 1;
                if (j < kn) nx = a[(K + 1 + j) * n + k - 2 - j];
            }
            for (int c = 0; c < nv; c++) {
                T *xc = x + c * xs;
                const T xk = xc[k] / piv;
                if (j == 0) z[c * ld + o + k] = xk;
                if (j < kk) xc[k - 1 - j] -= cf * xk;
            }
            cf = nx;
            piv = npiv;
            bsync<T, WARP>();
        }
        return;
    }
    /* backward with D^{-1} U: first x = D^{-1} x, then unit upper sweeps */
    for (long long e = threadIdx.x; e < n; e += blockDim.x) {
        const T piv = a[K * n + e];
        for (int c = 0; c < nv; c++) x[c * xs + e] /= piv;
    }
    bsync<T, WARP>();
    for (long long k = n - 1; k > 0; k--) {
        const long long kk = K < k ? K : k;
        if (!MULTI) {
            const T xk = x[k];
            for (long long j = threadIdx.x; j < kk; j += blockDim.x) {
                const long long row = k - 1 - j;
                x[row] -= a[(K + 1 + j) * n + row] / a[K * n + row] * xk; /* U(row, k) / U(row, row) */
            }
        } else {
            for (long long j = threadIdx.x; j < kk; j += blockDim.x) {
                const long long row = k - 1 - j;
                const T cf = a[(K + 1 + j) * n + row] / a[K * n + row];
                for (int c = 0; c < nv; c++) x[c * xs + row] -= cf * x[c * xs + k];
            }
        }
        bsync<T, WARP>();
    }
    if (SMEM)
        for (int c = 0; c < nv; c++)
            for (long long e = threadIdx.x; e < n; e += blockDim.x) z[c * ld + o + e] = x[c * xs + e];
}

/* ---- the chunked (blocked) sweeps of block_solve ----------------------------------------
 * The per-step kernel above waits, at each of the 2 n_b dependent steps of a partition,
 * for one barrier and one global load of the step's factor column (uncoalesced: one
 * diagonal per thread), ~1-3 us a step on an H100: the apply is latency-bound far above
 * its bytes floor.  Here a partition's columns go in chunks of BW: the factor entries of
 * chunk c + 1 (BW columns of L, or of U with its pivots, on the K_e = min(K_b, n_b - 1)
 * diagonals that reach inside the partition: BW consecutive entries of each diagonal,
 * coalesced) are copied into shared memory with cp.async while chunk c is solved, so
 * the loads' latency overlaps the work.  A chunk is solved as one BW x BW triangle by one
 * warp (shuffles, no barrier) followed by one dense update of the K_e rows below (above
 * for U) it, thread per row, BW terms each: two barriers per chunk instead of BW.
 * Shared memory: two staging buffers of (K_e + 1) x (BW + 1) (padded: the per-row reads
 * of a column run across banks) and, when it fits, the partition's unknowns. */
template <typename T, int BW>
__device__ inline void stage_chunk(T *buf, const T *a, long long n, long long K, int Ke, long long c0, bool upper)
{
    /* blockDim.x is a multiple of 32 >= BW: a thread keeps its column kc and walks the
     * diagonals dd0, dd0 + ds, ... (pointer increments only) */
    const int kc = threadIdx.x % BW, ds = blockDim.x / BW;
    int dd = threadIdx.x / BW;
    const long long col = c0 + kc;
    const bool colok = col < n;
    const long long step = (long long)ds * (n - 1);
    const T *src = upper ? a + (K + dd) * n + col - dd : a + (K - dd) * n + col + dd;
    T *dst = buf + dd * (BW + 1) + kc;
    for (; dd <= Ke; dd += ds, dst += ds * (BW + 1)) {
        const long long row = upper ? col - dd : col + dd;
        if (colok && (upper ? row >= 0 : dd > 0 && row < n)) __pipeline_memcpy_async(dst, src, sizeof(T));
        else *dst = T(0);
        src = upper ? src + step : src - step;
    }
    __pipeline_commit();
}

/* One chunk's BW x BW triangle of one column x (x[c0 ..]) by one warp (lane l): forward
 * (unit lower) or backward (upper with the pivots on the dd = 0 row). */
template <typename T, int BW>
__device__ inline void chunk_triangle(T *x, const T *cur, long long c0, int bb, int Ke, bool up)
{
    constexpr int LD = BW + 1;
    const int l = threadIdx.x & 31;
    T xl = l < bb ? x[c0 + l] : T(0);
    if (!up) {
        /* unit lower: x_l -= L(c0 + l, c0 + k) x_k, k < l */
#pragma unroll
        for (int k = 0; k < BW - 1; k++) {
            const T xk = __shfl_sync(0xffffffffu, xl, k);
            const int dd = l - k;
            if (dd > 0 && dd <= Ke && l < bb) xl -= cur[dd * LD + k] * xk;
        }
    } else {
        /* upper with pivots (dd = 0 row): x_k /= U(k, k), then x_l -= U(c0 + l, c0 + k) x_k, l < k */
#pragma unroll
        for (int k = BW - 1; k >= 0; k--) {
            if (k < bb) {
                if (l == k) xl /= cur[k];
                const T xk = __shfl_sync(0xffffffffu, xl, k);
                const int dd = k - l;
                if (dd > 0 && dd <= Ke) xl -= cur[dd * LD + k] * xk;
            }
        }
    }
    if (l < bb) x[c0 + l] = xl;
}

template <typename T, int BW>
__global__ void __launch_bounds__(1024) k_block_solve_chunked(const T *lu, const T *r, T *z, band_dev d, int kemax,
                                                              int x_shared)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const long long b = blockIdx.x;
    const long long o = d.off[b], n = d.off[b + 1] - o, K = d.Ki[b];
    const int Ke = (int)(K < n - 1 ? K : n - 1);
    const T *a = lu + d.boff[b];
    constexpr int LD = BW + 1;
    const size_t bufsz = (size_t)(kemax + 1) * LD;
    T *buf0 = reinterpret_cast<T *>(smem_raw), *buf1 = buf0 + bufsz;
    T *x = x_shared ? buf1 + bufsz : z + o;
    if (x_shared || r != z)
        for (long long e = threadIdx.x; e < n; e += blockDim.x) x[e] = r[o + e];
    const int nc = (int)((n + BW - 1) / BW), ns = 2 * nc;
    /* stage s < nc: forward chunk s; s >= nc: backward chunk 2 nc - 1 - s */
    stage_chunk<T, BW>(buf0, a, n, K, Ke, 0, nc == 0);
    for (int s = 0; s < ns; s++) {
        const bool up = s >= nc;
        const long long c0 = (long long)(up ? ns - 1 - s : s) * BW;
        T *cur = (s & 1) ? buf1 : buf0;
        if (s + 1 < ns) {
            const int s1 = s + 1;
            stage_chunk<T, BW>((s & 1) ? buf0 : buf1, a, n, K, Ke, (long long)(s1 >= nc ? ns - 1 - s1 : s1) * BW,
                               s1 >= nc);
        } else {
            __pipeline_commit(); /* an empty group: one wait rule for every stage */
        }
        __pipeline_wait_prior(1);
        __syncthreads(); /* chunk s staged by every thread; x of the previous stage final */
        const int bb = (int)(n - c0 < BW ? n - c0 : BW);
        if (threadIdx.x < 32) chunk_triangle<T, BW>(x, cur, c0, bb, Ke, up);
        __syncthreads();
        if (!up) {
            /* rows c0 + bb .. c0 + bb + Ke - 1 (inside the partition): column kc reaches
             * row c0 + rel when rel - kc <= Ke */
            const int r1 = (int)(n - c0 < bb + Ke ? n - c0 : bb + Ke);
            const T *xc = x + c0;
            for (int rel = bb + threadIdx.x; rel < r1; rel += blockDim.x) {
                const int k0 = rel - Ke;
                const T *cr = cur + rel * LD; /* L(c0 + rel, c0 + kc) at cr[-kc BW] */
                T acc = T(0);
#pragma unroll
                for (int kc = 0; kc < BW; kc++)
                    if (kc >= k0 && kc < bb) acc += cr[-kc * BW] * xc[kc];
                x[c0 + rel] -= acc;
            }
        } else {
            /* rows c0 - Ke .. c0 - 1: column kc reaches row c0 - rel when rel + kc <= Ke */
            const int rmax = (int)(c0 < Ke ? c0 : Ke);
            const T *xc = x + c0;
            for (int rel = 1 + threadIdx.x; rel <= rmax; rel += blockDim.x) {
                const int k1 = Ke - rel + 1 < bb ? Ke - rel + 1 : bb;
                const T *cr = cur + rel * LD; /* U(c0 - rel, c0 + kc) at cr[kc (LD + 1)] */
                T acc = T(0);
#pragma unroll
                for (int kc = 0; kc < BW; kc++)
                    if (kc < k1) acc += cr[kc * (LD + 1)] * xc[kc];
                x[c0 - rel] -= acc;
            }
        }
        __syncthreads(); /* cur is restaged at s + 2 */
    }
    if (x_shared)
        for (long long e = threadIdx.x; e < n; e += blockDim.x) z[o + e] = x[e];
}


/* the multi-column dense update of a chunk: the columns in groups of CHUNK_CG, a thread per
 * (row, group): each staged coefficient read once into a register for the group's columns */
#define CHUNK_CG 4

/* k_block_solve_chunked for nrhs columns (column c of r and z at c ld; of x at c xs): the
 * chunk staged once serves every column; the triangles a warp per column, the dense
 * updates a thread per (row, group of CHUNK_CG columns).  x_shared: all the columns'
 * unknowns in shared memory (column stride n), else in z. */
template <typename T, int BW>
__global__ void __launch_bounds__(1024) k_block_solve_chunked_many(const T *lu, const T *r, T *z, band_dev d, int kemax,
                                                              int x_shared, int nrhs, long long ld)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const long long b = blockIdx.x;
    const long long o = d.off[b], n = d.off[b + 1] - o, K = d.Ki[b];
    const int Ke = (int)(K < n - 1 ? K : n - 1);
    const T *a = lu + d.boff[b];
    constexpr int LD = BW + 1;
    const size_t bufsz = (size_t)(kemax + 1) * LD;
    T *buf0 = reinterpret_cast<T *>(smem_raw), *buf1 = buf0 + bufsz;
    T *x = x_shared ? buf1 + bufsz : z + o;
    const int nv = nrhs;
    const long long xs = x_shared ? n : ld; /* column stride of x */
    if (x_shared || r != z)
        for (int c = 0; c < nv; c++)
            for (long long e = threadIdx.x; e < n; e += blockDim.x) x[c * xs + e] = r[c * ld + o + e];
    const int nc = (int)((n + BW - 1) / BW), ns = 2 * nc;
    /* stage s < nc: forward chunk s; s >= nc: backward chunk 2 nc - 1 - s */
    stage_chunk<T, BW>(buf0, a, n, K, Ke, 0, nc == 0);
    for (int s = 0; s < ns; s++) {
        const bool up = s >= nc;
        const long long c0 = (long long)(up ? ns - 1 - s : s) * BW;
        T *cur = (s & 1) ? buf1 : buf0;
        if (s + 1 < ns) {
            const int s1 = s + 1;
            stage_chunk<T, BW>((s & 1) ? buf0 : buf1, a, n, K, Ke, (long long)(s1 >= nc ? ns - 1 - s1 : s1) * BW,
                               s1 >= nc);
        } else {
            __pipeline_commit(); /* an empty group: one wait rule for every stage */
        }
        __pipeline_wait_prior(1);
        __syncthreads(); /* chunk s staged by every thread; x of the previous stage final */
        const int bb = (int)(n - c0 < BW ? n - c0 : BW);
        for (int c = (int)(threadIdx.x >> 5); c < nv; c += (int)(blockDim.x >> 5)) /* a warp per column */
            chunk_triangle<T, BW>(x + c * xs, cur, c0, bb, Ke, up);
        __syncthreads();
        /* the same rows for every column: items (row, group g of CHUNK_CG columns),
         * consecutive threads on consecutive rows of one group */
        const int ng = (nv + CHUNK_CG - 1) / CHUNK_CG;
        const int rlo = up ? 1 : bb;
        const int rhi = up ? (int)(c0 < Ke ? c0 : Ke) + 1 : (int)(n - c0 < bb + Ke ? n - c0 : bb + Ke);
        const int nrow = rhi - rlo;
        for (int it = threadIdx.x; it < nrow * ng; it += blockDim.x) {
            const int rel = rlo + it % nrow, g0 = (it / nrow) * CHUNK_CG;
            const T *cr = cur + rel * LD;
            const int klo = up ? 0 : rel - Ke, khi = up ? (Ke - rel + 1 < bb ? Ke - rel + 1 : bb) : bb;
            T acc[CHUNK_CG];
#pragma unroll
            for (int q = 0; q < CHUNK_CG; q++) acc[q] = T(0);
#pragma unroll
            for (int kc = 0; kc < BW; kc++)
                if (kc >= klo && kc < khi) {
                    const T cf = up ? cr[kc * (LD + 1)] : cr[-kc * BW];
#pragma unroll
                    for (int q = 0; q < CHUNK_CG; q++)
                        if (g0 + q < nv) acc[q] += cf * x[(g0 + q) * xs + c0 + kc];
                }
            const long long row = up ? c0 - rel : c0 + rel;
#pragma unroll
            for (int q = 0; q < CHUNK_CG; q++)
                if (g0 + q < nv) x[(g0 + q) * xs + row] -= acc[q];
        }
        __syncthreads(); /* cur is restaged at s + 2 */
    }
    if (x_shared)
        for (int c = 0; c < nv; c++)
            for (long long e = threadIdx.x; e < n; e += blockDim.x) z[c * ld + o + e] = x[c * xs + e];
}

/* interface unknowns, a block per interface (x) and column (y: g at y ld, xr at y xlen);
 * xt in shared memory */
template <typename T>
__global__ void k_reduced_solve(const T *V, const T *W, const T *Rall, const int *pivall, const T *g, T *xr, band_dev d,
                                int chunked, long long ld, long long xlen)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *xt = reinterpret_cast<T *>(smem_raw);
    const long long i = blockIdx.x;
    g += blockIdx.y * ld;
    xr += blockIdx.y * xlen;
    const long long m = d.m[i], o = d.off[i + 1];
    const T *v = V + d.coff[i], *w = W + d.coff[i], *R = Rall + d.coff[i];
    const int *piv = pivall + d.roff[i];
    const T *gb = g + o - m, *gt = g + o;
    for (long long r = threadIdx.x; r < m; r += blockDim.x) {
        T acc = gt[r];
        for (long long k = 0; k < m; k++) acc -= w[r + k * m] * gb[k];
        xt[r] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (long long k = 0; k < m; k++)
            if (piv[k] != k) {
                T t = xt[k];
                xt[k] = xt[piv[k]];
                xt[piv[k]] = t;
            }
    __syncthreads();
    /* the triangular solves with R's LU in chunks of 32 columns (as the chunked block
     * solve): the chunk's triangle by warp 0 (shuffles), then one dense update of the
     * rows below (above) it, thread per row: two barriers a chunk instead of one a column,
     * the R loads of a chunk independent of each other */
    if (!chunked) { /* one barrier a column (SAP_BAND_SWEEP=step: the earlier kernel) */
        for (long long k = 0; k < m; k++) {
            const T xk = xt[k];
            for (long long r = k + 1 + threadIdx.x; r < m; r += blockDim.x) xt[r] -= R[r + k * m] * xk;
            __syncthreads();
        }
        for (long long k = m - 1; k >= 0; k--) {
            const T xk = xt[k] / R[k + k * m];
            __syncthreads();
            if (threadIdx.x == 0) xt[k] = xk;
            for (long long r = threadIdx.x; r < k; r += blockDim.x) xt[r] -= R[r + k * m] * xk;
            __syncthreads();
        }
    }
    /* stage s < nch: forward chunk s; s >= nch: backward chunk 2 nch - 1 - s */
    const int nch = chunked ? (int)((m + 31) / 32) : 0;
    for (int s = 0; s < 2 * nch; s++) {
        const bool up = s >= nch;
        const long long c0 = 32LL * (up ? 2 * nch - 1 - s : s);
        const int bb = (int)(m - c0 < 32 ? m - c0 : 32);
        if (threadIdx.x < 32) {
            const int l = threadIdx.x;
            T xl = l < bb ? xt[c0 + l] : T(0);
            if (!up) {
#pragma unroll
                for (int k = 0; k < 31; k++) {
                    const T xk = __shfl_sync(0xffffffffu, xl, k);
                    if (k < l && l < bb) xl -= R[c0 + l + (c0 + k) * m] * xk;
                }
            } else {
#pragma unroll
                for (int k = 31; k >= 0; k--) {
                    if (k < bb) {
                        if (l == k) xl /= R[(c0 + k) * (m + 1)];
                        const T xk = __shfl_sync(0xffffffffu, xl, k);
                        if (l < k) xl -= R[c0 + l + (c0 + k) * m] * xk;
                    }
                }
            }
            if (l < bb) xt[c0 + l] = xl;
        }
        __syncthreads();
        /* the rows below the chunk (forward) or above it (backward) */
        const long long r0 = up ? 0 : c0 + bb, r1 = up ? c0 : m;
        for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
            T acc = T(0);
            for (int kc = 0; kc < bb; kc++) acc += R[r + (c0 + kc) * m] * xt[c0 + kc];
            xt[r] -= acc;
        }
        __syncthreads();
    }
    T *ob = xr + d.xoff[i], *ot = ob + m;
    for (long long r = threadIdx.x; r < m; r += blockDim.x) {
        T acc = gb[r];
        for (long long k = 0; k < m; k++) acc -= v[r + k * m] * xt[k];
        ob[r] = acc;
        ot[r] = xt[r];
    }
}

template <typename T>
__global__ void k_purify(const T *M, const T *xr, T *f, band_dev d, int pass, long long ld, long long xlen)
{
    const long long i = blockIdx.x;
    xr += blockIdx.y * xlen;
    f += blockIdx.y * ld;
    const long long m = d.m[i], o = d.off[i + 1];
    const T *Mi = M + d.coff[i];
    const T *xb = xr + d.xoff[i], *xt = xb + m;
    const T *x = pass == 0 ? xt : xb;
    T *fr = pass == 0 ? f + o - m : f + o;
    for (long long q = threadIdx.x; q < m; q += blockDim.x) {
        T acc = T(0);
        for (long long k = 0; k < m; k++) acc += Mi[q + k * m] * x[k];
        fr[q] -= acc;
    }
}

/* ---- the factors from a BAND source (double, A(i, j) at s[(j - i + kl) n + i]) ----------- */

/* partition b = blockIdx.x: its band (converted to T) and its ||A_b||_inf into norms[b] */
template <typename T>
__global__ void k_fill_lu(const double *__restrict__ s, long long n, long long kl, long long sw, T *lu, double *norms,
                          band_dev d)
{
    const long long b = blockIdx.x;
    const long long o0 = d.off[b], nb = d.off[b + 1] - o0, K = d.Ki[b], W = 2 * K + 1;
    T *a = lu + d.boff[b];
    for (long long e = threadIdx.x; e < W * nb; e += blockDim.x) {
        const long long t = e / nb, r = e - t * nb, q = t - K + kl, c = r + t - K;
        a[e] = (q >= 0 && q < sw && c >= 0 && c < nb) ? (T)s[q * n + o0 + r] : T(0);
    }
    /* row sums in double from the source, as the host path */
    double mx = 0.0;
    for (long long r = threadIdx.x; r < nb; r += blockDim.x) {
        double sum = 0.0;
        for (long long t = 0; t < W; t++) {
            const long long q = t - K + kl, c = r + t - K;
            if (q >= 0 && q < sw && c >= 0 && c < nb) sum += fabs(s[q * n + o0 + r]);
        }
        mx = sum > mx ? sum : mx;
    }
    __shared__ double red[1024];
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h && red[threadIdx.x + h] > red[threadIdx.x]) red[threadIdx.x] = red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) norms[b] = red[0];
}

/* interface i = blockIdx.x: B_i(a, c) = A(o1 - m + a, o1 + c), C_{i+1}(a, c) = A(o1 + a, o1 - m + c),
 * entries with |j - i| <= Kc only */
template <typename T>
__global__ void k_fill_coupling(const double *__restrict__ s, long long n, long long kl, long long sw, long long Kc,
                                T *B, T *C, band_dev d)
{
    const long long i = blockIdx.x;
    const long long m = d.m[i], o1 = d.off[i + 1];
    for (long long e = threadIdx.x; e < m * m; e += blockDim.x) {
        const long long c = e / m, a = e - c * m;
        const long long db = c + m - a, qb = db + kl;
        B[d.coff[i] + e] = (db <= Kc && qb < sw) ? (T)s[qb * n + o1 - m + a] : T(0);
        const long long dc = a + m - c, qc = kl - dc;
        C[d.coff[i] + e] = (dc <= Kc && qc >= 0) ? (T)s[qc * n + o1 + a] : T(0);
    }
}

/* the leading UL window of partition b = blockIdx.x + 1 from its (unfactored) band */
template <typename T> __global__ void k_fill_ul(const T *lu, T *ul, band_dev d)
{
    const long long b = blockIdx.x + 1;
    const long long nb = d.off[b + 1] - d.off[b], K = d.Ki[b], w = d.w[b], W = 2 * K + 1;
    const T *sb = lu + d.boff[b];
    T *dst = ul + d.uoff[b];
    for (long long e = threadIdx.x; e < W * w; e += blockDim.x) {
        const long long t = e / w, r = e - t * w, c = r + t - K;
        dst[e] = (c >= 0 && c < w) ? sb[t * nb + r] : T(0);
    }
}

/* ---- host side -------------------------------------------------------------------------- */

/* Dynamic shared memory for n elements of T, with SMEM_PAD elements of slack: ptxas merges
 * the unrolled remainder of a loop over a shared array (x[k], x[k+1], x[k+2] under k < n)
 * into one wider load that can read up to 3 elements past the last one used
 * (compute-sanitizer reported such 12-byte reads in k_reduced_solve, 2026-11-24).  The
 * slack keeps those reads inside the allocation. */
#define SMEM_PAD 4
template <typename T> static inline size_t smem_elems(long long n) { return sizeof(T) * (size_t)(n + SMEM_PAD); }

struct cuda_band_priv {
    band_dev d;
    void *dev_block; /* one allocation holding every array of d */
    /* launch shapes, from the layout once (c_prepare): largest K_i, partition height and
     * coupling size */
    long long kmax, nmax, mmax;
    /* SaP-C's UL windows as a set of bands for the blocked LU: the longest window, and the
     * device offsets of the windows' rows (P + 1, in dev_block; band_dev's off for them) */
    long long wmax;
    long long *woff;
    /* the block solve's sweeps: largest K_e = min(K_i, n_i - 1), the chunk width BW of
     * the chunked kernel (0: the per-step kernel), whether the unknowns sit in its shared
     * memory, and its dynamic shared memory in bytes (c_prepare, sweep_plan) */
    long long kemax;
    int sweep_bw, sweep_xs, sweep_step; /* sweep_step: SAP_BAND_SWEEP=step (the reduced solve too) */
    size_t sweep_smem;
    size_t sweep_optin; /* the device's shared memory per block (opt-in), for MULTI's sizing */
};

/* The sweep kernel of block_solve: with at most SWEEP_CHUNKED_PER_SM partitions per SM, the
 * chunked one with the widest chunk BW in 32, 16, 8, 4 whose two staging buffers (and the
 * partition's unknowns, when they also fit) stay in the device's shared memory per block;
 * else the per-step one.  Measured on an H100 (bench/banded --parts apply, float SaP-D,
 * bench/results/banded_apply_h100.md): N = 200,000, K = 200 at P = 2000 / 1000 / 400 / 200
 * (15 / 7.6 / 3 / 1.5 partitions per SM): chunked 0.8x / 0.9x / 1.6x / 2.0x the per-step
 * kernel; K = 521, P = 10: 1.8x; K = 1500, P = 66: 1.9x.  Many short partitions keep enough
 * blocks on each SM to hide the per-step latency, and the chunked staging of rows beyond
 * a short partition costs more than it saves there.  SAP_BAND_SWEEP=step forces the
 * per-step kernels (block and reduced solves; for before/after measurements and tests),
 * =chunked the chunked one at any P, =chunked32 .. chunked4 a chunk width where it fits. */
#define SWEEP_CHUNKED_PER_SM 4
static void sweep_plan(cuda_band_priv *pv, size_t es, long long P, int sms)
{
    int dev = 0, optin = 48 * 1024;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        optin = 48 * 1024;
    (void)cudaGetLastError();
    pv->sweep_optin = (size_t)optin;
    const char *env = getenv("SAP_BAND_SWEEP");
    int want = 0; /* 0: widest that fits */
    pv->sweep_bw = 0;
    pv->sweep_xs = 0;
    pv->sweep_smem = 0;
    pv->sweep_step = env && strcmp(env, "step") == 0;
    if (pv->sweep_step) return;
    const int forced = env && strncmp(env, "chunked", 7) == 0;
    if (forced) want = atoi(env + 7);
    if (!forced && P > (long long)SWEEP_CHUNKED_PER_SM * sms) return;
    for (int bw = 32; bw >= 4; bw /= 2) {
        if (want > 0 && bw != want) continue;
        const size_t stage = 2 * (size_t)(pv->kemax + 1) * (size_t)(bw + 1) * es;
        const size_t xs = (size_t)(pv->nmax + SMEM_PAD) * es;
        if (stage + xs <= (size_t)optin) {
            pv->sweep_bw = bw;
            pv->sweep_xs = 1;
            pv->sweep_smem = stage + xs;
            return;
        }
        if (stage <= (size_t)optin) {
            pv->sweep_bw = bw;
            pv->sweep_smem = stage;
            return;
        }
    }
}

static sap_status c_prepare(sap_band_fact *F)
{
    sap_context *ctx = F->ctx;
    sap_status st = SAP_OK;
    const sap_band_layout *L = &F->L;
    const long long P = L->P;
    /* 10 int64 arrays of P + 1, 2 double arrays of P + 1, one counter */
    const size_t na = (size_t)(P + 1);
    const size_t bytes = (10 * na + 2 * na + 1) * 8;
    long long *h = NULL;
    cuda_band_priv *pv = NULL;
    SAP_CUDA_HOST_ALLOC(ctx, h, bytes / 8);
    memset(h, 0, bytes);
    SAP_CUDA_HOST_ALLOC(ctx, pv, 1);
    memset(pv, 0, sizeof(*pv));
    SAP_TRY(sap__cuda_malloc(ctx, bytes, &pv->dev_block));
    {
        long long *hp[10];
        for (int a = 0; a < 10; a++) hp[a] = h + a * na;
        for (long long b = 0; b <= P; b++) {
            hp[0][b] = L->off[b];
            hp[9][b] = b == 0 ? 0 : hp[9][b - 1] + L->w[b - 1];
            hp[4][b] = L->boff[b];
            hp[5][b] = L->coff[b];
            if (F->uoff) hp[6][b] = F->uoff[b];
            if (b < P) {
                hp[1][b] = L->Ki[b];
                hp[2][b] = L->m[b];
                hp[3][b] = L->w[b];
                if (F->roff) hp[7][b] = F->roff[b];
                if (F->xoff) hp[8][b] = F->xoff[b];
            }
        }
        double *hd = (double *)(h + 10 * na);
        for (long long b = 0; b < P; b++) {
            hd[b] = F->thr[b];
            hd[na + b] = F->bst[b];
        }
        SAP_TRY(sap__cuda_h2d(ctx, pv->dev_block, h, bytes));
        long long *dp = (long long *)pv->dev_block;
        pv->d.off = dp;
        pv->d.Ki = dp + na;
        pv->d.m = dp + 2 * na;
        pv->d.w = dp + 3 * na;
        pv->d.boff = dp + 4 * na;
        pv->d.coff = dp + 5 * na;
        pv->d.uoff = dp + 6 * na;
        pv->d.roff = dp + 7 * na;
        pv->d.xoff = dp + 8 * na;
        pv->woff = dp + 9 * na;
        pv->d.thr = (double *)(dp + 10 * na);
        pv->d.bst = (double *)(dp + 11 * na);
        pv->d.counter = (unsigned long long *)(dp + 12 * na);
    }
    for (sap_int b = 0; b < P; b++) {
        if (L->Ki[b] > pv->kmax) pv->kmax = L->Ki[b];
        if (L->off[b + 1] - L->off[b] > pv->nmax) pv->nmax = L->off[b + 1] - L->off[b];
        if (L->m[b] > pv->mmax) pv->mmax = L->m[b];
        if (L->w[b] > pv->wmax) pv->wmax = L->w[b];
    }
    for (sap_int b = 0; b < P; b++) {
        const long long ke = L->Ki[b] < L->off[b + 1] - L->off[b] - 1 ? L->Ki[b] : L->off[b + 1] - L->off[b] - 1;
        if (ke > pv->kemax) pv->kemax = ke;
    }
    sweep_plan(pv, F->prec == SAP_FLOAT ? sizeof(float) : sizeof(double), P, sap__cuda_sm_count(ctx));
    F->dev = pv;
    pv = NULL;
cleanup:
    if (pv) {
        sap__cuda_free(ctx, pv->dev_block);
        sap__free(ctx, pv);
    }
    sap__free(ctx, h);
    return st;
}

/* what c_prepare takes on the host: h (staging of the parameter block) and pv */
static double c_prepare_host_bytes(int64_t P)
{
    return (double)((10 * (P + 1) + 2 * (P + 1) + 1) * 8) + (double)sizeof(cuda_band_priv);
}

static void c_release(sap_band_fact *F)
{
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    if (!pv) return;
    sap__cuda_free(F->ctx, pv->dev_block);
    sap__free(F->ctx, pv);
    F->dev = NULL;
}

static inline cudaStream_t stream_of(sap_context *ctx) { return (cudaStream_t)sap__cuda_stream(ctx); }

static int factor_threads(long long K)
{
    long long work = (2 * K + 1) * (K > 0 ? K : 1);
    int t = 64;
    while (t < 1024 && t < work / 2) t *= 2;
    return t;
}

template <typename T>
static sap_status blocked_lu_t(sap_band_fact *F, T *a, const band_dev &d, int win, long long nmax, long long kmax);

/* The partitions' LU (F->lu) and, SaP-C, the windows' UL (F->ul): per row (k_factor, both in
 * one launch where both are per row) or blocked (blocked_lu_t; the windows through the LU
 * of their reversal) */
template <typename T> static sap_status factor_t(sap_band_fact *F, sap_int *boosted)
{
    sap_context *ctx = F->ctx;
    sap_status st = SAP_OK;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    const sap_band_layout *L = &F->L;
    const int lu_rows = !F->blocked, ul_rows = F->coupled && !F->ul_blocked;
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(pv->d.counter, 0, sizeof(unsigned long long), s));
    if (lu_rows || ul_rows) { /* tasks [first, first + count): 0..P-1 LU of b, P..2P-1 UL of b - P */
        const long long Kmax = pv->kmax, first = lu_rows ? 0 : L->P;
        const long long tasks = (lu_rows ? L->P : 0) + (ul_rows ? L->P : 0);
        const size_t smem = smem_elems<T>(2 * Kmax + 2);
        if (smem > 48 * 1024)
            SAP_CUDA_TRY(ctx, cudaFuncSetAttribute(k_factor<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        k_factor<T><<<(unsigned)tasks, factor_threads(Kmax), smem, s>>>((T *)F->lu, (T *)F->ul, pv->d, L->P, ul_rows,
                                                                        first);
        SAP_CUDA_TRY_LAUNCH(ctx, lu_rows ? "band factor" : "band factor (UL windows)");
    }
    if (F->blocked) SAP_TRY(blocked_lu_t<T>(F, (T *)F->lu, pv->d, 0, pv->nmax, pv->kmax));
    if (F->coupled && F->ul_blocked) {
        band_dev wd = pv->d; /* the windows: their rows' offsets, their arrays at uoff */
        wd.off = pv->woff;
        wd.boff = pv->d.uoff;
        SAP_TRY(blocked_lu_t<T>(F, (T *)F->ul, wd, 1, pv->wmax, pv->kmax));
    }
    {
        unsigned long long nb = 0;
        SAP_CUDA_TRY(ctx, cudaMemcpyAsync(&nb, pv->d.counter, sizeof(nb), cudaMemcpyDeviceToHost, s));
        SAP_CUDA_TRY(ctx, cudaStreamSynchronize(s));
        *boosted += (sap_int)nb;
    }
cleanup:
    return st;
}


/* cuBLAS's batched GEMM in T (C = alpha A B + beta C, column-major, pointer arrays in device
 * memory; one matrix: the plain call on the host pointers) */
static cublasStatus_t gemm_b(cublasHandle_t h, int m, int n, int k, double alpha, const float *const *A, int lda,
                             const float *const *B, int ldb, double beta, float *const *C, int ldc, int count,
                             void *const *hp)
{
    const float a = (float)alpha, be = (float)beta;
    if (count == 1)
        return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &a, (const float *)hp[0], lda, (const float *)hp[1],
                           ldb, &be, (float *)hp[2], ldc);
    return cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &a, A, lda, B, ldb, &be, C, ldc, count);
}
static cublasStatus_t gemm_b(cublasHandle_t h, int m, int n, int k, double alpha, const double *const *A, int lda,
                             const double *const *B, int ldb, double beta, double *const *C, int ldc, int count,
                             void *const *hp)
{
    if (count == 1)
        return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, (const double *)hp[0], lda,
                           (const double *)hp[1], ldb, &beta, (double *)hp[2], ldc);
    return cublasDgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc, count);
}

/* partitions of one step with the same GEMM shapes (jb, h, K): one batched call each */
struct blk_group {
    long long s, jb, h, K, count, first; /* first: index of its pointers (9 arrays of count) */
};

/* bytes of device memory the blocked LU takes beyond the fact's arrays (blocked_lu_t; the windows after the partitions, no more) */
static double c_blocked_bytes(const sap_context *ctx, int64_t n, sap_int P, int64_t nmax, sap_int K, size_t es)
{
    (void)ctx;
    if (nmax <= SMALL_NMAX) return 0; /* k_blk_small: in shared memory */
    const double steps = (double)P * (double)((nmax + BS - 1) / BS);
    if ((int64_t)K > nmax - 1) K = (sap_int)(nmax - 1); /* a partition's own band: K_i <= n_i - 1 */
    const double m = ((double)n * (double)(sap__band_blocked_ld(K) + 1) + (double)P * (double)(K + BS)) * (double)es;
    const double w = (2.0 * BS * (double)K + 2.0 * BS * BS) * (double)P * (double)es;
    return (double)sap__cuda_alloc_size((size_t)m) + (double)sap__cuda_alloc_size((size_t)w) +
           (double)sap__cuda_alloc_size((size_t)((2.0 * ((double)P + 1.0) + 9.0 * steps) * 8.0));
}

/* rows of band b of the set the blocked LU factors: partition b, or (win) UL window b */
static inline long long set_rows(const sap_band_layout *L, int win, long long b)
{
    return win ? (long long)L->w[b] : (long long)(L->off[b + 1] - L->off[b]);
}

/* The blocked LU of a set of P bands in a (the partitions: d = pv->d; win: the UL windows,
 * factored as their reversals, d with the windows' offsets), at most nmax rows and K = kmax
 * each; boosted pivots counted in d.counter */
template <typename T>
static sap_status blocked_lu_t(sap_band_fact *F, T *a, const band_dev &d, int win, long long nmax, long long kmax)
{
    sap_context *ctx = F->ctx;
    cudaStream_t s = stream_of(ctx);
    const sap_band_layout *L = &F->L;
    const long long P = L->P;
    sap_status st = SAP_OK;
    long long *hmeta = NULL, *fill = NULL; /* fill: per group of a step, its pointers so far */
    void **hp = NULL;
    blk_group *grp = NULL;
    T *M = NULL, *Wk = NULL;
    void *dmeta = NULL;
    cublasHandle_t h = NULL;
    long long nsteps = 0, ngrp = 0, nptr = 0;
    int optin = 48 * 1024, dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        optin = 48 * 1024;
    (void)cudaGetLastError();
    if (nmax <= SMALL_NMAX && sizeof(T) * (size_t)nmax * (size_t)(nmax + 1) <= (size_t)optin) {
        /* every band in shared memory */
        const size_t smem = sizeof(T) * (size_t)nmax * (size_t)(nmax + 1);
        if (smem > 48 * 1024)
            SAP_CUDA_TRY(ctx, cudaFuncSetAttribute(k_blk_small<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        k_blk_small<T><<<(unsigned)(P < 65535 ? P : 65535), 256, smem, s>>>(a, d, P, win);
        SAP_CUDA_TRY_LAUNCH(ctx, "band blocked LU: bands in shared memory");
        goto cleanup;
    }
    for (long long b = 0; b < P; b++) {
        const long long nb = set_rows(L, win, b), st_b = (nb + BS - 1) / BS;
        if (st_b > nsteps) nsteps = st_b;
        nptr += 9 * st_b;
    }
    {
        void *hv = NULL;
        SAP_TRY(sap__cuda_cublas(ctx, &hv));
        h = (cublasHandle_t)hv;
    }
    /* host: moff, toff (P + 1 each), then the pointers; groups */
    SAP_CUDA_HOST_ALLOC(ctx, hmeta, 2 * (P + 1) + nptr);
    SAP_CUDA_HOST_ALLOC(ctx, grp, P * nsteps > 0 ? P * nsteps : 1);
    hmeta[0] = 0;
    hmeta[P + 1] = 0;
    for (long long b = 0; b < P; b++) {
        hmeta[b + 1] = hmeta[b] + sap__band_blocked_elems(set_rows(L, win, b), L->Ki[b]);
        hmeta[P + 2 + b] = hmeta[P + 1 + b] + BS * (long long)L->Ki[b];
    }
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(T) * (size_t)hmeta[P], (void **)&M));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(T) * (size_t)(2 * hmeta[2 * P + 1] + 2 * BS * BS * P), (void **)&Wk));
    SAP_TRY(sap__cuda_malloc(ctx, 8 * (size_t)(2 * (P + 1) + nptr), &dmeta));
    {
        /* the groups of every step and their pointers: A21 Uinv T2 | Linv A12 T1 | T2 T1 A22 */
        T *T2base = Wk, *Wv = Wk + 2 * hmeta[2 * P + 1];
        hp = (void **)(hmeta + 2 * (P + 1));
        void **dp = (void **)((long long *)dmeta + 2 * (P + 1));
        long long np = 0;
        SAP_CUDA_HOST_ALLOC(ctx, fill, P > 0 ? P : 1);
        for (long long sidx = 0; sidx < nsteps; sidx++) {
            const long long g0 = ngrp;
            /* pass 1: the step's groups and their sizes; pass 2: their pointers, array a of
             * group g at first + a count + (its c-th partition) */
            for (int pass = 0; pass < 2; pass++) {
                for (long long b = 0; b < P; b++) {
                    const long long nb = set_rows(L, win, b), K = L->Ki[b], j = sidx * BS;
                    if (j >= nb) continue;
                    const long long jb = nb - j < BS ? nb - j : BS, hh = K < nb - j - jb ? K : nb - j - jb;
                    if (hh <= 0) continue;
                    long long g = g0;
                    while (g < ngrp && !(grp[g].jb == jb && grp[g].h == hh && grp[g].K == K)) g++;
                    if (pass == 0) {
                        if (g == ngrp) grp[ngrp++] = blk_group{sidx, jb, hh, K, 0, 0};
                        grp[g].count++;
                        continue;
                    }
                    const long long ku = K + BS - 1, ldm = 2 * ku, cnt = grp[g].count, c = fill[g - g0]++;
                    T *m = M + hmeta[b] + ku;
                    T *T2 = T2base + 2 * hmeta[P + 1 + b], *T1 = T2 + BS * K;
                    T *Li = Wv + b * 2 * BS * BS, *Ui = Li + BS * BS;
                    void *ptrs[9] = {m + (j + jb) + j * ldm, Ui, T2, Li, m + j + (j + jb) * ldm, T1, T2, T1,
                                     m + (j + jb) + (j + jb) * ldm};
                    for (int a = 0; a < 9; a++) hp[grp[g].first + a * cnt + c] = ptrs[a];
                }
                if (pass == 0)
                    for (long long g = g0; g < ngrp; g++) {
                        grp[g].first = np;
                        np += 9 * grp[g].count;
                        fill[g - g0] = 0;
                    }
            }
        }
        SAP_TRY(sap__cuda_h2d(ctx, dmeta, hmeta, 8 * (size_t)(2 * (P + 1) + nptr)));
        const blk_meta mt = {(const long long *)dmeta, (const long long *)dmeta + P + 1};
        const unsigned gy = (unsigned)(P < 65535 ? P : 65535);
        {
            const long long tiles = ((nmax + 31) / 32) * ((2 * (kmax + BS - 1) + 1 + 31) / 32);
            long long gx = tiles < 16384 / (long long)gy + 1 ? tiles : 16384 / (long long)gy + 1;
            k_blk_to_skew<T><<<dim3((unsigned)gx, gy), 256, 0, s>>>(a, M, d, mt, P, win);
            SAP_CUDA_TRY_LAUNCH(ctx, "band blocked LU: skewed copy");
        }
        long long g = 0;
        const unsigned gd = (unsigned)(P < 65535 ? P : 65535);
        for (long long sidx = 0; sidx < nsteps; sidx++) {
            k_blk_diag<T><<<gd, 256, 0, s>>>(a, M, Wv, d, mt, P, sidx, win);
            SAP_CUDA_TRY_LAUNCH(ctx, "band blocked LU: diagonal blocks");
            long long work = 0;
            for (; g < ngrp && grp[g].s == sidx; g++) {
                const blk_group &G = grp[g];
                const int jb = (int)G.jb, hh = (int)G.h, K = (int)G.K, ldm = (int)sap__band_blocked_ld(G.K);
                const int cnt = (int)G.count;
                void **q = dp + G.first;
                void *const *hq = hp + G.first;
                void *h1[3] = {hq[0], hq[cnt], hq[2 * cnt]}, *h2[3] = {hq[3 * cnt], hq[4 * cnt], hq[5 * cnt]},
                     *h3[3] = {hq[6 * cnt], hq[7 * cnt], hq[8 * cnt]};
                cublasStatus_t bs_;
                bs_ = gemm_b(h, hh, jb, jb, 1.0, (const T *const *)q, ldm, (const T *const *)(q + cnt), BS, 0.0,
                             (T *const *)(q + 2 * cnt), K, cnt, h1);
                if (bs_ == CUBLAS_STATUS_SUCCESS)
                    bs_ = gemm_b(h, jb, hh, jb, 1.0, (const T *const *)(q + 3 * cnt), BS, (const T *const *)(q + 4 * cnt),
                                 ldm, 0.0, (T *const *)(q + 5 * cnt), BS, cnt, h2);
                if (bs_ == CUBLAS_STATUS_SUCCESS)
                    bs_ = gemm_b(h, hh, hh, jb, -1.0, (const T *const *)(q + 6 * cnt), K, (const T *const *)(q + 7 * cnt),
                                 BS, 1.0, (T *const *)(q + 8 * cnt), ldm, cnt, h3);
                if (bs_ != CUBLAS_STATUS_SUCCESS) {
                    st = SAP_ERROR(ctx, bs_ == CUBLAS_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                                   "band blocked LU: cuBLAS GEMM: %s", cublasGetStatusString(bs_));
                    goto cleanup;
                }
                const long long e = 2 * G.jb * (G.jb + G.h - 1 < G.K ? G.jb + G.h - 1 : G.K); /* k_blk_store */
                if (e > work) work = e;
            }
            if (work > 0) {
                long long gx = (work + 255) / 256;
                if (gx > 8192 / (long long)gy + 1) gx = 8192 / (long long)gy + 1;
                k_blk_store<T><<<dim3((unsigned)gx, gy), 256, 0, s>>>(a, T2base, d, mt, P, sidx, win);
                SAP_CUDA_TRY_LAUNCH(ctx, "band blocked LU: L21 and U12");
            }
        }
    }
cleanup:
    /* the work arrays go back to the context's pool, whose next user is queued behind these
     * kernels on the same stream; on an error nothing in flight may read them either */
    if (st != SAP_OK) (void)cudaStreamSynchronize(s);
    sap__cuda_free(ctx, M);
    sap__cuda_free(ctx, Wk);
    sap__cuda_free(ctx, dmeta);
    sap__free(ctx, hmeta);
    sap__free(ctx, grp);
    sap__free(ctx, fill);
    return st;
}

static cublasStatus_t trsm_b(cublasHandle_t h, cublasFillMode_t uplo, cublasDiagType_t diag, int m,
                             const float *const *A, float *const *B, int count)
{
    const float one = 1.0f;
    return cublasStrsmBatched(h, CUBLAS_SIDE_LEFT, uplo, CUBLAS_OP_N, diag, m, m, &one, A, m, B, m, count);
}
static cublasStatus_t trsm_b(cublasHandle_t h, cublasFillMode_t uplo, cublasDiagType_t diag, int m,
                             const double *const *A, double *const *B, int count)
{
    const double one = 1.0;
    return cublasDtrsmBatched(h, CUBLAS_SIDE_LEFT, uplo, CUBLAS_OP_N, diag, m, m, &one, A, m, B, m, count);
}

static cublasStatus_t gemm_nn_b(cublasHandle_t h, int m, double alpha, const float *const *A, const float *const *B,
                                double beta, float *const *C, int count)
{
    const float a = (float)alpha, b = (float)beta;
    return cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &a, A, m, B, m, &b, C, m, count);
}
static cublasStatus_t gemm_nn_b(cublasHandle_t h, int m, double alpha, const double *const *A, const double *const *B,
                                double beta, double *const *C, int count)
{
    return cublasDgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, A, m, B, m, &beta, C, m, count);
}

/* The interfaces with m_i > 0 in increasing order of m (insertion sort: m takes few
 * values) into order; their count. */
static long long interfaces_by_m(const sap_band_layout *L, long long *order)
{
    long long no = 0;
    for (long long i = 0; i < L->P - 1; i++) {
        if (L->m[i] == 0) continue;
        long long j = no++;
        while (j > 0 && L->m[order[j - 1]] > L->m[i]) order[j] = order[j - 1], j--;
        order[j] = i;
    }
    return no;
}

/* The coupling's batched cuBLAS calls: the interfaces with m_i > 0 grouped by m (one call
 * per group and triangle; usually one group), each interface's nptr pointers (fill(i, row):
 * row[0 .. nptr - 1]) in nptr arrays of ni on the device, ordered as the groups; run(h, m,
 * ptrs, q0, count) issues one group's calls on the pointers from q0 (ptrs + k ni + q0: the
 * k-th pointer of the group's first interface).  what names the call in an error.  Waits
 * for the queued calls before the pointer arrays go back to the pool. */
template <typename Fill, typename Run>
static sap_status cublas_by_m(sap_band_fact *F, int nptr, const char *what, Fill fill, Run run)
{
    sap_context *ctx = F->ctx;
    const sap_band_layout *L = &F->L;
    cudaStream_t s = stream_of(ctx);
    const long long ni = L->P - 1;
    sap_status st = SAP_OK;
    void **hp = NULL, **dp = NULL;
    long long *order = NULL;
    cublasHandle_t h = NULL;
    {
        void *hv = NULL;
        SAP_TRY(sap__cuda_cublas(ctx, &hv));
        h = (cublasHandle_t)hv;
    }
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(void *) * (size_t)(nptr * ni), (void **)&dp));
    SAP_CUDA_HOST_ALLOC(ctx, hp, nptr * ni);
    SAP_CUDA_HOST_ALLOC(ctx, order, ni);
    {
        const long long no = interfaces_by_m(L, order);
        for (long long q = 0; q < no; q++) {
            void *row[4] = {NULL, NULL, NULL, NULL};
            fill(order[q], row);
            for (int k = 0; k < nptr; k++) hp[k * ni + q] = row[k];
        }
        SAP_CUDA_TRY(ctx, cudaMemcpyAsync(dp, hp, sizeof(void *) * (size_t)(nptr * ni), cudaMemcpyHostToDevice, s));
        for (long long q0 = 0; q0 < no;) {
            const long long m = L->m[order[q0]];
            long long q1 = q0;
            while (q1 < no && L->m[order[q1]] == m) q1++;
            const cublasStatus_t cs = run(h, (int)m, dp, q0, (int)(q1 - q0));
            if (cs != CUBLAS_STATUS_SUCCESS) {
                st = SAP_ERROR(ctx, cs == CUBLAS_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                               "band %s (m = %lld): %s", what, m, cublasGetStatusString(cs));
                goto cleanup;
            }
            q0 = q1;
        }
    }
cleanup:
    {
        const cudaError_t e = cudaStreamSynchronize(s);
        if (e != cudaSuccess && st == SAP_OK) st = sap__cuda_error(ctx, e, what, __FILE__, __LINE__);
    }
    sap__cuda_free(ctx, dp);
    sap__free(ctx, hp);
    sap__free(ctx, order);
    return st;
}

/* The blocked spikes: the coupling blocks of the factors made dense (k_spike_blocks), then
 * V_i = U_bb^{-1} L_bb^{-1} B_i and W_{i+1} = L_tt^{-1} U_tt^{-1} C_{i+1} as cuBLAS's batched
 * triangular solves, one call per triangle and coupling size m (cublas_by_m).  2 m^3 flops a
 * spike as the per-column kernel, but as level-3 BLAS instead of m independent,
 * latency-bound substitutions. */
template <typename T> static sap_status spikes_blocked_t(sap_band_fact *F)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    const sap_band_layout *L = &F->L;
    cudaStream_t s = stream_of(ctx);
    const long long ni = L->P - 1, ncpl = L->coff[L->P - 1];
    sap_status st = SAP_OK;
    T *D = NULL;
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(T) * (size_t)(2 * ncpl), (void **)&D));
    k_spike_blocks<T><<<dim3((unsigned)ni, 2), 256, 0, s>>>((const T *)F->lu, (const T *)F->ul, D, D + ncpl, pv->d);
    SAP_CUDA_TRY_LAUNCH(ctx, "band spikes: dense coupling blocks");
    SAP_CUDA_TRY(ctx, cudaMemcpyAsync(F->V, F->B, sizeof(T) * (size_t)ncpl, cudaMemcpyDeviceToDevice, s));
    SAP_CUDA_TRY(ctx, cudaMemcpyAsync(F->W, F->C, sizeof(T) * (size_t)ncpl, cudaMemcpyDeviceToDevice, s));
    /* the pointers Dv V Dw W of each interface */
    SAP_TRY(cublas_by_m(
        F, 4, "spikes: cuBLAS batched TRSM",
        [&](long long i, void **row) {
            const long long o = L->coff[i];
            row[0] = D + o;
            row[1] = (T *)F->V + o;
            row[2] = D + ncpl + o;
            row[3] = (T *)F->W + o;
        },
        [&](cublasHandle_t h, int m, void **dp, long long q0, int cnt) {
            const T *const *Av = (const T *const *)(dp + q0), *const *Aw = (const T *const *)(dp + 2 * ni + q0);
            T *const *Bv = (T *const *)(dp + ni + q0), *const *Bw = (T *const *)(dp + 3 * ni + q0);
            cublasStatus_t cs = trsm_b(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_UNIT, m, Av, Bv, cnt);
            if (cs == CUBLAS_STATUS_SUCCESS) cs = trsm_b(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, m, Av, Bv, cnt);
            if (cs == CUBLAS_STATUS_SUCCESS) cs = trsm_b(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_UNIT, m, Aw, Bw, cnt);
            if (cs == CUBLAS_STATUS_SUCCESS) cs = trsm_b(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, m, Aw, Bw, cnt);
            return cs;
        }));
cleanup:
    if (st != SAP_OK) (void)cudaStreamSynchronize(s); /* nothing in flight reads D */
    sap__cuda_free(ctx, D);
    return st;
}

/* The spikes through cuBLAS's batched TRSM (spikes_blocked_t) from a coupling size of
 * CUDA_SPIKES_BLOCKED_MMIN on, unless SAP_BAND_SPIKES=rows (or =blocked at any m). */
#define CUDA_SPIKES_BLOCKED_MMIN 32
static int spikes_blocked_pick(long long mmax)
{
    const char *env = getenv("SAP_BAND_SPIKES");
    if (env && !strcmp(env, "rows")) return 0;
    if (env && !strcmp(env, "blocked")) return 1;
    return mmax >= CUDA_SPIKES_BLOCKED_MMIN;
}

static void c_spikes_bytes(const sap_context *ctx, sap_int P, double ncpl, sap_int mmax, size_t es, double *dev,
                           double *host)
{
    (void)ctx;
    *dev = *host = 0;
    if (P < 2 || !spikes_blocked_pick(mmax)) return;
    const double ni = (double)(P - 1);
    *dev = (double)sap__cuda_alloc_size((size_t)(2.0 * ncpl * (double)es)) +
           (double)sap__cuda_alloc_size((size_t)(4.0 * ni * sizeof(void *)));
    *host = 4.0 * ni * sizeof(void *) + ni * 8.0;
}

template <typename T> static sap_status spikes_t(sap_band_fact *F)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    if (F->L.P < 2) return SAP_OK;
    if (spikes_blocked_pick(pv->mmax)) return spikes_blocked_t<T>(F);
    /* a thread per column: all m columns of a block at once */
    int threads = 32;
    while (threads < pv->mmax && threads < 1024) threads *= 2;
    dim3 grid((unsigned)(F->L.P - 1), 2);
    k_spikes<T><<<grid, threads, 0, s>>>((const T *)F->lu, (const T *)F->ul, (const T *)F->B, (const T *)F->C, (T *)F->V,
                                    (T *)F->W, pv->d);
    SAP_CUDA_LAUNCHED(ctx, "band spikes");
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(s));
    return SAP_OK;
}

/* R_i = I - W_{i+1} V_i of every interface by cuBLAS's batched GEMM (cublas_by_m) */
template <typename T> static sap_status reduced_product_blocked_t(sap_band_fact *F)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    const sap_band_layout *L = &F->L;
    const long long ni = L->P - 1;
    sap_status st = SAP_OK;
    k_identity_blocks<T><<<(unsigned)ni, 256, 0, stream_of(ctx)>>>((T *)F->R, pv->d);
    SAP_CUDA_TRY_LAUNCH(ctx, "band reduced systems: identity");
    SAP_TRY(cublas_by_m(
        F, 3, "reduced systems: cuBLAS batched GEMM",
        [&](long long i, void **row) {
            const long long o = L->coff[i];
            row[0] = (T *)F->W + o;
            row[1] = (T *)F->V + o;
            row[2] = (T *)F->R + o;
        },
        [&](cublasHandle_t h, int m, void **dp, long long q0, int cnt) {
            return gemm_nn_b(h, m, -1.0, (const T *const *)(dp + q0), (const T *const *)(dp + ni + q0), 1.0,
                             (T *const *)(dp + 2 * ni + q0), cnt);
        }));
cleanup:
    return st;
}

/* The reduced systems' LU (partial pivoting): a thread block an interface (k_reduced_factor)
 * runs the m^3 work of one interface on one SM, fine while interfaces are many and small;
 * cuSOLVER's getrf uses the whole GPU for one interface, a call each, its time bound by the
 * m dependent panel steps.  Measured on an H200 (float, bench/banded --parts psweep with
 * SAP_BAND_RDCD=kernel|solver, bench/results/banded_sapc_ul_h200_9b171c2.md; T_LUrdcd, the
 * product I - W V included):
 *   kernel: 1.07 s for 13 interfaces of m = 1500, 167 ms for 65 of 757, 50 / 105 ms for 99 /
 *           399 of 500, 2.7 / 13.5 ms for 263 / 999 of 200: RDCD_KERNEL_C m^3 a round of
 *           RDCD_KERNEL_PER_SM interfaces an SM (rounds not below 1);
 *   getrf:  4.6, 1.4, 0.85 and 0.30 ms a call at m = 1500, 757, 500, 200: RDCD_SOLVER_ROW m +
 *           (2/3) m^3 / RDCD_SOLVER_RATE.
 * getrf takes the interfaces of m >= the threshold whose predicted total (kernel for those
 * below, getrf for the rest) is least (K = 1500: P = 14 1.07 s -> 60 ms, P = 66 167 -> 91 ms;
 * K = 500 at P = 100 and K = 200 stay with the kernel).  Returns that smallest m that goes
 * to cuSOLVER (0: none).  SAP_BAND_RDCD=kernel|solver
 * forces either. */
#define RDCD_KERNEL_C 4.0e-10
#define RDCD_KERNEL_PER_SM 1.5
#define RDCD_SOLVER_ROW 1.5e-6
#define RDCD_SOLVER_RATE 1.0e12
static double rdcd_kernel_seconds(double ni, double mmax, int sms)
{
    const double rounds = ni / (RDCD_KERNEL_PER_SM * (double)(sms > 0 ? sms : 1));
    return (rounds > 1 ? rounds : 1) * RDCD_KERNEL_C * mmax * mmax * mmax;
}
static double rdcd_solver_seconds(double m) { return RDCD_SOLVER_ROW * m + 2.0 / 3.0 * m * m * m / RDCD_SOLVER_RATE; }

static int cmp_ll(const void *a, const void *b)
{
    const long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}
static sap_status rdcd_solver_mmin(sap_band_fact *F, int sms, long long *mmin)
{
    const sap_band_layout *L = &F->L;
    sap_status st = SAP_OK;
    long long *ms = NULL;
    const char *env = getenv("SAP_BAND_RDCD");
    *mmin = 0;
    if (env && !strcmp(env, "kernel")) return SAP_OK;
    if (env && !strcmp(env, "solver")) {
        *mmin = 1;
        return SAP_OK;
    }
    /* each candidate threshold t (an m of the layout, or none): the kernel's rounds for the
     * interfaces below t (their count and largest m), getrf for the others, one after the
     * other on the stream; the cheapest prediction wins.  Over the m in increasing order:
     * the interfaces from position j on go to getrf (a suffix sum of its seconds). */
    const long long ni = L->P - 1;
    SAP_CUDA_HOST_ALLOC(F->ctx, ms, ni > 0 ? ni : 1);
    {
        long long nm = 0;
        for (long long i = 0; i < ni; i++)
            if (L->m[i] > 0) ms[nm++] = (long long)L->m[i];
        qsort(ms, (size_t)nm, sizeof(long long), cmp_ll);
        double suffix = 0, t_best = nm > 0 ? rdcd_kernel_seconds((double)nm, (double)ms[nm - 1], sms) : 0;
        for (long long j = nm - 1; j >= 0; j--) {
            suffix += rdcd_solver_seconds((double)ms[j]);
            if (j > 0 && ms[j - 1] == ms[j]) continue; /* a threshold takes all of one m */
            const double tt = (j > 0 ? rdcd_kernel_seconds((double)j, (double)ms[j - 1], sms) : 0) + suffix;
            if (tt < t_best) {
                t_best = tt;
                *mmin = ms[j];
            }
        }
    }
cleanup:
    sap__free(F->ctx, ms);
    return st;
}

/* The coupling's predicted seconds (sap_band_kernels.coupling_seconds) from the same H200
 * run (float; double: half the rates): the spikes' batched TRSMs (2 m^3 flops an interface)
 * at SPK_RATE after SPK_FIXED (4.7-5.7 TFLOP/s at m = 500 .. 1500 with P = 14 .. 400; 2.7 at
 * m = 200, P = 1000), the product I - W V (2 m^3) at PRODUCT_RATE, the LU as rdcd_solver_mmin
 * predicts it; below a coupling size of 32 the per-column kernels at the band rate's flops
 * are not modelled here (NULL would do; they are cheap: 12 ms at m = 200, P = 264). */
#define SPK_FIXED 5.0e-4
#define SPK_RATE 4.0e12
#define PRODUCT_RATE 2.0e13
static double c_coupling_seconds(sap_context *ctx, sap_int P, sap_int m, sap_precision prec)
{
    if (P < 2 || m < 1) return 0;
    const double ni = (double)(P - 1), mm = (double)m, m3 = mm * mm * mm, half = prec == SAP_FLOAT ? 1.0 : 2.0;
    const double lu = fmin(rdcd_kernel_seconds(ni, mm, sap__cuda_sm_count(ctx)), ni * rdcd_solver_seconds(mm));
    return SPK_FIXED + half * (ni * 2.0 * m3 / SPK_RATE + ni * 2.0 * m3 / PRODUCT_RATE + lu);
}

static cusolverStatus_t getrf_lwork(cusolverDnHandle_t h, int m, float *A, int *lw)
{
    return cusolverDnSgetrf_bufferSize(h, m, m, A, m, lw);
}
static cusolverStatus_t getrf_lwork(cusolverDnHandle_t h, int m, double *A, int *lw)
{
    return cusolverDnDgetrf_bufferSize(h, m, m, A, m, lw);
}
static cusolverStatus_t getrf_c(cusolverDnHandle_t h, int m, float *A, float *work, int *piv, int *info)
{
    return cusolverDnSgetrf(h, m, m, A, m, work, piv, info);
}
static cusolverStatus_t getrf_c(cusolverDnHandle_t h, int m, double *A, double *work, int *piv, int *info)
{
    return cusolverDnDgetrf(h, m, m, A, m, work, piv, info);
}

/* getrf of R (holding I - W V) for the interfaces of m >= mmin; one that meets an exact zero
 * pivot (info > 0) is redone by k_reduced_factor from V and W (its rule: a zero column's
 * pivot becomes 1, the preconditioner stays usable) */
template <typename T> static sap_status reduced_factor_solver_t(sap_band_fact *F, long long mmin)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    const sap_band_layout *L = &F->L;
    const long long ni = L->P - 1;
    sap_status st = SAP_OK;
    cusolverDnHandle_t h = NULL;
    T *work = NULL;
    int *dinfo = NULL, *hinfo = NULL, lwmax = 0;
    {
        void *hv = NULL;
        SAP_TRY(sap__cuda_cusolver(ctx, &hv));
        h = (cusolverDnHandle_t)hv;
    }
    for (long long i = 0; i < ni; i++) {
        if (L->m[i] < mmin) continue;
        int lw = 0;
        const cusolverStatus_t cs = getrf_lwork(h, (int)L->m[i], (T *)F->R + L->coff[i], &lw);
        if (cs != CUSOLVER_STATUS_SUCCESS) {
            st = SAP_ERROR(ctx, SAP_ERR_DEVICE, "band reduced systems: cuSOLVER getrf workspace: status %d", (int)cs);
            goto cleanup;
        }
        if (lw > lwmax) lwmax = lw;
    }
    sap__log(ctx, SAP_PRINT_INFO, "band reduced systems: cuSOLVER getrf of %lld interfaces (workspace %d elements)",
             ni, lwmax);
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(T) * (size_t)(lwmax > 0 ? lwmax : 1), (void **)&work));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int) * (size_t)ni, (void **)&dinfo));
    SAP_CUDA_HOST_ALLOC(ctx, hinfo, ni);
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(dinfo, 0, sizeof(int) * (size_t)ni, s));
    for (long long i = 0; i < ni; i++) {
        if (L->m[i] < mmin) continue;
        const cusolverStatus_t cs =
            getrf_c(h, (int)L->m[i], (T *)F->R + L->coff[i], work, (int *)F->rpiv + F->roff[i], dinfo + i);
        if (cs != CUSOLVER_STATUS_SUCCESS) {
            st = SAP_ERROR(ctx, cs == CUSOLVER_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                           "band reduced systems: cuSOLVER getrf (interface %lld, m = %lld): status %d", i,
                           (long long)L->m[i], (int)cs);
            goto cleanup;
        }
    }
    k_piv_zero_based<<<(unsigned)ni, 256, 0, s>>>((int *)F->rpiv, pv->d, mmin);
    SAP_CUDA_TRY_LAUNCH(ctx, "band reduced systems: pivots");
    SAP_CUDA_TRY(ctx, cudaMemcpyAsync(hinfo, dinfo, sizeof(int) * (size_t)ni, cudaMemcpyDeviceToHost, s));
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize(s));
    for (long long i = 0; i < ni; i++) {
        if (hinfo[i] < 0) {
            st = SAP_ERROR(ctx, SAP_ERR_DEVICE, "band reduced systems: getrf argument %d invalid", -hinfo[i]);
            goto cleanup;
        }
        if (hinfo[i] > 0) {
            k_reduced_factor<T><<<1, 512, 0, s>>>((const T *)F->V, (const T *)F->W, (T *)F->R, (int *)F->rpiv, pv->d,
                                                  1, i, 0);
            SAP_CUDA_TRY_LAUNCH(ctx, "band reduced systems: a singular interface");
        }
    }
cleanup:
    if (st != SAP_OK) (void)cudaStreamSynchronize(s);
    sap__cuda_free(ctx, work);
    sap__cuda_free(ctx, dinfo);
    sap__free(ctx, hinfo);
    return st;
}

template <typename T> static sap_status reduced_factor_t(sap_band_fact *F)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    if (F->L.P < 2) return SAP_OK;
    /* R = I - W V as level-3 BLAS where the spikes are (the same coupling sizes) */
    const int product = !spikes_blocked_pick(pv->mmax);
    if (!product) {
        sap_status st = reduced_product_blocked_t<T>(F);
        if (st < 0) return st;
    }
    long long smin = 0;
    {
        const sap_status sm = rdcd_solver_mmin(F, sap__cuda_sm_count(ctx), &smin);
        if (sm < 0) return sm;
    }
    k_reduced_factor<T><<<(unsigned)(F->L.P - 1), 512, 0, s>>>((const T *)F->V, (const T *)F->W, (T *)F->R,
                                                               (int *)F->rpiv, pv->d, product, 0, smin);
    SAP_CUDA_LAUNCHED(ctx, "band reduced factor");
    if (smin > 0) {
        sap_status st = reduced_factor_solver_t<T>(F, smin);
        if (st < 0) return st;
    }
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(s));
    return SAP_OK;
}

/* k > 1 (MULTI): all k columns' unknowns in shared memory beside the staging buffers when
 * they fit the device's per-block limit, else in z (global memory) */
template <typename T, int BW, bool MULTI>
static sap_status launch_chunked(sap_band_fact *F, int threads, const T *r, T *z, int k)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    size_t smem = pv->sweep_smem;
    int xsh = pv->sweep_xs;
    if (MULTI) {
        const size_t stage = 2 * (size_t)(pv->kemax + 1) * (size_t)(BW + 1) * sizeof(T);
        const size_t xs = smem_elems<T>((long long)k * pv->nmax);
        xsh = stage + xs <= pv->sweep_optin;
        smem = xsh ? stage + xs : stage;
    }
    if (!MULTI) {
        if (smem > 48 * 1024)
            SAP_CUDA_CHECK(ctx, cudaFuncSetAttribute(k_block_solve_chunked<T, BW>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        k_block_solve_chunked<T, BW><<<(unsigned)F->L.P, threads, smem, s>>>((const T *)F->lu, r, z, pv->d,
                                                                           (int)pv->kemax, xsh);
    } else {
        if (smem > 48 * 1024)
            SAP_CUDA_CHECK(ctx, cudaFuncSetAttribute(k_block_solve_chunked_many<T, BW>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        k_block_solve_chunked_many<T, BW><<<(unsigned)F->L.P, threads, smem, s>>>((const T *)F->lu, r, z, pv->d,
                                                                                (int)pv->kemax, xsh, k,
                                                                                (long long)F->L.n);
    }
    SAP_CUDA_LAUNCHED(ctx, "band block solve (chunked)");
    return SAP_OK;
}

/* the per-step sweeps: the unknowns of the k columns in shared memory when they fit */
template <typename T, bool WARP, bool MULTI>
static void launch_step(sap_band_fact *F, int threads, const T *r, T *z, int k)
{
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(F->ctx);
    const size_t smem = smem_elems<T>((long long)k * pv->nmax);
    const T *lu = (const T *)F->lu;
    const long long ld = F->L.n;
    if (smem <= 48 * 1024)
        k_block_solve<T, WARP, true, MULTI><<<(unsigned)F->L.P, threads, smem, s>>>(lu, r, z, pv->d, k, ld);
    else k_block_solve<T, WARP, false, MULTI><<<(unsigned)F->L.P, threads, 0, s>>>(lu, r, z, pv->d, k, ld);
}

/* k columns in one launch (a thread block per partition reads its factors once for all of
 * them); k = 1 takes the single-vector kernels (MULTI = false) */
template <typename T, bool MULTI> static sap_status block_solve_k(sap_band_fact *F, int k, const T *r, T *z)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    const long long Kmax = pv->kmax;
    if (pv->sweep_bw) {
        /* threads: one per row of the dense update (K_e rows), whole warps, 32 .. 1024;
         * MULTI: at least a warp per column (the chunk triangles), up to 8 warps */
        int t = 32;
        while (t < pv->kemax && t < 1024) t += 32;
        if (MULTI)
            while (t < 32 * k && t < 256) t += 32;
        switch (pv->sweep_bw) {
        case 32: return launch_chunked<T, 32, MULTI>(F, t, r, z, k);
        case 16: return launch_chunked<T, 16, MULTI>(F, t, r, z, k);
        case 8: return launch_chunked<T, 8, MULTI>(F, t, r, z, k);
        default: return launch_chunked<T, 4, MULTI>(F, t, r, z, k);
        }
    }
    if (Kmax <= 32) launch_step<T, true, MULTI>(F, 32, r, z, k);
    else {
        int t = 64;
        while (t < Kmax && t < 1024) t *= 2;
        launch_step<T, false, MULTI>(F, t, r, z, k);
    }
    SAP_CUDA_LAUNCHED(ctx, "band block solve");
    return SAP_OK;
}

template <typename T> static sap_status block_solve_t(sap_band_fact *F, sap_int k, const void *r, void *z)
{
    if (k < 1 || k > INT_MAX / 32)
        return SAP_ERROR(F->ctx, SAP_ERR_INVALID, "band block solve: %lld columns", (long long)k);
    if (k == 1) return block_solve_k<T, false>(F, 1, (const T *)r, (T *)z);
    return block_solve_k<T, true>(F, (int)k, (const T *)r, (T *)z);
}

template <typename T> static sap_status reduced_solve_t(sap_band_fact *F, sap_int k, const void *g, void *xr)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    if (F->L.P < 2 || k < 1) return SAP_OK;
    if (k > 65535) return SAP_ERROR(ctx, SAP_ERR_INVALID, "band reduced solve: %lld columns", (long long)k);
    const size_t smem = smem_elems<T>(pv->mmax);
    if (smem > 48 * 1024)
        SAP_CUDA_CHECK(ctx, cudaFuncSetAttribute(k_reduced_solve<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 (int)smem));
    const dim3 grid((unsigned)(F->L.P - 1), (unsigned)k);
    k_reduced_solve<T><<<grid, 256, smem, s>>>((const T *)F->V, (const T *)F->W, (const T *)F->R, (const int *)F->rpiv,
                                              (const T *)g, (T *)xr, pv->d, !pv->sweep_step, (long long)F->L.n,
                                              (long long)F->xlen);
    SAP_CUDA_LAUNCHED(ctx, "band reduced solve");
    return SAP_OK;
}

template <typename T>
static sap_status purify_t(sap_band_fact *F, sap_int k, const void *r, void *f, const void *xr)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    if (k < 1) return SAP_OK;
    if (k > 65535) return SAP_ERROR(ctx, SAP_ERR_INVALID, "band purify: %lld columns", (long long)k);
    if (r != f)
        SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(f, r, sizeof(T) * (size_t)F->L.n * (size_t)k, cudaMemcpyDeviceToDevice, s));
    if (F->L.P < 2) return SAP_OK;
    const dim3 grid((unsigned)(F->L.P - 1), (unsigned)k);
    for (int pass = 0; pass < 2; pass++) {
        k_purify<T><<<grid, 256, 0, s>>>((const T *)(pass == 0 ? F->B : F->C), (const T *)xr, (T *)f, pv->d, pass,
                                         (long long)F->L.n, (long long)F->xlen);
        SAP_CUDA_LAUNCHED(ctx, "band purify");
    }
    return SAP_OK;
}

template <typename T> static sap_status fill_from_band_t(sap_band_fact *F, const sap_band_source *src, double *norms)
{
    sap_context *ctx = F->ctx;
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    cudaStream_t s = stream_of(ctx);
    sap_status st = SAP_OK;
    const sap_band_layout *L = &F->L;
    double *d_norms = NULL;
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)L->P, (void **)&d_norms));
    k_fill_lu<T><<<(unsigned)L->P, 256, 0, s>>>(src->val, (long long)L->n, (long long)src->kl, (long long)src->w,
                                                (T *)F->lu, d_norms, pv->d);
    SAP_CUDA_LAUNCHED(ctx, "band fill");
    if (F->coupled) {
        k_fill_coupling<T><<<(unsigned)(L->P - 1), 256, 0, s>>>(src->val, (long long)L->n, (long long)src->kl,
                                                                (long long)src->w, (long long)L->K, (T *)F->B,
                                                                (T *)F->C, pv->d);
        SAP_CUDA_LAUNCHED(ctx, "band fill coupling");
        k_fill_ul<T><<<(unsigned)(L->P - 1), 256, 0, s>>>((const T *)F->lu, (T *)F->ul, pv->d);
        SAP_CUDA_LAUNCHED(ctx, "band fill UL windows");
    }
    SAP_TRY(sap__cuda_d2h(ctx, norms, d_norms, sizeof(double) * (size_t)L->P));
cleanup:
    if (d_norms) sap__cuda_free(ctx, d_norms);
    return st;
}

static sap_status c_fill_from_band(sap_band_fact *F, const sap_band_source *src, double *norms)
{
    return F->prec == SAP_FLOAT ? fill_from_band_t<float>(F, src, norms) : fill_from_band_t<double>(F, src, norms);
}

/* thr and bst sit after the 9 int64 arrays of the device block (c_prepare) */
static sap_status c_update_boost(sap_band_fact *F)
{
    cuda_band_priv *pv = (cuda_band_priv *)F->dev;
    sap_status st = SAP_OK;
    SAP_TRY(sap__cuda_h2d(F->ctx, pv->d.thr, F->thr, sizeof(double) * (size_t)F->L.P));
    SAP_TRY(sap__cuda_h2d(F->ctx, pv->d.bst, F->bst, sizeof(double) * (size_t)F->L.P));
cleanup:
    return st;
}

#define DISPATCH(fn, F, ...) ((F)->prec == SAP_FLOAT ? fn<float>(F, ##__VA_ARGS__) : fn<double>(F, ##__VA_ARGS__))

static sap_status c_factor(sap_band_fact *F, sap_int *boosted) { return DISPATCH(factor_t, F, boosted); }
static sap_status c_spikes(sap_band_fact *F) { return DISPATCH(spikes_t, F); }
static sap_status c_reduced_factor(sap_band_fact *F) { return DISPATCH(reduced_factor_t, F); }
static sap_status c_block_solve(sap_band_fact *F, sap_int k, const void *r, void *z)
{
    return DISPATCH(block_solve_t, F, k, r, z);
}
static sap_status c_reduced_solve(sap_band_fact *F, sap_int k, const void *g, void *xr)
{
    return DISPATCH(reduced_solve_t, F, k, g, xr);
}

/* resident thread blocks of block_solve_t's launch for partitions of nmax rows and
 * half-bandwidth K, times the SMs (the cost model's rounds of sweeps) */
template <typename T> static int solve_blocks_per_sm(long long nmax, long long K)
{
    const size_t smem = smem_elems<T>(nmax);
    const bool use_smem = smem <= 48 * 1024;
    int nb = 0;
    cudaError_t e;
    if (K <= 32) {
        e = use_smem ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_block_solve<T, true, true, false>, 32, smem)
                     : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_block_solve<T, true, false, false>, 32, 0);
    } else {
        int t = 64;
        while (t < K && t < 1024) t *= 2;
        e = use_smem ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_block_solve<T, false, true, false>, t, smem)
                     : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_block_solve<T, false, false, false>, t, 0);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the cost model falls back to one block an SM */
        nb = 1;
    }
    return nb > 0 ? nb : 1;
}

static sap_int c_solve_slots(sap_context *ctx, sap_int n, sap_int nmax, sap_int K, sap_precision prec)
{
    (void)n;
    const int per = prec == SAP_FLOAT ? solve_blocks_per_sm<float>(nmax, K) : solve_blocks_per_sm<double>(nmax, K);
    return (sap_int)per * (sap_int)sap__cuda_sm_count(ctx);
}
static sap_status c_purify(sap_band_fact *F, sap_int k, const void *r, void *f, const void *xr)
{
    return DISPATCH(purify_t, F, k, r, f, xr);
}

/* The automatic choice takes the blocked LU from this half-bandwidth on, and below it
 * where every partition fits k_blk_small (SMALL_NMAX rows: blocked_small_nmax).  Measured
 * on an H200 (bench/banded --parts factor, float, automatic P; bench/results/
 * banded_factor_h200.md): blocked / per-row 1.16x at K = 32, 1.25-1.3x at 48 to 128
 * (N = 100,000, P = 1562), 1.7x at K = 200 (N = 200,000, P = 2000), 4.7x at K = 500
 * (P = 800), 11.8x at K = 1500 (P = 66), 27-52x with few partitions (K = 600, P = 1;
 * K = 1500, P = 14); with k_blk_small's K x K windows (partitions of 64 rows,
 * bench/results/banded_factor_small_k_h200_*.md): 2.5x at K = 10, 2.9-3.8x at K = 20,
 * 4.7x at K = 30.  Before the windows, k_blk_small was 0.69x at K = 16. */
#define CUDA_BLOCKED_KMIN 32

sap_band_kernels make_table()
{
    sap_band_kernels t;
    memset(&t, 0, sizeof(t));
    t.name = "cuda";
    t.prepare = c_prepare;
    t.prepare_host_bytes = c_prepare_host_bytes;
    t.release = c_release;
    t.factor = c_factor;
    t.spikes = c_spikes;
    t.reduced_factor = c_reduced_factor;
    t.block_solve = c_block_solve;
    t.reduced_solve = c_reduced_solve;
    t.purify = c_purify;
    t.fill_from_band = c_fill_from_band;
    t.update_boost = c_update_boost;
    t.solve_slots = c_solve_slots;
    t.blocked_kmin = CUDA_BLOCKED_KMIN;
    t.blocked_small_nmax = SMALL_NMAX;
    t.blocked_bytes = c_blocked_bytes;
    t.spikes_bytes = c_spikes_bytes;
    t.coupling_seconds = c_coupling_seconds;
    return t;
}

const sap_band_kernels cuda_band_table = make_table();

} // namespace

extern "C" const sap_band_kernels *sap__band_kernels_cuda(void) { return &cuda_band_table; }

extern "C" int sap__cuda_sm_count(const sap_context *ctx)
{
    const sap_cuda_state *cs = sap__cuda_state(ctx);
    return cs && cs->sm_count > 0 ? cs->sm_count : 108;
}
