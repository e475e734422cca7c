/* pc_parilu.c -- ParILU ("parilu", Chow and Patel): the ILU(0) factors approximated by a
 * few fixed-point sweeps run on the backend (device/trsv_kernels.h, parilu: every entry
 * in parallel), from the initial guess L = A_lower D^{-1}, U = A_upper; then the pivot
 * rule of ilu_factor.h and two triangular solves on the backend.  Many sweeps converge to
 * the host ILU(0) (the reference, test_ilu). */
#include "precond/ilu_factor.h"

#include <math.h>
#include <stdio.h>

typedef struct parilu_opts {
    sap_int sweeps;
    double pivot_tol;
} parilu_opts;

static const sap_opt_def parilu_defs[] = {
    {.name = "sweeps", .help = "fixed-point sweeps", .def = "3", .kind = SAP_OPT_INT, SAP_OPT_AT(parilu_opts, sweeps),
     .lo = 0, .hi = 1000, .meta = "S"},
    SAP_ILU_PIVOT_OPT(parilu_opts),
};

static sap_status parilu_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const parilu_opts *o = P->opts;
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    sap_csr *LU = NULL, *S = NULL;
    sap_int shifted = 0;
    const double t0 = sap__wtime();
    SAP_TRY(sap__parilu_start(ctx, A, &S, &LU));
    SAP_TRY(sap__ops(ctx)->trsv->parilu(ctx, S, (int)o->sweeps, LU->val));
    SAP_TRY(sap__ilu_fix_pivots(ctx, LU, A, o->pivot_tol, &shifted));
    snprintf(d->extra, sizeof(d->extra), "%lld sweeps on the %s backend", (long long)o->sweeps,
             sap__ops(ctx)->trsv->name);
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap_csr_destroy(S);
    sap_csr_destroy(LU);
    return st;
}

SAP_ILU_TYPE(sap__pc_parilu, "parilu",
             "ParILU: ILU(0) by fixed-point sweeps on the backend (Chow-Patel), level-scheduled triangular solves",
             parilu_defs, parilu_opts, parilu_numeric);
