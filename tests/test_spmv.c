/* test_spmv.c -- the cpu backend: every SpMV format (CSR, ELL, SELL-P, HEC) in double and
 * float against the double CSR product on random matrices with edge cases (0 and 1 row,
 * empty rows, odd sizes, very long rows, rectangular, > 2^31 columns), the host format
 * conversions and the HEC width rule, update_values, the BLAS-1 kernels against plain
 * loops, deterministic reductions (1 vs 2 threads bit-identical), argument errors and an
 * out-of-memory sweep of sap_matrix_create. */
#include "testing.h"

#include "device/device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sap_rng rng;

static double urand(void) { return 2.0 * sap__rng_uniform(&rng) - 1.0; }

/* Random n x m CSR: row i has a random length in 0..maxlen (some rows empty), plus
 * 'nlong' rows of length 'longlen' (capped at m). */
static sap_csr *random_csr(sap_context *ctx, sap_int n, sap_int m, sap_int maxlen, sap_int nlong, sap_int longlen)
{
    sap_coo *C = NULL;
    if (sap_coo_create(ctx, n, m, 16, &C) != SAP_OK) return NULL;
    for (sap_int i = 0; i < n && m > 0; i++) {
        sap_int len = (sap_int)sap__rng_below(&rng, (uint64_t)maxlen + 1);
        if (i % 7 == 3) len = 0; /* empty rows */
        if (nlong > 0 && i % (n / nlong > 0 ? n / nlong : 1) == 0) len = longlen;
        if (len > m) len = m;
        for (sap_int k = 0; k < len; k++) {
            sap_int j = len == m ? k : (sap_int)sap__rng_below(&rng, (uint64_t)m);
            sap_coo_push(C, i, j, urand());
        }
    }
    sap_csr *A = NULL;
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    return A;
}

/* |y_i - r_i| <= tol * ((|A||x|)_i + |beta y0_i|) + tiny, for every i */
static int close_rows(const sap_csr *A, const double *x, double beta, const double *y0, const double *y,
                      const double *r, double tol)
{
    for (sap_int i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) s += fabs(A->val[p] * x[A->colind[p]]);
        s = s * 2.0 + fabs(beta * y0[i]);
        if (!(fabs(y[i] - r[i]) <= tol * s + 1e-300)) {
            fprintf(stderr, "row %lld: %.17g vs %.17g (scale %g)\n", (long long)i, y[i], r[i], s);
            return 0;
        }
    }
    return 1;
}

static const sap_spmv_format formats[] = {SAP_FORMAT_CSR, SAP_FORMAT_ELL,  SAP_FORMAT_SELLP,
                                          SAP_FORMAT_HEC, SAP_FORMAT_BAND, SAP_FORMAT_AUTO};

/* slots of the BAND format of A (n x (kl + ku + 1)) */
static double band_slots(const sap_csr *A)
{
    sap_matrix_stats st;
    if (sap_csr_stats(A, &st) != SAP_OK) return 1e300;
    return (double)A->nrows * (double)(st.lower_bandwidth + st.upper_bandwidth + 1);
}

