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
 * work (the product's pattern, the selection) runs on the host cores, a row at a time (the
 * same result for every thread count), the sweeps on the backend.
 * With p >= n and tau = 0 the pattern grows to the full LU's in n rounds, and the sweeps
 * converge to the exact factors (the reference of test_ilu). */
#include "base/csr_search.h"
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

/* A thread's scratch of the pattern passes (cap entries each). */
typedef struct pat_work {
    sap_int *list, *pos;
    mag_pos *mp;
} pat_work;

/* Scratch for nt threads of cap entries each, one allocation (freed with sap__free(*mem)). */
static sap_status work_alloc(sap_context *ctx, int nt, sap_int cap, pat_work *w, void **mem)
{
    const size_t per = (size_t)(cap > 0 ? cap : 1), bytes = per * (2 * sizeof(sap_int) + sizeof(mag_pos));
    char *m = sap__alloc(ctx, (size_t)nt, bytes, false, __FILE__, __LINE__);
    *mem = m;
    if (!m) return sap__alloc_failure((size_t)nt, bytes);
    for (int t = 0; t < nt; t++) {
        char *b = m + (size_t)t * bytes;
        w[t].mp = (mag_pos *)b;
        w[t].list = (sap_int *)(b + per * sizeof(mag_pos));
        w[t].pos = w[t].list + per;
    }
    return SAP_OK;
}

static int cmp_int(const void *a, const void *b)
{
    const sap_int x = *(const sap_int *)a, y = *(const sap_int *)b;
    return (x > y) - (x < y);
}

/* The most columns row i of the grown pattern can list (with repeats). */
static sap_int grown_bound(const sap_csr *A, const sap_csr *LU, sap_int i)
{
    sap_int b = LU->rowptr[i + 1] - LU->rowptr[i] + A->rowptr[i + 1] - A->rowptr[i];
    for (sap_int p = LU->rowptr[i]; p < LU->rowptr[i + 1] && LU->colind[p] < i; p++)
        b += LU->rowptr[LU->colind[p] + 1] - LU->rowptr[LU->colind[p]];
    return b;
}

/* Row i's columns of the pattern of LU, A and L U (the combined factor: L strictly lower
 * with a unit diagonal, U the rest) into list, sorted and distinct; returns their count. */
static sap_int grown_row(const sap_csr *A, const sap_csr *LU, sap_int i, sap_int *list)
{
    sap_int m = 0;
    for (sap_int p = LU->rowptr[i]; p < LU->rowptr[i + 1]; p++) {
        const sap_int k = LU->colind[p];
        list[m++] = k;
        if (k < i) /* l_ik times row k of U */
            for (sap_int q = LU->rowptr[k]; q < LU->rowptr[k + 1]; q++)
                if (LU->colind[q] >= k) list[m++] = LU->colind[q];
    }
    for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) list[m++] = A->colind[p];
    qsort(list, (size_t)m, sizeof(sap_int), cmp_int);
    sap_int u = 0;
    for (sap_int a = 0; a < m; a++)
        if (u == 0 || list[a] != list[u - 1]) list[u++] = list[a];
    return u;
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

/* Row i's kept positions of LU (its L part, the diagonal, its U part) into w->list; their count. */
static sap_int kept_row(const sap_csr *A, const sap_csr *LU, sap_int i, sap_int p, double tau, pat_work *w)
{
    double s = 0.0;
    const sap_int na = A->rowptr[i + 1] - A->rowptr[i];
    for (sap_int q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) s += fabs(A->val[q]);
    const double t = na > 0 ? tau * s / (double)na : 0.0;
    sap_int nl = 0, dg = -1, m = 0, nu = 0;
    for (sap_int q = LU->rowptr[i]; q < LU->rowptr[i + 1]; q++) {
        if (LU->colind[q] < i) w->pos[nl++] = q;
        else if (LU->colind[q] == i) dg = q;
    }
    m = select_part(LU, w->pos, nl, p, t, w, 0);
    if (dg >= 0) w->list[m++] = dg;
    for (sap_int q = LU->rowptr[i]; q < LU->rowptr[i + 1]; q++)
        if (LU->colind[q] > i) w->pos[nu++] = q;
    return m + select_part(LU, w->pos, nu, p, t, w, m);
}

/* The next pattern, grown (grow = 1: LU's, A's and L U's entries; A's values in *S2 and LU's
 * in *LU2, 0 at the candidates) or kept (grow = 0: ILUT's selection of LU's entries with p,
 * tau; S's and LU's values).  Two passes over the rows on the host cores (a count, then the
 * entries), each row alone: the same for every thread count. */
