/* band_solver.c -- the public sap_band_* API: automatic choices, the SaP preconditioner
 * inside BiCGStab(2) / CG, and the direct banded solve (P = 1, double, iterative
 * refinement). */
#include "base/options.h"
#include "matrix/backend_matrix.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct sap_band_solver {
    sap_context *ctx;
    sap_csr *A;
    sap_band_options opt;
    int setup_done;
    sap_precond *pc;
    sap_matrix *M;
    sap_krylov *kry;
    sap_band_fact *direct;
    double *work; /* DIRECT: 3 n doubles (the refinement's residual, correction, trial) */
    sap_band_stats stats;
};

const char *sap_band_method_name(sap_band_method method)
{
    return sap__name_of(sap__band_method_words, (int)method, "unknown");
}

sap_status sap_band_method_parse(const char *name, sap_band_method *method)
{
    int v = 0;
    sap_status st = sap__enum_parse(sap__band_method_words, name, method ? &v : NULL);
    if (st == SAP_OK) *method = (sap_band_method)v;
    return st;
}

void sap_band_options_init(sap_band_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->method = SAP_BAND_AUTO;
    opt->partitions = 0;
    opt->half_bandwidth = 0;
    opt->factor_precision = -1;
    opt->boost_threshold = -1;
    opt->boost_value = 0;
    opt->krylov_auto = 1;
    sap_krylov_options_init(&opt->krylov);
}

void sap_band_solver_destroy(sap_band_solver *S)
{
    if (!S) return;
    sap_context *ctx = S->ctx;
    sap_precond_destroy(S->pc);
    sap_matrix_destroy(S->M);
    sap_krylov_destroy(S->kry);
    sap__band_fact_destroy(S->direct);
    sap__free(ctx, S->work);
    sap_csr_destroy(S->A);
    sap__free(ctx, S);
}

static sap_status check_options(sap_context *ctx, sap_int n, const sap_band_options *o)
{
    if ((int)o->method < SAP_BAND_AUTO || (int)o->method > SAP_BAND_DIRECT)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band: unknown method %d", (int)o->method);
    if (o->partitions < 0 || o->partitions > (n > 0 ? n : 1))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band: %lld partitions for N = %lld (need 0 = auto or 1..N)",
                         (long long)o->partitions, (long long)n);
    if (o->half_bandwidth < 0 || (o->half_bandwidth > 0 && o->half_bandwidth >= n))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band: half-bandwidth %lld for N = %lld (need 0 <= K < N)",
                         (long long)o->half_bandwidth, (long long)n);
    if (o->factor_precision != -1 && o->factor_precision != SAP_DOUBLE && o->factor_precision != SAP_FLOAT)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band: factor precision %d", o->factor_precision);
    if (isnan(o->boost_threshold) || isnan(o->boost_value))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band: NaN boost parameter");
    return SAP_OK;
}

sap_status sap_band_solver_create(sap_context *ctx, const sap_csr *A, const sap_band_options *opt,
                                  sap_band_solver **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band_solver_create: output pointer is NULL");
    *out = NULL;
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band_solver_create: matrix is NULL");
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "sap_band_solver_create: the matrix is %lld x %lld",
                         (long long)A->nrows, (long long)A->ncols);
    sap_band_options o;
    if (opt) o = *opt;
    else sap_band_options_init(&o);
    sap_status st = check_options(ctx, A->nrows, &o);
    if (st < 0) return st;
    for (sap_int p = 0; p < A->nnz; p++)
        if (!isfinite(A->val[p]))
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_band_solver_create: entry %lld of the matrix is %g",
                             (long long)p, A->val[p]);
    sap_band_solver *S = NULL;
    SAP_CALLOC(ctx, S, 1);
    S->ctx = ctx;
    S->opt = o;
    SAP_TRY(sap_csr_copy(A, &S->A));
    *out = S;
    return SAP_OK;
cleanup:
    sap_band_solver_destroy(S);
    return st;
}

