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
 *  - the LU of the partitions, and SaP-C's UL windows (as the LU of their reversal), are
 *    blocked from a measured half-bandwidth on (kt->blocked_kmin: BS-column steps, the
 *    updates through the BLAS / cuBLAS GEMMs) and, cuda, wherever every band fits the
 *    shared-memory LU; SaP-C's spikes (batched TRSM / trsm) and reduced matrices I - W V
 *    (GEMM) are level-3 BLAS from a coupling size of 32 on, the reduced systems' LU LAPACK's
 *    / cuSOLVER's getrf where predicted faster (cuda: few wide interfaces; cpu: with the
 *    BLAS spikes); the sweeps keep their per-row kernels;
 *  - cpu kernels: OpenMP across partitions (a blocked LU with fewer partitions than threads
 *    takes the BLAS's threads); no parallelism inside one partition otherwise. */
#ifndef SAP_BAND_IMPL_H
#define SAP_BAND_IMPL_H

#include "device/device.h" /* the band kernel table and its data: device/band_kernels.h */

/* Factorization parameters. */
typedef struct sap_band_factor_opts {
    double boost_threshold; /* < 0: eps(prec) * ||A_i||_inf per partition */
    double boost_value;     /* <= 0: sqrt(eps(prec)) * ||A_i||_inf */
    int coupled;
    int kernel; /* the partitions' LU: SAP_BAND_KERNEL_* (0 = automatic) */
} sap_band_factor_opts;

/* Which LU kernels factor the partitions (sap_band_fact.blocked). */
enum { SAP_BAND_KERNEL_AUTO = 0, SAP_BAND_KERNEL_ROWS = 1, SAP_BAND_KERNEL_BLOCKED = 2 };
/* 1 when the blocked LU factors partitions whose widest band is K (the largest
 * min(K_i, n_i - 1)) and the longest of which has nmax rows on the backend of kt: kernel
 * ROWS / BLOCKED say so, AUTO (or the environment's SAP_BAND_FACTOR=rows|blocked|auto, which
 * overrides AUTO) takes the blocked LU from the table's measured crossover kt->blocked_kmin
 * on, and at any K where every partition fits its shared-memory LU (nmax <=
 * kt->blocked_small_nmax). */
int sap__band_blocked_pick(const sap_band_kernels *kt, sap_int K, sap_int nmax, int kernel);
/* The most rows a partition of L has. */
sap_int sap__band_longest(const sap_band_layout *L);
/* The widest band a partition of L holds: the largest min(K_i, n_i - 1). */
sap_int sap__band_widest(const sap_band_layout *L);

/* ---- layout and storage (band_storage.c) ---------------------------------------------- */

/* The layout of A (square CSR) split into P partitions (sap_partition_offsets sizes).
 * K_cap > 0 limits every half-bandwidth (entries beyond it are dropped); 0 = none.
 * Each K_i is the largest |r - c| of the entries of diagonal block i (<= K_cap).
 * K_known >= 0: A's half-bandwidth max(kl, ku) is known (a band source's), no pass over A
 * to find it; < 0: found here.  dropped != NULL: the same pass also counts the entries a
 * decoupled fill drops (outside the diagonal blocks or beyond K_cap: what sap__band_fill
 * with coupled = 0 counts) and checks the values (SAP_ERR_NONFINITE), so that a fill from
 * a band source needs no second pass over A.  sorted: A's rows are sorted and its values
 * known finite (sap_band_source.canonical): K_i and the dropped entries come from binary
 * searches of each row's ends (no pass over the entries, no value check). */
sap_status sap__band_layout_create(sap_context *ctx, const sap_csr *A, sap_int P, sap_int K_cap, sap_int K_known,
                                   int sorted, sap_int *dropped, sap_band_layout *L);
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

/* ---- the SaP driver (band_sap.c) --------------------------------------------------------- */

/* Builds and factors (host_only: with the cpu kernels on host memory whatever the
 * backend): partitions A, copies the band and coupling blocks, factors
 * (LU, plus spikes and reduced systems when o->coupled).  Returns SAP_OK or
 * SAP_WARN_BOOSTED_PIVOTS (F->boosted > 0), or an error (F untouched then), or
 * SAP_WARN_INTERRUPTED when ctx's stop flag was raised during the factorization (the cpu
 * kernels poll it between partitions and every 32 pivot steps; *F NULL, nothing kept).
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
/* An upper bound of what sap__band_fact_create(_src) allocates for n rows, P partitions and
 * half-bandwidth at most K in precision prec (coupled: SaP-C): *dev the arrays on ctx's
 * backend, each at the size the backend's allocator takes for it (the cuda pool's size
 * classes), all live at once after the factorization; *host the host arrays at their
 * peak while the band is built (src: filled on the backend from a band source, no host
 * band).  On the cpu backend both are host memory.  tests/test_band.c checks the bounds
 * against measured peaks (cpu) and device_block_bytes_peak (cuda). */
void sap__band_fact_bytes(const sap_context *ctx, int64_t n, sap_int P, sap_int K, sap_precision prec, int coupled,
                          int src, double *dev, double *host);
/* z = M^{-1} r on backend arrays of F's precision (SaP-D: block-diagonal solve; SaP-C:
 * block solve, reduced systems, purified right-hand sides, second block solve). */
sap_status sap__band_fact_apply(sap_band_fact *F, const void *r, void *z);
/* z = M^{-1} r for k columns (column c at c * n): each step once for all columns: the two
 * block solves, SaP-C's reduced systems and its purification (the first block solve's k
 * columns go to F->gk, their interface unknowns to F->xrk, both grown on demand).  k = 1
 * is sap__band_fact_apply; k < 1: SAP_ERR_INVALID. */
sap_status sap__band_fact_apply_many(sap_band_fact *F, sap_int k, const void *r, void *z);

/* The automatic choices (band_sap.c): method, P and factor precision for an n x n matrix
 * of half-bandwidth K and diagonal dominance d on ctx's backend; reason is filled. */
void sap__band_auto(const sap_context *ctx, sap_int n, sap_int K, double d, sap_band_method *method, sap_int *P,
                    sap_precision *prec, char *reason, size_t reason_len);

/* Half-bandwidth K = max |i - j| and degree of diagonal dominance
 * d = min_i |a_ii| / sum_{j != i} |a_ij| (rows without off-diagonal entries skipped; +inf
 * if there are none) of A, in one OpenMP pass (src/band/band_storage.c). */
void sap__band_shape(const sap_csr *A, int nt, sap_int *K, double *d);

#endif /* SAP_BAND_IMPL_H */
