/* test_gen.c -- the matrix generators, exponential integrals, manufactured solutions,
 * generator specs and sap_matrix_load, checked by brute force. */
#define _POSIX_C_SOURCE 200809L
#include "testing.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- brute-force helpers ------------------------------------------------------------------- */

static double entry(const sap_csr *A, sap_int i, sap_int j)
{
    for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
        if (A->colind[p] == j) return A->val[p];
    return 0.0;
}

static int has_entry(const sap_csr *A, sap_int i, sap_int j)
{
    for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
        if (A->colind[p] == j) return 1;
    return 0;
}

static sap_int half_bandwidth(const sap_csr *A)
{
    sap_int k = 0;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int d = A->colind[p] > i ? A->colind[p] - i : i - A->colind[p];
            if (d > k) k = d;
        }
    return k;
}

/* min_i |a_ii| / sum_{j != i} |a_ij| over rows with a nonzero sum; +inf if none. */
static double dominance(const sap_csr *A)
{
    double dmin = INFINITY;
    for (sap_int i = 0; i < A->nrows; i++) {
        double diag = 0.0, off = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (A->colind[p] == i) diag = fabs(A->val[p]);
            else off += fabs(A->val[p]);
        }
        if (off > 0.0 && diag / off < dmin) dmin = diag / off;
    }
    return dmin;
}

/* Exactly symmetric: same pattern and a_ij == a_ji. */
static int is_symmetric(const sap_csr *A)
{
    if (A->nrows != A->ncols) return 0;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            if (!has_entry(A, j, i) || entry(A, j, i) != A->val[p]) return 0;
        }
    return 1;
}

static int csr_equal(const sap_csr *A, const sap_csr *B)
{
    if (!A || !B) return 0;
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz) return 0;
    if (memcmp(A->rowptr, B->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1))) return 0;
    if (memcmp(A->colind, B->colind, sizeof(sap_int) * (size_t)A->nnz)) return 0;
    return memcmp(A->val, B->val, sizeof(double) * (size_t)A->nnz) == 0;
}

static int is_permutation(const sap_int *p, sap_int n)
{
    char *seen = calloc((size_t)n + 1, 1);
    int ok = seen != NULL;
    for (sap_int i = 0; ok && i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) ok = 0;
        else seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

/* Off-diagonal values in [-1, 1], diagonal >= 0. */
static int values_in_range(const sap_csr *A)
{
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            double v = A->val[p];
            if (A->colind[p] == i ? !(v >= 0.0) : !(v >= -1.0 && v <= 1.0)) return 0;
        }
    return 1;
}

static void check_dominance(const sap_csr *A, double d)
{
    double got = dominance(A);
    CHECK_MSG(fabs(got - d) <= 1e-12 * d, "dominance %.17g, expected %.17g", got, d);
}

/* ---- banded ------------------------------------------------------------------------------------- */

static void test_banded(sap_context *ctx)
{
    const sap_int n = 200, k = 7;
    sap_csr *A = NULL, *B = NULL, *S = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, k, 1.5, 0, 42, &A));
    if (!A) return;
    CHECK_OK(ctx, sap_csr_check(A));
    CHECK(A->nrows == n && A->ncols == n);
    CHECK(A->nnz == n + 2 * k * n - k * (k + 1));
    CHECK(half_bandwidth(A) == k);
    int full = 1;
    for (sap_int i = 0; i < n; i++)
        for (sap_int j = i - k; j <= i + k; j++)
            if (j >= 0 && j < n && !has_entry(A, i, j)) full = 0;
    CHECK(full);
    CHECK(values_in_range(A));
    check_dominance(A, 1.5);
    CHECK(!is_symmetric(A));

    /* determinism */
    CHECK_OK(ctx, sap_gen_banded(ctx, n, k, 1.5, 0, 42, &B));
    CHECK(csr_equal(A, B));
    sap_csr_destroy(B);
    B = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, k, 1.5, 0, 43, &B));
    CHECK(B && B->nnz == A->nnz && memcmp(A->val, B->val, sizeof(double) * (size_t)A->nnz) != 0);
    sap_csr_destroy(B);
    B = NULL;

    /* symmetric (SPD for d > 1) */
    CHECK_OK(ctx, sap_gen_banded(ctx, n, k, 1.25, 1, 42, &S));
    if (S) {
        CHECK_OK(ctx, sap_csr_check(S));
        CHECK(S->nnz == A->nnz);
        CHECK(half_bandwidth(S) == k);
        CHECK(is_symmetric(S));
        CHECK(values_in_range(S));
        check_dominance(S, 1.25);
    }
    sap_csr_destroy(S);
    S = NULL;

    /* K >= N is clamped to N - 1 (dense) */
    CHECK_OK(ctx, sap_gen_banded(ctx, 5, 10, 2.0, 0, 1, &B));
    if (B) {
        CHECK(B->nnz == 25);
        CHECK(half_bandwidth(B) == 4);
        check_dominance(B, 2.0);
    }
    sap_csr_destroy(B);
    B = NULL;

    /* no off-diagonal entries: the diagonal is 1 */
    CHECK_OK(ctx, sap_gen_banded(ctx, 1, 3, 2.0, 0, 1, &B));
    CHECK(B && B->nnz == 1 && B->colind[0] == 0 && B->val[0] == 1.0);
    sap_csr_destroy(B);
    B = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 10, 0, 2.0, 1, 1, &B));
    if (B) {
        CHECK(B->nnz == 10);
        int ones = 1;
        for (sap_int i = 0; i < 10; i++) ones &= B->colind[i] == i && B->val[i] == 1.0;
        CHECK(ones);
    }
    sap_csr_destroy(B);
    B = NULL;

    /* d = 0: zero diagonal (kept as explicit entries) */
    CHECK_OK(ctx, sap_gen_banded(ctx, 20, 2, 0.0, 0, 1, &B));
    if (B) {
        CHECK(B->nnz == 20 + 2 * 2 * 20 - 6);
        CHECK(entry(B, 5, 5) == 0.0 && has_entry(B, 5, 5));
    }
    sap_csr_destroy(B);
    B = NULL;

    /* not too small either: a larger instance stays exact */
    CHECK_OK(ctx, sap_gen_banded(ctx, 100000, 20, 1.0, 1, 9, &B));
    if (B) {
        CHECK(B->nnz == 100000 + 2 * 20 * 100000 - 20 * 21);
        CHECK_OK(ctx, sap_csr_check(B));
        CHECK(half_bandwidth(B) == 20);
        check_dominance(B, 1.0);
    }
    sap_csr_destroy(B);
    sap_csr_destroy(A);
}

/* ---- synthetic ---------------------------------------------------------------------------------- */

