/* solver_internal.h -- what the sources of the sparse SaP pipeline (src/solver) share: the
 * sap_solver object, an attempt (one method of the chain, built), the functions one source
 * offers the others (sap__solver_*), the one iterative-refinement loop (sap__solver_refine,
 * also used by the band solver) and the LAPACK band LU of the band-pivot method.
 *
 * Who owns what:
 *   solver.c          create / destroy / setup / get_stats: the composition
 *   solver_plan.c     memory limit, the cost and work rules, K / P / precision, the
 *                     automatic drop-off and the method chain (its ORDER policy)
 *   solver_attempt.c  the generic part of building, refreshing and destroying an attempt;
 *                     the chain
 *   solver_solve.c    one and many right-hand sides through the method's inner solve
 *   solver_refine.c   the iterative refinement on the true residual
 *   solver_refactor.c new values for the same pattern; the entry position maps
 *   solver_report.c   stats.tried[] entries, reason strings, relaying messages
 *   solver_monitor.c  the progress monitor (setup events, Krylov steps, interruption), the
 *                     long-step warning and the time box of the attempts (time_budget)
 *   methods.c         the strategy-method registry: the built-ins (one line each), run-time
 *                     registration, the public enumeration, names and parsing
 *   solver_method_sap.c        sap-d and sap-c (two entries; band-lu builds on them)
 *   solver_method_band_lu.c    band-lu
 *   solver_method_band_pivot.c band-pivot (on solver_band_pivot.c: LAPACK dgbtrf / dgbtrs)
 *   solver_method_jacobi.c     jacobi
 *   solver_method_direct_host.c  direct-host (SuiteSparse)
 *   solver_method_direct_cudss.c direct-cudss (cuDSS)
 *   solver_method_direct.c     what the direct methods share (the device table's direct
 *                              kernels) and their predictions
 *   solver_method_krylov.c     what the Krylov methods (all but band-pivot) share
 * Only the method files (and the chain ORDER policy of solver_plan.c) know a method; the
 * generic code calls through sap__solver_method_type.
 * Internal. */
#ifndef SAP_SOLVER_INTERNAL_H
#define SAP_SOLVER_INTERNAL_H

#include "base/options.h"
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
    /* NULL, or where the inner solve leaves the relative true residual ||b - A x|| / ||b||
     * of the ORIGINAL system for each column of the first solve (k entries, set to NaN
     * before it), computed on the backend, or NaN when it has none: that column's first
     * residual is then not recomputed on the host when it is below tol */
    double *inner_rel;
} sap__refine;

/* x = A^{-1} b for the k columns of B (the initial guesses in X, which receives the
 * solutions): one inner solve, then corrections solved from the true residual b - A x
 * while a column is above tol, finite, not stopped and under max_pass.  A column with
 * b = 0 gets x = 0 (no solve when every column is zero).  Per column: rel[j] its final
 * ||b - A x|| / ||b||, status[j] the inner status of the solve that gave its x, passes[j]
 * the corrections computed for it (taken or not).  An inner status SAP_WARN_INTERRUPTED (a
 * monitor stopped it) ends the refinement after that solve (its corrections taken by the
 * rules; status[j] of the columns it solved is SAP_WARN_INTERRUPTED).  Returns < 0 on an
 * error (the inner solve's, a product's, memory), SAP_OK otherwise: the caller judges rel. */
sap_status sap__solver_refine(const sap__refine *rf, sap_int k, const double *B, sap_int ldb, double *X, sap_int ldx,
                              double *rel, sap_status *status, int *passes);
/* Euclidean norm, summed in order (the refinement's norm). */
double sap__solver_nrm2(const double *v, sap_int n);

/* ---- the sparse solver ------------------------------------------------------------------- */

#define SV_BOOST_FRACTION 0.01 /* more boosted pivots than this fraction of N: reject */
#define SV_MAX_CHAIN 12        /* methods in a chain at most */
#define SV_SECONDS_UNKNOWN 1e-9 /* a method estimate's seconds where only the cost model predicts them */
#define SV_HOST_SMALL_N 20000    /* host_small: N below this ... */
#define SV_HOST_SMALL_BAND 2.0e6 /* ... and band entries N (2K + 1) below this */
#define SV_EAGER_CM_N 5000 /* on the host, CM before the probe (where the small banded LU could
                              fire at a lower bound of K) only up to this many rows */

typedef struct sap__solver_method_type sap__solver_method_type;

