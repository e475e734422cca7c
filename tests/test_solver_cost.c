/* test_solver_cost.c -- the cost model of the automatic plan (src/solver/solver_cost.c) and
 * the strategy methods it added ("ilu", "bjacobi"; cpu): each decision path on a matrix
 * built to need it -- an iterative method of all entries first on a 3D mesh (SaP's setup is
 * predicted far longer), block-Jacobi on natural blocks, the ILUT rebuild after zero pivots,
 * a sparse direct solve first where no iteration converges, a singular matrix reported
 * once, not looped on -- and the measured rates (positive, cached).  The choices compared
 * here differ in their predictions by orders of magnitude, so a loaded host does not change
 * them. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "testing.h"

#define SAP_TEST_HAS_GPU_PART 1

#include "device/device.h"
#include "device/direct_kernels.h"
#include "reorder/reorder_internal.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct run {
    sap_status st;
    sap_solver_stats ss;
    double res;
} run;

/* create + solve (the setup inside the solve: the probe solves b); blind: create + setup
 * without b, then solve (the probe on its own right-hand side) */
static run solve_how(sap_context *ctx, const sap_csr *A, const sap_solver_options *o, int blind)
{
    run r;
    memset(&r, 0, sizeof(r));
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    double *xs = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    sap_solver *S = NULL;
    r.st = sap_solver_create(ctx, A, o, &S);
    if (r.st >= 0 && blind) r.st = sap_solver_setup(S);
    if (r.st >= 0) r.st = sap_solver_solve(S, b, x);
    if (S) sap_solver_get_stats(S, &r.ss);
    /* the chain the plan made: each method once (cost_order's sort once read a stale length
     * after the structure passes took bjacobi out: the last method twice, one lost) */
    for (int i = 0; S && i < S->nchain; i++)
        for (int j = 0; j < i; j++)
            CHECK_MSG(S->chain[i] != S->chain[j], "%s twice in the chain (%d and %d of %d)",
                      sap_solver_method_name(S->chain[i]), j, i, S->nchain);
    r.res = sap_test_rel_residual(A, x, b);
    sap_solver_destroy(S);
    free(b);
    free(x);
    free(xs);
    return r;
}

static run solve(sap_context *ctx, const sap_csr *A, const sap_solver_options *o) { return solve_how(ctx, A, o, 0); }

static void opts(sap_solver_options *o, const char *method, const char *fallback)
{
    sap_solver_options_init(o);
    if (method) sap_solver_options_set(o, "method", method);
    if (fallback) sap_solver_options_set(o, "fallback", fallback);
}

static void print_run(const char *label, const run *r)
{
    printf("  %-28s %s, %s, %.4g it, res %.2e | %.200s\n", label, sap_status_name(r->st),
           sap_solver_method_name(r->ss.method), r->ss.iterations, r->res, r->ss.reason);
    for (int i = 0; i < r->ss.ntries; i++)
        printf("      %d. %-10s %s %.3fs (predicted %.3gs, budget %.3gs) %s\n", i + 1,
               sap_solver_method_name(r->ss.tried[i].method), sap_status_name(r->ss.tried[i].status),
               r->ss.tried[i].time, r->ss.tried[i].predicted, r->ss.tried[i].budget, r->ss.tried[i].note);
}

/* ---- the rates ------------------------------------------------------------------------------ */

static void test_rates(sap_context *ctx)
{
    printf("measured rates\n");
    sap__cost_rates a, b;
    sap__cost_rates_get(ctx, &a);
    sap__cost_rates_get(ctx, &b);
    printf("  bandwidth %.3g B/s, latency %.3g s, dgbtrf %.3g flop/s per thread, measured in %.3g s\n", a.bw, a.lat,
           a.lapack, a.seconds);
    CHECK(a.bw > 1e8 && a.bw < 1e13 && a.lat > 0 && a.lat < 0.1);
    CHECK(!sap__bp_available() || a.lapack > 1e7);
    CHECK_MSG(memcmp(&a, &b, sizeof(a)) == 0, "the second call is the cached measurement");
    CHECK(sap__cost_rates_peek(ctx, &b) == 1 && b.bw == a.bw);
}

/* ---- the latency of the SaP apply's sweeps -------------------------------------------------- */

static void test_latency(sap_context *ctx)
{
    printf("the sweeps' latency term of the SaP apply\n");
    sap__cost_rates m;
    sap__cost_rates_get(ctx, &m);
    printf("  measured sweep step %.3g s + %.3g s x K\n", m.sweep[0], m.sweep[1]);
    CHECK_MSG(m.sweep[0] + 64.0 * m.sweep[1] > 0 && m.sweep[0] + 64.0 * m.sweep[1] < 1e-3, "%.3g %.3g", m.sweep[0],
              m.sweep[1]);
    /* a decision it changes, on rates given here (deterministic): one apply of a band of N =
     * 100,000, K = 100 in float against 0.05 s of another method.  By the bytes alone (fast
     * memory) every partitioning is cheap; with 2 us a dependent step, one long partition
     * (2N steps) costs 0.4 s and is the slower choice, 1,000 short ones swept 16 at once
     * (~63 rounds of 199 steps) stay below it */
    sap_context *c16 = sap_test_context(SAP_BACKEND_CPU);
    CHECK(c16 != NULL);
    if (!c16) return;
    CHECK_OK(c16, sap_context_set_threads(c16, 16));
    sap__cost_rates r;
    memset(&r, 0, sizeof(r));
    r.bw = 1e12, r.lat = 1e-6;
    const double other = 0.05;
    const double b1 = sap__cost_apply_seconds(c16, &r, 100000, 100, 1, SAP_FLOAT, 0);
    const double bm = sap__cost_apply_seconds(c16, &r, 100000, 100, 1000, SAP_FLOAT, 0);
    r.sweep[0] = 2e-6;
    const double l1 = sap__cost_apply_seconds(c16, &r, 100000, 100, 1, SAP_FLOAT, 0);
    const double lm = sap__cost_apply_seconds(c16, &r, 100000, 100, 1000, SAP_FLOAT, 0);
    const double lc = sap__cost_apply_seconds(c16, &r, 100000, 100, 1000, SAP_FLOAT, 1);
    printf("  bytes only: P=1 %.3g s, P=1000 %.3g s; with the sweeps: P=1 %.3g s, P=1000 %.3g s (SaP-C %.3g s)\n", b1,
           bm, l1, lm, lc);
    CHECK(b1 < other && bm < other);              /* without the term: both before the other method */
    CHECK(l1 > other && fabs(l1 - 0.4) < 0.01);   /* one long partition: 2N - 1 steps of 2 us, after it */
    CHECK(lm < other && lm > 0.02);               /* many short ones: 63 rounds of 199 steps, before it */
    CHECK(lc > 2.0 * lm - 1e-12);                 /* SaP-C: two block solves and the reduced systems */
    sap_context_destroy(c16);
}

