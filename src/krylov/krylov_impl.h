/* krylov_impl.h -- what the Krylov drivers (cg.c, bicgstab.c, bicgstabl.c, gmres.c,
 * idr.c) share with the front end (krylov.c).  Every driver is written once against the
 * kernel table sap__ops(ctx), so the same code runs on every backend.  Internal.
 *
 * A driver starts from s->x (it computes its own initial residual), iterates until one
 * of the sap__krylov_check() / sap__krylov_breakdown() stop conditions and leaves in s->x the last
 * iterate, or the best one saved by sap__krylov_track_best() when that had a smaller residual.
 * It returns an error status only for errors (out of memory, device errors); every
 * numerical outcome is in s->reason.  The front end then checks the true residual. */
#ifndef SAP_KRYLOV_IMPL_H
#define SAP_KRYLOV_IMPL_H

#include "matrix/backend_matrix.h"
#include "precond/precond_impl.h"
#include "device/device.h"

#include <math.h>

typedef enum kry_reason {
    KRY_RUNNING = 0,
    KRY_CONVERGED, /* monitored residual <= tolerance */
    KRY_MAXIT,     /* iteration limit */
    KRY_STAGNATED, /* no progress over the stagnation window */
    KRY_BREAKDOWN, /* a scalar became zero */
    KRY_NONFINITE, /* a scalar or the residual became NaN/Inf */
    KRY_MONITOR,   /* the monitor callback asked to stop */
    KRY_ERROR      /* an error status (s->err) */
} kry_reason;

/* How the preconditioner enters the iteration. */
typedef enum kry_side { KRY_SIDE_NONE = 0, KRY_SIDE_LEFT, KRY_SIDE_RIGHT } kry_side;

typedef struct kry_solve kry_solve;
typedef struct kry_many kry_many;

/* Preconditioning sides a method supports (sap_krylov_method.sides). */
enum {
    KRY_SIDES_LEFT = 1,     /* M^-1 A x = M^-1 b */
    KRY_SIDES_RIGHT = 2,    /* A M^-1 y = b */
    KRY_SIDES_SYMMETRIC = 4 /* the method applies M itself (CG): opt.side is ignored */
};

/* A Krylov method: one file (cg.c, ...) declares what it needs, registry.c lists it once.
 * The front end sizes the work space from nvec, the history from steps and picks the side
 * from sides; no central switch knows the methods. */
typedef struct sap_krylov_method {
    const char *name; /* unique (case-insensitive): "cg", "gmres", ... */
    const char *help; /* one line */
    int id;           /* built-ins: their sap_krylov_type; registered ones get an id assigned */
    int default_param, max_param; /* max_param 0: no parameter */
    /* work vectors the driver needs (s->w[0 .. nvec - 1]) besides b, x and the best iterate,
     * for the resolved parameter */
    int (*nvec)(int param);
    int steps;       /* history entries (monitor calls) per iteration, for the history size */
    unsigned sides;  /* KRY_SIDES_*: right, left or both; SYMMETRIC for CG */
    sap_status (*run)(kry_solve *s);
    /* k right-hand sides in lockstep (krylov_many.c): one SpMM and one block preconditioner
     * apply a step for all columns, each column with its own scalars and stop; NULL: the
     * front end solves the columns one after another with run */
    sap_status (*run_many)(kry_many *km);
    /* 1: the parameter names another method ("ir:gmres"): it is that method's id + 1 */
    int param_is_method;
    /* 1: the method applies M^-T (sap__krylov_prec_t): the front end builds s->PT */
    int dual;
} sap_krylov_method;

/* Restarts from the true residual when the recursive one converged and the true one did
 * not (krylov.c, krylov_many.c). */
#define KRY_MAX_RESTARTS 3

/* Ids of registered methods start here (sap_krylov_type values above the built-ins). */
#define SAP_KRYLOV_FIRST_REGISTERED 64
#define SAP_KRYLOV_MAX_METHODS 64

/* Registers a Krylov method from outside the library's sources: afterwards
 * sap_krylov_parse(m->name) gives its id (also stored in *id when id is not NULL), which
 * selects it in sap_krylov_options.type, and the enumeration functions list it.  m must
 * stay valid for the rest of the process (the registry keeps the pointer; m->id is not
 * read).  Thread-safe as sap__precond_register (a lock for registrations, release/acquire
 * publication; lookups never lock).  SAP_ERR_INVALID: no name/run/nvec, a name that is
 * taken (case-insensitively) or contains ':', sides without LEFT, RIGHT or SYMMETRIC, a
 * parameter range with default_param outside 1..max_param; SAP_ERR_TOO_LARGE: full. */