sap_status sap_band_solver_create_band(sap_context *ctx, sap_int n, sap_int K, const double *band,
                                       const sap_band_options *opt, sap_band_solver **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band_solver_create_band: output pointer is NULL");
    *out = NULL;
    if (n < 1 || K < 0 || K >= n || !band)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band_solver_create_band: n = %lld, K = %lld (need 0 <= K < n)%s",
                         (long long)n, (long long)K, band ? "" : ", band is NULL");
    if (sap__mul_overflows(2 * K + 1, n, SAP_NNZ_MAX))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "sap_band_solver_create_band: band too large");
    sap_status st = SAP_OK;
    sap_csr *A = NULL;
    /* every in-matrix position of the band becomes an entry (explicit zeros included) */
    sap_int nnz = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int lo = i - K < 0 ? 0 : i - K, hi = i + K > n - 1 ? n - 1 : i + K;
        nnz += hi - lo + 1;
    }
    SAP_TRY(sap_csr_create(ctx, n, n, nnz, &A));
    sap_int p = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int lo = i - K < 0 ? 0 : i - K, hi = i + K > n - 1 ? n - 1 : i + K;
        for (sap_int j = lo; j <= hi; j++) {
            A->colind[p] = j;
            A->val[p++] = band[(j - i + K) * n + i];
        }
        A->rowptr[i + 1] = p;
    }
    st = sap_band_solver_create(ctx, A, opt, out);
cleanup:
    sap_csr_destroy(A);
    return st;
}