static void test_synthetic(sap_context *ctx)
{
    const sap_int n = 300, k = 6;
    sap_int *p = malloc(sizeof(sap_int) * n), *q = malloc(sizeof(sap_int) * n);
    sap_int *p2 = malloc(sizeof(sap_int) * n), *q2 = malloc(sizeof(sap_int) * n);
    double *band = calloc((size_t)(n * n), sizeof(double));
    char *pattern = calloc((size_t)(n * n), 1);
    sap_csr *A = NULL, *B = NULL, *C = NULL;
    if (!p || !q || !p2 || !q2 || !band || !pattern) {
        CHECK(!"malloc failed");
        goto done;
    }

    CHECK_OK(ctx, sap_gen_synthetic(ctx, n, k, 2.0, 0.5, 11, &A, p, q));
    if (!A) goto done;
    CHECK_OK(ctx, sap_csr_check(A));
    CHECK(A->nrows == n && A->ncols == n);
    CHECK(is_permutation(p, n) && is_permutation(q, n));
    int identity = 1;
    for (sap_int i = 0; i < n; i++) identity &= p[i] == i;
    CHECK(!identity);
    CHECK(half_bandwidth(A) > k); /* the permutations hide the band */

    /* un-permute: Band(p[i], q[j]) = A(i, j) must lie within the band, with its diagonal,
     * degree of dominance d and every row's diagonal present */
    int inside = 1;
    for (sap_int i = 0; i < n; i++)
        for (sap_int t = A->rowptr[i]; t < A->rowptr[i + 1]; t++) {
            sap_int r = p[i], c = q[A->colind[t]];
            if (r - c > k || c - r > k) inside = 0;
            band[r * n + c] = A->val[t];
            pattern[r * n + c] = 1;
        }
    CHECK(inside);
    double dmin = INFINITY;
    int diag_ok = 1;
    for (sap_int r = 0; r < n; r++) {
        if (!pattern[r * n + r]) diag_ok = 0;
        double off = 0.0;
        for (sap_int c = 0; c < n; c++)
            if (c != r) off += fabs(band[r * n + c]);
        if (off > 0.0) dmin = fmin(dmin, fabs(band[r * n + r]) / off);
    }
    CHECK(diag_ok);
    CHECK_MSG(fabs(dmin - 2.0) <= 2e-12, "band dominance %.17g", dmin);

    /* p, q optional; determinism; the seed matters */
    CHECK_OK(ctx, sap_gen_synthetic(ctx, n, k, 2.0, 0.5, 11, &B, NULL, NULL));
    CHECK(csr_equal(A, B));
    sap_csr_destroy(B);
    B = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, n, k, 2.0, 0.5, 11, &B, p2, q2));
    CHECK(csr_equal(A, B));
    CHECK(!memcmp(p, p2, sizeof(sap_int) * n) && !memcmp(q, q2, sizeof(sap_int) * n));
    sap_csr_destroy(B);
    B = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, n, k, 2.0, 0.5, 12, &B, p2, q2));
    CHECK(!csr_equal(A, B));
    CHECK(memcmp(p, p2, sizeof(sap_int) * n) != 0);
    sap_csr_destroy(B);
    B = NULL;

    /* fill = 1: the band is exactly sap_gen_banded's (unsymmetric, same seed) */
    CHECK_OK(ctx, sap_gen_synthetic(ctx, n, k, 1.5, 1.0, 5, &B, p, q));
    CHECK_OK(ctx, sap_gen_banded(ctx, n, k, 1.5, 0, 5, &C));
    if (B && C) {
        CHECK(B->nnz == C->nnz);
        int same = 1;
        for (sap_int i = 0; i < n; i++)
            for (sap_int t = B->rowptr[i]; t < B->rowptr[i + 1]; t++) {
                sap_int r = p[i], c = q[B->colind[t]];
                if (!has_entry(C, r, c) || entry(C, r, c) != B->val[t]) same = 0;
            }
        CHECK(same);
    }
    sap_csr_destroy(B);
    sap_csr_destroy(C);
    B = C = NULL;

    /* fill fraction */
    {
        const sap_int nn = 20000, kk = 20;
        CHECK_OK(ctx, sap_gen_synthetic(ctx, nn, kk, 1.0, 0.3, 3, &B, NULL, NULL));
        if (B) {
            CHECK_OK(ctx, sap_csr_check(B));
            double band_off = (double)(2 * kk * nn - kk * (kk + 1));
            double frac = (double)(B->nnz - nn) / band_off;
            CHECK_MSG(fabs(frac - 0.3) < 0.005, "fill fraction %g", frac);
            /* every row keeps its diagonal: sum of rows >= 1 */
            int nonempty = 1;
            for (sap_int i = 0; i < nn; i++) nonempty &= B->rowptr[i + 1] > B->rowptr[i];
            CHECK(nonempty);
        }
        sap_csr_destroy(B);
        B = NULL;
    }

    /* a row-long band sorts correctly (introsort on wide rows) */
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 2000, 1999, 1.0, 1.0, 8, &B, NULL, NULL));
    if (B) {
        CHECK(B->nnz == 2000 * 2000);
        CHECK_OK(ctx, sap_csr_check(B));
    }
    sap_csr_destroy(B);
    B = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 1, 0, 1.0, 1.0, 8, &B, p, q));
    CHECK(B && B->nnz == 1 && B->val[0] == 1.0 && p[0] == 0 && q[0] == 0);
    sap_csr_destroy(B);
    B = NULL;

done:
    sap_csr_destroy(A);
    free(p);
    free(q);
    free(p2);
    free(q2);
    free(band);
    free(pattern);
}

/* ---- block-tridiagonal -------------------------------------------------------------------------- */

static void test_blocktridiag(sap_context *ctx)
{
    const sap_int nb = 5, k = 4, n = nb * k;
    sap_csr *A = NULL, *B = NULL;
    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, nb, k, 1.5, 3, &A));
    if (!A) return;
    CHECK_OK(ctx, sap_csr_check(A));
    CHECK(A->nrows == n && A->ncols == n);
    CHECK(A->nnz == k * k * (3 * nb - 2));
    int pattern_ok = 1;
    for (sap_int i = 0; i < n; i++)
        for (sap_int j = 0; j < n; j++) {
            sap_int bi = i / k, bj = j / k;
            int want = bi - bj <= 1 && bj - bi <= 1;
            if (want != has_entry(A, i, j)) pattern_ok = 0;
        }
    CHECK(pattern_ok);
    CHECK(half_bandwidth(A) == 2 * k - 1);
    CHECK(values_in_range(A));
    check_dominance(A, 1.5);
    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, nb, k, 1.5, 3, &B));
    CHECK(csr_equal(A, B));
    sap_csr_destroy(B);
    B = NULL;
    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, nb, k, 1.5, 4, &B));
    CHECK(!csr_equal(A, B));
    sap_csr_destroy(B);
    B = NULL;
    /* one block: dense k x k */
    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, 1, 6, 3.0, 1, &B));
    CHECK(B && B->nnz == 36);
    if (B) check_dominance(B, 3.0);
    sap_csr_destroy(B);
    B = NULL;
    /* 1 x 1 blocks: tridiagonal */
    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, 10, 1, 1.0, 1, &B));
    CHECK(B && B->nnz == 28 && half_bandwidth(B) == 1);
    sap_csr_destroy(B);
    sap_csr_destroy(A);
}

/* ---- Poisson -------------------------------------------------------------------------------------- */

