/* richardson.c -- preconditioned Richardson iteration with a BiCGStab(l) fallback:
 * x += M^-1 (b - A x), one SpMV, one preconditioner application, one fused update and one
 * norm a step, while every step divides the residual ||b - A x|| by at least
 * 1 / RICH_RATE; the first step that does not (the first one, for a preconditioner far from
 * A^-1) hands the iterate reached to BiCGStab(l) (parameter l, default 2), which goes on
 * from there in the same solve (its iterations counted after the Richardson steps).
 *
 * Why: with a near-exact preconditioner (SaP-D on a diagonally dominant band, whose
 * truncation leaves a contraction of ~0.02-0.07 per step; SaP-C, band LU: ~1e-4 and less)
 * a Richardson step gains as much as a BiCGStab(2) quarter step (one SpMV and one apply
 * each) without its inner products: measured on the cpu (gen:banded N = 50,000, float
 * factors, to 1e-10): SaP-D K = 200 d = 1 P = 500: 9 SpMVs + 8 applies against BiCGStab(2)'s
 * 14 + 14; K = 50: 10 against 15; d = 2: 8 against 12; SaP-C d = 0.5 P = 100: 4 against 6.
 * A BiCGStab(2) SpMV contracts the residual by ~0.12 there, so a Richardson step that
 * contracts by RICH_RATE = 1/8 or better costs no more per digit gained.
 *
 * Iterations: one per Richardson step; the right preconditioning of the fallback (the
 * residual monitored is b - A x throughout). */
#include "krylov/krylov_impl.h"

#include <stdio.h>

#define RICH_RATE 0.125

static sap_status richardson_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *z = &s->w[1], *x = s->x;
    double rn = 0.0;
    int fallback = 0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto cleanup;
    SAP_TRY(sap__krylov_track_best(s, x)); /* x0: a finite fallback */
    for (;;) {
        const double prev = s->relres;
        SAP_TRY(sap__krylov_prec(s, r, z));
        SAP_TRY(ops->axpby(s->ctx, 1.0, z, 1.0, x));
        SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
        const double rel = rn / s->refnorm;
        if (!isfinite(rel)) { /* NaN/Inf: recorded as such, the best iterate restored */
            sap__krylov_check(s, s->iter + 1.0, rn);
            break;
        }
        if (!(rel <= RICH_RATE * prev) && !(rel <= s->tol)) {
            /* too slow a contraction (or NaN): undo a step that did not reduce the residual,
             * then BiCGStab(l) from the iterate */
            if (!(rel < prev)) {
                SAP_TRY(ops->axpby(s->ctx, -1.0, z, 1.0, x));
                s->relres = prev;
            }
            fallback = 1;
            break;
        }
        if (sap__krylov_check(s, s->iter + 1.0, rn)) break;
        SAP_TRY(sap__krylov_track_best(s, x));
    }
    if (!fallback) {
        SAP_TRY(sap__krylov_restore_best(s, x));
    } else {
        /* the residual of x is recomputed by BiCGStab(l), which tracks its own best
         * iterate (of its correction y when right preconditioned) */
        s->best_saved = INFINITY;
        st = sap__krylov_bicgstabl_method.run(s);
    }
cleanup:
    return st;
}

static int richardson_nvec(int l)
{
    const int v = sap__krylov_bicgstabl_method.nvec(l); /* the fallback's; r and z among them */
    return v > 2 ? v : 2;
}

const sap_krylov_method sap__krylov_richardson_method = {
    .name = "richardson",
    .help = "preconditioned Richardson x += M^-1 (b - A x) while every step contracts the residual 8x or more, "
            "then BiCGStab(l) from there (iterations: Richardson steps, then BiCGStab(l)'s)",
    .id = SAP_KRYLOV_RICHARDSON, .default_param = 2, .max_param = 16, .nvec = richardson_nvec, .steps = 4,
    .sides = KRY_SIDES_RIGHT, .run = richardson_run};
