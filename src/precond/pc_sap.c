/* pc_sap.c -- the SaP banded preconditioners: "sap-d" (decoupled, block-diagonal),
 * "sap-c" (coupled, truncated SPIKE) and "sap" (automatic choice of the two).  The
 * numeric setup partitions A into P diagonal blocks (P from sap__pc_sap_configure or
 * automatic), factors them (src/band) in the preconditioner's precision
 * (sap_precond_set_precision; the banded solver picks float by default) and apply runs
 * the SaP driver.  Boosted pivots make the numeric setup return SAP_WARN_BOOSTED_PIVOTS.
 * On cuda the factors live in device memory and the cuda band kernels run. */
#include "precond/pc_sap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The options: a sap_band_options (P->opts), set by name through the tables below or
 * whole through sap__pc_sap_configure. */
#define BO(member) SAP_OPT_AT(sap_band_options, member)
static const sap_name_value auto_is_0[] = {{"auto", 0}, {NULL, 0}};
static const sap_name_value auto_is_m1[] = {{"auto", -1}, {NULL, 0}};
#define SAP_COMMON_OPTS                                                                                                \
    {.name = "partitions", .alias = "P", .help = "partitions P (auto: cpu 16 for SaP-D, 4 for SaP-C; cuda per SM; never the thread count)", .def = "auto", \
     .kind = SAP_OPT_INT, BO(partitions), .lo = 0, .hi = 9.2e18, .choices = auto_is_0, .meta = "P"},                 \
        {.name = "half_bandwidth", .alias = "K", .help = "entries with |i - j| > K are dropped (auto: the matrix' K)", \
         .def = "auto", .kind = SAP_OPT_INT, BO(half_bandwidth), .lo = 0, .hi = 9.2e18, .choices = auto_is_0,        \
         .meta = "K"},                                                                                                 \
        {.name = "boost_threshold", .help = "pivots below T are boosted (auto: eps * ||A_i||_inf)", .def = "auto",    \
         .kind = SAP_OPT_REAL, BO(boost_threshold), .choices = auto_is_m1, .meta = "T"},                              \
        {.name = "boost_value", .help = "magnitude of a boosted pivot (auto: sqrt(eps) * ||A_i||_inf)",               \
         .def = "auto", .kind = SAP_OPT_REAL, BO(boost_value), .choices = auto_is_0, .meta = "V"}
static const sap_opt_def sapdc_opts[] = {SAP_COMMON_OPTS};
static const sap_opt_def sapa_opts[] = {
    {.name = "method", .help = "SaP variant (auto: SaP-D when d >= 1 or P = 1, else SaP-C)", .def = "auto",
     .kind = SAP_OPT_ENUM, BO(method), .choices = sap__band_method_words},
    SAP_COMMON_OPTS};
#undef BO

extern const sap_precond_type sap__pc_sapd, sap__pc_sapc, sap__pc_sap;

typedef struct pc_sap_data {
    sap_band_method fixed; /* SAPD, SAPC or AUTO (from the name) */
    sap_band_source src; /* src.val != NULL: fill the factors from this backend band */
    sap_band_fact *F;
    sap_pc_sap_info info;
} pc_sap_data;

static sap_status sap_create_common(sap_precond *P, sap_band_method m)
{
    sap_status st = SAP_OK;
    pc_sap_data *d = NULL;
    SAP_CALLOC(P->ctx, d, 1);
    d->fixed = m;
    sap_band_options_init(P->opts);
    P->data = d;
cleanup:
    return st;
}
static sap_status sapd_create(sap_precond *P) { return sap_create_common(P, SAP_BAND_SAPD); }
static sap_status sapc_create(sap_precond *P) { return sap_create_common(P, SAP_BAND_SAPC); }
static sap_status sapa_create(sap_precond *P) { return sap_create_common(P, SAP_BAND_AUTO); }

static void free_fact(sap_precond *P)
{
    pc_sap_data *d = P->data;
    sap__band_fact_destroy(d->F);
    d->F = NULL;
}

static void sap_destroy(sap_precond *P)
{
    if (!P->data) return;
    free_fact(P);
    sap__free(P->ctx, P->data);
    P->data = NULL;
}

