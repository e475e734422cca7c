/* pc_bilut.c -- block ILUT ("bilut", the seed's BILUT): ILUT(p, tau) of B diagonal blocks
 * (METIS partitions, ilu_dd.c) at once, one pair of triangular solves for all blocks. */
#include "precond/ilu_factor.h"

#include <stdio.h>

typedef struct bilut_opts {
    sap_int blocks, p;
    double tau, pivot_tol;
} bilut_opts;

static const sap_opt_def bilut_defs[] = {
    SAP_ILU_BLOCKS_OPT(bilut_opts, "16"),
    SAP_ILUT_OPTS(bilut_opts, "7", "0.01"),
    SAP_ILU_PIVOT_OPT(bilut_opts),
};

static sap_status bilut_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const bilut_opts *o = P->opts;
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    sap_csr *B = NULL, *LU = NULL;
    sap_int shifted = 0;
    const char *how = "";
    const double t0 = sap__wtime();
    SAP_TRY(sap__dd_blocks(ctx, A, o->blocks, &B, &how, NULL));
    SAP_TRY(sap__ilut(ctx, B, o->p, o->tau, o->pivot_tol, &LU, &shifted));
    snprintf(d->extra, sizeof(d->extra), "%lld blocks (%s), ILUT(%lld, %g)", (long long)o->blocks, how, (long long)o->p,
             o->tau);
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap_csr_destroy(B);
    sap_csr_destroy(LU);
    return st;
}

SAP_ILU_TYPE(sap__pc_bilut, "bilut",
             "block ILUT(p, tau) of B diagonal blocks (METIS partitions), one triangular solve for all",
             bilut_defs, bilut_opts, bilut_numeric);
