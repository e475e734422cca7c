/* device.h -- the device layer: the one table of kernels every backend (cpu, cuda)
 * implements, so that reorderings, the band factorization, preconditioners, Krylov
 * methods and solvers are written once and never name a backend.  The only code that
 * knows CUDA lives under src/device/ (cuda/; the table is absent from a build without
 * CUDA and the context then offers the cpu backend only).  Internal. */
#ifndef SAP_DEVICE_H
#define SAP_DEVICE_H

#include "base/base.h"
#include "device/band_kernels.h"
#include "device/trsv_kernels.h"
#include "device/direct_kernels.h"
#include "device/bjacobi_kernels.h"
#include "device/dense_kernels.h"

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
/* Rows i0 .. i1 - 1 of that band into val with leading dimension ld (>= i1 - i0): A(i, j)
 * at (j - i + kl) * ld + (i - i0), every slot of those rows written (a chunk of a
 * streamed upload). */
void sap__band_fill_rows(sap_context *ctx, const sap_csr *A, sap_int kl, sap_int ku, sap_precision prec, sap_int i0,
                         sap_int i1, int64_t ld, void *val);
/* A CSR's arrays converted on all threads (a chunk of a streamed upload,
 * sap__cuda_h2d_streamed, or a cpu matrix): entries k0 .. k1 - 1 of colind as 32-bit
 * indices into buf, returning the first position whose column lies outside 0 .. ncols - 1
 * (written as 0), or -1; of val into buf in prec. */
int64_t sap__conv_colind32(sap_context *ctx, const sap_int *colind, sap_int ncols, int64_t k0, int64_t k1,
                             int32_t *buf);
void sap__conv_values(sap_context *ctx, const double *val, sap_precision prec, int64_t k0, int64_t k1, void *buf);
/* Memory-parallel copy (OpenMP for large sizes). */
void sap__par_memcpy(sap_context *ctx, void *dst, const void *src, size_t bytes);

/* The automatic SpMV format for a matrix on a backend, with the reason (static text). */
sap_spmv_format sap__spmv_auto_format(const sap_csr *A, sap_backend backend, const char **reason);

/* A square CSR in backend memory (the caller's device arrays of sap_solver_create_device):
 * rowptr n + 1, colind and val nnz entries, sap_int indices. */
typedef struct sap_dev_csr {
    sap_int n, nnz;
    const sap_int *rowptr, *colind;
    const double *val;
} sap_dev_csr;

/* What the csr_stats op found wrong (each the first in row or entry order; -1: none).  The
 * statistics are only meaningful when bad_rowptr, bad_col and bad_order are all -1. */
typedef struct sap_dev_csr_check {
    sap_int bad_rowptr;  /* rowptr[0] != 0 or rowptr[n] != nnz: row n; else the first i with
                            rowptr[i + 1] < rowptr[i] */
    sap_int bad_col;     /* the first row with a column outside 0 .. n - 1 */
    sap_int bad_order;   /* the first row whose columns do not strictly increase */
    sap_int nonfinite;   /* the first entry (CSR position) that is NaN or Inf */
    sap_int zero_diag_row; /* the first row whose diagonal entry is missing or exactly zero */
} sap_dev_csr_check;

/* Device-to-device exchanges between processes (the distributed block-tridiagonal
 * solvers, src/btd): the cuda backend's is NCCL loaded at run time (cuda/nccl_cuda.cu); a
 * backend without one has none (its processes exchange through host memory over MPI).
 * Buffers are backend memory; nothing here knows MPI: the caller sends the id to the other
 * processes.
 *  load:     SAP_OK when the library can be used in this process (else a status, message).
 *  new_id:   a fresh unique id (SAP_PEER_ID_BYTES bytes), made by one process.
 *  open:     this process' endpoint, rank of size, over the processes given the same id
 *            (collective: every one of them calls it); overlap: see exchange.
 *  exchange: the nsend sends (rank dst[i], sbuf[i], scount[i] doubles) and the nrecv
 *            receptions (rank src[i] into rbuf[i], rcount[i] doubles) as one group queued
 *            on the context's stream (no host wait); the messages between two processes
 *            are matched in the order they were queued, with equal counts.  With overlap
 *            the group runs beside the context's stream, after the work queued there
 *            before it, and the context's stream waits for it only at the next wait (the
 *            caller must neither write the send buffers nor read the receive buffers
 *            before that wait).
 *  wait:     the context's stream waits for the exchanges queued so far (overlap; no-op
 *            without).
 *  seconds:  waits (host) for the exchanges queued so far and gives the device time they took
 *            since the last call (each from its start on the stream to its end, the wait
 *            for the other process included).
 *  close:    releases the endpoint (after the queued work).
 *  name:     the transport and its version, e.g. "nccl 2.28.3". */
