/* solver_report.c -- what the sparse solver tells: the entries of stats.tried (one per
 * attempt, with its note), the statistics and reason string of the current attempt, and
 * the relay of an internal context's message to the user's context. */
#include "solver/solver_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sap__solver_relay(sap_solver *S)
{
    if (S->hctx && S->hctx->errmsg[0]) {
        snprintf(S->ctx->errmsg, sizeof(S->ctx->errmsg), "%s", S->hctx->errmsg);
        S->hctx->errmsg[0] = 0;
    }
}

int sap__solver_add_try(sap_solver *S, sap_solver_method m, sap_int P, sap_int K)
{
    sap_solver_stats *s = &S->stats;
    if (s->ntries >= SAP_SOLVER_MAX_TRIES) { /* keep the latest: drop the oldest */
        memmove(s->tried, s->tried + 1, sizeof(s->tried[0]) * (SAP_SOLVER_MAX_TRIES - 1));
        s->ntries--;
        if (S->att && S->att->itry > 0) S->att->itry--;
    }
    sap_solver_try *t = &s->tried[s->ntries];
    memset(t, 0, sizeof(*t));
    t->method = m;
    t->partitions = P;
    t->half_bandwidth = K;
    return s->ntries++;
}

void sap__solver_try_note(sap_solver *S, int i, const char *fmt, ...)
{
    if (i < 0 || i >= S->stats.ntries) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S->stats.tried[i].note, sizeof(S->stats.tried[i].note), fmt, ap);
    va_end(ap);
}

static const char *db_word(const sap_solver *S)
{
    if (S->db == SAP_DB_PRODUCT) return S->scale ? "product+scale" : "product";
    return S->db == SAP_DB_TRANSVERSAL ? "transversal" : "off";
}

void sap__solver_att_stats(sap_solver *S, const sap__attempt *a)
{
    sap_solver_stats *s = &S->stats;
    char head[200];
    if (S->ichain == 0)
        snprintf(head, sizeof(head), "%s: %.150s", sap_solver_method_name(a->method), S->why_first);
    else
        snprintf(head, sizeof(head), "%s: fallback %d of the chain (%s failed)", sap_solver_method_name(a->method),
                 S->ichain, sap_solver_method_name(S->chain[0]));
    if (strlen(head) > 120) { /* cut at a word, marked (not mid-word: "before sa") */
        size_t k = 117;
        while (k > 0 && head[k] != ' ') k--;
        if (k > 0 && (head[k - 1] == ';' || head[k - 1] == ',')) k--;
        memcpy(head + k, "...", 4);
    }
    char words[64] = ""; /* the method's part, e.g. "float, BiCGStab(2)" */
    if (a->type->report) a->type->report(S, a, words, sizeof(words));
    char big[640];
    snprintf(big, sizeof(big), "%s; DB %s%s; CM %s; K %lld%s; %s; %s; mem %.3g of %.3g GB (%s)", head,
             db_word(S), S->db_why, S->cm_why, (long long)a->K,
             a->K < S->K_auto && S->opt.drop_delta < 0 && a->type->band != SAP__SM_BAND_NONE
                 ? " (narrowed: memory or work)"
                 : "",
             S->drop_why, words, (double)a->mem / 1e9, (double)S->mem_limit / 1e9, S->mem_why);
    snprintf(s->reason, sizeof(s->reason), "%.383s", big);
    s->method = a->method;
    s->partitions = a->P;
    s->K_drop = a->K;
    s->K_max = a->Kmax;
    s->kept_fraction = a->kept;
    s->factor_precision = a->prec;
    s->krylov_type = a->cg     ? SAP_KRYLOV_CG
                     : a->rich ? SAP_KRYLOV_RICHARDSON
                               : (S->opt.krylov_auto ? SAP_KRYLOV_BICGSTABL : S->opt.krylov.type);
    s->on_host = !sap__solver_on_cuda(S->x);
    s->third_stage_used = a->third;
    s->boosted_pivots = a->boosted;
    s->dropped_entries = a->dropped;
    s->memory_estimate = a->mem;
    s->time_drop = a->t_drop + S->t_drop_auto;
    s->time_third = a->t_third;
    s->time_asmbl = a->t_asmbl;
    s->time_transfer = a->t_transfer;
    s->time_lu = a->t_lu;
    s->time_spk = a->t_spk;
    s->time_lurdcd = a->t_lurdcd;
}
