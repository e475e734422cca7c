/* test_device.c -- the device layer's kernels (kernel table, SpMV formats), per backend
 * (sap_test_main).
 * --backend cpu: every SpMV format (CSR, ELL, SELL-P, HEC) in double and float against the
 * double CSR product on random matrices with edge cases (0 and 1 row, empty rows, odd
 * sizes, very long rows, rectangular, > 2^31 columns), the host format conversions and the
 * HEC width rule, update_values, the BLAS-1 kernels against plain loops, deterministic
 * reductions (1 vs 2 threads bit-identical), block_relax against a plain block-Jacobi loop
 * (double, float, 1 vs 2 threads, zero diagonal, errors), argument errors and an
 * out-of-memory sweep of sap_matrix_create.  Both parts: the block-vector ops (caxpby, cdot
 * against host loops for k = 1, 3, 32 columns, nx = 1, 4; spmm in every format against k
 * spmv calls, bitwise on the cpu; their argument errors).
 * --backend cuda: every kernel of the cuda backend's table against the cpu backend on the
 * same random inputs (double and float; lengths 0, 1, 31, 33, 1000, 100003, 1000003), every
 * SpMV format (CSR with each threads-per-row variant, ELL with one and two rows per thread,
 * SELL-P with 1..8 threads per row, HEC, auto) on matrices with empty rows, one row, no
 * columns, long rows, rectangular shapes; the device conversions against the host layouts
 * of formats.c; determinism of the reductions and of SpMV; block_relax (one block: equal to
 * the cpu; several blocks, asynchronous: converged to the solution); transfer and pool statistics;
 * and the error paths (injected device allocation failures through the device_alloc hook:
 * SAP_ERR_OUT_OF_MEMORY, no leak, context still usable).  Tolerances are relative to the
 * magnitudes involved, never bitwise GPU vs CPU.  Exits 77 (skipped) without CUDA or
 * without a device; SAP_TEST_GPU_DRYRUN=1 runs the "gpu" side on a second cpu context. */
#define SAP_TEST_HAS_GPU_PART 1
#include "testing.h"

#include "device/device.h"
#ifdef SAP_HAVE_CUDA
#include "device/cuda/cuda_internal.h"

#include <cuda_runtime_api.h>
#endif

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

/* for each format of fl[nf] and both precisions: the SpMV of A's sap_matrix, then of the
 * same matrix with new values (sap_matrix_update_values), against sap_csr_spmv */
static void check_update_values(sap_context *ctx, sap_csr *A, const sap_spmv_format *fl, size_t nf, const char *what)
{
    const sap_int n = A->nrows, m = A->ncols;
    double *v2 = malloc(sizeof(double) * (size_t)(A->nnz + 1)), *x = malloc(sizeof(double) * (size_t)(m + 1));
    double *y = malloc(sizeof(double) * (size_t)(n + 1)), *r = malloc(sizeof(double) * (size_t)(n + 1));
    double *z = calloc((size_t)(n + 1), sizeof(double));
    for (sap_int p = 0; p < A->nnz; p++) v2[p] = urand();
    for (sap_int i = 0; i < m; i++) x[i] = urand();
    for (size_t f = 0; f < nf; f++)
        for (int prec = 0; prec < 2; prec++) {
            const double tol = prec ? 1e-6 : 1e-14;
            sap_matrix_options mo;
            sap_matrix_options_init(&mo);
            mo.format = fl[f];
            mo.precision = prec ? SAP_FLOAT : SAP_DOUBLE;
            sap_matrix *M = NULL;
            CHECK_OK(ctx, sap_matrix_create(ctx, A, &mo, &M));
            if (!M) continue;
            CHECK_OK(ctx, sap_matrix_spmv(M, 1.0, x, 0.0, y));
            sap_csr_spmv(A, 1.0, x, 0.0, r);
            CHECK_MSG(close_rows(A, x, 0.0, z, y, r, tol), "%s: create %s %d", what, sap_spmv_format_name(fl[f]), prec);
            double *save = A->val;
            CHECK_OK(ctx, sap_matrix_update_values(M, v2));
            A->val = v2;
            CHECK_OK(ctx, sap_matrix_spmv(M, 1.0, x, 0.0, y));
            sap_csr_spmv(A, 1.0, x, 0.0, r);
            CHECK_MSG(close_rows(A, x, 0.0, z, y, r, tol), "%s: update %s %d", what, sap_spmv_format_name(fl[f]), prec);
            A->val = save;
            sap_matrix_destroy(M);
        }
    free(v2);
    free(x);
    free(y);
    free(r);
    free(z);
}

static void test_update_values(sap_context *ctx)
{
    sap_csr *A = random_csr(ctx, 300, 300, 8, 2, 200);
    if (!A) return;
    check_update_values(ctx, A, formats, 5, "update_values");
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
        CHECK_OK(c1, ops->cdot(c1, 1, 3, a1, &a1[3], m1));
        CHECK_OK(c2, ops->cdot(c2, 1, 3, a2, &a2[3], m2));
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


/* block_relax (async-jacobi's kernel), cpu: against a plain block-Jacobi loop with local
 * sweeps (off-block values from x on entry), 1 vs 2 threads bit-identical, float, errors */
static sap_csr *dominant_csr(sap_context *ctx, sap_int n, int skip_diag_row)
{
    sap_coo *T = NULL;
    if (sap_coo_create(ctx, n, n, 16, &T) != SAP_OK) return NULL;
    for (sap_int i = 0; i < n; i++) {
        const sap_int len = (sap_int)sap__rng_below(&rng, 10);
        for (sap_int k = 0; k < len; k++) {
            /* mostly near the diagonal (inside the block), some far (other blocks) */
            sap_int j = k % 3 ? i + (sap_int)sap__rng_below(&rng, 41) - 20 : (sap_int)sap__rng_below(&rng, (uint64_t)n);
            if (j < 0 || j >= n || j == i) continue;
            sap_coo_push(T, i, j, urand());
        }
        sap_coo_push(T, i, i, 1.0);
    }
    sap_csr *A = NULL;
    sap_csr_from_coo(T, &A);
    sap_coo_destroy(T);
    if (!A) return NULL;
    /* make every row strictly diagonally dominant: a_ii = 1 + 2 sum |a_ij| (added to a
     * diagonal entry when the row has one, else the row keeps no diagonal) */
    for (sap_int i = 0; i < n; i++) {
        double s = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] != i) s += fabs(A->val[p]);
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] == i) A->val[p] = i == skip_diag_row ? 0.0 : 1.0 + 2.0 * s;
    }
    return A;
}

static void relax_ref(const sap_csr *A, int sweeps, const double *b, double *x)
{
    const sap_int n = A->nrows, RB = SAP_RELAX_BLOCK;
    double *xo = malloc(sizeof(double) * (size_t)(n + 1)), xl[SAP_RELAX_BLOCK], xn[SAP_RELAX_BLOCK];
    memcpy(xo, x, sizeof(double) * (size_t)n);
    for (sap_int lo = 0; lo < n; lo += RB) {
        const sap_int hi = lo + RB < n ? lo + RB : n;
        for (sap_int i = lo; i < hi; i++) xl[i - lo] = xo[i];
        for (int sw = 0; sw < sweeps; sw++) {
            for (sap_int i = lo; i < hi; i++) {
                double sum = b[i], d = 0.0;
                for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                    const sap_int j = A->colind[p];
                    if (j == i) d += A->val[p];
                    else if (j >= lo && j < hi) sum -= A->val[p] * xl[j - lo];
                    else sum -= A->val[p] * xo[j];
                }
                xn[i - lo] = d != 0.0 ? sum / d : xl[i - lo];
            }
            for (sap_int i = lo; i < hi; i++) xl[i - lo] = xn[i - lo];
        }
        for (sap_int i = lo; i < hi; i++) x[i] = xl[i - lo];
    }
    free(xo);
}

static void test_block_relax(void)
{
    sap_context_config cfg;
    sap_context *c1 = NULL, *c2 = NULL;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.threads = 1;
    cfg.print_level = SAP_PRINT_SILENT;
    CHECK_OK(NULL, sap_context_create(&c1, &cfg));
    cfg.threads = 2;
    CHECK_OK(NULL, sap_context_create(&c2, &cfg));
    if (!c1 || !c2) return;
    const sap_backend_ops *ops = sap__backend_cpu_ops();
    static const sap_int sizes[] = {1, 255, 256, 257, 1000, 70001};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        const sap_int n = sizes[k];
        sap_csr *A = dominant_csr(c1, n, n > 10 ? 7 : -1);
        if (!A) continue;
        double *b = malloc(sizeof(double) * (size_t)n), *x0 = malloc(sizeof(double) * (size_t)n);
        double *xr = malloc(sizeof(double) * (size_t)n), *x1 = malloc(sizeof(double) * (size_t)n),
               *x2 = malloc(sizeof(double) * (size_t)n);
        for (sap_int i = 0; i < n; i++) b[i] = urand(), x0[i] = urand();
        for (int prec = 0; prec < 2; prec++) {
            const sap_precision p = prec ? SAP_FLOAT : SAP_DOUBLE;
            sap_context *cs[2] = {c1, c2};
            double *xs[2] = {x1, x2};
            for (int c = 0; c < 2; c++) {
                sap_spmat *M = NULL;
                sap_vec vb, vx, vs;
                CHECK_OK(cs[c], ops->spmat_create(cs[c], A, SAP_FORMAT_CSR, p, &M));
                CHECK_OK(cs[c], ops->vec_create(cs[c], n, p, &vb));
                CHECK_OK(cs[c], ops->vec_create(cs[c], n, p, &vx));
                CHECK_OK(cs[c], ops->vec_create(cs[c], n, p, &vs));
                CHECK_OK(cs[c], ops->vec_upload(cs[c], &vb, b));
                CHECK_OK(cs[c], ops->vec_upload(cs[c], &vx, x0));
                CHECK_OK(cs[c], ops->block_relax(cs[c], M, 3, &vb, &vx, &vs));
                CHECK_OK(cs[c], ops->vec_download(cs[c], &vx, xs[c]));
                if (c == 0 && k == 0 && prec == 0) {
                    /* errors: not CSR, sweeps 0, mismatched lengths */
                    sap_spmat *E = NULL;
                    CHECK_OK(cs[c], ops->spmat_create(cs[c], A, SAP_FORMAT_ELL, p, &E));
                    CHECK(ops->block_relax(cs[c], E, 3, &vb, &vx, &vs) == SAP_ERR_INVALID);
                    CHECK(ops->block_relax(cs[c], M, 0, &vb, &vx, &vs) == SAP_ERR_INVALID);
                    ops->spmat_destroy(cs[c], E);
                }
                ops->vec_destroy(cs[c], &vb);
                ops->vec_destroy(cs[c], &vx);
                ops->vec_destroy(cs[c], &vs);
                ops->spmat_destroy(cs[c], M);
            }
            CHECK_MSG(memcmp(x1, x2, sizeof(double) * (size_t)n) == 0, "block_relax n = %lld %s: 1 and 2 threads differ",
                      (long long)n, p == SAP_FLOAT ? "float" : "double");
            if (p == SAP_DOUBLE) {
                memcpy(xr, x0, sizeof(double) * (size_t)n);
                relax_ref(A, 3, b, xr);
                double e = 0.0;
                for (sap_int i = 0; i < n; i++) e = fmax(e, fabs(x1[i] - xr[i]) / (1.0 + fabs(xr[i])));
                CHECK_MSG(e <= 1e-14, "block_relax n = %lld: %.3g from the reference", (long long)n, e);
                if (n > 10) CHECK(x1[7] == x0[7]); /* zero diagonal: kept */
            }
        }
        free(b);
        free(x0);
        free(xr);
        free(x1);
        free(x2);
        sap_csr_destroy(A);
    }
    sap_context_destroy(c1);
    sap_context_destroy(c2);
}

