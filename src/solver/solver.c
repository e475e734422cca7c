/* solver.c -- sap_solver: the sparse SaP pipeline of the papers as one object.  This file
 * owns the composition: create / destroy, setup (statistics, DB + CM, the backend, then
 * the plan and the chain of solver_plan.c and solver_attempt.c) and get_stats; the
 * other concerns live in the files solver_internal.h lists.
 *
 * Setup (symbolic, once per pattern):
 *   checks -> sap_csr_stats (SPD guess) -> sap_reorder: DB (product + scaling; off for an
 *   SPD-looking matrix) and CM on A + A^T, kept in "CM order" with every entry (R->A) ->
 *   the automatic drop-off half-bandwidth and the method chain.
 * Each method of the chain is an "attempt" (sap__attempt) built from R->A by its
 * strategy method (sap__solver_method_type, one file each, listed in methods.c):
 *   SaP-D / SaP-C / BAND_LU: drop-off to the attempt's K (a CSR of the kept entries),
 *     for SaP-D with P > 1 the third-stage CM inside each partition (a block-diagonal
 *     symmetric permutation t applied to the attempt's matrices only: the other methods
 *     keep the CM order, whose global band the third stage would widen), the "sap-d" /
 *     "sap-c" preconditioner on the kept entries, a sap_matrix of all entries, Krylov;
 *   BAND_PIVOT: LAPACK dgbtrf of the band of R->A on the host, applied as a direct solve;
 *   JACOBI: the Krylov method with the "jacobi" preconditioner on R->A.
 * Solve: bhat = apply_rhs(b), y0 = apply_solution(x0) (then t), Krylov on the attempt's
 * system, x = undo_solution(y).  The true residual of the ORIGINAL system is computed on
 * the host; while it is above tol the solve is repeated on the residual (iterative
 * refinement in the original system, solver_refine.c: 3 passes for the Krylov methods, 10
 * for BAND_PIVOT, whose single pass is one triangular solve).  An attempt that fails (not converged,
 * stagnated, breakdown, non-finite, too many boosted pivots, does not fit the memory,
 * not compiled) hands over to the next method of the chain when opt.fallback is set.
 * Refactor: values in the original CSR order go through a position map computed once
 * at setup (original entry -> R->A entry -> attempt entries), scaled with the DB scaling
 * factors of the setup; the current attempt then redoes only its numeric work. */
#include "reorder/reorder_internal.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- create / destroy -------------------------------------------------------------------- */

static sap_status check_options(sap_context *ctx, sap_int n, const sap_solver_options *o)
{
    if ((int)o->method < SAP_METHOD_AUTO || (int)o->method >= sap_solver_method_count())
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: unknown method %d", (int)o->method);
    if (o->db < -1 || o->db > SAP_DB_TRANSVERSAL)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: db = %d (need -1 auto, 0 none, 1 product, 2 transversal)",
                         o->db);
    if (o->scale < -1 || o->scale > 1 || o->cm < -1 || o->cm > 1 || o->third_stage < -1 || o->third_stage > 1)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: scale, cm and third_stage must be -1, 0 or 1");
    if (isnan(o->drop_delta) || o->drop_delta > 1)
        return SAP_ERROR(ctx, SAP_ERR_INVALID,
                         "sap_solver: drop_delta = %g (need a fraction in [0, 1], 1: no drop-off, or < 0: automatic)",
                         o->drop_delta);
    if (o->partitions < 0 || o->partitions > (n > 0 ? n : 1))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: %lld partitions for N = %lld (need 0 = auto or 1..N)",
                         (long long)o->partitions, (long long)n);
    if (o->factor_precision != -1 && o->factor_precision != SAP_DOUBLE && o->factor_precision != SAP_FLOAT)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: factor precision %d", o->factor_precision);
    if (isnan(o->boost_threshold) || isnan(o->boost_value))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: NaN boost parameter");
    if (!(o->krylov.tol >= 0) || !isfinite(o->krylov.tol) || o->krylov.maxit < 0 || o->krylov.stagnation_window < 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: tol must be finite and >= 0, maxit >= 0");
    if (o->memory_limit < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: memory_limit < 0");
    if (!(o->long_step >= 0))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: long_step = %g (need seconds >= 0, 0: never)",
                         o->long_step);
    if (isnan(o->time_budget))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: time_budget is NaN (need seconds, 0: auto, < 0: none)");
    return SAP_OK;
}