sap_status sap_band_solver_setup(sap_band_solver *S)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    sap_status st = SAP_OK;
    const double t0 = sap__wtime();
    sap_precond_destroy(S->pc);
    S->pc = NULL;
    sap__band_fact_destroy(S->direct);
    S->direct = NULL;
    S->setup_done = 0;
    sap_band_stats *bs = &S->stats;
    memset(bs, 0, sizeof(*bs));
    const sap_band_options *o = &S->opt;
    const sap_int n = S->A->nrows;
    sap_int K;
    double d = 0;
    sap__band_shape(S->A, sap__threads(ctx), &K, &d);
    if (o->half_bandwidth > 0 && o->half_bandwidth < K) K = o->half_bandwidth;
    sap_band_method m = o->method;
    sap_int P = o->partitions;
    if (m == SAP_BAND_DIRECT) P = 1;
    sap_precision prec;
    sap__band_auto(ctx, n, K, d, &m, &P, &prec, bs->reason, sizeof(bs->reason));
    if (o->factor_precision >= 0) prec = (sap_precision)o->factor_precision;
    if (m == SAP_BAND_DIRECT) prec = SAP_DOUBLE;
    bs->method = m;
    bs->partitions = P;
    bs->factor_precision = prec;
    if (o->factor_precision >= 0 || m == SAP_BAND_DIRECT) {
        char *pp = strstr(bs->reason, prec == SAP_FLOAT ? "double factors" : "float factors");
        if (pp) snprintf(pp, sizeof(bs->reason) - (size_t)(pp - bs->reason), "%s factors (given)",
                         prec == SAP_FLOAT ? "float" : "double");
    }
    if (m == SAP_BAND_DIRECT) {
        sap_band_factor_opts fo = {.boost_threshold = o->boost_threshold, .boost_value = o->boost_value, .coupled = 0};
        double t_bc = 0;
        SAP_TRY(sap__band_fact_create(ctx, S->A, 1, o->half_bandwidth, SAP_DOUBLE, &fo, 1, &S->direct,
                                      &bs->dropped_entries, &t_bc));
        if (!S->work) SAP_ALLOC(ctx, S->work, 3 * (n > 0 ? n : 1));
        bs->half_bandwidth = S->direct->L.K;
        bs->boosted_pivots = S->direct->boosted;
        bs->time_lu = S->direct->t_lu;
        bs->time_bc = t_bc;
        bs->krylov_type = SAP_KRYLOV_CG;
    } else {
        /* the Krylov matrix first: a dense band goes to the BAND format on every backend,
         * and the factors are then filled from it on the backend (no second band on the
         * host, no second upload) */
        sap_band_source src;
        sap_matrix_destroy(S->M);
        S->M = NULL;
        SAP_TRY(sap__solver_band_matrix(ctx, S->A, &S->M, &src));
        sap_band_options po = *o;
        po.method = m;
        po.partitions = P;
        SAP_TRY(sap_precond_create(ctx, m == SAP_BAND_SAPC ? "sap-c" : "sap-d", &S->pc));
        SAP_TRY(sap__pc_sap_configure(S->pc, &po));
        if (src.val) SAP_TRY(sap__pc_sap_set_source(S->pc, &src));
        SAP_TRY(sap_precond_set_precision(S->pc, prec));
        SAP_TRY(sap_precond_setup_numeric(S->pc, S->A));
        sap_pc_sap_info info;
        SAP_TRY(sap__pc_sap_info(S->pc, &info));
        bs->half_bandwidth = info.K;
        bs->boosted_pivots = info.boosted;
        bs->dropped_entries = info.dropped;
        bs->time_lu = info.t_lu;
        bs->time_bc = info.t_bc;
        bs->time_spk = info.t_spk;
        bs->time_lurdcd = info.t_lurdcd;
        sap_krylov_options ko = o->krylov;
        if (o->krylov_auto) {
            /* CG for SaP-D on a matrix that looks SPD (sap_csr_stats' estimate) */
            int cg = 0;
            if (m == SAP_BAND_SAPD) {
                sap_matrix_stats ms;
                SAP_TRY(sap_csr_stats(S->A, &ms));
                cg = ms.spd_estimate;
            }
            /* else Richardson while each step contracts the residual 4x, BiCGStab(2) from the
             * first that does not (krylov/richardson.c) */
            ko.type = cg ? SAP_KRYLOV_CG : SAP_KRYLOV_RICHARDSON;
            ko.param = cg ? 0 : 2;
        }
        sap_krylov_destroy(S->kry);
        S->kry = NULL;
        SAP_TRY(sap_krylov_create(ctx, &ko, &S->kry));
        bs->krylov_type = ko.type;
    }
    bs->time_setup = sap__wtime() - t0;
    S->setup_done = 1;
    if (bs->boosted_pivots > 0)
        st = SAP_ERROR(ctx, SAP_WARN_BOOSTED_PIVOTS, "sap_band: %lld pivots boosted", (long long)bs->boosted_pivots);
    return st;
cleanup:
    sap_precond_destroy(S->pc);
    S->pc = NULL;
    sap__band_fact_destroy(S->direct);
    S->direct = NULL;
    return st;
}

/* sap__refine_solve_fn of DIRECT: the double LU, column by column (guesses not needed). */
static sap_status direct_apply(void *state, sap_int m, const double *R, sap_int ldr, const double *X0, sap_int ldx0,
                               double *X, sap_int ldx)
{
    sap_band_fact *F = state;
    (void)X0;
    (void)ldx0;
    for (sap_int c = 0; c < m; c++) {
        sap_status st = sap__band_fact_apply(F, R + c * ldr, X + c * ldx);
        if (st < 0) return st;
    }
    return SAP_OK;
}

/* DIRECT: x = A^{-1} b by the double LU, then refinement on the true residual: every
 * correction taken, at most 10. */
