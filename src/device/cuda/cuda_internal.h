/* cuda_internal.h -- private definitions of the CUDA backend (src/device/cuda).
 *
 * The first part is plain C (the benchmark and the GPU tests include it to reach the
 * context's stream and device memory); the second part is CUDA C++ for the .cu files. */
#ifndef SAP_CUDA_INTERNAL_H
#define SAP_CUDA_INTERNAL_H

#ifdef __cplusplus
extern "C" {
#endif
#include "device/device.h"

/* ---- C interface (also used by bench/spmv.c and the GPU tests) ------------------------ */

/* Opening and closing a context's device (src/device/device.c), its table and memory. */
sap_status sap__cuda_device_count(int *count, char *msg, size_t msglen);
sap_status sap__cuda_context_init(sap_context *ctx);
void sap__cuda_context_free(sap_context *ctx);
const sap_backend_ops *sap__backend_cuda_ops(void);
/* Free (plus the context pool's cached) and total bytes of the context's device. */
sap_status sap__cuda_mem_info(sap_context *ctx, size_t *free_bytes, size_t *total_bytes);
/* Streaming multiprocessors of the context's device. */
int sap__cuda_sm_count(const sap_context *ctx);
/* The band kernels (band_cuda.cu) and the reordering stages (reorder_cuda.cu) of the table. */
const sap_band_kernels *sap__band_kernels_cuda(void);
const sap_trsv_kernels *sap__trsv_kernels_cuda(void); /* trsv_cuda.cu */
/* The sparse direct solver of the table: cuDSS loaded at run time (direct_cuda.cu). */
const sap_direct_kernels *sap__direct_kernels_cuda(void);
/* Device-to-device exchanges between processes: NCCL loaded at run time (nccl_cuda.cu). */
const sap_peer_ops *sap__peer_ops_cuda(void);
/* The block-Jacobi kernels (bjacobi_cuda.cu). */
const sap_bjacobi_kernels *sap__bjacobi_kernels_cuda(void);
sap_status sap__cuda_db_weights(sap_context *ctx, const sap_csr *A, double *c, double *loga, sap_int *nonfinite);
sap_status sap__cuda_scale_rows_cols(sap_context *ctx, sap_csr *M, const double *rs, const double *cs);
sap_status sap__cuda_block_relax(sap_context *ctx, const sap_spmat *M, int sweeps, const sap_vec *b, sap_vec *x,
                                 sap_vec *scratch);
sap_status sap__cuda_sym_graph(sap_context *ctx, const sap_csr *A, sap_int *xadj, int32_t *adj, sap_int *nadj);
/* The dense block kernels (dense_cuda.cu) and their per-context state's release. */
const sap_dense_kernels *sap__dense_kernels_cuda(void);
void sap__cuda_dense_free(sap_context *ctx);

/* The context's stream (a cudaStream_t), NULL if ctx is not a cuda context. */
void *sap__cuda_stream(sap_context *ctx);

/* Device memory from the context's pool (device_alloc hook or cudaMalloc behind a cache
 * of free blocks by size class).  bytes == 0 gives *ptr = NULL and SAP_OK.  Counts
 * device_bytes_in_use/peak (bytes requested) and device_allocs (real device
 * allocations; a block taken from the cache does not count). */
sap_status sap__cuda_malloc(sap_context *ctx, size_t bytes, void **ptr);
/* Returns a block to the pool (NULL is ignored). */
void sap__cuda_free(sap_context *ctx, void *ptr);
/* Gives every cached free block back to the device; returns the bytes released. */
size_t sap__cuda_pool_trim(sap_context *ctx);
/* Bytes held in the cache of free blocks. */
size_t sap__cuda_pool_cached(const sap_context *ctx);
/* The device bytes a sap__cuda_malloc of 'bytes' takes (its size class). */
size_t sap__cuda_alloc_size(size_t bytes);

/* Counted transfers: host <-> device copies on the context's stream, synchronous. */
sap_status sap__cuda_h2d(sap_context *ctx, void *dst, const void *src, size_t bytes);
sap_status sap__cuda_d2h(sap_context *ctx, void *dst, const void *src, size_t bytes);
/* A streamed upload: the column-major rows x cols array of es-byte elements at dst
 * (leading dimension ld >= rows elements) is produced on the host chunk by chunk of rows by
 * fill(arg, r0, r1, buf) (rows r0 .. r1 - 1 into buf with leading dimension r1 - r0) in a
 * ring of SAP_CUDA_STAGE_BUFS pinned staging buffers of the context, each copied with an
 * asynchronous 2D copy on the context's stream while the next chunk is filled (an event
 * per buffer says when it may be refilled).  The ring is allocated on first use and kept
 * with the context.  Where it cannot be (no pinned memory, a row wider than a buffer) the
 * whole array is filled into pageable memory and uploaded at once.  Synchronous: dst holds
 * the array on return.  *t_fill (may be NULL) receives the host seconds spent in fill. */
#define SAP_CUDA_STAGE_BUFS 4
#define SAP_CUDA_STAGE_BYTES ((size_t)16 << 20)
typedef void (*sap_cuda_fill_fn)(void *arg, int64_t r0, int64_t r1, void *buf);
/* The backend's host_lend / host_return (device.h): the staging ring's buffers, when the
 * context already has them. */
int sap__cuda_stage_lend(sap_context *ctx, size_t bytes, int count, void **bufs);
void sap__cuda_stage_return(sap_context *ctx);
sap_status sap__cuda_h2d_streamed(sap_context *ctx, void *dst, int64_t ld, int64_t rows, int64_t cols, size_t es,
                                  sap_cuda_fill_fn fill, void *arg, double *t_fill);

/* The context's cuBLAS / cuSPARSE handles (cublasHandle_t / cusparseHandle_t), created on
 * first use, bound to the context's stream, destroyed with the context. */
sap_status sap__cuda_cublas(sap_context *ctx, void **handle);
sap_status sap__cuda_cusparse(sap_context *ctx, void **handle);
/* The context's dense cuSOLVER handle (cusolverDnHandle_t), likewise */
sap_status sap__cuda_cusolver(sap_context *ctx, void **handle);

/* The device arrays of a cuda sap_spmat, for the benchmark and the tests (read-only).
 * Each pointer is NULL where the format has no such part.  Indices are 32-bit. */
typedef struct sap_cuda_spmat_view {
    sap_spmv_format format;
    sap_precision prec;
    int32_t nrows, ncols;
    int64_t nnz;
    const int32_t *rowptr; /* nrows + 1 (every format keeps it: value updates use it) */
    const int32_t *colind; /* CSR */
    const void *val;       /* CSR */
    int32_t ell_width, ell_ld; /* ELL part: entry (i, k) at i + k * ell_ld */
    const int32_t *ell_col;
    const void *ell_val;
    int32_t nslices;           /* SELL-P: slice s holds entries slice_ptr[s] .. slice_ptr[s+1] */
    const int32_t *slice_ptr;  /* nslices + 1 */
    const int32_t *sell_col;
    const void *sell_val;
    const int32_t *rem_rowptr; /* HEC remainder CSR: nrows + 1 */
    const int32_t *rem_col;
    const void *rem_val;
    int32_t rem_nrows;         /* rows with a remainder: rem_nrows - rem_nlong short ones listed in */
    const int32_t *rem_rows;   /* rem_rows, rem_nlong long ones (a block each) in rem_long */
    int32_t rem_nlong;
    const int32_t *rem_long;
    int csr_tpr;               /* CSR: threads per row of the vector kernel */
    int32_t csr_nlong;         /* CSR: rows given a block each */
    size_t device_bytes;       /* bytes of device memory the matrix holds */
} sap_cuda_spmat_view;

sap_status sap__cuda_spmat_view(const sap_spmat *M, sap_cuda_spmat_view *view);

/* Kernel variants, for the benchmark: knob 0 = ELL/HEC rows per thread (1, 2), 1 = SELL-P
 * threads per row (1, 2, 4, 8), 2 = CSR threads per row (1..32, a power of two). */
sap_status sap__cuda_spmat_tune(sap_spmat *M, int knob, int value);

/* Bytes the SpMV of this matrix reads and writes once (its own format's arrays, x, y;
 * beta == 0 so y is only written). */
double sap__cuda_spmat_bytes(const sap_spmat *M);

#ifdef __cplusplus
}
#endif

