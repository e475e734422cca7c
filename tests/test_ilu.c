/* test_ilu.c -- the sparse triangular solves of the device table (device/trsv_kernels.h)
 * and the ILU family (precond/ilu_factor.h, pc_ilu0/iluk/ilut/ic0.c):
 *  - each triangular-solve method, lower/upper, unit or not, float and double, one and
 *    many right-hand sides, against a dense reference on random sparse triangular
 *    matrices (empty rows, one level, n levels, random), and the analysis errors;
 *  - ILU(0) against a dense ILU(0) (pattern and values; (LU)_ij = a_ij on the pattern),
 *    ILU(k) fill pattern against the dense level recursion, ILUT dropping against a dense
 *    ILUT, ILUT(n, 0) = exact LU, IC(0) ((L L^T)_ij = a_ij on the pattern);
 *  - zero pivots: shifted, SAP_WARN_BOOSTED_PIVOTS, no NaN;
 *  - GMRES(20) to 1e-8 with each preconditioner on Poisson and on matrices of the
 *    collection (when present);
 *  - --backend cuda: every solve method and every preconditioner's apply on the cuda
 *    context against the cpu; the device ILU(0) factorization against the host one
 *    (values, shifted pivots, declined inputs). */
#include "testing.h"

#define SAP_TEST_HAS_GPU_PART 1

#include "precond/ilu_factor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 12345;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Random triangular n x n: kind 0 random (density dens, some empty rows), 1 diagonal
 * only (one level), 2 bidiagonal (n levels), 3 a band of 160 off-diagonals (long rows:
 * the cuda synchronization-free solve then gives a row 32 threads, and rows of more
 * than 4 x 32 entries take its loop over the rest of the row), 4 two wide levels: the
 * second half's rows take about 20 entries from the first half (the cuda solve then gives
 * a row one thread, which loads 8 entries ahead and the rest in rounds). */
static sap_csr *rand_tri(sap_context *ctx, sap_int n, int upper, int kind, double dens)
{
    sap_int cap = n * 2 + (sap_int)(dens * (double)n * (double)n) + (kind == 3 ? 161 * n : 0) +
                  (kind == 4 ? 40 * n : 0) + 16,
            nz = 0;
    sap_csr *T = NULL;
    if (sap_csr_create(ctx, n, n, cap, &T) != SAP_OK) return NULL;
    T->rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        const int empty = kind == 0 && urand() < 0.1;
        for (sap_int j = 0; j < n; j++) {
            int take = j == i;
            if (j != i && (upper ? j > i : j < i)) {
                if (kind == 0) take = !empty && urand() < dens;
                if (kind == 2) take = upper ? j == i + 1 : j == i - 1;
                if (kind == 3) take = (upper ? j - i : i - j) <= 160;
                if (kind == 4) {
                    const sap_int h = n / 2, ii = upper ? n - 1 - i : i, jj = upper ? n - 1 - j : j;
                    take = ii >= h && jj < h && urand() < 20.0 / (double)(h > 0 ? h : 1);
                }
            }
            if (!take || nz >= cap) continue;
            T->colind[nz] = j;
            T->val[nz++] = j == i ? (urand() < 0.5 ? -1.0 : 1.0) * (1.0 + urand())
                                  : (urand() - 0.5) / (kind == 3 ? 80.0 : kind == 4 ? 10.0 : 1.0);
        }
        T->rowptr[i + 1] = nz;
    }
    T->nnz = nz;
    return T;
}

static void dense_tri_solve(const sap_csr *T, int upper, int unit, const double *b, double *x)
{
    const sap_int n = T->nrows;
    for (sap_int s = 0; s < n; s++) {
        const sap_int i = upper ? n - 1 - s : s;
        double acc = b[i], d = 1.0;
        for (sap_int p = T->rowptr[i]; p < T->rowptr[i + 1]; p++) {
            if (T->colind[p] == i) d = T->val[p];
            else acc -= T->val[p] * x[T->colind[p]];
        }
        x[i] = unit ? acc : acc / d;
    }
}

/* Solves T X = B on ctx for nrhs columns; x receives the result (double). */
static sap_status backend_solve(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_precision prec,
                                sap_trsv_method m, sap_int nrhs, const double *b, double *x, sap_trsv **keep)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_trsv *S = NULL;
    sap_vec vb = {0}, vx = {0};
    const sap_int n = T->nrows;
    sap_status st = ops->trsv->analyze(ctx, T, upper, unit, prec, m, &S);
    if (st < 0) return st;
    if (n * nrhs > 0) {
        st = ops->vec_create(ctx, n * nrhs, prec, &vb);
        if (st == SAP_OK) st = ops->vec_create(ctx, n * nrhs, prec, &vx);
        if (st == SAP_OK) st = ops->vec_upload(ctx, &vb, b);
        if (st == SAP_OK) st = ops->trsv->solve(S, nrhs, vb.data, vx.data);
        if (st == SAP_OK) st = ops->vec_download(ctx, &vx, x);
    }
    if (vb.data) ops->vec_destroy(ctx, &vb);
    if (vx.data) ops->vec_destroy(ctx, &vx);
    if (keep) *keep = S;
    else ops->trsv->destroy(S);
    return st;
}

static double max_rel_err(const double *x, const double *r, sap_int n)
{
    double e = 0.0, s = 0.0;
    for (sap_int i = 0; i < n; i++) {
        e = fmax(e, fabs(x[i] - r[i]));
        s = fmax(s, fabs(r[i]));
    }
    return e / (s > 0 ? s : 1.0);
}