/* ---- learning from the first iterations ----------------------------------------------------- */

/* A monitor that makes every Krylov step of an iterative attempt 0.5 s slower than its
 * prediction (a loaded or mispredicted device, as SaP-C's 37 ms steps on airfoil_2d). */
static int slow_steps(void *state, const sap_solver_progress *p)
{
    (void)state;
    if (!p->setup && p->iteration > 0) {
        struct timespec ts = {0, 500 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void test_learned(sap_context *ctx)
{
    printf("learning from the first iterations\n");
    sap_solver_options o;
    /* a 2D Poisson of N = 22,500: the plan's iterative choice needs over a hundred steps
     * (about a second here) while the host's sparse Cholesky takes tenths: after its first
     * steps the extrapolated rest is far beyond the direct method's prediction, the attempt
     * is cut (its note says what it learned) and the direct solve is taken */
    if (sap__direct_host_kernels()->available(ctx, NULL, 0)) {
        sap_csr *P = NULL;
        CHECK_OK(ctx, sap_gen_poisson2d(ctx, 150, 150, &P));
        opts(&o, NULL, NULL);
        run r = solve(ctx, P, &o);
        print_run("auto, poisson2d 150", &r);
        CHECK(r.st == SAP_OK && r.res <= 1.0001e-10);
        CHECK_MSG(r.ss.method == SAP_METHOD_DIRECT_HOST, "%s", sap_solver_method_name(r.ss.method));
        int learned = 0;
        for (int i = 0; i < r.ss.ntries; i++) {
            const sap__solver_method_type *t = sap__solver_method_get(r.ss.tried[i].method);
            if (!t || t->direct || r.ss.tried[i].status == SAP_ERR_TOO_LARGE) continue;
            /* every iterative attempt before it was cut by what it learned, once it had spent
             * half the direct prediction (SV_LEARN_SPENT), well short of the ~1,000 steps
             * Jacobi would need */
            CHECK_MSG(r.ss.tried[i].status == SAP_WARN_NOT_CONVERGED && strstr(r.ss.tried[i].note, "learned"), "%s",
                      r.ss.tried[i].note);
            CHECK_MSG(r.ss.tried[i].iterations < 300, "%g", r.ss.tried[i].iterations);
            learned++;
        }
        printf("  %d attempts cut by their first steps\n", learned);
        sap_csr_destroy(P);
        /* a strictly dominant 3D mesh (the cost model orders Jacobi / IC(0), predicted from
         * the probe in a few steps, before CHOLMOD) with every Krylov step 0.5 s late: the
         * first iterative attempt is cut before SV_LEARN_STEPS steps, far behind its
         * prediction, and the direct solve is taken (the setup without b: with it the probe
         * would have solved it, leaving the attempt nothing to do) */
        CHECK_OK(ctx, sap_gen_poisson3d(ctx, 24, 24, 24, &P));
        for (sap_int i = 0; i < P->nrows; i++) /* strictly dominant: a few Jacobi steps predicted */
            for (int64_t q = P->rowptr[i]; q < P->rowptr[i + 1]; q++)
                if (P->colind[q] == i) P->val[q] += 2.0;
        opts(&o, NULL, NULL);
        o.monitor = slow_steps;
        r = solve_how(ctx, P, &o, 1);
        print_run("auto, poisson3d 24, slow steps", &r);
        CHECK(r.st == SAP_OK && r.res <= 1.0001e-10);
        const sap__solver_method_type *t0 = r.ss.ntries > 0 ? sap__solver_method_get(r.ss.tried[0].method) : NULL;
        if (t0 && !t0->direct && r.ss.tried[0].predicted > 0) {
            CHECK_MSG(strstr(r.ss.tried[0].note, "x its prediction") && r.ss.tried[0].iterations < SV_LEARN_STEPS,
                      "%s", r.ss.tried[0].note);
            CHECK(r.ss.method == SAP_METHOD_DIRECT_HOST || r.ss.method == SAP_METHOD_BAND_PIVOT);
        } else {
            printf("  (the plan put %s first: no iterative attempt to cut)\n",
                   r.ss.ntries > 0 ? sap_solver_method_name(r.ss.tried[0].method) : "nothing");
        }
        sap_csr_destroy(P);
    }
    /* a diagonally dominant band with SaP first (host_direct = 0: the band rule, not the
     * host's banded LU): it converges in a few steps and is not cut, though a sparse direct
     * method follows it in the chain and is asked for its prediction */
    sap_csr *B = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 12000, 20, 1.0, 0, 7, &B));
    opts(&o, NULL, NULL);
    CHECK_OK(ctx, sap_solver_options_set(&o, "host_direct", "0"));
    run r = solve(ctx, B, &o);
    CHECK(r.ss.ntries >= 1 && (r.ss.tried[0].method == SAP_METHOD_SAPD || r.ss.tried[0].method == SAP_METHOD_SAPC));
    print_run("auto, banded N=12000 K=20 d=1", &r);
    CHECK(r.st == SAP_OK && r.res <= 1.0001e-10);
    for (int i = 0; i < r.ss.ntries; i++) CHECK_MSG(strstr(r.ss.tried[i].note, "learned") == NULL, "%s", r.ss.tried[i].note);
    CHECK_MSG(r.ss.tried[0].status == SAP_OK, "%s", sap_status_name(r.ss.tried[0].status));
    sap_csr_destroy(B);
}

/* ---- the iteration prior of the SaP methods ------------------------------------------------ */

/* A reordered band that is diagonally dominant (d >= 1) is priced at SV_SAP_RICH_STEPS
 * Richardson steps (the automatic Krylov method of a SaP attempt); one with d < 1 has no
 * decay bound on its spikes and is priced at 4 / d BiCGStab(2) iterations, at most 40. */
static void test_nodecay(sap_context *ctx)
{
    const double ds[3] = {1.0, 0.5, 0.02};
    double its[3], preds[3];
    for (int k = 0; k < 3; k++) {
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_gen_banded(ctx, 6000, 12, ds[k], 0, 3, &B));
        sap_solver_options o;
        opts(&o, NULL, NULL);
        CHECK_OK(ctx, sap_solver_options_set(&o, "host_direct", "0"));
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap_solver_create(ctx, B, &o, &S));
        CHECK_OK(ctx, sap_solver_setup(S));
        char why[160];
        its[k] = 0;
        preds[k] = sap__cost_predict(S, SAP_METHOD_SAPD, &its[k], why, sizeof(why));
        const double d = S->d_cm;
        printf("  gen:banded d=%g: d after the reorderings %.3g, SaP-D predicted %.3g s, %.3g it (%s)\n", ds[k], d,
               preds[k], its[k], why);
        CHECK(preds[k] > 0);
        if (d >= 1) {
            CHECK_MSG(its[k] == 8.0 && strstr(why, "Richardson") != NULL, "%g: %s", its[k], why);
        } else {
            const double prior = 4.0 / d < 40.0 ? 4.0 / d : 40.0;
            CHECK_MSG(its[k] >= prior * (1 - 1e-12) && strstr(why, "no decay bound") != NULL, "%g < %g: %s", its[k], prior,
                      why);
        }
        sap_solver_destroy(S);
        sap_csr_destroy(B);
    }
    CHECK(preds[1] > preds[0]);
}

