/* band_impl.h -- the banded split-and-parallelize (truncated SPIKE) solver: storage,
 * partitioning, the SaP driver shared by every backend and the band kernel table.
 * Internal.
 *
 * Storage ("tall and thin", diagonal-major): partition i holds rows/columns
 * off[i] .. off[i+1]-1 (n_i of them) with its own half-bandwidth K_i.  Its band is a
 * column-major n_i x (2 K_i + 1) array: column t = c - r + K_i holds the diagonal
 * c - r, so the entries of consecutive rows on one diagonal are contiguous (coalesced
 * when threads run across rows):  A_i(r, c) = band[boff[i] + (c - r + K_i) * n_i + r]
 * (local r, c; entries of the array outside the matrix are zero).
 *
 * Coupling blocks between partitions i and i + 1 (i < P - 1), both m_i x m_i,
 * m_i = min(K, n_i, n_{i+1}), column-major at coff[i]:
 *   B_i(a, b)     = A(off[i+1] - m_i + a, off[i+1] + b)       (top-right of block row i)
 *   C_{i+1}(a, b) = A(off[i+1] + a,       off[i+1] - m_i + b) (bottom-left of block row i+1)
 *
 * Factors (in float or double, sap_band_fact.prec), overwriting a copy of the band:
 * LU without pivoting, L unit lower (multipliers on the sub-diagonals), U on the
 * diagonal and above.  SaP-C additionally keeps per interface i the truncated spikes
 * V_i^(b) (bottom m_i rows of A_i^{-1} [0; B_i], from the bottom-right m_i x m_i blocks
 * of the LU factors) and W_{i+1}^(t) (top m_i rows of A_{i+1}^{-1} [C_{i+1}; 0], from
 * the top-left blocks of a UL factorization of the leading window of A_{i+1}), and the
 * LU (partial pivoting) of the reduced Schur complement R_i = I - W_{i+1}^(t) V_i^(b) of
 * the 2m x 2m reduced system [I V; W I].
 *
 * Not done yet (see bench/results/banded.md for where the kernels sit):
 *  - the band and coupling blocks are built from the CSR on the host and uploaded (T_BC);
 *    extraction on the device is not done;
 *  - cuda kernels: one thread block per partition with one pivot per step (no blocked /
 *    tensor-core updates for large K); the automatic P keeps every SM busy instead
 *    (thousands of partitions on large systems);
 *  - cpu kernels: OpenMP across partitions only (no parallelism inside one partition). */
#ifndef SAP_BAND_IMPL_H
#define SAP_BAND_IMPL_H

#include "device/device.h"

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
    const struct sap_band_kernels *kt;
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
    void *xr;    /* 2 * sum m_i: interface unknowns x_i^(b), x_{i+1}^(t) */
    int64_t *xoff; /* P: host offsets into xr */
    void *dev;   /* backend private (cuda: device copies of the layout) */
    sap_int boosted;
    double t_lu, t_spk, t_lurdcd;
} sap_band_fact;

/* Factorization parameters. */
typedef struct sap_band_factor_opts {
    double boost_threshold; /* < 0: eps(prec) * ||A_i||_inf per partition */
    double boost_value;     /* <= 0: sqrt(eps(prec)) * ||A_i||_inf */
    int coupled;
} sap_band_factor_opts;

/* ---- layout and storage (band_storage.c) ---------------------------------------------- */

/* The layout of A (square CSR) split into P partitions (sap_partition_offsets sizes).
 * K_cap > 0 limits every half-bandwidth (entries beyond it are dropped); 0 = none.
 * Each K_i is the largest |r - c| of the entries of diagonal block i (<= K_cap). */
sap_status sap__band_layout_create(sap_context *ctx, const sap_csr *A, sap_int P, sap_int K_cap,
                                   sap_band_layout *L);
void sap__band_layout_free(sap_context *ctx, sap_band_layout *L);
/* Fills band (boff[P] doubles) and, when B and C are non-NULL, the coupling blocks
 * (coff[P-1] doubles each) from A; *dropped receives the entries represented nowhere
 * (beyond K_cap, or coupling partitions that are not neighbours).  A NaN/Inf entry is
 * SAP_ERR_NONFINITE.  band == NULL: counts only (coupled says whether B and C would be
 * filled). */
sap_status sap__band_fill(sap_context *ctx, const sap_csr *A, const sap_band_layout *L, double *band, double *B,
                          double *C, int coupled, sap_int *dropped);
/* Boost threshold and value of every partition from its ||A_b||_inf (norms[P]). */
void sap__band_boost_params(sap_band_fact *F, const double *norms, const sap_band_factor_opts *o);

/* A band already in the backend's memory in the BAND SpMV layout (sap_backend.h), in
 * double: A(i, j) at val[(j - i + kl) * n + i] for 0 <= j - i + kl < w.  The factors can
 * be filled from it on the backend (no host band, no upload). */
typedef struct sap_band_source {
    const double *val;
    sap_int kl, w;
} sap_band_source;

/* ---- the band kernel table ------------------------------------------------------------- */

