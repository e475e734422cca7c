/* cpu_blas_t.h -- template: the BLAS-1 kernels of the cpu backend for one precision.
 * cpu_blas.c includes it twice, with S = d, REAL = double and S = s, REAL = float.
 * Updates compute in REAL; reductions accumulate in double over fixed chunks (see
 * cpu_internal.h), so they are bit-identical for every thread count.  A zero coefficient
 * b (axpby) or c (axpbypcz) means the output is not read (NaN-safe, as in the BLAS). */

#include "device/cpu/cpu_template.h"

static inline sap_int FN(imin)(sap_int a, sap_int b) { return a < b ? a : b; }

static inline double FN(chunk_dot)(const REAL *restrict x, const REAL *restrict y, sap_int n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    sap_int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (double)x[i] * (double)y[i];
        s1 += (double)x[i + 1] * (double)y[i + 1];
        s2 += (double)x[i + 2] * (double)y[i + 2];
        s3 += (double)x[i + 3] * (double)y[i + 3];
    }
    for (; i < n; i++) s0 += (double)x[i] * (double)y[i];
    return (s0 + s1) + (s2 + s3);
}

void FN(sap__cpu_set)(sap_context *ctx, sap_int n, REAL *x, double a)
{
    const REAL v = (REAL)a;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
    for (sap_int i = 0; i < n; i++) x[i] = v;
}

void FN(sap__cpu_scale)(sap_context *ctx, sap_int n, REAL *x, double a)
{
    const REAL v = (REAL)a;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
    for (sap_int i = 0; i < n; i++) x[i] *= v;
}

void FN(sap__cpu_axpby)(sap_context *ctx, sap_int n, double a, const REAL *restrict x, double b, REAL *restrict y)
{
    const REAL aa = (REAL)a, bb = (REAL)b;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    if (b == 0.0) {
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) y[i] = aa * x[i];
    } else if (b == 1.0) {
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) y[i] += aa * x[i];
    } else {
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) y[i] = aa * x[i] + bb * y[i];
    }
}

void FN(sap__cpu_axpbypcz)(sap_context *ctx, sap_int n, double a, const REAL *x, double b, const REAL *y, double c,
                           REAL *z)
{
    const REAL aa = (REAL)a, bb = (REAL)b, cc = (REAL)c;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    if (c == 0.0) {
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) z[i] = aa * x[i] + bb * y[i];
    } else {
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) z[i] = aa * x[i] + bb * y[i] + cc * z[i];
    }
}

void FN(sap__cpu_pmult)(sap_context *ctx, sap_int n, const REAL *x, const REAL *y, REAL *z)
{
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
    for (sap_int i = 0; i < n; i++) z[i] = x[i] * y[i];
}

/* y += sum_i a[i] x[i]: chunk by chunk (the chunk of y stays in cache), four vectors
 * at a time. */
void FN(sap__cpu_maxpy)(sap_context *ctx, sap_int n, int k, const double *a, const REAL *const *x, REAL *y)
{
    const sap_int chunk = SAP_CPU_CHUNK_MIN;
    const sap_int nch = (n + chunk - 1) / chunk;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int c = 0; c < nch; c++) {
        const sap_int i0 = c * chunk, i1 = FN(imin)(n, i0 + chunk);
        int j = 0;
        for (; j + 4 <= k; j += 4) {
            const REAL a0 = (REAL)a[j], a1 = (REAL)a[j + 1], a2 = (REAL)a[j + 2], a3 = (REAL)a[j + 3];
            const REAL *x0 = x[j], *x1 = x[j + 1], *x2 = x[j + 2], *x3 = x[j + 3];
            for (sap_int i = i0; i < i1; i++) y[i] += a0 * x0[i] + a1 * x1[i] + a2 * x2[i] + a3 * x3[i];
        }
        for (; j < k; j++) {
            const REAL aj = (REAL)a[j];
            const REAL *xj = x[j];
            for (sap_int i = i0; i < i1; i++) y[i] += aj * xj[i];
        }
    }
}

/* r[i] = x[i] . y, one pass over y (chunk by chunk). */
void FN(sap__cpu_mdot)(sap_context *ctx, sap_int n, int k, const REAL *const *x, const REAL *y, double *r)
{
    double part[SAP_CPU_PARTIALS];
    const sap_int chunk = sap__cpu_chunk(n, k);
    const sap_int nch = (n + chunk - 1) / chunk;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int c = 0; c < nch; c++) {
        const sap_int i0 = c * chunk, len = FN(imin)(n, i0 + chunk) - i0;
        for (int j = 0; j < k; j++) part[c * k + j] = FN(chunk_dot)(x[j] + i0, y + i0, len);
    }
    for (int j = 0; j < k; j++) {
        double s = 0.0;
        for (sap_int c = 0; c < nch; c++) s += part[c * k + j];
        r[j] = s;
    }
}

double FN(sap__cpu_axpby_nrm2)(sap_context *ctx, sap_int n, double a, const REAL *restrict x, double b,
                               REAL *restrict y)
{
    double part[SAP_CPU_PARTIALS];
    const REAL aa = (REAL)a, bb = (REAL)b;
    const sap_int chunk = sap__cpu_chunk(n, 1);
    const sap_int nch = (n + chunk - 1) / chunk;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int c = 0; c < nch; c++) {
        const sap_int i0 = c * chunk, i1 = FN(imin)(n, i0 + chunk);
        if (b == 0.0)
            for (sap_int i = i0; i < i1; i++) y[i] = aa * x[i];
        else
            for (sap_int i = i0; i < i1; i++) y[i] = aa * x[i] + bb * y[i];
        part[c] = FN(chunk_dot)(y + i0, y + i0, i1 - i0);
    }
    double s = 0.0;
    for (sap_int c = 0; c < nch; c++) s += part[c];
    return sqrt(s);
}

double FN(sap__cpu_cg_update)(sap_context *ctx, sap_int n, double alpha, const REAL *restrict p, const REAL *restrict q,
                              REAL *restrict x, REAL *restrict r)
{
    double part[SAP_CPU_PARTIALS];
    const REAL al = (REAL)alpha;
    const sap_int chunk = sap__cpu_chunk(n, 1);
    const sap_int nch = (n + chunk - 1) / chunk;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int c = 0; c < nch; c++) {
        const sap_int i0 = c * chunk, i1 = FN(imin)(n, i0 + chunk);
        for (sap_int i = i0; i < i1; i++) {
            x[i] += al * p[i];
            r[i] -= al * q[i];
        }
        part[c] = FN(chunk_dot)(r + i0, r + i0, i1 - i0);
    }
    double s = 0.0;
    for (sap_int c = 0; c < nch; c++) s += part[c];
    return s;
}

#include "device/cpu/cpu_template_end.h"