static void test_poisson(sap_context *ctx)
{
    sap_csr *A = NULL;
    const sap_int nx = 7, ny = 5, n = nx * ny;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, nx, ny, &A));
    if (A) {
        CHECK_OK(ctx, sap_csr_check(A));
        CHECK(A->nrows == n && A->ncols == n);
        CHECK(A->nnz == 5 * n - 2 * (nx + ny));
        CHECK(is_symmetric(A));
        int ok = 1;
        for (sap_int i = 0; i < n; i++)
            for (sap_int j = 0; j < n; j++) {
                sap_int xi = i % nx, yi = i / nx, xj = j % nx, yj = j / nx;
                sap_int dist = (xi > xj ? xi - xj : xj - xi) + (yi > yj ? yi - yj : yj - yi);
                double want = dist == 0 ? 4.0 : dist == 1 ? -1.0 : 0.0;
                if (entry(A, i, j) != want || has_entry(A, i, j) != (dist <= 1)) ok = 0;
            }
        CHECK(ok);
        CHECK(entry(A, 0, 1) == -1.0 && entry(A, 0, nx) == -1.0 && entry(A, nx - 1, nx) == 0.0);
    }
    sap_csr_destroy(A);
    A = NULL;

    const sap_int mx = 4, my = 3, mz = 5, m = mx * my * mz;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, mx, my, mz, &A));
    if (A) {
        CHECK_OK(ctx, sap_csr_check(A));
        CHECK(A->nrows == m);
        CHECK(A->nnz == 7 * m - 2 * (mx * my + my * mz + mx * mz));
        CHECK(is_symmetric(A));
        int ok = 1;
        for (sap_int i = 0; i < m; i++)
            for (sap_int j = 0; j < m; j++) {
                sap_int xi = i % mx, yi = (i / mx) % my, zi = i / (mx * my);
                sap_int xj = j % mx, yj = (j / mx) % my, zj = j / (mx * my);
                sap_int dist = labs((long)(xi - xj)) + labs((long)(yi - yj)) + labs((long)(zi - zj));
                double want = dist == 0 ? 6.0 : dist == 1 ? -1.0 : 0.0;
                if (entry(A, i, j) != want || has_entry(A, i, j) != (dist <= 1)) ok = 0;
            }
        CHECK(ok);
        CHECK(half_bandwidth(A) == mx * my);
    }
    sap_csr_destroy(A);
    A = NULL;

    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 1, 1, &A));
    CHECK(A && A->nnz == 1 && A->val[0] == 4.0);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, 1, 1, 9, &A));
    CHECK(A && A->nnz == 7 * 9 - 2 * (1 + 9 + 9) && half_bandwidth(A) == 1);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, 30, 30, 30, &A));
    CHECK(A && A->nnz == 7 * 27000 - 2 * 3 * 900);
    sap_csr_destroy(A);
}

/* ---- anisotropic diffusion with jumps, recirculating convection-diffusion --------------- */

/* Row sums: 0 in the interior (a conservative stencil), positive at the boundary. */
static void row_sums(const sap_csr *A, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (sap_int i = 0; i < A->nrows; i++) {
        double s = 0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) s += A->val[p];
        if (s < *lo) *lo = s;
        if (s > *hi) *hi = s;
    }
}

/* An M-matrix pattern: positive diagonal, non-positive off-diagonal entries. */
static int m_signs(const sap_csr *A)
{
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] == i ? !(A->val[p] > 0) : A->val[p] > 0) return 0;
    return 1;
}

