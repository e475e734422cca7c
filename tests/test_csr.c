/* test_csr.c -- every CSR operation and every statistic against a brute-force dense
 * computation, argument validation, determinism across thread counts, and an
 * out-of-memory sweep. */
#include "testing.h"

#include "reorder/reorder_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- deterministic random numbers for the tests ------------------------------------- */

static uint64_t rng_s = 0x9E3779B97F4A7C15ull;

static uint64_t rnext(void)
{
    rng_s ^= rng_s << 13;
    rng_s ^= rng_s >> 7;
    rng_s ^= rng_s << 17;
    return rng_s;
}
static double runif(void) { return (double)(rnext() >> 11) * 0x1.0p-53; }
static sap_int rbelow(sap_int n) { return n <= 1 ? 0 : (sap_int)(rnext() % (uint64_t)n); }
/* dyadic values k/8, k in -16..16: sums and products of a few are exact */
static double rval(void) { return (double)(rbelow(33) - 16) / 8.0; }

static void rperm(sap_int n, sap_int *p)
{
    for (sap_int i = 0; i < n; i++) p[i] = i;
    for (sap_int i = n - 1; i > 0; i--) {
        sap_int j = rbelow(i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* ---- the dense reference: values plus the stored pattern ------------------------------ */

typedef struct ref {
    sap_int n, m;
    double *v;          /* row-major v[i*m + j] */
    unsigned char *pat; /* 1 where an entry is stored (explicit zeros included) */
} ref;

#define RV(R, i, j) ((R)->v[(size_t)(i) * (size_t)(R)->m + (size_t)(j)])
#define RP(R, i, j) ((R)->pat[(size_t)(i) * (size_t)(R)->m + (size_t)(j)])

static ref ref_new(sap_int n, sap_int m)
{
    ref R = {n, m, calloc((size_t)(n * m) + 1, sizeof(double)), calloc((size_t)(n * m) + 1, 1)};
    return R;
}
static void ref_free(ref *R)
{
    free(R->v);
    free(R->pat);
    R->v = NULL;
    R->pat = NULL;
}
static sap_int ref_nnz(const ref *R)
{
    sap_int c = 0;
    for (sap_int k = 0; k < R->n * R->m; k++) c += R->pat[k];
    return c;
}

/* Random COO (duplicates, explicit zeros, empty rows) and its dense reference. */
static sap_coo *random_coo(sap_context *ctx, sap_int n, sap_int m, double density, ref *R)
{
    *R = ref_new(n, m);
    sap_coo *C = NULL;
    if (sap_coo_create(ctx, n, m, 4, &C) != SAP_OK) return NULL;
    if (n == 0 || m == 0) return C;
    unsigned char *empty = calloc((size_t)n, 1);
    for (sap_int i = 0; i < n; i++) empty[i] = n > 2 && runif() < 0.15;
    sap_int target = (sap_int)(density * (double)n * (double)m) + 1;
    for (sap_int k = 0; k < target; k++) {
        sap_int i = rbelow(n), j = rbelow(m);
        if (empty[i]) continue;
        double v = runif() < 0.08 ? 0.0 : rval();
        sap_coo_push(C, i, j, v);
        RV(R, i, j) += v;
        RP(R, i, j) = 1;
        if (runif() < 0.15) { /* a duplicate, sometimes cancelling */
            double w = runif() < 0.3 ? -v : rval();
            sap_coo_push(C, i, j, w);
            RV(R, i, j) += w;
        }
    }
    free(empty);
    return C;
}

/* CSR holding exactly the reference (pattern and values). */
static sap_csr *csr_of_ref(sap_context *ctx, const ref *R)
{
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    if (sap_coo_create(ctx, R->n, R->m, 0, &C) != SAP_OK) return NULL;
    for (sap_int i = 0; i < R->n; i++)
        for (sap_int j = 0; j < R->m; j++)
            if (RP(R, i, j)) sap_coo_push(C, i, j, RV(R, i, j));
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    return A;
}

/* 1 when A is canonical and matches R (pattern exactly, values within tol). */
static int csr_matches(const sap_csr *A, const ref *R, double tol, const char *what)
{
    if (!A) {
        fprintf(stderr, "%s: matrix is NULL\n", what);
        return 0;
    }
    if (sap_csr_check(A) != SAP_OK) {
        fprintf(stderr, "%s: not canonical: %s\n", what, sap_context_last_error(A->ctx));
        return 0;
    }
    if (A->nrows != R->n || A->ncols != R->m) {
        fprintf(stderr, "%s: size %lld x %lld, expected %lld x %lld\n", what, (long long)A->nrows,
                (long long)A->ncols, (long long)R->n, (long long)R->m);
        return 0;
    }
    if (A->nnz != ref_nnz(R)) {
        fprintf(stderr, "%s: nnz %lld, expected %lld\n", what, (long long)A->nnz, (long long)ref_nnz(R));
        return 0;
    }
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            if (!RP(R, i, j) || !sap_test_close(A->val[p], RV(R, i, j), tol)) {
                fprintf(stderr, "%s: entry (%lld,%lld) = %.17g, expected %s%.17g\n", what, (long long)i,
                        (long long)j, A->val[p], RP(R, i, j) ? "" : "no entry, value ", RV(R, i, j));
                return 0;
            }
        }
    return 1;
}

/* bitwise equality of two CSR */
static int csr_identical(const sap_csr *A, const sap_csr *B)
{
    if (!A || !B || A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz) return 0;
    return memcmp(A->rowptr, B->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1)) == 0 &&
           memcmp(A->colind, B->colind, sizeof(sap_int) * (size_t)A->nnz) == 0 &&
           memcmp(A->val, B->val, sizeof(double) * (size_t)A->nnz) == 0;
}

/* ---- brute-force operations on the reference ------------------------------------------ */

static ref ref_transpose(const ref *A)
{
    ref T = ref_new(A->m, A->n);
    for (sap_int i = 0; i < A->n; i++)
        for (sap_int j = 0; j < A->m; j++) {
            RV(&T, j, i) = RV(A, i, j);
            RP(&T, j, i) = RP(A, i, j);
        }
    return T;
}

/* E = alpha*A + beta*A^T on the union pattern; keep_diag: E_ii = a_ii (expansion). */
static ref ref_add_transpose(const ref *A, double alpha, double beta, int keep_diag)
{
    ref E = ref_new(A->n, A->n);
    for (sap_int i = 0; i < A->n; i++)
        for (sap_int j = 0; j < A->n; j++) {
            RP(&E, i, j) = RP(A, i, j) | RP(A, j, i);
            if (keep_diag && i == j) RV(&E, i, j) = RV(A, i, j);
            else if (RP(A, i, j) && RP(A, j, i)) RV(&E, i, j) = alpha * RV(A, i, j) + beta * RV(A, j, i);
            else if (RP(A, i, j)) RV(&E, i, j) = alpha * RV(A, i, j);
            else if (RP(A, j, i)) RV(&E, i, j) = beta * RV(A, j, i);
        }
    return E;
}

static ref ref_permute(const ref *A, const sap_int *p, const sap_int *q)
{
    ref B = ref_new(A->n, A->m);
    for (sap_int i = 0; i < A->n; i++)
        for (sap_int j = 0; j < A->m; j++) {
            sap_int r = p ? p[i] : i, c = q ? q[j] : j;
            RV(&B, i, j) = RV(A, r, c);
            RP(&B, i, j) = RP(A, r, c);
        }
    return B;
}

static double ref_norm(const ref *A, sap_norm_type type)
{
    double res = 0.0;
    if (type == SAP_NORM_ONE) {
        for (sap_int j = 0; j < A->m; j++) {
            double s = 0.0;
            for (sap_int i = 0; i < A->n; i++) s += fabs(RV(A, i, j));
            res = fmax(res, s);
        }
    } else if (type == SAP_NORM_INF) {
        for (sap_int i = 0; i < A->n; i++) {
            double s = 0.0;
            for (sap_int j = 0; j < A->m; j++) s += fabs(RV(A, i, j));
            res = fmax(res, s);
        }
    } else if (type == SAP_NORM_FRO) {
        for (sap_int k = 0; k < A->n * A->m; k++) res += A->v[k] * A->v[k];
        res = sqrt(res);
    } else {
        for (sap_int k = 0; k < A->n * A->m; k++) res = fmax(res, fabs(A->v[k]));
    }
    return res;
}

static sap_matrix_stats ref_stats(const ref *A)
{
    sap_matrix_stats s;
    memset(&s, 0, sizeof(s));
    sap_int n = A->n, m = A->m, nd = n < m ? n : m;
    s.nrows = n;
    s.ncols = m;
    s.nnz = ref_nnz(A);
    sap_int width = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int cnt = 0, first = -1, last = -1;
        for (sap_int j = 0; j < m; j++) {
            if (!RP(A, i, j)) continue;
            cnt++;
            if (first < 0) first = j;
            last = j;
            sap_int d = i > j ? i - j : j - i;
            if (d > s.half_bandwidth) s.half_bandwidth = d;
            if (i > j && i - j > s.lower_bandwidth) s.lower_bandwidth = i - j;
            if (j > i && j - i > s.upper_bandwidth) s.upper_bandwidth = j - i;
        }
        if (cnt == 0) s.empty_rows++;
        else width += last - first + 1;
        if (cnt > s.max_row_nnz) s.max_row_nnz = cnt;
    }
    s.mean_row_nnz = n ? (double)s.nnz / (double)n : 0.0;
    s.mean_row_width = n ? (double)width / (double)n : 0.0;
    s.norm_one = ref_norm(A, SAP_NORM_ONE);
    s.norm_inf = ref_norm(A, SAP_NORM_INF);
    s.norm_fro = ref_norm(A, SAP_NORM_FRO);
    s.norm_max = ref_norm(A, SAP_NORM_MAX);
    if (n == m) {
        int ss = 1, ns = 1;
        double dev = 0.0;
        for (sap_int i = 0; i < n; i++)
            for (sap_int j = 0; j < n; j++) {
                if (RP(A, i, j) != RP(A, j, i)) ss = 0;
                if (RV(A, i, j) != RV(A, j, i)) ns = 0;
                dev = fmax(dev, fabs(RV(A, i, j) - RV(A, j, i)));
            }
        s.structurally_symmetric = ss;
        s.numerically_symmetric = ns;
        s.symmetry_deviation = dev == 0.0 ? 0.0 : dev / s.norm_max;
    }
    s.diag_dominance = INFINITY;
    int all_pos = 1;
    for (sap_int i = 0; i < nd; i++) {
        double off = 0.0, ad = fabs(RV(A, i, i));
        for (sap_int j = 0; j < m; j++)
            if (j != i) off += fabs(RV(A, i, j));
        if (!RP(A, i, i) || RV(A, i, i) == 0.0) s.zero_diagonal++;
        if (!(RV(A, i, i) > 0.0)) all_pos = 0;
        double r = off == 0.0 ? INFINITY : ad / off;
        if (r < s.diag_dominance) s.diag_dominance = r;
        if (ad >= off) s.dominant_rows++;
    }
    s.spd_estimate = n == m && s.numerically_symmetric && all_pos;
    return s;
}

