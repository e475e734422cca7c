/* cuda_relax.cu -- block_relax of the cuda table: block-asynchronous Jacobi (Anzt et al.;
 * the MAGMA-sparse "async Jacobi" smoother).  One thread block of SAP_RELAX_BLOCK threads
 * per block of rows, one thread per row, the block's unknowns in shared memory.  Each of
 * the 'sweeps' local sweeps reads the other blocks' unknowns from x in global memory as
 * they are at that moment (volatile loads: values other blocks wrote in this launch are
 * seen as soon as they land) and writes the block's new values back to x after the sweep.
 * There is no synchronisation between thread blocks: which neighbour values a sweep sees
 * depends on the schedule, so the result is nondeterministic by design (the cpu table's
 * block_relax is the deterministic block-Jacobi reference).  Sums in double. */
#include "device/cuda/cuda_spmat.h"

#define RB SAP_RELAX_BLOCK

template <typename T>
__global__ void __launch_bounds__(RB)
    k_block_relax(int32_t n, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ col,
                  const T *__restrict__ val, const T *__restrict__ b, T *x, int sweeps)
{
    __shared__ double xs[RB];
    const int32_t lo = blockIdx.x * RB, i = lo + (int32_t)threadIdx.x;
    const int32_t hi = lo + RB < n ? lo + RB : n;
    volatile T *xv = x;
    if (i < n) xs[threadIdx.x] = (double)xv[i];
    __syncthreads();
    for (int sw = 0; sw < sweeps; sw++) {
        double nv = 0.0;
        if (i < n) {
            double sum = (double)b[i], diag = 0.0;
            for (int32_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
                const int32_t j = col[p];
                const double a = (double)val[p];
                if (j == i) diag += a;
                else if (j >= lo && j < hi) sum -= a * xs[j - lo];
                else sum -= a * (double)xv[j];
            }
            nv = diag != 0.0 ? sum / diag : xs[threadIdx.x];
        }
        __syncthreads();
        if (i < n) {
            xs[threadIdx.x] = (double)(T)nv;
            xv[i] = (T)nv;
        }
        __syncthreads();
    }
}

extern "C" sap_status sap__cuda_block_relax(sap_context *ctx, const sap_spmat *M, int sweeps, const sap_vec *b,
                                            sap_vec *x, sap_vec *scratch)
{
    (void)scratch;
    if (!M || !M->impl || !b || !x || M->format != SAP_FORMAT_CSR || M->nrows != M->ncols || b->n != M->nrows ||
        x->n != M->nrows || b->prec != M->prec || x->prec != M->prec || sweeps < 1)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "block_relax: needs a square CSR matrix, vectors of its size and "
                                               "precision, sweeps >= 1");
    if (M->nrows == 0) return SAP_OK;
    sap_status st = sap__cuda_enter(ctx);
    if (st != SAP_OK) return st;
    const cuda_spmat *m = (const cuda_spmat *)M->impl;
    const int32_t n = (int32_t)M->nrows;
    const unsigned grid = (unsigned)((n + RB - 1) / RB);
    if (M->prec == SAP_DOUBLE)
        k_block_relax<double><<<grid, RB, 0, STREAM>>>(n, m->rowptr, m->colind, (const double *)m->val,
                                                       (const double *)b->data, (double *)x->data, sweeps);
    else
        k_block_relax<float><<<grid, RB, 0, STREAM>>>(n, m->rowptr, m->colind, (const float *)m->val,
                                                      (const float *)b->data, (float *)x->data, sweeps);
    SAP_CUDA_LAUNCHED(ctx, "k_block_relax");
    return SAP_OK;
}
