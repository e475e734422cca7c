/* solver_attempt.c -- the attempts of the sparse solver: the generic part of building one
 * method of the chain from R->A (the plan's K / P / precision, the drop-off to its K, then
 * the method's build through its sap__solver_method_type), its numeric refresh,
 * destroying it, the attempt's permutation (a method's reordering, e.g. SaP-D's third
 * stage), and the fallback chain that builds the methods in turn until one is usable.  Attempts that have
 * a fallback run as expected failures (sap__try_begin): their errors are recorded, listed
 * in stats.tried, and not printed. */
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

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
    if (S->dev) sap__solver_dev_forget(S, a);
    if (a->type && a->type->destroy) a->type->destroy(S, a);
    sap_csr_destroy(a->A_att);
    sap_csr_destroy(a->A_pc);
    sap__free(ctx, a->t);
    sap__free(ctx, a->map_att);
    sap__free(ctx, a->map_pc);
    sap__free(ctx, a);
}

const sap_csr *sap__solver_att_full(const sap_solver *S, const sap__attempt *a)
{
    return a->A_att ? a->A_att : S->R->A;
}

const sap_csr *sap__solver_att_pcm(const sap_solver *S, const sap__attempt *a)
{
    return a->A_pc ? a->A_pc : sap__solver_att_full(S, a);
}

sap_status sap__solver_att_numeric(sap_solver *S, sap__attempt *a)
{
    return a->type->numeric ? a->type->numeric(S, a) : SAP_OK;
}

sap_status sap__solver_att_permute(sap_solver *S, sap__attempt *a, sap_int *t)
{
    sap_context *ctx = S->ctx;
    const sap_csr *RA = S->R->A;
    const sap_int n = RA->nrows;
    const int nt = sap__threads_for(ctx, (double)RA->nnz + (double)n);
    sap_status st = SAP_OK;
    sap_int *tinv = NULL;
    sap_csr *pc = NULL;
    a->t = t;
    SAP_ALLOC(ctx, tinv, n);
    SAP_TRY(sap_perm_invert(ctx, n, t, tinv));
    SAP_TRY(sap_csr_permute(RA, t, t, &a->A_att));
    SAP_ALLOC(ctx, a->map_att, RA->nnz);
    SAP_TRY(sap__solver_map_entries(RA, tinv, tinv, a->A_att, a->map_att, nt));
    if (a->A_pc) {
        SAP_TRY(sap_csr_permute(a->A_pc, t, t, &pc));
        sap_csr_destroy(a->A_pc);
        a->A_pc = pc;
        SAP_ALLOC(ctx, a->map_pc, RA->nnz);
        SAP_TRY(sap__solver_map_entries(RA, tinv, tinv, a->A_pc, a->map_pc, nt));
    }
cleanup:
    sap__free(ctx, tinv);
    return st;
}

/* Builds attempt m: the plan's K, P and precision, the kept entries (K < K_cm), then the
 * method's build.  *reject = 1 when it was built but must not be used (e.g. too many
 * boosted pivots while a fallback remains).  note receives a short description. */
