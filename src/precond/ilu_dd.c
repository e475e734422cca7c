/* ilu_dd.c -- the domain decomposition of the block ILU and RAS preconditioners
 * (ilu_factor.h, after the seed's section on block ILU and Restricted Additive Schwarz):
 * partitions (METIS k-way when built with it, else pieces of a breadth-first order), the
 * block-diagonal part of A, and the extended (overlapping) subdomains concatenated into one
 * block-diagonal system with its gather R and restricted prolongation. */
#include "precond/ilu_factor.h"

#include <stdlib.h>
#include <string.h>

#ifdef SAP_HAVE_METIS
#include <metis.h>
#endif

/* The pattern of A + A^T without the diagonal (xadj n + 1, adj). */
static sap_status sym_graph(sap_context *ctx, const sap_csr *A, sap_int **xadj, sap_int **adj)
{
    sap_status st = SAP_OK;
    sap_csr *B = NULL;
    *xadj = *adj = NULL;
    SAP_TRY(sap_csr_add_transpose(A, 1.0, 1.0, &B));
    const sap_int n = B->nrows;
    SAP_ALLOC(ctx, *xadj, n + 1);
    SAP_ALLOC(ctx, *adj, B->nnz > 0 ? B->nnz : 1);
    sap_int w = 0;
    for (sap_int i = 0; i < n; i++) {
        (*xadj)[i] = w;
        for (sap_int p = B->rowptr[i]; p < B->rowptr[i + 1]; p++)
            if (B->colind[p] != i) (*adj)[w++] = B->colind[p];
    }
    (*xadj)[n] = w;
cleanup:
    sap_csr_destroy(B);
    if (st < 0) {
        SAP_FREE(ctx, *xadj);
        SAP_FREE(ctx, *adj);
    }
    return st;
}

/* Breadth-first order of every connected component (from its lowest row). */
static sap_status bfs_order(sap_context *ctx, sap_int n, const sap_int *xadj, const sap_int *adj, sap_int *order)
{
    sap_status st = SAP_OK;
    unsigned char *seen = NULL;
    SAP_CALLOC(ctx, seen, n > 0 ? n : 1);
    sap_int head = 0, tail = 0;
    for (sap_int s = 0; s < n; s++) {
        if (seen[s]) continue;
        seen[s] = 1;
        order[tail++] = s;
        while (head < tail) {
            const sap_int v = order[head++];
            for (sap_int p = xadj[v]; p < xadj[v + 1]; p++)
                if (!seen[adj[p]]) {
                    seen[adj[p]] = 1;
                    order[tail++] = adj[p];
                }
        }
    }
cleanup:
    sap__free(ctx, seen);
    return st;
}

sap_status sap__dd_partition(sap_context *ctx, const sap_csr *A, sap_int nblocks, sap_int *part, const char **how)
{
    sap_status st = SAP_OK;
    sap_int *xadj = NULL, *adj = NULL, *order = NULL;
#ifdef SAP_HAVE_METIS
    idx_t *mx = NULL, *ma = NULL, *mp = NULL;
#endif
    const sap_int n = A->nrows;
    if (nblocks < 1) return SAP_ERROR(ctx, SAP_ERR_INVALID, "partition: %lld blocks", (long long)nblocks);
    if (nblocks > n) nblocks = n > 0 ? n : 1;
    if (nblocks == 1 || n == 0) {
        for (sap_int i = 0; i < n; i++) part[i] = 0;
        *how = "one block";
        return SAP_OK;
    }
    SAP_TRY(sym_graph(ctx, A, &xadj, &adj));
#ifdef SAP_HAVE_METIS
    if (n < (sap_int)1 << 30 && xadj[n] < (sap_int)1 << 30) {
        idx_t nv = (idx_t)n, ncon = 1, np = (idx_t)nblocks, obj = 0, opts[METIS_NOPTIONS];
        SAP_ALLOC(ctx, mx, n + 1);
        SAP_ALLOC(ctx, ma, xadj[n] > 0 ? xadj[n] : 1);
        SAP_ALLOC(ctx, mp, n);
        for (sap_int i = 0; i <= n; i++) mx[i] = (idx_t)xadj[i];
        for (sap_int p = 0; p < xadj[n]; p++) ma[p] = (idx_t)adj[p];
        METIS_SetDefaultOptions(opts);
        opts[METIS_OPTION_SEED] = 1; /* deterministic */
        int rc = METIS_PartGraphKway(&nv, &ncon, mx, ma, NULL, NULL, NULL, &np, NULL, NULL, opts, &obj, mp);
        if (rc == METIS_OK)
            for (sap_int i = 0; i < n; i++) part[i] = (sap_int)mp[i];
        if (rc == METIS_OK) {
            *how = "METIS k-way";
            goto cleanup;
        }
    }
#endif
    /* contiguous pieces of a breadth-first order: connected, about equal sizes */
    SAP_ALLOC(ctx, order, n);
    SAP_TRY(bfs_order(ctx, n, xadj, adj, order));
    for (sap_int k = 0; k < n; k++) part[order[k]] = k * nblocks / n;
    *how = "breadth-first pieces (built without METIS)";
cleanup:
#ifdef SAP_HAVE_METIS
    sap__free(ctx, mx);
    sap__free(ctx, ma);
    sap__free(ctx, mp);
#endif
    sap__free(ctx, xadj);
    sap__free(ctx, adj);
    sap__free(ctx, order);
    return st;
}

