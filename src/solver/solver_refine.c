/* solver_refine.c -- THE iterative refinement on the true residual, for the sparse solver
 * (every method of the chain, one or many right-hand sides) and the band solver's direct
 * path: x = inner(b); then while ||b - A x|| / ||b|| is above tol, d = inner(b - A x) and
 * x + d is the next x, by the rules the caller names (which corrections are taken, what a
 * slow pass does, how many passes).  Columns are refined together: each pass solves the
 * columns still going in one call of the inner solve. */
#include "solver/solver_internal.h"

#include <math.h>
#include <string.h>

double sap__solver_nrm2(const double *v, sap_int n)
{
    /* scaled by max |v_i|: a nonzero v of entries below ~1e-162 (squares underflowing) must
     * not have norm 0, which reads as b = 0 (x = 0, SAP_OK); NaN still gives NaN */
    double m = 0, s = 0;
    for (sap_int i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    if (m == 0 || !isfinite(m)) {
        for (sap_int i = 0; i < n; i++) s += v[i] * v[i];
        return sqrt(s);
    }
    for (sap_int i = 0; i < n; i++) s += (v[i] / m) * (v[i] / m);
    return m * sqrt(s);
}

/* ||b - A x|| / ||b|| (||b - A x|| when bn = 0); r receives b - A x. */
static sap_status residual(const sap_csr *A, const double *b, const double *x, double bn, double *r, double *rel)
{
    const sap_int n = A->nrows;
    memcpy(r, b, sizeof(double) * (size_t)n);
    sap_status st = sap_csr_spmv(A, -1.0, x, 1.0, r);
    if (st < 0) return st;
    const double rn = sap__solver_nrm2(r, n);
    *rel = bn > 0 ? rn / bn : rn;
    return SAP_OK;
}

static int hard(sap_status s) { return s < 0 && s != SAP_ERR_BREAKDOWN; }

sap_status sap__solver_refine(const sap__refine *rf, sap_int k, const double *B, sap_int ldb, double *X, sap_int ldx,
                              double *rel, sap_status *status, int *passes)
{
    const sap_csr *A = rf->A;
    sap_context *ctx = A->ctx;
    const sap_int n = A->nrows;
    const size_t vb = sizeof(double) * (size_t)n;
    sap_status st = SAP_OK;
    double bn1 = 0;
    sap_int col1 = 0, slot1 = 0;
    unsigned char go1 = 0;
    double *bn = &bn1;
    sap_int *cols = &col1, *slot = &slot1; /* the columns of a pass; where column j's residual is in R */
    unsigned char *go = &go1;              /* 1 while column j may take corrections */
    if (k > 1) {
        bn = NULL; /* freed at cleanup, whichever allocation fails */
        cols = slot = NULL;
        go = NULL;
        SAP_ALLOC(ctx, bn, k);
        SAP_ALLOC(ctx, cols, k);
        SAP_ALLOC(ctx, slot, k);
        SAP_ALLOC(ctx, go, k);
    }

    /* the first solve, from the initial guesses in X */
    int any = 0, stop = 0; /* stop: the inner solve was interrupted (a monitor): no more passes */
    {
        /* the columns' norms side by side, each serial (the same figure for every thread count) */
        const int nt = k > 1 ? sap__threads_for(ctx, (double)n * (double)k) : 1;
        (void)nt;
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)")
        for (sap_int j = 0; j < k; j++) bn[j] = sap__solver_nrm2(B + j * ldb, n);
    }
    for (sap_int j = 0; j < k; j++) {
        any |= bn[j] != 0;
        rel[j] = 0;
        status[j] = SAP_OK;
        passes[j] = 0;
        go[j] = 0;
    }
    for (sap_int j = 0; j < k && rf->inner_rel; j++) rf->inner_rel[j] = NAN;
    if (any) {
        sap_status s0 = rf->solve(rf->state, k, B, ldb, X, ldx, X, ldx);
        if (hard(s0)) {
            st = s0;
            goto cleanup;
        }
        for (sap_int j = 0; j < k; j++) status[j] = s0;
        stop = s0 == SAP_WARN_INTERRUPTED;
    }
    for (sap_int j = 0; j < k; j++) {
        slot[j] = j;
        if (bn[j] == 0) {
            memset(X + j * ldx, 0, vb);
            status[j] = SAP_OK;
            continue;
        }
        go[j] = 1;
        if (rf->inner_rel && rf->inner_rel[j] <= rf->tol) { /* the backend's figure (not NaN) */
            rel[j] = rf->inner_rel[j];
            continue;
        }
        SAP_TRY(residual(A, B + j * ldb, X + j * ldx, bn[j], rf->R + j * n, &rel[j]));
    }

    /* corrections from the true residual */
    for (int pass = 0; pass < rf->max_pass && !stop; pass++) {
        sap_int m = 0;
        for (sap_int j = 0; j < k; j++) {
            if (!go[j] || !(rel[j] > rf->tol) || !isfinite(rel[j])) continue;
            if (slot[j] != m) memmove(rf->R + m * n, rf->R + slot[j] * n, vb); /* slot[j] > m */
            slot[j] = m;
            cols[m++] = j;
        }
        if (m == 0) break;
        sap_status sp = rf->solve(rf->state, m, rf->R, n, NULL, n, rf->D, n);
        if (hard(sp)) {
            st = sp;
            goto cleanup;
        }
        int fast = 0;
        stop = sp == SAP_WARN_INTERRUPTED;
        for (sap_int c = 0; c < m; c++) {
            const sap_int j = cols[c];
            if (stop) status[j] = sp;
            double *xj = X + j * ldx, *d = rf->D + c * n;
            for (sap_int i = 0; i < n; i++) d[i] += xj[i];
            double rel2 = 0;
            SAP_TRY(residual(A, B + j * ldb, d, bn[j], rf->t, &rel2));
            passes[j]++;
            if (rf->take == SAP__REFINE_TAKE_LOWER && !(rel2 < rel[j])) {
                go[j] = 0; /* no progress: keep x */
                continue;
            }
            const int slow = rel2 > 0.5 * rel[j];
            if (rel2 < 0.5 * rel[j]) fast = 1;
            memcpy(xj, d, vb);
            memcpy(rf->R + c * n, rf->t, vb);
            rel[j] = rel2;
            status[j] = sp;
            if (slow && rf->slow == SAP__REFINE_SLOW_STOPS_COLUMN) go[j] = 0;
        }
        if (!fast && rf->slow == SAP__REFINE_SLOW_STOPS_ALL) break;
    }
cleanup:
    if (k > 1) {
        sap__free(ctx, bn);
        sap__free(ctx, cols);
        sap__free(ctx, slot);
        sap__free(ctx, go);
    }
    return st;
}
