/* solver_plan.c -- the sparse solver's plan: the memory limit, the bytes and flops of each
 * method (the cost and work rules), the half-bandwidth / partitions / precision of an
 * attempt (narrowed by drop-off until it fits), the automatic drop-off of setup and the
 * method chain (which method first, which fallbacks after it). */
#include "reorder/reorder_internal.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SV_DROP_DELTA 0.999999 /* automatic drop-off: keep 1 - 1e-6 of ||A||_F^2 ... */
#define SV_DROP_GAIN 2         /* ... when that divides K by at least this */
#define SV_DIRECT_WORK 4.0e9   /* on the host, a banded LU with pivoting of at most this
                                  many flops (4 N K^2; tens of ms on a multicore host) is
                                  the first method: a direct solve beats SaP + Krylov
                                  there and is the most robust (bench/results/suite.md) */
/* The factorization work an automatic drop-off may spend: about a minute of the host's
 * cores, or of a GPU's, for one factorization; beyond it a narrower band (a weaker
 * preconditioner, more Krylov iterations) is the better trade (e.g. 3D meshes, where CM
 * leaves K ~ N^(2/3)). */
#define SV_WORK_CPU 2.0e11
#define SV_WORK_GPU 5.0e12

/* Bytes an attempt needs on its backend (device for cuda, host for cpu): band and
 * factors, SaP-C coupling/spike/reduced blocks and UL windows, the Krylov matrix and
 * vectors; on the cpu the double band that is built before the conversion too. */
int64_t sap__solver_estimate(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec)
{
    const double n = (double)S->A->nrows, nnz = (double)S->A->nnz;
    const double es = prec == SAP_FLOAT ? 4.0 : 8.0;
    const double band = n * (2.0 * (double)K + 1.0);
    const double krylov = nnz * 12.0 + n * 8.0 + 12.0 * n * 8.0;
    double b = 0;
    switch (m) {
    case SAP_METHOD_SAPD:
    case SAP_METHOD_BAND_LU:
    case SAP_METHOD_AUTO: b = band * es + krylov; break;
    case SAP_METHOD_SAPC:
        b = band * es +
            (double)(P > 1 ? P - 1 : 0) * (5.0 * (double)K * (double)K + (2.0 * (double)K + 1.0) * 4.0 * (double)K) * es +
            n * es + krylov;
        break;
    case SAP_METHOD_BAND_PIVOT: return sap__bp_bytes(S->A->nrows, K) + (int64_t)(4 * n * 8);
    case SAP_METHOD_JACOBI: b = n * 8.0 + krylov; break;
    }
    if (!sap__solver_on_cuda(S->x) && m != SAP_METHOD_JACOBI) b += band * 8.0;
    return b > 9.0e18 ? INT64_MAX : (int64_t)b;
}

void sap__solver_set_memory_limit(sap_solver *S)
{
    if (S->opt.memory_limit > 0) {
        S->mem_limit = S->opt.memory_limit;
        snprintf(S->mem_why, sizeof(S->mem_why), "given");
        return;
    }
    size_t f = 0, t = 0;
    sap__try_begin(S->x);
    sap_status st = sap__ops(S->x)->mem_info(S->x, &f, &t);
    sap__try_end(S->x);
    if (st == SAP_OK && f > 0) {
        S->mem_limit = (int64_t)(0.9 * (double)f);
        snprintf(S->mem_why, sizeof(S->mem_why), "90%% of %s memory",
                 sap__solver_on_cuda(S->x) ? "free device" : "available host");
        return;
    }
    sap_context_clear_error(S->x);
    S->mem_limit = INT64_MAX;
    snprintf(S->mem_why, sizeof(S->mem_why), "unknown memory size");
}

/* Flops of the band factorization (LU of N x N with half-bandwidth K: 2 N K^2; LAPACK's
 * pivoting band has kl + ku = 2K above the diagonal: 4 N K^2). */
static double band_work(const sap_solver *S, sap_solver_method m, sap_int K)
{
    const double n = (double)S->A->nrows, k = (double)K;
    return (m == SAP_METHOD_BAND_PIVOT ? 4.0 : 2.0) * n * k * k;
}

static int fits(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec, double wlimit)
{
    return sap__solver_estimate(S, m, P, K, prec) <= S->mem_limit && band_work(S, m, K) <= wlimit;
}