sap_status sap__dd_block_diag(sap_context *ctx, const sap_csr *A, const sap_int *part, sap_csr **B)
{
    sap_status st = SAP_OK;
    sap_int nz = 0;
    *B = NULL;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) nz += part[A->colind[p]] == part[i];
    SAP_TRY(sap_csr_create(ctx, A->nrows, A->ncols, nz, B));
    nz = 0;
    (*B)->rowptr[0] = 0;
    for (sap_int i = 0; i < A->nrows; i++) {
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (part[A->colind[p]] == part[i]) {
                (*B)->colind[nz] = A->colind[p];
                (*B)->val[nz++] = A->val[p];
            }
        (*B)->rowptr[i + 1] = nz;
    }
cleanup:
    return st;
}

sap_status sap__dd_blocks(sap_context *ctx, const sap_csr *A, sap_int nblocks, sap_csr **B, const char **how,
                          double *t_partition)
{
    sap_status st = SAP_OK;
    sap_int *part = NULL;
    *B = NULL;
    const double t0 = sap__wtime();
    SAP_ALLOC(ctx, part, A->nrows > 0 ? A->nrows : 1);
    SAP_TRY(sap__dd_partition(ctx, A, nblocks, part, how));
    if (t_partition) *t_partition = sap__wtime() - t0;
    SAP_TRY(sap__dd_block_diag(ctx, A, part, B));
cleanup:
    sap__free(ctx, part);
    return st;
}

void sap__dd_ras_free(sap_dd_ras *D)
{
    sap_csr_destroy(D->Ab);
    sap_csr_destroy(D->R);
    sap_csr_destroy(D->Pown);
    memset(D, 0, sizeof(*D));
}

static int cmp_int(const void *a, const void *b)
{
    const sap_int x = *(const sap_int *)a, y = *(const sap_int *)b;
    return x < y ? -1 : x > y;
}

/* Appends an entry to a growing CSR built row by row (cap doubled as needed). */
static sap_status push_entry(sap_context *ctx, sap_int **ci, double **va, sap_int *cap, sap_int *nz, sap_int c, double v)
{
    if (*nz == *cap) {
        const sap_int nc = *cap * 2 + 16;
        sap_int *t1 = sap__realloc(ctx, *ci, (size_t)nc, sizeof(sap_int), __FILE__, __LINE__);
        if (!t1) return SAP_ERR_OUT_OF_MEMORY;
        *ci = t1;
        double *t2 = sap__realloc(ctx, *va, (size_t)nc, sizeof(double), __FILE__, __LINE__);
        if (!t2) return SAP_ERR_OUT_OF_MEMORY;
        *va = t2;
        *cap = nc;
    }
    (*ci)[*nz] = c;
    (*va)[(*nz)++] = v;
    return SAP_OK;
}