#define CHECK_STATS_FIELD_INT(a, b, f, what) \
    CHECK_MSG((a).f == (b).f, "%s: stats." #f " = %lld, expected %lld", what, (long long)(a).f, (long long)(b).f)
#define CHECK_STATS_FIELD_DBL(a, b, f, what)                                                       \
    CHECK_MSG(sap_test_close((a).f, (b).f, 1e-13), "%s: stats." #f " = %.17g, expected %.17g", what, \
              (double)(a).f, (double)(b).f)

static void check_stats_equal(const sap_matrix_stats *got, const sap_matrix_stats *exp, const char *what)
{
    CHECK_STATS_FIELD_INT(*got, *exp, nrows, what);
    CHECK_STATS_FIELD_INT(*got, *exp, ncols, what);
    CHECK_STATS_FIELD_INT(*got, *exp, nnz, what);
    CHECK_STATS_FIELD_INT(*got, *exp, half_bandwidth, what);
    CHECK_STATS_FIELD_INT(*got, *exp, lower_bandwidth, what);
    CHECK_STATS_FIELD_INT(*got, *exp, upper_bandwidth, what);
    CHECK_STATS_FIELD_INT(*got, *exp, empty_rows, what);
    CHECK_STATS_FIELD_INT(*got, *exp, max_row_nnz, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, mean_row_nnz, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, mean_row_width, what);
    CHECK_STATS_FIELD_INT(*got, *exp, structurally_symmetric, what);
    CHECK_STATS_FIELD_INT(*got, *exp, numerically_symmetric, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, symmetry_deviation, what);
    CHECK_STATS_FIELD_INT(*got, *exp, zero_diagonal, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, diag_dominance, what);
    CHECK_STATS_FIELD_INT(*got, *exp, dominant_rows, what);
    CHECK_STATS_FIELD_INT(*got, *exp, spd_estimate, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, norm_one, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, norm_inf, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, norm_fro, what);
    CHECK_STATS_FIELD_DBL(*got, *exp, norm_max, what);
}

/* bitwise comparison of two stats records, field by field (no padding compared) */
static int stats_identical(const sap_matrix_stats *a, const sap_matrix_stats *b)
{
#define SAME(f) (memcmp(&a->f, &b->f, sizeof(a->f)) == 0)
    return SAME(nrows) && SAME(ncols) && SAME(nnz) && SAME(half_bandwidth) && SAME(lower_bandwidth) &&
           SAME(upper_bandwidth) && SAME(empty_rows) && SAME(max_row_nnz) && SAME(mean_row_nnz) &&
           SAME(mean_row_width) && SAME(structurally_symmetric) && SAME(numerically_symmetric) &&
           SAME(symmetry_deviation) && SAME(zero_diagonal) && SAME(diag_dominance) && SAME(dominant_rows) &&
           SAME(spd_estimate) && SAME(norm_one) && SAME(norm_inf) && SAME(norm_fro) && SAME(norm_max);
#undef SAME
}

/* ---- the operations on one random matrix ---------------------------------------------- */

static void test_stats_of(sap_context *ctx, const ref *R, const sap_csr *A, const char *what);

static void test_conversions(sap_context *ctx, const sap_coo *C, const ref *R, const sap_csr *A, const char *what)
{
    /* from_coo: duplicates summed, explicit zeros kept */
    CHECK_MSG(csr_matches(A, R, 0.0, what), "%s: from_coo", what);

    /* from_arrays: shuffled columns inside rows, duplicates split in two */
    {
        sap_int n = R->n, nnz = A->nnz, extra = 0;
        sap_int *rp = calloc((size_t)n + 1, sizeof(sap_int));
        sap_int *ci = calloc((size_t)(2 * nnz) + 1, sizeof(sap_int));
        double *vv = calloc((size_t)(2 * nnz) + 1, sizeof(double));
        for (sap_int i = 0; i < n; i++) {
            sap_int w = A->rowptr[i] + extra;
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                if (runif() < 0.25) { /* split into two halves that sum back exactly */
                    ci[w] = A->colind[p];
                    vv[w++] = A->val[p] / 2;
                    ci[w] = A->colind[p];
                    vv[w++] = A->val[p] / 2;
                    extra++;
                } else {
                    ci[w] = A->colind[p];
                    vv[w++] = A->val[p];
                }
            }
            rp[i + 1] = w;
            sap_int b = rp[i];
            for (sap_int k = w - 1; k > b; k--) { /* shuffle the row */
                sap_int t = b + rbelow(k - b + 1);
                sap_int tc = ci[k];
                ci[k] = ci[t];
                ci[t] = tc;
                double tv = vv[k];
                vv[k] = vv[t];
                vv[t] = tv;
            }
        }
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_csr_from_arrays(ctx, R->n, R->m, rp, ci, vv, &B));
        CHECK_MSG(csr_matches(B, R, 0.0, what), "%s: from_arrays", what);
        sap_csr_destroy(B);
        /* val NULL: ones, duplicates counted */
        B = NULL;
        CHECK_OK(ctx, sap_csr_from_arrays(ctx, R->n, R->m, rp, ci, NULL, &B));
        if (B) {
            int ok = B->nnz == A->nnz;
            for (sap_int i = 0; ok && i < n; i++)
                for (sap_int p = B->rowptr[i]; p < B->rowptr[i + 1]; p++) {
                    sap_int cnt = 0;
                    for (sap_int k = rp[i]; k < rp[i + 1]; k++) cnt += ci[k] == B->colind[p];
                    if (B->val[p] != (double)cnt) ok = 0;
                }
            CHECK_MSG(ok, "%s: from_arrays with val NULL", what);
        }
        sap_csr_destroy(B);
        free(rp);
        free(ci);
        free(vv);
    }

    /* copy, to_coo (-> from_coo round trip), to_dense, from_dense */
    {
        sap_csr *B = NULL, *B2 = NULL;
        CHECK_OK(ctx, sap_csr_copy(A, &B));
        CHECK(csr_identical(A, B));
        sap_coo *C2 = NULL;
        CHECK_OK(ctx, sap_csr_to_coo(A, &C2));
        if (C2) {
            CHECK(C2->nnz == A->nnz);
            CHECK_OK(ctx, sap_csr_from_coo(C2, &B2));
            CHECK(csr_identical(A, B2));
        }
        sap_coo_destroy(C2);
        sap_csr_destroy(B);
        sap_csr_destroy(B2);
        sap_dense *D = NULL;
        CHECK_OK(ctx, sap_csr_to_dense(A, &D));
        if (D) {
            int ok = 1;
            for (sap_int i = 0; i < R->n; i++)
                for (sap_int j = 0; j < R->m; j++)
                    if (D->val[i + j * D->ld] != RV(R, i, j)) ok = 0;
            CHECK_MSG(ok, "%s: to_dense", what);
            B = NULL;
            CHECK_OK(ctx, sap_csr_from_dense(D, 0.0, &B)); /* drops the zeros */
            if (B) {
                ref Z = ref_new(R->n, R->m);
                for (sap_int k = 0; k < R->n * R->m; k++) {
                    Z.v[k] = R->v[k];
                    Z.pat[k] = R->v[k] != 0.0;
                }
                CHECK_MSG(csr_matches(B, &Z, 0.0, what), "%s: from_dense(0)", what);
                ref_free(&Z);
            }
            sap_csr_destroy(B);
            B = NULL;
            CHECK_OK(ctx, sap_csr_from_dense(D, -1.0, &B)); /* keeps everything */
            CHECK(B && B->nnz == R->n * R->m && sap_csr_check(B) == SAP_OK);
            sap_csr_destroy(B);
        }
        sap_dense_destroy(D);
    }
    (void)C;
}