static sap_status att_build(sap_solver *S, int i, sap_solver_method m, int final, sap__attempt **out, int *reject,
                            char *note, size_t nl, double *pred, double *budget)
{
    sap_context *ctx = S->ctx;
    sap_status st = SAP_OK;
    const sap__solver_method_type *type = sap__solver_method_get(m);
    sap__attempt *a = NULL;
    *out = NULL;
    *reject = 0;
    note[0] = 0;
    if (!type) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver: unknown method %d", (int)m);
    SAP_CALLOC(ctx, a, 1);
    a->t_start = sap__wtime();
    a->method = m;
    a->type = type;
    a->final = final;
    a->itry = -1;
    a->ichain = i;

    /* K, P, precision */
    sap_int K = 0, P = 1;
    sap_precision prec = SAP_DOUBLE;
    double kept = 1;
    SAP_TRY(sap__solver_choose(S, m, final, &K, &P, &prec, &kept, note, nl));
    a->K = K;
    a->P = P;
    a->prec = prec;
    a->kept = kept;
    a->mem = sap__solver_estimate(S, m, P, K, prec);

    /* the time box: the predicted setup against the attempt's budget (decided here when
     * the setup alone may exceed the shortest budget; else by the monitor once it runs) */
    if (type->direct && type->band == SAP__SM_BAND_NONE) {
        const double p = m == SAP_METHOD_DIRECT_HOST || S->dpred_done ? sap__solver_direct_predict(S, m) : -1;
        a->predicted = p > 0 ? p : 0;
    } else {
        a->predicted = sap__solver_estimate_all(S, m, P, K, prec).seconds;
        if (a->predicted <= SV_SECONDS_UNKNOWN) a->predicted = 0; /* none */
        /* the cost model's prediction of the whole solve, where it made one */
        if (S->cost_ordered && i < SV_MAX_CHAIN && S->pred[i] > a->predicted) a->predicted = S->pred[i];
        const sap_solver_method md = sap__solver_next_direct(S, i);
        /* an automatic iterative attempt predicted beyond SV_LEARN_MARGIN times a sparse
         * direct method after it is skipped (the criterion of the learned cut, before the
         * start); a band method after a band method cut by its first steps has its
         * prediction scaled by the miss learned there (the predictions share the model) */
        sap_solver_method ml = SAP_METHOD_AUTO;
        double pl = -1;
        const int band_m = type->band != SAP__SM_BAND_NONE;
        const double pm = a->predicted * (band_m && S->learn_miss > 1 ? S->learn_miss : 1.0);
        /* (not where the skip cannot follow: the direct prediction, at least its analysis,
         * must come below 1 / SV_LEARN_MARGIN of the attempt's -- radiative_10k, 1.8e7
         * entries, spent 2.3 s in CHOLMOD's analysis before a 0.2 s SaP-C attempt.  The
         * analysis is the direct method's work: not on the attempt's clock.) */
        if (!type->direct && !final && S->opt.fallback && S->opt.time_budget == 0 &&
            !(i == 0 && S->opt.method != SAP_METHOD_AUTO) && pm > SV_LEARN_MIN &&
            SV_LEARN_MARGIN * sap__solver_direct_analysis_guess(S) < pm)
            pl = sap__solver_direct_after(S, a, i, &ml);
        if (pl > 0 && pm > SV_LEARN_MARGIN * pl) {
            if (pm > a->predicted)
                snprintf(note, nl, "predicted %.2g s x miss %.2g learned > %.2gx %s %.2g s: skip", a->predicted,
                         S->learn_miss, SV_LEARN_MARGIN, sap_solver_method_name(ml), pl);
            else
                snprintf(note, nl, "predicted %.2g s > %.2gx %s %.2g s: skip", a->predicted, SV_LEARN_MARGIN,
                         sap_solver_method_name(ml), pl);
            st = SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "sap_solver %s: %s", sap_solver_method_name(m), note);
            goto cleanup;
        } else if (type->direct && !final && a->predicted > SV_DIRECT_CMP_MIN && md != SAP_METHOD_AUTO &&
            S->opt.time_budget >= 0 && !(i == 0 && S->opt.method != SAP_METHOD_AUTO)) {
            /* a band direct solve (band-pivot) against the cheapest sparse direct one after
             * it: both costs are predicted, without a floor; the cheaper one runs.  The analysis
             * behind the direct prediction (seconds on a large band) is skipped when the
             * band-pivot prediction is below the least the direct one can be, or below what
             * that analysis alone is expected to cost (the cpu backend on
             * gen:synthetic:N=100000,K=50: 0.94 s of UMFPACK analysis on a 2-core host before a
             * band-pivot solve predicted 0.22 s) */
            sap_solver_method mb = md;
            const double pd = a->predicted <= sap__solver_direct_floor_after(S, i) ||
                                      a->predicted <= sap__solver_direct_analysis_guess(S)
                                  ? -1
                                  : sap__solver_direct_after(S, a, i, &mb);
            if (pd > 0 && a->predicted > pd) {
                snprintf(note, nl, "setup predicted %.2g s > %s's %.2g s: skip", a->predicted,
                         sap_solver_method_name(mb), pd);
                st = SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "sap_solver %s: %s", sap_solver_method_name(m), note);
                goto cleanup;
            }
        } else if (!final && (S->opt.time_budget > 0 ||
                              (a->predicted > SV_BUDGET_MIN &&
                               a->predicted > SV_BUDGET_FACTOR * sap__solver_direct_analysis_guess(S)))) {
            /* (an automatic budget is SV_BUDGET_FACTOR times a direct prediction, at least its
             * analysis: below that it cannot skip the attempt, and the monitor asks for it
             * once the attempt has run as long as that analysis) */
            char why[96];
            const double b = sap__solver_budget(S, a, i, why, sizeof(why));
            if (b > 0 && a->predicted > b) {
                snprintf(note, nl, "setup predicted %.2g s > budget %.2g s (%.30s): skip", a->predicted, b, why);
                st = SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "sap_solver %s: %s", sap_solver_method_name(m), note);
                goto cleanup;
            }
        }
    }

    /* a long step is announced; the monitor may stop here, before the work */
    if (sap__solver_before_build(S, a, i, note)) {
        snprintf(note, nl, "interrupted before its setup");
        st = SAP_WARN_INTERRUPTED;
        goto cleanup;
    }

    /* drop-off: the kept entries (T_Drop: not the choices above, whose direct prediction
     * may run the host analysis that T_Asmbl reports) */
    const double t0 = sap__wtime();
    const sap_csr *RA = S->R->A;
    if (type->band != SAP__SM_BAND_NONE && K < S->K_cm) SAP_TRY(sap_csr_band_drop(RA, K, &a->A_pc));
    a->t_drop = sap__wtime() - t0;

    /* the method (a direct one takes no Krylov matrix from the probe: that one goes first) */
    if (type->direct) sap__solver_probe_release(S);
    sap_status sb = type->build(S, a, note, nl, reject);
    if (sb < 0 || sb == SAP_WARN_INTERRUPTED) { /* an error, or a stop request during the setup */
        st = sb;
        if (sb == SAP_WARN_INTERRUPTED) snprintf(note, nl, "interrupted during its setup");
        goto cleanup;
    }
    if (*reject) st = sb;
    else if (sb > 0 && st == SAP_OK) st = sb;
    if (a->A_pc && !a->map_pc) {
        SAP_ALLOC(ctx, a->map_pc, RA->nnz);
        SAP_TRY(sap__solver_map_entries(RA, NULL, NULL, a->A_pc, a->map_pc, sap__threads(ctx)));
    }
    *pred = a->predicted;
    *budget = a->budget;
    *out = a;
    a = NULL;
