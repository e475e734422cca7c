/* mm_assemble.c -- owns turning the parsed entries (mm_body.c) into results: a canonical
 * CSR from coordinate entries (rows bucketed in file order, symmetric and skew-symmetric
 * entries mirrored, then rows sorted and duplicates summed in file order), a CSR from
 * array values (every value kept, zeros included), and a dense matrix from either. */
#include "base/csr_search.h"
#include "matrix/mm_read.h"
#include "matrix/sort_pairs.h"

/* The coordinate entries as a canonical CSR; mirror: every off-diagonal entry also gives
 * its mirror (negated for skew), summed with a stored one. */
static sap_status build_csr_coordinate(sap_context *ctx, const mm_data *d, bool mirror, sap_csr **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    const double msign = h->symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0;
    sap_int *next = NULL;
    sap_csr *A = NULL;
    SAP_CALLOC(ctx, next, h->nrows + 1);
    if (mirror) {
        FOR_TRIPLETS(d, {
            next[r + 1]++;
            if (r != j) next[j + 1]++;
        });
    } else {
        FOR_TRIPLETS(d, next[r + 1]++);
    }
    for (sap_int i = 0; i < h->nrows; i++) next[i + 1] += next[i];
    SAP_TRY(sap_csr_create(ctx, h->nrows, h->ncols, next[h->nrows], &A));
    memcpy(A->rowptr, next, sizeof(sap_int) * (size_t)(h->nrows + 1));
    sap_int *ci = A->colind;
    double *va = A->val;
    if (mirror) {
        FOR_TRIPLETS(d, {
            sap_int p = next[r]++;
            ci[p] = j;
            va[p] = v;
            if (r != j) {
                p = next[j]++;
                ci[p] = r;
                va[p] = msign * v;
            }
        });
    } else {
        FOR_TRIPLETS(d, {
            sap_int p = next[r]++;
            ci[p] = j;
            va[p] = v;
        });
    }
    SAP_TRY(sap__csr_canonicalize(ctx, A));
    *out = A;
    A = NULL;
cleanup:
    sap__free(ctx, next);
    sap_csr_destroy(A);
    return st;
}

/* Entries above the diagonal (r < j), in file order: their count and the first one. */
static int64_t count_upper(const mm_data *d, sap_int *fi, sap_int *fj)
{
    int64_t n = 0;
    *fi = *fj = -1;
    FOR_TRIPLETS(d, {
        if (r < j) {
            if (n == 0) {
                *fi = r;
                *fj = j;
            }
            n++;
        }
    });
    return n;
}

/* The symmetric or skew file's entries with only the missing mirrors filled in: A0 (the
 * entries as given, canonical) plus (j, i) = s * a_ij for each off-diagonal (i, j) of A0
 * whose (j, i) is not in A0.  *pairs: upper positions of A0 whose mirror is stored too. */
static sap_status build_csr_union(sap_context *ctx, const mm_data *d, sap_csr **out, int64_t *pairs)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    const double s = h->symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0;
    const sap_int n = h->nrows;
    sap_csr *A0 = NULL, *A = NULL;
    sap_int *next = NULL;
    SAP_TRY(build_csr_coordinate(ctx, d, false, &A0));
    const sap_int *ap = A0->rowptr, *ai = A0->colind;
    const double *ax = A0->val;
    SAP_CALLOC(ctx, next, n + 1);
    int64_t both = 0;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = ap[i]; p < ap[i + 1]; p++) {
            const sap_int j = ai[p];
            next[i + 1]++;
            if (j == i) continue;
            if (sap__csr_find(ap, ai, j, i) < 0) next[j + 1]++;
            else if (i < j) both++;
        }
    for (sap_int i = 0; i < n; i++) next[i + 1] += next[i];
    SAP_TRY(sap_csr_create(ctx, n, h->ncols, next[n], &A));
    memcpy(A->rowptr, next, sizeof(sap_int) * (size_t)(n + 1));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = ap[i]; p < ap[i + 1]; p++) {
            const sap_int j = ai[p];
            sap_int q = next[i]++;
            A->colind[q] = j;
            A->val[q] = ax[p];
            if (j != i && sap__csr_find(ap, ai, j, i) < 0) {
                q = next[j]++;
                A->colind[q] = i;
                A->val[q] = s * ax[p];
            }
        }
    SAP_TRY(sap__csr_canonicalize(ctx, A));
    *pairs = both;
    *out = A;
    A = NULL;
cleanup:
    sap__free(ctx, next);
    sap_csr_destroy(A0);
    sap_csr_destroy(A);
    return st;
}

static const char *sym_word(sap_symmetry s) { return s == SAP_SKEW_SYMMETRIC ? "skew-symmetric" : "symmetric"; }

/* A coordinate file into a CSR, with the entries above the diagonal of a symmetric or
 * skew file handled as opt->symmetric_upper says (sap.h). */
