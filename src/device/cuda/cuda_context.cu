/* cuda_context.cu -- CUDA device discovery and per-context device state: the stream,
 * the device memory pool (through the context's allocator hooks), the pinned result
 * buffer of the reductions, counted transfers and the lazily created cuBLAS/cuSPARSE
 * handles.  C linkage at the boundary. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_internal.h"

/* ---- errors --------------------------------------------------------------------------- */

sap_status sap__cuda_error(sap_context *ctx, cudaError_t e, const char *what, const char *file, int line)
{
    sap_status st = e == cudaErrorMemoryAllocation ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE;
    const char *name = cudaGetErrorName(e);
    const char *text = cudaGetErrorString(e);
    /* clears a non-sticky error so that the context stays usable */
    (void)cudaGetLastError();
    return sap__error(ctx, st, file, line, "CUDA error in %s: %s (%s)", what, text ? text : "?", name ? name : "?");
}

sap_status sap__cuda_enter(sap_context *ctx)
{
    int cur = -1;
    SAP_CUDA_CHECK(ctx, cudaGetDevice(&cur));
    if (cur != ctx->device) SAP_CUDA_CHECK(ctx, cudaSetDevice(ctx->device));
    return SAP_OK;
}

/* ---- device discovery ------------------------------------------------------------------ */

extern "C" sap_status sap__cuda_device_count(int *count, char *msg, size_t msglen)
{
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) {
        if (msg && msglen) snprintf(msg, msglen, "%s", cudaGetErrorString(e));
        cudaGetLastError(); /* clear the (non-sticky) error */
        *count = 0;
        return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? SAP_ERR_NO_DEVICE : SAP_ERR_DEVICE;
    }
    if (*count == 0 && msg && msglen) snprintf(msg, msglen, "no CUDA device found");
    return SAP_OK;
}

/* ---- the pool -------------------------------------------------------------------------- */

/* Size classes: 256 bytes, then four classes per power of two (at most 25% waste) below
 * 64 MB, 2 MB steps above. */
/* Blocks of 64 MB and more are rounded to 2 MB only: a quarter-class rounding there would
 * take up to 25% more device memory than the solver's estimate counts (a band that fits
 * the free memory by its estimate failed to allocate, compute-sanitizer, 2026-11-24). */
#define SAP_POOL_LARGE ((size_t)64 << 20)
#define SAP_POOL_LARGE_ROUND ((size_t)2 << 20)

static size_t class_size(size_t bytes)
{
    if (bytes <= 256) return 256;
    if (bytes >= SAP_POOL_LARGE && bytes <= SIZE_MAX - SAP_POOL_LARGE_ROUND)
        return (bytes + SAP_POOL_LARGE_ROUND - 1) / SAP_POOL_LARGE_ROUND * SAP_POOL_LARGE_ROUND;
    size_t p = 256;
    while (p < bytes && p <= (SIZE_MAX >> 2)) p <<= 1; /* p >= bytes, p/2 < bytes */
    if (p < bytes) return bytes;                      /* absurd size: no rounding */
    size_t q = p >> 3;                                /* quarter of p/2 */
    size_t s = p >> 1;
    while (s < bytes) s += q;
    return s;
}

extern "C" size_t sap__cuda_alloc_size(size_t bytes) { return bytes ? class_size(bytes) : 0; }

static bool grow(sap_context *ctx, sap_cuda_block **arr, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    sap_cuda_block *p = (sap_cuda_block *)sap__realloc(ctx, *arr, nc, sizeof(sap_cuda_block), __FILE__, __LINE__);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

static void raw_device_free(sap_context *ctx, void *raw)
{
    if (!raw) return;
    if (ctx->alloc.device_free) ctx->alloc.device_free(ctx->alloc.state, raw, ctx->device);
    else if (!ctx->alloc.device_alloc) cudaFree(raw);
    /* a device_alloc hook without device_free: the memory is the hook's to reclaim */
}

extern "C" size_t sap__cuda_pool_trim(sap_context *ctx)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (!cs) return 0;
    size_t released = 0;
    if (cs->ncache) cudaStreamSynchronize(cs->stream); /* cudaFree synchronizes; a hook may not */
    for (size_t i = 0; i < cs->ncache; i++) {
        raw_device_free(ctx, cs->cache[i].raw);
        released += cs->cache[i].size;
    }
    cs->ncache = 0;
    cs->cached_bytes = 0;
    return released;
}

