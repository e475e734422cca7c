/* solver_method_jacobi.c -- the strategy method "jacobi": the Krylov method with the
 * "jacobi" preconditioner on all entries (no band: nothing dropped, no memory or work
 * narrowing).  The last resort of the chain. */
#include "solver/solver_internal.h"

static void jacobi_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                            sap_precision prec, sap__sm_estimate *e)
{
    (void)t;
    (void)P;
    (void)K;
    (void)prec;
    e->bytes = sap__solver_bytes(sap__device_alloc_size(S->x, (double)S->A->nrows * 8.0) + sap__solver_krylov_bytes(S));
    e->flops = 0;
}

static sap_status jacobi_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    sap_status st = SAP_OK;
    SAP_TRY(sap_precond_create(S->x, "jacobi", &a->pc));
    SAP_TRY(sap__solver_krylov_setup(S, a, 1));
    st = sap__solver_krylov_reject(S, a, note, nl, reject);
cleanup:
    return st;
}

static sap_status jacobi_numeric(sap_solver *S, sap__attempt *a) { return sap__solver_krylov_numeric(S, a, 0); }

static void jacobi_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    (void)S;
    sap__solver_krylov_report(a, 0, buf, size);
}

const sap__solver_method_type sap__sm_jacobi = {
    .name = "jacobi",
    .help = "the Krylov method with a Jacobi preconditioner (last resort)",
    .method = SAP_METHOD_JACOBI,
    .band = SAP__SM_BAND_NONE,
    .refine_passes = SV_REFINE_KRYLOV,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .estimate = jacobi_estimate,
    .build = jacobi_build,
    .numeric = jacobi_numeric,
    .solve = sap__solver_krylov_solve,
    .report = jacobi_report,
    .destroy = sap__solver_krylov_destroy,
};
