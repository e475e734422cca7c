/* memory.c -- host allocation through the context's allocator hooks, with accounting. */
#include "base/base.h"

#include <stdlib.h>
#include <string.h>

#define SAP_ALIGN 64

/* Header kept just below each aligned block. */
typedef struct block_header {
    void *base;
    size_t bytes;
} block_header;

static void *raw_alloc(sap_context *ctx, size_t bytes)
{
    return ctx->alloc.host_alloc ? ctx->alloc.host_alloc(ctx->alloc.state, bytes) : malloc(bytes);
}

static void raw_free(sap_context *ctx, void *p)
{
    if (ctx->alloc.host_free) ctx->alloc.host_free(ctx->alloc.state, p);
    else free(p);
}

static bool alloc_overflows(size_t n, size_t size)
{
    return size > 0 && n > (SIZE_MAX - SAP_ALIGN - sizeof(block_header)) / size;
}

/* Zeroes a new block; large ones on the context's threads (a 100 MB histogram's memset on
 * one core, its pages first touched there, took ~25 ms of an 80M-entry setup). */
#define SAP_ZERO_PAR_MIN ((size_t)32 << 20)
static void zero_fill(sap_context *ctx, void *p, size_t bytes)
{
    const int nt = bytes < SAP_ZERO_PAR_MIN ? 1 : sap__threads(ctx);
    if (nt <= 1) {
        memset(p, 0, bytes);
        return;
    }
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (int t = 0; t < nt; t++) {
        const size_t a = bytes / (size_t)nt * (size_t)t, b = t == nt - 1 ? bytes : bytes / (size_t)nt * (size_t)(t + 1);
        memset((char *)p + a, 0, b - a);
    }
}

sap_status sap__alloc_failure(size_t n, size_t size)
{
    return alloc_overflows(n, size) ? SAP_ERR_TOO_LARGE : SAP_ERR_OUT_OF_MEMORY;
}

void *sap__alloc(sap_context *ctx, size_t n, size_t size, bool zero, const char *file, int line)
{
    if (!ctx) return NULL;
    if (n == 0 || size == 0) n = size = 1; /* a valid, freeable block */
    if (alloc_overflows(n, size)) {
        ctx->stats.failed_allocs++;
        sap__error(ctx, SAP_ERR_TOO_LARGE, file, line, "allocation of %zu x %zu bytes overflows", n, size);
        return NULL;
    }
    size_t bytes = n * size;
    if ((double)bytes >= SAP_MEM_CHECK_MIN) {
        const char *why = NULL;
        const double avail = sap__host_mem_available(&why);
        if (avail >= 0 && (double)bytes > avail) {
            ctx->stats.failed_allocs++;
            sap__error(ctx, SAP_ERR_OUT_OF_MEMORY, file, line,
                       "allocation of %.3g GB on the host exceeds the %.3g GB this process can get (%s)",
                       (double)bytes / 1e9, avail / 1e9, why);
            return NULL;
        }
    }
    void *base = raw_alloc(ctx, bytes + SAP_ALIGN + sizeof(block_header));
    if (!base) {
        ctx->stats.failed_allocs++;
        sap__error(ctx, SAP_ERR_OUT_OF_MEMORY, file, line, "out of memory allocating %zu bytes on the host", bytes);
        return NULL;
    }
    uintptr_t p = ((uintptr_t)base + sizeof(block_header) + SAP_ALIGN - 1) & ~(uintptr_t)(SAP_ALIGN - 1);
    block_header *h = (block_header *)p - 1;
    h->base = base;
    h->bytes = bytes;
    if (zero) zero_fill(ctx, (void *)p, bytes);
    ctx->stats.host_allocs++;
    ctx->stats.host_bytes_in_use += (int64_t)bytes;
    if (ctx->stats.host_bytes_in_use > ctx->stats.host_bytes_peak)
        ctx->stats.host_bytes_peak = ctx->stats.host_bytes_in_use;
    return (void *)p;
}

void sap__free(sap_context *ctx, void *ptr)
{
    if (!ctx || !ptr) return;
    block_header *h = (block_header *)ptr - 1;
    ctx->stats.host_bytes_in_use -= (int64_t)h->bytes;
    raw_free(ctx, h->base);
}

void *sap__realloc(sap_context *ctx, void *ptr, size_t n, size_t size, const char *file, int line)
{
    void *q = sap__alloc(ctx, n, size, false, file, line);
    if (!q) return NULL;
    if (ptr) {
        block_header *h = (block_header *)ptr - 1;
        size_t keep = h->bytes < n * size ? h->bytes : n * size;
        memcpy(q, ptr, keep);
        sap__free(ctx, ptr);
    }
    return q;
}

void *sap_malloc(sap_context *ctx, size_t bytes) { return sap__alloc(ctx, bytes, 1, false, __FILE__, __LINE__); }

void sap_free(sap_context *ctx, void *ptr) { sap__free(ctx, ptr); }
