/* btd_interior.c -- distributed BCYCLIC, interior first ($SAP_BTD_DIST=interior): each
 * process first eliminates its own rows but its interface rows with no communication, then
 * the interface rows of all processes are reduced by the distributed cyclic reduction of
 * btd_cyclic.c, then each process back-substitutes locally (Lamas Davina and Roman 2018,
 * section 3.1, partitioned as Spike's reduced system, section 3.2, but the interface
 * couplings found by elimination, no spikes).
 *
 * Interface rows: the first and the last row of a process, but the first process keeps only
 * its last (its row 0 has no neighbour below) and the last process only its first: 2 P - 2
 * rows (1 on one process).  The local elimination is BCYCLIC's levels in a virtual numbering
 * v = row + off (off = 1 on the first of several processes: virtual row 0, kept at every
 * level, does not exist there): level h = 1, 2, 4, ... while h < lim eliminates the virtual
 * rows h, 3h, 5h, ... < lim and keeps 0, 2h, 4h, ... < lim, the same strided batched steps,
 * where lim = the virtual row count, less one where the last row is pinned (kept to the end:
 * every process but the last).  The pinned row L's neighbour below at level h is
 * p = h floor((lim - 1) / h), the last live row; when p is eliminated at that level (p / h
 * odd) L takes B_L -= A_L C^_p, A_L := -A_L A^_p (one block, a fill-in coupling that ends on
 * the process' row 0), and p's back substitution reads x_L in place of x_{p+h}.  What is
 * left, row 0 (A_0 the coupling to the previous process, C_0 to L) and L (A_L to row 0, C_L
 * to the next process), is a block-tridiagonal system in process order, solved by the
 * distributed BCYCLIC of a second object (T->ired) over the same communicator: on 2
 * processes 2 rows, 1 exchange per factorization and 2 per solve (the levels order: 6 and
 * 12-16 at 25 rows a process), for one elimination step more than one process (as the
 * levels order).  Or (T->bi_repl, the default up to SAP_BI_REPL_MAX processes where the
 * exchanges go device to device or through host memory anyway, the cpu backend) the reduced
 * system is replicated: every process gathers all interface rows (one all-gather per
 * factorization, of 3 k^2 doubles a row, and one per solve, of k doubles a row and
 * right-hand side) and factors and solves the 2 P - 2 rows itself with the one-process
 * BCYCLIC, so that a solve waits on one exchange instead of 2 log2(2 P - 2).  The history
 * keeps, per level, the kept rows' A|C and L's before the update (the forward solve's
 * products).  A singular eliminated block is found by every process (one all-reduce before
 * the reduced system), a singular interface block by the reduced system's BCYCLIC (the
 * replicated one: on every process alike, confirmed by one all-reduce); both name the global
 * block row. */
#include "btd/btd_comm.h"
#include "btd/btd_impl.h"

#include <stdlib.h>

/* The plan of a process: virtual rows v = real row + off; off = 1 on the first of several
 * processes (its virtual row 0 does not exist: its real row 0 is eliminated like an interior
 * row, it has no neighbour below), pin = 1 but on the last process (its real row m-1 is kept
 * to the end; the last process eliminates it, it has no neighbour above).  The rows
 * eliminated are the virtual 1 .. lim - 1, lim = m + off - pin. */
typedef struct iplan {
    int off, pin;
    int64_t lim;
    int nl;
    int nred;    /* interface rows here: real 0 (when off = 0) and m - 1 (when pin), once */
    sap_int ifr[2];
} iplan;

typedef struct ilev {
    int64_t h, p; /* p: the pinned row's neighbour below at this level (virtual) */
    int nE, nK;   /* eliminated rows h + 2h j, kept 2h j (virtual, < lim; kept 0 absent when off) */
    int lastE;    /* pin and p is eliminated here (row m - 1 is updated) */
} ilev;

static iplan plan_of(int rank, int size, sap_int m, ilev *L)
{
    iplan P;
    P.off = rank == 0 && size > 1;
    P.pin = rank + 1 < size;
    P.lim = (int64_t)m + P.off - P.pin;
    P.nl = 0;
    for (int64_t h = 1; h < P.lim; h *= 2) {
        ilev v;
        v.h = h;
        v.nE = sap__btd_count(h, 2 * h, P.lim);
        v.nK = sap__btd_count(0, 2 * h, P.lim);
        v.p = h * ((P.lim - 1) / h);
        v.lastE = P.pin && (v.p / h) % 2 == 1;
        L[P.nl++] = v;
    }
    P.nred = 0;
    if (!P.off) P.ifr[P.nred++] = 0;
    if (P.pin && (P.nred == 0 || m > 1)) P.ifr[P.nred++] = m - 1;
    return P;
}

