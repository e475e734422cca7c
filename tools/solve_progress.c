/* solve_progress.c -- owns the progress line of `sap solve` on a terminal: the Krylov
 * monitor that redraws "method: iteration ... relative residual ..." on stderr, and its
 * clean-up.  Also the clock the solve timings use. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "solve.h"

#include <stdio.h>
#include <time.h>

double solve_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int solve_progress_monitor(void *state, double iteration, double relres)
{
    solve_progress *p = state;
    if (!p->live) return 0;
    double t = solve_now();
    if (t - p->last < 0.1) return 0;
    p->last = t;
    p->shown = 1;
    fprintf(stderr, "\r%s: iteration %10.2f  relative residual %.3e ", p->method, iteration, relres);
    fflush(stderr);
    return 0;
}

void solve_progress_clear(solve_progress *p)
{
    if (p->live && p->shown) fprintf(stderr, "\r%78s\r", "");
}
