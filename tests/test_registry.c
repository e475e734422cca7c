/* test_registry.c -- a preconditioner type and a Krylov method registered from this file
 * alone (no library source knows them), then used through the public API only: a scaled
 * identity M^-1 = scale * I with one typed option, and Richardson iteration
 * x += M^-1 (b - A x).  Also the enumeration, option errors and the report. */
#include "testing.h"

#include "krylov/krylov_impl.h"
#include "precond/precond_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the dummy preconditioner: z = scale * r ------------------------------------------------ */

typedef struct dummy_opts {
    double scale;
    int applies_counted; /* a second option of another kind (bool) */
} dummy_opts;

static const sap_opt_def dummy_opt_defs[] = {
    {.name = "scale", .help = "M^-1 = scale * I", .def = "1", .kind = SAP_OPT_REAL,
     SAP_OPT_AT(dummy_opts, scale), .lo = 1e-300, .hi = 1e300},
    {.name = "count", .help = "count the applications", .def = "0", .kind = SAP_OPT_BOOL,
     SAP_OPT_AT(dummy_opts, applies_counted)},
};

static long dummy_applies;
static int dummy_numeric_calls;

static sap_status dummy_numeric(sap_precond *P, const sap_csr *A)
{
    (void)P;
    (void)A;
    dummy_numeric_calls++;
    return SAP_OK;
}

static sap_status dummy_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    const dummy_opts *o = P->opts;
    if (o->applies_counted) dummy_applies++;
    const sap_backend_ops *ops = sap__ops(P->ctx);
    sap_status st = ops->copy(P->ctx, r, z);
    if (st < 0) return st;
    return ops->scale(P->ctx, z, o->scale);
}

static void dummy_report(const sap_precond *P, char *buf, size_t size)
{
    snprintf(buf, size, "dummy applied with scale %g", ((const dummy_opts *)P->opts)->scale);
}

static const sap_precond_type dummy_type = {
    .name = "dummy",
    .help = "scaled identity (test_registry.c)",
    .opts = dummy_opt_defs,
    .nopts = 2,
    .opts_size = sizeof(dummy_opts),
    .setup_numeric = dummy_numeric,
    .apply = dummy_apply,
    .report = dummy_report,
};

/* ---- the dummy Krylov method: Richardson, x += M^-1 r (right preconditioning) ---------------- */

static int richardson_nvec(int param)
{
    (void)param;
    return 2; /* r, z */
}