static void test_transpose_ops(sap_context *ctx, const ref *R, const sap_csr *A, const char *what)
{
    sap_csr *T = NULL;
    CHECK_OK(ctx, sap_csr_transpose(A, &T));
    ref RT = ref_transpose(R);
    CHECK_MSG(csr_matches(T, &RT, 0.0, what), "%s: transpose", what);
    sap_csr *TT = NULL;
    if (T) {
        CHECK_OK(ctx, sap_csr_transpose(T, &TT));
        CHECK_MSG(csr_identical(A, TT), "%s: transpose twice", what);
    }
    sap_csr_destroy(T);
    sap_csr_destroy(TT);
    ref_free(&RT);

    if (R->n != R->m) {
        sap_csr *B = (sap_csr *)&B;
        CHECK_STATUS(ctx, sap_csr_add_transpose(A, 1.0, 1.0, &B), SAP_ERR_NOT_SQUARE);
        CHECK(B == NULL);
        B = (sap_csr *)&B;
        CHECK_STATUS(ctx, sap_csr_symmetric_expand(A, SAP_SYMMETRIC, &B), SAP_ERR_NOT_SQUARE);
        CHECK(B == NULL);
        return;
    }

    /* add_transpose */
    static const double ab[][2] = {{1, 1}, {1, -1}, {0.5, 2}, {0, 1}, {1, 0}, {-3, 0.25}};
    for (size_t k = 0; k < sizeof(ab) / sizeof(ab[0]); k++) {
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_csr_add_transpose(A, ab[k][0], ab[k][1], &B));
        ref E = ref_add_transpose(R, ab[k][0], ab[k][1], 0);
        CHECK_MSG(csr_matches(B, &E, 1e-15, what), "%s: add_transpose(%g, %g)", what, ab[k][0], ab[k][1]);
        ref_free(&E);
        sap_csr_destroy(B);
    }

    /* symmetric_expand of the lower triangle, of the upper one, and of the mixed matrix */
    for (int part = 0; part < 3; part++) {
        ref L = ref_new(R->n, R->n);
        for (sap_int i = 0; i < R->n; i++)
            for (sap_int j = 0; j < R->n; j++)
                if ((part == 0 && j <= i) || (part == 1 && j >= i) || part == 2) {
                    RV(&L, i, j) = RV(R, i, j);
                    RP(&L, i, j) = RP(R, i, j);
                }
        sap_csr *Tm = csr_of_ref(ctx, &L);
        test_stats_of(ctx, &L, Tm, what); /* a triangle: structurally unsymmetric */
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_csr_symmetric_expand(Tm, SAP_SYMMETRIC, &B));
        ref E = ref_add_transpose(&L, 1.0, 1.0, 1);
        CHECK_MSG(csr_matches(B, &E, 0.0, what), "%s: symmetric_expand part %d", what, part);
        if (B && part < 2) {
            sap_matrix_stats s;
            CHECK_OK(ctx, sap_csr_stats(B, &s));
            CHECK(s.structurally_symmetric && s.numerically_symmetric);
        }
        ref_free(&E);
        sap_csr_destroy(B);
        B = NULL;
        CHECK_OK(ctx, sap_csr_symmetric_expand(Tm, SAP_GENERAL, &B));
        CHECK(csr_identical(Tm, B));
        sap_csr_destroy(B);

        /* skew: a nonzero diagonal is an error, explicit zeros on it are fine */
        int nonzero_diag = 0;
        sap_int first_bad = -1;
        for (sap_int i = 0; i < R->n; i++)
            if (RP(&L, i, i) && RV(&L, i, i) != 0.0) {
                if (!nonzero_diag) first_bad = i;
                nonzero_diag = 1;
            }
        char where[64];
        snprintf(where, sizeof(where), "a(%lld,%lld)", (long long)first_bad, (long long)first_bad);
        B = (sap_csr *)&B;
        CHECK_STATUS(ctx, sap_csr_symmetric_expand(Tm, SAP_SKEW_SYMMETRIC, &B),
                     nonzero_diag ? SAP_ERR_INVALID : SAP_OK);
        if (nonzero_diag) {
            CHECK(B == NULL);
            CHECK(strstr(sap_context_last_error(ctx), "diagonal") != NULL);
            CHECK_MSG(strstr(sap_context_last_error(ctx), where) != NULL, "'%s' lacks %s", sap_context_last_error(ctx),
                      where);
        }
        sap_csr_destroy(nonzero_diag ? NULL : B);
        for (sap_int i = 0; i < R->n; i++) RV(&L, i, i) = 0.0; /* keep the pattern, zero the values */
        sap_csr_destroy(Tm);
        Tm = csr_of_ref(ctx, &L);
        B = NULL;
        CHECK_OK(ctx, sap_csr_symmetric_expand(Tm, SAP_SKEW_SYMMETRIC, &B));
        E = ref_add_transpose(&L, 1.0, -1.0, 1);
        CHECK_MSG(csr_matches(B, &E, 0.0, what), "%s: skew symmetric_expand part %d", what, part);
        if (B && part < 2) {
            /* B + B^Tm vanishes on the pattern */
            sap_csr *Z = NULL;
            CHECK_OK(ctx, sap_csr_add_transpose(B, 1.0, 1.0, &Z));
            int zero = Z != NULL;
            for (sap_int p = 0; zero && p < Z->nnz; p++) zero = Z->val[p] == 0.0;
            CHECK(zero);
            sap_csr_destroy(Z);
        }
        ref_free(&E);
        sap_csr_destroy(B);
        sap_csr_destroy(Tm);
        ref_free(&L);
    }
}

static void test_permute(sap_context *ctx, const ref *R, const sap_csr *A, const char *what)
{
    sap_int n = R->n, m = R->m;
    sap_int *p = malloc(sizeof(sap_int) * ((size_t)n + 1)), *q = malloc(sizeof(sap_int) * ((size_t)m + 1));
    sap_int *pinv = malloc(sizeof(sap_int) * ((size_t)n + 1)), *qinv = malloc(sizeof(sap_int) * ((size_t)m + 1));
    for (int kind = 0; kind < 4; kind++) {
        /* random, reversed, rotated, random */
        if (kind == 1) {
            for (sap_int i = 0; i < n; i++) p[i] = n - 1 - i;
            for (sap_int j = 0; j < m; j++) q[j] = m - 1 - j;
        } else if (kind == 2) {
            for (sap_int i = 0; i < n; i++) p[i] = (i + 3) % n;
            for (sap_int j = 0; j < m; j++) q[j] = (j + m / 2) % m;
        } else {
            rperm(n, p);
            rperm(m, q);
        }
        CHECK_OK(ctx, sap_perm_check(ctx, n, p));
        CHECK_OK(ctx, sap_perm_invert(ctx, n, p, pinv));
        CHECK_OK(ctx, sap_perm_invert(ctx, m, q, qinv));
        int inv_ok = 1;
        for (sap_int i = 0; i < n; i++) inv_ok &= pinv[p[i]] == i;
        for (sap_int j = 0; j < m; j++) inv_ok &= qinv[q[j]] == j;
        CHECK(inv_ok);
        for (int nulls = 0; nulls < 4; nulls++) {
            const sap_int *pp = nulls & 1 ? NULL : p, *qq = nulls & 2 ? NULL : q;
            sap_csr *B = NULL, *C = NULL;
            CHECK_OK(ctx, sap_csr_permute(A, pp, qq, &B));
            ref E = ref_permute(R, pp, qq);
            CHECK_MSG(csr_matches(B, &E, 0.0, what), "%s: permute kind %d nulls %d", what, kind, nulls);
            ref_free(&E);
            if (B) {
                CHECK_OK(ctx, sap_csr_permute(B, pp ? pinv : NULL, qq ? qinv : NULL, &C));
                CHECK_MSG(csr_identical(A, C), "%s: permute by the inverse", what);
            }
            sap_csr_destroy(B);
            sap_csr_destroy(C);
        }
    }
    /* invalid permutations name the position */
    if (n >= 2) {
        rperm(n, p);
        sap_int k = rbelow(n - 1) + 1, saved = p[k];
        p[k] = p[k - 1];
        sap_csr *B = (sap_csr *)&B;
        CHECK_STATUS(ctx, sap_csr_permute(A, p, NULL, &B), SAP_ERR_INVALID);
        CHECK(B == NULL);
        char pos[64];
        snprintf(pos, sizeof(pos), "p[%lld]", (long long)k);
        CHECK_MSG(strstr(sap_context_last_error(ctx), pos) != NULL, "%s: message '%s' lacks %s", what,
                  sap_context_last_error(ctx), pos);
        p[k] = saved;
    }
    if (m >= 1) {
        rperm(m, q);
        sap_int k = rbelow(m);
        q[k] = m;
        sap_csr *B = (sap_csr *)&B;
        CHECK_STATUS(ctx, sap_csr_permute(A, NULL, q, &B), SAP_ERR_INVALID);
        CHECK(B == NULL);
        char pos[64];
        snprintf(pos, sizeof(pos), "q[%lld]", (long long)k);
        CHECK_MSG(strstr(sap_context_last_error(ctx), pos) != NULL, "%s: message '%s' lacks %s", what,
                  sap_context_last_error(ctx), pos);
    }
    free(p);
    free(q);
    free(pinv);
    free(qinv);
}