/* ---- ilu ------------------------------------------------------------------------------------ */

static void test_ilu(sap_context *ctx)
{
    printf("ilu: IC(0) + CG (SPD), ILU(0) + BiCGStab(2), ILUT after zero pivots\n");
    sap_csr *P = NULL, *C = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 60, 60, &P));
    sap_solver_options o;
    opts(&o, "ilu", "0");
    run ri = solve(ctx, P, &o);
    print_run("ilu, poisson2d 60", &ri);
    CHECK(ri.st == SAP_OK && ri.res <= 1.0001e-10 && ri.ss.method == SAP_METHOD_ILU && ri.ss.ntries == 1);
    CHECK_MSG(strstr(ri.ss.reason, "IC(0), CG") != NULL, "%s", ri.ss.reason);
    opts(&o, "jacobi", "0");
    run rj = solve(ctx, P, &o);
    print_run("jacobi, poisson2d 60", &rj);
    CHECK(rj.st == SAP_OK);
    /* the incomplete factorization needs fewer steps than Jacobi (the cost model's gain) */
    CHECK_MSG(ri.ss.iterations * 1.3 < rj.ss.iterations, "ilu %.4g it, jacobi %.4g it", ri.ss.iterations,
              rj.ss.iterations);
    /* nonsymmetric */
    CHECK_OK(ctx, sap_gen_convdiff3d(ctx, 14, 40.0, &C));
    opts(&o, "ilu", "0");
    run rc = solve(ctx, C, &o);
    print_run("ilu, convdiff3d 14", &rc);
    CHECK(rc.st == SAP_OK && rc.res <= 1.0001e-10);
    CHECK_MSG(strstr(rc.ss.reason, "ILU(0), BiCGStab(2)") != NULL, "%s", rc.ss.reason);
    /* a zero pivot: row 0 has a zero diagonal (no DB, no CM: the matrix as given) */
    const sap_int n = 300;
    sap_csr *Z = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, n, n, 3 * n, &Z));
    int64_t p = 0;
    for (sap_int i = 0; i < n; i++) {
        Z->rowptr[i] = p;
        for (sap_int j = i - 1; j <= i + 1; j++) {
            if (j < 0 || j >= n) continue;
            Z->colind[p] = j;
            Z->val[p++] = j == i ? (i == 0 ? 0.0 : 4.0) : (i == 0 || j == 0 ? 1.0 : -1.0);
        }
    }
    Z->rowptr[n] = p;
    Z->nnz = p;
    opts(&o, "ilu", "0");
    sap_solver_options_set(&o, "db", "0");
    sap_solver_options_set(&o, "cm", "0");
    run rz = solve(ctx, Z, &o);
    print_run("ilu, zero pivot", &rz);
    CHECK(rz.ss.ntries == 1 && strstr(rz.ss.tried[0].note, "ILUT") != NULL);
    CHECK_MSG(strstr(rz.ss.reason, "ILUT") != NULL, "%s", rz.ss.reason);
    CHECK_MSG(rz.st >= 0 && rz.res <= 1.0001e-10, "%s res %.3g", sap_status_name(rz.st), rz.res);
    sap_csr_destroy(P);
    sap_csr_destroy(C);
    sap_csr_destroy(Z);
}

/* ---- bjacobi -------------------------------------------------------------------------------- */

static void test_bjacobi(sap_context *ctx)
{
    printf("bjacobi on natural blocks\n");
    sap_csr *E = NULL, *P = NULL;
    CHECK_OK(ctx, sap_gen_elasticity3d(ctx, 10, 10, 10, 3, &E));
    sap_solver_options o;
    opts(&o, "bjacobi", "0");
    run rb = solve(ctx, E, &o);
    print_run("bjacobi, elasticity 3 dof", &rb);
    CHECK(rb.st == SAP_OK && rb.res <= 1.0001e-10 && rb.ss.method == SAP_METHOD_BJACOBI);
    CHECK_MSG(strstr(rb.ss.reason, "blocks of 3 rows") != NULL, "%s", rb.ss.reason);
    opts(&o, "jacobi", "0");
    run rj = solve(ctx, E, &o);
    print_run("jacobi, elasticity 3 dof", &rj);
    CHECK_MSG(rb.ss.iterations < rj.ss.iterations, "bjacobi %.4g it, jacobi %.4g it", rb.ss.iterations,
              rj.ss.iterations);
    /* no natural blocks: bjacobi is not usable, the chain goes on (and AUTO never lists it) */
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 30, 30, &P));
    opts(&o, "bjacobi", "0");
    run r0 = solve(ctx, P, &o);
    CHECK(r0.st == SAP_ERR_UNSUPPORTED && r0.ss.ntries == 1);
    opts(&o, "bjacobi", NULL);
    run r1 = solve(ctx, P, &o);
    print_run("bjacobi, poisson2d, fallback", &r1);
    CHECK(r1.st == SAP_OK && r1.ss.tried[0].status == SAP_ERR_UNSUPPORTED && r1.ss.method != SAP_METHOD_BJACOBI);
    opts(&o, NULL, NULL);
    sap_solver_options_set(&o, "host_direct", "1");
    run ra = solve(ctx, P, &o);
    for (int i = 0; i < ra.ss.ntries; i++) CHECK(ra.ss.tried[i].method != SAP_METHOD_BJACOBI);
    sap_csr_destroy(E);
    sap_csr_destroy(P);
}

/* ---- AUTO: the cost model's decisions --------------------------------------------------------- */

static int tried_index(const run *r, sap_solver_method m)
{
    for (int i = 0; i < r->ss.ntries; i++)
        if (r->ss.tried[i].method == m) return i;
    return -1;
}

/* A random sparse matrix: nnz_row entries a row at random columns, a diagonal of size
 * diag (not dominant for diag < nnz_row); the last row repeats the first when singular. */