/* One method of the chain, built from R->A. */
typedef struct sap__attempt {
    sap_solver_method method;
    const sap__solver_method_type *type;
    sap_int P, K, Kmax; /* partitions, drop-off half-bandwidth, largest K_i used */
    sap_precision prec;
    int third, cg, final;
    /* rich_ok: the attempt's preconditioner is a SaP band one (near A^-1 on the bands it is
     * chosen for); rich: the automatic Krylov method is then Richardson with its
     * BiCGStab(2) fallback (krylov/richardson.c) */
    int rich_ok, rich;
    double kept;               /* fraction of ||A||_F^2 in the preconditioner's band */
    sap_int *t;                /* third stage: new -> old within CM order (NULL: identity) */
    sap_csr *A_att;            /* all entries in the attempt's order (NULL: R->A) */
    sap_csr *A_pc;             /* the kept entries for the preconditioner (NULL: A_att/R->A) */
    sap_int *map_att, *map_pc; /* R->A entry -> A_att / A_pc entry (-1: not there) */
    /* the Krylov methods (solver_method_krylov.c): matrix, preconditioner, method */
    sap_matrix *M;
    sap_precond *pc;
    sap_krylov *kry;
    void *impl; /* the method's own state (e.g. band-pivot's factorization), its destroy frees it */
    sap_int boosted, dropped;
    int64_t mem;
    int m_fresh;   /* M was just created with the current values */
    int itry;      /* its entry in stats.tried */
    /* time box (solver_monitor.c): when it started (its build), what its setup was
     * predicted to take, the seconds it may take (0: none) and whether that was decided */
    double t_start, predicted, budget;
    int budget_set;
    int ichain; /* its index in the chain */
    char note[96]; /* what its setup did */
    double t_drop, t_third, t_asmbl, t_transfer, t_lu, t_spk, t_lurdcd;
    double true_rel; /* the last Krylov solve's true residual when its system is the original (else NaN) */
    double *true_rels; /* a batch's caller (solve_many_batch) lends room for the same of each column
                          of a many-column Krylov solve (NULL: none) */
} sap__attempt;

struct sap_solver {
    sap_context *ctx;  /* the user's context: the solver and the reorderings */
    sap_context *hctx; /* internal cpu context (host_small), or NULL */
    sap_context *x;    /* where the backend objects live: hctx or ctx */
    sap_csr *A;        /* the original matrix (a copy; the caller's with borrowed create) */
    int A_owned;       /* A is the solver's (destroyed with it) */
    sap_solver_options opt;
    int setup_done;
    sap_reorder_result *R; /* DB + CM, every entry */
    sap_int *map0;         /* original entry -> R->A entry */
    sap_int K_cm, K_auto;
    double t_create; /* sap_solver_create's copy and checks (stats.time_create) */
    /* create's one pass over A (sap__csr_scan): its statistics and distance histogram,
     * valid (scan_ok) while A's values are those it read (a refactor drops them) */
    sap_csr_scan scan;
    int scan_ok;
    /* the distance histogram of R->A when it is not A (sap__drop_hist), built once by the
     * first kept-fraction or drop-off question of a setup; dropped with the scan */
    double *hist_R;
    sap_int hist_R_len;
    sap_int K_lb; /* a lower bound of K under any ordering (sap__solver_plan_reorder) */
    double d_cm, kept_auto, t_drop_auto;
    int db, scale, cm;
    /* CM put off until the probe of an automatic chain ordered by cost (plan_reorder); its
     * seconds when it then ran (sap__solver_cm_late: T_CM, not T_stats) */
    int cm_late;
    double t_cm_late;
    /* DB put off until the probe likewise, where its matching is the identity (each row's
     * diagonal its largest entry: the probe's Jacobi steps are the same on A); its seconds
     * when it then ran (sap__solver_db_late: T_DB, not T_stats) */
    int db_late;
    double t_db_late;
    /* R->A's rowptr and colind are S->A's arrays (a DB that kept the order: only its scaled
     * values are R->A's own; sap__reorder_share); detached before R->A is freed */
    int R_shared;
    int64_t mem_limit;
    char mem_why[112], drop_why[96], why_first[240];
    char db_why[96], cm_why[80]; /* the skip rules' words (sap__solver_plan_reorder) */
    sap_solver_method chain[SV_MAX_CHAIN];
    int nchain, ichain;
    sap__attempt *att;
    double *w; /* 6 n work */
    /* the work of sap_solver_solve_many's batches, grown to the largest batch and kept (fresh
     * host memory costs its first-touch page faults at every call): wb[0] the refinement's
     * residuals and corrections, wb[1] the Krylov batch's reordered columns (2 n k each) */
    double *wb[2];
    size_t wb_len[2];
    /* created from the caller's device arrays (solver_device.c); NULL otherwise.  Its
     * attempts build no Krylov matrix of their own (the device one is in the original
     * order) until a solve through the host needs it. */
    struct sap__solver_dev *dev;
    sap_solver_stats stats;
    int interrupted; /* a monitor asked to stop during this call (setup, solve, refactor) */
    /* the time box of the current attempt (solver_monitor.c): 1 it ran out of time, 2 its
     * residual slope predicted it would; what it said; the residual history of the
     * running Krylov solve (log10 relres and time, a ring of SV_SLOPE_WINDOW) */
    int budget_stop;
    char budget_note[128];
    double slope_t[32], slope_r[32], slope_it[32], slope_last_it;
    double slope_r0, slope_it0; /* the first step of the running Krylov solve */
    int slope_n;
    /* learned from the first steps of a cut attempt: its observed total (elapsed + the
     * extrapolated rest) over its prediction; the band methods after it are predicted that
     * many times slower (0: nothing learned in this setup) */
    double learn_miss;
    /* the direct methods' prediction from a host symbolic analysis (solver_method_direct.c;
     * computed at most once per setup, when a budget needs it or direct-host builds) */
    int dpred_done, dpred_ok;
    double dpred_flops, dpred_lu_nnz, dpred_t_analyse;
    char dpred_solver[48];
    struct sap_direct *dpre; /* that analysis, kept for direct-host's build */
    /* AUTO goes to direct-host before the plan's passes (sap__solver_direct_first), or a
     * sparse direct method was given: no DB, CM, structure passes or probe */
    int direct_first;
    char direct_why[96];
    /* the cost model (solver_cost.c): the structure (levels of the lower triangle, the
     * average natural block), the probe (its step time, the steps Jacobi needs), the
     * predicted seconds and steps of each chain entry (< 0: no prediction), the best
     * prediction of a method that is not a sparse direct one */
    sap_int levels;
    double bj_avg;
    int probe_tried, probe_ran;
    int cost_diag_known; /* cost_diag: the diagonal's share of ||R->A||_F^2, computed once */
    double cost_diag;
    double probe_t_it, probe_iters, probe_time;
    /* the probe's Krylov matrix of R->A on probe_x (its upload), kept for the first Krylov
     * attempt on R->A there (sap__solver_probe_take); released by any other attempt and by
     * free_setup */
    sap_matrix *probe_M;
    sap_band_source probe_src;
    sap_context *probe_x;
    /* a setup that knows the first right-hand side (sap_solver_setup_rhs, and the setup
     * inside the first solve): that b (hint_b, the caller's array, only during the setup) is
     * the probe's; the probe's iterate of it (probe_y, in R's order and scaling) then starts
     * the first Krylov solve of that same b (probe_b_fp, its fingerprint) from a zero
     * initial guess, so none of the probe's steps is lost */
    const double *hint_b;
    uint64_t probe_b_fp;
    double *probe_y;
    double probe_y_it;
    double probe_left; /* the share of the decades to tol a Krylov attempt still has to go (1;
                          less when it starts from probe_y) */
    int cost_ordered;
    double pred[SV_MAX_CHAIN], pred_it[SV_MAX_CHAIN], cost_best;
};

