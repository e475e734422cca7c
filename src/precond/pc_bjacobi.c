/* pc_bjacobi.c -- block-Jacobi preconditioners on the natural blocks of the matrix:
 * "bjacobi" (every block stored in double) and "bjacobi-adaptive" (each block stored in
 * fp16, fp32 or fp64 chosen from its 1-norm condition number, the rule of Anzt, Flegar,
 * Higham, Quintana-Orti: fp16 if kappa_1 <= 1e2, fp32 if <= 1e6, else fp64; computation is
 * always in double).  The symbolic setup finds the blocks (src/matrix/csr_blocks.c:
 * supervariables of identical row pattern agglomerated up to maxblock rows, or uniform
 * blocks) and prepares the backend; the numeric setup extracts and factors all blocks in
 * one batch on the backend (device/bjacobi_kernels.h: Gauss-Jordan inversion or LU with
 * triangular solves at apply time, implicit pivoting).  A block whose pivot falls below
 * s * eps * ||D_b||_1, whose kappa_1 exceeds 1/eps or whose values are not finite falls
 * back to scalar Jacobi (its diagonal; a zero diagonal entry counts as 1): the setup then
 * returns SAP_WARN_BOOSTED_PIVOTS and names the first such block (option singular=error:
 * SAP_ERR_SINGULAR instead; non-finite values are always SAP_ERR_NONFINITE). */
#include "precond/precond_impl.h"
#include "matrix/csr_blocks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct bj_opts {
    int64_t maxblock;
    int uniform, agglomerate, variant, singular;
    double cond_fp16, cond_fp32;
} bj_opts;

#define BJ(member) SAP_OPT_AT(bj_opts, member)
static const sap_name_value variant_words[] = {{"gj", SAP_BJ_GJ}, {"gauss-jordan", SAP_BJ_GJ}, {"lu", SAP_BJ_LU},
                                               {NULL, 0}};
static const sap_name_value singular_words[] = {{"fallback", 0}, {"error", 1}, {NULL, 0}};
#define BJ_COMMON_OPTS                                                                                                 \
    {.name = "maxblock", .help = "largest block (rows); bjacobi:N sets it", .def = "32", .kind = SAP_OPT_INT,          \
     BJ(maxblock), .lo = 1, .hi = SAP_BLOCKS_MAX, .meta = "N"},                                                       \
        {.name = "uniform", .help = "blocks of maxblock consecutive rows instead of supervariables", .def = "off",    \
         .kind = SAP_OPT_BOOL, BJ(uniform)},                                                                           \
        {.name = "agglomerate", .help = "merge consecutive supervariables up to maxblock rows", .def = "on",          \
         .kind = SAP_OPT_BOOL, BJ(agglomerate)},                                                                       \
        {.name = "variant", .help = "gj: explicit inverse (Gauss-Jordan); lu: LU, triangular solves at apply",        \
         .def = "gj", .kind = SAP_OPT_ENUM, BJ(variant), .choices = variant_words},                                    \
        {.name = "singular", .help = "a singular block: fallback (scalar Jacobi for it, a warning) or error",         \
         .def = "fallback", .kind = SAP_OPT_ENUM, BJ(singular), .choices = singular_words}
static const sap_opt_def bj_opts_plain[] = {BJ_COMMON_OPTS};
static const sap_opt_def bj_opts_adaptive[] = {
    BJ_COMMON_OPTS,
    {.name = "cond_fp16", .help = "blocks with kappa_1 <= C are stored in fp16", .def = "1e2", .kind = SAP_OPT_REAL,
     BJ(cond_fp16), .meta = "C"},
    {.name = "cond_fp32", .help = "else blocks with kappa_1 <= C are stored in fp32 (else fp64)", .def = "1e6",
     .kind = SAP_OPT_REAL, BJ(cond_fp32), .meta = "C"},
};
#undef BJ