static sap_status create(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, int borrow,
                         sap_solver **out)
{
    SAP_CHECK_CTX(ctx);
    const double tc = sap__wtime();
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create: output pointer is NULL");
    *out = NULL;
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create: matrix is NULL");
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "sap_solver_create: the matrix is %lld x %lld, not square",
                         (long long)A->nrows, (long long)A->ncols);
    /* the row pointer here, the rest of sap_csr_check in the scan below */
    sap_status st = sap__csr_check_rowptr(A);
    if (st < 0) return st;
    sap_solver_options o;
    if (opt) o = *opt;
    else sap_solver_options_init(&o);
    st = check_options(ctx, A->nrows, &o);
    if (st < 0) return st;
    /* one pass over A: the column checks, the first non-finite entry, setup's statistics
     * and (automatic drop-off) its distance histogram */
    sap_csr_scan scan;
    st = sap__csr_scan(ctx, A, o.drop_delta < 0, &scan);
    if (st < 0) return st;
    if (scan.bad_row < A->nrows || scan.bad_entry < A->nnz) {
        sap__free(ctx, scan.hist);
        if (scan.bad_row < A->nrows) { /* sap_csr_check names the first bad entry */
            st = sap_csr_check(A);
            if (st < 0) return st;
        }
        if (scan.bad_entry < A->nnz)
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_create: entry %lld of the matrix is %g",
                             (long long)scan.bad_entry, A->val[scan.bad_entry]);
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create: invalid CSR");
    }
    sap_solver *S = NULL;
    S = sap__alloc(ctx, 1, sizeof(*S), true, __FILE__, __LINE__);
    if (!S) {
        sap__free(ctx, scan.hist);
        return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "sap_solver_create: out of memory");
    }
    S->ctx = ctx;
    S->x = ctx;
    S->opt = o;
    S->scan = scan;
    S->scan_ok = 1;
    if (borrow) { /* the caller's A, never written (refactor copies it first) */
        S->A = (sap_csr *)(uintptr_t)A;
        goto made;
    }
    /* the copy belongs to ctx (sap_csr_copy would use A's context) */
    S->A_owned = 1;
    SAP_TRY(sap_csr_create(ctx, A->nrows, A->ncols, A->nnz, &S->A));
    sap__par_memcpy(ctx, S->A->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1));
    if (A->nnz > 0) {
        sap__par_memcpy(ctx, S->A->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
        sap__par_memcpy(ctx, S->A->val, A->val, sizeof(double) * (size_t)A->nnz);
    }
made:
    S->stats.n = A->nrows;
    S->stats.nnz = A->nnz;
    S->t_create = sap__wtime() - tc;
    S->stats.time_create = S->t_create;
    *out = S;
    return SAP_OK;
cleanup:
    sap_solver_destroy(S);
    return st;
}

sap_status sap__solver_create_shape(sap_context *ctx, sap_int n, sap_int nnz, const sap_solver_options *opt,
                                    sap_solver **out)
{
    SAP_CHECK_CTX(ctx);
    *out = NULL;
    sap_solver_options o;
    if (opt) o = *opt;
    else sap_solver_options_init(&o);
    sap_status st = check_options(ctx, n, &o);
    if (st < 0) return st;
    sap_solver *S = NULL;
    SAP_CALLOC(ctx, S, 1);
    S->ctx = ctx;
    S->x = ctx;
    S->opt = o;
    S->A_owned = 1;
    SAP_CALLOC(ctx, S->A, 1);
    S->A->ctx = ctx;
    S->A->nrows = S->A->ncols = n;
    S->A->nnz = nnz;
    S->stats.n = n;
    S->stats.nnz = nnz;
    *out = S;
    return SAP_OK;
cleanup:
    sap_solver_destroy(S);
    return st;
}

