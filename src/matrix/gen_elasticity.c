/* gen_elasticity.c -- an elasticity-like block-structured SPD system: dof unknowns per
 * node of an nx x ny x nz grid, A = L (x) K with L the 7-point Laplacian with varying
 * coefficients (node weights w_I in [1, 10) from a hash of the node, edge coefficient
 * (w_I + w_J) / 2, Dirichlet boundary: w_I per missing neighbour) and K the dof x dof SPD
 * coupling (dof + 1 on the diagonal, 1 off it).  The rows of a node share one pattern
 * (supervariables of dof rows, the natural blocks of block-Jacobi).  Unknown a of node
 * (x, y, z) is row dof (x + nx (y + ny z)) + a. */
#include "base/base.h"

static double node_weight(sap_int I) { return 1.0 + 9.0 * (double)((uint64_t)(I * 2654435761u) % 1000) / 1000.0; }

sap_status sap_gen_elasticity3d(sap_context *ctx, sap_int nx, sap_int ny, sap_int nz, int dof, sap_csr **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_elasticity3d: output pointer A is NULL");
    *out = NULL;
    if (dof < 1 || dof > 32) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_elasticity3d: dof = %d is outside 1..32", dof);
    sap_status st = SAP_OK;
    sap_csr *G = NULL, *A = NULL;
    SAP_TRY(sap_gen_poisson3d(ctx, nx, ny, nz, &G));
    if (sap__mul_overflows(G->nnz, (int64_t)dof * dof, SAP_NNZ_MAX))
        SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "sap_gen_elasticity3d: %lld x %d^2 entries are too many", (long long)G->nnz, dof);
    const sap_int nn = G->nrows, n = nn * dof;
    SAP_TRY(sap_csr_create(ctx, n, n, G->nnz * dof * dof, &A));
    for (sap_int I = 0; I < nn; I++)
        for (int a = 0; a < dof; a++)
            A->rowptr[I * dof + a + 1] = A->rowptr[I * dof + a] + (G->rowptr[I + 1] - G->rowptr[I]) * dof;
    SAP_OMP_FOR(sap__threads(ctx))
    for (sap_int I = 0; I < nn; I++) {
        const double wI = node_weight(I);
        double diag = wI * (double)(6 - (G->rowptr[I + 1] - G->rowptr[I] - 1));
        for (sap_int p = G->rowptr[I]; p < G->rowptr[I + 1]; p++)
            if (G->colind[p] != I) diag += 0.5 * (wI + node_weight(G->colind[p]));
        for (int a = 0; a < dof; a++) {
            sap_int q = A->rowptr[I * dof + a];
            for (sap_int p = G->rowptr[I]; p < G->rowptr[I + 1]; p++) {
                const sap_int J = G->colind[p];
                const double c = J == I ? diag : -0.5 * (wI + node_weight(J));
                for (int b = 0; b < dof; b++) {
                    A->colind[q] = J * dof + b;
                    A->val[q++] = c * (a == b ? dof + 1.0 : 1.0);
                }
            }
        }
    }
    *out = A;
    A = NULL;
cleanup:
    sap_csr_destroy(G);
    sap_csr_destroy(A);
    return st;
}
