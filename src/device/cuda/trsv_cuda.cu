/* trsv_cuda.cu -- the cuda triangular solves (device/trsv_kernels.h).
 *
 * Analysis (on the device; only the upload of the host factor crosses the bus):
 *   1. depth pass: a thread per row in dependency order (upper: the reversal map) takes
 *      level(i) = 1 + max level(j) over its dependencies, spinning on the level of each
 *      (-1 = not yet known); blocks take their place in the order from an atomic ticket,
 *      so every row waited on belongs to a block already running (no deadlock).  The same
 *      pass validates (entry outside the triangle, zero or missing diagonal, NaN/Inf):
 *      on any error the host analysis (sap__trsv_host_build) is run to report it with
 *      the same message as the cpu backend.
 *   2. order: a stable radix sort of (level, row) (CUB), so rows ascend within a level as
 *      in the host analysis; the level pointers from the sorted keys.
 *   3. the reordered factor: per-position lengths, a scan (CUB), a gather into CSR over
 *      positions (SYNCFREE) or HEC (LEVEL: ELL part column-major of width w = the host
 *      rule sap__hec_width, from a row-length histogram; widths above 64 are capped at
 *      64, the rest goes to the CSR remainder) plus the inverse diagonal.
 * Solve:
 *   LEVEL     the seed's method: one kernel launch per level, a thread per row, the row
 *             summed in the stored order (ELL, then the remainder).
 *   SYNCFREE  one launch for the whole factor: G threads per row (group_for: from the
 *             longest row and the rows a level), rows in level order handed out by a ticket
 *             to a persistent, software-pipelined grid (k_syncfree) that keeps at most
 *             TRSV_INFLIGHT_DEFAULT rows in flight (more rows polling at once flood the L2
 *             and slow the critical path; on an H200, 16384 rows against 4096 / 8192 /
 *             32768: poisson3d 615 against 767 / 625 / 804 us, G3_circuit 3389 against
 *             3807 / 3482 / 4423; the random factor 2% slower than at 8192).  The
 *             solution vector itself is the ready flag: x is filled with an all-ones NaN
 *             pattern (the sentinel) before the launch, a row spins on the values x_j it
 *             needs (volatile loads, up to 8 per thread in flight) until none is the
 *             sentinel, and its own result is stored once (a computed all-ones NaN is
 *             stored as the canonical NaN), so one memory round trip per dependency level
 *             and no flag array, fence or atomic in the inner loop. */
#include "device/cuda/cuda_internal.h"

#include <cub/cub.cuh>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

namespace {

#define TRSV_BS 128

struct trsv_dev {
    int method, G;
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
    unsigned int *ticket;
    unsigned int base; /* the ticket's value at the next launch (it only grows, mod 2^32) */
    int nap;           /* back-off of a failed poll, ns */
    int inflight;      /* rows in flight of the synchronization-free solve */
    int pf;            /* entries a thread loads ahead (k_syncfree's PF: 4, or 8 for G = 1) */
};

inline cudaStream_t stream_of(sap_context *ctx) { return (cudaStream_t)sap__cuda_stream(ctx); }

template <typename T> __device__ __forceinline__ T vload(const T *p) { return *(const volatile T *)p; }
__device__ __forceinline__ bool is_sentinel(double v) { return __double_as_longlong(v) == -1LL; }
__device__ __forceinline__ bool is_sentinel(float v) { return __float_as_int(v) == -1; }
__device__ __forceinline__ double unsentinel(double v)
{
    return is_sentinel(v) ? __longlong_as_double(0x7ff8000000000000LL) : v;
}
__device__ __forceinline__ float unsentinel(float v) { return is_sentinel(v) ? __int_as_float(0x7fc00000) : v; }

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

/* the synchronization-free solve; x is all sentinel on entry (see the top).  Persistent and
 * software-pipelined: each warp takes the next 32/G positions (a chunk) from the ticket
 * (fetched - base) and holds three chunks at once: while it polls the x values chunk A
 * needs, the first PF G entries (column, value) and b of chunk B, the position, row, row
 * pointers and diagonal of chunk C and the next ticket are in flight.  So a chunk's own
 * loads cost no round trip by the time it is A, and only the polls of its dependencies
 * remain on the critical path (without the pipeline: ticket -> row pointers -> columns ->
 * polls, four dependent round trips a chunk; measured on an H200, L + U of the ILU(0)
 * factors: poisson3d 100^3 901 -> 630 us, G3_circuit 4942 -> 3483 us).  A warp's chunks
 * increase, so the smallest unfinished chunk is always some warp's A, whose dependencies
 * are done: no deadlock; the rows in flight, which poll memory, are bounded by the grid
 * (sized from the in-flight cap).  A failed poll round sleeps 'nap' ns (0: none).  A warp
 * fetches a ticket while the one it holds is valid, so exactly one past the end: a launch
 * consumes nchunks + warps tickets.  (Several consecutive chunks a ticket, to spare the
 * counter's atomics, were slower: 2 a ticket, poisson3d 625 -> 951 us, G3_circuit 3482 ->
 * 6848 us: the chunks of one level are then taken in turn by one warp.) */
template <typename T, int G, int PF>
__global__ void __launch_bounds__(TRSV_BS)
    k_syncfree(int32_t n, int32_t nrhs, const int32_t *__restrict__ order, const int32_t *__restrict__ rowptr,
               const int32_t *__restrict__ colind, const T *__restrict__ val, const T *__restrict__ dinv,
               const T *__restrict__ b, T *x, unsigned int *ticket, unsigned int base, unsigned int nchunks, int nap)
{
    const int wl = (int)(threadIdx.x & 31u), g = wl / G, lane = wl % G;
    const unsigned int mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << (unsigned)(g * G));
    (void)mask;
    const unsigned int none = 0xffffffffu;
    /* stage A (polled now), B (entries and b in flight), C (row data in flight) */
    unsigned int cA = none, cB = none, cC, tD = 0;
    bool fetched = true; /* tD holds a ticket not yet taken */
    int32_t iA = 0, p0A = 0, p1A = 0, iB = 0, p0B = 0, p1B = 0, iC = 0, p0C = 0, p1C = 0;
    T dA = T(0), dB = T(0), dC = T(0), bA = T(0), bB = T(0);
    int32_t ccA[PF], ccB[PF];
    T vA[PF], vB[PF];
#pragma unroll
    for (int u = 0; u < PF; u++) {
        ccA[u] = ccB[u] = -1;
        vA[u] = vB[u] = T(0);
    }
    if (wl == 0) tD = atomicAdd(ticket, 1u);
    for (int warm = 2;; warm--) {
        if (warm <= 0 && cA >= nchunks) break;
        /* C: the ticket fetched one iteration ago, then its row data */
        cC = fetched ? __shfl_sync(0xffffffffu, tD, 0) - base : none;
        fetched = cC < nchunks;
        if (fetched && wl == 0) tD = atomicAdd(ticket, 1u);
        const long long posC = cC < nchunks ? (long long)cC * (32 / G) + g : (long long)n;
        if (posC < n) {
            iC = order[posC];
            p0C = rowptr[posC];
            p1C = rowptr[posC + 1];
            dC = dinv[posC];
        }
        /* B: its first PF G entries and b (its row data arrived during the last iteration) */
        const long long posB = cB < nchunks ? (long long)cB * (32 / G) + g : (long long)n;
        if (posB < n) {
#pragma unroll
            for (int u = 0; u < PF; u++) {
                const int32_t q = p0B + lane + u * G;
                ccB[u] = q < p1B ? colind[q] : -1;
                vB[u] = q < p1B ? val[q] : T(0);
            }
            bB = b[iB];
        }
        /* A: poll, sum, store */
        const long long posA = cA < nchunks ? (long long)cA * (32 / G) + g : (long long)n;
        if (posA < n) {
            for (int32_t r = 0; r < nrhs; r++) {
                const size_t off = (size_t)r * (size_t)n;
                const T *xr = x + off;
                T s = T(0), xv[PF];
#pragma unroll
                for (int u = 0; u < PF; u++) xv[u] = ccA[u] >= 0 ? vload(xr + ccA[u]) : T(0);
                for (;;) {
                    bool pending = false;
#pragma unroll
                    for (int u = 0; u < PF; u++)
                        if (ccA[u] >= 0 && is_sentinel(xv[u])) pending = true;
                    if (!pending) break;
                    if (nap > 0) __nanosleep((unsigned)nap);
#pragma unroll
                    for (int u = 0; u < PF; u++)
                        if (ccA[u] >= 0 && is_sentinel(xv[u])) xv[u] = vload(xr + ccA[u]);
                }
#pragma unroll
                for (int u = 0; u < PF; u++) s += vA[u] * xv[u];
                /* rows longer than PF G entries: the rest, 4 G entries a round */
                for (int32_t p = p0A + PF * G + lane; p < p1A; p += 4 * G) {
                    int32_t cc[4];
                    T v[4];
#pragma unroll
                    for (int u = 0; u < 4; u++) {
                        const int32_t q = p + u * G;
                        cc[u] = q < p1A ? colind[q] : -1;
                        v[u] = q < p1A ? val[q] : T(0);
                        xv[u] = cc[u] >= 0 ? vload(xr + cc[u]) : T(0);
                    }
                    for (;;) {
                        bool pending = false;
#pragma unroll
                        for (int u = 0; u < 4; u++)
                            if (cc[u] >= 0 && is_sentinel(xv[u])) pending = true;
                        if (!pending) break;
                        if (nap > 0) __nanosleep((unsigned)nap);
#pragma unroll
                        for (int u = 0; u < 4; u++)
                            if (cc[u] >= 0 && is_sentinel(xv[u])) xv[u] = vload(xr + cc[u]);
                    }
#pragma unroll
                    for (int u = 0; u < 4; u++) s += v[u] * xv[u];
                }
                if (G > 1)
                    for (int o = G / 2; o > 0; o >>= 1) s += __shfl_down_sync(mask, s, o, G);
                if (lane == 0) x[off + iA] = unsentinel(((r == 0 ? bA : b[off + iA]) - s) * dA);
            }
        }
        __syncwarp();
        /* rotate: B -> A, C -> B */
        cA = cB;
        iA = iB;
        p0A = p0B;
        p1A = p1B;
        dA = dB;
        bA = bB;
#pragma unroll
        for (int u = 0; u < PF; u++) {
            ccA[u] = ccB[u];
            vA[u] = vB[u];
        }
        cB = cC;
        iB = iC;
        p0B = p0C;
        p1B = p1C;
        dB = dC;
    }
}

