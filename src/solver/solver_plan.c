/* solver_plan.c -- the sparse solver's plan: the memory limit, the cost and work rules on
 * each method's estimate (bytes and flops, from its sap__solver_method_type), the
 * half-bandwidth / partitions / precision of an attempt (narrowed by drop-off until it
 * fits), the automatic drop-off of setup and the method chain: the ORDER policy (which
 * method first and why, from the matrix statistics; which fallbacks after it) is the one
 * place outside the method files that names methods. */
#include "device/device.h"
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

/* On cuda the estimate gets a margin for what the pool's size classes do not show: the
 * fragmentation of the device memory (a free total that no one block can take) and the
 * libraries' own allocations (cuSPARSE/cuBLAS work space, the CUB temporaries of a format
 * conversion): 2% and 64 MiB.  The limit it is compared with is 90% of the free memory
 * (sap__solver_set_memory_limit). */
#define SV_DEVICE_MARGIN_FRACTION 0.02
#define SV_DEVICE_MARGIN_BYTES (64.0 * 1024.0 * 1024.0)

/* The method's estimate (bytes on its backend, flops of its factorization). */
static sap__sm_estimate estimate(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec)
{
    sap__sm_estimate e = {0, 0, 0};
    const sap__solver_method_type *t = sap__solver_method_get(m);
    if (t) t->estimate(S, t, P, K, prec, &e);
    if (sap__solver_on_cuda(S->x) && e.bytes > 0 && e.bytes < INT64_MAX)
        e.bytes = sap__solver_bytes((double)e.bytes * (1.0 + SV_DEVICE_MARGIN_FRACTION) + SV_DEVICE_MARGIN_BYTES);
    return e;
}

sap__sm_estimate sap__solver_estimate_all(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K,
                                          sap_precision prec)
{
    sap__sm_estimate e = estimate(S, m, P, K, prec);
    if (e.seconds <= 0 && e.flops > 0) e.seconds = e.flops / sap__solver_rate(S->x, K, prec, P);
    return e;
}

