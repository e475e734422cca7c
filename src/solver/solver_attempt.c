/* solver_attempt.c -- the attempts of the sparse solver: building one method of the chain
 * from R->A (drop-off to its K, the third stage, the preconditioner or the band LU, the
 * Krylov matrix and method), its numeric refresh from new values, destroying it, and the
 * fallback chain that builds the methods in turn until one is usable.  Attempts that have
 * a fallback run as expected failures (sap__try_begin): their errors are recorded, listed
 * in stats.tried, and not printed. */
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

#define SV_TRY_MAXIT 200     /* iteration budget of an attempt that has a fallback */
#define SV_TRY_STAGNATION 50 /* stagnation window of such an attempt */

void sap__solver_try_begin(sap_solver *S, int on)
{
    if (!on) return;
    sap__try_begin(S->ctx);
    if (S->x != S->ctx) sap__try_begin(S->x);
}

void sap__solver_try_end(sap_solver *S, int on)
{
    if (!on) return;
    sap__try_end(S->ctx);
    if (S->x != S->ctx) sap__try_end(S->x);
}

int sap__solver_can_fall_back(const sap_solver *S) { return S->opt.fallback && S->ichain + 1 < S->nchain; }

void sap__solver_att_destroy(sap_solver *S, sap__attempt *a)
{
    if (!a) return;
    sap_context *ctx = S->ctx;
    sap_krylov_destroy(a->kry);
    sap_precond_destroy(a->pc);
    sap_matrix_destroy(a->M);
    sap__bp_destroy(a->bp);
    sap_csr_destroy(a->A_att);
    sap_csr_destroy(a->A_pc);
    sap__free(ctx, a->t);
    sap__free(ctx, a->map_att);
    sap__free(ctx, a->map_pc);
    sap__free(ctx, a);
}

static const sap_csr *att_full(const sap_solver *S, const sap__attempt *a) { return a->A_att ? a->A_att : S->R->A; }
static const sap_csr *att_pcm(const sap_solver *S, const sap__attempt *a)
{
    return a->A_pc ? a->A_pc : att_full(S, a);
}

sap_status sap__solver_att_numeric(sap_solver *S, sap__attempt *a)
{
    sap_status st = SAP_OK;
    double t0;
    if (a->bp) {
        SAP_TRY(sap__bp_refactor(a->bp, att_pcm(S, a)));
        a->t_asmbl = a->bp->t_asmbl;
        a->t_lu = a->bp->t_lu;
        return st;
    }
    if (a->pc) {
        SAP_TRY(sap_precond_setup_numeric(a->pc, att_pcm(S, a)));
        if (a->method != SAP_METHOD_JACOBI) {
            sap_pc_sap_info info;
            SAP_TRY(sap__pc_sap_info(a->pc, &info));
            a->boosted = info.boosted;
            a->dropped = info.dropped;
            /* info.K bounds the coupling blocks: the whole matrix' K (capped); with the
             * third stage the largest K_i is the third stage's */
            if (!a->third) a->Kmax = info.K;
            a->P = info.P;
            a->t_asmbl = info.t_bc;
            a->t_lu = info.t_lu;
            a->t_spk = info.t_spk;
            a->t_lurdcd = info.t_lurdcd;
        }
    }
    if (a->M) {
        t0 = sap__wtime();
        SAP_TRY(sap_matrix_update_values(a->M, att_full(S, a)->val));
        if (sap__solver_on_cuda(S->x)) a->t_transfer = sap__wtime() - t0;
    }
cleanup:
    return st;
}

/* Builds attempt m.  *reject = 1 when it was built but must not be used (too many boosted
 * pivots while a fallback remains).  note receives a short description. */