/* every format and precision against sap_csr_spmv, for several alpha/beta */
static void check_matrix(sap_context *ctx, const sap_csr *A, const char *what)
{
    const sap_int n = A->nrows, m = A->ncols;
    double *x = malloc(sizeof(double) * (size_t)(m + 1)), *y0 = malloc(sizeof(double) * (size_t)(n + 1));
    double *y = malloc(sizeof(double) * (size_t)(n + 1)), *r = malloc(sizeof(double) * (size_t)(n + 1));
    for (sap_int j = 0; j < m; j++) x[j] = urand();
    for (sap_int i = 0; i < n; i++) y0[i] = urand();
    const double ab[4][2] = {{1.0, 0.0}, {-2.5, 0.0}, {0.5, 1.0}, {1.5, -0.75}};
    for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++)
        for (int prec = 0; prec < 2; prec++) {
            if (formats[f] == SAP_FORMAT_BAND && band_slots(A) > 4e6) continue; /* random wide patterns */
            sap_matrix_options mo;
            sap_matrix_options_init(&mo);
            mo.format = formats[f];
            mo.precision = prec ? SAP_FLOAT : SAP_DOUBLE;
            sap_matrix *M = NULL;
            sap_status st = sap_matrix_create(ctx, A, &mo, &M);
            CHECK_MSG(st == SAP_OK, "%s: create %s/%d: %s", what, sap_spmv_format_name(formats[f]), prec,
                      sap_context_last_error(ctx));
            if (st != SAP_OK) continue;
            CHECK(sap_matrix_format(M) != SAP_FORMAT_AUTO);
            CHECK(formats[f] == SAP_FORMAT_AUTO || sap_matrix_format(M) == formats[f]);
            CHECK(sap_matrix_nrows(M) == n && sap_matrix_ncols(M) == m);
            CHECK(strlen(sap_matrix_format_reason(M)) > 0);
            for (int k = 0; k < 4; k++) {
                memcpy(y, y0, sizeof(double) * (size_t)n);
                memcpy(r, y0, sizeof(double) * (size_t)n);
                CHECK_OK(ctx, sap_matrix_spmv(M, ab[k][0], x, ab[k][1], y));
                sap_csr_spmv(A, ab[k][0], x, ab[k][1], r);
                CHECK_MSG(close_rows(A, x, ab[k][1], y0, y, r, prec ? 1e-6 : 1e-14), "%s: %s %s alpha %g beta %g", what,
                          sap_spmv_format_name(sap_matrix_format(M)), prec ? "float" : "double", ab[k][0], ab[k][1]);
            }
            /* beta = 0 must not read y: NaN in y is overwritten */
            for (sap_int i = 0; i < n; i++) y[i] = NAN;
            CHECK_OK(ctx, sap_matrix_spmv(M, 1.0, x, 0.0, y));
            sap_csr_spmv(A, 1.0, x, 0.0, r);
            CHECK_MSG(close_rows(A, x, 0.0, y0, y, r, prec ? 1e-6 : 1e-14), "%s: beta = 0 with NaN in y", what);
            sap_matrix_destroy(M);
        }
    free(x);
    free(y0);
    free(y);
    free(r);
}

static void test_formats(sap_context *ctx)
{
    struct {
        sap_int n, m, maxlen, nlong, longlen;
        const char *what;
    } cases[] = {
        {0, 0, 0, 0, 0, "0 x 0"},
        {0, 5, 3, 0, 0, "0 x 5"},
        {1, 1, 1, 0, 0, "1 x 1"},
        {1, 40, 40, 0, 0, "one dense row"},
        {5, 0, 0, 0, 0, "5 x 0"},
        {7, 7, 0, 0, 0, "all rows empty"},
        {33, 33, 5, 0, 0, "33 (one row past a slice)"},
        {37, 53, 9, 0, 0, "37 x 53 rectangular"},
        {64, 20, 6, 0, 0, "64 x 20 rectangular"},
        {1001, 1001, 12, 0, 0, "1001 odd"},
        {2000, 2000, 6, 4, 1500, "2000 with very long rows (HEC CSR part)"},
        {40000, 40000, 10, 3, 60, "40000 (parallel paths)"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        sap_csr *A = random_csr(ctx, cases[c].n, cases[c].m, cases[c].maxlen, cases[c].nlong, cases[c].longlen);
        CHECK_MSG(A != NULL, "%s", cases[c].what);
        if (!A) continue;
        check_matrix(ctx, A, cases[c].what);
        sap_csr_destroy(A);
    }
    /* real-world shapes: 2D Poisson and a banded matrix */
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 45, 31, &A));
    if (A) check_matrix(ctx, A, "poisson2d 45 x 31");
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 777, 13, 1.5, 0, 5, &A));
    if (A) check_matrix(ctx, A, "banded 777, K = 13");
    sap_csr_destroy(A);
}

/* more columns than fit in 32 bits: CSR works with 64-bit indices, the padded formats
 * say SAP_ERR_TOO_LARGE */
static void test_wide(sap_context *ctx)
{
    const sap_int m = (sap_int)3 << 31;
    sap_int rowptr[3] = {0, 1, 2}, colind[2] = {5, m - 1};
    double val[2] = {2.0, 3.0};
    sap_csr A;
    memset(&A, 0, sizeof(A));
    A.ctx = ctx;
    A.nrows = 2;
    A.ncols = m;
    A.nnz = 2;
    A.rowptr = rowptr;
    A.colind = colind;
    A.val = val;
    const sap_backend_ops *ops = sap__backend_cpu_ops();
    sap_spmat *M = NULL;
    CHECK_OK(ctx, ops->spmat_create(ctx, &A, SAP_FORMAT_CSR, SAP_DOUBLE, &M));
    CHECK_STATUS(ctx, ops->spmat_create(ctx, &A, SAP_FORMAT_ELL, SAP_DOUBLE, &(sap_spmat *){NULL}), SAP_ERR_TOO_LARGE);
    CHECK_STATUS(ctx, ops->spmat_create(ctx, &A, SAP_FORMAT_SELLP, SAP_DOUBLE, &(sap_spmat *){NULL}),
                 SAP_ERR_TOO_LARGE);
    CHECK_STATUS(ctx, ops->spmat_create(ctx, &A, SAP_FORMAT_HEC, SAP_FLOAT, &(sap_spmat *){NULL}), SAP_ERR_TOO_LARGE);
    CHECK_STATUS(ctx, ops->spmat_create(ctx, &A, SAP_FORMAT_BAND, SAP_DOUBLE, &(sap_spmat *){NULL}), SAP_ERR_TOO_LARGE);
    ops->spmat_destroy(ctx, M);
}

