/* ilu_factor.h -- the host incomplete factorizations behind the ILU-family
 * preconditioners (ilu_factor.c) and the factor pair they share (ilu_apply.c).  Internal.
 *
 * Every factorization works on a square host CSR with sorted rows and returns the factors
 * as host CSRs; a missing diagonal entry is added to the pattern (value 0, then shifted).
 * Pivots: a pivot p of row i with |p| < pivot_tol * ||a_i||_inf (or p = 0, or, for IC(0),
 * p <= that threshold before the square root) is replaced by sign(p) * |a_ii| (the row's
 * original diagonal; ||a_i||_inf when |a_ii| is below the threshold too, 1 for a zero
 * row: a shift of the size of the row keeps the solves from amplifying by 1/tol) and
 * counted in *shifted; the factors then hold no NaN.  A NaN/Inf input value is SAP_ERR_NONFINITE; a factor that overflows is
 * SAP_ERR_SINGULAR naming the row. */
#ifndef SAP_PRECOND_ILU_FACTOR_H
#define SAP_PRECOND_ILU_FACTOR_H

#include "precond/precond_impl.h"

/* The ILU(k) pattern of A (symbolic fill levels: level(a_ij) = 0, a fill entry from
 * l_ik u_kj gets level(i,k) + level(k,j) + 1 and is kept when <= k): a CSR holding A's
 * values and 0 at the fill entries and every diagonal entry.  k = 0: A's pattern plus the
 * diagonal. */
sap_status sap__iluk_pattern(sap_context *ctx, const sap_csr *A, sap_int k, sap_csr **S);
/* In-place ILU on the pattern of LU (IKJ, no fill): on return the strictly lower part
 * holds L (unit diagonal implied) and the rest U.  Rows of one level of the lower pattern
 * are factored in parallel (OpenMP); the result is the same for every thread count. */
sap_status sap__ilu_numeric(sap_context *ctx, sap_csr *LU, double pivot_tol, sap_int *shifted);
/* ILUT(p, tau) (Saad, SPARSKIT's rule): row by row with the threshold t_i = tau *
 * ||a_i||_1 / nnz(a_i) (the mean magnitude of the row): w_k = w_k / u_kk dropped when
 * |w_k| < t_i, then the p largest entries of the L part and of the U part kept (entries
 * below t_i dropped), the diagonal always kept.  Sequential. */
sap_status sap__ilut(sap_context *ctx, const sap_csr *A, sap_int p, double tau, double pivot_tol, sap_csr **LU,
                     sap_int *shifted);
/* IC(0) of a symmetric A (its lower triangle is read): L with L L^T ~ A on the lower
 * pattern of A, diagonal included.  Level-parallel like sap__ilu_numeric. */
sap_status sap__ic0(sap_context *ctx, const sap_csr *A, double pivot_tol, sap_csr **L, sap_int *shifted);
/* ISAI (Anzt, Huckle, Braeckle, Dongarra): M ~ T^{-1} for a triangular T (lower: upper =
 * 0; unit: the diagonal is 1, stored or not) with M's pattern that of T plus the diagonal,
 * defined by (M T)_ij = delta_ij on that pattern: each row of M solves the small
 * triangular system T(J, J)^T m = e_i, J the row's columns.  Host, sequential.  A
 * row longer than SAP_ISAI_MAX_ROW is SAP_ERR_TOO_LARGE; a zero diagonal SAP_ERR_SINGULAR. */
#define SAP_ISAI_MAX_ROW 512
sap_status sap__isai(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_csr **M);
/* The pivot rule on a combined LU computed elsewhere (ParILU): diagonal entries of LU
 * checked against the rows of A (same size); non-finite entries are SAP_ERR_SINGULAR. */
sap_status sap__ilu_fix_pivots(sap_context *ctx, sap_csr *LU, const sap_csr *A, double pivot_tol, sap_int *shifted);
/* ParILU's start: *S = A's values on its pattern plus the diagonal (sap__iluk_pattern, k = 0)
 * and *LU the initial guess on it, L = A_lower D^{-1} (entries over a zero diagonal kept as
 * a_ij), U = A_upper. */
