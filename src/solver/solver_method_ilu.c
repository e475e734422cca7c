/* solver_method_ilu.c -- the strategy method "ilu": an incomplete factorization of the
 * reordered matrix (all entries, no band) as the Krylov method's preconditioner: IC(0)
 * with CG for an SPD-looking matrix without DB, ILU(0) with BiCGStab(2) otherwise (the
 * CM order of the setup is a good one for both); when IC(0) / ILU(0) meets zero or tiny
 * pivots (shifted: SAP_WARN_BOOSTED_PIVOTS of the preconditioner) it is rebuilt as ILUT
 * (threshold dropping, pivots from the kept fill) with BiCGStab(2). */
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

static void ilu_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                         sap_precision prec, sap__sm_estimate *e)
{
    (void)t, (void)P, (void)K, (void)prec;
    /* the factors: A's pattern (ILU(0)) twice over for ILUT's fill, 12 bytes an entry */
    const double nnz = (double)S->A->nnz;
    e->bytes = sap__solver_bytes(sap__device_alloc_size(S->x, 2.0 * 12.0 * nnz) + sap__solver_krylov_bytes(S));
    e->flops = 0;
    e->seconds = SV_SECONDS_UNKNOWN; /* the cost model predicts it (solver_cost.c), not the band rate */
}

/* the preconditioner's numeric setup; a shifted pivot is remembered in a->boosted */
static sap_status ilu_numeric(sap_solver *S, sap__attempt *a)
{
    sap_status st = sap__solver_krylov_numeric(S, a, 0);
    if (st == SAP_WARN_BOOSTED_PIVOTS) a->boosted = 1;
    return st;
}

static sap_status ilu_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    (void)reject;
    sap_status st = SAP_OK;
    const int spd = S->stats.spd && !S->stats.db_used;
    if (a->mem > S->mem_limit) {
        snprintf(note, nl, "%.3g GB > limit %.3g GB", (double)a->mem / 1e9, (double)S->mem_limit / 1e9);
        return SAP_ERROR(S->ctx, SAP_ERR_OUT_OF_MEMORY, "sap_solver ilu: %s", note);
    }
    SAP_TRY(sap_precond_create(S->x, spd ? "ic0" : "ilu0", &a->pc));
    SAP_TRY(sap__solver_krylov_setup(S, a, spd));
    if (a->boosted) {
        /* zero or tiny pivots: ILUT instead (nonsymmetric: BiCGStab(2)) */
        snprintf(note, nl, "%s shifted pivots: ILUT", spd ? "IC(0)" : "ILU(0)");
        sap__solver_krylov_destroy(S, a);
        a->boosted = 0;
        SAP_TRY(sap_precond_create(S->x, "ilut", &a->pc));
        SAP_TRY(sap__solver_krylov_setup(S, a, 0));
        if (a->boosted) snprintf(note, nl, "%s and ILUT shifted pivots", spd ? "IC(0)" : "ILU(0)");
        a->boosted = 0; /* shifted pivots of an incomplete factorization are not DB's boosted ones */
    }
cleanup:
    return st;
}

static void ilu_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    (void)S;
    char k[32];
    sap__solver_krylov_report(a, 0, k, sizeof(k));
    const char *p = a->pc ? sap_precond_name(a->pc) : "ilu";
    snprintf(buf, size, "%s, %s", strcmp(p, "ic0") == 0 ? "IC(0)" : strcmp(p, "ilu0") == 0 ? "ILU(0)" : "ILUT", k);
}

const sap__solver_method_type sap__sm_ilu = {
    .name = "ilu",
    .help = "incomplete factorization: IC(0) + CG (SPD), ILU(0) + BiCGStab(2), ILUT on zero pivots",
    .method = SAP_METHOD_ILU,
    .band = SAP__SM_BAND_NONE,
    .refine_passes = SV_REFINE_KRYLOV,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .estimate = ilu_estimate,
    .build = ilu_build,
    .numeric = ilu_numeric,
    .solve = sap__solver_krylov_solve,
    .report = ilu_report,
    .destroy = sap__solver_krylov_destroy,
};
