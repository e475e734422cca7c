/* btd_dist.c -- the block-tridiagonal solvers distributed over processes (one partition of
 * block rows per rank, one device per rank), written once over the communicator of
 * btd_comm.h: Spike with the exact reduced system or the truncated one.
 *
 * Factor: each rank factors its block rows by BCYCLIC (btd_cyclic.c) and solves its spikes
 * V = E^{-1} [0; C_last], W = E^{-1} [A_first; 0] on its device; the k x k tips (V^t, V^b,
 * W^t, W^b) of every rank are all-gathered (host staging) and every rank factors the small
 * reduced system itself (block 2k, P rows for the exact one, P - 1 independent interface
 * systems for the truncated one) with BCYCLIC on its device.  Solve: g = E^{-1} b locally,
 * an all-gather of the top and bottom blocks of g, the reduced solve, then
 * x = g - V x^t_{next} - W x^b_{prev} locally.  One collective per factorization and one per
 * solve.  The processes agree on the outcome of creation and of the local factorizations
 * (a singular block anywhere fails everywhere); an error later inside a factorization or a
 * solve on one process only (out of memory, a device error) is not agreed on and leaves the
 * others waiting in the next collective.  The distributed BCYCLIC is in btd_cyclic.c.
 * Spike's device buffers are staged through the host (its collectives are MPI's); the
 * device-to-device transport (sap__btd_comm_peer, below) serves BCYCLIC's exchanges. */
#include "btd/btd_comm.h"
#include "btd/btd_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the device-to-device transport (btd_comm.h) ---------------------------------- */

sap_status sap__btd_comm_peer(sap__btd_comm *c, sap_context *ctx, const sap_backend_ops *ops)
{
    const char *v = getenv("SAP_BTD_TRANSPORT");
    int mode = 0; /* 0 auto, 1 host, 2 the backend's (nccl) */
    if (v && *v && strcmp(v, "auto") != 0) {
        if (strcmp(v, "host") == 0) mode = 1;
        else if (strcmp(v, "nccl") == 0) mode = 2;
        else return SAP_ERROR(ctx, SAP_ERR_INVALID, "SAP_BTD_TRANSPORT=%s: auto, host or nccl", v);
    }
    const sap_peer_ops *po = ops ? ops->peer : NULL;
    const char *ov = getenv("SAP_BTD_OVERLAP");
    const int overlap = ov && strcmp(ov, "1") == 0;
    snprintf(c->transport, sizeof c->transport, "host");
    if (mode == 1 || c->size < 2 || c->peer) return SAP_OK;
    sap_status st = SAP_OK;
    char why[200] = "this backend has no device-to-device transport";
    int64_t ok = po != NULL;
    if (po && mode == 0) sap__try_begin(ctx);
    if (po && po->load(ctx) != SAP_OK) {
        ok = 0;
        snprintf(why, sizeof why, "%s", sap_context_last_error(ctx));
    }
    SAP_TRY(c->allreduce_min(c, ctx, &ok));
    if (ok) {
        unsigned char id[SAP_PEER_ID_BYTES + 1];
        memset(id, 0, sizeof id);
        if (c->rank == 0) {
            id[SAP_PEER_ID_BYTES] = po->new_id(ctx, id) == SAP_OK;
            if (!id[SAP_PEER_ID_BYTES]) snprintf(why, sizeof why, "%s", sap_context_last_error(ctx));
        }
        SAP_TRY(c->bcast(c, ctx, id, (int64_t)sizeof id));
        ok = id[SAP_PEER_ID_BYTES];
        if (!ok && c->rank != 0) snprintf(why, sizeof why, "no unique id from process 0");
        if (ok) {
            if (po->open(ctx, id, c->rank, c->size, overlap, &c->peer) != SAP_OK) {
                ok = 0;
                c->peer = NULL;
                snprintf(why, sizeof why, "%s", sap_context_last_error(ctx));
            }
            SAP_TRY(c->allreduce_min(c, ctx, &ok));
            if (!ok && c->peer) {
                po->close(ctx, c->peer);
                c->peer = NULL;
                snprintf(why, sizeof why, "it could not be opened on another process");
            }
        }
    }
    if (ok) {
        /* one double to and from each neighbouring process: the connections are made now */
        double *buf = NULL, sec = 0;
        int nb[2], n = 0;
        if (c->rank > 0) nb[n++] = c->rank - 1;
        if (c->rank + 1 < c->size) nb[n++] = c->rank + 1;
        st = ops->mem_alloc(ctx, 4 * sizeof(double), (void **)&buf);
        if (st == SAP_OK) st = ops->dense->zero(ctx, 4, 1, 1, buf, 4, 0);
        const double *sb[2] = {buf, buf + 1};
        double *rb[2] = {buf + 2, buf + 3};
        const int64_t cnt[2] = {1, 1};
        if (st == SAP_OK) st = po->exchange(ctx, c->peer, n, nb, sb, cnt, n, nb, rb, cnt);
        if (st == SAP_OK) st = po->seconds(ctx, c->peer, &sec);
        ops->mem_free(ctx, buf);
        ok = st == SAP_OK;
        if (!ok) snprintf(why, sizeof why, "%s", sap_context_last_error(ctx));
        st = SAP_OK;
        SAP_TRY(c->allreduce_min(c, ctx, &ok));
        if (!ok) {
            po->close(ctx, c->peer);
            c->peer = NULL;
        }
    }
    if (po && mode == 0) sap__try_end(ctx);
    if (!ok) {
        if (mode == 2)
            return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, "SAP_BTD_TRANSPORT=nccl: no device-to-device transport on "
                             "every process (%s)", why);
        return SAP_OK; /* host staging */
    }
    c->peer_ops = po;
    snprintf(c->transport, sizeof c->transport, "%s%s", po->name(), overlap ? " overlap" : "");
    return SAP_OK;