/* The half-bandwidth an attempt starts from, before the memory check. */
static sap_int preferred_K(sap_solver *S, sap_solver_method m, double *kept, sap_status *st)
{
    *st = SAP_OK;
    *kept = 1.0;
    if (m == SAP_METHOD_JACOBI) return 0;
    const double dd = S->opt.drop_delta;
    if (dd >= 0 && dd < 1) {
        sap_int K = 0;
        *st = sap_drop_off(S->R->A, dd, &K, kept);
        return K;
    }
    if (m == SAP_METHOD_SAPD || m == SAP_METHOD_SAPC) {
        *kept = S->kept_auto;
        return S->K_auto;
    }
    return S->K_cm;
}

/* Narrows K (drop-off of the entries beyond it: the largest K that fits, found by
 * bisection, since memory and work grow with K) until the attempt fits the memory limit
 * and, for an automatic band, the work limit. */
static sap_status fit_memory(sap_solver *S, sap_solver_method m, sap_int P, sap_precision prec, sap_int *K,
                             double *kept, int *worth, char *note, size_t nl)
{
    /* the work limit only narrows an automatic band (a drop_delta given is respected) */
    const double wlimit = S->opt.drop_delta >= 0 ? INFINITY : sap__solver_on_cuda(S->x) ? SV_WORK_GPU : SV_WORK_CPU;
    if (fits(S, m, P, *K, prec, wlimit)) return SAP_OK;
    const int for_memory = sap__solver_estimate(S, m, P, *K, prec) > S->mem_limit;
    const sap_int K0 = *K;
    if (!fits(S, m, P, 0, prec, wlimit)) {
        snprintf(note, nl, "%.3g GB > limit %.3g GB even at K = 0",
                 (double)sap__solver_estimate(S, m, P, 0, prec) / 1e9, (double)S->mem_limit / 1e9);
        return SAP_ERROR(S->ctx, SAP_ERR_OUT_OF_MEMORY, "sap_solver %s: %s", sap_solver_method_name(m), note);
    }
    sap_int lo = 0, hi = K0; /* fits(lo), !fits(hi) */
    while (hi - lo > 1) {
        sap_int mid = lo + (hi - lo) / 2;
        if (fits(S, m, P, mid, prec, wlimit)) lo = mid;
        else hi = mid;
    }
    *K = lo;
    sap_status st = sap__drop_kept_fraction(S->R->A, lo, kept);
    if (st < 0) return st;
    if (for_memory)
        snprintf(note, nl, "narrowed K %lld->%lld (keeps %.4g of ||A||F^2) to fit %.3g MB", (long long)K0,
                 (long long)lo, *kept, (double)S->mem_limit / 1e6);
    else
        snprintf(note, nl, "narrowed K %lld->%lld (keeps %.4g of ||A||F^2): LU work > %.2g flops", (long long)K0,
                 (long long)lo, *kept, wlimit);
    if (!for_memory && worth) {
        /* a band cut by the work limit that keeps less than half of the off-diagonal
         * ||A||_F^2 costs about a band solve per iteration for little more than Jacobi */
        double diag = 1;
        st = sap__drop_kept_fraction(S->R->A, 0, &diag);
        if (st < 0) return st;
        const double off = diag < 1 ? (*kept - diag) / (1 - diag) : 1;
        if (off < 0.5) {
            *worth = 0;
            snprintf(note, nl, "K %lld->%lld for work keeps %.0f%% of off-diag ||A||F^2: skipped", (long long)K0,
                     (long long)lo, 100 * off);
        }
    }
    return SAP_OK;
}

sap_status sap__solver_choose(sap_solver *S, sap_solver_method m, int final, sap_int *Kout, sap_int *Pout,
                              sap_precision *precout, double *keptout, char *note, size_t nl)
{
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    char reason[160] = "";
    double kept = 1;
    sap_int K = preferred_K(S, m, &kept, &st);
    if (st < 0) return st;
    sap_int P = 1;
    sap_precision prec = SAP_DOUBLE;
    if (m == SAP_METHOD_SAPD || m == SAP_METHOD_SAPC) {
        sap_band_method bm = m == SAP_METHOD_SAPD ? SAP_BAND_SAPD : SAP_BAND_SAPC;
        P = S->opt.partitions;
        sap__band_auto(S->x, n, K, S->d_cm, &bm, &P, &prec, reason, sizeof(reason));
        if (m == SAP_METHOD_SAPC && S->opt.partitions == 0 && P < 2 && n >= 4) P = 2; /* coupled needs P >= 2 */
        if (S->opt.factor_precision >= 0) prec = (sap_precision)S->opt.factor_precision;
    }
    if (P > n) P = n > 0 ? n : 1;
    int worth = 1;
    if (m != SAP_METHOD_JACOBI) {
        st = fit_memory(S, m, P, prec, &K, &kept, final ? NULL : &worth, note, nl);
        if (st < 0) return st;
    }
    if (!worth) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "sap_solver %s: %s", sap_solver_method_name(m), note);
    if (K > S->K_cm) K = S->K_cm;
    *Kout = K;
    *Pout = P;
    *precout = prec;
    *keptout = kept;
    return st;
}