/* a BAND matrix larger than one staging buffer of the cuda upload (16 MB: 24,000 rows x
 * 181 diagonals in double are 35 MB, three chunks; the last one partial), in both
 * precisions, created and then updated with new values, against sap_csr_spmv */
static void test_band_streamed(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 24000, 90, 1.0, 0, 7, &A));
    if (!A) return;
    const sap_spmv_format band = SAP_FORMAT_BAND;
    check_update_values(ctx, A, &band, 1, "band streamed");
    sap_csr_destroy(A);
}

/* sap__band_fill_rows (the BAND format's host fill, in chunks of rows as the streamed
 * upload calls it) against the band read entry by entry, on a canonical band and on the
 * same band with every row's entries reversed (the fill must not assume sorted rows),
 * double and float.  (A diagonal-by-diagonal fill with a cursor per row was tried: on an
 * H200 host's 16 cores it doubled T_Dtransf of N = 200,000, K = 200, 0.029 -> 0.070 s.) */
static void test_band_fill(sap_context *ctx)
{
    sap_csr *A = NULL, *R = NULL;
    const sap_int n = 3001, K = 40, w = 2 * K + 1, ld = 700; /* the widest chunk */
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, 1.0, 0, 9, &A));
    if (!A) return;
    CHECK_OK(ctx, sap_csr_copy(A, &R));
    if (!R) {
        sap_csr_destroy(A);
        return;
    }
    for (sap_int i = 0; i < n; i++) /* R: the same entries, each row's order reversed */
        for (sap_int a = A->rowptr[i], b = A->rowptr[i + 1] - 1; a <= b; a++, b--) {
            R->colind[a] = A->colind[b], R->colind[b] = A->colind[a];
            R->val[a] = A->val[b], R->val[b] = A->val[a];
        }
    double *ref = calloc((size_t)n * (size_t)w, sizeof(double)), *got = malloc(sizeof(double) * (size_t)ld * (size_t)w);
    float *gotf = malloc(sizeof(float) * (size_t)ld * (size_t)w);
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) ref[(size_t)(A->colind[p] - i + K) * n + i] = A->val[p];
    /* chunks of 700 rows: blocks of memset runs; of 60: a dense band's gap fill */
    for (int v = 0; v < 4; v++) {
        const sap_csr *M = v & 1 ? R : A;
        const sap_int rows = v < 2 ? ld : 60;
        int bad = 0;
        for (sap_int i0 = 0; i0 < n; i0 += rows) {
            const sap_int i1 = i0 + rows < n ? i0 + rows : n;
            for (size_t q = 0; q < (size_t)ld * (size_t)w; q++) got[q] = NAN, gotf[q] = NAN;
            sap__band_fill_rows(ctx, M, K, K, SAP_DOUBLE, i0, i1, ld, got);
            sap__band_fill_rows(ctx, M, K, K, SAP_FLOAT, i0, i1, ld, gotf);
            for (sap_int t = 0; t < w; t++)
                for (sap_int i = i0; i < i1; i++) {
                    const double e = ref[(size_t)t * n + i];
                    bad += got[(size_t)t * ld + (i - i0)] != e || gotf[(size_t)t * ld + (i - i0)] != (float)e;
                }
        }
        CHECK_MSG(bad == 0, "band fill (%s rows, chunks of %lld): %d slots differ", v & 1 ? "reversed" : "sorted",
                  (long long)rows, bad);
    }
    free(ref);
    free(got);
    free(gotf);
    sap_csr_destroy(R);
    sap_csr_destroy(A);
}

/* ---- block vectors: caxpby, caxpbypcz, cdot, spmm (k columns in one vector) -------------------- */

/* caxpby and cdot of one backend against host loops on k columns of m entries; the results
 * of cdot are also required to repeat bitwise (and, for k = 1, nx = 1, to equal dot's) */
static void check_block_vectors(const sap_backend_ops *ops, sap_context *ctx, int k, int nx, sap_int m,
                                sap_precision P, const char *bname)
{
    const sap_int n = (sap_int)k * m;
    const double tol = P == SAP_FLOAT ? 1e-6 : 1e-14;
    double *hx[9], a[64], b[64], r[512], r2[512];
    sap_vec v[9];
    memset(v, 0, sizeof(v));
    for (int i = 0; i <= nx; i++) {
        hx[i] = malloc(sizeof(double) * (size_t)(n + 1));
        for (sap_int j = 0; j < n; j++) hx[i][j] = P == SAP_FLOAT ? (double)(float)urand() : urand();
        CHECK_OK(ctx, ops->vec_create(ctx, n, P, &v[i]));
        CHECK_OK(ctx, ops->vec_upload(ctx, &v[i], hx[i]));
    }
    double *yv = malloc(sizeof(double) * (size_t)(n + 1));
    sap_vec *Y = &v[nx];
    /* cdot: X = v[0..nx-1], Y = v[nx] */
    CHECK_OK(ctx, ops->cdot(ctx, k, nx, v, Y, r));
    CHECK_OK(ctx, ops->cdot(ctx, k, nx, v, Y, r2));
    CHECK_MSG(memcmp(r, r2, sizeof(double) * (size_t)(k * nx)) == 0, "%s cdot k=%d nx=%d m=%lld not repeatable",
              bname, k, nx, (long long)m);
    for (int i = 0; i < nx; i++)
        for (int c = 0; c < k; c++) {
            double s = 0.0, sa = 0.0;
            for (sap_int j = 0; j < m; j++) {
                s += hx[i][c * m + j] * hx[nx][c * m + j];
                sa += fabs(hx[i][c * m + j] * hx[nx][c * m + j]);
            }
            CHECK_MSG(fabs(r[i * k + c] - s) <= 1e-14 * sa + 1e-300, "%s cdot k=%d nx=%d m=%lld %s: r[%d] = %.17g, not %.17g",
                      bname, k, nx, (long long)m, P == SAP_FLOAT ? "float" : "double", i * k + c, r[i * k + c], s);
        }
    if (k == 1 && nx == 1) {
        double d = 0.0;
        CHECK_OK(ctx, ops->dot(ctx, &v[0], Y, &d));
        CHECK_MSG(memcmp(&d, &r[0], sizeof(double)) == 0, "%s cdot k=1 nx=1 m=%lld: %.17g, dot %.17g", bname,
                  (long long)m, r[0], d);
    }
    /* caxpby: Y = a X + b Y per column; column 1 (a = 0, b = 1) holds NaN and must stay so */
    for (int c = 0; c < k; c++) {
        a[c] = c % 4 == 2 ? 0.0 : urand();
        b[c] = c % 5 == 3 ? 0.0 : (c % 5 == 4 ? 1.0 : urand());
    }
    if (k > 1) {
        a[1] = 0.0;
        b[1] = 1.0;
        for (sap_int j = 0; j < m; j++) hx[nx][m + j] = NAN;
        CHECK_OK(ctx, ops->vec_upload(ctx, Y, hx[nx]));
    }
    /* b = 0: Y is not read (NaN overwritten) */
    if (k > 3)
        for (sap_int j = 0; j < m; j++) hx[nx][3 * m + j] = NAN;
    CHECK_OK(ctx, ops->vec_upload(ctx, Y, hx[nx]));
    CHECK_OK(ctx, ops->caxpby(ctx, k, a, &v[0], b, Y));
    CHECK_OK(ctx, ops->vec_download(ctx, Y, yv));
    int ok = 1;
    for (int c = 0; c < k && ok; c++)
        for (sap_int j = 0; j < m && ok; j++) {
            const sap_int q = c * m + j;
            if (a[c] == 0.0 && b[c] == 1.0) {
                ok = isnan(yv[q]) || yv[q] == hx[nx][q];
                continue;
            }
            const double e = a[c] * hx[0][q] + (b[c] == 0.0 ? 0.0 : b[c] * hx[nx][q]);
            const double sc = fabs(a[c] * hx[0][q]) + (b[c] == 0.0 ? 0.0 : fabs(b[c] * hx[nx][q]));
            ok = fabs(yv[q] - e) <= tol * sc + 1e-300;
            if (!ok) fprintf(stderr, "column %d entry %lld: %.17g, not %.17g\n", c, (long long)j, yv[q], e);
        }
    CHECK_MSG(ok, "%s caxpby k=%d m=%lld %s", bname, k, (long long)m, P == SAP_FLOAT ? "float" : "double");
    /* caxpbypcz: Z = a X + b Y + c Z per column, bitwise axpbypcz on the column views; column
     * 1 (a = b = 0, c = 1) holds NaN and stays so, column 3 (c = 0) holds NaN, not read */
    {
        const size_t es = P == SAP_FLOAT ? sizeof(float) : sizeof(double);
        double cz[64], *hz = malloc(sizeof(double) * (size_t)(n + 1)), *z1 = malloc(sizeof(double) * (size_t)(n + 1));
        double *z2 = malloc(sizeof(double) * (size_t)(n + 1));
        for (int c = 0; c < k; c++) {
            a[c] = urand();
            b[c] = c % 3 == 2 ? 0.0 : urand();
            cz[c] = c == 3 ? 0.0 : urand();
        }
        for (sap_int j = 0; j < n; j++) hz[j] = P == SAP_FLOAT ? (double)(float)urand() : urand();
        if (k > 1) {
            a[1] = b[1] = 0.0;
            cz[1] = 1.0;
            for (sap_int j = 0; j < m; j++) hz[m + j] = NAN;
        }
        if (k > 3)
            for (sap_int j = 0; j < m; j++) hz[3 * m + j] = NAN;
        sap_vec Z1, Z2;
        CHECK_OK(ctx, ops->vec_create(ctx, n, P, &Z1));
        CHECK_OK(ctx, ops->vec_create(ctx, n, P, &Z2));
        CHECK_OK(ctx, ops->vec_upload(ctx, &Z1, hz));
        CHECK_OK(ctx, ops->vec_upload(ctx, &Z2, hz));
        CHECK_OK(ctx, ops->caxpbypcz(ctx, k, a, &v[0], b, Y, cz, &Z1));
        for (int c = 0; c < k; c++) {
            if (k > 1 && c == 1) continue;
            sap_vec xc = {m, P, (char *)v[0].data + (size_t)c * (size_t)m * es};
            sap_vec yc = {m, P, (char *)Y->data + (size_t)c * (size_t)m * es};
            sap_vec zc = {m, P, (char *)Z2.data + (size_t)c * (size_t)m * es};
            CHECK_OK(ctx, ops->axpbypcz(ctx, a[c], &xc, b[c], &yc, cz[c], &zc));
        }
        CHECK_OK(ctx, ops->vec_download(ctx, &Z1, z1));
        CHECK_OK(ctx, ops->vec_download(ctx, &Z2, z2));
        ok = 1;
        for (int c = 0; c < k && ok; c++)
            for (sap_int j = 0; j < m && ok; j++) {
                const sap_int q = c * m + j;
                ok = (k > 1 && c == 1) ? isnan(z1[q]) : memcmp(&z1[q], &z2[q], sizeof(double)) == 0 && isfinite(z1[q]);
                if (!ok) fprintf(stderr, "caxpbypcz column %d entry %lld: %.17g, axpbypcz %.17g\n", c, (long long)j, z1[q], z2[q]);
            }
        CHECK_MSG(ok, "%s caxpbypcz k=%d m=%lld %s", bname, k, (long long)m, P == SAP_FLOAT ? "float" : "double");
        ops->vec_destroy(ctx, &Z1);
        ops->vec_destroy(ctx, &Z2);
        free(hz);
        free(z1);
        free(z2);
    }
    for (int i = 0; i <= nx; i++) {
        ops->vec_destroy(ctx, &v[i]);
        free(hx[i]);
    }
    free(yv);
}

