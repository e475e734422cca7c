/* solver_monitor.c -- what the sparse solver says while it works and how it is stopped:
 * the long-step warning (an attempt's setup predicted to take more than opt.long_step
 * seconds is announced before it starts: what, why, the estimate), the monitor's setup
 * events, and the Krylov monitor that forwards every Krylov step to the caller's monitors
 * with the attempt's name.  A monitor returning non-zero marks the solver interrupted: the
 * current solve stops with the best x so far and no other method of the chain is tried (a
 * stop is the caller's decision, not a failure of the method). */
#include "solver/solver_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void sap__solver_fmt_seconds(double s, char *buf, size_t size)
{
    if (s < 10) snprintf(buf, size, "%.2g s", s);
    else if (s < 120) snprintf(buf, size, "%.0f s", s);
    else if (s < 7200) snprintf(buf, size, "%.0f min", s / 60);
    else snprintf(buf, size, "%.1f h", s / 3600);
}

/* ---- the time box --------------------------------------------------------------------- */

sap_solver_method sap__solver_next_direct(const sap_solver *S, int i)
{
    for (int j = i + 1; j < S->nchain; j++) {
        const sap__solver_method_type *t = sap__solver_method_get(S->chain[j]);
        if (t && t->direct && t->band == SAP__SM_BAND_NONE) return S->chain[j];
    }
    return SAP_METHOD_AUTO;
}

/* S->pred[j] of the sparse direct method at chain index j: a method the plan did not
 * analyse is analysed now (once per setup; its time is the direct method's work, not the
 * attempt a's) */
static double chain_pred(sap_solver *S, sap__attempt *a, int j)
{
    if (S->pred[j] <= 0 && !S->dpred_done) {
        const double t0 = sap__wtime();
        S->pred[j] = sap__solver_direct_predict(S, S->chain[j]);
        if (a) a->t_start += sap__wtime() - t0;
    } else if (S->pred[j] <= 0) {
        S->pred[j] = sap__solver_direct_predict(S, S->chain[j]); /* analysed: no work */
    }
    return S->pred[j];
}

double sap__solver_direct_after(sap_solver *S, sap__attempt *a, int i, sap_solver_method *m)
{
    double best = -1;
    *m = SAP_METHOD_AUTO;
    if (!S->cost_ordered) { /* the fallback order: its next sparse direct method */
        const sap_solver_method md = sap__solver_next_direct(S, i);
        if (md == SAP_METHOD_AUTO) return -1;
        const double t0 = sap__wtime();
        best = sap__solver_direct_predict(S, md);
        if (a) a->t_start += sap__wtime() - t0;
        if (best > 0) *m = md;
        return best;
    }
    for (int j = i + 1; j < S->nchain; j++) {
        const sap__solver_method_type *tj = sap__solver_method_get(S->chain[j]);
        if (!tj || !tj->direct || tj->band != SAP__SM_BAND_NONE) continue;
        const double p = chain_pred(S, a, j);
        if (p > 0 && (best < 0 || p < best)) {
            best = p;
            *m = S->chain[j];
        }
    }
    return best;
}