/* 1 when P is one of this file's types */
static int is_sap(const sap_precond *P)
{
    return P && P->data && P->opts && (P->type == &sap__pc_sapd || P->type == &sap__pc_sapc || P->type == &sap__pc_sap);
}

sap_status sap__pc_sap_configure(sap_precond *P, const sap_band_options *opt)
{
    if (!opt || !is_sap(P)) return SAP_ERR_INVALID;
    *(sap_band_options *)P->opts = *opt;
    if (P->state > SAP_PC_SYMBOLIC) P->state = SAP_PC_SYMBOLIC;
    return SAP_OK;
}

sap_status sap__pc_sap_set_source(sap_precond *P, const sap_band_source *src)
{
    if (!is_sap(P)) return SAP_ERR_INVALID;
    pc_sap_data *d = P->data;
    if (src) d->src = *src;
    else memset(&d->src, 0, sizeof(d->src));
    if (P->state > SAP_PC_SYMBOLIC) P->state = SAP_PC_SYMBOLIC;
    return SAP_OK;
}

sap_status sap__pc_sap_info(const sap_precond *P, sap_pc_sap_info *info)
{
    if (!info || !is_sap(P)) return SAP_ERR_INVALID;
    *info = ((const pc_sap_data *)P->data)->info;
    return SAP_OK;
}

static sap_status sap_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    pc_sap_data *d = P->data;
    const sap_band_options *opt = P->opts;
    sap_status st = SAP_OK;
    free_fact(P);
    memset(&d->info, 0, sizeof(d->info));
    sap_int K;
    double dom;
    if (d->src.val && d->fixed != SAP_BAND_AUTO && opt->partitions > 0) {
        /* method and P given, the band's shape from the source: no pass over A (the
         * dominance only chooses the method) */
        K = d->src.kl > d->src.w - 1 - d->src.kl ? d->src.kl : d->src.w - 1 - d->src.kl;
        dom = NAN;
    } else {
        sap__band_shape(A, sap__threads(ctx), &K, &dom);
    }
    if (opt->half_bandwidth > 0 && opt->half_bandwidth < K) K = opt->half_bandwidth;
    sap_band_method m = d->fixed != SAP_BAND_AUTO ? d->fixed : opt->method;
    if (m == SAP_BAND_DIRECT) m = SAP_BAND_SAPD; /* as a preconditioner: one LU block */
    sap_int np = opt->partitions;
    if (np < 0 || np > (A->nrows > 0 ? A->nrows : 1))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: %lld partitions for %lld rows (need 1 <= P <= N, 0 = auto)",
                         P->type->name, (long long)np, (long long)A->nrows);
    sap__band_auto(ctx, A->nrows, K, dom, &m, &np, NULL, d->info.reason, sizeof(d->info.reason));
    sap_band_factor_opts fo = {
        .boost_threshold = opt->boost_threshold, .boost_value = opt->boost_value, .coupled = m == SAP_BAND_SAPC};
    double t_bc = 0;
    st = sap__band_fact_create_src(ctx, A, d->src.val ? &d->src : NULL, np, opt->half_bandwidth, P->prec, &fo, 0,
                                   &d->F, &d->info.dropped, &t_bc);
    if (st < 0 || st == SAP_WARN_INTERRUPTED) return st; /* no factors */
    if (d->F->blocked) {
        const size_t len = strlen(d->info.reason);
        const sap_int K0 = d->F->kt->blocked_kmin, ke = sap__band_widest(&d->F->L);
        const sap_int n0 = d->F->kt->blocked_small_nmax, nm = sap__band_longest(&d->F->L);
        if (ke >= K0)
            snprintf(d->info.reason + len, sizeof(d->info.reason) - len, "; LU blocked (K_i %lld >= %lld)",
                     (long long)ke, (long long)K0);
        else if (nm <= n0)
            snprintf(d->info.reason + len, sizeof(d->info.reason) - len,
                     "; LU blocked (partitions of <= %lld rows in shared memory)", (long long)n0);
        else snprintf(d->info.reason + len, sizeof(d->info.reason) - len, "; LU blocked (asked)");
    }
    if (d->F->ul_blocked) {
        const size_t len = strlen(d->info.reason);
        snprintf(d->info.reason + len, sizeof(d->info.reason) - len, "; UL blocked");
    }
    d->info.method = m;
    d->info.P = d->F->L.P;
    d->info.K = d->F->L.K;
    d->info.boosted = d->F->boosted;
    d->info.t_lu = d->F->t_lu;
    d->info.t_bc = t_bc;
    d->info.t_spk = d->F->t_spk;
    d->info.t_lurdcd = d->F->t_lurdcd;
    return st;
}