static inline int sap__solver_on_cuda(const sap_context *c) { return c->backend == SAP_BACKEND_CUDA; }

/* ---- strategy methods -------------------------------------------------------------------- */

/* Which band a method works on (the plan's memory / work rules narrow it). */
typedef enum sap__sm_band {
    SAP__SM_BAND_NONE, /* none (K = 0): nothing dropped, no memory or work narrowing */
    SAP__SM_BAND_CM,   /* the CM band (K_cm; or the drop_delta given) */
    SAP__SM_BAND_AUTO  /* the band of setup's automatic drop-off (K_auto; or the drop_delta given) */
} sap__sm_band;

/* What a method costs, before anything is built. */
typedef struct sap__sm_estimate {
    int64_t bytes;  /* on its backend (device for cuda, host for cpu) */
    double flops;   /* of its factorization: the work rule */
    double seconds; /* predicted time of its build (the long-step rule); 0: flops at the
                       backend's rate for a band of its K (sap__solver_rate) */
} sap__sm_estimate;

/* A strategy method: estimated before it is tried, built, refreshed with new values,
 * applied inside the shared refinement loop, reported, destroyed.  The built-ins are
 * listed once in methods.c; more come from sap__solver_method_register. */
struct sap__solver_method_type {
    const char *name;  /* as sap_solver_method_parse accepts it (case-insensitive) */
    const char *alias; /* another accepted name, or NULL */
    const char *help;  /* one line, without the name */
    sap_solver_method method; /* the enum value it implements (registered: assigned) */
    sap__sm_band band;
    /* refinement (solver_refine.c) around the inner solve: corrections at most and what a
     * pass that does not halve the residual does to the column */
    int refine_passes;
    sap__refine_slow refine_slow;
    int direct;        /* a direct solve: when it fails, its refined x (if finite) is where
                          the next method starts, not the initial guess */
    const char *batch; /* non-NULL: several right-hand sides go through one inner solve (the
                          words the tried note gives a step, e.g. "one dgbtrs per step") */

