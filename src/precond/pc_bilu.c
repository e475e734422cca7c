/* pc_bilu.c -- block ILU(0) ("bilu", the seed's BILU): the rows split into B blocks
 * (METIS, ilu_dd.c), ILU(0) of every diagonal block at once (the ILU(0) of A without its
 * coupling entries), applied by one pair of triangular solves covering all blocks. */
#include "precond/ilu_factor.h"

#include <stdio.h>

typedef struct bilu_opts {
    sap_int blocks;
    double pivot_tol;
} bilu_opts;

static const sap_opt_def bilu_defs[] = {SAP_ILU_BLOCKS_OPT(bilu_opts, "16"), SAP_ILU_PIVOT_OPT(bilu_opts)};

static sap_status bilu_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const bilu_opts *o = P->opts;
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    sap_csr *B = NULL, *LU = NULL;
    sap_int shifted = 0;
    const char *how = "";
    double t_part = 0;
    const double t0 = sap__wtime();
    SAP_TRY(sap__dd_blocks(ctx, A, o->blocks, &B, &how, &t_part));
    SAP_TRY(sap__iluk_pattern(ctx, B, 0, &LU));
    SAP_TRY(sap__ilu_numeric(ctx, LU, o->pivot_tol, &shifted));
    snprintf(d->extra, sizeof(d->extra), "%lld blocks (%s, %.3g s), %lld coupling entries dropped", (long long)o->blocks,
             how, t_part, (long long)(A->nnz - B->nnz));
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap_csr_destroy(B);
    sap_csr_destroy(LU);
    return st;
}

SAP_ILU_TYPE(sap__pc_bilu, "bilu",
             "block ILU(0): ILU(0) of B diagonal blocks (METIS partitions), one triangular solve for all",
             bilu_defs, bilu_opts, bilu_numeric);
