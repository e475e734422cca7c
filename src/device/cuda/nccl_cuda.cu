/* nccl_cuda.cu -- the cuda backend's device-to-device exchanges between processes (the
 * peer_* entries of the table, device/device.h; used by the distributed block-tridiagonal
 * solvers, src/btd): NVIDIA NCCL point-to-point (ncclSend / ncclRecv in one group), queued
 * on the context's stream, loaded at run time with dlopen (never linked, never required).
 *
 * Where NCCL is found: the file named by $SAP_NCCL_LIB, else "libnccl.so.2" on the loader's
 * path, else the usual places: the CUDA toolkit (/usr/local/cuda/lib64, /usr/local/cuda/lib),
 * the system's library folders, and the Python package nvidia-nccl-cu12/cu13
 * (.../{site,dist}-packages/nvidia/nccl/lib under $VIRTUAL_ENV, $CONDA_PREFIX, /usr/local,
 * /usr, /opt/conda).  NCCL 2.7 or later (point-to-point), 2.x only.  Loaded once per
 * process (thread-safe) and never unloaded.
 *
 * NVLink multicast (NVLS) is of no use to point-to-point exchanges and can put shared GPU
 * hosts out of service: NCCL_NVLS_ENABLE=0 is set in the environment before the first
 * communicator where the caller has not set it.
 *
 * Overlap (open's flag): the exchanges run on a stream of their own that waits for the
 * context's stream to reach them, and the context's stream waits for them only at wait (the
 * caller's work in between runs beside them).
 *
 * Communication time: every exchange is bracketed by two timing events on the stream;
 * peer_seconds waits for the last one and sums the elapsed times (the exchange's own time on
 * the device, the wait for the other process included). */
#include "device/cuda/cuda_internal.h"
#include "device/cuda/nccl_abi.h"

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nccl_api {
    int ok, version;
    char path[512];
    char why[400];
    char name[48]; /* "nccl 2.28.3" */
    sap_ncclGetVersion_fn GetVersion;
    sap_ncclGetUniqueId_fn GetUniqueId;
    sap_ncclCommInitRank_fn CommInitRank;
    sap_ncclCommDestroy_fn CommDestroy;
    sap_ncclGetErrorString_fn GetErrorString;
    sap_ncclSend_fn Send;
    sap_ncclRecv_fn Recv;
    sap_ncclGroupStart_fn GroupStart;
    sap_ncclGroupEnd_fn GroupEnd;
} nccl_api;

static nccl_api load_one(const char *name)
{
    nccl_api a;
    memset(&a, 0, sizeof(a));
    snprintf(a.path, sizeof(a.path), "%s", name);
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        snprintf(a.why, sizeof(a.why), "NCCL not loadable (%s): %.200s", name, err ? err : "?");
        return a;
    }
    struct {
        void **fn;
        const char *name;
    } syms[] = {{(void **)&a.GetVersion, "ncclGetVersion"},     {(void **)&a.GetUniqueId, "ncclGetUniqueId"},
                {(void **)&a.CommInitRank, "ncclCommInitRank"}, {(void **)&a.CommDestroy, "ncclCommDestroy"},
                {(void **)&a.GetErrorString, "ncclGetErrorString"}, {(void **)&a.Send, "ncclSend"},
                {(void **)&a.Recv, "ncclRecv"},                 {(void **)&a.GroupStart, "ncclGroupStart"},
                {(void **)&a.GroupEnd, "ncclGroupEnd"}};
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        *syms[i].fn = dlsym(lib, syms[i].name);
        if (!*syms[i].fn) {
            snprintf(a.why, sizeof(a.why), "the NCCL library %s lacks %s (NCCL 2.7 or later is needed)", name,
                     syms[i].name);
            return a;
        }
    }
    int v = 0;
    if (a.GetVersion(&v) != SAP_NCCL_SUCCESS) v = 0;
    a.version = v;
    /* NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9, major * 1000 + ... before */
    int ok = (v >= 20700 && v < 30000) || (v >= 2700 && v < 3000);
    if (!ok) {
        snprintf(a.why, sizeof(a.why), "NCCL version code %d found (%s); sap needs NCCL 2.x from 2.7 on", v, name);
        return a;
    }
    a.ok = 1;
    if (v >= 10000) snprintf(a.name, sizeof(a.name), "nccl %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else snprintf(a.name, sizeof(a.name), "nccl %d.%d.%d", v / 1000, v / 100 % 10, v % 100);
    return a;
}

