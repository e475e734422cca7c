/* cuda_vector.cu -- vectors and BLAS-1 of the cuda backend, in double and float.
 *
 * Reductions are deterministic: a fixed grid (a function of n only), each thread sums a
 * fixed strided set of elements in order, blocks reduce by a fixed shuffle tree, each
 * block writes its partial, and the last block to finish (found with an integer ticket;
 * no floating-point atomics) sums the partials in index order and writes the results
 * straight into pinned host memory.  One launch and one stream synchronization per
 * reduction.  Sums are accumulated in double for both precisions. */
#include <cuda_runtime.h>

#include <math.h>
#include <string.h>

#include "device/cuda/cuda_internal.h"

#define BLOCK 256

/* ---- helpers ---------------------------------------------------------------------------- */

static inline unsigned grid_for(sap_int n, int per_thread = 4)
{
    sap_int g = (n + (sap_int)BLOCK * per_thread - 1) / ((sap_int)BLOCK * per_thread);
    if (g < 1) g = 1;
    if (g > 65535LL * 16) g = 65535LL * 16; /* grid-stride loops cover the rest */
    return (unsigned)g;
}

static size_t prec_size(sap_precision p) { return p == SAP_FLOAT ? sizeof(float) : sizeof(double); }

static sap_status check_vec(sap_context *ctx, const sap_vec *v, const char *name)
{
    if (!v) return SAP_ERROR(ctx, SAP_ERR_INVALID, "vector %s is NULL", name);
    if (v->n < 0 || (v->n > 0 && !v->data))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "vector %s is not allocated", name);
    if (v->prec != SAP_DOUBLE && v->prec != SAP_FLOAT)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "vector %s has an invalid precision", name);
    return SAP_OK;
}

static sap_status check_pair(sap_context *ctx, const sap_vec *x, const sap_vec *y, bool same_prec)
{
    if (x->n != y->n)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "vector lengths differ (%lld and %lld)", (long long)x->n,
                         (long long)y->n);
    if (same_prec && x->prec != y->prec) return SAP_ERROR(ctx, SAP_ERR_INVALID, "vector precisions differ");
    return SAP_OK;
}

#define CHECK_VEC(v)                                                                                  \
    do {                                                                                              \
        sap_status s_ = check_vec(ctx, (v), #v);                                                      \
        if (s_ != SAP_OK) return s_;                                                                  \
    } while (0)
#define CHECK_PAIR(x, y)                                                                              \
    do {                                                                                              \
        sap_status s_ = check_pair(ctx, (x), (y), true);                                              \
        if (s_ != SAP_OK) return s_;                                                                  \
    } while (0)
#define ENTER()                                                                                       \
    do {                                                                                              \
        sap_status s_ = sap__cuda_enter(ctx);                                                         \
        if (s_ != SAP_OK) return s_;                                                                  \
    } while (0)

/* Deterministic block sum (fixed shuffle tree, then warp partials in order). */
__device__ __forceinline__ double block_sum(double v, double *sm)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); /* sm may be in use from a previous call */
    if (lane == 0) sm[warp] = v;
    __syncthreads();
    double r = 0.0;
    if (warp == 0) {
        const int nw = blockDim.x >> 5;
        r = lane < nw ? sm[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) r += __shfl_down_sync(0xffffffffu, r, o);
    }
    return r; /* valid in thread 0 */
}

/* Called by every thread of every block after its K sums acc[0..K-1] (valid in thread 0
 * of the block) are known: stores the partials and lets the last block finish.
 * Output q is the sum of partials[q * G + b], b = 0..G-1 in order (G = gridDim.x *
 * gridDim.y), optionally square-rooted, written to out[q] (pinned host memory). */
template <int K>
__device__ __forceinline__ void finish_reduction(const double (&acc)[K], int q0, int nout, double *partials,
                                                 unsigned int *ticket, double *out, bool sqrt_out, double *sm)
{
    const unsigned G = gridDim.x * gridDim.y;
    const unsigned b = blockIdx.x; /* partial index within an output */
#pragma unroll
    for (int k = 0; k < K; k++) {
        double s = block_sum(acc[k], sm);
        if (threadIdx.x == 0 && q0 + k < nout) partials[(size_t)(q0 + k) * gridDim.x + b] = s;
    }
    __shared__ bool last;
    if (threadIdx.x == 0) {
        __threadfence();
        unsigned t = atomicInc(ticket, G - 1); /* wraps to 0 after the last block */
        last = (t == G - 1);
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int q = 0; q < nout; q++) {
        double s = 0.0;
        for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) s += __ldcg(&partials[(size_t)q * gridDim.x + i]);
        s = block_sum(s, sm);
        if (threadIdx.x == 0) out[q] = sqrt_out ? sqrt(s) : s;
    }
    if (threadIdx.x == 0) __threadfence_system();
}

template <typename T> struct acc_of {
    typedef double type;
};

/* ---- elementwise kernels ----------------------------------------------------------------- */

template <typename T> __global__ void k_set(sap_int n, T *x, T a)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x)
        x[i] = a;
}

template <typename T> __global__ void k_scale(sap_int n, T *x, T a)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x)
        x[i] *= a;
}

template <typename TX, typename TY> __global__ void k_convert(sap_int n, const TX *__restrict__ x, TY *__restrict__ y)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x)
        y[i] = (TY)x[i];
}

/* y = a x + b y (b == 0: y is not read) */
template <typename T, bool READ_Y>
__global__ void k_axpby(sap_int n, T a, const T *__restrict__ x, T b, T *__restrict__ y)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x)
        y[i] = READ_Y ? a * x[i] + b * y[i] : a * x[i];
}