/* The heavy operations of SaP, written once per backend.  Arrays live in the backend's
 * memory in the fact's precision.  cpu: src/kernels/cpu/band_cpu.c (OpenMP across
 * partitions); cuda: src/kernels/cuda/band_cuda.cu (a thread block per partition or
 * interface, threads across the band window). */
typedef struct sap_band_kernels {
    const char *name;
    /* backend memory */
    sap_status (*mem_alloc)(sap_context *ctx, size_t bytes, void **p);
    void (*mem_free)(sap_context *ctx, void *p);
    sap_status (*mem_upload)(sap_context *ctx, void *dst, const void *src, size_t bytes);
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
    /* z = D^{-1} r (block-diagonal solve of every partition); z may alias r */
    sap_status (*block_solve)(sap_band_fact *F, const void *r, void *z);
    /* interface unknowns from g = D^{-1} r: x_i^(b), x_{i+1}^(t) into F->xr */
    sap_status (*reduced_solve)(sap_band_fact *F, const void *g);
    /* f = r - [0; B_i x_{i+1}^(t)] - [C_i x_{i-1}^(b); 0] (f != r) */
    sap_status (*purify)(sap_band_fact *F, const void *r, void *f);
    /* after prepare: fills lu and, coupled, B, C and the UL windows from a band source
     * (the same values sap__band_fill + the host conversion give) and writes
     * ||A_b||_inf of every partition into the host array norms[P] */
    sap_status (*fill_from_band)(sap_band_fact *F, const sap_band_source *src, double *norms);
    /* after F->thr / F->bst changed on the host (NULL: the kernels read them there) */
    sap_status (*update_boost)(sap_band_fact *F);
} sap_band_kernels;

const sap_band_kernels *sap__band_kernels_cpu(void);
#ifdef SAP_HAVE_CUDA
const sap_band_kernels *sap__band_kernels_cuda(void);
/* Streaming multiprocessors of the context's device. */
int sap__band_cuda_sm_count(const sap_context *ctx);
#endif

/* ---- the SaP driver (band_sap.c) --------------------------------------------------------- */

/* Builds and factors (host_only: with the cpu kernels on host memory whatever the
 * backend): partitions A, copies the band and coupling blocks, factors
 * (LU, plus spikes and reduced systems when o->coupled).  Returns SAP_OK or
 * SAP_WARN_BOOSTED_PIVOTS (F->boosted > 0), or an error (F untouched then).
 * *t_bc receives the seconds spent building the band and coupling blocks. */
sap_status sap__band_fact_create(sap_context *ctx, const sap_csr *A, sap_int P, sap_int K_cap, sap_precision prec,
                                 const sap_band_factor_opts *o, int host_only, sap_band_fact **F, sap_int *dropped,
                                 double *t_bc);
/* The same from a band source in the backend's memory (src != NULL; A still gives the
 * layout: partitions, K_i, dropped entries): T_BC then covers no host band and no upload. */
sap_status sap__band_fact_create_src(sap_context *ctx, const sap_csr *A, const sap_band_source *src, sap_int P,
                                     sap_int K_cap, sap_precision prec, const sap_band_factor_opts *o, int host_only,
                                     sap_band_fact **F, sap_int *dropped, double *t_bc);
void sap__band_fact_destroy(sap_band_fact *F);
/* z = M^{-1} r on backend arrays of F's precision (SaP-D: block-diagonal solve; SaP-C:
 * block solve, reduced systems, purified right-hand sides, second block solve). */
sap_status sap__band_fact_apply(sap_band_fact *F, const void *r, void *z);

/* ---- preconditioner hooks (src/solve/pc_sap.c) ----------------------------------------- */

/* Options of a "sap-d" / "sap-c" / "sap" preconditioner (before its numeric setup). */
sap_status sap__pc_sap_configure(sap_precond *P, const sap_band_options *opt);
/* The matrix' values live on the backend in the BAND layout already (the caller keeps
 * them alive): the next numeric setups fill the factors from there.  NULL: from the CSR. */
sap_status sap__pc_sap_set_source(sap_precond *P, const sap_band_source *src);
/* What the last numeric setup did. */
typedef struct sap_pc_sap_info {
    sap_band_method method; /* SAPD or SAPC */
    sap_int P, K, boosted, dropped;
    double t_lu, t_bc, t_spk, t_lurdcd;
    char reason[160];
} sap_pc_sap_info;
sap_status sap__pc_sap_info(const sap_precond *P, sap_pc_sap_info *info);
/* The automatic choices (band_sap.c): method, P and factor precision for an n x n matrix
 * of half-bandwidth K and diagonal dominance d on ctx's backend; reason is filled. */
void sap__band_auto(const sap_context *ctx, sap_int n, sap_int K, double d, sap_band_method *method, sap_int *P,
                    sap_precision *prec, char *reason, size_t reason_len);

/* Half-bandwidth K = max |i - j| and degree of diagonal dominance
 * d = min_i |a_ii| / sum_{j != i} |a_ij| (rows without off-diagonal entries skipped; +inf
 * if there are none) of A, in one OpenMP pass (src/band/band_storage.c). */
void sap__band_shape(const sap_csr *A, int nt, sap_int *K, double *d);

#endif /* SAP_BAND_IMPL_H */
