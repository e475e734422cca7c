/* matrix_impl.h -- the sap_matrix object (a backend matrix plus what the front end keeps
 * on the host), shared by src/solve and src/krylov.  Internal. */
#ifndef SAP_MATRIX_IMPL_H
#define SAP_MATRIX_IMPL_H

#include "device/device.h"

struct sap_matrix {
    sap_context *ctx;
    sap_spmat *sm; /* the matrix on the context's backend */
    sap_int nrows, ncols, nnz;
    sap_int *rowptr; /* host copy of the pattern, for sap_matrix_update_values */
    sap_int *colind;
    sap_vec x, y; /* work vectors of sap_matrix_spmv (created on first use) */
};

#endif /* SAP_MATRIX_IMPL_H */
