/* cuthill_mckee.c -- bandwidth reduction by Cuthill-McKee on the pattern of A + A^T.
 *
 * Graph (CM-S1).  The adjacency of B + B^T without diagonal (B = A, or a diagonal block of
 * it for the third stage) is built from B's rows and its transposed pattern by merging
 * the two sorted lists of each row (parallel over rows, the transposed pattern too:
 * per-thread column counts turned into per-thread cursors).  Every
 * neighbour list is then put in (degree, index) order: serially by one scatter pass in
 * that order of the nodes (no comparison sort), in parallel by sorting each list's ranks
 * in that order.  A breadth-first search that appends the unvisited
 * neighbours in list order is then exactly a CM ordering at O(nnz) per search.
 *
 * Searches (CM-S2/S3).  Components are taken in order of their minimum-degree node and
 * placed one after another.  Per component: the first search starts from that node;
 * then, George-Liu style, the next start is the untried node of minimum degree in the
 * last level of the deepest level structure so far, and the walk goes on while the
 * height grows (a pseudo-peripheral node).  A few more low-degree nodes of that last
 * level, then the next lowest-degree nodes of the component, are tried afterwards (the
 * report's several starting nodes); those searches stop as soon as their bandwidth
 * reaches the best one, so they cost little when they cannot win.  The bandwidth of an ordering is
 * known during its search: when node u at position k is dequeued all its neighbours have
 * positions, so max_pos(neighbours) - k is its row's reach.  The envelopes of the CM
 * ordering and of its reverse come the same way; the reverse has the same bandwidth on
 * a symmetric pattern, and AUTO keeps the smaller envelope.
 *
 * A search runs level by level; a wide level may run on all threads with the same order
 * (level_parallel: the known level-synchronous scheme of parallel RCM, each new node going
 * to the least parent position, with no sort needed since every thread's part of the
 * level is contiguous).  sap__cm_reorder_rows orders A(rows, :) without forming it (the
 * DB + CM composition of reorder.c). */
#include "reorder/reorder_internal.h"
#include "base/csr_search.h"

#include <string.h>

#define CM_WALK_TRIES 6   /* searches of the pseudo-peripheral walk */
#define CM_EXTRA_TRIES 2  /* low-degree last-level candidates after the walk */
#define CM_MINDEG_TRIES 6 /* lowest-degree nodes of the component after that */
#define CM_MAX_TRIES (CM_WALK_TRIES + CM_EXTRA_TRIES + CM_MINDEG_TRIES)
#define CM_PAR_LEVEL 32768 /* adjacency entries of a level searched in parallel */
#define CM_PAR_PROBE 64    /* a wide level searched the other way once in this many */

/* ---- workspace ------------------------------------------------------------------------- */

sap_status sap__cm_work_parallel(sap_context *ctx, sap__cm_work *w, int threads, sap_int level_min)
{
    sap_status st = SAP_OK;
#ifdef _OPENMP
    if (threads > 1 && w->cap_n > 0 && !w->claim) {
        SAP_ALLOC(ctx, w->claim, w->cap_n);
        SAP_ALLOC(ctx, w->par_off, threads + 1);
        for (sap_int v = 0; v < w->cap_n; v++) atomic_init(&w->claim[v], -1);
        w->threads = threads;
        w->par_level = level_min > 1 ? level_min : 1;
    }
cleanup:
#else
    (void)ctx;
    (void)w;
    (void)threads;
    (void)level_min;
#endif
    return st;
}

sap_status sap__cm_work_create(sap_context *ctx, sap_int cap_n, sap_int cap_e, sap__cm_work *w)
{
    sap_status st = SAP_OK;
    memset(w, 0, sizeof(*w));
    if (cap_n > SAP__CM_MAX_NODES)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "Cuthill-McKee graph of %lld nodes (at most %lld)",
                         (long long)cap_n, (long long)SAP__CM_MAX_NODES);
    w->cap_n = cap_n;
    w->cap_e = cap_e;
    SAP_ALLOC(ctx, w->xadj, cap_n + 1);
    SAP_ALLOC(ctx, w->adj, 2 * cap_e);
    SAP_ALLOC(ctx, w->adj2, 2 * cap_e);
    SAP_ALLOC(ctx, w->tptr, cap_n + 1);
    w->tind = w->adj; /* the transposed pattern is dead once adj2 is filled: share */
    SAP_CALLOC(ctx, w->stamp, cap_n);
    SAP_ALLOC(ctx, w->q[0], cap_n);
    SAP_ALLOC(ctx, w->q[1], cap_n);
    SAP_ALLOC(ctx, w->bydeg, cap_n);
    SAP_ALLOC(ctx, w->cnt, cap_n + 1);
    return SAP_OK;