static sap_status next_pattern(sap_context *ctx, int grow, const sap_csr *A, const sap_csr *S, const sap_csr *LU,
                               sap_int p, double tau, sap_csr **S2, sap_csr **LU2)
{
    sap_status st = SAP_OK;
    const sap_int n = A->nrows;
    const int nt = sap__threads_for(ctx, (double)LU->nnz), cap_nt = nt > 0 ? nt : 1;
    sap_int *cnt = NULL, cap = 0;
    pat_work *w = NULL;
    void *mem = NULL;
    *S2 = *LU2 = NULL;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(max : cap)")
    for (sap_int i = 0; i < n; i++) {
        const sap_int b = grow ? grown_bound(A, LU, i) : LU->rowptr[i + 1] - LU->rowptr[i];
        cap = b > cap ? b : cap;
    }
    SAP_ALLOC(ctx, cnt, (size_t)n + 1);
    SAP_ALLOC(ctx, w, (size_t)cap_nt);
    SAP_TRY(work_alloc(ctx, cap_nt, cap, w, &mem));
    cnt[0] = 0;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 256)")
    for (sap_int i = 0; i < n; i++) {
        int t, T;
        sap__omp_team(&t, &T);
        cnt[i + 1] = grow ? grown_row(A, LU, i, w[t].list) : kept_row(A, LU, i, p, tau, &w[t]);
    }
    for (sap_int i = 0; i < n; i++) cnt[i + 1] += cnt[i];
    SAP_TRY(sap_csr_create(ctx, n, n, cnt[n], S2));
    SAP_TRY(sap_csr_create(ctx, n, n, cnt[n], LU2));
    for (sap_int i = 0; i <= n; i++) (*S2)->rowptr[i] = (*LU2)->rowptr[i] = cnt[i];
    sap_csr *SS = *S2, *LL = *LU2;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 256)")
    for (sap_int i = 0; i < n; i++) {
        int t, T;
        sap__omp_team(&t, &T);
        const sap_int m = grow ? grown_row(A, LU, i, w[t].list) : kept_row(A, LU, i, p, tau, &w[t]);
        for (sap_int a = 0, q = cnt[i]; a < m; a++, q++) {
            if (grow) { /* list: columns */
                const sap_int j = w[t].list[a], pa = sap__csr_find(A->rowptr, A->colind, i, j),
                              pl = sap__csr_find(LU->rowptr, LU->colind, i, j);
                SS->colind[q] = LL->colind[q] = j;
                SS->val[q] = pa >= 0 ? A->val[pa] : 0.0;
                LL->val[q] = pl >= 0 ? LU->val[pl] : 0.0;
            } else { /* list: positions in LU (and S, the same pattern) */
                const sap_int k = w[t].list[a];
                SS->colind[q] = LL->colind[q] = LU->colind[k];
                SS->val[q] = S->val[k];
                LL->val[q] = LU->val[k];
            }
        }
    }
cleanup:
    sap__free(ctx, mem);
    sap__free(ctx, w);
    sap__free(ctx, cnt);
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
    sap_int shifted = 0;
    const double t0 = sap__wtime();
    SAP_TRY(sap__parilu_start(ctx, A, &S, &LU));
    SAP_TRY(kt->parilu(ctx, S, (int)o->sweeps, LU->val));
    for (sap_int s = 0; s < o->steps; s++) {
        SAP_TRY(next_pattern(ctx, 1, A, S, LU, 0, 0.0, &S2, &LU2));
        replace(&S, &LU, S2, LU2);
        S2 = LU2 = NULL;
        SAP_TRY(kt->parilu(ctx, S, (int)o->sweeps, LU->val));
        SAP_TRY(next_pattern(ctx, 0, A, S, LU, o->p, o->tau, &S2, &LU2));
        replace(&S, &LU, S2, LU2);
        S2 = LU2 = NULL;
        SAP_TRY(kt->parilu(ctx, S, (int)o->sweeps, LU->val));
    }
    SAP_TRY(sap__ilu_fix_pivots(ctx, LU, A, o->pivot_tol, &shifted));
    snprintf(d->extra, sizeof(d->extra), "p = %lld, tau = %g, %lld steps of %lld sweeps on the %s backend",
             (long long)o->p, o->tau, (long long)o->steps, (long long)o->sweeps, kt->name);
    SAP_TRY(sap__ilu_pc_finish_lu(P, A, LU, shifted, t0));
cleanup:
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
