/* ilu_apply.c -- the pair of analysed triangular factors every ILU-family preconditioner
 * applies (ilu_factor.h): z = U^{-1} (L^{-1} r) through the device table's triangular
 * solves, on the context's backend. */
#include "precond/ilu_factor.h"

#include <stdio.h>

void sap__ilu_pair_free(sap_context *ctx, sap_ilu_pair *F)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    if (F->L) ops->trsv->destroy(F->L);
    if (F->U) ops->trsv->destroy(F->U);
    if (F->tmp.data) ops->vec_destroy(ctx, &F->tmp);
    F->L = F->U = NULL;
    F->tmp.data = NULL;
}

sap_status sap__ilu_pair_setup(sap_context *ctx, sap_ilu_pair *F, const sap_csr *L, int unit_l, const sap_csr *U,
                               sap_precision prec)
{
    sap_status st = SAP_OK;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap__ilu_pair_free(ctx, F);
    SAP_TRY(ops->trsv->analyze(ctx, L, 0, unit_l, prec, SAP_TRSV_AUTO, &F->L));
    SAP_TRY(ops->trsv->analyze(ctx, U, 1, 0, prec, SAP_TRSV_AUTO, &F->U));
    SAP_TRY(ops->vec_create(ctx, L->nrows, prec, &F->tmp));
    F->nnz_l = L->nnz;
    F->nnz_u = U->nnz;
cleanup:
    if (st < 0) sap__ilu_pair_free(ctx, F);
    return st;
}

sap_status sap__ilu_pair_apply(sap_context *ctx, sap_ilu_pair *F, const sap_vec *r, sap_vec *z)
{
    sap_status st = SAP_OK;
    const sap_backend_ops *ops = sap__ops(ctx);
    SAP_TRY(ops->trsv->solve(F->L, 1, r->data, F->tmp.data));
    SAP_TRY(ops->trsv->solve(F->U, 1, F->tmp.data, z->data));
cleanup:
    return st;
}

int sap__ilu_pair_report(const sap_ilu_pair *F, char *buf, size_t size)
{
    if (!F->L || !F->U) return snprintf(buf, size, "not set up");
    return snprintf(buf, size,
                    "L: %lld nnz, %lld levels (widest %lld rows), %s; U: %lld nnz, %lld levels (widest %lld rows), %s; "
                    "analysis %.3g s",
                    (long long)F->nnz_l, (long long)F->L->nlevels, (long long)F->L->max_level_rows,
                    sap__trsv_method_name(F->L->method), (long long)F->nnz_u, (long long)F->U->nlevels,
                    (long long)F->U->max_level_rows, sap__trsv_method_name(F->U->method),
                    F->L->t_analysis + F->U->t_analysis);
}

/* ---- the common part of the ILU-family types ------------------------------------------------ */

sap_status sap__ilu_pc_create(sap_precond *P)
{
    sap_status st = SAP_OK;
    sap_ilu_pc *d = NULL;
    SAP_CALLOC(P->ctx, d, 1);
    P->data = d;
cleanup:
    return st;
}

static void free_ras(sap_context *ctx, sap_ilu_pc *d)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    if (d->R) ops->spmat_destroy(ctx, d->R);
    if (d->Pown) ops->spmat_destroy(ctx, d->Pown);
    if (d->r2.data) ops->vec_destroy(ctx, &d->r2);
    if (d->z2.data) ops->vec_destroy(ctx, &d->z2);
    d->R = d->Pown = NULL;
    d->r2.data = d->z2.data = NULL;
}

sap_status sap__ilu_pc_set_ras(sap_precond *P, const sap_dd_ras *D)
{
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    free_ras(ctx, d);
    SAP_TRY(ops->spmat_create(ctx, D->R, SAP_FORMAT_CSR, P->prec, &d->R));
    SAP_TRY(ops->spmat_create(ctx, D->Pown, SAP_FORMAT_CSR, P->prec, &d->Pown));
    SAP_TRY(ops->vec_create(ctx, D->next, P->prec, &d->r2));
    SAP_TRY(ops->vec_create(ctx, D->next, P->prec, &d->z2));
cleanup:
    if (st < 0) free_ras(ctx, d);
    return st;
}