extern const sap_precond_type sap__pc_bjacobi, sap__pc_bjacobi_adaptive;

typedef struct bj_data {
    int adaptive;
    bj_opts used;     /* the options of the symbolic setup */
    sap_int nnz;      /* the pattern's entries at the symbolic setup */
    sap_csr_blocks B;
    sap_bj_fact F;
    sap_int nprec[3]; /* blocks per storage precision after the numeric setup */
    sap_int nfallback, first_fallback;
    int first_info;
    double bytes;     /* storage bytes of the blocks */
    sap_vec tmp;      /* a copy of r when apply is called with z = r */
} bj_data;

static void free_fact(sap_precond *P)
{
    bj_data *d = P->data;
    sap__bj_fini(&d->F);
    memset(&d->F, 0, sizeof(d->F));
    sap__csr_blocks_free(P->ctx, &d->B);
}

static sap_status bj_create_common(sap_precond *P, int adaptive)
{
    sap_status st = SAP_OK;
    bj_data *d = NULL;
    SAP_CALLOC(P->ctx, d, 1);
    d->adaptive = adaptive;
    P->data = d;
cleanup:
    return st;
}
static sap_status bj_create(sap_precond *P) { return bj_create_common(P, 0); }
static sap_status bja_create(sap_precond *P) { return bj_create_common(P, 1); }

static void bj_destroy(sap_precond *P)
{
    if (!P->data) return;
    free_fact(P);
    bj_data *d = P->data;
    if (d->tmp.data) sap__ops(P->ctx)->vec_destroy(P->ctx, &d->tmp);
    sap__free(P->ctx, P->data);
    P->data = NULL;
}

static sap_status bj_symbolic(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    bj_data *d = P->data;
    const bj_opts *o = P->opts;
    sap_status st = SAP_OK;
    free_fact(P);
    if (d->adaptive && !(o->cond_fp16 <= o->cond_fp32))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: cond_fp16 = %g must not exceed cond_fp32 = %g", P->type->name,
                         o->cond_fp16, o->cond_fp32);
    SAP_TRY(sap__csr_blocks(ctx, A, (int)o->maxblock, o->uniform, o->agglomerate, &d->B));
    sap_bj_fact *F = &d->F;
    F->variant = o->variant;
    F->adaptive = d->adaptive;
    F->cond_fp16 = d->adaptive ? o->cond_fp16 : 0;
    F->cond_fp32 = d->adaptive ? o->cond_fp32 : 0;
    SAP_TRY(sap__bj_init(ctx, F, A, d->B.nb, d->B.rows, d->B.off));
    d->used = *o;
    d->nnz = A->nnz;
cleanup:
    if (st < 0) free_fact(P);
    return st;
}

static sap_status bj_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    bj_data *d = P->data;
    sap_status st = SAP_OK;
    /* options changed after the symbolic setup, or a new pattern: redo it */
    if (!d->F.kt || memcmp(&d->used, P->opts, sizeof(bj_opts)) != 0 || d->nnz != A->nnz)
        SAP_TRY(bj_symbolic(P, A));
    sap_bj_fact *F = &d->F;
    SAP_TRY(F->kt->load(F, A));
    SAP_TRY(F->kt->factor(F));
    memset(d->nprec, 0, sizeof(d->nprec));
    d->nfallback = 0;
    d->first_fallback = -1;
    d->first_info = 0;
    for (sap_int b = 0; b < F->nb; b++) {
        d->nprec[F->bprec[b] < 3 ? F->bprec[b] : 0]++;
        if (F->info[b] == SAP_BJ_NONFINITE)
            SAP_FAIL(ctx, SAP_ERR_NONFINITE, "%s: block %lld (rows %lld..) holds a NaN or Inf value", P->type->name,
                     (long long)b, (long long)F->rows[F->off[b]]);
        if (F->info[b]) {
            if (d->nfallback++ == 0) {
                d->first_fallback = b;
                d->first_info = F->info[b];
            }
        }
    }
    d->bytes = sap__bj_apply_bytes(F, 0);
    if (d->nfallback) {
        const sap_int b = d->first_fallback;
        const int err = ((const bj_opts *)P->opts)->singular == 1;
        st = SAP_ERROR(ctx, err ? SAP_ERR_SINGULAR : SAP_WARN_BOOSTED_PIVOTS,
                       "%s: %lld of %lld blocks are %s; the first is block %lld (%lld rows from row %lld)%s",
                       P->type->name, (long long)d->nfallback, (long long)F->nb,
                       d->first_info == SAP_BJ_SINGULAR ? "singular" : "ill-conditioned (kappa_1 > 1/eps)",
                       (long long)b, (long long)(F->off[b + 1] - F->off[b]), (long long)F->rows[F->off[b]],
                       err ? "" : "; scalar Jacobi is used for them");
    }
