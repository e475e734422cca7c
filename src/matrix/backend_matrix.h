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
    double *val;  /* host copy of the values (for the derived matrices below) */
    int view;     /* rowptr, colind and val are the caller's arrays (sap__matrix_create_view):
                   * never freed nor written here */
    /* matrices derived from this one on first use (A^T for BiCG/QMR, a float copy for
     * mixed-precision refinement, a CSR copy for relaxation kernels), rebuilt after
     * sap_matrix_update_values */
    struct sap_matrix_derived {
        int transpose;
        sap_precision prec;
        sap_spmv_format format;
        sap_spmat *sm;
    } derived[4];
    int nderived;
};

/* The backend matrix of A^T (transpose != 0) or A, in precision prec and format fmt (AUTO:
 * the backend's choice; the format the matrix itself uses when neither transposed nor
 * another precision), built from the host copy on first use and kept in M until
 * sap_matrix_update_values or sap_matrix_destroy.  M itself when it already is that. */
/* A new host CSR of A (transpose = 0) or A^T from the host copy (sap_csr_destroy it). */
sap_status sap__matrix_host_csr(sap_matrix *M, int transpose, sap_csr **out);
/* A matrix object from backend arrays (device memory on cuda: the caller's; rowptr and
 * colind as sap_int) holding the same matrix as the host CSR A, which becomes the host
 * copy: the backend matrix (CSR, double) is built from the arrays, nothing of A is
 * uploaded.  SAP_ERR_UNSUPPORTED where the backend offers no such build.  A may be a shape
 * (rowptr NULL: no host copy): the object then has none either (its derived matrices are
 * SAP_ERR_UNSUPPORTED). */
sap_status sap__matrix_create_dev(sap_context *ctx, const sap_csr *A, const sap_int *rowptr, const sap_int *colind,
                                  const double *val, sap_matrix **M);
/* A matrix object whose host copy is a view of A's arrays (no copy of the CSR): A must
 * stay valid until sap_matrix_destroy, and a sap_matrix_update_values of such a matrix
 * takes its val array as the new view (same pattern; valid as long as M).  checked: A
 * passed sap_csr_check already (skips that pass over the column indices). */
sap_status sap__matrix_create_view(sap_context *ctx, const sap_csr *A, const sap_matrix_options *opt, int checked,
                                   sap_matrix **M);
/* New values of such a matrix: val in backend memory, host_val the same on the host (NULL
 * or ignored when the object has no host copy). */
sap_status sap__matrix_values_dev(sap_matrix *M, const double *host_val, const double *val);
sap_status sap__matrix_derived(sap_matrix *M, int transpose, sap_precision prec, sap_spmv_format fmt,
                               const sap_spmat **out);

#endif /* SAP_MATRIX_IMPL_H */
