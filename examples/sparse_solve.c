/* sparse_solve.c -- solve a general sparse system with the SaP pipeline (sap_solver):
 * options set by name, three right-hand sides solved together, a refactorization with new
 * values on the same pattern, and the statistics with the papers' timing names.
 *
 *   example_sparse_solve [MATRIX.mtx[.gz] | gen:SPEC] [NAME=VALUE ...]
 *
 * Without arguments it builds a synthetic sparse matrix (a band of half-width 40 hidden by
 * random row and column permutations).  Uses only the public header. */
#include <sap.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_stats(const sap_solver_stats *s)
{
    printf("  method %s, P = %lld, %s factors, %s\n", sap_solver_method_name(s->method), (long long)s->partitions,
           s->factor_precision == SAP_FLOAT ? "float" : "double", sap_krylov_name(s->krylov_type));
    printf("  reason: %s\n", s->reason);
    for (int i = 0; i < s->ntries; i++)
        printf("  tried %d: %-10s %-22s %s\n", i + 1, sap_solver_method_name(s->tried[i].method),
               sap_status_name(s->tried[i].status), s->tried[i].note);
    printf("  K_original %lld, K_cm %lld, K_drop %lld, K_max %lld; DB %s, spd %d\n", (long long)s->K_original,
           (long long)s->K_cm, (long long)s->K_drop, (long long)s->K_max, s->db_used ? "on" : "off", s->spd);
    printf("  T_DB %.4f  T_CM %.4f  T_Drop %.4f  T_Dtransf %.4f  T_Asmbl %.4f  T_LU %.4f  T_SPK %.4f  T_LUrdcd %.4f"
           "  T_Kry %.4f (s)\n",
           s->time_db, s->time_cm, s->time_drop, s->time_transfer, s->time_asmbl, s->time_lu, s->time_spk,
           s->time_lurdcd, s->time_kry);
    printf("  setup %.4f s, solve %.4f s, %g iterations, worst residual %.2e\n", s->time_setup, s->time_solve,
           s->iterations, s->relative_residual);
}

int main(int argc, char **argv)
{
    const char *input = argc > 1 ? argv[1] : "gen:synthetic:N=20000,K=40,d=1,fill=0.3";
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, NULL);
    if (st != SAP_OK) {
        fprintf(stderr, "context: %s\n", sap_status_string(st));
        return 1;
    }
    sap_csr *A = NULL;
    sap_solver *S = NULL;
    double *B = NULL, *X = NULL, *XS = NULL, *v = NULL;
    int rc = 1;
    if ((st = sap_matrix_load(ctx, input, NULL, &A)) < 0) goto fail; /* > 0: a warning, A is read */
    if (A->nrows != A->ncols) {
        fprintf(stderr, "the matrix is not square\n");
        goto out;
    }
    const sap_int n = A->nrows, k = 3;
    printf("%s: N = %lld, nnz = %lld\n", input, (long long)n, (long long)A->nnz);

    /* options by name, as a configuration file or command line would give them */
    sap_solver_options opt;
    sap_solver_options_init(&opt);
    sap_solver_options_set(&opt, "tol", "1e-10");
    for (int i = 2; i < argc; i++) {
        char name[64];
        const char *eq = strchr(argv[i], '=');
        size_t len = eq ? (size_t)(eq - argv[i]) : 0;
        if (!eq || len >= sizeof(name)) {
            fprintf(stderr, "options are NAME=VALUE\n%s", sap_solver_options_help());
            goto out;
        }
        memcpy(name, argv[i], len);
        name[len] = 0;
        if (sap_solver_options_set(&opt, name, eq + 1) != SAP_OK) {
            fprintf(stderr, "bad option %s\n%s", argv[i], sap_solver_options_help());
            goto out;
        }
    }

    /* three right-hand sides b_j = A x*_j */
    B = malloc(sizeof(double) * (size_t)(n * k));
    X = calloc((size_t)(n * k), sizeof(double));
    XS = malloc(sizeof(double) * (size_t)(n * k));
    v = malloc(sizeof(double) * (size_t)(A->nnz > 0 ? A->nnz : 1));
    if (!B || !X || !XS || !v) {
        fprintf(stderr, "out of memory\n");
        goto out;
    }
    for (sap_int j = 0; j < k; j++) {
        sap_gen_xstar(ctx, n, j == 0 ? SAP_XSTAR_PARABOLA : SAP_XSTAR_RANDOM, (uint64_t)j, XS + j * n);
        sap_csr_spmv(A, 1.0, XS + j * n, 0.0, B + j * n);
    }

    if ((st = sap_solver_create(ctx, A, &opt, &S)) != SAP_OK) goto fail;
    st = sap_solver_setup(S);
    if (st < 0) goto fail;
    st = sap_solver_solve_many(S, k, B, n, X, n);
    sap_solver_stats s;
    sap_solver_get_stats(S, &s);
    printf("solve of %lld right-hand sides: %s\n", (long long)k, sap_status_name(st));
    print_stats(&s);
    if (st < 0) goto fail;
    double worst = 0;
    for (sap_int j = 0; j < k; j++) {
        double e = 0, x2 = 0;
        for (sap_int i = 0; i < n; i++) {
            e += (X[j * n + i] - XS[j * n + i]) * (X[j * n + i] - XS[j * n + i]);
            x2 += XS[j * n + i] * XS[j * n + i];
        }
        if (sqrt(e / x2) > worst) worst = sqrt(e / x2);
    }
    printf("  worst error ||x - x*|| / ||x*|| = %.2e\n", worst);

    /* new values on the same pattern: 3 A + (the diagonal doubled), refactor and solve */
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) v[p] = 3.0 * A->val[p] * (A->colind[p] == i ? 2.0 : 1.0);
    st = sap_solver_refactor(S, v);
    if (st < 0) goto fail;
    memcpy(A->val, v, sizeof(double) * (size_t)A->nnz);
    memset(X, 0, sizeof(double) * (size_t)n);
    st = sap_solver_solve(S, B, X);
    sap_solver_get_stats(S, &s);
    double r2 = 0, b2 = 0;
    double *r = XS; /* reuse as work */
    sap_csr_spmv(A, 1.0, X, 0.0, r);
    for (sap_int i = 0; i < n; i++) {
        r2 += (B[i] - r[i]) * (B[i] - r[i]);
        b2 += B[i] * B[i];
    }
    printf("after refactor: %s, residual %.2e (refactor %.4f s instead of a setup)\n", sap_status_name(st),
           sqrt(r2 / b2), s.time_setup);
    print_stats(&s);
    rc = (st == SAP_OK && worst < 1e-6 && sqrt(r2 / b2) <= 1e-9) ? 0 : 1;
    goto out;
fail:
    fprintf(stderr, "error: %s: %s\n", sap_status_string(st), sap_context_last_error(ctx));
out:
    free(B);
    free(X);
    free(XS);
    free(v);
    sap_solver_destroy(S);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
}