/* layouts of the host conversions, on a small hand-made matrix */
static void test_conversions(sap_context *ctx)
{
    /* rows: 3 entries, 0 entries, 1 entry, 5 entries (4 x 6) */
    sap_int rowptr[5] = {0, 3, 3, 4, 9};
    sap_int colind[9] = {0, 2, 5, 1, 0, 1, 2, 3, 4};
    double val[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_from_arrays(ctx, 4, 6, rowptr, colind, val, &A));
    if (!A) return;
    sap_ell_host E;
    CHECK_OK(ctx, sap__ell_from_csr(ctx, A, -1, &E));
    CHECK(E.nrows == 4 && E.width == 5);
    CHECK(E.col[0] == 0 && E.val[0] == 1 && E.col[0 + 4] == 2 && E.col[0 + 8] == 5); /* row 0, column-major */
    CHECK(E.col[1] == 1 && E.val[1] == 0.0);                                         /* row 1 padding: col = 1 */
    CHECK(E.col[3 + 4 * 4] == 4 && E.val[3 + 4 * 4] == 9);
    CHECK(E.col[2 + 4 * 3] == 2 && E.val[2 + 4 * 3] == 0.0); /* padding of row 2 */
    sap__ell_free(ctx, &E);
    CHECK(E.col == NULL);
    /* truncated width (HEC's ELL part) */
    CHECK_OK(ctx, sap__ell_from_csr(ctx, A, 2, &E));
    CHECK(E.width == 2 && E.col[3 + 4] == 1 && E.val[3 + 4] == 6);
    sap__ell_free(ctx, &E);
    sap_sellp_host S;
    CHECK_OK(ctx, sap__sellp_from_csr(ctx, A, &S));
    CHECK(S.nslices == 1 && S.slice_width[0] == 5 && S.slice_ptr[1] == 5 * SAP_SELLP_SLICE);
    CHECK(S.col[3 + 4 * SAP_SELLP_SLICE] == 4 && S.val[3 + 4 * SAP_SELLP_SLICE] == 9);
    CHECK(S.col[10] == 5 && S.val[10] == 0.0); /* row 10 (past nrows): column clamped to ncols - 1 */
    sap__sellp_free(ctx, &S);
    /* HEC width: median row length; the rest spills to the CSR part */
    sap_hec_host H;
    CHECK_OK(ctx, sap__hec_from_csr(ctx, A, &H));
    CHECK(H.ell.width == sap__hec_width(A->rowptr, 4));
    sap_int w = H.ell.width;
    CHECK(w == 1); /* lengths 3, 0, 1, 5: at most half of the rows are longer than 1 */
    CHECK(H.csr_rowptr[4] == (3 - w) + (5 - w));
    CHECK(H.csr_rowptr[1] == 2 && H.csr_col[0] == 2 && H.csr_val[1] == 3);
    sap__hec_free(ctx, &H);
    sap_csr_destroy(A);

    /* the width rule on row-length profiles */
    sap_int rp[101];
    rp[0] = 0;
    for (int i = 0; i < 100; i++) rp[i + 1] = rp[i] + 7;
    CHECK(sap__hec_width(rp, 100) == 7); /* regular: all ELL */
    for (int i = 0; i < 100; i++) rp[i + 1] = rp[i] + (i < 10 ? 500 : 5);
    CHECK(sap__hec_width(rp, 100) == 5); /* 10 long rows go to the CSR part */
    for (int i = 0; i < 100; i++) rp[i + 1] = rp[i] + (i < 60 ? 9 : 2);
    CHECK(sap__hec_width(rp, 100) == 9); /* most rows long: pad the short ones */
    CHECK(sap__hec_width(rp, 0) == 0);
}

