/* band_sap.c -- the SaP driver, written once for every backend: partitioning, band and
 * coupling extraction, the order of the factorization kernels, and the preconditioner
 * apply (SaP-D: one block-diagonal solve; SaP-C: block solve, reduced 2K x 2K systems,
 * purified right-hand sides, second block solve).  The heavy operations are the band
 * kernel table (band_impl.h).
 * The arrays live in the backend's memory (F->ops; the band kernels F->kt = F->ops->band).  The band is either built
 * on the host from the CSR and uploaded (T_BC includes the upload) or, when the caller
 * has the matrix in the BAND format on the backend already (sap_band_source), filled
 * there directly. */
#include "band/band_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Automatic P on the cpu backend (sap__band_auto): fixed targets, whatever the threads. */
#define SAP_CPU_PARTITIONS_SAPD 16
#define SAP_CPU_PARTITIONS_SAPC 4

static size_t prec_size(sap_precision p) { return p == SAP_FLOAT ? sizeof(float) : sizeof(double); }

void sap__band_fact_destroy(sap_band_fact *F)
{
    if (!F) return;
    sap_context *ctx = F->ctx;
    if (F->kt->release) F->kt->release(F);
    void *dev[] = {F->lu, F->ul, F->B, F->C, F->V, F->W, F->R, F->rpiv, F->g, F->gk, F->xrk, F->xr};
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        if (dev[i]) F->ops->mem_free(ctx, dev[i]);
    void *host[] = {F->uoff, F->thr, F->bst, F->roff, F->xoff};
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++) sap__free(ctx, host[i]);
    sap__band_layout_free(ctx, &F->L);
    sap__free(ctx, F);
}

void sap__band_fact_bytes(const sap_context *ctx, int64_t n, sap_int P, sap_int K, sap_precision prec, int coupled,
                          int src, double *dev, double *host)
{
    const double es = (double)prec_size(prec);
    if (P < 1) P = 1;
    if (n > 0 && P > n) P = (sap_int)n;
    if (K < 0) K = 0;
    const double nn = (double)n, W = 2.0 * (double)K + 1.0, nbmax = ceil(nn / (double)P);
    const int cpl = coupled && P > 1;
    /* interfaces (P - 1), coupling size m <= min(K, partition height), UL windows of
     * w <= min(m + 3 max(K, 1), partition height) rows (sap__band_layout_create) */
    const double ni = cpl ? (double)(P - 1) : 0.0;
    const double m = fmin((double)K, nbmax), w = fmin(m + 3.0 * fmax((double)K, 1.0), nbmax);
    const double ncpl = ni * m * m, band = nn * W;
    /* the backend arrays: lu; ul, B, C, V, W, R, rpiv, xr, g; the kernels' parameter block
     * (c_prepare: 12 arrays of P + 1 eight-byte words and a counter); the norms of a fill
     * from a source */
    double d = sap__device_alloc_size(ctx, band * es);
    if (cpl) {
        d += sap__device_alloc_size(ctx, ni * W * w * es);
        d += 5.0 * sap__device_alloc_size(ctx, ncpl * es);
        d += sap__device_alloc_size(ctx, ni * m * 4.0) + sap__device_alloc_size(ctx, 2.0 * ni * m * es);
        d += sap__device_alloc_size(ctx, nn * es);
    }
    d += sap__device_alloc_size(ctx, (12.0 * ((double)P + 1.0) + 1.0) * 8.0);
    const sap_band_kernels *kt = sap__ops(ctx)->band;
    if (kt && kt->blocked_bytes && sap__band_blocked_pick(kt, (sap_int)fmin((double)K, nbmax - 1), (sap_int)nbmax,
                                                       SAP_BAND_KERNEL_AUTO))
        d += kt->blocked_bytes(ctx, n, P, (int64_t)nbmax, K, (size_t)es);
    double spk_host = 0;
    if (cpl && kt && kt->spikes_bytes) {
        double sd = 0;
        kt->spikes_bytes(ctx, P, ncpl, (sap_int)m, (size_t)es, &sd, &spk_host);
        d += sd;
    }
    if (src) d += sap__device_alloc_size(ctx, (double)P * 8.0);
    /* the host: the sap_band_fact itself, the layout (6 arrays of P + 1), thr, bst, norms,
     * uoff, roff, xoff; then the larger of two phases that never overlap: without a source
     * the double band, B, C and the UL windows, plus a float conversion buffer of the
     * largest of them while it is uploaded (all freed before prepare); the kernels'
     * prepare (cuda: its private state and the parameter block staged for the upload) */
    double h = (double)sizeof(sap_band_fact) + 12.0 * ((double)P + 1.0) * 8.0;
    double fill = 0;
    if (!src) {
        fill = band * 8.0;
        if (cpl) fill += 2.0 * ncpl * 8.0 + ni * W * w * 8.0;
        if (prec == SAP_FLOAT) fill += fmax(band, cpl ? fmax(ncpl, ni * W * w) : 0.0) * 4.0;
    }
    const double prep = kt && kt->prepare_host_bytes ? kt->prepare_host_bytes(P) : 0.0;
    h += fmax(fmax(fill, prep), spk_host); /* the spikes' pointers: after the fill's buffers are freed */
    *dev = d;
    *host = h;
}

