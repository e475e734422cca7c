/* test_determinism.c -- results are bitwise identical for any number of CPU threads.
 *
 * Every system is built in three cpu contexts of 1, 2 and 7 threads (7: more threads
 * than cores, an odd count that splits nothing evenly) and every result must be the same
 * bits (memcmp) in all three: the generated matrix itself, sap_csr_stats, sap_csr_norm,
 * sap_reorder (DB + scaling, CM, drop-off, third stage), sap_solver with each method
 * (its solution, status, iterations and partition count) and the explicit Krylov path
 * (several methods x preconditioners none, jacobi, sap-d, sap-c with automatic P).
 * The systems: banded with d < 1 and d > 1, 3D Poisson (SPD), a synthetic matrix with a
 * hidden band, and cryg10000 from $SAP_MATRIX_DIR when present.  Sizes are large enough that
 * every parallel path runs (vectors >= 32768, nnz >= 200000 for the reorderings). */
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCTX 3
static const int thread_counts[NCTX] = {1, 2, 7};
static sap_context *ctxs[NCTX];
static int ncases;

/* ---- helpers ------------------------------------------------------------------------------ */

static int same(const void *a, const void *b, size_t bytes) { return bytes == 0 || memcmp(a, b, bytes) == 0; }

static int same_csr(const sap_csr *A, const sap_csr *B)
{
    if (!A || !B) return A == B;
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz) return 0;
    const size_t nnz = (size_t)A->rowptr[A->nrows];
    return same(A->rowptr, B->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1)) &&
           same(A->colind, B->colind, sizeof(sap_int) * nnz) && same(A->val, B->val, sizeof(double) * nnz);
}

#define SAME_FIELD(a, b, f) same(&(a).f, &(b).f, sizeof((a).f))

static int same_stats(const sap_matrix_stats *a, const sap_matrix_stats *b)
{
    return SAME_FIELD(*a, *b, nrows) && SAME_FIELD(*a, *b, ncols) && SAME_FIELD(*a, *b, nnz) &&
           SAME_FIELD(*a, *b, half_bandwidth) && SAME_FIELD(*a, *b, lower_bandwidth) &&
           SAME_FIELD(*a, *b, upper_bandwidth) && SAME_FIELD(*a, *b, empty_rows) && SAME_FIELD(*a, *b, max_row_nnz) &&
           SAME_FIELD(*a, *b, mean_row_nnz) && SAME_FIELD(*a, *b, mean_row_width) &&
           SAME_FIELD(*a, *b, structurally_symmetric) && SAME_FIELD(*a, *b, numerically_symmetric) &&
           SAME_FIELD(*a, *b, symmetry_deviation) && SAME_FIELD(*a, *b, zero_diagonal) &&
           SAME_FIELD(*a, *b, diag_dominance) && SAME_FIELD(*a, *b, dominant_rows) &&
           SAME_FIELD(*a, *b, spd_estimate) && SAME_FIELD(*a, *b, norm_one) && SAME_FIELD(*a, *b, norm_inf) &&
           SAME_FIELD(*a, *b, norm_fro) && SAME_FIELD(*a, *b, norm_max);
}

/* The first index where x and y differ and the relative difference there (for messages). */
static void first_diff(const double *x, const double *y, sap_int n, sap_int *at, double *rel)
{
    *at = -1;
    *rel = 0;
    double mx = 0, nx = 0;
    for (sap_int i = 0; i < n; i++) {
        if (memcmp(&x[i], &y[i], sizeof(double)) != 0) {
            if (*at < 0) *at = i;
            double d = fabs(x[i] - y[i]);
            if (d > mx) mx = d;
        }
        if (fabs(x[i]) > nx) nx = fabs(x[i]);
    }
    *rel = nx > 0 ? mx / nx : mx;
}

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void rhs(sap_int n, double *b)
{
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + 0.5 * sin(0.37 * (double)i);
}

/* ---- matrix statistics, norms, reorderings ----------------------------------------------- */