extern "C" size_t sap__cuda_pool_cached(const sap_context *ctx)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    return cs ? cs->cached_bytes : 0;
}

/* One real device allocation of 'size' bytes, 256-byte aligned. */
static sap_status raw_device_alloc(sap_context *ctx, size_t size, void **raw, void **aligned)
{
    *raw = *aligned = NULL;
    if (ctx->alloc.device_alloc) {
        if (size > SIZE_MAX - 256) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "device allocation of %zu bytes", size);
        void *p = ctx->alloc.device_alloc(ctx->alloc.state, size + 256, ctx->device);
        if (!p) return SAP_ERR_OUT_OF_MEMORY;
        *raw = p;
        *aligned = (void *)(((uintptr_t)p + 255) & ~(uintptr_t)255);
        return SAP_OK;
    }
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, size);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return e == cudaErrorMemoryAllocation ? SAP_ERR_OUT_OF_MEMORY
                                              : sap__cuda_error(ctx, e, "cudaMalloc", __FILE__, __LINE__);
    }
    *raw = *aligned = p;
    return SAP_OK;
}

extern "C" sap_status sap__cuda_malloc(sap_context *ctx, size_t bytes, void **ptr)
{
    *ptr = NULL;
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (!cs) return SAP_ERROR(ctx, SAP_ERR_INVALID, "not a cuda context");
    if (bytes == 0) return SAP_OK;
    size_t size = class_size(bytes);
    if (!grow(ctx, &cs->live, &cs->cap_live, cs->nlive + 1)) return SAP_ERR_OUT_OF_MEMORY;
    sap_cuda_block b;
    memset(&b, 0, sizeof(b));
    bool found = false;
    for (size_t i = cs->ncache; i-- > 0;) { /* most recently freed first */
        if (cs->cache[i].size == size) {
            b = cs->cache[i];
            cs->cache[i] = cs->cache[--cs->ncache];
            cs->cached_bytes -= size;
            found = true;
            break;
        }
    }
    if (!found) {
        sap_status st = raw_device_alloc(ctx, size, &b.raw, &b.ptr);
        if (st == SAP_ERR_OUT_OF_MEMORY && cs->ncache > 0) {
            sap__cuda_pool_trim(ctx); /* give the cache back and try once more */
            st = raw_device_alloc(ctx, size, &b.raw, &b.ptr);
        }
        if (st != SAP_OK) {
            ctx->stats.failed_allocs++;
            if (st == SAP_ERR_OUT_OF_MEMORY)
                return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "out of device memory allocating %zu bytes on cuda:%d",
                                 bytes, ctx->device);
            return st;
        }
        b.size = size;
        ctx->stats.device_allocs++;
    }
    b.bytes = bytes;
    cs->live[cs->nlive++] = b;
    ctx->stats.device_bytes_in_use += (int64_t)bytes;
    if (ctx->stats.device_bytes_in_use > ctx->stats.device_bytes_peak)
        ctx->stats.device_bytes_peak = ctx->stats.device_bytes_in_use;
    ctx->stats.device_block_bytes += (int64_t)b.size;
    if (ctx->stats.device_block_bytes > ctx->stats.device_block_bytes_peak)
        ctx->stats.device_block_bytes_peak = ctx->stats.device_block_bytes;
    *ptr = b.ptr;
    return SAP_OK;
}