static void test_update_values(sap_context *ctx)
{
    sap_csr *A = random_csr(ctx, 300, 300, 8, 2, 200);
    if (!A) return;
    double *v2 = malloc(sizeof(double) * (size_t)A->nnz), *x = malloc(sizeof(double) * 300);
    double *y = malloc(sizeof(double) * 300), *r = malloc(sizeof(double) * 300), *z = calloc(300, sizeof(double));
    for (sap_int p = 0; p < A->nnz; p++) v2[p] = urand();
    for (int i = 0; i < 300; i++) x[i] = urand();
    for (size_t f = 0; f < 5; f++)
        for (int prec = 0; prec < 2; prec++) {
            sap_matrix_options mo;
            sap_matrix_options_init(&mo);
            mo.format = formats[f];
            mo.precision = prec ? SAP_FLOAT : SAP_DOUBLE;
            sap_matrix *M = NULL;
            CHECK_OK(ctx, sap_matrix_create(ctx, A, &mo, &M));
            if (!M) continue;
            double *save = A->val;
            CHECK_OK(ctx, sap_matrix_update_values(M, v2));
            A->val = v2;
            CHECK_OK(ctx, sap_matrix_spmv(M, 1.0, x, 0.0, y));
            sap_csr_spmv(A, 1.0, x, 0.0, r);
            CHECK_MSG(close_rows(A, x, 0.0, z, y, r, prec ? 1e-6 : 1e-14), "update_values %s %d",
                      sap_spmv_format_name(formats[f]), prec);
            A->val = save;
            sap_matrix_destroy(M);
        }
    free(v2);
    free(x);
    free(y);
    free(r);
    free(z);
    sap_csr_destroy(A);
}

static void test_names(sap_context *ctx)
{
    const char *names[] = {"auto", "csr", "ell", "sellp", "hec"};
    for (int f = 0; f < 5; f++) {
        sap_spmv_format g;
        CHECK_OK(ctx, sap_spmv_format_parse(names[f], &g));
        CHECK(g == (sap_spmv_format)f);
        CHECK(strcmp(sap_spmv_format_name((sap_spmv_format)f), names[f]) == 0);
    }
    sap_spmv_format g;
    CHECK(sap_spmv_format_parse("coo", &g) == SAP_ERR_INVALID);
    CHECK(sap_spmv_format_parse(NULL, &g) == SAP_ERR_INVALID);
    CHECK(strcmp(sap_spmv_format_name((sap_spmv_format)42), "unknown") == 0);
}

/* ---- BLAS-1 against plain loops -------------------------------------------------------------- */

static double vmax_err(const double *a, const double *b, sap_int n)
{
    double e = 0.0;
    for (sap_int i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= e)) e = fabs(a[i] - b[i]);
    return e;
}