double sap__solver_budget(sap_solver *S, sap__attempt *a, int i, char *why, size_t wl)
{
    if (why && wl) why[0] = 0;
    if (a->budget_set) return a->budget;
    a->budget_set = 1;
    a->budget = 0;
    const double tb = S->opt.time_budget;
    /* an attempt that has a fallback, not a sparse direct one (band-pivot's setup is
     * compared with it; the iterative ones are also stopped by it) */
    if (a->final || (a->type->direct && a->type->band == SAP__SM_BAND_NONE) || tb < 0 || !S->opt.fallback) return 0;
    if (tb > 0) {
        a->budget = tb;
        if (why && wl) snprintf(why, wl, "time_budget %.3g s given", tb);
        return a->budget;
    }
    /* a method the caller asked for is not cut by an automatic budget (only a given one) */
    if (i == 0 && S->opt.method != SAP_METHOD_AUTO) return 0;
    /* the cost model's order: the best prediction of the methods after it */
    if (S->cost_ordered) {
        int jb = -1;
        /* a band method is not cut for another band method: their predictions share the band's
         * assembly and upload, and cutting one to start the next pays that part twice (the
         * fallback between them is for failures: boosted pivots, stagnation) */
        const int band_i = a->type && a->type->band != SAP__SM_BAND_NONE;
        for (int j = i + 1; j < S->nchain; j++) {
            const sap__solver_method_type *tj = sap__solver_method_get(S->chain[j]);
            if (band_i && tj && tj->band != SAP__SM_BAND_NONE) continue;
            if (tj && tj->direct && tj->band == SAP__SM_BAND_NONE) chain_pred(S, a, j);
            if (S->pred[j] > 0 && (jb < 0 || S->pred[j] < S->pred[jb])) jb = j;
        }
        if (jb >= 0) {
            a->budget = SV_BUDGET_FACTOR * S->pred[jb];
            if (a->budget < SV_BUDGET_MIN) a->budget = SV_BUDGET_MIN;
            if (why && wl)
                snprintf(why, wl, "%.2gx %s %.2g s", SV_BUDGET_FACTOR, sap_solver_method_name(S->chain[jb]), S->pred[jb]);
            return a->budget;
        }
    }
    const sap_solver_method m = sap__solver_next_direct(S, i);
    if (m == SAP_METHOD_AUTO) return 0;
    const double t0 = sap__wtime();
    const double p = sap__solver_direct_predict(S, m);
    /* the analysis is the direct method's work, not this attempt's */
    a->t_start += sap__wtime() - t0;
    if (p < 0) return 0;
    a->budget = SV_BUDGET_FACTOR * p;
    if (a->budget < SV_BUDGET_MIN) a->budget = SV_BUDGET_MIN;
    if (why && wl) snprintf(why, wl, "%.2gx %s %.2g s", SV_BUDGET_FACTOR, sap_solver_method_name(m), p);
    return a->budget;
}

/* The attempt's budget in stats.tried. */
static void note_budget(sap_solver *S, const sap__attempt *a)
{
    if (a->itry >= 0 && a->itry < S->stats.ntries) S->stats.tried[a->itry].budget = a->budget;
}

#define SV_SLOPE_WINDOW 32

/* The least any sparse direct method after chain index i can take (0: none). */
double sap__solver_direct_floor_after(const sap_solver *S, int i)
{
    double f = -1;
    for (int j = i + 1; j < S->nchain; j++) {
        const sap__solver_method_type *tj = sap__solver_method_get(S->chain[j]);
        if (!tj || !tj->direct || tj->band != SAP__SM_BAND_NONE) continue;
        const double fj = sap__solver_direct_floor(S, S->chain[j]);
        if (f < 0 || fj < f) f = fj;
    }
    return f > 0 ? f : 0;
}

/* Seconds the attempts before a spent (their setup and steps): the rent already paid
 * towards the sparse direct method after them. */
static double spent_before(const sap_solver *S, const sap__attempt *a)
{
    double t = 0;
    for (int k = 0; k < a->itry && k < S->stats.ntries; k++) {
        const sap__solver_method_type *tk = sap__solver_method_get(S->stats.tried[k].method);
        if (tk && !(tk->direct && tk->band == SAP__SM_BAND_NONE)) t += S->stats.tried[k].time;
    }
    return t;
}

/* Before the steps that make a slope: 1 when the attempt is far behind the cost model's
 * prediction (a SaP-C step of 37 ms where the model said 1 ms: airfoil_2d) and past the
 * noise of a loaded host (SV_LEARN_MIN), not near tol, and the direct method after it is
 * predicted to cost no more than the chain has spent (the rent is paid). */
