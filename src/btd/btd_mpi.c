/* btd_mpi.c -- the MPI implementation of the block-tridiagonal communicator (btd_comm.h)
 * and the process helpers of the public API (sap_mpi_*).  Buffers are host memory (this
 * Open MPI need not be CUDA-aware); device-to-device exchanges go through the backend's
 * peer transport instead (NCCL on cuda: sap__btd_comm_peer, btd_dist.c), whose unique id
 * is sent here (bcast).  Without MPI every
 * function reports SAP_ERR_NOT_COMPILED (sap_mpi_init: one process). */
#include "btd/btd_comm.h"

#include <stdio.h>
#include <string.h>

#ifdef SAP_HAVE_MPI
#include <mpi.h>

static sap_status mpi_fail(sap_context *ctx, int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return SAP_ERROR(ctx, SAP_ERR_DEVICE, "%s: %s", what, msg);
}

static sap_status c_allgather(sap__btd_comm *c, sap_context *ctx, const double *send, int64_t count, double *recv)
{
    if (count > INT32_MAX) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "MPI_Allgather: %lld doubles", (long long)count);
    double t0 = sap__wtime();
    int rc = MPI_Allgather(send, (int)count, MPI_DOUBLE, recv, (int)count, MPI_DOUBLE, *(MPI_Comm *)c->impl);
    c->seconds += sap__wtime() - t0;
    return rc == MPI_SUCCESS ? SAP_OK : mpi_fail(ctx, rc, "MPI_Allgather");
}

static sap_status c_allreduce_min(sap__btd_comm *c, sap_context *ctx, int64_t *v)
{
    double t0 = sap__wtime();
    long long in = (long long)*v, out = 0;
    int rc = MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_MIN, *(MPI_Comm *)c->impl);
    c->seconds += sap__wtime() - t0;
    *v = (int64_t)out;
    return rc == MPI_SUCCESS ? SAP_OK : mpi_fail(ctx, rc, "MPI_Allreduce");
}

static sap_status c_exchange(sap__btd_comm *c, sap_context *ctx, int tag, int nsend, const int *dst,
                             const double *const *sbuf, const int64_t *scount, int nrecv, const int *src,
                             double *const *rbuf, const int64_t *rcount)
{
    MPI_Request req[16];
    int nr = 0, rc = MPI_SUCCESS;
    if (nsend > 8 || nrecv > 8) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: %d / %d messages", nsend, nrecv);
    for (int i = 0; i < nsend + nrecv; i++) {
        int64_t cnt = i < nrecv ? rcount[i] : scount[i - nrecv];
        if (cnt > INT32_MAX) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "MPI message of %lld doubles", (long long)cnt);
    }
    double t0 = sap__wtime();
    MPI_Comm comm = *(MPI_Comm *)c->impl;
    for (int i = 0; i < nrecv && rc == MPI_SUCCESS; i++)
        rc = MPI_Irecv(rbuf[i], (int)rcount[i], MPI_DOUBLE, src[i], tag, comm, &req[nr++]);
    for (int i = 0; i < nsend && rc == MPI_SUCCESS; i++)
        rc = MPI_Isend((void *)sbuf[i], (int)scount[i], MPI_DOUBLE, dst[i], tag, comm, &req[nr++]);
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
    c->seconds += sap__wtime() - t0;
    return rc == MPI_SUCCESS ? SAP_OK : mpi_fail(ctx, rc, "MPI_Isend/Irecv");
}

static sap_status c_bcast(sap__btd_comm *c, sap_context *ctx, void *buf, int64_t bytes)
{
    if (bytes > INT32_MAX) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "MPI_Bcast: %lld bytes", (long long)bytes);
    double t0 = sap__wtime();
    int rc = MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, *(MPI_Comm *)c->impl);
    c->seconds += sap__wtime() - t0;
    return rc == MPI_SUCCESS ? SAP_OK : mpi_fail(ctx, rc, "MPI_Bcast");
}

static void c_destroy(sap__btd_comm *c, sap_context *ctx)
{
    if (!c) return;
    sap__btd_comm_peer_close(c, ctx);
    sap__free(ctx, c->impl);
    sap__free(ctx, c);
}

sap_status sap__btd_comm_mpi(sap_context *ctx, void *mpi_comm, sap__btd_comm **out)
{
    int init = 0;
    MPI_Initialized(&init);
    if (!init) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: MPI is not initialised (sap_mpi_init or MPI_Init)");
    sap__btd_comm *c = sap__alloc(ctx, 1, sizeof *c, true, __FILE__, __LINE__);
    MPI_Comm *mc = sap__alloc(ctx, 1, sizeof *mc, false, __FILE__, __LINE__);
    if (!c || !mc) {
        sap__free(ctx, c);
        sap__free(ctx, mc);
        return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "sap_btd: out of memory for the communicator");
    }
    *mc = mpi_comm ? *(MPI_Comm *)mpi_comm : MPI_COMM_WORLD;
    MPI_Comm_rank(*mc, &c->rank);
    MPI_Comm_size(*mc, &c->size);
    c->impl = mc;
    c->allgather = c_allgather;
    c->allreduce_min = c_allreduce_min;
    c->exchange = c_exchange;
    c->bcast = c_bcast;
    c->destroy = c_destroy;
    snprintf(c->transport, sizeof c->transport, "host");
    *out = c;
    return SAP_OK;
}

int sap_has_mpi(void) { return 1; }

int sap_mpi_init(int *argc, char ***argv)
{
    int init = 0, size = 1;
    MPI_Initialized(&init);
    if (!init) {
        /* under mpiexec only: a plain run stays a plain process without MPI's start-up */
        MPI_Init(argc, argv);
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

int sap_mpi_rank(void)
{
    int init = 0, rank = 0;
    MPI_Initialized(&init);
    if (init) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

void sap_mpi_finalize(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Finalize();
}

#else

sap_status sap__btd_comm_mpi(sap_context *ctx, void *mpi_comm, sap__btd_comm **c)
{
    (void)mpi_comm;
    *c = NULL;
    return SAP_ERROR(ctx, SAP_ERR_NOT_COMPILED, "sap_btd: this build has no MPI (SAP_ENABLE_MPI, libopenmpi-dev)");
}

int sap_has_mpi(void) { return 0; }
int sap_mpi_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 1;
}
int sap_mpi_rank(void) { return 0; }
void sap_mpi_finalize(void) {}

#endif