static void test_flow(sap_context *ctx)
{
    sap_csr *A = NULL;
    const sap_int n = 8, m = n * n * n;
    CHECK_OK(ctx, sap_gen_aniso3d(ctx, n, 1e-3, 1e3, &A));
    if (A) {
        CHECK_OK(ctx, sap_csr_check(A));
        CHECK(A->nrows == m && A->nnz == 7 * m - 6 * n * n);
        CHECK(is_symmetric(A) && m_signs(A));
        CHECK(fabs(dominance(A) - 1.0) < 1e-12); /* weakly dominant: interior rows sum to 0 */
        double lo, hi;
        row_sums(A, &lo, &hi);
        CHECK(fabs(lo) < 1e-9 && hi > 0);
        /* cells (0,0,0) and (1,0,0) share a checkerboard cube (n / 4 = 2 cells): k = jump; the
         * face to (2,0,0) crosses into k = 1: harmonic mean 2 jump / (jump + 1); z is weak */
        CHECK(fabs(entry(A, 0, 1) + 1e3) < 1e-9);
        CHECK(fabs(entry(A, 1, 2) + 2e3 / 1001.0) < 1e-12);
        CHECK(fabs(entry(A, 0, n * n) + 1e3 * 1e-3) < 1e-12);
        CHECK(half_bandwidth(A) == n * n);
    }
    sap_csr_destroy(A);
    A = NULL;
    /* eps = jump = 1: the 7-point Laplacian with boundary faces counted twice */
    CHECK_OK(ctx, sap_gen_aniso3d(ctx, 3, 1.0, 1.0, &A));
    CHECK(A && entry(A, 13, 13) == 6.0 && entry(A, 0, 0) == 9.0 && entry(A, 13, 4) == -1.0);
    sap_csr_destroy(A);
    A = NULL;

    const sap_int q = 9;
    CHECK_OK(ctx, sap_gen_recirc2d(ctx, q, 0.005, &A));
    if (A) {
        CHECK_OK(ctx, sap_csr_check(A));
        CHECK(A->nrows == q * q && A->nnz == 5 * q * q - 4 * q);
        CHECK(!is_symmetric(A) && m_signs(A));
        CHECK(dominance(A) >= 1.0 - 1e-12);
        /* the centre (x = y = 0) has no wind: the plain 5-point stencil times nu */
        const sap_int c = (q / 2) * q + q / 2;
        CHECK(fabs(entry(A, c, c) - 0.02) < 1e-15 && fabs(entry(A, c, c - 1) + 0.005) < 1e-15);
        /* x = 0, y > 0: w = (2 y, 0), the west neighbour is upstream */
        const sap_int r = (q - 2) * q + q / 2;
        const double h = 2.0 / (q + 1), y = -1.0 + h * (q - 1);
        CHECK(fabs(entry(A, r, r - 1) - (-0.005 - 2.0 * y * h)) < 1e-14 && fabs(entry(A, r, r + 1) + 0.005) < 1e-15);
    }
    sap_csr_destroy(A);
    A = NULL;

    CHECK_STATUS(ctx, sap_gen_aniso3d(ctx, 0, 1e-3, 1e3, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_aniso3d(ctx, 4, 0.0, 1e3, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_aniso3d(ctx, 4, 1e-3, NAN, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_aniso3d(ctx, 4, 1e-3, 1e308, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_recirc2d(ctx, 4, -1.0, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_recirc2d(ctx, 4, 1e300, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_recirc2d(ctx, (sap_int)1 << 40, 0.1, &A), SAP_ERR_TOO_LARGE);
    CHECK(A == NULL);
    CHECK_OK(ctx, sap_gen_spec(ctx, "gen:aniso3d:n=5,eps=0.01,jump=10", &A));
    CHECK(A && A->nrows == 125);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_spec(ctx, "gen:recirc2d:n=20", &A));
    CHECK(A && A->nrows == 400);
    sap_csr_destroy(A);
}

/* ---- exponential integrals ------------------------------------------------------------------ */

static void test_expint(void)
{
    CHECK_CLOSE(sap_expint(1, 1.0), 0.21938393439552029, 2e-15);
    CHECK_CLOSE(sap_expint(1, 0.5), 0.55977359477616081, 2e-15);
    CHECK_CLOSE(sap_expint(2, 1.0), 0.14849550677592205, 2e-15);
    CHECK_CLOSE(sap_expint(3, 1.0), 0.10969196719776013, 2e-15);
    CHECK_CLOSE(sap_expint(3, 0.5), 0.22160436427517846, 2e-15);
    /* more reference values (A&S table 5.1 / mpmath) */
    CHECK_CLOSE(sap_expint(1, 2.0) / 0.048900510708061120, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(1, 10.0) / 4.1569689296853243e-06, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(1, 0.01) / 4.0379295765381138, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(1, 1e-10) / 22.448635265138924, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(1, 1.5) / 0.10001958240663265, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(2, 1.25) / 0.10348808120280238, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(3, 2.0) / 0.030133379797815893, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(4, 0.75) / 0.11876384939936067, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(5, 3.0) / 0.0066979849170170440, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(10, 20.0) / 6.9443905554123135e-11, 1.0, 2e-15);
    CHECK_CLOSE(sap_expint(0, 2.0), exp(-2.0) / 2.0, 1e-16);
    CHECK(sap_expint(2, 0.0) == 1.0);
    CHECK(sap_expint(3, 0.0) == 0.5);
    CHECK(sap_expint(5, 0.0) == 0.25);
    CHECK(isinf(sap_expint(1, 0.0)) && sap_expint(1, 0.0) > 0);
    CHECK(isinf(sap_expint(0, 0.0)));
    CHECK(isnan(sap_expint(-1, 1.0)));
    CHECK(isnan(sap_expint(1, -1.0)));
    CHECK(isnan(sap_expint(1, NAN)));
    CHECK(sap_expint(1, INFINITY) == 0.0);
    CHECK(sap_expint(1, 800.0) == 0.0);
    CHECK(sap_expint(1, 700.0) > 0.0);

    /* recurrence n E_{n+1}(x) = e^-x - x E_n(x), across the series / fraction switch */
    const double xs[] = {1e-8, 0.01, 0.3, 0.5, 0.999, 1.0, 1.001, 1.5, 3.0, 10.0, 50.0, 200.0};
    int worst_n = 0;
    double worst = 0.0, worst_x = 0.0;
    for (int n = 1; n <= 12; n++)
        for (size_t t = 0; t < sizeof(xs) / sizeof(xs[0]); t++) {
            double x = xs[t];
            double lhs = n * sap_expint(n + 1, x), rhs = exp(-x) - x * sap_expint(n, x);
            /* rhs cancels for x large relative to n: scale by its terms */
            double err = fabs(lhs - rhs) / fmax(fabs(lhs), fmax(exp(-x), x * sap_expint(n, x)) * 1e-3);
            if (err > worst) {
                worst = err;
                worst_n = n;
                worst_x = x;
            }
        }
    CHECK_MSG(worst < 1e-12, "recurrence error %g at n = %d, x = %g", worst, worst_n, worst_x);

    /* continuity across x = 1 */
    for (int n = 1; n <= 5; n++) {
        double a = sap_expint(n, 1.0), b = sap_expint(n, nextafter(1.0, 2.0));
        CHECK_CLOSE(a, b, 1e-14);
    }
    /* large n, and just above the series' constant term */
    CHECK_CLOSE(sap_expint(200, 0.5) / 0.0030402155485427808, 1.0, 1e-14);
    CHECK_CLOSE(sap_expint(3, 1e-6), 0.49999900000736915, 2e-15);
}

/* ---- radiative ---------------------------------------------------------------------------------- */

/* The closed form, fine where it does not cancel. */
static double radiative_naive(sap_int m, double h, double albedo)
{
    double g = m == 0 ? 2.0 * (h - 0.5 + sap_expint(3, h))
                      : sap_expint(3, (m - 1) * h) - 2.0 * sap_expint(3, m * h) + sap_expint(3, (m + 1) * h);
    return albedo / (2.0 * h) * g;
}

static void check_toeplitz(const sap_csr *A, int *toeplitz, int *sym)
{
    *toeplitz = 1;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p], m = i > j ? i - j : j - i;
            if (A->val[p] != entry(A, m, 0) || !has_entry(A, m, 0)) *toeplitz = 0;
        }
    *sym = is_symmetric(A);
}

static void test_radiative(sap_context *ctx)
{
    sap_csr *A = NULL, *B = NULL;
    int toeplitz, sym;

    /* against the closed form for h = 1 (quadrature path) and h = 2 (closed-form path) */
    const double hs[] = {1.0, 2.0, 0.05, 0.5};
    const double tols[] = {1e-13, 1e-14, 1e-9, 1e-12};
    for (int t = 0; t < 4; t++) {
        const sap_int n = 50;
        CHECK_OK(ctx, sap_gen_radiative(ctx, n, 0.75, hs[t] * n, n - 1, 0.0, &A));
        if (!A) continue;
        CHECK_OK(ctx, sap_csr_check(A));
        CHECK(A->nnz == n * n);
        check_toeplitz(A, &toeplitz, &sym);
        CHECK(toeplitz && sym);
        double worst = 0.0;
        sap_int worst_m = -1;
        for (sap_int m = 0; m < n; m++) {
            double want = radiative_naive(m, hs[t], 0.75), got = entry(A, m, 0);
            double err = fabs(got - want) / fabs(want);
            if (err > worst) {
                worst = err;
                worst_m = m;
            }
            if (!(got > 0.0)) worst = INFINITY;
        }
        CHECK_MSG(worst <= tols[t], "h = %g: relative error %g at m = %lld", hs[t], worst, (long long)worst_m);
        /* decreasing away from the diagonal */
        int decreasing = 1;
        for (sap_int m = 1; m < n; m++) decreasing &= entry(A, m, 0) < entry(A, m - 1, 0);
        CHECK(decreasing);
        sap_csr_destroy(A);
        A = NULL;
    }

    /* row sums: sum_j A_ij = albedo/(2h) int_{a}^{a+h} int_0^tau E1(|t - s|) ds dt
     * = albedo/(2h) [2h - E3(a) + E3(a + h) - E3(tau - a - h) + E3(tau - a)], a = i h,
     * which tends to albedo in the interior: int E1(|x|) dx = 2 */
    const double taus[] = {200.0, 800.0, 20.0, 2.0};
    const sap_int ns[] = {2000, 400, 2000, 300};
    for (int t = 0; t < 4; t++) {
        CHECK_OK(ctx, sap_gen_radiative(ctx, ns[t], 0.75, taus[t], ns[t] - 1, 0.0, &A));
        if (!A) continue;
        double h = taus[t] / ns[t];
        const sap_int rows[] = {0, 1, ns[t] / 3, ns[t] / 2, ns[t] - 1};
        for (int r = 0; r < 5; r++) {
            sap_int i = rows[r];
            double sum = 0.0, a = i * h;
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) sum += A->val[p];
            double want = 0.75 / (2.0 * h) *
                          (2.0 * h - sap_expint(3, a) + sap_expint(3, a + h) - sap_expint(3, fmax(0.0, taus[t] - a - h)) +
                           sap_expint(3, taus[t] - a));
            CHECK_MSG(fabs(sum - want) <= 1e-12 * want, "tau %g row %lld: sum %.17g, expected %.17g", taus[t],
                      (long long)i, sum, want);
            if (taus[t] >= 200.0 && r == 3) CHECK_MSG(fabs(sum - 0.75) <= 1e-12, "middle row sum %.17g", sum);
        }
        sap_csr_destroy(A);
        A = NULL;
    }

    /* the paper's bandwidth and the shift */
    {
        const sap_int n = 1000;
        const double tau = 1000.0;
        double tc = fmax(n / 100.0, 5.0);
        sap_int bw = (sap_int)floor(n * (1.0 - exp(-n / (tc * tau))));
        CHECK(bw == 95);
        CHECK_OK(ctx, sap_gen_radiative(ctx, n, 0.75, tau, -1, 0.0, &A));
        CHECK_OK(ctx, sap_gen_radiative(ctx, n, 0.75, tau, -1, 0.75, &B));
        if (A && B) {
            CHECK(half_bandwidth(A) == bw);
            CHECK(A->nnz == n + 2 * (bw * n - bw * (bw + 1) / 2));
            check_toeplitz(A, &toeplitz, &sym);
            CHECK(toeplitz && sym);
            int shifted = A->nnz == B->nnz;
            for (sap_int i = 0; shifted && i < n; i++)
                for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                    if (B->val[p] != (A->colind[p] == i ? A->val[p] - 0.75 : A->val[p])) shifted = 0;
            CHECK(shifted);
        }
        sap_csr_destroy(A);
        sap_csr_destroy(B);
        A = B = NULL;
        /* n < 500: tc = 5 */
        CHECK_OK(ctx, sap_gen_radiative(ctx, 100, 0.75, 10.0, -1, 0.0, &A));
        if (A) CHECK(half_bandwidth(A) == (sap_int)floor(100 * (1.0 - exp(-100 / (5.0 * 10.0)))));
        sap_csr_destroy(A);
        A = NULL;
    }

    /* underflowing entries are dropped: h = 1000 leaves only the diagonal */
    CHECK_OK(ctx, sap_gen_radiative(ctx, 100, 0.75, 1e5, -1, 0.0, &A));
    if (A) {
        CHECK(A->nnz == 100);
        CHECK_CLOSE(A->val[0], 0.75 * (1.0 - 1.0 / 2000.0), 1e-15);
    }
    sap_csr_destroy(A);
    A = NULL;
    /* h = 1: E1 underflows beyond about 745 cells */
    CHECK_OK(ctx, sap_gen_radiative(ctx, 1000, 0.75, 1000.0, 999, 0.0, &A));
    if (A) {
        sap_int kb = half_bandwidth(A);
        CHECK_MSG(kb > 600 && kb < 760, "underflow bandwidth %lld", (long long)kb);
        int nonzero = 1;
        for (sap_int p = 0; p < A->nnz; p++) nonzero &= A->val[p] != 0.0;
        CHECK(nonzero);
    }
    sap_csr_destroy(A);
    A = NULL;
    /* bw clamped to n - 1; bw = 0 is diagonal */
    CHECK_OK(ctx, sap_gen_radiative(ctx, 10, 0.5, 1.0, 1000000, 0.0, &A));
    CHECK(A && A->nnz == 100);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_radiative(ctx, 10, 0.5, 1.0, 0, 0.0, &A));
    CHECK(A && A->nnz == 10);
    sap_csr_destroy(A);
    A = NULL;
    /* tiny elements: h = 1e-6 stays accurate (no cancellation) and positive */
    CHECK_OK(ctx, sap_gen_radiative(ctx, 100, 1.0, 1e-4, 99, 0.0, &A));
    if (A) {
        int positive = 1;
        for (sap_int p = 0; p < A->nnz; p++) positive &= A->val[p] > 0.0;
        CHECK(positive);
        /* G(0) ~ h^2 (3/2 - gamma - ln h): A_00 ~ h/2 (3/2 - gamma - ln h) */
        double h = 1e-6, want = 0.5 * h * (1.5 - 0.57721566490153286 - log(h));
        CHECK_CLOSE(A->val[0] / want, 1.0, 1e-5);
        /* G(m) ~ h^2 E1(m h) for m >> 1: A_m0 ~ h/2 E1(m h) */
        CHECK_CLOSE(entry(A, 99, 0) / (0.5 * h * sap_expint(1, 99 * h)), 1.0, 1e-4);
        /* row sum of a thin slab (see above), accurate to ~1e-7 in this formula */
        double s = 0.0, a = 50 * h, tau = 1e-4;
        for (sap_int p = A->rowptr[50]; p < A->rowptr[51]; p++) s += A->val[p];
        double want_sum = 1.0 / (2.0 * h) *
                          (2.0 * h - sap_expint(3, a) + sap_expint(3, a + h) - sap_expint(3, tau - a - h) +
                           sap_expint(3, tau - a));
        CHECK_CLOSE(s / want_sum, 1.0, 1e-6);
    }
    sap_csr_destroy(A);
}

/* ---- x* ------------------------------------------------------------------------------------------- */

static void test_xstar(sap_context *ctx)
{
    double x[1001], y[1001];
    CHECK_OK(ctx, sap_gen_xstar(ctx, 5, SAP_XSTAR_PARABOLA, 0, x));
    CHECK(x[0] == 1.0 && x[4] == 1.0 && x[2] == 400.0);
    CHECK_CLOSE(x[1], 1.0 + 399.0 * 0.75, 1e-15);
    CHECK(x[1] == x[3]);
    CHECK_OK(ctx, sap_gen_xstar(ctx, 1, SAP_XSTAR_PARABOLA, 0, x));
    CHECK(x[0] == 400.0);
    CHECK_OK(ctx, sap_gen_xstar(ctx, 2, SAP_XSTAR_PARABOLA, 0, x));
    CHECK(x[0] == 1.0 && x[1] == 1.0);
    CHECK_OK(ctx, sap_gen_xstar(ctx, 1001, SAP_XSTAR_PARABOLA, 0, x));
    CHECK(x[0] == 1.0 && x[1000] == 1.0 && x[500] == 400.0);
    int inrange = 1;
    for (int i = 0; i < 1001; i++) inrange &= x[i] >= 1.0 && x[i] <= 400.0;
    CHECK(inrange);
    CHECK_OK(ctx, sap_gen_xstar(ctx, 1001, SAP_XSTAR_ONES, 0, x));
    int ones = 1;
    for (int i = 0; i < 1001; i++) ones &= x[i] == 1.0;
    CHECK(ones);

    CHECK_OK(ctx, sap_gen_xstar(ctx, 1001, SAP_XSTAR_RANDOM, 5, x));
    CHECK_OK(ctx, sap_gen_xstar(ctx, 1001, SAP_XSTAR_RANDOM, 5, y));
    CHECK(!memcmp(x, y, sizeof(x)));
    double mean = 0.0, lo = 1.0, hi = -1.0;
    for (int i = 0; i < 1001; i++) {
        mean += x[i] / 1001;
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
    }
    CHECK(lo >= -1.0 && hi <= 1.0 && lo < -0.9 && hi > 0.9 && fabs(mean) < 0.1);
    CHECK_OK(ctx, sap_gen_xstar(ctx, 1001, SAP_XSTAR_RANDOM, 6, y));
    CHECK(memcmp(x, y, sizeof(x)) != 0);
    CHECK_OK(ctx, sap_gen_xstar(ctx, 0, SAP_XSTAR_RANDOM, 6, NULL));
    CHECK_STATUS(ctx, sap_gen_xstar(ctx, -1, SAP_XSTAR_ONES, 0, x), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_xstar(ctx, 3, SAP_XSTAR_ONES, 0, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_xstar(ctx, 3, (sap_xstar)7, 0, x), SAP_ERR_INVALID);
    CHECK_STATUS(NULL, sap_gen_xstar(NULL, 3, SAP_XSTAR_ONES, 0, x), SAP_ERR_INVALID);
}

/* ---- threads -------------------------------------------------------------------------------------- */

static void test_threads(sap_context *ctx)
{
    sap_csr *A[2] = {NULL, NULL}, *B[2] = {NULL, NULL}, *C[2] = {NULL, NULL}, *D[2] = {NULL, NULL},
            *E[2] = {NULL, NULL}, *F[2] = {NULL, NULL};
    static double x[2][20000];
    sap_int *p[2], *q[2];
    for (int t = 0; t < 2; t++) {
        p[t] = malloc(sizeof(sap_int) * 5000);
        q[t] = malloc(sizeof(sap_int) * 5000);
    }
    int saved = sap_context_threads(ctx);
    for (int t = 0; t < 2; t++) {
        CHECK_OK(ctx, sap_context_set_threads(ctx, t == 0 ? 1 : 2));
        CHECK_OK(ctx, sap_gen_banded(ctx, 5000, 10, 1.0, t, 77, &A[t]));
        CHECK_OK(ctx, sap_gen_synthetic(ctx, 5000, 10, 1.0, 0.4, 77, &B[t], p[t], q[t]));
        CHECK_OK(ctx, sap_gen_blocktridiag(ctx, 50, 8, 1.0, 77, &C[t]));
        CHECK_OK(ctx, sap_gen_radiative(ctx, 3000, 0.75, 30.0, -1, 0.5, &D[t]));
        CHECK_OK(ctx, sap_gen_poisson2d(ctx, 70, 50, &E[t]));
        CHECK_OK(ctx, sap_gen_poisson3d(ctx, 20, 15, 10, &F[t]));
        CHECK_OK(ctx, sap_gen_xstar(ctx, 20000, SAP_XSTAR_RANDOM, 77, x[t]));
    }
    /* banded: t = 0 unsymmetric, t = 1 symmetric -- compare each with a rerun on
     * another thread count */
    sap_csr *A2 = NULL;
    CHECK_OK(ctx, sap_context_set_threads(ctx, 3));
    CHECK_OK(ctx, sap_gen_banded(ctx, 5000, 10, 1.0, 0, 77, &A2));
    CHECK(csr_equal(A[0], A2));
    sap_csr_destroy(A2);
    A2 = NULL;
    CHECK_OK(ctx, sap_context_set_threads(ctx, 1));
    CHECK_OK(ctx, sap_gen_banded(ctx, 5000, 10, 1.0, 1, 77, &A2));
    CHECK(csr_equal(A[1], A2));
    sap_csr_destroy(A2);
    CHECK(csr_equal(B[0], B[1]));
    CHECK(!memcmp(p[0], p[1], sizeof(sap_int) * 5000) && !memcmp(q[0], q[1], sizeof(sap_int) * 5000));
    CHECK(csr_equal(C[0], C[1]));
    CHECK(csr_equal(D[0], D[1]));
    CHECK(csr_equal(E[0], E[1]));
    CHECK(csr_equal(F[0], F[1]));
    CHECK(!memcmp(x[0], x[1], sizeof(x[0])));
    sap_context_set_threads(ctx, saved);
    for (int t = 0; t < 2; t++) {
        sap_csr_destroy(A[t]);
        sap_csr_destroy(B[t]);
        sap_csr_destroy(C[t]);
        sap_csr_destroy(D[t]);
        sap_csr_destroy(E[t]);
        sap_csr_destroy(F[t]);
        free(p[t]);
        free(q[t]);
    }
}

/* ---- invalid arguments ------------------------------------------------------------------------ */

static void test_invalid(sap_context *ctx)
{
    sap_csr *A = (sap_csr *)&A; /* must be reset to NULL on error */
    sap_int p[4];
#define BAD(expr, status)                                                                              \
    do {                                                                                               \
        A = (sap_csr *)&A;                                                                             \
        CHECK_STATUS(ctx, expr, status);                                                               \
        CHECK(A == NULL);                                                                              \
        if (A && A != (sap_csr *)&A) sap_csr_destroy(A);                                               \
    } while (0)
    BAD(sap_gen_banded(ctx, 0, 1, 1.0, 0, 1, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "n = 0") != NULL);
    BAD(sap_gen_banded(ctx, -5, 1, 1.0, 0, 1, &A), SAP_ERR_INVALID);
    BAD(sap_gen_banded(ctx, 10, -1, 1.0, 0, 1, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "k = -1") != NULL);
    BAD(sap_gen_banded(ctx, 10, 1, -1.0, 0, 1, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "d = ") != NULL);
    BAD(sap_gen_banded(ctx, 10, 1, NAN, 0, 1, &A), SAP_ERR_INVALID);
    BAD(sap_gen_banded(ctx, 10, 1, INFINITY, 0, 1, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_gen_banded(ctx, 10, 1, 1.0, 0, 1, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(NULL, sap_gen_banded(NULL, 10, 1, 1.0, 0, 1, &A), SAP_ERR_INVALID);
    BAD(sap_gen_banded(ctx, INT64_MAX / 2, 10, 1.0, 0, 1, &A), SAP_ERR_TOO_LARGE);
    BAD(sap_gen_banded(ctx, INT64_MAX, 0, 1.0, 0, 1, &A), SAP_ERR_TOO_LARGE);
    BAD(sap_gen_banded(ctx, (sap_int)1 << 40, (sap_int)1 << 30, 1.0, 0, 1, &A), SAP_ERR_TOO_LARGE);

    BAD(sap_gen_synthetic(ctx, 10, 2, 1.0, 0.0, 1, &A, p, p), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "fill") != NULL);
    BAD(sap_gen_synthetic(ctx, 10, 2, 1.0, 1.5, 1, &A, NULL, NULL), SAP_ERR_INVALID);
    BAD(sap_gen_synthetic(ctx, 10, 2, 1.0, NAN, 1, &A, NULL, NULL), SAP_ERR_INVALID);
    BAD(sap_gen_synthetic(ctx, 10, 2, 1.0, -0.5, 1, &A, NULL, NULL), SAP_ERR_INVALID);
    BAD(sap_gen_synthetic(ctx, 0, 2, 1.0, 0.5, 1, &A, NULL, NULL), SAP_ERR_INVALID);
    BAD(sap_gen_synthetic(ctx, 10, 2, -2.0, 0.5, 1, &A, NULL, NULL), SAP_ERR_INVALID);
    BAD(sap_gen_synthetic(ctx, INT64_MAX / 4, 100, 1.0, 0.5, 1, &A, NULL, NULL), SAP_ERR_TOO_LARGE);

    BAD(sap_gen_poisson2d(ctx, 0, 5, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "nx") != NULL);
    BAD(sap_gen_poisson2d(ctx, 5, -1, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "ny") != NULL);
    BAD(sap_gen_poisson3d(ctx, 5, 5, 0, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "nz") != NULL);
    BAD(sap_gen_poisson2d(ctx, (sap_int)1 << 40, (sap_int)1 << 40, &A), SAP_ERR_TOO_LARGE);
    BAD(sap_gen_poisson3d(ctx, (sap_int)1 << 21, (sap_int)1 << 21, (sap_int)1 << 21, &A), SAP_ERR_TOO_LARGE);

    BAD(sap_gen_blocktridiag(ctx, 0, 3, 1.0, 1, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "nb") != NULL);
    BAD(sap_gen_blocktridiag(ctx, 3, 0, 1.0, 1, &A), SAP_ERR_INVALID);
    BAD(sap_gen_blocktridiag(ctx, 3, 3, -1.0, 1, &A), SAP_ERR_INVALID);
    BAD(sap_gen_blocktridiag(ctx, (sap_int)1 << 40, (sap_int)1 << 20, 1.0, 1, &A), SAP_ERR_TOO_LARGE);
    BAD(sap_gen_blocktridiag(ctx, 2, INT64_MAX / 2, 1.0, 1, &A), SAP_ERR_TOO_LARGE);

    BAD(sap_gen_radiative(ctx, 0, 0.75, 10.0, -1, 0.0, &A), SAP_ERR_INVALID);
    BAD(sap_gen_radiative(ctx, 10, 0.75, 0.0, -1, 0.0, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "tau") != NULL);
    BAD(sap_gen_radiative(ctx, 10, 0.75, -3.0, -1, 0.0, &A), SAP_ERR_INVALID);
    BAD(sap_gen_radiative(ctx, 10, 0.75, INFINITY, -1, 0.0, &A), SAP_ERR_INVALID);
    BAD(sap_gen_radiative(ctx, 10, NAN, 10.0, -1, 0.0, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "albedo") != NULL);
    BAD(sap_gen_radiative(ctx, 10, 0.75, 10.0, -1, INFINITY, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "shift") != NULL);
    BAD(sap_gen_radiative(ctx, (sap_int)1 << 40, 0.75, 1000.0, -1, 0.0, &A), SAP_ERR_TOO_LARGE);
    BAD(sap_gen_radiative(ctx, INT64_MAX, 0.75, 1000.0, 0, 0.0, &A), SAP_ERR_TOO_LARGE);
#undef BAD
}

/* ---- specs ------------------------------------------------------------------------------------------ */

static void spec_equals(sap_context *ctx, const char *spec, const sap_csr *want)
{
    sap_csr *A = NULL;
    sap_status st = sap_gen_spec(ctx, spec, &A);
    CHECK_MSG(st == SAP_OK, "%s: %s (%s)", spec, sap_status_name(st), sap_context_last_error(ctx));
    CHECK_MSG(want && csr_equal(A, want), "%s differs from the direct call", spec);
    sap_csr_destroy(A);
    A = NULL;
    st = sap_matrix_load(ctx, spec, NULL, &A);
    CHECK_MSG(st == SAP_OK && csr_equal(A, want), "sap_matrix_load(%s)", spec);
    sap_csr_destroy(A);
}

static void spec_bad(sap_context *ctx, const char *spec, const char *needle)
{
    sap_csr *A = (sap_csr *)&A;
    sap_status st = sap_gen_spec(ctx, spec, &A);
    CHECK_MSG(st == SAP_ERR_INVALID, "'%s' gave %s", spec ? spec : "(null)", sap_status_name(st));
    CHECK_MSG(A == NULL, "'%s' left A set", spec ? spec : "(null)");
    if (needle)
        CHECK_MSG(strstr(sap_context_last_error(ctx), needle) != NULL, "'%s': message '%s' lacks '%s'", spec,
                  sap_context_last_error(ctx), needle);
    if (A && A != (sap_csr *)&A) sap_csr_destroy(A);
}

static void test_spec(sap_context *ctx)
{
    sap_csr *W = NULL;

    CHECK_OK(ctx, sap_gen_banded(ctx, 100, 3, 2.0, 1, 7, &W));
    spec_equals(ctx, "gen:banded:N=100,K=3,d=2,sym=1,seed=7", W);
    spec_equals(ctx, "gen:BANDED:n=1e2,k=3,D=2.0,SYM=true,Seed=7", W);
    spec_equals(ctx, "gen:banded: N = 100 , K=3, d=2, sym=yes, seed=7,", W);
    spec_equals(ctx, "gen:banded:seed=7,sym=1,d=2e0,K=3,N=0.1k", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 1000, 0, 1.0, 0, 1, &W));
    spec_equals(ctx, "gen:banded:N=1k,K=0", W);
    spec_equals(ctx, "gen:banded:N=1000,K=0,d=1,sym=0,seed=1", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 200000, 0, 1.0, 0, 1, &W));
    spec_equals(ctx, "gen:banded:N=2e5,K=0", W);
    spec_equals(ctx, "gen:banded:N=200000,K=0", W);
    spec_equals(ctx, "gen:banded:N=0.2M,K=0", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 50, 2, 1.0, 0, 18446744073709551615ull, &W));
    spec_equals(ctx, "gen:banded:N=50,K=2,seed=18446744073709551615", W);
    sap_csr_destroy(W);
    W = NULL;

    CHECK_OK(ctx, sap_gen_synthetic(ctx, 500, 5, 1.5, 0.5, 1, &W, NULL, NULL));
    spec_equals(ctx, "gen:synthetic:N=500,K=5,d=1.5,fill=0.5", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 300, 4, 1.0, 1.0, 9, &W, NULL, NULL));
    spec_equals(ctx, "gen:synthetic:n=300,k=4,seed=9", W);
    sap_csr_destroy(W);
    W = NULL;

    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 10, 10, &W));
    spec_equals(ctx, "gen:poisson2d:n=10", W);
    spec_equals(ctx, "gen:poisson2d:nx=10,ny=10", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 4, 6, &W));
    spec_equals(ctx, "gen:poisson2d:nx=4,ny=6", W);
    spec_equals(ctx, "gen:poisson2d:n=4,ny=6", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, 6, 6, 6, &W));
    spec_equals(ctx, "gen:poisson3d:n=6", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, 3, 4, 5, &W));
    spec_equals(ctx, "gen:poisson3d:NX=3,Ny=4,nz=5", W);
    sap_csr_destroy(W);
    W = NULL;

    CHECK_OK(ctx, sap_gen_radiative(ctx, 1000, 0.75, 1000.0, -1, 0.0, &W));
    spec_equals(ctx, "gen:radiative:n=1000", W);
    spec_equals(ctx, "gen:radiative:n=1000,albedo=0.75,tau=1000,bw=-1,shift=0", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_radiative(ctx, 200, 0.5, 20.0, 30, 0.5, &W));
    spec_equals(ctx, "gen:radiative:n=200,albedo=0.5,tau=20,bw=30,shift=0.5", W);
    sap_csr_destroy(W);
    W = NULL;

    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, 10, 4, 1.0, 1, &W));
    spec_equals(ctx, "gen:blocktridiag:nb=10,k=4", W);
    sap_csr_destroy(W);
    W = NULL;
    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, 7, 3, 2.5, 4, &W));
    spec_equals(ctx, "gen:blocktridiag:NB=7,K=3,d=2.5,seed=4", W);
    sap_csr_destroy(W);
    W = NULL;

    spec_bad(ctx, "gen:nosuch:n=3", "banded");
    spec_bad(ctx, "gen:", "unknown generator");
    spec_bad(ctx, "gen", NULL);
    spec_bad(ctx, "", NULL);
    spec_bad(ctx, NULL, NULL);
    spec_bad(ctx, "banded:N=10,K=2", "gen:");
    spec_bad(ctx, "gen:banded", "'n'");
    spec_bad(ctx, "gen:banded:N=10", "missing required key 'k'");
    spec_bad(ctx, "gen:banded:N=10,K=2,Q=3", "unknown key 'Q'");
    CHECK(strstr(sap_context_last_error(ctx), "seed") != NULL); /* lists the valid keys */
    spec_bad(ctx, "gen:banded:N=abc,K=2", "'n'");
    spec_bad(ctx, "gen:banded:N=10.5,K=2", "'n'");
    spec_bad(ctx, "gen:banded:N=,K=2", "'n'");
    spec_bad(ctx, "gen:banded:N=inf,K=2", "'n'");
    spec_bad(ctx, "gen:banded:N=1e30,K=2", "'n'");
    spec_bad(ctx, "gen:banded:N=99999999999999999999,K=2", "'n'");
    spec_bad(ctx, "gen:banded:N=0x10,K=2", "'n'");
    spec_bad(ctx, "gen:banded:N=10,K=2,N=5", "twice");
    spec_bad(ctx, "gen:banded:N=10,K", "not key=value");
    spec_bad(ctx, "gen:banded:N=10,K=2,d=-1", "d = ");
    spec_bad(ctx, "gen:banded:N=10,K=2,d=nan", "'d'");
    spec_bad(ctx, "gen:banded:N=10,K=2,d=1x", "'d'");
    spec_bad(ctx, "gen:banded:N=10,K=2,sym=maybe", "'sym'");
    spec_bad(ctx, "gen:banded:N=10,K=2,seed=-1", "'seed'");
    spec_bad(ctx, "gen:banded:N=10,K=2,seed=18446744073709551616", "'seed'");
    spec_bad(ctx, "gen:banded:N=0,K=2", "n = 0");
    spec_bad(ctx, "gen:synthetic:N=10,K=2,fill=0", "fill");
    spec_bad(ctx, "gen:synthetic:N=10,K=2,sym=1", "unknown key 'sym'");
    spec_bad(ctx, "gen:poisson2d:nx=5", "'ny'");
    spec_bad(ctx, "gen:poisson2d", "'nx'");
    spec_bad(ctx, "gen:poisson3d:nx=5,ny=5", "'nz'");
    spec_bad(ctx, "gen:poisson2d:n=5,nz=5", "unknown key 'nz'");
    spec_bad(ctx, "gen:radiative:tau=5", "'n'");
    spec_bad(ctx, "gen:radiative:n=10,tau=0", "tau");
    spec_bad(ctx, "gen:blocktridiag:nb=3", "'k'");
    spec_bad(ctx, "gen:blocktridiag:nb=3,k=2,fill=1", "unknown key 'fill'");

    const char *help = sap_gen_spec_help();
    CHECK(help != NULL && help == sap_gen_spec_help());
    if (help) {
        const char *words[] = {"gen:banded", "gen:synthetic", "gen:poisson2d", "gen:poisson3d", "gen:radiative",
                               "gen:blocktridiag", "fill=1", "sym=0", "seed=1", "albedo=0.75", "tau=1000",
                               "bw=-1", "shift=0", "nb=", "nz="};
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
            CHECK_MSG(strstr(help, words[i]) != NULL, "help lacks '%s'", words[i]);
    }
}

