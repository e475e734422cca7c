/* csr_blocks.c -- diagonal blocks of a CSR for block-Jacobi (csr_blocks.h).
 *
 * Supervariables: every row's pattern (its length and column indices) is hashed (64-bit
 * FNV-1a, rows in parallel), the rows are sorted by (hash, row) and runs of equal hashes
 * are split into classes of identical patterns (compared entry by entry, so a hash
 * collision never merges different patterns).  A class keeps its rows ascending; classes
 * are ordered by their first row and cut into pieces of at most maxblock rows; then
 * consecutive pieces are merged while their sum stays <= maxblock (agglomeration). */
#include "matrix/csr_blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hrow {
    uint64_t h;
    sap_int row;
} hrow;

static int cmp_hrow(const void *a, const void *b)
{
    const hrow *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* a class: its first row and where its rows are in the sorted member list */
typedef struct sclass {
    sap_int first, start, len;
} sclass;

static int cmp_class(const void *a, const void *b)
{
    const sclass *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

static int same_pattern(const sap_csr *A, sap_int i, sap_int j)
{
    const sap_int li = A->rowptr[i + 1] - A->rowptr[i];
    if (li != A->rowptr[j + 1] - A->rowptr[j]) return 0;
    return memcmp(A->colind + A->rowptr[i], A->colind + A->rowptr[j], (size_t)li * sizeof(sap_int)) == 0;
}

static void count_hist(sap_csr_blocks *B)
{
    memset(B->hist, 0, sizeof(B->hist));
    B->maxb = 0;
    for (sap_int b = 0; b < B->nb; b++) {
        const sap_int s = B->off[b + 1] - B->off[b];
        B->hist[s]++;
        if (s > B->maxb) B->maxb = (int)s;
    }
}

sap_status sap__csr_blocks(sap_context *ctx, const sap_csr *A, int maxblock, int uniform, int agglomerate,
                           sap_csr_blocks *B)
{
    sap_status st = SAP_OK;
    hrow *hr = NULL;
    sclass *cl = NULL;
    sap_int *member = NULL, *cls = NULL;
    if (!B) return SAP_ERROR(ctx, SAP_ERR_INVALID, "block detection: no output");
    memset(B, 0, sizeof(*B));
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "block detection: no matrix");
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "block detection: the matrix is %lld x %lld", (long long)A->nrows,
                         (long long)A->ncols);
    if (maxblock < 1 || maxblock > SAP_BLOCKS_MAX)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "block detection: maximum block size %d is outside 1..%d", maxblock,
                         SAP_BLOCKS_MAX);
    const sap_int n = A->nrows;
    B->n = n;
    SAP_ALLOC(ctx, B->rows, n > 0 ? n : 1);
    SAP_ALLOC(ctx, B->off, n + 1);
    if (uniform) {
        for (sap_int i = 0; i < n; i++) B->rows[i] = i;
        sap_int nb = 0;
        for (sap_int i = 0; i < n; i += maxblock) B->off[nb++] = i;
        B->off[nb] = n;
        B->nb = nb;
        count_hist(B);
        return SAP_OK;
    }
    SAP_ALLOC(ctx, hr, n > 0 ? n : 1);