static nccl_api load(void)
{
    const char *env = getenv("SAP_NCCL_LIB");
    if (env && env[0]) return load_one(env);
    nccl_api first = load_one("libnccl.so.2");
    if (first.ok) return first;
    static const char *fixed[] = {"/usr/local/cuda/lib64/libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2",
                                  "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/lib64/libnccl.so.2",
                                  "/usr/lib/aarch64-linux-gnu/libnccl.so.2"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        nccl_api a = load_one(fixed[i]);
        if (a.ok) return a;
    }
    /* the Python packages nvidia-nccl-cu12 / -cu13 */
    const char *roots[] = {getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX"), "/usr/local", "/usr", "/opt/conda"};
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        if (!roots[i] || !roots[i][0]) continue;
        char pat[600];
        snprintf(pat, sizeof(pat), "%s/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2", roots[i]);
        glob_t g;
        if (glob(pat, 0, NULL, &g) == 0) {
            for (size_t j = 0; j < g.gl_pathc; j++) {
                nccl_api a = load_one(g.gl_pathv[j]);
                if (a.ok) {
                    globfree(&g);
                    return a;
                }
            }
        }
        globfree(&g);
    }
    snprintf(first.why, sizeof(first.why), "NCCL not found (libnccl.so.2 on the loader's path, the CUDA toolkit, "
             "the system's library folders, the Python package nvidia-nccl-*); set SAP_NCCL_LIB to libnccl.so.2");
    return first;
}

/* loaded at the first use; C++ initialises the static once */
static const nccl_api *api(void)
{
    static const nccl_api a = load();
    return &a;
}

#define RET(x)                                                                                                    \
    do {                                                                                                          \
        sap_status s_ = (x);                                                                                      \
        if (s_ != SAP_OK) return s_;                                                                              \
    } while (0)

#define SAP_NCCL_EVENTS 64 /* exchanges timed between two peer_seconds calls before a fold */

typedef struct nccl_peer {
    sap_ncclComm_t comm;
    int rank, size;
    /* overlap: the exchanges run on their own stream after the context's stream reached
     * them (ready); wait makes the context's stream wait for the last one (done) */
    int overlap, pending;
    cudaStream_t cs;
    cudaEvent_t ready, done;
    cudaEvent_t ev[2 * SAP_NCCL_EVENTS];
    int nev;        /* event pairs recorded, not yet summed */
    double spent; /* seconds summed by a fold since the last peer_seconds */
} nccl_peer;

static sap_status nccl_fail(sap_context *ctx, sap_ncclResult_t r, const char *what)
{
    const nccl_api *f = api();
    return SAP_ERROR(ctx, SAP_ERR_DEVICE, "%s: NCCL error %d (%s)", what, r, f->GetErrorString ? f->GetErrorString(r)
                                                                                               : "?");
}

static sap_status peer_load(sap_context *ctx)
{
    const nccl_api *f = api();
    if (!f->ok) return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, "%s", f->why);
    return SAP_OK;
}

static sap_status peer_id(sap_context *ctx, unsigned char *id)
{
    RET(peer_load(ctx));
    sap_ncclUniqueId u;
    memset(&u, 0, sizeof(u));
    sap_ncclResult_t r = api()->GetUniqueId(&u);
    if (r != SAP_NCCL_SUCCESS) return nccl_fail(ctx, r, "ncclGetUniqueId");
    memcpy(id, u.internal, SAP_PEER_ID_BYTES);
    return SAP_OK;
}

static void peer_close(sap_context *ctx, void *p)
{
    nccl_peer *q = (nccl_peer *)p;
    if (!q) return;
    if (sap__cuda_enter(ctx) == SAP_OK) {
        cudaStreamSynchronize(sap__cuda_state(ctx)->stream);
        if (q->cs) cudaStreamSynchronize(q->cs);
        for (int i = 0; i < 2 * SAP_NCCL_EVENTS; i++)
            if (q->ev[i]) cudaEventDestroy(q->ev[i]);
        if (q->ready) cudaEventDestroy(q->ready);
        if (q->done) cudaEventDestroy(q->done);
        if (q->cs) cudaStreamDestroy(q->cs);
    }
    if (q->comm) api()->CommDestroy(q->comm);
    (void)cudaGetLastError();
    free(q);
}

static sap_status peer_open(sap_context *ctx, const unsigned char *id, int rank, int size, int overlap, void **out)
{
    *out = NULL;
    RET(peer_load(ctx));
    RET(sap__cuda_enter(ctx)); /* NCCL binds the communicator to the current device */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    nccl_peer *q = (nccl_peer *)calloc(1, sizeof(nccl_peer));
    if (!q) return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "NCCL peer: out of memory");
    q->rank = rank;
    q->size = size;
    sap_ncclUniqueId u;
    memcpy(u.internal, id, SAP_PEER_ID_BYTES);
    sap_ncclResult_t r = api()->CommInitRank(&q->comm, size, u, rank);
    if (r != SAP_NCCL_SUCCESS) {
        q->comm = NULL;
        peer_close(ctx, q);
        return nccl_fail(ctx, r, "ncclCommInitRank");
    }
    for (int i = 0; i < 2 * SAP_NCCL_EVENTS; i++) {
        cudaError_t e = cudaEventCreate(&q->ev[i]);
        if (e != cudaSuccess) {
            q->ev[i] = NULL;
            peer_close(ctx, q);
            return sap__cuda_error(ctx, e, "cudaEventCreate", __FILE__, __LINE__);
        }
    }
    if (overlap) {
        cudaError_t e = cudaStreamCreateWithFlags(&q->cs, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&q->ready, cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&q->done, cudaEventDisableTiming);
        if (e != cudaSuccess) {
            peer_close(ctx, q);
            return sap__cuda_error(ctx, e, "NCCL peer: stream / events", __FILE__, __LINE__);
        }
        q->overlap = 1;
    }
    *out = q;
    return SAP_OK;
}

