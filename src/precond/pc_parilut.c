/* pc_parilut.c -- ParILUT ("parilut"; Anzt, Chow and Dongarra, "ParILUT -- a new parallel
 * threshold ILU factorization", SIAM J. Sci. Comput. 40(4), 2018): a threshold ILU whose
 * values come from fixed-point sweeps (ParILU's, every entry in parallel on the backend:
 * device/trsv_kernels.h parilu) instead of a row-by-row elimination.  From ParILU's start (A's
 * pattern with the diagonal, L = A_lower D^{-1}, U = A_upper, 'sweeps' sweeps), each of
 * 'steps' rounds
 *   1. adds the candidates: the entries of L U and of A outside the current pattern (one more
 *      level of fill), at zero;
 *   2. runs 'sweeps' sweeps on the enlarged pattern;
 *   3. keeps, row by row, ILUT's selection: the entries of the L part and of the U part of at
 *      least tau times the row's mean |a_ij|, at most the p largest of each part, and the
 *      diagonal always (ilu_factor.h, sap__ilut's rule);
 *   4. runs 'sweeps' sweeps on the kept pattern.
 * Then the pivot rule of ilu_factor.h and two triangular solves on the backend.  The pattern
 * work (the product's pattern, the selection) runs on the host, the sweeps on the backend.
 * With p >= n and tau = 0 the pattern grows to the full LU's in n rounds, and the sweeps
 * converge to the exact factors (the reference of test_ilu). */
#include "precond/ilu_factor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parilut_opts {
    sap_int p;
    double tau;
    sap_int steps, sweeps;
    double pivot_tol;
} parilut_opts;

static const sap_opt_def parilut_defs[] = {
    SAP_ILUT_OPTS(parilut_opts, "10", "1e-3"),
    {.name = "steps", .help = "rounds of adding candidates and dropping", .def = "3", .kind = SAP_OPT_INT,
     SAP_OPT_AT(parilut_opts, steps), .lo = 0, .hi = 1000, .meta = "S"},
    {.name = "sweeps", .help = "fixed-point sweeps after each change of the pattern", .def = "2",
     .kind = SAP_OPT_INT, SAP_OPT_AT(parilut_opts, sweeps), .lo = 1, .hi = 1000, .meta = "W"},
    SAP_ILU_PIVOT_OPT(parilut_opts),
};

/* an entry of a row part and its magnitude, for the selection */
typedef struct mag_pos {
    double m;
    sap_int q;
} mag_pos;

/* Work of the pattern passes: a column marker (stamp per row), a list, the selection's pairs
 * (n each). */
typedef struct pat_work {
    sap_int *mark, *list;
    mag_pos *mp;
} pat_work;

static int cmp_int(const void *a, const void *b)
{
    const sap_int x = *(const sap_int *)a, y = *(const sap_int *)b;
    return (x > y) - (x < y);
}

/* The row of a (sorted) CSR holding column j: its position, -1 when absent. */
static sap_int find(const sap_csr *M, sap_int i, sap_int j)
{
    sap_int lo = M->rowptr[i], hi = M->rowptr[i + 1];
    while (lo < hi) {
        const sap_int m = lo + (hi - lo) / 2;
        if (M->colind[m] < j) lo = m + 1;
        else hi = m;
    }
    return lo < M->rowptr[i + 1] && M->colind[lo] == j ? lo : -1;
}

/* Row i's columns of the pattern of LU, A and L U (the combined factor: L strictly lower
 * with a unit diagonal, U the rest) into w->list, sorted; returns their count. */
static sap_int grown_row(const sap_csr *A, const sap_csr *LU, sap_int i, pat_work *w)
{
    sap_int m = 0;
#define ADD(c)                                                                                                        \
    do {                                                                                                              \
        const sap_int c_ = (c);                                                                                       \
        if (w->mark[c_] != i) w->mark[c_] = i, w->list[m++] = c_;                                                     \
    } while (0)
    for (sap_int p = LU->rowptr[i]; p < LU->rowptr[i + 1]; p++) {
        const sap_int k = LU->colind[p];
        ADD(k);
        if (k < i) /* l_ik times row k of U */
            for (sap_int q = LU->rowptr[k]; q < LU->rowptr[k + 1]; q++)
                if (LU->colind[q] >= k) ADD(LU->colind[q]);
    }
    for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) ADD(A->colind[p]);
#undef ADD
    qsort(w->list, (size_t)m, sizeof(sap_int), cmp_int);
    return m;
}

/* The pattern with the candidates added: *S2 (A's values, 0 elsewhere) and *LU2 (LU's values,
 * 0 at the candidates). */