static sap_status direct_solve(sap_band_solver *S, const double *b, double *x)
{
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    const double nb = sap__solver_nrm2(b, n), tol = S->opt.krylov.tol;
    const sap_int bad = sap__host_first_nonfinite(ctx, b, n);
    if (bad < n) return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_band_solver_solve: b[%lld] = %g", (long long)bad, b[bad]);
    if (nb == 0) {
        memset(x, 0, (size_t)n * sizeof(double));
        S->stats.relative_residual = 0;
        return SAP_OK;
    }
    const sap__refine rf = {.A = S->A,
                            .tol = tol,
                            .max_pass = 10,
                            .take = SAP__REFINE_TAKE_ALL,
                            .slow = SAP__REFINE_SLOW_GOES_ON,
                            .solve = direct_apply,
                            .state = S->direct,
                            .R = S->work,
                            .D = S->work + n,
                            .t = S->work + 2 * n};
    double rel = 0;
    sap_status ks = SAP_OK;
    int it = 0;
    sap_status st = sap__solver_refine(&rf, 1, b, n, x, n, &rel, &ks, &it);
    if (st < 0) return st;
    S->stats.iterations = it;
    S->stats.relative_residual = rel;
    if (!isfinite(rel)) return SAP_ERROR(ctx, SAP_ERR_BREAKDOWN, "sap_band direct: non-finite residual");
    if (rel > tol)
        return SAP_ERROR(ctx, SAP_WARN_INEXACT, "sap_band direct: residual %.3g above tolerance %.3g after %d refinement steps",
                         rel, tol, it);
    return st;
}

sap_status sap_band_solver_solve(sap_band_solver *S, const double *b, double *x, sap_band_stats *stats)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    sap_status st = SAP_OK;
    if (S->A->nrows > 0 && (!b || !x)) {
        st = SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_band_solver_solve: NULL vector");
        goto done;
    }
    if (!S->setup_done) {
        st = sap_band_solver_setup(S);
        if (st < 0) goto done;
    }
    const double t0 = sap__wtime();
    if (S->direct) {
        sap_status s2 = direct_solve(S, b, x);
        S->stats.time_kry = sap__wtime() - t0;
        S->stats.time_kry_transfer = 0; /* (not told apart: all in T_Kry) */
        st = s2 < 0 || s2 > 0 ? s2 : st;
    } else {
        sap_krylov_stats ks;
        sap_status s2 = sap_krylov_solve(S->kry, S->M, S->pc, b, x, &ks);
        S->stats.time_kry = sap__wtime() - t0;
        S->stats.time_kry_transfer = ks.time_transfer;
        sap__log(ctx, SAP_PRINT_INFO,
                 "sap_band: T_Kry %.3g ms: setup %.3g (vectors, uploads, ||b||), transfers %.3g (b, x0 up, x down), "
                 "SpMV %.3g (%lld), preconditioner %.3g (%lld), the rest %.3g (timed %s); %g iterations",
                 1e3 * S->stats.time_kry, 1e3 * ks.time_setup, 1e3 * ks.time_transfer, 1e3 * ks.time_spmv,
                 (long long)ks.spmv_count, 1e3 * ks.time_precond, (long long)ks.precond_count, 1e3 * ks.time_vector,
                 S->opt.krylov.sync_timing ? "synchronized" : "not synchronized", ks.iterations);
        S->stats.iterations = ks.iterations;
        S->stats.relative_residual = ks.true_residual;
        st = s2 != SAP_OK ? s2 : st;
    }
done:
    S->stats.status = st;
    if (stats) *stats = S->stats;
    return st;
}

sap_status sap_band_solver_get_stats(const sap_band_solver *S, sap_band_stats *stats)
{
    if (!S || !stats) return SAP_ERR_INVALID;
    *stats = S->stats;
    return SAP_OK;
}

/* ---- the rate model: predicted seconds of a band factorization --------------------------- */

/* One CPU thread factors a band at about SV_RATE_CPU flop/s while the K x K trailing update
 * of a pivot (K^2 factor entries) stays in its cache (SV_CACHE_BYTES); beyond, every flop
 * pair reads and writes an entry: memory-bound at SV_BW_THREAD bytes/s per thread (measured
 * on a 2-core host: K = 400, double: 4.8e9 flop/s; K = 1000: 0.75e9 per thread; K = 2000:
 * 0.36e9).  A GPU: SV_RATE_GPU (bench/results/banded.md: N = 1e6, K = 500 factors in well
 * under a second on an H200), but no more than SV_RATE_GPU_TASK per partition: the
 * factorization runs one thread block per partition (k_factor), so a few partitions of a
 * wide band leave the GPU idle (airfoil_2d, K = 440, P = 16: SaP-C's LU and UL, 32 blocks,
 * 1.1e10 flop in 28.5 ms on an H100, 1.2e10 flop/s a block).  Writing the band: SV_BW_FILL
 * bytes/s on the host (first touch of fresh pages), SV_BW_FILL_GPU with the upload. */
