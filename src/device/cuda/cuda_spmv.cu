/* cuda_spmv.cu -- y = alpha A x + beta y on the device in double and float for every
 * format of cuda_spmat.cu (how each kernel maps threads to rows is described at the
 * kernel), the launch choice per format, and the introspection the benchmark and the
 * tests use (view, bytes, kernel variants).  No floating-point atomics: every y entry is
 * computed by one thread group in a fixed order, so SpMV is deterministic. */
#include "device/cuda/cuda_spmat.h"

/* ---- SpMV kernels ------------------------------------------------------------------------ */

template <typename T> __device__ __forceinline__ T ldx(const T *x, int32_t c) { return __ldg(x + c); }

/* Products are accumulated in double for both precisions (float SpMV is as accurate as
 * its inputs allow; the arithmetic is far from the memory-bound limit either way). */
template <typename T, bool BETA> __device__ __forceinline__ void store_y(T *y, int32_t i, double alpha, double beta, double s)
{
    y[i] = BETA ? (T)(alpha * s + beta * (double)y[i]) : (T)(alpha * s);
}

template <typename T> __device__ __forceinline__ double mul(T a, T b) { return (double)a * (double)b; }

/* BAND: a block of 32 rows x BAND_GROUPS diagonal groups; lanes on consecutive rows of
 * one diagonal (coalesced values and x), groups over the diagonals t = g, g + G, ...;
 * partial sums combined in a fixed order in shared memory. */
#define BAND_GROUPS 8
template <typename T, bool BETA>
__global__ void __launch_bounds__(32 * BAND_GROUPS)
    k_band(int32_t n, int32_t ncols, int32_t kl, int32_t w, const T *__restrict__ v, const T *__restrict__ x,
           double alpha, double beta, T *__restrict__ y)
{
    __shared__ double part[BAND_GROUPS][32];
    const int32_t i = blockIdx.x * 32 + threadIdx.x;
    double s = 0.0;
    if (i < n) {
        const int32_t t0 = kl - i > 0 ? kl - i : 0, t1 = ncols - i + kl < w ? ncols - i + kl : w;
        int32_t t = t0 + (int32_t)threadIdx.y;
        for (; t < t1; t += BAND_GROUPS) s += mul(v[(size_t)t * n + i], ldx(x, i + t - kl));
    }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && i < n) {
        double a = 0.0;
        for (int g = 0; g < BAND_GROUPS; g++) a += part[g][threadIdx.x];
        store_y<T, BETA>(y, i, alpha, beta, a);
    }
}

/* CSR rows in one launch, binned by length: the first nlong blocks take one long row
 * each (a block of 256 threads, fixed-order reduction), the other blocks give TPR threads
 * (TPR divides 32) to each short row.  Short rows are rows 0..nshort-1 (list == NULL;
 * rows longer than long_thr > 0 are skipped: they are in the long list) or the rows of
 * 'list'.  ACCUM: y[row] += alpha * sum (the HEC remainder after the ELL part); else
 * y = alpha sum + beta y. */
template <typename T, int TPR, bool ACCUM, bool BETA>
__global__ void __launch_bounds__(BLOCK)
    k_csr_binned(int32_t nshort, const int32_t *__restrict__ list, int32_t nlong, const int32_t *__restrict__ long_list,
                 int32_t long_thr, const int32_t *__restrict__ rp, const int32_t *__restrict__ ci, const T *__restrict__ v,
                 const T *__restrict__ x, double alpha, double beta, T *__restrict__ y)
{
    double s = 0.0;
    if ((int32_t)blockIdx.x < nlong) { /* block-uniform branch */
        __shared__ double sm[BLOCK / 32];
        const int32_t row = long_list[blockIdx.x];
        const int32_t b = rp[row], e = rp[row + 1];
        for (int32_t j = b + threadIdx.x; j < e; j += BLOCK) s += mul(v[j], ldx(x, ci[j]));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = s;
        __syncthreads();
        if (threadIdx.x == 0) {
            s = 0.0;
#pragma unroll
            for (int w = 0; w < BLOCK / 32; w++) s += sm[w];
            if (ACCUM) y[row] = (T)((double)y[row] + alpha * s);
            else store_y<T, BETA>(y, row, alpha, beta, s);
        }
        return;
    }
    const int32_t g = (int32_t)(((int64_t)(blockIdx.x - nlong) * BLOCK + threadIdx.x) / TPR);
    const int lane = threadIdx.x % TPR;
    if (g >= nshort) return; /* whole groups leave together */
    const int32_t row = list ? list[g] : g;
    const int32_t b = rp[row], e = rp[row + 1];
    if (!list && long_thr > 0 && e - b > long_thr) return;
    if constexpr (TPR == 1) {
        int32_t j = b;
        for (; j + 1 < e; j += 2) {
            double a0 = mul(v[j], ldx(x, ci[j]));
            double a1 = mul(v[j + 1], ldx(x, ci[j + 1]));
            s += a0;
            s += a1;
        }
        if (j < e) s += mul(v[j], ldx(x, ci[j]));
    } else {
        for (int32_t j = b + lane; j < e; j += TPR) s += mul(v[j], ldx(x, ci[j]));
        const unsigned mask =
            TPR == 32 ? 0xffffffffu : (((1u << (TPR & 31)) - 1u) << ((threadIdx.x & 31) & ~(TPR - 1)));
#pragma unroll
        for (int o = TPR / 2; o > 0; o >>= 1) s += __shfl_down_sync(mask, s, o, TPR);
    }
    if (lane == 0) {
        if (ACCUM) y[row] = (T)((double)y[row] + alpha * s);
        else store_y<T, BETA>(y, row, alpha, beta, s);
    }
}