/* interface rows of process q holding mq rows */
static int nred_of(int q, int size, sap_int mq)
{
    if (mq == 1) return 1;
    return (q > 0 || size == 1) + (q + 1 < size);
}

static int64_t history_doubles(const sap_btd *T, const iplan *P, const ilev *L)
{
    int64_t hb = 0;
    for (int li = 0; li < P->nl; li++) hb += (int64_t)(L[li].nK - P->off + P->pin) * 2 * T->kk;
    return hb;
}

static sap_status local_eliminate(sap_btd *T, const iplan *P, const ilev *L)
{
    sap_context *ctx = T->ctx;
    const int k = (int)T->k, bat = sap__bc_batched(T), j0 = P->off;
    const int64_t kk = T->kk, l = T->nb - 1, o = P->off;
    double *D = T->D, *AC = T->AC, *Hl = T->H;
    sap_status st = SAP_OK;
    for (int li = 0; li < P->nl; li++) {
        const int64_t h = L[li].h, e0 = h - o; /* real row of the first eliminated */
        const int nE = L[li].nE, nK = L[li].nK;
        SAP_TRY(sap__bc_eliminate(T, nE, D + e0 * kk, 2 * h * kk, T->piv + e0 * k, 2 * h * k, T->info + e0, 2 * h,
                                  AC + 2 * e0 * kk, 4 * h * kk, T->Binv ? T->Binv + e0 * kk : NULL,
                                  T->W ? T->W + 2 * e0 * kk : NULL));
        /* history: the kept rows' A|C (j >= j0), then the pinned row's */
        const int64_t k0 = 2 * h * j0 - o; /* real row of the first kept present */
        if (nK > j0) SAP_TRY(T->dk->lacpy(ctx, k, 2 * k, nK - j0, AC + 2 * k0 * kk, k, 4 * h * kk, Hl, k, 2 * kk));
        const double *HL = Hl + (int64_t)(nK - j0) * 2 * kk;
        if (P->pin) SAP_TRY(T->dk->lacpy(ctx, k, 2 * k, 1, AC + 2 * l * kk, k, 0, (double *)HL, k, 0));
        /* kept row j on lane j in the four updates (two of them write B_i) */
        SAP_TRY(sap__bc_lanes(T, bat, nK));
        /* kept i = 2h (j + 1), eliminated e = i - h, j < nK - 1: B_i -= A_i C^_e; A_i := -A_i A^_e */
        const double *Hk1 = Hl + (int64_t)(1 - j0) * 2 * kk;
        SAP_TRY(sap__bc_update(T, bat, 1, k, k, Hk1, 2 * kk, AC + 2 * e0 * kk + kk, k, 4 * h * kk, 1.0,
                               D + (2 * h - o) * kk, k, 2 * h * kk, nK - 1));
        SAP_TRY(sap__bc_update(T, bat, 1, k, k, Hk1, 2 * kk, AC + 2 * e0 * kk, k, 4 * h * kk, 0.0,
                               AC + 2 * (2 * h - o) * kk, k, 4 * h * kk, nK - 1));
        /* kept i = 2h j, eliminated e = i + h, j0 <= j < nE: B_i -= C_i A^_e; C_i := -C_i C^_e */
        const int64_t f0 = h + 2 * h * j0 - o; /* real row of the first such e */
        SAP_TRY(sap__bc_update(T, bat, j0, k, k, Hl + kk, 2 * kk, AC + 2 * f0 * kk, k, 4 * h * kk, 1.0, D + k0 * kk,
                               k, 2 * h * kk, nE - j0));
        SAP_TRY(sap__bc_update(T, bat, j0, k, k, Hl + kk, 2 * kk, AC + 2 * f0 * kk + kk, k, 4 * h * kk, 0.0,
                               AC + 2 * k0 * kk + kk, k, 4 * h * kk, nE - j0));
        SAP_TRY(sap__bc_lanes_end(T));
        if (L[li].lastE) { /* the pinned row, its neighbour below p eliminated */
            const int64_t p = L[li].p - o;
            SAP_TRY(sap__bc_update(T, 1, 0, k, k, HL, 0, AC + 2 * p * kk + kk, k, 0, 1.0, D + l * kk, k, 0, 1));
            SAP_TRY(sap__bc_update(T, 1, 0, k, k, HL, 0, AC + 2 * p * kk, k, 0, 0.0, AC + 2 * l * kk, k, 0, 1));
        }
        Hl += (int64_t)(nK - j0 + P->pin) * 2 * kk;
    }
cleanup:
    if (st != SAP_OK) sap__bc_lanes_end(T);
    return st;
}