/* ---- device analysis ---------------------------------------------------------------------- */

enum { ERR_OUTSIDE = 1, ERR_SINGULAR = 2, ERR_NONFINITE = 4 };

/* levels (-1 on entry), off-diagonal lengths and diagonal values per row (len, diag: NULL
 * for none); flags[0] |= errors, flags[1] = max level.  A thread per row, rows in
 * dependency order handed out 32 at a time from the ticket (starting at 0; not pipelined:
 * a row's level needs its columns).  full: the factor is the strict lower triangle of a
 * full matrix (ILU(0)'s dependencies): entries above the diagonal are skipped, not errors. */
__global__ void __launch_bounds__(TRSV_BS)
    k_depth(int32_t n, int upper, int unit, int full, const int64_t *__restrict__ rp, const int64_t *__restrict__ ci,
            const double *__restrict__ val, int32_t *lev, int32_t *__restrict__ len, double *__restrict__ diag,
            int *flags, unsigned int *ticket, int nap)
{
    const int wl = (int)(threadIdx.x & 31u);
    int lmax = 0, eor = 0;
    for (;;) {
        unsigned int c = 0;
        if (wl == 0) c = atomicAdd(ticket, 1u);
        c = __shfl_sync(0xffffffffu, c, 0);
        if ((long long)c * 32 >= n) break;
        const long long s = (long long)c * 32 + wl;
        if (s < n) {
            const int32_t i = (int32_t)(upper ? n - 1 - s : s);
            int l = 0, cnt = 0, err = 0;
            double dg = 0.0;
            const int64_t q0 = rp[i], q1 = rp[i + 1];
            for (int64_t p = q0; p < q1; p += 4) {
                int32_t cc[4];
                int lv[4];
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    cc[u] = -1;
                    lv[u] = 0;
                    if (p + u >= q1) continue;
                    const int64_t j = ci[p + u];
                    const double v = val[p + u];
                    if (!isfinite(v)) err |= ERR_NONFINITE;
                    if (j == i) {
                        dg = v;
                        continue;
                    }
                    if (full && j > i && j < n) continue;
                    if (j < 0 || j >= n || (upper ? j < i : j > i)) {
                        err |= ERR_OUTSIDE; /* never waited on */
                        continue;
                    }
                    cc[u] = (int32_t)j;
                    cnt++;
                    lv[u] = vload(lev + j);
                }
                for (;;) {
                    bool pending = false;
#pragma unroll
                    for (int u = 0; u < 4; u++)
                        if (cc[u] >= 0 && lv[u] < 0) pending = true;
                    if (!pending) break;
                    if (nap > 0) __nanosleep((unsigned)nap);
#pragma unroll
                    for (int u = 0; u < 4; u++)
                        if (cc[u] >= 0 && lv[u] < 0) lv[u] = vload(lev + cc[u]);
                }
#pragma unroll
                for (int u = 0; u < 4; u++)
                    if (cc[u] >= 0 && lv[u] + 1 > l) l = lv[u] + 1;
            }
            if (!unit && dg == 0.0) err |= ERR_SINGULAR;
            if (len) len[i] = cnt;
            if (diag) diag[i] = dg;
            *(volatile int32_t *)(lev + i) = l;
            lmax = l > lmax ? l : lmax;
            eor |= err;
        }
        __syncwarp();
    }
    lmax = __reduce_max_sync(0xffffffffu, lmax);
    eor = (int)__reduce_or_sync(0xffffffffu, (unsigned)eor);
    if (wl == 0) {
        atomicMax(flags + 1, lmax);
        if (eor) atomicOr(flags, eor);
    }
}