static sap_status richardson_run(kry_solve *s)
{
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *z = &s->w[1], *x = s->x;
    double rn = 0.0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    for (;;) {
        SAP_TRY(sap__krylov_prec(s, r, z));
        SAP_TRY(s->ops->axpby(s->ctx, 1.0, z, 1.0, x));
        SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
        if (sap__krylov_check(s, s->iter + 1.0, rn)) break;
        SAP_TRY(sap__krylov_track_best(s, x));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static const sap_krylov_method richardson = {
    .name = "plain-richardson",
    .help = "plain Richardson iteration x += M^-1 (b - A x) (test_registry.c)",
    .nvec = richardson_nvec,
    .steps = 1,
    .sides = KRY_SIDES_RIGHT,
    .run = richardson_run,
};

/* ---- tests -------------------------------------------------------------------------------------- */

static void test_register(sap_krylov_type *rich)
{
    printf("register\n");
    const int npc = sap_precond_type_count(), nkr = sap_krylov_method_count();
    CHECK(npc >= 5 && nkr >= 6);
    CHECK(sap__precond_find("dummy") == NULL);
    CHECK(sap__precond_register(&dummy_type) == SAP_OK);
    CHECK(sap__precond_register(&dummy_type) == SAP_ERR_INVALID); /* the name is taken */
    CHECK(sap__precond_register(NULL) == SAP_ERR_INVALID);
    CHECK(sap_precond_type_count() == npc + 1);
    CHECK(sap_precond_type_name(npc) && strcmp(sap_precond_type_name(npc), "dummy") == 0);
    CHECK(sap_precond_type_name(npc + 1) == NULL && sap_precond_type_name(-1) == NULL);
    const char *help = sap_precond_type_help(npc);
    CHECK_MSG(help && strstr(help, "dummy: scaled identity") && strstr(help, "scale=") && strstr(help, "default 1"),
              "help: %s", help ? help : "(null)");
    /* the built-ins' help comes from their tables */
    int found_sapc = 0;
    for (int i = 0; i < sap_precond_type_count(); i++)
        if (!strcmp(sap_precond_type_name(i), "sap-c")) {
            found_sapc = 1;
            CHECK(strstr(sap_precond_type_help(i), "partitions=") != NULL);
        }
    CHECK(found_sapc);

    *rich = SAP_KRYLOV_CG;
    CHECK(sap__krylov_register(&richardson, rich) == SAP_OK);
    CHECK((int)*rich >= SAP_KRYLOV_FIRST_REGISTERED);
    CHECK(sap__krylov_register(&richardson, NULL) == SAP_ERR_INVALID);
    CHECK(sap_krylov_method_count() == nkr + 1);
    CHECK(strcmp(sap_krylov_method_name(nkr), "plain-richardson") == 0);
    CHECK(strstr(sap_krylov_method_help(nkr), "plain Richardson") != NULL);
    sap_krylov_type t = SAP_KRYLOV_CG;
    int p = -1;
    CHECK(sap_krylov_parse("Plain-Richardson", &t, &p) == SAP_OK && t == *rich && p == 0);
    CHECK(sap_krylov_parse("plain-richardson:2", &t, &p) == SAP_ERR_INVALID); /* no parameter */
    CHECK(strcmp(sap_krylov_name(*rich), "plain-richardson") == 0);
}

/* Solves with the dummy preconditioner at the given scale; returns the status. */
static sap_status solve(sap_context *ctx, const sap_csr *A, sap_krylov_type rich, const char *scale, sap_int maxit,
                        sap_krylov_stats *ks, double *relres)
{
    const sap_int n = A->nrows;
    double *b = calloc((size_t)n, sizeof(double)), *x = calloc((size_t)n, sizeof(double));
    double *xs = malloc((size_t)n * sizeof(double));
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_status st = SAP_ERR_INVALID;
    if (!b || !x || !xs) goto out;
    for (sap_int i = 0; i < n; i++) xs[i] = 1.0 + (double)(i % 7);
    CHECK_OK(ctx, sap_csr_spmv(A, 1.0, xs, 0.0, b));
    CHECK_OK(ctx, sap_matrix_create(ctx, A, NULL, &M));
    CHECK_OK(ctx, sap_precond_create(ctx, "DUMMY", &P)); /* names are case-insensitive */
    if (!M || !P) goto out;
    if (scale) CHECK_OK(ctx, sap_precond_set_option(P, "scale", scale));
    CHECK_OK(ctx, sap_precond_set_option(P, "count", "yes"));
    CHECK_OK(ctx, sap_precond_setup_symbolic(P, A));
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    sap_krylov_options ko;
    sap_krylov_options_init(&ko);
    ko.type = rich;
    ko.tol = 1e-10;
    ko.maxit = maxit;
    CHECK_OK(ctx, sap_krylov_create(ctx, &ko, &K));
    if (!K) goto out;
    dummy_applies = 0;
    st = sap_krylov_solve(K, M, P, b, x, ks);
    *relres = sap_test_rel_residual(A, x, b);
    CHECK(dummy_applies == ks->precond_count); /* the dummy's apply ran */
out:
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    free(b);
    free(x);
    free(xs);
    return st;
}

static void test_solve(sap_context *ctx, sap_krylov_type rich)
{
    printf("solve\n");
    /* SPD, degree of diagonal dominance 4: the eigenvalues lie in the Gershgorin interval
     * [lo, hi] = [min 0.75 a_ii, max 1.25 a_ii]; Richardson with scale 2 / (lo + hi)
     * contracts by (hi - lo) / (hi + lo) per step. */
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 300, 3, 4.0, 1, 5, &A));
    if (!A) return;
    double lo = INFINITY, hi = 0.0;
    for (sap_int i = 0; i < A->nrows; i++) {
        double diag = 0.0, off = 0.0;
        for (sap_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) diag = A->val[k];
            else off += fabs(A->val[k]);
        if (diag - off < lo) lo = diag - off;
        if (diag + off > hi) hi = diag + off;
    }
    CHECK(lo > 0.0 && hi > 2.0); /* so scale = 1 (the default) diverges */
    char scale[64];
    snprintf(scale, sizeof(scale), "%.17g", 2.0 / (lo + hi));

    /* the option takes effect: converged with the right scale ... */
    sap_krylov_stats ks;
    double rel = 1.0;
    sap_status st = solve(ctx, A, rich, scale, 5000, &ks, &rel);
    CHECK_MSG(st == SAP_OK, "richardson + dummy: %s (%s)", sap_status_name(st), sap_context_last_error(ctx));
    CHECK_MSG(rel < 1e-9 && ks.true_residual <= 1e-10, "relative residual %g / %g", rel, ks.true_residual);
    double rate = (hi - lo) / (hi + lo);
    double bound = log(1e-10) / log(rate) + 5.0; /* steps the contraction needs at most */
    CHECK_MSG(ks.iterations >= 2 && ks.iterations <= bound, "%g iterations (bound %g)", ks.iterations, bound);
    CHECK(ks.precond_count >= (sap_int)ks.iterations);

    /* ... and not with the default scale 1 */
    st = solve(ctx, A, rich, NULL, 100, &ks, &rel);
    CHECK_MSG(st != SAP_OK, "scale 1 converged (%s)", sap_status_name(st));
    CHECK(!(rel < 1e-9));
    sap_csr_destroy(A);
}

