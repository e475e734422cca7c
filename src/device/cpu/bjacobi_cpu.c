/* bjacobi_cpu.c -- the cpu implementation of the batched block-Jacobi kernels
 * (device/bjacobi_kernels.h), the reference of the cuda one: OpenMP across blocks, every
 * block in a 32 x 32 double scratch, written to an fp64-sized slot, then moved down to the
 * compact storage of its precision.  The arithmetic follows the cuda kernels step by step
 * (implicit pivoting: the row with the largest |a(i, k)| among the rows not yet pivoted,
 * the first on ties; no rows are swapped) so both backends choose the same pivots and the
 * same storage precisions. */
#include "device/cpu/cpu_internal.h"
#include "device/bjacobi_kernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define MB 32

typedef struct cpu_bj {
    int32_t *blk;   /* n: block of each row */
    uint8_t *pos;   /* n: local index of each row in its block */
    uint8_t *piv;   /* n: LU pivots, block b at off[b] (local row of step k) */
    int64_t *slot;  /* nb + 1: the fp64-sized slots factor writes (F->soff at prepare) */
    unsigned char *store; /* the blocks at slot[b] during factor, at F->soff[b] after it */
    const sap_csr *A; /* the loaded values (host: the caller's matrix) */
} cpu_bj;

static void bj_release(sap_bj_fact *F)
{
    cpu_bj *d = F->dev;
    if (!d) return;
    sap__free(F->ctx, d->blk);
    sap__free(F->ctx, d->pos);
    sap__free(F->ctx, d->piv);
    sap__free(F->ctx, d->slot);
    sap__free(F->ctx, d->store);
    sap__free(F->ctx, d);
    F->dev = NULL;
}

static sap_status bj_prepare(sap_bj_fact *F, const sap_csr *A)
{
    sap_context *ctx = F->ctx;
    sap_status st = SAP_OK;
    (void)A;
    bj_release(F);
    cpu_bj *d = NULL;
    SAP_CALLOC(ctx, d, 1);
    F->dev = d;
    const sap_int n = F->n;
    SAP_ALLOC(ctx, d->blk, n > 0 ? n : 1);
    SAP_ALLOC(ctx, d->pos, n > 0 ? n : 1);
    SAP_CALLOC(ctx, d->piv, n > 0 ? n : 1);
    SAP_ALLOC(ctx, d->store, F->soff[F->nb] > 0 ? F->soff[F->nb] : 1);
    SAP_ALLOC(ctx, d->slot, F->nb + 1);
    memcpy(d->slot, F->soff, sizeof(int64_t) * (size_t)(F->nb + 1));
    for (sap_int b = 0; b < F->nb; b++)
        for (sap_int k = F->off[b]; k < F->off[b + 1]; k++) {
            d->blk[F->rows[k]] = (int32_t)b;
            d->pos[F->rows[k]] = (uint8_t)(k - F->off[b]);
        }
cleanup:
    if (st < 0) bj_release(F);
    return st;
}

static sap_status bj_load(sap_bj_fact *F, const sap_csr *A)
{
    ((cpu_bj *)F->dev)->A = A;
    return SAP_OK;
}

/* ---- one block -------------------------------------------------------------------------- */

static double norm1(int s, const double *a) /* a row-major s x s (ld MB) */
{
    double m = 0;
    for (int j = 0; j < s; j++) {
        double c = 0;
        for (int i = 0; i < s; i++) c += fabs(a[i * MB + j]);
        if (c > m) m = c;
    }
    return m;
}

/* implicit pivoting: the row not pivoted yet (bit clear in *done) with the largest
 * |a(i, k)|, the first on ties; marked done.  -1 when that pivot is not above tiny (or
 * every candidate is NaN). */