/* z = a x + b y + c z (c == 0: z is not read) */
template <typename T, bool READ_Z>
__global__ void k_axpbypcz(sap_int n, T a, const T *__restrict__ x, T b, const T *__restrict__ y, T c,
                           T *__restrict__ z)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x) {
        T v = a * x[i] + b * y[i];
        z[i] = READ_Z ? v + c * z[i] : v;
    }
}

template <typename T> __global__ void k_pointwise(sap_int n, const T *x, const T *y, T *z)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x)
        z[i] = x[i] * y[i];
}

#define MAXK 64
struct maxpy_args {
    const void *x[MAXK];
    double a[MAXK];
};

/* y += sum_j a[j] x[j], j in [j0, j0 + K): vectors taken 8 at a time */
template <typename T, int K>
__global__ void k_maxpy(sap_int n, int j0, const __grid_constant__ maxpy_args args, T *__restrict__ y)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x) {
        T s = y[i];
#pragma unroll
        for (int j = 0; j < K; j++) s += (T)args.a[j0 + j] * ((const T *)args.x[j0 + j])[i];
        y[i] = s;
    }
}

/* ---- reduction kernels ------------------------------------------------------------------- */

/* MODE 0: dot(x, y); 1: ||x||^2; 2: y = a x + b y then ||y||^2; 3: CG update */
template <typename T, int MODE, bool READ_Y>
__global__ void __launch_bounds__(BLOCK) k_red(sap_int n, double a, const T *__restrict__ x, double b,
                                               T *__restrict__ y, const T *__restrict__ q, T *__restrict__ r,
                                               double *partials, unsigned int *ticket, double *out)
{
    __shared__ double sm[32];
    double acc[1] = {0.0};
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += stride) {
        if (MODE == 0) {
            acc[0] += (double)x[i] * (double)y[i];
        } else if (MODE == 1) {
            double v = x[i];
            acc[0] += v * v;
        } else if (MODE == 2) {
            T v = READ_Y ? (T)a * x[i] + (T)b * y[i] : (T)a * x[i];
            y[i] = v;
            acc[0] += (double)v * (double)v;
        } else { /* x += alpha p (x: y, p: x), r -= alpha q */
            y[i] += (T)a * x[i];
            T v = r[i] - (T)a * q[i];
            r[i] = v;
            acc[0] += (double)v * (double)v;
        }
    }
    finish_reduction<1>(acc, 0, 1, partials, ticket, out, MODE == 1 || MODE == 2, sm);
}

/* r[j] = x[j] . y for j in [8 * blockIdx.y, ...): K accumulators per thread */
struct mdot_args {
    const void *x[MAXK];
};

template <typename T>
__global__ void __launch_bounds__(BLOCK) k_mdot(sap_int n, int k, const __grid_constant__ mdot_args args,
                                                const T *__restrict__ y, double *partials, unsigned int *ticket,
                                                double *out)
{
    __shared__ double sm[32];
    const int j0 = blockIdx.y * 8;
    double acc[8];
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = 0.0;
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += stride) {
        double yi = y[i];
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j0 + j < k) acc[j] += (double)((const T *)args.x[j0 + j])[i] * yi;
    }
    finish_reduction<8>(acc, j0, k, partials, ticket, out, false, sm);
}

/* ---- block vectors: k columns of m entries (column c at element c m) -------------------- */

/* Z_c = a[c] X_c + b[c] Y_c + c[c] Z_c, the arithmetic of k_axpbypcz: blockIdx.y is the
 * column; a = b = 0, c = 1 leaves it (not written), c = 0 does not read Z_c. */
struct caxpbypcz_args {
    double a[MAXK], b[MAXK], c[MAXK];
};

template <typename T>
__global__ void k_caxpbypcz(sap_int m, const __grid_constant__ caxpbypcz_args args, const T *__restrict__ x,
                            const T *__restrict__ y, T *__restrict__ z)
{
    const double a = args.a[blockIdx.y], b = args.b[blockIdx.y], c = args.c[blockIdx.y];
    if (a == 0.0 && b == 0.0 && c == 1.0) return; /* block-uniform */
    const size_t off = (size_t)blockIdx.y * (size_t)m;
    const T aa = (T)a, bb = (T)b, cc = (T)c;
    x += off;
    y += off;
    z += off;
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < m; i += stride) {
        T v = aa * x[i] + bb * y[i];
        z[i] = c != 0.0 ? v + cc * z[i] : v;
    }
}

/* Y_c = a[c] X_c + b[c] Y_c: blockIdx.y is the column; a column with a = 0, b = 1 is left
 * (not written), b = 0 does not read Y_c.  Arithmetic in T, as k_axpby. */
struct caxpby_args {
    double a[MAXK], b[MAXK];
};

template <typename T>
__global__ void k_caxpby(sap_int m, const __grid_constant__ caxpby_args args, const T *__restrict__ x,
                         T *__restrict__ y)
{
    const double a = args.a[blockIdx.y], b = args.b[blockIdx.y];
    if (a == 0.0 && b == 1.0) return; /* block-uniform */
    const size_t off = (size_t)blockIdx.y * (size_t)m;
    const T aa = (T)a, bb = (T)b;
    x += off;
    y += off;
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    if (b == 0.0)
        for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < m; i += stride) y[i] = aa * x[i];
    else
        for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < m; i += stride) y[i] = aa * x[i] + bb * y[i];
}