static int behind_cut(sap_solver *S, sap__attempt *a, double now)
{
    const double el = now - a->t_start;
    if (S->slope_n < 2 || S->slope_n >= SV_LEARN_STEPS || S->opt.method != SAP_METHOD_AUTO || !S->cost_ordered ||
        S->ichain >= SV_MAX_CHAIN || S->pred[S->ichain] <= 0 || a->predicted <= 0 || el <= SV_LEARN_MIN ||
        el <= SV_LEARN_BEHIND * a->predicted)
        return 0;
    const int newest = (S->slope_n - 1) % SV_SLOPE_WINDOW;
    const double tol = S->opt.krylov.tol > 0 ? S->opt.krylov.tol : 1e-300;
    if (log10(tol) - S->slope_r[newest] >= -SV_LEARN_NEAR || el < sap__solver_direct_floor_after(S, S->ichain) ||
        el + spent_before(S, a) < sap__solver_direct_analysis_guess(S))
        return 0;
    sap_solver_method md;
    const double pd = sap__solver_direct_after(S, a, S->ichain, &md);
    const double el2 = now - a->t_start; /* without that analysis */
    if (pd <= 0 || el2 + spent_before(S, a) < pd) return 0;
    if (a->type && a->type->band != SAP__SM_BAND_NONE && el2 / a->predicted > S->learn_miss)
        S->learn_miss = el2 / a->predicted; /* the band methods after it: as in the slope's cut */
    S->budget_stop = 3;
    snprintf(S->budget_note, sizeof(S->budget_note), "learned at %.2g s: %.2gx its prediction %.2g s, %s %.2g s", el2,
             el2 / a->predicted, a->predicted, sap_solver_method_name(md), pd);
    return 1;
}

/* Learning from the first steps (SV_LEARN_*): 1 when the attempt's extrapolated rest is
 * far beyond the sparse direct method's prediction (S->budget_stop = 3, budget_note; the
 * band methods after it learn the miss, S->learn_miss). */
static int learned_cut(sap_solver *S, sap__attempt *a, double now)
{
    /* automatic attempts of the cost model's order only (a given budget or method rules) */
    if (S->opt.time_budget != 0 || (S->ichain == 0 && S->opt.method != SAP_METHOD_AUTO)) return 0;
    if (behind_cut(S, a, now)) return 1;
    if (S->slope_n < SV_LEARN_STEPS) return 0;
    const int w = S->slope_n < SV_SLOPE_WINDOW ? S->slope_n : SV_SLOPE_WINDOW;
    const int newest = (S->slope_n - 1) % SV_SLOPE_WINDOW, ref = (S->slope_n - 1 - w / 2) % SV_SLOPE_WINDOW;
    const double dt = S->slope_t[newest] - S->slope_t[ref];
    if (dt <= 0) return 0;
    const double tol = S->opt.krylov.tol > 0 ? S->opt.krylov.tol : 1e-300;
    const double need = log10(tol) - S->slope_r[newest]; /* decades still to go, < 0 */
    if (need >= -SV_LEARN_NEAR) return 0; /* about to finish: within SV_LEARN_NEAR decades of tol */
    const double done = S->slope_r0 - S->slope_r[newest], its = S->slope_it[newest] - S->slope_it0;
    if (done > 0 && its > 0 && -need / (done / its) <= its) return 0; /* past half way at its average pace */
    const double rate = (S->slope_r[newest] - S->slope_r[ref]) / dt; /* decades a second, < 0 falling */
    /* not falling: stagnation needs twice the evidence (BiCGStab's residual is erratic), and
     * an attempt the probe saw converge is not cut for a plateau before its predicted time
     * (airfoil_2d: Jacobi's BiCGStab(2) flat for a few steps at 0.048 s of a predicted
     * 0.11 s, converged at 0.077 s; the direct solve after it took 0.1 s) */
    if (rate >= 0 && (S->slope_n < 2 * SV_LEARN_STEPS || now - a->t_start < a->predicted)) return 0;
    const double rest = rate < 0 ? need / rate : INFINITY;
    if (rest <= SV_LEARN_MIN) return 0; /* about to finish */
    /* rent or buy: not before the chain's attempts have spent SV_LEARN_SPENT of the direct
     * prediction, this one and those cut or failed before it (first against the least any
     * direct method can take: no analysis for a young attempt) */
    const double before = spent_before(S, a), floor = sap__solver_direct_floor_after(S, S->ichain);
    double el = now - a->t_start;
    if (el + before < SV_LEARN_SPENT * floor) return 0;
    /* a rest within the margin of the least any direct method can take is never cut: no
     * analysis for it (on convdiff3d_40 the host analysis, 0.2 s, came in the middle of a
     * 30 ms Jacobi solve) */
    if (!S->dpred_done && rest <= SV_LEARN_MARGIN * floor) return 0;
    /* nor is the analysis asked for before the chain has spent what it is expected to cost */
    if (el + before < sap__solver_direct_analysis_guess(S)) return 0;
    sap_solver_method md;
    const double pd = sap__solver_direct_after(S, a, S->ichain, &md);
    el = now - a->t_start; /* without the analysis that prediction may have cost */
    if (pd <= 0 || rest <= SV_LEARN_MARGIN * pd || el + before < SV_LEARN_SPENT * pd) return 0;
    const double dit = S->slope_it[newest] - S->slope_it[ref];
    if (a->predicted > 0 && a->type && a->type->band != SAP__SM_BAND_NONE) {
        const double miss = (el + (isfinite(rest) ? rest : 10.0 * el)) / a->predicted;
        if (miss > S->learn_miss) S->learn_miss = miss;
    }
    S->budget_stop = 3;
    if (isfinite(rest))
        snprintf(S->budget_note, sizeof(S->budget_note),
                 "learned at %.2g s: %.2g ms/it, rest ~%.2g s > %.2gx %s %.2g s", el, dit > 0 ? 1e3 * dt / dit : 0.0,
                 rest, SV_LEARN_MARGIN, sap_solver_method_name(md), pd);
    else
        snprintf(S->budget_note, sizeof(S->budget_note), "learned at %.2g s: residual not falling; %s %.2g s", el,
                 sap_solver_method_name(md), pd);
    return 1;
}