static int pick_pivot(int s, const double *a, int k, unsigned *done, double tiny)
{
    int p = -1;
    double best = -1;
    for (int i = 0; i < s; i++)
        if (!(*done >> i & 1u) && fabs(a[i * MB + k]) > best) best = fabs(a[i * MB + k]), p = i;
    if (p < 0 || !(fabs(a[p * MB + k]) > tiny)) return -1;
    *done |= 1u << p;
    return p;
}

/* implicit-pivoting Gauss-Jordan inversion in place; perm[k] = pivot row of step k.
 * Returns the first failing step + 1, or 0. */
static int gj_invert(int s, double *a, int *perm, double tiny)
{
    unsigned done = 0;
    for (int k = 0; k < s; k++) {
        const int p = pick_pivot(s, a, k, &done, tiny);
        if (p < 0) return k + 1;
        perm[k] = p;
        const double pv = a[p * MB + k];
        const double d = 1.0 / pv;
        double t[MB];
        for (int j = 0; j < s; j++) t[j] = a[p * MB + j] * d;
        for (int i = 0; i < s; i++) {
            if (i == p) continue;
            const double f = a[i * MB + k];
            for (int j = 0; j < s; j++) a[i * MB + j] = j == k ? -f * d : a[i * MB + j] - f * t[j];
        }
        for (int j = 0; j < s; j++) a[p * MB + j] = j == k ? d : t[j];
    }
    return 0;
}

/* implicit-pivoting LU in place: row p of a holds row k (perm[k] = p) of L\U of P A */
static int lu_factor(int s, double *a, int *perm, double tiny)
{
    unsigned done = 0;
    for (int k = 0; k < s; k++) {
        const int p = pick_pivot(s, a, k, &done, tiny);
        if (p < 0) return k + 1;
        perm[k] = p;
        const double pv = a[p * MB + k];
        for (int i = 0; i < s; i++) {
            if (done >> i & 1u) continue;
            const double l = a[i * MB + k] / pv;
            a[i * MB + k] = l;
            for (int j = k + 1; j < s; j++) a[i * MB + j] -= l * a[p * MB + j];
        }
    }
    return 0;
}

/* stores v[0..cnt) in the block's precision (divided by sc unless ls marks L entries:
 * lmask[i] = 1 keeps the value unscaled) */
static void store_vals(unsigned char *slot, int prec, int cnt, const double *v, const uint8_t *lmask, double sc)
{
    for (int i = 0; i < cnt; i++) {
        const double x = lmask && lmask[i] ? v[i] : v[i] / sc;
        if (prec == SAP_BJ_FP64) ((double *)slot)[i] = x;
        else if (prec == SAP_BJ_FP32) ((float *)slot)[i] = (float)x;
        else ((uint16_t *)slot)[i] = sap__half_from_double(x);
    }
}

static void load_vals(const unsigned char *slot, int prec, int cnt, double *v)
{
    for (int i = 0; i < cnt; i++)
        v[i] = prec == SAP_BJ_FP64 ? ((const double *)slot)[i]
               : prec == SAP_BJ_FP32 ? (double)((const float *)slot)[i]
                                     : sap__half_to_double(((const uint16_t *)slot)[i]);
}

/* the power of two that puts the largest magnitude m at 2^13..2^14 (1 when m = 0) */
static double range_scale(double m) { return m > 0 && isfinite(m) ? ldexp(1.0, ilogb(m) - 13) : 1.0; }