sap_status sap__krylov_register(const sap_krylov_method *m, sap_krylov_type *id);
/* The method with this id, or with this name (s[0..len), case-insensitive; *id, may be
 * NULL, receives its id); NULL if none. */
const sap_krylov_method *sap__krylov_find_id(int id);
const sap_krylov_method *sap__krylov_find_name(const char *s, size_t len, int *id);

typedef struct kry_cache {
    sap_vec *v;
    int count;
    sap_int n;
    sap_precision prec;
} kry_cache;

struct sap_krylov {
    sap_context *ctx;
    sap_krylov_options opt;
    const sap_krylov_method *method; /* of opt.type */
    int param; /* l, m or s resolved (never 0) */
    /* vectors cached across solves of the same size and precision: one column (vec) and
     * the blocks of k columns of sap_krylov_solve_many (bvec; freed when a group runs out
     * of memory) */
    kry_cache vec, bvec;
    /* IDR(s) shadow space (kept across solves of the same size) */
    sap_vec *shadow;
    int nshadow;
    /* residual history of the last solve */
    double *hist;
    sap_int hist_len, hist_cap;
    /* host work space of the drivers (Hessenberg matrix, ...) */
    double *hwork;
    size_t hwork_len;
    /* the inner solver of mixed-precision refinement (ir.c), created on first use */
    sap_krylov *inner;
    /* residual weights (sap__krylov_set_weights): wv on the backend when has_w, and the
     * last solve's weighted true residual of each column (wres, wres_cap entries) */
    sap_vec wv;
    int has_w;
    double *wres;
    sap_int wres_cap;
};

/* Residual weights w (host, length n; NULL clears them): from now on every solve also
 * gives, per column, ||w .* (b - A x)|| / ||w .* b|| computed on the backend beside the
 * true residual (sap__krylov_weighted_residual).  With A = D P A_o Q D' and b = D P b_o
 * (a reordered and row-scaled system) and w = 1 / diag(D), that is the original system's
 * true residual ||b_o - A_o x_o|| / ||b_o||, without a host SpMV. */
sap_status sap__krylov_set_weights(sap_krylov *K, const double *w, sap_int n);
/* Column c's weighted true residual of the last solve (NaN: no weights, or not computed). */
double sap__krylov_weighted_residual(const sap_krylov *K, sap_int c);
/* Room for k weighted residuals in K->wres, all set to NaN. */
sap_status sap__krylov_wres_room(sap_krylov *K, sap_int k);
/* Records the weighted true residuals of k columns of the block R = B - A X (columns of
 * length n; R is overwritten with w .* R; B is read): wres[c0 + c] (krylov.c). */
sap_status sap__krylov_weigh(sap_krylov *K, sap_int k, sap_int n, const sap_vec *B, sap_vec *R, sap_int c0);

struct kry_solve {
    sap_krylov *K;
    sap_context *ctx;
    const sap_backend_ops *ops;
    sap_matrix *M;   /* the matrix object A comes from (derived copies: A^T, float, CSR) */
    const sap_spmat *A;
    sap_precond *P;  /* NULL when there is nothing to apply */
    sap_precond *PT; /* methods with dual = 1 and a P: the same preconditioner built on A^T */
    kry_side side;   /* NONE when P is NULL */
    char method[32]; /* "bicgstab(2)" etc., for messages */
    sap_int n;
    sap_vec *b, *x; /* right-hand side and iterate on the backend */
    sap_vec *w;     /* the driver's work vectors */
    int nw;
    sap_vec *xbest;    /* copy of the best iterate (see sap__krylov_track_best) */
    double best_saved; /* its relative residual (INFINITY: none saved) */
    double bnorm;      /* ||b|| */
    double refnorm;    /* the monitored residual is divided by this (||b||, or ||M^-1 b|| if left) */
    double tol;        /* tolerance on the monitored relative residual */
    double iter;       /* iterations done (quarter steps for BiCGStab(l)) */
    double maxit;
    double relres; /* last monitored relative residual */
    double stag_best, stag_iter;
    int started; /* the initial residual has been recorded once */
    kry_reason reason;
    sap_status err;
    char msg[400]; /* what stopped the iteration (breakdown etc.) */
    int sync;      /* synchronise around timed phases */
    int quiet;     /* a column of sap__krylov_solve_many: the checks call neither the monitor
                      nor the history (the batch calls the monitor once a step) */
    sap_krylov_stats *st;
    double inner_scale; /* sap__krylov_inner_solve: inner residual -> outer estimate */
    /* 1 while s->x is the zero initial guess and no residual has been computed: the first
     * sap__krylov_residual then copies b instead of computing b - A 0 (every driver computes
     * its initial residual of s->x before it changes s->x) */
    int x0_zero;
    /* set by a driver whose returned s->x has rtrue = b - A x (exactly as the front end would
     * compute it, e.g. Richardson's last residual): the front end takes it and its norm
     * rtrue_nrm for the true residual instead of one more SpMV; the front end clears it
     * before every run */
    sap_vec *rtrue;
    double rtrue_nrm;
};

