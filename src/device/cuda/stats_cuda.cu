/* stats_cuda.cu -- the csr_stats op of the cuda backend (device.h): the statistics, checks
 * and inverse diagonal of a CSR in device memory (the caller's arrays of
 * sap_solver_create_device), computed where the matrix is, so that the solver's plan reads
 * no host copy of A.  Three kernels on the context's stream: the row pointer (monotone, its
 * ends), one thread per row (bandwidths, row lengths, widths, diagonal and dominance, the
 * checks of the columns and the values, 1 / a_ii), and, when every diagonal entry is
 * positive, the symmetry of the values by a binary search of each entry's mirror in its
 * column's row.  Reductions: warp shuffles, then one integer atomic per warp (max, min, sum
 * of 64-bit integers; the dominance ratio, >= 0, as the integer of its bits): the result does
 * not depend on the launch shape or the order of the atomics.  Each kernel's few scalars
 * come back by a counted d2h copy.  The cpu op (stats_cpu.c) is the reference. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device/cuda/cuda_internal.h"

#define SBLOCK 256
#define SGRID_MAX 4096

typedef unsigned long long ull;

/* the accumulators on the device (one block of memory, zeroed then initialised) */
typedef struct dstat {
    ull bad_rowptr, bad_col, bad_order, nonfinite, zero_diag_row; /* min; init: n / nnz */
    ull lower, upper, max_row;                                  /* max */
    ull empty, width_sum, zero_diag, dominant, diag_pos, asym;  /* sums */
    ull dmin_bits;                                              /* min of the bits of a double >= 0 */
} dstat;

static unsigned sgrid(sap_int n)
{
    sap_int g = (n + SBLOCK - 1) / SBLOCK;
    if (g < 1) g = 1;
    if (g > SGRID_MAX) g = SGRID_MAX;
    return (unsigned)g;
}