/* tuning of the synchronization-free kernels: rows in flight (threads of the persistent
 * grid) and the back-off of a failed poll; SAP_TRSV_INFLIGHT / SAP_TRSV_NAP override
 * (for measurements) */
#define TRSV_INFLIGHT_DEFAULT 16384
/* the depth pass runs in row order, where a level's rows lie far apart: the window of rows in
 * flight must span levels, so it grows with the factor (n / 8 rows, 32768 to 131072; on an
 * H200: poisson3d 100^3 1.61 -> 0.59 ms, convdiff3d 108^3 2.10 -> 0.76 ms, G3_circuit 2.8 ->
 * 1.5 ms against a fixed 32768; the random factor of 200,000 rows in 22,500 levels, all
 * latency, loses 10-20% at 65536 and more) */
#define TRSV_DEPTH_INFLIGHT_MIN 32768
#define TRSV_DEPTH_INFLIGHT_MAX 131072
#define TRSV_NAP_DEFAULT 0
int env_int(const char *name, int dflt, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    const long x = strtol(v, NULL, 10);
    return x < lo ? lo : x > hi ? hi : (int)x;
}

/* poll back-off of the depth pass, ns ($SAP_TRSV_DEPTH_NAP, else $SAP_TRSV_NAP) */
int depth_nap(void)
{
    return env_int("SAP_TRSV_DEPTH_NAP", env_int("SAP_TRSV_NAP", TRSV_NAP_DEFAULT, 0, 10000), 0, 10000);
}

/* rows in flight of the depth pass for n rows (see TRSV_DEPTH_INFLIGHT_MIN;
 * $SAP_TRSV_DEPTH_INFLIGHT overrides) */
long long depth_window(long long n)
{
    const long long w = n / 8 < TRSV_DEPTH_INFLIGHT_MIN   ? TRSV_DEPTH_INFLIGHT_MIN
                        : n / 8 > TRSV_DEPTH_INFLIGHT_MAX ? TRSV_DEPTH_INFLIGHT_MAX
                                                          : n / 8;
    return env_int("SAP_TRSV_DEPTH_INFLIGHT", (int)w, 32, 1 << 24);
}

/* blocks of TRSV_BS threads for 'rows' rows of G threads each, at most the in-flight cap */
unsigned int persistent_blocks(long long rows, int G, long long inflight)
{
    long long thr = rows * G;
    if (thr > inflight * G) thr = inflight * G;
    long long nb = (thr + TRSV_BS - 1) / TRSV_BS;
    return (unsigned int)(nb > 0 ? nb : 1);
}

__global__ void k_iota(int32_t n, int32_t *a)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) a[k] = (int32_t)k;
}

/* level pointers from the sorted levels; per-position lengths (off-diagonal, and beyond
 * the ELL width w) */
__global__ void k_positions(int32_t n, int32_t nlevels, int32_t w, const int32_t *__restrict__ lev_sorted,
                            const int32_t *__restrict__ order, const int32_t *__restrict__ len,
                            int32_t *__restrict__ lptr, int32_t *__restrict__ plen, int32_t *__restrict__ rlen)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const int32_t cur = lev_sorted[k], prev = k ? lev_sorted[k - 1] : -1;
    for (int32_t l = prev + 1; l <= cur; l++) lptr[l] = (int32_t)k;
    if (k == n - 1) lptr[nlevels] = n;
    const int32_t m = len[order[k]];
    plen[k] = m;
    if (rlen) rlen[k] = m > w ? m - w : 0;
}

#define HEC_HIST 64
/* histogram of the off-diagonal row lengths, lengths >= HEC_HIST in the last bucket */
__global__ void k_len_hist(int32_t n, const int32_t *__restrict__ len, int *hist)
{
    __shared__ int h[HEC_HIST + 1];
    for (int t = threadIdx.x; t <= HEC_HIST; t += blockDim.x) h[t] = 0;
    __syncthreads();
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (long long)gridDim.x * blockDim.x)
        atomicAdd(&h[len[k] < HEC_HIST ? len[k] : HEC_HIST], 1);
    __syncthreads();
    for (int t = threadIdx.x; t <= HEC_HIST; t += blockDim.x)
        if (h[t]) atomicAdd(&hist[t], h[t]);
}

/* the reordered factor: CSR over positions (ell_col == NULL) or HEC of width w, and the
 * inverse diagonal; entries keep the row's stored order */
template <typename T>
__global__ void k_gather(int32_t n, int unit, int32_t w, const int32_t *__restrict__ order,
                         const int64_t *__restrict__ rp, const int64_t *__restrict__ ci, const double *__restrict__ val,
                         const double *__restrict__ diag, const int32_t *__restrict__ optr, int32_t *__restrict__ ocol,
                         T *__restrict__ oval, int32_t *__restrict__ ell_col, T *__restrict__ ell_val,
                         T *__restrict__ dinv)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const int32_t i = order[k];
    int32_t q = optr[k], e = 0;
    for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
        const int32_t j = (int32_t)ci[p];
        if (j == i) continue;
        if (ell_col && e < w) {
            ell_col[k + (size_t)e * n] = j;
            ell_val[k + (size_t)e * n] = (T)val[p];
            e++;
        } else {
            ocol[q] = j;
            oval[q++] = (T)val[p];
        }
    }
    if (ell_col)
        for (; e < w; e++) {
            ell_col[k + (size_t)e * n] = (int32_t)k; /* padding: value 0 */
            ell_val[k + (size_t)e * n] = T(0);
        }
    dinv[k] = unit ? T(1) : (T)(1.0 / diag[i]);
}

inline unsigned int blocks_for(long long items, int per_block)
{
    const long long g = (items + per_block - 1) / per_block;
    return (unsigned int)(g > 0 ? g : 1);
}

/* order = the rows 0 .. n - 1 stably sorted by their level lev (0 .. nlevels - 1), so rows
 * ascend within a level; lev_sorted receives the sorted levels, idx (n) is scratch.  The
 * sort's temporary storage is allocated into *tmp, at least min_tmp bytes (for the caller's
 * later CUB calls; the caller frees it). */
