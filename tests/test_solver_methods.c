/* test_solver_methods.c -- the strategy-method registry of sap_solver (src/solver/methods.c):
 * the public enumeration (count, names, help, parse round trip, case and aliases), every
 * built-in method forced without fallback on a small system it suits (the estimate of the
 * method used in stats.memory_estimate), and a method registered from outside the solver's
 * sources (a dense LU on the host for tiny N) that sap_solver runs when forced by name,
 * refactors, and falls back from. */
#include "testing.h"

#include "solver/solver_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const builtin_names[] = {"auto",   "sap-d",       "sap-c",       "band-lu",
                                            "band-pivot", "jacobi", "direct-host", "direct-cudss"};
#define NBUILTIN 8

/* Solves A x = A x* with opt; returns the status, the stats in *st, the residual. */
static sap_status solve(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, sap_solver_stats *st,
                        double *res)
{
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    double *xs = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    sap_solver *S = NULL;
    memset(st, 0, sizeof(*st));
    sap_status s = sap_solver_create(ctx, A, opt, &S);
    if (s >= 0) s = sap_solver_solve(S, b, x);
    if (S) sap_solver_get_stats(S, st);
    *res = sap_test_rel_residual(A, x, b);
    sap_solver_destroy(S);
    free(b);
    free(x);
    free(xs);
    return s;
}

/* ---- enumeration --------------------------------------------------------------------------- */

static void test_enumeration(void)
{
    printf("enumeration\n");
    const int n = sap_solver_method_count();
    CHECK_MSG(n >= NBUILTIN, "count %d", n);
    for (int i = 0; i < n; i++) {
        const char *name = sap_solver_method_name((sap_solver_method)i);
        const char *help = sap_solver_method_help(i);
        CHECK(name != NULL && help != NULL);
        if (!name || !help) continue;
        printf("  %d %s", i, help);
        if (i < NBUILTIN) CHECK_MSG(strcmp(name, builtin_names[i]) == 0, "%d: %s", i, name);
        /* "name: description\n", a description there */
        const size_t l = strlen(name);
        const size_t hl = strlen(help);
        CHECK_MSG(strncmp(help, name, l) == 0 && help[l] == ':' && hl > l + 4 && help[hl - 1] == '\n',
                  "help of %s: '%s'", name, help);
        /* parse round trip, also in upper case */
        sap_solver_method m = (sap_solver_method)-1;
        CHECK(sap_solver_method_parse(name, &m) == SAP_OK && (int)m == i);
        char up[64];
        snprintf(up, sizeof(up), "%s", name);
        for (char *c = up; *c; c++)
            if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
        m = (sap_solver_method)-1;
        CHECK_MSG(sap_solver_method_parse(up, &m) == SAP_OK && (int)m == i, "parse %s", up);
        /* the option by name gives the same value */
        sap_solver_options o;
        sap_solver_options_init(&o);
        CHECK(sap_solver_options_set(&o, "method", up) == SAP_OK && (int)o.method == i);
    }
    /* the enum values are the indices */
    CHECK(SAP_METHOD_AUTO == 0 && SAP_METHOD_SAPD == 1 && SAP_METHOD_SAPC == 2 && SAP_METHOD_BAND_LU == 3 &&
          SAP_METHOD_BAND_PIVOT == 4 && SAP_METHOD_JACOBI == 5 && SAP_METHOD_DIRECT_HOST == 6 &&
          SAP_METHOD_DIRECT_CUDSS == 7);
    /* aliases, mixed case */
    sap_solver_method m;
    CHECK(sap_solver_method_parse("SapD", &m) == SAP_OK && m == SAP_METHOD_SAPD);
    CHECK(sap_solver_method_parse("sapc", &m) == SAP_OK && m == SAP_METHOD_SAPC);
    CHECK(sap_solver_method_parse("BandLU", &m) == SAP_OK && m == SAP_METHOD_BAND_LU);
    CHECK(sap_solver_method_parse("bandPivot", &m) == SAP_OK && m == SAP_METHOD_BAND_PIVOT);
    CHECK(sap_solver_method_parse("Auto", &m) == SAP_OK && m == SAP_METHOD_AUTO);
    /* out of range, unknown, NULL */
    CHECK(strcmp(sap_solver_method_name((sap_solver_method)n), "unknown") == 0);
    CHECK(strcmp(sap_solver_method_name((sap_solver_method)-1), "unknown") == 0);
    CHECK(sap_solver_method_help(n) == NULL && sap_solver_method_help(-1) == NULL);
    CHECK(sap_solver_method_parse("lu", &m) == SAP_ERR_INVALID);
    CHECK(sap_solver_method_parse("", &m) == SAP_ERR_INVALID);
    CHECK(sap_solver_method_parse(NULL, &m) == SAP_ERR_INVALID);
    CHECK(sap_solver_method_parse("jacobi", NULL) == SAP_ERR_INVALID);
    sap_solver_options o;
    sap_solver_options_init(&o);
    CHECK(sap_solver_options_set(&o, "method", "lu") == SAP_ERR_INVALID && o.method == SAP_METHOD_AUTO);
    /* the options help lists every built-in */
    const char *h = sap_solver_options_help();
    CHECK(strstr(h, "method=auto|sap-d|sap-c|band-lu|band-pivot|jacobi") != NULL);
}

