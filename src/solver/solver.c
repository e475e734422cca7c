/* solver.c -- sap_solver: the sparse SaP pipeline of the papers as one object.
 *
 * Setup (symbolic, once per pattern):
 *   checks -> sap_csr_stats (SPD guess) -> sap_reorder: DB (product + scaling; off for an
 *   SPD-looking matrix) and CM on A + A^T, kept in "CM order" with every entry (R->A) ->
 *   the automatic drop-off half-bandwidth and the method chain.
 * Each method of the chain is an "attempt" (sv_attempt) built from R->A:
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
 * refinement in the original system: 3 passes for the Krylov methods, 10 for BAND_PIVOT,
 * whose single pass is one triangular solve).  An attempt that fails (not converged,
 * stagnated, breakdown, non-finite, too many boosted pivots, does not fit the memory,
 * not compiled) hands over to the next method of the chain when opt.fallback is set.
 * Refactor: values in the original CSR order go through a position map computed once
 * at setup (original entry -> R->A entry -> attempt entries), scaled with the DB scaling
 * factors of the setup; the current attempt then redoes only its numeric work. */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "precond/pc_sap.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SV_TRY_MAXIT 200         /* iteration budget of an attempt that has a fallback */
#define SV_TRY_STAGNATION 50     /* stagnation window of such an attempt */
#define SV_BOOST_FRACTION 0.01   /* more boosted pivots than this fraction of N: reject */
#define SV_REFINE_KRYLOV 3       /* refinement passes in the original system */
#define SV_REFINE_PIVOT 10
#define SV_HOST_SMALL_N 20000    /* host_small: N below this ... */
#define SV_HOST_SMALL_BAND 2.0e6 /* ... and band entries N (2K + 1) below this */
#define SV_DROP_DELTA 0.999999   /* automatic drop-off: keep 1 - 1e-6 of ||A||_F^2 ... */
#define SV_DROP_GAIN 2           /* ... when that divides K by at least this */
#define SV_DIRECT_WORK 4.0e9     /* on the host, a banded LU with pivoting of at most this
                                    many flops (4 N K^2; tens of ms on a multicore host) is
                                    the first method: a direct solve beats SaP + Krylov
                                    there and is the most robust (bench/results/suite.md) */

