/* pc_ic0.c -- IC(0) ("ic0"): incomplete Cholesky L L^T on the lower pattern of a
 * symmetric positive definite A (its lower triangle is read), applied by a lower and an
 * upper (L^T) triangular solve on the backend.  Non-positive pivots are shifted
 * (SAP_WARN_BOOSTED_PIVOTS). */
#include "precond/ilu_factor.h"

typedef struct ic0_opts {
    double pivot_tol;
} ic0_opts;

static const sap_opt_def ic0_defs[] = {SAP_ILU_PIVOT_OPT(ic0_opts)};

static sap_status ic0_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const ic0_opts *o = P->opts;
    sap_status st = SAP_OK;
    sap_csr *L = NULL, *LT = NULL;
    sap_int shifted = 0;
    const double t0 = sap__wtime();
    SAP_TRY(sap__ic0(ctx, A, o->pivot_tol, &L, &shifted));
    SAP_TRY(sap_csr_transpose(L, &LT));
    SAP_TRY(sap__ilu_pc_finish(P, A, L, 0, LT, shifted, sap__wtime() - t0));
cleanup:
    sap_csr_destroy(L);
    sap_csr_destroy(LT);
    return st;
}

SAP_ILU_TYPE(sap__pc_ic0, "ic0",
             "IC(0): incomplete Cholesky on the lower pattern of a symmetric positive definite A",
             ic0_defs, ic0_opts, ic0_numeric);