/* ---- every built-in forced ------------------------------------------------------------------ */

static void test_forced(sap_context *ctx)
{
    printf("forced methods (fallback=0)\n");
    sap_csr *syn = NULL, *band = NULL;
    /* a band hidden by permutations, diagonally dominant (Jacobi converges too) */
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 3000, 8, 2.0, 0.5, 7, &syn, NULL, NULL));
    /* a nonsymmetric band without dominance: a direct solve's matrix */
    CHECK_OK(ctx, sap_gen_banded(ctx, 2000, 6, 0.5, 0, 11, &band));
    struct {
        sap_solver_method m;
        const sap_csr *A;
    } cases[] = {{SAP_METHOD_SAPD, syn},       {SAP_METHOD_SAPC, syn},        {SAP_METHOD_BAND_LU, syn},
                 {SAP_METHOD_BAND_PIVOT, band}, {SAP_METHOD_BAND_PIVOT, syn}, {SAP_METHOD_JACOBI, syn}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *name = sap_solver_method_name(cases[i].m);
        sap_solver_options o;
        sap_solver_options_init(&o);
        CHECK_OK(ctx, sap_solver_options_set(&o, "method", name));
        CHECK_OK(ctx, sap_solver_options_set(&o, "fallback", "0"));
        sap_solver_stats st;
        double res = 0;
        sap_status s = solve(ctx, cases[i].A, &o, &st, &res);
        printf("  %-10s N %6lld: %s, %.4g it, res %.2e, K %lld, P %lld, estimate %lld B | %s\n", name,
               (long long)cases[i].A->nrows, sap_status_name(s), st.iterations, res, (long long)st.K_drop,
               (long long)st.partitions, (long long)st.memory_estimate, st.reason);
        CHECK_MSG(s == SAP_OK || s == SAP_WARN_BOOSTED_PIVOTS, "%s: %s", name, sap_status_name(s));
        CHECK_MSG(res <= 1e-10 * 1.0001, "%s: residual %.3g", name, res);
        CHECK_MSG(st.method == cases[i].m && st.ntries == 1 && st.tried[0].method == cases[i].m, "%s: ran %s, %d tries",
                  name, sap_solver_method_name(st.method), st.ntries);
        /* the reason names the method, given */
        char head[64];
        snprintf(head, sizeof(head), "%s: %s given", name, name);
        CHECK_MSG(strncmp(st.reason, head, strlen(head)) == 0, "%s: reason %s", name, st.reason);
        /* the estimate of the method used: > 0, and for the band methods at least the band */
        CHECK_MSG(st.memory_estimate > 0, "%s: estimate %lld", name, (long long)st.memory_estimate);
        if (cases[i].m != SAP_METHOD_JACOBI) {
            const double bytes = (double)cases[i].A->nrows * (2.0 * (double)st.K_drop + 1.0) *
                                 (st.factor_precision == SAP_FLOAT ? 4.0 : 8.0);
            CHECK_MSG((double)st.memory_estimate >= bytes, "%s: estimate %lld < band %.0f", name,
                      (long long)st.memory_estimate, bytes);
            CHECK(st.K_drop > 0);
        }
        if (cases[i].m == SAP_METHOD_SAPC) CHECK(st.partitions >= 2);
        if (cases[i].m == SAP_METHOD_BAND_LU || cases[i].m == SAP_METHOD_BAND_PIVOT) CHECK(st.partitions == 1);
        if (cases[i].m == SAP_METHOD_BAND_PIVOT) CHECK(st.iterations <= 4 && strstr(st.reason, "dgbtrf") != NULL);
        if (cases[i].m == SAP_METHOD_JACOBI) CHECK(st.K_drop == 0);
    }
    sap_csr_destroy(syn);
    sap_csr_destroy(band);
}