cleanup:
    if (po && mode == 0) sap__try_end(ctx);
    return st;
}

void sap__btd_comm_peer_close(sap__btd_comm *c, sap_context *ctx)
{
    if (c && c->peer && c->peer_ops) c->peer_ops->close(ctx, c->peer);
    if (c) c->peer = NULL, c->peer_ops = NULL;
}

/* device k x k block at (row r0 of a column-major array with ld) -> host contiguous */
static sap_status get_block(sap_btd *T, const double *a, int ld, int rows, int cols, double *dtmp, double *host)
{
    sap_status st = T->dk->lacpy(T->ctx, rows, cols, 1, a, ld, 0, dtmp, rows, 0);
    if (st != SAP_OK) return st;
    sap_vec v = {.n = (sap_int)rows * cols, .prec = SAP_DOUBLE, .data = dtmp};
    return T->ops->vec_download(T->ctx, &v, host);
}

sap_status sap__dist_factor(sap_btd *T)
{
    sap_context *ctx = T->ctx;
    sap__btd_comm *c = T->comm;
    sap_status st = SAP_OK;
    const int k = (int)T->k, p = c->size, r = c->rank, nl = (int)T->nb, ldv = nl * k;
    const int64_t kk = T->kk;
    double *tips = NULL, *all = NULL, *lo = NULL, *di = NULL, *up = NULL, *dtmp = NULL;
    double t0 = c->seconds;
    sap_status lst = SAP_OK;
    if (!T->H) {
        int64_t hb = sap__bc_history(T, T->nb);
        lst = T->ops->mem_alloc(ctx, (size_t)(hb > 0 ? hb : 1) * 8, (void **)&T->H);
    }
    if (lst == SAP_OK) {
        sap__try_begin(ctx);
        lst = sap__bc_factor(T, 0, T->nb, T->H);
        sap__try_end(ctx);
    }
    /* every rank learns the first singular block (global numbering) */
    int64_t bad = lst == SAP_OK ? INT64_MAX : (T->st.singular_block >= 0 ? T->row0 + T->st.singular_block : -1);
    if (lst != SAP_OK && lst != SAP_ERR_SINGULAR) bad = -1;
    SAP_TRY(c->allreduce_min(c, ctx, &bad));
    if (bad != INT64_MAX) {
        if (bad < 0) SAP_FAIL(ctx, lst != SAP_OK ? lst : SAP_ERR_DEVICE, "sap_btd: the local factorization failed on "
                              "a rank");
        T->st.singular_block = bad;
        SAP_FAIL(ctx, SAP_ERR_SINGULAR, "sap_btd: diagonal block of block row %lld is singular (distributed over %d "
                 "processes)", (long long)bad, p);
    }
    T->st.singular_block = -1;
    if (p == 1) goto cleanup;
    /* spikes */
    if (!T->V) {
        SAP_TRY(T->ops->mem_alloc(ctx, (size_t)ldv * k * 8, (void **)&T->V));
        SAP_TRY(T->ops->mem_alloc(ctx, (size_t)ldv * k * 8, (void **)&T->Wsp));
    }
    SAP_TRY(sap__btd_reserve(T, (int64_t)ldv * k));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)kk * 8, (void **)&dtmp));
    SAP_CALLOC(ctx, tips, (size_t)(4 * kk));
    if (!tips) goto cleanup;
    if (r + 1 < p) {
        SAP_TRY(T->dk->zero(ctx, ldv, k, 1, T->V, ldv, 0));
        SAP_TRY(T->ops->mem_upload(ctx, dtmp, T->hCl, (size_t)kk * 8));
        SAP_TRY(T->dk->lacpy(ctx, k, k, 1, dtmp, k, 0, T->V + (nl - 1) * k, ldv, 0));
        SAP_TRY(sap__bc_solve(T, 0, T->nb, T->H, T->V, ldv, k));
        SAP_TRY(get_block(T, T->V, ldv, k, k, dtmp, tips));
        SAP_TRY(get_block(T, T->V + (nl - 1) * k, ldv, k, k, dtmp, tips + kk));
    }
    if (r > 0) {
        SAP_TRY(T->dk->zero(ctx, ldv, k, 1, T->Wsp, ldv, 0));
        SAP_TRY(T->ops->mem_upload(ctx, dtmp, T->hA1, (size_t)kk * 8));
        SAP_TRY(T->dk->lacpy(ctx, k, k, 1, dtmp, k, 0, T->Wsp, ldv, 0));
        SAP_TRY(sap__bc_solve(T, 0, T->nb, T->H, T->Wsp, ldv, k));
        SAP_TRY(get_block(T, T->Wsp, ldv, k, k, dtmp, tips + 2 * kk));
        SAP_TRY(get_block(T, T->Wsp + (nl - 1) * k, ldv, k, k, dtmp, tips + 3 * kk));
    }
    SAP_CALLOC(ctx, all, (size_t)(4 * kk * p));
    if (!all) goto cleanup;
    SAP_TRY(c->allgather(c, ctx, tips, 4 * kk, all));
    /* the reduced system on the host, then on this rank's device */
    const int k2 = 2 * k;
    const int64_t kk2 = 4 * kk;
    int exact = T->algo == SAP_BTD_SPIKE, nbr = exact ? p : p - 1;
    SAP_CALLOC(ctx, lo, (size_t)(nbr * kk2));
    SAP_CALLOC(ctx, di, (size_t)(nbr * kk2));
    SAP_CALLOC(ctx, up, (size_t)(nbr * kk2));
    if (!lo || !di || !up) goto cleanup;
