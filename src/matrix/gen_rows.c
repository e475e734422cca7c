/* gen_rows.c -- the generators' CSR assembly from a row function: count, then fill in
 * parallel (gen_poisson.c, gen_flow.c). */
#include "matrix/gen_rows.h"

sap_status sap__gen_rows(sap_context *ctx, sap_int rows, sap_int nnz, sap__gen_row_fn row, const void *g,
                         sap_csr **out)
{
    sap_status st = SAP_OK;
    sap_csr *A = NULL;
    SAP_TRY(sap_csr_create(ctx, rows, rows, nnz, &A));
    sap_int *rowptr = A->rowptr;
    for (sap_int i = 0; i < rows; i++) {
        sap_int cols[SAP_GEN_ROW_MAX];
        double vals[SAP_GEN_ROW_MAX];
        rowptr[i + 1] = rowptr[i] + row(g, i, cols, vals);
    }
    sap_int *colind = A->colind;
    double *val = A->val;
    SAP_OMP_FOR(sap__threads(ctx))
    for (sap_int i = 0; i < rows; i++) {
        sap_int cols[SAP_GEN_ROW_MAX];
        double vals[SAP_GEN_ROW_MAX];
        const int c = row(g, i, cols, vals);
        for (int t = 0; t < c; t++) {
            colind[rowptr[i] + t] = cols[t];
            val[rowptr[i] + t] = vals[t];
        }
    }
    *out = A;
    A = NULL;
cleanup:
    sap_csr_destroy(A);
    return st;
}