static sap_csr *random_sparse(sap_context *ctx, sap_int n, int nnz_row, double diag, int singular)
{
    sap_csr *A = NULL;
    if (sap_csr_create(ctx, n, n, (int64_t)n * (nnz_row + 1), &A) < 0) return NULL;
    uint64_t s = 12345;
    int64_t p = 0;
    for (sap_int i = 0; i < n; i++) {
        A->rowptr[i] = p;
        const sap_int src = singular && i == n - 1 ? 0 : i;
        sap_int cols[40];
        int m = 0;
        cols[m++] = src;
        uint64_t t = 0x9E3779B97F4A7C15ull * (uint64_t)(src + 1);
        while (m < nnz_row + 1) {
            t ^= t << 13, t ^= t >> 7, t ^= t << 17;
            const sap_int j = (sap_int)(t % (uint64_t)n);
            int dup = 0;
            for (int q = 0; q < m; q++) dup |= cols[q] == j;
            if (!dup) cols[m++] = j;
        }
        for (int a = 1; a < m; a++) /* sort */
            for (int q = a; q > 0 && cols[q] < cols[q - 1]; q--) {
                const sap_int tmp = cols[q];
                cols[q] = cols[q - 1];
                cols[q - 1] = tmp;
            }
        for (int q = 0; q < m; q++) {
            uint64_t v = 0x2545F4914F6CDD1Dull * (uint64_t)(src * 64 + cols[q] + 7);
            v ^= v >> 29;
            A->colind[p] = cols[q];
            A->val[p++] = cols[q] == src ? diag : (double)(v % 2000) / 1000.0 - 1.0;
        }
    }
    (void)s;
    A->rowptr[n] = p;
    A->nnz = p;
    return A;
}

static void test_auto(sap_context *ctx)
{
    printf("AUTO: the cost model\n");
    sap_solver_options o;
    /* a 3D mesh: CM leaves K ~ N^(2/3); SaP's setup is predicted seconds, IC(0) / Jacobi
     * and CHOLMOD / dgbtrf tenths at most: one of them first, no SaP attempt (which of them
     * depends on the host's load: the iterations' barriers suffer most from it, and the probe
     * and the rates measure that) */
    sap_csr *P = NULL;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, 24, 24, 24, &P));
    opts(&o, NULL, NULL);
    run r = solve(ctx, P, &o);
    print_run("auto, poisson3d 24", &r);
    CHECK(r.st == SAP_OK && r.res <= 1.0001e-10);
    CHECK_MSG(r.ss.method != SAP_METHOD_SAPD && r.ss.method != SAP_METHOD_SAPC && r.ss.method != SAP_METHOD_BAND_LU,
              "%s", sap_solver_method_name(r.ss.method));
    /* the first try was the cost model's (its reason, or it was cut and a fallback says so) */
    CHECK(r.ss.ntries >= 1 && r.ss.tried[0].predicted > 0);
    CHECK_MSG(strstr(r.ss.reason, "cost model: predicted") != NULL || r.ss.ntries > 1, "%s", r.ss.reason);
    /* SaP never ran (skipped on its prediction, if reached at all) */
    for (int i = 0; i < r.ss.ntries; i++)
        if (r.ss.tried[i].method == SAP_METHOD_SAPD || r.ss.tried[i].method == SAP_METHOD_SAPC)
            CHECK_MSG(r.ss.tried[i].status == SAP_ERR_TOO_LARGE && r.ss.tried[i].time < 0.5, "%s", r.ss.tried[i].note);
    /* time_budget=off: no cost model (choices that do not depend on timing) */
    sap_solver_options_set(&o, "time_budget", "off");
    r = solve(ctx, P, &o);
    CHECK(r.st == SAP_OK && strstr(r.ss.reason, "cost model") == NULL);
    sap_csr_destroy(P);

    /* no iteration converges (random, not dominant): the sparse direct solve first, predicted
     * from its symbolic analysis; without SuiteSparse the chain ends in an iterative attempt */
    sap_csr *R = random_sparse(ctx, 4000, 6, 0.5, 0);
    CHECK(R != NULL);
    opts(&o, NULL, NULL);
    r = solve(ctx, R, &o);
    print_run("auto, random sparse", &r);
    if (sap__direct_host_kernels()->available(ctx, NULL, 0)) {
        CHECK_MSG(r.st == SAP_OK && r.res <= 1.0001e-10, "%s res %.3g", sap_status_name(r.st), r.res);
        CHECK(r.ss.method == SAP_METHOD_DIRECT_HOST);
        /* first, by its prediction, or after attempts cut short */
        const int i = tried_index(&r, SAP_METHOD_DIRECT_HOST);
        CHECK(i >= 0 && r.ss.tried[i].predicted > 0);
        CHECK_MSG(i == 0 || strstr(r.ss.reason, "fallback") != NULL, "%s", r.ss.reason);
        for (int j = 0; j < i; j++) CHECK(r.ss.tried[j].time < 30);
    }
    sap_csr_destroy(R);

    /* direct-host first, before DB, CM and the cost model: a 2D mesh of N = 6,400 shifted to
     * indefinite and far from dominant (d = 0.06) and renumbered at random (no band): its
     * sparse LU costs milliseconds (nested fill), less than the plan's own passes.  The same mesh unshifted is
     * diagonally dominant (every row): the plan runs as before. */
    sap_csr *M = NULL, *Mp = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 80, 80, &M));
    sap_int *perm = malloc(sizeof(sap_int) * (size_t)M->nrows);
    for (sap_int i = 0; i < M->nrows; i++) perm[i] = i;
    uint64_t seed = 12345;
    for (sap_int i = M->nrows - 1; i > 0; i--) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const sap_int j = (sap_int)((seed >> 33) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    CHECK_OK(ctx, sap_csr_permute(M, perm, perm, &Mp));
    free(perm);
    opts(&o, NULL, NULL);
    r = solve(ctx, Mp, &o);
    print_run("auto, poisson2d permuted", &r);
    CHECK(r.st == SAP_OK && strstr(r.ss.reason, "direct-host first") == NULL && r.ss.db_used + r.ss.cm_used >= 1);
    for (sap_int i = 0; i < Mp->nrows; i++)
        for (int64_t p = Mp->rowptr[i]; p < Mp->rowptr[i + 1]; p++)
            if (Mp->colind[p] == i) Mp->val[p] -= 3.75; /* d = 0.25 / 4 < 0.1: far from dominant */
    r = solve(ctx, Mp, &o);
    print_run("auto, poisson2d shifted", &r);
    if (sap__direct_host_kernels()->available(ctx, NULL, 0)) {
        CHECK_MSG(r.st == SAP_OK && r.res <= 1.0001e-10, "%s res %.3g", sap_status_name(r.st), r.res);
        CHECK_MSG(r.ss.method == SAP_METHOD_DIRECT_HOST && r.ss.ntries == 1 &&
                      strstr(r.ss.reason, "direct-host first") && !r.ss.db_used && !r.ss.cm_used,
                  "%s", r.ss.reason);
        /* a given method or reordering keeps the plan */
        sap_solver_options_set(&o, "cm", "1");
        r = solve(ctx, Mp, &o);
        CHECK(r.st == SAP_OK && strstr(r.ss.reason, "direct-host first") == NULL && r.ss.cm_used);
    }
    sap_csr_destroy(Mp);
    sap_csr_destroy(M);

    /* structurally singular (an empty row): reported by the setup, no method is tried */
    sap_csr *Sg = random_sparse(ctx, 3000, 6, 0.5, 0);
    CHECK(Sg != NULL);
    const int64_t cut = Sg->rowptr[Sg->nrows - 1];
    Sg->rowptr[Sg->nrows] = cut; /* the last row loses its entries */
    Sg->nnz = cut;
    opts(&o, NULL, NULL);
    r = solve(ctx, Sg, &o);
    print_run("auto, structurally singular", &r);
    CHECK_MSG(r.st == SAP_ERR_STRUCTURALLY_SINGULAR && r.ss.ntries == 0, "%s, %d tries", sap_status_name(r.st),
              r.ss.ntries);
    sap_csr_destroy(Sg);
}