/* ---- CUDA C++ part -------------------------------------------------------------------- */
#ifdef __CUDACC__
#include <cuda_runtime.h>

/* Capacity of the pinned result buffer and of the reduction scratch. */
#define SAP_CUDA_MAX_RESULTS 64
#define SAP_CUDA_RED_BLOCK 256
#define SAP_CUDA_RED_GRID 1024

typedef struct sap_cuda_block {
    void *ptr;    /* aligned pointer handed out */
    void *raw;    /* what the hook or cudaMalloc returned */
    size_t size;  /* class size (bytes usable) */
    size_t bytes; /* bytes requested (live blocks) */
} sap_cuda_block;

typedef struct sap_cuda_state {
    cudaStream_t stream;
    size_t total_mem, l2_bytes;
    int sm_count, cc_major, cc_minor;
    /* pool */
    sap_cuda_block *live;
    size_t nlive, cap_live;
    sap_cuda_block *cache;
    size_t ncache, cap_cache;
    size_t cached_bytes;
    /* reductions: partials (SAP_CUDA_MAX_RESULTS x SAP_CUDA_RED_GRID doubles), a ticket
     * counter, and pinned host memory the last block writes the results into */
    double *d_partials;
    unsigned int *d_ticket;
    double *h_results;   /* host pointer (pinned, mapped) */
    double *hd_results;  /* the same memory as seen from the device */
    /* library handles (lazy) */
    void *cublas;
    void *cusparse;
    void *cusolver;
    void *dense; /* dense_cuda.cu's state: cuSOLVER handle, scratch (lazy) */
    /* the pinned staging ring of sap__cuda_h2d_streamed (lazy; stage_failed: pinned
     * memory was refused once, do not ask again; stage_lent: lent to the host by
     * sap__cuda_stage_lend, streamed uploads go from pageable memory meanwhile) */
    void *stage[SAP_CUDA_STAGE_BUFS];
    cudaEvent_t stage_ev[SAP_CUDA_STAGE_BUFS];
    int stage_ready, stage_failed, stage_lent;
} sap_cuda_state;

