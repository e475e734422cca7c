/* solver_method_bjacobi.c -- the strategy method "bjacobi": block-Jacobi on the natural
 * blocks of the reordered matrix (the "bjacobi" preconditioner: supervariables of identical
 * row pattern, agglomerated up to 32 rows, each block inverted) in the Krylov method (CG for
 * an SPD-looking matrix without DB: the blocks of an SPD matrix are SPD).  A matrix whose
 * blocks average one row (no natural blocks: it would be Jacobi) fails with
 * SAP_ERR_UNSUPPORTED, and the chain goes on; a block that falls back to scalar Jacobi
 * (singular) counts as a boosted pivot (rejected above 1% of N while a fallback remains). */
#include "solver/solver_internal.h"

#include <stdio.h>

static void bjacobi_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                             sap_precision prec, sap__sm_estimate *e)
{
    (void)t, (void)P, (void)K, (void)prec;
    /* the inverted blocks: at most 32 x 32 doubles a block row, the block tables */
    const double n = (double)S->A->nrows, b = S->bj_avg > 1 ? S->bj_avg : 32.0;
    e->bytes = sap__solver_bytes(sap__device_alloc_size(S->x, n * b * 8.0 + 3.0 * n * 8.0) + sap__solver_krylov_bytes(S));
    e->flops = 0;
    e->seconds = SV_SECONDS_UNKNOWN; /* the cost model predicts it (solver_cost.c) */
}

static sap_status bjacobi_numeric(sap_solver *S, sap__attempt *a)
{
    sap_status st = sap__solver_krylov_numeric(S, a, 0);
    if (st == SAP_WARN_BOOSTED_PIVOTS) a->boosted = a->boosted > 0 ? a->boosted : 1;
    return st;
}

static sap_status bjacobi_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    sap_status st = SAP_OK;
    if (S->bj_avg <= 0) SAP_TRY(sap__cost_blocks(S)); /* the plan could not tell */
    if (S->bj_avg <= 1.0) {
        snprintf(note, nl, "no natural blocks (average block %.2g rows)", S->bj_avg);
        return SAP_ERROR(S->ctx, SAP_ERR_UNSUPPORTED, "sap_solver bjacobi: %s", note);
    }
    if (a->mem > S->mem_limit) {
        snprintf(note, nl, "%.3g GB > limit %.3g GB", (double)a->mem / 1e9, (double)S->mem_limit / 1e9);
        return SAP_ERROR(S->ctx, SAP_ERR_OUT_OF_MEMORY, "sap_solver bjacobi: %s", note);
    }
    SAP_TRY(sap_precond_create(S->x, "bjacobi", &a->pc));
    SAP_TRY(sap__solver_krylov_setup(S, a, 1));
    if (a->boosted && !a->final) {
        *reject = 1;
        snprintf(note, nl, "singular blocks (scalar Jacobi for them)");
        st = SAP_WARN_BOOSTED_PIVOTS;
    } else {
        snprintf(note, nl, "blocks of %.2g rows on average", S->bj_avg);
    }
cleanup:
    return st;
}

static void bjacobi_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    char k[32];
    sap__solver_krylov_report(a, 0, k, sizeof(k));
    snprintf(buf, size, "blocks of %.2g rows, %s", S->bj_avg, k);
}

const sap__solver_method_type sap__sm_bjacobi = {
    .name = "bjacobi",
    .alias = "block-jacobi",
    .help = "block-Jacobi on the natural blocks (supervariables) in the Krylov method",
    .method = SAP_METHOD_BJACOBI,
    .band = SAP__SM_BAND_NONE,
    .refine_passes = SV_REFINE_KRYLOV,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .estimate = bjacobi_estimate,
    .build = bjacobi_build,
    .numeric = bjacobi_numeric,
    .solve = sap__solver_krylov_solve,
    .report = bjacobi_report,
    .destroy = sap__solver_krylov_destroy,
};