/* 1 when the current attempt must stop: out of time, or its residual slope over the last
 * SV_SLOPE_WINDOW steps predicts it would be (S->budget_stop, S->budget_note). */
static int over_budget(sap_solver *S, double iteration, double relres)
{
    sap__attempt *a = S->att;
    if (!a || a->final || (a->budget_set && a->budget <= 0)) return 0;
    const double now = sap__wtime();
    /* the residual history of this Krylov solve (a new solve restarts the count) */
    if (iteration < S->slope_last_it) S->slope_n = 0;
    S->slope_last_it = iteration;
    const double lr = relres > 0 ? log10(relres) : -300;
    S->slope_t[S->slope_n % SV_SLOPE_WINDOW] = now;
    S->slope_r[S->slope_n % SV_SLOPE_WINDOW] = lr;
    S->slope_it[S->slope_n % SV_SLOPE_WINDOW] = iteration;
    if (S->slope_n == 0) S->slope_r0 = lr, S->slope_it0 = iteration;
    S->slope_n++;
    if (learned_cut(S, a, now)) return 1;
    if (!a->budget_set) {
        /* an automatic budget costs an analysis: not for an attempt that ends soon */
        if (now - a->t_start < SV_BUDGET_CHECK || now - a->t_start < sap__solver_direct_analysis_guess(S)) return 0;
        sap__solver_budget(S, a, S->ichain, NULL, 0);
        note_budget(S, a);
        if (a->budget <= 0) return 0;
    }
    const double el = now - a->t_start;
    if (el > a->budget) {
        S->budget_stop = 1;
        snprintf(S->budget_note, sizeof(S->budget_note), "out of time: %.2g s > budget %.2g s", el, a->budget);
        return 1;
    }
    if (S->slope_n >= SV_SLOPE_WINDOW && el > 0.25 * a->budget) {
        const int newest = (S->slope_n - 1) % SV_SLOPE_WINDOW, oldest = S->slope_n % SV_SLOPE_WINDOW;
        const double dt = S->slope_t[newest] - S->slope_t[oldest];
        const double rate = dt > 0 ? (S->slope_r[newest] - S->slope_r[oldest]) / dt : 0; /* decades per second */
        const double tol = S->opt.krylov.tol > 0 ? S->opt.krylov.tol : 1e-300;
        const double need = log10(tol) - S->slope_r[newest]; /* < 0 */
        if (need < 0 && (rate >= 0 || el + need / rate > a->budget)) {
            S->budget_stop = 2;
            if (rate >= 0)
                snprintf(S->budget_note, sizeof(S->budget_note), "stagnating at %.2g s (budget %.2g s)", el,
                         a->budget);
            else
                snprintf(S->budget_note, sizeof(S->budget_note), "slow: needs ~%.2g s more, budget %.2g s",
                         need / rate, a->budget);
            return 1;
        }
    }
    return 0;
}