/* ctx's solves against the dense reference (ref == NULL) or against the cpu (ref). */
static void trsv_cases(sap_context *ctx, sap_context *ref)
{
    static const sap_int sizes[] = {1, 7, 300, 3000};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (int kind = 0; kind < 5; kind++)
            for (int upper = 0; upper < 2; upper++)
                for (int unit = 0; unit < 2; unit++) {
                    const sap_int n = sizes[si];
                    const double dens = n > 1000 ? 3.0 / (double)n : 0.05;
                    sap_csr *T = rand_tri(ctx, n, upper, kind, dens);
                    if (!T) {
                        CHECK(0);
                        continue;
                    }
                    const sap_int nrhs = kind == 0 ? 3 : kind == 3 ? 2 : 1;
                    double *b = malloc(sizeof(double) * (size_t)(n * nrhs)), *x = malloc(sizeof(double) * (size_t)(n * nrhs));
                    double *r = malloc(sizeof(double) * (size_t)(n * nrhs));
                    for (sap_int k = 0; k < n * nrhs; k++) b[k] = urand() - 0.5;
                    for (sap_int c = 0; c < nrhs; c++) dense_tri_solve(T, upper, unit, b + c * n, r + c * n);
                    for (int m = 1; m <= 2; m++)
                        for (int prec = 0; prec < 2; prec++) {
                            const sap_precision pr = prec ? SAP_FLOAT : SAP_DOUBLE;
                            if (ref) CHECK_OK(ref, backend_solve(ref, T, upper, unit, pr, SAP_TRSV_LEVEL, nrhs, b, r, NULL));
                            sap_trsv *S = NULL;
                            CHECK_OK(ctx, backend_solve(ctx, T, upper, unit, pr, (sap_trsv_method)m, nrhs, b, x, &S));
                            const double e = max_rel_err(x, r, n * nrhs);
                            const double tol = ref ? (prec ? 1e-4 : 1e-11) : (prec ? 1e-3 : 1e-10);
                            CHECK_MSG(e <= tol, "trsv n=%lld kind %d %s unit %d method %d %s nrhs %lld: error %g", (long long)n,
                                      kind, upper ? "upper" : "lower", unit, m, prec ? "float" : "double", (long long)nrhs, e);
                            if (S) {
                                if (kind == 1) CHECK(S->nlevels == 1);
                                if (kind == 2) CHECK(S->nlevels == n);
                                if (kind == 4) CHECK(S->nlevels <= 2);
                                sap__ops(ctx)->trsv->destroy(S);
                            }
                        }
                    free(b);
                    free(x);
                    free(r);
                    sap_csr_destroy(T);
                }
}

static void trsv_errors(sap_context *ctx)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_trsv *S = NULL;
    sap_csr *T = rand_tri(ctx, 50, 0, 0, 0.1);
    CHECK_STATUS(ctx, ops->trsv->analyze(ctx, T, 1, 0, SAP_DOUBLE, SAP_TRSV_AUTO, &S), SAP_ERR_INVALID); /* lower as upper */
    CHECK(strstr(sap_context_last_error(ctx), "outside") != NULL);
    T->val[T->rowptr[10 + 1] - 1] = 0.0; /* zero diagonal of row 10 */
    CHECK_STATUS(ctx, ops->trsv->analyze(ctx, T, 0, 0, SAP_DOUBLE, SAP_TRSV_AUTO, &S), SAP_ERR_SINGULAR);
    CHECK(strstr(sap_context_last_error(ctx), "row 10") != NULL);
    CHECK_OK(ctx, ops->trsv->analyze(ctx, T, 0, 1, SAP_DOUBLE, SAP_TRSV_AUTO, &S)); /* unit: ignored */
    if (S) ops->trsv->destroy(S);
    T->val[0] = NAN;
    CHECK_STATUS(ctx, ops->trsv->analyze(ctx, T, 0, 1, SAP_DOUBLE, SAP_TRSV_AUTO, &S), SAP_ERR_NONFINITE);
    sap_csr_destroy(T);
    /* the method pick from the level profile */
    CHECK(sap__trsv_pick(1000000, 10, NULL) == SAP_TRSV_LEVEL);
    CHECK(sap__trsv_pick(1000000, 300, NULL) == SAP_TRSV_SYNCFREE);
    CHECK(sap__trsv_pick(100000, 50000, NULL) == SAP_TRSV_SYNCFREE);
    CHECK(sap__trsv_pick(100, 10, NULL) == SAP_TRSV_SYNCFREE);
}

/* ---- factorizations against dense references ------------------------------------------------ */

static double *to_dense(const sap_csr *A)
{
    const sap_int n = A->nrows;
    double *D = calloc((size_t)(n * n), sizeof(double));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) D[i * n + A->colind[p]] = A->val[p];
    return D;
}

/* a random nonsymmetric diagonally weighted sparse matrix */
static sap_csr *rand_matrix(sap_context *ctx, sap_int n, double dens)
{
    sap_csr *A = NULL;
    if (sap_csr_create(ctx, n, n, n * n, &A) != SAP_OK) return NULL;
    sap_int nz = 0;
    A->rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        for (sap_int j = 0; j < n; j++)
            if (j == i || urand() < dens) {
                A->colind[nz] = j;
                A->val[nz++] = j == i ? 4.0 + urand() : urand() - 0.5;
            }
        A->rowptr[i + 1] = nz;
    }
    A->nnz = nz;
    return A;
}

