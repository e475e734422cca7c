/* cpu_relax.c -- block_relax of the cpu table: block Jacobi with local Jacobi sweeps, the
 * deterministic reference of the cuda block-asynchronous kernel.  The other blocks' values
 * come from a copy of x taken on entry, so neither the thread count nor the schedule
 * changes the result. */
#include "device/cpu/cpu_internal.h"

#include <string.h>

#define RB SAP_RELAX_BLOCK

#define RELAX_IMPL(S, REAL)                                                                                            \
    static void relax_##S(sap_context *ctx, const sap_spmat *M, const sap_cpu_mat *C, int sweeps, const REAL *b,      \
                          REAL *x, REAL *xold)                                                                         \
    {                                                                                                                  \
        const sap_int n = M->nrows;                                                                                    \
        const REAL *val = (const REAL *)C->val;                                                                        \
        memcpy(xold, x, sizeof(REAL) * (size_t)n);                                                                     \
        const sap_int nb = (n + RB - 1) / RB;                                                                          \
        const int nt = nb > 1 ? sap__threads(ctx) : 1;                                                                 \
        (void)nt;                                                                                                      \
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 4)")                                               \
        for (sap_int k = 0; k < nb; k++) {                                                                             \
            const sap_int lo = k * RB, hi = lo + RB < n ? lo + RB : n;                                                 \
            double xl[RB], xn[RB];                                                                                     \
            for (sap_int i = lo; i < hi; i++) xl[i - lo] = (double)xold[i];                                            \
            for (int sw = 0; sw < sweeps; sw++) {                                                                      \
                for (sap_int i = lo; i < hi; i++) {                                                                    \
                    double sum = (double)b[i], diag = 0.0;                                                             \
                    for (sap_int p = C->rowptr[i]; p < C->rowptr[i + 1]; p++) {                                        \
                        const sap_int j = C->col32 ? (sap_int)C->col32[p] : C->col64[p];                               \
                        const double a = (double)val[p];                                                               \
                        if (j == i) diag += a;                                                                         \
                        else if (j >= lo && j < hi) sum -= a * xl[j - lo];                                             \
                        else sum -= a * (double)xold[j];                                                               \
                    }                                                                                                  \
                    xn[i - lo] = diag != 0.0 ? sum / diag : xl[i - lo];                                                \
                }                                                                                                      \
                for (sap_int i = lo; i < hi; i++) xl[i - lo] = (double)(REAL)xn[i - lo];                               \
            }                                                                                                          \
            for (sap_int i = lo; i < hi; i++) x[i] = (REAL)xl[i - lo];                                                 \
        }                                                                                                              \
    }

RELAX_IMPL(d, double)
RELAX_IMPL(s, float)

sap_status sap__cpu_block_relax(sap_context *ctx, const sap_spmat *M, int sweeps, const sap_vec *b, sap_vec *x,
                                sap_vec *scratch)
{
    if (!M || !b || !x || !scratch || M->format != SAP_FORMAT_CSR || M->nrows != M->ncols || b->n != M->nrows ||
        x->n != M->nrows || scratch->n != M->nrows || b->prec != M->prec || x->prec != M->prec ||
        scratch->prec != M->prec || sweeps < 1)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "block_relax: needs a square CSR matrix, vectors of its size and "
                                               "precision, sweeps >= 1");
    const sap_cpu_mat *C = (const sap_cpu_mat *)M->impl;
    if (M->prec == SAP_FLOAT) relax_s(ctx, M, C, sweeps, (const float *)b->data, (float *)x->data, (float *)scratch->data);
    else relax_d(ctx, M, C, sweeps, (const double *)b->data, (double *)x->data, (double *)scratch->data);
    return SAP_OK;
}
