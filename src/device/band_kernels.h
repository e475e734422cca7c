/* band_kernels.h -- the data of the banded SaP factorization (partition layout, factors)
 * and the band kernels every backend implements on it (reached through the device table:
 * sap__ops(ctx)->band).  The SaP driver that orders these kernels is src/band/band_sap.c;
 * the storage conventions are described in src/band/band_impl.h.  Internal. */
#ifndef SAP_DEVICE_BAND_KERNELS_H
#define SAP_DEVICE_BAND_KERNELS_H

#include "base/base.h"

struct sap_backend_ops;

/* Partition layout (host). */
typedef struct sap_band_layout {
    sap_int n, P;
    sap_int K;     /* largest half-bandwidth (bounds the coupling blocks) */
    sap_int *off;  /* P + 1 */
    sap_int *Ki;   /* P */
    int64_t *boff; /* P + 1: element offsets of the partition bands */
    sap_int *m;    /* P: coupling size of interface i (m[P-1] = 0) */
    int64_t *coff; /* P + 1: element offsets of the coupling blocks (m_i^2 each) */
    sap_int *w;    /* P: UL window of partition i (0 for i = 0) */
} sap_band_layout;

/* The factored preconditioner / direct solver: arrays in the backend's memory (host
 * for cpu, device for cuda) in one precision, host bookkeeping. */
typedef struct sap_band_fact {
    sap_context *ctx;
    const struct sap_backend_ops *ops;  /* the backend whose memory holds the arrays */
    const struct sap_band_kernels *kt;  /* ops->band */
    sap_band_layout L;
    sap_precision prec;
    int coupled; /* SaP-C: spikes and reduced systems present */
    void *lu;    /* boff[P] elements: the band on entry, LU factors of every partition after */
    void *ul;    /* uoff[P] elements: leading windows of partitions 1.., UL factors after */
    int64_t *uoff; /* P + 1 host offsets of the UL windows ((2 K_b + 1) w_b elements) */
    double *thr, *bst; /* P: boost threshold and value per partition (host) */
    void *B, *C; /* coff[P-1] elements each: coupling blocks */
    void *V, *W; /* coff[P-1] each: V_i^(b), W_{i+1}^(t) */
    void *R;     /* coff[P-1]: LU of I - W V (partial pivoting) */
    int32_t *rpiv; /* sum m_i: pivots of R */
    int64_t *roff; /* P: host offsets into rpiv */
    void *g;     /* n elements of work (first block solve) */
    void *gk;    /* gk_cols * n elements: g for sap__band_fact_apply_many (grown on demand) */
    void *xrk;   /* gk_cols * 2 sum m_i elements: xr for sap__band_fact_apply_many */
    sap_int gk_cols;
    void *xr;    /* 2 * sum m_i: interface unknowns x_i^(b), x_{i+1}^(t) */
    int64_t *xoff; /* P: host offsets into xr */
    int64_t xlen;  /* 2 sum m_i: the elements of one column's interface unknowns (xr) */
    void *dev;   /* backend private (cuda: device copies of the layout) */
    sap_int boosted;
    /* the partitions' LU through the blocked kernels (bs-column steps of trsm / gemm on a
     * skewed copy, SAP_BAND_BS) instead of the per-row ones: sap__band_blocked_pick */
    int blocked;
    /* SaP-C: the UL windows through the same blocked LU, of their reversal J A J (J the
     * reversal permutation: LU of J A J = (J U J)(J L J), a UL of A).  In this storage the
     * reversal of a window is the reversal of its (2 K + 1) w elements, which the blocked
     * kernels fold into their copies in and out (no extra pass) */
    int ul_blocked;
    double t_lu, t_spk, t_lurdcd;
} sap_band_fact;

/* The blocked LU's column block and its skewed work layout for a partition of n rows and
 * half-bandwidth K: M(r, c) = t[ku + r + c ldm], ku = K + SAP_BAND_BS - 1, ldm = 2 ku, for
 * |r - c| <= ku; every rectangle a step touches (diagonal block, L21, U12, A22) is then a
 * column-major matrix of leading dimension ldm. */
#define SAP_BAND_BS 64
static inline int64_t sap__band_blocked_ld(int64_t K) { return 2 * (K + SAP_BAND_BS - 1); }
/* the largest index: ku + (n - 1) (1 + ldm) */
static inline int64_t sap__band_blocked_elems(int64_t n, int64_t K)
{
    return n * (sap__band_blocked_ld(K) + 1) + K + SAP_BAND_BS;
}

/* A band already in the backend's memory in the BAND SpMV layout (sap_backend.h), in
 * double: A(i, j) at val[(j - i + kl) * n + i] for 0 <= j - i + kl < w.  The factors can
 * be filled from it on the backend (no host band, no upload). */
typedef struct sap_band_source {
    const double *val;
    sap_int kl, w;
    /* the CSR the band was filled from (the one given to the numeric setup) has sorted rows
     * and finite values (a solver's checked matrix): the layout reads row ends only */
    int canonical;
} sap_band_source;