/* Pieces of the model checked by their formulas: SaP-D's share of the band inside its
 * partitions, SaP-C's setup above SaP-D's for the same band (its spikes and reduced LUs) with
 * the same flops for the work limit, and the expected cost of the host analysis (what an
 * attempt runs before it is asked for), 0 once it is made. */
static void test_model_parts(sap_context *ctx)
{
    printf("model parts\n");
    /* ||A||_F^2 by distance: 4 on the diagonal, 1 at distance 1, 1 at distance 10 */
    const double h[12] = {4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    CHECK(fabs(sap__drop_kept_in_blocks(h, 12, 20, 10.0) - 4.9 / 6.0) < 1e-12); /* d = 10: never inside */
    CHECK(fabs(sap__drop_kept_in_blocks(h, 12, 20, 1e9) - sap__drop_kept_from_hist(h, 12, 20)) < 1e-6);
    CHECK(fabs(sap__drop_kept_in_blocks(h, 12, 0, 10.0) - 4.0 / 6.0) < 1e-12);
    CHECK(fabs(sap__drop_kept_in_blocks(h, 12, 20, 2.0) - 4.5 / 6.0) < 1e-12);

    sap_csr *A = NULL;
    sap_solver *S = NULL;
    sap_solver_options o;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 60, 60, &A));
    opts(&o, NULL, NULL);
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    if (S) {
        const sap__solver_method_type *td = sap__solver_method_get(SAP_METHOD_SAPD);
        const sap__solver_method_type *tc = sap__solver_method_get(SAP_METHOD_SAPC);
        sap__sm_estimate ed, ec;
        memset(&ed, 0, sizeof(ed));
        memset(&ec, 0, sizeof(ec));
        td->estimate(S, td, 16, 60, SAP_FLOAT, &ed);
        tc->estimate(S, tc, 16, 60, SAP_FLOAT, &ec);
        printf("  K = 60, P = 16: SaP-D setup %.3g s, SaP-C %.3g s\n", ed.seconds, ec.seconds);
        CHECK(ed.seconds > 0 && ec.seconds > 1.5 * ed.seconds && ec.flops == ed.flops);
        if (sap__direct_host_kernels()->available(ctx, NULL, 0)) {
            sap__solver_direct_forget(S);
            CHECK(sap__solver_direct_analysis_guess(S) > 0);
            CHECK(sap__solver_direct_predict(S, SAP_METHOD_DIRECT_HOST) > 0);
            CHECK(sap__solver_direct_analysis_guess(S) == 0);
        }
    }
    /* the chain step by step: with the sparse direct methods predicted (the host analysis
     * made), a band method the cost model priced far above them gives way to the cheapest */
    if (S && sap__direct_host_kernels()->available(ctx, NULL, 0) && S->opt.fallback) {
        CHECK_OK(ctx, sap_solver_setup(S));
        const double pd = sap__solver_direct_predict(S, SAP_METHOD_DIRECT_HOST);
        S->chain[0] = SAP_METHOD_SAPC;
        S->chain[1] = SAP_METHOD_DIRECT_HOST;
        S->nchain = 2;
        S->pred[0] = 100.0 * pd;
        S->pred[1] = -1;
        S->cost_ordered = 1;
        S->learn_miss = 0;
        CHECK(sap__solver_chain_build(S, 0) >= 0);
        CHECK_MSG(S->chain[0] == SAP_METHOD_DIRECT_HOST && S->chain[1] == SAP_METHOD_SAPC && S->att &&
                      S->att->method == SAP_METHOD_DIRECT_HOST,
                  "%s first", sap_solver_method_name(S->chain[0]));
        /* priced below the direct solve, it keeps its place */
        S->chain[0] = SAP_METHOD_SAPC;
        S->chain[1] = SAP_METHOD_DIRECT_HOST;
        S->pred[0] = 0.01 * pd;
        CHECK(sap__solver_chain_build(S, 0) >= 0);
        CHECK_MSG(S->chain[0] == SAP_METHOD_SAPC, "%s first", sap_solver_method_name(S->chain[0]));
    }
    sap_solver_destroy(S);
    sap_csr_destroy(A);
}

/* The plan's passes: a given method runs no structure pass (levels, natural blocks: the
 * block-Jacobi method looks at its blocks itself), and the probe's Krylov matrix (its upload
 * on a device) goes to the first Krylov attempt on R->A, or is freed by a direct one: none
 * is held past the setup beside the attempt's own. */
/* b = A x* for x* the parabola; x zeroed (the caller frees the three) */
static void parabola_system(sap_context *ctx, const sap_csr *A, double **b, double **x, double **xs)
{
    const sap_int n = A->nrows;
    *b = malloc(sizeof(double) * (size_t)n);
    *x = calloc((size_t)n, sizeof(double));
    *xs = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, *xs);
    sap_csr_spmv(A, 1.0, *xs, 0.0, *b);
}