__device__ __forceinline__ ull warp_max(ull v)
{
    for (int o = 16; o > 0; o >>= 1) {
        ull w = __shfl_down_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

__device__ __forceinline__ ull warp_min(ull v)
{
    for (int o = 16; o > 0; o >>= 1) {
        ull w = __shfl_down_sync(0xffffffffu, v, o);
        v = w < v ? w : v;
    }
    return v;
}

__device__ __forceinline__ ull warp_sum(ull v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__global__ void k_init(dstat *s, sap_int n, sap_int nnz)
{
    s->bad_rowptr = s->bad_col = s->bad_order = s->zero_diag_row = (ull)n;
    s->nonfinite = (ull)nnz;
    s->lower = s->upper = s->max_row = 0;
    s->empty = s->width_sum = s->zero_diag = s->dominant = s->diag_pos = s->asym = 0;
    double inf = INFINITY;
    s->dmin_bits = (ull)__double_as_longlong(inf);
}

/* the row pointer: the first decrease (its ends are read by the host) */
__global__ void k_rowptr(sap_int n, const sap_int *__restrict__ rp, dstat *s)
{
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    for (sap_int i = (sap_int)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        if (rp[i + 1] < rp[i]) atomicMin(&s->bad_rowptr, (ull)i);
}

/* one thread per row; every thread of a warp runs the same iterations (the loop bound is
 * per block), so the shuffles see whole warps */
__global__ void k_rows(sap_int n, const sap_int *__restrict__ rp, const sap_int *__restrict__ ci,
                       const double *__restrict__ v, double *__restrict__ dinv, dstat *s)
{
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    const int lane = threadIdx.x & 31;
    for (sap_int base = (sap_int)blockIdx.x * blockDim.x; base < n; base += stride) {
        const sap_int i = base + threadIdx.x;
        ull bad_col = (ull)n, bad_order = (ull)n, nonfin = ~0ull, zrow = (ull)n;
        ull lower = 0, upper = 0, len = 0, width = 0;
        int empty = 0, zero = 0, dom = 0, pos = 0;
        double r = INFINITY;
        if (i < n) {
            const sap_int b = rp[i], e = rp[i + 1];
            double diag = 0.0, off = 0.0;
            int has = 0, col_ok = 1;
            for (sap_int p = b; p < e; p++) {
                const sap_int j = ci[p];
                if (j < 0 || j >= n) {
                    col_ok = 0;
                    break;
                }
                if (p > b && ci[p - 1] >= j && bad_order == (ull)n) bad_order = (ull)i;
                const double a = v[p];
                if (!isfinite(a) && nonfin == ~0ull) nonfin = (ull)p;
                if (j == i) {
                    diag = a;
                    has = 1;
                } else {
                    off += fabs(a);
                }
            }
            if (!col_ok) {
                bad_col = (ull)i;
                if (dinv) dinv[i] = 0.0;
            } else {
                len = (ull)(e - b);
                if (e == b) empty = 1;
                else {
                    const sap_int first = ci[b], last = ci[e - 1];
                    width = (ull)(last - first + 1);
                    lower = i - first > 0 ? (ull)(i - first) : 0;
                    upper = last - i > 0 ? (ull)(last - i) : 0;
                }
                if (!has || diag == 0.0) {
                    zero = 1;
                    zrow = (ull)i;
                }
                pos = has && diag > 0.0;
                const double ad = fabs(diag);
                r = off == 0.0 ? INFINITY : ad / off;
                dom = ad >= off;
                if (dinv) dinv[i] = has && diag != 0.0 ? 1.0 / diag : 0.0;
            }
        }
        /* a NaN ratio (NaN values) is reported through nonfinite; the ratio is then unused */
        ull rb = isnan(r) ? 0ull : (ull)__double_as_longlong(r);
        const unsigned m = 0xffffffffu;
        bad_col = warp_min(bad_col);
        bad_order = warp_min(bad_order);
        nonfin = warp_min(nonfin);
        zrow = warp_min(zrow);
        rb = warp_min(rb);
        lower = warp_max(lower);
        upper = warp_max(upper);
        len = warp_max(len);
        width = warp_sum(width);
        const int c_empty = __popc(__ballot_sync(m, empty)), c_zero = __popc(__ballot_sync(m, zero));
        const int c_dom = __popc(__ballot_sync(m, dom)), c_pos = __popc(__ballot_sync(m, pos));
        if (lane == 0) {
            if (bad_col < (ull)n) atomicMin(&s->bad_col, bad_col);
            if (bad_order < (ull)n) atomicMin(&s->bad_order, bad_order);
            if (nonfin != ~0ull) atomicMin(&s->nonfinite, nonfin);
            if (zrow < (ull)n) atomicMin(&s->zero_diag_row, zrow);
            atomicMin(&s->dmin_bits, rb);
            if (lower) atomicMax(&s->lower, lower);
            if (upper) atomicMax(&s->upper, upper);
            if (len) atomicMax(&s->max_row, len);
            if (width) atomicAdd(&s->width_sum, width);
            if (c_empty) atomicAdd(&s->empty, (ull)c_empty);
            if (c_zero) atomicAdd(&s->zero_diag, (ull)c_zero);
            if (c_dom) atomicAdd(&s->dominant, (ull)c_dom);
            if (c_pos) atomicAdd(&s->diag_pos, (ull)c_pos);
        }
    }
}

/* a_ij == a_ji for every entry of row i (a missing mirror counts 0) */
__global__ void k_sym(sap_int n, const sap_int *__restrict__ rp, const sap_int *__restrict__ ci,
                      const double *__restrict__ v, dstat *s)
{
    const sap_int stride = (sap_int)gridDim.x * blockDim.x;
    for (sap_int i = (sap_int)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int asym = 0;
        for (sap_int p = rp[i]; p < rp[i + 1] && !asym; p++) {
            const sap_int j = ci[p];
            if (j == i) continue;
            sap_int lo = rp[j], hi = rp[j + 1] - 1;
            double mv = 0.0;
            while (lo <= hi) {
                const sap_int mid = lo + (hi - lo) / 2, c = ci[mid];
                if (c == i) {
                    mv = v[mid];
                    break;
                }
                if (c < i) lo = mid + 1;
                else hi = mid - 1;
            }
            if (!(v[p] == mv)) asym = 1;
        }
        if (asym) atomicAdd(&s->asym, 1ull);
    }
}

static sap_int from_min(ull v, sap_int none) { return v >= (ull)none ? -1 : (sap_int)v; }

extern "C" sap_status sap__cuda_csr_stats(sap_context *ctx, const sap_dev_csr *A, sap_dev_csr_check *chk,
                                          sap_matrix_stats *ms, double *dinv)
{
    if (!A || !chk || A->n < 0 || A->nnz < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "csr_stats: malformed CSR argument");
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    cudaStream_t stream = (cudaStream_t)sap__cuda_stream(ctx);
    const sap_int n = A->n, nnz = A->nnz;
    dstat *d = NULL;
    dstat h;
    chk->bad_rowptr = chk->bad_col = chk->bad_order = chk->nonfinite = chk->zero_diag_row = -1;
    SAP_TRY(sap__cuda_malloc(ctx, sizeof(dstat), (void **)&d));
    k_init<<<1, 1, 0, stream>>>(d, n, nnz);
    SAP_CUDA_TRY_LAUNCH(ctx, "k_init");
    k_rowptr<<<sgrid(n), SBLOCK, 0, stream>>>(n, A->rowptr, d);
    SAP_CUDA_TRY_LAUNCH(ctx, "k_rowptr");
    SAP_TRY(sap__cuda_d2h(ctx, &h.bad_rowptr, &d->bad_rowptr, sizeof(ull)));
    {
        /* the ends first (as sap_csr_check), then the first decrease */
        sap_int ends[2] = {0, 0};
        SAP_TRY(sap__cuda_d2h(ctx, &ends[0], A->rowptr, sizeof(sap_int)));
        SAP_TRY(sap__cuda_d2h(ctx, &ends[1], A->rowptr + n, sizeof(sap_int)));
        if (ends[0] != 0 || ends[1] != nnz) {
            chk->bad_rowptr = n;
            goto cleanup;
        }
        if (h.bad_rowptr < (ull)n) {
            chk->bad_rowptr = (sap_int)h.bad_rowptr;
            goto cleanup;
        }
    }
    if (n > 0) {
        k_rows<<<sgrid(n), SBLOCK, 0, stream>>>(n, A->rowptr, A->colind, A->val, dinv, d);
        SAP_CUDA_TRY_LAUNCH(ctx, "k_rows");
    }
    SAP_TRY(sap__cuda_d2h(ctx, &h, d, sizeof(dstat)));
    chk->bad_col = from_min(h.bad_col, n);
    chk->bad_order = from_min(h.bad_order, n);
    chk->nonfinite = from_min(h.nonfinite, nnz);
    chk->zero_diag_row = from_min(h.zero_diag_row, n);
    if (!ms || chk->bad_col >= 0 || chk->bad_order >= 0) goto cleanup;
    {
        int sym = h.diag_pos == (ull)n;
        if (sym && n > 0) {
            k_sym<<<sgrid(n), SBLOCK, 0, stream>>>(n, A->rowptr, A->colind, A->val, d);
            SAP_CUDA_TRY_LAUNCH(ctx, "k_sym");
            SAP_TRY(sap__cuda_d2h(ctx, &h.asym, &d->asym, sizeof(ull)));
            sym = h.asym == 0;
        }
        double dmin;
        long long bits = (long long)h.dmin_bits;
        memcpy(&dmin, &bits, sizeof(dmin));
        memset(ms, 0, sizeof(*ms));
        ms->nrows = ms->ncols = n;
        ms->nnz = nnz;
        ms->lower_bandwidth = (sap_int)h.lower;
        ms->upper_bandwidth = (sap_int)h.upper;
        ms->half_bandwidth = h.lower > h.upper ? (sap_int)h.lower : (sap_int)h.upper;
        ms->empty_rows = (sap_int)h.empty;
        ms->max_row_nnz = (sap_int)h.max_row;
        ms->mean_row_nnz = n > 0 ? (double)nnz / (double)n : 0.0;
        ms->mean_row_width = n > 0 ? (double)h.width_sum / (double)n : 0.0;
        ms->zero_diagonal = (sap_int)h.zero_diag;
        ms->diag_dominance = dmin;
        ms->dominant_rows = (sap_int)h.dominant;
        ms->numerically_symmetric = sym;
        ms->spd_estimate = sym;
    }
cleanup:
    if (d) {
        cudaStreamSynchronize(stream);
        sap__cuda_free(ctx, d);
    }
    return st;
}
