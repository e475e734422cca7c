/* precond.c -- the sap_precond front end: creation by name, call-order checks, timing of
 * the setups, precision conversion around apply. */
#include "precond/precond_impl.h"

#include <string.h>

/* Every preconditioner: one line here (and an extern in precond_impl.h). */
extern const sap_precond_ops sap__pc_sapd_ops, sap__pc_sapc_ops, sap__pc_sap_ops; /* pc_sap.c */
static const sap_precond_ops *const registry[] = {
    &sap__pc_none_ops, &sap__pc_jacobi_ops, &sap__pc_sapd_ops, &sap__pc_sapc_ops, &sap__pc_sap_ops,
};
#define NREG (sizeof(registry) / sizeof(registry[0]))

sap_status sap_precond_create(sap_context *ctx, const char *name, sap_precond **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_precond_create: output pointer is NULL");
    *out = NULL;
    if (!name) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_precond_create: name is NULL");
    const sap_precond_ops *ops = NULL;
    for (size_t i = 0; i < NREG; i++)
        if (strcmp(registry[i]->name, name) == 0) ops = registry[i];
    if (!ops) {
        char known[256] = "";
        for (size_t i = 0; i < NREG; i++) {
            if (i) strncat(known, ", ", sizeof(known) - strlen(known) - 1);
            strncat(known, registry[i]->name, sizeof(known) - strlen(known) - 1);
        }
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown preconditioner '%s' (known: %s)", name, known);
    }
    sap_status st = SAP_OK;
    sap_precond *P = NULL;
    SAP_CALLOC(ctx, P, 1);
    P->ctx = ctx;
    P->ops = ops;
    P->prec = SAP_DOUBLE;
    P->state = SAP_PC_CREATED;
    if (ops->create) SAP_TRY(ops->create(P));
    *out = P;
    return SAP_OK;
cleanup:
    sap_precond_destroy(P);
    return st;
}

static void free_work(sap_precond *P)
{
    const sap_backend_ops *ops = sap__ops(P->ctx);
    sap_vec *v[4] = {&P->wr, &P->wz, &P->hr, &P->hz};
    for (int i = 0; i < 4; i++)
        if (v[i]->data) ops->vec_destroy(P->ctx, v[i]);
}

void sap_precond_destroy(sap_precond *P)
{
    if (!P) return;
    if (P->ops && P->ops->destroy) P->ops->destroy(P);
    free_work(P);
    sap__free(P->ctx, P);
}

const char *sap_precond_name(const sap_precond *P) { return P && P->ops ? P->ops->name : "none"; }

sap_status sap_precond_set_precision(sap_precond *P, sap_precision precision)
{
    if (!P) return SAP_ERR_INVALID;
    if (precision != SAP_DOUBLE && precision != SAP_FLOAT)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "sap_precond_set_precision: unknown precision %d", (int)precision);
    if (precision != P->prec) {
        P->prec = precision;
        free_work(P);
        /* the numeric setup must be redone in the new precision */
        if (P->state > SAP_PC_SYMBOLIC) P->state = SAP_PC_SYMBOLIC;
    }
    return SAP_OK;
}

static sap_status check_matrix(sap_precond *P, const sap_csr *A, const char *fn)
{
    if (!A) return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "%s: matrix is NULL", fn);
    if (A->nrows != A->ncols)
        return SAP_ERROR(P->ctx, SAP_ERR_NOT_SQUARE, "%s (%s): the matrix is %lld x %lld, not square", fn, P->ops->name,
                         (long long)A->nrows, (long long)A->ncols);
    return SAP_OK;
}

sap_status sap_precond_setup_symbolic(sap_precond *P, const sap_csr *A)
{
    if (!P) return SAP_ERR_INVALID;
    sap_status st = check_matrix(P, A, "sap_precond_setup_symbolic");
    if (st < 0) return st;
    double t0 = sap__wtime();
    if (P->n != A->nrows) free_work(P);
    P->n = A->nrows;
    P->state = SAP_PC_CREATED;
    if (P->ops->setup_symbolic) {
        st = P->ops->setup_symbolic(P, A);
        if (st < 0) return st;
    }
    P->state = SAP_PC_SYMBOLIC;
    P->time_symbolic = sap__wtime() - t0;
    return st;
}

sap_status sap_precond_setup_numeric(sap_precond *P, const sap_csr *A)
{
    if (!P) return SAP_ERR_INVALID;
    sap_status st = check_matrix(P, A, "sap_precond_setup_numeric");
    if (st < 0) return st;
    if (P->state < SAP_PC_SYMBOLIC || P->n != A->nrows) {
        /* lazy: the symbolic setup was not done (or was done for another size) */
        st = sap_precond_setup_symbolic(P, A);
        if (st < 0) return st;
    }
    double t0 = sap__wtime();
    P->state = SAP_PC_SYMBOLIC;
    if (P->ops->setup_numeric) {
        sap_status s2 = P->ops->setup_numeric(P, A);
        if (s2 < 0) return s2;
        if (s2 > st) st = s2;
    }
    P->state = SAP_PC_NUMERIC;
    P->time_numeric = sap__wtime() - t0;
    return st;
}

int sap__precond_is_identity(const sap_precond *P) { return !P || P->ops->identity; }

sap_status sap__precond_check_ready(const sap_precond *P, sap_int n)
{
    if (!P) return SAP_OK;
    if (P->state != SAP_PC_NUMERIC)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID,
                         "preconditioner '%s' is not set up (call sap_precond_setup_numeric first)", P->ops->name);
    if (P->n != n)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "preconditioner '%s' was set up for n = %lld, not %lld", P->ops->name,
                         (long long)P->n, (long long)n);
    return SAP_OK;
}

sap_status sap__precond_apply_vec(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    if (!P || !r || !z) return SAP_ERR_INVALID;
    sap_context *ctx = P->ctx;
    sap_status st = sap__precond_check_ready(P, r->n);
    if (st < 0) return st;
    if (z->n != r->n) return SAP_ERROR(ctx, SAP_ERR_INVALID, "preconditioner apply: r and z differ in length");
    if (P->ops->mixed_precision_apply || (r->prec == P->prec && z->prec == P->prec)) return P->ops->apply(P, r, z);
    /* convert r into P's precision, apply there, convert back */
    const sap_backend_ops *ops = sap__ops(ctx);
    if (!P->wr.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->wr));
    if (!P->wz.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->wz));
    const sap_vec *rin = r;
    if (r->prec != P->prec) {
        SAP_TRY(ops->copy(ctx, r, &P->wr));
        rin = &P->wr;
    }
    sap_vec *zout = z->prec == P->prec ? z : &P->wz;
    SAP_TRY(P->ops->apply(P, rin, zout));
    if (zout != z) SAP_TRY(ops->copy(ctx, zout, z));
cleanup:
    return st;
}

sap_status sap_precond_apply(sap_precond *P, const double *r, double *z)
{
    if (!P) return SAP_ERR_INVALID;
    sap_context *ctx = P->ctx;
    sap_status st = sap__precond_check_ready(P, P->n);
    if (st < 0) return st;
    if (P->n > 0 && (!r || !z)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_precond_apply: NULL vector");
    const sap_backend_ops *ops = sap__ops(ctx);
    if (!P->hr.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->hr));
    if (!P->hz.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->hz));
    SAP_TRY(ops->vec_upload(ctx, &P->hr, r));
    SAP_TRY(sap__precond_apply_vec(P, &P->hr, &P->hz));
    SAP_TRY(ops->vec_download(ctx, &P->hz, z));
cleanup:
    return st;
}