#define TIP(q, w) (all + (int64_t)(q) * 4 * kk + (int64_t)(w) * kk) /* w: 0 V^t, 1 V^b, 2 W^t, 3 W^b */
#define PUT(dst, row, col, src)                                                                                 \
    for (int j_ = 0; j_ < k; j_++)                                                                              \
        memcpy((dst) + (int64_t)((col) + j_) * k2 + (row), (src) + (int64_t)j_ * k, (size_t)k * 8)
    for (int i = 0; i < nbr; i++) {
        double *D = di + i * kk2;
        for (int d = 0; d < k2; d++) D[d + (int64_t)d * k2] = 1.0;
        if (exact) {
            if (i > 0) {
                PUT(lo + i * kk2, 0, k, TIP(i, 2));
                PUT(lo + i * kk2, k, k, TIP(i, 3));
            }
            if (i + 1 < p) {
                PUT(up + i * kk2, 0, 0, TIP(i, 0));
                PUT(up + i * kk2, k, 0, TIP(i, 1));
            }
        } else {
            PUT(D, 0, k, TIP(i, 1));     /* x^b_i + V_i^b x^t_{i+1} */
            PUT(D, k, 0, TIP(i + 1, 2)); /* x^t_{i+1} + W_{i+1}^t x^b_i */
        }
    }
#undef PUT
#undef TIP
    sap_btd_destroy(T->red);
    T->red = NULL;
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.algo = SAP_BTD_BCYCLIC;
    o.variant = T->variant;
    SAP_TRY(sap_btd_create(ctx, k2, nbr, lo, di, up, &o, &T->red));
    st = sap_btd_factor(T->red);
    if (st < 0) SAP_FAIL(ctx, st, "sap_btd: the reduced system of the %d processes is singular", p);
