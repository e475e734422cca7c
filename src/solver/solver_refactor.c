/* solver_refactor.c -- sap_solver_refactor: new values for the pattern of setup.  The
 * values go through position maps computed once (original entry -> R->A entry at the first refactor,
 * R->A entry -> the attempt's matrices when it is built), scaled with the DB factors of
 * the setup; the current attempt then redoes only its numeric work, or hands over to the
 * next method of the chain. */
#include "solver/solver_internal.h"

#include <math.h>
#include <string.h>

/* Rows of Y whose column range is at most this wide (and at most 4 x the row length + 64)
 * are searched through a dense window of positions instead of a binary search. */
#define MAP_WINDOW_MAX 65536

sap_status sap__solver_map_entries(const sap_csr *X, const sap_int *rinv, const sap_int *cinv, const sap_csr *Y,
                                   sap_int *map, int nt)
{
    sap_context *ctx = X->ctx;
    sap_int wcap = 0, maxlen = 0, *slots = NULL;
    for (sap_int i = 0; i < Y->nrows; i++)
        if (Y->rowptr[i + 1] - Y->rowptr[i] > maxlen) maxlen = Y->rowptr[i + 1] - Y->rowptr[i];
    if (X->nnz <= 200000 || nt < 1) nt = 1;
    slots = sap__window_slots(ctx, nt, maxlen, Y->ncols, MAP_WINDOW_MAX, &wcap);
    if (!slots) return sap__alloc_failure((size_t)nt, (size_t)wcap * sizeof(sap_int));
    SAP_OMP("omp parallel num_threads(nt)")
    {
        int t, T;
        sap__omp_team(&t, &T);
        sap_int *slot = slots + (size_t)t * (size_t)wcap;
        SAP_OMP("omp for schedule(static)")
        for (sap_int i = 0; i < X->nrows; i++) {
            const sap_int yi = rinv ? rinv[i] : i;
            const sap_int y0 = Y->rowptr[yi], y1 = Y->rowptr[yi + 1];
            const sap_int lo_col = y1 > y0 ? Y->colind[y0] : 0, w = y1 > y0 ? Y->colind[y1 - 1] - lo_col + 1 : 0;
            if (w > 0 && w <= wcap && w <= 4 * (y1 - y0) + 64) { /* the dense window: rows of Y are sorted */
                for (sap_int q = y0; q < y1; q++) slot[Y->colind[q] - lo_col] = q;
                for (sap_int k = X->rowptr[i]; k < X->rowptr[i + 1]; k++) {
                    const sap_int yj = (cinv ? cinv[X->colind[k]] : X->colind[k]) - lo_col;
                    map[k] = yj >= 0 && yj < w ? slot[yj] : -1;
                }
                for (sap_int q = y0; q < y1; q++) slot[Y->colind[q] - lo_col] = -1;
                continue;
            }
            for (sap_int k = X->rowptr[i]; k < X->rowptr[i + 1]; k++) {
                const sap_int yj = cinv ? cinv[X->colind[k]] : X->colind[k];
                sap_int lo = y0, hi = y1;
                while (lo < hi) {
                    sap_int mid = lo + (hi - lo) / 2;
                    if (Y->colind[mid] < yj) lo = mid + 1;
                    else hi = mid;
                }
                map[k] = (lo < y1 && Y->colind[lo] == yj) ? lo : -1;
            }
        }
    }
    sap__free(ctx, slots);
    return SAP_OK;
}

/* S->map0 (original entry -> R->A entry) when R->A is not S->A and it is not there yet. */
static sap_status solver_map0(sap_solver *S)
{
    const sap_reorder_result *R = S->R;
    if (!R || R->A == S->A || S->map0) return SAP_OK;
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    sap_int *rinv = NULL, *cinv = NULL, *map = NULL;
    SAP_ALLOC(ctx, rinv, n);
    SAP_ALLOC(ctx, cinv, n);
    SAP_ALLOC(ctx, map, S->A->nnz > 0 ? S->A->nnz : 1);
    SAP_TRY(sap_perm_invert(ctx, n, R->row_perm, rinv));
    SAP_TRY(sap_perm_invert(ctx, n, R->col_perm, cinv));
    SAP_TRY(sap__solver_map_entries(S->A, rinv, cinv, R->A, map, sap__threads(ctx)));
    S->map0 = map;
    map = NULL;
cleanup:
    sap__free(ctx, rinv);
    sap__free(ctx, cinv);
    sap__free(ctx, map);
    return st;
}

static sap_status refactor_numeric(sap_solver *S);