    /* 1 when this build has it (NULL: always); the plan asks before choosing it */
    int (*available)(void);
    /* P and the factor precision for half-bandwidth K (NULL: P = 1, double) */
    void (*shape)(const sap_solver *S, const sap__solver_method_type *t, sap_int K, sap_int *P,
                  sap_precision *prec);
    /* bytes and flops with P partitions, half-bandwidth K and factors in prec */
    void (*estimate)(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                     sap_precision prec, sap__sm_estimate *e);
    /* symbolic + numeric setup of attempt a (its K, P, prec, kept and A_pc, the kept
     * entries when K < K_cm, are set).  note (empty or what the plan narrowed) receives
     * what it did; *reject = 1 (with a warning status) when it was built but must not be
     * used (a->final = 0 only).  Whatever it leaves in a is freed by destroy. */
    sap_status (*build)(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject);
    /* new values of the attempt's matrices (refactor): numeric setup only */
    sap_status (*numeric)(sap_solver *S, sap__attempt *a);
    /* the inner solve of the refinement (sap__refine_solve_fn, in the original order):
     * X(:, 0:m) ~ A^{-1} R(:, 0:m); adds its iterations (a direct solve counts one per
     * call) to *iters and its seconds to *tkry (either may be NULL) */
    sap_status (*solve)(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr, const double *X0,
                        sap_int ldx0, double *X, sap_int ldx, double *iters, double *tkry);
    /* its part of the reason string (e.g. "float, BiCGStab(2)", "dgbtrf") */
    void (*report)(const sap_solver *S, const sap__attempt *a, char *buf, size_t size);
    /* frees what build left in a (NULL: nothing) */
    void (*destroy)(sap_solver *S, sap__attempt *a);
};

/* S->wb[i] with room for len doubles (grown, kept). */
sap_status sap__solver_batch_work(sap_solver *S, int i, size_t len, double **p);

#define SV_MAX_METHODS 16 /* the built-ins and registered methods, "auto" not counted */

/* methods.c */
/* The method of value m, or NULL (auto, out of range). */
const sap__solver_method_type *sap__solver_method_get(sap_solver_method m);
/* Registers a strategy method (process-wide, for good; thread-safe): its name and alias
 * must be new, estimate, build, numeric and solve set.  The enum value it gets (the next
 * free one, also its index in the public enumeration) goes to *value (may be NULL) and is
 * what sap_solver_options.method / sap_solver_method_parse give for its name.  The type must
 * outlive the process' use of the solver (the registry keeps the pointer).
 * SAP_ERR_INVALID (bad or taken name, missing operation), SAP_ERR_TOO_LARGE (full). */
sap_status sap__solver_method_register(const sap__solver_method_type *t, sap_solver_method *value);
/* The words of the "method" option: "auto" and every name and alias, ending with {NULL}
 * (filled once the registry is installed: sap_solver_method_count() installs it). */
extern sap_name_value sap__solver_method_words[];

/* solver_method_krylov.c: what the Krylov methods share (matrix, preconditioner, method) */
#define SV_REFINE_KRYLOV 3 /* refinement passes of a Krylov method */
/* The Krylov matrix of A on ctx: the BAND format when A fills at least 70% of its band
 * (else the automatic format); src receives that band (double) as a source the SaP
 * factors can be filled from on the backend (src->val NULL: none). */
sap_status sap__solver_band_matrix(sap_context *ctx, const sap_csr *A, sap_matrix **M, sap_band_source *src);
/* With a->pc created and configured: the Krylov matrix, the numeric setup (the method's
 * numeric) and the Krylov method (CG when cg_ok and the matrix looks SPD without DB or the
 * options ask for it; an attempt with a fallback gets a capped budget). */
sap_status sap__solver_krylov_setup(sap_solver *S, sap__attempt *a, int cg_ok);
/* Numeric refresh: the preconditioner (band = 1: read the SaP preconditioner's info into
 * a) and the Krylov matrix. */
sap_status sap__solver_krylov_numeric(sap_solver *S, sap__attempt *a, int band);
/* Too many boosted pivots while a fallback remains: *reject, note, the warning status. */
sap_status sap__solver_krylov_reject(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject);
/* The inner solve: one Krylov solve per column, in the attempt's order (R, then t). */
sap_status sap__solver_krylov_solve(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                                    const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters,
                                    double *tkry);
/* "CG" or "BiCGStab(2)", after "float, " / "double, " when with_precision. */
void sap__solver_krylov_report(const sap__attempt *a, int with_precision, char *buf, size_t size);
void sap__solver_krylov_destroy(sap_solver *S, sap__attempt *a);
/* Bytes of the Krylov matrix and vectors on the backend (each array at the backend's
 * allocation size: an upper bound). */
double sap__solver_krylov_bytes(const sap_solver *S);
/* A byte figure as int64 (INT64_MAX beyond 9e18). */
int64_t sap__solver_bytes(double b);