static void test_ilu0_iluk(sap_context *ctx)
{
    const sap_int n = 60;
    sap_csr *A = rand_matrix(ctx, n, 0.06);
    double *D = to_dense(A);
    for (sap_int K = 0; K <= 3; K++) {
        /* dense level recursion */
        sap_int *lev = malloc(sizeof(sap_int) * (size_t)(n * n));
        const sap_int INF = 1 << 30;
        for (sap_int k = 0; k < n * n; k++) lev[k] = D[k] != 0.0 || k % (n + 1) == 0 ? 0 : INF;
        for (sap_int i = 0; i < n; i++)
            for (sap_int k = 0; k < i; k++) {
                if (lev[i * n + k] > K) continue;
                for (sap_int j = k + 1; j < n; j++) {
                    const sap_int l = lev[i * n + k] + lev[k * n + j] + 1;
                    if (lev[k * n + j] < INF && l < lev[i * n + j]) lev[i * n + j] = l;
                }
            }
        sap_csr *S = NULL;
        CHECK_OK(ctx, sap__iluk_pattern(ctx, A, K, &S));
        if (!S) continue;
        int same = 1;
        sap_int cnt = 0;
        for (sap_int i = 0; i < n; i++)
            for (sap_int j = 0; j < n; j++) cnt += lev[i * n + j] <= K;
        same &= cnt == S->nnz;
        for (sap_int i = 0; i < n; i++)
            for (sap_int p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
                same &= lev[i * n + S->colind[p]] <= K;
                if (p > S->rowptr[i]) same &= S->colind[p] > S->colind[p - 1];
            }
        CHECK_MSG(same, "ILU(%lld) pattern: %lld entries, dense recursion %lld", (long long)K, (long long)S->nnz, (long long)cnt);
        /* numeric: dense IKJ restricted to the pattern */
        double *R = malloc(sizeof(double) * (size_t)(n * n));
        memcpy(R, D, sizeof(double) * (size_t)(n * n));
        for (sap_int i = 0; i < n; i++)
            for (sap_int k = 0; k < i; k++) {
                if (lev[i * n + k] > K) continue;
                R[i * n + k] /= R[k * n + k];
                for (sap_int j = k + 1; j < n; j++)
                    if (lev[i * n + j] <= K && lev[k * n + j] <= K) R[i * n + j] -= R[i * n + k] * R[k * n + j];
            }
        sap_int shifted = -1;
        CHECK_OK(ctx, sap__ilu_numeric(ctx, S, 1e-8, &shifted));
        CHECK(shifted == 0);
        double err = 0.0;
        for (sap_int i = 0; i < n; i++)
            for (sap_int p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) err = fmax(err, fabs(S->val[p] - R[i * n + S->colind[p]]));
        CHECK_MSG(err < 1e-12, "ILU(%lld) values differ from the dense reference by %g", (long long)K, err);
        if (K == 0) { /* (LU)_ij = a_ij on the pattern */
            double e2 = 0.0;
            for (sap_int i = 0; i < n; i++)
                for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                    const sap_int j = A->colind[p];
                    double s = 0.0;
                    for (sap_int k = 0; k <= (i < j ? i : j); k++) {
                        const double l = k == i ? 1.0 : (lev[i * n + k] <= 0 ? R[i * n + k] : 0.0);
                        const double u = lev[k * n + j] <= 0 ? R[k * n + j] : 0.0;
                        s += l * u;
                    }
                    e2 = fmax(e2, fabs(s - A->val[p]));
                }
            CHECK_MSG(e2 < 1e-12, "ILU(0): (LU)_ij - a_ij = %g on the pattern", e2);
        }
        free(R);
        free(lev);
        sap_csr_destroy(S);
    }
    free(D);
    sap_csr_destroy(A);
}

static void dense_ilut(const double *D, sap_int n, sap_int p, double tau, double *R)
{
    double *w = malloc(sizeof(double) * (size_t)n);
    sap_int *idx = malloc(sizeof(sap_int) * (size_t)n);
    memset(R, 0, sizeof(double) * (size_t)(n * n));
    for (sap_int i = 0; i < n; i++) {
        double nrm = 0.0;
        sap_int len = 0;
        for (sap_int j = 0; j < n; j++) {
            w[j] = D[i * n + j];
            nrm += fabs(w[j]);
            len += w[j] != 0.0;
        }
        const double thr = len ? tau * nrm / (double)len : 0.0;
        for (sap_int k = 0; k < i; k++) {
            if (w[k] == 0.0) continue;
            w[k] /= R[k * n + k];
            if (fabs(w[k]) < thr) {
                w[k] = 0.0;
                continue;
            }
            for (sap_int j = k + 1; j < n; j++) w[j] -= w[k] * R[k * n + j];
        }
        for (int part = 0; part < 2; part++) {
            const sap_int lo = part ? i + 1 : 0, hi = part ? n : i;
            sap_int m = 0;
            for (sap_int j = lo; j < hi; j++)
                if (w[j] != 0.0 && fabs(w[j]) >= thr) idx[m++] = j;
            /* keep the p largest (ties: smaller column first) by selection */
            for (sap_int a = 0; a < m && a < p; a++) {
                sap_int b = a;
                for (sap_int c = a + 1; c < m; c++)
                    if (fabs(w[idx[c]]) > fabs(w[idx[b]]) || (fabs(w[idx[c]]) == fabs(w[idx[b]]) && idx[c] < idx[b])) b = c;
                const sap_int t = idx[a];
                idx[a] = idx[b];
                idx[b] = t;
                R[i * n + idx[a]] = w[idx[a]];
            }
        }
        R[i * n + i] = w[i];
    }
    free(w);
    free(idx);
}

static void test_ilut(sap_context *ctx)
{
    const sap_int n = 50;
    sap_csr *A = rand_matrix(ctx, n, 0.1);
    double *D = to_dense(A), *R = malloc(sizeof(double) * (size_t)(n * n));
    static const struct {
        sap_int p;
        double tau;
    } cases[] = {{2, 0.05}, {5, 0.01}, {3, 0.0}, {50, 0.0}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        sap_csr *LU = NULL;
        sap_int sh = -1;
        CHECK_OK(ctx, sap__ilut(ctx, A, cases[c].p, cases[c].tau, 1e-8, &LU, &sh));
        if (!LU) continue;
        dense_ilut(D, n, cases[c].p, cases[c].tau, R);
        double err = 0.0;
        sap_int cnt = 0, maxl = 0;
        for (sap_int i = 0; i < n; i++) {
            sap_int nl = 0, nu = 0;
            for (sap_int q = LU->rowptr[i]; q < LU->rowptr[i + 1]; q++) {
                err = fmax(err, fabs(LU->val[q] - R[i * n + LU->colind[q]]));
                nl += LU->colind[q] < i;
                nu += LU->colind[q] > i;
            }
            maxl = nl > maxl ? nl : maxl;
            maxl = nu > maxl ? nu : maxl;
            for (sap_int j = 0; j < n; j++) cnt += R[i * n + j] != 0.0 || j == i;
        }
        CHECK_MSG(err < 1e-12 && cnt == LU->nnz, "ILUT(%lld, %g): error %g, %lld entries, dense %lld", (long long)cases[c].p,
                  cases[c].tau, err, (long long)LU->nnz, (long long)cnt);
        CHECK(maxl <= cases[c].p);
        if (cases[c].p >= n && cases[c].tau == 0.0) { /* exact LU: L U = A */
            double e2 = 0.0;
            for (sap_int i = 0; i < n; i++)
                for (sap_int j = 0; j < n; j++) {
                    double s = 0.0;
                    for (sap_int k = 0; k <= (i < j ? i : j); k++) s += (k == i ? 1.0 : R[i * n + k]) * R[k * n + j];
                    e2 = fmax(e2, fabs(s - D[i * n + j]));
                }
            CHECK_MSG(e2 < 1e-12, "ILUT(n, 0) is not the exact LU: %g", e2);
        }
        sap_csr_destroy(LU);
    }
    free(D);
    free(R);
    sap_csr_destroy(A);
}

