/* matrix_stats.c -- example: load a matrix (file or generator spec), print a few of its
 * statistics and a manufactured right-hand side's norm.  Uses only <sap.h>.
 *
 *   matrix_stats [FILE|SPEC]      (default gen:poisson2d:n=100)
 */
#include <sap.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *input = argc > 1 ? argv[1] : "gen:poisson2d:n=100";
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, NULL); /* backend auto */
    if (st != SAP_OK) {
        fprintf(stderr, "cannot create a context: %s\n", sap_status_string(st));
        return 1;
    }
    printf("sap %s on %s\n", sap_version_string(), sap_context_device_name(ctx));

    sap_csr *A = NULL;
    double *x = NULL, *b = NULL;
    int rc = 1;
    st = sap_matrix_load(ctx, input, NULL, &A);
    if (st > 0) fprintf(stderr, "%s: warning: %s\n", input, sap_context_last_error(ctx));
    if (st < 0) {
        fprintf(stderr, "%s: %s: %s\n", input, sap_status_string(st), sap_context_last_error(ctx));
        goto done;
    }
    sap_matrix_stats s;
    if ((st = sap_csr_stats(A, &s)) != SAP_OK) goto done;
    printf("%s: %lld x %lld, nnz %lld, half-bandwidth %lld, d = %g, %s\n", input, (long long)s.nrows,
           (long long)s.ncols, (long long)s.nnz, (long long)s.half_bandwidth, s.diag_dominance,
           s.spd_estimate ? "SPD (estimate)" : "not SPD");

    /* b = A x* with the papers' parabola x* (1 at both ends, 400 in the middle) */
    x = malloc(sizeof(double) * (size_t)A->ncols);
    b = malloc(sizeof(double) * (size_t)A->nrows);
    if (!x || !b) goto done;
    if ((st = sap_gen_xstar(ctx, A->ncols, SAP_XSTAR_PARABOLA, 1, x)) != SAP_OK) goto done;
    if ((st = sap_csr_spmv(A, 1.0, x, 0.0, b)) != SAP_OK) goto done;
    double nb = 0;
    for (sap_int i = 0; i < A->nrows; i++) nb += b[i] * b[i];
    printf("||A x*||_2 = %.6e\n", sqrt(nb));
    rc = 0;
done:
    if (rc && st != SAP_OK) fprintf(stderr, "error: %s: %s\n", sap_status_string(st), sap_context_last_error(ctx));
    free(x);
    free(b);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
}