/* r[i k + c] = X[i]_c . Y_c: blockIdx.y is the column c, blockIdx.x one of gridDim.x
 * fixed strided parts of it (dot's scheme per column); partial p = c nx + i of block b at
 * partials[p * gridDim.x + b].  The last block (integer ticket) sums the partials of each
 * output in index order: with at most 8 outputs as finish_reduction does (k = 1, nx = 1
 * is dot's reduction, bit for bit), else a warp per output (lanes over the partials in a
 * fixed stride, a fixed shuffle tree), which keeps the one block's work short for up to
 * 512 outputs. */
struct cdot_args {
    const void *x[8];
};

template <typename T>
__global__ void __launch_bounds__(BLOCK) k_cdot(sap_int m, int k, int nx, const __grid_constant__ cdot_args args,
                                                const T *__restrict__ y, double *partials, unsigned int *ticket,
                                                double *out)
{
    __shared__ double sm[32];
    const int c = blockIdx.y;
    const size_t off = (size_t)c * (size_t)m;
    double acc[8];
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = 0.0;
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < m; i += stride) {
        double yi = y[off + i];
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < nx) acc[j] += (double)((const T *)args.x[j])[off + i] * yi;
    }
    const unsigned gx = gridDim.x;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if (j >= nx) break; /* uniform */
        double s = block_sum(acc[j], sm);
        if (threadIdx.x == 0) partials[(size_t)(c * nx + j) * gx + blockIdx.x] = s;
    }
    __shared__ bool last;
    if (threadIdx.x == 0) {
        __threadfence();
        unsigned t = atomicInc(ticket, gx * gridDim.y - 1); /* wraps to 0 after the last block */
        last = (t == gx * gridDim.y - 1);
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    const int nout = k * nx;
    if (nout <= 8) {
        for (int q = 0; q < nout; q++) {
            double s = 0.0;
            for (unsigned i = threadIdx.x; i < gx; i += blockDim.x) s += __ldcg(&partials[(size_t)q * gx + i]);
            s = block_sum(s, sm);
            if (threadIdx.x == 0) out[(q % nx) * k + q / nx] = s;
        }
    } else {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
        for (int q = warp; q < nout; q += nw) {
            double s = 0.0;
            for (unsigned i = lane; i < gx; i += 32) s += __ldcg(&partials[(size_t)q * gx + i]);
            for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
            if (lane == 0) out[(q % nx) * k + q / nx] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) __threadfence_system();
}

/* ---- the table's functions --------------------------------------------------------------- */

static sap_status vec_create(sap_context *ctx, sap_int n, sap_precision prec, sap_vec *v)
{
    if (!v) return SAP_ERROR(ctx, SAP_ERR_INVALID, "vector is NULL");
    memset(v, 0, sizeof(*v));
    if (n < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "negative vector length %lld", (long long)n);
    if (prec != SAP_DOUBLE && prec != SAP_FLOAT) return SAP_ERROR(ctx, SAP_ERR_INVALID, "invalid precision");
    if (sap__mul_overflows(n, (int64_t)prec_size(prec), INT64_MAX / 2))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "vector of %lld entries is too large", (long long)n);
    ENTER();
    void *p = NULL;
    size_t bytes = (size_t)n * prec_size(prec);
    sap_status st = sap__cuda_malloc(ctx, bytes, &p);
    if (st != SAP_OK) return st;
    if (bytes) {
        cudaError_t e = cudaMemsetAsync(p, 0, bytes, sap__cuda_state(ctx)->stream);
        if (e != cudaSuccess) {
            sap__cuda_free(ctx, p);
            return sap__cuda_error(ctx, e, "cudaMemsetAsync", __FILE__, __LINE__);
        }
    }
    v->n = n;
    v->prec = prec;
    v->data = p;
    return SAP_OK;
}

static void vec_destroy(sap_context *ctx, sap_vec *v)
{
    if (!v) return;
    if (v->data) sap__cuda_free(ctx, v->data);
    v->data = NULL;
    v->n = 0;
}

static sap_status vec_upload(sap_context *ctx, sap_vec *v, const double *host)
{
    CHECK_VEC(v);
    if (v->n == 0) return SAP_OK;
    if (!host) return SAP_ERROR(ctx, SAP_ERR_INVALID, "host array is NULL");
    ENTER();
    if (v->prec == SAP_DOUBLE) return sap__cuda_h2d(ctx, v->data, host, (size_t)v->n * sizeof(double));
    sap_status st = SAP_OK;
    float *tmp = NULL;
    SAP_CUDA_HOST_ALLOC(ctx, tmp, v->n);
    for (sap_int i = 0; i < v->n; i++) tmp[i] = (float)host[i];
    st = sap__cuda_h2d(ctx, v->data, tmp, (size_t)v->n * sizeof(float));
cleanup:
    sap__free(ctx, tmp);
    return st;
}

static sap_status vec_download(sap_context *ctx, const sap_vec *v, double *host)
{
    CHECK_VEC(v);
    if (v->n == 0) return SAP_OK;
    if (!host) return SAP_ERROR(ctx, SAP_ERR_INVALID, "host array is NULL");
    ENTER();
    if (v->prec == SAP_DOUBLE) return sap__cuda_d2h(ctx, host, v->data, (size_t)v->n * sizeof(double));
    sap_status st = SAP_OK;
    float *tmp = NULL;
    SAP_CUDA_HOST_ALLOC(ctx, tmp, v->n);
    SAP_TRY(sap__cuda_d2h(ctx, tmp, v->data, (size_t)v->n * sizeof(float)));
    for (sap_int i = 0; i < v->n; i++) host[i] = (double)tmp[i];
cleanup:
    sap__free(ctx, tmp);
    return st;
}