sap_status level_sort(sap_context *ctx, cudaStream_t cs, int32_t n, int32_t nlevels, const int32_t *lev,
                      int32_t *lev_sorted, int32_t *idx, int32_t *order, size_t min_tmp, void **tmp)
{
    sap_status st = SAP_OK;
    size_t bytes = 0;
    int end_bit = 1;
    while (end_bit < 31 && (1 << end_bit) <= nlevels) end_bit++;
    k_iota<<<blocks_for(n, 256), 256, 0, cs>>>(n, idx);
    SAP_CUDA_TRY_LAUNCH(ctx, "trsv iota");
    SAP_CUDA_TRY(ctx, cub::DeviceRadixSort::SortPairs(NULL, bytes, lev, lev_sorted, idx, order, n, 0, end_bit, cs));
    SAP_TRY(sap__cuda_malloc(ctx, bytes > min_tmp ? bytes : min_tmp, tmp));
    SAP_CUDA_TRY(ctx, cub::DeviceRadixSort::SortPairs(*tmp, bytes, lev, lev_sorted, idx, order, n, 0, end_bit, cs));
cleanup:
    return st;
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
        void *ptrs[] = {t->order,  t->ell_col, t->ell_val, t->rem_ptr, t->rem_col,
                        t->rem_val, t->rowptr, t->colind,  t->val,     t->dinv,    t->ticket};
        for (size_t k = 0; k < sizeof(ptrs) / sizeof(ptrs[0]); k++) sap__cuda_free(ctx, ptrs[k]);
        sap__free(ctx, t);
    }
    sap__free(ctx, S);
}

extern const sap_trsv_kernels cuda_trsv_table;

/* threads per row of the synchronization-free solve from the longest off-diagonal row
 * (HEC_HIST or more: taken as HEC_HIST) and the levels.  Wide levels (64 rows a level or
 * more on average): one thread a row while rows have at most 64 entries (16 rounds of 4
 * loads), else enough that the longest takes at most 16 rounds; the rows of a level give
 * the parallelism.  Thin levels (chains): 4 G >= the longest row, one round a row, as
 * each row's latency is on the critical path.  Measured on an H200 (k_syncfree, double,
 * L + U of the ILU(0) factors in us, G = 1 against 4 G >= the longest row): cage11 (737
 * rows a level, rows up to 24 entries) 189 against 215 (G = 8), Andrews (1277, 33) 136
 * against 162 (G = 16); G3_circuit (611, 3) 3486 with G = 1 against 12430 with G = 2. */
int group_for(int maxlen, sap_int n, sap_int nlevels)
{
    const int per_round = n >= 64 * nlevels ? 64 : 4;
    int G = 1;
    while (G < 32 && maxlen > per_round * G) G *= 2;
    return G;
}

/* The analysis of a factor already in device memory (d_rp: n + 1, d_ci, d_val: nnz; 64-bit
 * indices, double values; borrowed).  T: the same factor on the host, or NULL (then the
 * device factor is copied back to name an error through the host analysis).  t0: the
 * start of the whole analysis (sap__wtime), t_upload its upload part. */
