/* dense_cpu.c -- the cpu implementation of the dense block kernels (device/dense_kernels.h):
 * LAPACK/BLAS (dgetrf, dgetrs, dgetri, dgemm) when the library links LAPACK, plain loops
 * otherwise; a batch (count > 1) is spread over the context's threads with OpenMP, one
 * matrix per iteration, so every matrix sees the same operations whatever the thread count
 * (results are bit-identical for every thread count). */
#include "device/cpu/cpu_internal.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef SAP_HAVE_LAPACK
/* Fortran LAPACK/BLAS (column-major, 32-bit integers, hidden character lengths last). */
extern void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
                    const int *ipiv, double *b, const int *ldb, int *info, size_t trans_len);
extern void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work, const int *lwork,
                    int *info);
#endif

/* Threads for a batch of count matrices of about flops each; *blas receives the BLAS thread
 * count to restore (0: nothing to restore). */
static int batch_threads(const sap_context *ctx, int count, double flops, int *blas)
{
    *blas = 0;
    if (count <= 1 || flops * count < 2.0e5) return 1;
    int nt = sap__threads(ctx);
    nt = nt < count ? nt : count;
    if (nt > 1) *blas = sap__blas_threads(1);
    return nt;
}

/* ---- one matrix ------------------------------------------------------------------ */

/* returns 1 when a pivot is exactly zero (the factorization still completes) */
static int getrf1(int n, double *a, int32_t *piv)
{
#ifdef SAP_HAVE_LAPACK
    int info = 0;
    dgetrf_(&n, &n, a, &n, (int *)piv, &info);
    return info > 0;
#else
    int sing = 0;
    for (int j = 0; j < n; j++) {
        int p = j;
        double m = fabs(a[j + (int64_t)j * n]);
        for (int i = j + 1; i < n; i++)
            if (fabs(a[i + (int64_t)j * n]) > m) m = fabs(a[i + (int64_t)j * n]), p = i;
        piv[j] = p + 1;
        if (p != j)
            for (int c = 0; c < n; c++) {
                double t = a[j + (int64_t)c * n];
                a[j + (int64_t)c * n] = a[p + (int64_t)c * n];
                a[p + (int64_t)c * n] = t;
            }
        double d = a[j + (int64_t)j * n];
        if (d == 0.0) {
            sing = 1;
            continue;
        }
        for (int i = j + 1; i < n; i++) a[i + (int64_t)j * n] /= d;
        for (int c = j + 1; c < n; c++) {
            double f = a[j + (int64_t)c * n];
            if (f != 0.0)
                for (int i = j + 1; i < n; i++) a[i + (int64_t)c * n] -= a[i + (int64_t)j * n] * f;
        }
    }
    return sing;
#endif
}

static void getrs1(int n, int nrhs, const double *a, const int32_t *piv, double *b, int ldb)
{
#ifdef SAP_HAVE_LAPACK
    int info = 0;
    dgetrs_("N", &n, &nrhs, a, &n, (const int *)piv, b, &ldb, &info, 1);
#else
    for (int r = 0; r < nrhs; r++) {
        double *x = b + (int64_t)r * ldb;
        for (int i = 0; i < n; i++) {
            int p = piv[i] - 1;
            if (p != i) {
                double t = x[i];
                x[i] = x[p];
                x[p] = t;
            }
        }
        for (int j = 0; j < n; j++)
            for (int i = j + 1; i < n; i++) x[i] -= a[i + (int64_t)j * n] * x[j];
        for (int j = n - 1; j >= 0; j--) {
            x[j] /= a[j + (int64_t)j * n];
            for (int i = 0; i < j; i++) x[i] -= a[i + (int64_t)j * n] * x[j];
        }
    }
#endif
}

static void gemm1(int m, int n, int kk, double alpha, const double *a, int lda, const double *b, int ldb,
                  double beta, double *c, int ldc)
{
#ifdef SAP_HAVE_LAPACK
    dgemm_("N", "N", &m, &n, &kk, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
#else
    for (int j = 0; j < n; j++) {
        double *cj = c + (int64_t)j * ldc;
        if (beta == 0.0)
            for (int i = 0; i < m; i++) cj[i] = 0.0;
        else if (beta != 1.0)
            for (int i = 0; i < m; i++) cj[i] *= beta;
        for (int l = 0; l < kk; l++) {
            double f = alpha * b[l + (int64_t)j * ldb];
            if (f == 0.0) continue;
            const double *al = a + (int64_t)l * lda;
            for (int i = 0; i < m; i++) cj[i] += al[i] * f;
        }
    }
#endif
}

/* c := A^{-1} from the factors; work holds lwork = 64 n doubles */
static void getri1(int n, const double *a, const int32_t *piv, double *c, double *work)
{
    memcpy(c, a, (size_t)n * (size_t)n * sizeof(double));
#ifdef SAP_HAVE_LAPACK
    int info = 0, lwork = 64 * n;
    dgetri_(&n, c, &n, (const int *)piv, work, &lwork, &info);
#else
    (void)work;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) c[i + (int64_t)j * n] = i == j ? 1.0 : 0.0;
    getrs1(n, n, a, piv, c, n);
#endif
}