/* sap_krylov_solve with b and x as double vectors of the context's backend (device
 * memory on cuda): nothing is copied to or from the host; x holds the initial guess on
 * entry and the solution on return. */
sap_status sap__krylov_solve_vec(sap_krylov *K, sap_matrix *A, sap_precond *P, const sap_vec *b, sap_vec *x,
                                 sap_krylov_stats *stats);
/* sap_krylov_solve_many with B and X (columns at ldb / ldx) in the backend's memory, in
 * double: copied into and out of the Krylov blocks there, single columns through
 * sap__krylov_solve_vec. */
sap_status sap__krylov_solve_many_vec(sap_krylov *K, sap_matrix *A, sap_precond *P, sap_int k, const double *dB,
                                      sap_int ldb, double *dX, sap_int ldx, sap_krylov_stats *stats);

/* sap_krylov_solve from the zero initial guess: x is only written (the caller knows the
 * guess is zero, so it is neither read nor uploaded). */
sap_status sap__krylov_solve_zero(sap_krylov *K, sap_matrix *A, sap_precond *P, const double *b, double *x,
                                  sap_krylov_stats *stats);

/* count vectors of length n in precision prec in the cache c of K, reusing the cached ones
 * when they fit */
sap_status sap__krylov_vectors(sap_krylov *K, kry_cache *c, sap_int n, sap_precision prec, int count);
/* Frees the vectors of the cache c of K. */
void sap__krylov_cache_free(sap_krylov *K, kry_cache *c);
/* The side a method runs with (krylov.c). */
kry_side sap__krylov_pick_side(const sap_krylov_method *m, int have_p, sap_precond_side want);
/* The status of a stop reason. */
sap_status sap__krylov_reason_status(kry_reason r);

/* ---- helpers (krylov.c) ---------------------------------------------------------------- */

/* y = A x (timed, counted). */
sap_status sap__krylov_spmv(kry_solve *s, const sap_vec *x, sap_vec *y);
/* z = M^{-1} r (timed, counted); a copy when there is no preconditioner. */
sap_status sap__krylov_prec(kry_solve *s, const sap_vec *r, sap_vec *z);
/* out = op(in): A M^{-1} in (right), M^{-1} A in (left), A in (none); tmp is scratch. */
sap_status sap__krylov_op(kry_solve *s, const sap_vec *in, sap_vec *out, sap_vec *tmp);
/* r = b - A x, or M^{-1}(b - A x) when left preconditioned (tmp: scratch, may be NULL
 * when not left); *nrm = ||r||. */
sap_status sap__krylov_residual(kry_solve *s, const sap_vec *x, sap_vec *r, sap_vec *tmp, double *nrm);
/* out = op(in) keeping the preconditioned input: right: hat = M^-1 in, out = A hat;
 * left: out = M^-1 A in (tmp scratch); none: out = A in.  Returns in *xdir the vector whose
 * multiples update x (hat when right, in otherwise). */
sap_status sap__krylov_op_hat(kry_solve *s, const sap_vec *in, sap_vec *out, sap_vec *hat, sap_vec *tmp,
                              const sap_vec **xdir);