/* Uploads n doubles converted to prec into the backend array dst (allocated here). */
static sap_status upload_conv(sap_band_fact *F, const double *src, int64_t n, void **dst)
{
    sap_context *ctx = F->ctx;
    sap_status st = SAP_OK;
    const size_t es = prec_size(F->prec);
    void *tmp = NULL;
    *dst = NULL;
    if (n <= 0) return SAP_OK;
    SAP_TRY(F->ops->mem_alloc(ctx, (size_t)n * es, dst));
    if (F->prec == SAP_FLOAT) {
        tmp = sap__alloc(ctx, (size_t)n, sizeof(float), false, __FILE__, __LINE__);
        if (!tmp)
            SAP_FAIL(ctx, sap__alloc_failure((size_t)n, sizeof(float)),
                     "band: no memory for a conversion buffer of %lld bytes", (long long)n * (long long)sizeof(float));
        float *t = tmp;
        const int nt = sap__threads(ctx);
        SAP_OMP_FOR(nt)
        for (int64_t i = 0; i < n; i++) t[i] = (float)src[i];
        SAP_TRY(F->ops->mem_upload(ctx, *dst, tmp, (size_t)n * es));
    } else {
        SAP_TRY(F->ops->mem_upload(ctx, *dst, src, (size_t)n * es));
    }
cleanup:
    sap__free(ctx, tmp);
    return st;
}

static sap_status alloc_dev(sap_band_fact *F, size_t n, size_t es, void **p)
{
    *p = NULL;
    if (n == 0) return SAP_OK;
    return F->ops->mem_alloc(F->ctx, n * es, p);
}

void sap__band_boost_params(sap_band_fact *F, const double *norms, const sap_band_factor_opts *o)
{
    const double eps = F->prec == SAP_FLOAT ? 0x1.0p-23 : 0x1.0p-52;
    for (sap_int b = 0; b < F->L.P; b++) {
        const double nrm = norms[b] > 0 ? norms[b] : 1.0;
        F->thr[b] = o->boost_threshold >= 0 ? o->boost_threshold : eps * nrm;
        F->bst[b] = o->boost_value > 0 ? o->boost_value : sqrt(eps) * nrm;
        if (F->prec == SAP_FLOAT && !((float)F->bst[b] > 0)) F->bst[b] = 1;
    }
}

sap_int sap__band_widest(const sap_band_layout *L)
{
    sap_int ke = 0;
    for (sap_int b = 0; b < L->P; b++) {
        const sap_int nb1 = L->off[b + 1] - L->off[b] - 1, kb = L->Ki[b] < nb1 ? L->Ki[b] : nb1;
        if (kb > ke) ke = kb;
    }
    return ke;
}

sap_int sap__band_longest(const sap_band_layout *L)
{
    sap_int nm = 0;
    for (sap_int b = 0; b < L->P; b++)
        if (L->off[b + 1] - L->off[b] > nm) nm = L->off[b + 1] - L->off[b];
    return nm;
}

int sap__band_blocked_pick(const sap_band_kernels *kt, sap_int K, sap_int nmax, int kernel)
{
    if (!kt->blocked_kmin) return 0;
    if (kernel == SAP_BAND_KERNEL_AUTO) {
        const char *env = getenv("SAP_BAND_FACTOR");
        if (env && !strcmp(env, "rows")) kernel = SAP_BAND_KERNEL_ROWS;
        else if (env && !strcmp(env, "blocked")) kernel = SAP_BAND_KERNEL_BLOCKED;
    }
    if (kernel != SAP_BAND_KERNEL_AUTO) return kernel == SAP_BAND_KERNEL_BLOCKED;
    return K >= kt->blocked_kmin || (nmax > 0 && nmax <= kt->blocked_small_nmax);
}

