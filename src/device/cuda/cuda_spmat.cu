/* cuda_spmat.cu -- sparse matrices on the device: the CSR, ELL, SELL-P, HEC and BAND
 * formats (32-bit indices) built from a host CSR, new values, destruction.  The SpMV
 * kernels that read them are cuda_spmv.cu.  The formats:
 *
 *  CSR    row-length adaptive: groups of TPR = 1..32 threads per row (TPR from the mean
 *         row length); rows longer than a threshold are listed and get a block of 256
 *         threads each (load balance for very irregular rows).
 *  ELL    column-major with a leading dimension padded to 32 rows; one thread per row,
 *         or two rows per thread with 16-byte loads of values and 8-byte loads of indices.
 *  SELL-P slices of SAP_SELLP_SLICE = 32 rows, each column-major with its own width; a
 *         slice is 32 x TPR threads (TPR threads per row split the slice's columns and
 *         reduce through shared memory in a fixed order).
 *  HEC    an ELL part of width sap__hec_width() plus the rest of each row in CSR; the ELL
 *         kernel writes y, then a second kernel adds the remainders of the listed rows
 *         (a warp, or a block for very long remainders, per row).
 *
 * Every conversion from CSR runs on the device: the CSR is uploaded (32-bit indices,
 * values in the matrix' precision), row lengths, slice widths and remainder offsets are
 * computed by kernels and CUB scans, and fill kernels scatter the entries into the padded
 * layouts.  The device keeps the 32-bit row pointer of every format so that new values
 * (same pattern) are scattered by the same fill kernels.  No floating-point atomics: every
 * y entry is computed by one thread group in a fixed order, so SpMV is deterministic. */
#include "device/cuda/cuda_spmat.h"

#include <cusparse.h>

/* What spmm keeps between calls for a CSR matrix (cusparseSpMM): the sparse descriptor
 * (remade when the arrays it names change), the dense descriptors of the last X and Y
 * (their pointers reset when k is the same) and the work buffer (grown when a call needs
 * more).  It lives beside the matrix: every cuda_spmat is allocated as a cuda_spmat_mm
 * (create_impl), so the shared struct of cuda_spmat.h stays as it is. */
typedef struct spmm_cache {
    cusparseSpMatDescr_t a;
    const void *a_rp, *a_ci, *a_val;
    cusparseDnMatDescr_t x, y;
    int k;
    void *buf;
    size_t buf_bytes;
} spmm_cache;

typedef struct cuda_spmat_mm {
    cuda_spmat m; /* must be first */
    spmm_cache mm;
} cuda_spmat_mm;

static void spmm_cache_free(sap_context *ctx, spmm_cache *c)
{
    if (c->a) cusparseDestroySpMat(c->a);
    if (c->x) cusparseDestroyDnMat(c->x);
    if (c->y) cusparseDestroyDnMat(c->y);
    if (c->buf) sap__cuda_free(ctx, c->buf);
    memset(c, 0, sizeof(*c));
}

/* ---- small kernels for the conversions --------------------------------------------------- */

__global__ void k_row_len(int32_t n, const int32_t *__restrict__ rp, int32_t *__restrict__ len)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) len[i] = rp[i + 1] - rp[i];
}

/* SELL-P: entries of each slice (32 x its width rounded up to SAP_SELLP_PAD); out[ns] = 0 */
__global__ void k_slice_len(int32_t n, int32_t ns, const int32_t *__restrict__ rp, long long *__restrict__ out,
                            int32_t *__restrict__ width)
{
    int32_t s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s > ns) return;
    if (s == ns) {
        out[s] = 0;
        return;
    }
    int32_t r0 = s * SLICE, r1 = min(r0 + SLICE, n), w = 0;
    for (int32_t r = r0; r < r1; r++) w = max(w, rp[r + 1] - rp[r]);
    w = (w + SAP_SELLP_PAD - 1) / SAP_SELLP_PAD * SAP_SELLP_PAD;
    width[s] = w;
    out[s] = (long long)w * SLICE;
}

__global__ void k_ll_to_int(int32_t n, const long long *__restrict__ in, int32_t *__restrict__ out)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (int32_t)in[i];
}

/* the device-source build without a host copy: flags[i] = row i longer than thr (flags[n] = 0) */
__global__ void k_long_flags(int32_t n, int32_t thr, const int32_t *__restrict__ rp, int32_t *__restrict__ flags)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = rp[i + 1] - rp[i] > thr;
    else if (i == n) flags[i] = 0;
}

/* out[pos[i]] = i for the flagged rows (in row order) */
__global__ void k_long_list(int32_t n, const int32_t *__restrict__ flags, const int32_t *__restrict__ pos,
                            int32_t *__restrict__ out)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && flags[i]) out[pos[i]] = i;
}

/* the device-source build: the caller's sap_int indices in 32 bits */
__global__ void k_idx_to_int(int64_t n, const sap_int *__restrict__ in, int32_t *__restrict__ out)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = (int32_t)in[i];
}

/* HEC: remainder length of each row beyond width w, and flags for rows with a short
 * (<= long_thr) and a long remainder; the entries past n are 0 so that the scans give
 * the totals */
__global__ void k_rem_len(int32_t n, int32_t w, int32_t long_thr, const int32_t *__restrict__ rp,
                          int32_t *__restrict__ len, int32_t *__restrict__ fs, int32_t *__restrict__ fl)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > n) return;
    int32_t l = i < n ? rp[i + 1] - rp[i] - w : 0;
    len[i] = l > 0 ? l : 0;
    fs[i] = l > 0 && l <= long_thr ? 1 : 0;
    fl[i] = l > long_thr ? 1 : 0;
}

__global__ void k_list_rows(int32_t n, const int32_t *__restrict__ fs, const int32_t *__restrict__ ps,
                            int32_t *__restrict__ ls, const int32_t *__restrict__ fl, const int32_t *__restrict__ pl,
                            int32_t *__restrict__ ll)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (fs[i]) ls[ps[i]] = i;
    if (fl[i]) ll[pl[i]] = i;
}

/* Fills the padded layouts (COLS: indices and values; else values only).  Row i of a
 * padded layout: ELL slot (i, k) at i + k * ld for k < w; padding gets column
 * min(i, ncols - 1) and value 0.  Rows n..nrows_padded-1 are all padding. */