static sap_status att_build(sap_solver *S, sap_solver_method m, int final, sap__attempt **out, int *reject, char *note,
                            size_t nl)
{
    sap_context *ctx = S->ctx, *x = S->x;
    sap_status st = SAP_OK;
    const sap_int n = S->A->nrows;
    const int nt = sap__threads(ctx);
    sap__attempt *a = NULL;
    sap_csr *drop = NULL;
    sap_int *tinv = NULL, *Kib = NULL, *Ki = NULL;
    *out = NULL;
    *reject = 0;
    note[0] = 0;
    SAP_CALLOC(ctx, a, 1);
    a->method = m;
    a->final = final;
    a->itry = -1;

    /* K, P, precision */
    double t0 = sap__wtime();
    sap_int K = 0, P = 1;
    sap_precision prec = SAP_DOUBLE;
    double kept = 1;
    SAP_TRY(sap__solver_choose(S, m, final, &K, &P, &prec, &kept, note, nl));
    a->K = K;
    a->P = P;
    a->prec = prec;
    a->kept = kept;
    a->mem = sap__solver_estimate(S, m, P, K, prec);
    if (m == SAP_METHOD_BAND_PIVOT && !sap__bp_available())
        SAP_FAIL(ctx, SAP_ERR_NOT_COMPILED, "sap_solver band-pivot: this build has no LAPACK");

    /* drop-off and third stage */
    const sap_csr *RA = S->R->A;
    if (m != SAP_METHOD_JACOBI && K < S->K_cm) SAP_TRY(sap_csr_band_drop(RA, K, &drop));
    a->t_drop = sap__wtime() - t0;
    a->third = m == SAP_METHOD_SAPD && P > 1 && S->opt.third_stage != 0;
    if (a->third) {
        t0 = sap__wtime();
        SAP_ALLOC(ctx, a->t, n);
        SAP_ALLOC(ctx, tinv, n);
        SAP_ALLOC(ctx, Kib, P);
        SAP_ALLOC(ctx, Ki, P);
        SAP_TRY(sap_third_stage(drop ? drop : RA, P, SAP_CM_AUTO, a->t, Kib, Ki));
        for (sap_int b = 0; b < P; b++)
            if (Ki[b] > a->Kmax) a->Kmax = Ki[b];
        SAP_TRY(sap_perm_invert(ctx, n, a->t, tinv));
        SAP_TRY(sap_csr_permute(RA, a->t, a->t, &a->A_att));
        SAP_ALLOC(ctx, a->map_att, RA->nnz);
        sap__solver_map_entries(RA, tinv, tinv, a->A_att, a->map_att, nt);
        if (drop) {
            SAP_TRY(sap_csr_permute(drop, a->t, a->t, &a->A_pc));
            sap_csr_destroy(drop);
            drop = NULL;
        }
        a->t_third = sap__wtime() - t0;
    } else if (drop) {
        a->A_pc = drop;
        drop = NULL;
    }
    if (a->A_pc) {
        SAP_ALLOC(ctx, a->map_pc, RA->nnz);
        sap__solver_map_entries(RA, a->third ? tinv : NULL, a->third ? tinv : NULL, a->A_pc, a->map_pc, nt);
    }

    /* preconditioner or factorization */
    const sap_csr *F = att_full(S, a), *PC = att_pcm(S, a);
    if (m == SAP_METHOD_BAND_PIVOT) {
        sap_int kl, ku;
        sap__csr_lower_upper(PC, nt, &kl, &ku);
        SAP_TRY(sap__bp_create(x, PC, kl, ku, &a->bp));
        a->t_asmbl = a->bp->t_asmbl;
        a->t_lu = a->bp->t_lu;
        a->Kmax = kl > ku ? kl : ku;
        snprintf(note + strlen(note), nl - strlen(note), "%sdgbtrf kl %lld ku %lld", note[0] ? ", " : "",
                 (long long)kl, (long long)ku);
    } else {
        if (m == SAP_METHOD_JACOBI) {
            SAP_TRY(sap_precond_create(x, "jacobi", &a->pc));
        } else {
            SAP_TRY(sap_precond_create(x, m == SAP_METHOD_SAPC ? "sap-c" : "sap-d", &a->pc));
            sap_band_options bo;
            sap_band_options_init(&bo);
            bo.method = m == SAP_METHOD_SAPC ? SAP_BAND_SAPC : SAP_BAND_SAPD;
            bo.partitions = P;
            bo.boost_threshold = S->opt.boost_threshold;
            bo.boost_value = S->opt.boost_value;
            SAP_TRY(sap_precond_set_band_options(a->pc, &bo));
            SAP_TRY(sap_precond_set_precision(a->pc, prec));
        }
        t0 = sap__wtime();
        SAP_TRY(sap_matrix_create(x, F, NULL, &a->M));
        const double tmat = sap__wtime() - t0;
        sap_status sn = sap__solver_att_numeric(S, a);
        if (sn < 0) {
            st = sn;
            goto cleanup;
        }
        /* the Krylov matrix: an upload on cuda (T_Dtransf), a copy on the host (T_Asmbl) */
        if (sap__solver_on_cuda(x)) a->t_transfer = tmat;
        else a->t_asmbl += tmat;
        sap_krylov_options ko = S->opt.krylov;
        a->cg = S->stats.spd && !S->stats.db_used && m != SAP_METHOD_SAPC;
        if (S->opt.krylov_auto) {
            ko.type = a->cg ? SAP_KRYLOV_CG : SAP_KRYLOV_BICGSTABL;
            ko.param = a->cg ? 0 : 2;
        }
        a->cg = ko.type == SAP_KRYLOV_CG;
        if (!final) {
            if (ko.maxit > SV_TRY_MAXIT) ko.maxit = SV_TRY_MAXIT;
            if (ko.stagnation_window == 0) ko.stagnation_window = SV_TRY_STAGNATION;
        }
        ko.monitor = NULL;
        SAP_TRY(sap_krylov_create(x, &ko, &a->kry));
        if (m != SAP_METHOD_JACOBI)
            snprintf(note + strlen(note), nl - strlen(note), "%sK_max %lld, %s, %lld boosted", note[0] ? ", " : "",
                     (long long)a->Kmax, prec == SAP_FLOAT ? "float" : "double", (long long)a->boosted);
        if (a->boosted > SV_BOOST_FRACTION * (double)n && !final) {
            *reject = 1;
            st = SAP_WARN_BOOSTED_PIVOTS;
            snprintf(note, nl, "%lld boosted pivots > 1%% of N", (long long)a->boosted);
        }
    }
    if (!a->Kmax && m != SAP_METHOD_JACOBI && m != SAP_METHOD_BAND_PIVOT) a->Kmax = K;
    *out = a;
    a = NULL;
cleanup:
    if (st < 0 && !note[0]) snprintf(note, nl, "%s", sap_status_string(st));
    sap_csr_destroy(drop);
    sap__free(ctx, tinv);
    sap__free(ctx, Kib);
    sap__free(ctx, Ki);
    sap__solver_att_destroy(S, a);
    if (st < 0 && S->hctx) sap__solver_relay(S);
    return st;
}

