/* solver_method_sap.c -- the strategy methods "sap-d" and "sap-c" (two entries of one
 * file): the dense banded SaP-D (decoupled; with P > 1 the third-stage CM inside each
 * partition) or SaP-C (coupled, truncated SPIKE) preconditioner of the kept band inside
 * the Krylov method.  P and the factor precision come from the band rule
 * (sap__band_auto); SaP-C needs P >= 2.  band-lu (solver_method_band_lu.c) is SaP-D with
 * P = 1 on the CM band and builds on the functions here. */
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- plan -------------------------------------------------------------------------------- */

static void shape(const sap_solver *S, int coupled, sap_int K, sap_int *P, sap_precision *prec)
{
    const sap_int n = S->A->nrows;
    char reason[160] = "";
    sap_band_method bm = coupled ? SAP_BAND_SAPC : SAP_BAND_SAPD;
    *P = S->opt.partitions;
    sap__band_auto(S->x, n, K, S->d_cm, &bm, P, prec, reason, sizeof(reason));
    if (coupled && S->opt.partitions == 0 && *P < 2 && n >= 4) *P = 2; /* coupled needs P >= 2 */
    if (S->opt.factor_precision >= 0) *prec = (sap_precision)S->opt.factor_precision;
}

static void sapd_shape(const sap_solver *S, const sap__solver_method_type *t, sap_int K, sap_int *P,
                       sap_precision *prec)
{
    (void)t;
    shape(S, 0, K, P, prec);
}

static void sapc_shape(const sap_solver *S, const sap__solver_method_type *t, sap_int K, sap_int *P,
                       sap_precision *prec)
{
    (void)t;
    shape(S, 1, K, P, prec);
}

/* Flops of the band LU (N x N, half-bandwidth K): 2 N K^2. */
static double lu_flops(const sap_solver *S, sap_int K) { return 2.0 * (double)S->A->nrows * (double)K * (double)K; }

/* The host's part of a SaP setup.  A band narrower than CM's is a copy of the kept entries
 * (sap_csr_band_drop and its entry map; every backend).  On a device, a band that A fills
 * less than the Krylov matrix's BAND format asks (sap__solver_band_matrix: 70%) has no band
 * on the device to fill the factors from: SaP-D's partitions (the third stage's narrower
 * bands) are assembled from the kept entries; SaP-C, or one partition, has the host fill
 * its double band (first touch of N (2K + 1) 8 bytes), then convert and upload it
 * (band_sap.c).  Measured on an H100's host: T_Asmbl 92 ms for airfoil_2d's SaP-C band (K =
 * 440, 100 MB), about 0.5 s for recirc2d n = 300 (K = 300, 433 MB); on an H200's host, SaP-D
 * of gen:synthetic N = 100,000 K = 50 (2.1e6 entries): T_Drop 15 ms, T_Asmbl 20 ms, and
 * 7-19 ns an entry for T_Drop on the other generated systems. */
#define SV_SAP_NNZ_S 1.0e-8 /* host seconds an entry of the drop-off's copy, and of SaP-D's assembly */
static double host_setup_seconds(const sap_solver *S, sap_int P, sap_int K, int coupled)
{
    const double nnz = (double)S->A->nnz;
    const double drop = K < S->K_cm ? SV_SAP_NNZ_S * nnz : 0;
    if (!sap__solver_on_cuda(S->x) || K <= 0) return drop;
    const double slots = (double)S->A->nrows * (2.0 * (double)K + 1.0);
    if (0.7 * slots <= nnz) return drop;
    if (!(coupled || P <= 1)) return drop + SV_SAP_NNZ_S * nnz;
    return drop + slots * 8.0 / SV_BW_HOST_FILL;
}