extern "C" void sap__cuda_free(sap_context *ctx, void *ptr)
{
    sap_cuda_state *cs = ctx ? sap__cuda_state(ctx) : NULL;
    if (!ptr || !cs) return;
    for (size_t i = cs->nlive; i-- > 0;) {
        if (cs->live[i].ptr != ptr) continue;
        sap_cuda_block b = cs->live[i];
        cs->live[i] = cs->live[--cs->nlive];
        ctx->stats.device_bytes_in_use -= (int64_t)b.bytes;
        ctx->stats.device_block_bytes -= (int64_t)b.size;
        b.bytes = 0;
        /* Kernels still queued on the stream may use the block; a later user of the
         * same block is queued behind them on the same stream, so reuse is safe. */
        if (grow(ctx, &cs->cache, &cs->cap_cache, cs->ncache + 1)) {
            cs->cache[cs->ncache++] = b;
            cs->cached_bytes += b.size;
        } else {
            cudaStreamSynchronize(cs->stream);
            raw_device_free(ctx, b.raw);
        }
        return;
    }
    sap__log(ctx, SAP_PRINT_WARNINGS, "sap: sap__cuda_free of a pointer the pool does not own (%p)", ptr);
}

/* ---- transfers ------------------------------------------------------------------------- */


/* The staging ring, once per context; 0 when pinned memory is not to be had. */
static int stage_ring(sap_context *ctx, sap_cuda_state *cs)
{
    if (cs->stage_lent) return 0;
    if (cs->stage_ready) return 1;
    if (cs->stage_failed) return 0;
    for (int i = 0; i < SAP_CUDA_STAGE_BUFS; i++) {
        if (!cs->stage[i] && cudaHostAlloc(&cs->stage[i], SAP_CUDA_STAGE_BYTES, cudaHostAllocDefault) != cudaSuccess) {
            cs->stage[i] = NULL;
            cs->stage_failed = 1;
        }
        if (!cs->stage_ev[i] && cudaEventCreateWithFlags(&cs->stage_ev[i], cudaEventDisableTiming) != cudaSuccess) {
            cs->stage_ev[i] = NULL;
            cs->stage_failed = 1;
        }
    }
    (void)cudaGetLastError();
    if (cs->stage_failed)
        sap__log(ctx, SAP_PRINT_DEBUG, "sap: no pinned staging memory (%zu bytes): uploads from pageable memory",
                 (size_t)SAP_CUDA_STAGE_BUFS * SAP_CUDA_STAGE_BYTES);
    cs->stage_ready = !cs->stage_failed;
    return cs->stage_ready;
}

extern "C" int sap__cuda_stage_lend(sap_context *ctx, size_t bytes, int count, void **bufs)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (!cs || !cs->stage_ready || cs->stage_lent || count < 1 || count > SAP_CUDA_STAGE_BUFS ||
        bytes > SAP_CUDA_STAGE_BYTES)
        return 0;
    for (int i = 0; i < SAP_CUDA_STAGE_BUFS; i++) /* no copy still reads the ring */
        if (cudaEventSynchronize(cs->stage_ev[i]) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
    for (int i = 0; i < count; i++) bufs[i] = cs->stage[i];
    cs->stage_lent = 1;
    return 1;
}

extern "C" void sap__cuda_stage_return(sap_context *ctx)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (cs) cs->stage_lent = 0;
}