#define STREAM (sap__cuda_state(ctx)->stream)

static sap_status vcopy(sap_context *ctx, const sap_vec *x, sap_vec *y)
{
    CHECK_VEC(x);
    CHECK_VEC(y);
    sap_status s = check_pair(ctx, x, y, false);
    if (s != SAP_OK) return s;
    if (x->n == 0 || x->data == y->data) return SAP_OK;
    ENTER();
    if (x->prec == y->prec) {
        SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(y->data, x->data, (size_t)x->n * prec_size(x->prec),
                                            cudaMemcpyDeviceToDevice, STREAM));
        return SAP_OK;
    }
    if (x->prec == SAP_DOUBLE)
        k_convert<double, float><<<grid_for(x->n), BLOCK, 0, STREAM>>>(x->n, (const double *)x->data, (float *)y->data);
    else
        k_convert<float, double><<<grid_for(x->n), BLOCK, 0, STREAM>>>(x->n, (const float *)x->data, (double *)y->data);
    SAP_CUDA_LAUNCHED(ctx, "k_convert");
    return SAP_OK;
}

__global__ void k_gather(sap_int n, const double *__restrict__ x, const sap_int *__restrict__ p,
                         const double *__restrict__ s, double *__restrict__ y)
{
    for (sap_int i = blockIdx.x * (sap_int)blockDim.x + threadIdx.x; i < n; i += (sap_int)gridDim.x * blockDim.x)
        y[i] = (s ? s[i] : 1.0) * x[p ? p[i] : i];
}

static sap_status vgather(sap_context *ctx, const sap_vec *x, const sap_int *p, const double *s, sap_vec *y)
{
    CHECK_VEC(x);
    CHECK_VEC(y);
    sap_status st = check_pair(ctx, x, y, true);
    if (st != SAP_OK) return st;
    if (x->prec != SAP_DOUBLE || x->data == y->data)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "gather: x and y must be distinct double vectors");
    if (x->n == 0) return SAP_OK;
    ENTER();
    k_gather<<<grid_for(x->n), BLOCK, 0, STREAM>>>(x->n, (const double *)x->data, p, s, (double *)y->data);
    SAP_CUDA_LAUNCHED(ctx, "k_gather");
    return SAP_OK;
}

static sap_status vset(sap_context *ctx, sap_vec *x, double a)
{
    CHECK_VEC(x);
    if (x->n == 0) return SAP_OK;
    ENTER();
    if (a == 0.0 && !signbit(a)) {
        SAP_CUDA_CHECK(ctx, cudaMemsetAsync(x->data, 0, (size_t)x->n * prec_size(x->prec), STREAM));
        return SAP_OK;
    }
    if (x->prec == SAP_DOUBLE) k_set<double><<<grid_for(x->n), BLOCK, 0, STREAM>>>(x->n, (double *)x->data, a);
    else k_set<float><<<grid_for(x->n), BLOCK, 0, STREAM>>>(x->n, (float *)x->data, (float)a);
    SAP_CUDA_LAUNCHED(ctx, "k_set");
    return SAP_OK;
}

static sap_status vscale(sap_context *ctx, sap_vec *x, double a)
{
    CHECK_VEC(x);
    if (x->n == 0 || a == 1.0) return SAP_OK;
    ENTER();
    if (x->prec == SAP_DOUBLE) k_scale<double><<<grid_for(x->n), BLOCK, 0, STREAM>>>(x->n, (double *)x->data, a);
    else k_scale<float><<<grid_for(x->n), BLOCK, 0, STREAM>>>(x->n, (float *)x->data, (float)a);
    SAP_CUDA_LAUNCHED(ctx, "k_scale");
    return SAP_OK;
}

static sap_status vaxpby(sap_context *ctx, double a, const sap_vec *x, double b, sap_vec *y)
{
    CHECK_VEC(x);
    CHECK_VEC(y);
    CHECK_PAIR(x, y);
    if (x->n == 0) return SAP_OK;
    ENTER();
    unsigned g = grid_for(x->n);
    if (x->prec == SAP_DOUBLE) {
        if (b != 0.0) k_axpby<double, true><<<g, BLOCK, 0, STREAM>>>(x->n, a, (const double *)x->data, b, (double *)y->data);
        else k_axpby<double, false><<<g, BLOCK, 0, STREAM>>>(x->n, a, (const double *)x->data, b, (double *)y->data);
    } else {
        if (b != 0.0)
            k_axpby<float, true><<<g, BLOCK, 0, STREAM>>>(x->n, (float)a, (const float *)x->data, (float)b, (float *)y->data);
        else
            k_axpby<float, false><<<g, BLOCK, 0, STREAM>>>(x->n, (float)a, (const float *)x->data, (float)b, (float *)y->data);
    }
    SAP_CUDA_LAUNCHED(ctx, "k_axpby");
    return SAP_OK;
}