cleanup:
    sap__cm_work_free(ctx, w);
    return st;
}

void sap__cm_work_free(sap_context *ctx, sap__cm_work *w)
{
    if (!w) return;
    sap__free(ctx, w->xadj);
    sap__free(ctx, w->adj);
    sap__free(ctx, w->adj2);
    sap__free(ctx, w->tptr);
    sap__free(ctx, w->stamp);
    sap__free(ctx, w->q[0]);
    sap__free(ctx, w->q[1]);
    sap__free(ctx, w->bydeg);
    sap__free(ctx, w->cnt);
    sap__free(ctx, w->tcnt);
    sap__free(ctx, w->claim);
    sap__free(ctx, w->par_off);
    memset(w, 0, sizeof(*w));
}

/* ---- graph ------------------------------------------------------------------------------- */

/* First position in row i of A with column >= s. */
static inline sap_int row_lower_bound(const sap_csr *A, sap_int i, sap_int s)
{
    return s == 0 ? A->rowptr[i] : sap__lower_bound(A->colind, A->rowptr[i], A->rowptr[i + 1], s);
}

/* Merges the sorted lists a[0..na) and b[0..nb) (local indices) skipping 'self';
 * writes the union to out (if non-NULL) and returns its length. */
static inline sap_int merge_union(const sap_int *a, sap_int na, sap_int offa, const sap__cm_idx *b, sap_int nb,
                                  sap_int self, sap__cm_idx *out)
{
    sap_int ia = 0, ib = 0, k = 0;
    while (ia < na || ib < nb) {
        sap_int x;
        if (ib >= nb || (ia < na && a[ia] - offa < b[ib])) x = a[ia++] - offa;
        else if (ia >= na || b[ib] < a[ia] - offa) x = b[ib++];
        else {
            x = b[ib++];
            ia++;
        }
        if (x == self) continue;
        if (out) out[k] = (sap__cm_idx)x;
        k++;
    }
    return k;
}

/* Row i of A restricted to the columns [s, e): [*p0, *p1). */
static inline void block_row(const sap_csr *A, sap_int i, sap_int s, sap_int e, sap_int *p0, sap_int *p1)
{
    sap_int a = row_lower_bound(A, i, s), b = a;
    while (b < A->rowptr[i + 1] && A->colind[b] < e) b++;
    *p0 = a;
    *p1 = b;
}

/* Sorts a[0..n) (distinct keys) increasingly: quicksort (median of three) down to runs of
 * 16, then one insertion pass. */