int64_t sap__solver_estimate(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec)
{
    return estimate(S, m, P, K, prec).bytes;
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

/* Flops of the method's factorization (e.g. the LU of N x N with half-bandwidth K:
 * 2 N K^2; LAPACK's pivoting band has kl + ku = 2K above the diagonal: 4 N K^2). */
static double band_work(const sap_solver *S, sap_solver_method m, sap_int K)
{
    return estimate(S, m, 1, K, SAP_DOUBLE).flops;
}

static int fits(const sap_solver *S, sap_solver_method m, sap_int P, sap_int K, sap_precision prec, double wlimit)
{
    const sap__sm_estimate e = estimate(S, m, P, K, prec);
    return e.bytes <= S->mem_limit && e.flops <= wlimit;
}

/* The half-bandwidth an attempt starts from, before the memory check: the method's band
 * (none, the CM band or the automatic drop-off of setup) unless a drop_delta is given. */
static sap_int preferred_K(sap_solver *S, const sap__solver_method_type *t, double *kept, sap_status *st)
{
    *st = SAP_OK;
    *kept = 1.0;
    if (t->band == SAP__SM_BAND_NONE) return 0;
    const double dd = S->opt.drop_delta;
    if (dd >= 0 && dd < 1) {
        sap_int K = 0;
        *st = sap__solver_drop_off(S, dd, &K, kept);
        return K;
    }
    if (t->band == SAP__SM_BAND_AUTO) {
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
    sap_status st = sap__solver_kept_fraction(S, lo, kept);
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
        st = sap__solver_kept_fraction(S, 0, &diag);
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
    const sap__solver_method_type *t = sap__solver_method_get(m);
    sap_status st = SAP_OK;
    if (!t) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: unknown method %d", (int)m);
    double kept = 1;
    sap_int K = preferred_K(S, t, &kept, &st);
    if (st < 0) return st;
    sap_int P = 1;
    sap_precision prec = SAP_DOUBLE;
    if (t->shape) t->shape(S, t, K, &P, &prec);
    if (P > n) P = n > 0 ? n : 1;
    int worth = 1;
    if (t->band != SAP__SM_BAND_NONE) {
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

#define SV_CM_SKIP_FACTOR 1.1 /* skip CM when K <= this x the lower bound of any ordering */

int sap__solver_band_at_bound(const sap_solver *S, sap_int K)
{
    return (double)K <= SV_CM_SKIP_FACTOR * (double)S->K_lb;
}

/* 1 where a rule that reads K_cm before the probe could fire at half-bandwidth K: the
 * backend's host_small (on a cuda context) or the host's small banded LU (auto_first). */
int sap__solver_small_rules_possible(const sap_solver *S, sap_int K)
{
    const double n = (double)S->A->nrows, k = (double)K;
    if (sap__solver_on_cuda(S->ctx))
        return S->opt.host_small && n < SV_HOST_SMALL_N && n * (2.0 * k + 1.0) < SV_HOST_SMALL_BAND;
    return 4.0 * n * k * k <= SV_DIRECT_WORK;
}

void sap__solver_plan_reorder(sap_solver *S, const sap_matrix_stats *ms)
{
    const sap_solver_options *o = &S->opt;
    const sap_int n = ms->nrows;
    if (o->db >= 0) {
        S->db = o->db;
        snprintf(S->db_why, sizeof(S->db_why), " (given)");
    } else if (S->direct_first) {
        S->db = SAP_DB_NONE;
        snprintf(S->db_why, sizeof(S->db_why), ": a sparse direct method");
    } else if (ms->spd_estimate && n > 0) {
        S->db = SAP_DB_NONE;
        snprintf(S->db_why, sizeof(S->db_why), ": SPD");
    } else if (n > 0 && ms->dominant_rows == n && ms->zero_diagonal == 0) {
        S->db = SAP_DB_NONE;
        snprintf(S->db_why, sizeof(S->db_why), ": diagonally dominant (d = %.3g)", ms->diag_dominance);
    } else {
        S->db = SAP_DB_PRODUCT;
        snprintf(S->db_why, sizeof(S->db_why), ": not SPD, %lld rows not dominant",
                 (long long)(n - ms->dominant_rows));
    }
    S->scale = S->db == SAP_DB_PRODUCT && o->scale != 0;
    /* any row and column ordering leaves the m - 1 off-diagonal columns of a row of m
     * entries at distinct distances from the diagonal, at least ceil((m - 1) / 2) away */
    const sap_int lb = ms->max_row_nnz / 2;
    const sap_int K = ms->half_bandwidth;
    S->K_lb = lb;
    if (o->cm >= 0) {
        S->cm = o->cm != 0;
        snprintf(S->cm_why, sizeof(S->cm_why), "%s (given)", S->cm ? "on" : "off");
    } else if (S->direct_first) {
        S->cm = 0;
        snprintf(S->cm_why, sizeof(S->cm_why), "off: a sparse direct method");
    } else if (o->method == SAP_METHOD_JACOBI) {
        /* Jacobi's steps do not depend on the order; the fallbacks after it are direct */
        S->cm = 0;
        snprintf(S->cm_why, sizeof(S->cm_why), "off: Jacobi needs no band");
    } else if ((S->db == SAP_DB_NONE || (S->scan_ok && S->scan.diag_row_max)) && sap__solver_band_at_bound(S, K)) {
        /* (DB's matching is the identity where every row's diagonal is its largest entry:
         * its scaling keeps the band; gen:banded N = 50,000 K = 1,500 d = 0.5 spent 1.9 s in a
         * CM that kept the order) */
        S->cm = 0;
        snprintf(S->cm_why, sizeof(S->cm_why), "off: K %lld within %.2gx of the bound %lld%s", (long long)K,
                 SV_CM_SKIP_FACTOR, (long long)lb, S->db != SAP_DB_NONE ? " (DB keeps the order)" : "");
    } else {
        S->cm = 1;
        snprintf(S->cm_why, sizeof(S->cm_why), "on: K %lld, bound %lld%s", (long long)K, (long long)lb,
                 S->db != SAP_DB_NONE ? ", after DB" : "");
    }
    /* an automatic chain ordered by cost (sap__solver_plan_chain's by_cost) puts CM off until
     * its probe has run: a system Jacobi solves in less time than CM would take (the probe
     * often does most of it) is not reordered; otherwise sap__solver_cm_late runs CM then and
     * the chain is planned again.  Setup runs it before the plan where a rule that reads K_cm
     * before the probe could fire at a lower bound of K under any ordering
     * (sap__solver_small_rules_possible, sap__solver_bfs_band_bound). */
    const int planned = o->method == SAP_METHOD_AUTO && o->fallback && o->time_budget >= 0 && o->host_direct &&
                        !S->direct_first;
    S->cm_late = S->cm && o->cm < 0 && planned;
    if (S->cm_late) S->cm = 0;
    /* DB likewise where its matching is the identity (create's scan: every row's diagonal
     * its largest entry): the probe's Jacobi-preconditioned steps do not change with DB's
     * scaling then, and a system the probe solves needs no DB at all (synthetic N = 400,000
     * K = 100: 0.14 s of DB and 0.09 s of the drop-off plan on the scaled copy, where the
     * probe solved it in 4 steps); otherwise sap__solver_db_late runs it after the probe */
    S->db_late = S->db == SAP_DB_PRODUCT && o->db < 0 && planned && S->scan_ok && S->scan.diag_row_max;
    if (S->db_late) S->db = SAP_DB_NONE;
}

sap_int sap__solver_bfs_band_bound(sap_context *ctx, const sap_csr *A)
{
    const sap_int n = A->nrows;
    if (n < 2) return 0;
    sap_int *dist = NULL, *q = NULL, bound = 0;
    sap__try_begin(ctx);
    dist = sap__alloc(ctx, (size_t)n, sizeof(sap_int), false, __FILE__, __LINE__);
    q = sap__alloc(ctx, (size_t)n, sizeof(sap_int), false, __FILE__, __LINE__);
    sap__try_end(ctx);
    if (!dist || !q) { /* no bound without the memory */
        sap_context_clear_error(ctx);
        goto done;
    }
    for (sap_int i = 0; i < n; i++) dist[i] = -1;
    sap_int head = 0, tail = 0;
    dist[0] = 0;
    q[tail++] = 0;
    while (head < tail) {
        const sap_int v = q[head++];
        for (int64_t p = A->rowptr[v]; p < A->rowptr[v + 1]; p++) {
            const sap_int w = A->colind[p];
            if (dist[w] < 0) {
                dist[w] = dist[v] + 1;
                q[tail++] = w;
            }
        }
    }
    /* every row reached: the eccentricity of row 0 is the last one's distance */
    if (tail == n && dist[q[n - 1]] > 0) {
        const sap_int ecc = dist[q[n - 1]];
        bound = (n - 1 + 2 * ecc - 1) / (2 * ecc);
    }
done:
    sap__free(ctx, dist);
    sap__free(ctx, q);
    return bound;
}

/* The distance histogram of R->A: create's when R->A is the input, else S->hist_R (built
 * once: the plan asks for kept fractions of several K and the drop-off). */
static sap_status r_hist(sap_solver *S, const double **h, sap_int *hl)
{
    if (S->scan_ok && S->scan.hist && S->R->A == S->A) {
        *h = S->scan.hist;
        *hl = S->scan.hist_len;
        return SAP_OK;
    }
    if (!S->hist_R) {
        sap_status st = sap__drop_hist(S->R->A, &S->hist_R, &S->hist_R_len);
        if (st < 0) return st;
    }
    *h = S->hist_R;
    *hl = S->hist_R_len;
    return SAP_OK;
}

sap_status sap__solver_kept_fraction(sap_solver *S, sap_int K, double *fraction)
{
    const double *h = NULL;
    sap_int hl = 0;
    sap_status st = r_hist(S, &h, &hl);
    if (st < 0) return st;
    *fraction = sap__drop_kept_from_hist(h, hl, K);
    return SAP_OK;
}

sap_status sap__solver_kept_in_blocks(sap_solver *S, sap_int K, sap_int P, double *fraction)
{
    const double *h = NULL;
    sap_int hl = 0;
    sap_status st = r_hist(S, &h, &hl);
    if (st < 0) return st;
    *fraction = sap__drop_kept_in_blocks(h, hl, K, (double)S->A->nrows / (double)(P > 1 ? P : 1));
    return SAP_OK;
}

sap_status sap__solver_drop_off(sap_solver *S, double delta, sap_int *K, double *kept)
{
    const double *h = NULL;
    sap_int hl = 0;
    sap_status st = r_hist(S, &h, &hl);
    if (st < 0) return st;
    return sap__drop_from_hist(S->ctx, h, hl, delta, K, kept);
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
        /* the histogram of create's pass when the matrix is the input's, else R->A's */
        st = sap__solver_drop_off(S, SV_DROP_DELTA, &Kd, &kf);
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

/* ---- the chain ORDER policy: which method first and why, which fallbacks after it ---- */

/* The fallback order: from the strongest preconditioner to the most robust solve, then
 * the last resort.  A chain is the first method and, with fallback, the methods after
 * it here (all of them after a registered method). */
static const sap_solver_method fallback_order[] = {
    SAP_METHOD_SAPD,       /* the decoupled SaP preconditioner */
    SAP_METHOD_SAPC,       /* coupled: where the partitions' couplings matter */
    SAP_METHOD_BAND_LU,    /* one LU of the whole CM band */
    SAP_METHOD_BAND_PIVOT, /* a direct solve with pivoting */
    SAP_METHOD_ILU,        /* an incomplete factorization of all entries (no band) */
    SAP_METHOD_BJACOBI,    /* the natural blocks (only where they are larger than one row) */
    SAP_METHOD_JACOBI,     /* the cheapest iteration (time-boxed when a direct method follows) */
    SAP_METHOD_DIRECT_CUDSS, /* a sparse direct solve on the GPU (a cuda context, cuDSS loadable) */
    SAP_METHOD_DIRECT_HOST,  /* a sparse direct solve on the host (SuiteSparse): the last resort */
};
#define NORDER ((int)(sizeof(fallback_order) / sizeof(fallback_order[0])))

static int method_available(sap_solver_method m)
{
    const sap__solver_method_type *t = sap__solver_method_get(m);
    return t && (!t->available || t->available());
}

/* AUTO's first method: on the host a band is solved directly (band-pivot, when it fits the
 * memory and its LU costs at most SV_DIRECT_WORK, or at most the work limit and the rate
 * model predicts LAPACK's blocked dgbtrf no slower than the SaP factorization: the
 * per-row SaP kernels run at a fraction of a BLAS-3 rate on a CPU, and the Krylov
 * iterations only add to SaP's side); otherwise the band rule of sap__band_auto picks
 * SaP-D or SaP-C (SaP-C only with P >= 2). */
static sap_solver_method auto_first(sap_solver *S, char *why, size_t wl)
{
    const sap_solver_options *o = &S->opt;
    const sap_int n = S->A->nrows;
    sap_band_method bm = SAP_BAND_AUTO;
    sap_int P = o->partitions;
    sap_precision prec = SAP_FLOAT;
    char br[160];
    sap__band_auto(S->x, n, S->K_auto, S->d_cm, &bm, &P, &prec, br, sizeof(br));
    if (o->host_direct && !sap__solver_on_cuda(S->x) && method_available(SAP_METHOD_BAND_PIVOT) &&
        sap__solver_estimate(S, SAP_METHOD_BAND_PIVOT, 1, S->K_cm, SAP_DOUBLE) <= S->mem_limit) {
        const double w = band_work(S, SAP_METHOD_BAND_PIVOT, S->K_cm);
        if (w <= SV_DIRECT_WORK) {
            snprintf(why, wl, "small system on the host: direct banded LU, 4NK^2 = %.2g <= %.2g flop", w,
                     SV_DIRECT_WORK);
            return SAP_METHOD_BAND_PIVOT;
        }
        const double t_lapack = sap__solver_direct_seconds(S->x, n, S->K_cm);
        const double t_sap = sap_band_estimate_seconds(S->x, n, S->K_auto, P, prec);
        if (w <= SV_WORK_CPU && t_lapack <= t_sap) {
            snprintf(why, wl, "host rate model: dgbtrf (4NK^2 = %.2g flop) %.2g s <= SaP factorization %.2g s", w,
                     t_lapack, t_sap);
            return SAP_METHOD_BAND_PIVOT;
        }
    }
    if (bm == SAP_BAND_SAPC && P < 2) {
        snprintf(why, wl, "d = %.3g but P = 1 (N = %lld, K = %lld): SaP-C = SaP-D", S->d_cm, (long long)n,
                 (long long)S->K_auto);
        return SAP_METHOD_SAPD;
    }
    snprintf(why, wl, "band rule %.140s", br);
    return bm == SAP_BAND_SAPC ? SAP_METHOD_SAPC : SAP_METHOD_SAPD;
}

/* 1 when direct-cudss can run: a cuda context and cuDSS loadable. */
static int cudss_usable(sap_solver *S)
{
    const sap_direct_kernels *k = sap__ops(S->ctx)->direct;
    return sap__solver_on_cuda(S->ctx) && k && k->available(S->ctx, NULL, 0);
}

/* 1 when fallback m follows first in the chain: SaP-C after an automatic SaP-D only where
 * there is more than one partition to couple; direct-cudss only where it can run;
 * band-pivot not when its whole CM band exceeds the work limit while a sparse direct
 * method can follow (the narrowed band would be a weak preconditioner refined ten times). */
static int fallback_wanted(sap_solver *S, sap_solver_method first, sap_solver_method m)
{
    const sap_solver_options *o = &S->opt;
    if (m == SAP_METHOD_DIRECT_CUDSS) return cudss_usable(S);
    if (m == SAP_METHOD_DIRECT_HOST) return method_available(m);
    if (m == SAP_METHOD_BJACOBI) return S->bj_avg > 1.0 || S->bj_avg < 0; /* < 0: not looked at (the method does) */
    if (m == SAP_METHOD_BAND_PIVOT && o->drop_delta < 0 &&
        band_work(S, m, S->K_cm) > (sap__solver_on_cuda(S->x) ? SV_WORK_GPU : SV_WORK_CPU) &&
        (cudss_usable(S) || method_available(SAP_METHOD_DIRECT_HOST)))
        return 0;
    if (m == SAP_METHOD_SAPC && o->method == SAP_METHOD_AUTO && first == SAP_METHOD_SAPD) {
        sap_band_method bm = SAP_BAND_SAPC;
        sap_int P = o->partitions;
        sap__band_auto(S->x, S->A->nrows, S->K_auto, S->d_cm, &bm, &P, NULL, NULL, 0);
        return P >= 2;
    }
    return 1;
}

#define SV_STRUCT_SHARE 0.1 /* the structure passes run when below this share of the best band prediction */
#define SV_BAND_SPREAD 3.0  /* a band method moves before the band rule's earlier one when predicted this
                               many times cheaper */

#define SV_CM_NNZ_S 5.0e-8 /* seconds of CM per entry of A: its ~10 searches and the permuted
                              copy (H200 host and a 2-core host alike, 4-7e-8: cage10, cage11,
                              airfoil_2d, convdiff3d_40, aniso3d_40, bayer10) */

/* After the probe: CM put off by plan_reorder runs now (1: the caller plans again in its
 * order) unless Jacobi's prediction is below what CM costs (no band method can win back
 * the reordering then). */
static int cm_after_probe(sap_solver *S)
{
    if (!S->cm_late) return 0;
    S->cm_late = 0;
    double it;
    const double pj = sap__cost_predict(S, SAP_METHOD_JACOBI, &it, NULL, 0);
    const double cm_s = SV_CM_NNZ_S * (double)S->A->nnz;
    if (pj > 0 && pj <= cm_s) {
        snprintf(S->cm_why, sizeof(S->cm_why), "off: Jacobi predicted %.2g s < CM's ~%.2g s", pj, cm_s);
        return 0;
    }
    sap__try_begin(S->ctx);
    const sap_status st = sap__solver_cm_late(S);
    sap__try_end(S->ctx);
    if (st >= 0) {
        const size_t l = strlen(S->cm_why);
        snprintf(S->cm_why + l, sizeof(S->cm_why) - l, ", after the probe");
        return 1;
    }
    sap_context_clear_error(S->ctx);
    snprintf(S->cm_why, sizeof(S->cm_why), "off: CM failed (%s)", sap_status_name(st));
    return 0;
}

/* After the probe, where it did not solve the system (or where no probe ran): DB put off by
 * plan_reorder runs now (1: the caller plans again on the scaled matrix). */
static int db_after_probe(sap_solver *S)
{
    if (!S->db_late) return 0;
    sap__try_begin(S->ctx);
    const sap_status st = sap__solver_db_late(S);
    sap__try_end(S->ctx);
    if (st >= 0) {
        const size_t l = strlen(S->db_why);
        if (S->probe_ran) snprintf(S->db_why + l, sizeof(S->db_why) - l, ", after the probe");
        return 1;
    }
    sap_context_clear_error(S->ctx);
    snprintf(S->db_why, sizeof(S->db_why), ": DB failed (%s)", sap_status_name(st));
    return 0;
}

/* The structure passes (levels for ILU's prediction, the natural blocks for bjacobi's) after
 * the probe: where they cost a small share of the best band prediction and of Jacobi's
 * (poisson3d_100: 0.1 s of passes where Jacobi's 0.24 s won and ILU's prediction was 1.1 s);
 * bjacobi leaves the chain without blocks. */
static void structure_after_probe(sap_solver *S, double best_band)
{
    double it;
    const double ss = sap__cost_structure_seconds(S);
    const double pj = sap__cost_predict(S, SAP_METHOD_JACOBI, &it, NULL, 0);
    if ((best_band > 0 && ss > SV_STRUCT_SHARE * best_band) || (pj > 0 && ss > SV_STRUCT_SHARE * pj)) return;
    sap__cost_structure(S);
    if (S->bj_avg < 0 || S->bj_avg > 1.0) return;
    int k = 0;
    for (int i = 0; i < S->nchain; i++)
        if (S->chain[i] != SAP_METHOD_BJACOBI) S->chain[k++] = S->chain[i];
    S->nchain = k;
}

/* The cost model's order of an AUTO chain (solver_cost.c): every method predicted (setup +
 * steps x time per step, from the measured rates and the probe), then sorted by its
 * prediction, those without one after them in the fallback order.  S->pred / pred_it
 * follow the chain; why_first says what the first one and the next one are predicted.
 * Returns 1 where CM ran after the probe (cm_after_probe): the caller plans again. */
static int cost_order(sap_solver *S, char *why_first, size_t wl)
{
    double pred[SV_MAX_CHAIN], it[SV_MAX_CHAIN];
    char words[SV_MAX_CHAIN][64];
    /* the band methods first (no probe yet): the probe may cost a small share of the best */
    double best = -1;
    for (int i = 0; i < S->nchain; i++) {
        const sap__solver_method_type *t = sap__solver_method_get(S->chain[i]);
        if (!t || t->band == SAP__SM_BAND_NONE) continue;
        const double p = sap__cost_predict(S, S->chain[i], &it[i], words[i], sizeof(words[i]));
        if (p > 0 && (best < 0 || p < best)) best = p;
    }
    sap__cost_probe(S, best);
    /* the probe solved the caller's b (its iterate meets tol): Jacobi first, finishing from
     * that iterate, with nothing more to plan (no CM, no structure passes, no predictions of
     * the others: they stay in the fallback order, unpredicted) */
    if (S->probe_y && S->probe_left <= 0) {
        int j = 0;
        while (j < S->nchain && S->chain[j] != SAP_METHOD_JACOBI) j++;
        if (j < S->nchain) {
            for (int i = j; i > 0; i--) S->chain[i] = S->chain[i - 1];
            S->chain[0] = SAP_METHOD_JACOBI;
            for (int i = 0; i < S->nchain; i++) S->pred[i] = S->pred_it[i] = -1;
            S->pred[0] = sap__cost_predict(S, SAP_METHOD_JACOBI, &S->pred_it[0], NULL, 0);
            S->cost_ordered = 1;
            if (S->cm_late) {
                S->cm_late = 0;
                snprintf(S->cm_why, sizeof(S->cm_why), "off: the probe solved the system");
            }
            if (S->db_late) {
                S->db_late = 0;
                snprintf(S->db_why, sizeof(S->db_why), ": the probe solved the system");
            }
            /* (no prediction where the probe stopped before it had the steps for one) */
            if (S->pred[0] > 0)
                snprintf(why_first, wl, "the probe solved the system: %.3g Jacobi steps to tol (predicted %.2g s to finish)",
                         S->probe_y_it, S->pred[0]);
            else
                snprintf(why_first, wl, "the probe solved the system: %.3g Jacobi steps to tol", S->probe_y_it);
            return 0;
        }
    }
    if (db_after_probe(S) || cm_after_probe(S)) return 1;
    structure_after_probe(S, best); /* (may take bjacobi out of the chain) */
    const int n = S->nchain;
    S->cost_best = -1;
    for (int pass = 0; pass < 2; pass++) /* the sparse direct methods last: they ask cost_best */
        for (int i = 0; i < n; i++) {
            const sap__solver_method_type *t = sap__solver_method_get(S->chain[i]);
            const int sparse_direct = t && t->direct && t->band == SAP__SM_BAND_NONE;
            if (sparse_direct != pass) continue;
            pred[i] = sap__cost_predict(S, S->chain[i], &it[i], words[i], sizeof(words[i]));
            if (!sparse_direct && pred[i] > 0 && (S->cost_best < 0 || pred[i] < S->cost_best)) S->cost_best = pred[i];
        }
    /* stable: by prediction, the unknown ones after, in their order */
    int idx[SV_MAX_CHAIN];
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            const double a = pred[idx[j - 1]], b = pred[idx[j]];
            const int swap = b > 0 && (a <= 0 || b < a);
            if (!swap) break;
            const int tmp = idx[j - 1];
            idx[j - 1] = idx[j];
            idx[j] = tmp;
        }
    /* the band methods keep the band rule's order among themselves (their GPU rates are not
     * measured yet: the rule, from the papers, orders SaP-D / SaP-C / band LU better), unless
     * a later one is predicted SV_BAND_SPREAD times cheaper (SaP-C's 16 partitions of a
     * K = 440 band on airfoil_2d: 0.2 s of setup where SaP-D's 64 take 0.04 s): the cost
     * model only moves the other methods before or after them */
    {
        int bpos[SV_MAX_CHAIN], band[SV_MAX_CHAIN], nb = 0, k = 0;
        for (int i = 0; i < n; i++) {
            const sap__solver_method_type *t = sap__solver_method_get(S->chain[idx[i]]);
            if (t && t->band != SAP__SM_BAND_NONE) bpos[nb++] = i;
        }
        for (int i = 0; i < n && k < nb; i++) { /* the band methods in chain order */
            const sap__solver_method_type *t = sap__solver_method_get(S->chain[i]);
            if (t && t->band != SAP__SM_BAND_NONE) band[k++] = i;
        }
        for (int i = 1; i < nb; i++)
            for (int j = i; j > 0; j--) {
                const double a = pred[band[j - 1]], b = pred[band[j]];
                if (!(b > 0 && (a <= 0 || SV_BAND_SPREAD * b < a))) break;
                const int tmp = band[j - 1];
                band[j - 1] = band[j];
                band[j] = tmp;
            }
        for (k = 0; k < nb; k++) idx[bpos[k]] = band[k];
    }
    sap_solver_method chain[SV_MAX_CHAIN];
    for (int i = 0; i < n; i++) {
        chain[i] = S->chain[idx[i]];
        S->pred[i] = pred[idx[i]];
        S->pred_it[i] = it[idx[i]];
    }
    char was[64];
    snprintf(was, sizeof(was), "%s", sap_solver_method_name(S->chain[0]));
    memcpy(S->chain, chain, sizeof(chain[0]) * (size_t)n);
    S->cost_ordered = 1;
    if (S->pred[0] > 0) {
        char next[96] = "";
        if (n > 1 && S->pred[1] > 0)
            snprintf(next, sizeof(next), "; next %s %.2g s", sap_solver_method_name(S->chain[1]), S->pred[1]);
        else if (n > 1)
            snprintf(next, sizeof(next), "; next %s unpredicted", sap_solver_method_name(S->chain[1]));
        char first[64];
        snprintf(first, sizeof(first), "%s", words[idx[0]]);
        snprintf(why_first, wl, "cost model: predicted %.2g s (%s)%s", S->pred[0], first, next);
        if (strcmp(was, sap_solver_method_name(S->chain[0])) != 0) {
            const size_t l = strlen(why_first);
            snprintf(why_first + l, wl - l, "; before %s", was);
        }
    }
    return 0;
}

void sap__solver_plan_chain(sap_solver *S)
{
    const sap_solver_options *o = &S->opt;
    sap_solver_method first = o->method;
    char why_first[240] = "";
    S->cost_ordered = 0;
    S->learn_miss = 0;
    for (int i = 0; i < SV_MAX_CHAIN; i++) S->pred[i] = S->pred_it[i] = -1;
    S->levels = -1; /* not looked at */
    S->bj_avg = -1;
    if (first == SAP_METHOD_AUTO && S->direct_first) {
        first = SAP_METHOD_DIRECT_HOST;
        snprintf(why_first, sizeof(why_first), "%s", S->direct_why);
    } else if (first == SAP_METHOD_AUTO) {
        first = auto_first(S, why_first, sizeof(why_first));
    } else {
        snprintf(why_first, sizeof(why_first), "%s given", sap_solver_method_name(first));
    }
    S->nchain = 0;
    S->chain[S->nchain++] = first;
    /* AUTO with a fallback (and host_direct, time_budget not off), unless a small system is
     * solved directly by the band: every candidate, in the order of the predicted times
     * (host_direct = 0 asks for the band rule's SaP first; time_budget=off for choices
     * that do not depend on timing) */
    const int by_cost = o->method == SAP_METHOD_AUTO && !S->direct_first && o->fallback && o->time_budget >= 0 &&
                        o->host_direct &&
                        !(first == SAP_METHOD_BAND_PIVOT && strncmp(why_first, "small system", 12) == 0);
    /* the structure passes (levels, natural blocks) of an automatic chain: after the probe
     * in the cost order (cost_order); otherwise here, by the band rule's share (an already
     * banded system needs none of them), or always without a time budget or host_direct.  A
     * given method: none (bjacobi looks at its blocks itself; the predictions that read the
     * levels order an automatic chain only). */
    if (o->method == SAP_METHOD_AUTO && !S->direct_first && !by_cost) {
        if (o->time_budget >= 0 && o->host_direct) {
            static const sap_solver_method band_m[] = {SAP_METHOD_SAPD, SAP_METHOD_SAPC, SAP_METHOD_BAND_LU,
                                                       SAP_METHOD_BAND_PIVOT};
            double best = -1, it;
            for (size_t i = 0; i < sizeof(band_m) / sizeof(band_m[0]); i++) {
                const double p = sap__cost_predict(S, band_m[i], &it, NULL, 0);
                if (p > 0 && (best < 0 || p < best)) best = p;
            }
            if (best <= 0 || sap__cost_structure_seconds(S) <= SV_STRUCT_SHARE * best) sap__cost_structure(S);
        } else {
            sap__cost_structure(S);
        }
    }
    if (o->fallback) {
        int past = 1; /* a method not in the order (registered): every fallback after it */
        for (int i = 0; i < NORDER && !by_cost; i++)
            if (fallback_order[i] == first) past = 0;
        for (int i = 0; i < NORDER && S->nchain < SV_MAX_CHAIN; i++) {
            if (fallback_order[i] == first) {
                past = 1;
                continue;
            }
            if (past && fallback_wanted(S, first, fallback_order[i])) S->chain[S->nchain++] = fallback_order[i];
        }
    }
    if (by_cost && S->nchain > 1 && cost_order(S, why_first, sizeof(why_first))) {
        sap__solver_plan_chain(S); /* CM ran after the probe: again in its order (the probe is kept) */
        return;
    }
    if (S->db_late || S->cm_late) { /* no cost order: DB and CM as the plan used to run them */
        if (db_after_probe(S) || cm_after_probe(S)) {
            sap__solver_plan_chain(S);
            return;
        }
    }
    snprintf(S->why_first, sizeof(S->why_first), "%s", why_first);
}
