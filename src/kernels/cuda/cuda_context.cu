/* cuda_context.cu -- CUDA device discovery and per-context device state (stream,
 * device memory through the context's allocator hooks).  C linkage at the boundary. */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

extern "C" {
#include "sap_internal.h"
}

typedef struct sap_cuda_state {
    cudaStream_t stream;
    size_t total_mem;
    int sm_count;
} sap_cuda_state;

extern "C" sap_status sap__cuda_device_count(int *count, char *msg, size_t msglen)
{
    *count = 0;
    cudaError_t e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) {
        if (msg && msglen) snprintf(msg, msglen, "%s", cudaGetErrorString(e));
        cudaGetLastError(); /* clear the sticky-free error */
        *count = 0;
        return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? SAP_ERR_NO_DEVICE : SAP_ERR_DEVICE;
    }
    if (*count == 0 && msg && msglen) snprintf(msg, msglen, "no CUDA device found");
    return SAP_OK;
}

extern "C" sap_status sap__cuda_context_init(sap_context *ctx)
{
    cudaError_t e = cudaSetDevice(ctx->device);
    if (e != cudaSuccess)
        return SAP_ERROR(ctx, SAP_ERR_DEVICE, "cudaSetDevice(%d): %s", ctx->device, cudaGetErrorString(e));
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, ctx->device);
    if (e != cudaSuccess)
        return SAP_ERROR(ctx, SAP_ERR_DEVICE, "cudaGetDeviceProperties(%d): %s", ctx->device, cudaGetErrorString(e));
    sap_cuda_state *cs = (sap_cuda_state *)sap__alloc(ctx, 1, sizeof(sap_cuda_state), true, __FILE__, __LINE__);
    if (!cs) return SAP_ERR_OUT_OF_MEMORY;
    e = cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        sap__free(ctx, cs);
        return SAP_ERROR(ctx, SAP_ERR_DEVICE, "cudaStreamCreate: %s", cudaGetErrorString(e));
    }
    cs->total_mem = prop.totalGlobalMem;
    cs->sm_count = prop.multiProcessorCount;
    ctx->cuda = cs;
    snprintf(ctx->device_name, sizeof(ctx->device_name), "cuda:%d %s (sm_%d%d, %d SMs, %.1f GiB)", ctx->device,
             prop.name, prop.major, prop.minor, prop.multiProcessorCount,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return SAP_OK;
}

extern "C" void sap__cuda_context_free(sap_context *ctx)
{
    sap_cuda_state *cs = (sap_cuda_state *)ctx->cuda;
    if (!cs) return;
    cudaSetDevice(ctx->device);
    cudaStreamSynchronize(cs->stream);
    cudaStreamDestroy(cs->stream);
    sap__free(ctx, cs);
    ctx->cuda = NULL;
}
