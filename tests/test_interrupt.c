/* test_interrupt.c -- long work is visible and interruptible (issue 13 item 3), cpu backend:
 *  - a sap_krylov_monitor returning non-zero after N calls stops sap_krylov_solve with
 *    SAP_WARN_INTERRUPTED, x the best iterate (finite true residual, as the stats say);
 *  - sap_solver: its monitor (sap_solver_options.monitor) sees the setup event of the
 *    attempt, then its Krylov steps under the attempt's name; a non-zero return stops the
 *    solve with SAP_WARN_INTERRUPTED and the best x (stats.relative_residual its true
 *    residual), and no fallback is tried (stats.ntries == 1) although a forced sap-d has a
 *    chain after it; the same through sap_solver_options.krylov.monitor;
 *  - a stop at the setup event builds nothing: x keeps the initial guess, the residual is
 *    its own, and the next solve (monitor now quiet) sets up and converges;
 *  - the long-step warning (SAP_PRINT_WARNINGS, "sap_solver: long step:", captured by the
 *    context's log hook): shown for a forced SaP-D of a wide band (a 3D Poisson matrix with
 *    the whole CM band: minutes on any CPU), also though that attempt has a fallback (its
 *    expected failures are not printed), before the work (the monitor stops it at the setup
 *    event); not shown for a small system, nor with long_step = 0;
 *  - sap_band_estimate_seconds: 0 without a band, growing with K. */
#include "testing.h"

#include "band/band_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the Krylov solver ------------------------------------------------------------------- */

typedef struct kstop {
    int calls, stop_after;
} kstop;

static int krylov_stop(void *state, double iteration, double relres)
{
    (void)iteration;
    (void)relres;
    kstop *k = state;
    return ++k->calls >= k->stop_after;
}

static void test_krylov(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 40, 40, &A));
    if (!A) return;
    const sap_int n = A->nrows;
    double *b = calloc((size_t)n, sizeof(double)), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 7);
    const sap_krylov_type types[] = {SAP_KRYLOV_CG,  SAP_KRYLOV_BICGSTAB, SAP_KRYLOV_BICGSTABL, SAP_KRYLOV_GMRES,
                                     SAP_KRYLOV_BICG, SAP_KRYLOV_CGS,     SAP_KRYLOV_QMR,       SAP_KRYLOV_TFQMR,
                                     SAP_KRYLOV_IR,   SAP_KRYLOV_ASYNC_JACOBI};
    sap_matrix *M = NULL;
    CHECK_OK(ctx, sap_matrix_create(ctx, A, NULL, &M));
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        sap_krylov_options ko;
        sap_krylov_options_init(&ko);
        ko.type = types[t];
        kstop k = {0, 7};
        ko.monitor = krylov_stop;
        ko.monitor_state = &k;
        sap_krylov *K = NULL;
        CHECK_OK(ctx, sap_krylov_create(ctx, &ko, &K));
        memset(x, 0, sizeof(double) * (size_t)n);
        sap_krylov_stats ks;
        CHECK_STATUS(ctx, sap_krylov_solve(K, M, NULL, b, x, &ks), SAP_WARN_INTERRUPTED);
        CHECK(k.calls == 7);
        CHECK(ks.status == SAP_WARN_INTERRUPTED);
        const double res = sap_test_rel_residual(A, x, b);
        /* (the best iterate of a few steps may be worse than x0 = 0: CG's residual is not monotone) */
        CHECK_MSG(isfinite(res) && res > 1e-10, "%s: residual %g", sap_krylov_name(types[t]), res);
        CHECK_CLOSE(res, ks.true_residual, 1e-8);
        CHECK(strstr(sap_context_last_error(ctx), "monitor") != NULL);
        sap_krylov_destroy(K);
    }
    sap_matrix_destroy(M);
    free(b);
    free(x);
    sap_csr_destroy(A);
}

/* ---- the sparse solver's monitor ----------------------------------------------------------- */

typedef struct smon {
    int setups, steps;      /* events seen */
    int stop_at_setup;      /* return non-zero at the first setup event */
    int stop_after;         /* ... after this many Krylov events (0: never) */
    char first_setup[32], last_step[32];
    double predicted;       /* of the last setup event */
    int nan_at_setup;       /* every setup event had a NaN residual */
} smon;

