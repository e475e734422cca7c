/* solver_method_band_lu.c -- the strategy method "band-lu": one banded LU (P = 1, no
 * pivoting: boosting, double factors) of the CM band (no automatic drop-off) as the
 * preconditioner of the Krylov method.  It is SaP-D with one partition: the build,
 * numeric refresh, estimate and report are solver_method_sap.c's. */
#include "solver/solver_internal.h"

static sap_status band_lu_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    return sap__solver_sap_build(S, a, 0, note, nl, reject);
}

const sap__solver_method_type sap__sm_band_lu = {
    .name = "band-lu",
    .alias = "bandlu",
    .help = "one LU of the CM band (P = 1, boosting, double) in the Krylov method",
    .method = SAP_METHOD_BAND_LU,
    .batch = "lockstep Krylov, one band pass a step",
    .band = SAP__SM_BAND_CM,
    .refine_passes = SV_REFINE_KRYLOV,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .shape = NULL, /* P = 1, double */
    .estimate = sap__solver_sap_estimate,
    .build = band_lu_build,
    .numeric = sap__solver_sap_numeric,
    .solve = sap__solver_krylov_solve,
    .report = sap__solver_sap_report,
    .destroy = sap__solver_krylov_destroy,
};