static void test_blas(sap_context *ctx)
{
    const sap_backend_ops *ops = sap__backend_cpu_ops();
    const sap_int sizes[] = {0, 1, 7, 2049, 40003};
    enum { K = 64 };
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (int prec = 0; prec < 2; prec++) {
            const sap_int n = sizes[si];
            const sap_precision P = prec ? SAP_FLOAT : SAP_DOUBLE;
            const double tol = prec ? 1e-6 : 1e-15, rtol = prec ? 1e-6 : 1e-13;
            sap_vec v[K + 3];
            double *h[K + 3];
            int ok = 1;
            for (int i = 0; i < K + 3; i++) {
                h[i] = malloc(sizeof(double) * (size_t)(n + 1));
                for (sap_int j = 0; j < n; j++) h[i][j] = prec ? (double)(float)urand() : urand();
                ok &= ops->vec_create(ctx, n, P, &v[i]) == SAP_OK;
                ok &= ops->vec_upload(ctx, &v[i], h[i]) == SAP_OK;
            }
            CHECK(ok);
            double *out = malloc(sizeof(double) * (size_t)(n + 1)), *ref = malloc(sizeof(double) * (size_t)(n + 1));
            sap_vec *x = &v[0], *y = &v[1], *z = &v[2];
            double *hx = h[0], *hy = h[1], *hz = h[2];
            /* download(upload(x)) == x */
            CHECK_OK(ctx, ops->vec_download(ctx, x, out));
            CHECK(vmax_err(out, hx, n) == 0.0);
            /* set, scale */
            CHECK_OK(ctx, ops->set(ctx, z, 0.25));
            CHECK_OK(ctx, ops->scale(ctx, z, -4.0));
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            for (sap_int j = 0; j < n; j++) ref[j] = -1.0;
            CHECK(vmax_err(out, ref, n) == 0.0);
            /* axpby, also with b = 0 over NaN */
            CHECK_OK(ctx, ops->vec_upload(ctx, z, hz));
            CHECK_OK(ctx, ops->axpby(ctx, 0.5, x, -2.0, z));
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            for (sap_int j = 0; j < n; j++) ref[j] = 0.5 * hx[j] - 2.0 * hz[j];
            CHECK_MSG(vmax_err(out, ref, n) <= tol * 4, "axpby n=%lld prec=%d", (long long)n, prec);
            CHECK_OK(ctx, ops->set(ctx, z, NAN));
            CHECK_OK(ctx, ops->axpby(ctx, 3.0, x, 0.0, z));
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            for (sap_int j = 0; j < n; j++) ref[j] = 3.0 * hx[j];
            CHECK_MSG(vmax_err(out, ref, n) <= tol * 4, "axpby b=0 n=%lld", (long long)n);
            /* axpbypcz, c = 0 over NaN */
            CHECK_OK(ctx, ops->vec_upload(ctx, z, hz));
            CHECK_OK(ctx, ops->axpbypcz(ctx, 1.5, x, -0.5, y, 2.0, z));
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            for (sap_int j = 0; j < n; j++) ref[j] = 1.5 * hx[j] - 0.5 * hy[j] + 2.0 * hz[j];
            CHECK_MSG(vmax_err(out, ref, n) <= tol * 8, "axpbypcz n=%lld", (long long)n);
            CHECK_OK(ctx, ops->set(ctx, z, NAN));
            CHECK_OK(ctx, ops->axpbypcz(ctx, 1.5, x, -0.5, y, 0.0, z));
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            for (sap_int j = 0; j < n; j++) ref[j] = 1.5 * hx[j] - 0.5 * hy[j];
            CHECK_MSG(vmax_err(out, ref, n) <= tol * 8, "axpbypcz c=0 n=%lld", (long long)n);
            /* pointwise_mult */
            CHECK_OK(ctx, ops->pointwise_mult(ctx, x, y, z));
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            for (sap_int j = 0; j < n; j++) ref[j] = hx[j] * hy[j];
            CHECK(vmax_err(out, ref, n) <= tol);
            /* maxpy for k = 1, 5 and 64 */
            const int ks[] = {1, 5, 64};
            double a[K];
            for (int i = 0; i < K; i++) a[i] = urand();
            for (int q = 0; q < 3; q++) {
                const int k = ks[q];
                CHECK_OK(ctx, ops->vec_upload(ctx, z, hz));
                CHECK_OK(ctx, ops->maxpy(ctx, k, a, &v[3], z));
                CHECK_OK(ctx, ops->vec_download(ctx, z, out));
                for (sap_int j = 0; j < n; j++) {
                    ref[j] = hz[j];
                    for (int i = 0; i < k; i++) ref[j] += a[i] * h[3 + i][j];
                }
                CHECK_MSG(vmax_err(out, ref, n) <= tol * 4 * k, "maxpy k=%d n=%lld prec=%d err %g", k, (long long)n,
                          prec, vmax_err(out, ref, n));
            }
            /* dot, nrm2, mdot */
            double d = 0.0, dr = 0.0, nr = 0.0, nrr = 0.0, md[K], mr[K];
            for (sap_int j = 0; j < n; j++) {
                dr += hx[j] * hy[j];
                nrr += hx[j] * hx[j];
            }
            /* reductions: error bound relative to sum |x_j y_j| (the loop sums are not exact) */
            double sabs = 0.0;
            for (sap_int j = 0; j < n; j++) sabs += fabs(hx[j] * hy[j]);
            CHECK_OK(ctx, ops->dot(ctx, x, y, &d));
            CHECK_MSG(fabs(d - dr) <= rtol * sabs, "dot n=%lld prec=%d", (long long)n, prec);
            CHECK_OK(ctx, ops->nrm2(ctx, x, &nr));
            CHECK_CLOSE(nr, sqrt(nrr), rtol);
            CHECK_OK(ctx, ops->mdot(ctx, K, &v[3], y, md));
            int mok = 1;
            for (int i = 0; i < K; i++) {
                mr[i] = 0.0;
                sabs = 0.0;
                for (sap_int j = 0; j < n; j++) {
                    mr[i] += h[3 + i][j] * hy[j];
                    sabs += fabs(h[3 + i][j] * hy[j]);
                }
                mok &= fabs(md[i] - mr[i]) <= rtol * sabs;
            }
            CHECK_MSG(mok, "mdot n=%lld prec=%d", (long long)n, prec);
            /* axpby_nrm2 */
            CHECK_OK(ctx, ops->vec_upload(ctx, z, hz));
            CHECK_OK(ctx, ops->axpby_nrm2(ctx, -1.0, x, 0.5, z, &d));
            dr = 0.0;
            for (sap_int j = 0; j < n; j++) {
                ref[j] = -hx[j] + 0.5 * hz[j];
                dr += ref[j] * ref[j];
            }
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            CHECK(vmax_err(out, ref, n) <= tol * 4);
            CHECK_CLOSE(d, sqrt(dr), rtol);
            /* cg_update: x += alpha p; r -= alpha q; rr = r.r  (p = v3, q = v4, x = v5, r = v6) */
            CHECK_OK(ctx, ops->cg_update(ctx, 0.75, &v[3], &v[4], &v[5], &v[6], &d));
            dr = 0.0;
            int cok = 1;
            double *o2 = malloc(sizeof(double) * (size_t)(n + 1));
            CHECK_OK(ctx, ops->vec_download(ctx, &v[5], out));
            CHECK_OK(ctx, ops->vec_download(ctx, &v[6], o2));
            for (sap_int j = 0; j < n; j++) {
                double xr = h[5][j] + 0.75 * h[3][j], rr = h[6][j] - 0.75 * h[4][j];
                dr += rr * rr;
                cok &= fabs(out[j] - xr) <= tol * 4 && fabs(o2[j] - rr) <= tol * 4;
            }
            CHECK_MSG(cok, "cg_update vectors n=%lld prec=%d", (long long)n, prec);
            CHECK_CLOSE(d, dr, rtol);
            free(o2);
            /* copy with and without precision conversion */
            sap_vec w;
            CHECK_OK(ctx, ops->vec_create(ctx, n, prec ? SAP_DOUBLE : SAP_FLOAT, &w));
            CHECK_OK(ctx, ops->copy(ctx, x, &w));
            CHECK_OK(ctx, ops->copy(ctx, &w, z));
            CHECK_OK(ctx, ops->vec_download(ctx, z, out));
            for (sap_int j = 0; j < n; j++) ref[j] = (double)(float)hx[j];
            CHECK(vmax_err(out, ref, n) == 0.0);
            ops->vec_destroy(ctx, &w);
            /* argument errors */
            if (n > 0) {
                sap_vec s;
                CHECK_OK(ctx, ops->vec_create(ctx, n - 1 + 2, P, &s));
                CHECK_STATUS(ctx, ops->axpby(ctx, 1.0, x, 1.0, &s), SAP_ERR_INVALID);
                CHECK_STATUS(ctx, ops->dot(ctx, x, &s, &d), SAP_ERR_INVALID);
                CHECK_STATUS(ctx, ops->maxpy(ctx, 65, a, &v[0], z), SAP_ERR_INVALID);
                ops->vec_destroy(ctx, &s);
            }
            for (int i = 0; i < K + 3; i++) {
                ops->vec_destroy(ctx, &v[i]);
                free(h[i]);
            }
            free(out);
            free(ref);
        }
}