/* sums the recorded event pairs into q->pending (waits for the last event) */
static sap_status fold(sap_context *ctx, nccl_peer *q)
{
    if (q->nev == 0) return SAP_OK;
    SAP_CUDA_CHECK(ctx, cudaEventSynchronize(q->ev[2 * q->nev - 1]));
    for (int i = 0; i < q->nev; i++) {
        float ms = 0.f;
        SAP_CUDA_CHECK(ctx, cudaEventElapsedTime(&ms, q->ev[2 * i], q->ev[2 * i + 1]));
        q->spent += 1e-3 * ms;
    }
    q->nev = 0;
    return SAP_OK;
}

static sap_status peer_exchange(sap_context *ctx, void *p, int nsend, const int *dst, const double *const *sbuf,
                                const int64_t *scount, int nrecv, const int *src, double *const *rbuf,
                                const int64_t *rcount)
{
    nccl_peer *q = (nccl_peer *)p;
    const nccl_api *f = api();
    if (!q || !f->ok) return SAP_ERROR(ctx, SAP_ERR_INVALID, "NCCL exchange without a communicator");
    RET(sap__cuda_enter(ctx));
    cudaStream_t s = sap__cuda_state(ctx)->stream;
    if (q->nev == SAP_NCCL_EVENTS) RET(fold(ctx, q));
    if (q->overlap) { /* on the peer's stream, once the context's stream has queued the data */
        SAP_CUDA_CHECK(ctx, cudaEventRecord(q->ready, s));
        SAP_CUDA_CHECK(ctx, cudaStreamWaitEvent(q->cs, q->ready, 0));
        s = q->cs;
    }
    SAP_CUDA_CHECK(ctx, cudaEventRecord(q->ev[2 * q->nev], s));
    sap_ncclResult_t r = f->GroupStart();
    if (r != SAP_NCCL_SUCCESS) return nccl_fail(ctx, r, "ncclGroupStart");
    sap_ncclResult_t r2 = SAP_NCCL_SUCCESS;
    for (int i = 0; i < nrecv && r2 == SAP_NCCL_SUCCESS; i++)
        r2 = f->Recv(rbuf[i], (size_t)rcount[i], SAP_NCCL_FLOAT64, src[i], q->comm, (void *)s);
    for (int i = 0; i < nsend && r2 == SAP_NCCL_SUCCESS; i++)
        r2 = f->Send(sbuf[i], (size_t)scount[i], SAP_NCCL_FLOAT64, dst[i], q->comm, (void *)s);
    r = f->GroupEnd(); /* always closes the group */
    if (r2 != SAP_NCCL_SUCCESS) return nccl_fail(ctx, r2, "ncclSend/ncclRecv");
    if (r != SAP_NCCL_SUCCESS) return nccl_fail(ctx, r, "ncclGroupEnd");
    SAP_CUDA_CHECK(ctx, cudaEventRecord(q->ev[2 * q->nev + 1], s));
    q->nev++;
    if (q->overlap) {
        SAP_CUDA_CHECK(ctx, cudaEventRecord(q->done, s));
        q->pending = 1;
    }
    return SAP_OK;
}

static sap_status peer_wait(sap_context *ctx, void *p)
{
    nccl_peer *q = (nccl_peer *)p;
    if (!q || !q->pending) return SAP_OK;
    RET(sap__cuda_enter(ctx));
    SAP_CUDA_CHECK(ctx, cudaStreamWaitEvent(sap__cuda_state(ctx)->stream, q->done, 0));
    q->pending = 0;
    return SAP_OK;
}

static sap_status peer_seconds(sap_context *ctx, void *p, double *seconds)
{
    nccl_peer *q = (nccl_peer *)p;
    *seconds = 0.0;
    if (!q) return SAP_OK;
    RET(sap__cuda_enter(ctx));
    RET(peer_wait(ctx, q));
    RET(fold(ctx, q));
    *seconds = q->spent;
    q->spent = 0.0;
    return SAP_OK;
}

static const char *peer_name(void)
{
    const nccl_api *f = api();
    return f->ok ? f->name : "nccl";
}

static sap_peer_ops make_peer_ops()
{
    sap_peer_ops t;
    memset(&t, 0, sizeof(t));
    t.load = peer_load;
    t.new_id = peer_id;
    t.open = peer_open;
    t.exchange = peer_exchange;
    t.wait = peer_wait;
    t.seconds = peer_seconds;
    t.close = peer_close;
    t.name = peer_name;
    return t;
}

static const sap_peer_ops nccl_ops = make_peer_ops();

extern "C" const sap_peer_ops *sap__peer_ops_cuda(void) { return &nccl_ops; }