/* y = A^T x (timed and counted as an SpMV); A^T built once per matrix (sap__matrix_derived). */
sap_status sap__krylov_spmv_t(kry_solve *s, const sap_vec *x, sap_vec *y);
/* z = M^-T r for the dual (shadow) recursions of BiCG and QMR.  The preconditioner
 * interface offers no transposed apply, so M^T is taken as the same preconditioner (type,
 * options, precision) set up on A^T (s->PT, built by the front end for every solve of a
 * method with dual = 1): exactly M^T for jacobi and for factorizations of A's blocks that
 * A^T's blocks transpose (SaP-D/SaP-C without reorderings that differ between A and A^T);
 * otherwise a preconditioner of A^T of the same quality (the primal recursion and so x and
 * r stay exact; bi-orthogonality, and with it the convergence rate, may suffer).
 * A copy when there is no preconditioner. */
sap_status sap__krylov_prec_t(kry_solve *s, const sap_vec *r, sap_vec *z);
/* Solves A d = r approximately in the inner precision 'prec' (the matrix converted once,
 * sap__matrix_derived) with the Krylov method inner_id to relative tolerance tol within
 * maxit iterations, preconditioned by s->P (converted by the preconditioner front end).
 * r and d are vectors of s (the outer precision); the inner iterations and times are
 * added to s's statistics; *iters receives the inner iterations, *reason why it stopped.
 * The outer monitor is called from the inner iterations at s->iter + the inner count
 * with the inner relative residual times scale (an estimate of the outer one). */
sap_status sap__krylov_inner_solve(kry_solve *s, int inner_id, sap_precision prec, const sap_vec *r, sap_vec *d,
                                   double tol, double maxit, double scale, double *iters, kry_reason *reason);

/* r[i] = x[i] . y and y += sum a[i] x[i] for any k (in groups of 64). */
sap_status sap__krylov_mdot(kry_solve *s, int k, const sap_vec *x, const sap_vec *y, double *r);
sap_status sap__krylov_maxpy(kry_solve *s, int k, const double *a, const sap_vec *x, sap_vec *y);

/* Records the initial residual norm; returns 1 when the solve must stop at once
 * (already converged, maxit = 0, NaN/Inf). */
int sap__krylov_start(kry_solve *s, double nrm);
/* After an iteration (or a partial step): records the residual norm at 'iter', calls the
 * monitor and returns 1 when the iteration must stop (s->reason tells why). */
int sap__krylov_check(kry_solve *s, double iter, double nrm);
/* A scalar 'what' has the value v that makes the method break down (zero) or is NaN/Inf;
 * records the reason and returns 1. */
int sap__krylov_breakdown(kry_solve *s, const char *what, double v);
/* Keeps a copy of 'state' when its residual (s->relres) is below half of the saved one. */
sap_status sap__krylov_track_best(kry_solve *s, const sap_vec *state);
/* Unless converged, puts the saved copy back into 'state' when it was better. */
sap_status sap__krylov_restore_best(kry_solve *s, sap_vec *state);

/* ---- k right-hand sides in lockstep (krylov_many.c) ------------------------------------------
 * Blocks hold k columns of length n (column c at element c n; sap__vec_column views one).
 * Every column c has its own kry_solve col[c] (b, x, xbest and w[i] are column views of the
 * blocks; its scalars, iteration count, tolerance, best iterate and stop reason are its own)
 * and active[c] says whether it still iterates.  A driver runs the operator on whole blocks
 * (kry_many_op: one SpMM and one block preconditioner apply for all columns; the columns
 * that stopped go through it too, their results unused) and the vector updates through the
 * backend's column kernels with a zero coefficient for the columns that stopped, which are
 * then not written.  Its per-column checks are sap__krylov_check (quiet: no monitor call);
 * after each exit point it calls sap__krylov_many_monitor once. */
#define KRY_MANY_MAX 32
struct kry_many {
    kry_solve *col; /* k */
    int k;
    sap_int n;
    sap_krylov *K;
    sap_context *ctx;
    const sap_backend_ops *ops;
    kry_side side;
    sap_precond *P;
    const sap_spmat *A;
    sap_vec B, X, Xbest; /* blocks */
    sap_vec *W;          /* the driver's work blocks */
    int nw;
    int *active;
    sap_krylov_stats *st; /* shared: the batch's operator counts and times */
    int x0_zero;          /* X is the zero initial guess of every column: the first residual
                             of X is B (as kry_solve.x0_zero) */
};

