/* btd_impl.h -- the block-tridiagonal solver object (sap_btd) shared by the front end
 * (btd.c), block cyclic reduction (btd_cyclic.c) and Spike (btd_spike.c).  Arrays live in
 * the context's backend memory (host for cpu, device for cuda); every block operation goes
 * through the dense kernels of the device table (device/dense_kernels.h).  Internal.
 *
 * Storage: block row i has its diagonal block B_i at D + i k^2 (k x k, column-major) and
 * its off-diagonal blocks side by side at AC + 2 i k^2 (k x 2k: A_i in columns 0..k-1,
 * C_i in columns k..2k-1), so that A_i and C_i are solved with one getrs of 2k right-hand
 * sides.  A_0 and C_{nb-1} are zero. */
#ifndef SAP_BTD_IMPL_H
#define SAP_BTD_IMPL_H

#include "device/device.h"

struct sap_btd {
    sap_context *ctx;
    const sap_backend_ops *ops;
    const sap_dense_kernels *dk;
    sap_int k, nb;
    int64_t kk; /* k * k */
    sap_btd_options opt;
    sap_btd_algo algo;
    sap_btd_variant variant;
    double *D0, *AC0; /* the values given (matvec, refinement, refactor) */
    double *D, *AC;   /* working copies: factors, hatted blocks */
    int32_t *piv;     /* nb k pivots of the diagonal blocks */
    int32_t *info;    /* nb singularity flags of the diagonal blocks (read after a factor) */
    double *Binv;     /* getri variants: inverses of the eliminated blocks (nb k^2) */
    double *H;        /* BCYCLIC history: the kept rows' A|C of every level */
    double *W;        /* nb 2k^2 work (getri variants) */
    double *Z;        /* right-hand side block in backend memory (zcap doubles) */
    double *Zw;       /* work of the same size (getri solves, refinement) */
    int64_t zcap;
    double *eye;      /* k x k identity (Spike) */
    int factored;
    /* Spike */
    sap_int P;
    sap_int *po;      /* P + 1 block-row offsets of the partitions */
    double *V, *Wsp;  /* spikes: n x k, partition r at po[r] k^2 with ld n_r k */
    double *Cc, *Ac;  /* coupling blocks C_{last of r} (r < P-1), A_{first of r} (r > 0) */
    struct sap_btd *red; /* exact Spike: the reduced system (block 2k, P rows) */
    double *R;        /* truncated Spike: P - 1 interface systems (2k)^2 */
    int32_t *rpiv;
    double *Y;        /* reduced right-hand sides: 2k P x nrhs */
    int64_t ycap;
    sap_btd_stats st;
    /* distributed (btd_dist.c): this process holds block rows row0 .. row0 + nb - 1 of nbg */
    struct sap__btd_comm *comm;
    sap_int row0, nbg;
    sap_int *roff;     /* host: size + 1 first block rows of the processes */
    double *xb, *xh;   /* distributed BCYCLIC: 4 exchange blocks in backend / host memory (xh
                        * page-locked where the backend has host_alloc: sap__btd_xh_free) */
    int64_t xcap;      /* doubles per block of xb / xh */
    int xh_pinned;     /* xh came from ops->host_alloc */
    int lanes_on;      /* between dk->fork and dk->join (btd_cyclic.c) */
    int lane0;         /* block i of a per-block step runs on lane lane0 + i */
    double *hA1, *hCl; /* host: A of the first local row, C of the last (the coupling) */
    int dist_interior; /* distributed BCYCLIC "interior first" ($SAP_BTD_DIST=interior, btd_interior.c) */
    struct sap_btd *ired; /* its reduced system: the interface rows of every process on each of them
                           * (bi_repl) or this process' own, distributed BCYCLIC over the same
                           * communicator (comm, hA1, hCl shared with this object) */
    int bi_repl;       /* interior first: the reduced system replicated (btd_interior.c) */
    double *G;         /* its gathered interface rows / right-hand sides (backend memory) */
    double *Gh;        /* host staging of the gather (the cpu backend: host memory anyway) */
    int64_t gcap, ghcap; /* doubles in G, Gh */
    double *Cd;        /* the couplings hA1 | hCl in backend memory (replicated reduced system) */
    int cd_fresh;      /* Cd holds hA1 / hCl (cleared by a refactorization) */
};

/* Number of matrices i = start, start + step, ... below limit. */
static inline int sap__btd_count(int64_t start, int64_t step, int64_t limit)
{
    return start < limit ? (int)((limit - start + step - 1) / step) : 0;
}

/* Doubles of BCYCLIC history for a segment of m block rows. */
int64_t sap__bc_history(const sap_btd *T, sap_int m);
/* The same for the m rows from global row g0 of a system of gn rows (distributed). */
int64_t sap__bc_history_g(const sap_btd *T, sap_int m, sap_int g0, sap_int gn);
/* BCYCLIC on the block rows o .. o + m - 1 of T->D / T->AC (A_o and C_{o+m-1} must be
 * zero), history at H.  A singular block: SAP_ERR_SINGULAR naming its global row. */