sap_status sap__dd_ras_build(sap_context *ctx, const sap_csr *A, const sap_int *part, sap_int nblocks,
                             sap_int overlap, sap_dd_ras *D)
{
    sap_status st = SAP_OK;
    const sap_int n = A->nrows;
    sap_int *xadj = NULL, *adj = NULL, *stamp = NULL, *loc = NULL, *list = NULL, *map = NULL, *own = NULL;
    sap_int *rp = NULL, *ci = NULL, *start = NULL, *cnt = NULL, *byp = NULL;
    double *va = NULL;
    sap_int cap = A->nnz + 16, nz = 0, next = 0, mcap = 2 * n + 16;
    memset(D, 0, sizeof(*D));
    if (overlap < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "ras: overlap %lld < 0", (long long)overlap);
    SAP_TRY(sym_graph(ctx, A, &xadj, &adj));
    SAP_ALLOC(ctx, stamp, n > 0 ? n : 1);
    SAP_ALLOC(ctx, loc, n > 0 ? n : 1);
    SAP_ALLOC(ctx, list, n > 0 ? n : 1);
    SAP_ALLOC(ctx, own, n > 0 ? n : 1);
    SAP_ALLOC(ctx, map, mcap);
    SAP_ALLOC(ctx, rp, mcap + 1);
    SAP_ALLOC(ctx, ci, cap);
    SAP_ALLOC(ctx, va, cap);
    SAP_ALLOC(ctx, start, nblocks + 1);
    for (sap_int i = 0; i < n; i++) stamp[i] = -1;
    /* the rows of each part, in increasing order: counting sort */
    SAP_CALLOC(ctx, cnt, nblocks + 1);
    SAP_ALLOC(ctx, byp, n > 0 ? n : 1);
    for (sap_int i = 0; i < n; i++) cnt[part[i] + 1]++;
    for (sap_int s = 0; s < nblocks; s++) cnt[s + 1] += cnt[s];
    memcpy(start, cnt, sizeof(sap_int) * (size_t)(nblocks + 1));
    for (sap_int i = 0; i < n; i++) byp[cnt[part[i]]++] = i;
    rp[0] = 0;
    for (sap_int s = 0; s < nblocks; s++) {
        sap_int m = 0;
        for (sap_int k = start[s]; k < start[s + 1]; k++) {
            stamp[byp[k]] = s;
            list[m++] = byp[k];
        }
        /* overlap: graph levels around the part */
        sap_int lo = 0;
        for (sap_int l = 0; l < overlap; l++) {
            const sap_int hi = m;
            for (sap_int k = lo; k < hi; k++)
                for (sap_int p = xadj[list[k]]; p < xadj[list[k] + 1]; p++)
                    if (stamp[adj[p]] != s) {
                        stamp[adj[p]] = s;
                        list[m++] = adj[p];
                    }
            lo = hi;
        }
        /* rows in increasing order (ILU of the subdomain in A's order) */
        qsort(list, (size_t)m, sizeof(sap_int), cmp_int);
        if (next + m > mcap) {
            const sap_int nc = (next + m) * 2;
            sap_int *t = sap__realloc(ctx, map, (size_t)nc, sizeof(sap_int), __FILE__, __LINE__);
            if (!t) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "ras: out of memory for %lld subdomain rows", (long long)nc);
            map = t;
            t = sap__realloc(ctx, rp, (size_t)nc + 1, sizeof(sap_int), __FILE__, __LINE__);
            if (!t) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "ras: out of memory for %lld subdomain rows", (long long)nc);
            rp = t;
            mcap = nc;
        }
        for (sap_int k = 0; k < m; k++) {
            loc[list[k]] = next + k;
            map[next + k] = list[k];
            if (part[list[k]] == s) own[list[k]] = next + k;
        }
        for (sap_int k = 0; k < m; k++) {
            const sap_int i = list[k];
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                if (stamp[A->colind[p]] == s)
                    if (push_entry(ctx, &ci, &va, &cap, &nz, loc[A->colind[p]], A->val[p]) < 0)
                        SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "ras: out of memory for the subdomain matrices");
            rp[next + k + 1] = nz;
        }
        next += m;
    }
    D->n = n;
    D->next = next;
    SAP_TRY(sap_csr_create(ctx, next, next, nz, &D->Ab));
    memcpy(D->Ab->rowptr, rp, sizeof(sap_int) * (size_t)(next + 1));
    if (nz) {
        memcpy(D->Ab->colind, ci, sizeof(sap_int) * (size_t)nz);
        memcpy(D->Ab->val, va, sizeof(double) * (size_t)nz);
    }
    SAP_TRY(sap_csr_create(ctx, next, n, next, &D->R));
    for (sap_int q = 0; q <= next; q++) D->R->rowptr[q] = q;
    for (sap_int q = 0; q < next; q++) {
        D->R->colind[q] = map[q];
        D->R->val[q] = 1.0;
    }
    SAP_TRY(sap_csr_create(ctx, n, next, n, &D->Pown));
    for (sap_int i = 0; i <= n; i++) D->Pown->rowptr[i] = i;
    for (sap_int i = 0; i < n; i++) {
        D->Pown->colind[i] = own[i];
        D->Pown->val[i] = 1.0;
    }
cleanup:
    sap__free(ctx, xadj);
    sap__free(ctx, adj);
    sap__free(ctx, stamp);
    sap__free(ctx, loc);
    sap__free(ctx, list);
    sap__free(ctx, map);
    sap__free(ctx, own);
    sap__free(ctx, rp);
    sap__free(ctx, ci);
    sap__free(ctx, va);
    sap__free(ctx, start);
    sap__free(ctx, byp);
    sap__free(ctx, cnt);
    if (st < 0) sap__dd_ras_free(D);
    return st;
}