cleanup:
    T->st.time_comm = c->seconds - t0;
    T->ops->mem_free(ctx, dtmp);
    sap__free(ctx, tips);
    sap__free(ctx, all);
    sap__free(ctx, lo);
    sap__free(ctx, di);
    sap__free(ctx, up);
    return st;
}

sap_status sap__dist_solve(sap_btd *T, double *z, int nrhs)
{
    sap_context *ctx = T->ctx;
    sap__btd_comm *c = T->comm;
    sap_status st = SAP_OK;
    const int k = (int)T->k, p = c->size, r = c->rank, nl = (int)T->nb, n = nl * k, ldv = n;
    double *mine = NULL, *all = NULL, *Y = NULL, *xs = NULL, *dx = NULL;
    double t0 = c->seconds;
    SAP_TRY(sap__bc_solve(T, 0, T->nb, T->H, z, n, nrhs));
    if (p == 1) goto cleanup;
    const int k2 = 2 * k, exact = T->algo == SAP_BTD_SPIKE, nbr = exact ? p : p - 1, ldy = k2 * nbr;
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)k2 * nrhs * 8, (void **)&dx));
    SAP_ALLOC(ctx, mine, (size_t)k2 * nrhs);
    SAP_ALLOC(ctx, all, (size_t)k2 * nrhs * p);
    SAP_CALLOC(ctx, Y, (size_t)ldy * nrhs);
    SAP_ALLOC(ctx, xs, (size_t)k2 * nrhs);
    if (!mine || !all || !Y || !xs) goto cleanup;
    /* top and bottom blocks of g, gathered */
    SAP_TRY(T->dk->lacpy(ctx, k, nrhs, 1, z, n, 0, dx, k2, 0));
    SAP_TRY(T->dk->lacpy(ctx, k, nrhs, 1, z + (nl - 1) * k, n, 0, dx + k, k2, 0));
    sap_vec v = {.n = (sap_int)k2 * nrhs, .prec = SAP_DOUBLE, .data = dx};
    SAP_TRY(T->ops->vec_download(ctx, &v, mine));
    SAP_TRY(c->allgather(c, ctx, mine, (int64_t)k2 * nrhs, all));
#define GT(q, col) (all + (int64_t)(q) * k2 * nrhs + (int64_t)(col) * k2)
#define GB(q, col) (GT(q, col) + k)
    for (int col = 0; col < nrhs; col++)
        for (int i = 0; i < nbr; i++) {
            double *y = Y + (int64_t)col * ldy + (int64_t)i * k2;
            memcpy(y, exact ? GT(i, col) : GB(i, col), (size_t)k * 8);
            memcpy(y + k, exact ? GB(i, col) : GT(i + 1, col), (size_t)k * 8);
        }
#undef GT
#undef GB
    SAP_TRY(sap_btd_solve_many(T->red, nrhs, Y, ldy, Y, ldy));
    /* x^t of the next rank (columns at xs), x^b of the previous (at xs + k) */
    for (int col = 0; col < nrhs; col++) {
        const double *y = Y + (int64_t)col * ldy;
        if (r + 1 < p) memcpy(xs + (int64_t)col * k2, exact ? y + (r + 1) * k2 : y + r * k2 + k, (size_t)k * 8);
        if (r > 0) memcpy(xs + (int64_t)col * k2 + k, exact ? y + (r - 1) * k2 + k : y + (r - 1) * k2, (size_t)k * 8);
    }
    SAP_TRY(T->ops->mem_upload(ctx, dx, xs, (size_t)k2 * nrhs * 8));
    if (r + 1 < p) SAP_TRY(T->dk->gemm(ctx, ldv, nrhs, k, -1.0, T->V, ldv, 0, dx, k2, 0, 1.0, z, n, 0, 1));
    if (r > 0) SAP_TRY(T->dk->gemm(ctx, ldv, nrhs, k, -1.0, T->Wsp, ldv, 0, dx + k, k2, 0, 1.0, z, n, 0, 1));
cleanup:
    T->st.time_comm = c->seconds - t0;
    T->ops->mem_free(ctx, dx);
    sap__free(ctx, mine);
    sap__free(ctx, all);
    sap__free(ctx, Y);
    sap__free(ctx, xs);
    return st;
}

