/* pc_jacobi.c -- scalar Jacobi ("jacobi"): M = diag(A).  The numeric setup stores 1/a_ii
 * in a backend vector of the preconditioner's precision; apply is z = dinv .* r.  A zero
 * or missing diagonal entry is SAP_ERR_SINGULAR naming the row. */
#include "precond/precond_impl.h"
#include "base/csr_search.h"

#include <float.h>
#include <math.h>

typedef struct jacobi_data {
    sap_vec dinv;
} jacobi_data;

static sap_status jacobi_create(sap_precond *P)
{
    sap_status st = SAP_OK;
    jacobi_data *d = NULL;
    SAP_CALLOC(P->ctx, d, 1);
    P->data = d;
cleanup:
    return st;
}

static void jacobi_destroy(sap_precond *P)
{
    jacobi_data *d = P->data;
    if (!d) return;
    if (d->dinv.data) sap__ops(P->ctx)->vec_destroy(P->ctx, &d->dinv);
    sap__free(P->ctx, d);
    P->data = NULL;
}

/* the vector of 1 / a_ii: n entries in the preconditioner's precision (made again if not) */
static sap_status dinv_ensure(sap_precond *P, sap_int n)
{
    jacobi_data *d = P->data;
    const sap_backend_ops *ops = sap__ops(P->ctx);
    if (d->dinv.data && (d->dinv.n != n || d->dinv.prec != P->prec)) ops->vec_destroy(P->ctx, &d->dinv);
    if (!d->dinv.data) return ops->vec_create(P->ctx, n, P->prec, &d->dinv);
    return SAP_OK;
}

static sap_status jacobi_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    jacobi_data *d = P->data;
    const sap_int n = A->nrows;
    sap_status st = SAP_OK;
    double *h = NULL;
    SAP_ALLOC(ctx, h, n);
    /* the rows on the context's threads; the first row that fails is reported */
    const int flt = P->prec == SAP_FLOAT, nt = sap__threads_for(ctx, (double)n);
    sap_int bad = n;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(min : bad) if (n > 65536)")
    for (sap_int i = 0; i < n; i++) {
        const sap_int pd = sap__csr_find(A->rowptr, A->colind, i, i); /* rows are sorted */
        const double a = pd < 0 ? 0.0 : A->val[pd];
        h[i] = a != 0.0 ? 1.0 / a : 0.0;
        if (pd < 0 || a == 0.0 || !isfinite(a) || !isfinite(h[i]) || (flt && (fabs(h[i]) > FLT_MAX || fabs(a) > FLT_MAX)))
            if (i < bad) bad = i;
    }
    if (bad < n) {
        const sap_int i = bad, pd = sap__csr_find(A->rowptr, A->colind, i, i);
        const double a = pd < 0 ? 0.0 : A->val[pd];
        if (pd < 0) SAP_FAIL(ctx, SAP_ERR_SINGULAR, "jacobi: row %lld has no diagonal entry", (long long)i);
        if (a == 0.0) SAP_FAIL(ctx, SAP_ERR_SINGULAR, "jacobi: zero diagonal entry in row %lld", (long long)i);
        if (!isfinite(a)) SAP_FAIL(ctx, SAP_ERR_NONFINITE, "jacobi: diagonal entry of row %lld is %g", (long long)i, a);
        SAP_FAIL(ctx, SAP_ERR_SINGULAR, "jacobi: diagonal entry %g of row %lld is out of range for %s", a, (long long)i,
                 flt ? "float" : "double");
    }
    SAP_TRY(dinv_ensure(P, n));
    SAP_TRY(ops->vec_upload(ctx, &d->dinv, h));
cleanup:
    sap__free(ctx, h);
    return st;
}

/* From a CSR in backend memory: 1 / a_ii written by the backend's csr_stats op (its checks
 * only, no statistics), in double (a float preconditioner: SAP_ERR_UNSUPPORTED). */
static sap_status jacobi_setup_dev(sap_precond *P, const sap_dev_csr *A)
{
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    jacobi_data *d = P->data;
    const sap_int n = A->n;
    sap_status st = SAP_OK;
    sap_dev_csr_check chk;
    if (!ops->csr_stats) return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, "jacobi: the %s backend has no csr_stats", ops->name);
    if (P->prec != SAP_DOUBLE)
        return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, "jacobi: the setup from device arrays is in double only");
    SAP_TRY(dinv_ensure(P, n));
    SAP_TRY(ops->csr_stats(ctx, A, &chk, NULL, (double *)d->dinv.data));
    if (chk.bad_rowptr >= 0 || chk.bad_col >= 0 || chk.bad_order >= 0)
        SAP_FAIL(ctx, SAP_ERR_INVALID, "jacobi: malformed CSR (row %lld)",
                 (long long)(chk.bad_rowptr >= 0 ? chk.bad_rowptr : chk.bad_col >= 0 ? chk.bad_col : chk.bad_order));
    if (chk.zero_diag_row >= 0)
        SAP_FAIL(ctx, SAP_ERR_SINGULAR, "jacobi: zero or missing diagonal entry in row %lld", (long long)chk.zero_diag_row);
    if (chk.nonfinite >= 0)
        SAP_FAIL(ctx, SAP_ERR_NONFINITE, "jacobi: entry %lld of the matrix is not finite", (long long)chk.nonfinite);
cleanup:
    return st;
}

static sap_status jacobi_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    jacobi_data *d = P->data;
    return sap__ops(P->ctx)->pointwise_mult(P->ctx, &d->dinv, r, z);
}

const sap_precond_type sap__pc_jacobi = {
    .name = "jacobi",
    .help = "scalar Jacobi M = diag(A) (a zero diagonal entry is SAP_ERR_SINGULAR)",
    .create = jacobi_create,
    .setup_numeric = jacobi_numeric,
    .setup_dev = jacobi_setup_dev,
    .apply = jacobi_apply,
    .destroy = jacobi_destroy,
};