#pragma omp parallel for schedule(static) num_threads(sap__threads(ctx)) if (n > 20000)
    for (sap_int i = 0; i < n; i++) {
        uint64_t h = 1469598103934665603ull;
        const sap_int lo = A->rowptr[i], hi = A->rowptr[i + 1];
        h = (h ^ (uint64_t)(hi - lo)) * 1099511628211ull;
        for (sap_int p = lo; p < hi; p++) h = (h ^ (uint64_t)A->colind[p]) * 1099511628211ull;
        hr[i].h = h;
        hr[i].row = i;
    }
    qsort(hr, (size_t)n, sizeof(hrow), cmp_hrow);
    /* classes: within a run of equal hashes, a row joins the first earlier class of the
     * run with its pattern (collisions: a new class) */
    SAP_ALLOC(ctx, cls, n > 0 ? n : 1);     /* class of sorted position k */
    SAP_ALLOC(ctx, cl, n > 0 ? n : 1);
    sap_int ncl = 0;
    for (sap_int k = 0; k < n;) {
        sap_int e = k + 1;
        while (e < n && hr[e].h == hr[k].h) e++;
        const sap_int c0 = ncl;
        for (sap_int q = k; q < e; q++) {
            sap_int c = -1;
            for (sap_int t = c0; t < ncl && c < 0; t++)
                if (same_pattern(A, cl[t].first, hr[q].row)) c = t;
            if (c < 0) {
                c = ncl++;
                cl[c].first = hr[q].row;
                cl[c].len = 0;
            }
            cls[q] = c;
            cl[c].len++;
        }
        k = e;
    }
    B->nsuper = ncl;
    /* members grouped by class, rows ascending within a class (sorted positions are) */
    SAP_ALLOC(ctx, member, n > 0 ? n : 1);
    {
        sap_int pos = 0;
        for (sap_int c = 0; c < ncl; c++) {
            cl[c].start = pos;
            pos += cl[c].len;
            cl[c].len = 0;
        }
        for (sap_int q = 0; q < n; q++) {
            sclass *c = &cl[cls[q]];
            member[c->start + c->len++] = hr[q].row;
        }
    }
    qsort(cl, (size_t)ncl, sizeof(sclass), cmp_class);
    /* pieces of <= maxblock rows, merged while the sum stays <= maxblock */
    sap_int nb = 0, pos = 0, cur = 0;
    for (sap_int c = 0; c < ncl; c++) {
        for (sap_int a = 0; a < cl[c].len; a += maxblock) {
            sap_int len = cl[c].len - a < maxblock ? cl[c].len - a : maxblock;
            if (!(agglomerate && cur > 0 && cur + len <= maxblock)) {
                B->off[nb++] = pos;
                cur = 0;
            }
            memcpy(B->rows + pos, member + cl[c].start + a, (size_t)len * sizeof(sap_int));
            pos += len;
            cur += len;
        }
    }
    B->off[nb] = n;
    B->nb = nb;
    /* rows ascending inside every block (merged pieces interleave) */
#pragma omp parallel for schedule(dynamic, 256) num_threads(sap__threads(ctx)) if (nb > 20000)
    for (sap_int b = 0; b < nb; b++) {
        sap_int *r = B->rows + B->off[b];
        const sap_int s = B->off[b + 1] - B->off[b];
        for (sap_int i = 1; i < s; i++) { /* insertion sort: s <= 32 */
            sap_int v = r[i], j = i - 1;
            while (j >= 0 && r[j] > v) {
                r[j + 1] = r[j];
                j--;
            }
            r[j + 1] = v;
        }
    }
    count_hist(B);
cleanup:
    sap__free(ctx, hr);
    sap__free(ctx, cl);
    sap__free(ctx, cls);
    sap__free(ctx, member);
    if (st < 0) sap__csr_blocks_free(ctx, B);
    return st;
}

void sap__csr_blocks_free(sap_context *ctx, sap_csr_blocks *B)
{
    if (!B) return;
    sap__free(ctx, B->rows);
    sap__free(ctx, B->off);
    memset(B, 0, sizeof(*B));
}

void sap__csr_blocks_describe(const sap_csr_blocks *B, char *buf, size_t size)
{
    if (!size) return;
    int w = snprintf(buf, size, "%lld blocks", (long long)B->nb);
    if (B->nsuper > 0 && w > 0 && (size_t)w < size)
        w += snprintf(buf + w, size - (size_t)w, " (%lld supervariables)", (long long)B->nsuper);
    if (w > 0 && (size_t)w < size) w += snprintf(buf + w, size - (size_t)w, ", sizes");
    for (int s = 1; s <= SAP_BLOCKS_MAX && w > 0 && (size_t)w < size; s++)
        if (B->hist[s]) w += snprintf(buf + w, size - (size_t)w, " %d:%lld", s, (long long)B->hist[s]);
}
