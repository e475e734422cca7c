/* pc_ras.c -- Restricted Additive Schwarz ("ras", the seed's RAS): B subdomains (METIS
 * partitions) extended by 'overlap' graph levels, ILU(k) of every extended subdomain at
 * once (the subdomains' matrices concatenated into one block-diagonal system, ilu_dd.c),
 * z = Pown (LU)^{-1} R r: gather and restricted prolongation as sparse products, one pair
 * of triangular solves for all subdomains. */
#include "precond/ilu_factor.h"

#include <stdio.h>

typedef struct ras_opts {
    sap_int blocks, overlap, k;
    double pivot_tol;
} ras_opts;

static const sap_opt_def ras_defs[] = {
    SAP_ILU_BLOCKS_OPT(ras_opts, "16"),
    {.name = "overlap", .help = "graph levels added around every subdomain", .def = "1", .kind = SAP_OPT_INT,
     SAP_OPT_AT(ras_opts, overlap), .lo = 0, .hi = 1000, .meta = "L"},
    {.name = "k", .alias = "levels", .help = "fill level of the subdomain ILU(k)", .def = "0", .kind = SAP_OPT_INT,
     SAP_OPT_AT(ras_opts, k), .lo = 0, .hi = 1000, .meta = "K"},
    SAP_ILU_PIVOT_OPT(ras_opts),
};

static sap_status ras_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const ras_opts *o = P->opts;
    sap_ilu_pc *d = P->data;
    sap_status st = SAP_OK;
    sap_csr *LU = NULL;
    sap_int *part = NULL, shifted = 0;
    sap_dd_ras D = {0};
    const char *how = "";
    const double t0 = sap__wtime();
    const sap_int nb = o->blocks < A->nrows ? o->blocks : (A->nrows > 0 ? A->nrows : 1);
    SAP_ALLOC(ctx, part, A->nrows > 0 ? A->nrows : 1);
    SAP_TRY(sap__dd_partition(ctx, A, nb, part, &how));
    SAP_TRY(sap__dd_ras_build(ctx, A, part, nb, o->overlap, &D));
    SAP_TRY(sap__iluk_pattern(ctx, D.Ab, o->k, &LU));
    SAP_TRY(sap__ilu_numeric(ctx, LU, o->pivot_tol, &shifted));
    snprintf(d->extra, sizeof(d->extra), "%lld subdomains (%s), overlap %lld: %lld rows in all (%.2fx), ILU(%lld)",
             (long long)nb, how, (long long)o->overlap, (long long)D.next,
             A->nrows > 0 ? (double)D.next / (double)A->nrows : 0.0, (long long)o->k);
    SAP_TRY(sap__ilu_pc_set_ras(P, &D));
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap__free(ctx, part);
    sap__dd_ras_free(&D);
    sap_csr_destroy(LU);
    return st;
}

SAP_ILU_TYPE(sap__pc_ras, "ras",
             "restricted additive Schwarz: B METIS subdomains with overlap, ILU(k) of all at once",
             ras_defs, ras_opts, ras_numeric);