static void test_ic0(sap_context *ctx)
{
    sap_csr *A = NULL, *L = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 9, 7, &A));
    sap_int sh = -1;
    CHECK_OK(ctx, sap__ic0(ctx, A, 1e-8, &L, &sh));
    if (L) {
        CHECK(sh == 0);
        const sap_int n = A->nrows;
        double *Ld = to_dense(L), e = 0.0;
        for (sap_int i = 0; i < n; i++)
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const sap_int j = A->colind[p];
                double s = 0.0;
                for (sap_int k = 0; k < n; k++) s += Ld[i * n + k] * Ld[j * n + k];
                e = fmax(e, fabs(s - A->val[p]));
            }
        CHECK_MSG(e < 1e-12, "IC(0): (L L^T)_ij - a_ij = %g on the pattern", e);
        free(Ld);
    }
    sap_csr_destroy(L);
    sap_csr_destroy(A);
}

/* ParILU through ctx's table: enough sweeps reproduce the host ILU(0) */
static void test_parilu(sap_context *ctx)
{
    sap_csr *A = NULL, *S = NULL, *R = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 9, 8, &A));
    CHECK_OK(ctx, sap__iluk_pattern(ctx, A, 0, &S));
    CHECK_OK(ctx, sap_csr_copy(S, &R));
    if (!A || !S || !R) return;
    CHECK_OK(ctx, sap__ilu_numeric(ctx, R, 1e-8, NULL));
    double *lu = malloc(sizeof(double) * (size_t)S->nnz);
    for (int sweeps = 1; sweeps <= 60; sweeps += 59) {
        memcpy(lu, S->val, sizeof(double) * (size_t)S->nnz); /* initial guess: A */
        CHECK_OK(ctx, sap__ops(ctx)->trsv->parilu(ctx, S, sweeps, lu));
        double e = 0.0;
        for (sap_int p = 0; p < S->nnz; p++) e = fmax(e, fabs(lu[p] - R->val[p]));
        if (sweeps == 1) CHECK_MSG(e > 1e-3, "one ParILU sweep is already ILU(0)?");
        else CHECK_MSG(e < 1e-12, "ParILU after %d sweeps differs from ILU(0) by %g", sweeps, e);
    }
    free(lu);
    sap_csr_destroy(A);
    sap_csr_destroy(S);
    sap_csr_destroy(R);
}

/* ParILUT: with p >= n, tau = 0 and enough rounds its pattern reaches the full LU's and the
 * sweeps the exact factors (the apply solves A z = r); ILUT's selection bounds each row's
 * parts by p; zero rounds are ParILU */
static void test_parilut(sap_context *ctx)
{
    const sap_int n = 40;
    sap_csr *A = rand_matrix(ctx, n, 0.1);
    if (!A) return;
    double *r = malloc(sizeof(double) * (size_t)n), *z = malloc(sizeof(double) * (size_t)n),
           *az = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) r[i] = 1.0 + cos((double)i);
    sap_precond *P = NULL;
    CHECK_OK(ctx, sap_precond_create(ctx, "parilut:p=40,tau=0,steps=40,sweeps=40", &P));
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    CHECK_OK(ctx, sap_precond_apply(P, r, z));
    CHECK_OK(ctx, sap_csr_spmv(A, 1.0, z, 0.0, az));
    double e = 0.0, rn = 0.0;
    for (sap_int i = 0; i < n; i++) e = fmax(e, fabs(az[i] - r[i])), rn = fmax(rn, fabs(r[i]));
    CHECK_MSG(e <= 1e-10 * rn, "ParILUT(n, 0) after n rounds does not solve A z = r: %g", e / rn);
    sap_precond_destroy(P);
    for (sap_int p = 1; p <= 3; p += 2) {
        char spec[64];
        snprintf(spec, sizeof spec, "parilut:p=%lld,tau=0,steps=4", (long long)p);
        CHECK_OK(ctx, sap_precond_create(ctx, spec, &P));
        CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
        if (P) {
            const sap_ilu_pc *d = P->data;
            CHECK_MSG(d->F.nnz_l <= n * p && d->F.nnz_u <= n * (p + 1), "ParILUT(%lld): L %lld, U %lld entries",
                      (long long)p, (long long)d->F.nnz_l, (long long)d->F.nnz_u);
        }
        sap_precond_destroy(P);
    }
    /* the pattern passes run rows on threads: the same factors for 1 and 2 threads */
    {
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_gen_poisson2d(ctx, 40, 40, &B));
        const sap_int nb = B ? B->nrows : 0;
        double *rb = malloc(sizeof(double) * (size_t)(nb + 1)), *z1 = malloc(sizeof(double) * (size_t)(nb + 1)),
               *z2 = malloc(sizeof(double) * (size_t)(nb + 1));
        for (sap_int i = 0; i < nb; i++) rb[i] = sin(0.1 * (double)i);
        for (int t = 1; t <= 2 && B; t++) {
            sap_context_set_threads(ctx, t);
            CHECK_OK(ctx, sap_precond_create(ctx, "parilut:p=5,tau=1e-3,steps=3", &P));
            CHECK_OK(ctx, sap_precond_setup_numeric(P, B));
            CHECK_OK(ctx, sap_precond_apply(P, rb, t == 1 ? z1 : z2));
            sap_precond_destroy(P);
        }
        sap_context_set_threads(ctx, 0);
        if (B) CHECK_MSG(memcmp(z1, z2, sizeof(double) * (size_t)nb) == 0, "ParILUT differs between 1 and 2 threads");
        free(rb), free(z1), free(z2);
        sap_csr_destroy(B);
    }
    /* no rounds: ParILU's factors (same sweeps) */
    sap_precond *Q = NULL;
    CHECK_OK(ctx, sap_precond_create(ctx, "parilut:steps=0,sweeps=5", &P));
    CHECK_OK(ctx, sap_precond_create(ctx, "parilu:sweeps=5", &Q));
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    CHECK_OK(ctx, sap_precond_setup_numeric(Q, A));
    CHECK_OK(ctx, sap_precond_apply(P, r, z));
    CHECK_OK(ctx, sap_precond_apply(Q, r, az));
    e = 0.0;
    for (sap_int i = 0; i < n; i++) e = fmax(e, fabs(z[i] - az[i]));
    CHECK_MSG(e == 0.0, "ParILUT without rounds differs from ParILU: %g", e);
    sap_precond_destroy(P);
    sap_precond_destroy(Q);
    free(r);
    free(z);
    free(az);
    sap_csr_destroy(A);
}