static sap_status vaxpbypcz(sap_context *ctx, double a, const sap_vec *x, double b, const sap_vec *y, double c,
                            sap_vec *z)
{
    CHECK_VEC(x);
    CHECK_VEC(y);
    CHECK_VEC(z);
    CHECK_PAIR(x, y);
    CHECK_PAIR(x, z);
    if (x->n == 0) return SAP_OK;
    ENTER();
    unsigned g = grid_for(x->n);
    if (x->prec == SAP_DOUBLE) {
        const double *xd = (const double *)x->data, *yd = (const double *)y->data;
        double *zd = (double *)z->data;
        if (c != 0.0) k_axpbypcz<double, true><<<g, BLOCK, 0, STREAM>>>(x->n, a, xd, b, yd, c, zd);
        else k_axpbypcz<double, false><<<g, BLOCK, 0, STREAM>>>(x->n, a, xd, b, yd, c, zd);
    } else {
        const float *xf = (const float *)x->data, *yf = (const float *)y->data;
        float *zf = (float *)z->data;
        if (c != 0.0) k_axpbypcz<float, true><<<g, BLOCK, 0, STREAM>>>(x->n, (float)a, xf, (float)b, yf, (float)c, zf);
        else k_axpbypcz<float, false><<<g, BLOCK, 0, STREAM>>>(x->n, (float)a, xf, (float)b, yf, (float)c, zf);
    }
    SAP_CUDA_LAUNCHED(ctx, "k_axpbypcz");
    return SAP_OK;
}

static sap_status vpointwise(sap_context *ctx, const sap_vec *x, const sap_vec *y, sap_vec *z)
{
    CHECK_VEC(x);
    CHECK_VEC(y);
    CHECK_VEC(z);
    CHECK_PAIR(x, y);
    CHECK_PAIR(x, z);
    if (x->n == 0) return SAP_OK;
    ENTER();
    unsigned g = grid_for(x->n);
    if (x->prec == SAP_DOUBLE)
        k_pointwise<double><<<g, BLOCK, 0, STREAM>>>(x->n, (const double *)x->data, (const double *)y->data, (double *)z->data);
    else
        k_pointwise<float><<<g, BLOCK, 0, STREAM>>>(x->n, (const float *)x->data, (const float *)y->data, (float *)z->data);
    SAP_CUDA_LAUNCHED(ctx, "k_pointwise");
    return SAP_OK;
}

template <typename T>
static void launch_maxpy(sap_context *ctx, sap_int n, int k, const maxpy_args &args, T *y)
{
    unsigned g = grid_for(n);
    for (int j0 = 0; j0 < k; j0 += 8) {
        switch (k - j0 >= 8 ? 8 : k - j0) {
        case 1: k_maxpy<T, 1><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        case 2: k_maxpy<T, 2><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        case 3: k_maxpy<T, 3><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        case 4: k_maxpy<T, 4><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        case 5: k_maxpy<T, 5><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        case 6: k_maxpy<T, 6><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        case 7: k_maxpy<T, 7><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        default: k_maxpy<T, 8><<<g, BLOCK, 0, STREAM>>>(n, j0, args, y); break;
        }
    }
}

static sap_status vmaxpy(sap_context *ctx, int k, const double *a, const sap_vec *x, sap_vec *y)
{
    CHECK_VEC(y);
    if (k < 0 || k > MAXK) return SAP_ERROR(ctx, SAP_ERR_INVALID, "maxpy: k = %d outside 0..%d", k, MAXK);
    if (k > 0 && (!a || !x)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "maxpy: NULL coefficients or vectors");
    maxpy_args args;
    memset(&args, 0, sizeof(args));
    for (int j = 0; j < k; j++) {
        CHECK_VEC(&x[j]);
        CHECK_PAIR(&x[j], y);
        args.x[j] = x[j].data;
        args.a[j] = a[j];
    }
    if (k == 0 || y->n == 0) return SAP_OK;
    ENTER();
    if (y->prec == SAP_DOUBLE) launch_maxpy<double>(ctx, y->n, k, args, (double *)y->data);
    else launch_maxpy<float>(ctx, y->n, k, args, (float *)y->data);
    SAP_CUDA_LAUNCHED(ctx, "k_maxpy");
    return SAP_OK;
}

/* Launches k_red and waits for its results. */
template <typename T, int MODE>
static sap_status run_red(sap_context *ctx, sap_int n, double a, const void *x, double b, void *y, const void *q,
                          void *r, double *result)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    int g = sap__cuda_red_grid(n);
    bool read_y = !(MODE == 2 && b == 0.0);
    if (read_y)
        k_red<T, MODE, true><<<g, BLOCK, 0, cs->stream>>>(n, a, (const T *)x, b, (T *)y, (const T *)q, (T *)r,
                                                          cs->d_partials, cs->d_ticket, cs->hd_results);
    else
        k_red<T, MODE, false><<<g, BLOCK, 0, cs->stream>>>(n, a, (const T *)x, b, (T *)y, (const T *)q, (T *)r,
                                                           cs->d_partials, cs->d_ticket, cs->hd_results);
    SAP_CUDA_LAUNCHED(ctx, "k_red");
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(cs->stream));
    *result = cs->h_results[0];
    ctx->stats.d2h_bytes += sizeof(double);
    ctx->stats.d2h_copies++;
    return SAP_OK;
}

template <int MODE>
static sap_status red(sap_context *ctx, sap_precision p, sap_int n, double a, const void *x, double b, void *y,
                      const void *q, void *r, double *result)
{
    if (n == 0) {
        *result = 0.0;
        return SAP_OK;
    }
    sap_status s = sap__cuda_enter(ctx);
    if (s != SAP_OK) return s;
    return p == SAP_DOUBLE ? run_red<double, MODE>(ctx, n, a, x, b, y, q, r, result)
                           : run_red<float, MODE>(ctx, n, a, x, b, y, q, r, result);
}

static sap_status vdot(sap_context *ctx, const sap_vec *x, const sap_vec *y, double *result)
{
    CHECK_VEC(x);
    CHECK_VEC(y);
    CHECK_PAIR(x, y);
    if (!result) return SAP_ERROR(ctx, SAP_ERR_INVALID, "result is NULL");
    return red<0>(ctx, x->prec, x->n, 0.0, x->data, 0.0, y->data, NULL, NULL, result);
}