cleanup:
    if (st < 0 && !note[0]) snprintf(note, nl, "%s", sap_status_string(st));
    if (a) {
        *pred = a->predicted;
        *budget = a->budget;
    }
    sap__solver_att_destroy(S, a);
    if (st < 0 && S->hctx) sap__solver_relay(S);
    return st;
}

static sap_status chain_build(sap_solver *S, int i);

sap_status sap__solver_chain_build(sap_solver *S, int i)
{
    sap__solver_stop_flag(S, 1);
    sap_status st = chain_build(S, i);
    sap__solver_stop_flag(S, 0);
    return st;
}

/* The cost model's order, step by step: once the host analysis has predicted the sparse
 * direct methods (it may come after the order was made, asked for by a time box), the
 * cheapest of those left runs next when it is predicted below the next method (with the
 * miss a band method learned): recirc2d's SaP-C predicted at 0.5 s ran before UMFPACK's
 * 0.32 s, and the fallback order puts direct-cudss before direct-host, which solves
 * airfoil_2d in 0.14 s where cuDSS's analysis alone takes 0.2 s. */
static void cheaper_direct_next(sap_solver *S, int i)
{
    if (!S->cost_ordered || S->opt.method != SAP_METHOD_AUTO || !S->dpred_done || i >= SV_MAX_CHAIN) return;
    int jb = -1;
    double pb = -1;
    for (int j = i; j < S->nchain && j < SV_MAX_CHAIN; j++) {
        const sap__solver_method_type *tj = sap__solver_method_get(S->chain[j]);
        if (!tj || !tj->direct || tj->band != SAP__SM_BAND_NONE) continue;
        const double pj = sap__solver_direct_predict(S, S->chain[j]);
        if (pj > 0 && (pb <= 0 || pj < pb)) jb = j, pb = pj;
    }
    if (jb <= i) return;
    const sap__solver_method_type *ti = sap__solver_method_get(S->chain[i]);
    double pi = ti && ti->direct && ti->band == SAP__SM_BAND_NONE ? sap__solver_direct_predict(S, S->chain[i])
                                                                 : S->pred[i];
    if (ti && ti->band != SAP__SM_BAND_NONE && S->learn_miss > 1) pi *= S->learn_miss;
    if (!(pi > pb)) return; /* unknown or cheaper: the order stands */
    const sap_solver_method m = S->chain[jb];
    const double p = S->pred[jb], it = S->pred_it[jb];
    for (int k = jb; k > i; k--) {
        S->chain[k] = S->chain[k - 1];
        S->pred[k] = S->pred[k - 1];
        S->pred_it[k] = S->pred_it[k - 1];
    }
    S->chain[i] = m;
    S->pred[i] = p > 0 ? p : pb;
    S->pred_it[i] = it;
}