/* UL window offsets and the backend arrays of the coupled method (spikes, reduced
 * systems, interface unknowns). */
static sap_status alloc_coupled(sap_band_fact *F)
{
    sap_context *ctx = F->ctx;
    sap_status st = SAP_OK;
    const sap_band_layout *L = &F->L;
    const size_t es = prec_size(F->prec);
    const int64_t ncpl = L->P > 1 ? L->coff[L->P - 1] : 0;
    SAP_ALLOC(ctx, F->uoff, L->P + 1);
    F->uoff[0] = 0;
    for (sap_int b = 0; b < L->P; b++) F->uoff[b + 1] = F->uoff[b] + (2 * L->Ki[b] + 1) * L->w[b];
    SAP_TRY(alloc_dev(F, (size_t)ncpl, es, &F->V));
    SAP_TRY(alloc_dev(F, (size_t)ncpl, es, &F->W));
    SAP_TRY(alloc_dev(F, (size_t)ncpl, es, &F->R));
    SAP_ALLOC(ctx, F->roff, L->P);
    SAP_ALLOC(ctx, F->xoff, L->P);
    int64_t sm = 0;
    for (sap_int i = 0; i < L->P; i++) {
        F->roff[i] = sm;
        F->xoff[i] = 2 * sm;
        sm += L->m[i];
    }
    SAP_TRY(alloc_dev(F, (size_t)sm, sizeof(int32_t), (void **)&F->rpiv));
    F->xlen = 2 * sm;
    SAP_TRY(alloc_dev(F, (size_t)(2 * sm), es, &F->xr));
    SAP_TRY(alloc_dev(F, (size_t)L->n, es, &F->g));
cleanup:
    return st;
}

/* The factorizations (T_LU), spikes (T_SPK) and reduced systems (T_LUrdcd) of the filled
 * arrays. */
static sap_status factor_all(sap_band_fact *F)
{
    sap_status st = SAP_OK;
    double t0 = sap__wtime();
    st = F->kt->factor(F, &F->boosted);
    if (st < 0 || st == SAP_WARN_INTERRUPTED) return st; /* a stop (cpu kernels): nothing kept */
    st = SAP_OK;
    F->t_lu = sap__wtime() - t0;
    if (F->coupled && sap__stop_requested(F->ctx))
        return SAP_ERROR(F->ctx, SAP_WARN_INTERRUPTED, "band factorization: stopped on request before the spikes");
    if (F->coupled) {
        t0 = sap__wtime();
        SAP_TRY(F->kt->spikes(F));
        F->t_spk = sap__wtime() - t0;
        t0 = sap__wtime();
        SAP_TRY(F->kt->reduced_factor(F));
        F->t_lurdcd = sap__wtime() - t0;
    }
    if (F->boosted > 0) {
        SAP_ERROR(F->ctx, SAP_WARN_BOOSTED_PIVOTS, "band: %lld pivots boosted during factorization",
                  (long long)F->boosted);
        return SAP_WARN_BOOSTED_PIVOTS;
    }
cleanup:
    return st;
}

sap_status sap__band_fact_create(sap_context *ctx, const sap_csr *A, sap_int P, sap_int K_cap, sap_precision prec,
                                 const sap_band_factor_opts *o, int host_only, sap_band_fact **out, sap_int *dropped,
                                 double *t_bc)
{
    return sap__band_fact_create_src(ctx, A, NULL, P, K_cap, prec, o, host_only, out, dropped, t_bc);
}