static sap_status vnrm2(sap_context *ctx, const sap_vec *x, double *result)
{
    CHECK_VEC(x);
    if (!result) return SAP_ERROR(ctx, SAP_ERR_INVALID, "result is NULL");
    return red<1>(ctx, x->prec, x->n, 0.0, x->data, 0.0, NULL, NULL, NULL, result);
}

static sap_status vaxpby_nrm2(sap_context *ctx, double a, const sap_vec *x, double b, sap_vec *y, double *nrm)
{
    CHECK_VEC(x);
    CHECK_VEC(y);
    CHECK_PAIR(x, y);
    if (!nrm) return SAP_ERROR(ctx, SAP_ERR_INVALID, "result is NULL");
    return red<2>(ctx, x->prec, x->n, a, x->data, b, y->data, NULL, NULL, nrm);
}

static sap_status vcg_update(sap_context *ctx, double alpha, const sap_vec *p, const sap_vec *q, sap_vec *x,
                             sap_vec *r, double *rr)
{
    CHECK_VEC(p);
    CHECK_VEC(q);
    CHECK_VEC(x);
    CHECK_VEC(r);
    CHECK_PAIR(p, q);
    CHECK_PAIR(p, x);
    CHECK_PAIR(p, r);
    if (!rr) return SAP_ERROR(ctx, SAP_ERR_INVALID, "result is NULL");
    /* k_red MODE 3: y (here x) += a * x (here p); r -= a * q */
    return red<3>(ctx, p->prec, p->n, alpha, p->data, 0.0, x->data, q->data, r->data, rr);
}

static sap_status vmdot(sap_context *ctx, int k, const sap_vec *x, const sap_vec *y, double *r)
{
    CHECK_VEC(y);
    if (k < 0 || k > MAXK) return SAP_ERROR(ctx, SAP_ERR_INVALID, "mdot: k = %d outside 0..%d", k, MAXK);
    if (k > 0 && (!x || !r)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "mdot: NULL vectors or results");
    mdot_args args;
    memset(&args, 0, sizeof(args));
    for (int j = 0; j < k; j++) {
        CHECK_VEC(&x[j]);
        CHECK_PAIR(&x[j], y);
        args.x[j] = x[j].data;
    }
    if (k == 0) return SAP_OK;
    if (y->n == 0) {
        for (int j = 0; j < k; j++) r[j] = 0.0;
        return SAP_OK;
    }
    ENTER();
    sap_cuda_state *cs = sap__cuda_state(ctx);
    int g = sap__cuda_red_grid(y->n);
    if (k > 8 && g > SAP_CUDA_RED_GRID / 4) g = SAP_CUDA_RED_GRID / 4; /* bound the blocks in flight */
    dim3 grid((unsigned)g, (unsigned)((k + 7) / 8));
    if (y->prec == SAP_DOUBLE)
        k_mdot<double><<<grid, BLOCK, 0, cs->stream>>>(y->n, k, args, (const double *)y->data, cs->d_partials,
                                                       cs->d_ticket, cs->hd_results);
    else
        k_mdot<float><<<grid, BLOCK, 0, cs->stream>>>(y->n, k, args, (const float *)y->data, cs->d_partials,
                                                      cs->d_ticket, cs->hd_results);
    SAP_CUDA_LAUNCHED(ctx, "k_mdot");
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(cs->stream));
    for (int j = 0; j < k; j++) r[j] = cs->h_results[j];
    ctx->stats.d2h_bytes += (int64_t)k * (int64_t)sizeof(double);
    ctx->stats.d2h_copies++;
    return SAP_OK;
}

/* the checks of the block ops: k in 1..64, lengths divisible by k, one precision */
static sap_status check_cols(sap_context *ctx, const char *fn, int k, const sap_vec *X, const sap_vec *Y)
{
    if (k < 1 || k > MAXK) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: k = %d outside 1..%d", fn, k, MAXK);
    sap_status s = check_vec(ctx, X, "X");
    if (s == SAP_OK) s = check_vec(ctx, Y, "Y");
    if (s != SAP_OK) return s;
    if (X->prec != Y->prec) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: vector precisions differ", fn);
    if (X->n % k || Y->n % k)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: vector lengths %lld, %lld not divisible by k = %d", fn,
                         (long long)X->n, (long long)Y->n, k);
    return SAP_OK;
}

static sap_status vcaxpby(sap_context *ctx, int k, const double *a, const sap_vec *X, const double *b, sap_vec *Y)
{
    sap_status s = check_cols(ctx, "caxpby", k, X, Y);
    if (s != SAP_OK) return s;
    CHECK_PAIR(X, Y);
    if (!a || !b) return SAP_ERROR(ctx, SAP_ERR_INVALID, "caxpby: coefficients are NULL");
    const sap_int m = X->n / k;
    if (m == 0) return SAP_OK;
    ENTER();
    caxpby_args args;
    memset(&args, 0, sizeof(args));
    for (int c = 0; c < k; c++) {
        args.a[c] = a[c];
        args.b[c] = b[c];
    }
    unsigned gx = grid_for(m);
    const unsigned gmax = (unsigned)(65535LL * 16 / k); /* grid-stride loops cover the rest */
    if (gx > gmax) gx = gmax;
    dim3 grid(gx, (unsigned)k);
    if (X->prec == SAP_DOUBLE)
        k_caxpby<double><<<grid, BLOCK, 0, STREAM>>>(m, args, (const double *)X->data, (double *)Y->data);
    else k_caxpby<float><<<grid, BLOCK, 0, STREAM>>>(m, args, (const float *)X->data, (float *)Y->data);
    SAP_CUDA_LAUNCHED(ctx, "k_caxpby");
    return SAP_OK;
}