/* ---- determinism: 1 and 2 threads give bit-identical reductions and products ------------------- */

static void test_determinism(void)
{
    sap_context *c1 = sap_test_context(SAP_BACKEND_CPU), *c2 = sap_test_context(SAP_BACKEND_CPU);
    if (!c1 || !c2) {
        CHECK(0);
        return;
    }
    sap_context_set_threads(c1, 1);
    sap_context_set_threads(c2, 2);
    const sap_backend_ops *ops = sap__backend_cpu_ops();
    const sap_int n = 300007;
    double *h = malloc(sizeof(double) * (size_t)n * 4);
    for (sap_int j = 0; j < 4 * n; j++) h[j] = urand() * (j % 3 == 0 ? 1e6 : 1.0);
    for (int prec = 0; prec < 2; prec++) {
        sap_vec a1[4], a2[4];
        for (int i = 0; i < 4; i++) {
            ops->vec_create(c1, n, prec ? SAP_FLOAT : SAP_DOUBLE, &a1[i]);
            ops->vec_create(c2, n, prec ? SAP_FLOAT : SAP_DOUBLE, &a2[i]);
            ops->vec_upload(c1, &a1[i], h + (size_t)i * (size_t)n);
            ops->vec_upload(c2, &a2[i], h + (size_t)i * (size_t)n);
        }
        double d1, d2, m1[3], m2[3], n1, n2;
        CHECK_OK(c1, ops->dot(c1, &a1[0], &a1[1], &d1));
        CHECK_OK(c2, ops->dot(c2, &a2[0], &a2[1], &d2));
        CHECK(memcmp(&d1, &d2, sizeof(double)) == 0);
        CHECK_OK(c1, ops->mdot(c1, 3, a1, &a1[3], m1));
        CHECK_OK(c2, ops->mdot(c2, 3, a2, &a2[3], m2));
        CHECK(memcmp(m1, m2, sizeof(m1)) == 0);
        CHECK_OK(c1, ops->nrm2(c1, &a1[2], &n1));
        CHECK_OK(c2, ops->nrm2(c2, &a2[2], &n2));
        CHECK(memcmp(&n1, &n2, sizeof(double)) == 0);
        CHECK_OK(c1, ops->axpby_nrm2(c1, 0.3, &a1[0], 1.0, &a1[1], &n1));
        CHECK_OK(c2, ops->axpby_nrm2(c2, 0.3, &a2[0], 1.0, &a2[1], &n2));
        CHECK(memcmp(&n1, &n2, sizeof(double)) == 0);
        CHECK_OK(c1, ops->cg_update(c1, 0.3, &a1[0], &a1[1], &a1[2], &a1[3], &n1));
        CHECK_OK(c2, ops->cg_update(c2, 0.3, &a2[0], &a2[1], &a2[2], &a2[3], &n2));
        CHECK(memcmp(&n1, &n2, sizeof(double)) == 0);
        for (int i = 0; i < 4; i++) {
            ops->vec_destroy(c1, &a1[i]);
            ops->vec_destroy(c2, &a2[i]);
        }
    }
    free(h);
    /* SpMV in every format: bit-identical across thread counts */
    sap_csr *A = random_csr(c1, 60000, 60000, 9, 5, 64);
    if (A) {
        double *x = malloc(sizeof(double) * 60000), *y1 = malloc(sizeof(double) * 60000),
               *y2 = malloc(sizeof(double) * 60000);
        for (int i = 0; i < 60000; i++) x[i] = urand();
        for (int f = 0; f < 4; f++) {
            sap_matrix_options mo;
            sap_matrix_options_init(&mo);
            mo.format = formats[f];
            sap_matrix *M1 = NULL, *M2 = NULL;
            CHECK_OK(c1, sap_matrix_create(c1, A, &mo, &M1));
            CHECK_OK(c2, sap_matrix_create(c2, A, &mo, &M2));
            if (M1 && M2) {
                CHECK_OK(c1, sap_matrix_spmv(M1, 1.0, x, 0.0, y1));
                CHECK_OK(c2, sap_matrix_spmv(M2, 1.0, x, 0.0, y2));
                CHECK_MSG(memcmp(y1, y2, sizeof(double) * 60000) == 0, "spmv %s thread-count dependent",
                          sap_spmv_format_name(formats[f]));
            }
            sap_matrix_destroy(M1);
            sap_matrix_destroy(M2);
        }
        free(x);
        free(y1);
        free(y2);
        sap_csr_destroy(A);
    }
    /* BAND on a banded matrix large enough for the parallel path */
    A = NULL;
    CHECK_OK(c1, sap_gen_banded(c1, 50000, 7, 1.0, 0, 3, &A));
    if (A) {
        double *x = malloc(sizeof(double) * 50000), *y1 = malloc(sizeof(double) * 50000),
               *y2 = malloc(sizeof(double) * 50000), *r = malloc(sizeof(double) * 50000),
               *z = calloc(50000, sizeof(double));
        for (int i = 0; i < 50000; i++) x[i] = urand();
        sap_matrix_options mo;
        sap_matrix_options_init(&mo);
        mo.format = SAP_FORMAT_BAND;
        sap_matrix *M1 = NULL, *M2 = NULL;
        CHECK_OK(c1, sap_matrix_create(c1, A, &mo, &M1));
        CHECK_OK(c2, sap_matrix_create(c2, A, &mo, &M2));
        if (M1 && M2) {
            CHECK_OK(c1, sap_matrix_spmv(M1, 1.0, x, 0.0, y1));
            CHECK_OK(c2, sap_matrix_spmv(M2, 1.0, x, 0.0, y2));
            CHECK_MSG(memcmp(y1, y2, sizeof(double) * 50000) == 0, "spmv band thread-count dependent");
            sap_csr_spmv(A, 1.0, x, 0.0, r);
            CHECK_MSG(close_rows(A, x, 0.0, z, y1, r, 1e-14), "band 50000 x 50000, K = 7");
        }
        sap_matrix_destroy(M1);
        sap_matrix_destroy(M2);
        free(x);
        free(y1);
        free(y2);
        free(r);
        free(z);
        sap_csr_destroy(A);
    }
    sap_context_destroy(c1);
    sap_context_destroy(c2);
}