static void test_matrix_load(sap_context *ctx)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/gen_load.mtx", sap_test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 2.0\n2 2 3.0\n3 3 4.0\n3 1 -1.5\n", f);
    fclose(f);
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_matrix_load(ctx, path, NULL, &A));
    if (A) {
        CHECK(A->nrows == 3 && A->nnz == 4);
        CHECK(entry(A, 2, 0) == -1.5 && entry(A, 1, 1) == 3.0);
    }
    sap_csr_destroy(A);
    A = (sap_csr *)&A;
    snprintf(path, sizeof(path), "%s/no_such_file.mtx", sap_test_tmpdir());
    sap_status st = sap_matrix_load(ctx, path, NULL, &A);
    CHECK(st < 0 && A == NULL);
    CHECK_STATUS(ctx, sap_matrix_load(ctx, "gen:banded:N=3", NULL, &A), SAP_ERR_INVALID);
    CHECK(A == NULL);
    CHECK_STATUS(ctx, sap_matrix_load(ctx, NULL, NULL, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_matrix_load(ctx, "gen:banded:N=3,K=1", NULL, NULL), SAP_ERR_INVALID);
}

/* ---- out of memory ---------------------------------------------------------------------------------- */

typedef sap_status (*gen_call)(sap_context *ctx, sap_csr **A);

