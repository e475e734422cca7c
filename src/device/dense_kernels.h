/* dense_kernels.h -- dense block kernels every backend implements (reached through the
 * device table: sap__ops(ctx)->dense): LU with partial pivoting (getrf), solves with the
 * factors (getrs), inverses from the factors (getri), matrix products (gemm) and block
 * copies (lacpy), each on one matrix or on a strided batch of equal-sized matrices.  The
 * block-tridiagonal solvers of src/btd/ are written once over them.  Internal.
 *
 * Conventions: double precision, column-major, matrices in the backend's memory (host for
 * cpu, device for cuda).  A batch of count matrices is a base pointer and a stride in
 * elements between consecutive matrices (matrix b starts at a + b * sa).  Pivots are
 * 32-bit, 1-based as in LAPACK, n per matrix, strided likewise.  count == 1 is the
 * non-batched path (cpu: one LAPACK/BLAS call, threaded inside; cuda: cuSOLVER / one cuBLAS
 * call); count > 1 the batched path (cpu: OpenMP across the batch, one thread per matrix;
 * cuda: cuBLAS batched routines).  Every call returns a sap_status (device errors are
 * SAP_ERR_DEVICE with the library's message in the context). */
#ifndef SAP_DEVICE_DENSE_KERNELS_H
#define SAP_DEVICE_DENSE_KERNELS_H

#include "base/base.h"

typedef struct sap_dense_kernels {
    const char *name;
    /* LU with partial pivoting of count n x n matrices (lda = n) in place.  info == NULL:
     * *bad (host) is the index of the first matrix of the batch with an exactly zero pivot,
     * -1 if none (the factors of the others are complete); the call waits for the device.
     * info != NULL (backend memory, matrix b's flag at info + b si): the flags are written
     * there (0, or > 0 for an exactly zero pivot), *bad = -1, and nothing waits: the caller
     * reads the flags later with get_ints (a factorization without host round trips). */
    sap_status (*getrf)(sap_context *ctx, int n, int count, double *a, int64_t sa, int32_t *piv, int64_t sp,
                        int32_t *info, int64_t si, int64_t *bad);
    /* host[0 .. count) := src[0 .. count) (backend memory; waits for the device) */
    sap_status (*get_ints)(sap_context *ctx, const int32_t *src, int64_t count, int32_t *host);
    /* Concurrent lanes (NULL where the backend has none: cpu): fork makes the work queued so
     * far visible to every lane, lane(i) sends the calls that follow to lane i mod L (cuda:
     * L streams, each with its cuSOLVER/cuBLAS handle and workspace), join makes the
     * context's stream wait for every lane and sends the calls back to it.  Only count == 1
     * calls, lacpy and zero may run on a lane; calls on different lanes must be independent. */
    sap_status (*fork)(sap_context *ctx);
    sap_status (*lane)(sap_context *ctx, int i);
    sap_status (*join)(sap_context *ctx);
    /* B := A^{-1} B with A's factors (lda = n); B is n x nrhs with leading dimension ldb */
    sap_status (*getrs)(sap_context *ctx, int n, int nrhs, int count, const double *a, int64_t sa,
                        const int32_t *piv, int64_t sp, double *b, int ldb, int64_t sb);
    /* C := A^{-1} (ldc = n) from A's factors (lda = n); C does not overlap A */
    sap_status (*getri)(sap_context *ctx, int n, int count, const double *a, int64_t sa, const int32_t *piv,
                        int64_t sp, double *c, int64_t sc);
    /* C := alpha A B + beta C, A m x kk (lda), B kk x n (ldb), C m x n (ldc); C overlaps
     * neither A nor B */
    sap_status (*gemm)(sap_context *ctx, int m, int n, int kk, double alpha, const double *a, int lda, int64_t sa,
                       const double *b, int ldb, int64_t sb, double beta, double *c, int ldc, int64_t sc,
                       int count);
    /* B := A, both m x n (lda, ldb); no overlap */
    sap_status (*lacpy)(sap_context *ctx, int m, int n, int count, const double *a, int lda, int64_t sa, double *b,
                        int ldb, int64_t sb);
    /* A := 0 for count m x n matrices (lda) */
    sap_status (*zero)(sap_context *ctx, int m, int n, int count, double *a, int lda, int64_t sa);
} sap_dense_kernels;

#endif /* SAP_DEVICE_DENSE_KERNELS_H */