/* solver_method_sap.c (shared with band-lu) */
/* Builds a SaP preconditioned Krylov attempt: "sap-d" (coupled = 0; the third stage when
 * P > 1) or "sap-c". */
sap_status sap__solver_sap_build(sap_solver *S, sap__attempt *a, int coupled, char *note, size_t nl, int *reject);
sap_status sap__solver_sap_numeric(sap_solver *S, sap__attempt *a);
void sap__solver_sap_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size);
/* SaP-D's (and band-lu's) estimate: the band and factors, the Krylov part, the host band;
 * 2 N K^2 flops. */
void sap__solver_sap_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                              sap_precision prec, sap__sm_estimate *e);

/* band_solver.c: the rate model (sap_band_estimate_seconds) */
/* Flop/s of a band factorization of half-bandwidth K in precision prec on ctx's backend,
 * P partitions in parallel (P <= 0: one per thread). */
double sap__solver_rate(const sap_context *ctx, sap_int K, sap_precision prec, sap_int P);
/* Predicted seconds of LAPACK's banded LU with pivoting (dgbtrf, kl = ku = K) on the host
 * cores of ctx: its 4 N K^2 flops at the measured per-core rate, and its band's fill. */
double sap__solver_direct_seconds(const sap_context *ctx, sap_int n, sap_int K);
/* Seconds to write bytes of a fresh band (host first touch; cuda: with the upload). */
double sap__solver_fill_seconds(const sap_context *ctx, double bytes);
#define SV_BW_HOST_FILL 1.0e9 /* bytes/s of a band filled on the host, converted and uploaded */

/* solver_monitor.c: the monitor, the long-step rule */
/* The sap_krylov_monitor the attempts' Krylov solvers get when the options carry a monitor
 * (sap_solver_options.monitor or krylov.monitor; state: the solver): calls them with the
 * current attempt's name; non-zero sets S->interrupted. */
int sap__solver_krylov_monitor(void *state, double iteration, double relres);
/* 1 when the Krylov solvers need sap__solver_krylov_monitor. */
int sap__solver_has_monitor(const sap_solver *S);
/* Installs (on = 1) or removes (0) the caller's interrupt flag (opt.interrupt) as the stop
 * flag of the solver's contexts: the band factorization on the cpu polls it. */
void sap__solver_stop_flag(sap_solver *S, int on);
/* Before attempt a's build (K, P, prec set; index i of the chain): the long-step warning
 * when its predicted seconds exceed opt.long_step, then the setup event of the monitor.
 * Returns 1 (and sets S->interrupted) when the monitor asks to stop. */
int sap__solver_before_build(sap_solver *S, const sap__attempt *a, int i, const char *note);
/* "0.4 s", "12 s", "4.2 min", "3.1 h" */
void sap__solver_fmt_seconds(double s, char *buf, size_t size);

/* solver_method_direct.c: what the sparse direct methods (direct-host, direct-cudss) share */
#define SV_REFINE_DIRECT 5 /* refinement passes of a direct method: each one solve with the factors */
struct sap_direct_kernels;
/* Analysis (or the prediction's, kept in S->dpre, for the host kernels) and factorization
 * of the original matrix with kernels k on context c; a->impl holds them.  unavailable: the
 * status when k is not usable here (its reason in note and the message). */
sap_status sap__solver_direct_build(sap_solver *S, sap__attempt *a, const struct sap_direct_kernels *k,
                                   sap_context *c, sap_status unavailable, char *note, size_t nl);
/* The predicted bytes, flops and seconds (when a prediction was made; else the matrix). */
void sap__solver_direct_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                                 sap_precision prec, sap__sm_estimate *e);
sap_status sap__solver_direct_numeric(sap_solver *S, sap__attempt *a);
/* One solve of the original system for the m columns (one iteration a call). */
sap_status sap__solver_direct_solve(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                                    const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters,
                                    double *tkry);
/* "UMFPACK 5.7.9", "CHOLMOD 3.0.14 (Cholesky)", "cuDSS 1.0.0" */
void sap__solver_direct_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size);
void sap__solver_direct_destroy(sap_solver *S, sap__attempt *a);
/* Seconds the direct method m (direct-host, direct-cudss) is predicted to take for the
 * whole solve (analysis + factorization + solve) from a host symbolic analysis of A
 * (done once, kept in S->dpre for direct-host); < 0 when it cannot be predicted (no
 * SuiteSparse, the analysis failed, m not a direct method). */
double sap__solver_direct_predict(sap_solver *S, sap_solver_method m);
/* 1 when setup goes straight to a sparse direct method, before DB, CM and the cost model:
 * the method was given (direct-host, direct-cudss), or AUTO and direct-host is predicted
 * cheaper than the plan's own passes (a small system that is not diagonally dominant: the
 * host analysis up front, kept for the build); why says so. */