sap_status sap__parilu_start(sap_context *ctx, const sap_csr *A, sap_csr **S, sap_csr **LU);
/* Splits a combined LU into L (strictly lower) and U (upper, diagonal included). */
sap_status sap__lu_split(sap_context *ctx, const sap_csr *LU, sap_csr **L, sap_csr **U);

/* A pair of analysed triangular factors in backend memory: z = U^{-1} L^{-1} r. */
typedef struct sap_ilu_pair {
    sap_trsv *L, *U;
    sap_vec tmp;
    sap_int nnz_l, nnz_u;
} sap_ilu_pair;
/* Analyses L (lower, unit_l: unit diagonal) and U (upper, non-unit) on ctx's backend. */
sap_status sap__ilu_pair_setup(sap_context *ctx, sap_ilu_pair *F, const sap_csr *L, int unit_l, const sap_csr *U,
                               sap_precision prec);
sap_status sap__ilu_pair_apply(sap_context *ctx, sap_ilu_pair *F, const sap_vec *r, sap_vec *z);
void sap__ilu_pair_free(sap_context *ctx, sap_ilu_pair *F);
/* "L: nnz, levels, method; U: ..., analysis s" into buf. */
int sap__ilu_pair_report(const sap_ilu_pair *F, char *buf, size_t size);

#endif /* SAP_PRECOND_ILU_FACTOR_H */

/* ---- domain decomposition (ilu_dd.c) ----------------------------------------------------- */
/* part[i] in 0..nblocks-1 for every row (nblocks clamped to n): METIS k-way on the graph
 * of A + A^T when built with METIS (seeded: deterministic), else contiguous pieces of a
 * breadth-first order; *how names which (static text). */
sap_status sap__dd_partition(sap_context *ctx, const sap_csr *A, sap_int nblocks, sap_int *part, const char **how);
/* A without the entries coupling different parts (its block-diagonal part, A's order):
 * an ILU of it is the ILU of every block at once, and one triangular solve covers all. */
sap_status sap__dd_block_diag(sap_context *ctx, const sap_csr *A, const sap_int *part, sap_csr **B);
/* Both: the block-diagonal part of A over sap__dd_partition's nblocks parts (*how as there;
 * *t_partition, if given, the seconds of the partitioning). */
sap_status sap__dd_blocks(sap_context *ctx, const sap_csr *A, sap_int nblocks, sap_csr **B, const char **how,
                          double *t_partition);
/* RAS: each part extended by 'overlap' levels of the graph of A + A^T; the subdomains'
 * matrices concatenated into one block-diagonal system Ab (next rows), R (next x n) the
 * gather of the subdomains' rows, Pown (n x next) the restricted prolongation (row i
 * takes the value of its copy in its own part).  M^{-1} = Pown Ab~^{-1} R. */
typedef struct sap_dd_ras {
    sap_int n, next;
    sap_csr *Ab, *R, *Pown;
} sap_dd_ras;
sap_status sap__dd_ras_build(sap_context *ctx, const sap_csr *A, const sap_int *part, sap_int nblocks,
                             sap_int overlap, sap_dd_ras *D);
void sap__dd_ras_free(sap_dd_ras *D);

/* ---- the common part of the ILU-family preconditioner types (ilu_apply.c) ---------------- */
typedef struct sap_ilu_pc {
    sap_ilu_pair F;
    sap_int shifted;       /* pivots shifted by the last factorization */
    double t_factor;       /* seconds of the last host factorization */
    sap_int nnz_a;         /* entries of the matrix factored */
    char extra[160];       /* type-specific report text (e.g. "fill levels k = 2") */
    /* RAS: the factors are of the extended system; z = Pown (LU)^{-1} R r */
    sap_spmat *R, *Pown;
    sap_vec r2, z2;
} sap_ilu_pc;
sap_status sap__ilu_pc_create(sap_precond *P);
void sap__ilu_pc_destroy(sap_precond *P);
sap_status sap__ilu_pc_apply(sap_precond *P, const sap_vec *r, sap_vec *z);
void sap__ilu_pc_report(const sap_precond *P, char *buf, size_t size);
/* Ends a numeric setup: analyses L and U on the backend in P->prec and records the
 * profile; returns SAP_WARN_BOOSTED_PIVOTS (with a message) when pivots were shifted. */