typedef struct sv_attempt {
    sap_solver_method method;
    sap_int P, K, Kmax;  /* partitions, drop-off half-bandwidth, largest K_i used */
    sap_precision prec;
    int third, cg, final;
    double kept;         /* fraction of ||A||_F^2 in the preconditioner's band */
    sap_int *t;          /* third stage: new -> old within CM order (NULL: identity) */
    sap_csr *A_att;      /* all entries in the attempt's order (NULL: R->A) */
    sap_csr *A_pc;       /* the kept entries for the preconditioner (NULL: A_att/R->A) */
    sap_int *map_att, *map_pc; /* R->A entry -> A_att / A_pc entry (-1: not there) */
    sap_matrix *M;
    sap_precond *pc;
    sap_krylov *kry;
    sap__bp *bp;
    sap_int boosted, dropped;
    int64_t mem;
    int itry; /* its entry in stats.tried */
    char note[96]; /* what its setup did */
    double t_drop, t_third, t_asmbl, t_transfer, t_lu, t_spk, t_lurdcd;
} sv_attempt;

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
    sv_attempt *att;
    double *w; /* 6 n work */
    sap_solver_stats stats;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static double nrm2(const double *v, sap_int n)
{
    double s = 0;
    for (sap_int i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

/* Copies an error message of the internal context into the user's. */
static void relay(sap_solver *S)
{
    if (S->hctx && S->hctx->errmsg[0]) {
        snprintf(S->ctx->errmsg, sizeof(S->ctx->errmsg), "%s", S->hctx->errmsg);
        S->hctx->errmsg[0] = 0;
    }
}

static int add_try(sap_solver *S, sap_solver_method m, sap_int P, sap_int K)
{
    sap_solver_stats *s = &S->stats;
    if (s->ntries >= SAP_SOLVER_MAX_TRIES) { /* keep the latest: drop the oldest */
        memmove(s->tried, s->tried + 1, sizeof(s->tried[0]) * (SAP_SOLVER_MAX_TRIES - 1));
        s->ntries--;
        if (S->att && S->att->itry > 0) S->att->itry--;
    }
    sap_solver_try *t = &s->tried[s->ntries];
    memset(t, 0, sizeof(*t));
    t->method = m;
    t->partitions = P;
    t->half_bandwidth = K;
    return s->ntries++;
}

static void try_note(sap_solver *S, int i, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void try_note(sap_solver *S, int i, const char *fmt, ...)
{
    if (i < 0 || i >= S->stats.ntries) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S->stats.tried[i].note, sizeof(S->stats.tried[i].note), fmt, ap);
    va_end(ap);
}

/* map[k] = the position in Y of entry k of X, where X(i, j) is Y(rinv[i], cinv[j]) (NULL:
 * identity); -1 where Y has no such entry.  Rows of Y are sorted: binary search. */
static void map_entries(const sap_csr *X, const sap_int *rinv, const sap_int *cinv, const sap_csr *Y, sap_int *map,
                        int nt)
{
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (X->nnz > 200000)")
    for (sap_int i = 0; i < X->nrows; i++) {
        const sap_int yi = rinv ? rinv[i] : i;
        for (sap_int k = X->rowptr[i]; k < X->rowptr[i + 1]; k++) {
            const sap_int yj = cinv ? cinv[X->colind[k]] : X->colind[k];
            sap_int lo = Y->rowptr[yi], hi = Y->rowptr[yi + 1];
            while (lo < hi) {
                sap_int mid = lo + (hi - lo) / 2;
                if (Y->colind[mid] < yj) lo = mid + 1;
                else hi = mid;
            }
            map[k] = (lo < Y->rowptr[yi + 1] && Y->colind[lo] == yj) ? lo : -1;
        }
    }
}

static int is_cuda(const sap_context *c) { return c->backend == SAP_BACKEND_CUDA; }

/* Bytes an attempt needs on its backend (device for cuda, host for cpu): band and
 * factors, SaP-C coupling/spike/reduced blocks and UL windows, the Krylov matrix and
 * vectors; on the cpu the double band that is built before the conversion too. */
static int64_t estimate(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec)
{
    const double n = (double)S->A->nrows, nnz = (double)S->A->nnz;
    const double es = prec == SAP_FLOAT ? 4.0 : 8.0;
    const double band = n * (2.0 * (double)K + 1.0);
    const double krylov = nnz * 12.0 + n * 8.0 + 12.0 * n * 8.0;
    double b = 0;
    switch (m) {
    case SAP_METHOD_SAPD:
    case SAP_METHOD_BAND_LU:
    case SAP_METHOD_AUTO: b = band * es + krylov; break;
    case SAP_METHOD_SAPC:
        b = band * es + (double)(P > 1 ? P - 1 : 0) * (5.0 * (double)K * (double)K + (2.0 * (double)K + 1.0) * 4.0 * (double)K) * es +
            n * es + krylov;
        break;
    case SAP_METHOD_BAND_PIVOT: return sap__bp_bytes(S->A->nrows, K) + (int64_t)(4 * n * 8);
    case SAP_METHOD_JACOBI: b = n * 8.0 + krylov; break;
    }
    if (!is_cuda(S->x) && m != SAP_METHOD_JACOBI) b += band * 8.0;
    return b > 9.0e18 ? INT64_MAX : (int64_t)b;
}

static void set_memory_limit(sap_solver *S)
{
    if (S->opt.memory_limit > 0) {
        S->mem_limit = S->opt.memory_limit;
        snprintf(S->mem_why, sizeof(S->mem_why), "given");
        return;
    }
    size_t f = 0, t = 0;
    sap__try_begin(S->x);
    sap_status st = sap__ops(S->x)->mem_info(S->x, &f, &t);
    sap__try_end(S->x);
    if (st == SAP_OK && f > 0) {
        S->mem_limit = (int64_t)(0.9 * (double)f);
        snprintf(S->mem_why, sizeof(S->mem_why), "90%% of %s memory", is_cuda(S->x) ? "free device" : "available host");
        return;
    }
    sap_context_clear_error(S->x);
    S->mem_limit = INT64_MAX;
    snprintf(S->mem_why, sizeof(S->mem_why), "unknown memory size");
}

/* Attempts that have a fallback run with the contexts' printing off: their failures are
 * handled (and listed in stats.tried), not the user's errors. */
typedef struct sv_quiet {
    int a, b;
} sv_quiet;

static sv_quiet quiet_begin(sap_solver *S, int on)
{
    sv_quiet q = {S->ctx->print_level, S->x->print_level};
    if (on) {
        S->ctx->print_level = SAP_PRINT_SILENT;
        S->x->print_level = SAP_PRINT_SILENT;
    }
    return q;
}

static void quiet_end(sap_solver *S, sv_quiet q)
{
    S->ctx->print_level = q.a;
    S->x->print_level = q.b;
}

/* ---- attempts ------------------------------------------------------------------------------ */

static void att_destroy(sap_solver *S, sv_attempt *a)
{
    if (!a) return;
    sap_context *ctx = S->ctx;
    sap_krylov_destroy(a->kry);
    sap_precond_destroy(a->pc);
    sap_matrix_destroy(a->M);
    sap__bp_destroy(a->bp);
    sap_csr_destroy(a->A_att);
    sap_csr_destroy(a->A_pc);
    sap__free(ctx, a->t);
    sap__free(ctx, a->map_att);
    sap__free(ctx, a->map_pc);
    sap__free(ctx, a);
}

static const sap_csr *att_full(const sap_solver *S, const sv_attempt *a) { return a->A_att ? a->A_att : S->R->A; }
static const sap_csr *att_pcm(const sap_solver *S, const sv_attempt *a)
{
    return a->A_pc ? a->A_pc : att_full(S, a);
}

/* The half-bandwidth an attempt starts from, before the memory check. */
static sap_int preferred_K(sap_solver *S, sap_solver_method m, double *kept, sap_status *st)
{
    *st = SAP_OK;
    *kept = 1.0;
    if (m == SAP_METHOD_JACOBI) return 0;
    const double dd = S->opt.drop_delta;
    if (dd >= 0 && dd < 1) {
        sap_int K = 0;
        *st = sap_drop_off(S->R->A, dd, &K, kept);
        return K;
    }
    if (m == SAP_METHOD_SAPD || m == SAP_METHOD_SAPC) {
        *kept = S->kept_auto;
        return S->K_auto;
    }
    return S->K_cm;
}

/* Narrows K by stronger drop-off until the attempt fits the memory limit. */
/* Flops of the band factorization (LU of N x N with half-bandwidth K: 2 N K^2; LAPACK's
 * pivoting band has kl + ku = 2K above the diagonal: 4 N K^2). */
static double band_work(const sap_solver *S, sap_solver_method m, sap_int K)
{
    const double n = (double)S->A->nrows, k = (double)K;
    return (m == SAP_METHOD_BAND_PIVOT ? 4.0 : 2.0) * n * k * k;
}

/* The factorization work an automatic drop-off may spend: about a minute of the host's
 * cores, or of a GPU's, for one factorization; beyond it a narrower band (a weaker
 * preconditioner, more Krylov iterations) is the better trade (e.g. 3D meshes, where CM
 * leaves K ~ N^(2/3)). */
#define SV_WORK_CPU 2.0e11
#define SV_WORK_GPU 5.0e12

static int fits(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec, double wlimit)
{
    return estimate(S, m, P, K, prec) <= S->mem_limit && band_work(S, m, K) <= wlimit;
}

/* Fraction of ||A||_F^2 in the entries with |i - j| <= K. */
static double kept_fraction(const sap_csr *A, sap_int K)
{
    double in = 0, all = 0;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const double v2 = A->val[p] * A->val[p];
            const sap_int d = A->colind[p] > i ? A->colind[p] - i : i - A->colind[p];
            all += v2;
            if (d <= K) in += v2;
        }
    return all > 0 ? in / all : 1.0;
}

/* Narrows K (drop-off of the entries beyond it: the largest K that fits, found by
 * bisection, since memory and work grow with K) until the attempt fits the memory limit
 * and, for an automatic band, the work limit. */
static sap_status fit_memory(sap_solver *S, sap_solver_method m, sap_int P, sap_precision prec, sap_int *K,
                             double *kept, int *worth, char *note, size_t nl)
{
    /* the work limit only narrows an automatic band (a drop_delta given is respected) */
    const double wlimit = S->opt.drop_delta >= 0 ? INFINITY : is_cuda(S->x) ? SV_WORK_GPU : SV_WORK_CPU;
    if (fits(S, m, P, *K, prec, wlimit)) return SAP_OK;
    const int for_memory = estimate(S, m, P, *K, prec) > S->mem_limit;
    const sap_int K0 = *K;
    if (!fits(S, m, P, 0, prec, wlimit)) {
        snprintf(note, nl, "%.3g GB > limit %.3g GB even at K = 0", (double)estimate(S, m, P, 0, prec) / 1e9,
                 (double)S->mem_limit / 1e9);
        return SAP_ERROR(S->ctx, SAP_ERR_OUT_OF_MEMORY, "sap_solver %s: %s", sap_solver_method_name(m), note);
    }
    sap_int lo = 0, hi = K0; /* fits(lo), !fits(hi) */
    while (hi - lo > 1) {
        sap_int mid = lo + (hi - lo) / 2;
        if (fits(S, m, P, mid, prec, wlimit)) lo = mid;
        else hi = mid;
    }
    *K = lo;
    *kept = kept_fraction(S->R->A, lo);
    if (for_memory)
        snprintf(note, nl, "narrowed K %lld->%lld (keeps %.4g of ||A||F^2) to fit %.3g MB", (long long)K0,
                 (long long)lo, *kept, (double)S->mem_limit / 1e6);
    else
        snprintf(note, nl, "narrowed K %lld->%lld (keeps %.4g of ||A||F^2): LU work > %.2g flops", (long long)K0,
                 (long long)lo, *kept, wlimit);
    if (!for_memory && worth) {
        /* a band cut by the work limit that keeps less than half of the off-diagonal
         * ||A||_F^2 costs about a band solve per iteration for little more than Jacobi */
        const double diag = kept_fraction(S->R->A, 0);
        const double off = diag < 1 ? (*kept - diag) / (1 - diag) : 1;
        if (off < 0.5) {
            *worth = 0;
            snprintf(note, nl, "K %lld->%lld for work keeps %.0f%% of off-diag ||A||F^2: skipped", (long long)K0,
                     (long long)lo, 100 * off);
        }
    }
    return SAP_OK;
}

/* The numeric part of an attempt from the current values of its matrices. */
static sap_status att_numeric(sap_solver *S, sv_attempt *a)
{
    sap_status st = SAP_OK;
    const sap_int n = S->A->nrows;
    double t0;
    if (a->bp) {
        SAP_TRY(sap__bp_refactor(a->bp, att_pcm(S, a)));
        a->t_asmbl = a->bp->t_asmbl;
        a->t_lu = a->bp->t_lu;
        return st;
    }
    if (a->pc) {
        SAP_TRY(sap_precond_setup_numeric(a->pc, att_pcm(S, a)));
        if (a->method != SAP_METHOD_JACOBI) {
            sap_pc_sap_info info;
            sap__pc_sap_info(a->pc, &info);
            a->boosted = info.boosted;
            a->dropped = info.dropped;
            /* info.K bounds the coupling blocks: the whole matrix' K (capped); with the
             * third stage the largest K_i is the third stage's */
            if (!a->third) a->Kmax = info.K;
            a->P = info.P;
            a->t_asmbl = info.t_bc;
            a->t_lu = info.t_lu;
            a->t_spk = info.t_spk;
            a->t_lurdcd = info.t_lurdcd;
        }
    }
    if (a->M) {
        t0 = sap__wtime();
        SAP_TRY(sap_matrix_update_values(a->M, att_full(S, a)->val));
        if (is_cuda(S->x)) a->t_transfer = sap__wtime() - t0;
    }
    (void)n;
cleanup:
    return st;
}

/* Builds attempt m.  *reject = 1 when it was built but must not be used (too many boosted
 * pivots while a fallback remains).  note receives a short description. */
static sap_status att_build(sap_solver *S, sap_solver_method m, int final, sv_attempt **out, int *reject, char *note,
                            size_t nl)
{
    sap_context *ctx = S->ctx, *x = S->x;
    sap_status st = SAP_OK;
    const sap_int n = S->A->nrows;
    const int nt = sap__threads(ctx);
    sv_attempt *a = NULL;
    sap_csr *drop = NULL;
    sap_int *tinv = NULL, *Kib = NULL, *Ki = NULL;
    char reason[160] = "";
    *out = NULL;
    *reject = 0;
    note[0] = 0;
    SAP_CALLOC(ctx, a, 1);
    a->method = m;
    a->final = final;
    a->itry = -1;

    /* K, P, precision */
    double t0 = sap__wtime();
    double kept = 1;
    sap_int K = preferred_K(S, m, &kept, &st);
    if (st < 0) goto cleanup;
    sap_int P = 1;
    sap_precision prec = SAP_DOUBLE;
    if (m == SAP_METHOD_SAPD || m == SAP_METHOD_SAPC) {
        sap_band_method bm = m == SAP_METHOD_SAPD ? SAP_BAND_SAPD : SAP_BAND_SAPC;
        P = S->opt.partitions;
        sap__band_auto(x, n, K, S->d_cm, &bm, &P, &prec, reason, sizeof(reason));
        if (m == SAP_METHOD_SAPC && S->opt.partitions == 0 && P < 2 && n >= 4) P = 2; /* coupled needs P >= 2 */
        if (S->opt.factor_precision >= 0) prec = (sap_precision)S->opt.factor_precision;
    } else if (m == SAP_METHOD_BAND_LU) {
        prec = SAP_DOUBLE;
    }
    if (P > n) P = n > 0 ? n : 1;
    int worth = 1;
    if (m != SAP_METHOD_JACOBI) SAP_TRY(fit_memory(S, m, P, prec, &K, &kept, final ? NULL : &worth, note, nl));
    if (!worth) SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "sap_solver %s: %s", sap_solver_method_name(m), note);
    if (K > S->K_cm) K = S->K_cm;
    a->K = K;
    a->P = P;
    a->prec = prec;
    a->kept = kept;
    a->mem = estimate(S, m, P, K, prec);
    if (m == SAP_METHOD_BAND_PIVOT && !sap__bp_available())
        SAP_FAIL(ctx, SAP_ERR_NOT_COMPILED, "sap_solver band-pivot: this build has no LAPACK");

    /* drop-off and third stage */
    const sap_csr *RA = S->R->A;
    if (m != SAP_METHOD_JACOBI && K < S->K_cm) SAP_TRY(sap_csr_band_drop(RA, K, &drop));
    a->t_drop = sap__wtime() - t0;
    a->third = m == SAP_METHOD_SAPD && P > 1 && S->opt.third_stage != 0;
    if (a->third) {
        t0 = sap__wtime();
        SAP_ALLOC(ctx, a->t, n);
        SAP_ALLOC(ctx, tinv, n);
        SAP_ALLOC(ctx, Kib, P);
        SAP_ALLOC(ctx, Ki, P);
        SAP_TRY(sap_third_stage(drop ? drop : RA, P, SAP_CM_AUTO, a->t, Kib, Ki));
        for (sap_int b = 0; b < P; b++)
            if (Ki[b] > a->Kmax) a->Kmax = Ki[b];
        SAP_TRY(sap_perm_invert(ctx, n, a->t, tinv));
        SAP_TRY(sap_csr_permute(RA, a->t, a->t, &a->A_att));
        SAP_ALLOC(ctx, a->map_att, RA->nnz);
        map_entries(RA, tinv, tinv, a->A_att, a->map_att, nt);
        if (drop) {
            SAP_TRY(sap_csr_permute(drop, a->t, a->t, &a->A_pc));
            sap_csr_destroy(drop);
            drop = NULL;
        }
        a->t_third = sap__wtime() - t0;
    } else if (drop) {
        a->A_pc = drop;
        drop = NULL;
    }
    if (a->A_pc) {
        SAP_ALLOC(ctx, a->map_pc, RA->nnz);
        map_entries(RA, a->third ? tinv : NULL, a->third ? tinv : NULL, a->A_pc, a->map_pc, nt);
    }

    /* preconditioner or factorization */
    const sap_csr *F = att_full(S, a), *PC = att_pcm(S, a);
    if (m == SAP_METHOD_BAND_PIVOT) {
        sap_int kl, ku;
        sap__csr_lower_upper(PC, nt, &kl, &ku);
        SAP_TRY(sap__bp_create(x, PC, kl, ku, &a->bp));
        a->t_asmbl = a->bp->t_asmbl;
        a->t_lu = a->bp->t_lu;
        a->Kmax = kl > ku ? kl : ku;
        snprintf(note + strlen(note), nl - strlen(note), "%sdgbtrf kl %lld ku %lld", note[0] ? ", " : "",
                 (long long)kl, (long long)ku);
    } else {
        if (m == SAP_METHOD_JACOBI) {
            SAP_TRY(sap_precond_create(x, "jacobi", &a->pc));
        } else {
            SAP_TRY(sap_precond_create(x, m == SAP_METHOD_SAPC ? "sap-c" : "sap-d", &a->pc));
            sap_band_options bo;
            sap_band_options_init(&bo);
            bo.method = m == SAP_METHOD_SAPC ? SAP_BAND_SAPC : SAP_BAND_SAPD;
            bo.partitions = P;
            bo.boost_threshold = S->opt.boost_threshold;
            bo.boost_value = S->opt.boost_value;
            SAP_TRY(sap_precond_set_band_options(a->pc, &bo));
            SAP_TRY(sap_precond_set_precision(a->pc, prec));
        }
        t0 = sap__wtime();
        SAP_TRY(sap_matrix_create(x, F, NULL, &a->M));
        const double tmat = sap__wtime() - t0;
        sap_status sn = att_numeric(S, a);
        if (sn < 0) {
            st = sn;
            goto cleanup;
        }
        /* the Krylov matrix: an upload on cuda (T_Dtransf), a copy on the host (T_Asmbl) */
        if (is_cuda(x)) a->t_transfer = tmat;
        else a->t_asmbl += tmat;
        sap_krylov_options ko = S->opt.krylov;
        a->cg = S->stats.spd && !S->stats.db_used && m != SAP_METHOD_SAPC;
        if (S->opt.krylov_auto) {
            ko.type = a->cg ? SAP_KRYLOV_CG : SAP_KRYLOV_BICGSTABL;
            ko.param = a->cg ? 0 : 2;
        }
        a->cg = ko.type == SAP_KRYLOV_CG;
        if (!final) {
            if (ko.maxit > SV_TRY_MAXIT) ko.maxit = SV_TRY_MAXIT;
            if (ko.stagnation_window == 0) ko.stagnation_window = SV_TRY_STAGNATION;
        }
        ko.monitor = NULL;
        SAP_TRY(sap_krylov_create(x, &ko, &a->kry));
        if (m != SAP_METHOD_JACOBI)
            snprintf(note + strlen(note), nl - strlen(note), "%sK_max %lld, %s, %lld boosted", note[0] ? ", " : "",
                     (long long)a->Kmax, prec == SAP_FLOAT ? "float" : "double", (long long)a->boosted);
        if (a->boosted > SV_BOOST_FRACTION * (double)n && !final) {
            *reject = 1;
            st = SAP_WARN_BOOSTED_PIVOTS;
            snprintf(note, nl, "%lld boosted pivots > 1%% of N", (long long)a->boosted);
        }
    }
    if (!a->Kmax && m != SAP_METHOD_JACOBI && m != SAP_METHOD_BAND_PIVOT) a->Kmax = K;
    *out = a;
    a = NULL;
cleanup:
    if (st < 0 && !note[0]) snprintf(note, nl, "%s", sap_status_string(st));
    sap_csr_destroy(drop);
    sap__free(ctx, tinv);
    sap__free(ctx, Kib);
    sap__free(ctx, Ki);
    att_destroy(S, a);
    if (st < 0 && S->hctx) relay(S);
    return st;
}