/* spmm on k columns against k spmv calls on the column views, in every format of the
 * backend (exact: bitwise, else relative to |A| |x|) */
static void check_spmm(const sap_backend_ops *ops, sap_context *ctx, const sap_csr *A, const char *what, int exact,
                       const char *bname)
{
    const sap_int nr = A->nrows, ncl = A->ncols;
    const int ks[3] = {1, 3, 32};
    for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++)
        for (int prec = 0; prec < 2; prec++) {
            if (formats[f] == SAP_FORMAT_BAND && band_slots(A) > 4e6) continue;
            const sap_precision P = prec ? SAP_FLOAT : SAP_DOUBLE;
            const size_t es = prec ? sizeof(float) : sizeof(double);
            sap_spmat *M = NULL;
            CHECK_OK(ctx, ops->spmat_create(ctx, A, formats[f], P, &M));
            if (!M) continue;
            for (int t = 0; t < 3; t++) {
                const int k = ks[t];
                const sap_int nx = (sap_int)k * ncl, ny = (sap_int)k * nr;
                double *hx = malloc(sizeof(double) * (size_t)(nx + 1)), *hy = malloc(sizeof(double) * (size_t)(ny + 1));
                double *hz = malloc(sizeof(double) * (size_t)(ny + 1));
                for (sap_int j = 0; j < nx; j++) hx[j] = prec ? (double)(float)urand() : urand();
                for (sap_int j = 0; j < ny; j++) hy[j] = NAN; /* Y is only written */
                sap_vec X, Y, Z;
                CHECK_OK(ctx, ops->vec_create(ctx, nx, P, &X));
                CHECK_OK(ctx, ops->vec_create(ctx, ny, P, &Y));
                CHECK_OK(ctx, ops->vec_create(ctx, ny, P, &Z));
                CHECK_OK(ctx, ops->vec_upload(ctx, &X, hx));
                CHECK_OK(ctx, ops->vec_upload(ctx, &Y, hy));
                CHECK_OK(ctx, ops->spmm(ctx, M, k, &X, &Y));
                for (int c = 0; c < k; c++) {
                    sap_vec xc = {ncl, P, (char *)X.data + (size_t)c * (size_t)ncl * es};
                    sap_vec zc = {nr, P, (char *)Z.data + (size_t)c * (size_t)nr * es};
                    CHECK_OK(ctx, ops->spmv(ctx, M, 1.0, &xc, 0.0, &zc));
                }
                CHECK_OK(ctx, ops->vec_download(ctx, &Y, hy));
                CHECK_OK(ctx, ops->vec_download(ctx, &Z, hz));
                int ok = 1;
                if (exact) ok = ny == 0 || memcmp(hy, hz, sizeof(double) * (size_t)ny) == 0;
                else
                    for (int c = 0; c < k && ok; c++)
                        for (sap_int i = 0; i < nr && ok; i++) {
                            double s = 0.0;
                            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                                s += fabs(A->val[p] * hx[c * ncl + A->colind[p]]);
                            const sap_int q = c * nr + i;
                            ok = fabs(hy[q] - hz[q]) <= (prec ? 1e-5 : 1e-13) * s + 1e-300;
                            if (!ok) fprintf(stderr, "column %d row %lld: %.17g vs %.17g\n", c, (long long)i, hy[q], hz[q]);
                        }
                CHECK_MSG(ok, "%s spmm %s %s %s k=%d", bname, what, sap_spmv_format_name(M->format),
                          prec ? "float" : "double", k);
                ops->vec_destroy(ctx, &X);
                ops->vec_destroy(ctx, &Y);
                ops->vec_destroy(ctx, &Z);
                free(hx);
                free(hy);
                free(hz);
            }
            ops->spmat_destroy(ctx, M);
        }
}

static void check_block_errors(const sap_backend_ops *ops, sap_context *ctx)
{
    sap_vec x, y, z, f;
    double a[65], b[65], r[600];
    for (int i = 0; i < 65; i++) a[i] = b[i] = 1.0;
    CHECK_OK(ctx, ops->vec_create(ctx, 12, SAP_DOUBLE, &x));
    CHECK_OK(ctx, ops->vec_create(ctx, 12, SAP_DOUBLE, &y));
    CHECK_OK(ctx, ops->vec_create(ctx, 15, SAP_DOUBLE, &z));
    CHECK_OK(ctx, ops->vec_create(ctx, 12, SAP_FLOAT, &f));
    CHECK_STATUS(ctx, ops->caxpby(ctx, 0, a, &x, b, &y), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->caxpby(ctx, 65, a, &x, b, &y), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->caxpby(ctx, 5, a, &x, b, &y), SAP_ERR_INVALID); /* 12 % 5 */
    CHECK_STATUS(ctx, ops->caxpby(ctx, 3, a, &x, b, &z), SAP_ERR_INVALID); /* lengths */
    CHECK_STATUS(ctx, ops->caxpby(ctx, 3, a, &x, b, &f), SAP_ERR_INVALID); /* precisions */
    CHECK_STATUS(ctx, ops->caxpby(ctx, 3, NULL, &x, b, &y), SAP_ERR_INVALID);
    CHECK_OK(ctx, ops->caxpby(ctx, 4, a, &x, b, &y));
    CHECK_STATUS(ctx, ops->caxpbypcz(ctx, 0, a, &x, b, &y, a, &y), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->caxpbypcz(ctx, 65, a, &x, b, &y, a, &y), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->caxpbypcz(ctx, 3, a, &x, b, &y, a, &z), SAP_ERR_INVALID); /* lengths */
    CHECK_STATUS(ctx, ops->caxpbypcz(ctx, 3, a, &x, b, &y, a, &f), SAP_ERR_INVALID); /* precisions */
    CHECK_STATUS(ctx, ops->caxpbypcz(ctx, 3, a, &x, b, &y, NULL, &y), SAP_ERR_INVALID);
    CHECK_OK(ctx, ops->caxpbypcz(ctx, 4, a, &x, b, &x, a, &y));
    CHECK_STATUS(ctx, ops->cdot(ctx, 0, 1, &x, &y, r), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->cdot(ctx, 65, 1, &x, &y, r), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->cdot(ctx, 3, 0, &x, &y, r), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->cdot(ctx, 3, 9, &x, &y, r), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->cdot(ctx, 5, 1, &x, &y, r), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->cdot(ctx, 3, 1, &x, &z, r), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->cdot(ctx, 3, 1, &x, &f, r), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, ops->cdot(ctx, 3, 1, &x, &y, NULL), SAP_ERR_INVALID);
    CHECK_OK(ctx, ops->cdot(ctx, 12, 1, &x, &y, r));
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 2, 2, &A)); /* 4 x 4 */
    sap_spmat *M = NULL;
    if (A) CHECK_OK(ctx, ops->spmat_create(ctx, A, SAP_FORMAT_CSR, SAP_DOUBLE, &M));
    if (M) {
        CHECK_OK(ctx, ops->spmm(ctx, M, 3, &x, &y));
        CHECK_STATUS(ctx, ops->spmm(ctx, M, 0, &x, &y), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, ops->spmm(ctx, M, 65, &x, &y), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, ops->spmm(ctx, M, 2, &x, &y), SAP_ERR_INVALID); /* 6 != 4 rows */
        CHECK_STATUS(ctx, ops->spmm(ctx, M, 3, &x, &z), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, ops->spmm(ctx, M, 3, &x, &f), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, ops->spmm(ctx, M, 3, &f, &f), SAP_ERR_INVALID); /* not M's precision */
        CHECK_STATUS(ctx, ops->spmm(ctx, NULL, 3, &x, &y), SAP_ERR_INVALID);
    }
    ops->spmat_destroy(ctx, M);
    sap_csr_destroy(A);
    ops->vec_destroy(ctx, &x);
    ops->vec_destroy(ctx, &y);
    ops->vec_destroy(ctx, &z);
    ops->vec_destroy(ctx, &f);
}