int sap__solver_direct_first(sap_solver *S, const sap_matrix_stats *ms, char *why, size_t wl);
/* A lower bound of sap__solver_direct_predict(S, m) from the sizes of A alone, with no
 * analysis (0 when m is not a direct method): a cost predicted below it needs no
 * analysis to be the cheaper one. */
double sap__solver_direct_floor(const sap_solver *S, sap_solver_method m);
/* Seconds the host analysis behind sap__solver_direct_predict is expected to take (0 when
 * it was made): an attempt is not stopped for it before it has run this long. */
double sap__solver_direct_analysis_guess(const sap_solver *S);
/* Frees the kept analysis (setup, destroy). */
void sap__solver_direct_forget(sap_solver *S);

/* solver_monitor.c: the time box */
#define SV_BUDGET_FACTOR 2.0 /* automatic budget: this times the next direct method's prediction */
#define SV_BUDGET_MIN 2.0    /* ... and at least this many seconds (a loaded host or a
                                sanitizer slows small setups to tenths of a second, which must
                                not change the method chosen) */
#define SV_BUDGET_CHECK 0.5  /* an attempt is not checked before it has run this long (the
                                automatic budget costs an analysis: not for a quick attempt) */
/* Learning from the first steps (solver_monitor.c): after SV_LEARN_STEPS monitored Krylov
 * steps of an automatic attempt, the observed residual slope (decades a second over the
 * newer half of the steps) extrapolates the rest of the solve; the attempt is cut when
 * that rest exceeds SV_LEARN_MARGIN times the best prediction of the sparse direct methods
 * after it, and at least SV_LEARN_MIN seconds (a loaded host's noise).  A solve about to
 * finish (its residual within SV_LEARN_NEAR decades of tol, or a short rest) is never cut. */
#define SV_LEARN_STEPS 6
#define SV_LEARN_BEHIND 4.0 /* before those steps: an attempt past this times its prediction
                               is cut once the direct method after it costs no more than the
                               chain has spent (solver_monitor.c) */
#define SV_LEARN_MARGIN 2.0
#define SV_LEARN_MIN 0.1
#define SV_LEARN_NEAR 1.0 /* decades above tol within which a solve is never cut, nor one
                             whose steps so far, at their average progress, would reach tol
                             within as many steps again (timing noise cannot change that) */
#define SV_LEARN_SPENT 0.5 /* ... nor before the chain's attempts (this one and those before
                              it) have run this part of the direct prediction (the rent-or-buy
                              rule: an early residual plateau, as in convection-dominated
                              problems, extrapolates far beyond the real rest, and a cut then
                              costs more than the steps it saves) */
/* The least any sparse direct method after chain index i can take (0: none). */
double sap__solver_direct_floor_after(const sap_solver *S, int i);
/* The best prediction of the sparse direct methods after chain index i (computed once,
 * the analysis time added to a->t_start when a is given); *m receives it; < 0: none. */
double sap__solver_direct_after(sap_solver *S, sap__attempt *a, int i, sap_solver_method *m);
/* The first sparse direct method after chain index i, or SAP_METHOD_AUTO (none). */
sap_solver_method sap__solver_next_direct(const sap_solver *S, int i);
#define SV_DIRECT_CMP_MIN 0.1 /* band-pivot predicted above this (s) is compared with the next
                                 sparse direct method's prediction: the cheaper one runs */
/* The budget of attempt a (chain index i; decided once: a->budget, a->budget_set): the
 * time_budget given, or the automatic one (why receives its words); 0 when none. */
double sap__solver_budget(sap_solver *S, sap__attempt *a, int i, char *why, size_t wl);

/* solver_cost.c: the measured cost model of the automatic plan */
typedef struct sap__cost_rates {
    double bw;        /* bytes/s of a vector update on the backend (3 streams) */
    double lat;       /* seconds of a small vector update (launch latency) */
    double band[2];   /* flop/s per thread of the SaP band factorization, [SAP_FLOAT], [SAP_DOUBLE]
                         (0: not measured, the constants of band_solver.c hold) */
    double lapack;    /* flop/s per thread of LAPACK's dgbtrf (0: not measured) */
    double sweep[2];  /* seconds of one dependent step of the band block solve's sweeps
                         (a row of the forward or backward sweep of one partition) at
                         half-bandwidth K: sweep[0] + sweep[1] K, measured through the band
                         kernels on a small band of few long partitions (0: not measured) */
    double seconds;   /* what measuring took */
} sap__cost_rates;
/* The rates of ctx's backend and thread count: measured at the first call of the process
 * (a few ms), then cached. */