static sap_status oom_banded(sap_context *c, sap_csr **A) { return sap_gen_banded(c, 50, 3, 1.0, 1, 1, A); }
static sap_status oom_synthetic(sap_context *c, sap_csr **A)
{
    sap_int p[60], q[60];
    return sap_gen_synthetic(c, 60, 4, 1.0, 0.5, 1, A, p, q);
}
static sap_status oom_blocktri(sap_context *c, sap_csr **A) { return sap_gen_blocktridiag(c, 4, 3, 1.0, 1, A); }
static sap_status oom_poisson2d(sap_context *c, sap_csr **A) { return sap_gen_poisson2d(c, 5, 4, A); }
static sap_status oom_poisson3d(sap_context *c, sap_csr **A) { return sap_gen_poisson3d(c, 3, 4, 2, A); }
static sap_status oom_radiative(sap_context *c, sap_csr **A) { return sap_gen_radiative(c, 40, 0.75, 4.0, -1, 0.1, A); }
static sap_status oom_spec(sap_context *c, sap_csr **A) { return sap_gen_spec(c, "gen:synthetic:N=40,K=3,fill=0.5", A); }
static sap_status oom_load(sap_context *c, sap_csr **A) { return sap_matrix_load(c, "gen:radiative:n=30", NULL, A); }

