/* solver_internal.h -- what the sources of the sparse SaP pipeline (src/solver) share: the
 * sap_solver object, an attempt (one method of the chain, built), the functions one source
 * offers the others (sap__solver_*), the one iterative-refinement loop (sap__solver_refine,
 * also used by the band solver) and the LAPACK band LU of the band-pivot method.
 *
 * Who owns what:
 *   solver.c          create / destroy / setup / get_stats: the composition
 *   solver_plan.c     memory limit, estimates, the cost and work rules, K / P / precision,
 *                     the automatic drop-off and the method chain
 *   solver_attempt.c  building, numeric refresh and destroying an attempt; the chain
 *   solver_solve.c    one and many right-hand sides, the attempt as an inner solve
 *   solver_refine.c   the iterative refinement on the true residual
 *   solver_refactor.c new values for the same pattern; the entry position maps
 *   solver_report.c   stats.tried[] entries, reason strings, relaying messages
 *   solver_band_pivot.c  LAPACK dgbtrf / dgbtrs
 * Internal. */
#ifndef SAP_SOLVER_INTERNAL_H
#define SAP_SOLVER_INTERNAL_H

#include "precond/pc_sap.h"

/* ---- banded LU with partial pivoting on the host (solver_band_pivot.c) ------------------ */

/* LAPACK dgbtrf of the band of A with lower/upper half-bandwidths kl, ku (entries of A
 * outside the band are ignored: the caller refines against the full matrix).  Built
 * only when LAPACK was found (SAP_HAVE_LAPACK); otherwise create returns
 * SAP_ERR_NOT_COMPILED.  LAPACK indexes with 32-bit integers: n or the band storage
 * beyond 2^31 - 1 give SAP_ERR_TOO_LARGE. */
typedef struct sap__bp {
    sap_context *ctx;
    sap_int n, kl, ku, ldab;
    double *ab; /* ldab x n, LAPACK band storage with kl extra rows for the fill */
    int *ipiv;  /* n */
    double t_asmbl, t_lu;
} sap__bp;

/* 1 when the library was linked against LAPACK. */
int sap__bp_available(void);
/* Bytes the factorization of an n x n band with kl = ku = K needs. */
int64_t sap__bp_bytes(sap_int n, sap_int K);
/* Builds and factors; SAP_ERR_SINGULAR (exact zero pivot, named) when dgbtrf reports
 * info > 0.  On error *out is NULL. */
sap_status sap__bp_create(sap_context *ctx, const sap_csr *A, sap_int kl, sap_int ku, sap__bp **out);
/* New values of A (same pattern as at create): rebuilds the band and refactors. */
sap_status sap__bp_refactor(sap__bp *F, const sap_csr *A);
/* Solves in place: the nrhs columns of X (leading dimension ldx >= n) by one dgbtrs call. */
sap_status sap__bp_solve(sap__bp *F, sap_int nrhs, double *X, sap_int ldx);
void sap__bp_destroy(sap__bp *F);

/* ---- iterative refinement on the true residual (solver_refine.c) ------------------------ */

/* The inner solve of a refinement: X(:, 0:m) ~ A^{-1} R(:, 0:m) for m columns (leading
 * dimensions ldr, ldx), starting from X0 (leading dimension ldx0; NULL: from zero).  R and
 * X never alias.  A return < 0 other than SAP_ERR_BREAKDOWN ends the refinement; anything
 * else (SAP_OK, a warning, a breakdown) is the status of the solve, kept per column. */
typedef sap_status (*sap__refine_solve_fn)(void *state, sap_int m, const double *R, sap_int ldr, const double *X0,
                                           sap_int ldx0, double *X, sap_int ldx);

/* Which corrections are taken. */
typedef enum sap__refine_take {
    SAP__REFINE_TAKE_ALL,  /* every correction */
    SAP__REFINE_TAKE_LOWER /* only one that lowers the residual; otherwise the column stops */
} sap__refine_take;

/* What a slow pass (the residual not halved) does. */
typedef enum sap__refine_slow {
    SAP__REFINE_SLOW_GOES_ON,      /* nothing: refine until tol, the limit or a stall */
    SAP__REFINE_SLOW_STOPS_COLUMN, /* the column stops after taking it */
    SAP__REFINE_SLOW_STOPS_ALL     /* a pass in which no column halved its residual is the last */
} sap__refine_slow;

typedef struct sap__refine {
    const sap_csr *A; /* the true system */
    double tol;       /* ||b - A x|| / ||b|| to reach */
    int max_pass;     /* corrections at most */
    sap__refine_take take;
    sap__refine_slow slow;
    sap__refine_solve_fn solve;
    void *state;
    double *R, *D; /* n x k each, leading dimension n: residuals, corrections */
    double *t;     /* n: a trial residual */
} sap__refine;

/* x = A^{-1} b for the k columns of B (the initial guesses in X, which receives the
 * solutions): one inner solve, then corrections solved from the true residual b - A x
 * while a column is above tol, finite, not stopped and under max_pass.  A column with
 * b = 0 gets x = 0 (no solve when every column is zero).  Per column: rel[j] its final
 * ||b - A x|| / ||b||, status[j] the inner status of the solve that gave its x, passes[j]
 * the corrections computed for it (taken or not).  Returns < 0 on an error (the inner
 * solve's, a product's, memory), SAP_OK otherwise: the caller judges rel. */