static sap_status build_csr_coordinate_opt(sap_context *ctx, const char *name, const mm_data *d,
                                           const sap_mm_read_options *opt, sap_csr **out)
{
    const mm_header *h = &d->h;
    const bool expand = opt->expand_symmetry != 0;
    if (h->symmetry == SAP_GENERAL) return build_csr_coordinate(ctx, d, false, out);
    const int mode = opt->symmetric_upper;
    if (mode == SAP_MM_UPPER_SUM) return build_csr_coordinate(ctx, d, expand, out);
    sap_int fi, fj;
    const int64_t upper = count_upper(d, &fi, &fj);
    if (upper == 0) return build_csr_coordinate(ctx, d, expand, out);
    if (mode == SAP_MM_UPPER_REJECT)
        return SAP_ERROR(ctx, SAP_ERR_PARSE,
                         SRC_FMT "%lld of the %lld entries of this %s file lie above the diagonal (the first is (%lld, "
                                 "%lld)); the format stores the lower triangle (read them with symmetric_upper = "
                                 "warn, --symmetric-upper=warn)",
                         SRC_ARG(name), (long long)upper, (long long)d->count, sym_word(h->symmetry),
                         (long long)fi + 1, (long long)fj + 1);
    if (!expand) return build_csr_coordinate(ctx, d, false, out); /* as stored: nothing is summed */
    int64_t pairs = 0;
    sap_status st = build_csr_union(ctx, d, out, &pairs);
    if (st < 0) return st;
    return SAP_ERROR(ctx, SAP_WARN_MM_UPPER,
                     SRC_FMT "%lld of the %lld entries of this %s file lie above the diagonal (the first is (%lld, "
                             "%lld)), %lld of them with their mirror stored too: each stored entry is taken as given "
                             "and only the missing mirrors are filled in, nothing is summed (symmetric_upper, "
                             "--symmetric-upper=warn|reject|sum)",
                     SRC_ARG(name), (long long)upper, (long long)d->count, sym_word(h->symmetry), (long long)fi + 1,
                     (long long)fj + 1, (long long)pairs);
}

static sap_status build_csr_array(sap_context *ctx, const mm_data *d, bool expand, sap_csr **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    const sap_int nr = h->nrows, nc = h->ncols;
    sap_csr *A = NULL;
    const bool full = h->symmetry == SAP_GENERAL || expand;
    const sap_int nnz = full ? nr * nc : h->entries;
    SAP_TRY(sap_csr_create(ctx, nr, nc, nnz, &A));
    sap_int *rp = A->rowptr, *ci = A->colind;
    double *va = A->val;
    if (full) {
        for (sap_int i = 0; i <= nr; i++) rp[i] = i * nc;
        for (sap_int i = 0; i < nr; i++)
            for (sap_int j = 0; j < nc; j++) ci[i * nc + j] = j;
        if (h->symmetry == SAP_GENERAL) {
            FOR_ARRAY_VALUES(d, va[i * nc + j] = v);
        } else {
            const double s = h->symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0;
            if (h->symmetry == SAP_SKEW_SYMMETRIC)
                for (sap_int i = 0; i < nr; i++) va[i * nc + i] = 0.0;
            FOR_ARRAY_VALUES(d, {
                va[i * nc + j] = v;
                va[j * nc + i] = i == j ? v : s * v;
            });
        }
    } else {
        /* the stored lower triangle: row i holds columns 0..i (symmetric) or 0..i-1 (skew) */
        const bool skew = h->symmetry == SAP_SKEW_SYMMETRIC;
        for (sap_int i = 0; i <= nr; i++)
            rp[i] = skew ? (i % 2 ? (i - 1) / 2 * i : i / 2 * (i - 1)) : (i % 2 ? (i + 1) / 2 * i : i / 2 * (i + 1));
        FOR_ARRAY_VALUES(d, {
            ci[rp[i] + j] = j;
            va[rp[i] + j] = v;
        });
    }
    *out = A;
    return SAP_OK;
cleanup:
    sap_csr_destroy(A);
    return st;
}

sap_status sap__mm_build_dense(sap_context *ctx, const char *name, const mm_data *d, const sap_mm_read_options *opt,
                               sap_dense **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    const bool expand = opt->expand_symmetry != 0;
    sap_dense *D = NULL;
    sap_csr *A = NULL;
    if (h->format == SAP_MM_COORDINATE && h->symmetry != SAP_GENERAL && opt->symmetric_upper != SAP_MM_UPPER_SUM) {
        /* entries above the diagonal: the CSR path decides (reject, warn), then scatter */
        sap_int fi, fj;
        if (count_upper(d, &fi, &fj) > 0) {
            SAP_TRY(build_csr_coordinate_opt(ctx, name, d, opt, &A));
            SAP_TRY(sap_dense_create(ctx, h->nrows, h->ncols, &D));
            for (sap_int i = 0; i < A->nrows; i++)
                for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                    D->val[i + A->colind[p] * D->ld] = A->val[p];
            sap_csr_destroy(A);
            *out = D;
            return st;
        }
    }
    SAP_TRY(sap_dense_create(ctx, h->nrows, h->ncols, &D));
    const sap_int ld = D->ld;
    double *x = D->val;
    const bool mirror = expand && h->symmetry != SAP_GENERAL;
    const double s = h->symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0;
    if (h->format == SAP_MM_ARRAY) {
        if (mirror) {
            FOR_ARRAY_VALUES(d, {
                x[i + j * ld] = v;
                if (i != j) x[j + i * ld] = s * v;
            });
        } else {
            FOR_ARRAY_VALUES(d, x[i + j * ld] = v);
        }
    } else {
        FOR_TRIPLETS(d, {
            x[r + j * ld] += v;
            if (mirror && r != j) x[j + r * ld] += s * v;
        });
    }
    *out = D;
    return SAP_OK;
cleanup:
    sap_csr_destroy(A);
    sap_dense_destroy(D);
    return st;
}

sap_status sap__mm_build_csr(sap_context *ctx, const char *name, const mm_data *d, const sap_mm_read_options *opt,
                             sap_csr **out)
{
    if (d->h.format == SAP_MM_COORDINATE) return build_csr_coordinate_opt(ctx, name, d, opt, out);
    return build_csr_array(ctx, d, opt->expand_symmetry != 0, out);
}