/* S->x = a cpu context beside S->ctx (its threads, messages and allocator): the system is
 * solved on the host. */
static sap_status host_context(sap_solver *S, const char *what)
{
    sap_context *ctx = S->ctx;
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.threads = ctx->threads;
    cfg.print_level = ctx->print_level;
    cfg.allocator = ctx->alloc;
    cfg.log = ctx->log;
    cfg.log_state = ctx->log_state;
    sap_status cs = sap_context_create(&S->hctx, &cfg);
    if (cs < 0) return SAP_ERROR(ctx, cs, "sap_solver: cannot create the host context for %s", what);
    S->x = S->hctx;
    return SAP_OK;
}

sap_status sap_solver_create(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, sap_solver **out)
{
    return create(ctx, A, opt, 0, out);
}

sap_status sap_solver_create_borrowed(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt,
                                      sap_solver **out)
{
    return create(ctx, A, opt, 1, out);
}

sap_status sap__solver_own_matrix(sap_solver *S)
{
    if (S->A_owned) return SAP_OK;
    sap_csr *C = NULL;
    sap_status st = sap_csr_create(S->ctx, S->A->nrows, S->A->ncols, S->A->nnz, &C);
    if (st < 0) return st;
    sap__par_memcpy(S->ctx, C->rowptr, S->A->rowptr, sizeof(sap_int) * (size_t)(S->A->nrows + 1));
    if (S->A->nnz > 0) {
        sap__par_memcpy(S->ctx, C->colind, S->A->colind, sizeof(sap_int) * (size_t)S->A->nnz);
        sap__par_memcpy(S->ctx, C->val, S->A->val, sizeof(double) * (size_t)S->A->nnz);
    }
    if (S->R && S->R->A == S->A) S->R->A = C;
    S->A = C;
    S->A_owned = 1;
    return SAP_OK;
}

/* R->A's pattern back to S->A before R->A is freed (S->R_shared) */
static void detach_shared(sap_solver *S)
{
    if (S->R_shared && S->R && S->R->A) {
        S->R->A->rowptr = NULL;
        S->R->A->colind = NULL;
    }
    S->R_shared = 0;
}

static void free_setup(sap_solver *S)
{
    sap__solver_probe_forget(S); /* before the contexts and R->A its matrix lives on */
    sap__solver_att_destroy(S, S->att);
    S->att = NULL;
    sap__solver_direct_forget(S);
    detach_shared(S);
    if (S->R && S->R->A == S->A) S->R->A = NULL; /* borrowed (no reordering) */
    sap_reorder_result_destroy(S->R);
    S->R = NULL;
    SAP_FREE(S->ctx, S->map0);
    SAP_FREE(S->ctx, S->hist_R);
    S->hist_R_len = 0;
    SAP_FREE(S->ctx, S->w);
    SAP_FREE(S->ctx, S->wb[0]);
    SAP_FREE(S->ctx, S->wb[1]);
    if (S->hctx) sap_context_destroy(S->hctx);
    S->hctx = NULL;
    S->x = S->ctx;
    S->setup_done = 0;
}

void sap__solver_scan_drop(sap_solver *S)
{
    SAP_FREE(S->ctx, S->scan.hist);
    S->scan.hist_len = 0;
    S->scan_ok = 0;
    SAP_FREE(S->ctx, S->hist_R); /* R->A's values change with A's */
    S->hist_R_len = 0;
}

void sap_solver_destroy(sap_solver *S)
{
    if (!S) return;
    free_setup(S);
    sap__solver_scan_drop(S);
    if (S->dev) sap__solver_dev_forget(S, NULL);
    if (S->A_owned) sap_csr_destroy(S->A);
    sap__free(S->ctx, S);
}

/* ---- setup ------------------------------------------------------------------------------- */