sap_status sap__ilu_pc_finish(sap_precond *P, const sap_csr *A, const sap_csr *L, int unit_l, const sap_csr *U,
                              sap_int shifted, double t_factor);
/* sap__ilu_pc_finish for a combined LU (split into unit L and U here); t0: the setup's
 * start (sap__wtime). */
sap_status sap__ilu_pc_finish_lu(sap_precond *P, const sap_csr *A, const sap_csr *LU, sap_int shifted, double t0);
/* ILU(0) of S (A's pattern, or that plus the diagonal) on the backend's device
 * factorization (trsv_kernels.h, ilu0), installed as P's factor pair like
 * sap__ilu_pc_finish (t_factor: upload + device factorization).  *done = 0 (nothing
 * changed) when the backend has none (cpu) or declines S. */
sap_status sap__ilu_pc_device_ilu0(sap_precond *P, const sap_csr *A, const sap_csr *S, double pivot_tol, int *done);
/* The sap_precond_type of an ILU-family type: its option table and numeric setup, the
 * rest common. */
#define SAP_ILU_TYPE(var, name_, help_, defs, optstruct, numeric)                                                   \
    const sap_precond_type var = {.name = name_,                                                                     \
                                  .help = help_,                                                                     \
                                  .opts = defs,                                                                      \
                                  .nopts = (int)(sizeof(defs) / sizeof(defs[0])),                                    \
                                  .opts_size = sizeof(optstruct),                                                    \
                                  .create = sap__ilu_pc_create,                                                      \
                                  .setup_numeric = numeric,                                                          \
                                  .apply = sap__ilu_pc_apply,                                                        \
                                  .report = sap__ilu_pc_report,                                                      \
                                  .destroy = sap__ilu_pc_destroy}
/* RAS: R and Pown of D on the backend (with the work vectors) for the apply. */
sap_status sap__ilu_pc_set_ras(sap_precond *P, const sap_dd_ras *D);
/* The option every ILU-family type has (a field 'double pivot_tol' of its option struct). */
#define SAP_ILU_PIVOT_OPT(type)                                                                                       \
    {.name = "pivot_tol", .help = "pivots below pivot_tol * ||row||_inf are shifted to that size (and counted)",      \
     .def = "1e-8", .kind = SAP_OPT_REAL, SAP_OPT_AT(type, pivot_tol), .lo = 0, .hi = 1, .meta = "T"}
/* ILUT's two options (fields 'sap_int p' and 'double tau'), with their defaults as text */
#define SAP_ILUT_OPTS(type, p_def, tau_def)                                                                           \
    {.name = "p", .alias = "fill", .help = "entries kept per row in each of L and U", .def = p_def,                 \
     .kind = SAP_OPT_INT, SAP_OPT_AT(type, p), .lo = 0, .hi = 1e9, .meta = "P"},                                     \
    {.name = "tau", .alias = "drop", .help = "drop tolerance relative to the mean |a_ij| of the row",               \
     .def = tau_def, .kind = SAP_OPT_REAL, SAP_OPT_AT(type, tau), .lo = 0, .hi = 1e300, .meta = "TAU"}
#define SAP_ILU_BLOCKS_OPT(type, def_)                                                                                \
    {.name = "blocks", .alias = "subdomains", .help = "number of blocks (METIS partitions)", .def = def_,            \
     .kind = SAP_OPT_INT, SAP_OPT_AT(type, blocks), .lo = 1, .hi = 1e12, .meta = "B"}