/* the first singular eliminated block in elimination order: level * nbg + global row */
static sap_status local_singular(sap_btd *T, const iplan *P, const ilev *L, int64_t *key)
{
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    int32_t *f = NULL;
    *key = INT64_MAX;
    if (P->nl == 0) return SAP_OK;
    SAP_ALLOC(ctx, f, (size_t)T->nb);
    if (!f) goto cleanup;
    SAP_TRY(T->dk->get_ints(ctx, T->info, T->nb, f));
    for (int li = 0; li < P->nl && *key == INT64_MAX; li++)
        for (int j = 0; j < L[li].nE; j++) {
            const int64_t i = L[li].h + 2 * L[li].h * j - P->off;
            if (f[i] != 0) {
                *key = (int64_t)li * T->nbg + T->row0 + i;
                break;
            }
        }
cleanup:
    sap__free(ctx, f);
    return st;
}

/* processes up to which the reduced system is replicated by default */
#define SAP_BI_REPL_MAX 9

/* the reduced system replicated: decided at the first factorization where $SAP_BTD_DIST left
 * it open (T->bi_repl < 0): a device-to-device transport, or a backend in host memory */
static int repl_on(sap_btd *T)
{
    if (T->bi_repl < 0) {
        const sap__btd_comm *c = T->comm;
        T->bi_repl = c->size <= SAP_BI_REPL_MAX && (c->peer != NULL || T->ops->host_alloc == NULL);
    }
    return T->bi_repl;
}

/* T->G for n doubles (backend memory; the contents are not kept) */
static sap_status reserve_g(sap_btd *T, int64_t n)
{
    if (n <= T->gcap) return SAP_OK;
    T->ops->mem_free(T->ctx, T->G);
    T->G = NULL;
    T->gcap = 0;
    sap_status st = T->ops->mem_alloc(T->ctx, (size_t)n * 8, (void **)&T->G);
    if (st == SAP_OK) T->gcap = n;
    return st;
}

/* All-gather of the rows' blocks: process q's rows ro[q] .. ro[q + 1] - 1, per doubles each, at
 * g + ro[q] per (backend memory; this process' own in place) onto every process.  Device to
 * device with the peer transport (one group of sends and receives, queued on the stream),
 * else staged through host memory (MPI all-gather of the largest part). */