/* The reordering result of "no DB, no CM": identity permutations, R->A = S->A (borrowed:
 * no copy of the matrix; free_setup detaches it). */
static sap_status identity_reorder(sap_solver *S)
{
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    sap_reorder_result *R = NULL;
    SAP_CALLOC(ctx, R, 1);
    R->ctx = ctx;
    R->n = n;
    R->P = 1;
    R->kept_fraction = 1.0;
    SAP_ALLOC(ctx, R->row_perm, n);
    SAP_ALLOC(ctx, R->col_perm, n);
    SAP_ALLOC(ctx, R->offsets, 2);
    SAP_ALLOC(ctx, R->Ki_before, 1);
    SAP_ALLOC(ctx, R->Ki, 1);
    for (sap_int i = 0; i < n; i++) R->row_perm[i] = R->col_perm[i] = i;
    R->offsets[0] = 0;
    R->offsets[1] = n;
    R->K_drop = R->Ki_before[0] = R->Ki[0] = S->stats.K_original;
    R->stage[SAP_STAGE_ORIGINAL].done = 1;
    R->A = S->A;
    S->R = R;
    return SAP_OK;
cleanup:
    sap_reorder_result_destroy(R);
    return st;
}

/* DB and / or CM of the whole matrix: no drop-off, one partition, no statistics (the
 * solver's plan does those) */
/* (shared != NULL: a DB that keeps the order shares A's pattern, sap__reorder_share; its
 * pass fills sh, when not NULL) */
static sap_status reorder_whole(const sap_csr *A, sap_db_mode db, int scale, int cm, sap_reorder_result **R,
                                int *shared, sap__copy_shape *sh)
{
    sap_reorder_options ro;
    sap_reorder_options_init(&ro);
    ro.db = db;
    ro.scale = scale;
    ro.cm = cm;
    ro.drop_delta = 1.0;
    ro.partitions = 1;
    ro.stats = 0;
    return sap__reorder_share(A, &ro, R, shared, sh);
}

/* CM after the probe (sap__solver_plan_reorder put it off): on R->A, its order composed
 * into R's maps, the probe's iterate carried over (its matrix, of the old order, released),
 * K_cm, d_cm and the drop-off of the new order.  The caller plans the chain again. */
sap_status sap__solver_cm_late(sap_solver *S)
{
    sap_context *ctx = S->ctx;
    sap_status st = SAP_OK;
    sap_reorder_result *R2 = NULL, *R = S->R;
    double *y = NULL;
    sap_int *p = NULL;
    const sap_int n = S->A->nrows;
    const double t0 = sap__wtime();
    SAP_TRY(reorder_whole(R->A, SAP_DB_NONE, 0, 1, &R2, NULL, NULL));
    const double t1 = sap__wtime();
    S->cm = 1;
    R->cm = R2->cm;
    R->stage[SAP_STAGE_CM] = R2->stage[SAP_STAGE_CM];
    if (R2->cm.chosen != SAP_CM_AUTO) { /* AUTO: CM kept the order it was given */
        if (S->probe_y) SAP_ALLOC(ctx, y, n);
        SAP_ALLOC(ctx, p, n);
        /* R's new -> old maps through R2's: row i of the new R->A is row R2->row_perm[i] of
         * the old one, row R->row_perm[that] of A (the scaling stays by original index) */
        for (sap_int i = 0; i < n; i++) p[i] = R->row_perm[R2->row_perm[i]];
        memcpy(R->row_perm, p, sizeof(sap_int) * (size_t)n);
        for (sap_int j = 0; j < n; j++) p[j] = R->col_perm[R2->col_perm[j]];
        memcpy(R->col_perm, p, sizeof(sap_int) * (size_t)n);
        if (y) { /* the probe's iterate, in the new order */
            for (sap_int j = 0; j < n; j++) y[j] = S->probe_y[R2->col_perm[j]];
            memcpy(S->probe_y, y, sizeof(double) * (size_t)n);
        }
        sap__solver_probe_release(S); /* its matrix is of the old order */
        if (R->A != S->A) {
            detach_shared(S);
            sap_csr_destroy(R->A);
        }
        R->A = R2->A;
        R2->A = NULL;
        R->K_drop = R->Ki_before[0] = R->Ki[0] = R2->K_drop;
        SAP_FREE(ctx, S->hist_R);
        S->hist_R_len = 0;
        sap__band_shape(R->A, sap__threads(ctx), &S->K_cm, &S->d_cm);
    }
    S->stats.K_cm = S->K_cm;
    S->stats.cm_used = 1;
    const double t2 = sap__wtime();
    SAP_TRY(sap__solver_plan_drop(S));
    S->t_cm_late = S->stats.time_cm = sap__wtime() - t0;
    sap__log(ctx, SAP_PRINT_INFO, "sap_solver: late CM %.3g ms: reorder %.3g (CM %.3g), maps %.3g, drop-off plan %.3g",
             1e3 * S->t_cm_late, 1e3 * (t1 - t0), 1e3 * R2->stage[SAP_STAGE_CM].time, 1e3 * (t2 - t1),
             1e3 * (sap__wtime() - t2));
cleanup:
    sap__free(ctx, y);
    sap__free(ctx, p);
    sap_reorder_result_destroy(R2);
    return st;
}

