/* sap_backend.h -- the kernel table every backend (cpu, cuda) implements, so that the
 * Krylov drivers, preconditioners and solvers are written once.  Internal. */
#ifndef SAP_BACKEND_H
#define SAP_BACKEND_H

#include "base/base.h"

/* A vector in backend memory (host memory for cpu, device memory for cuda). */
typedef struct sap_vec {
    sap_int n;
    sap_precision prec;
    void *data; /* double* or float*, owned by whoever created the vector */
} sap_vec;

/* A sparse matrix in backend memory in one SpMV format.  'impl' is backend private. */
typedef struct sap_spmat {
    sap_int nrows, ncols, nnz;
    sap_spmv_format format; /* never AUTO */
    sap_precision prec;
    const char *reason; /* why this format (static text) */
    sap_int ell_width;  /* ELL / HEC: entries per row in the ELL part; SELL-P: max slice width */
    void *impl;
} sap_spmat;

/* SELL-P: rows are grouped in slices of SAP_SELLP_SLICE consecutive rows; each slice is
 * stored column-major with its own width (the longest row of the slice rounded up to a
 * multiple of SAP_SELLP_PAD); padding entries have column index = the row's own index
 * clamped to ncols - 1 (any valid column) and value 0. */
#define SAP_SELLP_SLICE 32
#define SAP_SELLP_PAD 1

/* ELL: column-major nrows x width arrays (index i + k * nrows), padding as SELL-P.
 * HEC: the first 'width' entries of each row in an ELL part, the rest of each row in a CSR
 * part (rows with <= width entries have an empty CSR row).  The width is chosen by
 * sap__hec_width(). */
sap_int sap__hec_width(const sap_int *rowptr, sap_int nrows);

/* Host-side layout of the padded formats (shared by the cpu backend, tests, and as the
 * reference for the device conversions).  32-bit column indices; ncols must fit. */
typedef struct sap_ell_host {
    sap_int nrows, width;
    int32_t *col; /* nrows * width, column-major */
    double *val;
} sap_ell_host;

typedef struct sap_sellp_host {
    sap_int nrows, nslices;
    sap_int *slice_ptr;  /* nslices + 1 offsets into col/val (in entries) */
    sap_int *slice_width; /* nslices */
    int32_t *col;         /* per slice: SAP_SELLP_SLICE * width, column-major in the slice */
    double *val;
} sap_sellp_host;

typedef struct sap_hec_host {
    sap_ell_host ell;
    sap_int *csr_rowptr; /* nrows + 1 */
    int32_t *csr_col;
    double *csr_val;
} sap_hec_host;

sap_status sap__ell_from_csr(sap_context *ctx, const sap_csr *A, sap_int width, sap_ell_host *E);
void sap__ell_free(sap_context *ctx, sap_ell_host *E);
sap_status sap__sellp_from_csr(sap_context *ctx, const sap_csr *A, sap_sellp_host *S);
void sap__sellp_free(sap_context *ctx, sap_sellp_host *S);
sap_status sap__hec_from_csr(sap_context *ctx, const sap_csr *A, sap_hec_host *H);
void sap__hec_free(sap_context *ctx, sap_hec_host *H);

/* BAND: diagonals -kl..ku of A (kl = max(i - j), ku = max(j - i) over the entries, 0 if
 * none) in a column-major nrows x (kl + ku + 1) array: A(i, j) at (j - i + kl) * nrows + i;
 * slots outside the matrix or without an entry hold 0.  sap__band_dims gives kl, ku and
 * the slot count (SAP_ERR_TOO_LARGE when it overflows); sap__band_fill_values writes the
 * values (every slot: zeros included) in parallel into val (double or float by prec). */
sap_status sap__band_dims(sap_context *ctx, const sap_csr *A, sap_int *kl, sap_int *ku, int64_t *slots);
void sap__band_fill_values(sap_context *ctx, const sap_csr *A, sap_int kl, sap_int ku, sap_precision prec, void *val);
/* Memory-parallel copy (OpenMP for large sizes). */
void sap__par_memcpy(sap_context *ctx, void *dst, const void *src, size_t bytes);

/* The automatic SpMV format for a matrix on a backend, with the reason (static text). */
sap_spmv_format sap__spmv_auto_format(const sap_csr *A, sap_backend backend, const char **reason);

