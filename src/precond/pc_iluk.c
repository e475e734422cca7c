/* pc_iluk.c -- ILU(k) ("iluk"): the incomplete LU on the pattern of symbolic fill levels
 * <= k (ilu_factor.h), applied by two triangular solves on the backend. */
#include "precond/ilu_factor.h"

#include <stdio.h>

typedef struct iluk_opts {
    sap_int k;
    double pivot_tol;
} iluk_opts;

static const sap_opt_def iluk_defs[] = {
    {.name = "k", .alias = "levels", .help = "fill level kept", .def = "1", .kind = SAP_OPT_INT,
     SAP_OPT_AT(iluk_opts, k), .lo = 0, .hi = 1000, .meta = "K"},
    SAP_ILU_PIVOT_OPT(iluk_opts),
};

static sap_status iluk_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const iluk_opts *o = P->opts;
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    sap_csr *LU = NULL;
    sap_int shifted = 0;
    const double t0 = sap__wtime();
    SAP_TRY(sap__iluk_pattern(ctx, A, o->k, &LU));
    const double t1 = sap__wtime();
    SAP_TRY(sap__ilu_numeric(ctx, LU, o->pivot_tol, &shifted));
    snprintf(d->extra, sizeof(d->extra), "fill levels k = %lld, symbolic %.3g s", (long long)o->k, t1 - t0);
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap_csr_destroy(LU);
    return st;
}

SAP_ILU_TYPE(sap__pc_iluk, "iluk",
             "ILU(k): incomplete LU with symbolic fill levels <= k, level-scheduled triangular solves",
             iluk_defs, iluk_opts, iluk_numeric);