static void check_matrix_ops(const char *sys, sap_csr *const A[NCTX])
{
    sap_matrix_stats st[NCTX];
    double nrm[NCTX][4];
    const sap_norm_type types[4] = {SAP_NORM_ONE, SAP_NORM_INF, SAP_NORM_FRO, SAP_NORM_MAX};
    for (int c = 0; c < NCTX; c++) {
        CHECK_OK(ctxs[c], sap_csr_stats(A[c], &st[c]));
        for (int t = 0; t < 4; t++) CHECK_OK(ctxs[c], sap_csr_norm(A[c], types[t], &nrm[c][t]));
    }
    for (int c = 1; c < NCTX; c++) {
        ncases += 2;
        CHECK_MSG(same_stats(&st[0], &st[c]), "%s: sap_csr_stats differs with %d threads", sys, thread_counts[c]);
        CHECK_MSG(same(nrm[0], nrm[c], sizeof(nrm[0])), "%s: sap_csr_norm differs with %d threads", sys,
                  thread_counts[c]);
    }

    /* drop-off alone, at fractions that cut inside the band */
    const double deltas[3] = {0.5, 0.9, 0.999};
    for (int k = 0; k < 3; k++) {
        sap_int Kd[NCTX];
        double kept[NCTX];
        for (int c = 0; c < NCTX; c++) CHECK_OK(ctxs[c], sap_drop_off(A[c], deltas[k], &Kd[c], &kept[c]));
        for (int c = 1; c < NCTX; c++) {
            ncases++;
            CHECK_MSG(Kd[c] == Kd[0] && same(&kept[c], &kept[0], sizeof(double)),
                      "%s: sap_drop_off(%g) differs with %d threads (K %lld vs %lld, kept %.17g vs %.17g)", sys,
                      deltas[k], thread_counts[c], (long long)Kd[0], (long long)Kd[c], kept[0], kept[c]);
        }
    }

    /* the whole chain: DB with scaling, CM, drop-off, third stage */
    sap_reorder_options o;
    sap_reorder_options_init(&o);
    o.drop_delta = 0.99;
    o.partitions = 16;
    sap_reorder_result *R[NCTX] = {NULL};
    sap_status rs[NCTX];
    for (int c = 0; c < NCTX; c++) rs[c] = sap_reorder(A[c], &o, &R[c]);
    for (int c = 1; c < NCTX; c++) {
        ncases++;
        int ok = rs[c] == rs[0] && (R[0] == NULL) == (R[c] == NULL);
        if (ok && R[0]) {
            const sap_reorder_result *a = R[0], *b = R[c];
            const size_t n = (size_t)a->n;
            ok = a->n == b->n && same(a->row_perm, b->row_perm, sizeof(sap_int) * n) &&
                 same(a->col_perm, b->col_perm, sizeof(sap_int) * n) &&
                 (a->row_scale == NULL) == (b->row_scale == NULL) &&
                 (!a->row_scale || same(a->row_scale, b->row_scale, sizeof(double) * n)) &&
                 (!a->col_scale || same(a->col_scale, b->col_scale, sizeof(double) * n)) && same_csr(a->A, b->A) &&
                 same_csr(a->A_band, b->A_band) && a->K_drop == b->K_drop &&
                 SAME_FIELD(*a, *b, kept_fraction) && a->P == b->P &&
                 same(a->offsets, b->offsets, sizeof(sap_int) * (size_t)(a->P + 1)) &&
                 same(a->Ki_before, b->Ki_before, sizeof(sap_int) * (size_t)a->P) &&
                 same(a->Ki, b->Ki, sizeof(sap_int) * (size_t)a->P) && SAME_FIELD(a->db, b->db, cost) &&
                 SAME_FIELD(a->db, b->db, log_product) && a->db.matched == b->db.matched &&
                 a->cm.K_after == b->cm.K_after && a->cm.chosen == b->cm.chosen;
            for (int s = 0; ok && s < SAP_REORDER_STAGES; s++)
                ok = a->stage[s].done == b->stage[s].done && a->stage[s].K == b->stage[s].K &&
                     a->stage[s].nnz == b->stage[s].nnz && SAME_FIELD(a->stage[s], b->stage[s], mean_row_width) &&
                     SAME_FIELD(a->stage[s], b->stage[s], band_fill) &&
                     SAME_FIELD(a->stage[s], b->stage[s], diag_dominance) &&
                     a->stage[s].zero_diagonal == b->stage[s].zero_diagonal;
        }
        CHECK_MSG(ok, "%s: sap_reorder differs with %d threads (K_drop %lld vs %lld, kept %.17g vs %.17g)", sys,
                  thread_counts[c], R[0] ? (long long)R[0]->K_drop : -1LL, R[c] ? (long long)R[c]->K_drop : -1LL,
                  R[0] ? R[0]->kept_fraction : 0.0, R[c] ? R[c]->kept_fraction : 0.0);
    }
    for (int c = 0; c < NCTX; c++) sap_reorder_result_destroy(R[c]);
}

/* ---- sap_solver, each method ------------------------------------------------------------- */