void sap__cost_rates_get(const sap_context *ctx, sap__cost_rates *r);
/* The rates when they were measured already (1), else zeros (0): nothing is measured. */
/* Seconds the structure passes of sap__cost_structure are expected to take. */
double sap__cost_structure_seconds(const sap_solver *S);
int sap__cost_rates_peek(const sap_context *ctx, sap__cost_rates *r);
/* S->levels and S->bj_avg from R->A (bj_avg 0: the blocks could not be found). */
void sap__cost_structure(sap_solver *S);
/* S->bj_avg: the average natural block of R->A (supervariables agglomerated up to 32 rows,
 * as the "bjacobi" preconditioner finds them); errors are returned. */
sap_status sap__cost_blocks(sap_solver *S);
/* The probe (once per setup) when it costs at most a small share of best_band (the best
 * band method's prediction; <= 0: none). */
void sap__cost_probe(sap_solver *S, double best_band);
/* Predicted seconds of method m for the whole solve (setup + *iters steps); < 0: no
 * prediction.  why receives the figures. */
double sap__cost_predict(sap_solver *S, sap_solver_method m, double *iters, char *why, size_t wl);
/* Rounds of the band block solve's sweeps for n rows in P partitions of half-bandwidth K
 * (P over the partitions the backend sweeps at once). */
double sap__cost_sweep_rounds(sap_context *ctx, sap_int n, sap_int P, sap_int K, sap_precision prec);
/* Predicted seconds of one SaP apply (coupled: SaP-C) on x's backend with rates r. */
double sap__cost_apply_seconds(sap_context *x, const sap__cost_rates *r, sap_int n, sap_int K, sap_int P,
                               sap_precision prec, int coupled);

/* solver_plan.c */
/* The method's estimate (bytes, flops, predicted seconds: filled when the method leaves 0). */
sap__sm_estimate sap__solver_estimate_all(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K,
                                          sap_precision prec);
/* S->mem_limit and S->mem_why: given, 90% of the free memory of the backend, or unknown. */
void sap__solver_set_memory_limit(sap_solver *S);
/* Bytes attempt m with P partitions, half-bandwidth K and factors in prec needs (its
 * method's estimate). */
int64_t sap__solver_estimate(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec);
/* The skip rules, from the statistics of the input (one pass, sap_csr_stats): S->db,
 * S->scale, S->cm and why (db_why, cm_why).  Automatic DB is skipped for an SPD-looking
 * matrix and for one that is diagonally dominant in every row with no zero diagonal
 * (what DB's matching and scaling aim at is there already); automatic CM is skipped when
 * DB is off and K is within 1.1x of the lower bound ceil((max row nnz - 1) / 2) that
 * any permutation has (CM could gain at most 10%). */
void sap__solver_plan_reorder(sap_solver *S, const sap_matrix_stats *ms);
sap_status sap__solver_cm_late(sap_solver *S);
/* DB put off by plan_reorder (S->db_late), run now on the input (R the identity still: DB
 * comes before CM), the probe's iterate carried over (its matrix, unscaled, released),
 * K_cm, d_cm and the drop-off of the scaled matrix.  The caller plans the chain again. */
sap_status sap__solver_db_late(sap_solver *S);
/* 1 where a rule that reads K_cm before the probe could fire at half-bandwidth K: the
 * backend's host_small (on a cuda context) or the host's small banded LU (auto_first). */
int sap__solver_small_rules_possible(const sap_solver *S, sap_int K);
/* A lower bound of the half-bandwidth of A's symmetrized pattern under any symmetric order:
 * (N - 1) / diameter, the diameter at most twice the eccentricity of row 0 found by one
 * breadth-first search over A's rows (the distances along A's directed edges are no shorter
 * than the symmetrized graph's); 0 where the search does not reach every row. */
sap_int sap__solver_bfs_band_bound(sap_context *ctx, const sap_csr *A);
/* 1 when half-bandwidth K is within 1.1x of S->K_lb: no reordering can narrow it much
 * (the third stage is skipped then, as CM is). */
int sap__solver_band_at_bound(const sap_solver *S, sap_int K);
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
/* The numeric part of an attempt from the current values of its matrices (its method's
 * numeric). */
sap_status sap__solver_att_numeric(sap_solver *S, sap__attempt *a);
/* The attempt's matrices: all entries (A_att, or R->A) and the kept ones for the
 * preconditioner or factorization (A_pc, or the former). */
const sap_csr *sap__solver_att_full(const sap_solver *S, const sap__attempt *a);
const sap_csr *sap__solver_att_pcm(const sap_solver *S, const sap__attempt *a);
/* A symmetric permutation of the attempt (t: new -> old within the CM order, n entries;
 * the attempt takes it): A_att = R->A and A_pc (when set) permuted by t, with their entry
 * maps; the inner solve applies t to the right-hand side and the solution. */
sap_status sap__solver_att_permute(sap_solver *S, sap__attempt *a, sap_int *t);
/* Builds the methods of the chain from index i on until one is usable (S->att).
 * SAP_WARN_INTERRUPTED (S->att NULL) when the monitor stopped it before a build. */
