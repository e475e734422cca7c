/* db_matching.c -- diagonal boosting (DB): the row permutation that maximizes the product
 * of the absolute diagonal entries, and the scaling to I-matrix form.
 *
 * With a_i = max_j |a_ij| (row maxima, eq. (12) of the SaP report), maximizing
 * prod_i |a_{i,s(i)}| over permutations s is the same as minimizing sum_i c_{i,s(i)} with
 * c_ij = log a_i - log |a_ij| >= 0 on the entries (explicit zeros are not edges): a
 * minimum-cost perfect matching of the bipartite row/column graph.  It is solved in
 * the four stages of the report:
 *   S1 weights      row maxima and c_ij (parallel over rows);
 *   S2 initial      dual variables u (rows) and v (columns) with u_i + v_j <= c_ij:
 *                   v_j = min_i c_ij (per-thread minima in parallel), u_i = min_j (c_ij - v_j);
 *                   rows are matched greedily along tight edges (reduced cost
 *                   c_ij - u_i - v_j = 0; each row's first one found in parallel), then by
 *                   length-two augmentations through tight edges;
 *   S3 augment      for each row still unmatched, Dijkstra on the reduced costs (a binary
 *                   heap of columns keyed by distance) finds a shortest augmenting path;
 *                   the duals are updated so every reduced cost stays >= 0 and the matched
 *                   ones 0, then the path is flipped;
 *   S4 extract      permutation (column j's row becomes row j) and scaling factors
 *                   r_i = exp(u_i) / a_i, c_j = exp(v_j) (parallel).
 * Because u_i + v_j <= c_ij with equality on the matching, |r_i a_ij c_j| =
 * exp(-(c_ij - u_i - v_j)) <= 1 and = 1 on the matched entries.
 *
 * S0 first: where every row's diagonal entry is stored, nonzero, finite and the row's
 * largest in magnitude, the identity is already a maximum-product matching (no permutation
 * has a larger product: each of its factors is at most the row's diagonal one), c_ii = 0,
 * and u = v = 0 are optimal duals; the scaling is then taken from other optimal duals, in
 * one O(nnz) pass and no weights: r_i = c_i = 1 / sqrt|a_ii| where every entry satisfies
 * |a_ij|^2 <= |a_ii a_jj| (symmetric, the symmetric matrices' own), else r_i = 1 / |a_ii|,
 * c_j = 1 (the rows' maxima).  Both are I-matrix forms.  cage10/11, airfoil_2d and the
 * convection-diffusion generators are such matrices.
 *
 * A search that finds no free column means A is structurally singular; the structural
 * rank is then computed by the maximum-matching DFS, warm-started from the partial
 * matching, and reported. */
#include "reorder/reorder_internal.h"

#include <math.h>
#include <string.h>

/* ---- S0: the identity when each row's diagonal entry is its largest ------------------- */

/* 1 when every row i has a stored diagonal entry, nonzero and the largest |a_ij| of the row,
 * and every value is finite; d receives |a_ii|, *sym whether |a_ij|^2 <= |a_ii a_jj| for
 * every entry (the symmetric scaling is then an I-matrix form too). */
static int diagonal_is_row_max(const sap_csr *A, int nt, double *d, int *sym)
{
    const sap_int n = A->nrows, *rp = A->rowptr, *ci = A->colind;
    const double *val = A->val;
    /* each pass stops reading rows once a row has answered it (the flag read per row) */
    atomic_int bad, asym;
    atomic_init(&bad, 0);
    atomic_init(&asym, 0);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 4096) if (A->nnz > SAP_REORDER_PAR_MIN)")
    for (sap_int i = 0; i < n; i++) {
        if (atomic_load_explicit(&bad, memory_order_relaxed)) continue;
        double di = 0, mo = 0;
        int nf = 0;
        for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
            const double a = fabs(val[p]);
            nf |= !(a < INFINITY); /* NaN or Inf: S1 reports it */
            if (ci[p] == i) di = a;
            else if (a > mo) mo = a;
        }
        d[i] = di;
        if (nf || !(di > 0) || mo > di) atomic_store_explicit(&bad, 1, memory_order_relaxed);
    }
    if (atomic_load(&bad)) return 0;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 4096) if (A->nnz > SAP_REORDER_PAR_MIN)")
    for (sap_int i = 0; i < n; i++) {
        if (atomic_load_explicit(&asym, memory_order_relaxed)) continue;
        int a_i = 0;
        for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
            const double a = fabs(val[p]);
            a_i |= a * a > d[i] * d[ci[p]];
        }
        if (a_i) atomic_store_explicit(&asym, 1, memory_order_relaxed);
    }
    *sym = !atomic_load(&asym);
    return 1;
}