#define SAP_PEER_ID_BYTES 128
typedef struct sap_peer_ops {
    sap_status (*load)(sap_context *ctx);
    sap_status (*new_id)(sap_context *ctx, unsigned char *id);
    sap_status (*open)(sap_context *ctx, const unsigned char *id, int rank, int size, int overlap, void **peer);
    sap_status (*exchange)(sap_context *ctx, void *peer, int nsend, const int *dst, const double *const *sbuf,
                           const int64_t *scount, int nrecv, const int *src, double *const *rbuf,
                           const int64_t *rcount);
    sap_status (*wait)(sap_context *ctx, void *peer);
    sap_status (*seconds)(sap_context *ctx, void *peer, double *seconds);
    void (*close)(sap_context *ctx, void *peer);
    const char *(*name)(void);
} sap_peer_ops;

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
    /* k columns (1 <= k <= 64): X, Y of length k m, column c at element c m (m = n / k) */
    /* Y_c = a[c] X_c + b[c] Y_c (a[c] = 0, b[c] = 1 leaves column c untouched: it is not written) */
    sap_status (*caxpby)(sap_context *ctx, int k, const double *a, const sap_vec *X, const double *b, sap_vec *Y);
    /* Z_c = a[c] X_c + b[c] Y_c + c[c] Z_c, as axpbypcz column by column (the same rounding:
     * a lockstep solve's columns follow their single solves); a = b = 0, c = 1 leaves column c
     * unwritten, c = 0 does not read Z_c */
    sap_status (*caxpbypcz)(sap_context *ctx, int k, const double *a, const sap_vec *X, const double *b,
                            const sap_vec *Y, const double *c, sap_vec *Z);
    /* r[i k + c] = X[i]_c . Y_c for i < nx (1 <= nx <= 8) and c < k: one pass over Y */
    sap_status (*cdot)(sap_context *ctx, int k, int nx, const sap_vec *X, const sap_vec *Y, double *r);
    /* Y_c = A X_c for c < k (X, Y in M's precision, length k * M->nrows); one pass over the
     * matrix for all columns where the format allows (cpu: every format; cuda: CSR through
     * cusparseSpMM, BAND by its own kernel, the other formats column by column) */
    sap_status (*spmm)(sap_context *ctx, const sap_spmat *M, int k, const sap_vec *X, sap_vec *Y);
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
    /* raw backend memory (host memory for cpu) */
    sap_status (*mem_alloc)(sap_context *ctx, size_t bytes, void **p);
    void (*mem_free)(sap_context *ctx, void *p);
    sap_status (*mem_upload)(sap_context *ctx, void *dst, const void *src, size_t bytes);
    /* bytes the backend's memory has free for this process and in all (cpu: what the host
     * reports; cuda: the device, the context's pool included) */
    sap_status (*mem_info)(sap_context *ctx, size_t *free_bytes, size_t *total_bytes);
    /* independent execution units the kernels spread over (cpu: threads; cuda: SMs) */
    int (*units)(const sap_context *ctx);
    /* the band kernels of SaP (device/band_kernels.h) */
    const sap_band_kernels *band;
    /* the sparse triangular solves (device/trsv_kernels.h) */
    const sap_trsv_kernels *trsv;
    /* a sparse direct solver (device/direct_kernels.h): cpu SuiteSparse, cuda cuDSS */
    const sap_direct_kernels *direct;
    /* the batched block-Jacobi kernels (device/bjacobi_kernels.h) */
    const sap_bjacobi_kernels *bjacobi;
    /* dense block kernels: getrf/getrs/getri/gemm, single and batched (device/dense_kernels.h) */
    const sap_dense_kernels *dense;
    /* reordering stages the backend can take over from the host loops (NULL: not
     * offered; sap__offload says whether to use them for a matrix).  On host arrays
     * (upload, kernels, download).  DB weights: c (nnz) and loga (nrows) as the host's S1
     * computes them, *nonfinite the count of NaN/Inf values.  Scaling: M->val[p] =
     * (rs[i] * M->val[p]) * cs[j] in place.  Graph: the pattern of A + A^T without its
     * diagonal, each row sorted by index (what sap__cm_build_graph puts in xadj/adj2);
     * *nadj = xadj[n]. */
    sap_status (*db_weights)(sap_context *ctx, const sap_csr *A, double *c, double *loga, sap_int *nonfinite);
    sap_status (*scale_rows_cols)(sap_context *ctx, sap_csr *M, const double *rs, const double *cs);
    sap_status (*sym_graph)(sap_context *ctx, const sap_csr *A, sap_int *xadj, int32_t *adj, sap_int *nadj);
    /* Block relaxation (the async-jacobi Krylov method): the rows are cut into blocks of
     * SAP_RELAX_BLOCK consecutive rows, and each block runs 'sweeps' Jacobi sweeps on its
     * own unknowns, x_i = (b_i - sum_{j != i} a_ij x_j) / a_ii (a row with a zero or no
     * diagonal entry keeps its x_i).  M: format CSR; b, x, scratch in M's precision.
     * cpu: the other blocks' values are those of x on entry (copied to scratch): block
     * Jacobi with local sweeps, deterministic for any thread count.  cuda: one thread block
     * per block, x in shared memory; after each sweep a block writes its values to x and
     * reads the other blocks' values from x as they are at that moment (block-asynchronous
     * Jacobi, no global synchronisation: nondeterministic by design); scratch unused. */
    sap_status (*block_relax)(sap_context *ctx, const sap_spmat *M, int sweeps, const sap_vec *b, sap_vec *x,
                              sap_vec *scratch);
    /* The caller's device arrays (the device-pointer entry points, solver_device.c).
     * ptr_check: SAP_OK when p is memory of the context's device (device or managed
     * memory), else SAP_ERR_INVALID naming 'what' (cpu: always, it has no device memory).
     * mem_download: backend -> host, counted as d2h (cpu: a copy).  mem_copy: within
     * backend memory, queued on the context's stream.  gather: y[i] = s[i] x[p[i]] (p or s
     * NULL: identity / 1; p, s in backend memory; x, y double).  spmat_create_dev: a CSR
     * double matrix from backend arrays (rowptr, colind as sap_int, val) of the matrix A
     * whose host copy (same pattern and values) gives the row statistics; nothing of A is
     * uploaded (cuda: indices converted to 32 bits and values copied on the device).
     * spmat_values_dev: new values (backend memory, the CSR order of A) of such a matrix. */
    sap_status (*ptr_check)(sap_context *ctx, const void *p, const char *what);
    sap_status (*mem_download)(sap_context *ctx, void *host, const void *src, size_t bytes);
    sap_status (*mem_copy)(sap_context *ctx, void *dst, const void *src, size_t bytes);
    sap_status (*gather)(sap_context *ctx, const sap_vec *x, const sap_int *p, const double *s, sap_vec *y);
    sap_status (*spmat_create_dev)(sap_context *ctx, const sap_csr *A, const sap_int *rowptr, const sap_int *colind,
                                   const double *val, sap_spmat **M);
    sap_status (*spmat_values_dev)(sap_context *ctx, sap_spmat *M, const sap_csr *A, const double *val);
    /* csr_stats: the statistics of a square CSR in backend memory, what the solver's plan
     * reads (the fields sap__csr_stats_quick fills: bandwidths, empty rows, max / mean row
     * nnz, mean row width, zero diagonal, dominance d and dominant rows, and, when every
     * diagonal entry is positive, numerical symmetry by a binary search of each entry's
     * mirror, which gives spd_estimate), with the checks of sap_csr_check and the
     * finiteness of sap_solver_create in *chk.  ms may be NULL (checks only: no symmetry
     * pass); dinv (backend memory, n doubles, may be NULL) receives 1 / a_ii (0 where the
     * diagonal is missing or zero).  Integer counts and min / max only: the result does not
     * depend on the thread or block count.  When chk->bad_rowptr >= 0 nothing else is
     * looked at; when bad_col or bad_order >= 0 the statistics are not filled.  Only a few
     * scalars come back to the host (cuda: counted as d2h).  With spmat_create_dev, A may
     * be a shape without host arrays (rowptr NULL): the row statistics the format needs
     * are then taken on the device. */
    sap_status (*csr_stats)(sap_context *ctx, const sap_dev_csr *A, sap_dev_csr_check *chk, sap_matrix_stats *ms,
                            double *dinv);
    /* Page-locked host memory for staging transfers that are sent on by the host (the
     * distributed BTD exchanges over host MPI): cuda cudaHostAlloc, freed by host_free;
     * NULL on backends without it (cpu: plain host memory, sap__alloc / sap__free). */
    sap_status (*host_alloc)(sap_context *ctx, size_t bytes, void **p);
    void (*host_free)(sap_context *ctx, void *p);
    /* host_lend: count page-locked host buffers of at least bytes each that the backend
     * already holds (cuda: its upload staging ring, once a streamed upload made it), lent so
     * that host arrays going to and coming from the device skip the pageable copy's cost
     * (on the H100 host: 1.6 MB 200-300 us pageable, ~80 us pinned); 1 and bufs[0 .. count)
     * set, or 0 when there are none (nothing is allocated for it).  Until host_return the
     * backend does not use them itself.  NULL on backends without them (cpu). */
    int (*host_lend)(sap_context *ctx, size_t bytes, int count, void **bufs);
    void (*host_return)(sap_context *ctx);
    /* device-to-device exchanges between processes (sap_peer_ops above; NULL: none) */
    const sap_peer_ops *peer;
} sap_backend_ops;