static void test_plan_passes(sap_context *ctx)
{
    printf("the plan's passes\n");
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_convdiff3d(ctx, 24, 20.0, &A)); /* N = 13,824: past the host's small systems */
    if (!A) return;
    static const char *const given[] = {"jacobi", "ilu", "bjacobi", NULL};
    for (int k = 0; k < 4; k++) {
        sap_solver_options o;
        opts(&o, given[k], NULL);
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        if (!S) continue;
        const sap_int n = A->nrows;
        double *b, *x, *xs;
        parabola_system(ctx, A, &b, &x, &xs);
        if (!given[k]) { /* bad input: no solver, a b with NaN (reported, nothing set up) */
            CHECK(sap_solver_setup_rhs(NULL, b) == SAP_ERR_INVALID);
            const double keep = b[n / 2];
            b[n / 2] = NAN;
            CHECK_STATUS(ctx, sap_solver_setup_rhs(S, b), SAP_ERR_NONFINITE);
            b[n / 2] = keep;
        }
        /* the setup knowing b: the probe solves it */
        const sap_status st = given[k] ? sap_solver_setup(S) : sap_solver_setup_rhs(S, b);
        CHECK_MSG(st >= 0, "%s: %s", given[k] ? given[k] : "auto", sap_status_name(st));
        if (given[k]) /* (block-Jacobi's attempt looked at its blocks) */
            CHECK_MSG(S->levels < 0 && (S->bj_avg < 0 || k == 2) && !S->probe_tried, "%s: levels %lld, blocks %.3g",
                      given[k], (long long)S->levels, S->bj_avg);
        CHECK_MSG(S->probe_M == NULL, "%s: the probe's matrix is held after the setup", given[k] ? given[k] : "auto");
        if (!given[k]) {
            printf("  auto: probe %s, first attempt %s\n", S->probe_ran ? "ran" : "not run",
                   S->att ? sap_solver_method_name(S->att->method) : "none");
            const int krylov_first = S->att && !S->att->type->direct;
            if (krylov_first) CHECK(S->att->M != NULL);
            CHECK(!S->probe_ran || S->probe_y != NULL); /* its iterate of b, for the solve */
            /* the solve with the matrix the attempt took from the probe, from its iterate */
            CHECK_OK(ctx, sap_solver_solve(S, b, x));
            CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
            sap_solver_stats ss;
            sap_solver_get_stats(S, &ss);
            printf("  auto: %s\n", ss.ntries > 0 ? ss.tried[0].note : "no try");
            if (S->probe_ran && krylov_first)
                CHECK_MSG(ss.ntries >= 1 && strstr(ss.tried[0].note, "from the probe's") != NULL, "%s",
                          ss.ntries > 0 ? ss.tried[0].note : "");
            CHECK(S->probe_y == NULL); /* used once, then freed */
            /* the caller's own initial guess (here x* itself) is kept: the probe's iterate,
             * from zero, would be a worse start */
            {
                sap_solver *S2 = NULL;
                CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S2));
                if (S2) {
                    CHECK(sap_solver_setup_rhs(S2, b) >= 0);
                    memcpy(x, xs, sizeof(double) * (size_t)n);
                    CHECK_OK(ctx, sap_solver_solve(S2, b, x));
                    sap_solver_stats s2;
                    sap_solver_get_stats(S2, &s2);
                    CHECK_MSG(s2.ntries >= 1 && strstr(s2.tried[0].note, "from the probe's") == NULL &&
                                  s2.iterations <= 1,
                              "%s, %.3g it", s2.ntries > 0 ? s2.tried[0].note : "", s2.iterations);
                    CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
                    sap_solver_destroy(S2);
                }
            }
            /* the first solve of another b than the setup's: not from the probe's iterate
             * (its b's fingerprint differs: one entry changed) */
            {
                sap_solver *S3 = NULL;
                CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S3));
                if (S3) {
                    CHECK(sap_solver_setup_rhs(S3, b) >= 0);
                    const double keep = b[n / 3];
                    b[n / 3] += 1.0;
                    memset(x, 0, sizeof(double) * (size_t)n);
                    CHECK_OK(ctx, sap_solver_solve(S3, b, x));
                    sap_solver_stats s3;
                    sap_solver_get_stats(S3, &s3);
                    CHECK_MSG(s3.ntries >= 1 && strstr(s3.tried[0].note, "from the probe's") == NULL, "%s",
                              s3.ntries > 0 ? s3.tried[0].note : "");
                    CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
                    CHECK(S3->probe_y == NULL);
                    b[n / 3] = keep;
                    sap_solver_destroy(S3);
                }
            }
            /* a second b: from its own initial guess (the probe's iterate is gone) */
            for (sap_int i = 0; i < n; i++) b[i] *= -2.0;
            memset(x, 0, sizeof(double) * (size_t)n);
            CHECK_OK(ctx, sap_solver_solve(S, b, x));
            CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
        }
        free(b);
        free(x);
        free(xs);
        sap_solver_destroy(S);
    }
    sap_csr_destroy(A);
}

/* An m x m five-point grid (diagonal 4 + shift, -1 to its neighbours) whose first row and
 * column also couple to every 40th unknown (0.01): K_original ~ N, and a bound of any
 * ordering (m^2 / 80) past the host's small banded LU, so an automatic chain puts CM off
 * until its probe. */
static sap_csr *arrow_grid(sap_context *ctx, sap_int m, double shift)
{
    const sap_int n = m * m;
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    if (sap_coo_create(ctx, n, n, 5 * n + n / 20 + 8, &C) != SAP_OK) return NULL;
    for (sap_int i = 0; i < m; i++)
        for (sap_int j = 0; j < m; j++) {
            const sap_int r = i * m + j;
            sap_coo_push(C, r, r, 4.0 + shift);
            if (i > 0) sap_coo_push(C, r, r - m, -1.0);
            if (i + 1 < m) sap_coo_push(C, r, r + m, -1.0);
            if (j > 0) sap_coo_push(C, r, r - 1, -1.0);
            if (j + 1 < m) sap_coo_push(C, r, r + 1, -1.0);
        }
    for (sap_int r = 40; r < n; r += 40) {
        sap_coo_push(C, 0, r, 0.01);
        sap_coo_push(C, r, 0, 0.01);
    }
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    return A;
}

/* S's solve (S may be NULL: none) of parabola_system's b: the true residual at tol, x* within
 * 1e-6; then S, the system and A are freed */
static void solve_check_free(sap_context *ctx, sap_solver *S, sap_csr *A, double *b, double *x, double *xs)
{
    if (S) {
        CHECK_OK(ctx, sap_solver_solve(S, b, x));
        CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
        double err = 0, nx = 0;
        for (sap_int i = 0; i < A->nrows; i++) {
            err += (x[i] - xs[i]) * (x[i] - xs[i]);
            nx += xs[i] * xs[i];
        }
        CHECK(sqrt(err / nx) < 1e-6);
        sap_solver_destroy(S);
    }
    free(b);
    free(x);
    free(xs);
    sap_csr_destroy(A);
}

/* arrow_grid's pattern, nonsymmetric: diagonal 4 + shift, -1.25 to the lower neighbours and
 * -0.75 to the upper ones (an interior row's sum is the shift, as the Laplacian's), cpl on
 * the couplings of row and column 0 (those rows not dominant); every row's diagonal is its
 * largest entry while 4 + shift >= 1.25 and cpl */
static sap_csr *arrow_grid_ns(sap_context *ctx, sap_int m, double shift, double cpl)
{
    sap_csr *A = arrow_grid(ctx, m, shift);
    if (!A) return NULL;
    for (sap_int r = 0; r < A->nrows; r++)
        for (sap_int p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
            const sap_int c = A->colind[p];
            if (c == r) continue;
            if (A->val[p] == -1.0) A->val[p] = c < r ? -1.25 : -0.75;
            else A->val[p] = cpl; /* a coupling of row or column 0 */
        }
    return A;
}

/* A refactor with twice A's values solves twice b to the same x* (a DB whose R->A shares A's
 * pattern keeps it through the refactor's value map), then A's own values again for the
 * caller's last solve; x is left zero. */