template <typename T, bool COLS>
__global__ void k_ell_fill(int32_t n, int32_t npad, int32_t ncols, int32_t w, int32_t ld,
                           const int32_t *__restrict__ rp, const int32_t *__restrict__ ci, const T *__restrict__ v,
                           int32_t *__restrict__ col, T *__restrict__ val)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= npad) return;
    int32_t b = 0, len = 0;
    if (i < n) {
        b = rp[i];
        len = rp[i + 1] - b;
    }
    int32_t padc = min(i, ncols - 1);
    for (int32_t k = 0; k < w; k++) {
        int32_t idx = i + k * ld;
        if (k < len) {
            if (COLS) col[idx] = ci[b + k];
            val[idx] = v[b + k];
        } else {
            if (COLS) col[idx] = padc;
            val[idx] = (T)0;
        }
    }
}

template <typename T, bool COLS>
__global__ void k_sell_fill(int32_t n, int32_t ns, int32_t ncols, const int32_t *__restrict__ sp,
                            const int32_t *__restrict__ rp, const int32_t *__restrict__ ci, const T *__restrict__ v,
                            int32_t *__restrict__ col, T *__restrict__ val)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ns * SLICE) return;
    int32_t s = i / SLICE, r = i % SLICE;
    int32_t base = sp[s], w = (sp[s + 1] - base) / SLICE;
    int32_t b = 0, len = 0;
    if (i < n) {
        b = rp[i];
        len = rp[i + 1] - b;
    }
    int32_t padc = min(i, ncols - 1);
    for (int32_t k = 0; k < w; k++) {
        int32_t idx = base + r + k * SLICE;
        if (k < len) {
            if (COLS) col[idx] = ci[b + k];
            val[idx] = v[b + k];
        } else {
            if (COLS) col[idx] = padc;
            val[idx] = (T)0;
        }
    }
}

/* HEC: the first w entries into the ELL part, the rest into the remainder CSR */
template <typename T, bool COLS>
__global__ void k_hec_fill(int32_t n, int32_t npad, int32_t ncols, int32_t w, int32_t ld,
                           const int32_t *__restrict__ rp, const int32_t *__restrict__ ci, const T *__restrict__ v,
                           int32_t *__restrict__ col, T *__restrict__ val, const int32_t *__restrict__ rrp,
                           int32_t *__restrict__ rcol, T *__restrict__ rval)
{
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= npad) return;
    int32_t b = 0, len = 0;
    if (i < n) {
        b = rp[i];
        len = rp[i + 1] - b;
    }
    int32_t padc = min(i, ncols - 1);
    for (int32_t k = 0; k < w; k++) {
        int32_t idx = i + k * ld;
        if (k < len) {
            if (COLS) col[idx] = ci[b + k];
            val[idx] = v[b + k];
        } else {
            if (COLS) col[idx] = padc;
            val[idx] = (T)0;
        }
    }
    if (len > w) {
        int32_t rb = rrp[i];
        for (int32_t k = w; k < len; k++) {
            if (COLS) rcol[rb + k - w] = ci[b + k];
            rval[rb + k - w] = v[b + k];
        }
    }
}


/* ---- host side ----------------------------------------------------------------------------- */


static sap_status dalloc(sap_context *ctx, void **p, size_t bytes, size_t *total)
{
    sap_status st = sap__cuda_malloc(ctx, bytes, p);
    if (st == SAP_OK && total) *total += bytes;
    return st;
}

static void dfree(sap_context *ctx, void *p)
{
    if (p) sap__cuda_free(ctx, p);
}

static void spmat_free_arrays(sap_context *ctx, cuda_spmat *m)
{
    void *ps[] = {m->rowptr,   m->colind,     m->val,     m->ell_col,  m->ell_val, m->slice_ptr, m->sell_col,
                  m->sell_val, m->rem_rowptr, m->rem_col, m->rem_rows, m->rem_long, m->rem_val, m->long_rows};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) dfree(ctx, ps[i]);
}

/* A CSR double matrix built from the caller's device arrays (sap__cuda_spmat_create_dev):
 * indices converted and values copied on the device, nothing of A uploaded. */
typedef struct cuda_dsrc {
    const sap_int *rowptr, *colind;
    const double *val;
} cuda_dsrc;

static sap_status dsrc_index(sap_context *ctx, const sap_int *in, int32_t *out, int64_t n)
{
    if (n <= 0) return SAP_OK;
    k_idx_to_int<<<nblocks(n), BLOCK, 0, STREAM>>>(n, in, out);
    SAP_CUDA_LAUNCHED(ctx, "k_idx_to_int");
    return SAP_OK;
}

static sap_status dsrc_values(sap_context *ctx, const double *in, void *out, int64_t n)
{
    if (n <= 0) return SAP_OK;
    SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(out, in, (size_t)n * sizeof(double), cudaMemcpyDeviceToDevice, STREAM));
    return SAP_OK;
}

/* The CSR's column indices (32-bit) and values (in the matrix' precision) stream to the
 * device through the context's pinned staging ring, each chunk converted on all host cores
 * while the one before is copied (sap__cuda_h2d_streamed).  From pageable memory in one
 * copy, with the conversion on one core before it, an 80M-entry CSR took 0.40 s on an H200
 * host (1.0 GB at ~8 GB/s, plus the conversion). */
typedef struct upload_arg {
    sap_context *ctx;
    const sap_csr *A;
    sap_precision prec;
    int64_t base; /* the first entry of this streamed segment */
    int64_t bad;  /* the first column index outside the matrix (-1: none) */
} upload_arg;

static void colind_chunk(void *arg, int64_t k0, int64_t k1, void *buf)
{
    upload_arg *u = (upload_arg *)arg;
    const int64_t b =
        sap__conv_colind32(u->ctx, u->A->colind, u->A->ncols, u->base + k0, u->base + k1, (int32_t *)buf);
    if (b >= 0 && u->bad < 0) u->bad = b;
}

static void values_chunk(void *arg, int64_t k0, int64_t k1, void *buf)
{
    const upload_arg *u = (const upload_arg *)arg;
    sap__conv_values(u->ctx, u->A->val, u->prec, u->base + k0, u->base + k1, buf);
}

/* the nnz entries streamed in segments whose byte length stays below 2^31 (the streamed
 * upload is a 2D copy whose pitch is the segment: the devices' maximum pitch) */
static sap_status upload_entries(sap_context *ctx, upload_arg *u, void *dst, size_t es, sap_cuda_fill_fn fill)
{
    const int64_t nnz = u->A->nnz, seg = (int64_t)(INT32_MAX / es);
    for (int64_t k0 = 0; k0 < nnz; k0 += seg) {
        const int64_t m = nnz - k0 < seg ? nnz - k0 : seg;
        u->base = k0;
        sap_status st = sap__cuda_h2d_streamed(ctx, (char *)dst + (size_t)k0 * es, m, m, 1, es, fill, u, NULL);
        if (st < 0) return st;
    }
    return SAP_OK;
}