/* ---- a method registered from outside: a dense LU on the host ------------------------------- */

#define DENSE_MAX_N 400

typedef struct dense_lu {
    sap_int n;
    double *lu; /* n x n, column-major, L and U */
    sap_int *piv;
    double *y;
} dense_lu;

static int dense_builds, dense_numerics, dense_solves, dense_destroys;

static void dense_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                           sap_precision prec, sap__sm_estimate *e)
{
    (void)t;
    (void)P;
    (void)K;
    (void)prec;
    const double n = (double)S->A->nrows;
    e->bytes = (int64_t)(n * n * 8 + n * 16);
    e->flops = 2.0 / 3.0 * n * n * n;
}

/* LU with partial pivoting of the attempt's full matrix (CM order, DB scaled). */
static sap_status dense_factor(sap_solver *S, sap__attempt *a)
{
    dense_lu *F = a->impl;
    const sap_csr *A = sap__solver_att_full(S, a);
    const sap_int n = F->n;
    memset(F->lu, 0, sizeof(double) * (size_t)(n * n));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) F->lu[i + A->colind[p] * n] = A->val[p];
    for (sap_int k = 0; k < n; k++) {
        sap_int r = k;
        for (sap_int i = k + 1; i < n; i++)
            if (fabs(F->lu[i + k * n]) > fabs(F->lu[r + k * n])) r = i;
        F->piv[k] = r;
        if (F->lu[r + k * n] == 0)
            return SAP_ERROR(S->ctx, SAP_ERR_SINGULAR, "dense-lu: zero pivot in column %lld", (long long)k);
        if (r != k)
            for (sap_int j = 0; j < n; j++) {
                double t = F->lu[k + j * n];
                F->lu[k + j * n] = F->lu[r + j * n];
                F->lu[r + j * n] = t;
            }
        for (sap_int i = k + 1; i < n; i++) F->lu[i + k * n] /= F->lu[k + k * n];
        for (sap_int j = k + 1; j < n; j++)
            for (sap_int i = k + 1; i < n; i++) F->lu[i + j * n] -= F->lu[i + k * n] * F->lu[k + j * n];
    }
    return SAP_OK;
}

static sap_status dense_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    (void)reject;
    const sap_int n = S->A->nrows;
    dense_builds++;
    if (n > DENSE_MAX_N)
        return SAP_ERROR(S->ctx, SAP_ERR_TOO_LARGE, "dense-lu: N = %lld > %d", (long long)n, DENSE_MAX_N);
    dense_lu *F = calloc(1, sizeof(*F));
    if (!F) return SAP_ERR_OUT_OF_MEMORY;
    a->impl = F;
    F->n = n;
    F->lu = malloc(sizeof(double) * (size_t)(n * n));
    F->piv = malloc(sizeof(sap_int) * (size_t)n);
    F->y = malloc(sizeof(double) * (size_t)n);
    if (!F->lu || !F->piv || !F->y) return SAP_ERR_OUT_OF_MEMORY;
    sap_status st = dense_factor(S, a);
    snprintf(note + strlen(note), nl - strlen(note), "%sdense LU of %lld x %lld", note[0] ? ", " : "", (long long)n,
             (long long)n);
    return st;
}

static sap_status dense_numeric(sap_solver *S, sap__attempt *a)
{
    dense_numerics++;
    return dense_factor(S, a);
}

