/* solver_method_krylov.c -- what the Krylov strategy methods share (sap-d, sap-c, band-lu,
 * jacobi; not a method itself): the Krylov matrix of all entries, the numeric setup of the
 * preconditioner the method created, the Krylov method (CG, BiCGStab(2), or for a SaP band
 * preconditioner Richardson with its BiCGStab(2) fallback; a capped budget
 * for an attempt that has a fallback), the boosted-pivot rejection, the inner solve (one
 * Krylov solve per column in the attempt's order), the reason words and the byte figures
 * the estimates share. */
#include "krylov/krylov_impl.h"
#include "matrix/backend_matrix.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SV_TRY_MAXIT 200     /* iteration budget of an attempt that has a fallback */
#define SV_TRY_STAGNATION 50 /* stagnation window of such an attempt */
#define SV_TRY_STAGNATION_BOXED 250 /* ... and of one the cost model's time box bounds: CG's residual
                                       on gen:aniso3d:n=40 (jumps of 1e3, anisotropy 1e-3) stalls
                                       for 50-150 steps at a time on its way to 1e-10 in 2000
                                       Jacobi steps or 336 IC(0) steps */

int64_t sap__solver_bytes(double b) { return b > 9.0e18 ? INT64_MAX : (int64_t)b; }

/* Work vectors of the attempt's Krylov method (krylov_impl.h: nvec, IDR(s) its shadow
 * space too); automatic: BiCGStab(2) or CG, the larger. */
static double krylov_vectors(const sap_solver *S)
{
    const sap_krylov_options *ko = &S->opt.krylov;
    int type = S->opt.krylov_auto ? SAP_KRYLOV_BICGSTABL : (int)ko->type;
    const sap_krylov_method *m = sap__krylov_find_id(type);
    int param = S->opt.krylov_auto ? 2 : ko->param;
    if (!m) return 64.0;
    if (param <= 0) param = m->default_param;
    double v = (double)m->nvec(param);
    if (type == SAP_KRYLOV_IDR) v += (double)param;
    return v > 0 ? v : 64.0;
}

double sap__solver_krylov_bytes(const sap_solver *S)
{
    const sap_context *x = S->x;
    const double n = (double)S->A->nrows, nnz = (double)S->A->nnz;
    /* the matrix on the backend, an upper bound of every automatic format
     * (sap__spmv_auto_format): values and int32 column indices with at most 25% padding
     * (SELL-P; CSR none; BAND, >= 70% full, needs less), row offsets and the row tables
     * of the adaptive CSR kernel; on cuda the CSR upload is converted on the device, both
     * there at once (cpu: the CSR) */
    double mat = nnz * 12.0 + (n + 1.0) * 16.0; /* cpu: CSR */
    if (sap__solver_on_cuda(x))
        mat = sap__device_alloc_size(x, 1.25 * nnz * 8.0) + sap__device_alloc_size(x, 1.25 * nnz * 4.0) +
              3.0 * sap__device_alloc_size(x, (n + 1.0) * 8.0) + sap__device_alloc_size(x, nnz * 8.0) +
              sap__device_alloc_size(x, nnz * 4.0) + sap__device_alloc_size(x, (n + 1.0) * 8.0);
    /* vectors in double: the method's work vectors, b, x and the best iterate
     * (krylov.c), the preconditioner's two precision conversions (precond.c), two spare */
    const double nv = krylov_vectors(S) + 3.0 + 2.0 + 2.0;
    return mat + nv * sap__device_alloc_size(x, n * 8.0);
}

sap_status sap__solver_band_matrix(sap_context *ctx, const sap_csr *A, sap_matrix **M, sap_band_source *src)
{
    sap_status st = SAP_OK;
    memset(src, 0, sizeof(*src));
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    sap_int kl = 0, ku = 0;
    int64_t slots = 0;
    if (sap__band_dims(ctx, A, &kl, &ku, &slots) == SAP_OK && (double)slots * 0.7 <= (double)A->nnz)
        mo.format = SAP_FORMAT_BAND;
    /* the host side views A (the attempt's CSR, checked, alive as long as the attempt):
     * no copy of the CSR */
    SAP_TRY(sap__matrix_create_view(ctx, A, &mo, 1, M));
    const void *bv = NULL;
    if ((*M)->sm->prec == SAP_DOUBLE && sap__ops(ctx)->spmat_band &&
        sap__ops(ctx)->spmat_band((*M)->sm, &bv, &src->kl, &src->w) == SAP_OK) {
        src->val = bv;
        src->canonical = 1; /* the solver's matrices are checked at create (sorted, finite) */
    }
cleanup:
    return st;
}