/* Copies what the current attempt did into the statistics. */
static void att_stats(sap_solver *S, const sv_attempt *a)
{
    sap_solver_stats *s = &S->stats;
    char head[200];
    if (S->ichain == 0)
        snprintf(head, sizeof(head), "%s: %.150s", sap_solver_method_name(a->method), S->why_first);
    else
        snprintf(head, sizeof(head), "%s: fallback %d of the chain (%s failed)", sap_solver_method_name(a->method),
                 S->ichain, sap_solver_method_name(S->chain[0]));
    char big[512];
    snprintf(big, sizeof(big), "%.120s; DB %s; %s; K %lld%s; %s; %s; mem %.3g of %.3g GB (%s)", head,
             S->db == SAP_DB_PRODUCT ? (S->scale ? "product+scale" : "product")
             : S->db == SAP_DB_TRANSVERSAL ? "transversal"
                                          : "off",
             S->opt.db >= 0 ? "given" : (s->spd ? "off: SPD" : "not SPD"), (long long)a->K,
             a->K < S->K_auto && S->opt.drop_delta < 0 && a->method != SAP_METHOD_JACOBI ? " (narrowed: memory or work)"
                                                                                         : "",
             S->drop_why,
             a->method == SAP_METHOD_BAND_PIVOT ? "dgbtrf"
             : a->method == SAP_METHOD_JACOBI   ? (a->cg ? "CG" : "BiCGStab(2)")
             : a->cg                            ? (a->prec == SAP_FLOAT ? "float, CG" : "double, CG")
                                                : (a->prec == SAP_FLOAT ? "float, BiCGStab(2)" : "double, BiCGStab(2)"),
             (double)a->mem / 1e9, (double)S->mem_limit / 1e9, S->mem_why);
    snprintf(s->reason, sizeof(s->reason), "%.255s", big);
    s->method = a->method;
    s->partitions = a->P;
    s->K_drop = a->K;
    s->K_max = a->Kmax;
    s->kept_fraction = a->kept;
    s->factor_precision = a->prec;
    s->krylov_type = a->cg ? SAP_KRYLOV_CG : (S->opt.krylov_auto ? SAP_KRYLOV_BICGSTABL : S->opt.krylov.type);
    s->on_host = !is_cuda(S->x);
    s->third_stage_used = a->third;
    s->boosted_pivots = a->boosted;
    s->dropped_entries = a->dropped;
    s->memory_estimate = a->mem;
    s->time_drop = a->t_drop + S->t_drop_auto;
    s->time_third = a->t_third;
    s->time_asmbl = a->t_asmbl;
    s->time_transfer = a->t_transfer;
    s->time_lu = a->t_lu;
    s->time_spk = a->t_spk;
    s->time_lurdcd = a->t_lurdcd;
}