extern "C" sap_status sap__cuda_h2d_streamed(sap_context *ctx, void *dst, int64_t ld, int64_t rows, int64_t cols,
                                             size_t es, sap_cuda_fill_fn fill, void *arg, double *t_fill)
{
    if (t_fill) *t_fill = 0;
    if (rows <= 0 || cols <= 0) return SAP_OK;
    if (ld < rows) return SAP_ERROR(ctx, SAP_ERR_INVALID, "streamed upload: leading dimension %lld < %lld rows",
                                    (long long)ld, (long long)rows);
    sap_cuda_state *cs = sap__cuda_state(ctx);
    sap_status st = SAP_OK;
    const size_t row_bytes = (size_t)cols * es;
    double tf = 0;
    if (row_bytes > SAP_CUDA_STAGE_BYTES || !stage_ring(ctx, cs)) {
        /* the whole array in pageable memory, one copy */
        void *h = sap__alloc(ctx, (size_t)rows, row_bytes, false, __FILE__, __LINE__);
        if (!h)
            return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "out of host memory for an upload of %lld bytes",
                             (long long)rows * (long long)row_bytes);
        const double t0 = sap__wtime();
        fill(arg, 0, rows, h);
        tf = sap__wtime() - t0;
        cudaError_t e = cudaMemcpy2DAsync(dst, (size_t)ld * es, h, (size_t)rows * es, (size_t)rows * es, (size_t)cols,
                                          cudaMemcpyHostToDevice, cs->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(cs->stream);
        sap__free(ctx, h);
        if (e != cudaSuccess) return sap__cuda_error(ctx, e, "cudaMemcpy2DAsync (pageable)", __FILE__, __LINE__);
        ctx->stats.h2d_bytes += (int64_t)((size_t)rows * row_bytes);
        ctx->stats.h2d_copies++;
        if (t_fill) *t_fill = tf;
        return SAP_OK;
    }
    const int64_t R = (int64_t)(SAP_CUDA_STAGE_BYTES / row_bytes); /* rows per chunk, >= 1 */
    int64_t c = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += R, c++) {
        const int64_t r1 = r0 + R < rows ? r0 + R : rows, nr = r1 - r0;
        const int j = (int)(c % SAP_CUDA_STAGE_BUFS);
        /* the copy that last read buffer j (this call's or an earlier one's) is done */
        SAP_CUDA_TRY(ctx, cudaEventSynchronize(cs->stage_ev[j]));
        const double t0 = sap__wtime();
        fill(arg, r0, r1, cs->stage[j]);
        tf += sap__wtime() - t0;
        SAP_CUDA_TRY(ctx, cudaMemcpy2DAsync((char *)dst + (size_t)r0 * es, (size_t)ld * es, cs->stage[j],
                                            (size_t)nr * es, (size_t)nr * es, (size_t)cols, cudaMemcpyHostToDevice,
                                            cs->stream));
        SAP_CUDA_TRY(ctx, cudaEventRecord(cs->stage_ev[j], cs->stream));
        ctx->stats.h2d_bytes += (int64_t)((size_t)nr * row_bytes);
        ctx->stats.h2d_copies++;
    }
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize(cs->stream));
    if (t_fill) *t_fill = tf;
cleanup:
    if (st != SAP_OK) (void)cudaStreamSynchronize(cs->stream); /* no copy left reading the ring */
    return st;
}

/* Large copies between pageable host memory and the device go through the pinned staging
 * ring in SAP_CUDA_STAGE_BYTES chunks, the host side of a chunk copied on all the context's
 * threads (sap__host_copy) while the DMA of the others runs: the driver's own staging of a
 * pageable copy is one thread (measured on the H200 machine: 1.28 GB of a CSR down in 0.94 s,
 * 1.36 GB/s, with first touches of the fresh destination on that one thread). */
#define STAGED_MIN_CHUNKS 4
static int staged(sap_context *ctx, sap_cuda_state *cs, size_t bytes)
{
    return bytes >= STAGED_MIN_CHUNKS * SAP_CUDA_STAGE_BYTES && stage_ring(ctx, cs);
}

extern "C" sap_status sap__cuda_h2d(sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return SAP_OK;
    sap_cuda_state *cs = sap__cuda_state(ctx);
    sap_status st = SAP_OK;
    if (!staged(ctx, cs, bytes)) {
        SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cs->stream));
        SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(cs->stream)); /* src may be freed by the caller */
    } else {
        for (size_t off = 0, c = 0; off < bytes; off += SAP_CUDA_STAGE_BYTES, c++) {
            const size_t len = bytes - off < SAP_CUDA_STAGE_BYTES ? bytes - off : SAP_CUDA_STAGE_BYTES;
            const int j = (int)(c % SAP_CUDA_STAGE_BUFS);
            SAP_CUDA_TRY(ctx, cudaEventSynchronize(cs->stage_ev[j])); /* its last copy read it */
            sap__host_copy(ctx, cs->stage[j], (const char *)src + off, len);
            SAP_CUDA_TRY(ctx, cudaMemcpyAsync((char *)dst + off, cs->stage[j], len, cudaMemcpyHostToDevice, cs->stream));
            SAP_CUDA_TRY(ctx, cudaEventRecord(cs->stage_ev[j], cs->stream));
        }
        SAP_CUDA_TRY(ctx, cudaStreamSynchronize(cs->stream));
    }
    ctx->stats.h2d_bytes += (int64_t)bytes;
    ctx->stats.h2d_copies++;