sap_status sap__band_fact_create_src(sap_context *ctx, const sap_csr *A, const sap_band_source *src, sap_int P,
                                     sap_int K_cap, sap_precision prec, const sap_band_factor_opts *o, int host_only,
                                     sap_band_fact **out, sap_int *dropped, double *t_bc)
{
    sap_status st = SAP_OK;
    sap_band_fact *F = NULL;
    double *band = NULL, *B = NULL, *C = NULL, *win = NULL, *norms = NULL;
    *out = NULL;
    double t0 = sap__wtime();
    SAP_CALLOC(ctx, F, 1);
    F->ctx = ctx;
    F->prec = prec;
    F->ops = host_only ? sap__backend_cpu_ops() : sap__ops(ctx);
    F->kt = F->ops->band;
    if (src && !F->kt->fill_from_band) src = NULL;
    /* from a band source: A's half-bandwidth is the source's, and a decoupled fill counts
     * its dropped entries in the layout's pass over A */
    const int one_pass = src && !(o->coupled && P > 1);
    const sap_int K_known = src ? (src->kl > src->w - 1 - src->kl ? src->kl : src->w - 1 - src->kl) : -1;
    sap_int ndrop = 0; /* counted by the layout's pass (one_pass) */
    SAP_TRY(sap__band_layout_create(ctx, A, P, K_cap, K_known, src && src->canonical, one_pass ? &ndrop : NULL,
                                    &F->L));
    if (one_pass && dropped) *dropped = ndrop;
    const sap_band_layout *L = &F->L;
    F->coupled = o->coupled && L->P > 1;
    F->blocked = sap__band_blocked_pick(F->kt, sap__band_widest(L), sap__band_longest(L), o->kernel);
    if (F->coupled) {
        sap_int kw = 0, wmax = 0; /* the windows' widest own band and longest window */
        for (sap_int b = 1; b < L->P; b++) {
            const sap_int kb = L->Ki[b] < L->w[b] - 1 ? L->Ki[b] : L->w[b] - 1;
            if (kb > kw) kw = kb;
            if (L->w[b] > wmax) wmax = L->w[b];
        }
        F->ul_blocked = sap__band_blocked_pick(F->kt, kw, wmax, o->kernel);
    }
    const size_t es = prec_size(prec);
    const int64_t ncpl = L->P > 1 ? L->coff[L->P - 1] : 0;
    SAP_ALLOC(ctx, F->thr, L->P);
    SAP_ALLOC(ctx, F->bst, L->P);
    SAP_ALLOC(ctx, norms, L->P);
    if (F->coupled) SAP_TRY(alloc_coupled(F));
    const int nt = sap__threads(ctx);
    if (src) {
        /* everything on the backend from the source band: the host only counts the dropped
         * entries (and checks the values) */
        if (!one_pass) SAP_TRY(sap__band_fill(ctx, A, L, NULL, NULL, NULL, F->coupled, dropped));
        SAP_TRY(alloc_dev(F, (size_t)L->boff[L->P], es, &F->lu));
        if (F->coupled) {
            SAP_TRY(alloc_dev(F, (size_t)F->uoff[L->P], es, &F->ul));
            SAP_TRY(alloc_dev(F, (size_t)ncpl, es, &F->B));
            SAP_TRY(alloc_dev(F, (size_t)ncpl, es, &F->C));
        }
        memset(F->thr, 0, sizeof(double) * (size_t)L->P);
        memset(F->bst, 0, sizeof(double) * (size_t)L->P);
        if (F->kt->prepare) SAP_TRY(F->kt->prepare(F));
        SAP_TRY(F->kt->fill_from_band(F, src, norms));
        sap__band_boost_params(F, norms, o);
        if (F->kt->update_boost) SAP_TRY(F->kt->update_boost(F));
    } else {
        SAP_ALLOC(ctx, band, L->boff[L->P]);
        if (F->coupled) {
            SAP_ALLOC(ctx, B, ncpl);
            SAP_ALLOC(ctx, C, ncpl);
        }
        SAP_TRY(sap__band_fill(ctx, A, L, band, B, C, F->coupled, dropped));
        /* boost parameters from ||A_i||_inf */
        SAP_OMP_FOR_DYNAMIC(nt, 1)
        for (sap_int b = 0; b < L->P; b++) {
            const sap_int nb = L->off[b + 1] - L->off[b], K = L->Ki[b];
            const double *a = band + L->boff[b];
            double nrm = 0;
            for (sap_int r = 0; r < nb; r++) {
                double sum = 0;
                for (sap_int t = 0; t <= 2 * K; t++) sum += fabs(a[t * nb + r]);
                if (sum > nrm) nrm = sum;
            }
            norms[b] = nrm;
        }
        sap__band_boost_params(F, norms, o);
        SAP_TRY(upload_conv(F, band, L->boff[L->P], &F->lu));
        if (F->coupled) {
            /* leading windows of partitions 1..P-1 for the UL factorizations */
            SAP_ALLOC(ctx, win, F->uoff[L->P]);
            SAP_OMP_FOR_DYNAMIC(nt, 4)
            for (sap_int b = 1; b < L->P; b++) {
                const sap_int nb = L->off[b + 1] - L->off[b], K = L->Ki[b], w = L->w[b];
                const double *sb = band + L->boff[b];
                double *dst = win + F->uoff[b];
                for (sap_int t = 0; t <= 2 * K; t++)
                    for (sap_int r = 0; r < w; r++) {
                        sap_int c = r + t - K;
                        dst[t * w + r] = (c >= 0 && c < w) ? sb[t * nb + r] : 0.0;
                    }
            }
            SAP_TRY(upload_conv(F, win, F->uoff[L->P], &F->ul));
            SAP_TRY(upload_conv(F, B, ncpl, &F->B));
            SAP_TRY(upload_conv(F, C, ncpl, &F->C));
        }
        SAP_FREE(ctx, B);
        SAP_FREE(ctx, C);
        SAP_FREE(ctx, win);
        SAP_FREE(ctx, band);
        if (F->kt->prepare) SAP_TRY(F->kt->prepare(F));
    }
    SAP_FREE(ctx, norms);
    if (t_bc) *t_bc = sap__wtime() - t0;
    st = factor_all(F);
    if (st < 0 || st == SAP_WARN_INTERRUPTED) goto cleanup; /* interrupted: F released, as on an error */
    *out = F;
    return st;
cleanup:
    sap__free(ctx, band);
    sap__free(ctx, B);
    sap__free(ctx, C);
    sap__free(ctx, win);
    sap__free(ctx, norms);
    sap__band_fact_destroy(F);
    return st;
}