static sap_status gather_rows(sap_btd *T, double *g, const sap_int *ro, int64_t per)
{
    sap_context *ctx = T->ctx;
    sap__btd_comm *c = T->comm;
    const int np = c->size, me = c->rank;
    sap_status st = SAP_OK;
    int *rank = NULL;
    const double **sb = NULL;
    double **rb = NULL;
    int64_t *cnt = NULL;
    if (np == 1) return SAP_OK;
    if (c->peer) {
        SAP_ALLOC(ctx, rank, (size_t)np);
        SAP_ALLOC(ctx, sb, (size_t)np);
        SAP_ALLOC(ctx, rb, (size_t)np);
        SAP_ALLOC(ctx, cnt, (size_t)np * 2);
        if (!rank || !sb || !rb || !cnt) goto cleanup;
        int n = 0;
        for (int q = 0; q < np; q++) {
            if (q == me) continue;
            rank[n] = q;
            sb[n] = g + ro[me] * per;
            cnt[n] = (ro[me + 1] - ro[me]) * per;
            rb[n] = g + ro[q] * per;
            cnt[np + n] = (ro[q + 1] - ro[q]) * per;
            n++;
        }
        SAP_TRY(c->peer_ops->exchange(ctx, c->peer, n, rank, sb, cnt, n, rank, rb, cnt + np));
        SAP_TRY(c->peer_ops->wait(ctx, c->peer));
        goto cleanup;
    }
    int64_t mx = 0;
    for (int q = 0; q < np; q++) mx = (ro[q + 1] - ro[q]) * per > mx ? (ro[q + 1] - ro[q]) * per : mx;
    if ((np + 1) * mx > T->ghcap) {
        sap__free(ctx, T->Gh);
        T->ghcap = 0;
        SAP_ALLOC(ctx, T->Gh, (size_t)(np + 1) * (size_t)mx);
        if (!T->Gh) goto cleanup;
        T->ghcap = (np + 1) * mx;
    }
    SAP_TRY(T->ops->synchronize(ctx));
    const double t0 = sap__wtime();
    SAP_TRY(T->ops->mem_download(ctx, T->Gh, g + ro[me] * per, (size_t)((ro[me + 1] - ro[me]) * per) * 8));
    const double m0 = c->seconds;
    SAP_TRY(c->allgather(c, ctx, T->Gh, mx, T->Gh + mx));
    const double mpi = c->seconds - m0; /* counted by the communicator */
    for (int q = 0; q < np; q++)
        if (q != me)
            SAP_TRY(T->ops->mem_upload(ctx, g + ro[q] * per, T->Gh + mx + q * mx,
                                       (size_t)((ro[q + 1] - ro[q]) * per) * 8));
    c->seconds += sap__wtime() - t0 - mpi;
cleanup:
    sap__free(ctx, rank);
    sap__free(ctx, sb);
    sap__free(ctx, rb);
    sap__free(ctx, cnt);
    return st;
}

/* the reduced system's object: the interface rows here (distributed BCYCLIC over the same
 * communicator and couplings) or, replicated, those of every process (a one-process object;
 * roff: the processes' first interface rows all the same) */
static sap_status make_reduced(sap_btd *T, const iplan *P, int repl)
{
    sap_context *ctx = T->ctx;
    sap__btd_comm *c = T->comm;
    sap_status st = SAP_OK;
    sap_btd_options o = T->opt;
    o.algo = SAP_BTD_BCYCLIC;
    o.variant = T->variant;
    sap_btd *R = NULL;
    sap_int *ro = NULL;
    SAP_ALLOC(ctx, ro, (size_t)c->size + 1);
    if (!ro) goto cleanup;
    ro[0] = 0;
    for (int q = 0; q < c->size; q++) ro[q + 1] = ro[q] + nred_of(q, c->size, T->roff[q + 1] - T->roff[q]);
    SAP_TRY(sap__btd_alloc(ctx, T->k, repl ? ro[c->size] : P->nred, &o, &R));
    T->ired = R;
    R->algo = SAP_BTD_BCYCLIC;
    R->roff = ro;
    ro = NULL;
    if (!repl) {
        R->comm = c;
        R->hA1 = T->hA1;
        R->hCl = T->hCl;
        R->row0 = R->roff[c->rank];
    }
    R->nbg = R->roff[c->size]; /* nred_of(rank) == P->nred */
cleanup:
    sap__free(ctx, ro);
    return st;
}

/* The interface rows of every process onto each (their couplings to the neighbouring
 * processes put in), then the one-process BCYCLIC of them.  *sing: the reduced row of an
 * exactly singular block (-1: none; the status is then SAP_OK). */