cleanup:
    if (st != SAP_OK) (void)cudaStreamSynchronize(cs->stream); /* no copy left reading the ring */
    return st;
}

extern "C" sap_status sap__cuda_d2h(sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return SAP_OK;
    sap_cuda_state *cs = sap__cuda_state(ctx);
    sap_status st = SAP_OK;
    if (!staged(ctx, cs, bytes)) {
        SAP_CUDA_CHECK(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cs->stream));
        SAP_CUDA_CHECK(ctx, cudaStreamSynchronize(cs->stream));
    } else {
        /* chunks issued up to SAP_CUDA_STAGE_BUFS ahead; chunk c is copied out of its buffer
         * while the later ones come down */
        const size_t nc = (bytes + SAP_CUDA_STAGE_BYTES - 1) / SAP_CUDA_STAGE_BYTES;
        size_t issued = 0;
        for (size_t c = 0; c < nc; c++) {
            for (; issued < nc && issued < c + SAP_CUDA_STAGE_BUFS; issued++) {
                const size_t off = issued * SAP_CUDA_STAGE_BYTES;
                const size_t len = bytes - off < SAP_CUDA_STAGE_BYTES ? bytes - off : SAP_CUDA_STAGE_BYTES;
                const int j = (int)(issued % SAP_CUDA_STAGE_BUFS);
                /* (a copy that read buffer j before is earlier on the same stream) */
                SAP_CUDA_TRY(ctx, cudaMemcpyAsync(cs->stage[j], (const char *)src + off, len, cudaMemcpyDeviceToHost,
                                                  cs->stream));
                SAP_CUDA_TRY(ctx, cudaEventRecord(cs->stage_ev[j], cs->stream));
            }
            const size_t off = c * SAP_CUDA_STAGE_BYTES;
            const size_t len = bytes - off < SAP_CUDA_STAGE_BYTES ? bytes - off : SAP_CUDA_STAGE_BYTES;
            const int j = (int)(c % SAP_CUDA_STAGE_BUFS);
            SAP_CUDA_TRY(ctx, cudaEventSynchronize(cs->stage_ev[j]));
            sap__host_copy(ctx, (char *)dst + off, cs->stage[j], len);
        }
    }
    ctx->stats.d2h_bytes += (int64_t)bytes;
    ctx->stats.d2h_copies++;
cleanup:
    if (st != SAP_OK) (void)cudaStreamSynchronize(cs->stream); /* no copy left writing the ring */
    return st;
}

extern "C" void *sap__cuda_stream(sap_context *ctx)
{
    if (!ctx || ctx->backend != SAP_BACKEND_CUDA || !ctx->cuda) return NULL;
    return (void *)sap__cuda_state(ctx)->stream;
}

/* ---- library handles ------------------------------------------------------------------- */

extern "C" sap_status sap__cuda_cublas(sap_context *ctx, void **handle)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    *handle = NULL;
    if (!cs) return SAP_ERROR(ctx, SAP_ERR_INVALID, "not a cuda context");
    if (!cs->cublas) {
        cublasHandle_t h = NULL;
        cublasStatus_t s = cublasCreate(&h);
        if (s != CUBLAS_STATUS_SUCCESS)
            return SAP_ERROR(ctx, s == CUBLAS_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                             "cublasCreate: %s", cublasGetStatusString(s));
        s = cublasSetStream(h, cs->stream);
        if (s != CUBLAS_STATUS_SUCCESS) {
            cublasDestroy(h);
            return SAP_ERROR(ctx, SAP_ERR_DEVICE, "cublasSetStream: %s", cublasGetStatusString(s));
        }
        cs->cublas = (void *)h;
    }
    *handle = cs->cublas;
    return SAP_OK;
}