static sap_status upload_colind(sap_context *ctx, const sap_csr *A, int32_t *dst)
{
    upload_arg u = {ctx, A, SAP_DOUBLE, 0, -1};
    sap_status st = upload_entries(ctx, &u, dst, sizeof(int32_t), colind_chunk);
    if (st < 0) return st;
    if (u.bad >= 0)
        return SAP_ERROR(ctx, SAP_ERR_INDEX, "column index %lld at position %lld outside 0..%lld",
                         (long long)A->colind[u.bad], (long long)u.bad, (long long)A->ncols - 1);
    return SAP_OK;
}

/* Uploads the values of A in the matrix' precision into a device buffer. */
static sap_status upload_values(sap_context *ctx, const sap_csr *A, sap_precision prec, void *dst)
{
    upload_arg u = {ctx, A, prec, 0, -1};
    return upload_entries(ctx, &u, dst, prec == SAP_DOUBLE ? sizeof(double) : sizeof(float), values_chunk);
}

/* CUB helpers (temporary storage from the pool) */
template <typename TI, typename TO>
static sap_status dev_exclusive_sum(sap_context *ctx, const TI *in, TO *out, int32_t n)
{
    size_t tb = 0;
    SAP_CUDA_CHECK(ctx, cub::DeviceScan::ExclusiveSum(NULL, tb, in, out, n, STREAM));
    void *tmp = NULL;
    sap_status st = sap__cuda_malloc(ctx, tb ? tb : 1, &tmp);
    if (st != SAP_OK) return st;
    cudaError_t e = cub::DeviceScan::ExclusiveSum(tmp, tb, in, out, n, STREAM);
    sap__cuda_free(ctx, tmp);
    if (e != cudaSuccess) return sap__cuda_error(ctx, e, "cub::DeviceScan::ExclusiveSum", __FILE__, __LINE__);
    return SAP_OK;
}

static sap_status dev_max(sap_context *ctx, const int32_t *in, int32_t n, int32_t *result)
{
    *result = 0;
    if (n <= 0) return SAP_OK;
    size_t tb = 0;
    int32_t *d_out = NULL;
    SAP_CUDA_CHECK(ctx, cub::DeviceReduce::Max(NULL, tb, in, d_out, n, STREAM));
    void *tmp = NULL;
    const size_t off = (tb + 255) / 256 * 256;
    sap_status st = sap__cuda_malloc(ctx, off + 256, &tmp);
    if (st != SAP_OK) return st;
    d_out = (int32_t *)((char *)tmp + off);
    cudaError_t e = cub::DeviceReduce::Max(tmp, tb, in, d_out, n, STREAM);
    if (e != cudaSuccess) {
        sap__cuda_free(ctx, tmp);
        return sap__cuda_error(ctx, e, "cub::DeviceReduce::Max", __FILE__, __LINE__);
    }
    st = sap__cuda_d2h(ctx, result, d_out, sizeof(int32_t));
    sap__cuda_free(ctx, tmp);
    return st;
}

static int choose_csr_tpr(double mean)
{
    int tpr = 1;
    while (tpr < 32 && tpr * 1.5 < mean) tpr *= 2;
    return tpr;
}

/* SELL-P threads per row: enough threads in flight to fill the GPU (n * TPR >= 128k;
 * bench/spmv: 14k-60k-row matrices run 1.3-1.6x faster with 4-8 threads per row than
 * with 1, the 1.5M and 4M-row ones fastest with 1) and more for wide slices, never more
 * than the mean slice width. */
static int choose_sell_tpr(double mean_width, int32_t n)
{
    int tpr = 1;
    while (tpr < 8 && (double)n * tpr < 131072.0) tpr *= 2;
    int wide = mean_width <= 24 ? 1 : mean_width <= 48 ? 2 : mean_width <= 96 ? 4 : 8;
    if (wide > tpr) tpr = wide;
    while (tpr > 1 && tpr > mean_width) tpr /= 2;
    return tpr;
}