sap_status analyze_dev(sap_context *ctx, const sap_csr *T, sap_int n, sap_int nnz, const int64_t *d_rp,
                       const int64_t *d_ci, const double *d_val, int upper, int unit, sap_precision prec,
                       sap_trsv_method method, double t0, double t_upload, sap_trsv **out)
{
    sap_status st = SAP_OK;
    cudaStream_t cs = stream_of(ctx);
    sap_trsv *S = NULL;
    trsv_dev *t = NULL;
    sap_csr *Th = NULL;
    double *d_diag = NULL;
    int32_t *d_lev = NULL, *d_lev2 = NULL, *d_idx = NULL, *d_len = NULL, *d_lptr = NULL, *d_plen = NULL,
            *d_rlen = NULL, *d_optr = NULL;
    int *d_flags = NULL, *d_hist = NULL;
    unsigned int *d_tick = NULL;
    void *d_tmp = NULL;
    int h_flags[2] = {0, 0}, h_hist[HEC_HIST + 1];
    const size_t es = prec == SAP_FLOAT ? sizeof(float) : sizeof(double);
    /* $SAP_TRSV_TRACE=1: the phases' milliseconds (each waited for), for measurements */
    const int trace = env_int("SAP_TRSV_TRACE", 0, 0, 1);
    const long long depth_inflight = depth_window(n);
    double tp = sap__wtime(), ph[8] = {0};
#define TRSV_PHASE(i)                                                                                                 \
    do {                                                                                                              \
        if (trace) {                                                                                                  \
            cudaStreamSynchronize(cs);                                                                                \
            const double tn_ = sap__wtime();                                                                          \
            ph[i] += tn_ - tp;                                                                                        \
            tp = tn_;                                                                                                 \
        }                                                                                                             \
    } while (0)
    *out = NULL;
    if (n >= INT32_MAX || nnz >= INT32_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                         "trsv: %lld rows / %lld entries exceed the 32-bit indices of the cuda kernels", (long long)n,
                         (long long)nnz);
    const int32_t n32 = (int32_t)n;
    SAP_CUDA_HOST_ALLOC(ctx, S, 1);
    memset(S, 0, sizeof(*S));
    S->ctx = ctx;
    S->kt = &cuda_trsv_table;
    SAP_CUDA_HOST_ALLOC(ctx, t, 1);
    memset(t, 0, sizeof(*t));
    S->impl = t;
    S->n = n;
    S->upper = upper;
    S->unit = unit;
    S->prec = prec;
    t->n = n32;
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(unsigned int), (void **)&t->ticket));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(t->ticket, 0, sizeof(unsigned int), cs));
    if (n == 0) {
        S->method = method == SAP_TRSV_AUTO ? SAP_TRSV_LEVEL : method;
        S->reason = method == SAP_TRSV_AUTO ? "empty factor" : "requested";
        t->method = (int)S->method;
        SAP_CUDA_TRY(ctx, cudaStreamSynchronize(cs));
        S->t_analysis = sap__wtime() - t0;
        *out = S;
        return SAP_OK;
    }
    S->t_upload = t_upload;
    /* 1. levels, lengths, diagonal, validation */
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_lev));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_lev2));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_idx));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_len));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)n, (void **)&d_diag));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int) * 2, (void **)&d_flags));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(unsigned int), (void **)&d_tick));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&t->order));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_lev, 0xff, sizeof(int32_t) * (size_t)n, cs));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_flags, 0, sizeof(int) * 2, cs));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_tick, 0, sizeof(unsigned int), cs));
    TRSV_PHASE(0);
    k_depth<<<persistent_blocks(n, 1, depth_inflight), TRSV_BS, 0,
              cs>>>(n32, upper, unit, 0, d_rp, d_ci, d_val, d_lev, d_len, d_diag, d_flags, d_tick, depth_nap());
    SAP_CUDA_TRY_LAUNCH(ctx, "trsv depth pass");
    SAP_TRY(sap__cuda_d2h(ctx, h_flags, d_flags, sizeof(h_flags)));
    TRSV_PHASE(1);
    if (h_flags[0]) { /* the host analysis names the first offending row like the cpu backend */
        sap_trsv_host H;
        if (!T) { /* a factor made on the device: copy it back for the message */
            SAP_TRY(sap_csr_create(ctx, n, n, nnz, &Th));
            SAP_TRY(sap__cuda_d2h(ctx, Th->rowptr, d_rp, sizeof(int64_t) * (size_t)(n + 1)));
            SAP_TRY(sap__cuda_d2h(ctx, Th->colind, d_ci, sizeof(int64_t) * (size_t)nnz));
            SAP_TRY(sap__cuda_d2h(ctx, Th->val, d_val, sizeof(double) * (size_t)nnz));
            T = Th;
        }
        st = sap__trsv_host_build(ctx, T, upper, unit, &H);
        if (st >= 0) {
            sap__trsv_host_free(ctx, &H);
            SAP_FAIL(ctx, SAP_ERR_DEVICE, "trsv: the device analysis flagged %d but the host analysis did not",
                     h_flags[0]);
        }
        goto cleanup;
    }
    {
        const int32_t nlevels = h_flags[1] + 1;
        S->nlevels = nlevels;
        S->method = method == SAP_TRSV_AUTO ? sap__trsv_pick(n, nlevels, &S->reason) : method;
        if (method != SAP_TRSV_AUTO) S->reason = "requested";
        t->method = (int)S->method;
        const int level = S->method == SAP_TRSV_LEVEL;
        /* 2. order: stable sort of (level, row); its temporary storage serves the scans below */
        size_t tmp_scan = 0;
        SAP_CUDA_TRY(ctx, cub::DeviceScan::InclusiveSum(NULL, tmp_scan, d_len, d_len, n32, cs));
        SAP_TRY(level_sort(ctx, cs, n32, nlevels, d_lev, d_lev2, d_idx, t->order, tmp_scan, &d_tmp));
        TRSV_PHASE(2);
        /* 3. level pointers, lengths per position */
        int32_t w = 0;
        {
            SAP_TRY(sap__cuda_malloc(ctx, sizeof(int) * (HEC_HIST + 1), (void **)&d_hist));
            SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_hist, 0, sizeof(int) * (HEC_HIST + 1), cs));
            k_len_hist<<<blocks_for(n, 1024) < 264 ? blocks_for(n, 1024) : 264, 256, 0, cs>>>(n32, d_len, d_hist);
            SAP_CUDA_TRY_LAUNCH(ctx, "trsv length histogram");
            SAP_TRY(sap__cuda_d2h(ctx, h_hist, d_hist, sizeof(h_hist)));
            /* sap__hec_width: the smallest w with at most half the rows longer than w */
            long long longer = n;
            for (w = 0; w < HEC_HIST; w++) {
                longer -= h_hist[w];
                if (2 * longer <= n) break;
            }
            if (!level) w = 0;
        }
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)(nlevels + 1), (void **)&d_lptr));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_plen));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)(n + 1), (void **)&d_optr));
        if (level) SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_rlen));
        k_positions<<<blocks_for(n, 256), 256, 0, cs>>>(n32, nlevels, w, d_lev2, t->order, d_len, d_lptr, d_plen,
                                                        d_rlen);
        SAP_CUDA_TRY_LAUNCH(ctx, "trsv positions");
        SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_optr, 0, sizeof(int32_t), cs));
        SAP_CUDA_TRY(ctx, cub::DeviceScan::InclusiveSum(d_tmp, tmp_scan, d_plen, d_optr + 1, n32, cs));
        SAP_CUDA_HOST_ALLOC(ctx, t->level_ptr_h, nlevels + 1);
        SAP_TRY(sap__cuda_d2h(ctx, t->level_ptr_h, d_lptr, sizeof(int32_t) * (size_t)(nlevels + 1)));
        int32_t nz = 0;
        SAP_TRY(sap__cuda_d2h(ctx, &nz, d_optr + n, sizeof(int32_t)));
        S->nnz_offdiag = nz;
        for (int32_t l = 0; l < nlevels; l++) {
            const sap_int r = t->level_ptr_h[l + 1] - t->level_ptr_h[l];
            if (r > S->max_level_rows) S->max_level_rows = r;
        }
        TRSV_PHASE(3);
        SAP_TRY(sap__cuda_malloc(ctx, es * (size_t)n, &t->dinv));
        if (level) {
            /* HEC: the remainder's pointers are the scan of the lengths beyond w */
            t->width = w;
            SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)(n + 1), (void **)&t->rem_ptr));
            SAP_CUDA_TRY(ctx, cudaMemsetAsync(t->rem_ptr, 0, sizeof(int32_t), cs));
            SAP_CUDA_TRY(ctx, cub::DeviceScan::InclusiveSum(d_tmp, tmp_scan, d_rlen, t->rem_ptr + 1, n32, cs));
            int32_t nr = 0;
            SAP_TRY(sap__cuda_d2h(ctx, &nr, t->rem_ptr + n, sizeof(int32_t)));
            const size_t ne = (size_t)w * (size_t)n;
            SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (ne ? ne : 1), (void **)&t->ell_col));
            SAP_TRY(sap__cuda_malloc(ctx, es * (ne ? ne : 1), &t->ell_val));
            SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)(nr ? nr : 1), (void **)&t->rem_col));
            SAP_TRY(sap__cuda_malloc(ctx, es * (size_t)(nr ? nr : 1), &t->rem_val));
            if (prec == SAP_FLOAT)
                k_gather<float><<<blocks_for(n, 128), 128, 0, cs>>>(
                    n32, unit, w, t->order, d_rp, d_ci, d_val, d_diag, t->rem_ptr, t->rem_col, (float *)t->rem_val,
                    t->ell_col, (float *)t->ell_val, (float *)t->dinv);
            else
                k_gather<double><<<blocks_for(n, 128), 128, 0, cs>>>(
                    n32, unit, w, t->order, d_rp, d_ci, d_val, d_diag, t->rem_ptr, t->rem_col, (double *)t->rem_val,
                    t->ell_col, (double *)t->ell_val, (double *)t->dinv);
        } else {
            int maxlen = 0;
            for (int b = 0; b <= HEC_HIST; b++)
                if (h_hist[b]) maxlen = b;
            t->G = env_int("SAP_TRSV_G", group_for(maxlen, n, nlevels), 1, 32);
            t->G = t->G >= 32 ? 32 : t->G >= 16 ? 16 : t->G >= 8 ? 8 : t->G >= 4 ? 4 : t->G >= 2 ? 2 : 1;
            /* one thread a row with rows longer than 4: 8 entries ahead (one round of loads
             * for rows of up to 8; $SAP_TRSV_PF=4 or 8 overrides, for measurements) */
            t->pf = t->G == 1 && env_int("SAP_TRSV_PF", maxlen > 4 ? 8 : 4, 4, 8) > 4 ? 8 : 4;
            t->inflight = env_int("SAP_TRSV_INFLIGHT", TRSV_INFLIGHT_DEFAULT, 32, 1 << 24);
            t->nap = env_int("SAP_TRSV_NAP", TRSV_NAP_DEFAULT, 0, 10000);
            t->rowptr = d_optr;
            d_optr = NULL;
            SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)(nz ? nz : 1), (void **)&t->colind));
            SAP_TRY(sap__cuda_malloc(ctx, es * (size_t)(nz ? nz : 1), &t->val));
            if (prec == SAP_FLOAT)
                k_gather<float><<<blocks_for(n, 128), 128, 0, cs>>>(n32, unit, 0, t->order, d_rp, d_ci, d_val, d_diag,
                                                                    t->rowptr, t->colind, (float *)t->val, NULL, NULL,
                                                                    (float *)t->dinv);
            else
                k_gather<double><<<blocks_for(n, 128), 128, 0, cs>>>(n32, unit, 0, t->order, d_rp, d_ci, d_val,
                                                                     d_diag, t->rowptr, t->colind, (double *)t->val,
                                                                     NULL, NULL, (double *)t->dinv);
        }
        SAP_CUDA_TRY_LAUNCH(ctx, "trsv gather");
    }
    TRSV_PHASE(4);
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize(cs));
    S->t_analysis = sap__wtime() - t0;
    if (trace)
        sap__log(ctx, SAP_PRINT_WARNINGS, "trsv analysis (%s, n %lld, %d levels) ms: setup %.3f, depth pass %.3f, "
                 "sort %.3f, positions %.3f, gather %.3f; total without the upload %.3f", upper ? "upper" : "lower",
                 (long long)n, (int)S->nlevels, 1e3 * ph[0], 1e3 * ph[1], 1e3 * ph[2], 1e3 * ph[3], 1e3 * ph[4],
                 1e3 * (S->t_analysis - t_upload));