/* ---- the public part ------------------------------------------------------------- */

sap_status sap_btd_create_dist(sap_context *ctx, void *mpi_comm, sap_int k, sap_int nb_local, const double *lower,
                               const double *diag, const double *upper, const sap_btd_options *opt, sap_btd **T)
{
    SAP_CHECK_CTX(ctx);
    if (!T) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_create_dist: T is NULL");
    *T = NULL;
    sap_status st = SAP_OK;
    sap__btd_comm *c = NULL;
    sap_btd *B = NULL;
    SAP_TRY(sap__btd_comm_mpi(ctx, mpi_comm, &c));
    /* the processes agree on the outcome (one failing alone would leave the others
     * waiting in the next collective) */
    /* $SAP_BTD_DIST: the distributed BCYCLIC's order, interior first (default: on 2 x H100 it
     * kept 88-90% of one GPU's time at k = 256..1024 against 82-85% for the levels order,
     * 78% against 55% staged through the host; bench/results/btd_h100x2_interior_2026-11-27.md)
     * or levels; interior-dist / interior-repl: interior first with the reduced system
     * distributed / replicated on every process (default: replicated up to 9 processes with a
     * device-to-device transport or host memory, btd_interior.c) */
    const char *dv = getenv("SAP_BTD_DIST");
    const int bcyc = opt && opt->algo == SAP_BTD_BCYCLIC;
    int interior = 1, repl = -1; /* -1: the reduced system replicated where it pays (btd_interior.c) */
    sap_status lst = SAP_OK;
    if (dv && *dv && strcmp(dv, "interior") != 0) {
        if (strcmp(dv, "levels") == 0) interior = 0;
        else if (strcmp(dv, "interior-dist") == 0) repl = 0;
        else if (strcmp(dv, "interior-repl") == 0) repl = 1;
        else lst = SAP_ERROR(ctx, SAP_ERR_INVALID, "SAP_BTD_DIST=%s: interior, interior-dist, interior-repl or levels", dv);
    }
    if (lst == SAP_OK)
        lst = nb_local < (bcyc ? 1 : 2) && c->size > 1
                  ? SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_create_dist: every process needs >= %d block rows "
                              "(this one has %lld)", bcyc ? 1 : 2, (long long)nb_local)
                  : sap_btd_create(ctx, k, nb_local, lower, diag, upper, opt, &B);
    int64_t ok = lst == SAP_OK;
    SAP_TRY(c->allreduce_min(c, ctx, &ok));
    if (!ok) {
        st = lst != SAP_OK ? lst : SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_create_dist: failed on another process");
        goto cleanup;
    }
    B->comm = c;
    B->dist_interior = interior && bcyc;
    B->bi_repl = repl;
    c = NULL;
    /* BCYCLIC's exchanges: device to device where every process has the transport */
    if (opt && opt->algo == SAP_BTD_BCYCLIC) SAP_TRY(sap__btd_comm_peer(B->comm, ctx, B->ops));
    const int64_t kk = B->kk;
    SAP_CALLOC(ctx, B->hA1, (size_t)kk);
    SAP_CALLOC(ctx, B->hCl, (size_t)kk);
    if (!B->hA1 || !B->hCl) goto cleanup;
    if (B->comm->rank > 0) memcpy(B->hA1, lower, (size_t)kk * 8);
    if (B->comm->rank + 1 < B->comm->size) memcpy(B->hCl, upper + (nb_local - 1) * kk, (size_t)kk * 8);
    /* global numbering of the block rows */
    double mine = (double)nb_local, *counts = NULL;
    SAP_ALLOC(ctx, counts, (size_t)B->comm->size);
    SAP_ALLOC(ctx, B->roff, (size_t)B->comm->size + 1);
    if (!counts || !B->roff) {
        sap__free(ctx, counts);
        goto cleanup;
    }
    st = B->comm->allgather(B->comm, ctx, &mine, 1, counts);
    B->row0 = 0;
    B->nbg = 0;
    for (int q = 0; q < B->comm->size; q++) {
        B->roff[q] = B->nbg;
        if (q < B->comm->rank) B->row0 += (sap_int)counts[q];
        B->nbg += (sap_int)counts[q];
    }
    B->roff[B->comm->size] = B->nbg;
    sap__free(ctx, counts);
    if (st != SAP_OK) goto cleanup;
    *T = B;
    return SAP_OK;
