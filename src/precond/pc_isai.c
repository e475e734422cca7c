/* pc_isai.c -- ILU(0) with ISAI ("isai"): the ILU(0) factors (host) replaced by their
 * incomplete sparse approximate inverses (ilu_factor.h, sap__isai) with the factors'
 * patterns, so the apply is two sparse products on the backend, z = M_U (M_L r), instead
 * of two triangular solves: no level structure to wait on, at the price of a weaker
 * preconditioner. */
#include "precond/ilu_factor.h"

#include <stdio.h>

typedef struct isai_opts {
    double pivot_tol;
} isai_opts;

static const sap_opt_def isai_defs[] = {SAP_ILU_PIVOT_OPT(isai_opts)};

typedef struct isai_data {
    sap_spmat *ML, *MU;
    sap_vec tmp;
    sap_int nnz_l, nnz_u, shifted;
    double t_factor, t_isai;
} isai_data;

static sap_status isai_create(sap_precond *P)
{
    sap_status st = SAP_OK;
    isai_data *d = NULL;
    SAP_CALLOC(P->ctx, d, 1);
    P->data = d;
cleanup:
    return st;
}

static void isai_release(sap_context *ctx, isai_data *d)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    if (d->ML) ops->spmat_destroy(ctx, d->ML);
    if (d->MU) ops->spmat_destroy(ctx, d->MU);
    if (d->tmp.data) ops->vec_destroy(ctx, &d->tmp);
    d->ML = d->MU = NULL;
    d->tmp.data = NULL;
}

static void isai_destroy(sap_precond *P)
{
    isai_data *d = P->data;
    if (!d) return;
    isai_release(P->ctx, d);
    sap__free(P->ctx, d);
    P->data = NULL;
}

static sap_status isai_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    const isai_opts *o = P->opts;
    isai_data *d = P->data;
    sap_status st = SAP_OK;
    sap_csr *LU = NULL, *L = NULL, *U = NULL, *ML = NULL, *MU = NULL;
    sap_int shifted = 0;
    isai_release(ctx, d);
    const double t0 = sap__wtime();
    SAP_TRY(sap__iluk_pattern(ctx, A, 0, &LU));
    SAP_TRY(sap__ilu_numeric(ctx, LU, o->pivot_tol, &shifted));
    SAP_TRY(sap__lu_split(ctx, LU, &L, &U));
    const double t1 = sap__wtime();
    SAP_TRY(sap__isai(ctx, L, 0, 1, &ML));
    SAP_TRY(sap__isai(ctx, U, 1, 0, &MU));
    SAP_TRY(ops->spmat_create(ctx, ML, SAP_FORMAT_AUTO, P->prec, &d->ML));
    SAP_TRY(ops->spmat_create(ctx, MU, SAP_FORMAT_AUTO, P->prec, &d->MU));
    SAP_TRY(ops->vec_create(ctx, A->nrows, P->prec, &d->tmp));
    d->nnz_l = ML->nnz;
    d->nnz_u = MU->nnz;
    d->shifted = shifted;
    d->t_factor = t1 - t0;
    d->t_isai = sap__wtime() - t1;
    if (shifted > 0)
        st = SAP_ERROR(ctx, SAP_WARN_BOOSTED_PIVOTS, "isai: %lld zero or tiny pivots shifted", (long long)shifted);
cleanup:
    if (st < 0) isai_release(ctx, d);
    sap_csr_destroy(LU);
    sap_csr_destroy(L);
    sap_csr_destroy(U);
    sap_csr_destroy(ML);
    sap_csr_destroy(MU);
    return st;
}

static sap_status isai_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    isai_data *d = P->data;
    const sap_backend_ops *ops = sap__ops(P->ctx);
    sap_status st = ops->spmv(P->ctx, d->ML, 1.0, r, 0.0, &d->tmp);
    if (st >= 0) st = ops->spmv(P->ctx, d->MU, 1.0, &d->tmp, 0.0, z);
    return st;
}

static void isai_report(const sap_precond *P, char *buf, size_t size)
{
    const isai_data *d = P->data;
    if (!d || !d->ML) {
        snprintf(buf, size, "%s", "");
        return;
    }
    snprintf(buf, size,
             "factorization %.3g s (%lld pivots shifted); ISAI %.3g s: M_L %lld nnz, M_U %lld nnz (%s, %s)",
             d->t_factor, (long long)d->shifted, d->t_isai, (long long)d->nnz_l, (long long)d->nnz_u,
             sap_spmv_format_name(d->ML->format), sap_spmv_format_name(d->MU->format));
}

const sap_precond_type sap__pc_isai = {
    .name = "isai",
    .help = "ILU(0) with incomplete sparse approximate inverses of L and U: the apply is two SpMVs",
    .opts = isai_defs,
    .nopts = 1,
    .opts_size = sizeof(isai_opts),
    .create = isai_create,
    .setup_numeric = isai_numeric,
    .apply = isai_apply,
    .report = isai_report,
    .destroy = isai_destroy,
};