sap_status sap__band_fact_apply(sap_band_fact *F, const void *r, void *z)
{
    const sap_band_kernels *kt = F->kt;
    sap_status st = SAP_OK;
    if (!F->coupled) return kt->block_solve(F, 1, r, z);
    SAP_TRY(kt->block_solve(F, 1, r, F->g));
    SAP_TRY(kt->reduced_solve(F, 1, F->g, F->xr));
    SAP_TRY(kt->purify(F, 1, r, z, F->xr));
    SAP_TRY(kt->block_solve(F, 1, z, z));
cleanup:
    return st;
}

sap_status sap__band_fact_apply_many(sap_band_fact *F, sap_int k, const void *r, void *z)
{
    const sap_band_kernels *kt = F->kt;
    sap_status st = SAP_OK;
    if (k < 1) return SAP_ERROR(F->ctx, SAP_ERR_INVALID, "band apply: %lld columns", (long long)k);
    if (k == 1) return sap__band_fact_apply(F, r, z);
    if (!F->coupled) return kt->block_solve(F, k, r, z);
    const size_t es = prec_size(F->prec);
    if (F->gk_cols < k) { /* the first block solve's k columns and their interface unknowns
                             (F->g and F->xr hold one) */
        const size_t xlen = (size_t)F->xlen;
        if (F->gk) F->ops->mem_free(F->ctx, F->gk);
        if (F->xrk) F->ops->mem_free(F->ctx, F->xrk);
        F->gk = F->xrk = NULL;
        F->gk_cols = 0;
        SAP_TRY(alloc_dev(F, (size_t)k * (size_t)F->L.n, es, &F->gk));
        if (xlen) SAP_TRY(alloc_dev(F, (size_t)k * xlen, es, &F->xrk));
        F->gk_cols = k;
    }
    SAP_TRY(kt->block_solve(F, k, r, F->gk));
    SAP_TRY(kt->reduced_solve(F, k, F->gk, F->xrk));
    SAP_TRY(kt->purify(F, k, r, z, F->xrk));
    SAP_TRY(kt->block_solve(F, k, z, z));
cleanup:
    return st;
}