/* Rows per block of block_relax (a cuda thread block of that many threads). */
#define SAP_RELAX_BLOCK 256

/* The cpu table (also the host reference the other backends are tested against). */
const sap_backend_ops *sap__backend_cpu_ops(void);

/* The table of the context's backend (set when the context is created). */
static inline const sap_backend_ops *sap__ops(const sap_context *ctx) { return ctx->ops; }

/* Whether an offered reordering stage (db_weights and scale_rows_cols: SAP_OFFLOAD_DB;
 * sym_graph: SAP_OFFLOAD_GRAPH) runs on the context's device for a matrix of nnz stored
 * entries: the backend offers it and nnz is at least the context's threshold
 * (sap__offload_set_min_nnz) and fits the kernels' 32-bit indices.  Measured on an H200
 * with 16 host cores (bench/results/reorder_gpu.md): the graph build paid from about 0.5M
 * entries (1.5-1.8x, transfers included) against the host build of then, whose transposed
 * pattern and (degree, index) lists were serial; with both parallel the host wins (T_CM of
 * gen:synthetic:N=200000,K=200, 80M entries, 32 host cores: 0.73 s host, 1.07 s GPU graph,
 * bench/results/banded_synthetic_h200.md), so the graph is off by default too.  The DB
 * weights and scaling never pay while the matrix lives on the host (the PCIe transfers
 * cost 2-30x the host's OpenMP loops).  Both are kept for device-resident use and the
 * tests. */
int sap__offload(const sap_context *ctx, sap_offload_op op, sap_int nnz);
/* The bytes one mem_alloc / vec_create of 'bytes' takes from the backend's memory (cuda:
 * the pool's size class, up to 25% more below 64 MB, 2 MB steps above; cpu: bytes), for
 * memory estimates that must be upper bounds of what is allocated. */
double sap__device_alloc_size(const sap_context *ctx, double bytes);
void sap__offload_set_min_nnz(sap_context *ctx, sap_offload_op op, sap_int min_nnz);
#define SAP_OFFLOAD_GRAPH_MIN_NNZ INT64_MAX
#define SAP_OFFLOAD_DB_MIN_NNZ INT64_MAX

#endif /* SAP_DEVICE_H */