/* Builds the methods of the chain from index i on until one is usable. */
static sap_status chain_build(sap_solver *S, int i)
{
    sap_status st = SAP_ERR_INVALID, last = SAP_ERR_INVALID;
    att_destroy(S, S->att);
    S->att = NULL;
    for (; i < S->nchain; i++) {
        const int final = i == S->nchain - 1;
        char note[96];
        int reject = 0;
        sv_attempt *a = NULL;
        double t0 = sap__wtime();
        sv_quiet q = quiet_begin(S, !final && S->opt.fallback);
        st = att_build(S, S->chain[i], final, &a, &reject, note, sizeof(note));
        quiet_end(S, q);
        int k = add_try(S, S->chain[i], a ? a->P : 0, a ? a->K : 0);
        S->stats.tried[k].status = st;
        S->stats.tried[k].time = sap__wtime() - t0;
        try_note(S, k, "setup: %s", note);
        S->ichain = i;
        if (st >= 0 && !reject) {
            a->itry = k;
            snprintf(a->note, sizeof(a->note), "%s", note);
            S->att = a;
            att_stats(S, a);
            return st;
        }
        att_destroy(S, a);
        if (!final && S->opt.fallback)
            sap__log(S->ctx, SAP_PRINT_INFO, "sap_solver: %s not usable (%s), trying %s",
                     sap_solver_method_name(S->chain[i]), note, sap_solver_method_name(S->chain[i + 1]));
        last = st < 0 ? st : SAP_ERR_SINGULAR;
        /* a rejected attempt (too many boosted pivots) always has a next method: it is
         * recorded in tried[], not raised as an error */
        if (st > 0) st = SAP_ERR_SINGULAR;
        if (!S->opt.fallback) break;
        /* errors that no other method can avoid */
        if (st == SAP_ERR_INVALID || st == SAP_ERR_NONFINITE) break;
    }
    S->ichain = S->nchain; /* nothing usable */
    return st < 0 ? st : last;
}