template <typename T>
static sap_status build(sap_context *ctx, const sap_csr *A, cuda_spmat *m, bool update, const cuda_dsrc *ds = NULL)
{
    sap_status st = SAP_OK;
    const int32_t n = (int32_t)A->nrows, ncols = (int32_t)A->ncols;
    const int32_t nnz = (int32_t)A->nnz;
    const sap_spmv_format fmt = m->pub.format;
    size_t total = 0;
    int32_t *h_rp = NULL, *d_ci = NULL, *d_tmp = NULL, *d_tmp2 = NULL;
    T *d_v = NULL;
    long long *d_ll = NULL;
    int32_t *h_long = NULL;

    if (!update && ds && !A->rowptr) {
        /* no host copy (a shape): the row statistics on the device */
        SAP_TRY(dalloc(ctx, (void **)&m->rowptr, ((size_t)n + 1) * sizeof(int32_t), &total));
        SAP_TRY(dsrc_index(ctx, ds->rowptr, m->rowptr, (int64_t)n + 1));
        SAP_TRY(sap__cuda_malloc(ctx, ((size_t)n + 1) * 2 * sizeof(int32_t), (void **)&d_tmp));
        if (n > 0) {
            k_row_len<<<nblocks(n), BLOCK, 0, STREAM>>>(n, m->rowptr, d_tmp);
            SAP_CUDA_TRY_LAUNCH(ctx, "k_row_len");
        }
        SAP_TRY(dev_max(ctx, d_tmp, n, &m->max_row));
        sap__cuda_free(ctx, d_tmp);
        d_tmp = NULL;
    } else if (!update) {
        /* row pointer and column indices in 32 bits, uploaded; row statistics on the way */
        SAP_CUDA_HOST_ALLOC(ctx, h_rp, (size_t)n + 1);
        int32_t maxlen = 0;
        for (int32_t i = 0; i <= n; i++) h_rp[i] = (int32_t)A->rowptr[i];
        for (int32_t i = 0; i < n; i++) maxlen = h_rp[i + 1] - h_rp[i] > maxlen ? h_rp[i + 1] - h_rp[i] : maxlen;
        m->max_row = maxlen;
        SAP_TRY(dalloc(ctx, (void **)&m->rowptr, ((size_t)n + 1) * sizeof(int32_t), &total));
        if (ds) SAP_TRY(dsrc_index(ctx, ds->rowptr, m->rowptr, (int64_t)n + 1));
        else SAP_TRY(sap__cuda_h2d(ctx, m->rowptr, h_rp, ((size_t)n + 1) * sizeof(int32_t)));
    }
    /* values (CSR order) */
    if (fmt == SAP_FORMAT_CSR) {
        if (!update) SAP_TRY(dalloc(ctx, &m->val, (size_t)nnz * sizeof(T), &total));
        if (ds) SAP_TRY(dsrc_values(ctx, ds->val, m->val, nnz));
        else SAP_TRY(upload_values(ctx, A, m->pub.prec, m->val));
    } else {
        SAP_TRY(sap__cuda_malloc(ctx, (size_t)nnz * sizeof(T), (void **)&d_v));
        SAP_TRY(upload_values(ctx, A, m->pub.prec, d_v));
    }

    if (fmt == SAP_FORMAT_CSR) {
        if (!update) {
            SAP_TRY(dalloc(ctx, (void **)&m->colind, (size_t)nnz * sizeof(int32_t), &total));
            if (ds) SAP_TRY(dsrc_index(ctx, ds->colind, m->colind, nnz));
            else SAP_TRY(upload_colind(ctx, A, m->colind));
            double mean = n > 0 ? (double)nnz / n : 0.0;
            m->v.csr_tpr = choose_csr_tpr(mean);
            m->fmt_bytes = (4.0 + sizeof(T)) * nnz + 4.0 * ((double)n + 1);
            int32_t thr = 32 * m->v.csr_tpr;
            if (thr < 256) thr = 256;
            m->long_thr = 0;
            m->v.csr_nlong = 0;
            if (m->max_row > thr && !h_rp) { /* no host copy: the list by a scan on the device */
                const int32_t np1 = n + 1;
                int32_t cnt = 0;
                SAP_TRY(sap__cuda_malloc(ctx, 2 * (size_t)np1 * sizeof(int32_t), (void **)&d_tmp));
                k_long_flags<<<nblocks(np1), BLOCK, 0, STREAM>>>(n, thr, m->rowptr, d_tmp);
                SAP_CUDA_TRY_LAUNCH(ctx, "k_long_flags");
                SAP_TRY(dev_exclusive_sum(ctx, d_tmp, d_tmp + np1, np1));
                SAP_TRY(sap__cuda_d2h(ctx, &cnt, d_tmp + np1 + n, sizeof(int32_t)));
                SAP_TRY(dalloc(ctx, (void **)&m->long_rows, (size_t)cnt * sizeof(int32_t), &total));
                if (n > 0 && cnt > 0) {
                    k_long_list<<<nblocks(n), BLOCK, 0, STREAM>>>(n, d_tmp, d_tmp + np1, m->long_rows);
                    SAP_CUDA_TRY_LAUNCH(ctx, "k_long_list");
                }
                SAP_CUDA_TRY(ctx, cudaStreamSynchronize(STREAM));
                sap__cuda_free(ctx, d_tmp);
                d_tmp = NULL;
                m->long_thr = thr;
                m->v.csr_nlong = cnt;
            } else if (m->max_row > thr) {
                int32_t cnt = 0;
                for (int32_t i = 0; i < n; i++) cnt += h_rp[i + 1] - h_rp[i] > thr;
                SAP_CUDA_HOST_ALLOC(ctx, h_long, cnt);
                cnt = 0;
                for (int32_t i = 0; i < n; i++)
                    if (h_rp[i + 1] - h_rp[i] > thr) h_long[cnt++] = i;
                SAP_TRY(dalloc(ctx, (void **)&m->long_rows, (size_t)cnt * sizeof(int32_t), &total));
                SAP_TRY(sap__cuda_h2d(ctx, m->long_rows, h_long, (size_t)cnt * sizeof(int32_t)));
                m->long_thr = thr;
                m->v.csr_nlong = cnt;
            }
        }
        goto done;
    }

    if (!update) {
        SAP_TRY(sap__cuda_malloc(ctx, (size_t)nnz * sizeof(int32_t), (void **)&d_ci));
        if (ds) SAP_TRY(dsrc_index(ctx, ds->colind, d_ci, nnz));
        else SAP_TRY(upload_colind(ctx, A, d_ci));
    }

    if (fmt == SAP_FORMAT_ELL || fmt == SAP_FORMAT_HEC) {
        const int32_t ld = (int32_t)(((int64_t)n + ELL_ALIGN - 1) / ELL_ALIGN * ELL_ALIGN);
        if (!update) {
            int32_t w = 0;
            if (fmt == SAP_FORMAT_ELL) {
                /* width = the longest row, by a device reduction over the row lengths */
                SAP_TRY(sap__cuda_malloc(ctx, (size_t)n * sizeof(int32_t), (void **)&d_tmp));
                if (n > 0) {
                    k_row_len<<<nblocks(n), BLOCK, 0, STREAM>>>(n, m->rowptr, d_tmp);
                    SAP_CUDA_TRY_LAUNCH(ctx, "k_row_len");
                }
                SAP_TRY(dev_max(ctx, d_tmp, n, &w));
                sap__cuda_free(ctx, d_tmp);
                d_tmp = NULL;
            } else {
                w = (int32_t)sap__hec_width(A->rowptr, A->nrows);
                if (w < 0) w = 0;
                if (w > m->max_row) w = m->max_row;
            }
            if ((int64_t)ld * w > INT32_MAX)
                SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "ELL part of %d x %d entries exceeds 32-bit indexing", ld, w);
            m->v.ell_width = w;
            m->v.ell_ld = ld;
            m->pub.ell_width = w;
            m->fmt_bytes = (4.0 + sizeof(T)) * (double)n * w;
            SAP_TRY(dalloc(ctx, (void **)&m->ell_col, (size_t)ld * w * sizeof(int32_t), &total));
            SAP_TRY(dalloc(ctx, &m->ell_val, (size_t)ld * w * sizeof(T), &total));
            if (fmt == SAP_FORMAT_HEC) {
                /* remainder offsets and the lists of rows with a short and with a long
                 * remainder, by scans: t = [len | short flags | long flags | long positions] */
                const int32_t np1 = n + 1;
                SAP_TRY(sap__cuda_malloc(ctx, 4 * (size_t)np1 * sizeof(int32_t), (void **)&d_tmp));
                int32_t *t_len = d_tmp, *t_fs = d_tmp + np1, *t_fl = d_tmp + 2 * (size_t)np1, *t_pl = d_tmp + 3 * (size_t)np1;
                SAP_TRY(dalloc(ctx, (void **)&m->rem_rowptr, (size_t)np1 * sizeof(int32_t), &total));
                k_rem_len<<<nblocks(np1), BLOCK, 0, STREAM>>>(n, w, REM_LONG, m->rowptr, t_len, t_fs, t_fl);
                SAP_CUDA_TRY_LAUNCH(ctx, "k_rem_len");
                SAP_TRY(dev_exclusive_sum(ctx, t_len, m->rem_rowptr, np1));
                /* t_len is free again: it takes the short positions */
                SAP_TRY(dev_exclusive_sum(ctx, t_fs, t_len, np1));
                SAP_TRY(dev_exclusive_sum(ctx, t_fl, t_pl, np1));
                int32_t rem_nnz = 0, nshort = 0, nlong = 0;
                SAP_TRY(sap__cuda_d2h(ctx, &rem_nnz, m->rem_rowptr + n, sizeof(int32_t)));
                SAP_TRY(sap__cuda_d2h(ctx, &nshort, t_len + n, sizeof(int32_t)));
                SAP_TRY(sap__cuda_d2h(ctx, &nlong, t_pl + n, sizeof(int32_t)));
                SAP_TRY(dalloc(ctx, (void **)&m->rem_rows, (size_t)nshort * sizeof(int32_t), &total));
                SAP_TRY(dalloc(ctx, (void **)&m->rem_long, (size_t)nlong * sizeof(int32_t), &total));
                if (n > 0) {
                    k_list_rows<<<nblocks(n), BLOCK, 0, STREAM>>>(n, t_fs, t_len, m->rem_rows, t_fl, t_pl, m->rem_long);
                    SAP_CUDA_TRY_LAUNCH(ctx, "k_list_rows");
                }
                SAP_CUDA_TRY(ctx, cudaStreamSynchronize(STREAM));
                sap__cuda_free(ctx, d_tmp);
                d_tmp = NULL;
                SAP_TRY(dalloc(ctx, (void **)&m->rem_col, (size_t)rem_nnz * sizeof(int32_t), &total));
                SAP_TRY(dalloc(ctx, &m->rem_val, (size_t)rem_nnz * sizeof(T), &total));
                const int32_t nrem = nshort + nlong;
                m->v.rem_nrows = nrem;
                m->v.rem_nlong = nlong;
                m->rem_nshort = nshort;
                m->rem_nlong = nlong;
                m->rem_max = m->max_row - w;
                /* threads per short remainder row from their mean length (approximated by
                 * all remainders when there are long ones) */
                double mean_rem = nrem > 0 ? (double)rem_nnz / nrem : 0.0;
                m->rem_tpr = choose_csr_tpr(mean_rem < REM_LONG ? mean_rem : REM_LONG);
                /* remainder: list, two row pointers, entries, and y read again for its rows */
                m->fmt_bytes += (double)nrem * (4.0 + 8.0 + 2.0 * sizeof(T)) + (4.0 + sizeof(T)) * rem_nnz;
            }
        }
        const int32_t w = m->v.ell_width;
        if (ld > 0) {
            if (fmt == SAP_FORMAT_ELL) {
                if (update)
                    k_ell_fill<T, false><<<nblocks(ld), BLOCK, 0, STREAM>>>(n, ld, ncols, w, ld, m->rowptr, NULL, d_v,
                                                                           NULL, (T *)m->ell_val);
                else
                    k_ell_fill<T, true><<<nblocks(ld), BLOCK, 0, STREAM>>>(n, ld, ncols, w, ld, m->rowptr, d_ci, d_v,
                                                                          m->ell_col, (T *)m->ell_val);
            } else {
                if (update)
                    k_hec_fill<T, false><<<nblocks(ld), BLOCK, 0, STREAM>>>(n, ld, ncols, w, ld, m->rowptr, NULL, d_v,
                                                                           NULL, (T *)m->ell_val, m->rem_rowptr,
                                                                           NULL, (T *)m->rem_val);
                else
                    k_hec_fill<T, true><<<nblocks(ld), BLOCK, 0, STREAM>>>(n, ld, ncols, w, ld, m->rowptr, d_ci, d_v,
                                                                          m->ell_col, (T *)m->ell_val, m->rem_rowptr,
                                                                          m->rem_col, (T *)m->rem_val);
            }
            SAP_CUDA_TRY_LAUNCH(ctx, "k_ell_fill");
        }
    } else if (fmt == SAP_FORMAT_SELLP) {
        const int32_t ns = (int32_t)(((int64_t)n + SLICE - 1) / SLICE);
        if (!update) {
            /* slice widths, then offsets by a scan (64-bit: the total is checked) */
            SAP_TRY(sap__cuda_malloc(ctx, ((size_t)ns + 1) * sizeof(long long), (void **)&d_ll));
            SAP_TRY(sap__cuda_malloc(ctx, ((size_t)ns + 1) * sizeof(long long), (void **)&d_tmp2)); /* offsets */
            SAP_TRY(sap__cuda_malloc(ctx, ((size_t)ns + 1) * sizeof(int32_t), (void **)&d_tmp));    /* widths */
            k_slice_len<<<nblocks((int64_t)ns + 1), BLOCK, 0, STREAM>>>(n, ns, m->rowptr, d_ll, d_tmp);
            SAP_CUDA_TRY_LAUNCH(ctx, "k_slice_len");
            SAP_TRY(dev_exclusive_sum(ctx, d_ll, (long long *)d_tmp2, ns + 1));
            long long slots = 0;
            SAP_TRY(sap__cuda_d2h(ctx, &slots, (long long *)d_tmp2 + ns, sizeof(long long)));
            if (slots > INT32_MAX)
                SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "SELL-P layout of %lld entries exceeds 32-bit indexing", slots);
            int32_t wmax = 0;
            SAP_TRY(dev_max(ctx, d_tmp, ns, &wmax));
            SAP_TRY(dalloc(ctx, (void **)&m->slice_ptr, ((size_t)ns + 1) * sizeof(int32_t), &total));
            k_ll_to_int<<<nblocks((int64_t)ns + 1), BLOCK, 0, STREAM>>>(ns + 1, (const long long *)d_tmp2, m->slice_ptr);
            SAP_CUDA_TRY_LAUNCH(ctx, "k_ll_to_int");
            sap__cuda_free(ctx, d_ll);
            sap__cuda_free(ctx, d_tmp);
            sap__cuda_free(ctx, d_tmp2);
            d_ll = NULL;
            d_tmp = d_tmp2 = NULL;
            SAP_TRY(dalloc(ctx, (void **)&m->sell_col, (size_t)slots * sizeof(int32_t), &total));
            SAP_TRY(dalloc(ctx, &m->sell_val, (size_t)slots * sizeof(T), &total));
            m->v.nslices = ns;
            m->pub.ell_width = wmax;
            double mean_w = ns > 0 ? (double)slots / ((double)ns * SLICE) : 0.0;
            m->sell_tpr = choose_sell_tpr(mean_w, n);
            m->fmt_bytes = (4.0 + sizeof(T)) * (double)slots + 4.0 * ((double)ns + 1);
        }
        if (ns > 0) {
            if (update)
                k_sell_fill<T, false><<<nblocks((int64_t)ns * SLICE), BLOCK, 0, STREAM>>>(
                    n, ns, ncols, m->slice_ptr, m->rowptr, NULL, d_v, NULL, (T *)m->sell_val);
            else
                k_sell_fill<T, true><<<nblocks((int64_t)ns * SLICE), BLOCK, 0, STREAM>>>(
                    n, ns, ncols, m->slice_ptr, m->rowptr, d_ci, d_v, m->sell_col, (T *)m->sell_val);
            SAP_CUDA_TRY_LAUNCH(ctx, "k_sell_fill");
        }
    }
    /* the temporaries go back to the pool only after the fill kernels ran */
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize(STREAM));