static void test_options(sap_context *ctx)
{
    printf("options\n");
    sap_precond *P = NULL;
    CHECK_OK(ctx, sap_precond_create(ctx, "dummy", &P));
    if (!P) return;
    char buf[2048];
    CHECK_OK(ctx, sap_precond_get_option(P, "scale", buf, sizeof(buf)));
    CHECK_MSG(strcmp(buf, "1") == 0, "default scale '%s'", buf);
    CHECK_OK(ctx, sap_precond_set_option(P, "SCALE", "0.25"));
    CHECK_OK(ctx, sap_precond_get_option(P, "scale", buf, sizeof(buf)));
    CHECK_MSG(strcmp(buf, "0.25") == 0, "scale '%s'", buf);
    /* errors name the option, the value and what is accepted; P unchanged */
    CHECK(sap_precond_set_option(P, "scale", "-2") == SAP_ERR_INVALID);
    const char *msg = sap_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "'scale'") && strstr(msg, "'-2'") && strstr(msg, "in ["), "message: %s", msg);
    CHECK(sap_precond_set_option(P, "scale", "abc") == SAP_ERR_INVALID);
    CHECK(sap_precond_set_option(P, "omega", "1") == SAP_ERR_INVALID);
    msg = sap_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "unknown option 'omega'") && strstr(msg, "scale"), "message: %s", msg);
    CHECK(sap_precond_set_options(P, "count=1,scale=0") == SAP_ERR_INVALID); /* all or nothing */
    CHECK_OK(ctx, sap_precond_get_option(P, "count", buf, sizeof(buf)));
    CHECK(strcmp(buf, "0") == 0);
    CHECK_OK(ctx, sap_precond_set_options(P, " count = on , scale=0.5 "));
    CHECK_OK(ctx, sap_precond_get_option(P, "scale", buf, sizeof(buf)));
    CHECK(strcmp(buf, "0.5") == 0);
    /* apply z = scale * r through the public host-vector path */
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 10, 1, 2.0, 0, 1, &A));
    double r[10], z[10];
    for (int i = 0; i < 10; i++) r[i] = i - 3.0;
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    CHECK_OK(ctx, sap_precond_apply(P, r, z));
    for (int i = 0; i < 10; i++) CHECK(z[i] == 0.5 * r[i]);
    /* a new option value needs a new numeric setup */
    int calls = dummy_numeric_calls;
    CHECK_OK(ctx, sap_precond_set_option(P, "scale", "2"));
    CHECK(sap_precond_apply(P, r, z) == SAP_ERR_INVALID);
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    CHECK(dummy_numeric_calls == calls + 1);
    CHECK_OK(ctx, sap_precond_apply(P, r, z));
    for (int i = 0; i < 10; i++) CHECK(z[i] == 2.0 * r[i]);
    /* reports */
    CHECK_OK(ctx, sap_precond_report(P, 0, buf, sizeof(buf)));
    CHECK_MSG(strstr(buf, "dummy") && strstr(buf, "scale=2") && strstr(buf, "with scale 2"), "report: %s", buf);
    CHECK_OK(ctx, sap_precond_report(P, 1, buf, sizeof(buf)));
    CHECK_MSG(strstr(buf, "\"scale\": 2") && strstr(buf, "\"type\": \"dummy\""), "json: %s", buf);
    sap_precond_destroy(P);

    /* built-in types: options through the type's table, never by name prefix */
    CHECK_OK(ctx, sap_precond_create(ctx, "jacobi", &P));
    CHECK(sap_precond_set_option(P, "partitions", "2") == SAP_ERR_INVALID);
    sap_precond_destroy(P);
    CHECK_OK(ctx, sap_precond_create(ctx, "sap-d", &P));
    CHECK_OK(ctx, sap_precond_set_option(P, "partitions", "2"));
    CHECK(sap_precond_set_option(P, "method", "sap-c") == SAP_ERR_INVALID); /* only "sap" has it */
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    sap_band_stats bs;
    CHECK_OK(ctx, sap_precond_get_band_stats(P, &bs));
    CHECK(bs.partitions == 2);
    CHECK_OK(ctx, sap_precond_report(P, 0, buf, sizeof(buf)));
    CHECK_MSG(strstr(buf, "partitions=2") && strstr(buf, "P = 2"), "report: %s", buf);
    sap_precond_destroy(P);
    sap_csr_destroy(A);
}

int main(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    sap_krylov_type rich = SAP_KRYLOV_CG;
    test_register(&rich);
    test_solve(ctx, rich);
    test_options(ctx);
    sap_context_destroy(ctx);
    return sap_test_finish("test_registry");
}
