/* gen_radiative.c -- exponential integrals E_n(x) and the Galerkin matrix of the
 * radiative-transfer integral operator of stellar atmospheres
 *
 *     (T phi)(t) = albedo/2 * int_0^tau E1(|t - s|) phi(s) ds,   t in [0, tau],
 *
 * discretized with n piecewise-constant elements of width h = tau / n:
 *
 *     A_ij = albedo / (2 h) * G(|i - j|),
 *     G(m) = int_0^h int_0^h E1(|m h + s - t|) ds dt.
 *
 * From d/dx E_k = -E_{k-1}, E2(0) = 1 and E3(0) = 1/2 the double integrals are exact:
 *
 *     G(0) = 2 (h - 1/2 + E3(h)),
 *     G(m) = E3((m-1) h) - 2 E3(m h) + E3((m+1) h),   m >= 1.
 *
 * For h > 1 these closed forms are used as they stand (the second difference loses at
 * most a small constant factor).  For h <= 1 they cancel badly (G(m) ~ h^2 E1(m h) while
 * the E3 values are O(1)), so:
 *  - m = 0, 1 use R3(x) = E3(x) - 1/2 + x, summed from its power series without the
 *    constant and linear terms: G(0) = 2 R3(h), G(1) = R3(2h) - 2 R3(h);
 *  - m >= 2 integrate G(m) = int_0^h (h - u) [E1(m h + u) + E1(m h - u)] du with
 *    16-point Gauss-Legendre: the integrand is smooth there (E1's logarithmic singularity
 *    at 0 lies at least 3 half-widths from the interval's centre), so the rule is
 *    accurate to rounding and all its terms are positive. */
#include "base/base.h"

#include <float.h>
#include <math.h>

#define EULER_GAMMA 0.57721566490153286060651209008240243
#define GEN_PI 3.14159265358979323846264338327950288

/* ---- exponential integrals ---------------------------------------------------------------- */

/* E_n(x) for n >= 1, 0 < x <= 1: the power series
 * E_n(x) = (-x)^(n-1)/(n-1)! (psi(n) - ln x) - sum_{k >= 0, k != n-1} (-x)^k / ((k - n + 1) k!). */
static double expint_series(int n, double x)
{
    int nm1 = n - 1;
    double ans = nm1 != 0 ? 1.0 / nm1 : -log(x) - EULER_GAMMA;
    double fact = 1.0;
    for (int k = 1; k < 10000; k++) {
        fact *= -x / k; /* (-x)^k / k! */
        double del;
        if (k != nm1) {
            del = -fact / (k - nm1);
        } else {
            double psi = -EULER_GAMMA;
            for (int m = 1; m <= nm1; m++) psi += 1.0 / m;
            del = fact * (psi - log(x));
        }
        ans += del;
        if (k >= nm1 && fabs(del) <= fabs(ans) * (0.25 * DBL_EPSILON)) break;
    }
    return ans;
}

/* E_n(x) for n >= 1, x > 1: the continued fraction
 * E_n(x) = e^-x / (x+n - 1 n/(x+n+2 - 2 (n+1)/(x+n+4 - ...))).  Modified Lentz finds how
 * many terms converge; the fraction is then summed backward from that depth, which
 * rounds far less than Lentz's running product where many terms are needed (x near 1). */
static double expint_cf(int n, double x)
{
    const double tiny = 1e-300;
    double b = x + n, c = 1.0 / tiny, d = 1.0 / b;
    int depth = 1;
    for (; depth < 100000; depth++) {
        double a = -(double)depth * ((double)n - 1.0 + depth);
        b += 2.0;
        d = a * d + b;
        if (fabs(d) < tiny) d = tiny;
        c = b + a / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        if (fabs(c * d - 1.0) <= DBL_EPSILON) break;
    }
    depth += depth / 4 + 8; /* a margin over what Lentz needed */
    double t = 0.0;
    for (int i = depth; i >= 1; i--) t = -(double)i * ((double)n - 1.0 + i) / (x + n + 2.0 * i + t);
    return exp(-x) / (x + n + t);
}

double sap_expint(int n, double x)
{
    if (n < 0 || isnan(x) || x < 0.0) return NAN;
    if (isinf(x)) return 0.0;
    if (n == 0) return x == 0.0 ? INFINITY : exp(-x) / x;
    if (x == 0.0) return n == 1 ? INFINITY : 1.0 / (n - 1);
    return x > 1.0 ? expint_cf(n, x) : expint_series(n, x);
}

/* R3(x) = E3(x) - 1/2 + x for 0 <= x <= 2, without cancellation:
 * R3(x) = x^2/2 (3/2 - gamma - ln x) - sum_{k >= 3} (-x)^k / ((k - 2) k!). */
static double e3_remainder(double x)
{
    if (x == 0.0) return 0.0;
    double r = 0.5 * x * x * (1.5 - EULER_GAMMA - log(x));
    double fact = 0.5 * x * x; /* (-x)^2 / 2! */
    for (int k = 3; k < 200; k++) {
        fact *= -x / k;
        double del = -fact / (k - 2);
        r += del;
        if (fabs(del) <= fabs(r) * (0.25 * DBL_EPSILON)) break;
    }
    return r;
}

/* ---- the Galerkin entries --------------------------------------------------------------------- */

#define GL_POINTS 16

/* Nodes and weights of the GL_POINTS-point Gauss-Legendre rule on [-1, 1] (Newton on the
 * Legendre recurrence). */