void sap__db_identity(sap_context *ctx, sap_int n, const double *d, int sym, sap_int *rowperm, double *row_scale,
                      double *col_scale, sap_db_info *info)
{
    double logp = 0.0;
    for (sap_int i = 0; i < n; i++) {
        rowperm[i] = i;
        logp += log(d[i]);
    }
    if (row_scale) {
        const int nt = sap__threads_for(ctx, (double)n);
        (void)nt;
        SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (n > SAP_REORDER_PAR_MIN)")
        for (sap_int i = 0; i < n; i++) {
            row_scale[i] = sym ? 1.0 / sqrt(d[i]) : 1.0 / d[i];
            col_scale[i] = sym ? 1.0 / sqrt(d[i]) : 1.0;
        }
    }
    info->n = n;
    info->matched = info->initial_matched = n;
    info->log_product = logp;
}

/* ---- binary min-heap of columns keyed by dist[] -------------------------------------- */

typedef struct col_heap {
    sap_int *h;     /* heap of column ids */
    sap_int *where; /* position in h, -1 when absent */
    sap_int size;
    const double *key;
} col_heap;

static inline void heap_up(col_heap *H, sap_int k)
{
    sap_int *h = H->h;
    sap_int c = h[k];
    double kc = H->key[c];
    while (k > 0) {
        sap_int parent = (k - 1) >> 1;
        sap_int pc = h[parent];
        if (H->key[pc] <= kc) break;
        h[k] = pc;
        H->where[pc] = k;
        k = parent;
    }
    h[k] = c;
    H->where[c] = k;
}

static inline void heap_down(col_heap *H, sap_int k)
{
    sap_int *h = H->h;
    sap_int n = H->size;
    sap_int c = h[k];
    double kc = H->key[c];
    for (;;) {
        sap_int child = 2 * k + 1;
        if (child >= n) break;
        if (child + 1 < n && H->key[h[child + 1]] < H->key[h[child]]) child++;
        if (H->key[h[child]] >= kc) break;
        h[k] = h[child];
        H->where[h[k]] = k;
        k = child;
    }
    h[k] = c;
    H->where[c] = k;
}

static inline void heap_push_or_decrease(col_heap *H, sap_int c)
{
    sap_int k = H->where[c];
    if (k < 0) {
        k = H->size++;
        H->h[k] = c;
    }
    heap_up(H, k);
}

static inline sap_int heap_pop(col_heap *H)
{
    sap_int top = H->h[0];
    H->where[top] = -1;
    H->size--;
    if (H->size > 0) {
        H->h[0] = H->h[H->size];
        H->where[H->h[0]] = 0;
        heap_down(H, 0);
    }
    return top;
}

/* ---- S1: weights (also on the GPU: src/kernels/cuda/reorder_cuda.cu) ---------------- */

/* row i's weights c_ij = log max_j |a_ij| - log |a_ij| (0 for the row's largest, infinite
 * for a zero) and loga_i; returns the row's non-finite values */
static inline sap_int row_weights(const sap_int *rp, const double *val, sap_int i, double *c, double *loga)
{
    sap_int nonfinite = 0;
    double amax = 0.0;
    for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
        double a = fabs(val[p]);
        if (!isfinite(a)) nonfinite++;
        if (a > amax) amax = a;
    }
    double la = amax > 0.0 ? log(amax) : 0.0;
    loga[i] = la;
    for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
        double a = fabs(val[p]);
        c[p] = a > 0.0 ? (a == amax ? 0.0 : la - log(a)) : INFINITY;
    }
    return nonfinite;
}

void sap__db_weights_cpu(const sap_csr *A, int nt, double *c, double *loga, sap_int *nonfinite_out)
{
    const sap_int n = A->nrows, nnz = A->nnz;
    const sap_int *rp = A->rowptr;
    const double *val = A->val;
    sap_int nonfinite = 0;
    (void)nt;
    (void)nnz;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(+ : nonfinite) if (nnz > SAP_REORDER_PAR_MIN)")
    for (sap_int i = 0; i < n; i++) nonfinite += row_weights(rp, val, i, c, loga);
    *nonfinite_out = nonfinite;
}

/* ---- the matching ------------------------------------------------------------------------ */