template <typename T> struct vec2 {};
template <> struct vec2<double> {
    typedef double2 type;
};
template <> struct vec2<float> {
    typedef float2 type;
};

/* ELL, one row per thread */
template <typename T, bool BETA>
__global__ void __launch_bounds__(BLOCK) k_ell(int32_t n, int32_t w, int32_t ld, const int32_t *__restrict__ col,
                                               const T *__restrict__ val, const T *__restrict__ x, double alpha, double beta,
                                               T *__restrict__ y)
{
    const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= n) return;
    const int32_t *c = col + i;
    const T *a = val + i;
    double s = 0.0;
#pragma unroll 4
    for (int32_t k = 0; k < w; k++) {
        s += mul(a[0], ldx(x, c[0]));
        a += ld;
        c += ld;
    }
    store_y<T, BETA>(y, i, alpha, beta, s);
}

/* ELL, two rows per thread (ld even, arrays 16-byte aligned) */
template <typename T, bool BETA>
__global__ void __launch_bounds__(BLOCK) k_ell2(int32_t n, int32_t w, int32_t ld, const int32_t *__restrict__ col,
                                                const T *__restrict__ val, const T *__restrict__ x, double alpha, double beta,
                                                T *__restrict__ y)
{
    typedef typename vec2<T>::type T2;
    const int32_t i = 2 * (blockIdx.x * BLOCK + threadIdx.x);
    if (i >= n) return;
    const int2 *c = (const int2 *)(col + i);
    const T2 *a = (const T2 *)(val + i);
    const int32_t ld2 = ld / 2;
    double s0 = 0.0, s1 = 0.0;
#pragma unroll 4
    for (int32_t k = 0; k < w; k++) {
        T2 av = __ldg(a);
        int2 cv = __ldg(c);
        s0 += mul(av.x, ldx(x, cv.x));
        s1 += mul(av.y, ldx(x, cv.y));
        a += ld2;
        c += ld2;
    }
    store_y<T, BETA>(y, i, alpha, beta, s0);
    if (i + 1 < n) store_y<T, BETA>(y, i + 1, alpha, beta, s1);
}

/* SELL-P: block (32, TPR, 256 / (32 TPR)): x = row in the slice, y = column phase,
 * z = slice within the block */
template <typename T, int TPR, bool BETA>
__global__ void __launch_bounds__(BLOCK) k_sellp(int32_t n, int32_t ns, const int32_t *__restrict__ sp,
                                                 const int32_t *__restrict__ col, const T *__restrict__ val,
                                                 const T *__restrict__ x, double alpha, double beta, T *__restrict__ y)
{
    constexpr int SPB = BLOCK / (SLICE * TPR);
    const int32_t s = blockIdx.x * SPB + threadIdx.z;
    const int r = threadIdx.x;
    double acc = 0.0;
    if (s < ns) {
        const int32_t base = sp[s];
        const int32_t w = (sp[s + 1] - base) / SLICE;
        const int32_t *c = col + base + r + threadIdx.y * SLICE;
        const T *a = val + base + r + threadIdx.y * SLICE;
#pragma unroll 4
        for (int32_t k = threadIdx.y; k < w; k += TPR) {
            acc += mul(a[0], ldx(x, c[0]));
            a += TPR * SLICE;
            c += TPR * SLICE;
        }
    }
    if constexpr (TPR > 1) {
        __shared__ double sm[SPB][TPR][SLICE];
        sm[threadIdx.z][threadIdx.y][r] = acc;
        __syncthreads();
        if (threadIdx.y != 0) return;
        acc = 0.0;
#pragma unroll
        for (int t = 0; t < TPR; t++) acc += sm[threadIdx.z][t][r];
    }
    const int32_t i = s * SLICE + r;
    if (s < ns && i < n) store_y<T, BETA>(y, i, alpha, beta, acc);
}


