/* gen_rows.h -- the generators' CSR assembly from a row function (gen_rows.c). */
#ifndef SAP_GEN_ROWS_H
#define SAP_GEN_ROWS_H

#include "base/base.h"

/* Writes row i of the generator g: its columns in increasing order and their values
 * (at most SAP_GEN_ROW_MAX); returns the count. */
#define SAP_GEN_ROW_MAX 7
typedef int (*sap__gen_row_fn)(const void *g, sap_int i, sap_int *cols, double *vals);

/* The rows x rows CSR of nnz entries from row(g, i): the row pointers in one pass, the
 * entries in parallel (nnz must be the sum of the counts). */
sap_status sap__gen_rows(sap_context *ctx, sap_int rows, sap_int nnz, sap__gen_row_fn row, const void *g,
                         sap_csr **out);

#endif