static int solver_monitor(void *state, const sap_solver_progress *p)
{
    smon *m = state;
    if (p->setup) {
        if (!m->setups++) snprintf(m->first_setup, sizeof(m->first_setup), "%s", p->step);
        m->predicted = p->predicted_seconds;
        m->nan_at_setup &= isnan(p->relative_residual);
        return m->stop_at_setup;
    }
    snprintf(m->last_step, sizeof(m->last_step), "%s", p->step);
    ++m->steps;
    return m->stop_after > 0 && m->steps >= m->stop_after;
}

/* A forced SaP-D with many partitions on a 2D Poisson matrix: several BiCGStab(2) / CG
 * iterations, and the whole chain after it (sap-c, band-lu, band-pivot, jacobi). */
static void sapd_options(sap_solver_options *o)
{
    sap_solver_options_init(o);
    CHECK(sap_solver_options_set(o, "method", "sap-d") == SAP_OK);
    CHECK(sap_solver_options_set(o, "partitions", "64") == SAP_OK);
    CHECK(sap_solver_options_set(o, "fallback", "1") == SAP_OK);
    o->krylov.tol = 1e-12;
}

static void test_solver_stop(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 64, 64, &A));
    if (!A) return;
    const sap_int n = A->nrows;
    double *b = calloc((size_t)n, sizeof(double)), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 5);

    /* the reference: it takes more than a few Krylov steps */
    sap_solver_options o;
    sapd_options(&o);
    smon m0 = {.nan_at_setup = 1};
    o.monitor = solver_monitor;
    o.monitor_state = &m0;
    sap_solver *S = NULL;
    sap_solver_stats st;
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    sap_solver_get_stats(S, &st);
    printf("  reference: %s, %.4g iterations, %d setup events, %d Krylov events, step '%s'\n",
           sap_status_name(st.status), st.iterations, m0.setups, m0.steps, m0.last_step);
    CHECK(m0.setups == 1 && strcmp(m0.first_setup, "sap-d") == 0 && m0.nan_at_setup);
    CHECK(strcmp(m0.last_step, "sap-d") == 0);
    CHECK(st.iterations >= 2 && m0.steps >= 8);
    sap_solver_destroy(S);
    S = NULL;

    /* stopped after 3 Krylov events: the best x, no fallback */
    smon m = {.stop_after = 3, .nan_at_setup = 1};
    o.monitor_state = &m;
    memset(x, 0, sizeof(double) * (size_t)n);
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    CHECK_STATUS(ctx, sap_solver_solve(S, b, x), SAP_WARN_INTERRUPTED);
    sap_solver_get_stats(S, &st);
    double res = sap_test_rel_residual(A, x, b);
    printf("  stopped: %s, %d tries, tried[0] %s: %s; residual %.3e\n", sap_status_name(st.status), st.ntries,
           sap_status_name(st.tried[st.ntries - 1].status), st.tried[st.ntries - 1].note, res);
    CHECK(m.steps == 3);
    CHECK(st.status == SAP_WARN_INTERRUPTED);
    CHECK_MSG(st.ntries == 1 && st.tried[0].method == SAP_METHOD_SAPD, "%d tries", st.ntries);
    CHECK(st.tried[0].status == SAP_WARN_INTERRUPTED);
    CHECK_MSG(isfinite(res), "residual %g", res);
    CHECK_CLOSE(res, st.relative_residual, 1e-8);
    CHECK(strstr(sap_context_last_error(ctx), "interrupted") != NULL);
    /* the next solve (monitor quiet) goes on with the same setup and converges */
    m.stop_after = 0;
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    CHECK(sap_test_rel_residual(A, x, b) <= 1e-12 * 1.01);
    sap_solver_destroy(S);
    S = NULL;

    /* the same through krylov.monitor */
    sapd_options(&o);
    kstop k = {0, 3};
    o.krylov.monitor = krylov_stop;
    o.krylov.monitor_state = &k;
    memset(x, 0, sizeof(double) * (size_t)n);
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    CHECK_STATUS(ctx, sap_solver_solve(S, b, x), SAP_WARN_INTERRUPTED);
    sap_solver_get_stats(S, &st);
    CHECK(k.calls == 3 && st.ntries == 1);
    res = sap_test_rel_residual(A, x, b);
    CHECK(isfinite(res));
    sap_solver_destroy(S);
    S = NULL;

    /* stopped at the setup event: nothing built, x is the initial guess */
    sapd_options(&o);
    smon ms = {.stop_at_setup = 1, .nan_at_setup = 1};
    o.monitor = solver_monitor;
    o.monitor_state = &ms;
    for (sap_int i = 0; i < n; i++) x[i] = 0.5;
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    CHECK_STATUS(ctx, sap_solver_solve(S, b, x), SAP_WARN_INTERRUPTED);
    sap_solver_get_stats(S, &st);
    int same = 1;
    for (sap_int i = 0; i < n; i++) same &= x[i] == 0.5;
    CHECK(same);
    CHECK(ms.setups == 1 && ms.steps == 0);
    CHECK(st.ntries == 1 && st.tried[0].status == SAP_WARN_INTERRUPTED);
    CHECK_CLOSE(st.relative_residual, sap_test_rel_residual(A, x, b), 1e-12);
    ms.stop_at_setup = 0;
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    CHECK(ms.setups == 2);
    sap_solver_destroy(S);
    S = NULL;

    /* sap_solver_setup itself */
    ms = (smon){.stop_at_setup = 1, .nan_at_setup = 1};
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    CHECK_STATUS(ctx, sap_solver_setup(S), SAP_WARN_INTERRUPTED);
    sap_solver_destroy(S);

    free(b);
    free(x);
    sap_csr_destroy(A);
}

