/* ir.c -- mixed-precision iterative refinement as a Krylov method: the residual
 * r = b - A x and the update x += d in the matrix' precision (double), the correction
 * A d = r solved in float by an inner Krylov method (the parameter: "ir:gmres", the
 * default, "ir:bicgstab", "ir:idr", ...) on a float copy of A made once per matrix
 * (sap__matrix_derived), preconditioned by the same preconditioner (its front end converts
 * the vectors).  Each inner solve stops at the relative tolerance max(IR_INNER_TOL,
 * 0.1 tol / ||r|| ||b||^-1) (no tighter than the outer step needs); float limits one
 * inner solve to about 1e-6.  Iterations: the inner ones plus one per refinement step
 * (its residual SpMV), summed (maxit bounds them); the monitor (and the history) sees the
 * inner iterations (with the inner residual scaled to an estimate of the outer one) and
 * after every refinement step the true relative residual ||b - A x|| / ||b||, which is
 * what the method monitors and stops on.  The preconditioner
 * side of the inner method follows opt.side.  A refinement step that does not reduce the
 * residual by IR_MIN_GAIN stops the method: SAP_WARN_STAGNATED (float cannot resolve the
 * correction: the matrix is too ill-conditioned for float), or the inner method's
 * breakdown status when it broke down. */
#include "krylov/krylov_impl.h"

#include <stdio.h>

#define IR_INNER_TOL 1e-4
#define IR_MIN_GAIN 0.9

static sap_status ir_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *d = &s->w[1], *x = s->x;
    const int inner_id = s->K->param - 1;

    double rn = 0.0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(sap__krylov_track_best(s, x)); /* x0: a finite fallback if the iteration overflows */
    for (;;) {
        const double rel = s->relres;
        double itol = 0.1 * s->tol / rel;
        if (itol < IR_INNER_TOL) itol = IR_INNER_TOL;
        if (itol > 0.5) itol = 0.5;
        double it = 0.0;
        kry_reason why = KRY_RUNNING;
        const double left = s->maxit - s->iter - 1.0; /* one for the refinement step */
        SAP_TRY(sap__krylov_inner_solve(s, inner_id, SAP_FLOAT, r, d, itol, left > 1.0 ? left : 1.0, rel, &it, &why));
        if (why == KRY_MONITOR) {
            s->iter += it;
            s->reason = KRY_MONITOR;
            snprintf(s->msg, sizeof(s->msg), "%s: stopped by the monitor at iteration %g (relative residual %.3e)",
                     s->method, s->iter, rel);
            goto done;
        }
        SAP_TRY(ops->axpby(s->ctx, 1.0, d, 1.0, x));
        SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
        if (sap__krylov_check(s, s->iter + it + 1.0, rn)) break;
        if (!(s->relres < IR_MIN_GAIN * rel)) {
            if (why == KRY_BREAKDOWN || why == KRY_NONFINITE) {
                s->reason = why == KRY_NONFINITE && !isfinite(s->relres) ? KRY_NONFINITE : KRY_BREAKDOWN;
            } else {
                s->reason = KRY_STAGNATED;
                snprintf(s->msg, sizeof(s->msg),
                         "%s: a refinement step reduced the relative residual only from %.3e to %.3e at iteration %g "
                         "(the float inner solve cannot resolve the correction)",
                         s->method, rel, s->relres, s->iter);
            }
            break;
        }
        SAP_TRY(sap__krylov_track_best(s, x));
    }
done:
    if (s->reason == KRY_CONVERGED) { /* x is the last iterate, r = b - A x: no SpMV more */
        s->rtrue = r;
        s->rtrue_nrm = rn;
    }
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int ir_nvec(int param)
{
    (void)param;
    return 2; /* r, d */
}

const sap_krylov_method sap__krylov_ir_method = {
    .name = "ir",
    .help = "mixed-precision iterative refinement: float inner solve by the method named as parameter "
            "(ir:gmres default, ir:bicgstab, ...) inside a double residual loop",
    .id = SAP_KRYLOV_IR, .default_param = SAP_KRYLOV_GMRES + 1, .max_param = SAP_KRYLOV_FIRST_REGISTERED + SAP_KRYLOV_MAX_METHODS,
    .nvec = ir_nvec, .steps = 1, .sides = KRY_SIDES_SYMMETRIC, .run = ir_run, .param_is_method = 1};