/* One launch of the binned CSR kernel with the right TPR. */
template <typename T, bool ACCUM, bool BETA>
static void launch_binned(sap_context *ctx, int tpr, int32_t nshort, const int32_t *list, int32_t nlong,
                          const int32_t *long_list, int32_t long_thr, const int32_t *rp, const int32_t *ci, const T *v,
                          const T *x, double alpha, double beta, T *y)
{
    const unsigned g = nblocks((int64_t)nshort * tpr) + (unsigned)nlong;
    if (g == 0) return;
#define SAP_BINNED(TPR)                                                                                 \
    k_csr_binned<T, TPR, ACCUM, BETA><<<g, BLOCK, 0, STREAM>>>(nshort, list, nlong, long_list, long_thr, rp, ci, v, x, \
                                                              alpha, beta, y)
    switch (tpr) {
    case 1: SAP_BINNED(1); break;
    case 2: SAP_BINNED(2); break;
    case 4: SAP_BINNED(4); break;
    case 8: SAP_BINNED(8); break;
    case 16: SAP_BINNED(16); break;
    default: SAP_BINNED(32); break;
    }
#undef SAP_BINNED
}

template <typename T, bool BETA>
static void launch_csr(sap_context *ctx, const cuda_spmat *m, const T *x, double alpha, double beta, T *y)
{
    launch_binned<T, false, BETA>(ctx, m->v.csr_tpr, (int32_t)m->pub.nrows, NULL, m->v.csr_nlong, m->long_rows,
                                  m->long_thr, m->rowptr, m->colind, (const T *)m->val, x, alpha, beta, y);
}

template <typename T, bool BETA>
static void launch_sellp(sap_context *ctx, const cuda_spmat *m, const T *x, double alpha, double beta, T *y)
{
    const int32_t n = (int32_t)m->pub.nrows, ns = m->v.nslices;
    const T *v = (const T *)m->sell_val;
    switch (m->sell_tpr) {
    case 1: {
        dim3 b(SLICE, 1, 8);
        k_sellp<T, 1, BETA><<<(ns + 7) / 8, b, 0, STREAM>>>(n, ns, m->slice_ptr, m->sell_col, v, x, alpha, beta, y);
        break;
    }
    case 2: {
        dim3 b(SLICE, 2, 4);
        k_sellp<T, 2, BETA><<<(ns + 3) / 4, b, 0, STREAM>>>(n, ns, m->slice_ptr, m->sell_col, v, x, alpha, beta, y);
        break;
    }
    case 4: {
        dim3 b(SLICE, 4, 2);
        k_sellp<T, 4, BETA><<<(ns + 1) / 2, b, 0, STREAM>>>(n, ns, m->slice_ptr, m->sell_col, v, x, alpha, beta, y);
        break;
    }
    default: {
        dim3 b(SLICE, 8, 1);
        k_sellp<T, 8, BETA><<<ns, b, 0, STREAM>>>(n, ns, m->slice_ptr, m->sell_col, v, x, alpha, beta, y);
        break;
    }
    }
}

template <typename T, bool BETA>
static void launch_ell(sap_context *ctx, const cuda_spmat *m, const T *x, double alpha, double beta, T *y)
{
    const int32_t n = (int32_t)m->pub.nrows;
    const T *v = (const T *)m->ell_val;
    if (m->ell_rpt == 2)
        k_ell2<T, BETA><<<nblocks(((int64_t)n + 1) / 2), BLOCK, 0, STREAM>>>(n, m->v.ell_width, m->v.ell_ld, m->ell_col,
                                                                              v, x, alpha, beta, y);
    else
        k_ell<T, BETA><<<nblocks(n), BLOCK, 0, STREAM>>>(n, m->v.ell_width, m->v.ell_ld, m->ell_col, v, x, alpha, beta, y);
    if (m->pub.format == SAP_FORMAT_HEC && m->v.rem_nrows > 0)
        launch_binned<T, true, BETA>(ctx, m->rem_tpr, m->rem_nshort, m->rem_rows, m->rem_nlong, m->rem_long, 0,
                                     m->rem_rowptr, m->rem_col, (const T *)m->rem_val, x, alpha, beta, y);
}

template <typename T, bool BETA>
static void launch(sap_context *ctx, const cuda_spmat *m, const T *x, double alpha, double beta, T *y)
{
    switch (m->pub.format) {
    case SAP_FORMAT_ELL:
    case SAP_FORMAT_HEC: launch_ell<T, BETA>(ctx, m, x, alpha, beta, y); break;
    case SAP_FORMAT_SELLP: launch_sellp<T, BETA>(ctx, m, x, alpha, beta, y); break;
    case SAP_FORMAT_BAND: {
        dim3 b(32, BAND_GROUPS);
        k_band<T, BETA><<<(unsigned)((m->pub.nrows + 31) / 32), b, 0, STREAM>>>(
            (int32_t)m->pub.nrows, (int32_t)m->pub.ncols, m->band_kl, m->band_w, (const T *)m->val, x, alpha, beta, y);
        break;
    }
    default: launch_csr<T, BETA>(ctx, m, x, alpha, beta, y); break;
    }
}