#undef TRSV_PHASE
    *out = S;
cleanup:
    {
        void *tmps[] = {d_diag, d_lev,  d_lev2, d_idx,   d_len,  d_lptr, d_plen,
                        d_rlen, d_optr, d_flags, d_hist, d_tick, d_tmp};
        for (size_t k = 0; k < sizeof(tmps) / sizeof(tmps[0]); k++) sap__cuda_free(ctx, tmps[k]);
    }
    sap_csr_destroy(Th);
    if (st < 0) cuda_trsv_destroy(S);
    return st;
}

sap_status cuda_trsv_analyze(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_precision prec,
                             sap_trsv_method method, sap_trsv **out)
{
    sap_status st = SAP_OK;
    const double t0 = sap__wtime();
    int64_t *d_rp = NULL, *d_ci = NULL;
    double *d_val = NULL;
    *out = NULL;
    if (!T || T->nrows != T->ncols) return SAP_ERROR(ctx, SAP_ERR_INVALID, "trsv: the factor must be square");
    const sap_int n = T->nrows, nnz = T->nnz;
    if (n >= INT32_MAX || nnz >= INT32_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                         "trsv: %lld rows / %lld entries exceed the 32-bit indices of the cuda kernels", (long long)n,
                         (long long)nnz);
    if (n > 0) { /* the host factor as it is (64-bit indices, double values) */
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int64_t) * (size_t)(n + 1), (void **)&d_rp));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int64_t) * (size_t)(nnz > 0 ? nnz : 1), (void **)&d_ci));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(nnz > 0 ? nnz : 1), (void **)&d_val));
        SAP_TRY(sap__cuda_h2d(ctx, d_rp, T->rowptr, sizeof(int64_t) * (size_t)(n + 1)));
        SAP_TRY(sap__cuda_h2d(ctx, d_ci, T->colind, sizeof(int64_t) * (size_t)nnz));
        SAP_TRY(sap__cuda_h2d(ctx, d_val, T->val, sizeof(double) * (size_t)nnz));
    }
    st = analyze_dev(ctx, T, n, nnz, d_rp, d_ci, d_val, upper, unit, prec, method, t0, sap__wtime() - t0, out);
cleanup:
    sap__cuda_free(ctx, d_rp);
    sap__cuda_free(ctx, d_ci);
    sap__cuda_free(ctx, d_val);
    return st;
}

template <typename T, int G, int PF>
void launch_sf(trsv_dev *t, int32_t nrhs, const T *b, T *x, cudaStream_t s)
{
    const unsigned int nchunks = (unsigned int)(((long long)t->n * G + 31) / 32);
    const unsigned int nb = persistent_blocks(t->n, G, t->inflight);
    k_syncfree<T, G, PF><<<nb, TRSV_BS, 0, s>>>(t->n, nrhs, t->order, t->rowptr, t->colind, (const T *)t->val,
                                           (const T *)t->dinv, b, x, t->ticket, t->base, nchunks, t->nap);
    t->base += nchunks + nb * (TRSV_BS / 32);
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
        /* x = the sentinel (all bits set) */
        SAP_CUDA_CHECK(ctx, cudaMemsetAsync(x, 0xff, (size_t)t->n * (size_t)nrhs * sizeof(T), s));
        switch (t->G) {
        case 1:
            if (t->pf == 8) launch_sf<T, 1, 8>(t, nrhs, b, x, s);
            else launch_sf<T, 1, 4>(t, nrhs, b, x, s);
            break;
        case 2: launch_sf<T, 2, 4>(t, nrhs, b, x, s); break;
        case 4: launch_sf<T, 4, 4>(t, nrhs, b, x, s); break;
        case 8: launch_sf<T, 8, 4>(t, nrhs, b, x, s); break;
        case 16: launch_sf<T, 16, 4>(t, nrhs, b, x, s); break;
        default: launch_sf<T, 32, 4>(t, nrhs, b, x, s); break;
        }
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

/* ---- ILU(0) on the device ----------------------------------------------------------------------
 * symbolic: a thread per row finds the diagonal position and the lengths of the L and U
 * parts and flags what the device leaves to the host (a missing diagonal, unsorted or
 * out-of-range columns, NaN/Inf values).
 * order: the levels of the strict lower triangle (the depth pass of the solve's analysis,
 * k_depth with full = 1: row i waits on exactly the rows k < i of its L part) and a stable
 * sort of (level, row).  In row order the window of rows in flight holds a chain along
 * the rows (3D grid: row i waits on row i - 1), so the factorization crept along the
 * dependency chains a window at a time; in level order the window holds whole levels.
 * numeric: the row-wise (IKJ) factorization of sap__ilu_numeric in the synchronization-free
 * style of the solve: a warp per row, rows handed out in level order by a ticket (every
 * row waited on belongs to a warp already running: no deadlock), done[k] = 1 once row k
 * is final (after a fence); for each k of row i's L part in order: wait for row k, l_ik =
 * a_ik / u_kk, then the lanes take the entries u_kj of row k and subtract l_ik u_kj from
 * a_ij where j is in row i (binary search in the sorted row).  The operations per entry
 * are the host's, in the same order, without contraction (__dmul_rn, __dsub_rn): the
 * factors equal the host ones.  Then the host's pivot rule and a finiteness check.
 * split: lengths scanned (CUB) into the row pointers of L and U, a gather per row. */
enum { ILU_NODIAG = 1, ILU_UNSORTED = 2, ILU_NONFINITE = 4 };
#define ILU_INFLIGHT_DEFAULT 8192

__global__ void k_ilu_sym(int32_t n, const int64_t *__restrict__ rp, const int64_t *__restrict__ ci,
                          const double *__restrict__ v, int64_t *__restrict__ dp, int64_t *__restrict__ lenl,
                          int64_t *__restrict__ lenu, int *flags)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int err = 0;
    int64_t d = -1;
    const int64_t p0 = rp[i], p1 = rp[i + 1];
    for (int64_t p = p0; p < p1; p++) {
        const int64_t j = ci[p];
        if (j < 0 || j >= n || (p > p0 && ci[p - 1] >= j)) err |= ILU_UNSORTED;
        if (j == i) d = p;
        if (!isfinite(v[p])) err |= ILU_NONFINITE;
    }
    if (d < 0) {
        err |= ILU_NODIAG;
        d = p0;
    }
    dp[i] = d;
    lenl[i] = d - p0;
    lenu[i] = p1 - d;
    if (err) atomicOr(flags, err);
}