/* Y = A X (blocks; timed and counted once per column). */
sap_status sap__krylov_many_spmm(kry_many *km, const sap_vec *X, sap_vec *Y);
/* Z = M^{-1} R (blocks; a copy without preconditioner). */
sap_status sap__krylov_many_prec(kry_many *km, const sap_vec *R, sap_vec *Z);
/* OUT = op(IN) as sap__krylov_op for every column (TMP: scratch block). */
sap_status sap__krylov_many_op(kry_many *km, const sap_vec *IN, sap_vec *OUT, sap_vec *TMP);
/* OUT = op(IN) as sap__krylov_op_hat for every column: on the right HAT = M^{-1} IN, and *dir
 * (the direction x moves along) is HAT, else IN. */
sap_status sap__krylov_many_op_hat(kry_many *km, const sap_vec *IN, sap_vec *OUT, sap_vec *HAT, sap_vec *TMP,
                                   const sap_vec **dir);
/* R = B - A X (M^{-1} (B - A X) when left; TMP scratch, may be NULL when not left), nrm[c] =
 * ||R_c|| for every column. */
sap_status sap__krylov_many_residual(kry_many *km, const sap_vec *X, sap_vec *R, sap_vec *TMP, double *nrm);
/* Column c of R: nrm[c] = ||R_c|| (one cdot for all columns). */
sap_status sap__krylov_many_nrm2(kry_many *km, const sap_vec *R, double *nrm);
/* Y_c = a[c] X_c + b[c] Y_c for the active columns only (the others untouched). */
sap_status sap__krylov_many_axpby(kry_many *km, const double *a, const sap_vec *X, const double *b, sap_vec *Y);
/* Z_c = a[c] X_c + b[c] Y_c + c[c] Z_c for the active columns (c[c] = 0: Z_c not read). */
sap_status sap__krylov_many_axpbypcz(kry_many *km, const double *a, const sap_vec *X, const double *b, const sap_vec *Y,
                                     const double *c, sap_vec *Z);
/* Every active column c: sap__krylov_check at iteration (base ? base[c] : its count) + step
 * with residual norm nrm[c]; a column that stops there stops. */
void sap__krylov_many_check(kry_many *km, const double *base, double step, const double *nrm);
/* sap__krylov_track_best of every active column's X. */
sap_status sap__krylov_many_track_best(kry_many *km);
/* sap__krylov_restore_best of every column's X (at the end of run_many). */
sap_status sap__krylov_many_restore_best(kry_many *km);
/* The number of columns still active. */
int sap__krylov_many_count(const kry_many *km);
/* After an exit point: the monitor (when the solve has one) once, with the largest relative
 * residual of the active columns at the largest iteration count; a stop ends every active
 * column (KRY_MONITOR).  Returns 1 when no column is active any more. */
int sap__krylov_many_monitor(kry_many *km);
/* A per-column scalar that must be finite (and non-zero): otherwise column c breaks down
 * and stops; returns 1 then. */
int sap__krylov_many_scalar(kry_many *km, int c, const char *what, double v, int nonzero);
/* Column c stops (after sap__krylov_check or a breakdown said so). */
void sap__krylov_many_stop(kry_many *km, int c);

/* ---- drivers --------------------------------------------------------------------------- */

/* The built-in methods (one per file; gmres.c has GMRES and FGMRES). */
extern const sap_krylov_method sap__krylov_cg_method, sap__krylov_bicgstab_method, sap__krylov_bicgstabl_method,
    sap__krylov_gmres_method, sap__krylov_fgmres_method, sap__krylov_idr_method, sap__krylov_bicg_method,
    sap__krylov_cgs_method, sap__krylov_qmr_method, sap__krylov_tfqmr_method, sap__krylov_ir_method,
    sap__krylov_async_jacobi_method, sap__krylov_richardson_method;
/* The IDR(s) shadow space for vectors of length n (created once, fixed seed). */
sap_status sap__krylov_idr_shadow(kry_solve *s, int nshadow);

/* A scalar that must be finite (and non-zero when nonzero != 0): otherwise break down. */
#define KRY_SCALAR(s, what, v, nonzero)                                                                                \
    do {                                                                                                               \
        double v__ = (v);                                                                                              \
        if (!isfinite(v__) || ((nonzero) && v__ == 0.0)) {                                                             \
            sap__krylov_breakdown((s), (what), v__);                                                                   \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

#endif /* SAP_KRYLOV_IMPL_H */