/* ISAI: (M T)_ij = delta_ij on M's pattern, for random triangular T */
static void test_isai(sap_context *ctx)
{
    for (int upper = 0; upper < 2; upper++)
        for (int unit = 0; unit < 2; unit++) {
            sap_csr *T = rand_tri(ctx, 80, upper, 0, 0.08), *M = NULL;
            if (!T) continue;
            CHECK_OK(ctx, sap__isai(ctx, T, upper, unit, &M));
            if (M) {
                double *Td = to_dense(T), e = 0.0;
                const sap_int n = T->nrows;
                if (unit)
                    for (sap_int i = 0; i < n; i++) Td[i * n + i] = 1.0;
                for (sap_int i = 0; i < n; i++)
                    for (sap_int p = M->rowptr[i]; p < M->rowptr[i + 1]; p++) {
                        const sap_int j = M->colind[p];
                        double s = 0.0;
                        for (sap_int q = M->rowptr[i]; q < M->rowptr[i + 1]; q++) s += M->val[q] * Td[M->colind[q] * n + j];
                        e = fmax(e, fabs(s - (i == j ? 1.0 : 0.0)));
                    }
                CHECK_MSG(e < 1e-12, "ISAI %s unit %d: (M T)_ij - delta_ij = %g on the pattern", upper ? "upper" : "lower",
                          unit, e);
                free(Td);
            }
            sap_csr_destroy(M);
            sap_csr_destroy(T);
        }
}

/* zero and tiny pivots: shifted, reported, no NaN */
static void test_zero_pivots(sap_context *ctx)
{
    static const char *names[] = {"ilu0", "iluk", "ilut", "ic0", "parilu", "parilut", "bilu", "bilut", "ras", "isai"};
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 6, 6, &A));
    if (!A) return;
    for (sap_int i = 0; i < A->nrows; i += 5)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] == i) A->val[p] = 0.0;
    const sap_int n = A->nrows;
    double *r = malloc(sizeof(double) * (size_t)n), *z = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) r[i] = 1.0 + (double)i;
    for (int k = 0; k < (int)(sizeof names / sizeof *names); k++) {
        sap_precond *P = NULL;
        CHECK_OK(ctx, sap_precond_create(ctx, names[k], &P));
        CHECK_STATUS(ctx, sap_precond_setup_numeric(P, A), SAP_WARN_BOOSTED_PIVOTS);
        CHECK(strstr(sap_context_last_error(ctx), "shifted") != NULL);
        CHECK_OK(ctx, sap_precond_apply(P, r, z));
        int finite = 1;
        for (sap_int i = 0; i < n; i++) finite &= isfinite(z[i]);
        CHECK_MSG(finite, "%s: non-finite apply after shifted pivots", names[k]);
        char rep[1024];
        CHECK_OK(ctx, sap_precond_report(P, 0, rep, sizeof(rep)));
        CHECK(strstr(rep, "pivots shifted") != NULL);
        sap_precond_destroy(P);
    }
    /* bad input */
    A->val[3] = NAN;
    sap_precond *P = NULL;
    CHECK_OK(ctx, sap_precond_create(ctx, "ilu0", &P));
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, A), SAP_ERR_NONFINITE);
    CHECK_STATUS(ctx, sap_precond_set_option(P, "pivot_tol", "2"), SAP_ERR_INVALID);
    sap_precond_destroy(P);
    free(r);
    free(z);
    sap_csr_destroy(A);
}

/* "NAME:V1,V2": the type's options in table order */
static void test_positional(sap_context *ctx)
{
    sap_precond *P = NULL;
    char v[64];
    CHECK_OK(ctx, sap_precond_create(ctx, "ilut:7,0.01", &P));
    if (P) {
        CHECK_OK(ctx, sap_precond_get_option(P, "p", v, sizeof(v)));
        CHECK(strcmp(v, "7") == 0);
        CHECK_OK(ctx, sap_precond_get_option(P, "tau", v, sizeof(v)));
        CHECK(atof(v) == 0.01);
        sap_precond_destroy(P);
        P = NULL;
    }
    CHECK_OK(ctx, sap_precond_create(ctx, "iluk:3,pivot_tol=1e-6", &P));
    if (P) {
        CHECK_OK(ctx, sap_precond_get_option(P, "k", v, sizeof(v)));
        CHECK(strcmp(v, "3") == 0);
        sap_precond_destroy(P);
        P = NULL;
    }
    CHECK_STATUS(ctx, sap_precond_create(ctx, "ilu0:1e-6,5", &P), SAP_ERR_INVALID); /* one option only */
    CHECK(strstr(sap_context_last_error(ctx), "at most 1") != NULL);
    CHECK(P == NULL);
    CHECK_STATUS(ctx, sap_precond_create(ctx, "iluk:-1", &P), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_precond_create(ctx, "nosuch:1", &P), SAP_ERR_INVALID);
    CHECK_OK(ctx, sap_precond_create(ctx, "jacobi", &P));
    sap_precond_destroy(P);
}