/* ---- create / destroy -------------------------------------------------------------------- */

static sap_status check_options(sap_context *ctx, sap_int n, const sap_solver_options *o)
{
    if ((int)o->method < SAP_METHOD_AUTO || (int)o->method > SAP_METHOD_JACOBI)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: unknown method %d", (int)o->method);
    if (o->db < -1 || o->db > SAP_DB_TRANSVERSAL)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: db = %d (need -1 auto, 0 none, 1 product, 2 transversal)",
                         o->db);
    if (o->scale < -1 || o->scale > 1 || o->cm < -1 || o->cm > 1 || o->third_stage < -1 || o->third_stage > 1)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: scale, cm and third_stage must be -1, 0 or 1");
    if (isnan(o->drop_delta)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: drop_delta is NaN");
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
    return SAP_OK;
}

sap_status sap_solver_create(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, sap_solver **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create: output pointer is NULL");
    *out = NULL;
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create: matrix is NULL");
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "sap_solver_create: the matrix is %lld x %lld, not square",
                         (long long)A->nrows, (long long)A->ncols);
    sap_status st = sap_csr_check(A);
    if (st < 0) return st;
    sap_solver_options o;
    if (opt) o = *opt;
    else sap_solver_options_init(&o);
    st = check_options(ctx, A->nrows, &o);
    if (st < 0) return st;
    for (sap_int p = 0; p < A->nnz; p++)
        if (!isfinite(A->val[p]))
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_create: entry %lld of the matrix is %g", (long long)p,
                             A->val[p]);
    sap_solver *S = NULL;
    SAP_CALLOC(ctx, S, 1);
    S->ctx = ctx;
    S->x = ctx;
    S->opt = o;
    /* the copy belongs to ctx (sap_csr_copy would use A's context) */
    SAP_TRY(sap_csr_create(ctx, A->nrows, A->ncols, A->nnz, &S->A));
    memcpy(S->A->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1));
    if (A->nnz > 0) {
        memcpy(S->A->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
        memcpy(S->A->val, A->val, sizeof(double) * (size_t)A->nnz);
    }
    S->stats.n = A->nrows;
    S->stats.nnz = A->nnz;
    *out = S;
    return SAP_OK;
cleanup:
    sap_solver_destroy(S);
    return st;
}

static void free_setup(sap_solver *S)
{
    att_destroy(S, S->att);
    S->att = NULL;
    sap_reorder_result_destroy(S->R);
    S->R = NULL;
    SAP_FREE(S->ctx, S->map0);
    SAP_FREE(S->ctx, S->w);
    if (S->hctx) sap_context_destroy(S->hctx);
    S->hctx = NULL;
    S->x = S->ctx;
    S->setup_done = 0;
}

void sap_solver_destroy(sap_solver *S)
{
    if (!S) return;
    free_setup(S);
    sap_csr_destroy(S->A);
    sap__free(S->ctx, S);
}

/* ---- setup ------------------------------------------------------------------------------- */

sap_status sap_solver_setup(sap_solver *S)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    sap_status st = SAP_OK;
    const double t_start = sap__wtime();
    free_setup(S);
    sap_solver_stats *s = &S->stats;
    memset(s, 0, sizeof(*s));
    s->n = S->A->nrows;
    s->nnz = S->A->nnz;
    const sap_int n = S->A->nrows;
    const sap_solver_options *o = &S->opt;
    sap_int *rinv = NULL, *cinv = NULL;

    /* statistics: SPD guess, K */
    sap_matrix_stats ms;
    SAP_TRY(sap_csr_stats(S->A, &ms));
    s->spd = ms.spd_estimate && n > 0;
    s->K_original = ms.half_bandwidth;
    S->db = o->db >= 0 ? o->db : (s->spd ? SAP_DB_NONE : SAP_DB_PRODUCT);
    S->scale = S->db == SAP_DB_PRODUCT && o->scale != 0;
    S->cm = o->cm != 0;
    if (S->db == SAP_DB_NONE && ms.zero_diagonal > 0) {
        /* without DB nothing else detects a structurally singular matrix */
        sap_int matched = 0;
        SAP_ALLOC(ctx, rinv, n);
        SAP_TRY(sap_max_transversal(S->A, rinv, &matched));
        SAP_FREE(ctx, rinv);
    }

    /* DB + CM */
    sap_reorder_options ro;
    sap_reorder_options_init(&ro);
    ro.db = (sap_db_mode)S->db;
    ro.scale = S->scale;
    ro.cm = S->cm;
    ro.drop_delta = 1.0;
    ro.partitions = 1;
    ro.stats = 0;
    SAP_TRY(sap_reorder(S->A, &ro, &S->R));
    s->db_used = S->db != SAP_DB_NONE;
    s->scaled = S->R->row_scale != NULL;
    s->cm_used = S->cm;
    s->time_db = S->R->stage[SAP_STAGE_DB].time;
    s->time_cm = S->R->stage[SAP_STAGE_CM].time;
    sap__band_shape(S->R->A, sap__threads(ctx), &S->K_cm, &S->d_cm);
    s->K_cm = S->K_cm;

    /* original entry -> R->A entry (the refactor's map) */
    SAP_ALLOC(ctx, rinv, n);
    SAP_ALLOC(ctx, cinv, n);
    SAP_ALLOC(ctx, S->map0, S->A->nnz);
    SAP_TRY(sap_perm_invert(ctx, n, S->R->row_perm, rinv));
    SAP_TRY(sap_perm_invert(ctx, n, S->R->col_perm, cinv));
    map_entries(S->A, rinv, cinv, S->R->A, S->map0, sap__threads(ctx));
    SAP_ALLOC(ctx, S->w, 6 * (n > 0 ? n : 1));

    /* the backend: small systems on the host */
    if (is_cuda(ctx) && o->host_small && n < SV_HOST_SMALL_N &&
        (double)n * (2.0 * (double)S->K_cm + 1.0) < SV_HOST_SMALL_BAND) {
        sap_context_config cfg;
        sap_context_config_init(&cfg);
        cfg.backend = SAP_BACKEND_CPU;
        cfg.threads = ctx->threads;
        cfg.print_level = ctx->print_level;
        cfg.allocator = ctx->alloc;
        cfg.log = ctx->log;
        cfg.log_state = ctx->log_state;
        sap_status cs = sap_context_create(&S->hctx, &cfg);
        if (cs < 0) SAP_FAIL(ctx, cs, "sap_solver: cannot create the host context for a small system");
        S->x = S->hctx;
    }
    s->on_host = !is_cuda(S->x);
    set_memory_limit(S);

    /* automatic drop-off (SaP-D / SaP-C): keep 1 - 1e-6 of ||A||_F^2 when that at least
     * halves K */
    S->K_auto = S->K_cm;
    S->kept_auto = 1.0;
    double td = sap__wtime();
    if (o->drop_delta < 0 && S->K_cm > 1) {
        sap_int Kd = 0;
        double kf = 1;
        SAP_TRY(sap_drop_off(S->R->A, SV_DROP_DELTA, &Kd, &kf));
        if (Kd * SV_DROP_GAIN <= S->K_cm) {
            S->K_auto = Kd;
            S->kept_auto = kf;
            snprintf(S->drop_why, sizeof(S->drop_why), "drop 1-1e-6: K %lld->%lld", (long long)S->K_cm, (long long)Kd);
        } else {
            snprintf(S->drop_why, sizeof(S->drop_why), "no drop (1-1e-6 gives K %lld)", (long long)Kd);
        }
    } else if (o->drop_delta >= 0 && o->drop_delta < 1) {
        snprintf(S->drop_why, sizeof(S->drop_why), "drop %.6g given", o->drop_delta);
    } else {
        snprintf(S->drop_why, sizeof(S->drop_why), "no drop");
    }
    S->t_drop_auto = sap__wtime() - td;

    /* the chain */
    sap_solver_method first = o->method;
    char why_first[160] = "";
    if (first == SAP_METHOD_AUTO && o->host_direct && !is_cuda(S->x) && sap__bp_available() &&
        band_work(S, SAP_METHOD_BAND_PIVOT, S->K_cm) <= SV_DIRECT_WORK &&
        estimate(S, SAP_METHOD_BAND_PIVOT, 1, S->K_cm, SAP_DOUBLE) <= S->mem_limit) {
        first = SAP_METHOD_BAND_PIVOT;
        snprintf(why_first, sizeof(why_first), "small system on the host: direct banded LU, 4NK^2 = %.2g <= %.2g flop",
                 band_work(S, SAP_METHOD_BAND_PIVOT, S->K_cm), SV_DIRECT_WORK);
    } else if (first == SAP_METHOD_AUTO) {
        sap_band_method bm = SAP_BAND_AUTO;
        sap_int P = o->partitions;
        char br[160];
        sap__band_auto(S->x, n, S->K_auto, S->d_cm, &bm, &P, NULL, br, sizeof(br));
        if (bm == SAP_BAND_SAPC && P < 2) {
            first = SAP_METHOD_SAPD;
            snprintf(why_first, sizeof(why_first), "d = %.3g but P = 1 (N = %lld, K = %lld): SaP-C = SaP-D", S->d_cm,
                     (long long)n, (long long)S->K_auto);
        } else {
            first = bm == SAP_BAND_SAPC ? SAP_METHOD_SAPC : SAP_METHOD_SAPD;
            snprintf(why_first, sizeof(why_first), "band rule %.140s", br);
        }
    } else {
        snprintf(why_first, sizeof(why_first), "%s given", sap_solver_method_name(first));
    }
    static const sap_solver_method order[] = {SAP_METHOD_SAPD, SAP_METHOD_SAPC, SAP_METHOD_BAND_LU,
                                              SAP_METHOD_BAND_PIVOT, SAP_METHOD_JACOBI};
    S->nchain = 0;
    S->chain[S->nchain++] = first;
    if (o->fallback) {
        int past = 0;
        for (int i = 0; i < 5; i++) {
            if (order[i] == first) {
                past = 1;
                continue;
            }
            if (!past) continue;
            /* SaP-C after SaP-D only where there is more than one partition to couple */
            if (order[i] == SAP_METHOD_SAPC && o->method == SAP_METHOD_AUTO && first == SAP_METHOD_SAPD) {
                sap_band_method bm = SAP_BAND_SAPC;
                sap_int P = o->partitions;
                sap__band_auto(S->x, n, S->K_auto, S->d_cm, &bm, &P, NULL, NULL, 0);
                if (P < 2) continue;
            }
            S->chain[S->nchain++] = order[i];
        }
    }
    snprintf(S->why_first, sizeof(S->why_first), "%s", why_first);
    st = chain_build(S, 0);
    if (st < 0) goto cleanup;
    s->time_setup = sap__wtime() - t_start;
    S->setup_done = 1;
    if (s->boosted_pivots > 0) st = SAP_WARN_BOOSTED_PIVOTS;