static void test_scale_spmv_norms(sap_context *ctx, const ref *R, const sap_csr *A, const char *what)
{
    sap_int n = R->n, m = R->m;
    double *r = malloc(sizeof(double) * ((size_t)n + 1)), *c = malloc(sizeof(double) * ((size_t)m + 1));
    for (sap_int i = 0; i < n; i++) r[i] = rval() + 3.0;
    for (sap_int j = 0; j < m; j++) c[j] = rval() - 3.0;
    for (int nulls = 0; nulls < 4; nulls++) {
        const double *rr = nulls & 1 ? NULL : r, *cc = nulls & 2 ? NULL : c;
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_csr_copy(A, &B));
        if (!B) continue;
        CHECK_OK(ctx, sap_csr_scale(B, rr, cc));
        ref E = ref_new(n, m);
        for (sap_int i = 0; i < n; i++)
            for (sap_int j = 0; j < m; j++) {
                RP(&E, i, j) = RP(R, i, j);
                RV(&E, i, j) = (rr ? rr[i] : 1.0) * RV(R, i, j) * (cc ? cc[j] : 1.0);
            }
        CHECK_MSG(csr_matches(B, &E, 1e-15, what), "%s: scale nulls %d", what, nulls);
        ref_free(&E);
        sap_csr_destroy(B);
    }

    double *x = malloc(sizeof(double) * ((size_t)m + 1)), *y = malloc(sizeof(double) * ((size_t)n + 1));
    double *y0 = malloc(sizeof(double) * ((size_t)n + 1));
    static const double ab[][2] = {{1, 0}, {1, 1}, {-2, 0.5}, {0, 3}, {0, 0}, {0.75, -1}};
    for (size_t k = 0; k < sizeof(ab) / sizeof(ab[0]); k++) {
        double alpha = ab[k][0], beta = ab[k][1];
        for (sap_int j = 0; j < m; j++) x[j] = runif() * 2 - 1;
        for (sap_int i = 0; i < n; i++) y0[i] = y[i] = beta == 0.0 ? NAN : runif() * 2 - 1; /* beta=0 ignores y */
        CHECK_OK(ctx, sap_csr_spmv(A, alpha, alpha == 0.0 ? NULL : x, beta, y));
        int ok = 1;
        for (sap_int i = 0; i < n; i++) {
            double s = 0.0;
            for (sap_int j = 0; j < m; j++) s += RV(R, i, j) * x[j];
            double e = alpha * s + (beta == 0.0 ? 0.0 : beta * y0[i]);
            if (!sap_test_close(y[i], e, 1e-13)) ok = 0;
        }
        CHECK_MSG(ok, "%s: spmv alpha %g beta %g", what, alpha, beta);
    }

    static const sap_norm_type types[] = {SAP_NORM_ONE, SAP_NORM_INF, SAP_NORM_FRO, SAP_NORM_MAX};
    for (int t = 0; t < 4; t++) {
        double v = -1.0;
        CHECK_OK(ctx, sap_csr_norm(A, types[t], &v));
        CHECK_MSG(sap_test_close(v, ref_norm(R, types[t]), 1e-14), "%s: norm %d = %.17g, expected %.17g", what,
                  (int)types[t], v, ref_norm(R, types[t]));
    }
    free(r);
    free(c);
    free(x);
    free(y);
    free(y0);
}

static void test_stats_of(sap_context *ctx, const ref *R, const sap_csr *A, const char *what)
{
    sap_matrix_stats s, e = ref_stats(R);
    memset(&s, 0xff, sizeof(s));
    CHECK_OK(ctx, sap_csr_stats(A, &s));
    check_stats_equal(&s, &e, what);
}

static void test_random(sap_context *ctx)
{
    static const struct {
        sap_int n, m;
        double density;
    } cases[] = {{0, 0, 0.1}, {1, 1, 1.0}, {1, 1, 0.0}, {0, 5, 0.5}, {5, 0, 0.5}, {1, 7, 0.5},
                 {7, 1, 0.5}, {6, 6, 0.4}, {20, 20, 0.15}, {20, 13, 0.3}, {13, 20, 0.3}, {64, 64, 0.05},
                 {40, 40, 0.9}, {150, 150, 0.4}, {100, 37, 0.2}, {37, 100, 0.02}, {200, 200, 0.01}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int rep = 0; rep < 3; rep++) {
            char what[128];
            snprintf(what, sizeof(what), "%lldx%lld density %g rep %d", (long long)cases[c].n,
                     (long long)cases[c].m, cases[c].density, rep);
            ref R;
            sap_coo *C = random_coo(ctx, cases[c].n, cases[c].m, cases[c].density, &R);
            CHECK(C != NULL);
            sap_csr *A = NULL;
            CHECK_OK(ctx, sap_csr_from_coo(C, &A));
            if (A) {
                test_conversions(ctx, C, &R, A, what);
                test_transpose_ops(ctx, &R, A, what);
                test_permute(ctx, &R, A, what);
                test_scale_spmv_norms(ctx, &R, A, what);
                test_stats_of(ctx, &R, A, what);
            }
            sap_csr_destroy(A);
            sap_coo_destroy(C);
            ref_free(&R);
        }
    }
}

/* ---- statistics on hand-made matrices ------------------------------------------------- */

static void set(ref *R, sap_int i, sap_int j, double v)
{
    RV(R, i, j) = v;
    RP(R, i, j) = 1;
}

static void stats_case(sap_context *ctx, const ref *R, const char *what, const sap_matrix_stats *expect)
{
    sap_csr *A = csr_of_ref(ctx, R);
    CHECK(A != NULL);
    if (!A) return;
    sap_matrix_stats s;
    CHECK_OK(ctx, sap_csr_stats(A, &s));
    sap_matrix_stats e = ref_stats(R);
    check_stats_equal(&s, &e, what);
    if (expect) check_stats_equal(&s, expect, what); /* the hand-computed values too */
    sap_csr_destroy(A);
}