/* z = M^{-1} r of a preconditioner spec on A */
static void pc_apply(sap_context *ctx, const char *spec, const sap_csr *A, const double *r, double *z)
{
    sap_precond *P = NULL;
    CHECK_OK(ctx, sap_precond_create(ctx, spec, &P));
    if (!P) return;
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    CHECK_OK(ctx, sap_precond_apply(P, r, z));
    sap_precond_destroy(P);
}

/* the domain decomposition: partitions, block ILU and RAS against each other */
static void test_dd(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 30, 20, &A));
    if (!A) return;
    const sap_int n = A->nrows;
    sap_int *part = malloc(sizeof(sap_int) * (size_t)n), cnt[7] = {0};
    const char *how = NULL;
    CHECK_OK(ctx, sap__dd_partition(ctx, A, 7, part, &how));
    int ok = 1;
    for (sap_int i = 0; i < n; i++) {
        ok &= part[i] >= 0 && part[i] < 7;
        if (part[i] >= 0 && part[i] < 7) cnt[part[i]]++;
    }
    for (int b = 0; b < 7; b++) ok &= cnt[b] > n / 14; /* balanced */
    CHECK_MSG(ok, "partition into 7 parts (%s)", how ? how : "?");
    /* RAS with overlap 0 is block ILU; block ILU with one block is ILU(0) */
    double *r = malloc(sizeof(double) * (size_t)n), *z1 = malloc(sizeof(double) * (size_t)n),
           *z2 = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) r[i] = sin(0.3 * (double)i) + 0.1;
    pc_apply(ctx, "ras:7,0", A, r, z1);
    pc_apply(ctx, "bilu:7", A, r, z2);
    CHECK_MSG(max_rel_err(z1, z2, n) < 1e-14, "ras:7,0 differs from bilu:7 by %g", max_rel_err(z1, z2, n));
    pc_apply(ctx, "bilu:1", A, r, z1);
    pc_apply(ctx, "ilu0", A, r, z2);
    CHECK_MSG(max_rel_err(z1, z2, n) < 1e-14, "bilu:1 differs from ilu0 by %g", max_rel_err(z1, z2, n));
    pc_apply(ctx, "bilut:1,1000,0", A, r, z1); /* exact LU: A z = r */
    double e = 0.0;
    for (sap_int i = 0; i < n; i++) {
        double s = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) s += A->val[p] * z1[A->colind[p]];
        e = fmax(e, fabs(s - r[i]));
    }
    CHECK_MSG(e < 1e-10, "bilut:1,1000,0 is not an exact solve: %g", e);
    /* the extended system of RAS: every row of A in its own part, R and Pown consistent */
    sap_dd_ras D;
    CHECK_OK(ctx, sap__dd_ras_build(ctx, A, part, 7, 2, &D));
    if (D.Ab) {
        CHECK(D.next > n && D.R->nrows == D.next && D.Pown->nrows == n);
        int own_ok = 1;
        for (sap_int i = 0; i < n; i++) own_ok &= D.R->colind[D.Pown->colind[i]] == i;
        CHECK(own_ok);
        sap__dd_ras_free(&D);
    }
    CHECK_STATUS(ctx, sap__dd_ras_build(ctx, A, part, 7, -1, &D), SAP_ERR_INVALID);
    sap_precond *P = NULL;
    CHECK_STATUS(ctx, sap_precond_create(ctx, "bilu:0", &P), SAP_ERR_INVALID);
    free(part);
    free(r);
    free(z1);
    free(z2);
    sap_csr_destroy(A);
}

/* ---- GMRES(20) with every preconditioner ----------------------------------------------------- */

/* cmp: the apply compared between the gpu and the cpu (pc_compare); parilut's selection may
 * break a tie of equal magnitudes differently where the two backends' sweeps round apart, so
 * it is checked by GMRES on each backend instead */
typedef struct pc_case {
    const char *name, *opts;
    int spd_only, cmp;
} pc_case;
static const pc_case pcs[] = {{"ilu0", NULL, 0, 1},
                              {"iluk", "k=2", 0, 1},
                              {"ilut", "p=10,tau=1e-3", 0, 1},
                              {"ic0", NULL, 1, 1},
                              {"parilu", "sweeps=3", 0, 1},
                              {"parilut", "p=10,tau=1e-3", 0, 0},
                              {"bilu", "blocks=8", 0, 1},
                              {"bilut", "blocks=8,p=10,tau=1e-3", 0, 1},
                              {"ras", "blocks=8,overlap=1", 0, 1},
                              {"isai", NULL, 0, 1}};
#define NPCS ((int)(sizeof(pcs) / sizeof(pcs[0])))

static sap_status gmres_solve(sap_context *ctx, const sap_csr *A, const pc_case *pc, sap_precision prec,
                              sap_krylov_stats *stats, double *relres)
{
    const sap_int n = A->nrows;
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + sin((double)i);
    sap_status st = sap_matrix_create(ctx, A, NULL, &M);
    if (st == SAP_OK) st = sap_precond_create(ctx, pc->name, &P);
    if (st == SAP_OK && pc->opts) st = sap_precond_set_options(P, pc->opts);
    if (st == SAP_OK) st = sap_precond_set_precision(P, prec);
    if (st == SAP_OK) st = sap_precond_setup_numeric(P, A);
    if (st > 0) st = SAP_OK; /* shifted pivots: still a preconditioner */
    sap_krylov_options opt;
    sap_krylov_options_init(&opt);
    opt.type = SAP_KRYLOV_GMRES;
    opt.param = 20;
    opt.tol = 1e-8;
    opt.maxit = 3000;
    if (st == SAP_OK) st = sap_krylov_create(ctx, &opt, &K);
    if (st == SAP_OK) st = sap_krylov_solve(K, M, P, b, x, stats);
    *relres = sap_test_rel_residual(A, x, b);
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    free(b);
    free(x);
    return st;
}