static void test_oom(void)
{
    const struct {
        const char *name;
        gen_call call;
    } calls[] = {{"banded", oom_banded},       {"synthetic", oom_synthetic}, {"blocktridiag", oom_blocktri},
                 {"poisson2d", oom_poisson2d}, {"poisson3d", oom_poisson3d}, {"radiative", oom_radiative},
                 {"spec", oom_spec},           {"load", oom_load}};
    for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
        int succeeded = 0, bad = 0, failures = 0;
        for (long k = 0; k < 100 && !succeeded; k++) {
            sap_test_failing_alloc state = {k, 0, 0};
            sap_context *ctx = sap_test_failing_context(&state);
            if (!ctx) {
                bad++;
                break;
            }
            sap_csr *A = NULL;
            sap_status st = calls[c].call(ctx, &A);
            if (st == SAP_OK) {
                succeeded = 1;
                if (!A) bad++;
                sap_csr_destroy(A);
            } else if (st == SAP_ERR_OUT_OF_MEMORY && A == NULL) {
                failures++;
            } else {
                fprintf(stderr, "%s: fail_at %ld gave %s\n", calls[c].name, k, sap_status_name(st));
                bad++;
                sap_csr_destroy(A);
            }
            sap_context_destroy(ctx);
            if (state.live != 0) {
                fprintf(stderr, "%s: fail_at %ld leaks %ld blocks\n", calls[c].name, k, state.live);
                bad++;
            }
        }
        CHECK_MSG(succeeded && !bad && failures >= 2, "out-of-memory sweep of %s (%d failures)", calls[c].name,
                  failures);
    }
}

int main(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    test_banded(ctx);
    test_synthetic(ctx);
    test_blocktridiag(ctx);
    test_poisson(ctx);
    test_flow(ctx);
    test_expint();
    test_radiative(ctx);
    test_xstar(ctx);
    test_threads(ctx);
    test_invalid(ctx);
    test_spec(ctx);
    test_matrix_load(ctx);
    test_oom();
    sap_context_destroy(ctx);
    return sap_test_finish("test_gen");
}
