/* cg.c -- preconditioned conjugate gradients (Hestenes-Stiefel) for SPD A and SPD M.
 * Symmetric form: the iteration monitors the unpreconditioned residual ||r|| = ||b - Ax||
 * whatever opt.side says (left and right preconditioning give the same iterates for CG).
 * One SpMV, one preconditioner apply and the fused update x += alpha p, r -= alpha q with
 * r.r per iteration.  Breakdown: p.Ap = 0 or r.z = 0 (z = M^-1 r). */
#include "krylov/krylov_impl.h"

static sap_status cg_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *z = &s->w[1], *p = &s->w[2], *q = &s->w[3], *x = s->x;
    const int pc = s->P != NULL;
    if (!pc) z = r;

    double rn = 0.0, rz = 0.0, pq = 0.0, rr = 0.0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    if (pc) {
        SAP_TRY(sap__krylov_prec(s, r, z));
        SAP_TRY(ops->dot(ctx, r, z, &rz));
        KRY_SCALAR(s, "rho = r . M^-1 r", rz, 1);
    } else {
        rz = rn * rn;
    }
    SAP_TRY(ops->copy(ctx, z, p));
    for (;;) {
        SAP_TRY(sap__krylov_spmv(s, p, q));
        SAP_TRY(ops->dot(ctx, p, q, &pq));
        KRY_SCALAR(s, "p . A p", pq, 1);
        const double alpha = rz / pq;
        KRY_SCALAR(s, "alpha", alpha, 0);
        SAP_TRY(ops->cg_update(ctx, alpha, p, q, x, r, &rr));
        if (sap__krylov_check(s, s->iter + 1.0, sqrt(rr))) break;
        SAP_TRY(sap__krylov_track_best(s, x));
        double rz_new = rr;
        if (pc) {
            SAP_TRY(sap__krylov_prec(s, r, z));
            SAP_TRY(ops->dot(ctx, r, z, &rz_new));
        }
        KRY_SCALAR(s, "rho = r . M^-1 r", rz_new, 1);
        const double beta = rz_new / rz;
        rz = rz_new;
        SAP_TRY(ops->axpby(ctx, 1.0, z, beta, p));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int cg_nvec(int param)
{
    (void)param;
    return 4; /* r, z, p, q */
}

const sap_krylov_method sap__krylov_cg_method = {
    .name = "cg", .help = "conjugate gradients for SPD A and M (symmetric preconditioning)",
    .id = SAP_KRYLOV_CG, .nvec = cg_nvec, .steps = 1, .sides = KRY_SIDES_SYMMETRIC, .run = cg_run};