/* y = beta y for an empty product (no rows or no columns) */
template <typename T> __global__ void k_scale_y(int32_t n, T beta, T *y)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = beta == (T)0 ? (T)0 : beta * y[i];
}

extern "C" sap_status sap__cuda_spmv(sap_context *ctx, const sap_spmat *M, double alpha, const sap_vec *x, double beta,
                                     sap_vec *y)
{
    if (!M || !M->impl || !x || !y) return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmv: NULL argument");
    if (x->n != M->ncols || y->n != M->nrows)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmv: vector lengths %lld, %lld do not match the %lld x %lld matrix",
                         (long long)x->n, (long long)y->n, (long long)M->nrows, (long long)M->ncols);
    if (x->prec != M->prec || y->prec != M->prec)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmv: vectors must have the matrix' precision");
    if ((x->n > 0 && !x->data) || (y->n > 0 && !y->data))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmv: vector not allocated");
    if (M->nrows == 0) return SAP_OK;
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    const cuda_spmat *m = (const cuda_spmat *)M->impl;
    if (M->ncols == 0 || M->nnz == 0 || alpha == 0.0) {
        if (M->prec == SAP_DOUBLE) k_scale_y<double><<<nblocks(M->nrows), BLOCK, 0, STREAM>>>((int32_t)M->nrows, beta, (double *)y->data);
        else k_scale_y<float><<<nblocks(M->nrows), BLOCK, 0, STREAM>>>((int32_t)M->nrows, (float)beta, (float *)y->data);
        SAP_CUDA_LAUNCHED(ctx, "k_scale_y");
        return SAP_OK;
    }
    if (M->prec == SAP_DOUBLE) {
        if (beta != 0.0) launch<double, true>(ctx, m, (const double *)x->data, alpha, beta, (double *)y->data);
        else launch<double, false>(ctx, m, (const double *)x->data, alpha, beta, (double *)y->data);
    } else {
        if (beta != 0.0)
            launch<float, true>(ctx, m, (const float *)x->data, alpha, beta, (float *)y->data);
        else launch<float, false>(ctx, m, (const float *)x->data, alpha, beta, (float *)y->data);
    }
    SAP_CUDA_LAUNCHED(ctx, "spmv");
    return SAP_OK;
}

extern "C" sap_status sap__cuda_spmat_band(const sap_spmat *M, const void **val, sap_int *kl, sap_int *w)
{
    if (!M || !M->impl || M->format != SAP_FORMAT_BAND) return SAP_ERR_INVALID;
    const cuda_spmat *m = (const cuda_spmat *)M->impl;
    *val = m->val;
    *kl = m->band_kl;
    *w = m->band_w;
    return SAP_OK;
}

/* ---- introspection for the benchmark and the tests ----------------------------------------- */

extern "C" sap_status sap__cuda_spmat_view(const sap_spmat *M, sap_cuda_spmat_view *view)
{
    if (!M || !M->impl || !view) return SAP_ERR_INVALID;
    *view = ((const cuda_spmat *)M->impl)->v;
    return SAP_OK;
}

extern "C" double sap__cuda_spmat_bytes(const sap_spmat *M)
{
    if (!M || !M->impl) return 0.0;
    const cuda_spmat *m = (const cuda_spmat *)M->impl;
    const double vs = (double)psize(M->prec), n = (double)M->nrows, nc = (double)M->ncols;
    return vs * (n + nc) + m->fmt_bytes; /* y written, x read once, the format's arrays */
}

extern "C" sap_status sap__cuda_spmat_tune(sap_spmat *M, int knob, int value)
{
    if (!M || !M->impl) return SAP_ERR_INVALID;
    cuda_spmat *m = (cuda_spmat *)M->impl;
    switch (knob) {
    case 0: /* ELL / HEC rows per thread */
        if (value != 1 && value != 2) return SAP_ERR_INVALID;
        m->ell_rpt = value;
        break;
    case 1: /* SELL-P threads per row */
        if (value != 1 && value != 2 && value != 4 && value != 8) return SAP_ERR_INVALID;
        m->sell_tpr = value;
        break;
    case 2: /* CSR threads per row */
        if (value < 1 || value > 32 || (value & (value - 1))) return SAP_ERR_INVALID;
        m->v.csr_tpr = value;
        break;
    default: return SAP_ERR_INVALID;
    }
    return SAP_OK;
}