static sap_status dense_solve(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                              const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters, double *tkry)
{
    (void)X0;
    (void)ldx0;
    (void)tkry;
    dense_lu *F = a->impl;
    const sap_int n = F->n;
    double *y = F->y;
    dense_solves++;
    for (sap_int c = 0; c < m; c++) {
        sap_status st = sap_reorder_apply_rhs(S->R, R + c * ldr, y);
        if (st < 0) return st;
        for (sap_int k = 0; k < n; k++) { /* P b (the rows were swapped whole) */
            double t = y[k];
            y[k] = y[F->piv[k]];
            y[F->piv[k]] = t;
        }
        for (sap_int k = 0; k < n; k++)
            for (sap_int i = k + 1; i < n; i++) y[i] -= F->lu[i + k * n] * y[k];
        for (sap_int k = n - 1; k >= 0; k--) {
            y[k] /= F->lu[k + k * n];
            for (sap_int i = 0; i < k; i++) y[i] -= F->lu[i + k * n] * y[k];
        }
        st = sap_reorder_undo_solution(S->R, y, X + c * ldx);
        if (st < 0) return st;
    }
    if (iters) *iters += 1;
    return SAP_OK;
}

static void dense_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    (void)S;
    (void)a;
    snprintf(buf, size, "dense LU");
}

static void dense_destroy(sap_solver *S, sap__attempt *a)
{
    (void)S;
    dense_lu *F = a->impl;
    dense_destroys++;
    if (!F) return;
    free(F->lu);
    free(F->piv);
    free(F->y);
    free(F);
    a->impl = NULL;
}

static const sap__solver_method_type dense_type = {
    .name = "dense-lu",
    .alias = "denselu",
    .help = "a dense LU with partial pivoting on the host (tests; N <= 400)",
    .band = SAP__SM_BAND_NONE,
    .refine_passes = 3,
    .refine_slow = SAP__REFINE_SLOW_GOES_ON,
    .direct = 1,
    .estimate = dense_estimate,
    .build = dense_build,
    .numeric = dense_numeric,
    .solve = dense_solve,
    .report = dense_report,
    .destroy = dense_destroy,
};

