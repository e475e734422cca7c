/* solver_method_btd.c -- the strategy methods "bcyclic", "spike" and "reduced-spike": the
 * block-tridiagonal direct solvers of src/btd/ on the original matrix (the reorderings of
 * the setup are not applied: they would break the block pattern), block width from the
 * "block" option or detected from the pattern, partitions from "partitions" (Spike).  A
 * direct solve inside the shared refinement; several right-hand sides go through one solve.
 * A matrix whose pattern is not block tridiagonal with a usable k (at most n / 2) fails
 * with SAP_ERR_INVALID (the chain goes on). */
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

#define SV_REFINE_BTD 3
#define SV_RATE_BTD 1.0e10 /* flop/s of the block operations per host thread; a GPU ~1e12 */

static sap_btd_algo algo_of(const sap__solver_method_type *t)
{
    return t->method == SAP_METHOD_SPIKE ? SAP_BTD_SPIKE
           : t->method == SAP_METHOD_REDUCED_SPIKE ? SAP_BTD_REDUCED_SPIKE
                                                   : SAP_BTD_BCYCLIC;
}

/* k from the option or the pattern (0: none fits) */
static sap_int block_of(const sap_solver *S)
{
    sap_int k = S->opt.block;
    if (k <= 0 && sap_btd_detect_block(S->A, &k) != SAP_OK) return 0;
    return k;
}

/* BCYCLIC ~ (14/3) k^3 per block row with the hatted blocks and updates; Spike twice */
static void btd_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                         sap_precision prec, sap__sm_estimate *e)
{
    (void)P, (void)K, (void)prec;
    const double n = (double)S->A->nrows;
    sap_int k = S->opt.block > 0 ? S->opt.block : (K > 0 ? K : 1);
    double nb = n / (double)k, kk = (double)k * (double)k;
    e->bytes = sap__solver_bytes(nb * kk * 8.0 * (t->method == SAP_METHOD_BCYCLIC ? 10.0 : 12.0) + 4 * n * 8);
    e->flops = (t->method == SAP_METHOD_BCYCLIC ? 14.0 / 3.0 : 10.0) * nb * kk * (double)k;
    double rate = sap__solver_on_cuda(S->x) ? 1.0e12 : SV_RATE_BTD * (double)sap__threads(S->x);
    e->seconds = e->flops / rate;
}

static sap_status btd_build(sap_solver *S, sap__attempt *a, char *note, size_t nl, int *reject)
{
    (void)reject;
    sap_status st = SAP_OK;
    sap_int k = block_of(S);
    if (k <= 0 || k > S->A->nrows / 2)
        return SAP_ERROR(S->ctx, SAP_ERR_INVALID, "sap_solver %s: the pattern is not block tridiagonal with a block "
                         "width k <= n / 2 (detected k = %lld; --opt block=k sets it)", a->type->name, (long long)k);
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.algo = algo_of(a->type);
    o.partitions = S->opt.partitions;
    sap_btd *T = NULL;
    SAP_TRY(sap_btd_create_csr(S->x, S->A, k, &o, &T));
    a->impl = T;
    SAP_TRY(sap_btd_factor(T));
    sap_btd_stats bs;
    sap_btd_get_stats(T, &bs);
    a->t_lu = bs.time_factor;
    a->P = bs.partitions;
    a->Kmax = k;
    snprintf(note + strlen(note), nl - strlen(note), "%sk %lld, %lld block rows, %s", note[0] ? ", " : "",
             (long long)k, (long long)bs.nb, sap_btd_variant_name(bs.variant));
cleanup:
    return st;
}

static sap_status btd_numeric(sap_solver *S, sap__attempt *a)
{
    sap_status st = sap_btd_refactor_csr(a->impl, S->A);
    sap_btd_stats bs;
    sap_btd_get_stats(a->impl, &bs);
    a->t_lu = bs.time_factor;
    return st;
}

static sap_status btd_solve(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                            const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters, double *tkry)
{
    (void)S, (void)X0, (void)ldx0;
    double t0 = sap__wtime();
    sap_status st = sap_btd_solve_many(a->impl, m, R, ldr, X, ldx);
    if (tkry) *tkry += sap__wtime() - t0;
    if (iters) *iters += 1;
    return st;
}

static void btd_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    (void)S;
    sap_btd_stats bs;
    sap_btd_get_stats(a->impl, &bs);
    snprintf(buf, size, "%s k %lld, %s", sap_btd_algo_name(bs.algo), (long long)bs.k, sap_btd_variant_name(bs.variant));
}

static void btd_destroy(sap_solver *S, sap__attempt *a)
{
    (void)S;
    sap_btd_destroy(a->impl);
    a->impl = NULL;
}

#define BTD_METHOD(NAME, ALIAS, HELP, VALUE)                                                                     \
    {.name = NAME, .alias = ALIAS, .help = HELP, .method = VALUE, .band = SAP__SM_BAND_NONE,                     \
     .refine_passes = SV_REFINE_BTD, .refine_slow = SAP__REFINE_SLOW_GOES_ON, .direct = 1,                       \
     .batch = "one block solve per step", .estimate = btd_estimate, .build = btd_build, .numeric = btd_numeric, \
     .solve = btd_solve, .report = btd_report, .destroy = btd_destroy}

const sap__solver_method_type sap__sm_bcyclic =
    BTD_METHOD("bcyclic", NULL, "block cyclic reduction of a block-tridiagonal matrix (--opt block=k), direct",
               SAP_METHOD_BCYCLIC);
const sap__solver_method_type sap__sm_spike =
    BTD_METHOD("spike", NULL, "Spike on block-row partitions of a block-tridiagonal matrix, direct", SAP_METHOD_SPIKE);
const sap__solver_method_type sap__sm_reduced_spike =
    BTD_METHOD("reduced-spike", "reduced_spike",
               "truncated Spike of a block-tridiagonal matrix (exact for decaying spikes), with refinement",
               SAP_METHOD_REDUCED_SPIKE);