cleanup:
    return st;
}

static sap_status bj_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    bj_data *d = P->data;
    if (r->data != z->data) return d->F.kt->apply(&d->F, r->data, z->data, r->prec);
    /* z = D^{-1} z: through a copy of r (the kernels read other rows of r than they write) */
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_status st = SAP_OK;
    if (d->tmp.data && (d->tmp.n != r->n || d->tmp.prec != r->prec)) ops->vec_destroy(ctx, &d->tmp);
    if (!d->tmp.data) SAP_TRY(ops->vec_create(ctx, r->n, r->prec, &d->tmp));
    SAP_TRY(ops->copy(ctx, r, &d->tmp));
    SAP_TRY(d->F.kt->apply(&d->F, d->tmp.data, z->data, r->prec));
cleanup:
    return st;
}

static void bj_report(const sap_precond *P, char *buf, size_t size)
{
    const bj_data *d = P->data;
    char blocks[600];
    sap__csr_blocks_describe(&d->B, blocks, sizeof(blocks));
    const double nb = d->F.nb > 0 ? (double)d->F.nb : 1.0;
    snprintf(buf, size,
             "blocks: %s\nvariant: %s, storage: fp16 %.1f%%, fp32 %.1f%%, fp64 %.1f%% of the blocks, %.3g MB\n"
             "fallback to scalar Jacobi: %lld blocks",
             blocks, d->F.variant == SAP_BJ_LU ? "lu" : "gj", 100.0 * (double)d->nprec[SAP_BJ_FP16] / nb,
             100.0 * (double)d->nprec[SAP_BJ_FP32] / nb, 100.0 * (double)d->nprec[SAP_BJ_FP64] / nb, d->bytes / 1e6,
             (long long)d->nfallback);
}

const sap_precond_type sap__pc_bjacobi = {
    .name = "bjacobi",
    .help = "block-Jacobi on the natural blocks (supervariables, <= maxblock rows), blocks inverted in double",
    .opts = bj_opts_plain,
    .nopts = (int)(sizeof(bj_opts_plain) / sizeof(bj_opts_plain[0])),
    .opts_size = sizeof(bj_opts),
    .create = bj_create,
    .setup_symbolic = bj_symbolic,
    .setup_numeric = bj_numeric,
    .apply = bj_apply,
    .report = bj_report,
    .destroy = bj_destroy,
};

const sap_precond_type sap__pc_bjacobi_adaptive = {
    .name = "bjacobi-adaptive",
    .help = "block-Jacobi, each block stored in fp16/fp32/fp64 from its condition number kappa_1 (computed in double)",
    .opts = bj_opts_adaptive,
    .nopts = (int)(sizeof(bj_opts_adaptive) / sizeof(bj_opts_adaptive[0])),
    .opts_size = sizeof(bj_opts),
    .create = bja_create,
    .setup_symbolic = bj_symbolic,
    .setup_numeric = bj_numeric,
    .apply = bj_apply,
    .report = bj_report,
    .destroy = bj_destroy,
};