static sap_status vcaxpbypcz(sap_context *ctx, int k, const double *a, const sap_vec *X, const double *b,
                             const sap_vec *Y, const double *c, sap_vec *Z)
{
    sap_status s = check_cols(ctx, "caxpbypcz", k, X, Y);
    if (s == SAP_OK) s = check_cols(ctx, "caxpbypcz", k, Y, Z);
    if (s != SAP_OK) return s;
    CHECK_PAIR(X, Y);
    CHECK_PAIR(Y, Z);
    if (!a || !b || !c) return SAP_ERROR(ctx, SAP_ERR_INVALID, "caxpbypcz: coefficients are NULL");
    const sap_int m = X->n / k;
    if (m == 0) return SAP_OK;
    ENTER();
    caxpbypcz_args args;
    memset(&args, 0, sizeof(args));
    for (int q = 0; q < k; q++) {
        args.a[q] = a[q];
        args.b[q] = b[q];
        args.c[q] = c[q];
    }
    unsigned gx = grid_for(m);
    const unsigned gmax = (unsigned)(65535LL * 16 / k); /* grid-stride loops cover the rest */
    if (gx > gmax) gx = gmax;
    dim3 grid(gx, (unsigned)k);
    if (X->prec == SAP_DOUBLE)
        k_caxpbypcz<double><<<grid, BLOCK, 0, STREAM>>>(m, args, (const double *)X->data, (const double *)Y->data,
                                                        (double *)Z->data);
    else
        k_caxpbypcz<float><<<grid, BLOCK, 0, STREAM>>>(m, args, (const float *)X->data, (const float *)Y->data,
                                                       (float *)Z->data);
    SAP_CUDA_LAUNCHED(ctx, "k_caxpbypcz");
    return SAP_OK;
}

static sap_status vcdot(sap_context *ctx, int k, int nx, const sap_vec *X, const sap_vec *Y, double *r)
{
    if (nx < 1 || nx > 8) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cdot: nx = %d outside 1..8", nx);
    if (!X || !r) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cdot: NULL vectors or results");
    cdot_args args;
    memset(&args, 0, sizeof(args));
    for (int i = 0; i < nx; i++) {
        sap_status s = check_cols(ctx, "cdot", k, &X[i], Y);
        if (s != SAP_OK) return s;
        CHECK_PAIR(&X[i], Y);
        args.x[i] = X[i].data;
    }
    const sap_int m = Y->n / k;
    const int nout = k * nx;
    if (m == 0) {
        for (int q = 0; q < nout; q++) r[q] = 0.0;
        return SAP_OK;
    }
    ENTER();
    sap_cuda_state *cs = sap__cuda_state(ctx);
    /* dot's grid per column, bounded so that all blocks together stay near the reduction
     * grid and the partials (and, past the pinned results, the outputs) fit the scratch of
     * SAP_CUDA_MAX_RESULTS x SAP_CUDA_RED_GRID doubles */
    const int scratch = SAP_CUDA_MAX_RESULTS * SAP_CUDA_RED_GRID;
    const bool pinned = nout <= SAP_CUDA_MAX_RESULTS;
    int g = sap__cuda_red_grid(m);
    if (k > 1 && g * k > 4 * SAP_CUDA_RED_GRID) g = 4 * SAP_CUDA_RED_GRID / k;
    if (g * nout + (pinned ? 0 : nout) > scratch) g = (scratch - (pinned ? 0 : nout)) / nout;
    if (g < 1) g = 1;
    double *out = pinned ? cs->hd_results : cs->d_partials + (size_t)g * (size_t)nout;
    dim3 grid((unsigned)g, (unsigned)k);
    if (Y->prec == SAP_DOUBLE)
        k_cdot<double><<<grid, BLOCK, 0, cs->stream>>>(m, k, nx, args, (const double *)Y->data, cs->d_partials,
                                                       cs->d_ticket, out);
    else
        k_cdot<float><<<grid, BLOCK, 0, cs->stream>>>(m, k, nx, args, (const float *)Y->data, cs->d_partials,
                                                      cs->d_ticket, out);
    SAP_CUDA_LAUNCHED(ctx, "k_cdot");
    if (!pinned) return sap__cuda_d2h(ctx, r, out, (size_t)nout * sizeof(double));
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(cs->stream));
    for (int q = 0; q < nout; q++) r[q] = cs->h_results[q];
    ctx->stats.d2h_bytes += (int64_t)nout * (int64_t)sizeof(double);
    ctx->stats.d2h_copies++;
    return SAP_OK;
}

static sap_status vsynchronize(sap_context *ctx)
{
    ENTER();
    SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(STREAM));
    return SAP_OK;
}

/* ---- the table ------------------------------------------------------------------------- */