static void sort_keys(sap__cm_idx *a, sap_int n)
{
    while (n > 16) {
        sap_int mid = n / 2, last = n - 1;
        sap__cm_idx t;
#define CM_SWAP(x, y) (t = a[x], a[x] = a[y], a[y] = t)
        if (a[mid] < a[0]) CM_SWAP(mid, 0);
        if (a[last] < a[0]) CM_SWAP(last, 0);
        if (a[last] < a[mid]) CM_SWAP(last, mid);
        const sap__cm_idx pivot = a[mid];
        sap_int i = -1, j = n;
        for (;;) {
            do i++;
            while (a[i] < pivot);
            do j--;
            while (a[j] > pivot);
            if (i >= j) break;
            CM_SWAP(i, j);
        }
#undef CM_SWAP
        /* [0, j] and [j + 1, n): recurse on the smaller side */
        if (j + 1 < n - j - 1) {
            sort_keys(a, j + 1);
            a += j + 1;
            n -= j + 1;
        } else {
            sort_keys(a + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (sap_int i = 1; i < n; i++) {
        const sap__cm_idx x = a[i];
        sap_int k = i;
        while (k > 0 && a[k - 1] > x) {
            a[k] = a[k - 1];
            k--;
        }
        a[k] = x;
    }
}

void sap__cm_build_graph(const sap_csr *A, sap_int s, sap_int e, int threads, sap__cm_work *w)
{
    sap__cm_build_graph_rows(A, NULL, s, e, threads, w);
}

void sap__cm_build_graph_rows(const sap_csr *A, const sap_int *rows, sap_int s, sap_int e, int threads,
                              sap__cm_work *w)
{
#define CM_ROW(i) (rows ? rows[i] : (i)) /* the row of A that is row i of B */
    const sap_int m = e - s;
    const sap_int *rp = A->rowptr, *ci = A->colind;
    sap_int *tptr = w->tptr, *xadj = w->xadj;
    sap__cm_idx *tind = w->tind, *adj2 = w->adj2;
    const sap_int work = rows ? A->nnz : rp[e] - rp[s];
    const int nt = work > SAP_REORDER_PAR_MIN ? threads : 1;
    (void)nt;

    /* transposed pattern of the block: tind holds, for local column j, the local rows i
     * with B(i, j) stored, increasing */
    memset(tptr, 0, sizeof(sap_int) * (size_t)(m + 1));
    if (nt > 1 && w->tcnt && w->tcnt_threads >= nt) {
        /* in parallel: thread t counts the columns of its rows in its own array, the
         * counts become each thread's cursors (threads in order inside every column), and
         * every list comes out increasing as in the serial pass */
        sap_int *tc = w->tcnt;
        SAP_OMP("omp parallel num_threads(nt)")
        {
            int t, T;
            sap__omp_team(&t, &T);
            sap_int *c = tc + (size_t)t * (size_t)m;
            const sap_int r0 = s + (sap_int)((double)m * t / T), r1 = s + (sap_int)((double)m * (t + 1) / T);
            memset(c, 0, sizeof(sap_int) * (size_t)m);
            for (sap_int i = r0; i < r1; i++)
                for (sap_int p = row_lower_bound(A, CM_ROW(i), s); p < rp[CM_ROW(i) + 1] && ci[p] < e; p++)
                    c[ci[p] - s]++;
            SAP_OMP("omp barrier")
            sap__par_col_offsets(tc, T, m, tptr);
            for (sap_int i = r0; i < r1; i++)
                for (sap_int p = row_lower_bound(A, CM_ROW(i), s); p < rp[CM_ROW(i) + 1] && ci[p] < e; p++)
                    tind[c[ci[p] - s]++] = (sap__cm_idx)(i - s);
        }
    } else { /* rows in order: every list comes out increasing */
        for (sap_int i = s; i < e; i++)
            for (sap_int p = row_lower_bound(A, CM_ROW(i), s); p < rp[CM_ROW(i) + 1] && ci[p] < e; p++)
                tptr[ci[p] - s + 1]++;
        for (sap_int j = 0; j < m; j++) tptr[j + 1] += tptr[j];
        /* fill using xadj as the cursor array */
        memcpy(xadj, tptr, sizeof(sap_int) * (size_t)m);
        for (sap_int i = s; i < e; i++)
            for (sap_int p = row_lower_bound(A, CM_ROW(i), s); p < rp[CM_ROW(i) + 1] && ci[p] < e; p++)
                tind[xadj[ci[p] - s]++] = (sap__cm_idx)(i - s);
    }

    /* the union of row i and column i of B, diagonal excluded: count, then fill adj2 */
    xadj[0] = 0;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int i = 0; i < m; i++) {
        sap_int p0, p1;
        block_row(A, CM_ROW(i + s), s, e, &p0, &p1);
        xadj[i + 1] = merge_union(ci + p0, p1 - p0, s, tind + tptr[i], tptr[i + 1] - tptr[i], i, NULL);
    }
    for (sap_int i = 0; i < m; i++) xadj[i + 1] += xadj[i];
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int i = 0; i < m; i++) {
        sap_int p0, p1;
        block_row(A, CM_ROW(i + s), s, e, &p0, &p1);
        merge_union(ci + p0, p1 - p0, s, tind + tptr[i], tptr[i + 1] - tptr[i], i, adj2 + xadj[i]);
    }

    sap__cm_finish_graph(w, m, nt);
#undef CM_ROW
}

void sap__cm_finish_graph(sap__cm_work *w, sap_int m, int nt)
{
    sap_int *tptr = w->tptr, *xadj = w->xadj, *cnt = w->cnt;
    sap__cm_idx *adj = w->adj, *adj2 = w->adj2, *bydeg = w->bydeg;
    /* nodes by (degree, index): a stable counting sort */
    memset(cnt, 0, sizeof(sap_int) * (size_t)(m + 1));
    for (sap_int v = 0; v < m; v++) cnt[xadj[v + 1] - xadj[v] + 1]++;
    for (sap_int d = 0; d < m; d++) cnt[d + 1] += cnt[d];
    for (sap_int v = 0; v < m; v++) bydeg[cnt[xadj[v + 1] - xadj[v]]++] = (sap__cm_idx)v;

    if (nt > 1 && xadj[m] > SAP_REORDER_PAR_MIN) {
        /* in parallel: each list as the ranks of its nodes in bydeg, sorted, mapped back */
        sap_int *rank = tptr; /* free again */
        (void)nt;
        SAP_OMP("omp parallel num_threads(nt)")
        {
            SAP_OMP("omp for schedule(static)")
            for (sap_int k = 0; k < m; k++) rank[bydeg[k]] = k;
            SAP_OMP("omp for schedule(dynamic, 256)")
            for (sap_int u = 0; u < m; u++) {
                const sap_int p0 = xadj[u], p1 = xadj[u + 1];
                for (sap_int p = p0; p < p1; p++) adj[p] = (sap__cm_idx)rank[adj2[p]];
                sort_keys(adj + p0, p1 - p0);
                for (sap_int p = p0; p < p1; p++) adj[p] = bydeg[adj[p]];
            }
        }
        return;
    }
    /* neighbour lists by (degree, index) without comparisons: visiting the nodes v in
     * that order and appending v to the list of each neighbour u fills every list in
     * order (the graph is symmetric).  tptr is free again and serves as the cursor. */
    memcpy(tptr, xadj, sizeof(sap_int) * (size_t)m);
    for (sap_int k = 0; k < m; k++) {
        const sap__cm_idx v = bydeg[k];
        for (sap_int p = xadj[v]; p < xadj[v + 1]; p++) adj[tptr[adj2[p]]++] = v;
    }
}

sap_int sap__block_bandwidth(const sap_csr *A, sap_int s, sap_int e) { return sap__block_bandwidth_rows(A, NULL, s, e); }

sap_int sap__block_bandwidth_rows(const sap_csr *A, const sap_int *rows, sap_int s, sap_int e)
{
    sap_int K = 0;
    const double work = 8.0 * (double)(e - s); /* a few reads a row */
    int nt = work > SAP_REORDER_PAR_MIN ? sap__threads_for(A->ctx, work) : 1;
#ifdef _OPENMP
    if (omp_in_parallel()) nt = 1; /* the third stage's blocks */
#endif
    (void)nt;
    /* |j - i| over the row's columns in [s, e) is largest at the first or the last of them
     * (the rows are sorted): two reads a row, a binary search where the row leaves [s, e) */
    const sap_int *ci = A->colind;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(max:K)")
    for (sap_int i = s; i < e; i++) {
        const sap_int r = rows ? rows[i] : i;
        sap_int a = A->rowptr[r], b = A->rowptr[r + 1];
        if (a < b && ci[a] < s) a = sap__lower_bound(ci, a, b, s);
        if (a < b && ci[b - 1] >= e) b = sap__lower_bound(ci, a, b, e);
        if (a >= b) continue;
        const sap_int d1 = i - ci[a], d2 = ci[b - 1] - i;
        if (d1 > K) K = d1;
        if (-d1 > K) K = -d1;
        if (d2 > K) K = d2;
        if (-d2 > K) K = -d2;
    }
    return K;
}

/* ---- one CM search ---------------------------------------------------------------------- */

typedef struct cm_run {
    sap_int start;
    sap_int size;       /* nodes reached (the component) */
    sap_int bw;         /* bandwidth of the ordering */
    sap_int height;     /* levels */
    sap_int width;      /* widest level */
    sap_int last_level; /* q index where the last level starts */
    sap_int env_cm, env_rcm;
    int aborted;
} cm_run;

/* One level of a search, serially: the nodes q[ls..le) are dequeued in order, each
 * appending its unplaced neighbours in list order at q[*tail...] (stamp = key0 + position),
 * and each row's reach and envelope terms are taken once its neighbours have positions.
 * Returns the adjacency entries of the new nodes (the next level's work). */
static sap_int level_serial(sap__cm_work *w, sap__cm_idx *q, sap_int key0, sap_int ls, sap_int le, sap_int *tail,
                            sap_int *bw, sap_int *env_cm, sap_int *env_rcm)
{
    const sap_int *xadj = w->xadj;
    const sap__cm_idx *adj = w->adj;
    sap_int *stamp = w->stamp;
    sap_int t = *tail, work = 0, b = *bw, ec = 0, er = 0;
    for (sap_int k = ls; k < le; k++) {
        const sap_int u = q[k];
        sap_int minp = k, maxp = k;
        for (sap_int p = xadj[u]; p < xadj[u + 1]; p++) {
            const sap__cm_idx v = adj[p];
            sap_int pv = stamp[v] - key0;
            if (pv < 0) {
                pv = t;
                stamp[v] = key0 + t;
                q[t++] = v;
                work += xadj[v + 1] - xadj[v];
            }
            if (pv > maxp) maxp = pv;
            if (pv < minp) minp = pv;
        }
        ec += k - minp;
        er += maxp - k;
        if (maxp - k > b) b = maxp - k;
    }
    *tail = t;
    *bw = b;
    *env_cm += ec;
    *env_rcm += er;
    return work;
}

#ifdef _OPENMP
/* The same level on nt threads, with the same result.  The serial search gives a new node
 * to the first node of the level (least position k) that lists it, behind that node's
 * earlier new neighbours: the next level is ordered by (that k, list order).  So every
 * unplaced neighbour v takes the least k that lists it (claim[v] = key0 + k by an atomic
 * minimum; claims below key0 + ls are older), then each thread, over its contiguous range
 * of the level, counts and writes the neighbours whose claim is its own node's: threads in
 * order, then k, then list order is the serial order.  The reaches and envelope terms
 * follow once all positions are known (a node's neighbours lie in the levels next to it). */
static sap_int level_parallel(sap__cm_work *w, int nt, sap__cm_idx *q, sap_int key0, sap_int ls, sap_int le,
                              sap_int *tail, sap_int *bw, sap_int *env_cm, sap_int *env_rcm)
{
    const sap_int *xadj = w->xadj;
    const sap__cm_idx *adj = w->adj;
    sap_int *stamp = w->stamp, *off = w->par_off;
    _Atomic sap_int *claim = w->claim;
    const sap_int t0 = *tail, lo = key0 + ls;
    sap_int work = 0, b = *bw, ec = 0, er = 0;
    SAP_OMP("omp parallel num_threads(nt) reduction(+ : work, ec, er) reduction(max : b)")
    {
        int t, T;
        sap__omp_team(&t, &T);
        const sap_int k0 = ls + (sap_int)((double)(le - ls) * t / T), k1 = ls + (sap_int)((double)(le - ls) * (t + 1) / T);
        for (sap_int k = k0; k < k1; k++) {
            const sap_int u = q[k], mine = key0 + k;
            for (sap_int p = xadj[u]; p < xadj[u + 1]; p++) {
                const sap__cm_idx v = adj[p];
                if (stamp[v] >= key0) continue; /* placed */
                sap_int c = atomic_load_explicit(&claim[v], memory_order_relaxed);
                while (c < lo || c > mine)
                    if (atomic_compare_exchange_weak_explicit(&claim[v], &c, mine, memory_order_relaxed,
                                                              memory_order_relaxed))
                        break;
            }
        }
        SAP_OMP("omp barrier")
        sap_int cnt = 0;
        for (sap_int k = k0; k < k1; k++) {
            const sap_int u = q[k], mine = key0 + k;
            for (sap_int p = xadj[u]; p < xadj[u + 1]; p++)
                cnt += atomic_load_explicit(&claim[adj[p]], memory_order_relaxed) == mine;
        }
        off[t] = cnt;
        SAP_OMP("omp barrier")
        sap_int pos = t0;
        for (int x = 0; x < t; x++) pos += off[x];
        for (sap_int k = k0; k < k1; k++) {
            const sap_int u = q[k], mine = key0 + k;
            for (sap_int p = xadj[u]; p < xadj[u + 1]; p++) {
                const sap__cm_idx v = adj[p];
                if (atomic_load_explicit(&claim[v], memory_order_relaxed) != mine) continue;
                stamp[v] = key0 + pos;
                q[pos++] = v;
                work += xadj[v + 1] - xadj[v];
            }
        }
        SAP_OMP("omp barrier")
        for (sap_int k = k0; k < k1; k++) {
            const sap_int u = q[k];
            sap_int minp = k, maxp = k;
            for (sap_int p = xadj[u]; p < xadj[u + 1]; p++) {
                const sap_int pv = stamp[adj[p]] - key0;
                if (pv > maxp) maxp = pv;
                if (pv < minp) minp = pv;
            }
            ec += k - minp;
            er += maxp - k;
            if (maxp - k > b) b = maxp - k;
        }
    }
    for (int x = 0; x < nt; x++) *tail += off[x];
    *bw = b;
    *env_cm += ec;
    *env_rcm += er;
    return work;
}
#endif

/* CM search from 'start' writing the order into q, one level at a time (a level of at
 * least w->par_level adjacency entries on w->threads threads when w->claim is set: the
 * same order); stops early (aborted = 1) after a level whose bandwidth reaches abort_bw,
 * which the serial node-by-node search reaches exactly when it would abort. */
static cm_run cm_search(sap__cm_work *w, sap_int start, sap__cm_idx *q, sap_int abort_bw)
{
    const sap_int *xadj = w->xadj;
    sap_int *stamp = w->stamp;
    const sap_int run = ++w->run;
    const sap_int key0 = run * (w->cap_n + 1); /* stamp = key0 + position in this run */
    cm_run r;
    memset(&r, 0, sizeof(r));
    r.start = start;
    sap_int ls = 0, le = 1, tail = 1, last = 0;
    sap_int bw = 0, env_cm = 0, env_rcm = 0, height = 0, width = 0;
    q[0] = (sap__cm_idx)start;
    stamp[start] = key0;
    sap_int work = xadj[start + 1] - xadj[start];
    while (ls < le) {
        height++;
        last = ls;
        if (le - ls > width) width = le - ls;
#ifdef _OPENMP
        int nt = w->claim && !omp_in_parallel() ? w->threads : 1;
        if (nt > 1 && work >= w->par_level) {
            /* at least a quarter of the level minimum per thread */
            const sap_int per = w->par_level / 4 > 0 ? w->par_level / 4 : 1;
            if (nt > work / per) nt = (int)(work / per);
            if (nt > le - ls) nt = (int)(le - ls);
            /* both ways give the same level: the one of the lower measured time per entry
             * (threads busy elsewhere make the parallel one slower), the other every
             * CM_PAR_PROBE wide levels again */
            const double rs = w->e_ser ? w->t_ser / (double)w->e_ser : 0, rp = w->e_par ? w->t_par / (double)w->e_par : 0;
            int par = !w->e_par || (w->e_ser && rp <= rs);
            if (++w->wide % CM_PAR_PROBE == 0) par = !par;
            const double tw = sap__wtime();
            const sap_int e0 = work;
            if (par) work = level_parallel(w, nt, q, key0, ls, le, &tail, &bw, &env_cm, &env_rcm);
            else work = level_serial(w, q, key0, ls, le, &tail, &bw, &env_cm, &env_rcm);
            const double dt = sap__wtime() - tw;
            if (par) w->t_par += dt, w->e_par += e0;
            else w->t_ser += dt, w->e_ser += e0;
        } else
#endif
            work = level_serial(w, q, key0, ls, le, &tail, &bw, &env_cm, &env_rcm);
        (void)work; /* (the next level's size: read by the parallel search only) */
        if (bw >= abort_bw) {
            r.aborted = 1;
            r.bw = bw;
            return r;
        }
        ls = le;
        le = tail;
    }
    r.size = tail;
    r.bw = bw;
    r.height = height;
    r.width = width;
    r.last_level = last;
    r.env_cm = env_cm;
    r.env_rcm = env_rcm;
    return r;
}

static inline void copy_order(sap_int *dst, const sap__cm_idx *src, sap_int len)
{
    for (sap_int k = 0; k < len; k++) dst[k] = src[k];
}

/* The untried node of minimum degree (ties: first in order) in q[from..to). */
static sap_int pick_candidate(const sap__cm_work *w, const sap__cm_idx *q, sap_int from, sap_int to,
                              const sap_int *tried, int ntried)
{
    sap_int best = -1, bestdeg = 0;
    for (sap_int k = from; k < to; k++) {
        sap_int v = q[k];
        int seen = 0;
        for (int t = 0; t < ntried; t++)
            if (tried[t] == v) {
                seen = 1;
                break;
            }
        if (seen) continue;
        sap_int d = w->xadj[v + 1] - w->xadj[v];
        if (best < 0 || d < bestdeg) {
            best = v;
            bestdeg = d;
        }
    }
    return best;
}

void sap__cm_order(sap__cm_work *w, sap_int m, int flags, sap_int *perm, sap__cm_result *res)
{
    const sap_int *xadj = w->xadj;
    const sap__cm_idx *bydeg = w->bydeg;
    sap_int *stamp = w->stamp, *cnt = w->cnt;
    memset(res, 0, sizeof(*res));
    if (m == 0) {
        res->reversed = flags != SAP_CM_FORCE_CM;
        return;
    }

    /* stamps encode run * (cap_n + 1) + position; start afresh well before they overflow */
    const sap_int span = w->cap_n + 1;
    if (w->run > (INT64_MAX / 4) / span - (CM_MAX_TRIES + 1) * (m + 1)) {
        memset(stamp, 0, sizeof(sap_int) * (size_t)w->cap_n);
        if (w->claim)
            for (sap_int v = 0; v < w->cap_n; v++) atomic_store_explicit(&w->claim[v], -1, memory_order_relaxed);
        w->run = 0;
    }
    /* a node belongs to an ordered component once a search of this call reached it (or it
     * was placed as an isolated node, stamped with this call's own first key) */
    const sap_int first_key = ++w->run * span;
    sap_int base = 0, bw = 0, env_cm = 0, env_rcm = 0, ncomp = 0, tries = 0;
    /* no ordering has a bandwidth below ceil(d / 2) for a node of degree d: a search that
     * reaches that bound for the whole graph ends the tries of its component */
    sap_int lower = 0;
    for (sap_int v = 0; v < m; v++)
        if ((xadj[v + 1] - xadj[v] + 1) / 2 > lower) lower = (xadj[v + 1] - xadj[v] + 1) / 2;
    /* component starts are kept in cnt (free again) for the reversal */
    for (sap_int k = 0; k < m; k++) {
        sap_int s0 = bydeg[k];
        if (stamp[s0] >= first_key) continue;
        cnt[ncomp++] = base;
        if (xadj[s0 + 1] == xadj[s0]) { /* isolated node */
            stamp[s0] = first_key;
            perm[base++] = s0;
            continue;
        }
        sap_int tried[CM_MAX_TRIES];
        int ntried = 0;
        int cur = 0; /* q[cur] holds the deepest level structure so far */
        const sap_int comp_key = (w->run + 1) * span; /* stamps >= comp_key: this component */
        cm_run best = cm_search(w, s0, w->q[cur], INT64_MAX);
        tries++;
        tried[ntried++] = s0;
        cm_run deep = best;
        copy_order(perm + base, w->q[cur], best.size);
        const sap_int size = best.size;
        if (size > 2 && best.bw > lower) {
            /* pseudo-peripheral walk: go on while the height grows */
            while (ntried < CM_WALK_TRIES && best.bw > lower) {
                sap_int s = pick_candidate(w, w->q[cur], deep.last_level, deep.size, tried, ntried);
                if (s < 0) break;
                cm_run r = cm_search(w, s, w->q[1 - cur], INT64_MAX);
                tries++;
                tried[ntried++] = s;
                if (r.bw < best.bw || (r.bw == best.bw && r.env_rcm < best.env_rcm)) {
                    best = r;
                    copy_order(perm + base, w->q[1 - cur], size);
                }
                if (r.height > deep.height) {
                    deep = r;
                    cur = 1 - cur;
                } else {
                    break;
                }
            }
            /* extra low-degree candidates of the deepest structure's last level */
            for (int x = 0; x < CM_EXTRA_TRIES && best.bw > lower; x++) {
                sap_int s = pick_candidate(w, w->q[cur], deep.last_level, deep.size, tried, ntried);
                if (s < 0) break;
                cm_run r = cm_search(w, s, w->q[1 - cur], best.bw);
                tries++;
                tried[ntried++] = s;
                if (!r.aborted && r.bw < best.bw) {
                    best = r;
                    copy_order(perm + base, w->q[1 - cur], size);
                }
            }
            /* the next lowest-degree nodes of the component (bydeg order): the bandwidth
             * is sensitive to ties among the low-degree candidates */
            int left = CM_MINDEG_TRIES;
            for (sap_int kk = k + 1; kk < m && left > 0 && best.bw > lower; kk++) {
                sap_int s = bydeg[kk];
                if (stamp[s] < comp_key) continue;
                int seen = 0;
                for (int t = 0; t < ntried && !seen; t++) seen = tried[t] == s;
                if (seen) continue;
                left--;
                cm_run r = cm_search(w, s, w->q[1 - cur], best.bw);
                tries++;
                tried[ntried++] = s;
                if (!r.aborted && r.bw < best.bw) {
                    best = r;
                    copy_order(perm + base, w->q[1 - cur], size);
                }
            }
            /* an aborted search leaves part of the component stamped with its run, which
             * is >= first_key: the whole component counts as ordered, as it should */
        }
        if (best.bw > bw) bw = best.bw;
        env_cm += best.env_cm;
        env_rcm += best.env_rcm;
        base += size;
    }
    int reverse = flags == SAP_CM_FORCE_RCM || (flags != SAP_CM_FORCE_CM && env_rcm <= env_cm);
    if (reverse) {
        for (sap_int c = 0; c < ncomp; c++) {
            sap_int lo = cnt[c], hi = (c + 1 < ncomp ? cnt[c + 1] : m) - 1;
            while (lo < hi) {
                sap_int t = perm[lo];
                perm[lo++] = perm[hi];
                perm[hi--] = t;
            }
        }
    }
    res->bandwidth = bw;
    res->components = ncomp;
    res->tries = tries;
    res->profile_cm = env_cm;
    res->profile_rcm = env_rcm;
    res->reversed = reverse;
}

/* ---- the public CM stage ------------------------------------------------------------------ */

sap_status sap_cm_reorder(const sap_csr *A, int flags, sap_int *perm, sap_cm_info *info)
{
    return sap__cm_reorder_rows(A, NULL, flags, perm, info);
}

sap_status sap__cm_reorder_rows(const sap_csr *A, const sap_int *rows, int flags, sap_int *perm, sap_cm_info *info)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "Cuthill-McKee of a %lld x %lld matrix", (long long)A->nrows,
                         (long long)A->ncols);
    if (flags < SAP_CM_AUTO || flags > SAP_CM_FORCE_CM)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown Cuthill-McKee flags %d", flags);
    const sap_int n = A->nrows;
    if (!perm && n > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "perm is NULL");
    const double t0 = sap__wtime();
    sap_status st = SAP_OK;
    sap__cm_work w;
    memset(&w, 0, sizeof(w));
    SAP_TRY(sap__cm_work_create(ctx, n, A->nnz, &w));
    sap_status gs = SAP_ERR_INVALID; /* the graph on the device: not tried */
    if (!rows && sap__offload(ctx, SAP_OFFLOAD_GRAPH, A->nnz) && n > 0) {
        sap_int nadj = 0;
        sap__try_begin(ctx);
        gs = sap__ops(ctx)->sym_graph(ctx, A, w.xadj, w.adj2, &nadj);
        sap__try_end(ctx);
        if (gs == SAP_OK) sap__cm_finish_graph(&w, n, sap__threads(ctx));
        else if (gs == SAP_ERR_OUT_OF_MEMORY) sap_context_clear_error(ctx); /* a full device: the host builds it */
        else SAP_TRY(gs);
    }
    if (gs != SAP_OK) {
        /* the per-thread column counts of the parallel transposed pattern (at most 1 GB:
         * above that the pattern is transposed by one thread) */
        const int nt = sap__threads(ctx);
        if (nt > 1 && A->nnz > SAP_REORDER_PAR_MIN && (double)nt * (double)n * sizeof(sap_int) <= 1e9) {
            SAP_ALLOC(ctx, w.tcnt, (size_t)nt * (size_t)n);
            w.tcnt_threads = nt;
        }
        sap__cm_build_graph_rows(A, rows, 0, n, nt, &w);
    }
    /* the wide levels of the searches on all threads (the same ordering) */
    if (A->nnz > SAP_REORDER_PAR_MIN) SAP_TRY(sap__cm_work_parallel(ctx, &w, sap__threads(ctx), CM_PAR_LEVEL));
    sap__cm_result r;
    sap__cm_order(&w, n, flags, perm, &r);
    sap_int K0 = sap__block_bandwidth_rows(A, rows, 0, n);
    int chosen = r.reversed ? SAP_CM_FORCE_RCM : SAP_CM_FORCE_CM;
    sap_int K1 = r.bandwidth;
    if (flags == SAP_CM_AUTO && K0 <= r.bandwidth) {
        for (sap_int i = 0; i < n; i++) perm[i] = i;
        chosen = SAP_CM_AUTO;
        K1 = K0;
    }
    if (info) {
        memset(info, 0, sizeof(*info));
        info->K_before = K0;
        info->K_after = K1;
        info->chosen = chosen;
        info->components = r.components;
        info->tries = r.tries;
        info->profile_cm = r.profile_cm;
        info->profile_rcm = r.profile_rcm;
        info->time = sap__wtime() - t0;
    }
cleanup:
    sap__cm_work_free(ctx, &w);
    return st;
}