cleanup:
    sap__free(ctx, rinv);
    sap__free(ctx, cinv);
    if (st < 0) {
        relay(S);
        /* keep the statistics of the failed setup (tried[]) but free its objects */
        sap_solver_stats keep = S->stats;
        free_setup(S);
        S->stats = keep;
        S->stats.status = st;
    }
    return st;
}

/* ---- solve ------------------------------------------------------------------------------- */

/* One pass of the current attempt: x = A^{-1} rhs approximately (x0: initial guess in the
 * original order, NULL = 0).  Returns the Krylov status. */
static sap_status att_pass(sap_solver *S, sv_attempt *a, const double *rhs, const double *x0, double *x, double *iters,
                           double *tkry)
{
    const sap_int n = S->A->nrows;
    double *bh = S->w + 2 * n, *yh = S->w + 3 * n, *tmp = S->w + 4 * n;
    sap_status st = SAP_OK;
    SAP_TRY(sap_reorder_apply_rhs(S->R, rhs, bh));
    if (x0) SAP_TRY(sap_reorder_apply_solution(S->R, x0, yh));
    else memset(yh, 0, sizeof(double) * (size_t)n);
    if (a->t) {
        for (sap_int i = 0; i < n; i++) tmp[i] = bh[a->t[i]];
        memcpy(bh, tmp, sizeof(double) * (size_t)n);
        for (sap_int i = 0; i < n; i++) tmp[i] = yh[a->t[i]];
        memcpy(yh, tmp, sizeof(double) * (size_t)n);
    }
    double t0 = sap__wtime();
    if (a->bp) {
        memcpy(yh, bh, sizeof(double) * (size_t)n);
        SAP_TRY(sap__bp_solve(a->bp, 1, yh, n));
        *iters += 1;
    } else {
        sap_krylov_stats ks;
        sap_status ksv = sap_krylov_solve(a->kry, a->M, a->pc, bh, yh, &ks);
        *iters += ks.iterations;
        if (ksv < 0 && ksv != SAP_ERR_BREAKDOWN) {
            st = ksv;
            goto cleanup;
        }
        st = ksv;
    }
    *tkry += sap__wtime() - t0;
    if (a->t) {
        for (sap_int i = 0; i < n; i++) tmp[a->t[i]] = yh[i];
        memcpy(yh, tmp, sizeof(double) * (size_t)n);
    }
    sap_status s2 = sap_reorder_undo_solution(S->R, yh, x);
    if (s2 < 0) st = s2;
cleanup:
    return st;
}

/* ||b - A x|| / ||b|| of the original system; r receives b - A x. */
static double orig_residual(const sap_solver *S, const double *b, const double *x, double bn, double *r)
{
    const sap_int n = S->A->nrows;
    memcpy(r, b, sizeof(double) * (size_t)n);
    sap_csr_spmv(S->A, -1.0, x, 1.0, r);
    double rn = nrm2(r, n);
    return bn > 0 ? rn / bn : rn;
}

