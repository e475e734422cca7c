/* solve_progress.c -- owns what `sap solve` shows while it works and how it is stopped: the
 * progress line on a terminal (the Krylov monitor of the explicit path, the sap_solver
 * monitor of the pipeline with the attempt's name and its setups), the refusal of a step
 * predicted above SAP_SOLVE_REFUSE without --force, and SIGINT: the first one makes the
 * monitors return non-zero (the library then stops with SAP_WARN_INTERRUPTED and the best x
 * so far, and tries no fallback), a second one terminates at once.  Also the clock the solve
 * timings use. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sigaction under -std=c11 */
#include "solve.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double solve_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void solve_fmt_seconds(double s, char *buf, size_t size)
{
    if (s < 10) snprintf(buf, size, "%.2g s", s);
    else if (s < 120) snprintf(buf, size, "%.0f s", s);
    else if (s < 7200) snprintf(buf, size, "%.0f min", s / 60);
    else snprintf(buf, size, "%.1f h", s / 3600);
}

/* ---- SIGINT -------------------------------------------------------------------------------- */

static volatile sig_atomic_t got_sigint;
static struct sigaction old_action;
static int installed;

static void on_sigint(int sig)
{
    (void)sig;
    got_sigint = 1;
    static const char msg[] = "\nsap solve: SIGINT: stopping at the next check with the best x so far "
                              "(SIGINT again exits at once)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1); /* async-signal-safe */
    (void)w;
}

void solve_interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND; /* the second SIGINT gets the default action: terminate */
    got_sigint = 0;
    installed = sigaction(SIGINT, &sa, &old_action) == 0;
}

void solve_interrupt_restore(void)
{
    if (installed) sigaction(SIGINT, &old_action, NULL);
    installed = 0;
}

int solve_interrupted(void) { return got_sigint != 0; }

const volatile sig_atomic_t *solve_interrupt_flag(void) { return &got_sigint; }

/* ---- the progress line --------------------------------------------------------------------- */

static void draw(solve_progress *p, const char *step, double iteration, double relres)
{
    double t = solve_now();
    if (t - p->last < 0.1) return;
    p->last = t;
    p->shown = 1;
    char el[32];
    if (t - p->start < 120) snprintf(el, sizeof(el), "%.1f s", t - p->start);
    else solve_fmt_seconds(t - p->start, el, sizeof(el));
    fprintf(stderr, "\r%s: iteration %10.2f  relative residual %.3e  elapsed %s ", step, iteration, relres, el);
    fflush(stderr);
}

int solve_progress_monitor(void *state, double iteration, double relres)
{
    solve_progress *p = state;
    if (got_sigint) return 1;
    if (p->start == 0) p->start = solve_now();
    if (p->live) draw(p, p->method, iteration, relres);
    return 0;
}

int solve_progress_solver_monitor(void *state, const sap_solver_progress *e)
{
    solve_progress *p = state;
    if (got_sigint) return 1;
    if (p->start == 0) p->start = solve_now();
    if (e->setup) {
        char t[32];
        solve_fmt_seconds(e->predicted_seconds, t, sizeof(t));
        if (e->predicted_seconds > SAP_SOLVE_REFUSE && !p->force) {
            snprintf(p->refused, sizeof(p->refused), "%s setup predicted to take ~%s", e->step, t);
            return 1;
        }
        if (p->live) {
            char pred[48] = "";
            if (e->predicted_seconds >= 1) snprintf(pred, sizeof(pred), " (predicted ~%s)", t);
            fprintf(stderr, "\r%78s\r%s: setup%s ", "", e->step, pred);
            fflush(stderr);
            p->shown = 1;
            p->last = 0;
        }
        return 0;
    }
    if (p->live) draw(p, e->step, e->iteration, e->relative_residual);
    return 0;
}

void solve_progress_clear(solve_progress *p)
{
    if (p->live && p->shown) fprintf(stderr, "\r%78s\r", "");
    p->shown = 0;
}