static void gmres_on(sap_context *ctx, const char *what, const sap_csr *A, int spd, double max_iters)
{
    for (int k = 0; k < NPCS; k++) {
        if (pcs[k].spd_only && !spd) continue;
        sap_krylov_stats stats;
        double rr = 1.0;
        const double t0 = sap_test_wtime();
        CHECK_OK(ctx, gmres_solve(ctx, A, &pcs[k], SAP_DOUBLE, &stats, &rr));
        CHECK_MSG(rr <= 1.1e-8 && stats.iterations <= max_iters, "GMRES(20) + %s on %s: residual %g after %g iterations",
                  pcs[k].name, what, rr, stats.iterations);
        printf("  GMRES(20) + %-5s on %-22s n=%-7lld %5.0f iterations, residual %.2e, %.3f s\n", pcs[k].name, what,
               (long long)A->nrows, stats.iterations, rr, sap_test_wtime() - t0);
    }
}

static void test_gmres(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, 20, 20, 20, &A));
    if (A) gmres_on(ctx, "poisson3d 20^3", A, 1, 200);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 60, 60, &A));
    if (A) gmres_on(ctx, "poisson2d 60^2", A, 1, 400);
    sap_csr_destroy(A);
    if (!sap_test_have_matrices("GMRES(20) on collection matrices")) return;
    static const struct {
        const char *name;
        int spd;
    } mats[] = {{"gr_30_30", 1}, {"nos4", 1}, {"Trefethen_2000", 1}, {"cage8", 0}, {"add32", 0}};
    for (size_t m = 0; m < sizeof(mats) / sizeof(mats[0]); m++) {
        sap_csr *B = sap_test_load_matrix(ctx, mats[m].name);
        if (!B) continue;
        gmres_on(ctx, mats[m].name, B, mats[m].spd, 1000);
        sap_csr_destroy(B);
    }
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    trsv_cases(ctx, NULL);
    trsv_errors(ctx);
    test_ilu0_iluk(ctx);
    test_ilut(ctx);
    test_ic0(ctx);
    test_parilu(ctx);
    test_parilut(ctx);
    test_isai(ctx);
    test_zero_pivots(ctx);
    test_positional(ctx);
    test_dd(ctx);
    test_gmres(ctx);
    sap_context_destroy(ctx);
    return 0;
}

/* the preconditioners' apply on G against the cpu (same host factors, so the difference
 * is the solve's rounding only) */
static void pc_compare(sap_context *G, sap_context *C)
{
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_poisson3d(C, 30, 30, 30, &A));
    if (!A) return;
    const sap_int n = A->nrows;
    double *r = malloc(sizeof(double) * (size_t)n), *zg = malloc(sizeof(double) * (size_t)n),
           *zc = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) r[i] = cos((double)i);
    for (int k = 0; k < NPCS; k++)
        for (int prec = 0; prec < 2 && pcs[k].cmp; prec++) {
            sap_precond *PG = NULL, *PC = NULL;
            const sap_precision pr = prec ? SAP_FLOAT : SAP_DOUBLE;
            CHECK_OK(G, sap_precond_create(G, pcs[k].name, &PG));
            CHECK_OK(C, sap_precond_create(C, pcs[k].name, &PC));
            if (!PG || !PC) continue;
            if (pcs[k].opts) {
                CHECK_OK(G, sap_precond_set_options(PG, pcs[k].opts));
                CHECK_OK(C, sap_precond_set_options(PC, pcs[k].opts));
            }
            CHECK_OK(G, sap_precond_set_precision(PG, pr));
            CHECK_OK(C, sap_precond_set_precision(PC, pr));
            CHECK_OK(G, sap_precond_setup_numeric(PG, A));
            CHECK_OK(C, sap_precond_setup_numeric(PC, A));
            CHECK_OK(G, sap_precond_apply(PG, r, zg));
            CHECK_OK(C, sap_precond_apply(PC, r, zc));
            const double e = max_rel_err(zg, zc, n);
            CHECK_MSG(e <= (prec ? 1e-4 : 1e-11), "%s %s apply: gpu vs cpu %g", pcs[k].name, prec ? "float" : "double", e);
            sap_precond_destroy(PG);
            sap_precond_destroy(PC);
        }
    /* GMRES(20) on the device: ILU(0), and those not compared above */
    for (int k = 0; k < NPCS; k++) {
        if (k > 0 && pcs[k].cmp) continue;
        sap_krylov_stats stats;
        double rr = 1.0;
        CHECK_OK(G, gmres_solve(G, A, &pcs[k], SAP_DOUBLE, &stats, &rr));
        CHECK_MSG(rr <= 1.1e-8, "GMRES(20) + %s on the device: residual %g", pcs[k].name, rr);
    }
    free(r);
    free(zg);
    free(zc);
    sap_csr_destroy(A);
}

/* ILU(0) on the device (trsv_kernels.h ilu0) against the host sap__ilu_numeric: the same
 * factors (1e-12 relative), the same shifted-pivot count, the declined inputs (a missing
 * diagonal, a NaN) and the ilu0 preconditioner on them */