#define SV_RATE_CPU 1.5e9 /* float, K = 100, N = 200,000 on 2 threads: 4e9 flop in 1.39 s */
#define SV_CACHE_BYTES 2.0e6
#define SV_BW_THREAD 4.0e9
#define SV_RATE_GPU 2.0e12
#define SV_RATE_GPU_TASK 1.0e10
#define SV_BW_FILL 2.0e9
#define SV_BW_FILL_GPU 1.0e10

double sap__solver_rate(const sap_context *ctx, sap_int K, sap_precision prec, sap_int P)
{
    if (ctx->backend == SAP_BACKEND_CUDA) {
        /* P = 0: the automatic partitions, as many as fill the GPU */
        const double r = (double)P * SV_RATE_GPU_TASK;
        return P > 0 && r < SV_RATE_GPU ? r : SV_RATE_GPU;
    }
    /* the rates measured once per process (solver_cost.c) where they were: the in-cache
     * rate of this precision's band factorization, the memory-bound one from the stream
     * bandwidth; else the constants */
    sap__cost_rates r;
    sap__cost_rates_peek(ctx, &r);
    const int nt0 = sap__threads(ctx);
    const double rc = r.band[prec == SAP_FLOAT ? SAP_FLOAT : SAP_DOUBLE] > 0 ? r.band[prec == SAP_FLOAT ? SAP_FLOAT : SAP_DOUBLE] : SV_RATE_CPU;
    const double bwt = r.bw > 0 ? r.bw / (double)nt0 : SV_BW_THREAD;
    const double es = prec == SAP_FLOAT ? 4.0 : 8.0, k = (double)K;
    const double per = k * k * es <= SV_CACHE_BYTES ? rc : bwt / es;
    const int nt = sap__threads(ctx);
    const double used = P > 0 && P < nt ? (double)P : (double)nt;
    return per * used;
}

/* LAPACK's dgbtrf (OpenBLAS, blocked: BLAS-3 updates) per host core: measured on a 2-core
 * host, N = 200,000, K = 100: 4 N K^2 = 8e9 flop (kl + ku = 2K with the pivoting fill) in
 * 0.64 s, 6.2e9 flop/s per core. */
#define SV_RATE_LAPACK 6.0e9

double sap__solver_direct_seconds(const sap_context *ctx, sap_int n, sap_int K)
{
    const double nn = (double)n, k = (double)K;
    sap__cost_rates r;
    sap__cost_rates_peek(ctx, &r);
    const double rate = r.lapack > 0 ? r.lapack : SV_RATE_LAPACK;
    return 4.0 * nn * k * k / (rate * (double)sap__threads(ctx)) +
           sap__solver_fill_seconds(ctx, nn * (3.0 * k + 1.0) * 8.0);
}

double sap__solver_fill_seconds(const sap_context *ctx, double bytes)
{
    return bytes / (ctx->backend == SAP_BACKEND_CUDA ? SV_BW_FILL_GPU : SV_BW_FILL);
}

