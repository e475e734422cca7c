/* solver_method_direct_host.c -- the strategy method "direct-host": the cpu backend's
 * sparse direct kernels (device/direct_kernels.h) on the host whatever the context's
 * backend: SuiteSparse CHOLMOD for an SPD-looking matrix (UMFPACK when it is not positive
 * definite), UMFPACK otherwise; refined in double (solver_method_direct.c).  The last
 * resort of the chain; SAP_ERR_NOT_COMPILED "not built with SuiteSparse" in a build
 * without it. */
#include "device/device.h"
#include "solver/solver_internal.h"

static int host_available(void) { return sap__direct_host_kernels()->available(NULL, NULL, 0); }

static sap_status host_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    (void)reject;
    return sap__solver_direct_build(S, a, sap__direct_host_kernels(), S->x, SAP_ERR_NOT_COMPILED, note, nl);
}

const sap__solver_method_type sap__sm_direct_host = {
    .name = "direct-host",
    .alias = "directhost",
    .help = "sparse direct on the host (SuiteSparse CHOLMOD / UMFPACK), refined in double",
    .method = SAP_METHOD_DIRECT_HOST,
    .band = SAP__SM_BAND_NONE,
    .refine_passes = SV_REFINE_DIRECT,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .direct = 1,
    .batch = "one direct solve per step",
    .available = host_available,
    .estimate = sap__solver_direct_estimate,
    .build = host_build,
    .numeric = sap__solver_direct_numeric,
    .solve = sap__solver_direct_solve,
    .report = sap__solver_direct_report,
    .destroy = sap__solver_direct_destroy,
};