static void factor_block(const sap_bj_fact *F, const cpu_bj *d, sap_int b)
{
    const sap_csr *A = d->A;
    const sap_int o = F->off[b];
    const int s = (int)(F->off[b + 1] - o);
    double a[MB * MB], orig[MB * MB], out[MB * MB];
    uint8_t lmask[MB * MB];
    int perm[MB];
    memset(a, 0, sizeof(a));
    int nonfinite = 0;
    for (int i = 0; i < s; i++) {
        const sap_int r = F->rows[o + i];
        for (sap_int p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
            const sap_int c = A->colind[p];
            if (d->blk[c] == b) a[i * MB + d->pos[c]] = A->val[p];
            if (!isfinite(A->val[p]) && d->blk[c] == b) nonfinite = 1;
        }
    }
    memcpy(orig, a, sizeof(a));
    const double nA = norm1(s, a);
    const double tiny = (double)s * DBL_EPSILON * nA;
    int fail = nonfinite ? 1 : F->variant == SAP_BJ_GJ ? gj_invert(s, a, perm, tiny) : lu_factor(s, a, perm, tiny);
    double nInv = 0;
    memset(lmask, 0, sizeof(lmask));
    if (!fail) {
        if (F->variant == SAP_BJ_GJ) {
            /* x_k = sum_j X(perm[k], j) y_(perm[j]): inv(k, perm[j]) = X(perm[k], j), column-major */
            for (int k = 0; k < s; k++)
                for (int j = 0; j < s; j++) out[perm[j] * s + k] = a[perm[k] * MB + j];
            for (int c = 0; c < s; c++) {
                double cs = 0;
                for (int i = 0; i < s; i++) cs += fabs(out[c * s + i]);
                if (cs > nInv) nInv = cs;
            }
        } else {
            /* L\U column-major in step order; columns of the inverse for kappa_1 */
            for (int k = 0; k < s; k++)
                for (int j = 0; j < s; j++) {
                    out[j * s + k] = a[perm[k] * MB + j];
                    lmask[j * s + k] = j < k;
                }
            for (int c = 0; c < s; c++) {
                double y[MB];
                for (int k = 0; k < s; k++) {
                    double v = perm[k] == c ? 1.0 : 0.0;
                    for (int i = 0; i < k; i++) v -= out[i * s + k] * y[i];
                    y[k] = v;
                }
                double cs = 0;
                for (int k = s - 1; k >= 0; k--) {
                    double v = y[k];
                    for (int j = k + 1; j < s; j++) v -= out[j * s + k] * y[j];
                    y[k] = v / out[k * s + k];
                    cs += fabs(y[k]);
                }
                if (cs > nInv) nInv = cs;
            }
            for (int k = 0; k < s; k++) d->piv[o + k] = (uint8_t)perm[k];
        }
    }
    double kappa = fail ? INFINITY : nA * nInv;
    uint8_t info = nonfinite ? SAP_BJ_NONFINITE : fail ? SAP_BJ_SINGULAR : SAP_BJ_OK;
    if (!info && !(kappa * DBL_EPSILON < 1.0)) info = SAP_BJ_ILL;
    unsigned char *slot = d->store + d->slot[b];
    int prec = SAP_BJ_FP64;
    double sc = 1.0;
    if (info) {
        /* scalar Jacobi for this block: diag(1 / a_ii) (GJ) or U = diag(a_ii), L = 0, P = I */
        for (int i = 0; i < s * s; i++) out[i] = 0;
        for (int i = 0; i < s; i++) {
            double aii = orig[i * MB + i];
            if (aii == 0.0 || !isfinite(aii)) aii = 1.0;
            out[i * s + i] = F->variant == SAP_BJ_GJ ? 1.0 / aii : aii;
            if (F->variant == SAP_BJ_LU) d->piv[o + i] = (uint8_t)i;
        }
    } else if (F->adaptive) {
        if (kappa <= F->cond_fp16) prec = SAP_BJ_FP16;
        else if (kappa <= F->cond_fp32) prec = SAP_BJ_FP32;
        if (prec != SAP_BJ_FP64) {
            double m = 0;
            for (int i = 0; i < s * s; i++)
                if (!lmask[i] && fabs(out[i]) > m) m = fabs(out[i]);
            sc = range_scale(m);
        }
    }
    store_vals(slot, prec, s * s, out, lmask, sc);
    F->bprec[b] = (uint8_t)prec;
    F->info[b] = info;
    F->cond[b] = kappa;
    F->scale[b] = sc;
}