void sap__band_auto(const sap_context *ctx, sap_int n, sap_int K, double d, sap_band_method *method, sap_int *P,
                    sap_precision *prec, char *reason, size_t reason_len)
{
    /* SaP-D vs SaP-C: diagonal dominance d >= 1 makes the coupling blocks' effect decay
     * fast (the Krylov method absorbs it in a few iterations, Table 2 of the paper: SaP-D
     * is the faster one there); below that SaP-C. */
    if (*method == SAP_BAND_AUTO) {
        if (P && *P == 1) *method = SAP_BAND_SAPD;
        else *method = d >= 1.0 ? SAP_BAND_SAPD : SAP_BAND_SAPC;
    }
    const int coupled = *method == SAP_BAND_SAPC;
    /* P.  It depends on the matrix (n, K), the method and the backend kind only, never on
     * the thread count: the partitions ARE the preconditioner, so a P that followed the
     * threads would make the results depend on them (determinism, README).
     * cpu: the band kernels run one partition per thread and the work of a partition (LU,
     * sweeps) is sequential, so P bounds the threads the factorization can use.  SaP-D:
     * P = 16 feeds up to 16 threads, and smaller blocks let the third stage shrink each
     * K_i (gen:poisson3d:n=40, 2 threads: P = 2 15 s, 8 5.8 s, 16 3.3 s) for a small
     * iteration cost (gen:banded:N=200000,K=50,d=1: P = 2..16 within 7%).  SaP-C: its
     * spikes and reduced systems grow with P and it has no third stage: P = 4 (wang3,
     * K = 674, 2 threads: P = 2 2.5 s, 4 3.6 s, 8 11.6 s).
     * cuda: a thread block per partition; the sequential chain of a partition (n_i steps
     * of LU and of each sweep) is what costs, so many short partitions win (bench psweep
     * on an H200, N = 200,000, K = 200, device part: P = 264 40 ms, 1000 15.4 ms, 2000
     * 10.7 ms): SaP-D with partitions of the least height max(K/2, 64) rows, however many
     * that makes (at least 16 per SM where the band allows); SaP-C (whose spikes and reduced
     * systems grow with P) up to 2 per SM with partitions >= max(2K, 64) rows (the SM count
     * is fixed for a given GPU).  SaP-D's partitions of the least height against 16 per SM
     * (bench/banded e2e, d = 1, H200, device time T_LU + T_Kry, iterations in brackets):
     * N = 1e6, K = 50 15.1 ms (9) -> 8.7 ms (9), K = 100 21.2 (8) -> 10.2 (9), K = 200
     * 28.6 (7) -> 19.3 (8), K = 500 49.0 (7) -> 32.3 (7); N = 5e5, K = 100 9.2 -> 5.6, K =
     * 200 13.0 -> 8.9; N = 2e5, K = 100 4.3 -> 2.8 ms; K = 20: N = 1e6 10.7 (10) -> 9.1 (11),
     * 5e5 5.8 -> 4.9: the sweeps are shorter and partitions of <= 128 rows factor in shared
     * memory (K >= 32); the coupling the shorter partitions drop costs at most one
     * iteration there. */
    sap_int p = coupled ? SAP_CPU_PARTITIONS_SAPC : SAP_CPU_PARTITIONS_SAPD;
    const char *why_p = coupled ? "cpu SaP-C target, whatever the threads" : "cpu SaP-D target, whatever the threads";
    sap_int minrows = 2 * K > 64 ? 2 * K : 64;
    if (ctx->backend == SAP_BACKEND_CUDA) { /* units = SMs */
        const sap_int units = sap__ops(ctx)->units(ctx);
        p = coupled ? 2 * units : 16 * units;
        why_p = coupled ? "two partitions per SM" : "partitions of max(K/2, 64) rows";
        if (!coupled) {
            minrows = K / 2 > 64 ? K / 2 : 64;
            if (n / minrows > p) p = n / minrows;
        }
    }
    if (p > n / minrows) {
        p = n / minrows;
        why_p = coupled ? "limited by partitions of >= max(2K, 64) rows" : "limited by the partition height";
    }
    if (p < 1) p = 1;
    if (P && *P <= 0) *P = p;
    else if (P) why_p = "given";
    /* factors in float: half the memory traffic; the double Krylov iteration recovers the
     * accuracy.  Double for DIRECT (no outer iteration) and for strongly non-dominant
     * matrices (d < 0.1), where float LU without pivoting loses too much. */
    if (prec) *prec = (*method == SAP_BAND_DIRECT || d < 0.1) ? SAP_DOUBLE : SAP_FLOAT;
    if (reason) {
        char dw[32] = ""; /* d is NaN where the caller did not compute it (method and P given) */
        if (!isnan(d)) snprintf(dw, sizeof(dw), " (d = %.3g)", d);
        snprintf(reason, reason_len, "%s%s, P = %lld (%s)%s%s", sap_band_method_name(*method), dw,
                 (long long)(P ? *P : p), why_p, prec ? (*prec == SAP_FLOAT ? ", float" : ", double") : "",
                 prec ? " factors" : "");
    }
}