/* every block op of a backend: k in {1, 3, 32}, nx in {1, 4}, both precisions, columns of
 * 0, 1, 1000, 1001 and 33333 entries (the last past the parallel threshold); spmm on a random
 * sparse, a rectangular and a banded matrix */
static void test_block_ops(const sap_backend_ops *ops, sap_context *ctx, int exact, const char *bname)
{
    const int ks[3] = {1, 3, 32}, nxs[2] = {1, 4};
    const sap_int ms[5] = {0, 1, 1000, 1001, 33333};
    for (int ki = 0; ki < 3; ki++)
        for (int xi = 0; xi < 2; xi++)
            for (int mi = 0; mi < 5; mi++)
                for (int prec = 0; prec < 2; prec++)
                    check_block_vectors(ops, ctx, ks[ki], nxs[xi], ms[mi], prec ? SAP_FLOAT : SAP_DOUBLE, bname);
    sap_csr *A = random_csr(ctx, 1001, 1001, 12, 2, 300);
    if (A) check_spmm(ops, ctx, A, "random 1001", exact, bname);
    sap_csr_destroy(A);
    A = random_csr(ctx, 77, 130, 9, 0, 0);
    if (A) check_spmm(ops, ctx, A, "random 77 x 130", exact, bname);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 1000, 7, 1.0, 0, 3, &A));
    if (A) check_spmm(ops, ctx, A, "banded 1000, K = 7", exact, bname);
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 40, 40, 0, &A));
    if (A) check_spmm(ops, ctx, A, "all rows empty", exact, bname);
    sap_csr_destroy(A);
    check_block_errors(ops, ctx);
}

static int cpu_part(void)
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
    test_band_streamed(ctx);
    test_band_fill(ctx);
    test_blas(ctx);
    test_block_ops(sap__backend_cpu_ops(), ctx, 1, "cpu");
    test_errors(ctx);
    sap_context_destroy(ctx);
    test_determinism();
    test_block_relax();
    test_oom();
    return 0;
}

/* ==== --backend cuda: the cuda backend against the cpu backend ========================= */

#ifndef SAP_HAVE_CUDA
static int gpu_part(void)
{
    printf("%s: built without CUDA, skipped\n", sap_test_name());
    return 77;
}
#else

typedef struct backend {
    const sap_backend_ops *ops;
    sap_context *ctx;
} backend;

static backend G, C; /* gpu, cpu */
/* (rng and urand are those of the cpu part, seeded again by gpu_part)
 * SAP_TEST_GPU_DRYRUN=1: "gpu" is a second cpu context (checks the test itself on a
 * machine without a GPU; the cuda-only parts are skipped) */
static int dryrun = 0;

static double tol_of(sap_precision p) { return p == SAP_DOUBLE ? 1e-13 : 2e-6; }
static const char *pname(sap_precision p) { return p == SAP_DOUBLE ? "double" : "float"; }

static void fill_random(double *v, sap_int n)
{
    for (sap_int i = 0; i < n; i++) v[i] = urand();
}

/* a vector on a backend holding host values */
static sap_vec mkvec(backend *b, sap_int n, sap_precision p, const double *h)
{
    sap_vec v;
    memset(&v, 0, sizeof(v));
    CHECK_OK(b->ctx, b->ops->vec_create(b->ctx, n, p, &v));
    if (h) CHECK_OK(b->ctx, b->ops->vec_upload(b->ctx, &v, h));
    return v;
}

static void getvec(backend *b, const sap_vec *v, double *h) { CHECK_OK(b->ctx, b->ops->vec_download(b->ctx, v, h)); }

/* max |a - b| / max(scale) */
static double rel_diff(const double *a, const double *b, const double *scale, sap_int n)
{
    double d = 0.0, s = 0.0;
    for (sap_int i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (isnan(a[i]) != isnan(b[i])) e = INFINITY;
        if (e > d) d = e;
        if (scale[i] > s) s = scale[i];
    }
    return s > 0.0 ? d / s : d;
}

/* values rounded to the precision (what the cpu backend's float vectors hold) */
static void round_to(double *v, sap_int n, sap_precision p)
{
    if (p == SAP_FLOAT)
        for (sap_int i = 0; i < n; i++) v[i] = (double)(float)v[i];
}

/* ---- vectors and BLAS-1 ------------------------------------------------------------------- */