/* ---- errors and out of memory ------------------------------------------------------------------- */

static void test_errors(sap_context *ctx)
{
    sap_matrix *M = NULL;
    CHECK_STATUS(ctx, sap_matrix_create(ctx, NULL, NULL, &M), SAP_ERR_INVALID);
    CHECK(M == NULL);
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 4, 4, &A));
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    mo.format = (sap_spmv_format)9;
    CHECK_STATUS(ctx, sap_matrix_create(ctx, A, &mo, &M), SAP_ERR_INVALID);
    mo.format = SAP_FORMAT_AUTO;
    mo.precision = (sap_precision)5;
    CHECK_STATUS(ctx, sap_matrix_create(ctx, A, &mo, &M), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_matrix_create(ctx, A, NULL, NULL), SAP_ERR_INVALID);
    CHECK_OK(ctx, sap_matrix_create(ctx, A, NULL, &M));
    CHECK_STATUS(ctx, sap_matrix_spmv(M, 1.0, NULL, 0.0, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_matrix_update_values(M, NULL), SAP_ERR_INVALID);
    CHECK(sap_matrix_spmv(NULL, 1.0, NULL, 0.0, NULL) == SAP_ERR_INVALID);
    CHECK(sap_matrix_format(NULL) == SAP_FORMAT_AUTO);
    sap_matrix_destroy(M);
    sap_matrix_destroy(NULL);
    sap_csr_destroy(A);
}