static sap_status grow(sap_context *ctx, const sap_csr *A, const sap_csr *LU, pat_work *w, sap_csr **S2,
                       sap_csr **LU2)
{
    sap_status st = SAP_OK;
    const sap_int n = A->nrows;
    sap_int nnz = 0;
    *S2 = *LU2 = NULL;
    for (sap_int i = 0; i < n; i++) w->mark[i] = -1;
    for (sap_int i = 0; i < n; i++) nnz += grown_row(A, LU, i, w);
    SAP_TRY(sap_csr_create(ctx, n, n, nnz, S2));
    SAP_TRY(sap_csr_create(ctx, n, n, nnz, LU2));
    for (sap_int i = 0; i < n; i++) w->mark[i] = -1;
    sap_int q = 0;
    (*S2)->rowptr[0] = (*LU2)->rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        const sap_int m = grown_row(A, LU, i, w);
        for (sap_int a = 0; a < m; a++, q++) {
            const sap_int j = w->list[a], pa = find(A, i, j), pl = find(LU, i, j);
            (*S2)->colind[q] = (*LU2)->colind[q] = j;
            (*S2)->val[q] = pa >= 0 ? A->val[pa] : 0.0;
            (*LU2)->val[q] = pl >= 0 ? LU->val[pl] : 0.0;
        }
        (*S2)->rowptr[i + 1] = (*LU2)->rowptr[i + 1] = q;
    }
cleanup:
    if (st < 0) {
        sap_csr_destroy(*S2);
        sap_csr_destroy(*LU2);
        *S2 = *LU2 = NULL;
    }
    return st;
}

/* |v| descending (NaN first: kept, so that the pivot check reports it), then position */
static int cmp_mag(const void *a, const void *b)
{
    const mag_pos *x = a, *y = b;
    if (isnan(x->m) || isnan(y->m)) {
        if (isnan(x->m) != isnan(y->m)) return isnan(x->m) ? -1 : 1;
    } else if (x->m != y->m) {
        return x->m > y->m ? -1 : 1;
    }
    return (x->q > y->q) - (x->q < y->q);
}

/* Of the positions pos[0..m) (one part of a row), those kept by ILUT's rule: |v| >= t, the p
 * largest; returned in w->list from 'at' on, sorted by column; their count. */
static sap_int select_part(const sap_csr *LU, const sap_int *pos, sap_int m, sap_int p, double t, pat_work *w,
                           sap_int at)
{
    sap_int k = 0;
    for (sap_int a = 0; a < m; a++) {
        const double v = fabs(LU->val[pos[a]]);
        if (!(v < t)) w->mp[k].m = v, w->mp[k++].q = pos[a];
    }
    if (k > p) {
        qsort(w->mp, (size_t)k, sizeof(mag_pos), cmp_mag);
        k = p;
    }
    for (sap_int a = 0; a < k; a++) w->list[at + a] = w->mp[a].q;
    qsort(w->list + at, (size_t)k, sizeof(sap_int), cmp_int); /* positions ascend with columns */
    return k;
}

/* The kept pattern of every row (its L part, the diagonal, its U part): *S2 with A's values,
 * *LU2 with LU's. */
static sap_status drop(sap_context *ctx, const sap_csr *A, const sap_csr *S, const sap_csr *LU, sap_int p,
                       double tau, pat_work *w, sap_csr **S2, sap_csr **LU2)
{
    sap_status st = SAP_OK;
    const sap_int n = A->nrows;
    sap_int *keep = NULL, *rp = NULL, *pos = w->mark;
    *S2 = *LU2 = NULL;
    SAP_ALLOC(ctx, keep, (size_t)(LU->nnz > 0 ? LU->nnz : 1));
    SAP_ALLOC(ctx, rp, (size_t)n + 1);
    if (!keep || !rp) goto cleanup;
    sap_int nk = 0;
    rp[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        double s = 0.0;
        const sap_int na = A->rowptr[i + 1] - A->rowptr[i];
        for (sap_int q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) s += fabs(A->val[q]);
        const double t = na > 0 ? tau * s / (double)na : 0.0;
        sap_int nl = 0, dg = -1, m = 0;
        for (sap_int q = LU->rowptr[i]; q < LU->rowptr[i + 1]; q++) {
            if (LU->colind[q] < i) pos[nl++] = q;
            else if (LU->colind[q] == i) dg = q;
        }
        m = select_part(LU, pos, nl, p, t, w, 0);
        if (dg >= 0) w->list[m++] = dg;
        sap_int nu = 0;
        for (sap_int q = LU->rowptr[i]; q < LU->rowptr[i + 1]; q++)
            if (LU->colind[q] > i) pos[nu++] = q;
        m += select_part(LU, pos, nu, p, t, w, m);
        for (sap_int a = 0; a < m; a++) keep[nk++] = w->list[a];
        rp[i + 1] = nk;
    }
    SAP_TRY(sap_csr_create(ctx, n, n, nk, S2));
    SAP_TRY(sap_csr_create(ctx, n, n, nk, LU2));
    for (sap_int i = 0; i <= n; i++) (*S2)->rowptr[i] = (*LU2)->rowptr[i] = rp[i];
    for (sap_int a = 0; a < nk; a++) {
        (*S2)->colind[a] = (*LU2)->colind[a] = LU->colind[keep[a]];
        (*S2)->val[a] = S->val[keep[a]];
        (*LU2)->val[a] = LU->val[keep[a]];
    }
cleanup:
    sap__free(ctx, keep);
    sap__free(ctx, rp);
    if (st < 0) {
        sap_csr_destroy(*S2);
        sap_csr_destroy(*LU2);
        *S2 = *LU2 = NULL;
    }
    return st;
}