/* K_cm, d_cm and R->A's distance histogram after a DB or CM: from the pass that wrote R->A
 * (sh->done), else from R->A read again (the histogram when first asked) */
static void take_shape(sap_solver *S, sap__copy_shape *sh)
{
    if (sh->done) {
        S->K_cm = sh->K;
        S->d_cm = sh->d;
    } else {
        sap__band_shape(S->R->A, sap__threads(S->ctx), &S->K_cm, &S->d_cm);
    }
    SAP_FREE(S->ctx, S->hist_R);
    S->hist_R_len = 0;
    if (sh->hist) {
        S->hist_R = sh->hist;
        S->hist_R_len = sh->hist_len;
        sh->hist = NULL;
    }
}

sap_status sap__solver_db_late(sap_solver *S)
{
    sap_context *ctx = S->ctx;
    sap_status st = SAP_OK;
    sap_reorder_result *R2 = NULL;
    double *y = NULL;
    const sap_int n = S->A->nrows;
    const double t0 = sap__wtime();
    sap__copy_shape sh = {.want_hist = S->opt.drop_delta < 0};
    if (!S->db_late) return SAP_OK;
    S->db_late = 0;
    if (S->R->A != S->A) /* DB comes first: nothing may have reordered the input before it */
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: DB after a reordering");
    int shared = 0;
    SAP_TRY(reorder_whole(S->A, SAP_DB_PRODUCT, S->scale, 0, &R2, &shared, &sh));
    if (S->probe_y) { /* the probe's iterate x, as R2's unknowns y = C^-1 Q^T x */
        SAP_ALLOC(ctx, y, n);
        SAP_TRY(sap_reorder_apply_solution(R2, S->probe_y, y));
        memcpy(S->probe_y, y, sizeof(double) * (size_t)n);
    }
    sap__solver_probe_release(S); /* its matrix has the unscaled values */
    S->R->A = NULL;               /* borrowed: the identity's */
    sap_reorder_result_destroy(S->R);
    S->R = R2;
    S->R_shared = shared;
    R2 = NULL;
    S->db = SAP_DB_PRODUCT;
    S->stats.db_used = 1;
    S->stats.scaled = S->R->row_scale != NULL;
    take_shape(S, &sh);
    S->stats.K_cm = S->K_cm;
    const double td = sap__wtime();
    SAP_TRY(sap__solver_plan_drop(S)); /* (its time: T_Drop) */
    S->stats.time_db = td - t0;
    S->t_db_late = sap__wtime() - t0; /* out of T_stats */
    sap__log(ctx, SAP_PRINT_INFO, "sap_solver: late DB %.3g ms (DB %.3g)", 1e3 * S->t_db_late,
             1e3 * S->R->stage[SAP_STAGE_DB].time);
cleanup:
    sap__free(ctx, y);
    sap__free(ctx, sh.hist);
    if (R2 && shared && R2->A) R2->A->rowptr = NULL, R2->A->colind = NULL;
    sap_reorder_result_destroy(R2);
    return st;
}