static void test_stats_special(sap_context *ctx)
{
    /* 3x3 SPD, diagonally dominant, tridiagonal */
    {
        ref R = ref_new(3, 3);
        set(&R, 0, 0, 4), set(&R, 0, 1, -1);
        set(&R, 1, 0, -1), set(&R, 1, 1, 4), set(&R, 1, 2, -2);
        set(&R, 2, 1, -2), set(&R, 2, 2, 3);
        sap_matrix_stats e = {.nrows = 3, .ncols = 3, .nnz = 7, .half_bandwidth = 1, .lower_bandwidth = 1,
                              .upper_bandwidth = 1, .empty_rows = 0, .max_row_nnz = 3, .mean_row_nnz = 7.0 / 3,
                              .mean_row_width = 7.0 / 3, .structurally_symmetric = 1, .numerically_symmetric = 1,
                              .symmetry_deviation = 0, .zero_diagonal = 0, .diag_dominance = 4.0 / 3,
                              .dominant_rows = 3, .spd_estimate = 1, .norm_one = 7, .norm_inf = 7,
                              .norm_fro = sqrt(16 + 1 + 1 + 16 + 4 + 4 + 9), .norm_max = 4};
        stats_case(ctx, &R, "spd tridiagonal", &e);
        /* perturb one value: pattern symmetric, values not */
        set(&R, 2, 1, -1);
        sap_matrix_stats e2 = e;
        e2.numerically_symmetric = 0;
        e2.spd_estimate = 0;
        e2.symmetry_deviation = 1.0 / 4;
        e2.diag_dominance = 4.0 / 3;
        e2.norm_one = 6;
        e2.norm_inf = 7;
        e2.norm_fro = sqrt(16 + 1 + 1 + 16 + 4 + 1 + 9);
        stats_case(ctx, &R, "perturbed", &e2);
        ref_free(&R);
    }
    /* explicit zero without its mirror: numerically but not structurally symmetric;
     * a missing and an explicitly zero diagonal entry */
    {
        ref R = ref_new(4, 4);
        set(&R, 0, 1, 0.0);
        set(&R, 1, 1, 0.0);
        set(&R, 2, 2, 5.0);
        set(&R, 3, 0, 1.0), set(&R, 0, 3, 1.0);
        sap_matrix_stats e = {.nrows = 4, .ncols = 4, .nnz = 5, .half_bandwidth = 3, .lower_bandwidth = 3,
                              .upper_bandwidth = 3, .empty_rows = 0, .max_row_nnz = 2, .mean_row_nnz = 5.0 / 4,
                              .mean_row_width = (3 + 1 + 1 + 1) / 4.0, .structurally_symmetric = 0,
                              .numerically_symmetric = 1, .symmetry_deviation = 0, .zero_diagonal = 3,
                              .diag_dominance = 0, .dominant_rows = 2, .spd_estimate = 0, .norm_one = 5,
                              .norm_inf = 5, .norm_fro = sqrt(27), .norm_max = 5};
        stats_case(ctx, &R, "explicit zeros", &e);
        ref_free(&R);
    }
    /* symmetric pair plus a lower entry without its mirror */
    {
        ref R = ref_new(3, 3);
        set(&R, 0, 1, 5), set(&R, 1, 0, 5), set(&R, 2, 0, 1);
        sap_matrix_stats e = {.nrows = 3, .ncols = 3, .nnz = 3, .half_bandwidth = 2, .lower_bandwidth = 2,
                              .upper_bandwidth = 1, .empty_rows = 0, .max_row_nnz = 1, .mean_row_nnz = 1,
                              .mean_row_width = 1, .structurally_symmetric = 0, .numerically_symmetric = 0,
                              .symmetry_deviation = 0.2, .zero_diagonal = 3, .diag_dominance = 0,
                              .dominant_rows = 0, .spd_estimate = 0, .norm_one = 6, .norm_inf = 5,
                              .norm_fro = sqrt(51), .norm_max = 5};
        stats_case(ctx, &R, "unmatched lower entry", &e);
        ref_free(&R);
    }
    /* diagonal matrix: every off-diagonal sum is 0 -> d = +inf (0/0 rows included) */
    {
        ref R = ref_new(3, 3);
        set(&R, 0, 0, 2), set(&R, 1, 1, -3);
        sap_matrix_stats e = {.nrows = 3, .ncols = 3, .nnz = 2, .empty_rows = 1, .max_row_nnz = 1,
                              .mean_row_nnz = 2.0 / 3, .mean_row_width = 2.0 / 3, .structurally_symmetric = 1,
                              .numerically_symmetric = 1, .zero_diagonal = 1, .diag_dominance = INFINITY,
                              .dominant_rows = 3, .spd_estimate = 0, .norm_one = 3, .norm_inf = 3,
                              .norm_fro = sqrt(13), .norm_max = 3};
        stats_case(ctx, &R, "diagonal", &e);
        ref_free(&R);
    }
    /* rectangular: symmetry fields 0, diagonal quantities over min(n, m) rows */
    {
        ref R = ref_new(4, 2);
        set(&R, 0, 0, 3), set(&R, 0, 1, 1);
        set(&R, 1, 0, 1), set(&R, 1, 1, 1);
        set(&R, 3, 0, 7);
        sap_matrix_stats e = {.nrows = 4, .ncols = 2, .nnz = 5, .half_bandwidth = 3, .lower_bandwidth = 3,
                              .upper_bandwidth = 1, .empty_rows = 1, .max_row_nnz = 2, .mean_row_nnz = 5.0 / 4,
                              .mean_row_width = 5.0 / 4, .zero_diagonal = 0, .diag_dominance = 1,
                              .dominant_rows = 2, .norm_one = 11, .norm_inf = 7, .norm_fro = sqrt(61),
                              .norm_max = 7};
        stats_case(ctx, &R, "rectangular", &e);
        ref_free(&R);
    }
    /* 0x0 and 1x1 */
    {
        ref R = ref_new(0, 0);
        sap_matrix_stats e = {.structurally_symmetric = 1, .numerically_symmetric = 1,
                              .diag_dominance = INFINITY, .spd_estimate = 1};
        stats_case(ctx, &R, "0x0", &e);
        ref_free(&R);
        R = ref_new(1, 1);
        set(&R, 0, 0, -2);
        sap_matrix_stats e1 = {.nrows = 1, .ncols = 1, .nnz = 1, .max_row_nnz = 1, .mean_row_nnz = 1,
                               .mean_row_width = 1, .structurally_symmetric = 1, .numerically_symmetric = 1,
                               .diag_dominance = INFINITY, .dominant_rows = 1, .norm_one = 2, .norm_inf = 2,
                               .norm_fro = 2, .norm_max = 2};
        stats_case(ctx, &R, "1x1", &e1);
        ref_free(&R);
    }
    /* random symmetric, SPD-like (diagonal above the row sums), and strongly dominant */
    for (int rep = 0; rep < 6; rep++) {
        sap_int n = 5 + rbelow(60);
        ref S;
        sap_coo *C = random_coo(ctx, n, n, 0.1, &S);
        sap_coo_destroy(C);
        ref E = ref_add_transpose(&S, 1.0, 1.0, 0);
        if (rep % 2 == 0)
            for (sap_int i = 0; i < n; i++) {
                double off = 0;
                for (sap_int j = 0; j < n; j++) off += j != i ? fabs(RV(&E, i, j)) : 0.0;
                set(&E, i, i, 2 * off + 1);
            }
        stats_case(ctx, &E, "random symmetric", NULL);
        ref_free(&S);
        ref_free(&E);
    }
    /* large values: the Frobenius norm does not overflow, tiny ones do not underflow */
    {
        ref R = ref_new(2, 2);
        set(&R, 0, 0, 3e200), set(&R, 1, 1, 4e200);
        sap_csr *A = csr_of_ref(ctx, &R);
        double f = 0;
        CHECK_OK(ctx, sap_csr_norm(A, SAP_NORM_FRO, &f));
        CHECK_CLOSE(f, 5e200, 1e-15);
        A->val[0] = 3e-200, A->val[1] = 4e-200;
        CHECK_OK(ctx, sap_csr_norm(A, SAP_NORM_FRO, &f));
        CHECK(fabs(f - 5e-200) <= 1e-14 * 5e-200);
        A->val[0] = NAN;
        CHECK_OK(ctx, sap_csr_norm(A, SAP_NORM_FRO, &f));
        CHECK(isnan(f));
        CHECK_OK(ctx, sap_csr_norm(A, SAP_NORM_MAX, &f));
        CHECK(isnan(f));
        CHECK_OK(ctx, sap_csr_norm(A, SAP_NORM_ONE, &f));
        CHECK(isnan(f));
        CHECK_OK(ctx, sap_csr_norm(A, SAP_NORM_INF, &f));
        CHECK(isnan(f));
        sap_csr_destroy(A);
        ref_free(&R);
    }
}

/* ---- validation ----------------------------------------------------------------------- */

static void test_check(sap_context *ctx)
{
    /* 3x4: rows {0, 2}, {1}, {0, 3} */
    static const sap_int rp[] = {0, 2, 3, 5}, ci[] = {0, 2, 1, 0, 3};
    static const double vv[] = {1, 2, 3, 4, 5};
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 3, 4, 5, &A));
    if (!A) return;
#define RESET() (memcpy(A->rowptr, rp, sizeof(rp)), memcpy(A->colind, ci, sizeof(ci)), memcpy(A->val, vv, sizeof(vv)), \
                 A->nrows = 3, A->ncols = 4, A->nnz = 5)
    RESET();
    CHECK_OK(ctx, sap_csr_check(A));
    A->rowptr[0] = 1;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    RESET();
    A->rowptr[3] = 4;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    RESET();
    A->rowptr[1] = 7; /* decreasing afterwards; must not read past colind */
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "decreases") != NULL);
    RESET();
    A->colind[1] = 4;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INDEX);
    RESET();
    A->colind[3] = -1;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INDEX);
    RESET();
    A->colind[1] = 0; /* duplicate */
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    RESET();
    A->colind[3] = 3, A->colind[4] = 0; /* unsorted */
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    RESET();
    A->nnz = -1;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    RESET();
    A->nrows = -1;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    RESET();
    sap_int *save = A->colind;
    A->colind = NULL;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    A->colind = save;
    save = A->rowptr;
    A->rowptr = NULL;
    CHECK_STATUS(ctx, sap_csr_check(A), SAP_ERR_INVALID);
    A->rowptr = save;
    RESET();
    CHECK_OK(ctx, sap_csr_check(A));
    CHECK_STATUS(ctx, sap_csr_check(NULL), SAP_ERR_INVALID);
#undef RESET
    sap_csr_destroy(A);
}