/* The GPU's blocked LU (band_cuda.cu, blocked_lu_t): a fixed part (the skewed copy),
 * SV_BLK_STEP a step of SAP_BAND_BS columns (the diagonal-block kernel, three batched
 * GEMMs, the stores), SV_BLK_TASK a partition's step beyond, and the LU's own flops (2 sum_k
 * min(K_e, n_b - 1 - k)^2 a partition) at SV_BLK_RATE.  Fitted to an H200's factorizations
 * (float, bench/results/banded_factor_h200.md): 0.61 ms for N = 100,000 K = 128 P = 1562,
 * 1.26 ms for N = 200,000 K = 200 P = 2000, 2.38 ms for K = 500 P = 800, 3.1 / 16.8 ms for
 * N = 50,000 K = 1500 P = 66 / 14, 34 ms for N = 20,000 K = 600 P = 1, 20.7 ms for N = 1e6
 * K = 500 P = 2112 (within 1.6x of each).  Double: half the rate (not measured). */
#define SV_BLK_FIXED 1.5e-4
#define SV_BLK_STEP 1.07e-4
#define SV_BLK_TASK 2.3e-7
#define SV_BLK_RATE 1.0e13
/* Partitions of at most 128 rows are factored whole in shared memory (k_blk_small), a step
 * a row updating the K_e x K_e window below its pivot: SV_BLK_SMALL0, then per partition
 * n_b (SV_BLK_SMALL n_b + SV_BLK_SMALL_K K_e) (the tile's zeros and loads, the windows).
 * Fitted to an H200's float factorizations, within 1.2x of each: 0.30-0.32 ms for
 * P = 1562 partitions of 64 rows at K = 128, 1.15 ms for 2000 of 100 at K = 200
 * (banded_factor_h200_113af68.md); 0.64 / 0.95 / 1.33 ms for 15625 of 64 at K = 10 / 20
 * / 30, 0.14 ms for 1562 of 64 at K = 20 (banded_factor_small_k_h200_*.md). */
#define SV_BLK_SMALL0 5.0e-5
#define SV_BLK_SMALL 2.0e-12
#define SV_BLK_SMALL_K 4.4e-11

double sap_band_estimate_seconds(const sap_context *ctx, sap_int n, sap_int K, sap_int P, sap_precision prec)
{
    if (!ctx || n <= 0 || K <= 0) return 0.0;
    if (K >= n) K = n - 1;
    const double nn = (double)n, k = (double)K, es = prec == SAP_FLOAT ? 4.0 : 8.0;
    const double flops = 2.0 * nn * k * k;
    /* the factors, and on the host the double band they are converted from */
    const double bytes = nn * (2.0 * k + 1.0) * (es + (ctx->backend == SAP_BACKEND_CUDA ? 0.0 : 8.0));
    const sap_band_kernels *kt = sap__ops(ctx)->band;
    if (ctx->backend == SAP_BACKEND_CUDA && kt) {
        sap_int p = P;
        if (p <= 0) { /* the automatic SaP-D partitions */
            sap_band_method m = SAP_BAND_SAPD;
            sap__band_auto(ctx, n, K, 1.0, &m, &p, NULL, NULL, 0);
        }
        if (p < 1) p = 1;
        const double nb = ceil(nn / (double)p), ke = fmin(k, nb - 1), steps = ceil(nb / SAP_BAND_BS);
        if (sap__band_blocked_pick(kt, (sap_int)ke, (sap_int)nb, SAP_BAND_KERNEL_AUTO)) {
            if (nb <= 128)
                return SV_BLK_SMALL0 +
                       (double)p * nb * (SV_BLK_SMALL * nb + SV_BLK_SMALL_K * ke) * (prec == SAP_FLOAT ? 1.0 : 2.0) +
                       sap__solver_fill_seconds(ctx, bytes);
            const double own = 2.0 * (double)p * ((nb - ke) * ke * ke + (ke - 1) * ke * (2 * ke - 1) / 6.0);
            return SV_BLK_FIXED + steps * (SV_BLK_STEP + (double)p * SV_BLK_TASK) +
                   own / (prec == SAP_FLOAT ? SV_BLK_RATE : 0.5 * SV_BLK_RATE) + sap__solver_fill_seconds(ctx, bytes);
        }
    }
    return flops / sap__solver_rate(ctx, K, prec, P) + sap__solver_fill_seconds(ctx, bytes);
}