int sap__solver_has_monitor(const sap_solver *S)
{
    return S->opt.monitor || S->opt.krylov.monitor || S->opt.interrupt || (S->opt.time_budget >= 0 && S->opt.fallback);
}

static int flag_raised(const sap_solver *S) { return S->opt.interrupt && *S->opt.interrupt; }

void sap__solver_stop_flag(sap_solver *S, int on)
{
    const volatile sig_atomic_t *f = on ? S->opt.interrupt : NULL;
    S->ctx->stop_flag = f;
    if (S->x) S->x->stop_flag = f;
}

int sap__solver_krylov_monitor(void *state, double iteration, double relres)
{
    sap_solver *S = state;
    int stop = flag_raised(S);
    if (!stop && over_budget(S, iteration, relres)) return 1;
    if (S->opt.krylov.monitor) stop |= S->opt.krylov.monitor(S->opt.krylov.monitor_state, iteration, relres) != 0;
    if (S->opt.monitor) {
        const sap_solver_progress p = {S->att ? sap_solver_method_name(S->att->method) : "sap_solver", 0, 0.0,
                                       iteration, relres};
        stop |= S->opt.monitor(S->opt.monitor_state, &p) != 0;
    }
    if (stop) S->interrupted = 1;
    return stop;
}

/* A warning that shows also inside an attempt that has a fallback, whose expected
 * failures are not printed (sap__try_begin): the user must hear of hours of work. */
static void warn_always(sap_solver *S, const char *msg)
{
    sap_context *c = S->ctx;
    const int depth = c->try_depth;
    c->try_depth = 0;
    sap__log(c, SAP_PRINT_WARNINGS, "%s", msg);
    c->try_depth = depth;
}

int sap__solver_before_build(sap_solver *S, const sap__attempt *a, int i, const char *note)
{
    const sap__sm_estimate e = sap__solver_estimate_all(S, a->method, a->P, a->K, a->prec);
    const char *name = sap_solver_method_name(a->method);
    if (S->opt.long_step > 0 && e.seconds > S->opt.long_step) {
        char t[32], why[256], band[160], msg[SAP_ERRMSG_LEN];
        sap__solver_fmt_seconds(e.seconds, t, sizeof(t));
        if (i == 0) snprintf(why, sizeof(why), "%s", S->why_first);
        else
            snprintf(why, sizeof(why), "fallback %d of the chain (%s failed)", i,
                     sap_solver_method_name(S->chain[i - 1]));
        if (note && note[0]) snprintf(band, sizeof(band), "%s", note);
        else if (a->type->band == SAP__SM_BAND_AUTO)
            snprintf(band, sizeof(band), "K_cm %lld, %s", (long long)S->K_cm, S->drop_why);
        else snprintf(band, sizeof(band), "the whole CM band, K_cm %lld", (long long)S->K_cm);
        snprintf(msg, sizeof(msg),
                 "sap_solver: long step: %s setup predicted to take ~%s (band factorization of N = %lld, K = %lld, "
                 "P = %lld, %s: %.2g flop, %.2g GB on %s); why: %s; band: %s; a factorization cannot be "
                 "interrupted before it ends on a GPU (cpu: sap_solver_options.interrupt, SIGINT from the command "
                 "line; a narrower band: drop_delta; another method: method)",
                 name, t, (long long)S->A->nrows, (long long)a->K, (long long)a->P,
                 a->prec == SAP_FLOAT ? "float" : "double", e.flops, (double)e.bytes / 1e9,
                 sap_context_device_name(S->x), why, band);
        warn_always(S, msg);
    }
    if (flag_raised(S)) {
        S->interrupted = 1;
        return 1;
    }
    if (!S->opt.monitor) return 0;
    const sap_solver_progress p = {name, 1, e.seconds, 0.0, NAN};
    if (S->opt.monitor(S->opt.monitor_state, &p)) {
        S->interrupted = 1;
        return 1;
    }
    return 0;
}