static void test_oom(void)
{
    const sap_spmv_format fm[5] = {SAP_FORMAT_CSR, SAP_FORMAT_ELL, SAP_FORMAT_SELLP, SAP_FORMAT_HEC, SAP_FORMAT_BAND};
    for (int f = 0; f < 5; f++)
        for (int prec = 0; prec < 2; prec++) {
            int done = 0;
            for (long k = 0; k < 200 && !done; k++) {
                sap_test_failing_alloc state = {-1, 0, 0};
                sap_context *ctx = sap_test_failing_context(&state);
                if (!ctx) {
                    CHECK(0);
                    return;
                }
                sap_csr *A = NULL;
                sap_status st = sap_gen_poisson2d(ctx, 9, 7, &A);
                CHECK(st == SAP_OK);
                state.fail_at = state.count + k;
                sap_matrix_options mo;
                sap_matrix_options_init(&mo);
                mo.format = fm[f];
                mo.precision = prec ? SAP_FLOAT : SAP_DOUBLE;
                sap_matrix *M = NULL;
                st = sap_matrix_create(ctx, A, &mo, &M);
                double x[63], y[63];
                for (int i = 0; i < 63; i++) x[i] = 1.0;
                if (st == SAP_OK) st = sap_matrix_spmv(M, 1.0, x, 0.0, y);
                CHECK_MSG(st == SAP_OK || st == SAP_ERR_OUT_OF_MEMORY, "format %d k %ld: %s", f, k,
                          sap_status_name(st));
                if (st == SAP_ERR_OUT_OF_MEMORY) CHECK(M == NULL || state.fail_at >= 0);
                if (st == SAP_OK) done = 1;
                sap_matrix_destroy(M);
                sap_csr_destroy(A);
                sap_context_destroy(ctx);
                CHECK_MSG(state.live == 0, "leak: %ld blocks (format %d, fail at %ld)", state.live, f, k);
            }
            CHECK(done);
        }
}

int main(void)
{
    sap__rng_seed(&rng, 12345);
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) {
        fprintf(stderr, "cannot create a cpu context\n");
        return 1;
    }
    test_names(ctx);
    test_conversions(ctx);
    test_formats(ctx);
    test_wide(ctx);
    test_update_values(ctx);
    test_blas(ctx);
    test_errors(ctx);
    sap_context_destroy(ctx);
    test_determinism();
    test_oom();
    return sap_test_finish("test_spmv");
}