/* flags[0] += pivots shifted; flags[1] = min row with a non-finite entry (INT_MAX: none) */
__global__ void __launch_bounds__(TRSV_BS)
    k_ilu0(int32_t n, const int32_t *__restrict__ order, const int64_t *__restrict__ rp, const int64_t *__restrict__ ci,
           const int64_t *__restrict__ dp, double *v, int *done, double tol, unsigned int *ticket, int *flags)
{
    const int wl = (int)(threadIdx.x & 31u);
    int cnt = 0;
    for (;;) {
        unsigned int c = 0;
        if (wl == 0) c = atomicAdd(ticket, 1u);
        c = __shfl_sync(0xffffffffu, c, 0);
        if (c >= (unsigned int)n) break;
        const int32_t i = order ? order[c] : (int32_t)c;
        const int64_t p0 = rp[i], p1 = rp[i + 1], d = dp[i];
        double rn = 0.0;
        for (int64_t p = p0 + wl; p < p1; p += 32) rn = fmax(rn, fabs(v[p]));
        for (int o = 16; o > 0; o >>= 1) rn = fmax(rn, __shfl_xor_sync(0xffffffffu, rn, o));
        const double aii = v[d];
        __syncwarp();
        for (int64_t p = p0; p < d; p++) {
            const int64_t k = ci[p];
            if (wl == 0)
                while (vload(done + k) == 0) {
                }
            __syncwarp();
            __threadfence();
            const int64_t dk = dp[k], k1 = rp[k + 1];
            const double l = v[p] / vload(v + dk);
            __syncwarp();
            if (wl == 0) v[p] = l;
            if (l != 0.0)
                for (int64_t q = dk + 1 + wl; q < k1; q += 32) {
                    const int64_t j = ci[q];
                    int64_t lo = p + 1, hi = p1;
                    while (lo < hi) {
                        const int64_t m = (lo + hi) >> 1;
                        if (ci[m] < j) lo = m + 1;
                        else hi = m;
                    }
                    if (lo < p1 && ci[lo] == j) v[lo] = __dsub_rn(v[lo], __dmul_rn(l, vload(v + q)));
                }
            __syncwarp();
        }
        if (wl == 0) {
            int sh = 0;
            v[d] = sap__ilu_fix_pivot(v[d], aii, rn, tol, &sh);
            cnt += sh;
        }
        __syncwarp();
        bool bad = false;
        for (int64_t p = p0 + wl; p < p1; p += 32) bad |= !isfinite(v[p]);
        if (__any_sync(0xffffffffu, bad) && wl == 0) atomicMin(flags + 1, (int)i);
        __threadfence();
        __syncwarp();
        if (wl == 0) *(volatile int *)(done + i) = 1;
    }
    if (wl == 0 && cnt) atomicAdd(flags, cnt);
}

__global__ void k_ilu_split(int32_t n, const int64_t *__restrict__ rp, const int64_t *__restrict__ ci,
                            const double *__restrict__ v, const int64_t *__restrict__ dp,
                            const int64_t *__restrict__ lrp, const int64_t *__restrict__ urp, int64_t *__restrict__ lci,
                            double *__restrict__ lv, int64_t *__restrict__ uci, double *__restrict__ uv)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t p0 = rp[i], p1 = rp[i + 1], d = dp[i];
    int64_t a = lrp[i], b = urp[i];
    for (int64_t p = p0; p < d; p++, a++) {
        lci[a] = ci[p];
        lv[a] = v[p];
    }
    for (int64_t p = d; p < p1; p++, b++) {
        uci[b] = ci[p];
        uv[b] = v[p];
    }
}