sap_status sap__solver_refine(const sap__refine *rf, sap_int k, const double *B, sap_int ldb, double *X, sap_int ldx,
                              double *rel, sap_status *status, int *passes);
/* Euclidean norm, summed in order (the refinement's norm). */
double sap__solver_nrm2(const double *v, sap_int n);

/* ---- the sparse solver ------------------------------------------------------------------- */

#define SV_BOOST_FRACTION 0.01 /* more boosted pivots than this fraction of N: reject */

/* One method of the chain, built from R->A. */
typedef struct sap__attempt {
    sap_solver_method method;
    sap_int P, K, Kmax; /* partitions, drop-off half-bandwidth, largest K_i used */
    sap_precision prec;
    int third, cg, final;
    double kept;               /* fraction of ||A||_F^2 in the preconditioner's band */
    sap_int *t;                /* third stage: new -> old within CM order (NULL: identity) */
    sap_csr *A_att;            /* all entries in the attempt's order (NULL: R->A) */
    sap_csr *A_pc;             /* the kept entries for the preconditioner (NULL: A_att/R->A) */
    sap_int *map_att, *map_pc; /* R->A entry -> A_att / A_pc entry (-1: not there) */
    sap_matrix *M;
    sap_precond *pc;
    sap_krylov *kry;
    sap__bp *bp;
    sap_int boosted, dropped;
    int64_t mem;
    int itry;      /* its entry in stats.tried */
    char note[96]; /* what its setup did */
    double t_drop, t_third, t_asmbl, t_transfer, t_lu, t_spk, t_lurdcd;
} sap__attempt;

struct sap_solver {
    sap_context *ctx;  /* the user's context: the solver and the reorderings */
    sap_context *hctx; /* internal cpu context (host_small), or NULL */
    sap_context *x;    /* where the backend objects live: hctx or ctx */
    sap_csr *A;        /* the original matrix (copy) */
    sap_solver_options opt;
    int setup_done;
    sap_reorder_result *R; /* DB + CM, every entry */
    sap_int *map0;         /* original entry -> R->A entry */
    sap_int K_cm, K_auto;
    double d_cm, kept_auto, t_drop_auto;
    int db, scale, cm;
    int64_t mem_limit;
    char mem_why[48], drop_why[96], why_first[160];
    sap_solver_method chain[5];
    int nchain, ichain;
    sap__attempt *att;
    double *w; /* 6 n work */
    sap_solver_stats stats;
};

static inline int sap__solver_on_cuda(const sap_context *c) { return c->backend == SAP_BACKEND_CUDA; }

/* solver_plan.c */
/* S->mem_limit and S->mem_why: given, 90% of the free memory of the backend, or unknown. */
void sap__solver_set_memory_limit(sap_solver *S);
/* Bytes attempt m with P partitions, half-bandwidth K and factors in prec needs. */
int64_t sap__solver_estimate(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec);
/* The automatic drop-off of setup (S->K_auto, kept_auto, drop_why, t_drop_auto). */
sap_status sap__solver_plan_drop(sap_solver *S);
/* The first method (S->why_first says why) and the fallback chain after it. */
void sap__solver_plan_chain(sap_solver *S);
/* K, P and precision of attempt m (narrowed to the memory and work limits); note
 * receives what was narrowed.  SAP_ERR_TOO_LARGE when a band cut for work is not worth
 * it (final = 0 only). */
sap_status sap__solver_choose(sap_solver *S, sap_solver_method m, int final, sap_int *K, sap_int *P,
                              sap_precision *prec, double *kept, char *note, size_t nl);

/* solver_attempt.c */
void sap__solver_att_destroy(sap_solver *S, sap__attempt *a);
/* The numeric part of an attempt from the current values of its matrices. */
sap_status sap__solver_att_numeric(sap_solver *S, sap__attempt *a);
/* Builds the methods of the chain from index i on until one is usable (S->att). */
sap_status sap__solver_chain_build(sap_solver *S, int i);
/* 1 when a failure of the current method hands over to a next one. */
int sap__solver_can_fall_back(const sap_solver *S);
/* Expected failures (on = 1: an attempt that has a fallback): the solver's contexts record
 * errors but do not print them.  end takes the same on. */
void sap__solver_try_begin(sap_solver *S, int on);
void sap__solver_try_end(sap_solver *S, int on);

/* solver_refactor.c */
/* map[k] = the position in Y of entry k of X, where X(i, j) is Y(rinv[i], cinv[j]) (NULL:
 * identity); -1 where Y has no such entry. */
void sap__solver_map_entries(const sap_csr *X, const sap_int *rinv, const sap_int *cinv, const sap_csr *Y,
                             sap_int *map, int nt);

/* solver_report.c */
/* Copies an error message of the internal context into the user's. */
void sap__solver_relay(sap_solver *S);
/* A new entry of stats.tried (the oldest dropped when full); its index. */
int sap__solver_add_try(sap_solver *S, sap_solver_method m, sap_int P, sap_int K);
/* Writes the note of stats.tried[i]. */
void sap__solver_try_note(sap_solver *S, int i, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Copies what the current attempt did into the statistics (reason string included). */
void sap__solver_att_stats(sap_solver *S, const sap__attempt *a);

#endif /* SAP_SOLVER_INTERNAL_H */