void sap__solver_sap_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                              sap_precision prec, sap__sm_estimate *e)
{
    (void)t;
    double dev = 0, host = 0;
    sap__band_fact_bytes(S->x, S->A->nrows, P, K, prec, 0, 0, &dev, &host);
    double b = dev + sap__solver_krylov_bytes(S);
    if (!sap__solver_on_cuda(S->x)) b += host; /* on cuda the limit is the device's */
    e->bytes = sap__solver_bytes(b);
    e->flops = lu_flops(S, K);
    e->seconds = sap_band_estimate_seconds(S->x, S->A->nrows, K, P, prec) + host_setup_seconds(S, P, K, 0);
}

/* SaP-C: the band, the coupling / spike / reduced blocks and UL windows of the P - 1
 * interfaces, the interface vectors (sap__band_fact_bytes), the Krylov part and, on the
 * host, the band assembled in double.  Its setup is the factorization's plus, in its
 * seconds (its flops, which the work limit narrows K by, stay the factorization's):
 *  - where the backend's kernel table predicts its coupling (cuda: the blocked UL windows,
 *    batched TRSM spikes, GEMM product and the reduced LU, band_cuda.cu), the windows
 *    (w = min(m + 3 K, n / P) rows each) priced as P - 1 partitions of the band estimate and
 *    the table's coupling seconds;
 *  - else the spikes, which sweep each partition's factors with m = min(K, n / P) columns
 *    (about the LU's flops again), and the P - 1 dense 2m x 2m reduced LUs (16/3 m^3 each)
 *    at the band rate: on an H100 with the per-row kernels, airfoil_2d (K = 440, P = 16)
 *    spent 28.5 ms in T_LU, 29 ms in T_SPK and 26.6 ms in T_LUrdcd. */
static void sapc_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                          sap_precision prec, sap__sm_estimate *e)
{
    (void)t;
    double dev = 0, host = 0;
    sap__band_fact_bytes(S->x, S->A->nrows, P, K, prec, 1, 0, &dev, &host);
    double b = dev + sap__solver_krylov_bytes(S);
    if (!sap__solver_on_cuda(S->x)) b += host;
    e->bytes = sap__solver_bytes(b);
    e->flops = lu_flops(S, K);
    e->seconds = sap_band_estimate_seconds(S->x, S->A->nrows, K, P, prec) + host_setup_seconds(S, P, K, 1);
    if (P >= 2 && K > 0) {
        const double np = (double)S->A->nrows / (double)P, m = (double)K < np ? (double)K : np;
        const sap_band_kernels *kt = sap__ops(S->x)->band;
        if (kt && kt->coupling_seconds) {
            const double w = fmin(m + 3.0 * (double)K, ceil(np));
            e->seconds += sap_band_estimate_seconds(S->x, (sap_int)((double)(P - 1) * w), K, P - 1, prec) +
                          kt->coupling_seconds(S->x, P, (sap_int)m, prec);
            return;
        }
        const double red = (double)(P - 1) * 16.0 / 3.0 * m * m * m;
        e->seconds += lu_flops(S, K) / sap__solver_rate(S->x, K, prec, P) +
                      red / sap__solver_rate(S->x, K, prec, P - 1);
    }
}

/* ---- attempt ----------------------------------------------------------------------------- */

