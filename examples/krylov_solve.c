/* krylov_solve.c -- example: solve a manufactured system A x = b with a preconditioned
 * Krylov method on the default backend (cuda when a GPU is present, else cpu), then solve
 * again after new values with the same pattern.  Uses only <sap.h>.
 *
 *   krylov_solve [FILE|SPEC] [KRYLOV] [PRECOND]   (default gen:poisson2d:n=200 cg jacobi)
 */
#include <sap.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                 \
    do {                                                                                            \
        st = (call);                                                                                \
        if (st < 0) goto fail;                                                                      \
    } while (0)

static double rel_error(const double *x, const double *xs, sap_int n)
{
    double e = 0, s = 0;
    for (sap_int i = 0; i < n; i++) {
        e += (x[i] - xs[i]) * (x[i] - xs[i]);
        s += xs[i] * xs[i];
    }
    return sqrt(e / s);
}

int main(int argc, char **argv)
{
    const char *input = argc > 1 ? argv[1] : "gen:poisson2d:n=200";
    const char *method = argc > 2 ? argv[2] : "cg";
    const char *pcname = argc > 3 ? argv[3] : "jacobi";
    sap_context *ctx = NULL;
    sap_csr *A = NULL;
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    double *xs = NULL, *b = NULL, *x = NULL;
    sap_status st = sap_context_create(&ctx, NULL);
    if (st != SAP_OK) {
        fprintf(stderr, "cannot create a context: %s\n", sap_status_string(st));
        return 1;
    }
    printf("backend: %s\n", sap_context_device_name(ctx));
    CHECK(sap_matrix_load(ctx, input, NULL, &A));
    sap_int n = A->nrows;
    xs = malloc(sizeof(double) * (size_t)n);
    b = malloc(sizeof(double) * (size_t)n);
    x = calloc((size_t)n, sizeof(double));
    if (!xs || !b || !x) {
        st = SAP_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    CHECK(sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs));
    CHECK(sap_csr_spmv(A, 1.0, xs, 0.0, b));

    sap_krylov_options opt;
    sap_krylov_options_init(&opt);
    CHECK(sap_krylov_parse(method, &opt.type, &opt.param));
    CHECK(sap_matrix_create(ctx, A, NULL, &M)); /* SpMV format chosen automatically */
    CHECK(sap_precond_create(ctx, pcname, &P));
    CHECK(sap_precond_setup_symbolic(P, A));
    CHECK(sap_precond_setup_numeric(P, A));
    CHECK(sap_krylov_create(ctx, &opt, &K));

    sap_krylov_stats ks;
    st = sap_krylov_solve(K, M, P, b, x, &ks);
    if (st < 0) goto fail;
    printf("%s + %s on %s (%s SpMV): %s after %g iterations, residual %.2e, error %.2e\n",
           sap_krylov_name(opt.type), sap_precond_name(P), input, sap_spmv_format_name(sap_matrix_format(M)),
           sap_status_name(st), ks.iterations, ks.true_residual, rel_error(x, xs, n));
    int rc = st == SAP_OK ? 0 : 1;

    /* new values, same pattern: scale A by 2 (so x = x* / 2 for the same b); the symbolic
     * work (formats, preconditioner analysis) is kept */
    for (sap_int k = 0; k < A->nnz; k++) A->val[k] *= 2.0;
    CHECK(sap_matrix_update_values(M, A->val));
    CHECK(sap_precond_setup_numeric(P, A));
    for (sap_int i = 0; i < n; i++) {
        xs[i] *= 0.5;
        x[i] = 0.0;
    }
    st = sap_krylov_solve(K, M, P, b, x, &ks);
    if (st < 0) goto fail;
    printf("after new values: %s after %g iterations, error %.2e\n", sap_status_name(st), ks.iterations,
           rel_error(x, xs, n));
    if (st != SAP_OK) rc = 1;

    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    free(xs);
    free(b);
    free(x);
    return rc;
fail:
    fprintf(stderr, "error: %s: %s\n", sap_status_string(st), sap_context_last_error(ctx));
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    free(xs);
    free(b);
    free(x);
    return 1;
}