static void gauss_legendre(double *x, double *w)
{
    const int n = GL_POINTS;
    for (int i = 0; i < (n + 1) / 2; i++) {
        double z = cos(GEN_PI * (i + 0.75) / (n + 0.5)), dp = 1.0;
        for (int it = 0; it < 100; it++) {
            double p1 = 1.0, p0 = 0.0;
            for (int j = 1; j <= n; j++) {
                double pm = p0;
                p0 = p1;
                p1 = ((2.0 * j - 1.0) * z * p0 - (j - 1.0) * pm) / j;
            }
            dp = n * (z * p1 - p0) / (z * z - 1.0);
            double dz = p1 / dp;
            z -= dz;
            if (fabs(dz) <= 1e-17) break;
        }
        x[i] = -z;
        x[n - 1 - i] = z;
        w[i] = w[n - 1 - i] = 2.0 / ((1.0 - z * z) * dp * dp);
    }
}

/* G(m) = int_0^h int_0^h E1(|m h + s - t|) ds dt (see the top of the file). */
static double galerkin_g(sap_int m, double h, const double *gx, const double *gw)
{
    if (h > 1.0) {
        if (m == 0) return 2.0 * (h - 0.5 + sap_expint(3, h));
        double x = (double)m * h;
        return sap_expint(3, x - h) - 2.0 * sap_expint(3, x) + sap_expint(3, x + h);
    }
    if (m == 0) return 2.0 * e3_remainder(h);
    if (m == 1) return e3_remainder(2.0 * h) - 2.0 * e3_remainder(h);
    double x = (double)m * h, s = 0.0;
    for (int k = 0; k < GL_POINTS; k++) {
        double u = 0.5 * h * (1.0 + gx[k]);
        s += gw[k] * (h - u) * (sap_expint(1, x + u) + sap_expint(1, x - u));
    }
    return 0.5 * h * s;
}

sap_status sap_gen_radiative(sap_context *ctx, sap_int n, double albedo, double tau, sap_int bw, double shift,
                             sap_csr **out)
{
    SAP_CHECK_CTX(ctx);
    const char *fn = "sap_gen_radiative";
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: output pointer A is NULL", fn);
    *out = NULL;
    if (n < 1) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: n = %lld, must be >= 1", fn, (long long)n);
    if (!isfinite(albedo)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: albedo = %g, must be finite", fn, albedo);
    if (!isfinite(tau) || !(tau > 0.0))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: tau = %g, must be finite and > 0", fn, tau);
    if (!isfinite(shift)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: shift = %g, must be finite", fn, shift);
    double h = tau / (double)n;
    if (!(h > 0.0) || !isfinite(albedo / (2.0 * h)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: element width tau / n = %g is too small", fn, h);
    if (n > SAP_NNZ_MAX) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%s: n = %lld is too large", fn, (long long)n);

    if (bw < 0) {
        /* the paper's bandwidth: n (1 - exp(-n / (tc tau))), tc = max(n / 100, 5) */
        double dn = (double)n, tc = fmax(dn / 100.0, 5.0);
        double b = floor(dn * -expm1(-dn / (tc * tau)));
        bw = b >= (double)(n - 1) ? n - 1 : (b > 0.0 ? (sap_int)b : 0);
    }
    if (bw > n - 1) bw = n - 1;
    if (sap__mul_overflows(n, 2 * bw + 1, SAP_NNZ_MAX))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%s: n = %lld with bw = %lld has too many entries", fn,
                         (long long)n, (long long)bw);
    {
        sap_status sm = sap__mem_check(ctx, fn, 16.0 * (double)n * (double)(2 * bw + 1) + 8.0 * (double)n);
        if (sm < 0) return sm;
    }

    sap_status st = SAP_OK;
    double *coef = NULL;
    sap_csr *A = NULL;
    double gx[GL_POINTS], gw[GL_POINTS];
    gauss_legendre(gx, gw);
    const double scale = albedo / (2.0 * h);
    const int nt = sap__threads(ctx);
    /* entries that underflow to 0 are dropped: G decreases with m, so the band ends before
     * the first zero coefficient, found by bisection here so that the matrix is allocated
     * (and a size beyond the memory fails) before the O(bw) coefficient work */
    if (bw >= 1 && scale * galerkin_g(bw, h, gx, gw) == 0.0) {
        sap_int lo = 0, hi = bw; /* coefficients 1..lo are nonzero, coefficient hi is 0 */
        while (hi - lo > 1) {
            sap_int mid = lo + (hi - lo) / 2;
            if (scale * galerkin_g(mid, h, gx, gw) == 0.0) hi = mid;
            else lo = mid;
        }
        bw = hi - 1;
    }

    sap_int nnz = n + 2 * (bw * n - bw * (bw + 1) / 2);
    SAP_TRY(sap_csr_create(ctx, n, n, nnz, &A));
    SAP_ALLOC(ctx, coef, bw + 1);
    SAP_OMP_FOR_DYNAMIC(nt, 64)
    for (sap_int m = 0; m <= bw; m++) coef[m] = scale * galerkin_g(m, h, gx, gw);
    coef[0] -= shift;
    for (sap_int i = 0; i < n; i++) {
        sap_int lo = i - bw > 0 ? i - bw : 0, hi = i + bw < n - 1 ? i + bw : n - 1;
        A->rowptr[i + 1] = A->rowptr[i] + (hi - lo + 1);
    }
    sap_int *colind = A->colind;
    double *val = A->val;
    const sap_int *rowptr = A->rowptr;
    SAP_OMP_FOR(nt)
    for (sap_int i = 0; i < n; i++) {
        sap_int lo = i - bw > 0 ? i - bw : 0, hi = i + bw < n - 1 ? i + bw : n - 1;
        sap_int p = rowptr[i];
        for (sap_int j = lo; j <= hi; j++, p++) {
            colind[p] = j;
            val[p] = coef[j < i ? i - j : j - i];
        }
    }
    *out = A;
    A = NULL;
cleanup:
    sap_csr_destroy(A);
    sap__free(ctx, coef);
    return st;
}