static void check_solver(const char *sys, sap_csr *const A[NCTX])
{
    const sap_solver_method methods[] = {SAP_METHOD_AUTO,     SAP_METHOD_SAPD,       SAP_METHOD_SAPC,
                                         SAP_METHOD_BAND_LU, SAP_METHOD_BAND_PIVOT, SAP_METHOD_JACOBI};
    const sap_int n = A[0]->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x[NCTX];
    rhs(n, b);
    for (int c = 0; c < NCTX; c++) x[c] = malloc(sizeof(double) * (size_t)n);
    for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
        sap_status st[NCTX];
        sap_solver_stats ss[NCTX];
        const double t0 = now();
        for (int c = 0; c < NCTX; c++) {
            sap_solver_options o;
            sap_solver_options_init(&o);
            o.method = methods[m];
            o.fallback = methods[m] == SAP_METHOD_AUTO; /* the method itself, not a fallback */
            o.krylov.maxit = 50;
            /* AUTO's cost model and time boxes decide from measured times: off, for choices
             * that do not depend on timing (docs/solver-policy.md) */
            sap_solver_options_set(&o, "time_budget", "off");
            memset(x[c], 0, sizeof(double) * (size_t)n);
            memset(&ss[c], 0, sizeof(ss[c]));
            sap_solver *S = NULL;
            st[c] = sap_solver_create(ctxs[c], A[c], &o, &S);
            if (st[c] >= 0) st[c] = sap_solver_solve(S, b, x[c]);
            if (S) sap_solver_get_stats(S, &ss[c]);
            sap_solver_destroy(S);
        }
        printf("  %-10s %s, %g iterations, P = %lld (%.2f s)\n", sap_solver_method_name(methods[m]),
               sap_status_name(st[0]), ss[0].iterations, (long long)ss[0].partitions, now() - t0);
        for (int c = 1; c < NCTX; c++) {
            ncases++;
            sap_int at;
            double rel;
            first_diff(x[0], x[c], n, &at, &rel);
            CHECK_MSG(st[c] == st[0] && at < 0 && ss[c].iterations == ss[0].iterations &&
                          ss[c].partitions == ss[0].partitions && ss[c].method == ss[0].method,
                      "%s, solver %s: %d threads differ from 1 (status %s/%s, P %lld/%lld, iterations %g/%g, "
                      "first differing x[%lld], max rel diff %.3g)",
                      sys, sap_solver_method_name(methods[m]), thread_counts[c], sap_status_name(st[0]),
                      sap_status_name(st[c]), (long long)ss[0].partitions, (long long)ss[c].partitions,
                      ss[0].iterations, ss[c].iterations, (long long)at, rel);
        }
    }
    for (int c = 0; c < NCTX; c++) free(x[c]);
    free(b);
}

/* ---- the explicit Krylov path ------------------------------------------------------------ */