static void test_registered(sap_context *ctx)
{
    printf("a registered method\n");
    const int n0 = sap_solver_method_count();
    /* bad registrations: nothing is added */
    sap__solver_method_type bad = dense_type;
    CHECK(sap__solver_method_register(NULL, NULL) == SAP_ERR_INVALID);
    bad.name = "sap-d";
    CHECK(sap__solver_method_register(&bad, NULL) == SAP_ERR_INVALID); /* taken */
    bad.name = "Auto";
    CHECK(sap__solver_method_register(&bad, NULL) == SAP_ERR_INVALID);
    bad.name = "fresh";
    bad.alias = "BANDPIVOT";
    CHECK(sap__solver_method_register(&bad, NULL) == SAP_ERR_INVALID); /* alias taken */
    bad = dense_type;
    bad.build = NULL;
    CHECK(sap__solver_method_register(&bad, NULL) == SAP_ERR_INVALID);
    CHECK(sap_solver_method_count() == n0);

    sap_solver_method value = SAP_METHOD_AUTO;
    CHECK(sap__solver_method_register(&dense_type, &value) == SAP_OK);
    CHECK_MSG((int)value == n0 && sap_solver_method_count() == n0 + 1, "value %d, count %d", (int)value,
              sap_solver_method_count());
    CHECK(sap__solver_method_register(&dense_type, NULL) == SAP_ERR_INVALID); /* only once */
    CHECK(strcmp(sap_solver_method_name(value), "dense-lu") == 0);
    CHECK(sap_solver_method_help(n0) && strncmp(sap_solver_method_help(n0), "dense-lu: a dense LU", 20) == 0);
    sap_solver_method m = SAP_METHOD_AUTO;
    CHECK(sap_solver_method_parse("Dense-LU", &m) == SAP_OK && m == value);
    CHECK(sap_solver_method_parse("denselu", &m) == SAP_OK && m == value);
    CHECK(sap__solver_method_get(value) == &dense_type);

    /* forced by name, no fallback: a small nonsymmetric system */
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 300, 5, 0.5, 0.5, 5, &A, NULL, NULL));
    sap_solver_options o;
    sap_solver_options_init(&o);
    CHECK_OK(ctx, sap_solver_options_set(&o, "method", "dense-lu"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "fallback", "0"));
    CHECK(o.method == value);
    sap_solver_stats st;
    double res = 0;
    sap_status s = solve(ctx, A, &o, &st, &res);
    printf("  dense-lu: %s, %.4g it, res %.2e, estimate %lld | %s | %s\n", sap_status_name(s), st.iterations, res,
           (long long)st.memory_estimate, st.reason, st.tried[0].note);
    CHECK_MSG(s == SAP_OK, "dense-lu: %s", sap_status_name(s));
    CHECK_MSG(res <= 1e-10, "dense-lu: residual %.3g", res);
    CHECK(st.method == value && st.ntries == 1 && st.tried[0].method == value && st.tried[0].status == SAP_OK);
    CHECK(st.iterations >= 1 && st.iterations <= 4);
    CHECK(strncmp(st.reason, "dense-lu: dense-lu given", 24) == 0 && strstr(st.reason, "dense LU") != NULL);
    CHECK(st.K_drop == 0 && st.partitions == 1);
    CHECK(st.memory_estimate == (int64_t)(300.0 * 300 * 8 + 300 * 16));
    CHECK(strstr(st.tried[0].note, "dense LU of 300 x 300") != NULL);
    CHECK(dense_builds >= 1 && dense_solves >= 1 && dense_destroys == dense_builds);

    /* refactor: its numeric, new values solved */
    sap_solver *S = NULL;
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    double *v = malloc(sizeof(double) * (size_t)A->nnz);
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 7);
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    for (sap_int p = 0; p < A->nnz; p++) v[p] = A->val[p] * (1.0 + 0.25 * (double)(p % 3));
    const int nn = dense_numerics;
    CHECK_OK(ctx, sap_solver_refactor(S, v));
    CHECK(dense_numerics == nn + 1);
    memset(x, 0, sizeof(double) * (size_t)n);
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    sap_solver_get_stats(S, &st);
    CHECK(st.method == value && st.relative_residual <= 1e-10);
    sap_csr *B = NULL;
    CHECK_OK(ctx, sap_csr_copy(A, &B));
    memcpy(B->val, v, sizeof(double) * (size_t)A->nnz);
    CHECK(sap_test_rel_residual(B, x, b) <= 1e-10);
    sap_csr_destroy(B);
    sap_solver_destroy(S);
    free(b);
    free(x);
    free(v);
    sap_csr_destroy(A);

    /* too large for it: with fallback the chain goes on to the built-ins */
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 1000, 5, 2.0, 0.5, 5, &A, NULL, NULL));
    CHECK_OK(ctx, sap_solver_options_set(&o, "fallback", "1"));
    s = solve(ctx, A, &o, &st, &res);
    printf("  dense-lu N = 1000 with fallback: %s by %s, %d tries (%s: %s)\n", sap_status_name(s),
           sap_solver_method_name(st.method), st.ntries, sap_status_name(st.tried[0].status), st.tried[0].note);
    CHECK_MSG(s == SAP_OK || s == SAP_WARN_BOOSTED_PIVOTS, "%s", sap_status_name(s));
    CHECK(st.ntries >= 2 && st.tried[0].method == value && st.tried[0].status == SAP_ERR_TOO_LARGE);
    CHECK(st.method != value && st.method != SAP_METHOD_AUTO && res <= 1e-10);
    CHECK(strstr(st.reason, "fallback 1 of the chain (dense-lu failed)") != NULL);
    /* without fallback the failure is the result */
    CHECK_OK(ctx, sap_solver_options_set(&o, "fallback", "0"));
    s = solve(ctx, A, &o, &st, &res);
    CHECK(s == SAP_ERR_TOO_LARGE && st.ntries == 1);
    sap_csr_destroy(A);
}

int main(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    test_enumeration();
    test_forced(ctx);
    test_registered(ctx);
    test_enumeration(); /* the registered method listed too */
    sap_context_destroy(ctx);
    return sap_test_finish("test_solver_methods");
}
