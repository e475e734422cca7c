/* pc_ilu0.c -- ILU(0) ("ilu0"): the incomplete LU on A's pattern (cpu: host, level-parallel;
 * cuda: on the device, trsv_kernels.h ilu0, the host path where the device declines A),
 * applied by two triangular solves on the backend (device/trsv_kernels.h).  Zero or tiny
 * pivots are shifted (SAP_WARN_BOOSTED_PIVOTS, counted in the report). */
#include "precond/ilu_factor.h"

typedef struct ilu0_opts {
    double pivot_tol;
} ilu0_opts;

static const sap_opt_def ilu0_defs[] = {SAP_ILU_PIVOT_OPT(ilu0_opts)};

static sap_status ilu0_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const ilu0_opts *o = P->opts;
    sap_status st = SAP_OK;
    sap_csr *LU = NULL;
    sap_int shifted = 0;
    const double t0 = sap__wtime();
    int done = 0;
    /* on a device: factored there (A as it is, or with the diagonal added on the host) */
    SAP_TRY(sap__ilu_pc_device_ilu0(P, A, A, o->pivot_tol, &done));
    if (done) goto cleanup;
    SAP_TRY(sap__iluk_pattern(ctx, A, 0, &LU));
    if (sap__ops(ctx)->trsv->ilu0) {
        SAP_TRY(sap__ilu_pc_device_ilu0(P, A, LU, o->pivot_tol, &done));
        if (done) goto cleanup;
    }
    SAP_TRY(sap__ilu_numeric(ctx, LU, o->pivot_tol, &shifted));
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap_csr_destroy(LU);
    return st;
}

SAP_ILU_TYPE(sap__pc_ilu0, "ilu0",
             "ILU(0): incomplete LU on A's pattern, level-scheduled triangular solves",
             ilu0_defs, ilu0_opts, ilu0_numeric);