static void refactor_twice(sap_solver *S, const sap_csr *A, const double *b, double *x, const double *xs)
{
    double *v2 = malloc(sizeof(double) * (size_t)A->nnz), *b2 = malloc(sizeof(double) * (size_t)A->nrows);
    for (sap_int k = 0; k < A->nnz; k++) v2[k] = 2.0 * A->val[k];
    for (sap_int i = 0; i < A->nrows; i++) b2[i] = 2.0 * b[i];
    CHECK(sap_solver_refactor(S, v2) >= 0);
    memset(x, 0, sizeof(double) * (size_t)A->nrows);
    CHECK(sap_solver_solve(S, b2, x) >= 0);
    double err = 0, nx = 0;
    for (sap_int i = 0; i < A->nrows; i++) err += (x[i] - xs[i]) * (x[i] - xs[i]), nx += xs[i] * xs[i];
    CHECK_MSG(sqrt(err / nx) < 1e-6, "refactor: error %.3g", sqrt(err / nx));
    memset(x, 0, sizeof(double) * (size_t)A->nrows);
    CHECK(sap_solver_refactor(S, A->val) >= 0);
    free(v2);
    free(b2);
}

/* DB after the probe (each row's diagonal its largest entry: DB's matching is the identity):
 * 0: one row not dominant (row 0's couplings), the rest strongly: the probe solves the
 *    caller's b and DB never runs (R->A is A);
 * 1: the coupled rows not dominant, Laplacian-like: the probe does not solve it, DB runs
 *    after it;
 * 2: the same with DB given: before the probe, as always.
 * (Where the probe does not run at all (its rates measured under a memory checker): DB
 * runs once the plan is made, without the probe's words.) */
static void test_db_late(sap_context *ctx)
{
    printf("DB after the probe\n");
    for (int c = 0; c < 3; c++) {
        sap_csr *A = arrow_grid_ns(ctx, 150, c == 0 ? 40.0 : 0.0, c == 0 ? 0.2 : 0.01);
        CHECK(A != NULL);
        if (!A) return;
        double *b, *x, *xs;
        parabola_system(ctx, A, &b, &x, &xs);
        sap_solver_options o;
        opts(&o, NULL, NULL);
        if (c == 2) sap_solver_options_set(&o, "db", "product");
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        if (S) {
            CHECK(S->scan_ok && S->scan.diag_row_max);
            CHECK(sap_solver_setup_rhs(S, b) >= 0);
            sap_solver_stats ss;
            sap_solver_get_stats(S, &ss);
            printf("  case %d: DB %s (%s), T_DB %.3g s, first %s: %.80s\n", c, ss.db_used ? "ran" : "not run", S->db_why,
                   ss.time_db, S->att ? sap_solver_method_name(S->att->method) : "none", S->why_first);
            if (!S->probe_ran && c < 2) {
                printf("    (no probe ran)\n");
                CHECK_MSG(ss.db_used && ss.scaled && S->R->row_scale && !strstr(S->db_why, "probe"), "%s", S->db_why);
            } else if (c == 0) {
                CHECK_MSG(!ss.db_used && strstr(S->db_why, "the probe solved the system") && S->R->A == S->A &&
                              !S->R->row_scale && ss.time_db == 0,
                          "%s", S->db_why);
                CHECK(S->nchain > 0 && S->chain[0] == SAP_METHOD_JACOBI);
            } else if (c == 1) {
                CHECK_MSG(ss.db_used && ss.scaled && strstr(S->db_why, "after the probe") && S->R->row_scale &&
                              ss.time_db > 0,
                          "%s", S->db_why);
                /* the matching kept the order: R->A shares A's pattern, only its values are its
                 * own; a refactor with new values (twice A's: the same x for twice b) keeps it */
                printf("    R->A %s A's pattern (CM %s)\n", S->R_shared ? "shares" : "does not share",
                       ss.cm_used ? "ran" : "off");
                CHECK(S->R_shared == (S->R->A->colind == S->A->colind));
                if (S->R_shared) CHECK(S->R->A->rowptr == S->A->rowptr && S->R->A->val != S->A->val);
                refactor_twice(S, A, b, x, xs);
            } else {
                CHECK_MSG(ss.db_used && strstr(S->db_why, "given") && !strstr(S->db_why, "after the probe"), "%s",
                          S->db_why);
            }
        }
        solve_check_free(ctx, S, A, b, x, xs);
    }
}

/* A banded matrix of dominance 0.5 whose diagonal is every row's largest entry, at its CM
 * bound: DB runs (after the probe or before the plan) with the identity matching and no CM
 * after it, so R->A shares A's pattern (only its scaled values its own); refactors with new
 * values, the solves and the destruction keep A's arrays (the memory checkers' runs). */
static void test_db_shared(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 20000, 40, 0.5, 0, 11, &A));
    if (!A) return;
    double *b, *x, *xs;
    parabola_system(ctx, A, &b, &x, &xs);
    sap_solver_options o;
    opts(&o, NULL, NULL);
    sap_solver *S = NULL;
    CHECK_OK(ctx, sap_solver_create_borrowed(ctx, A, &o, &S));
    if (S) {
        CHECK(sap_solver_setup_rhs(S, b) >= 0);
        sap_solver_stats ss;
        sap_solver_get_stats(S, &ss);
        printf("DB sharing A's pattern: DB %s, CM %s, R->A %s; first %s\n", ss.db_used ? "ran" : "off",
               ss.cm_used ? "ran" : "off", S->R_shared ? "shares A's pattern" : "a copy",
               S->att ? sap_solver_method_name(S->att->method) : "none");
        CHECK_MSG(ss.db_used && !ss.cm_used && S->R_shared && S->R->A->colind == A->colind &&
                      S->R->A->rowptr == A->rowptr && S->R->A->val != A->val,
                  "db %d cm %d shared %d", ss.db_used, ss.cm_used, S->R_shared);
        refactor_twice(S, A, b, x, xs);
        CHECK(S->R->A->colind == A->colind || !S->R_shared);
    }
    solve_check_free(ctx, S, A, b, x, xs);
}

/* CM after the probe: not run where Jacobi from the probe is predicted below CM's cost (a
 * dominant system), run then (and the chain planned in its order) where it is not (the
 * Laplacian); both solved to the tolerance. */