static void test_from_arrays_errors(sap_context *ctx)
{
    /* unsorted with duplicates: row 0 = {2:1, 0:2, 2:3}, row 1 empty, row 2 = {1:4, 3:5, 1:6} */
    sap_int rp[] = {0, 3, 3, 6}, ci[] = {2, 0, 2, 1, 3, 1};
    double vv[] = {1, 2, 3, 4, 5, 6};
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, ci, vv, &A));
    if (A) {
        static const sap_int erp[] = {0, 2, 2, 4}, eci[] = {0, 2, 1, 3};
        static const double evv[] = {2, 4, 10, 5};
        CHECK(A->nnz == 4 && memcmp(A->rowptr, erp, sizeof(erp)) == 0 && memcmp(A->colind, eci, sizeof(eci)) == 0 &&
              memcmp(A->val, evv, sizeof(evv)) == 0);
    }
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, ci, NULL, &A));
    if (A) CHECK(A->val[0] == 1 && A->val[1] == 2 && A->val[2] == 2 && A->val[3] == 1);
    sap_csr_destroy(A);

    A = (sap_csr *)&A;
    rp[0] = 1;
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, ci, vv, &A), SAP_ERR_INVALID);
    CHECK(A == NULL);
    rp[0] = 0;
    rp[2] = 2; /* decreasing */
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, ci, vv, &A), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "row 1") != NULL);
    rp[2] = 3;
    ci[4] = 4;
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, ci, vv, &A), SAP_ERR_INDEX);
    CHECK(strstr(sap_context_last_error(ctx), "row 2") != NULL);
    ci[4] = -1;
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, ci, vv, &A), SAP_ERR_INDEX);
    ci[4] = 3;
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, 4, NULL, ci, vv, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, NULL, vv, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, -1, 4, rp, ci, vv, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, -4, rp, ci, vv, &A), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_from_arrays(ctx, 3, 4, rp, ci, vv, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_from_arrays(NULL, 3, 4, rp, ci, vv, &A), SAP_ERR_INVALID);
    CHECK(A == NULL);
    /* empty matrices */
    sap_int zero = 0;
    CHECK_OK(ctx, sap_csr_from_arrays(ctx, 0, 0, &zero, NULL, NULL, &A));
    CHECK(A && A->nnz == 0 && A->nrows == 0);
    sap_csr_destroy(A);

    /* COO with an entry out of range */
    sap_coo *C = NULL;
    CHECK_OK(ctx, sap_coo_create(ctx, 2, 2, 0, &C));
    CHECK_STATUS(ctx, sap_coo_push(C, 2, 0, 1.0), SAP_ERR_INDEX);
    CHECK_STATUS(ctx, sap_coo_push(C, 0, -1, 1.0), SAP_ERR_INDEX);
    CHECK_OK(ctx, sap_coo_push(C, 1, 1, 1.0));
    C->col[0] = 5;
    A = (sap_csr *)&A;
    CHECK_STATUS(ctx, sap_csr_from_coo(C, &A), SAP_ERR_INDEX);
    CHECK(A == NULL);
    sap_coo_destroy(C);
}