sap_status sap__solver_chain_build(sap_solver *S, int i);
/* 1 when a failure of the current method hands over to a next one. */
int sap__solver_can_fall_back(const sap_solver *S);
/* Expected failures (on = 1: an attempt that has a fallback): the solver's contexts record
 * errors but do not print them.  end takes the same on. */
void sap__solver_try_begin(sap_solver *S, int on);
void sap__solver_try_end(sap_solver *S, int on);

/* solver_device.c: the device-pointer entry points' state */
/* Frees what the device solves built for attempt a (its permutations); a NULL: all of
 * the device state (the solver's destroy). */
void sap__solver_dev_forget(sap_solver *S, const sap__attempt *a);
/* sap_solver_create_device; check = 0 takes the arrays as backend memory without the
 * pointer check (host arrays on a cpu context: the cpu tests of the device logic). */
sap_status sap__solver_create_dev(sap_context *ctx, sap_int n, sap_int nnz, const sap_int *rowptr,
                                  const sap_int *colind, const double *val, const sap_solver_options *opt, int check,
                                  sap_solver **out);
/* The device statistics of A (csr_stats of the backend), for the setup of a solver with
 * no host copy of A (S->A a shape: rowptr NULL). */
sap_status sap__solver_dev_stats(sap_solver *S, sap_matrix_stats *ms);
/* The chain of such a solver: the one method it was made for (sap__solver_dev_method). */
void sap__solver_dev_plan_chain(sap_solver *S);
/* The host copy of A (S->A's arrays) downloaded from the solver's device copy, once;
 * counted in download_bytes / time_download with why as download_reason.  No-op when S->A
 * has its arrays. */
sap_status sap__solver_dev_fetch(sap_solver *S, const char *why);
/* The preconditioner of an attempt of such a solver set up from the device copy of A. */
sap_status sap__solver_dev_pc_setup(sap_solver *S, sap_precond *pc);
/* Bytes a host solve sent up for the solver's own Krylov matrix (a copy of A). */
void sap__solver_dev_count_a(sap_solver *S, int64_t bytes);

/* solver.c: a solver whose A is a shape (n, nnz; no arrays: the caller's device arrays
 * hold the matrix, solver_device.c) */
sap_status sap__solver_create_shape(sap_context *ctx, sap_int n, sap_int nnz, const sap_solver_options *opt,
                                    sap_solver **out);
/* solver.c: a borrowed A becomes the solver's own copy (before anything writes it) */
sap_status sap__solver_own_matrix(sap_solver *S);
/* Drops create's scan (A's values changed). */
void sap__solver_scan_drop(sap_solver *S);
/* The fraction of ||R->A||_F^2 within distance K of the diagonal (sap__drop_kept_fraction),
 * from create's histogram when R->A is the input, else from S->hist_R. */
sap_status sap__solver_kept_fraction(sap_solver *S, sap_int K, double *fraction);
/* ... inside P diagonal blocks of that band (SaP-D's decoupled partitions) */
sap_status sap__solver_kept_in_blocks(sap_solver *S, sap_int K, sap_int P, double *fraction);
/* sap_drop_off(R->A, delta) from the same histograms. */
sap_status sap__solver_drop_off(sap_solver *S, double delta, sap_int *K, double *kept);

/* solver_refactor.c */
/* The numeric part of a refactor of a solver with no host copy of A (solver_device.c: the
 * new values are in its device copy already). */
sap_status sap__solver_refactor_dev(sap_solver *S);
/* map[k] = the position in Y of entry k of X, where X(i, j) is Y(rinv[i], cinv[j]) (NULL:
 * identity); -1 where Y has no such entry. */
sap_status sap__solver_map_entries(const sap_csr *X, const sap_int *rinv, const sap_int *cinv, const sap_csr *Y,
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

/* The probe's Krylov matrix for an attempt on A in context x: 1 and *M, *src set (the matrix
 * is the attempt's now) when the probe made one of that matrix there; else 0.  release
 * frees it (an attempt that does not use it: no second copy of the matrix held). */
int sap__solver_probe_take(sap_solver *S, sap_context *x, const sap_csr *A, sap_matrix **M, sap_band_source *src);
void sap__solver_probe_release(sap_solver *S);
/* The probe's iterate as the initial guess y (R's space) of a Krylov solve of right-hand side
 * rhs (original space): 1 and y set when rhs is the b the probe solved (used once: the
 * iterate is freed by any call); else 0. */
int sap__solver_probe_guess(sap_solver *S, const double *rhs, double *y);
/* Frees what the probe kept (its matrix, b and iterate): free_setup. */
void sap__solver_probe_forget(sap_solver *S);

#endif /* SAP_SOLVER_INTERNAL_H */
