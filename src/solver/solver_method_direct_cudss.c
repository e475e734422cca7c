/* solver_method_direct_cudss.c -- the strategy method "direct-cudss": the cuda backend's
 * sparse direct kernels (device/direct_kernels.h: NVIDIA cuDSS loaded at run time,
 * $SAP_CUDSS_LIB) on the context's device, refined in double (solver_method_direct.c).
 * On a cpu context or without a loadable cuDSS it fails with SAP_ERR_UNSUPPORTED and the
 * reason; the chain lists it only where it can run (solver_plan.c). */
#include "device/device.h"
#include "solver/solver_internal.h"

#include <stdio.h>

static sap_status cudss_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    (void)reject;
    if (!sap__solver_on_cuda(S->ctx) || !sap__ops(S->ctx)->direct) {
        snprintf(note, nl, "cuDSS needs a cuda context (this one is %s)", sap__ops(S->ctx)->name);
        return SAP_ERROR(S->ctx, SAP_ERR_UNSUPPORTED, "sap_solver %s: %s", a->type->name, note);
    }
    return sap__solver_direct_build(S, a, sap__ops(S->ctx)->direct, S->ctx, SAP_ERR_UNSUPPORTED, note, nl);
}

const sap__solver_method_type sap__sm_direct_cudss = {
    .name = "direct-cudss",
    .alias = "cudss",
    .help = "sparse direct on the GPU (NVIDIA cuDSS loaded at run time: $SAP_CUDSS_LIB), refined in double",
    .method = SAP_METHOD_DIRECT_CUDSS,
    .band = SAP__SM_BAND_NONE,
    .refine_passes = SV_REFINE_DIRECT,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .direct = 1,
    .batch = "one direct solve per step",
    .estimate = sap__solver_direct_estimate,
    .build = cudss_build,
    .numeric = sap__solver_direct_numeric,
    .solve = sap__solver_direct_solve,
    .report = sap__solver_direct_report,
    .destroy = sap__solver_direct_destroy,
};