static void test_vectors(sap_int n, sap_precision p)
{
    const double tol = tol_of(p);
    double *hx = malloc(sizeof(double) * (size_t)(n + 1)), *hy = malloc(sizeof(double) * (size_t)(n + 1));
    double *hz = malloc(sizeof(double) * (size_t)(n + 1)), *g = malloc(sizeof(double) * (size_t)(n + 1));
    double *c = malloc(sizeof(double) * (size_t)(n + 1)), *sc = malloc(sizeof(double) * (size_t)(n + 1));
    fill_random(hx, n);
    fill_random(hy, n);
    fill_random(hz, n);
    round_to(hx, n, p);
    round_to(hy, n, p);
    round_to(hz, n, p);
    backend *B[2] = {&G, &C};
    sap_vec x[2], y[2], z[2];

#define RESET()                                                                                       \
    for (int b = 0; b < 2; b++) {                                                                     \
        CHECK_OK(B[b]->ctx, B[b]->ops->vec_upload(B[b]->ctx, &x[b], hx));                             \
        CHECK_OK(B[b]->ctx, B[b]->ops->vec_upload(B[b]->ctx, &y[b], hy));                             \
        CHECK_OK(B[b]->ctx, B[b]->ops->vec_upload(B[b]->ctx, &z[b], hz));                             \
    }
#define COMPARE(vv, what, scalefn)                                                                    \
    do {                                                                                              \
        getvec(&G, &vv[0], g);                                                                        \
        getvec(&C, &vv[1], c);                                                                        \
        for (sap_int i = 0; i < n; i++) sc[i] = (scalefn);                                            \
        double r_ = rel_diff(g, c, sc, n);                                                            \
        CHECK_MSG(r_ <= tol, "%s n=%lld %s: relative difference %.3g", what, (long long)n, pname(p), r_); \
    } while (0)

    for (int b = 0; b < 2; b++) {
        x[b] = mkvec(B[b], n, p, NULL);
        y[b] = mkvec(B[b], n, p, NULL);
        z[b] = mkvec(B[b], n, p, NULL);
    }
    /* a new vector is zero */
    getvec(&G, &x[0], g);
    int zero = 1;
    for (sap_int i = 0; i < n; i++) zero &= g[i] == 0.0;
    CHECK_MSG(zero, "vec_create n=%lld: not zero-initialised", (long long)n);

    RESET();
    /* upload / download round trip */
    getvec(&G, &x[0], g);
    int same = 1;
    for (sap_int i = 0; i < n; i++) same &= g[i] == hx[i];
    CHECK_MSG(same, "upload/download n=%lld %s: values changed", (long long)n, pname(p));

    /* copy, also across precisions */
    for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->copy(B[b]->ctx, &x[b], &y[b]));
    COMPARE(y, "copy", fabs(hx[i]));
    {
        sap_precision q = p == SAP_DOUBLE ? SAP_FLOAT : SAP_DOUBLE;
        sap_vec w[2];
        for (int b = 0; b < 2; b++) {
            w[b] = mkvec(B[b], n, q, NULL);
            CHECK_OK(B[b]->ctx, B[b]->ops->copy(B[b]->ctx, &x[b], &w[b]));
        }
        getvec(&G, &w[0], g);
        getvec(&C, &w[1], c);
        for (sap_int i = 0; i < n; i++) sc[i] = fabs(hx[i]);
        CHECK_MSG(rel_diff(g, c, sc, n) <= 1e-7, "copy %s -> %s n=%lld", pname(p), pname(q), (long long)n);
        for (int b = 0; b < 2; b++) B[b]->ops->vec_destroy(B[b]->ctx, &w[b]);
    }

    /* set, scale */
    for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->set(B[b]->ctx, &y[b], 0.375));
    COMPARE(y, "set", 1.0);
    for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->set(B[b]->ctx, &y[b], 0.0));
    COMPARE(y, "set 0", 1.0);
    RESET();
    for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->scale(B[b]->ctx, &x[b], -1.75));
    COMPARE(x, "scale", 1.75 * fabs(hx[i]));

    /* axpby with b != 0 and b == 0 (y not read) */
    RESET();
    for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->axpby(B[b]->ctx, 0.7, &x[b], -1.3, &y[b]));
    COMPARE(y, "axpby", 0.7 * fabs(hx[i]) + 1.3 * fabs(hy[i]));
    RESET();
    for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->axpby(B[b]->ctx, 0.7, &x[b], 0.0, &y[b]));
    COMPARE(y, "axpby b=0", 0.7 * fabs(hx[i]));

    /* axpbypcz */
    RESET();
    for (int b = 0; b < 2; b++)
        CHECK_OK(B[b]->ctx, B[b]->ops->axpbypcz(B[b]->ctx, 0.3, &x[b], -2.0, &y[b], 1.1, &z[b]));
    COMPARE(z, "axpbypcz", 0.3 * fabs(hx[i]) + 2.0 * fabs(hy[i]) + 1.1 * fabs(hz[i]));
    RESET();
    for (int b = 0; b < 2; b++)
        CHECK_OK(B[b]->ctx, B[b]->ops->axpbypcz(B[b]->ctx, 0.3, &x[b], -2.0, &y[b], 0.0, &z[b]));
    COMPARE(z, "axpbypcz c=0", 0.3 * fabs(hx[i]) + 2.0 * fabs(hy[i]));

    /* pointwise_mult */
    RESET();
    for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->pointwise_mult(B[b]->ctx, &x[b], &y[b], &z[b]));
    COMPARE(z, "pointwise_mult", fabs(hx[i] * hy[i]));

    /* dot, nrm2 (and determinism: a second run is bit-identical) */
    RESET();
    {
        double dg = 0, dg2 = 1, dc = 0, ng = 0, ng2 = 1, nc = 0, sabs = 0, ss = 0;
        CHECK_OK(G.ctx, G.ops->dot(G.ctx, &x[0], &y[0], &dg));
        CHECK_OK(G.ctx, G.ops->dot(G.ctx, &x[0], &y[0], &dg2));
        CHECK_OK(C.ctx, C.ops->dot(C.ctx, &x[1], &y[1], &dc));
        CHECK_OK(G.ctx, G.ops->nrm2(G.ctx, &x[0], &ng));
        CHECK_OK(G.ctx, G.ops->nrm2(G.ctx, &x[0], &ng2));
        CHECK_OK(C.ctx, C.ops->nrm2(C.ctx, &x[1], &nc));
        for (sap_int i = 0; i < n; i++) {
            sabs += fabs(hx[i] * hy[i]);
            ss += hx[i] * hx[i];
        }
        CHECK_MSG(fabs(dg - dc) <= 1e-12 * sabs + 1e-300, "dot n=%lld %s: %.17g vs %.17g", (long long)n, pname(p), dg, dc);
        CHECK_MSG(memcmp(&dg, &dg2, sizeof(double)) == 0, "dot n=%lld %s not deterministic", (long long)n, pname(p));
        CHECK_MSG(fabs(ng - nc) <= 1e-12 * sqrt(ss) + 1e-300, "nrm2 n=%lld %s: %.17g vs %.17g", (long long)n, pname(p), ng, nc);
        CHECK_MSG(memcmp(&ng, &ng2, sizeof(double)) == 0, "nrm2 n=%lld %s not deterministic", (long long)n, pname(p));
        CHECK_MSG(fabs(ng - sqrt(ss)) <= 1e-12 * sqrt(ss), "nrm2 n=%lld %s vs host", (long long)n, pname(p));
        if (n == 0) CHECK(dg == 0.0 && ng == 0.0);
    }

    /* axpby_nrm2 */
    {
        double r[2], r2 = -1;
        RESET();
        for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->axpby_nrm2(B[b]->ctx, 0.5, &x[b], -0.25, &y[b], &r[b]));
        COMPARE(y, "axpby_nrm2 (vector)", 0.5 * fabs(hx[i]) + 0.25 * fabs(hy[i]));
        double ss = 0;
        for (sap_int i = 0; i < n; i++) ss += c[i] * c[i];
        CHECK_MSG(fabs(r[0] - r[1]) <= (p == SAP_DOUBLE ? 1e-12 : 1e-6) * sqrt(ss) + 1e-300,
                  "axpby_nrm2 n=%lld %s: %.17g vs %.17g", (long long)n, pname(p), r[0], r[1]);
        RESET();
        CHECK_OK(G.ctx, G.ops->axpby_nrm2(G.ctx, 0.5, &x[0], -0.25, &y[0], &r2));
        CHECK_MSG(memcmp(&r2, &r[0], sizeof(double)) == 0, "axpby_nrm2 n=%lld not deterministic", (long long)n);
        RESET();
        for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->axpby_nrm2(B[b]->ctx, 0.5, &x[b], 0.0, &y[b], &r[b]));
        COMPARE(y, "axpby_nrm2 b=0", 0.5 * fabs(hx[i]));
    }

    /* cg_update: x += alpha p, r -= alpha q, rr = r.r (p = y, q = z here, x, r = x, a copy) */
    {
        double rr[2], rr2 = -1;
        sap_vec r[2];
        RESET();
        for (int b = 0; b < 2; b++) {
            r[b] = mkvec(B[b], n, p, hz);
            CHECK_OK(B[b]->ctx, B[b]->ops->cg_update(B[b]->ctx, 0.625, &y[b], &x[b], &z[b], &r[b], &rr[b]));
        }
        COMPARE(z, "cg_update x", fabs(hz[i]) + 0.625 * fabs(hy[i]));
        COMPARE(r, "cg_update r", fabs(hz[i]) + 0.625 * fabs(hx[i]));
        double ss = 0;
        for (sap_int i = 0; i < n; i++) ss += c[i] * c[i];
        CHECK_MSG(fabs(rr[0] - rr[1]) <= (p == SAP_DOUBLE ? 1e-12 : 1e-5) * ss + 1e-300,
                  "cg_update rr n=%lld %s: %.17g vs %.17g", (long long)n, pname(p), rr[0], rr[1]);
        RESET();
        CHECK_OK(G.ctx, G.ops->vec_upload(G.ctx, &r[0], hz));
        CHECK_OK(G.ctx, G.ops->cg_update(G.ctx, 0.625, &y[0], &x[0], &z[0], &r[0], &rr2));
        CHECK_MSG(memcmp(&rr2, &rr[0], sizeof(double)) == 0, "cg_update n=%lld not deterministic", (long long)n);
        for (int b = 0; b < 2; b++) B[b]->ops->vec_destroy(B[b]->ctx, &r[b]);
    }

    /* maxpy and mdot with k in 1, 3, 8, 9, 20, 64 */
    {
        static const int ks[] = {1, 3, 8, 9, 20, 64};
        sap_int nk = n <= 100003 ? 64 : 9; /* bound the memory of the largest case */
        sap_vec *X[2];
        double *hxk = malloc(sizeof(double) * (size_t)(n + 1) * (size_t)nk);
        for (sap_int j = 0; j < nk * n; j++) hxk[j] = urand();
        round_to(hxk, nk * n, p);
        for (int b = 0; b < 2; b++) {
            X[b] = malloc(sizeof(sap_vec) * (size_t)nk);
            for (sap_int j = 0; j < nk; j++) X[b][j] = mkvec(B[b], n, p, hxk + j * n);
        }
        double a[64], rg[64], rg2[64], rc[64];
        for (int j = 0; j < 64; j++) a[j] = urand();
        for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
            int k = ks[t];
            if (k > nk) continue;
            RESET();
            for (int b = 0; b < 2; b++) CHECK_OK(B[b]->ctx, B[b]->ops->maxpy(B[b]->ctx, k, a, X[b], &y[b]));
            getvec(&G, &y[0], g);
            getvec(&C, &y[1], c);
            for (sap_int i = 0; i < n; i++) {
                sc[i] = fabs(hy[i]);
                for (int j = 0; j < k; j++) sc[i] += fabs(a[j] * hxk[j * n + i]);
            }
            double rd = rel_diff(g, c, sc, n);
            CHECK_MSG(rd <= tol * 4, "maxpy k=%d n=%lld %s: %.3g", k, (long long)n, pname(p), rd);
            RESET();
            CHECK_OK(G.ctx, G.ops->mdot(G.ctx, k, X[0], &y[0], rg));
            CHECK_OK(G.ctx, G.ops->mdot(G.ctx, k, X[0], &y[0], rg2));
            CHECK_OK(C.ctx, C.ops->mdot(C.ctx, k, X[1], &y[1], rc));
            for (int j = 0; j < k; j++) {
                double sabs = 0;
                for (sap_int i = 0; i < n; i++) sabs += fabs(hxk[j * n + i] * hy[i]);
                CHECK_MSG(fabs(rg[j] - rc[j]) <= 1e-12 * sabs + 1e-300, "mdot k=%d j=%d n=%lld %s: %.17g vs %.17g", k, j,
                          (long long)n, pname(p), rg[j], rc[j]);
                CHECK_MSG(memcmp(&rg[j], &rg2[j], sizeof(double)) == 0, "mdot k=%d n=%lld not deterministic", k,
                          (long long)n);
            }
        }
        for (int b = 0; b < 2; b++) {
            for (sap_int j = 0; j < nk; j++) B[b]->ops->vec_destroy(B[b]->ctx, &X[b][j]);
            free(X[b]);
        }
        free(hxk);
    }
    CHECK_OK(G.ctx, G.ops->synchronize(G.ctx));
    for (int b = 0; b < 2; b++) {
        B[b]->ops->vec_destroy(B[b]->ctx, &x[b]);
        B[b]->ops->vec_destroy(B[b]->ctx, &y[b]);
        B[b]->ops->vec_destroy(B[b]->ctx, &z[b]);
    }
    free(hx);
    free(hy);
    free(hz);
    free(g);
    free(c);
    free(sc);
#undef RESET
#undef COMPARE
}

/* ---- matrices ------------------------------------------------------------------------------ */

/* Random CSR: row i gets about len(i) entries at random columns (duplicates summed). */
typedef sap_int (*len_fn)(sap_int i, sap_int n, sap_int m);

static sap_csr *random_csr_len(sap_context *ctx, sap_int n, sap_int m, len_fn len)
{
    sap_coo *T = NULL;
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_coo_create(ctx, n, m, 16, &T));
    if (!T) return NULL;
    for (sap_int i = 0; i < n; i++) {
        sap_int l = m > 0 ? len(i, n, m) : 0;
        for (sap_int k = 0; k < l; k++) {
            sap_int j = (sap_int)sap__rng_below(&rng, (uint64_t)m);
            /* mostly near the diagonal, some far away */
            if (k % 4 != 3 && m > 1) j = (i * m / (n > 0 ? n : 1) + (sap_int)sap__rng_below(&rng, 64) - 32 + m) % m;
            CHECK_OK(ctx, sap_coo_push(T, i, j, urand()));
        }
    }
    CHECK_OK(ctx, sap_csr_from_coo(T, &A));
    sap_coo_destroy(T);
    return A;
}

static sap_int len_regular(sap_int i, sap_int n, sap_int m) { return 7; }
static sap_int len_empty_rows(sap_int i, sap_int n, sap_int m) { return i % 3 == 0 ? 0 : 1 + (i % 11); }
static sap_int len_long_rows(sap_int i, sap_int n, sap_int m)
{
    if (i == 5) return 6000; /* > 4096 after duplicates: a block per row in HEC and CSR */
    if (i % 97 == 0) return 400;
    return 3 + (i % 5);
}
static sap_int len_wide(sap_int i, sap_int n, sap_int m) { return 40 + (i % 60); }
static sap_int len_full(sap_int i, sap_int n, sap_int m) { return m; }
static sap_int len_one(sap_int i, sap_int n, sap_int m) { return 1; }

static const sap_spmv_format cmp_formats[] = {SAP_FORMAT_AUTO, SAP_FORMAT_CSR, SAP_FORMAT_ELL, SAP_FORMAT_SELLP,
                                          SAP_FORMAT_HEC,  SAP_FORMAT_BAND};

