/* bicg.c -- preconditioned BiCG (Fletcher 1976; the form of Barrett et al., Templates,
 * 1994): the primal recursion on A with z = M^-1 r, the dual (shadow) recursion on A^T with
 * zt = M^-T rt.  The preconditioner enters symmetrically (opt.side is ignored): the
 * monitored residual is ||r|| = ||b - A x|| (recursive).  A^T is built once per matrix
 * (sap__matrix_derived); M^-T is sap__krylov_prec_t (the preconditioner set up on A^T as
 * well, see krylov_impl.h).  Two SpMVs (A, A^T) and two preconditioner applications per iteration.
 * Shadow residual rt = r0.  Breakdown: rho = z . rt = 0, pt . A p = 0. */
#include "krylov/krylov_impl.h"

static sap_status bicg_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *rt = &s->w[1], *z = &s->w[2], *zt = &s->w[3], *p = &s->w[4], *pt = &s->w[5];
    sap_vec *q = &s->w[6], *qt = &s->w[7], *x = s->x;
    const int pc = s->P != NULL;
    if (!pc) {
        z = r;
        zt = rt;
    }

    double rn = 0.0, rho = 0.0, rho_old = 1.0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(sap__krylov_track_best(s, x)); /* x0: a finite fallback if the iteration overflows */
    SAP_TRY(ops->copy(ctx, r, rt));
    for (int first = 1;; first = 0) {
        if (pc) {
            SAP_TRY(sap__krylov_prec(s, r, z));
            SAP_TRY(sap__krylov_prec_t(s, rt, zt));
        }
        SAP_TRY(ops->dot(ctx, z, rt, &rho));
        KRY_SCALAR(s, "rho = M^-1 r . rt", rho, 1);
        if (first) {
            SAP_TRY(ops->copy(ctx, z, p));
            SAP_TRY(ops->copy(ctx, zt, pt));
        } else {
            const double beta = rho / rho_old;
            KRY_SCALAR(s, "beta", beta, 0);
            SAP_TRY(ops->axpby(ctx, 1.0, z, beta, p));
            SAP_TRY(ops->axpby(ctx, 1.0, zt, beta, pt));
        }
        rho_old = rho;
        SAP_TRY(sap__krylov_spmv(s, p, q));
        SAP_TRY(sap__krylov_spmv_t(s, pt, qt));
        double ptq = 0.0;
        SAP_TRY(ops->dot(ctx, pt, q, &ptq));
        KRY_SCALAR(s, "pt . A p", ptq, 1);
        const double alpha = rho / ptq;
        KRY_SCALAR(s, "alpha", alpha, 0);
        SAP_TRY(ops->axpby(ctx, alpha, p, 1.0, x));
        SAP_TRY(ops->axpby(ctx, -alpha, qt, 1.0, rt));
        SAP_TRY(ops->axpby_nrm2(ctx, -alpha, q, 1.0, r, &rn));
        if (sap__krylov_check(s, s->iter + 1.0, rn)) break;
        SAP_TRY(sap__krylov_track_best(s, x));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int bicg_nvec(int param)
{
    (void)param;
    return 8; /* r, rt, z, zt, p, pt, q, qt */
}

const sap_krylov_method sap__krylov_bicg_method = {
    .name = "bicg", .help = "BiCG (A^T x products; M^-T: the preconditioner set up on A^T as well)", .id = SAP_KRYLOV_BICG,
    .nvec = bicg_nvec, .steps = 1, .sides = KRY_SIDES_SYMMETRIC, .run = bicg_run, .dual = 1};