static sap_status chain_build(sap_solver *S, int i)
{
    sap_status st = SAP_ERR_INVALID, last = SAP_ERR_INVALID;
    sap__solver_att_destroy(S, S->att);
    S->att = NULL;
    for (; i < S->nchain; i++) {
        cheaper_direct_next(S, i);
        const int final = i == S->nchain - 1;
        char note[96];
        int reject = 0;
        sap__attempt *a = NULL;
        double t0 = sap__wtime();
        const int expected = !final && S->opt.fallback;
        sap__solver_try_begin(S, expected);
        double pred = 0, budget = 0;
        st = att_build(S, i, S->chain[i], final, &a, &reject, note, sizeof(note), &pred, &budget);
        sap__solver_try_end(S, expected);
        int k = sap__solver_add_try(S, S->chain[i], a ? a->P : 0, a ? a->K : 0);
        S->stats.tried[k].status = st;
        S->stats.tried[k].time = sap__wtime() - t0;
        S->stats.tried[k].predicted = pred;
        S->stats.tried[k].budget = budget;
        sap__solver_try_note(S, k, "setup: %s", note);
        S->ichain = i;
        if (st == SAP_WARN_INTERRUPTED) {
            /* the caller's decision: no other method is tried, nothing is kept */
            sap__solver_att_destroy(S, a);
            S->interrupted = 1;
            return SAP_ERROR(S->ctx, SAP_WARN_INTERRUPTED, "sap_solver: interrupted %s the setup of %s",
                             strstr(note, "before") ? "by the monitor before" : "during",
                             sap_solver_method_name(S->chain[i]));
        }
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
        /* errors that no other method can avoid; a singular matrix found by a sparse
         * direct factorization (with pivoting, of the whole matrix) is reported, not
         * looped on */
        if (st == SAP_ERR_INVALID || st == SAP_ERR_NONFINITE) break;
        const sap__solver_method_type *ty = sap__solver_method_get(S->chain[i]);
        if (st == SAP_ERR_SINGULAR && ty && ty->direct && ty->band == SAP__SM_BAND_NONE) break;
    }
    S->ichain = S->nchain; /* nothing usable */
    return st < 0 ? st : last;
}