sap_status cuda_ilu0(sap_context *ctx, const sap_csr *A, double pivot_tol, sap_precision prec, sap_trsv **L,
                     sap_trsv **U, sap_int *shifted, double *lu, double *t_factor)
{
    sap_status st = SAP_OK;
    const double t0 = sap__wtime();
    cudaStream_t cs = stream_of(ctx);
    int64_t *d_rp = NULL, *d_ci = NULL, *d_dp = NULL, *d_lenl = NULL, *d_lenu = NULL, *d_lrp = NULL, *d_urp = NULL,
            *d_lci = NULL, *d_uci = NULL;
    double *d_v = NULL, *d_lv = NULL, *d_uv = NULL;
    int *d_flags = NULL, *d_done = NULL;
    int32_t *d_lev = NULL, *d_lev2 = NULL, *d_idx = NULL, *d_order = NULL;
    unsigned int *d_tick = NULL;
    void *d_tmp = NULL;
    int h_flags[2] = {0, 0};
    /* $SAP_ILU_ORDER=row: the rows in ascending order (for measurements) */
    const char *ord_env = getenv("SAP_ILU_ORDER");
    const int by_level = !(ord_env && !strcmp(ord_env, "row"));
    *L = *U = NULL;
    if (shifted) *shifted = 0;
    if (t_factor) *t_factor = 0.0;
    if (!A || A->nrows != A->ncols) return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "ilu: the matrix must be square");
    const sap_int n = A->nrows, nnz = A->nnz;
    if (n >= INT32_MAX || nnz >= INT32_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                         "ilu: %lld rows / %lld entries exceed the 32-bit indices of the cuda kernels", (long long)n,
                         (long long)nnz);
    if (n == 0) return SAP_OK; /* declined: the host path */
    const int32_t n32 = (int32_t)n;
    const size_t ni = sizeof(int64_t) * (size_t)n;
    SAP_TRY(sap__cuda_malloc(ctx, ni + sizeof(int64_t), (void **)&d_rp));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int64_t) * (size_t)(nnz > 0 ? nnz : 1), (void **)&d_ci));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(nnz > 0 ? nnz : 1), (void **)&d_v));
    SAP_TRY(sap__cuda_h2d(ctx, d_rp, A->rowptr, ni + sizeof(int64_t)));
    SAP_TRY(sap__cuda_h2d(ctx, d_ci, A->colind, sizeof(int64_t) * (size_t)nnz));
    SAP_TRY(sap__cuda_h2d(ctx, d_v, A->val, sizeof(double) * (size_t)nnz));
    SAP_TRY(sap__cuda_malloc(ctx, ni, (void **)&d_dp));
    SAP_TRY(sap__cuda_malloc(ctx, ni, (void **)&d_lenl));
    SAP_TRY(sap__cuda_malloc(ctx, ni, (void **)&d_lenu));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int) * 2, (void **)&d_flags));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(int) * (size_t)n, (void **)&d_done));
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(unsigned int), (void **)&d_tick));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_flags, 0, sizeof(int) * 2, cs));
    /* symbolic */
    k_ilu_sym<<<blocks_for(n, 128), 128, 0, cs>>>(n32, d_rp, d_ci, d_v, d_dp, d_lenl, d_lenu, d_flags);
    SAP_CUDA_TRY_LAUNCH(ctx, "ilu0 symbolic");
    SAP_TRY(sap__cuda_d2h(ctx, h_flags, d_flags, sizeof(int)));
    if (h_flags[0]) goto cleanup; /* declined (SAP_OK, *L = NULL): the host path adds the diagonal or reports */
    /* order */
    if (by_level) {
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_lev));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_lev2));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_idx));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int32_t) * (size_t)n, (void **)&d_order));
        SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_lev, 0xff, sizeof(int32_t) * (size_t)n, cs));
        SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_tick, 0, sizeof(unsigned int), cs));
        k_depth<<<persistent_blocks(n, 1, depth_window(n)), TRSV_BS, 0, cs>>>(n32, 0, 1, 1, d_rp, d_ci, d_v, d_lev, NULL,
                                                                        NULL, d_flags, d_tick, depth_nap());
        SAP_CUDA_TRY_LAUNCH(ctx, "ilu0 levels");
        SAP_TRY(sap__cuda_d2h(ctx, h_flags, d_flags, sizeof(h_flags)));
        SAP_TRY(level_sort(ctx, cs, n32, h_flags[1] + 1, d_lev, d_lev2, d_idx, d_order, 0, &d_tmp));
        sap__cuda_free(ctx, d_tmp);
        d_tmp = NULL;
    }
    /* numeric */
    h_flags[0] = 0;
    h_flags[1] = INT_MAX;
    SAP_TRY(sap__cuda_h2d(ctx, d_flags, h_flags, sizeof(h_flags)));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_done, 0, sizeof(int) * (size_t)n, cs));
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_tick, 0, sizeof(unsigned int), cs));
    k_ilu0<<<persistent_blocks(n, 32, env_int("SAP_ILU_INFLIGHT", ILU_INFLIGHT_DEFAULT, 32, 1 << 20)), TRSV_BS, 0,
             cs>>>(n32, d_order, d_rp, d_ci, d_dp, d_v, d_done, pivot_tol, d_tick, d_flags);
    SAP_CUDA_TRY_LAUNCH(ctx, "ilu0 numeric");
    SAP_TRY(sap__cuda_d2h(ctx, h_flags, d_flags, sizeof(h_flags)));
    if (h_flags[1] != INT_MAX)
        SAP_FAIL(ctx, SAP_ERR_SINGULAR, "ilu: the factor overflows in row %lld", (long long)h_flags[1]);
    if (shifted) *shifted = h_flags[0];
    if (lu) SAP_TRY(sap__cuda_d2h(ctx, lu, d_v, sizeof(double) * (size_t)nnz));
    if (t_factor) *t_factor = sap__wtime() - t0;
    /* split into L (strictly lower, unit) and U */
    {
        size_t tmp_scan = 0;
        int64_t nl = 0;
        SAP_TRY(sap__cuda_malloc(ctx, ni + sizeof(int64_t), (void **)&d_lrp));
        SAP_TRY(sap__cuda_malloc(ctx, ni + sizeof(int64_t), (void **)&d_urp));
        SAP_CUDA_TRY(ctx, cub::DeviceScan::InclusiveSum(NULL, tmp_scan, d_lenl, d_lrp + 1, n32, cs));
        SAP_TRY(sap__cuda_malloc(ctx, tmp_scan, &d_tmp));
        SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_lrp, 0, sizeof(int64_t), cs));
        SAP_CUDA_TRY(ctx, cudaMemsetAsync(d_urp, 0, sizeof(int64_t), cs));
        SAP_CUDA_TRY(ctx, cub::DeviceScan::InclusiveSum(d_tmp, tmp_scan, d_lenl, d_lrp + 1, n32, cs));
        SAP_CUDA_TRY(ctx, cub::DeviceScan::InclusiveSum(d_tmp, tmp_scan, d_lenu, d_urp + 1, n32, cs));
        SAP_TRY(sap__cuda_d2h(ctx, &nl, d_lrp + n, sizeof(int64_t)));
        const int64_t nu = nnz - nl;
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int64_t) * (size_t)(nl > 0 ? nl : 1), (void **)&d_lci));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(nl > 0 ? nl : 1), (void **)&d_lv));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(int64_t) * (size_t)(nu > 0 ? nu : 1), (void **)&d_uci));
        SAP_TRY(sap__cuda_malloc(ctx, sizeof(double) * (size_t)(nu > 0 ? nu : 1), (void **)&d_uv));
        k_ilu_split<<<blocks_for(n, 128), 128, 0, cs>>>(n32, d_rp, d_ci, d_v, d_dp, d_lrp, d_urp, d_lci, d_lv, d_uci,
                                                        d_uv);
        SAP_CUDA_TRY_LAUNCH(ctx, "ilu0 split");
        SAP_TRY(analyze_dev(ctx, NULL, n, nl, d_lrp, d_lci, d_lv, 0, 1, prec, SAP_TRSV_AUTO, sap__wtime(), 0.0, L));
        SAP_TRY(analyze_dev(ctx, NULL, n, nu, d_urp, d_uci, d_uv, 1, 0, prec, SAP_TRSV_AUTO, sap__wtime(), 0.0, U));
    }
cleanup:
    {
        void *tmps[] = {d_rp,  d_ci,  d_dp,  d_lenl, d_lenu,  d_lrp,  d_urp, d_lci,
                        d_uci, d_v,   d_lv,  d_uv,   d_flags, d_done, d_tick, d_tmp,
                        d_lev, d_lev2, d_idx, d_order};
        for (size_t k = 0; k < sizeof(tmps) / sizeof(tmps[0]); k++) sap__cuda_free(ctx, tmps[k]);
    }
    if (st < 0) {
        if (*L) cuda_trsv_destroy(*L);
        if (*U) cuda_trsv_destroy(*U);
        *L = *U = NULL;
    }
    return st;
}

const sap_trsv_kernels cuda_trsv_table = {"cuda", cuda_trsv_analyze, cuda_trsv_solve, cuda_trsv_destroy, cuda_parilu,
                                          cuda_ilu0};

} /* namespace */

extern "C" const sap_trsv_kernels *sap__trsv_kernels_cuda(void) { return &cuda_trsv_table; }