done:
    if (!update) m->v.device_bytes = total;
cleanup:
    if (d_v) sap__cuda_free(ctx, d_v);
    if (d_ci) sap__cuda_free(ctx, d_ci);
    if (d_tmp) sap__cuda_free(ctx, d_tmp);
    if (d_tmp2) sap__cuda_free(ctx, d_tmp2);
    if (d_ll) sap__cuda_free(ctx, d_ll);
    sap__free(ctx, h_rp);
    sap__free(ctx, h_long);
    return st;
}

static void fill_view(cuda_spmat *m)
{
    sap_cuda_spmat_view *v = &m->v;
    v->format = m->pub.format;
    v->prec = m->pub.prec;
    v->nrows = (int32_t)m->pub.nrows;
    v->ncols = (int32_t)m->pub.ncols;
    v->nnz = m->pub.nnz;
    v->rowptr = m->rowptr;
    v->colind = m->colind;
    v->val = m->val;
    v->ell_col = m->ell_col;
    v->ell_val = m->ell_val;
    v->slice_ptr = m->slice_ptr;
    v->sell_col = m->sell_col;
    v->sell_val = m->sell_val;
    v->rem_rowptr = m->rem_rowptr;
    v->rem_col = m->rem_col;
    v->rem_val = m->rem_val;
    v->rem_rows = m->rem_rows;
    v->rem_long = m->rem_long;
}