static sap_status bj_factor(sap_bj_fact *F)
{
    const cpu_bj *d = F->dev;
    if (!d || !d->A) return SAP_ERROR(F->ctx, SAP_ERR_INVALID, "block-Jacobi: factor before load");
#pragma omp parallel for schedule(dynamic, 64) num_threads(sap__threads(F->ctx)) if (F->nb > 256)
    for (sap_int b = 0; b < F->nb; b++) factor_block(F, d, b);
    /* the compact storage: each block moves down to its offset for its precision */
    sap__bj_compact_offsets(F);
    for (sap_int b = 0; b < F->nb; b++)
        if (F->soff[b] != d->slot[b])
            memmove(d->store + F->soff[b], d->store + d->slot[b], (size_t)(F->soff[b + 1] - F->soff[b]));
    return SAP_OK;
}

/* y += M x for a column-major s x s block M stored as T (conv: T -> double) */
#define GJ_APPLY(T, conv)                                                                                              \
    do {                                                                                                               \
        const T *m_ = (const T *)slot;                                                                                 \
        for (int j = 0; j < s; j++) {                                                                                  \
            const double xj = x[j];                                                                                    \
            for (int k = 0; k < s; k++) y[k] += conv(m_[j * s + k]) * xj;                                              \
        }                                                                                                              \
    } while (0)
#define AS_DOUBLE(v) ((double)(v))

static void apply_block(const sap_bj_fact *F, const cpu_bj *d, sap_int b, const void *r, void *z, sap_precision vp)
{
    const sap_int o = F->off[b];
    const int s = (int)(F->off[b + 1] - o);
    const unsigned char *slot = d->store + F->soff[b];
    double x[MB], y[MB];
    for (int k = 0; k < s; k++) {
        const sap_int i = F->rows[o + k];
        x[k] = vp == SAP_DOUBLE ? ((const double *)r)[i] : (double)((const float *)r)[i];
    }
    const double sc = F->scale[b];
    if (F->variant == SAP_BJ_GJ) {
        for (int k = 0; k < s; k++) y[k] = 0;
        if (F->bprec[b] == SAP_BJ_FP64) GJ_APPLY(double, AS_DOUBLE);
        else if (F->bprec[b] == SAP_BJ_FP32) GJ_APPLY(float, AS_DOUBLE);
        else GJ_APPLY(uint16_t, sap__half_to_double);
        for (int k = 0; k < s; k++) y[k] *= sc;
    } else {
        double m[MB * MB];
        load_vals(slot, F->bprec[b], s * s, m);
        const uint8_t *pv = d->piv + o;
        for (int k = 0; k < s; k++) {
            double v = x[pv[k]];
            for (int i = 0; i < k; i++) v -= m[i * s + k] * y[i];
            y[k] = v;
        }
        for (int k = s - 1; k >= 0; k--) {
            double v = y[k] / sc;
            for (int j = k + 1; j < s; j++) v -= m[j * s + k] * y[j];
            y[k] = v / m[k * s + k];
        }
    }
    for (int k = 0; k < s; k++) {
        const sap_int i = F->rows[o + k];
        if (vp == SAP_DOUBLE) ((double *)z)[i] = y[k];
        else ((float *)z)[i] = (float)y[k];
    }
}

static sap_status bj_apply(sap_bj_fact *F, const void *r, void *z, sap_precision prec)
{
    const cpu_bj *d = F->dev;
#pragma omp parallel for schedule(dynamic, 256) num_threads(sap__threads(F->ctx)) if (F->n > 32768)
    for (sap_int b = 0; b < F->nb; b++) apply_block(F, d, b, r, z, prec);
    return SAP_OK;
}

const sap_bjacobi_kernels sap__cpu_bjacobi_kernels = {
    .name = "cpu",
    .prepare = bj_prepare,
    .release = bj_release,
    .load = bj_load,
    .factor = bj_factor,
    .apply = bj_apply,
};