static void device_ilu0_case(sap_context *G, const char *what, const sap_csr *A, int want_shift)
{
    const sap_backend_ops *ops = sap__ops(G);
    sap_csr *S = NULL, *R = NULL;
    CHECK_OK(G, sap__iluk_pattern(G, A, 0, &S));
    CHECK_OK(G, sap_csr_copy(S, &R));
    if (!S || !R) return;
    sap_int sh_h = -1, sh_d = -1;
    CHECK_OK(G, sap__ilu_numeric(G, R, 1e-8, &sh_h));
    double *lu = malloc(sizeof(double) * (size_t)(S->nnz > 0 ? S->nnz : 1)), tf = -1.0;
    sap_trsv *L = NULL, *U = NULL;
    CHECK_OK(G, ops->trsv->ilu0(G, S, 1e-8, SAP_DOUBLE, &L, &U, &sh_d, lu, &tf));
    CHECK_MSG(L && U, "%s: the device declined its ILU(0) pattern", what);
    if (L && U) {
        const double e = max_rel_err(lu, R->val, S->nnz);
        CHECK_MSG(e <= 1e-12, "%s: device ILU(0) differs from the host by %g", what, e);
        CHECK_MSG(sh_d == sh_h, "%s: %lld pivots shifted on the device, %lld on the host", what, (long long)sh_d,
                  (long long)sh_h);
        CHECK_MSG(!want_shift || sh_h > 0, "%s: no pivot shifted", what);
        CHECK(tf >= 0.0);
        sap_int nl = 0;
        for (sap_int i = 0; i < S->nrows; i++)
            for (sap_int p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) nl += S->colind[p] < i;
        CHECK(L->nnz_offdiag == nl && U->nnz_offdiag == S->nnz - nl - S->nrows && L->unit && !U->unit && U->upper);
    }
    if (L) ops->trsv->destroy(L);
    if (U) ops->trsv->destroy(U);
    free(lu);
    sap_csr_destroy(S);
    sap_csr_destroy(R);
}

static void test_device_ilu0(sap_context *G, sap_context *C)
{
    const sap_backend_ops *ops = sap__ops(G);
    sap_csr *A = NULL;
    CHECK_OK(G, sap_gen_poisson3d(G, 14, 13, 12, &A));
    if (A) device_ilu0_case(G, "poisson3d 14x13x12", A, 0);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(G, sap_gen_convdiff3d(G, 12, 20.0, &A));
    if (A) device_ilu0_case(G, "convdiff3d 12", A, 0);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(G, sap_gen_poisson2d(G, 150, 140, &A)); /* 150 x 140: ~290 dependency levels */
    if (A) device_ilu0_case(G, "poisson2d 150x140", A, 0);
    sap_csr_destroy(A);
    A = rand_matrix(G, 300, 0.04); /* long rows, irregular dependencies */
    if (A) device_ilu0_case(G, "random 300", A, 0);
    /* zero pivots: rows 0..3 with a zero diagonal (shifted) */
    if (A) {
        for (sap_int i = 0; i < 4; i++)
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                if (A->colind[p] == i) A->val[p] = 0.0;
        device_ilu0_case(G, "random 300, zero pivots", A, 1);
    }
    sap_csr_destroy(A);
    /* declined: a row without its diagonal entry (the pattern adds it: pc ilu0 still on the
     * device, checked against the cpu), then a NaN (the host path reports it) */
    A = rand_matrix(G, 120, 0.05);
    if (!A) return;
    sap_csr *B = NULL;
    CHECK_OK(G, sap_csr_create(G, A->nrows, A->ncols, A->nnz, &B));
    if (!B) return;
    sap_int nz = 0;
    B->rowptr[0] = 0;
    for (sap_int i = 0; i < A->nrows; i++) {
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (!(i == 7 && A->colind[p] == 7)) {
                B->colind[nz] = A->colind[p];
                B->val[nz++] = A->val[p];
            }
        B->rowptr[i + 1] = nz;
    }
    B->nnz = nz;
    sap_trsv *L = NULL, *U = NULL;
    CHECK_OK(G, ops->trsv->ilu0(G, B, 1e-8, SAP_DOUBLE, &L, &U, NULL, NULL, NULL));
    CHECK_MSG(!L && !U, "a pattern without a diagonal entry was not declined");
    const sap_int n = B->nrows;
    double *r = malloc(sizeof(double) * (size_t)n), *zg = calloc((size_t)n, sizeof(double)),
           *zc = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) r[i] = sin((double)i + 1.0);
    for (int side = 0; side < 2; side++) { /* the added diagonal is 0: shifted (a warning) */
        sap_context *X = side ? C : G;
        sap_precond *Q = NULL;
        CHECK_OK(X, sap_precond_create(X, "ilu0", &Q));
        if (!Q) continue;
        CHECK_STATUS(X, sap_precond_setup_numeric(Q, B), SAP_WARN_BOOSTED_PIVOTS);
        CHECK_OK(X, sap_precond_apply(Q, r, side ? zc : zg));
        sap_precond_destroy(Q);
    }
    CHECK_MSG(max_rel_err(zg, zc, n) < 1e-11, "ilu0 without a diagonal entry: gpu vs cpu %g", max_rel_err(zg, zc, n));
    B->val[5] = NAN;
    CHECK_OK(G, ops->trsv->ilu0(G, B, 1e-8, SAP_DOUBLE, &L, &U, NULL, NULL, NULL));
    CHECK_MSG(!L && !U, "a NaN was not declined");
    sap_precond *P = NULL;
    CHECK_OK(G, sap_precond_create(G, "ilu0", &P));
    if (P) CHECK_STATUS(G, sap_precond_setup_numeric(P, B), SAP_ERR_NONFINITE);
    sap_precond_destroy(P);
    free(r);
    free(zg);
    free(zc);
    sap_csr_destroy(A);
    sap_csr_destroy(B);
}

static int gpu_part(void)
{
    sap_context *G = NULL;
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, NULL);
    if (rc) return rc;
    sap_context *C = sap_test_context(SAP_BACKEND_CPU);
    /* each part's time on stderr (unbuffered): under compute-sanitizer they show where the
     * time goes */
    double t = sap_test_wtime();
#define GPU_STEP(call)                                                                                                \
    do {                                                                                                              \
        call;                                                                                                         \
        fprintf(stderr, "test_ilu gpu: %-28s %.2f s\n", #call, sap_test_wtime() - t);                                \
        t = sap_test_wtime();                                                                                         \
    } while (0)
    GPU_STEP(trsv_cases(G, C));
    GPU_STEP(trsv_errors(G));
    GPU_STEP(test_parilu(G));
    GPU_STEP(test_device_ilu0(G, C));
    GPU_STEP(pc_compare(G, C));
#undef GPU_STEP
    sap_context_destroy(C);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_ilu", cpu_part, gpu_part); }