/* cuda_spmv.cu */
extern "C" {
sap_status sap__cuda_spmat_create(sap_context *ctx, const sap_csr *A, sap_spmv_format fmt, sap_precision prec,
                                  sap_spmat **M);
sap_status sap__cuda_spmat_update_values(sap_context *ctx, sap_spmat *M, const sap_csr *A);
void sap__cuda_spmat_destroy(sap_context *ctx, sap_spmat *M);
sap_status sap__cuda_spmv(sap_context *ctx, const sap_spmat *M, double alpha, const sap_vec *x, double beta,
                          sap_vec *y);
sap_status sap__cuda_spmat_band(const sap_spmat *M, const void **val, sap_int *kl, sap_int *w);
sap_status sap__cuda_spmm(sap_context *ctx, const sap_spmat *M, int k, const sap_vec *X, sap_vec *Y);
sap_status sap__cuda_spmat_create_dev(sap_context *ctx, const sap_csr *A, const sap_int *rowptr, const sap_int *colind,
                                      const double *val, sap_spmat **M);
sap_status sap__cuda_spmat_values_dev(sap_context *ctx, sap_spmat *M, const sap_csr *A, const double *val);
sap_status sap__cuda_csr_stats(sap_context *ctx, const sap_dev_csr *A, sap_dev_csr_check *chk, sap_matrix_stats *ms,
                               double *dinv);
}

/* The caller's device arrays (device.h): where a pointer lives, copies out of and within
 * device memory. */
static sap_status ptr_check(sap_context *ctx, const void *p, const char *what)
{
    ENTER();
    if (!what) what = "pointer";
    if (!p) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s is NULL", what);
    cudaPointerAttributes at;
    memset(&at, 0, sizeof(at));
    cudaError_t e = cudaPointerGetAttributes(&at, p);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s (%p) is not memory CUDA knows: %s", what, p, cudaGetErrorString(e));
    }
    if (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s (%p) is host memory; the device entry points take device pointers",
                         what, p);
    int cur = -1;
    SAP_CUDA_CHECK(ctx, cudaGetDevice(&cur));
    if (at.type == cudaMemoryTypeDevice && at.device != cur)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s (%p) is memory of device %d; the context uses device %d", what, p,
                         at.device, cur);
    return SAP_OK;
}

static sap_status mem_download(sap_context *ctx, void *host, const void *src, size_t bytes)
{
    ENTER();
    return sap__cuda_d2h(ctx, host, src, bytes);
}

static sap_status mem_copy(sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src) return SAP_OK;
    ENTER();
    SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, STREAM));
    return SAP_OK;
}

static sap_status mem_alloc(sap_context *ctx, size_t bytes, void **p) { return sap__cuda_malloc(ctx, bytes, p); }
static void mem_free(sap_context *ctx, void *p) { sap__cuda_free(ctx, p); }
static sap_status mem_upload(sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    return bytes ? sap__cuda_h2d(ctx, dst, src, bytes) : SAP_OK;
}

static sap_status host_alloc(sap_context *ctx, size_t bytes, void **p)
{
    *p = NULL;
    ENTER();
    cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        *p = NULL;
        (void)cudaGetLastError();
        return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "cudaHostAlloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    }
    return SAP_OK;
}

static void host_free(sap_context *ctx, void *p)
{
    (void)ctx;
    if (p) cudaFreeHost(p);
}

static sap_backend_ops make_ops()
{
    sap_backend_ops t;
    memset(&t, 0, sizeof(t));
    t.name = "cuda";
    t.vec_create = vec_create;
    t.vec_destroy = vec_destroy;
    t.vec_upload = vec_upload;
    t.vec_download = vec_download;
    t.copy = vcopy;
    t.set = vset;
    t.scale = vscale;
    t.axpby = vaxpby;
    t.axpbypcz = vaxpbypcz;
    t.pointwise_mult = vpointwise;
    t.maxpy = vmaxpy;
    t.dot = vdot;
    t.mdot = vmdot;
    t.nrm2 = vnrm2;
    t.axpby_nrm2 = vaxpby_nrm2;
    t.cg_update = vcg_update;
    t.caxpby = vcaxpby;
    t.caxpbypcz = vcaxpbypcz;
    t.cdot = vcdot;
    t.spmm = sap__cuda_spmm;
    t.spmat_create = sap__cuda_spmat_create;
    t.spmat_update_values = sap__cuda_spmat_update_values;
    t.spmat_destroy = sap__cuda_spmat_destroy;
    t.spmv = sap__cuda_spmv;
    t.synchronize = vsynchronize;
    t.spmat_band = sap__cuda_spmat_band;
    t.mem_alloc = mem_alloc;
    t.mem_free = mem_free;
    t.mem_upload = mem_upload;
    t.mem_info = sap__cuda_mem_info;
    t.units = sap__cuda_sm_count;
    t.band = sap__band_kernels_cuda();
    t.trsv = sap__trsv_kernels_cuda();
    t.direct = sap__direct_kernels_cuda();
    t.bjacobi = sap__bjacobi_kernels_cuda();
    t.dense = sap__dense_kernels_cuda();
    t.db_weights = sap__cuda_db_weights;
    t.scale_rows_cols = sap__cuda_scale_rows_cols;
    t.sym_graph = sap__cuda_sym_graph;
    t.block_relax = sap__cuda_block_relax;
    t.ptr_check = ptr_check;
    t.mem_download = mem_download;
    t.mem_copy = mem_copy;
    t.gather = vgather;
    t.spmat_create_dev = sap__cuda_spmat_create_dev;
    t.spmat_values_dev = sap__cuda_spmat_values_dev;
    t.csr_stats = sap__cuda_csr_stats;
    t.host_alloc = host_alloc;
    t.host_lend = sap__cuda_stage_lend;
    t.host_return = sap__cuda_stage_return;
    t.host_free = host_free;
    t.peer = sap__peer_ops_cuda();
    return t;
}

static const sap_backend_ops cuda_ops = make_ops();

extern "C" const sap_backend_ops *sap__backend_cuda_ops(void) { return &cuda_ops; }