sap_status sap__solver_sap_build(sap_solver *S, sap__attempt *a, int coupled, char *note, size_t nl, int *reject)
{
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows, P = a->P;
    sap_status st = SAP_OK;
    sap_int *t = NULL, *Kib = NULL, *Ki = NULL;
    /* the third stage: a CM inside each partition (a block-diagonal permutation t) */
    /* ... skipped (automatic) when the band is at the bound no ordering can beat */
    a->third = !coupled && P > 1 && S->opt.third_stage != 0 &&
               !(S->opt.third_stage < 0 && sap__solver_band_at_bound(S, a->K));
    if (a->third) {
        const double t0 = sap__wtime();
        SAP_ALLOC(ctx, t, n);
        SAP_ALLOC(ctx, Kib, P);
        SAP_ALLOC(ctx, Ki, P);
        SAP_TRY(sap_third_stage(sap__solver_att_pcm(S, a), P, SAP_CM_AUTO, t, Kib, Ki));
        for (sap_int b = 0; b < P; b++)
            if (Ki[b] > a->Kmax) a->Kmax = Ki[b];
        sap_int *tt = t;
        t = NULL;
        SAP_TRY(sap__solver_att_permute(S, a, tt));
        a->t_third = sap__wtime() - t0;
    }
    SAP_TRY(sap_precond_create(S->x, coupled ? "sap-c" : "sap-d", &a->pc));
    sap_band_options bo;
    sap_band_options_init(&bo);
    bo.method = coupled ? SAP_BAND_SAPC : SAP_BAND_SAPD;
    bo.partitions = P;
    bo.boost_threshold = S->opt.boost_threshold;
    bo.boost_value = S->opt.boost_value;
    SAP_TRY(sap_precond_set_band_options(a->pc, &bo));
    SAP_TRY(sap_precond_set_precision(a->pc, a->prec));
    a->rich_ok = 1;
    sap_status sk = sap__solver_krylov_setup(S, a, !coupled);
    if (sk < 0 || sk == SAP_WARN_INTERRUPTED) { /* a stop request inside the factorization */
        st = sk;
        goto cleanup;
    }
    if (sk > 0 && st == SAP_OK) st = sk; /* warnings kept */
    snprintf(note + strlen(note), nl - strlen(note), "%sK_max %lld, %s, %lld boosted", note[0] ? ", " : "",
             (long long)a->Kmax, a->prec == SAP_FLOAT ? "float" : "double", (long long)a->boosted);
    st = sap__solver_krylov_reject(S, a, note, nl, reject);
    if (!a->Kmax) a->Kmax = a->K;
cleanup:
    sap__free(ctx, t);
    sap__free(ctx, Kib);
    sap__free(ctx, Ki);
    return st;
}

static sap_status sapd_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    return sap__solver_sap_build(S, a, 0, note, nl, reject);
}

static sap_status sapc_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    return sap__solver_sap_build(S, a, 1, note, nl, reject);
}

sap_status sap__solver_sap_numeric(sap_solver *S, sap__attempt *a) { return sap__solver_krylov_numeric(S, a, 1); }

void sap__solver_sap_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    (void)S;
    sap__solver_krylov_report(a, 1, buf, size);
}

const sap__solver_method_type sap__sm_sapd = {
    .name = "sap-d",
    .alias = "sapd",
    .help = "decoupled SaP preconditioner (SaP-D), BiCGStab(2); CG for SPD",
    .method = SAP_METHOD_SAPD,
    .batch = "lockstep Krylov, one band pass a step",
    .band = SAP__SM_BAND_AUTO,
    .refine_passes = SV_REFINE_KRYLOV,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .shape = sapd_shape,
    .estimate = sap__solver_sap_estimate,
    .build = sapd_build,
    .numeric = sap__solver_sap_numeric,
    .solve = sap__solver_krylov_solve,
    .report = sap__solver_sap_report,
    .destroy = sap__solver_krylov_destroy,
};

const sap__solver_method_type sap__sm_sapc = {
    .name = "sap-c",
    .alias = "sapc",
    .help = "coupled SaP preconditioner (SaP-C, truncated SPIKE, P >= 2), BiCGStab(2)",
    .method = SAP_METHOD_SAPC,
    .batch = "lockstep Krylov, one band pass a step",
    .band = SAP__SM_BAND_AUTO,
    .refine_passes = SV_REFINE_KRYLOV,
    .refine_slow = SAP__REFINE_SLOW_STOPS_COLUMN,
    .shape = sapc_shape,
    .estimate = sapc_estimate,
    .build = sapc_build,
    .numeric = sap__solver_sap_numeric,
    .solve = sap__solver_krylov_solve,
    .report = sap__solver_sap_report,
    .destroy = sap__solver_krylov_destroy,
};
