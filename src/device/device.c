/* device.c -- opening and closing a context's backend (sap_context_create/destroy), the
 * build's features (sap_has_cuda), and where reordering stages run (sap__offload).  The
 * one place outside src/device/cuda/ that asks whether CUDA was built. */
#include "device/device.h"
#ifdef SAP_HAVE_CUDA
#include "device/cuda/cuda_internal.h"
#endif

#include <string.h>

int sap_has_cuda(void)
{
#ifdef SAP_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

int sap_has_feature(const char *name)
{
    if (!name) return 0;
    if (strcmp(name, "cuda") == 0) return sap_has_cuda();
    if (strcmp(name, "zlib") == 0) return sap_has_zlib();
    if (strcmp(name, "lapack") == 0) {
#ifdef SAP_HAVE_LAPACK
        return 1;
#else
        return 0;
#endif
    }
    if (strcmp(name, "openmp") == 0) {
#ifdef _OPENMP
        return 1;
#else
        return 0;
#endif
    }
    if (strcmp(name, "mpi") == 0) {
#ifdef SAP_HAVE_MPI
        return 1;
#else
        return 0;
#endif
    }
    if (strcmp(name, "metis") == 0) {
#ifdef SAP_HAVE_METIS
        return 1;
#else
        return 0;
#endif
    }
    if (strcmp(name, "suitesparse") == 0) {
#ifdef SAP_HAVE_SUITESPARSE
        return 1;
#else
        return 0;
#endif
    }
    /* "petsc": the PETSc plugin (libsap_petsc) is a separate library; unknown names: 0 */
    return 0;
}

/* cuda for backend cuda or auto when a device is there; SAP_OK with the cpu backend
 * otherwise (auto), an error when cuda was asked for and cannot be had. */
static sap_status open_backend(sap_context *ctx, sap_backend want)
{
    ctx->ops = sap__backend_cpu_ops();
    if (want == SAP_BACKEND_CPU) return SAP_OK;
#ifdef SAP_HAVE_CUDA
    char msg[256] = "";
    int count = 0;
    sap_status cs = sap__cuda_device_count(&count, msg, sizeof(msg));
    if (cs == SAP_OK && count > ctx->device) {
        sap_status st = sap__cuda_context_init(ctx);
        if (st < 0) return st;
        ctx->backend = SAP_BACKEND_CUDA;
        ctx->ops = sap__backend_cuda_ops();
        return SAP_OK;
    }
    if (want == SAP_BACKEND_CUDA) {
        if (cs == SAP_OK)
            return SAP_ERROR(ctx, SAP_ERR_NO_DEVICE, "CUDA device %d requested but %d device%s found", ctx->device,
                             count, count == 1 ? "" : "s");
        return SAP_ERROR(ctx, SAP_ERR_NO_DEVICE, "no usable CUDA device: %s", msg);
    }
    sap__log(ctx, SAP_PRINT_INFO, "sap: backend auto -> cpu (%s)", cs == SAP_OK ? "no CUDA device found" : msg);
    return SAP_OK;
#else
    if (want == SAP_BACKEND_CUDA)
        return SAP_ERROR(ctx, SAP_ERR_NOT_COMPILED, "backend cuda requested but this build has no CUDA support");
    sap__log(ctx, SAP_PRINT_INFO, "sap: backend auto -> cpu (built without CUDA)");
    return SAP_OK;
#endif
}

sap_status sap_context_create(sap_context **out, const sap_context_config *cfg_in)
{
    if (!out) return SAP_ERR_INVALID;
    *out = NULL;
    sap_context_config cfg;
    if (cfg_in) cfg = *cfg_in;
    else sap_context_config_init(&cfg);
    sap_status st = SAP_OK;
    sap_context *ctx = sap__context_new(&cfg, &st);
    if (!ctx) return st;
    ctx->offload_min_nnz[SAP_OFFLOAD_GRAPH] = SAP_OFFLOAD_GRAPH_MIN_NNZ;
    ctx->offload_min_nnz[SAP_OFFLOAD_DB] = SAP_OFFLOAD_DB_MIN_NNZ;
    st = open_backend(ctx, cfg.backend);
    if (st < 0) {
        sap_context_destroy(ctx);
        return st;
    }
    *out = ctx;
    return SAP_OK;
}

void sap_context_destroy(sap_context *ctx)
{
    if (!ctx) return;
#ifdef SAP_HAVE_CUDA
    if (ctx->cuda) sap__cuda_context_free(ctx);
#endif
    sap__context_free(ctx);
}

int sap__offload(const sap_context *ctx, sap_offload_op op, sap_int nnz)
{
    const sap_backend_ops *o = ctx->ops;
    if (!o || op < 0 || op >= SAP_OFFLOAD_COUNT) return 0;
    const int offered = op == SAP_OFFLOAD_GRAPH ? o->sym_graph != NULL : (o->db_weights && o->scale_rows_cols);
    return offered && nnz >= ctx->offload_min_nnz[op] && nnz < ((sap_int)1 << 30);
}

void sap__offload_set_min_nnz(sap_context *ctx, sap_offload_op op, sap_int min_nnz)
{
    if (ctx && op >= 0 && op < SAP_OFFLOAD_COUNT) ctx->offload_min_nnz[op] = min_nnz < 0 ? 0 : min_nnz;
}

double sap__device_alloc_size(const sap_context *ctx, double bytes)
{
    if (bytes <= 0) return 0;
#ifdef SAP_HAVE_CUDA
    if (ctx && ctx->backend == SAP_BACKEND_CUDA && bytes < 9.0e18) return (double)sap__cuda_alloc_size((size_t)bytes);
#else
    (void)ctx;
#endif
    return bytes;
}
