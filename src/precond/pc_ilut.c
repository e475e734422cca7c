/* pc_ilut.c -- ILUT(p, tau) ("ilut", Saad): threshold incomplete LU keeping at most p
 * entries in each of the L and U parts of a row, dropping entries below tau times the
 * row's mean magnitude (host, sequential; ilu_factor.h), applied by two triangular solves
 * on the backend. */
#include "precond/ilu_factor.h"

#include <stdio.h>

typedef struct ilut_opts {
    sap_int p;
    double tau;
    double pivot_tol;
} ilut_opts;

static const sap_opt_def ilut_defs[] = {
    SAP_ILUT_OPTS(ilut_opts, "10", "1e-3"),
    SAP_ILU_PIVOT_OPT(ilut_opts),
};

static sap_status ilut_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const ilut_opts *o = P->opts;
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    sap_csr *LU = NULL;
    sap_int shifted = 0;
    const double t0 = sap__wtime();
    SAP_TRY(sap__ilut(ctx, A, o->p, o->tau, o->pivot_tol, &LU, &shifted));
    snprintf(d->extra, sizeof(d->extra), "p = %lld, tau = %g", (long long)o->p, o->tau);
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap_csr_destroy(LU);
    return st;
}

SAP_ILU_TYPE(sap__pc_ilut, "ilut",
             "ILUT(p, tau): threshold incomplete LU (p entries per row in L and U, drop below tau * mean |a_ij| of the row)",
             ilut_defs, ilut_opts, ilut_numeric);