static void test_arguments(sap_context *ctx)
{
    sap_csr *A = NULL, *B = NULL, *R = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 3, 2, 0, &R));
    CHECK_OK(ctx, sap_csr_create(ctx, 2, 2, 0, &A));
    double x[3] = {1, 2, 3}, y[3] = {0, 0, 0}, v;
    sap_int p[3] = {0, 1, 2};
    sap_matrix_stats s;

    CHECK_STATUS(ctx, sap_csr_transpose(NULL, &B), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_transpose(A, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_symmetric_expand(NULL, SAP_SYMMETRIC, &B), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_symmetric_expand(A, SAP_SYMMETRIC, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_symmetric_expand(A, (sap_symmetry)7, &B), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_symmetric_expand(R, SAP_SYMMETRIC, &B), SAP_ERR_NOT_SQUARE);
    CHECK(strstr(sap_context_last_error(ctx), "3 x 2") != NULL);
    CHECK_STATUS(ctx, sap_csr_symmetric_expand(R, SAP_GENERAL, &B), SAP_ERR_NOT_SQUARE);
    CHECK_STATUS(ctx, sap_csr_add_transpose(NULL, 1, 1, &B), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_add_transpose(A, 1, 1, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_add_transpose(R, 1, 1, &B), SAP_ERR_NOT_SQUARE);
    CHECK_STATUS(ctx, sap_csr_permute(NULL, p, p, &B), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_permute(A, p, p, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_scale(NULL, x, x), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_spmv(NULL, 1, x, 0, y), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_spmv(A, 1, NULL, 0, y), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_spmv(A, 1, x, 0, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_norm(NULL, SAP_NORM_ONE, &v), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_norm(A, SAP_NORM_ONE, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_norm(A, (sap_norm_type)0, &v), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_stats(NULL, &s), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_csr_stats(A, NULL), SAP_ERR_INVALID);
    CHECK(B == NULL);

    /* permutation checks */
    sap_int pinv[4];
    sap_int good[4] = {2, 0, 3, 1}, dup[4] = {2, 0, 2, 1}, big[4] = {2, 0, 4, 1}, neg[4] = {2, -1, 3, 1};
    CHECK_OK(ctx, sap_perm_check(ctx, 4, good));
    CHECK_OK(ctx, sap_perm_check(ctx, 0, NULL));
    CHECK_STATUS(ctx, sap_perm_check(ctx, 4, dup), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "p[2]") && strstr(sap_context_last_error(ctx), "p[0]"));
    CHECK_STATUS(ctx, sap_perm_check(ctx, 4, big), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "p[2] = 4") != NULL);
    CHECK_STATUS(ctx, sap_perm_check(ctx, 4, neg), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(ctx), "p[1] = -1") != NULL);
    CHECK_STATUS(ctx, sap_perm_check(ctx, 4, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_perm_check(ctx, -1, good), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_perm_check(NULL, 4, good), SAP_ERR_INVALID);
    CHECK_OK(ctx, sap_perm_invert(ctx, 4, good, pinv));
    CHECK(pinv[0] == 1 && pinv[1] == 3 && pinv[2] == 0 && pinv[3] == 2);
    CHECK_STATUS(ctx, sap_perm_invert(ctx, 4, dup, pinv), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_perm_invert(ctx, 4, good, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_perm_invert(ctx, 4, good, good), SAP_ERR_INVALID);
    CHECK_OK(ctx, sap_perm_invert(ctx, 0, NULL, NULL));
    CHECK_STATUS(ctx, sap_perm_invert(NULL, 4, good, pinv), SAP_ERR_INVALID);
    sap_csr_destroy(A);
    sap_csr_destroy(R);

    /* sizes that cannot be allocated */
    A = (sap_csr *)&A;
    CHECK_STATUS(ctx, sap_csr_create(ctx, INT64_MAX, 1, 0, &A), SAP_ERR_TOO_LARGE);
    CHECK(A == NULL);
    CHECK_STATUS(ctx, sap_csr_create(ctx, 1, 1, INT64_MAX / 4, &A), SAP_ERR_TOO_LARGE);
    CHECK(A == NULL);

    /* from_dense keeps NaN whatever the drop tolerance */
    sap_dense *D = NULL;
    CHECK_OK(ctx, sap_dense_create(ctx, 2, 2, &D));
    if (D) {
        D->val[0] = NAN, D->val[1] = 0.5, D->val[3] = 2.0;
        CHECK_OK(ctx, sap_csr_from_dense(D, 1.0, &A));
        CHECK(A && A->nnz == 2 && A->colind[0] == 0 && isnan(A->val[0]) && A->colind[1] == 1 && A->val[1] == 2.0);
        sap_csr_destroy(A);
        sap_dense_destroy(D);
    }
}

/* A long row sorted after a column permutation (exercises the long-row sort). */
static void test_long_rows(sap_context *ctx)
{
    static const sap_int lens[] = {33, 100, 1000, 20000};
    for (size_t t = 0; t < sizeof(lens) / sizeof(lens[0]); t++) {
        sap_int m = lens[t];
        ref R = ref_new(2, m);
        for (sap_int j = 0; j < m; j++) {
            set(&R, 0, j, (double)j);
            if (j % 3 == 0) set(&R, 1, j, -(double)j);
        }
        sap_csr *A = csr_of_ref(ctx, &R);
        sap_int *q = malloc(sizeof(sap_int) * (size_t)m);
        for (int kind = 0; kind < 4; kind++) {
            /* random, reversed, organ pipe, few runs */
            for (sap_int j = 0; j < m; j++)
                q[j] = kind == 1 ? m - 1 - j : kind == 2 ? (j % 2 ? m - 1 - j / 2 : j / 2) : (j * 7919) % m;
            if (kind == 0) rperm(m, q);
            if (kind == 3 && m % 7919 == 0) rperm(m, q);
            if (sap_perm_check(ctx, m, q) != SAP_OK) rperm(m, q);
            sap_csr *B = NULL;
            CHECK_OK(ctx, sap_csr_permute(A, NULL, q, &B));
            ref E = ref_permute(&R, NULL, q);
            CHECK_MSG(csr_matches(B, &E, 0.0, "long row"), "long row %lld kind %d", (long long)m, kind);
            ref_free(&E);
            sap_csr_destroy(B);
        }
        free(q);
        sap_csr_destroy(A);
        ref_free(&R);
    }
}

/* ---- determinism across thread counts --------------------------------------------------- */

/* a random n x m matrix: a diagonal, about per_row entries a row, 70% of them within 20 of
 * the diagonal and the rest anywhere (band_only: all within 20, those outside the matrix
 * left out) */
static sap_csr *random_csr_shape(sap_context *ctx, sap_int n, sap_int m, sap_int per_row, int band_only)
{
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    if (sap_coo_create(ctx, n, m, n * per_row, &C) != SAP_OK) return NULL;
    for (sap_int i = 0; i < n; i++) {
        sap_int k = rbelow(2 * per_row + 1);
        if (i < m) sap_coo_push(C, i, i, 10.0 + runif());
        for (sap_int t = 0; t < k; t++) {
            sap_int j = band_only || runif() < 0.7 ? i + rbelow(41) - 20 : rbelow(m); /* banded plus scattered */
            if (j < 0 || j >= m) {
                if (band_only) continue;
                j = rbelow(m);
            }
            sap_coo_push(C, i, j, (runif() - 0.5) * exp(10 * (runif() - 0.5)));
        }
    }
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    return A;
}

static sap_csr *random_csr(sap_context *ctx, sap_int n, sap_int m, sap_int per_row)
{
    return random_csr_shape(ctx, n, m, per_row, 0);
}

/* sap__csr_scan (the solver's one pass at create) against the passes it replaces:
 * sap__csr_stats_quick's fields, sap_drop_off's K and kept fraction from its histogram,
 * sap_csr_check's first bad row and the first non-finite value. */
static void test_scan(sap_context *ctx)
{
    static const sap_int sizes[] = {1, 7, 300, 5000, 60000};
    for (size_t cv = 0; cv < 2 * sizeof(sizes) / sizeof(sizes[0]); cv++) {
        const size_t c = cv / 2;
        const sap_int n = sizes[c];
        /* scattered entries (a band as wide as the matrix: no histogram in the pass), then a band */
        sap_csr *A = cv % 2 ? random_csr_shape(ctx, n, n, c == 4 ? 6 : 12, 1) : random_csr(ctx, n, n, c == 4 ? 6 : 12);
        CHECK(A != NULL);
        if (!A) continue;
        sap_csr_scan sc;
        sap_matrix_stats q;
        CHECK_OK(ctx, sap__csr_scan(ctx, A, 1, &sc));
        CHECK_OK(ctx, sap__csr_stats_quick(A, &q));
        CHECK_MSG(sc.bad_row == n && sc.bad_entry == A->nnz, "scan n=%lld: bad row %lld, bad entry %lld", (long long)n,
                  (long long)sc.bad_row, (long long)sc.bad_entry);
        CHECK(sc.stats.lower_bandwidth == q.lower_bandwidth && sc.stats.upper_bandwidth == q.upper_bandwidth &&
              sc.stats.half_bandwidth == q.half_bandwidth && sc.stats.empty_rows == q.empty_rows &&
              sc.stats.max_row_nnz == q.max_row_nnz && sc.stats.zero_diagonal == q.zero_diagonal &&
              sc.stats.dominant_rows == q.dominant_rows && sc.stats.nnz == q.nnz);
        CHECK(sc.stats.diag_dominance == q.diag_dominance && sc.stats.mean_row_width == q.mean_row_width);
        const int with_hist = q.half_bandwidth <= n / 8;
        CHECK_MSG((sc.hist != NULL) == with_hist && (!sc.hist || sc.hist_len == q.half_bandwidth + 1),
                  "scan n=%lld, half-bandwidth %lld: histogram %s", (long long)n, (long long)q.half_bandwidth,
                  sc.hist ? "made" : "not made");
        static const double deltas[] = {0.5, 0.9, 0.999999, 1.0};
        for (int t = 0; t < 4 && sc.hist; t++) {
            sap_int K1 = -1, K2 = -2;
            double f1 = -1, f2 = -2;
            CHECK_OK(ctx, sap_drop_off(A, deltas[t], &K1, &f1));
            CHECK_OK(ctx, sap__drop_from_hist(ctx, sc.hist, sc.hist_len, deltas[t], &K2, &f2));
            CHECK_MSG(K1 == K2 && f1 == f2, "scan n=%lld delta %g: K %lld vs %lld, kept %.17g vs %.17g", (long long)n,
                      deltas[t], (long long)K1, (long long)K2, f1, f2);
            double k1 = 0;
            CHECK_OK(ctx, sap__drop_kept_fraction(A, K1 / 2, &k1));
            CHECK(k1 == sap__drop_kept_from_hist(sc.hist, sc.hist_len, K1 / 2));
        }
        sap__free(ctx, sc.hist);
        /* no histogram asked */
        CHECK_OK(ctx, sap__csr_scan(ctx, A, 0, &sc));
        CHECK(sc.hist == NULL && sc.stats.half_bandwidth == q.half_bandwidth);
        /* a bad column, an unsorted row, a NaN: the first of each */
        if (n >= 300) {
            const sap_int r1 = n / 3, r2 = n / 2;
            const sap_int p1 = A->rowptr[r1], p2 = A->rowptr[r2];
            CHECK(A->rowptr[r2 + 1] - p2 >= 2);
            const sap_int save1 = A->colind[p1], save2 = A->colind[p2];
            const double v = A->val[p2 + 1];
            A->colind[p1] = n; /* out of range */
            const sap_int t = A->colind[p2];
            A->colind[p2] = A->colind[p2 + 1];
            A->colind[p2 + 1] = t; /* not increasing */
            A->val[p2 + 1] = NAN;
            CHECK_OK(ctx, sap__csr_scan(ctx, A, 1, &sc));
            CHECK_MSG(sc.bad_row == r1 && sc.bad_entry == p2 + 1 && sc.hist == NULL,
                      "scan: bad row %lld (want %lld), bad entry %lld (want %lld)", (long long)sc.bad_row, (long long)r1,
                      (long long)sc.bad_entry, (long long)(p2 + 1));
            sap__free(ctx, sc.hist);
            sap_solver *S = NULL;
            CHECK_STATUS(ctx, sap_solver_create_borrowed(ctx, A, NULL, &S), SAP_ERR_INDEX);
            A->colind[p1] = save1;
            CHECK_STATUS(ctx, sap_solver_create_borrowed(ctx, A, NULL, &S), SAP_ERR_INVALID);
            A->colind[p2 + 1] = A->colind[p2];
            A->colind[p2] = save2;
            CHECK_STATUS(ctx, sap_solver_create_borrowed(ctx, A, NULL, &S), SAP_ERR_NONFINITE);
            A->val[p2 + 1] = v;
            CHECK_OK(ctx, sap_solver_create_borrowed(ctx, A, NULL, &S));
            sap_solver_destroy(S);
        }
        sap_csr_destroy(A);
    }
}

static void test_determinism(sap_context *ctx)
{
    static const sap_int sizes[][2] = {{20000, 20000}, {15000, 9000}};
    for (int c = 0; c < 2; c++) {
        sap_int n = sizes[c][0], m = sizes[c][1];
        sap_csr *A = random_csr(ctx, n, m, 25);
        CHECK(A != NULL);
        if (!A) continue;
        /* make the square one numerically symmetric so that every stats path runs */
        if (n == m) {
            sap_csr *S = NULL;
            CHECK_OK(ctx, sap_csr_add_transpose(A, 0.5, 0.5, &S));
            sap_csr_destroy(A);
            A = S;
            if (!A) continue;
        }
        double *x = malloc(sizeof(double) * (size_t)m), *y1 = malloc(sizeof(double) * (size_t)n);
        double *y = malloc(sizeof(double) * (size_t)n);
        for (sap_int j = 0; j < m; j++) x[j] = runif() - 0.5;
        double norms1[4];
        sap_matrix_stats s1;
        sap_csr *P1 = NULL, *T1 = NULL;
        sap_int *p = malloc(sizeof(sap_int) * (size_t)n), *q = malloc(sizeof(sap_int) * (size_t)m);
        rperm(n, p);
        rperm(m, q);
        static const int threads[] = {1, 2, 3, 4};
        for (int t = 0; t < 4; t++) {
            CHECK_OK(ctx, sap_context_set_threads(ctx, threads[t]));
            CHECK(sap_context_threads(ctx) == threads[t]);
            double norms[4];
            for (int k = 0; k < 4; k++) CHECK_OK(ctx, sap_csr_norm(A, (sap_norm_type)(k + 1), &norms[k]));
            sap_matrix_stats s;
            CHECK_OK(ctx, sap_csr_stats(A, &s));
            for (sap_int i = 0; i < n; i++) y[i] = (double)(i % 7) - 3.0;
            CHECK_OK(ctx, sap_csr_spmv(A, 1.5, x, -0.5, y));
            sap_csr *P = NULL, *T = NULL;
            CHECK_OK(ctx, sap_csr_permute(A, p, q, &P));
            if (n == m) CHECK_OK(ctx, sap_csr_add_transpose(A, 1.0, -2.0, &T));
            else CHECK_OK(ctx, sap_csr_transpose(A, &T));
            if (t == 0) {
                memcpy(norms1, norms, sizeof(norms));
                s1 = s;
                memcpy(y1, y, sizeof(double) * (size_t)n);
                P1 = P;
                T1 = T;
                if (n == m) CHECK(s.numerically_symmetric == 1 && s.structurally_symmetric == 1);
                CHECK(s.nnz > 200000);
            } else {
                CHECK_MSG(memcmp(norms, norms1, sizeof(norms)) == 0, "norms differ with %d threads", threads[t]);
                CHECK_MSG(stats_identical(&s, &s1), "stats differ with %d threads", threads[t]);
                CHECK_MSG(memcmp(y, y1, sizeof(double) * (size_t)n) == 0, "spmv differs with %d threads",
                          threads[t]);
                CHECK_MSG(csr_identical(P, P1), "permute differs with %d threads", threads[t]);
                CHECK_MSG(csr_identical(T, T1), "add_transpose/transpose differs with %d threads", threads[t]);
                sap_csr_destroy(P);
                sap_csr_destroy(T);
            }
        }
        sap_csr_destroy(P1);
        sap_csr_destroy(T1);
        free(p);
        free(q);
        free(x);
        free(y);
        free(y1);
        sap_csr_destroy(A);
    }
    sap_context_set_threads(ctx, 0);
}

/* ---- out-of-memory sweep ---------------------------------------------------------------- */

enum {
    OP_TRANSPOSE,
    OP_PERMUTE,
    OP_FROM_COO,
    OP_SYM_EXPAND,
    OP_SKEW_EXPAND,
    OP_ADD_TRANSPOSE,
    OP_STATS,
    OP_NORM_ONE,
    OP_COPY,
    OP_FROM_ARRAYS,
    OP_TO_COO,
    OP_TO_DENSE,
    OP_PERM_INVERT,
    OP_COUNT
};
static const char *op_names[] = {"transpose", "permute",   "from_coo", "symmetric_expand", "skew_expand",
                                 "add_transpose", "stats", "norm_one", "copy",            "from_arrays",
                                 "to_coo",    "to_dense",  "perm_invert"};

/* Runs one operation; *result gets a CSR to compare (or NULL), *nonnull_output whether an
 * output pointer was left non-NULL. */
static sap_status run_op(int op, sap_context *ctx, const sap_csr *A, const sap_coo *C, const sap_int *p,
                         const sap_int *q, sap_csr **result, int *nonnull_output)
{
    static int sentinel;
    sap_csr *B = (sap_csr *)&sentinel;
    sap_status st = SAP_ERR_INVALID;
    *result = NULL;
    *nonnull_output = 0;
    switch (op) {
    case OP_TRANSPOSE: st = sap_csr_transpose(A, &B); break;
    case OP_PERMUTE: st = sap_csr_permute(A, p, q, &B); break;
    case OP_FROM_COO: st = sap_csr_from_coo(C, &B); break;
    case OP_SYM_EXPAND: st = sap_csr_symmetric_expand(A, SAP_SYMMETRIC, &B); break;
    case OP_SKEW_EXPAND: st = sap_csr_symmetric_expand(A, SAP_SKEW_SYMMETRIC, &B); break;
    case OP_ADD_TRANSPOSE: st = sap_csr_add_transpose(A, 1.0, -0.5, &B); break;
    case OP_COPY: st = sap_csr_copy(A, &B); break;
    case OP_FROM_ARRAYS: st = sap_csr_from_arrays(ctx, A->nrows, A->ncols, A->rowptr, A->colind, A->val, &B); break;
    case OP_STATS: {
        sap_matrix_stats s;
        B = NULL;
        st = sap_csr_stats(A, &s);
        break;
    }
    case OP_NORM_ONE: {
        double v;
        B = NULL;
        st = sap_csr_norm(A, SAP_NORM_ONE, &v);
        break;
    }
    case OP_TO_COO: {
        sap_coo *D = (sap_coo *)&sentinel;
        B = NULL;
        st = sap_csr_to_coo(A, &D);
        if (st == SAP_OK) st = sap_csr_from_coo(D, &B), sap_coo_destroy(D);
        else *nonnull_output = D != NULL;
        break;
    }
    case OP_TO_DENSE: {
        sap_dense *D = (sap_dense *)&sentinel;
        B = NULL;
        st = sap_csr_to_dense(A, &D);
        if (st == SAP_OK) sap_dense_destroy(D);
        else *nonnull_output = D != NULL;
        break;
    }
    case OP_PERM_INVERT: {
        sap_int *pinv = malloc(sizeof(sap_int) * ((size_t)A->nrows + 1));
        B = NULL;
        st = sap_perm_invert(ctx, A->nrows, p, pinv);
        free(pinv);
        break;
    }
    }
    if (st == SAP_OK) *result = B;
    else *nonnull_output |= B != NULL;
    return st;
}

static void test_oom(void)
{
    sap_context *ref_ctx = sap_test_context(SAP_BACKEND_CPU);
    ref R;
    sap_coo *C0 = random_coo(ref_ctx, 30, 30, 0.2, &R);
    sap_csr *A0 = NULL;
    sap_csr_from_coo(C0, &A0);
    /* zero the diagonal values so that the skew expansion succeeds */
    for (sap_int i = 0; i < A0->nrows; i++)
        for (sap_int k = A0->rowptr[i]; k < A0->rowptr[i + 1]; k++)
            if (A0->colind[k] == i) A0->val[k] = 0.0;
    sap_int p[30], q[30];
    rperm(30, p);
    rperm(30, q);

    for (int op = 0; op < OP_COUNT; op++) {
        sap_csr *expect = NULL;
        int dummy;
        CHECK_OK(ref_ctx, run_op(op, ref_ctx, A0, C0, p, q, &expect, &dummy));
        int done = 0;
        long k;
        for (k = 0; k < 1000 && !done; k++) {
            sap_test_failing_alloc fs = {.fail_at = -1};
            sap_context *ctx = sap_test_failing_context(&fs);
            CHECK(ctx != NULL);
            if (!ctx) break;
            sap_csr *A = NULL;
            sap_coo *C = NULL;
            CHECK_OK(ctx, sap_csr_copy(A0, &A));
            CHECK_OK(ctx, sap_csr_to_coo(A0, &C));
            if (C) { /* the COO with its original duplicates */
                sap_coo_destroy(C);
                C = NULL;
                CHECK_OK(ctx, sap_coo_create(ctx, C0->nrows, C0->ncols, C0->nnz, &C));
                for (sap_int t = 0; C && t < C0->nnz; t++) sap_coo_push(C, C0->row[t], C0->col[t], C0->val[t]);
            }
            fs.fail_at = fs.count + k;
            sap_csr *B = NULL;
            int nonnull = 0;
            sap_status st = run_op(op, ctx, A, C, p, q, &B, &nonnull);
            fs.fail_at = -1;
            if (st == SAP_OK) {
                done = 1;
                if (expect) CHECK_MSG(csr_identical(B, expect), "%s: result under the failing allocator", op_names[op]);
                sap_context_stats cs;
                sap_context_get_stats(ctx, &cs);
                CHECK(cs.failed_allocs == 0);
            } else {
                CHECK_MSG(st == SAP_ERR_OUT_OF_MEMORY, "%s: k=%ld returned %s (%s)", op_names[op], k,
                          sap_status_name(st), sap_context_last_error(ctx));
                CHECK_MSG(!nonnull, "%s: k=%ld left an output non-NULL", op_names[op], k);
                sap_context_stats cs;
                sap_context_get_stats(ctx, &cs);
                CHECK(cs.failed_allocs >= 1);
            }
            sap_csr_destroy(B);
            sap_csr_destroy(A);
            sap_coo_destroy(C);
            sap_context_destroy(ctx);
            CHECK_MSG(fs.live == 0, "%s: k=%ld leaked %ld blocks", op_names[op], k, fs.live);
        }
        CHECK_MSG(done, "%s never succeeded", op_names[op]);
        sap_csr_destroy(expect);
    }
    sap_csr_destroy(A0);
    sap_coo_destroy(C0);
    ref_free(&R);
    sap_context_destroy(ref_ctx);
}

int main(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    CHECK(ctx != NULL);
    if (!ctx) return sap_test_finish("test_csr");
    test_check(ctx);
    test_from_arrays_errors(ctx);
    test_arguments(ctx);
    test_random(ctx);
    test_stats_special(ctx);
    test_long_rows(ctx);
    test_determinism(ctx);
    test_scan(ctx);
    test_oom();
    sap_context_stats cs;
    CHECK_OK(ctx, sap_context_get_stats(ctx, &cs));
    CHECK_MSG(cs.host_bytes_in_use == 0, "%lld bytes still in use", (long long)cs.host_bytes_in_use);
    sap_context_destroy(ctx);
    return sap_test_finish("test_csr");
}