/* BAND: the band is filled on the host (in parallel, in the matrix' precision) chunk by
 * chunk of rows into the context's pinned staging ring and streamed to the device, the
 * fill of a chunk overlapping the copy of the one before (sap__cuda_h2d_streamed); an
 * update rewrites it the same way. */
typedef struct band_fill_arg {
    sap_context *ctx;
    const sap_csr *A;
    sap_int kl, ku;
    sap_precision prec;
} band_fill_arg;

static void band_fill_chunk(void *arg, int64_t r0, int64_t r1, void *buf)
{
    const band_fill_arg *f = (const band_fill_arg *)arg;
    sap__band_fill_rows(f->ctx, f->A, f->kl, f->ku, f->prec, (sap_int)r0, (sap_int)r1, r1 - r0, buf);
}

template <typename T> static sap_status build_band(sap_context *ctx, const sap_csr *A, cuda_spmat *m, bool update)
{
    sap_status st = SAP_OK;
    sap_int kl = 0, ku = 0;
    int64_t slots = 0;
    band_fill_arg fa;
    double t_fill = 0, t1 = 0;
    const double t0 = sap__wtime();
    SAP_TRY(sap__band_dims(ctx, A, &kl, &ku, &slots));
    t1 = sap__wtime();
    if (update && (kl != m->band_kl || kl + ku + 1 != m->band_w))
        SAP_FAIL(ctx, SAP_ERR_INVALID, "update_values: the band changed");
    if ((int64_t)(kl + ku + 1) >= INT32_MAX) SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "band format: too many diagonals");
    if (!update) {
        size_t total = 0;
        SAP_TRY(dalloc(ctx, &m->val, (size_t)(slots > 0 ? slots : 1) * sizeof(T), &total));
        m->band_kl = (int32_t)kl;
        m->band_w = (int32_t)(kl + ku + 1);
        m->fmt_bytes = (double)slots * sizeof(T);
        m->pub.ell_width = m->band_w;
        m->v.device_bytes = total;
    }
    fa.ctx = ctx;
    fa.A = A;
    fa.kl = kl;
    fa.ku = ku;
    fa.prec = sizeof(T) == sizeof(double) ? SAP_DOUBLE : SAP_FLOAT;
    SAP_TRY(sap__cuda_h2d_streamed(ctx, m->val, A->nrows, A->nrows, kl + ku + 1, sizeof(T), band_fill_chunk, &fa,
                                   &t_fill));
    sap__log(ctx, SAP_PRINT_INFO, "sap: band upload %.3g ms (%.3g GB): dims %.3g, fill %.3g, the rest copies",
             1e3 * (sap__wtime() - t0), (double)slots * sizeof(T) / 1e9, 1e3 * (t1 - t0), 1e3 * t_fill);
cleanup:
    return st;
}

