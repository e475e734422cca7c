/* csr_blocks.c -- diagonal blocks of a CSR for block-Jacobi (csr_blocks.h).
 *
 * Supervariables: every row's pattern (its length and column indices) is hashed (64-bit
 * FNV-1a, rows in parallel); the rows, ascending, then meet their classes in a hash table
 * (a row joins the class whose pattern it has, compared entry by entry, so a hash
 * collision never merges different patterns): O(nnz) expected, no sort.  A class keeps its
 * rows ascending; classes are ordered by their first row and cut into pieces of at most
 * maxblock rows; then consecutive pieces are merged while their sum stays <= maxblock
 * (agglomeration). */
#include "matrix/csr_blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a class: its first row and where its rows are in the member list */
typedef struct sclass {
    sap_int first, start, len;
} sclass;

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
    uint64_t *hash = NULL;
    sap_int *table = NULL;
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
    SAP_ALLOC(ctx, hash, n > 0 ? n : 1);
#pragma omp parallel for schedule(static) num_threads(sap__threads(ctx)) if (n > 20000)
    for (sap_int i = 0; i < n; i++) {
        uint64_t h = 1469598103934665603ull;
        const sap_int lo = A->rowptr[i], hi = A->rowptr[i + 1];
        h = (h ^ (uint64_t)(hi - lo)) * 1099511628211ull;
        for (sap_int p = lo; p < hi; p++) h = (h ^ (uint64_t)A->colind[p]) * 1099511628211ull;
        hash[i] = h;
    }
    /* classes in the order of their first row: the rows ascending through an open-addressing
     * table of class numbers (linear probing); a row joins the class of its pattern (equal
     * hash, then compared), else opens one (collisions: distinct classes of one hash) */
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap *= 2;
    SAP_ALLOC(ctx, table, cap);
    for (size_t t = 0; t < cap; t++) table[t] = -1;
    SAP_ALLOC(ctx, cls, n > 0 ? n : 1); /* class of row i */
    SAP_ALLOC(ctx, cl, n > 0 ? n : 1);
    sap_int ncl = 0;
    for (sap_int i = 0; i < n; i++) {
        size_t t = (size_t)(hash[i] ^ (hash[i] >> 29)) & (cap - 1);
        sap_int c = -1;
        for (; table[t] >= 0; t = (t + 1) & (cap - 1)) {
            const sap_int k = table[t];
            if (hash[cl[k].first] == hash[i] && same_pattern(A, cl[k].first, i)) {
                c = k;
                break;
            }
        }
        if (c < 0) {
            c = ncl++;
            cl[c].first = i;
            cl[c].len = 0;
            table[t] = c;
        }
        cls[i] = c;
        cl[c].len++;
    }
    B->nsuper = ncl;
    /* members grouped by class, rows ascending within a class */
    SAP_ALLOC(ctx, member, n > 0 ? n : 1);
    {
        sap_int pos = 0;
        for (sap_int c = 0; c < ncl; c++) {
            cl[c].start = pos;
            pos += cl[c].len;
            cl[c].len = 0;
        }
        for (sap_int i = 0; i < n; i++) {
            sclass *c = &cl[cls[i]];
            member[c->start + c->len++] = i;
        }
    }
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
    sap__free(ctx, hash);
    sap__free(ctx, table);
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