static void check_krylov(const char *sys, sap_csr *const A[NCTX], int spd)
{
    const char *pcs[] = {"none", "jacobi", "sap-d", "sap-c"};
    /* async-jacobi: the cpu backend's block Jacobi (the cuda one is asynchronous and
     * nondeterministic by design, and this test runs cpu contexts) */
    const char *kry[] = {"cg",  "bicgstab", "bicgstabl:2", "gmres:20",    "idr:4",       "bicg",
                         "cgs", "qmr",      "tfqmr",       "ir:gmres",    "ir:bicgstab", "async-jacobi:3"};
    const int nk = sizeof(kry) / sizeof(kry[0]);
    const sap_int n = A[0]->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x[NCTX];
    rhs(n, b);
    for (int c = 0; c < NCTX; c++) x[c] = malloc(sizeof(double) * (size_t)n);
    sap_matrix *M[NCTX] = {NULL};
    for (int c = 0; c < NCTX; c++) CHECK_OK(ctxs[c], sap_matrix_create(ctxs[c], A[c], NULL, &M[c]));
    for (size_t p = 0; p < sizeof(pcs) / sizeof(pcs[0]); p++) {
        sap_precond *Pc[NCTX] = {NULL};
        for (int c = 0; c < NCTX; c++) {
            CHECK_OK(ctxs[c], sap_precond_create(ctxs[c], pcs[p], &Pc[c]));
            CHECK_OK(ctxs[c], sap_precond_setup_symbolic(Pc[c], A[c]));
            CHECK_OK(ctxs[c], sap_precond_setup_numeric(Pc[c], A[c]));
        }
        for (int k = 0; k < nk; k++) {
            if ((k == 0 && !spd) || (k == 1 && spd)) continue; /* CG for SPD, else BiCGStab */
            sap_status st[NCTX];
            sap_krylov_stats ks[NCTX];
            for (int c = 0; c < NCTX; c++) {
                sap_krylov_options o;
                sap_krylov_options_init(&o);
                CHECK_OK(ctxs[c], sap_krylov_parse(kry[k], &o.type, &o.param));
                o.maxit = 100;
                o.tol = 1e-10;
                sap_krylov *K = NULL;
                CHECK_OK(ctxs[c], sap_krylov_create(ctxs[c], &o, &K));
                memset(x[c], 0, sizeof(double) * (size_t)n);
                st[c] = sap_krylov_solve(K, M[c], Pc[c], b, x[c], &ks[c]);
                sap_krylov_destroy(K);
            }
            for (int c = 1; c < NCTX; c++) {
                ncases++;
                sap_int at;
                double rel;
                first_diff(x[0], x[c], n, &at, &rel);
                CHECK_MSG(st[c] == st[0] && at < 0 && ks[c].iterations == ks[0].iterations,
                          "%s, krylov %s + %s: %d threads differ from 1 (status %s/%s, iterations %g/%g, first "
                          "differing x[%lld], max rel diff %.3g)",
                          sys, kry[k], pcs[p], thread_counts[c], sap_status_name(st[0]), sap_status_name(st[c]),
                          ks[0].iterations, ks[c].iterations, (long long)at, rel);
            }
        }
        for (int c = 0; c < NCTX; c++) sap_precond_destroy(Pc[c]);
    }
    for (int c = 0; c < NCTX; c++) sap_matrix_destroy(M[c]);
    for (int c = 0; c < NCTX; c++) free(x[c]);
    free(b);
}

/* ---- driver ------------------------------------------------------------------------------ */

/* Builds the system in every context (spec, or a matrix of the collection when spec
 * starts with '@') and runs every check; krylov: also the explicit Krylov path. */
static void check_system(const char *spec, int krylov, int spd)
{
    sap_csr *A[NCTX] = {NULL};
    int ok = 1;
    for (int c = 0; c < NCTX; c++) {
        if (spec[0] == '@') A[c] = sap_test_load_matrix(ctxs[c], spec + 1);
        else CHECK_OK(ctxs[c], sap_gen_spec(ctxs[c], spec, &A[c]));
        ok &= A[c] != NULL;
    }
    CHECK_MSG(ok, "%s: not built", spec);
    if (ok) {
        printf("%s (n = %lld, nnz = %lld)\n", spec, (long long)A[0]->nrows, (long long)A[0]->nnz);
        fflush(stdout);
        for (int c = 1; c < NCTX; c++) {
            ncases++;
            CHECK_MSG(same_csr(A[0], A[c]), "%s: the matrix differs with %d threads", spec, thread_counts[c]);
        }
        double t0 = now();
        check_matrix_ops(spec, A);
        double t1 = now();
        check_solver(spec, A);
        double t2 = now();
        if (krylov) check_krylov(spec, A, spd);
        printf("  %.1f s matrix operations, %.1f s sap_solver, %.1f s Krylov\n", t1 - t0, t2 - t1, now() - t2);
    }
    for (int c = 0; c < NCTX; c++) sap_csr_destroy(A[c]);
}

int main(void)
{
    for (int c = 0; c < NCTX; c++) {
        sap_context_config cfg;
        sap_context_config_init(&cfg);
        cfg.backend = SAP_BACKEND_CPU;
        cfg.threads = thread_counts[c];
        cfg.print_level = SAP_PRINT_SILENT;
        CHECK_OK(NULL, sap_context_create(&ctxs[c], &cfg));
        if (!ctxs[c]) return 1;
        CHECK(sap_context_threads(ctxs[c]) == thread_counts[c]);
    }
    check_system("gen:banded:n=34000,k=8,d=0.6", 1, 0);
    check_system("gen:banded:n=34000,k=8,d=1.5,sym=1", 0, 1);
    check_system("gen:poisson3d:nx=8,ny=8,nz=520", 1, 1);
    check_system("gen:synthetic:n=34000,k=12,d=0.8,fill=0.5", 0, 0);
    if (sap_test_have_matrices("cryg10000")) check_system("@cryg10000", 0, 0);
    for (int c = 0; c < NCTX; c++) sap_context_destroy(ctxs[c]);
    printf("%d comparisons of 1 thread against 2 and 7\n", ncases);
    return sap_test_finish("test_determinism");
}
