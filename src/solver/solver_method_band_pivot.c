/* solver_method_band_pivot.c -- the strategy method "band-pivot": LAPACK's banded LU with
 * partial pivoting (dgbtrf, solver_band_pivot.c) of the CM band on the host, applied as a
 * direct solve inside the refinement (one pass is one dgbtrs; several right-hand sides go
 * through one call).  The most robust fallback, for bands that fit the memory. */
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

#define SV_REFINE_PIVOT 10 /* refinement passes: each is one triangular solve */
#define SV_RATE_LAPACK 1.0e10 /* flop/s of dgbtrf per host thread (blocked: cache-friendly;
                                 measured ~2.5e10 on a 2-core host, K = 400) */

static int band_pivot_available(void) { return sap__bp_available(); }

/* The factorization (kl = ku = K, the fill rows included) and four vectors. */
static void band_pivot_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                                sap_precision prec, sap__sm_estimate *e)
{
    (void)t;
    (void)P;
    (void)prec;
    const double n = (double)S->A->nrows;
    e->bytes = sap__bp_bytes(S->A->nrows, K) + (int64_t)(4 * n * 8);
    e->flops = 4.0 * n * (double)K * (double)K; /* kl + ku = 2K above the diagonal */
    /* on the host whatever the context's backend */
    e->seconds = e->flops / (SV_RATE_LAPACK * (double)sap__threads(S->x)) + (double)e->bytes / 2.0e9;
}

static sap_status band_pivot_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    (void)reject;
    sap_status st = SAP_OK;
    sap__bp *bp = NULL;
    if (!sap__bp_available()) SAP_FAIL(S->ctx, SAP_ERR_NOT_COMPILED, "sap_solver band-pivot: this build has no LAPACK");
    const sap_csr *PC = sap__solver_att_pcm(S, a);
    sap_int kl, ku;
    sap__csr_lower_upper(PC, sap__threads(S->ctx), &kl, &ku);
    SAP_TRY(sap__bp_create(S->x, PC, kl, ku, &bp));
    a->impl = bp;
    a->t_asmbl = bp->t_asmbl;
    a->t_lu = bp->t_lu;
    a->Kmax = kl > ku ? kl : ku;
    snprintf(note + strlen(note), nl - strlen(note), "%sdgbtrf kl %lld ku %lld", note[0] ? ", " : "", (long long)kl,
             (long long)ku);
cleanup:
    return st;
}

static sap_status band_pivot_numeric(sap_solver *S, sap__attempt *a)
{
    sap__bp *bp = a->impl;
    sap_status st = SAP_OK;
    SAP_TRY(sap__bp_refactor(bp, sap__solver_att_pcm(S, a)));
    a->t_asmbl = bp->t_asmbl;
    a->t_lu = bp->t_lu;
cleanup:
    return st;
}

/* The m columns by one dgbtrs call (the guesses are not needed); one iteration a call. */
static sap_status band_pivot_solve(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                                   const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters,
                                   double *tkry)
{
    (void)X0;
    (void)ldx0;
    const sap_int n = S->A->nrows;
    double *tmp = S->w + 4 * n;
    sap_status st = SAP_OK;
    for (sap_int c = 0; c < m; c++) SAP_TRY(sap_reorder_apply_rhs(S->R, R + c * ldr, X + c * ldx));
    double t0 = sap__wtime();
    SAP_TRY(sap__bp_solve(a->impl, m, X, ldx));
    if (tkry) *tkry += sap__wtime() - t0;
    if (iters) *iters += 1;
    for (sap_int c = 0; c < m; c++) {
        SAP_TRY(sap_reorder_undo_solution(S->R, X + c * ldx, tmp));
        memcpy(X + c * ldx, tmp, sizeof(double) * (size_t)n);
    }
cleanup:
    return st;
}

static void band_pivot_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    (void)S;
    (void)a;
    snprintf(buf, size, "dgbtrf");
}

static void band_pivot_destroy(sap_solver *S, sap__attempt *a)
{
    (void)S;
    sap__bp_destroy(a->impl);
    a->impl = NULL;
}

const sap__solver_method_type sap__sm_band_pivot = {
    .name = "band-pivot",
    .alias = "bandpivot",
    .help = "banded LU with pivoting (LAPACK dgbtrf, host), direct with refinement",
    .method = SAP_METHOD_BAND_PIVOT,
    .band = SAP__SM_BAND_CM,
    .refine_passes = SV_REFINE_PIVOT,
    .refine_slow = SAP__REFINE_SLOW_GOES_ON,
    .direct = 1,
    .batch = "one dgbtrs per step",
    .available = band_pivot_available,
    .estimate = band_pivot_estimate,
    .build = band_pivot_build,
    .numeric = band_pivot_numeric,
    .solve = band_pivot_solve,
    .report = band_pivot_report,
    .destroy = band_pivot_destroy,
};