/* ---- the table ------------------------------------------------------------------- */

static sap_status cpu_getrf(sap_context *ctx, int n, int count, double *a, int64_t sa, int32_t *piv, int64_t sp,
                            int32_t *info, int64_t si, int64_t *bad)
{
    *bad = -1;
    if (count <= 0 || n <= 0) return SAP_OK;
    int64_t first = INT64_MAX;
    int blas, nt = batch_threads(ctx, count, 0.67 * (double)n * n * n, &blas);
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (int b = 0; b < count; b++) {
        int z = getrf1(n, a + b * sa, piv + b * sp);
        if (info) info[b * si] = z;
        if (z && !info) {
            SAP_OMP("omp critical(sap_dense_bad)")
            if (b < first) first = b;
        }
    }
    if (first != INT64_MAX) *bad = first;
    sap__blas_threads_restore(blas);
    return SAP_OK;
}

static sap_status cpu_get_ints(sap_context *ctx, const int32_t *src, int64_t count, int32_t *host)
{
    (void)ctx;
    if (count > 0) memmove(host, src, (size_t)count * sizeof *host);
    return SAP_OK;
}

static sap_status cpu_getrs(sap_context *ctx, int n, int nrhs, int count, const double *a, int64_t sa,
                            const int32_t *piv, int64_t sp, double *b, int ldb, int64_t sb)
{
    if (count <= 0 || n <= 0 || nrhs <= 0) return SAP_OK;
    int blas, nt = batch_threads(ctx, count, 2.0 * n * n * nrhs, &blas);
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (int i = 0; i < count; i++) getrs1(n, nrhs, a + i * sa, piv + i * sp, b + i * sb, ldb);
    sap__blas_threads_restore(blas);
    return SAP_OK;
}

static sap_status cpu_getri(sap_context *ctx, int n, int count, const double *a, int64_t sa, const int32_t *piv,
                            int64_t sp, double *c, int64_t sc)
{
    if (count <= 0 || n <= 0) return SAP_OK;
    int blas, nt = batch_threads(ctx, count, 1.33 * (double)n * n * n, &blas);
    double *work = sap__alloc(ctx, (size_t)nt * 64 * (size_t)n, sizeof(double), false, __FILE__, __LINE__);
    if (!work) {
        sap__blas_threads_restore(blas);
        return SAP_ERROR(ctx, sap__alloc_failure((size_t)nt * 64 * (size_t)n, 8), "getri: out of memory");
    }
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (int i = 0; i < count; i++) {
#ifdef _OPENMP
        int t = omp_get_thread_num();
#else
        int t = 0;
#endif
        getri1(n, a + i * sa, piv + i * sp, c + i * sc, work + (size_t)t * 64 * (size_t)n);
    }
    sap__free(ctx, work);
    sap__blas_threads_restore(blas);
    return SAP_OK;
}

static sap_status cpu_gemm(sap_context *ctx, int m, int n, int kk, double alpha, const double *a, int lda,
                           int64_t sa, const double *b, int ldb, int64_t sb, double beta, double *c, int ldc,
                           int64_t sc, int count)
{
    if (count <= 0 || m <= 0 || n <= 0) return SAP_OK;
    int blas, nt = batch_threads(ctx, count, 2.0 * m * n * (kk > 0 ? kk : 1), &blas);
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (int i = 0; i < count; i++) gemm1(m, n, kk, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
    sap__blas_threads_restore(blas);
    return SAP_OK;
}

static sap_status cpu_lacpy(sap_context *ctx, int m, int n, int count, const double *a, int lda, int64_t sa,
                            double *b, int ldb, int64_t sb)
{
    if (count <= 0 || m <= 0 || n <= 0) return SAP_OK;
    int blas, nt = batch_threads(ctx, count, (double)m * n, &blas);
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (int i = 0; i < count; i++)
        for (int j = 0; j < n; j++)
            memcpy(b + i * sb + (int64_t)j * ldb, a + i * sa + (int64_t)j * lda, (size_t)m * sizeof(double));
    sap__blas_threads_restore(blas);
    return SAP_OK;
}

static sap_status cpu_zero(sap_context *ctx, int m, int n, int count, double *a, int lda, int64_t sa)
{
    if (count <= 0 || m <= 0 || n <= 0) return SAP_OK;
    int blas, nt = batch_threads(ctx, count, (double)m * n, &blas);
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (int i = 0; i < count; i++)
        for (int j = 0; j < n; j++) memset(a + i * sa + (int64_t)j * lda, 0, (size_t)m * sizeof(double));
    sap__blas_threads_restore(blas);
    return SAP_OK;
}

const sap_dense_kernels sap__cpu_dense_kernels = {
    .name = "cpu",
    .getrf = cpu_getrf,
    .get_ints = cpu_get_ints,
    .getrs = cpu_getrs,
    .getri = cpu_getri,
    .gemm = cpu_gemm,
    .lacpy = cpu_lacpy,
    .zero = cpu_zero,
};