sap_status sap_db_matching(const sap_csr *A, sap_int *rowperm, double *row_scale, double *col_scale,
                           sap_db_info *info)
{
    return sap__db_matching(A, rowperm, row_scale, col_scale, info, NULL);
}

sap_status sap__db_matching(const sap_csr *A, sap_int *rowperm, double *row_scale, double *col_scale,
                            sap_db_info *info, double **weights)
{
    if (weights) *weights = NULL;
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "diagonal boosting of a %lld x %lld matrix", (long long)A->nrows,
                         (long long)A->ncols);
    const sap_int n = A->nrows, nnz = A->nnz;
    if (!rowperm && n > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "rowperm is NULL");
    if ((row_scale == NULL) != (col_scale == NULL))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "row_scale and col_scale must both be given or both be NULL");
    const double t0 = sap__wtime();
    const sap_int *rp = A->rowptr, *ci = A->colind;
    const double *val = A->val;
    const int nt = sap__threads_for(ctx, (double)A->nnz + (double)A->nrows);
    (void)nt; /* used by the OpenMP pragmas only */
    sap_db_info inf;
    memset(&inf, 0, sizeof(inf));
    inf.n = n;

    sap_status st = SAP_OK;
    double *c = NULL, *u = NULL, *v = NULL, *loga = NULL, *dist = NULL;
    sap_int *mrow = NULL, *mcol = NULL, *mpos = NULL, *pred = NULL, *predpos = NULL, *cursor = NULL;
    sap_int *touched = NULL, *finals = NULL, *hh = NULL, *where = NULL;
    unsigned char *cstate = NULL;
    /* ---- S0: the identity where each diagonal entry is its row's largest ---------------- */
    {
        double t1 = sap__wtime();
        int sym = 0;
        SAP_ALLOC(ctx, u, n);
        if (diagonal_is_row_max(A, nt, u, &sym)) {
            sap__db_identity(ctx, n, u, sym, rowperm, row_scale, col_scale, &inf);
            inf.time_weights = sap__wtime() - t1;
            inf.time = sap__wtime() - t0;
            goto cleanup;
        }
        SAP_FREE(ctx, u);
    }

    SAP_ALLOC(ctx, c, nnz);
    SAP_ALLOC(ctx, u, n);
    SAP_ALLOC(ctx, v, n);
    SAP_ALLOC(ctx, loga, n);
    SAP_ALLOC(ctx, mrow, n);
    SAP_ALLOC(ctx, mcol, n);
    SAP_ALLOC(ctx, mpos, n);

    /* ---- S1: weights (on the host's threads fused with S2's column minima below) ------- */
    double t1 = sap__wtime();
    sap_int nonfinite = 0;
    for (sap_int j = 0; j < n; j++) {
        v[j] = INFINITY;
        mcol[j] = -1;
    }
    /* column minima: in parallel into per-thread arrays (at most 1 GB of them), then the
     * minimum over the threads (exact: a minimum does not depend on the order) */
    const int par_min = nt > 1 && nnz > SAP_REORDER_PAR_MIN && (double)nt * (double)n * sizeof(double) <= 1e9;
    if (sap__offload(ctx, SAP_OFFLOAD_DB, nnz)) SAP_TRY(sap__ops(ctx)->db_weights(ctx, A, c, loga, &nonfinite));
    else if (!par_min) sap__db_weights_cpu(A, nt, c, loga, &nonfinite);
    inf.time_weights = sap__wtime() - t1;

    /* ---- S2: duals and the greedy initial matching -------------------------------------- */
    t1 = sap__wtime();
    if (par_min) {
        /* each thread's rows: their weights (S1, unless on the device), then their columns'
         * minima in its own array, in the same pass over the rows */
        const int weigh = !sap__offload(ctx, SAP_OFFLOAD_DB, nnz);
        double *vt = NULL;
        SAP_ALLOC(ctx, vt, (size_t)nt * (size_t)n);
        SAP_OMP("omp parallel num_threads(nt)")
        {
            int t, T;
            sap__omp_team(&t, &T);
            double *w = vt + (size_t)t * (size_t)n;
            for (sap_int j = 0; j < n; j++) w[j] = INFINITY;
            SAP_OMP("omp for schedule(static) reduction(+ : nonfinite)")
            for (sap_int i = 0; i < n; i++) {
                if (weigh) nonfinite += row_weights(rp, val, i, c, loga);
                for (sap_int p = rp[i]; p < rp[i + 1]; p++)
                    if (c[p] < w[ci[p]]) w[ci[p]] = c[p];
            }
            SAP_OMP("omp for schedule(static)")
            for (sap_int j = 0; j < n; j++)
                for (int k = 0; k < T; k++)
                    if (vt[(size_t)k * (size_t)n + j] < v[j]) v[j] = vt[(size_t)k * (size_t)n + j];
        }
        sap__free(ctx, vt);
        if (weigh) { /* the fused pass counts as S1 */
            inf.time_weights += sap__wtime() - t1;
            t1 = sap__wtime();
        }
    } else {
        for (sap_int p = 0; p < nnz; p++) {
            sap_int j = ci[p];
            if (c[p] < v[j]) v[j] = c[p];
        }
    }
    /* (S1's count, from whichever pass made the weights) */
    if (nonfinite) SAP_FAIL(ctx, SAP_ERR_NONFINITE, "diagonal boosting: %lld NaN or Inf values", (long long)nonfinite);
    for (sap_int j = 0; j < n; j++)
        if (v[j] == INFINITY) v[j] = 0.0; /* empty column: A is singular, any value works */
    /* the row duals u_i = min_j c_ij - v_j and each row's first tight edge (the first entry
     * that attains the minimum: c_ij - v_j <= u_i holds there first), in one parallel pass */
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (nnz > SAP_REORDER_PAR_MIN)")
    for (sap_int i = 0; i < n; i++) {
        double best = INFINITY;
        sap_int first = -1;
        for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
            double r = c[p] - v[ci[p]];
            if (r < best) {
                best = r;
                first = p;
            }
        }
        u[i] = best == INFINITY ? 0.0 : best;
        mrow[i] = -1;
        mpos[i] = first;
    }
    sap_int matched = 0;
    /* pass 1: a free column along a tight edge.  Each row's first tight edge was found in
     * parallel (into mpos); the rows take it in order when its column is still free, else
     * scan on from there: the choices of one serial scan exactly. */
    for (sap_int i = 0; i < n; i++) {
        sap_int p = mpos[i];
        mpos[i] = -1;
        if (p < 0) continue;
        for (; p < rp[i + 1]; p++) {
            sap_int j = ci[p];
            if (mcol[j] < 0 && c[p] - v[j] <= u[i]) {
                mrow[i] = j;
                mcol[j] = i;
                mpos[i] = p;
                matched++;
                break;
            }
        }
    }
    /* pass 2: for a row still free, a tight edge to a matched column j whose row k can move
     * to another free column along a tight edge.  cursor[k] only moves forward: columns
     * once matched stay matched and tightness does not change in this stage. */
    if (matched < n) {
        SAP_ALLOC(ctx, cursor, n);
        for (sap_int i = 0; i < n; i++) cursor[i] = rp[i];
        for (sap_int i = 0; i < n && matched < n; i++) {
            if (mrow[i] >= 0) continue;
            for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
                sap_int j = ci[p];
                if (c[p] - v[j] > u[i]) continue;
                sap_int k = mcol[j];
                sap_int q = cursor[k], qend = rp[k + 1];
                while (q < qend && !(mcol[ci[q]] < 0 && c[q] - v[ci[q]] <= u[k])) q++;
                cursor[k] = q;
                if (q < qend) {
                    sap_int j2 = ci[q];
                    mrow[k] = j2;
                    mcol[j2] = k;
                    mpos[k] = q;
                    mrow[i] = j;
                    mcol[j] = i;
                    mpos[i] = p;
                    matched++;
                    break;
                }
            }
        }
    }
    inf.initial_matched = matched;
    inf.time_initial = sap__wtime() - t1;

    /* ---- S3: shortest augmenting paths ------------------------------------------------------ */
    t1 = sap__wtime();
    if (matched < n) {
        SAP_ALLOC(ctx, dist, n);
        SAP_ALLOC(ctx, pred, n);
        SAP_ALLOC(ctx, predpos, n);
        SAP_ALLOC(ctx, touched, n);
        SAP_ALLOC(ctx, finals, n);
        SAP_ALLOC(ctx, hh, n);
        SAP_ALLOC(ctx, where, n);
        SAP_CALLOC(ctx, cstate, n); /* 0 untouched, 1 in the heap, 2 final */
        for (sap_int j = 0; j < n; j++) where[j] = -1;
        col_heap H = {hh, where, 0, dist};
        for (sap_int root = 0; root < n; root++) {
            if (mrow[root] >= 0) continue;
            sap_int ntouched = 0, nfinal = 0;
            double lsap = INFINITY;
            sap_int jsap = -1;
            sap_int i = root;
            double di = 0.0;
            H.size = 0;
            for (;;) {
                /* scan row i, reached at distance di */
                const double ui = u[i];
                for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
                    double cp = c[p];
                    if (cp == INFINITY) continue;
                    sap_int j = ci[p];
                    if (cstate[j] == 2) continue;
                    double red = cp - ui - v[j];
                    double nd = di + (red > 0.0 ? red : 0.0);
                    if (nd >= lsap) continue;
                    if (mcol[j] < 0) {
                        lsap = nd;
                        jsap = j;
                        pred[j] = i;
                        predpos[j] = p;
                        continue;
                    }
                    if (cstate[j] == 0) {
                        cstate[j] = 1;
                        touched[ntouched++] = j;
                        dist[j] = nd;
                        pred[j] = i;
                        predpos[j] = p;
                        heap_push_or_decrease(&H, j);
                    } else if (nd < dist[j]) {
                        dist[j] = nd;
                        pred[j] = i;
                        predpos[j] = p;
                        heap_push_or_decrease(&H, j);
                    }
                }
                /* the closest column not yet final, if it can still beat lsap */
                if (H.size == 0 || dist[H.h[0]] >= lsap) break;
                sap_int j = heap_pop(&H);
                cstate[j] = 2;
                finals[nfinal++] = j;
                i = mcol[j];
                di = dist[j];
            }
            if (jsap >= 0) {
                /* duals: rows reached at d_i gain lsap - d_i, final columns lose lsap - dist */
                u[root] += lsap;
                for (sap_int k = 0; k < nfinal; k++) {
                    sap_int j = finals[k];
                    double delta = lsap - dist[j];
                    u[mcol[j]] += delta;
                    v[j] -= delta;
                }
                /* flip the path */
                sap_int j = jsap;
                for (;;) {
                    sap_int r = pred[j];
                    sap_int next = mrow[r];
                    mrow[r] = j;
                    mcol[j] = r;
                    mpos[r] = predpos[j];
                    if (r == root) break;
                    j = next;
                }
                matched++;
                inf.augmentations++;
            }
            for (sap_int k = 0; k < ntouched; k++) {
                cstate[touched[k]] = 0;
                where[touched[k]] = -1;
            }
            if (jsap < 0) {
                /* no augmenting path from root: A is structurally singular; find its rank */
                sap_int size = 0;
                SAP_TRY(sap__max_matching(A, mrow, mcol, &size));
                inf.matched = size;
                inf.time_augment = sap__wtime() - t1;
                inf.time = sap__wtime() - t0;
                SAP_FAIL(ctx, SAP_ERR_STRUCTURALLY_SINGULAR,
                         "matrix is structurally singular: structural rank %lld of %lld (row %lld cannot be matched)",
                         (long long)size, (long long)n, (long long)root);
            }
        }
    }
    inf.matched = matched;
    inf.time_augment = sap__wtime() - t1;

    /* ---- S4: permutation, cost and scaling ------------------------------------------------- */
    t1 = sap__wtime();
    double cost = 0.0, logp = 0.0;
    for (sap_int i = 0; i < n; i++) {
        sap_int p = mpos[i];
        cost += c[p];
        logp += log(fabs(val[p]));
    }
    if (n > 0) memcpy(rowperm, mcol, sizeof(sap_int) * (size_t)n);
    if (row_scale) {
        SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (n > SAP_REORDER_PAR_MIN)")
        for (sap_int i = 0; i < n; i++) {
            row_scale[i] = exp(u[i] - loga[i]);
            col_scale[i] = exp(v[i]);
        }
    }
    inf.cost = cost;
    inf.log_product = logp;
    inf.time_extract = sap__wtime() - t1;
    inf.time = sap__wtime() - t0;

cleanup:
    if (info) *info = inf;
    if (weights && st >= 0) { /* the caller's: A's size in doubles, its pages already touched */
        *weights = c;
        c = NULL;
    }
    sap__free(ctx, c);
    sap__free(ctx, u);
    sap__free(ctx, v);
    sap__free(ctx, loga);
    sap__free(ctx, mrow);
    sap__free(ctx, mcol);
    sap__free(ctx, mpos);
    sap__free(ctx, cursor);
    sap__free(ctx, dist);
    sap__free(ctx, pred);
    sap__free(ctx, predpos);
    sap__free(ctx, touched);
    sap__free(ctx, finals);
    sap__free(ctx, hh);
    sap__free(ctx, where);
    sap__free(ctx, cstate);
    return st;
}