static sap_status sap_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    pc_sap_data *d = P->data;
    /* r and z are backend vectors of the factors' precision: the driver runs the
     * backend's band kernels on them */
    return sap__band_fact_apply(d->F, r->data, z->data);
}

/* k columns: one pass over the factors for all of them (sap__band_fact_apply_many) */
static sap_status sap_apply_block(sap_precond *P, sap_int k, const sap_vec *r, sap_vec *z)
{
    pc_sap_data *d = P->data;
    return sap__band_fact_apply_many(d->F, k, r->data, z->data);
}

static void sap_report(const sap_precond *P, char *buf, size_t size)
{
    const pc_sap_data *d = P->data;
    const sap_pc_sap_info *i = &d->info;
    snprintf(buf, size,
             "chose %s, P = %lld, K = %lld, %lld boosted pivots, %lld dropped entries; T_LU %.3g s, T_BC %.3g s, "
             "T_SPK %.3g s, T_LUrdcd %.3g s\nwhy: %s\n",
             sap__name_of(sap__band_method_words, (int)i->method, "?"), (long long)i->P, (long long)i->K, (long long)i->boosted,
             (long long)i->dropped, i->t_lu, i->t_bc, i->t_spk, i->t_lurdcd, i->reason);
}

#define SAP_TYPE(var, nm, hlp, tab, create_fn)                                                                         \
    const sap_precond_type var = {.name = nm,                                                                          \
                                  .help = hlp,                                                                         \
                                  .opts = tab,                                                                         \
                                  .nopts = (int)(sizeof(tab) / sizeof(tab[0])),                                        \
                                  .opts_size = sizeof(sap_band_options),                                               \
                                  .create = create_fn,                                                                 \
                                  .setup_numeric = sap_numeric,                                                        \
                                  .apply = sap_apply,                                                                  \
                                  .apply_block = sap_apply_block,                                                      \
                                  .report = sap_report,                                                                \
                                  .destroy = sap_destroy}
SAP_TYPE(sap__pc_sapd, "sap-d", "SaP-D: banded, decoupled (block-diagonal LU of P partitions)", sapdc_opts,
         sapd_create);
SAP_TYPE(sap__pc_sapc, "sap-c", "SaP-C: banded, coupled (truncated SPIKE)", sapdc_opts, sapc_create);
SAP_TYPE(sap__pc_sap, "sap", "SaP-D or SaP-C, chosen from the matrix (or by the method option)", sapa_opts,
         sapa_create);
#undef SAP_TYPE

sap_status sap_precond_set_band_options(sap_precond *P, const sap_band_options *opt)
{
    if (!P) return SAP_ERR_INVALID;
    sap_status st = sap__pc_sap_configure(P, opt);
    if (st < 0) return SAP_ERROR(P->ctx, st, "sap_precond_set_band_options: '%s' is not a SaP preconditioner (or opt is NULL)",
                                 sap_precond_name(P));
    return st;
}

sap_status sap_precond_get_band_stats(const sap_precond *P, sap_band_stats *stats)
{
    if (!P || !stats) return SAP_ERR_INVALID;
    sap_pc_sap_info info;
    sap_status st = sap__pc_sap_info(P, &info);
    if (st < 0) return SAP_ERROR(P->ctx, st, "sap_precond_get_band_stats: '%s' is not a SaP preconditioner",
                                 sap_precond_name(P));
    memset(stats, 0, sizeof(*stats));
    stats->method = info.method;
    stats->partitions = info.P;
    stats->half_bandwidth = info.K;
    stats->factor_precision = P->prec;
    snprintf(stats->reason, sizeof(stats->reason), "%s", info.reason);
    stats->boosted_pivots = info.boosted;
    stats->dropped_entries = info.dropped;
    stats->time_lu = info.t_lu;
    stats->time_bc = info.t_bc;
    stats->time_spk = info.t_spk;
    stats->time_lurdcd = info.t_lurdcd;
    stats->time_setup = P->time_numeric;
    return SAP_OK;
}