/* Solves one column with the current attempt, refining in the original system. */
static sap_status solve_col(sap_solver *S, const double *b, double *x, double *iters, double *res, double *tkry)
{
    sv_attempt *a = S->att;
    const sap_int n = S->A->nrows;
    double *r = S->w, *d = S->w + n;
    const double tol = S->opt.krylov.tol;
    const double bn = nrm2(b, n);
    *res = 0;
    if (bn == 0) {
        memset(x, 0, sizeof(double) * (size_t)n);
        return SAP_OK;
    }
    sap_status ks = att_pass(S, a, b, x, x, iters, tkry);
    if (ks < 0 && ks != SAP_ERR_BREAKDOWN) return ks;
    double rel = orig_residual(S, b, x, bn, r);
    const int maxpass = a->bp ? SV_REFINE_PIVOT : SV_REFINE_KRYLOV;
    for (int pass = 0; pass < maxpass && rel > tol && isfinite(rel); pass++) {
        sap_status k2 = att_pass(S, a, r, NULL, d, iters, tkry);
        if (k2 < 0 && k2 != SAP_ERR_BREAKDOWN) return k2;
        for (sap_int i = 0; i < n; i++) d[i] += x[i];
        double *rr = S->w + 5 * n;
        double rel2 = orig_residual(S, b, d, bn, rr);
        if (!(rel2 < rel)) break; /* no progress: keep x */
        memcpy(x, d, sizeof(double) * (size_t)n);
        memcpy(r, rr, sizeof(double) * (size_t)n);
        const int slow = rel2 > 0.5 * rel;
        rel = rel2;
        ks = k2;
        if (slow && !a->bp) break;
    }
    *res = rel;
    if (!isfinite(rel)) return SAP_ERROR(S->ctx, SAP_ERR_BREAKDOWN, "sap_solver %s: non-finite residual",
                                         sap_solver_method_name(a->method));
    if (rel <= tol) return SAP_OK;
    if (ks > 0 || ks == SAP_ERR_BREAKDOWN) return ks;
    return SAP_ERROR(S->ctx, SAP_WARN_INEXACT, "sap_solver %s: residual %.3g of the original system above tol %.3g",
                     sap_solver_method_name(a->method), rel, tol);
}

static int can_fall_back(const sap_solver *S) { return S->opt.fallback && S->ichain + 1 < S->nchain; }

/* One column through the chain.  x0 is a copy of the initial guess. */
static sap_status solve_col_chain(sap_solver *S, const double *b, double *x, const double *x0, double *iters,
                                  double *res, double *tkry)
{
    const sap_int n = S->A->nrows;
    for (;;) {
        sv_attempt *a = S->att;
        double it = 0, t0 = sap__wtime();
        sv_quiet q = quiet_begin(S, can_fall_back(S));
        sap_status st = solve_col(S, b, x, &it, res, tkry);
        quiet_end(S, q);
        if (a->itry >= 0 && a->itry < S->stats.ntries) {
            sap_solver_try *t = &S->stats.tried[a->itry];
            t->status = st;
            t->iterations += it;
            t->time += sap__wtime() - t0;
            const char *sep = a->note[0] ? "; " : "";
            if (st == SAP_OK)
                try_note(S, a->itry, "converged, %.4g it, res %.1e%s%s", t->iterations, *res, sep, a->note);
            else try_note(S, a->itry, "%s after %.4g it (res %.1e)%s%s", sap_status_name(st), it, *res, sep, a->note);
        }
        *iters += it;
        if (st == SAP_OK) return st;
        if (st == SAP_ERR_NONFINITE || st == SAP_ERR_INVALID || !can_fall_back(S)) return st;
        sap__log(S->ctx, SAP_PRINT_INFO, "sap_solver: %s failed (%s, residual %.2e), trying %s",
                 sap_solver_method_name(a->method), sap_status_name(st), *res,
                 sap_solver_method_name(S->chain[S->ichain + 1]));
        const int was_direct = a->bp != NULL;
        sap_status cb = chain_build(S, S->ichain + 1);
        if (cb < 0) return cb;
        /* the next method starts from the initial guess, or from the direct band solve's
         * refined x (close, unless it diverged) */
        int finite = 1;
        for (sap_int i = 0; i < n && finite; i++) finite = isfinite(x[i]);
        if (!finite || !was_direct) memcpy(x, x0, sizeof(double) * (size_t)n);
    }
}

/* BAND_PIVOT with several columns: one dgbtrs call for all of them, then refinement
 * steps batched over the columns still above tol. */
static sap_status solve_many_pivot(sap_solver *S, sap_int k, const double *B, sap_int ldb, double *X, sap_int ldx,
                                   int *done, double *iters, double *worst, double *tkry)
{
    sap_context *ctx = S->ctx;
    sv_attempt *a = S->att;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    double *W = NULL, *rn = NULL, *bn = NULL, *xt = S->w + 4 * n, *r = S->w;
    sap_int *cols = NULL;
    SAP_ALLOC(ctx, W, (size_t)n * (size_t)k);
    SAP_ALLOC(ctx, rn, k);
    SAP_ALLOC(ctx, bn, k);
    SAP_ALLOC(ctx, cols, k);
    /* x = LU^{-1} bhat, all columns at once */
    for (sap_int j = 0; j < k; j++) {
        bn[j] = nrm2(B + j * ldb, n);
        SAP_TRY(sap_reorder_apply_rhs(S->R, B + j * ldb, W + j * n));
    }
    double t0 = sap__wtime();
    SAP_TRY(sap__bp_solve(a->bp, k, W, n));
    *tkry += sap__wtime() - t0;
    for (sap_int j = 0; j < k; j++) {
        SAP_TRY(sap_reorder_undo_solution(S->R, W + j * n, X + j * ldx));
        if (bn[j] == 0) memset(X + j * ldx, 0, sizeof(double) * (size_t)n);
        rn[j] = bn[j] > 0 ? orig_residual(S, B + j * ldb, X + j * ldx, bn[j], r) : 0;
        iters[j] = 1;
    }
    const double tol = S->opt.krylov.tol;
    for (int pass = 0; pass < SV_REFINE_PIVOT; pass++) {
        sap_int m = 0;
        for (sap_int j = 0; j < k; j++)
            if (rn[j] > tol && isfinite(rn[j])) cols[m++] = j;
        if (m == 0) break;
        for (sap_int c = 0; c < m; c++) {
            const sap_int j = cols[c];
            orig_residual(S, B + j * ldb, X + j * ldx, bn[j], r);
            SAP_TRY(sap_reorder_apply_rhs(S->R, r, W + c * n));
        }
        t0 = sap__wtime();
        SAP_TRY(sap__bp_solve(a->bp, m, W, n));
        *tkry += sap__wtime() - t0;
        int progress = 0;
        for (sap_int c = 0; c < m; c++) {
            const sap_int j = cols[c];
            double *xj = X + j * ldx;
            SAP_TRY(sap_reorder_undo_solution(S->R, W + c * n, xt));
            for (sap_int i = 0; i < n; i++) xt[i] += xj[i];
            double rel = orig_residual(S, B + j * ldb, xt, bn[j], r);
            iters[j] += 1;
            if (rel < rn[j]) {
                if (rel < 0.5 * rn[j]) progress = 1;
                memcpy(xj, xt, sizeof(double) * (size_t)n);
                rn[j] = rel;
            } else {
                rn[j] = -rn[j] - 1; /* stalled: marked, excluded from the next passes */
            }
        }
        if (!progress) break;
    }
    for (sap_int j = 0; j < k; j++) {
        double rel = rn[j] < 0 ? -rn[j] - 1 : rn[j];
        done[j] = rel <= tol;
        if (rel > *worst || !isfinite(rel)) *worst = rel;
    }
cleanup:
    sap__free(ctx, W);
    sap__free(ctx, rn);
    sap__free(ctx, bn);
    sap__free(ctx, cols);
    return st;
}