sap_status sap_solver_refactor(sap_solver *S, const double *values)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    sap_csr *A = S->A;
    if (!values && A->nnz > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_refactor: values is NULL");
    if (S->dev && !A->rowptr) { /* device arrays, no host copy: the pattern from the device */
        sap_status sf = sap__solver_dev_fetch(S, "a refactor with host values");
        if (sf < 0) return sf;
    }
    for (sap_int p = 0; p < A->nnz; p++)
        if (!isfinite(values[p]))
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_refactor: value %lld is %g", (long long)p, values[p]);
    sap_status so = sap__solver_own_matrix(S); /* a borrowed A is never written */
    if (so < 0) return so;
    A = S->A;
    if (A->nnz > 0) memcpy(A->val, values, sizeof(double) * (size_t)A->nnz);
    return refactor_numeric(S);
}

sap_status sap__solver_refactor_dev(sap_solver *S) { return refactor_numeric(S); }

/* The numeric part of a refactor, the new values in S->A (or, with no host copy, on the
 * device: the setup then had no reordering and the attempt reads the device copy). */
static sap_status refactor_numeric(sap_solver *S)
{
    sap_csr *A = S->A;
    sap__solver_scan_drop(S); /* create's statistics were of the old values */
    if (!S->setup_done) return sap_solver_setup(S);
    S->interrupted = 0;
    const double t0 = sap__wtime();
    sap_status st = SAP_OK;
    /* R->A = diag(r) P A Q diag(c) with the setup's permutations and scaling factors */
    const sap_reorder_result *R = S->R;
    sap_csr *RA = R->A;
    st = solver_map0(S);
    if (st < 0) return st;
    for (sap_int i = 0; RA != A && i < A->nrows; i++) { /* RA == A: the values are there */
        const double ri = R->row_scale ? R->row_scale[i] : 1.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            RA->val[S->map0[p]] = R->row_scale ? (ri * A->val[p]) * R->col_scale[A->colind[p]] : A->val[p];
    }
    /* the attempts restart from the current method (it suits this pattern) */
    sap_solver_stats *s = &S->stats;
    s->ntries = 0;
    int from = S->att ? S->ichain : 0;
    if (S->att) {
        sap__attempt *a = S->att;
        if (a->A_att)
            for (sap_int p = 0; p < RA->nnz; p++) a->A_att->val[a->map_att[p]] = RA->val[p];
        if (a->A_pc)
            for (sap_int p = 0; p < RA->nnz; p++)
                if (a->map_pc[p] >= 0) a->A_pc->val[a->map_pc[p]] = RA->val[p];
        double tb = sap__wtime();
        sap__solver_stop_flag(S, 1);
        st = sap__solver_att_numeric(S, a);
        sap__solver_stop_flag(S, 0);
        a->itry = sap__solver_add_try(S, a->method, a->P, a->K);
        s->tried[a->itry].status = st;
        s->tried[a->itry].time = sap__wtime() - tb;
        if (st == SAP_WARN_INTERRUPTED) { /* a stop request: the attempt has no factors */
            sap__solver_try_note(S, a->itry, "refactor: interrupted");
            sap__solver_att_destroy(S, S->att);
            S->att = NULL;
            S->ichain = 0;
            S->interrupted = 1;
            sap__solver_relay(S);
            s->status = st;
            return st;
        }
        if (st >= 0 && a->boosted > SV_BOOST_FRACTION * (double)A->nrows && sap__solver_can_fall_back(S)) {
            sap__solver_try_note(S, a->itry, "refactor: %lld boosted pivots > 1%% of N", (long long)a->boosted);
            st = SAP_ERR_SINGULAR;
        } else {
            sap__solver_try_note(S, a->itry, "refactor: %s", st >= 0 ? "numeric only" : sap_status_string(st));
        }
        if (st >= 0) {
            sap__solver_att_stats(S, a);
        } else {
            from = S->ichain + 1;
            if (!S->opt.fallback || from >= S->nchain) {
                sap__solver_att_destroy(S, S->att);
                S->att = NULL;
                S->ichain = 0;
                sap__solver_relay(S);
                s->status = st;
                return st;
            }
            st = sap__solver_chain_build(S, from);
        }
    } else {
        st = sap__solver_chain_build(S, 0);
    }
    s->time_setup = sap__wtime() - t0;
    s->status = st;
    if (st >= 0 && s->boosted_pivots > 0) st = SAP_WARN_BOOSTED_PIVOTS;
    sap__solver_relay(S);
    return st;
}