extern "C" sap_status sap__cuda_cusparse(sap_context *ctx, void **handle)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    *handle = NULL;
    if (!cs) return SAP_ERROR(ctx, SAP_ERR_INVALID, "not a cuda context");
    if (!cs->cusparse) {
        cusparseHandle_t h = NULL;
        cusparseStatus_t s = cusparseCreate(&h);
        if (s != CUSPARSE_STATUS_SUCCESS)
            return SAP_ERROR(ctx, s == CUSPARSE_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                             "cusparseCreate: %s", cusparseGetErrorString(s));
        s = cusparseSetStream(h, cs->stream);
        if (s != CUSPARSE_STATUS_SUCCESS) {
            cusparseDestroy(h);
            return SAP_ERROR(ctx, SAP_ERR_DEVICE, "cusparseSetStream: %s", cusparseGetErrorString(s));
        }
        cs->cusparse = (void *)h;
    }
    *handle = cs->cusparse;
    return SAP_OK;
}

extern "C" sap_status sap__cuda_cusolver(sap_context *ctx, void **handle)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    *handle = NULL;
    if (!cs) return SAP_ERROR(ctx, SAP_ERR_INVALID, "not a cuda context");
    if (!cs->cusolver) {
        cusolverDnHandle_t h = NULL;
        cusolverStatus_t s = cusolverDnCreate(&h);
        if (s != CUSOLVER_STATUS_SUCCESS)
            return SAP_ERROR(ctx, s == CUSOLVER_STATUS_ALLOC_FAILED ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_DEVICE,
                             "cusolverDnCreate: status %d", (int)s);
        s = cusolverDnSetStream(h, cs->stream);
        if (s != CUSOLVER_STATUS_SUCCESS) {
            cusolverDnDestroy(h);
            return SAP_ERROR(ctx, SAP_ERR_DEVICE, "cusolverDnSetStream: status %d", (int)s);
        }
        cs->cusolver = (void *)h;
    }
    *handle = cs->cusolver;
    return SAP_OK;
}

/* ---- context --------------------------------------------------------------------------- */

extern "C" void sap__cuda_context_free(sap_context *ctx)
{
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (!cs) return;
    cudaSetDevice(ctx->device);
    if (cs->stream) cudaStreamSynchronize(cs->stream);
    if (cs->cublas) cublasDestroy((cublasHandle_t)cs->cublas);
    if (cs->cusparse) cusparseDestroy((cusparseHandle_t)cs->cusparse);
    if (cs->cusolver) cusolverDnDestroy((cusolverDnHandle_t)cs->cusolver);
    sap__cuda_dense_free(ctx);
    if (cs->d_partials) sap__cuda_free(ctx, cs->d_partials);
    cs->d_partials = NULL;
    if (cs->nlive)
        sap__log(ctx, SAP_PRINT_DEBUG, "sap: %zu device block%s still in use at context destroy (released)",
                 cs->nlive, cs->nlive == 1 ? "" : "s");
    for (size_t i = 0; i < cs->nlive; i++) {
        ctx->stats.device_bytes_in_use -= (int64_t)cs->live[i].bytes;
        ctx->stats.device_block_bytes -= (int64_t)cs->live[i].size;
        raw_device_free(ctx, cs->live[i].raw);
    }
    cs->nlive = 0;
    sap__cuda_pool_trim(ctx);
    if (cs->h_results) cudaFreeHost(cs->h_results);
    for (int i = 0; i < SAP_CUDA_STAGE_BUFS; i++) {
        if (cs->stage[i]) cudaFreeHost(cs->stage[i]);
        if (cs->stage_ev[i]) cudaEventDestroy(cs->stage_ev[i]);
    }
    if (cs->stream) cudaStreamDestroy(cs->stream);
    (void)cudaGetLastError();
    sap__free(ctx, cs->live);
    sap__free(ctx, cs->cache);
    sap__free(ctx, cs);
    ctx->cuda = NULL;
}