sap_status sap__solver_plan_drop(sap_solver *S)
{
    const sap_solver_options *o = &S->opt;
    sap_status st = SAP_OK;
    /* automatic drop-off (SaP-D / SaP-C): keep 1 - 1e-6 of ||A||_F^2 when that at least
     * halves K */
    S->K_auto = S->K_cm;
    S->kept_auto = 1.0;
    double td = sap__wtime();
    if (o->drop_delta < 0 && S->K_cm > 1) {
        sap_int Kd = 0;
        double kf = 1;
        st = sap_drop_off(S->R->A, SV_DROP_DELTA, &Kd, &kf);
        if (st < 0) return st;
        if (Kd * SV_DROP_GAIN <= S->K_cm) {
            S->K_auto = Kd;
            S->kept_auto = kf;
            snprintf(S->drop_why, sizeof(S->drop_why), "drop 1-1e-6: K %lld->%lld", (long long)S->K_cm, (long long)Kd);
        } else {
            snprintf(S->drop_why, sizeof(S->drop_why), "no drop (1-1e-6 gives K %lld)", (long long)Kd);
        }
    } else if (o->drop_delta >= 0 && o->drop_delta < 1) {
        snprintf(S->drop_why, sizeof(S->drop_why), "drop %.6g given", o->drop_delta);
    } else {
        snprintf(S->drop_why, sizeof(S->drop_why), "no drop");
    }
    S->t_drop_auto = sap__wtime() - td;
    return st;
}

void sap__solver_plan_chain(sap_solver *S)
{
    const sap_solver_options *o = &S->opt;
    const sap_int n = S->A->nrows;
    sap_solver_method first = o->method;
    char why_first[160] = "";
    if (first == SAP_METHOD_AUTO && o->host_direct && !sap__solver_on_cuda(S->x) && sap__bp_available() &&
        band_work(S, SAP_METHOD_BAND_PIVOT, S->K_cm) <= SV_DIRECT_WORK &&
        sap__solver_estimate(S, SAP_METHOD_BAND_PIVOT, 1, S->K_cm, SAP_DOUBLE) <= S->mem_limit) {
        first = SAP_METHOD_BAND_PIVOT;
        snprintf(why_first, sizeof(why_first), "small system on the host: direct banded LU, 4NK^2 = %.2g <= %.2g flop",
                 band_work(S, SAP_METHOD_BAND_PIVOT, S->K_cm), SV_DIRECT_WORK);
    } else if (first == SAP_METHOD_AUTO) {
        sap_band_method bm = SAP_BAND_AUTO;
        sap_int P = o->partitions;
        char br[160];
        sap__band_auto(S->x, n, S->K_auto, S->d_cm, &bm, &P, NULL, br, sizeof(br));
        if (bm == SAP_BAND_SAPC && P < 2) {
            first = SAP_METHOD_SAPD;
            snprintf(why_first, sizeof(why_first), "d = %.3g but P = 1 (N = %lld, K = %lld): SaP-C = SaP-D", S->d_cm,
                     (long long)n, (long long)S->K_auto);
        } else {
            first = bm == SAP_BAND_SAPC ? SAP_METHOD_SAPC : SAP_METHOD_SAPD;
            snprintf(why_first, sizeof(why_first), "band rule %.140s", br);
        }
    } else {
        snprintf(why_first, sizeof(why_first), "%s given", sap_solver_method_name(first));
    }
    static const sap_solver_method order[] = {SAP_METHOD_SAPD, SAP_METHOD_SAPC, SAP_METHOD_BAND_LU,
                                              SAP_METHOD_BAND_PIVOT, SAP_METHOD_JACOBI};
    S->nchain = 0;
    S->chain[S->nchain++] = first;
    if (o->fallback) {
        int past = 0;
        for (int i = 0; i < 5; i++) {
            if (order[i] == first) {
                past = 1;
                continue;
            }
            if (!past) continue;
            /* SaP-C after SaP-D only where there is more than one partition to couple */
            if (order[i] == SAP_METHOD_SAPC && o->method == SAP_METHOD_AUTO && first == SAP_METHOD_SAPD) {
                sap_band_method bm = SAP_BAND_SAPC;
                sap_int P = o->partitions;
                sap__band_auto(S->x, n, S->K_auto, S->d_cm, &bm, &P, NULL, NULL, 0);
                if (P < 2) continue;
            }
            S->chain[S->nchain++] = order[i];
        }
    }
    snprintf(S->why_first, sizeof(S->why_first), "%s", why_first);
}