static sap_status repl_factor(sap_btd *T, const iplan *P, sap_int *sing)
{
    sap_context *ctx = T->ctx;
    sap__btd_comm *c = T->comm;
    sap_status st = SAP_OK;
    const int k = (int)T->k, me = c->rank;
    const int64_t kk = T->kk, rk = 3 * kk; /* a row in G: B, then A | C */
    *sing = -1;
    if (!T->ired) SAP_TRY(make_reduced(T, P, 1));
    sap_btd *R = T->ired;
    const sap_int *ro = R->roff;
    const int nr = (int)R->nb;
    SAP_TRY(reserve_g(T, nr * rk));
    if (!T->Cd) SAP_TRY(T->ops->mem_alloc(ctx, (size_t)kk * 2 * 8, (void **)&T->Cd));
    if (!T->cd_fresh) {
        SAP_TRY(T->ops->mem_upload(ctx, T->Cd, T->hA1, (size_t)kk * 8));
        SAP_TRY(T->ops->mem_upload(ctx, T->Cd + kk, T->hCl, (size_t)kk * 8));
        T->cd_fresh = 1;
    }
    double *mine = T->G + ro[me] * rk;
    const int64_t step = P->nred > 1 ? (int64_t)(P->ifr[1] - P->ifr[0]) * kk : 0;
    SAP_TRY(T->dk->lacpy(ctx, k, k, P->nred, T->D + P->ifr[0] * kk, k, step, mine, k, rk));
    SAP_TRY(T->dk->lacpy(ctx, k, 2 * k, P->nred, T->AC + 2 * P->ifr[0] * kk, k, 2 * step, mine + kk, k, rk));
    if (me > 0) SAP_TRY(T->dk->lacpy(ctx, k, k, 1, T->Cd, k, 0, mine + kk, k, 0));
    if (me + 1 < c->size)
        SAP_TRY(T->dk->lacpy(ctx, k, k, 1, T->Cd + kk, k, 0, mine + (P->nred - 1) * rk + 2 * kk, k, 0));
    SAP_TRY(gather_rows(T, T->G, ro, rk));
    SAP_TRY(T->dk->lacpy(ctx, k, k, nr, T->G, k, rk, R->D, k, kk));
    SAP_TRY(T->dk->lacpy(ctx, k, 2 * k, nr, T->G + kk, k, rk, R->AC, k, 2 * kk));
    R->variant = T->variant;
    R->opt.variant = T->variant;
    if (sap__bc_uses_getri(R) && !R->Binv) {
        SAP_TRY(R->ops->mem_alloc(ctx, (size_t)nr * kk * 8, (void **)&R->Binv));
        SAP_TRY(R->ops->mem_alloc(ctx, (size_t)nr * 2 * kk * 8, (void **)&R->W));
    }
    if (!R->H) {
        int64_t hb = sap__bc_history(R, nr);
        SAP_TRY(R->ops->mem_alloc(ctx, (size_t)(hb > 0 ? hb : 1) * 8, (void **)&R->H));
    }
    R->st.singular_block = -1;
    st = sap__bc_factor(R, 0, nr, R->H);
    if (st == SAP_ERR_SINGULAR && R->st.singular_block >= 0) *sing = R->st.singular_block, st = SAP_OK;
cleanup:
    return st;
}

/* The interface rows' right-hand sides of every process onto each, the replicated reduced
 * system solved, this process' rows back into z. */
static sap_status repl_solve(sap_btd *T, const iplan *P, double *z, int ldz, int nrhs)
{
    sap_context *ctx = T->ctx;
    sap_btd *R = T->ired;
    sap_status st = SAP_OK;
    const int k = (int)T->k, me = T->comm->rank, nr = (int)R->nb, ldr = k * nr;
    const int64_t rz = (int64_t)k * nrhs; /* a row's right-hand sides in g, ld k */
    const sap_int *ro = R->roff;
    SAP_TRY(sap__btd_reserve(R, (int64_t)ldr * nrhs));
    double *g = R->Z; /* one right-hand side: R->Z has the layout of g */
    if (nrhs > 1) {
        SAP_TRY(reserve_g(T, nr * rz));
        g = T->G;
    }
    const int64_t step = P->nred > 1 ? (int64_t)(P->ifr[1] - P->ifr[0]) * k : 0;
    SAP_TRY(T->dk->lacpy(ctx, k, nrhs, P->nred, z + P->ifr[0] * k, ldz, step, g + ro[me] * rz, k, rz));
    SAP_TRY(gather_rows(T, g, ro, rz));
    if (nrhs > 1) SAP_TRY(T->dk->lacpy(ctx, k, nrhs, nr, g, k, rz, R->Z, ldr, k));
    SAP_TRY(sap__bc_solve(R, 0, nr, R->H, R->Z, ldr, nrhs));
    SAP_TRY(T->dk->lacpy(ctx, k, nrhs, P->nred, R->Z + ro[me] * k, ldr, k, z + P->ifr[0] * k, ldz, step));
    sap__bc_peer_time(T);
cleanup:
    return st;
}