/* *S, *LU replaced by the new pair (the old ones destroyed) */
static void replace(sap_csr **S, sap_csr **LU, sap_csr *S2, sap_csr *LU2)
{
    sap_csr_destroy(*S);
    sap_csr_destroy(*LU);
    *S = S2;
    *LU = LU2;
}

static sap_status parilut_numeric(sap_precond *P, const sap_csr *A)
{
    sap_context *ctx = P->ctx;
    const parilut_opts *o = P->opts;
    sap_ilu_pc *d = P->data;
    const sap_trsv_kernels *kt = sap__ops(ctx)->trsv;
    sap_status st = SAP_OK;
    sap_csr *LU = NULL, *S = NULL, *S2 = NULL, *LU2 = NULL;
    pat_work w = {NULL, NULL, NULL};
    sap_int shifted = 0;
    const double t0 = sap__wtime();
    const sap_int n = A->nrows;
    SAP_ALLOC(ctx, w.mark, (size_t)(n > 0 ? n : 1));
    SAP_ALLOC(ctx, w.list, (size_t)(n > 0 ? n : 1));
    SAP_ALLOC(ctx, w.mp, (size_t)(n > 0 ? n : 1));
    if (!w.mark || !w.list || !w.mp) goto cleanup;
    /* ParILU's start on A's pattern (and the diagonal) */
    SAP_TRY(sap__iluk_pattern(ctx, A, 0, &S));
    SAP_TRY(sap_csr_copy(S, &LU));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
            const sap_int j = S->colind[p];
            if (j >= i) continue;
            const sap_int q = find(S, j, j);
            if (q >= 0 && S->val[q] != 0.0) LU->val[p] = S->val[p] / S->val[q];
        }
    SAP_TRY(kt->parilu(ctx, S, (int)o->sweeps, LU->val));
    for (sap_int s = 0; s < o->steps; s++) {
        SAP_TRY(grow(ctx, A, LU, &w, &S2, &LU2));
        replace(&S, &LU, S2, LU2);
        S2 = LU2 = NULL;
        SAP_TRY(kt->parilu(ctx, S, (int)o->sweeps, LU->val));
        SAP_TRY(drop(ctx, A, S, LU, o->p, o->tau, &w, &S2, &LU2));
        replace(&S, &LU, S2, LU2);
        S2 = LU2 = NULL;
        SAP_TRY(kt->parilu(ctx, S, (int)o->sweeps, LU->val));
    }
    SAP_TRY(sap__ilu_fix_pivots(ctx, LU, A, o->pivot_tol, &shifted));
    snprintf(d->extra, sizeof(d->extra), "p = %lld, tau = %g, %lld steps of %lld sweeps on the %s backend",
             (long long)o->p, o->tau, (long long)o->steps, (long long)o->sweeps, kt->name);
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
    sap__free(ctx, w.mark);
    sap__free(ctx, w.list);
    sap__free(ctx, w.mp);
    sap_csr_destroy(S);
    sap_csr_destroy(LU);
    sap_csr_destroy(S2);
    sap_csr_destroy(LU2);
    return st;
}

SAP_ILU_TYPE(sap__pc_parilut, "parilut",
             "ParILUT: threshold ILU by fixed-point sweeps on the backend (Anzt-Chow-Dongarra: candidates from L U, "
             "ILUT's selection, p per row in L and U, drop below tau * mean |a_ij|)",
             parilut_defs, parilut_opts, parilut_numeric);