/* The heavy operations of SaP, written once per backend.  Arrays live in the backend's
 * memory in the fact's precision.  cpu: src/kernels/cpu/band_cpu.c (OpenMP across
 * partitions); cuda: src/kernels/cuda/band_cuda.cu (a thread block per partition or
 * interface, threads across the band window). */
typedef struct sap_band_kernels {
    const char *name;
    /* after the arrays are allocated and filled: backend private set-up (F->dev) */
    sap_status (*prepare)(sap_band_fact *F);
    void (*release)(sap_band_fact *F);
    /* LU of every partition in fact->lu and (coupled) UL of every window in fact->ul, in
     * place, boosting pivots with |p| < thr[b] to copysign(bst[b], p); adds the number
     * of boosted pivots to *boosted */
    sap_status (*factor)(sap_band_fact *F, sap_int *boosted);
    /* V_i^(b) from the LU and B_i, W_{i+1}^(t) from the UL and C_{i+1} */
    sap_status (*spikes)(sap_band_fact *F);
    /* LU with partial pivoting of I - W V per interface */
    sap_status (*reduced_factor)(sap_band_fact *F);
    /* z = D^{-1} r (block-diagonal solve of every partition) for k columns (column c of r
     * at element c * n, n = F->L.n; likewise z); z may alias r; one pass over the factors
     * for all columns; k < 1: SAP_ERR_INVALID */
    sap_status (*block_solve)(sap_band_fact *F, sap_int k, const void *r, void *z);
    /* interface unknowns from g = D^{-1} r for k columns (column c of g at element c * n):
     * x_i^(b), x_{i+1}^(t) of column c into xr + c * xlen (xlen = 2 sum m_i elements; F->xr
     * holds one column), one launch (cuda) / one pass over V, W, R (cpu) for all columns */
    sap_status (*reduced_solve)(sap_band_fact *F, sap_int k, const void *g, void *xr);
    /* f = r - [0; B_i x_{i+1}^(t)] - [C_i x_{i-1}^(b); 0] for k columns (stride n; the
     * interface unknowns of column c at xr + c * xlen as reduced_solve wrote them) */
    sap_status (*purify)(sap_band_fact *F, sap_int k, const void *r, void *f, const void *xr);
    /* after prepare: fills lu and, coupled, B, C and the UL windows from a band source
     * (the same values sap__band_fill + the host conversion give) and writes
     * ||A_b||_inf of every partition into the host array norms[P] */
    sap_status (*fill_from_band)(sap_band_fact *F, const sap_band_source *src, double *norms);
    /* after F->thr / F->bst changed on the host (NULL: the kernels read them there) */
    sap_status (*update_boost)(sap_band_fact *F);
    /* the host bytes prepare holds at its peak for P partitions (the private state it
     * keeps in F->dev and any staging buffer), for sap__band_fact_bytes; NULL: none */
    double (*prepare_host_bytes)(int64_t P);
    /* the partitions whose block_solve sweeps run at once for n rows in partitions of at
     * most nmax rows, half-bandwidth K, precision prec (the cost model's rounds of
     * sweeps: cpu the threads, cuda the resident thread blocks); NULL: ops->units */
    sap_int (*solve_slots)(sap_context *ctx, sap_int n, sap_int nmax, sap_int K, sap_precision prec);
    /* factor's blocked LU (sap_band_fact.blocked): 0 = none; else the half-bandwidth from
     * which the automatic choice takes it (measured: bench/banded --parts factor) */
    sap_int blocked_kmin;
    /* and at any half-bandwidth where no partition has more rows than this (0: never): the
     * blocked LU of such partitions is one kernel in shared memory */
    sap_int blocked_small_nmax;
    /* the bytes of backend memory the blocked LU takes at its peak beyond the fact's arrays
     * for n rows in P partitions (at most nmax rows each) of half-bandwidth at most K */
    double (*blocked_bytes)(const sap_context *ctx, int64_t n, sap_int P, int64_t nmax, sap_int K, size_t es);
    /* the bytes of backend (*dev) and host (*host) memory the coupled spikes take at their
     * peak beyond the fact's arrays, for P partitions whose couplings hold ncpl elements,
     * each of at most mmax rows; NULL: none */
    void (*spikes_bytes)(const sap_context *ctx, sap_int P, double ncpl, sap_int mmax, size_t es, double *dev,
                         double *host);
    /* the predicted seconds of the coupled method's spikes and reduced systems (their
     * product I - W V and LU) for P - 1 interfaces of coupling size m, from the kernels'
     * measured rates (the cost model of the automatic choice); NULL: the caller's generic
     * flop count at the band rate */
    double (*coupling_seconds)(sap_context *ctx, sap_int P, sap_int m, sap_precision prec);
} sap_band_kernels;


#endif /* SAP_DEVICE_BAND_KERNELS_H */