/* ---- the long-step warning ----------------------------------------------------------------- */

typedef struct logcap {
    int long_steps, warnings;
    char msg[1024];
} logcap;

static void capture(void *state, int level, const char *message)
{
    logcap *c = state;
    if (level == SAP_PRINT_WARNINGS) c->warnings++;
    if (strstr(message, "long step:")) {
        c->long_steps++;
        snprintf(c->msg, sizeof(c->msg), "%s", message);
    }
}

static sap_status run_solver(sap_context *ctx, const sap_csr *A, const sap_solver_options *o)
{
    const sap_int n = A->nrows;
    double *b = calloc((size_t)n, sizeof(double)), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0;
    sap_solver *S = NULL;
    sap_status st = sap_solver_create(ctx, A, o, &S);
    if (st >= 0) st = sap_solver_solve(S, b, x);
    sap_solver_destroy(S);
    free(b);
    free(x);
    return st;
}

static void test_long_step(void)
{
    logcap cap;
    memset(&cap, 0, sizeof(cap));
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.print_level = SAP_PRINT_WARNINGS;
    cfg.log = capture;
    cfg.log_state = &cap;
    sap_context *ctx = NULL;
    CHECK_OK(ctx, sap_context_create(&ctx, &cfg));
    if (!ctx) return;

    /* a small system: quiet */
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 20, 20, &A));
    sap_solver_options o;
    sap_solver_options_init(&o);
    CHECK(o.long_step == 5.0);
    CHECK_OK(ctx, run_solver(ctx, A, &o));
    CHECK_MSG(cap.long_steps == 0, "%s", cap.msg);
    sap_csr_destroy(A);
    A = NULL;

    /* SaP-D of the whole CM band of a 3D Poisson matrix (N = 64000, K ~ 1600) in one
     * partition: 2 N K^2 ~ 3e11 flops of a memory-bound band LU, minutes on any CPU.  The
     * monitor stops it at the setup event: the warning came before, nothing was built. */
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, 40, 40, 40, &A));
    sap_solver_options_init(&o);
    CHECK(sap_solver_options_set(&o, "method", "sap-d") == SAP_OK);
    CHECK(sap_solver_options_set(&o, "drop", "1") == SAP_OK);
    CHECK(sap_solver_options_set(&o, "partitions", "1") == SAP_OK);
    CHECK(sap_solver_options_set(&o, "memory_limit", "1000G") == SAP_OK);
    smon m = {.stop_at_setup = 1, .nan_at_setup = 1};
    o.monitor = solver_monitor;
    o.monitor_state = &m;
    const double t0 = sap_test_wtime();
    CHECK_STATUS(ctx, run_solver(ctx, A, &o), SAP_WARN_INTERRUPTED);
    const double t = sap_test_wtime() - t0;
    printf("  long step (%.2f s, predicted %.3g s): %s\n", t, m.predicted, cap.msg);
    CHECK(cap.long_steps == 1);
    CHECK(strstr(cap.msg, "sap_solver: long step: sap-d setup predicted to take") != NULL);
    CHECK(strstr(cap.msg, "flop") != NULL && strstr(cap.msg, "why: sap-d given") != NULL);
    CHECK(m.setups == 1 && m.predicted > o.long_step); /* measured rates: minutes on a laptop, tens of seconds on a server */
    CHECK(t < m.predicted / 4);

    /* long_step = 0: never */
    memset(&cap, 0, sizeof(cap));
    m = (smon){.stop_at_setup = 1, .nan_at_setup = 1};
    CHECK(sap_solver_options_set(&o, "long_step", "0") == SAP_OK);
    CHECK_STATUS(ctx, run_solver(ctx, A, &o), SAP_WARN_INTERRUPTED);
    CHECK(cap.long_steps == 0 && m.setups == 1);
    CHECK(sap_solver_options_set(&o, "long_step", "-1") == SAP_ERR_INVALID);
    sap_csr_destroy(A);

    /* the rate model */
    CHECK(sap_band_estimate_seconds(ctx, 1000, 0, 0, SAP_DOUBLE) == 0.0);
    CHECK(sap_band_estimate_seconds(NULL, 1000, 10, 0, SAP_DOUBLE) == 0.0);
    const double s1 = sap_band_estimate_seconds(ctx, 20000, 100, 0, SAP_DOUBLE);
    const double s2 = sap_band_estimate_seconds(ctx, 20000, 1000, 0, SAP_DOUBLE);
    const double s3 = sap_band_estimate_seconds(ctx, 20000, 19999, 0, SAP_DOUBLE);
    printf("  sap_band_estimate_seconds N = 20000: K = 100 %.3g s, K = 1000 %.3g s, K = 19999 %.3g s\n", s1, s2, s3);
    CHECK(s1 > 0 && s1 < s2 && s2 < s3);
    /* the case (hours on the SaP kernels of the time): 2 N K^2 = 1.6e13 flop, 400x the
     * K = 1000 work; its seconds follow the dgbtrf rate measured in this process (2-8 GFlop/s
     * a thread on a shared 2-core host: 1e3-4e3 s), so the check is the K^2 growth and at
     * least the minutes that make the long-step warning fire */
    CHECK_MSG(s3 > 100.0 * s2 && s3 > 60.0, "%.3g s (K = 1000: %.3g s)", s3, s2);
    sap_context_destroy(ctx);
}