extern "C" sap_status sap__cuda_context_init(sap_context *ctx)
{
    cudaError_t e = cudaSetDevice(ctx->device);
    if (e != cudaSuccess) return sap__cuda_error(ctx, e, "cudaSetDevice", __FILE__, __LINE__);
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, ctx->device);
    if (e != cudaSuccess) return sap__cuda_error(ctx, e, "cudaGetDeviceProperties", __FILE__, __LINE__);
    sap_cuda_state *cs = (sap_cuda_state *)sap__alloc(ctx, 1, sizeof(sap_cuda_state), true, __FILE__, __LINE__);
    if (!cs) return SAP_ERR_OUT_OF_MEMORY;
    ctx->cuda = cs;
    cs->total_mem = prop.totalGlobalMem;
    cs->l2_bytes = (size_t)prop.l2CacheSize;
    cs->sm_count = prop.multiProcessorCount;
    cs->cc_major = prop.major;
    cs->cc_minor = prop.minor;
    sap_status st = SAP_OK;
    void *p = NULL;
    SAP_CUDA_TRY(ctx, cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking));
    SAP_CUDA_TRY(ctx, cudaHostAlloc(&p, SAP_CUDA_MAX_RESULTS * sizeof(double), cudaHostAllocMapped));
    cs->h_results = (double *)p;
    SAP_CUDA_TRY(ctx, cudaHostGetDevicePointer(&p, cs->h_results, 0));
    cs->hd_results = (double *)p;
    /* partials, then the ticket counter */
    SAP_TRY(sap__cuda_malloc(ctx, SAP_CUDA_MAX_RESULTS * SAP_CUDA_RED_GRID * sizeof(double) + 256, &p));
    cs->d_partials = (double *)p;
    cs->d_ticket = (unsigned int *)(cs->d_partials + SAP_CUDA_MAX_RESULTS * SAP_CUDA_RED_GRID);
    SAP_CUDA_TRY(ctx, cudaMemsetAsync(cs->d_ticket, 0, sizeof(unsigned int), cs->stream));
    SAP_CUDA_TRY(ctx, cudaStreamSynchronize(cs->stream));
    snprintf(ctx->device_name, sizeof(ctx->device_name), "cuda:%d %.160s (sm_%d%d, %d SMs, %.1f GiB)", ctx->device,
             prop.name, prop.major, prop.minor, prop.multiProcessorCount,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    /* the scratch is the context's own: keep it out of the user's statistics */
    ctx->stats.device_bytes_in_use = 0;
    ctx->stats.device_bytes_peak = 0;
    ctx->stats.device_block_bytes = 0;
    ctx->stats.device_block_bytes_peak = 0;
    ctx->stats.device_allocs = 0;
    return SAP_OK;
cleanup:
    sap__cuda_context_free(ctx);
    return st;
}

/* ---- memory query (the sparse solver's memory estimate) -------------------------------- */

extern "C" sap_status sap__cuda_mem_info(sap_context *ctx, size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    sap_cuda_state *cs = sap__cuda_state(ctx);
    if (!cs) return SAP_ERR_NO_DEVICE;
    sap_status st = sap__cuda_enter(ctx);
    if (st < 0) return st;
    size_t f = 0, t = 0;
    cudaError_t e = cudaMemGetInfo(&f, &t);
    if (e != cudaSuccess) return sap__cuda_error(ctx, e, "cudaMemGetInfo", __FILE__, __LINE__);
    /* the pool's cached free blocks are available to this context too */
    *free_bytes = f + cs->cached_bytes;
    *total_bytes = t;
    return SAP_OK;
}
