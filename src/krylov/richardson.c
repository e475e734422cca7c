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
 * A BiCGStab(2) SpMV contracts the residual by ~0.12 there.  Where the preconditioner is
 * less exact, BiCGStab(2) gains less per SpMV too: SaP-D, K = 10, d = 1, P = 1562 (N =
 * 100,000, 64-row partitions): Richardson contracts by ~0.2 a step (14 SpMVs + 14 applies
 * to 1e-10), BiCGStab(2) after a first such step by ~0.35 an SpMV (24 + 21); with K = 20,
 * 8.25 BiCGStab(2) iterations (12 + 11) against 10 Richardson steps.  Richardson's rate is
 * the spectral radius of I - A M^-1; a Krylov polynomial can beat its powers by about 2x
 * in rate at best (Chebyshev on a real interval; not at all on a disc), and BiCGStab(l)
 * spends two SpMVs a degree of its BiCG part and more inner products.  So Richardson goes
 * on while every step contracts by RICH_RATE = 1/4 or better (1/8 before: the K = 10
 * case above fell back).
 *
 * Iterations: one per Richardson step; the right preconditioning of the fallback (the
 * residual monitored is b - A x throughout). */
#include "krylov/krylov_impl.h"

#include <stdio.h>

#define RICH_RATE 0.25

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
        if (s->reason == KRY_CONVERGED) { /* x is the last iterate, r = b - A x: no SpMV more */
            s->rtrue = r;
            s->rtrue_nrm = rn;
        }
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

/* The same for k columns in lockstep (krylov_many.c); the columns that ask for the
 * fallback then go on together through BiCGStab(l)'s lockstep form. */
static sap_status richardson_run_many(kry_many *km)
{
    sap_status st = SAP_OK;
    const int k = km->k;
    const sap_int n = km->n;
    sap_vec *R = &km->W[0], *Z = &km->W[1];
    int ran[KRY_MANY_MAX], fb[KRY_MANY_MAX], nfb = 0;
    double rn[KRY_MANY_MAX], a[KRY_MANY_MAX], one[KRY_MANY_MAX], prev[KRY_MANY_MAX];
    for (int c = 0; c < k; c++) {
        ran[c] = km->active[c];
        fb[c] = 0;
        one[c] = 1.0;
    }
    SAP_TRY(sap__krylov_many_residual(km, &km->X, R, NULL, rn));
    for (int c = 0; c < k; c++) {
        if (!km->active[c]) continue;
        if (sap__krylov_start(&km->col[c], rn[c])) {
            sap__krylov_many_stop(km, c);
            continue;
        }
        const sap_vec xc = sap__vec_column(&km->X, n, c);
        SAP_TRY(sap__krylov_track_best(&km->col[c], &xc)); /* x0: a finite fallback */
    }
    while (sap__krylov_many_count(km) > 0) {
        for (int c = 0; c < k; c++) prev[c] = km->col[c].relres;
        SAP_TRY(sap__krylov_many_prec(km, R, Z));
        SAP_TRY(sap__krylov_many_axpby(km, one, Z, one, &km->X));
        SAP_TRY(sap__krylov_many_residual(km, &km->X, R, NULL, rn));
        int undo = 0;
        for (int c = 0; c < k; c++) {
            a[c] = 0.0;
            if (!km->active[c]) continue;
            kry_solve *s = &km->col[c];
            const double rel = rn[c] / s->refnorm;
            if (!isfinite(rel)) { /* NaN/Inf: recorded as such, the best iterate restored */
                sap__krylov_check(s, s->iter + 1.0, rn[c]);
                sap__krylov_many_stop(km, c);
                continue;
            }
            if (!(rel <= RICH_RATE * prev[c]) && !(rel <= s->tol)) {
                /* too slow a contraction: undo a step that did not reduce the residual, then
                 * BiCGStab(l) from the iterate */
                if (!(rel < prev[c])) {
                    a[c] = -1.0;
                    undo = 1;
                    s->relres = prev[c];
                }
                fb[c] = 1;
                nfb++;
                continue; /* stopped below, after the undo */
            }
            if (sap__krylov_check(s, s->iter + 1.0, rn[c])) sap__krylov_many_stop(km, c);
        }
        if (undo) SAP_TRY(sap__krylov_many_axpby(km, a, Z, one, &km->X));
        for (int c = 0; c < k; c++)
            if (fb[c]) sap__krylov_many_stop(km, c);
        if (sap__krylov_many_monitor(km)) break;
        SAP_TRY(sap__krylov_many_track_best(km));
    }
    for (int c = 0; c < k; c++) {
        if (!ran[c] || fb[c]) continue;
        sap_vec xc = sap__vec_column(&km->X, n, c);
        SAP_TRY(sap__krylov_restore_best(&km->col[c], &xc));
    }
    if (nfb > 0) {
        /* the columns that fell back, unless the monitor stopped them: BiCGStab(l) from their
         * iterates (it recomputes their residuals and tracks its own best iterates) */
        int any = 0, stopped = 0;
        for (int c = 0; c < k; c++) stopped |= km->col[c].reason == KRY_MONITOR;
        for (int c = 0; c < k; c++) {
            kry_solve *s = &km->col[c];
            if (fb[c] && stopped) {
                s->reason = KRY_MONITOR;
                snprintf(s->msg, sizeof(s->msg), "%s: stopped by the monitor at iteration %g (relative residual %.3e)",
                         s->method, s->iter, s->relres);
            }
            km->active[c] = fb[c] && s->reason == KRY_RUNNING;
            if (!km->active[c]) continue;
            any = 1;
            s->best_saved = INFINITY;
        }
        if (any) st = sap__krylov_bicgstabl_method.run_many(km);
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
    .help = "preconditioned Richardson x += M^-1 (b - A x) while every step contracts the residual 4x or more, "
            "then BiCGStab(l) from there (iterations: Richardson steps, then BiCGStab(l)'s)",
    .id = SAP_KRYLOV_RICHARDSON, .default_param = 2, .max_param = 16, .nvec = richardson_nvec, .steps = 4,
    .sides = KRY_SIDES_RIGHT, .run = richardson_run,
    .run_many = richardson_run_many};