/* ---- the band factorization: a stop flag polled between partitions and pivot steps ---------- */

static volatile sig_atomic_t stop_flag;

/* raises the flag at the setup event and lets the setup start: the stop comes from inside
 * the band factorization */
static int raise_at_setup(void *state, const sap_solver_progress *p)
{
    int *setups = state;
    if (p->setup) {
        ++*setups;
        stop_flag = 1;
    }
    return 0;
}

static void test_band_stop(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 8000, 40, 1.0, 0, 3, &A));
    if (!A) return;
    const sap_int n = A->nrows;
    /* the driver: SaP-D and SaP-C, P = 1 and 8, float and double; F NULL, nothing kept */
    for (int c = 0; c < 4; c++) {
        sap_band_factor_opts fo = {-1.0, 0.0, c & 1, SAP_BAND_KERNEL_AUTO};
        sap_context_stats s0, s1;
        sap_context_get_stats(ctx, &s0);
        stop_flag = 1;
        ctx->stop_flag = &stop_flag;
        sap_band_fact *F = NULL;
        sap_int dropped = 0;
        sap_status st = sap__band_fact_create(ctx, A, c < 2 ? 1 : 8, 0, (c & 2) ? SAP_DOUBLE : SAP_FLOAT, &fo, 0, &F,
                                              &dropped, NULL);
        ctx->stop_flag = NULL;
        stop_flag = 0;
        CHECK_STATUS(ctx, st, SAP_WARN_INTERRUPTED);
        CHECK(F == NULL);
        CHECK(strstr(sap_context_last_error(ctx), "stopped on request") != NULL);
        sap__band_fact_destroy(F);
        sap_context_get_stats(ctx, &s1);
        CHECK_MSG(s1.host_bytes_in_use == s0.host_bytes_in_use, "case %d: %lld bytes kept", c,
                  (long long)(s1.host_bytes_in_use - s0.host_bytes_in_use));
        /* the flag down: the same factorization completes */
        CHECK(sap__band_fact_create(ctx, A, c < 2 ? 1 : 8, 0, (c & 2) ? SAP_DOUBLE : SAP_FLOAT, &fo, 0, &F, &dropped,
                                    NULL) >= 0);
        sap__band_fact_destroy(F);
    }
    /* the solver: the flag raised at the setup event stops a forced SaP-D (P = 1, a long
     * LU) inside its factorization; x is the initial guess, no fallback; the flag down, the
     * next solve sets up and converges */
    double *b = calloc((size_t)n, sizeof(double)), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 3);
    for (int coupled = 0; coupled < 2; coupled++) {
        sap_solver_options o;
        sap_solver_options_init(&o);
        CHECK(sap_solver_options_set(&o, "method", coupled ? "sap-c" : "sap-d") == SAP_OK);
        CHECK(sap_solver_options_set(&o, "partitions", coupled ? "4" : "1") == SAP_OK);
        int setups = 0;
        o.monitor = raise_at_setup;
        o.monitor_state = &setups;
        o.interrupt = &stop_flag;
        stop_flag = 0;
        for (sap_int i = 0; i < n; i++) x[i] = 0.25;
        sap_solver *S = NULL;
        sap_solver_stats st;
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        CHECK_STATUS(ctx, sap_solver_solve(S, b, x), SAP_WARN_INTERRUPTED);
        sap_solver_get_stats(S, &st);
        int same = 1;
        for (sap_int i = 0; i < n; i++) same &= x[i] == 0.25;
        CHECK(same && setups == 1);
        CHECK_MSG(st.ntries == 1 && st.tried[0].status == SAP_WARN_INTERRUPTED &&
                      strstr(st.tried[0].note, "during") != NULL,
                  "%d tries, %s: %s", st.ntries, sap_status_name(st.tried[0].status), st.tried[0].note);
        CHECK(strstr(sap_context_last_error(ctx), "during the setup") != NULL);
        printf("  band stop %s: %s; %s\n", coupled ? "sap-c" : "sap-d", st.tried[0].note, sap_context_last_error(ctx));
        o.monitor = NULL;
        sap_solver_destroy(S);
        S = NULL;
        /* the flag stays down: set up and converge */
        stop_flag = 0;
        o.monitor = NULL;
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        CHECK_OK(ctx, sap_solver_solve(S, b, x));
        CHECK(sap_test_rel_residual(A, x, b) <= 1.01e-10);
        /* a refactor stopped inside its factorization; the next solve builds again */
        stop_flag = 1;
        CHECK_STATUS(ctx, sap_solver_refactor(S, A->val), SAP_WARN_INTERRUPTED);
        stop_flag = 0;
        memset(x, 0, sizeof(double) * (size_t)n);
        CHECK_OK(ctx, sap_solver_solve(S, b, x));
        CHECK(sap_test_rel_residual(A, x, b) <= 1.01e-10);
        sap_solver_destroy(S);
    }
    free(b);
    free(x);
    sap_csr_destroy(A);
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    test_krylov(ctx);
    test_solver_stop(ctx);
    test_band_stop(ctx);
    sap_context_destroy(ctx);
    test_long_step();
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_interrupt", cpu_part, NULL); }