void sap__ilu_pc_destroy(sap_precond *P)
{
    sap_ilu_pc *d = P->data;
    if (!d) return;
    free_ras(P->ctx, d);
    sap__ilu_pair_free(P->ctx, &d->F);
    sap__free(P->ctx, d);
    P->data = NULL;
}

sap_status sap__ilu_pc_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    sap_ilu_pc *d = P->data;
    if (!d->R) return sap__ilu_pair_apply(P->ctx, &d->F, r, z);
    sap_status st = SAP_OK;
    const sap_backend_ops *ops = sap__ops(P->ctx);
    SAP_TRY(ops->spmv(P->ctx, d->R, 1.0, r, 0.0, &d->r2));
    SAP_TRY(sap__ilu_pair_apply(P->ctx, &d->F, &d->r2, &d->z2));
    SAP_TRY(ops->spmv(P->ctx, d->Pown, 1.0, &d->z2, 0.0, z));
cleanup:
    return st;
}

void sap__ilu_pc_report(const sap_precond *P, char *buf, size_t size)
{
    const sap_ilu_pc *d = P->data;
    if (!d || !d->F.L) {
        snprintf(buf, size, "%s", "");
        return;
    }
    int w = snprintf(buf, size, "%s%sfactorization %.3g s (%lld -> %lld + %lld nnz, %lld pivots shifted); ", d->extra,
                     d->extra[0] ? "; " : "", d->t_factor, (long long)d->nnz_a, (long long)d->F.nnz_l,
                     (long long)d->F.nnz_u, (long long)d->shifted);
    if (w >= 0 && (size_t)w < size) sap__ilu_pair_report(&d->F, buf + w, size - (size_t)w);
}

sap_status sap__ilu_pc_finish(sap_precond *P, const sap_csr *A, const sap_csr *L, int unit_l, const sap_csr *U,
                              sap_int shifted, double t_factor)
{
    sap_ilu_pc *d = P->data;
    sap_status st = sap__ilu_pair_setup(P->ctx, &d->F, L, unit_l, U, P->prec);
    if (st < 0) return st;
    d->shifted = shifted;
    d->t_factor = t_factor;
    d->nnz_a = A->nnz;
    if (shifted > 0)
        return SAP_ERROR(P->ctx, SAP_WARN_BOOSTED_PIVOTS, "%s: %lld zero or tiny pivots shifted", P->type->name,
                         (long long)shifted);
    return st;
}

sap_status sap__ilu_pc_finish_lu(sap_precond *P, const sap_csr *A, const sap_csr *LU, sap_int shifted, double t0)
{
    sap_status st = SAP_OK;
    sap_csr *L = NULL, *U = NULL;
    SAP_TRY(sap__lu_split(P->ctx, LU, &L, &U));
    SAP_TRY(sap__ilu_pc_finish(P, A, L, 1, U, shifted, sap__wtime() - t0));
cleanup:
    sap_csr_destroy(L);
    sap_csr_destroy(U);
    return st;
}

sap_status sap__ilu_pc_device_ilu0(sap_precond *P, const sap_csr *A, const sap_csr *S, double pivot_tol, int *done)
{
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    sap_trsv *L = NULL, *U = NULL;
    sap_int shifted = 0;
    double tf = 0.0;
    *done = 0;
    if (!ops->trsv->ilu0) return SAP_OK;
    SAP_TRY(ops->trsv->ilu0(ctx, S, pivot_tol, P->prec, &L, &U, &shifted, NULL, &tf));
    if (!L) return SAP_OK; /* declined */
    sap__ilu_pair_free(ctx, &d->F);
    d->F.L = L;
    d->F.U = U;
    L = U = NULL;
    SAP_TRY(ops->vec_create(ctx, S->nrows, P->prec, &d->F.tmp));
    d->F.nnz_l = d->F.L->nnz_offdiag;
    d->F.nnz_u = d->F.U->nnz_offdiag + S->nrows;
    d->shifted = shifted;
    d->t_factor = tf;
    d->nnz_a = A->nnz;
    *done = 1;
    if (shifted > 0)
        st = SAP_ERROR(ctx, SAP_WARN_BOOSTED_PIVOTS, "%s: %lld zero or tiny pivots shifted", P->type->name,
                       (long long)shifted);
cleanup:
    if (L) ops->trsv->destroy(L);
    if (U) ops->trsv->destroy(U);
    if (st < 0) sap__ilu_pair_free(ctx, &d->F);
    return st;
}