static sap_status create_impl(sap_context *ctx, const sap_csr *A, sap_spmv_format fmt, sap_precision prec,
                              const cuda_dsrc *ds, sap_spmat **out)
{
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output matrix pointer is NULL");
    *out = NULL;
    /* with device arrays (ds) A may be a shape without host arrays (rowptr NULL) */
    const bool shape = ds && A && !A->rowptr;
    if (!A || A->nrows < 0 || A->ncols < 0 || A->nnz < 0 ||
        (!shape && (!A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "invalid CSR matrix");
    if (prec != SAP_DOUBLE && prec != SAP_FLOAT) return SAP_ERROR(ctx, SAP_ERR_INVALID, "invalid precision");
    if (fmt < SAP_FORMAT_AUTO || fmt > SAP_FORMAT_BAND) return SAP_ERROR(ctx, SAP_ERR_INVALID, "invalid SpMV format");
    if (A->nrows >= INT32_MAX - 64 || A->ncols >= INT32_MAX || A->nnz > INT32_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                         "matrix %lld x %lld with %lld entries does not fit the 32-bit device indices",
                         (long long)A->nrows, (long long)A->ncols, (long long)A->nnz);
    if (!shape && (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "CSR row pointer does not run from 0 to nnz");
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    const char *reason = ds ? "CSR from the caller's device arrays" : "requested";
    if (fmt == SAP_FORMAT_AUTO) fmt = sap__spmv_auto_format(A, SAP_BACKEND_CUDA, &reason);
    cuda_spmat *m = (cuda_spmat *)sap__alloc(ctx, 1, sizeof(cuda_spmat_mm), true, __FILE__, __LINE__);
    if (!m) return SAP_ERR_OUT_OF_MEMORY;
    m->pub.nrows = A->nrows;
    m->pub.ncols = A->ncols;
    m->pub.nnz = A->nnz;
    m->pub.format = fmt;
    m->pub.prec = prec;
    m->pub.reason = reason;
    m->pub.impl = m;
    m->ell_rpt = 1;
    m->sell_tpr = 1;
    m->rem_tpr = 32;
    if (fmt == SAP_FORMAT_BAND)
        st = prec == SAP_DOUBLE ? build_band<double>(ctx, A, m, false) : build_band<float>(ctx, A, m, false);
    else st = prec == SAP_DOUBLE ? build<double>(ctx, A, m, false, ds) : build<float>(ctx, A, m, false);
    if (st == SAP_OK && ds) { /* the caller's arrays are read before the call returns */
        cudaError_t e = cudaStreamSynchronize(STREAM);
        if (e != cudaSuccess) st = sap__cuda_error(ctx, e, "spmat_create_dev", __FILE__, __LINE__);
    }
    if (st < 0) {
        cudaStreamSynchronize(STREAM);
        spmat_free_arrays(ctx, m);
        sap__free(ctx, m);
        return st;
    }
    if (fmt == SAP_FORMAT_CSR) m->pub.ell_width = 0;
    fill_view(m);
    *out = &m->pub;
    return SAP_OK;
}

extern "C" sap_status sap__cuda_spmat_create(sap_context *ctx, const sap_csr *A, sap_spmv_format fmt,
                                             sap_precision prec, sap_spmat **out)
{
    return create_impl(ctx, A, fmt, prec, NULL, out);
}

extern "C" sap_status sap__cuda_spmat_create_dev(sap_context *ctx, const sap_csr *A, const sap_int *rowptr,
                                                 const sap_int *colind, const double *val, sap_spmat **out)
{
    if (!rowptr || (A && A->nnz > 0 && (!colind || !val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmat_create_dev: NULL device array");
    const cuda_dsrc ds = {rowptr, colind, val};
    return create_impl(ctx, A, SAP_FORMAT_CSR, SAP_DOUBLE, &ds, out);
}

extern "C" sap_status sap__cuda_spmat_values_dev(sap_context *ctx, sap_spmat *M, const sap_csr *A, const double *val)
{
    if (!M || !M->impl || !A || (A->nnz > 0 && !val)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmat_values_dev: NULL");
    if (M->format != SAP_FORMAT_CSR || M->prec != SAP_DOUBLE || A->nnz != M->nnz)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmat_values_dev: needs the CSR double matrix of this pattern");
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    return dsrc_values(ctx, val, ((cuda_spmat *)M->impl)->val, M->nnz);
}

extern "C" sap_status sap__cuda_spmat_update_values(sap_context *ctx, sap_spmat *M, const sap_csr *A)
{
    if (!M || !M->impl || !A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "NULL matrix");
    if (A->nrows != M->nrows || A->ncols != M->ncols || A->nnz != M->nnz || (A->nnz > 0 && !A->val))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "update_values: the matrix must keep its size and pattern");
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    cuda_spmat *m = (cuda_spmat *)M->impl;
    if (M->format == SAP_FORMAT_BAND)
        return M->prec == SAP_DOUBLE ? build_band<double>(ctx, A, m, true) : build_band<float>(ctx, A, m, true);
    return M->prec == SAP_DOUBLE ? build<double>(ctx, A, m, true) : build<float>(ctx, A, m, true);
}

extern "C" void sap__cuda_spmat_destroy(sap_context *ctx, sap_spmat *M)
{
    if (!M || !M->impl) return;
    cuda_spmat *m = (cuda_spmat *)M->impl;
    spmm_cache_free(ctx, &((cuda_spmat_mm *)m)->mm);
    spmat_free_arrays(ctx, m);
    sap__free(ctx, m);
}

/* ---- spmm: Y_c = A X_c for k columns -------------------------------------------------------- */

extern "C" sap_status sap__cuda_spmv(sap_context *ctx, const sap_spmat *M, double alpha, const sap_vec *x, double beta,
                                     sap_vec *y);

/* BAND, every matrix value read once for all columns: a block takes 32 rows; the values of
 * BAND_MM_TILE diagonals of those rows are staged in shared memory (coalesced), then the
 * 32 x 8 threads give each row 8 column groups (columns c = threadIdx.y + 8 j), each
 * summing its diagonals in order (double accumulation, as SpMV). */
#define BAND_MM_TILE 32
template <typename T>
__global__ void __launch_bounds__(256)
    k_band_mm(int32_t n, int32_t ncols, int32_t kl, int32_t w, int k, const T *__restrict__ v, const T *__restrict__ x,
              T *__restrict__ y)
{
    __shared__ T vs[BAND_MM_TILE][32];
    const int32_t r0 = blockIdx.x * 32, i = r0 + (int32_t)threadIdx.x;
    const int tid = threadIdx.y * 32 + threadIdx.x;
    /* the diagonals any row of the block touches, and those of this thread's row */
    const int32_t rl = min(r0 + 31, n - 1);
    const int32_t b0 = max(kl - rl, 0), b1 = min(ncols - r0 + kl, w);
    const int32_t t0 = max(kl - i, 0), t1 = min(ncols - i + kl, w);
    double acc[8];
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = 0.0;
    for (int32_t tb = b0; tb < b1; tb += BAND_MM_TILE) {
        __syncthreads(); /* the previous tile is used up */
        for (int e = tid; e < BAND_MM_TILE * 32; e += 256) {
            const int32_t tt = tb + e / 32, row = r0 + e % 32;
            vs[e / 32][e % 32] = tt < b1 && row < n ? v[(size_t)tt * n + row] : (T)0;
        }
        __syncthreads();
        if (i < n) {
            const int32_t lo = max(tb, t0), hi = min(tb + BAND_MM_TILE, t1);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int c = (int)threadIdx.y + 8 * j;
                if (c >= k) break;
                const T *xc = x + (size_t)c * ncols + i; /* x_c[i + t - kl] */
                double s = acc[j];
                for (int32_t t = lo; t < hi; t++) s += (double)vs[t - tb][threadIdx.x] * (double)__ldg(xc + (t - kl));
                acc[j] = s;
            }
        }
    }
    if (i < n)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int c = (int)threadIdx.y + 8 * j;
            if (c < k) y[(size_t)c * n + i] = (T)acc[j];
        }
}

static sap_status cusparse_status(sap_context *ctx, cusparseStatus_t s, const char *what)
{
    if (s == CUSPARSE_STATUS_SUCCESS) return SAP_OK;
    return SAP_ERROR(ctx, s == CUSPARSE_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE, "%s: %s", what,
                     cusparseGetErrorString(s));
}

#define CUSPARSE_TRY(call)                                                                            \
    do {                                                                                              \
        sap_status s_ = cusparse_status(ctx, (call), #call);                                          \
        if (s_ != SAP_OK) return s_;                                                                  \
    } while (0)

/* CSR: one cusparseSpMM (column-major X, Y with ld = ncols, nrows; alpha 1, beta 0; the
 * non-transposed product is deterministic) */
static sap_status spmm_csr(sap_context *ctx, const cuda_spmat *m, int k, const sap_vec *X, sap_vec *Y)
{
    spmm_cache *c = &((cuda_spmat_mm *)(uintptr_t)m)->mm;
    void *h = NULL;
    sap_status st = sap__cuda_cusparse(ctx, &h);
    if (st != SAP_OK) return st;
    const cusparseHandle_t hs = (cusparseHandle_t)h;
    const bool d = m->pub.prec == SAP_DOUBLE;
    const cudaDataType dt = d ? CUDA_R_64F : CUDA_R_32F;
    const int64_t nr = m->pub.nrows, nc = m->pub.ncols;
    if (c->a && (c->a_rp != m->rowptr || c->a_ci != m->colind || c->a_val != m->val)) {
        cusparseDestroySpMat(c->a);
        c->a = NULL;
    }
    if (!c->a) {
        CUSPARSE_TRY(cusparseCreateCsr(&c->a, nr, nc, m->pub.nnz, m->rowptr, m->colind, m->val, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, dt));
        c->a_rp = m->rowptr;
        c->a_ci = m->colind;
        c->a_val = m->val;
    }
    if (c->x && c->k == k) {
        CUSPARSE_TRY(cusparseDnMatSetValues(c->x, X->data));
        CUSPARSE_TRY(cusparseDnMatSetValues(c->y, Y->data));
    } else {
        if (c->x) cusparseDestroyDnMat(c->x);
        if (c->y) cusparseDestroyDnMat(c->y);
        c->x = c->y = NULL;
        c->k = 0;
        CUSPARSE_TRY(cusparseCreateDnMat(&c->x, nc, k, nc, X->data, dt, CUSPARSE_ORDER_COL));
        CUSPARSE_TRY(cusparseCreateDnMat(&c->y, nr, k, nr, Y->data, dt, CUSPARSE_ORDER_COL));
        c->k = k;
    }
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void *one = d ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = d ? (const void *)&zero_d : (const void *)&zero_f;
    const cusparseOperation_t nt = CUSPARSE_OPERATION_NON_TRANSPOSE;
    size_t bytes = 0;
    CUSPARSE_TRY(cusparseSpMM_bufferSize(hs, nt, nt, one, c->a, c->x, zero, c->y, dt, CUSPARSE_SPMM_ALG_DEFAULT, &bytes));
    if (bytes > c->buf_bytes) { /* (the pool hands the old block out again only after the queued work) */
        if (c->buf) sap__cuda_free(ctx, c->buf);
        c->buf = NULL;
        c->buf_bytes = 0;
        st = sap__cuda_malloc(ctx, bytes, &c->buf);
        if (st != SAP_OK) return st;
        c->buf_bytes = bytes;
    }
    CUSPARSE_TRY(cusparseSpMM(hs, nt, nt, one, c->a, c->x, zero, c->y, dt, CUSPARSE_SPMM_ALG_DEFAULT, c->buf));
    return SAP_OK;
}

extern "C" sap_status sap__cuda_spmm(sap_context *ctx, const sap_spmat *M, int k, const sap_vec *X, sap_vec *Y)
{
    if (!M || !M->impl || !X || !Y) return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmm: NULL argument");
    if (k < 1 || k > 64) return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmm: k = %d outside 1..64", k);
    if (X->n != (sap_int)k * M->ncols || Y->n != (sap_int)k * M->nrows)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmm: vector lengths %lld, %lld are not %d columns of the %lld x %lld matrix",
                         (long long)X->n, (long long)Y->n, k, (long long)M->nrows, (long long)M->ncols);
    if (X->prec != M->prec || Y->prec != M->prec)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmm: vectors must have the matrix' precision");
    if ((X->n > 0 && !X->data) || (Y->n > 0 && !Y->data))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "spmm: vector not allocated");
    if (M->nrows == 0) return SAP_OK;
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    const cuda_spmat *m = (const cuda_spmat *)M->impl;
    const size_t es = psize(M->prec);
    if (M->ncols == 0 || M->nnz == 0) { /* Y = 0 */
        SAP_CUDA_CHECK(ctx, cudaMemsetAsync(Y->data, 0, (size_t)Y->n * es, STREAM));
        return SAP_OK;
    }
    if (M->format == SAP_FORMAT_CSR) return spmm_csr(ctx, m, k, X, Y);
    if (M->format == SAP_FORMAT_BAND) {
        dim3 b(32, 8);
        const unsigned g = (unsigned)((M->nrows + 31) / 32);
        if (M->prec == SAP_DOUBLE)
            k_band_mm<double><<<g, b, 0, STREAM>>>((int32_t)M->nrows, (int32_t)M->ncols, m->band_kl, m->band_w, k,
                                                   (const double *)m->val, (const double *)X->data, (double *)Y->data);
        else
            k_band_mm<float><<<g, b, 0, STREAM>>>((int32_t)M->nrows, (int32_t)M->ncols, m->band_kl, m->band_w, k,
                                                  (const float *)m->val, (const float *)X->data, (float *)Y->data);
        SAP_CUDA_LAUNCHED(ctx, "k_band_mm");
        return SAP_OK;
    }
    /* ELL, SELL-P, HEC: their SpMV on each column */
    for (int c = 0; c < k; c++) {
        sap_vec xc = {M->ncols, M->prec, (char *)X->data + (size_t)c * (size_t)M->ncols * es};
        sap_vec yc = {M->nrows, M->prec, (char *)Y->data + (size_t)c * (size_t)M->nrows * es};
        st = sap__cuda_spmv(ctx, M, 1.0, &xc, 0.0, &yc);
        if (st != SAP_OK) return st;
    }
    return SAP_OK;
}