sap_status sap__solver_chain_build(sap_solver *S, int i)
{
    sap_status st = SAP_ERR_INVALID, last = SAP_ERR_INVALID;
    sap__solver_att_destroy(S, S->att);
    S->att = NULL;
    for (; i < S->nchain; i++) {
        const int final = i == S->nchain - 1;
        char note[96];
        int reject = 0;
        sap__attempt *a = NULL;
        double t0 = sap__wtime();
        const int expected = !final && S->opt.fallback;
        sap__solver_try_begin(S, expected);
        st = att_build(S, S->chain[i], final, &a, &reject, note, sizeof(note));
        sap__solver_try_end(S, expected);
        int k = sap__solver_add_try(S, S->chain[i], a ? a->P : 0, a ? a->K : 0);
        S->stats.tried[k].status = st;
        S->stats.tried[k].time = sap__wtime() - t0;
        sap__solver_try_note(S, k, "setup: %s", note);
        S->ichain = i;
        if (st >= 0 && !reject) {
            a->itry = k;
            snprintf(a->note, sizeof(a->note), "%s", note);
            S->att = a;
            sap__solver_att_stats(S, a);
            return st;
        }
        sap__solver_att_destroy(S, a);
        if (expected)
            sap__log(S->ctx, SAP_PRINT_INFO, "sap_solver: %s not usable (%s), trying %s",
                     sap_solver_method_name(S->chain[i]), note, sap_solver_method_name(S->chain[i + 1]));
        last = st < 0 ? st : SAP_ERR_SINGULAR;
        /* a rejected attempt (too many boosted pivots) always has a next method: it is
         * recorded in tried[], not raised as an error */
        if (st > 0) st = SAP_ERR_SINGULAR;
        if (!S->opt.fallback) break;
        /* errors that no other method can avoid */
        if (st == SAP_ERR_INVALID || st == SAP_ERR_NONFINITE) break;
    }
    S->ichain = S->nchain; /* nothing usable */
    return st < 0 ? st : last;
}
