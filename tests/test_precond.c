/* test_precond.c -- the preconditioner front end and its first two implementations:
 * creation by name, call-order checks (apply before setup), identity and scalar Jacobi in
 * double and float against plain loops, the precision conversion of
 * sap__precond_apply_vec (a float preconditioner on double vectors and vice versa),
 * precision changes after setup, zero / missing diagonal -> SAP_ERR_SINGULAR naming the
 * row, non-square input, and an out-of-memory sweep. */
#include "testing.h"

#include "precond/precond_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sap_csr *diag_test_matrix(sap_context *ctx, sap_int n)
{
    sap_csr *A = NULL;
    sap_gen_banded(ctx, n, 3, 2.0, 0, 7, &A);
    return A;
}

static double diag_of(const sap_csr *A, sap_int i)
{
    for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
        if (A->colind[p] == i) return A->val[p];
    return 0.0;
}

static void test_create(sap_context *ctx)
{
    sap_precond *P = NULL;
    CHECK_STATUS(ctx, sap_precond_create(ctx, "ilu99", &P), SAP_ERR_INVALID);
    CHECK(P == NULL);
    CHECK(strstr(sap_context_last_error(ctx), "jacobi") != NULL); /* lists the known names */
    CHECK_STATUS(ctx, sap_precond_create(ctx, NULL, &P), SAP_ERR_INVALID);
    CHECK(sap_precond_create(NULL, "none", &P) == SAP_ERR_INVALID);
    CHECK_OK(ctx, sap_precond_create(ctx, "jacobi", &P));
    CHECK(strcmp(sap_precond_name(P), "jacobi") == 0);
    double r[3] = {1, 2, 3}, z[3];
    CHECK_STATUS(ctx, sap_precond_apply(P, r, z), SAP_ERR_INVALID); /* before setup */
    CHECK(strstr(sap_context_last_error(ctx), "not set up") != NULL);
    CHECK_STATUS(ctx, sap_precond_set_precision(P, (sap_precision)7), SAP_ERR_INVALID);
    sap_csr *R = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 3, 4, 0, &R));
    CHECK_STATUS(ctx, sap_precond_setup_symbolic(P, R), SAP_ERR_NOT_SQUARE);
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, R), SAP_ERR_NOT_SQUARE);
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, NULL), SAP_ERR_INVALID);
    sap_csr_destroy(R);
    sap_precond_destroy(P);
    sap_precond_destroy(NULL);
    CHECK(strcmp(sap_precond_name(NULL), "none") == 0);
}

static void test_apply(sap_context *ctx)
{
    const sap_int n = 101;
    sap_csr *A = diag_test_matrix(ctx, n);
    if (!A) {
        CHECK(0);
        return;
    }
    double *r = malloc(sizeof(double) * n), *z = malloc(sizeof(double) * n);
    for (sap_int i = 0; i < n; i++) r[i] = sin((double)i) * 3.0;
    const char *names[2] = {"none", "jacobi"};
    for (int k = 0; k < 2; k++)
        for (int prec = 0; prec < 2; prec++) {
            sap_precond *P = NULL;
            CHECK_OK(ctx, sap_precond_create(ctx, names[k], &P));
            if (!P) continue;
            CHECK_OK(ctx, sap_precond_set_precision(P, prec ? SAP_FLOAT : SAP_DOUBLE));
            /* numeric without symbolic: done lazily */
            CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
            CHECK_OK(ctx, sap_precond_apply(P, r, z));
            int ok = 1;
            for (sap_int i = 0; i < n; i++) {
                double ref = k ? r[i] / diag_of(A, i) : r[i];
                ok &= fabs(z[i] - ref) <= (prec ? 2e-7 : 1e-15) * fabs(ref) + 1e-300;
            }
            CHECK_MSG(ok, "%s %s apply", names[k], prec ? "float" : "double");
            /* changing the precision invalidates the numeric setup */
            CHECK_OK(ctx, sap_precond_set_precision(P, prec ? SAP_DOUBLE : SAP_FLOAT));
            if (k == 1) CHECK_STATUS(ctx, sap_precond_apply(P, r, z), SAP_ERR_INVALID);
            CHECK_OK(ctx, sap_precond_setup_symbolic(P, A));
            CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
            CHECK_OK(ctx, sap_precond_apply(P, r, z));
            sap_precond_destroy(P);
        }

    /* backend vectors of the other precision: converted through P's work vectors */
    const sap_backend_ops *ops = sap__backend_cpu_ops();
    for (int pprec = 0; pprec < 2; pprec++)
        for (int vprec = 0; vprec < 2; vprec++) {
            sap_precond *P = NULL;
            CHECK_OK(ctx, sap_precond_create(ctx, "jacobi", &P));
            CHECK_OK(ctx, sap_precond_set_precision(P, pprec ? SAP_FLOAT : SAP_DOUBLE));
            CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
            sap_vec rv, zv;
            CHECK_OK(ctx, ops->vec_create(ctx, n, vprec ? SAP_FLOAT : SAP_DOUBLE, &rv));
            CHECK_OK(ctx, ops->vec_create(ctx, n, vprec ? SAP_FLOAT : SAP_DOUBLE, &zv));
            CHECK_OK(ctx, ops->vec_upload(ctx, &rv, r));
            CHECK_OK(ctx, sap__precond_apply_vec(P, &rv, &zv));
            CHECK_OK(ctx, ops->vec_download(ctx, &zv, z));
            int ok = 1;
            const double tol = pprec || vprec ? 3e-7 : 1e-15;
            for (sap_int i = 0; i < n; i++) {
                double ref = r[i] / diag_of(A, i);
                ok &= fabs(z[i] - ref) <= tol * fabs(ref) + 1e-300;
            }
            CHECK_MSG(ok, "apply_vec precond %d vectors %d", pprec, vprec);
            /* wrong length */
            sap_vec s;
            CHECK_OK(ctx, ops->vec_create(ctx, n + 1, SAP_DOUBLE, &s));
            CHECK_STATUS(ctx, sap__precond_apply_vec(P, &s, &s), SAP_ERR_INVALID);
            CHECK_STATUS(ctx, sap__precond_check_ready(P, n + 1), SAP_ERR_INVALID);
            ops->vec_destroy(ctx, &s);
            ops->vec_destroy(ctx, &rv);
            ops->vec_destroy(ctx, &zv);
            sap_precond_destroy(P);
        }
    free(r);
    free(z);
    sap_csr_destroy(A);
}