cleanup:
    if (c) c->destroy(c, ctx);
    sap_btd_destroy(B);
    return st;
}

sap_status sap_btd_create_csr_dist(sap_context *ctx, void *mpi_comm, const sap_csr *A, sap_int k,
                                   const sap_btd_options *opt, sap_btd **T)
{
    SAP_CHECK_CTX(ctx);
    if (!A || !T) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_create_csr_dist: NULL argument");
    *T = NULL;
    sap_status st = SAP_OK;
    sap__btd_comm *c = NULL;
    double *l = NULL, *d = NULL, *u = NULL;
    SAP_TRY(sap__btd_comm_mpi(ctx, mpi_comm, &c));
    if (k == 0) SAP_TRY(sap_btd_detect_block(A, &k));
    SAP_TRY(sap__btd_csr_blocks(ctx, A, k, &l, &d, &u));
    sap_int nb = A->nrows / k, p = c->size, q = nb / p, rem = nb % p, rk = c->rank;
    sap_int first = rk * q + (rk < rem ? rk : rem), cnt = q + (rk < rem ? 1 : 0);
    int64_t kk = k * k;
    SAP_TRY(sap_btd_create_dist(ctx, mpi_comm, k, cnt, l + first * kk, d + first * kk, u + first * kk, opt, T));
cleanup:
    if (c) c->destroy(c, ctx);
    sap__free(ctx, l);
    sap__free(ctx, d);
    sap__free(ctx, u);
    return st;
}

sap_status sap_btd_dist_range(const sap_btd *T, sap_int *first_row, sap_int *nrows)
{
    if (!T || !first_row || !nrows) return SAP_ERR_INVALID;
    *first_row = T->comm ? T->row0 * T->k : 0;
    *nrows = T->nb * T->k;
    return SAP_OK;
}

int sap_btd_processes(const sap_btd *T) { return T && T->comm ? T->comm->size : 1; }

sap_status sap_btd_gather(sap_btd *T, const double *x_local, double *x_global)
{
    if (!T || !x_local || !x_global) return SAP_ERR_INVALID;
    sap_context *ctx = T->ctx;
    const sap_int nl = T->nb * T->k;
    if (!T->comm) {
        memmove(x_global, x_local, (size_t)nl * 8);
        return SAP_OK;
    }
    sap__btd_comm *c = T->comm;
    sap_status st = SAP_OK;
    /* ranks hold different counts: gather at the largest, then compact */
    int64_t mx = -(int64_t)nl;
    SAP_TRY(c->allreduce_min(c, ctx, &mx));
    mx = -mx;
    double *send = NULL, *all = NULL;
    SAP_CALLOC(ctx, send, (size_t)mx + 1);
    SAP_ALLOC(ctx, all, (size_t)(mx + 1) * c->size);
    if (!send || !all) goto out;
    memcpy(send + 1, x_local, (size_t)nl * 8);
    send[0] = (double)nl;
    st = c->allgather(c, ctx, send, mx + 1, all);
    if (st == SAP_OK) {
        sap_int at = 0;
        for (int q = 0; q < c->size; q++) {
            const double *b = all + (int64_t)q * (mx + 1);
            sap_int m = (sap_int)b[0];
            memcpy(x_global + at, b + 1, (size_t)m * 8);
            at += m;
        }
    }
out:
    sap__free(ctx, send);
    sap__free(ctx, all);
cleanup:
    return st;
}

void sap__dist_free(sap_btd *T)
{
    sap__bi_free(T); /* before the communicator it shares */
    if (T->comm) T->comm->destroy(T->comm, T->ctx);
    T->comm = NULL;
    sap__free(T->ctx, T->hA1);
    sap__free(T->ctx, T->hCl);
    T->hA1 = T->hCl = NULL;
    sap__free(T->ctx, T->roff);
    T->roff = NULL;
    T->ops->mem_free(T->ctx, T->xb);
    sap__btd_xh_free(T);
    T->xb = NULL;
    T->xcap = 0;
}

void sap__btd_xh_free(sap_btd *T)
{
    if (T->xh && T->xh_pinned) T->ops->host_free(T->ctx, T->xh);
    else sap__free(T->ctx, T->xh);
    T->xh = NULL;
    T->xh_pinned = 0;
}