sap_status sap_solver_setup(sap_solver *S)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    sap_status st = SAP_OK;
    const double t_start = sap__wtime();
    free_setup(S);
    S->interrupted = 0;
    S->t_cm_late = S->t_db_late = 0;
    sap_solver_stats *s = &S->stats;
    memset(s, 0, sizeof(*s));
    s->n = S->A->nrows;
    s->nnz = S->A->nnz;
    s->time_create = S->t_create;
    const sap_int n = S->A->nrows;
    const sap_solver_options *o = &S->opt;
    sap_int *rinv = NULL, *cinv = NULL;
    sap__copy_shape sh = {.want_hist = o->drop_delta < 0};

    /* a solver on the caller's device arrays without a host copy of A (solver_device.c:
     * its method needs none): the statistics from the device, no DB / CM (the Krylov method
     * with Jacobi takes the matrix in any symmetric order alike), no drop-off, the chain of
     * that method */
    const int no_host = S->dev && !S->A->rowptr;
    /* the ends of T_stats' parts, for the INFO log line "sap_solver: setup ..." */
    double tv[8] = {t_start, 0, 0, 0, 0, 0, 0, 0};

    /* statistics (one pass): SPD guess, K, dominance, zero diagonal; the skip rules */
    sap_matrix_stats ms;
    if (no_host) {
        SAP_TRY(sap__solver_dev_stats(S, &ms));
    } else if (S->scan_ok) { /* create's pass read them; the symmetry check (SPD guess) is left */
        ms = S->scan.stats;
        if (S->scan.diag_positive) ms.numerically_symmetric = ms.spd_estimate =
                                       sap__csr_numerically_symmetric(S->A, sap__threads(ctx));
    } else {
        SAP_TRY(sap__csr_stats_quick(S->A, &ms));
    }
    s->spd = ms.spd_estimate && n > 0;
    s->K_original = ms.half_bandwidth;
    tv[1] = sap__wtime();
    S->direct_first = !no_host && sap__solver_direct_first(S, &ms, S->direct_why, sizeof(S->direct_why));
    tv[2] = sap__wtime();
    sap__solver_plan_reorder(S, &ms);
    if (no_host) {
        S->cm_late = S->db_late = 0;
        S->db = SAP_DB_NONE;
        S->scale = 0;
        S->cm = 0;
        snprintf(S->db_why, sizeof(S->db_why), ": device arrays, not needed");
        snprintf(S->cm_why, sizeof(S->cm_why), "off: device arrays, not needed");
    }
    if (!no_host && S->db == SAP_DB_NONE && ms.zero_diagonal > 0 &&
        !(S->direct_first && (o->method == SAP_METHOD_AUTO || o->method == SAP_METHOD_DIRECT_HOST))) {
        /* without DB nothing else detects a structurally singular matrix; direct-host first
         * does (UMFPACK's zero pivot: SAP_ERR_SINGULAR ends the chain) */
        sap_int matched = 0;
        SAP_ALLOC(ctx, rinv, n);
        SAP_TRY(sap_max_transversal(S->A, rinv, &matched));
        SAP_FREE(ctx, rinv);
    }

    /* DB + CM (neither: the identity, R->A borrows S->A) */
    const double t_reorder = tv[3] = sap__wtime();
    if (S->db == SAP_DB_NONE && !S->cm) {
        SAP_TRY(identity_reorder(S));
    } else {
        SAP_TRY(reorder_whole(S->A, (sap_db_mode)S->db, S->scale, S->cm, &S->R, &S->R_shared, &sh));
    }
    /* T_stats: everything of setup outside the reorderings, the drop-off and the attempts */
    double t_stats = t_reorder - t_start + (sap__wtime() - t_reorder - S->R->stage[SAP_STAGE_DB].time -
                                            S->R->stage[SAP_STAGE_CM].time);
    double t_mark = tv[4] = sap__wtime();
    s->db_used = S->db != SAP_DB_NONE;
    s->scaled = S->R->row_scale != NULL;
    s->cm_used = S->cm;
    s->time_db = S->R->stage[SAP_STAGE_DB].time;
    s->time_cm = S->R->stage[SAP_STAGE_CM].time;
    if (S->R->A == S->A) { /* the input's statistics hold */
        S->K_cm = ms.half_bandwidth;
        S->d_cm = ms.diag_dominance;
    } else {
        take_shape(S, &sh);
    }
    s->K_cm = S->K_cm;
    /* CM put off until the probe (sap__solver_plan_reorder), unless a rule that reads K_cm
     * before it (host_small, the host's small banded LU) could fire at the bound of any order
     * of R->A (the degree bound, then one breadth-first search).  On the host only up to
     * SV_EAGER_CM_N rows: above, the probe (milliseconds) goes first, and where it does not
     * solve the system CM runs after it and the plan, the small banded LU included, is made
     * again (cage10 on a 2-core host: 20 ms of DB and CM before a probe that solved it in
     * 5 ms) */
    if (S->cm_late && (sap__solver_on_cuda(ctx) || n <= SV_EAGER_CM_N) &&
        sap__solver_small_rules_possible(S, S->K_lb) &&
        sap__solver_small_rules_possible(S, sap__solver_bfs_band_bound(ctx, S->R->A))) {
        S->cm_late = 0;
        const double tl = sap__wtime();
        SAP_TRY(sap__solver_db_late(S)); /* DB before CM */
        SAP_TRY(sap__solver_cm_late(S));
        S->t_cm_late = S->t_db_late = 0;
        t_mark += sap__wtime() - tl; /* T_DB and T_CM, not T_stats */
    }

    /* original entry -> R->A entry: the refactor's map, built by the first refactor
     * (sap__solver_map0), not here: a solve with one set of values never reads it */
    SAP_ALLOC(ctx, S->w, 6 * (n > 0 ? n : 1));

    /* the backend: small systems on the host */
    if (sap__solver_on_cuda(ctx) && o->host_small && n < SV_HOST_SMALL_N &&
        (double)n * (2.0 * (double)S->K_cm + 1.0) < SV_HOST_SMALL_BAND)
        SAP_TRY(host_context(S, "a small system"));
    sap__solver_set_memory_limit(S);
    /* a device that cannot hold even the matrix and the Krylov vectors (jacobi's estimate,
     * the least any method needs there): on a context whose backend was automatic the
     * host takes the system, with a warning naming both figures; on one asked for cuda the
     * chain reports the out-of-memory error */
    if (sap__solver_on_cuda(S->x) && ctx->backend_asked == SAP_BACKEND_AUTO) {
        const int64_t need = sap__solver_estimate(S, SAP_METHOD_JACOBI, 1, 0, SAP_DOUBLE);
        if (need > S->mem_limit) {
            const double lim = (double)S->mem_limit;
            SAP_TRY(host_context(S, "the host fallback"));
            sap__log(ctx, SAP_PRINT_WARNINGS,
                     "sap_solver: the device cannot hold the system (at least %.3g GB needed, %.3g GB available: %s); "
                     "solving on the host",
                     (double)need / 1e9, lim / 1e9, S->mem_why);
            sap__solver_set_memory_limit(S);
            char host_why[sizeof(S->mem_why)];
            snprintf(host_why, sizeof(host_why), "%s", S->mem_why);
            snprintf(S->mem_why, sizeof(S->mem_why), "%.48s; on the host: device %.3g GB < %.3g GB needed", host_why,
                     lim / 1e9, (double)need / 1e9);
        }
    }
    s->on_host = !sap__solver_on_cuda(S->x);
    if (no_host && S->x != S->ctx) { /* solved on the host after all: its copy of A, the host plan */
        sap__free(ctx, rinv);
        sap__free(ctx, cinv);
        free_setup(S);
        SAP_TRY(sap__solver_dev_fetch(S, "the system is solved on the host"));
        return sap_solver_setup(S);
    }

    t_stats += (tv[5] = sap__wtime()) - t_mark;
    if (no_host) {
        S->K_auto = S->K_cm;
        S->kept_auto = 1.0;
        snprintf(S->drop_why, sizeof(S->drop_why), "no drop (device arrays)");
    } else {
        SAP_TRY(sap__solver_plan_drop(S));
    }
    t_mark = tv[6] = sap__wtime();
    if (no_host) sap__solver_dev_plan_chain(S);
    else sap__solver_plan_chain(S);
    tv[7] = sap__wtime();
    s->time_stats = t_stats + tv[7] - t_mark - S->t_cm_late - S->t_db_late;
    sap__log(ctx, SAP_PRINT_INFO,
             "sap_solver: setup parts (ms): statistics %.3g, direct-first %.3g, plan %.3g, reorder %.3g (DB %.3g, "
             "CM %.3g), after it %.3g, drop %.3g, chain plan %.3g (probe %.3g, structure %.3g, analysis %.3g, "
             "late DB %.3g, late CM %.3g)",
             1e3 * (tv[1] - tv[0]), 1e3 * (tv[2] - tv[1]), 1e3 * (tv[3] - tv[2]), 1e3 * (tv[4] - tv[3]),
             1e3 * s->time_db, 1e3 * s->time_cm, 1e3 * (tv[5] - tv[4]), 1e3 * (tv[6] - tv[5]),
             1e3 * (tv[7] - tv[6]), 1e3 * s->time_probe, 1e3 * s->time_structure, 1e3 * s->time_analysis,
             1e3 * S->t_db_late, 1e3 * S->t_cm_late);
    st = sap__solver_chain_build(S, 0);
    if (st < 0 || st == SAP_WARN_INTERRUPTED) goto cleanup;
    s->time_setup = sap__wtime() - t_start;
    S->setup_done = 1;
    if (s->boosted_pivots > 0) st = SAP_WARN_BOOSTED_PIVOTS;