void sap__bi_free(sap_btd *T)
{
    sap_btd *R = T->ired;
    T->ops->mem_free(T->ctx, T->G);
    T->ops->mem_free(T->ctx, T->Cd);
    sap__free(T->ctx, T->Gh);
    T->G = T->Cd = T->Gh = NULL;
    T->gcap = T->ghcap = 0;
    T->cd_fresh = 0;
    if (!R) return;
    R->comm = NULL; /* T's */
    R->hA1 = R->hCl = NULL;
    sap_btd_destroy(R);
    T->ired = NULL;
}

sap_status sap__bi_factor(sap_btd *T)
{
    sap_context *ctx = T->ctx;
    sap__btd_comm *c = T->comm;
    sap_status st = SAP_OK, lst = SAP_OK;
    const int k = (int)T->k;
    const int64_t kk = T->kk;
    const double t0 = c->seconds;
    ilev L[64];
    const iplan P = plan_of(c->rank, c->size, T->nb, L);
    if (!T->H) {
        int64_t hb = history_doubles(T, &P, L);
        lst = T->ops->mem_alloc(ctx, (size_t)(hb > 0 ? hb : 1) * 8, (void **)&T->H);
    }
    /* the interiors, no communication; every process learns of a singular block or a failure */
    if (lst == SAP_OK) lst = local_eliminate(T, &P, L);
    int64_t key = INT64_MAX;
    if (lst == SAP_OK) lst = local_singular(T, &P, L, &key);
    SAP_TRY(sap__bc_agree(T, lst, key, "interior elimination"));
    sap_btd *R;
    if (repl_on(T)) { /* the interface rows of every process, replicated */
        sap_int sing = -1;
        lst = repl_factor(T, &P, &sing);
        sap__bc_peer_time(T);
        int64_t v = lst != SAP_OK ? -1 : sing >= 0 ? sing : INT64_MAX;
        SAP_TRY(c->allreduce_min(c, ctx, &v)); /* a failure on one process reaches all */
        if (v < 0) SAP_FAIL(ctx, lst != SAP_OK ? lst : SAP_ERR_DEVICE, "sap_btd: the reduced system of the "
                            "interface rows failed on a process");
        R = T->ired;
        if (v != INT64_MAX) R->st.singular_block = (sap_int)v, st = SAP_ERR_SINGULAR;
    } else { /* the interface rows, distributed BCYCLIC */
        if (!T->ired) SAP_TRY(make_reduced(T, &P, 0));
        R = T->ired;
        R->variant = T->variant;
        R->opt.variant = T->variant;
        if (sap__bc_uses_getri(R) && !R->Binv) {
            SAP_TRY(R->ops->mem_alloc(ctx, (size_t)R->nb * kk * 8, (void **)&R->Binv));
            SAP_TRY(R->ops->mem_alloc(ctx, (size_t)R->nb * 2 * kk * 8, (void **)&R->W));
        }
        for (int i = 0; i < P.nred; i++) {
            SAP_TRY(T->dk->lacpy(ctx, k, k, 1, T->D + P.ifr[i] * kk, k, 0, R->D + i * kk, k, 0));
            SAP_TRY(T->dk->lacpy(ctx, k, 2 * k, 1, T->AC + 2 * P.ifr[i] * kk, k, 0, R->AC + 2 * i * kk, k, 0));
        }
        R->st.singular_block = -1;
        st = sap__bc_factor_dist(R);
    }
    if (st == SAP_ERR_SINGULAR && R->st.singular_block >= 0) { /* the interface row, by its global number */
        sap_int q = R->st.singular_block;
        int r = 0;
        while (r + 1 < c->size && R->roff[r + 1] <= q) r++;
        sap_int mr = T->roff[r + 1] - T->roff[r];
        int first_is_0 = !(r == 0 && c->size > 1); /* the interface rows of process r: 0 (not on the first), m - 1 */
        T->st.singular_block = T->roff[r] + (q == R->roff[r] && first_is_0 ? 0 : mr - 1);
        SAP_FAIL(ctx, SAP_ERR_SINGULAR, "sap_btd: diagonal block of block row %lld is singular (an interface row "
                 "after the interior elimination, %d processes)", (long long)T->st.singular_block, c->size);
    }
cleanup:
    T->st.time_comm = c->seconds - t0;
    return st;
}