sap_status sap_solver_solve_many(sap_solver *S, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    int *done = NULL;
    double *piters = NULL, *x0 = NULL;
    if (nrhs < 0 || ldb < n || ldx < n || (nrhs > 0 && n > 0 && (!B || !X)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_solve_many: nrhs = %lld, ldb = %lld, ldx = %lld, n = %lld%s",
                         (long long)nrhs, (long long)ldb, (long long)ldx, (long long)n,
                         (!B || !X) ? ", NULL array" : "");
    for (sap_int j = 0; j < nrhs; j++)
        for (sap_int i = 0; i < n; i++) {
            if (!isfinite(B[i + j * ldb]))
                return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_solve: b[%lld] of column %lld is %g", (long long)i,
                                 (long long)j, B[i + j * ldb]);
            if (!isfinite(X[i + j * ldx]))
                return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_solve: initial x[%lld] of column %lld is %g",
                                 (long long)i, (long long)j, X[i + j * ldx]);
        }
    if (!S->setup_done) {
        st = sap_solver_setup(S);
        if (st < 0) return st;
    } else if (!S->att) {
        /* a previous solve used up the chain (e.g. out of memory): start it again */
        sap_status cb = chain_build(S, 0);
        if (cb < 0) {
            relay(S);
            return cb;
        }
    }
    const double t_start = sap__wtime();
    sap_solver_stats *s = &S->stats;
    s->nrhs = nrhs;
    s->iterations = 0;
    s->relative_residual = 0;
    s->time_kry = 0;
    sap_status worst = SAP_OK;
    double tkry = 0, worst_res = 0;
    SAP_CALLOC(ctx, done, nrhs > 0 ? nrhs : 1);
    SAP_CALLOC(ctx, piters, nrhs > 0 ? nrhs : 1);
    SAP_ALLOC(ctx, x0, n > 0 ? n : 1);
    if (S->att->bp && nrhs > 1) {
        double t0 = sap__wtime();
        SAP_TRY(solve_many_pivot(S, nrhs, B, ldb, X, ldx, done, piters, &worst_res, &tkry));
        sv_attempt *a = S->att;
        if (a->itry >= 0 && a->itry < s->ntries) {
            sap_solver_try *t = &s->tried[a->itry];
            int ok = 1;
            double it = 0;
            for (sap_int j = 0; j < nrhs; j++) {
                ok &= done[j];
                it += piters[j];
            }
            t->status = ok ? SAP_OK : SAP_WARN_INEXACT;
            t->iterations += it;
            t->time += sap__wtime() - t0;
            try_note(S, a->itry, "%d columns, one dgbtrs per step, worst res %.1e; %s", (int)nrhs, worst_res, a->note);
        }
        for (sap_int j = 0; j < nrhs; j++) s->iterations += piters[j];
        if (worst_res > s->relative_residual) s->relative_residual = worst_res;
    }
    for (sap_int j = 0; j < nrhs; j++) {
        if (done[j]) continue;
        double it = 0, res = 0;
        double *xj = X + j * ldx;
        memcpy(x0, xj, sizeof(double) * (size_t)n);
        sap_status sj = solve_col_chain(S, B + j * ldb, xj, x0, &it, &res, &tkry);
        s->iterations += it;
        if (sj < 0 && sj != SAP_ERR_BREAKDOWN) {
            st = sj;
            goto cleanup;
        }
        if (res > s->relative_residual || !isfinite(res)) s->relative_residual = res;
        if (sj != SAP_OK && (worst == SAP_OK || sj < 0)) worst = sj;
        if (!S->att) break;
    }
    st = worst;
cleanup:
    if (S->att) att_stats(S, S->att);
    s->time_kry = tkry;
    s->time_solve = sap__wtime() - t_start;
    s->status = st;
    sap__free(ctx, done);
    sap__free(ctx, piters);
    sap__free(ctx, x0);
    if (st != SAP_OK) relay(S);
    else if (S->hctx) S->hctx->errmsg[0] = 0; /* failures the chain handled */
    return st;
}

sap_status sap_solver_solve(sap_solver *S, const double *b, double *x)
{
    if (!S) return SAP_ERR_INVALID;
    const sap_int n = S->A->nrows;
    return sap_solver_solve_many(S, 1, b, n > 0 ? n : 1, x, n > 0 ? n : 1);
}

/* ---- refactor ------------------------------------------------------------------------------ */

sap_status sap_solver_refactor(sap_solver *S, const double *values)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    sap_csr *A = S->A;
    if (!values && A->nnz > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_refactor: values is NULL");
    for (sap_int p = 0; p < A->nnz; p++)
        if (!isfinite(values[p]))
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_refactor: value %lld is %g", (long long)p, values[p]);
    if (A->nnz > 0) memcpy(A->val, values, sizeof(double) * (size_t)A->nnz);
    if (!S->setup_done) return sap_solver_setup(S);
    const double t0 = sap__wtime();
    sap_status st = SAP_OK;
    /* R->A = diag(r) P A Q diag(c) with the setup's permutations and scaling factors */
    const sap_reorder_result *R = S->R;
    sap_csr *RA = R->A;
    for (sap_int i = 0; i < A->nrows; i++) {
        const double ri = R->row_scale ? R->row_scale[i] : 1.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            RA->val[S->map0[p]] = R->row_scale ? (ri * A->val[p]) * R->col_scale[A->colind[p]] : A->val[p];
    }
    /* the attempts restart from the current method (it suits this pattern) */
    sap_solver_stats *s = &S->stats;
    s->ntries = 0;
    int from = S->att ? S->ichain : 0;
    if (S->att) {
        sv_attempt *a = S->att;
        if (a->A_att)
            for (sap_int p = 0; p < RA->nnz; p++) a->A_att->val[a->map_att[p]] = RA->val[p];
        if (a->A_pc)
            for (sap_int p = 0; p < RA->nnz; p++)
                if (a->map_pc[p] >= 0) a->A_pc->val[a->map_pc[p]] = RA->val[p];
        double tb = sap__wtime();
        st = att_numeric(S, a);
        a->itry = add_try(S, a->method, a->P, a->K);
        s->tried[a->itry].status = st;
        s->tried[a->itry].time = sap__wtime() - tb;
        if (st >= 0 && a->boosted > SV_BOOST_FRACTION * (double)A->nrows && can_fall_back(S)) {
            try_note(S, a->itry, "refactor: %lld boosted pivots > 1%% of N", (long long)a->boosted);
            st = SAP_ERR_SINGULAR;
        } else {
            try_note(S, a->itry, "refactor: %s", st >= 0 ? "numeric only" : sap_status_string(st));
        }
        if (st >= 0) {
            att_stats(S, a);
        } else {
            from = S->ichain + 1;
            if (!S->opt.fallback || from >= S->nchain) {
                att_destroy(S, S->att);
                S->att = NULL;
                S->ichain = 0;
                relay(S);
                s->status = st;
                return st;
            }
            st = chain_build(S, from);
        }
    } else {
        st = chain_build(S, 0);
    }
    s->time_setup = sap__wtime() - t0;
    s->status = st;
    if (st >= 0 && s->boosted_pivots > 0) st = SAP_WARN_BOOSTED_PIVOTS;
    relay(S);
    return st;
}

sap_status sap_solver_get_stats(const sap_solver *S, sap_solver_stats *stats)
{
    if (!S || !stats) return SAP_ERR_INVALID;
    *stats = S->stats;
    return SAP_OK;
}