cleanup:
    sap__free(ctx, rinv);
    sap__free(ctx, cinv);
    sap__free(ctx, sh.hist);
    if (st < 0 || st == SAP_WARN_INTERRUPTED) {
        sap__solver_relay(S);
        /* keep the statistics of the failed (or interrupted) setup (tried[]) but free its
         * objects */
        sap_solver_stats keep = S->stats;
        free_setup(S);
        S->stats = keep;
        S->stats.status = st;
    }
    return st;
}

sap_status sap_solver_setup_rhs(sap_solver *S, const double *b)
{
    if (!S) return SAP_ERR_INVALID;
    const sap_int bad = b ? sap__host_first_nonfinite(S->ctx, b, S->A->nrows) : S->A->nrows;
    if (bad < S->A->nrows)
        return SAP_ERROR(S->ctx, SAP_ERR_NONFINITE, "sap_solver_setup_rhs: b[%lld] is %g", (long long)bad, b[bad]);
    S->hint_b = b;
    const sap_status st = sap_solver_setup(S);
    S->hint_b = NULL;
    return st;
}

sap_status sap_solver_get_stats(const sap_solver *S, sap_solver_stats *stats)
{
    if (!S || !stats) return SAP_ERR_INVALID;
    *stats = S->stats;
    return SAP_OK;
}

sap_status sap__solver_batch_work(sap_solver *S, int i, size_t len, double **p)
{
    if (S->wb_len[i] < len) {
        sap__free(S->ctx, S->wb[i]);
        S->wb[i] = NULL;
        S->wb_len[i] = 0;
        S->wb[i] = sap__alloc(S->ctx, len, sizeof(double), false, __FILE__, __LINE__);
        if (!S->wb[i]) return sap__alloc_failure(len, sizeof(double));
        S->wb_len[i] = len;
    }
    *p = S->wb[i];
    return SAP_OK;
}