sap_status sap__bi_solve(sap_btd *T, double *z, int nrhs)
{
    sap_context *ctx = T->ctx;
    sap__btd_comm *c = T->comm;
    sap_btd *R = T->ired;
    sap_status st = SAP_OK;
    const int k = (int)T->k, ldz = (int)(T->k * T->nb);
    const int64_t kk = T->kk, l = T->nb - 1;
    const double *D = T->D, *AC = T->AC, *Hl = T->H;
    const double t0 = c->seconds;
    if (!R) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: not factored");
    ilev L[64];
    const iplan P = plan_of(c->rank, c->size, T->nb, L);
    const int j0 = P.off;
    const int64_t o = P.off;
    /* forward: z^_e = B_e^{-1} z_e, the kept rows (and the pinned one) updated */
    for (int li = 0; li < P.nl; li++) {
        const int64_t h = L[li].h, e0 = h - o, k0 = 2 * h * j0 - o, f0 = h + 2 * h * j0 - o;
        const int nE = L[li].nE, nK = L[li].nK;
        SAP_TRY(sap__bc_solve_rows(T, nE, D + e0 * kk, 2 * h * kk, T->piv + e0 * k, 2 * h * k,
                                   T->Binv ? T->Binv + e0 * kk : NULL, z + e0 * k, ldz, 2 * h * k, nrhs));
        SAP_TRY(sap__bc_update(T, 1, 0, k, nrhs, Hl + (int64_t)(1 - j0) * 2 * kk, 2 * kk, z + e0 * k, ldz, 2 * h * k,
                               1.0, z + (2 * h - o) * k, ldz, 2 * h * k, nK - 1));
        SAP_TRY(sap__bc_update(T, 1, 0, k, nrhs, Hl + kk, 2 * kk, z + f0 * k, ldz, 2 * h * k, 1.0, z + k0 * k, ldz,
                               2 * h * k, nE - j0));
        if (L[li].lastE)
            SAP_TRY(sap__bc_update(T, 1, 0, k, nrhs, Hl + (int64_t)(nK - j0) * 2 * kk, 0, z + (L[li].p - o) * k, ldz,
                                   0, 1.0, z + l * k, ldz, 0, 1));
        Hl += (int64_t)(nK - j0 + P.pin) * 2 * kk;
    }
    /* the interface rows over the processes */
    if (T->bi_repl) {
        SAP_TRY(repl_solve(T, &P, z, ldz, nrhs));
    } else {
        const int ldr = (int)(R->k * R->nb);
        SAP_TRY(sap__btd_reserve(R, (int64_t)ldr * nrhs));
        for (int i = 0; i < P.nred; i++)
            SAP_TRY(T->dk->lacpy(ctx, k, nrhs, 1, z + P.ifr[i] * k, ldz, 0, R->Z + i * k, ldr, 0));
        SAP_TRY(sap__bc_solve_dist(R, R->Z, nrhs));
        for (int i = 0; i < P.nred; i++)
            SAP_TRY(T->dk->lacpy(ctx, k, nrhs, 1, R->Z + i * k, ldr, 0, z + P.ifr[i] * k, ldz, 0));
    }
    /* back: x_e = z^_e - A^_e x_{e-h} - C^_e x_{e+h}; the last e's neighbour above is the pinned
     * row when e + h >= lim (none on the last process) */
    for (int li = P.nl - 1; li >= 0; li--) {
        const int64_t h = L[li].h, e0 = h - o, f0 = h + 2 * h * j0 - o, k0 = 2 * h * j0 - o;
        const int nE = L[li].nE, nK = L[li].nK;
        SAP_TRY(sap__bc_update(T, 1, 0, k, nrhs, AC + 2 * f0 * kk, 4 * h * kk, z + k0 * k, ldz, 2 * h * k, 1.0,
                               z + f0 * k, ldz, 2 * h * k, nE - j0));
        SAP_TRY(sap__bc_update(T, 1, 0, k, nrhs, AC + 2 * e0 * kk + kk, 4 * h * kk, z + (2 * h - o) * k, ldz, 2 * h * k,
                               1.0, z + e0 * k, ldz, 2 * h * k, nK - 1));
        if (nE > nK - 1 && P.pin) {
            const int64_t el = e0 + 2 * h * (nE - 1);
            SAP_TRY(sap__bc_update(T, 1, 0, k, nrhs, AC + 2 * el * kk + kk, 0, z + l * k, ldz, 0, 1.0, z + el * k, ldz,
                                   0, 1));
        }
    }
cleanup:
    T->st.time_comm = c->seconds - t0;
    return st;
}