/* BAND holds n x (kl + ku + 1) slots: skipped for wide random patterns */
static int band_too_wide(const sap_csr *A)
{
    sap_matrix_stats st;
    if (sap_csr_stats(A, &st) != SAP_OK) return 1;
    return (double)A->nrows * (double)(st.lower_bandwidth + st.upper_bandwidth + 1) > 2e7;
}

/* y = alpha A x + beta y on both backends; compare relative to |alpha| |A| |x| + |beta y|. */
static void compare_spmv(const sap_csr *A, sap_spmat *Mg, sap_spmat *Mc, sap_precision p, const char *what)
{
    const sap_int n = A->nrows, m = A->ncols;
    double *hx = malloc(sizeof(double) * (size_t)(m + 1)), *hy = malloc(sizeof(double) * (size_t)(n + 1));
    double *g = malloc(sizeof(double) * (size_t)(n + 1)), *g2 = malloc(sizeof(double) * (size_t)(n + 1));
    double *c = malloc(sizeof(double) * (size_t)(n + 1)), *sc = malloc(sizeof(double) * (size_t)(n + 1));
    fill_random(hx, m);
    fill_random(hy, n);
    round_to(hx, m, p);
    round_to(hy, n, p);
    static const double ab[][2] = {{1.0, 0.0}, {-0.5, 0.75}, {2.0, 1.0}, {0.0, 0.5}};
    for (size_t t = 0; t < 4; t++) {
        const double alpha = ab[t][0], beta = ab[t][1];
        sap_vec xg = mkvec(&G, m, p, hx), yg = mkvec(&G, n, p, hy), xc = mkvec(&C, m, p, hx), yc = mkvec(&C, n, p, hy);
        CHECK_OK(G.ctx, G.ops->spmv(G.ctx, Mg, alpha, &xg, beta, &yg));
        CHECK_OK(C.ctx, C.ops->spmv(C.ctx, Mc, alpha, &xc, beta, &yc));
        getvec(&G, &yg, g);
        getvec(&C, &yc, c);
        for (sap_int i = 0; i < n; i++) {
            double s = 0;
            for (sap_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) s += fabs(A->val[k] * hx[A->colind[k]]);
            sc[i] = fabs(alpha) * s + fabs(beta * hy[i]);
        }
        double rd = rel_diff(g, c, sc, n);
        CHECK_MSG(rd <= (p == SAP_DOUBLE ? 1e-13 : 1e-5), "spmv %s %s alpha=%g beta=%g: relative difference %.3g", what,
                  pname(p), alpha, beta, rd);
        /* deterministic: the same product again is bit-identical */
        CHECK_OK(G.ctx, G.ops->vec_upload(G.ctx, &yg, hy));
        CHECK_OK(G.ctx, G.ops->spmv(G.ctx, Mg, alpha, &xg, beta, &yg));
        getvec(&G, &yg, g2);
        CHECK_MSG(n == 0 || memcmp(g, g2, sizeof(double) * (size_t)n) == 0, "spmv %s %s not deterministic", what,
                  pname(p));
        G.ops->vec_destroy(G.ctx, &xg);
        G.ops->vec_destroy(G.ctx, &yg);
        C.ops->vec_destroy(C.ctx, &xc);
        C.ops->vec_destroy(C.ctx, &yc);
    }
    free(hx);
    free(hy);
    free(g);
    free(g2);
    free(c);
    free(sc);
}

static int32_t *dl_i32(const int32_t *d, sap_int n)
{
    int32_t *h = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (n > 0) CHECK_OK(G.ctx, sap__cuda_d2h(G.ctx, h, d, sizeof(int32_t) * (size_t)n));
    return h;
}

static double *dl_val(const void *d, sap_int n, sap_precision p)
{
    double *h = malloc(sizeof(double) * (size_t)(n + 1));
    if (n <= 0) return h;
    if (p == SAP_DOUBLE) {
        CHECK_OK(G.ctx, sap__cuda_d2h(G.ctx, h, d, sizeof(double) * (size_t)n));
    } else {
        float *f = malloc(sizeof(float) * (size_t)n);
        CHECK_OK(G.ctx, sap__cuda_d2h(G.ctx, f, d, sizeof(float) * (size_t)n));
        for (sap_int i = 0; i < n; i++) h[i] = f[i];
        free(f);
    }
    return h;
}

static double rnd(double v, sap_precision p) { return p == SAP_FLOAT ? (double)(float)v : v; }

/* The device layouts against the host conversions of formats.c (exact). */
static void compare_layout(const sap_csr *A, sap_spmat *Mg, sap_precision p, const char *what)
{
    if (dryrun) return;
    sap_cuda_spmat_view v;
    CHECK_OK(G.ctx, sap__cuda_spmat_view(Mg, &v));
    const sap_int n = A->nrows;
    int bad = 0;
    if (v.format == SAP_FORMAT_ELL || v.format == SAP_FORMAT_HEC) {
        sap_ell_host E;
        sap_hec_host H;
        memset(&E, 0, sizeof(E));
        memset(&H, 0, sizeof(H));
        if (v.format == SAP_FORMAT_ELL) CHECK_OK(G.ctx, sap__ell_from_csr(G.ctx, A, -1, &E));
        else CHECK_OK(G.ctx, sap__hec_from_csr(G.ctx, A, &H));
        sap_ell_host *e = v.format == SAP_FORMAT_ELL ? &E : &H.ell;
        CHECK_MSG(e->width == v.ell_width, "%s: ELL width %lld (host) vs %d (device)", what, (long long)e->width,
                  v.ell_width);
        if (e->width == v.ell_width) {
            int32_t *col = dl_i32(v.ell_col, (sap_int)v.ell_ld * v.ell_width);
            double *val = dl_val(v.ell_val, (sap_int)v.ell_ld * v.ell_width, p);
            for (sap_int k = 0; k < e->width && !bad; k++)
                for (sap_int i = 0; i < n; i++) {
                    size_t hi = (size_t)(i + k * n), di = (size_t)(i + k * v.ell_ld);
                    if (e->col[hi] != col[di] || rnd(e->val[hi], p) != val[di]) {
                        bad = 1;
                        CHECK_MSG(0, "%s: ELL slot (%lld, %lld) differs: (%d, %g) host vs (%d, %g) device", what,
                                  (long long)i, (long long)k, e->col[hi], e->val[hi], col[di], val[di]);
                        break;
                    }
                }
            free(col);
            free(val);
        }
        if (v.format == SAP_FORMAT_HEC && !bad) {
            int32_t *rp = dl_i32(v.rem_rowptr, n + 1);
            for (sap_int i = 0; i <= n && !bad; i++)
                if (rp[i] != H.csr_rowptr[i]) {
                    bad = 1;
                    CHECK_MSG(0, "%s: HEC remainder rowptr[%lld] %lld (host) vs %d", what, (long long)i,
                              (long long)H.csr_rowptr[i], rp[i]);
                }
            sap_int rn = H.csr_rowptr[n];
            int32_t *rc = dl_i32(v.rem_col, rn);
            double *rv = dl_val(v.rem_val, rn, p);
            for (sap_int k = 0; k < rn && !bad; k++)
                if (rc[k] != H.csr_col[k] || rv[k] != rnd(H.csr_val[k], p)) {
                    bad = 1;
                    CHECK_MSG(0, "%s: HEC remainder entry %lld differs", what, (long long)k);
                }
            sap_int nlist = 0;
            for (sap_int i = 0; i < n; i++) nlist += H.csr_rowptr[i + 1] > H.csr_rowptr[i];
            CHECK_MSG(nlist == v.rem_nrows, "%s: %lld rows with a remainder (host) vs %d", what, (long long)nlist,
                      v.rem_nrows);
            free(rp);
            free(rc);
            free(rv);
        }
        sap__ell_free(G.ctx, &E);
        sap__hec_free(G.ctx, &H);
    } else if (v.format == SAP_FORMAT_SELLP) {
        sap_sellp_host S;
        memset(&S, 0, sizeof(S));
        CHECK_OK(G.ctx, sap__sellp_from_csr(G.ctx, A, &S));
        CHECK(S.nslices == v.nslices);
        int32_t *sp = dl_i32(v.slice_ptr, v.nslices + 1);
        for (sap_int s = 0; s <= S.nslices && !bad; s++)
            if (S.slice_ptr[s] != sp[s]) {
                bad = 1;
                CHECK_MSG(0, "%s: SELL-P slice_ptr[%lld] %lld (host) vs %d", what, (long long)s,
                          (long long)S.slice_ptr[s], sp[s]);
            }
        sap_int maxw = 0;
        for (sap_int s = 0; s < S.nslices; s++) maxw = S.slice_width[s] > maxw ? S.slice_width[s] : maxw;
        CHECK_MSG(maxw == Mg->ell_width, "%s: SELL-P max width %lld vs %lld", what, (long long)maxw,
                  (long long)Mg->ell_width);
        if (!bad) {
            sap_int tot = S.slice_ptr[S.nslices];
            int32_t *col = dl_i32(v.sell_col, tot);
            double *val = dl_val(v.sell_val, tot, p);
            for (sap_int k = 0; k < tot; k++)
                if (col[k] != S.col[k] || val[k] != rnd(S.val[k], p)) {
                    CHECK_MSG(0, "%s: SELL-P slot %lld differs: (%d, %g) host vs (%d, %g)", what, (long long)k,
                              S.col[k], S.val[k], col[k], val[k]);
                    break;
                }
            free(col);
            free(val);
        }
        free(sp);
        sap__sellp_free(G.ctx, &S);
    } else if (v.format == SAP_FORMAT_CSR) {
        int32_t *rp = dl_i32(v.rowptr, n + 1), *ci = dl_i32(v.colind, A->nnz);
        double *val = dl_val(v.val, A->nnz, p);
        for (sap_int i = 0; i <= n; i++) bad |= rp[i] != A->rowptr[i];
        for (sap_int k = 0; k < A->nnz; k++) bad |= ci[k] != A->colind[k] || val[k] != rnd(A->val[k], p);
        CHECK_MSG(!bad, "%s: device CSR differs from the host CSR", what);
        free(rp);
        free(ci);
        free(val);
    }
}