static inline sap_cuda_state *sap__cuda_state(const sap_context *ctx) { return (sap_cuda_state *)ctx->cuda; }

/* Records a CUDA error in ctx with the CUDA message; cudaErrorMemoryAllocation maps to
 * SAP_ERR_OUT_OF_MEMORY, everything else to SAP_ERR_DEVICE. */
sap_status sap__cuda_error(sap_context *ctx, cudaError_t e, const char *what, const char *file, int line);

/* Inside a function returning sap_status. */
#define SAP_CUDA_CHECK(ctx, call)                                                                     \
    do {                                                                                              \
        cudaError_t sap__e = (call);                                                                  \
        if (sap__e != cudaSuccess) return sap__cuda_error((ctx), sap__e, #call, __FILE__, __LINE__);  \
    } while (0)

/* After a kernel launch. */
#define SAP_CUDA_LAUNCHED(ctx, name)                                                                  \
    do {                                                                                              \
        cudaError_t sap__e = cudaGetLastError();                                                      \
        if (sap__e != cudaSuccess) return sap__cuda_error((ctx), sap__e, name, __FILE__, __LINE__);   \
    } while (0)

/* Inside a function with 'sap_status st' and a 'cleanup:' label. */
#define SAP_CUDA_TRY(ctx, call)                                                                       \
    do {                                                                                              \
        cudaError_t sap__e = (call);                                                                  \
        if (sap__e != cudaSuccess) {                                                                  \
            st = sap__cuda_error((ctx), sap__e, #call, __FILE__, __LINE__);                           \
            goto cleanup;                                                                             \
        }                                                                                             \
    } while (0)
#define SAP_CUDA_TRY_LAUNCH(ctx, name)                                                                \
    do {                                                                                              \
        cudaError_t sap__e = cudaGetLastError();                                                      \
        if (sap__e != cudaSuccess) {                                                                  \
            st = sap__cuda_error((ctx), sap__e, name, __FILE__, __LINE__);                            \
            goto cleanup;                                                                             \
        }                                                                                             \
    } while (0)

/* Makes the context's device current (contexts on several devices in one thread). */
sap_status sap__cuda_enter(sap_context *ctx);

/* Grid of the deterministic reductions for n elements: fixed for a given n. */
static inline int sap__cuda_red_grid(sap_int n)
{
    sap_int g = (n + SAP_CUDA_RED_BLOCK * 4 - 1) / (SAP_CUDA_RED_BLOCK * 4);
    if (g < 1) g = 1;
    if (g > SAP_CUDA_RED_GRID) g = SAP_CUDA_RED_GRID;
    return (int)g;
}

/* Typed host allocation through the context's allocator (C++ has no void* conversion). */
#define SAP_CUDA_HOST_ALLOC(ctx, ptr, n)                                                              \
    do {                                                                                              \
        (ptr) = (decltype(ptr))sap__alloc((ctx), (size_t)(n), sizeof(*(ptr)), false, __FILE__, __LINE__); \
        if (!(ptr)) {                                                                                 \
            st = sap__alloc_failure((size_t)(n), sizeof(*(ptr)));                                     \
            goto cleanup;                                                                             \
        }                                                                                             \
    } while (0)
#endif /* __CUDACC__ */

#endif /* SAP_CUDA_INTERNAL_H */