static void test_cm_late(sap_context *ctx)
{
    printf("CM after the probe\n");
    { /* the breadth-first bound: a path (1), a grid (ceil((m + 1) / 4)), a star (ceil((N - 1) / 2)),
       * two components (none) */
        sap_csr *T = NULL, *G = NULL, *P = NULL;
        CHECK_OK(ctx, sap_gen_poisson2d(ctx, 50, 1, &T));
        CHECK_OK(ctx, sap_gen_poisson2d(ctx, 30, 30, &G));
        sap_coo *C = NULL;
        CHECK_OK(ctx, sap_coo_create(ctx, 101, 101, 400, &C));
        for (sap_int i = 0; C && i < 101; i++) {
            sap_coo_push(C, i, i, 2.0);
            if (i > 0) {
                sap_coo_push(C, 0, i, 1.0);
                sap_coo_push(C, i, 0, 1.0);
            }
        }
        if (C) CHECK_OK(ctx, sap_csr_from_coo(C, &P));
        sap_coo_destroy(C);
        if (T && G && P) {
            CHECK(sap__solver_bfs_band_bound(ctx, T) == 1);
            CHECK_MSG(sap__solver_bfs_band_bound(ctx, G) == 8, "grid: %lld", (long long)sap__solver_bfs_band_bound(ctx, G));
            CHECK(sap__solver_bfs_band_bound(ctx, P) == 50);
            sap_csr *D = arrow_grid(ctx, 4, 0.0); /* 16 rows: no coupling (every 40th), a grid */
            CHECK(D && sap__solver_bfs_band_bound(ctx, D) == 2);
            sap_csr_destroy(D);
            P->colind[P->rowptr[50]] = 50; /* row 50 loses its edge to 0 (and 0's is kept): 0 still reaches it */
            CHECK(sap__solver_bfs_band_bound(ctx, P) == 50);
            P->colind[P->rowptr[0] + 1] = 0; /* 0 -> 1 gone as well: row 1 is not reached from 0 */
            CHECK(sap__solver_bfs_band_bound(ctx, P) == 0);
        }
        sap_csr_destroy(T);
        sap_csr_destroy(G);
        sap_csr_destroy(P);
    }
    /* 0: dominant, the probe on its own b (setup without one): Jacobi's prediction decides;
     * 1: dominant, the probe on the caller's b, which it solves: nothing more planned;
     * 2: the Laplacian: CM after the probe */
    for (int c = 0; c < 3; c++) {
        const int hard = c == 2;
        /* case 0's prediction is of all the steps (no iterate of the caller's b): a stronger
         * diagonal keeps it well below CM's on a loaded host */
        sap_csr *A = arrow_grid(ctx, 150, hard ? 0.0 : c == 0 ? 40.0 : 4.0);
        CHECK(A != NULL);
        if (!A) return;
        double *b, *x, *xs;
        parabola_system(ctx, A, &b, &x, &xs);
        sap_solver_options o;
        opts(&o, NULL, NULL);
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        if (S) {
            CHECK(c == 0 ? sap_solver_setup(S) >= 0 : sap_solver_setup_rhs(S, b) >= 0);
            sap_solver_stats ss;
            sap_solver_get_stats(S, &ss);
            printf("  %s: CM %s (%s), K %lld -> %lld, T_CM %.3g s, first %s: %s\n",
                   hard ? "Laplacian" : c ? "dominant, its b" : "dominant", ss.cm_used ? "ran" : "not run", S->cm_why,
                   (long long)ss.K_original, (long long)ss.K_cm, ss.time_cm,
                   S->att ? sap_solver_method_name(S->att->method) : "none", S->why_first);
            if (!S->probe_ran) {
                /* no probe (its steps predicted above its share of the band methods, as where
                 * the rates were measured under a memory checker or on a loaded host): CM runs
                 * once the plan is made, as test_db_late's DB */
                printf("    (no probe ran)\n");
                CHECK_MSG(ss.cm_used && ss.K_cm < ss.K_original / 4, "%s, K %lld -> %lld", S->cm_why,
                          (long long)ss.K_original, (long long)ss.K_cm);
            } else if (hard) {
                CHECK_MSG(ss.cm_used && strstr(S->cm_why, "after the probe") && ss.K_cm < ss.K_original / 4,
                          "%s, K %lld -> %lld", S->cm_why, (long long)ss.K_original, (long long)ss.K_cm);
                CHECK(S->R->A != S->A && ss.time_cm > 0);
            } else if (c == 0 && ss.cm_used) {
                /* Jacobi's prediction is of measured steps: on a loaded host (ctest -j with
                 * OpenMP threads of other tests spinning: 10 ms a step where 0.15 ms is usual)
                 * it exceeds CM's cost, and CM runs by the same rule */
                CHECK_MSG(strstr(S->cm_why, "after the probe") != NULL, "%s", S->cm_why);
            } else {
                const char *want = c ? "off: the probe solved the system" : "off: Jacobi predicted";
                CHECK_MSG(!ss.cm_used && strncmp(S->cm_why, want, strlen(want)) == 0 && ss.K_cm == ss.K_original &&
                              ss.time_cm == 0,
                          "%s", S->cm_why);
                CHECK(S->nchain > 0 && S->chain[0] == SAP_METHOD_JACOBI);
                if (c) CHECK_MSG(strncmp(S->why_first, "the probe solved the system", 27) == 0, "%s", S->why_first);
            }
        }
        solve_check_free(ctx, S, A, b, x, xs);
    }
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    test_rates(ctx);
    test_latency(ctx);
    test_model_parts(ctx);
    test_plan_passes(ctx);
    test_cm_late(ctx);
    test_db_late(ctx);
    test_db_shared(ctx);
    test_learned(ctx);
    test_nodecay(ctx);
    test_ilu(ctx);
    test_bjacobi(ctx);
    test_auto(ctx);
    sap_context_destroy(ctx);
    return 0;
}

/* ---- GPU: the rates and the sweeps' latency measured on the device -------------------------- */

static int gpu_part(void)
{
    int dryrun = 0;
    sap_context *G = NULL;
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, &dryrun);
    if (rc) return rc;
    test_rates(G);
    test_plan_passes(G);
    test_db_late(G); /* the probe and its iterate on the device, its matrix released for DB */
    test_db_shared(G);
    sap__cost_rates r;
    sap__cost_rates_get(G, &r);
    printf("  sweep step %.3g s + %.3g s x K on %s\n", r.sweep[0], r.sweep[1], sap_context_device_name(G));
    CHECK(r.sweep[0] + 200.0 * r.sweep[1] > 0 && r.sweep[0] + 200.0 * r.sweep[1] < 1e-3);
    /* the partitions swept at once: at least one a unit (SM), and P = 16 per SM of SaP-D
     * at K = 200 in at most a few rounds */
    const sap_int units = sap__ops(G)->units(G);
    const double rounds = sap__cost_sweep_rounds(G, 200000, 16 * units, 200, SAP_FLOAT);
    printf("  %lld units; P = %lld at K = 200: %.0f rounds\n", (long long)units, (long long)(16 * units), rounds);
    CHECK(rounds >= 1 && rounds <= 16);
    /* one long partition against 2,000 short ones of the same band (N = 200,000, K = 200):
     * the latency term makes the long one far slower (2N dependent steps); by the bytes
     * alone they cost the same */
    const double t1 = sap__cost_apply_seconds(G, &r, 200000, 200, 1, SAP_FLOAT, 0);
    const double tm = sap__cost_apply_seconds(G, &r, 200000, 200, 2000, SAP_FLOAT, 0);
    printf("  apply N = 200,000, K = 200: P = 1 %.3g s, P = 2000 %.3g s\n", t1, tm);
    if (!dryrun) CHECK_MSG(t1 > 20.0 * tm, "%.3g %.3g", t1, tm);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_solver_cost", cpu_part, gpu_part); }