/* The kernel table.  All vector arguments of one call have the same length.  Unless said
 * otherwise, all vectors of one call have the same precision; arithmetic is done in
 * that precision (scalars are passed as double).  Reductions (dot, nrm2, ...) are
 * deterministic: the same inputs give bit-identical results on every run and for every
 * thread count.  Every function returns a sap_status (device errors are mapped to
 * SAP_ERR_DEVICE with the CUDA message in the context). */
typedef struct sap_backend_ops {
    const char *name;
    /* vectors: zero-initialised on creation; upload/download convert from/to double and
     * are counted in the context's transfer statistics (cuda) */
    sap_status (*vec_create)(sap_context *ctx, sap_int n, sap_precision prec, sap_vec *v);
    void (*vec_destroy)(sap_context *ctx, sap_vec *v);
    sap_status (*vec_upload)(sap_context *ctx, sap_vec *v, const double *host);
    sap_status (*vec_download)(sap_context *ctx, const sap_vec *v, double *host);
    /* y = x, converting precision if the two differ */
    sap_status (*copy)(sap_context *ctx, const sap_vec *x, sap_vec *y);
    sap_status (*set)(sap_context *ctx, sap_vec *x, double a);
    sap_status (*scale)(sap_context *ctx, sap_vec *x, double a);
    /* y = a x + b y */
    sap_status (*axpby)(sap_context *ctx, double a, const sap_vec *x, double b, sap_vec *y);
    /* z = a x + b y + c z */
    sap_status (*axpbypcz)(sap_context *ctx, double a, const sap_vec *x, double b, const sap_vec *y, double c,
                           sap_vec *z);
    /* z = x .* y */
    sap_status (*pointwise_mult)(sap_context *ctx, const sap_vec *x, const sap_vec *y, sap_vec *z);
    /* y += sum_i a[i] x[i], i < k (k <= 64) */
    sap_status (*maxpy)(sap_context *ctx, int k, const double *a, const sap_vec *x, sap_vec *y);
    sap_status (*dot)(sap_context *ctx, const sap_vec *x, const sap_vec *y, double *result);
    /* r[i] = x[i] . y for i < k (k <= 64), one pass over y */
    sap_status (*mdot)(sap_context *ctx, int k, const sap_vec *x, const sap_vec *y, double *r);
    sap_status (*nrm2)(sap_context *ctx, const sap_vec *x, double *result);
    /* fused: y = a x + b y, then *nrm = ||y||_2 */
    sap_status (*axpby_nrm2)(sap_context *ctx, double a, const sap_vec *x, double b, sap_vec *y, double *nrm);
    /* fused CG update: x += alpha p, r -= alpha q, then *rr = r . r */
    sap_status (*cg_update)(sap_context *ctx, double alpha, const sap_vec *p, const sap_vec *q, sap_vec *x,
                            sap_vec *r, double *rr);
    /* sparse matrices; fmt may be AUTO (the backend decides) */
    sap_status (*spmat_create)(sap_context *ctx, const sap_csr *A, sap_spmv_format fmt, sap_precision prec,
                               sap_spmat **M);
    sap_status (*spmat_update_values)(sap_context *ctx, sap_spmat *M, const sap_csr *A);
    void (*spmat_destroy)(sap_context *ctx, sap_spmat *M);
    /* y = alpha A x + beta y; x and y in the matrix' precision */
    sap_status (*spmv)(sap_context *ctx, const sap_spmat *M, double alpha, const sap_vec *x, double beta,
                       sap_vec *y);
    /* waits for all queued work of this context (no-op on cpu) */
    sap_status (*synchronize)(sap_context *ctx);
    /* a BAND matrix' values in backend memory (*val, kl, w: see the BAND layout above);
     * SAP_ERR_INVALID for another format */
    sap_status (*spmat_band)(const sap_spmat *M, const void **val, sap_int *kl, sap_int *w);
} sap_backend_ops;

const sap_backend_ops *sap__backend_cpu_ops(void);
#ifdef SAP_HAVE_CUDA
const sap_backend_ops *sap__backend_cuda_ops(void);
/* Free (plus the context pool's cached) and total bytes of the context's device
 * (src/kernels/cuda/cuda_context.cu; used by the sparse solver's memory estimate). */
sap_status sap__cuda_mem_info(sap_context *ctx, size_t *free_bytes, size_t *total_bytes);
#endif

/* The table of the context's backend. */
static inline const sap_backend_ops *sap__ops(const sap_context *ctx)
{
#ifdef SAP_HAVE_CUDA
    if (ctx->backend == SAP_BACKEND_CUDA) return sap__backend_cuda_ops();
#endif
    return sap__backend_cpu_ops();
}

#endif /* SAP_BACKEND_H */
