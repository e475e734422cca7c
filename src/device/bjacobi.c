/* bjacobi.c -- backend-independent helpers of the batched block-Jacobi kernels
 * (device/bjacobi_kernels.h): the software binary16 conversion of the cpu reference and
 * the bytes floor of an apply, the compact storage offsets. */
#include "device/device.h"

#include <math.h>
#include <string.h>

uint16_t sap__half_from_double(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof(u));
    const uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    const uint64_t a = u & 0x7fffffffffffffffull;
    if (a >= 0x7ff0000000000000ull) return sign | (a > 0x7ff0000000000000ull ? 0x7e00u : 0x7c00u);
    const int e = (int)(a >> 52) - 1023;
    if (e < -25) return sign; /* below half the smallest subnormal: 0 */
    if (e > 15) return sign | 0x7c00u;
    /* the significand with its implicit bit (a subnormal double is far below e = -25) */
    const uint64_t m = (a & 0x000fffffffffffffull) | 0x0010000000000000ull;
    /* normal half: 11 significant bits kept (shift 42); subnormal: units of 2^-24 */
    const int shift = e >= -14 ? 42 : 28 - e;
    uint64_t q = m >> shift;
    const uint64_t rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    /* normal: exponent field + (q - implicit bit); a carry into the exponent is right,
     * up to 0x7c00 (Inf).  subnormal: q itself (0x400 after rounding up is the smallest
     * normal) */
    const uint32_t bits = e >= -14 ? ((uint32_t)(e + 15) << 10) + (uint32_t)(q - 0x400) : (uint32_t)q;
    return (uint16_t)(sign | (bits >= 0x7c00u ? 0x7c00u : bits));
}

double sap__half_to_double(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
    if (em < 0x0400u) { /* zero and subnormals: em units of 2^-24 */
        const double v = (double)em * 0x1p-24;
        return sign ? -v : v;
    }
    /* normal, Inf, NaN: rebias the exponent (127 - 15 = 112) into a binary32 */
    const uint32_t bits = em >= 0x7c00u ? sign | 0x7f800000u | ((em & 0x3ffu) << 13) : sign | ((em + 0x1c000u) << 13);
    float f;
    memcpy(&f, &bits, sizeof(f));
    return (double)f;
}

double sap__bj_apply_bytes(const sap_bj_fact *F, size_t elem)
{
    double bytes = 2.0 * (double)F->n * (double)elem;
    for (sap_int b = 0; b < F->nb; b++) {
        const double s = (double)(F->off[b + 1] - F->off[b]);
        const double eb = F->bprec[b] == SAP_BJ_FP16 ? 2 : F->bprec[b] == SAP_BJ_FP32 ? 4 : 8;
        bytes += s * s * eb;
    }
    return bytes;
}

int64_t sap__bj_slot_bytes(int64_t s, int prec)
{
    const int64_t eb = prec == SAP_BJ_FP16 ? 2 : prec == SAP_BJ_FP32 ? 4 : 8;
    return (s * s * eb + 15) / 16 * 16;
}

void sap__bj_compact_offsets(sap_bj_fact *F)
{
    F->soff[0] = 0;
    for (sap_int b = 0; b < F->nb; b++)
        F->soff[b + 1] = F->soff[b] + sap__bj_slot_bytes(F->off[b + 1] - F->off[b], F->bprec[b]);
}

sap_status sap__bj_init(sap_context *ctx, sap_bj_fact *F, const sap_csr *A, sap_int nb, const sap_int *rows,
                        const sap_int *off)
{
    sap_status st = SAP_OK;
    const sap_bjacobi_kernels *kt = sap__ops(ctx)->bjacobi;
    if (!kt)
        return SAP_ERROR(ctx, SAP_ERR_NOT_COMPILED, "block-Jacobi: the %s backend has no block-Jacobi kernels",
                         sap__ops(ctx)->name);
    F->ctx = ctx;
    F->kt = NULL;
    F->n = A->nrows;
    F->nb = nb;
    F->rows = rows;
    F->off = off;
    F->maxb = 0;
    SAP_ALLOC(ctx, F->soff, nb + 1);
    SAP_CALLOC(ctx, F->bprec, nb > 0 ? nb : 1);
    SAP_CALLOC(ctx, F->info, nb > 0 ? nb : 1);
    SAP_CALLOC(ctx, F->cond, nb > 0 ? nb : 1);
    SAP_CALLOC(ctx, F->scale, nb > 0 ? nb : 1);
    for (sap_int b = 0; b < nb; b++)
        if (off[b + 1] - off[b] > F->maxb) F->maxb = (int)(off[b + 1] - off[b]);
    sap__bj_compact_offsets(F); /* bprec all SAP_BJ_FP64 (0): the fp64 slots */
    SAP_TRY(kt->prepare(F, A));
    F->kt = kt;
cleanup:
    if (st < 0) sap__bj_fini(F);
    return st;
}

void sap__bj_fini(sap_bj_fact *F)
{
    if (!F->ctx) return;
    if (F->kt) F->kt->release(F);
    F->kt = NULL;
    sap__free(F->ctx, F->soff);
    sap__free(F->ctx, F->bprec);
    sap__free(F->ctx, F->info);
    sap__free(F->ctx, F->cond);
    sap__free(F->ctx, F->scale);
    F->soff = NULL;
    F->bprec = F->info = NULL;
    F->cond = F->scale = NULL;
}
