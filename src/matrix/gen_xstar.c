/* gen_xstar.c -- manufactured solutions x* (the right-hand side is then b = A x*).
 *
 *  SAP_XSTAR_RANDOM    x_i uniform in [-1, 1), a pure function of (seed, i): the same
 *                      for any thread count;
 *  SAP_XSTAR_PARABOLA  x_i = 1 + 399 (1 - ((i - c) / c)^2), c = (n - 1) / 2: 1 at both
 *                      ends, 400 in the middle (n = 1 gives 400);
 *  SAP_XSTAR_ONES      x_i = 1. */
#include "base/base.h"

sap_status sap_gen_xstar(sap_context *ctx, sap_int n, sap_xstar kind, uint64_t seed, double *x)
{
    SAP_CHECK_CTX(ctx);
    if (n < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_xstar: n = %lld, must be >= 0", (long long)n);
    if (n > 0 && !x) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_xstar: x is NULL");
    const int nt = sap__threads(ctx);
    switch (kind) {
    case SAP_XSTAR_RANDOM: {
        const uint64_t key = sap__mix64(sap__mix64(seed) ^ 0x78737461720001ull);
        SAP_OMP_FOR(nt)
        for (sap_int i = 0; i < n; i++) {
            uint64_t h = sap__mix64(key + (uint64_t)i * 0x9E3779B97F4A7C15ull);
            x[i] = 2.0 * ((double)(h >> 11) * 0x1.0p-53) - 1.0;
        }
        return SAP_OK;
    }
    case SAP_XSTAR_PARABOLA: {
        if (n == 1) {
            x[0] = 400.0;
            return SAP_OK;
        }
        const double c = 0.5 * (double)(n - 1);
        SAP_OMP_FOR(nt)
        for (sap_int i = 0; i < n; i++) {
            double t = ((double)i - c) / c;
            x[i] = 1.0 + 399.0 * (1.0 - t * t);
        }
        return SAP_OK;
    }
    case SAP_XSTAR_ONES:
        SAP_OMP_FOR(nt)
        for (sap_int i = 0; i < n; i++) x[i] = 1.0;
        return SAP_OK;
    }
    return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_xstar: unknown kind %d (0 random, 1 parabola, 2 ones)", (int)kind);
}