sap_status sap__solver_krylov_numeric(sap_solver *S, sap__attempt *a, int band)
{
    sap_status st = SAP_OK;
    double t0;
    /* the Krylov matrix first: the factors may be filled from its band */
    if (a->M && !a->m_fresh) {
        t0 = sap__wtime();
        SAP_TRY(sap_matrix_update_values(a->M, sap__solver_att_full(S, a)->val));
        if (sap__solver_on_cuda(S->x)) a->t_transfer = sap__wtime() - t0;
    }
    a->m_fresh = 0;
    if (a->pc) {
        /* a solver with no host copy of A: from its device copy */
        sap_status sp = S->dev && !S->A->rowptr ? sap__solver_dev_pc_setup(S, a->pc)
                                                : sap_precond_setup_numeric(a->pc, sap__solver_att_pcm(S, a));
        if (sp < 0 || sp == SAP_WARN_INTERRUPTED) { /* a stop request: the attempt is not built */
            st = sp;
            goto cleanup;
        }
        if (sp > 0 && st == SAP_OK) st = sp; /* warnings kept (boosted pivots) */
        if (band) {
            sap_pc_sap_info info;
            SAP_TRY(sap__pc_sap_info(a->pc, &info));
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
cleanup:
    return st;
}

sap_status sap__solver_krylov_setup(sap_solver *S, sap__attempt *a, int cg_ok)
{
    sap_context *x = S->x;
    sap_status st = SAP_OK;
    double t0 = sap__wtime();
    /* the Krylov matrix (a dense band in the BAND format), then the preconditioner's
     * factors filled from that band on the backend when it holds the same entries (no
     * second band on the host, no second upload) */
    const sap_csr *full = sap__solver_att_full(S, a);
    sap_band_source src;
    memset(&src, 0, sizeof(src));
    /* a solver on the caller's device arrays has its Krylov matrix there already (in the
     * original order, solver_device.c): no copy of A goes up unless a host solve asks, or
     * the band methods fill their factors from it (the band of the reordered matrix, filled
     * straight into the pinned staging ring: measured on an H200 at N = 200,000, K = 200,
     * SaP-C's T_Asmbl 0.52 s from the host band and its float copy in fresh pageable memory,
     * bench/banded --parts multidev) */
    const int dev_band = S->dev && x == S->ctx && S->A->rowptr && a->type->band != SAP__SM_BAND_NONE;
    if ((!S->dev || x != S->ctx || dev_band) && !sap__solver_probe_take(S, x, full, &a->M, &src))
        SAP_TRY(sap__solver_band_matrix(x, full, &a->M, &src));
    a->m_fresh = 1;
    if (src.val && a->pc && sap__solver_att_pcm(S, a) == full) {
        sap_status ss = sap__pc_sap_set_source(a->pc, &src); /* not a SaP preconditioner: no source */
        (void)ss;
    }
    const double tmat = sap__wtime() - t0;
    sap_status sn = sap__solver_att_numeric(S, a); /* its warnings are not the attempt's */
    if (sn < 0 || sn == SAP_WARN_INTERRUPTED) {
        st = sn;
        goto cleanup;
    }
    /* the Krylov matrix: an upload on cuda (T_Dtransf), a copy on the host (T_Asmbl) */
    if (sap__solver_on_cuda(x)) a->t_transfer = tmat;
    else a->t_asmbl += tmat;
    sap_krylov_options ko = S->opt.krylov;
    a->cg = S->stats.spd && !S->stats.db_used && cg_ok;
    if (S->opt.krylov_auto) {
        /* a SaP band preconditioner: Richardson steps while each contracts the residual 4x
         * (measured in the solve, step by step), BiCGStab(2) from the first that does not */
        ko.type = a->cg ? SAP_KRYLOV_CG : a->rich_ok ? SAP_KRYLOV_RICHARDSON : SAP_KRYLOV_BICGSTABL;
        ko.param = a->cg ? 0 : 2;
    }
    a->cg = ko.type == SAP_KRYLOV_CG;
    a->rich = ko.type == SAP_KRYLOV_RICHARDSON;
    if (!a->final) {
        /* a time_budget given replaces the iteration cap */
        /* a time_budget given, or the cost model's order (its automatic budgets), replaces the
         * iteration cap: the time box bounds the attempt instead */
        if (ko.maxit > SV_TRY_MAXIT && !(S->opt.time_budget > 0) && !S->cost_ordered) ko.maxit = SV_TRY_MAXIT;
        if (ko.stagnation_window == 0)
            ko.stagnation_window = S->cost_ordered ? SV_TRY_STAGNATION_BOXED : SV_TRY_STAGNATION;
    }
    /* the caller's monitors, through the solver: they learn the attempt's name and a stop
     * ends the chain */
    ko.monitor = sap__solver_has_monitor(S) ? sap__solver_krylov_monitor : NULL;
    ko.monitor_state = S;
    SAP_TRY(sap_krylov_create(x, &ko, &a->kry));
cleanup:
    return st;
}

sap_status sap__solver_krylov_reject(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    if (a->boosted > SV_BOOST_FRACTION * (double)S->A->nrows && !a->final) {
        *reject = 1;
        snprintf(note, nl, "%lld boosted pivots > 1%% of N", (long long)a->boosted);
        return SAP_WARN_BOOSTED_PIVOTS;
    }
    return SAP_OK;
}

void sap__solver_krylov_destroy(sap_solver *S, sap__attempt *a)
{
    (void)S;
    sap_krylov_destroy(a->kry);
    sap_precond_destroy(a->pc);
    sap_matrix_destroy(a->M);
    a->kry = NULL;
    a->pc = NULL;
    a->M = NULL;
}

void sap__solver_krylov_report(const sap__attempt *a, int with_precision, char *buf, size_t size)
{
    const char *k = a->cg ? "CG" : a->rich ? "Richardson, BiCGStab(2) below 4x a step" : "BiCGStab(2)";
    if (with_precision) snprintf(buf, size, "%s, %s", a->prec == SAP_FLOAT ? "float" : "double", k);
    else snprintf(buf, size, "%s", k);
}

/* One column into the attempt's system: bh = the reordered rhs, yh = the initial guess
 * there (x0 in the original order, NULL = 0; the probe's iterate of this very b where the
 * caller gave none); tmp: n of scratch.  y_zero (may be NULL): set to 1 where the guess is
 * zero, yh then left unwritten (the Krylov solve starts from zero without reading it). */
static sap_status pass_in(sap_solver *S, sap__attempt *a, const double *rhs, const double *x0, double *bh, double *yh,
                          double *tmp, int *y_zero)
{
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    SAP_TRY(sap_reorder_apply_rhs(S->R, rhs, bh));
    /* the probe started from zero too */
    int zero = S->probe_y != NULL;
    for (sap_int i = 0; x0 && zero && i < n; i++) zero = x0[i] == 0.0;
    if (zero && sap__solver_probe_guess(S, rhs, yh)) {
        const size_t l = strlen(a->note);
        snprintf(a->note + l, sizeof(a->note) - l, "%sfrom the probe's %.4g it", l ? "; " : "", S->probe_y_it);
    } else if (x0) {
        SAP_TRY(sap_reorder_apply_solution(S->R, x0, yh));
    } else if (y_zero) {
        *y_zero = 1; /* the Krylov solve starts from zero: yh is not read */
    } else {
        memset(yh, 0, sizeof(double) * (size_t)n);
    }
    if (a->t) {
        for (sap_int i = 0; i < n; i++) tmp[i] = bh[a->t[i]];
        memcpy(bh, tmp, sizeof(double) * (size_t)n);
        if (!(y_zero && *y_zero)) {
            for (sap_int i = 0; i < n; i++) tmp[i] = yh[a->t[i]];
            memcpy(yh, tmp, sizeof(double) * (size_t)n);
        }
    }
cleanup:
    return st;
}

/* The attempt's solution yh (overwritten) back to x in the original order. */
static sap_status pass_out(sap_solver *S, sap__attempt *a, double *yh, double *x, double *tmp)
{
    const sap_int n = S->A->nrows;
    if (a->t) {
        for (sap_int i = 0; i < n; i++) tmp[a->t[i]] = yh[i];
        memcpy(yh, tmp, sizeof(double) * (size_t)n);
    }
    return sap_reorder_undo_solution(S->R, yh, x);
}

/* The attempt's Krylov matrix holds every entry of the reordered A (sap__solver_att_full:
 * A_att(i, j) = r[p[t[i]]] A(p[t[i]], q[t[j]]) c[q[t[j]]], t the third stage's), so its
 * true residual r' = D P (b - A x) is the original one's, rows permuted and scaled by D =
 * r[p[t[i]]]: the 2-norm does not see the permutations, and the row scaling is undone by
 * the weights w = 1 / D given to the Krylov method (sap__krylov_set_weights), which then
 * computes ||w .* r'|| / ||w .* b'|| = ||b - A x|| / ||b|| on the backend.  Not for a solver
 * on the caller's device arrays (its Krylov matrix may be the original order's while the
 * host solve reorders). */
#define SV_WEIGHT_RANGE 1e100 /* scaling factors beyond it: the host residual (overflow) */
static sap_status krylov_weights(sap_solver *S, sap__attempt *a)
{
    const sap_reorder_result *R = S->R;
    const sap_int n = S->A->nrows;
    if (S->dev || !R->row_scale || a->kry->has_w) return SAP_OK;
    sap_status st = SAP_OK;
    double *w = NULL;
    /* extreme factors: x = c .* y may overflow where y does not, and A x's terms in the
     * original units with it; the host residual decides then */
    for (sap_int i = 0; i < n; i++) {
        const double r = R->row_scale[i], c = R->col_scale ? R->col_scale[i] : 1.0;
        if (!(r >= 1 / SV_WEIGHT_RANGE && r <= SV_WEIGHT_RANGE && c >= 1 / SV_WEIGHT_RANGE && c <= SV_WEIGHT_RANGE))
            return SAP_OK;
    }
    SAP_ALLOC(S->ctx, w, n > 0 ? n : 1);
    for (sap_int i = 0; i < n; i++) w[i] = 1.0 / R->row_scale[R->row_perm[a->t ? a->t[i] : i]];
    SAP_TRY(sap__krylov_set_weights(a->kry, w, n));
cleanup:
    sap__free(S->ctx, w);
    return st;
}

/* The original system's true residual of column c of the last Krylov solve (ks: its
 * statistics; x: the column in the original order), or NaN where it is not known on the
 * backend (or x is not finite: the host residual reports it). */
static double original_rel(sap_solver *S, sap__attempt *a, sap_int c, const sap_krylov_stats *ks, const double *x)
{
    const sap_int n = S->A->nrows;
    for (sap_int i = 0; i < n; i++)
        if (!isfinite(x[i])) return NAN;
    if (S->dev) {
        const sap_reorder_result *R = S->R;
        const int same = R->A == S->A && !R->row_scale && !R->col_scale && !a->t && sap__solver_att_full(S, a) == S->A;
        return same ? ks->true_residual : NAN;
    }
    return S->R->row_scale ? sap__krylov_weighted_residual(a->kry, c) : ks->true_residual;
}

/* One column: x = A^{-1} rhs approximately (x0: initial guess in the original order,
 * NULL = 0).  Returns the Krylov status. */
static sap_status krylov_pass(sap_solver *S, sap__attempt *a, const double *rhs, const double *x0, double *x,
                              double *iters, double *tkry)
{
    const sap_int n = S->A->nrows;
    double *bh = S->w + 2 * n, *yh = S->w + 3 * n, *tmp = S->w + 4 * n;
    /* b and y in the backend's page-locked buffers when it lends them (device.h host_lend) */
    const sap_backend_ops *ops = sap__ops(S->ctx);
    void *pin[2] = {NULL, NULL};
    const int lent = n > 0 && ops->host_lend && ops->host_lend(S->ctx, sizeof(double) * (size_t)n, 2, pin);
    if (lent) {
        bh = pin[0];
        yh = pin[1];
    }
    sap_status st = SAP_OK;
    int y_zero = 0;
    SAP_TRY(pass_in(S, a, rhs, x0, bh, yh, tmp, &y_zero));
    SAP_TRY(krylov_weights(S, a));
    double t0 = sap__wtime();
    sap_krylov_stats ks;
    sap_status ksv = y_zero ? sap__krylov_solve_zero(a->kry, a->M, a->pc, bh, yh, &ks)
                            : sap_krylov_solve(a->kry, a->M, a->pc, bh, yh, &ks);
    if (iters) *iters += ks.iterations;
    if (ksv < 0 && ksv != SAP_ERR_BREAKDOWN) {
        st = ksv;
        goto cleanup;
    }
    st = ksv;
    if (tkry) *tkry += sap__wtime() - t0;
    sap_status s2 = pass_out(S, a, yh, x, tmp);
    if (s2 < 0) st = s2;
    a->true_rel = original_rel(S, a, 0, &ks, x);
cleanup:
    if (lent) ops->host_return(S->ctx);
    return st;
}

/* m > 1 columns at once (sap_krylov_solve_many: the lockstep form of the attempt's Krylov
 * method, one pass of the SaP preconditioner over its factors for all columns).  The
 * original system's true residuals go to a->true_rels when the caller gave it room. */
static sap_status krylov_pass_many(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                                   const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters, double *tkry)
{
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    double *tmp = S->w + 4 * n, *Bh = NULL, *Yh = NULL;
    sap_krylov_stats *ks = NULL;
    sap_status st = SAP_OK;
    SAP_TRY(sap__solver_batch_work(S, 1, 2 * (size_t)n * (size_t)m + 1, &Bh));
    Yh = Bh + (size_t)n * (size_t)m;
    SAP_ALLOC(ctx, ks, m);
    for (sap_int c = 0; c < m; c++)
        SAP_TRY(pass_in(S, a, R + c * ldr, X0 ? X0 + c * ldx0 : NULL, Bh + c * n, Yh + c * n, tmp, NULL));
    SAP_TRY(krylov_weights(S, a));
    double t0 = sap__wtime();
    sap_status ksv = sap_krylov_solve_many(a->kry, a->M, a->pc, m, Bh, n, Yh, n, ks);
    if (tkry) *tkry += sap__wtime() - t0;
    for (sap_int c = 0; c < m && iters; c++) *iters += ks[c].iterations;
    if (ksv < 0 && ksv != SAP_ERR_BREAKDOWN) {
        st = ksv;
        goto cleanup;
    }
    st = ksv;
    for (sap_int c = 0; c < m; c++) {
        sap_status s2 = pass_out(S, a, Yh + c * n, X + c * ldx, tmp);
        if (s2 < 0) {
            st = s2;
            goto cleanup;
        }
        if (a->true_rels) a->true_rels[c] = original_rel(S, a, c, &ks[c], X + c * ldx);
    }
cleanup:
    sap__free(ctx, ks);
    return st;
}

sap_status sap__solver_krylov_solve(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                                    const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters,
                                    double *tkry)
{
    sap_status st = SAP_OK;
    if (!a->M) { /* a device-array solver solving through the host: its own copy of A now */
        sap_context_stats c0, c1;
        sap_band_source src;
        sap_context_get_stats(S->x, &c0);
        st = sap__solver_band_matrix(S->x, sap__solver_att_full(S, a), &a->M, &src);
        if (st < 0) return st;
        sap_context_get_stats(S->x, &c1);
        sap__solver_dev_count_a(S, c1.h2d_bytes - c0.h2d_bytes);
    }
    if (m > 1 && a->type->batch) return krylov_pass_many(S, a, m, R, ldr, X0, ldx0, X, ldx, iters, tkry);
    for (sap_int c = 0; c < m; c++) {
        sap_status sc = krylov_pass(S, a, R + c * ldr, X0 ? X0 + c * ldx0 : NULL, X + c * ldx, iters, tkry);
        if (sc < 0 && sc != SAP_ERR_BREAKDOWN) return sc;
        if (sc != SAP_OK && st == SAP_OK) st = sc;
    }
    return st;
}