static void test_matrix(const sap_csr *A0, const char *name)
{
    if (!A0) return;
    char what[160];
    sap_csr *A = NULL;
    CHECK_OK(C.ctx, sap_csr_copy(A0, &A));
    for (int pi = 0; pi < 2; pi++) {
        sap_precision p = pi ? SAP_FLOAT : SAP_DOUBLE;
        for (size_t f = 0; f < sizeof(cmp_formats) / sizeof(cmp_formats[0]); f++) {
            if (cmp_formats[f] == SAP_FORMAT_BAND && band_too_wide(A)) continue;
            sap_spmat *Mg = NULL, *Mc = NULL;
            snprintf(what, sizeof(what), "%s %lldx%lld nnz=%lld format %s", name, (long long)A->nrows,
                     (long long)A->ncols, (long long)A->nnz, sap_spmv_format_name(cmp_formats[f]));
            CHECK_OK(G.ctx, G.ops->spmat_create(G.ctx, A, cmp_formats[f], p, &Mg));
            sap_spmv_format real = Mg ? Mg->format : SAP_FORMAT_CSR;
            CHECK_OK(C.ctx, C.ops->spmat_create(C.ctx, A, real, p, &Mc));
            if (!Mg || !Mc) {
                G.ops->spmat_destroy(G.ctx, Mg);
                C.ops->spmat_destroy(C.ctx, Mc);
                continue;
            }
            CHECK(Mg->format != SAP_FORMAT_AUTO && Mg->reason && Mg->reason[0]);
            if (cmp_formats[f] != SAP_FORMAT_AUTO) CHECK(Mg->format == cmp_formats[f]);
            compare_layout(A, Mg, p, what);
            compare_spmv(A, Mg, Mc, p, what);
            /* every kernel variant */
            if (dryrun) {
            } else if (real == SAP_FORMAT_CSR)
                for (int t = 1; t <= 32; t *= 2) {
                    CHECK(sap__cuda_spmat_tune(Mg, 2, t) == SAP_OK);
                    char w2[200];
                    snprintf(w2, sizeof(w2), "%s tpr=%d", what, t);
                    compare_spmv(A, Mg, Mc, p, w2);
                }
            if (real == SAP_FORMAT_SELLP && !dryrun)
                for (int t = 1; t <= 8; t *= 2) {
                    CHECK(sap__cuda_spmat_tune(Mg, 1, t) == SAP_OK);
                    char w2[200];
                    snprintf(w2, sizeof(w2), "%s tpr=%d", what, t);
                    compare_spmv(A, Mg, Mc, p, w2);
                }
            if ((real == SAP_FORMAT_ELL || real == SAP_FORMAT_HEC) && !dryrun) {
                CHECK(sap__cuda_spmat_tune(Mg, 0, 2) == SAP_OK);
                char w2[200];
                snprintf(w2, sizeof(w2), "%s rows/thread=2", what);
                compare_spmv(A, Mg, Mc, p, w2);
            }
            /* new values, same pattern */
            for (sap_int k = 0; k < A->nnz; k++) A->val[k] = urand();
            CHECK_OK(G.ctx, G.ops->spmat_update_values(G.ctx, Mg, A));
            CHECK_OK(C.ctx, C.ops->spmat_update_values(C.ctx, Mc, A));
            snprintf(what + strlen(what), sizeof(what) - strlen(what), " (updated)");
            compare_layout(A, Mg, p, what);
            compare_spmv(A, Mg, Mc, p, what);
            G.ops->spmat_destroy(G.ctx, Mg);
            C.ops->spmat_destroy(C.ctx, Mc);
        }
    }
    sap_csr_destroy(A);
}

static void test_matrices(void)
{
    sap_context *ctx = C.ctx;
    struct {
        sap_int n, m;
        len_fn len;
        const char *name;
    } cases[] = {
        {0, 0, len_regular, "empty 0x0"},
        {1, 1, len_one, "1x1"},
        {1, 100, len_full, "one full row"},
        {1, 5000, len_full, "one long row"},
        {31, 31, len_regular, "regular"},
        {33, 33, len_empty_rows, "empty rows"},
        {50, 0, len_regular, "no columns"},
        {100, 37, len_empty_rows, "rectangular"},
        {37, 200, len_wide, "wide rows"},
        {1000, 1000, len_regular, "regular"},
        {1003, 1003, len_empty_rows, "empty rows"},
        {3001, 8000, len_long_rows, "long rows"},
        {20000, 20000, len_wide, "wide rows"},
        {100003, 100003, len_empty_rows, "empty rows"},
    };
    const int tiny = sap_test_tiny(); /* racecheck: every kernel, the large cases left out */
    for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
        if (tiny && cases[t].n > 3001) continue;
        sap_csr *A = random_csr_len(ctx, cases[t].n, cases[t].m, cases[t].len);
        test_matrix(A, cases[t].name);
        sap_csr_destroy(A);
    }
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson3d(ctx, tiny ? 9 : 23, tiny ? 7 : 17, tiny ? 5 : 11, &A));
    test_matrix(A, tiny ? "poisson3d 9x7x5" : "poisson3d 23x17x11");
    sap_csr_destroy(A);
    A = NULL;
    /* dense bands: AUTO picks BAND */
    CHECK_OK(ctx, sap_gen_banded(ctx, tiny ? 2011 : 20011, 9, 1.0, 0, 4, &A));
    test_matrix(A, tiny ? "banded 2011, K = 9" : "banded 20011, K = 9");
    sap_csr_destroy(A);
    A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 77, 40, 1.0, 0, 4, &A));
    test_matrix(A, "banded 77, K = 40 (band wider than the rows near the ends)");
    sap_csr_destroy(A);
    A = NULL;
    /* all rows empty */
    CHECK_OK(ctx, sap_csr_create(ctx, 40, 40, 0, &A));
    test_matrix(A, "all rows empty");
    sap_csr_destroy(A);
}

/* ---- statistics, pool, handles, errors ------------------------------------------------------- */

static void test_stats_and_pool(void)
{
    sap_context *ctx = G.ctx;
    const sap_int n = 12345;
    double *h = calloc((size_t)n, sizeof(double));
    sap_context_stats s0, s1;
    sap_vec v;
    CHECK_OK(ctx, G.ops->vec_create(ctx, n, SAP_DOUBLE, &v));
    sap_context_reset_transfer_stats(ctx);
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s0));
    CHECK_OK(ctx, G.ops->vec_upload(ctx, &v, h));
    CHECK_OK(ctx, G.ops->vec_download(ctx, &v, h));
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s1));
    CHECK(s1.h2d_bytes - s0.h2d_bytes == 8 * n && s1.h2d_copies - s0.h2d_copies == 1);
    CHECK(s1.d2h_bytes - s0.d2h_bytes == 8 * n && s1.d2h_copies - s0.d2h_copies == 1);
    CHECK(s1.device_bytes_in_use >= 8 * n && s1.device_bytes_peak >= s1.device_bytes_in_use);
    G.ops->vec_destroy(ctx, &v);
    /* the pool: creating and destroying the same vectors again allocates nothing */
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s0));
    for (int it = 0; it < 100; it++) {
        sap_vec a, b;
        CHECK_OK(ctx, G.ops->vec_create(ctx, n, SAP_DOUBLE, &a));
        CHECK_OK(ctx, G.ops->vec_create(ctx, n + 7, SAP_FLOAT, &b));
        double d;
        CHECK_OK(ctx, G.ops->dot(ctx, &a, &a, &d));
        G.ops->vec_destroy(ctx, &a);
        G.ops->vec_destroy(ctx, &b);
    }
    CHECK_OK(ctx, sap_context_get_stats(ctx, &s1));
    CHECK_MSG(s1.device_allocs - s0.device_allocs <= 2, "pool: %lld device allocations for 200 vectors",
              (long long)(s1.device_allocs - s0.device_allocs));
    CHECK(s1.device_bytes_in_use == s0.device_bytes_in_use);
    CHECK(sap__cuda_pool_cached(ctx) > 0);
    CHECK(sap__cuda_pool_trim(ctx) > 0);
    CHECK(sap__cuda_pool_cached(ctx) == 0);
    /* library handles: created once */
    void *h1 = NULL, *h2 = NULL;
    CHECK_OK(ctx, sap__cuda_cusparse(ctx, &h1));
    CHECK_OK(ctx, sap__cuda_cusparse(ctx, &h2));
    CHECK(h1 && h1 == h2);
    CHECK_OK(ctx, sap__cuda_cublas(ctx, &h1));
    CHECK_OK(ctx, sap__cuda_cublas(ctx, &h2));
    CHECK(h1 && h1 == h2);
    CHECK(sap__cuda_stream(ctx) != NULL);
    free(h);
}

static void test_invalid(void)
{
    sap_context *ctx = G.ctx;
    sap_vec a, b, f;
    CHECK_OK(ctx, G.ops->vec_create(ctx, 10, SAP_DOUBLE, &a));
    CHECK_OK(ctx, G.ops->vec_create(ctx, 11, SAP_DOUBLE, &b));
    CHECK_OK(ctx, G.ops->vec_create(ctx, 10, SAP_FLOAT, &f));
    double d;
    CHECK_STATUS(ctx, G.ops->dot(ctx, &a, &b, &d), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, G.ops->dot(ctx, &a, &f, &d), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, G.ops->axpby(ctx, 1.0, &a, 1.0, &b), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, G.ops->maxpy(ctx, 65, &d, &a, &a), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, G.ops->vec_create(ctx, -1, SAP_DOUBLE, &b), SAP_ERR_INVALID);
    CHECK_OK(ctx, G.ops->copy(ctx, &a, &f)); /* precision conversion is allowed in copy */
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 3, 3, &A));
    sap_spmat *M = NULL;
    CHECK_OK(ctx, G.ops->spmat_create(ctx, A, SAP_FORMAT_CSR, SAP_DOUBLE, &M));
    CHECK_STATUS(ctx, G.ops->spmv(ctx, M, 1.0, &a, 0.0, &a), SAP_ERR_INVALID);     /* 9 x 9 vs 10 */
    CHECK_STATUS(ctx, G.ops->spmat_create(ctx, A, (sap_spmv_format)17, SAP_DOUBLE, &M), SAP_ERR_INVALID);
    CHECK(M == NULL);
    G.ops->vec_destroy(ctx, &a);
    G.ops->vec_destroy(ctx, &b);
    G.ops->vec_destroy(ctx, &f);
    sap_csr_destroy(A);
    /* the context is still fine */
    CHECK_OK(ctx, G.ops->synchronize(ctx));
}

/* device_alloc hook that fails from the fail_at-th call on */
typedef struct dev_hook {
    long fail_at, count, live;
} dev_hook;

