/* btd_comm.h -- the communicator the distributed block-tridiagonal solvers are written
 * against (btd_dist.c, btd_cyclic.c): an all-gather of doubles, a minimum over ranks, a
 * broadcast of bytes, point to point exchanges of host buffers; one implementation over MPI
 * (btd_mpi.c, built when MPI is found).  Besides, the backend's device-to-device transport
 * (sap_peer_ops of device/device.h: NCCL on cuda) when every process could open it
 * (sap__btd_comm_peer): BCYCLIC's exchanges then go from device buffer to device buffer on
 * the context's stream instead of being staged through host memory.  Internal. */
#ifndef SAP_BTD_COMM_H
#define SAP_BTD_COMM_H

#include "base/base.h"

typedef struct sap__btd_comm {
    int rank, size;
    void *impl; /* the MPI communicator (btd_mpi.c) */
    /* recv[r * count .. ] := send of rank r (count doubles each) */
    sap_status (*allgather)(struct sap__btd_comm *c, sap_context *ctx, const double *send, int64_t count,
                            double *recv);
    /* *v := the minimum of *v over the ranks */
    sap_status (*allreduce_min)(struct sap__btd_comm *c, sap_context *ctx, int64_t *v);
    /* point to point: the nsend messages (rank dst[i], host sbuf[i], scount[i] doubles) and
     * the nrecv receptions (rank src[i] into host rbuf[i], rcount[i] doubles) are posted at
     * once with the tag, then waited for (nsend, nrecv <= 8) */
    sap_status (*exchange)(struct sap__btd_comm *c, sap_context *ctx, int tag, int nsend, const int *dst,
                           const double *const *sbuf, const int64_t *scount, int nrecv, const int *src,
                           double *const *rbuf, const int64_t *rcount);
    /* buf (bytes) of rank 0 := to every rank */
    sap_status (*bcast)(struct sap__btd_comm *c, sap_context *ctx, void *buf, int64_t bytes);
    void (*destroy)(struct sap__btd_comm *c, sap_context *ctx);
    double seconds; /* spent in the calls above (and, with a peer, in its exchanges) */
    /* the device-to-device transport (NULL: host staging) and its endpoint */
    const struct sap_peer_ops *peer_ops;
    void *peer;
    char transport[48]; /* "host" (MPI, host staging) or the peer's name ("nccl 2.x.y", then
                         * " overlap" with SAP_BTD_OVERLAP=1) */
} sap__btd_comm;

/* A communicator over the MPI communicator *mpi_comm (NULL: MPI_COMM_WORLD); MPI must be
 * initialised.  SAP_ERR_NOT_COMPILED without MPI. */
sap_status sap__btd_comm_mpi(sap_context *ctx, void *mpi_comm, sap__btd_comm **c);

/* The device-to-device transport of the context's backend for c's processes, chosen by
 * $SAP_BTD_TRANSPORT: "auto" (default: the backend's when every process can load and open
 * it, else host staging), "host" (host staging), "nccl" (the backend's, an error
 * SAP_ERR_UNSUPPORTED on every process when one cannot load or open it).  $SAP_BTD_OVERLAP=1:
 * the exchanges run beside the solver's stream (sap_peer_ops' overlap), the work of a level
 * that needs nothing from other processes runs meanwhile.  Collective; the
 * processes agree on the outcome.  One process: host staging (no exchanges).  Once open, one
 * double goes to and from each neighbouring rank (the connections are made here, not in the
 * first factorization). */
sap_status sap__btd_comm_peer(sap__btd_comm *c, sap_context *ctx, const struct sap_backend_ops *ops);
/* Releases the peer endpoint (before c->destroy). */
void sap__btd_comm_peer_close(sap__btd_comm *c, sap_context *ctx);

#endif /* SAP_BTD_COMM_H */