sap_status sap__bc_factor(sap_btd *T, sap_int o, sap_int m, double *H);
/* z (backend memory, the segment's first row, ld ldz, nrhs columns) := E^{-1} z. */
sap_status sap__bc_solve(sap_btd *T, sap_int o, sap_int m, const double *H, double *z, int ldz, int nrhs);
/* Distributed BCYCLIC (T->comm: this process' rows row0 .. row0 + nb - 1 of nbg, the
 * couplings to the neighbouring processes included): factor (collective; the processes
 * agree on a singular block) and solve of the local rows of z (ld k nb). */
sap_status sap__bc_factor_dist(sap_btd *T);
/* After a factorization step on every process (T->comm): lst its status here, key the first
 * singular block found here (level * nbg + global row, INT64_MAX: none); collective: the
 * processes agree on a failure anywhere (lst's status or SAP_ERR_DEVICE) or the first singular
 * block (SAP_ERR_SINGULAR, T->st.singular_block, "level of the <what>" in the message). */
sap_status sap__bc_agree(sap_btd *T, sap_status lst, int64_t key, const char *what);
sap_status sap__bc_solve_dist(sap_btd *T, double *z, int nrhs);
/* The device time of the exchanges queued on the stream so far (with a device-to-device
 * transport), into the communicator's seconds (waits for them). */
void sap__bc_peer_time(sap_btd *T);
/* The steps of BCYCLIC for btd_interior.c, as the variant runs them (one strided batched
 * call or one call per block on the backend's lanes): count rows B_i = LU, [A_i C_i] :=
 * B_i^{-1} [A_i C_i] (strides in doubles / ints); c_i := beta c_i - a_i b_i (k x k times
 * k x n; bat: one strided call, else the variant's way) with block i on lane lane0 + i; z_i := B_i^{-1} z_i (the getri variants through
 * T->Zw, laid out as z). */
int sap__bc_batched(const sap_btd *T);
int sap__bc_uses_getri(const sap_btd *T);
sap_status sap__bc_eliminate(sap_btd *T, int count, double *D, int64_t sd, int32_t *piv, int64_t sp, int32_t *info,
                             int64_t si, double *AC, int64_t sac, double *Binv, double *W);
sap_status sap__bc_update(sap_btd *T, int bat, int lane0, int m, int n, const double *a, int64_t sa, const double *b, int ldb,
                          int64_t sb, double beta, double *c, int ldc, int64_t sc, int count);
/* Several sap__bc_update calls in one fork of the lanes (non-batched variants, count > 1) */
sap_status sap__bc_lanes(sap_btd *T, int bat, int count);
sap_status sap__bc_lanes_end(sap_btd *T);
sap_status sap__bc_solve_rows(sap_btd *T, int count, const double *D, int64_t sd, const int32_t *piv, int64_t sp,
                              const double *Binv, double *z, int ldz, int64_t sz, int nrhs);
/* Distributed BCYCLIC, interior first (btd_interior.c; T->comm, T->dist_interior): factor
 * (collective, the processes agree on a singular block), solve of the local rows of z (ld
 * k nb), release of the reduced system. */
sap_status sap__bi_factor(sap_btd *T);
sap_status sap__bi_solve(sap_btd *T, double *z, int nrhs);
void sap__bi_free(sap_btd *T);
/* The variant for T->k and T->opt.solves on this context: one factorization + opt.solves
 * single-column solves modelled on a small batch of blocks, measured once (cached). */
sap_status sap__bc_choose_variant(sap_btd *T, sap_btd_variant *v, double *seconds);

/* Spike: partitions, coupling, spikes, reduced system (T->D/AC hold the values). */
sap_status sap__spike_factor(sap_btd *T);
sap_status sap__spike_solve(sap_btd *T, double *z, int nrhs);
void sap__spike_free(sap_btd *T);

/* Distributed Spike (btd_dist.c): factor, solve of the local rows, release. */
sap_status sap__dist_factor(sap_btd *T);
sap_status sap__dist_solve(sap_btd *T, double *z, int nrhs);
void sap__dist_free(sap_btd *T);
/* frees the exchange staging buffer T->xh (page-locked or plain host memory) */
void sap__btd_xh_free(sap_btd *T);
/* Host block arrays of a CSR for block width k (checked: SAP_ERR_INVALID naming an entry
 * outside the pattern). */
sap_status sap__btd_csr_blocks(sap_context *ctx, const sap_csr *A, sap_int k, double **lo, double **di, double **up);

/* The object without values (arrays allocated, D0/AC0 zeroed). */
sap_status sap__btd_alloc(sap_context *ctx, sap_int k, sap_int nb, const sap_btd_options *opt, sap_btd **T);
/* Y (ld n) := T X (ld n), nrhs columns, backend memory, with D0/AC0. */
sap_status sap__btd_apply(sap_btd *T, const double *x, double *y, int nrhs);
/* Makes sure T->Z / T->Zw hold bytes for n x nrhs. */
sap_status sap__btd_reserve(sap_btd *T, int64_t doubles);

#endif /* SAP_BTD_IMPL_H */
