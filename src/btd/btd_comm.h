/* btd_comm.h -- the communicator the distributed block-tridiagonal solvers are written
 * against (btd_dist.c, btd_cyclic.c): an all-gather of doubles, a minimum over ranks, point
 * to point exchanges; one implementation over MPI (btd_mpi.c, built when MPI is found).  Data
 * are staged through host memory.  Internal. */
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
    void (*destroy)(struct sap__btd_comm *c, sap_context *ctx);
    double seconds; /* spent in the calls above */
} sap__btd_comm;

/* A communicator over the MPI communicator *mpi_comm (NULL: MPI_COMM_WORLD); MPI must be
 * initialised.  SAP_ERR_NOT_COMPILED without MPI. */
sap_status sap__btd_comm_mpi(sap_context *ctx, void *mpi_comm, sap__btd_comm **c);

#endif /* SAP_BTD_COMM_H */