static void *hook_alloc(void *state, size_t bytes, int device)
{
    dev_hook *h = state;
    long k = h->count++;
    if (h->fail_at >= 0 && k >= h->fail_at) return NULL;
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return NULL;
    h->live++;
    return p;
}

static void hook_free(void *state, void *p, int device)
{
    dev_hook *h = state;
    if (!p) return;
    cudaFree(p);
    h->live--;
}

static void test_alloc_failures(void)
{
    dev_hook h = {-1, 0, 0};
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CUDA;
    cfg.print_level = SAP_PRINT_SILENT;
    cfg.allocator.device_alloc = hook_alloc;
    cfg.allocator.device_free = hook_free;
    cfg.allocator.state = &h;
    sap_context *ctx = NULL;
    CHECK_OK(NULL, sap_context_create(&ctx, &cfg));
    if (!ctx) return;
    CHECK(sap_context_backend(ctx) == SAP_BACKEND_CUDA);
    const long base_live = h.live;
    CHECK(base_live >= 1); /* the reduction scratch came through the hook */

    /* a vector */
    sap_vec v;
    h.count = 0;
    h.fail_at = 0;
    CHECK_STATUS(ctx, G.ops->vec_create(ctx, 1000, SAP_DOUBLE, &v), SAP_ERR_OUT_OF_MEMORY);
    CHECK(strstr(sap_context_last_error(ctx), "out of device memory") != NULL);
    CHECK(v.data == NULL);
    h.fail_at = -1;
    CHECK_OK(ctx, G.ops->vec_create(ctx, 1000, SAP_DOUBLE, &v));
    double d = -1;
    CHECK_OK(ctx, G.ops->set(ctx, &v, 1.0));
    CHECK_OK(ctx, G.ops->dot(ctx, &v, &v, &d));
    CHECK(d == 1000.0);
    G.ops->vec_destroy(ctx, &v);

    /* matrices in every format: fail at every device allocation in turn */
    sap_csr *A = random_csr_len(C.ctx, 3001, 8000, len_long_rows);
    for (size_t f = 0; f < sizeof(cmp_formats) / sizeof(cmp_formats[0]) && A; f++) {
        if (cmp_formats[f] == SAP_FORMAT_BAND && band_too_wide(A)) continue;
        int ok = 0;
        for (long fail = 0; fail < 64 && !ok; fail++) {
            sap__cuda_pool_trim(ctx);
            sap_context_stats s0, s1;
            sap_context_get_stats(ctx, &s0);
            h.count = 0;
            h.fail_at = fail;
            sap_spmat *M = NULL;
            sap_status st = G.ops->spmat_create(ctx, A, cmp_formats[f], SAP_DOUBLE, &M);
            h.fail_at = -1;
            if (st == SAP_OK) {
                ok = 1;
                CHECK(fail > 0);
                G.ops->spmat_destroy(ctx, M);
            } else {
                CHECK_MSG(st == SAP_ERR_OUT_OF_MEMORY, "format %s, failure at allocation %ld: %s (%s)",
                          sap_spmv_format_name(cmp_formats[f]), fail, sap_status_name(st), sap_context_last_error(ctx));
                CHECK(M == NULL);
            }
            sap_context_get_stats(ctx, &s1);
            CHECK_MSG(s1.device_bytes_in_use == s0.device_bytes_in_use, "format %s fail %ld: %lld device bytes leaked",
                      sap_spmv_format_name(cmp_formats[f]), fail, (long long)(s1.device_bytes_in_use - s0.device_bytes_in_use));
            sap__cuda_pool_trim(ctx);
            CHECK_MSG(h.live == base_live, "format %s fail %ld: %ld device blocks leaked", sap_spmv_format_name(cmp_formats[f]),
                      fail, h.live - base_live);
        }
        CHECK_MSG(ok, "format %s never succeeded", sap_spmv_format_name(cmp_formats[f]));
    }
    /* still usable */
    CHECK_OK(ctx, G.ops->vec_create(ctx, 77, SAP_FLOAT, &v));
    CHECK_OK(ctx, G.ops->set(ctx, &v, 2.0));
    CHECK_OK(ctx, G.ops->nrm2(ctx, &v, &d));
    CHECK(fabs(d - sqrt(4.0 * 77)) < 1e-12);
    G.ops->vec_destroy(ctx, &v);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    CHECK_MSG(h.live == 0, "%ld device blocks not given back at context destroy", h.live);

    /* context creation itself failing on the device */
    h.count = 0;
    h.fail_at = 0;
    ctx = NULL;
    CHECK_STATUS(NULL, sap_context_create(&ctx, &cfg), SAP_ERR_OUT_OF_MEMORY);
    CHECK(ctx == NULL);
    CHECK(h.live == 0);
}


/* block_relax: one block (n <= SAP_RELAX_BLOCK) has no asynchrony: the gpu equals the cpu
 * up to rounding; several blocks read their neighbours asynchronously: both converge to
 * the solution of the diagonally dominant system */
static void test_block_relax_gpu(void)
{
    static const sap_int sizes[] = {1, 200, 256, 5000, 100003};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        const sap_int n = sizes[k];
        sap_csr *A = dominant_csr(C.ctx, n, -1);
        if (!A) continue;
        double *b = malloc(sizeof(double) * (size_t)n), *x0 = malloc(sizeof(double) * (size_t)n);
        double *xg = malloc(sizeof(double) * (size_t)n), *xc = malloc(sizeof(double) * (size_t)n);
        double *r = malloc(sizeof(double) * (size_t)n);
        for (sap_int i = 0; i < n; i++) b[i] = urand(), x0[i] = urand();
        for (int prec = 0; prec < 2; prec++) {
            const sap_precision p = prec ? SAP_FLOAT : SAP_DOUBLE;
            backend *bs[2] = {&G, &C};
            double *xs[2] = {xg, xc};
            const int calls = n <= SAP_RELAX_BLOCK ? 1 : 60;
            for (int c = 0; c < 2; c++) {
                backend *be = bs[c];
                sap_spmat *M = NULL;
                CHECK_OK(be->ctx, be->ops->spmat_create(be->ctx, A, SAP_FORMAT_CSR, p, &M));
                sap_vec vb = mkvec(be, n, p, b), vx = mkvec(be, n, p, x0), vs = mkvec(be, n, p, NULL);
                for (int it = 0; it < calls; it++) CHECK_OK(be->ctx, be->ops->block_relax(be->ctx, M, 2, &vb, &vx, &vs));
                getvec(be, &vx, xs[c]);
                be->ops->vec_destroy(be->ctx, &vb);
                be->ops->vec_destroy(be->ctx, &vx);
                be->ops->vec_destroy(be->ctx, &vs);
                be->ops->spmat_destroy(be->ctx, M);
            }
            if (calls == 1) {
                const double e = rel_diff(xg, xc, xc, n);
                CHECK_MSG(e <= 10.0 * tol_of(p), "block_relax one block n = %lld %s: gpu vs cpu %.3g", (long long)n,
                          pname(p), e);
            } else {
                for (int c = 0; c < 2; c++) {
                    CHECK_OK(C.ctx, sap_csr_spmv(A, 1.0, xs[c], 0.0, r));
                    double rn = 0.0, bn = 0.0;
                    for (sap_int i = 0; i < n; i++) rn += (b[i] - r[i]) * (b[i] - r[i]), bn += b[i] * b[i];
                    CHECK_MSG(sqrt(rn / bn) <= (p == SAP_DOUBLE ? 1e-12 : 1e-5),
                              "block_relax n = %lld %s (%s): relative residual %.3g after %d calls", (long long)n,
                              pname(p), c ? "cpu" : "gpu", sqrt(rn / bn), calls);
                }
            }
        }
        free(b);
        free(x0);
        free(xg);
        free(xc);
        free(r);
        sap_csr_destroy(A);
    }
}

static int gpu_part(void)
{
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G.ctx, &dryrun);
    if (rc) return rc;
    G.ops = dryrun ? sap__backend_cpu_ops() : sap__backend_cuda_ops();
    C.ctx = sap_test_context(SAP_BACKEND_CPU);
    C.ops = sap__backend_cpu_ops();
    printf("device: %s\n", sap_context_device_name(G.ctx));
    sap__rng_seed(&rng, 20240603);

    static const sap_int sizes[] = {0, 1, 31, 33, 1000, 100003, 1000003};
    static const sap_int tiny_sizes[] = {0, 1, 31, 33, 1000, 5003}; /* racecheck: several blocks still */
    const int tiny = sap_test_tiny();
    for (size_t i = 0; i < (tiny ? sizeof(tiny_sizes) : sizeof(sizes)) / sizeof(sizes[0]); i++) {
        if (tiny) {
            test_vectors(tiny_sizes[i], SAP_DOUBLE);
            test_vectors(tiny_sizes[i], SAP_FLOAT);
            continue;
        }
        test_vectors(sizes[i], SAP_DOUBLE);
        test_vectors(sizes[i], SAP_FLOAT);
    }
    printf("vectors: %d checks, %d failures\n", sap_test_checks, sap_test_failures);
    test_matrices();
    printf("matrices: %d checks, %d failures\n", sap_test_checks, sap_test_failures);
    test_block_ops(G.ops, G.ctx, dryrun, dryrun ? "cpu (dry run)" : "cuda");
    printf("block ops: %d checks, %d failures\n", sap_test_checks, sap_test_failures);
    test_block_relax_gpu();
    printf("block_relax: %d checks, %d failures\n", sap_test_checks, sap_test_failures);
    sap__rng_seed(&rng, 4242);
    test_band_streamed(G.ctx);
    printf("band streamed: %d checks, %d failures\n", sap_test_checks, sap_test_failures);
    if (!dryrun) {
        test_stats_and_pool();
        test_invalid();
        test_alloc_failures();
    }

    sap_context_stats s;
    sap_context_get_stats(G.ctx, &s);
    printf("device bytes peak %lld, device allocations %lld, h2d %lld bytes in %lld copies, d2h %lld bytes in %lld copies\n",
           (long long)s.device_bytes_peak, (long long)s.device_allocs, (long long)s.h2d_bytes, (long long)s.h2d_copies,
           (long long)s.d2h_bytes, (long long)s.d2h_copies);
    sap_context_destroy(G.ctx);
    sap_context_destroy(C.ctx);
    return 0;
}

#endif /* SAP_HAVE_CUDA */

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_device", cpu_part, gpu_part); }