static void test_singular(sap_context *ctx)
{
    /* row 2 has an explicit zero diagonal, row 4 none */
    sap_int rowptr[6] = {0, 2, 4, 6, 8, 9};
    sap_int colind[9] = {0, 1, 0, 1, 1, 2, 3, 4, 3};
    double val[9] = {4, 1, 1, 4, 1, 0.0, 4, 1, 1};
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_from_arrays(ctx, 5, 5, rowptr, colind, val, &A));
    if (!A) return;
    sap_precond *P = NULL;
    CHECK_OK(ctx, sap_precond_create(ctx, "jacobi", &P));
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, A), SAP_ERR_SINGULAR);
    CHECK(strstr(sap_context_last_error(ctx), "row 2") != NULL);
    double r[5] = {1, 1, 1, 1, 1}, z[5];
    CHECK_STATUS(ctx, sap_precond_apply(P, r, z), SAP_ERR_INVALID); /* numeric setup failed */
    A->val[5] = 2.0;
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, A), SAP_ERR_SINGULAR);
    CHECK(strstr(sap_context_last_error(ctx), "row 4") != NULL);
    CHECK(strstr(sap_context_last_error(ctx), "no diagonal") != NULL);
    /* a diagonal too small for float */
    sap_int rp1[2] = {0, 1}, ci1[1] = {0};
    double v1[1] = {1e-300};
    sap_csr *B = NULL;
    CHECK_OK(ctx, sap_csr_from_arrays(ctx, 1, 1, rp1, ci1, v1, &B));
    CHECK_OK(ctx, sap_precond_set_precision(P, SAP_FLOAT));
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, B), SAP_ERR_SINGULAR);
    B->val[0] = NAN;
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, B), SAP_ERR_NONFINITE);
    sap_csr_destroy(B);
    sap_precond_destroy(P);
    sap_csr_destroy(A);
}

static void test_oom(void)
{
    for (int prec = 0; prec < 2; prec++) {
        int done = 0;
        for (long k = 0; k < 100 && !done; k++) {
            sap_test_failing_alloc state = {-1, 0, 0};
            sap_context *ctx = sap_test_failing_context(&state);
            if (!ctx) {
                CHECK(0);
                return;
            }
            sap_csr *A = diag_test_matrix(ctx, 50);
            state.fail_at = state.count + k;
            sap_precond *P = NULL;
            sap_status st = sap_precond_create(ctx, "jacobi", &P);
            if (st == SAP_OK) st = sap_precond_set_precision(P, prec ? SAP_FLOAT : SAP_DOUBLE);
            if (st == SAP_OK) st = sap_precond_setup_numeric(P, A);
            double r[50], z[50];
            for (int i = 0; i < 50; i++) r[i] = 1.0;
            if (st == SAP_OK) st = sap_precond_apply(P, r, z);
            CHECK_MSG(st == SAP_OK || st == SAP_ERR_OUT_OF_MEMORY, "k %ld: %s", k, sap_status_name(st));
            if (st == SAP_OK) done = 1;
            sap_precond_destroy(P);
            sap_csr_destroy(A);
            sap_context_destroy(ctx);
            CHECK_MSG(state.live == 0, "leak: %ld blocks (fail at %ld)", state.live, k);
        }
        CHECK(done);
    }
}

int main(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    test_create(ctx);
    test_apply(ctx);
    test_singular(ctx);
    sap_context_destroy(ctx);
    test_oom();
    return sap_test_finish("test_precond");
}
