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

int sap__solver_has_monitor(const sap_solver *S)
{
    return S->opt.monitor || S->opt.krylov.monitor || S->opt.interrupt;
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
        char t[32], why[200], band[160], msg[SAP_ERRMSG_LEN];
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
