/* gen_banded.c -- random test matrices with a band structure, built directly in CSR
 * form: dense banded (sap_gen_banded), synthetic sparse banded hidden by random row and
 * column permutations (sap_gen_synthetic) and block-tridiagonal with dense blocks
 * (sap_gen_blocktridiag).
 *
 * Every random number is a pure function of (seed, row, column): a counter-based hash,
 * not a sequential stream.  Rows are therefore generated independently (in parallel
 * under OpenMP) and the output is bit-identical for any thread count.  Memory use is
 * the CSR itself plus O(n) temporaries (synthetic only). */
#include "base/base.h"

#include <math.h>
#include <string.h>

/* Stream tags: independent hash streams derived from one seed. */
#define TAG_VALUE 0x76616c7565ull   /* band values (banded and synthetic) */
#define TAG_KEEP 0x6b656570ull      /* synthetic: keep/drop decision of a band entry */
#define TAG_PERM 0x7065726dull      /* synthetic: row and column permutations */
#define TAG_BLOCKTRI 0x62747269ull  /* block-tridiagonal values */

/* ---- counter-based random numbers ------------------------------------------------------ */

/* Key of one stream: (seed, tag) -> 64 bits. */
static inline uint64_t stream_key(uint64_t seed, uint64_t tag)
{
    return sap__mix64(sap__mix64(seed) ^ sap__mix64(tag + 1));
}

/* Hash of an entry (i, j) of a stream. */
static inline uint64_t entry_hash(uint64_t key, uint64_t i, uint64_t j)
{
    return sap__mix64(sap__mix64(key ^ (i * 0x9E3779B97F4A7C15ull)) + j * 0xD1B54A32D192ED03ull);
}

/* Uniform in [0, 1) from the top 53 bits. */
static inline double hash_unit(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

/* Uniform in [-1, 1). */
static inline double hash_signed(uint64_t h) { return 2.0 * hash_unit(h) - 1.0; }

/* ---- shapes whose rows are contiguous column ranges ----------------------------------- */

typedef enum { SHAPE_BAND, SHAPE_BLOCKTRI } shape_kind;

typedef struct row_shape {
    shape_kind kind;
    sap_int n;  /* matrix order */
    sap_int k;  /* band: half-bandwidth (< n); blocktri: block size */
    sap_int nb; /* blocktri: number of block rows */
} row_shape;

/* Columns lo..hi (inclusive) of row i. */
static inline void shape_row(const row_shape *s, sap_int i, sap_int *lo, sap_int *hi)
{
    if (s->kind == SHAPE_BAND) {
        *lo = i - s->k > 0 ? i - s->k : 0;
        *hi = i + s->k < s->n - 1 ? i + s->k : s->n - 1;
    } else {
        sap_int b = i / s->k;
        *lo = (b > 0 ? b - 1 : 0) * s->k;
        *hi = (b + 2 < s->nb ? b + 2 : s->nb) * s->k - 1;
    }
}

/* Value of the off-diagonal entry (i, j): uniform in [-1, 1).  With 'symmetric' the
 * hash is taken over (min, max) so that both triangles agree. */
static inline double shape_value(uint64_t key, int symmetric, sap_int i, sap_int j)
{
    if (symmetric && i < j) {
        sap_int t = i;
        i = j;
        j = t;
    }
    return hash_signed(entry_hash(key, (uint64_t)i, (uint64_t)j));
}

/* Diagonal value for degree of diagonal dominance d given the off-diagonal sum. */
static inline double dominant_diagonal(double d, double offsum) { return offsum > 0.0 ? d * offsum : 1.0; }

/* Builds the n x n CSR of a shape with every entry of each row's range present. */
static sap_status gen_dense_rows(sap_context *ctx, const row_shape *s, uint64_t key, int symmetric, double d,
                                 sap_csr **out)
{
    sap_status st = SAP_OK;
    sap_csr *A = NULL;
    sap_int n = s->n;
    /* the entry count in closed form (no O(n) pass before the allocation can fail):
     * band: n (2k + 1) minus the two clipped corners of k (k + 1) / 2 each (k < n);
     * blocktri: k rows of k (3 nb - 2) columns per block row, summed (also nb = 1) */
    sap_int nnz = s->kind == SHAPE_BAND ? n * (2 * s->k + 1) - s->k * (s->k + 1) : s->k * s->k * (3 * s->nb - 2);
    SAP_TRY(sap_csr_create(ctx, n, n, nnz, &A));
    for (sap_int i = 0; i < n; i++) {
        sap_int lo, hi;
        shape_row(s, i, &lo, &hi);
        A->rowptr[i + 1] = A->rowptr[i] + (hi - lo + 1);
    }
    sap_int *colind = A->colind;
    double *val = A->val;
    const sap_int *rowptr = A->rowptr;
    SAP_OMP_FOR(sap__threads(ctx))
    for (sap_int i = 0; i < n; i++) {
        sap_int lo, hi;
        shape_row(s, i, &lo, &hi);
        sap_int p = rowptr[i], pd = -1;
        double sum = 0.0;
        for (sap_int j = lo; j <= hi; j++, p++) {
            colind[p] = j;
            if (j == i) {
                pd = p;
                continue;
            }
            double v = shape_value(key, symmetric, i, j);
            val[p] = v;
            sum += fabs(v);
        }
        val[pd] = dominant_diagonal(d, sum);
    }
    *out = A;
    A = NULL;
cleanup:
    sap_csr_destroy(A);
    return st;
}

/* ---- argument checks ---------------------------------------------------------------------- */

static sap_status check_band_args(sap_context *ctx, const char *fn, sap_int n, sap_int *k, double d, sap_csr **A)
{
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: output pointer A is NULL", fn);
    *A = NULL;
    if (n < 1) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: n = %lld, must be >= 1", fn, (long long)n);
    if (*k < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: k = %lld, must be >= 0", fn, (long long)*k);
    if (!isfinite(d) || d < 0.0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: d = %g, must be finite and >= 0", fn, d);
    if (*k > n - 1) *k = n - 1;
    /* nnz <= n (2k + 1) */
    if (n > SAP_NNZ_MAX || sap__mul_overflows(n, 2 * *k + 1, SAP_NNZ_MAX))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%s: n = %lld with k = %lld has too many entries", fn, (long long)n,
                         (long long)*k);
    /* the CSR (16 bytes an entry, 8 a row) before any O(n) work */
    return sap__mem_check(ctx, fn, 16.0 * (double)n * (double)(2 * *k + 1) + 8.0 * (double)n);
}

/* ---- public generators ---------------------------------------------------------------------- */

sap_status sap_gen_banded(sap_context *ctx, sap_int n, sap_int k, double d, int symmetric, uint64_t seed,
                          sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    sap_status st = check_band_args(ctx, "sap_gen_banded", n, &k, d, A);
    if (st < 0) return st;
    row_shape s = {SHAPE_BAND, n, k, 0};
    return gen_dense_rows(ctx, &s, stream_key(seed, TAG_VALUE), symmetric != 0, d, A);
}

sap_status sap_gen_blocktridiag(sap_context *ctx, sap_int nb, sap_int k, double d, uint64_t seed, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    const char *fn = "sap_gen_blocktridiag";
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: output pointer A is NULL", fn);
    *A = NULL;
    if (nb < 1) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: nb = %lld, must be >= 1", fn, (long long)nb);
    if (k < 1) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: k = %lld, must be >= 1", fn, (long long)k);
    if (!isfinite(d) || d < 0.0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: d = %g, must be finite and >= 0", fn, d);
    /* n = nb k, nnz <= 3 n k */
    if (k > SAP_NNZ_MAX / 3 || sap__mul_overflows(nb, k, SAP_NNZ_MAX) ||
        sap__mul_overflows(nb * k, 3 * k, SAP_NNZ_MAX))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%s: nb = %lld blocks of k = %lld have too many entries", fn,
                         (long long)nb, (long long)k);
    sap_status st = sap__mem_check(ctx, fn, 16.0 * 3.0 * (double)nb * (double)k * (double)k + 8.0 * (double)(nb * k));
    if (st < 0) return st;
    row_shape s = {SHAPE_BLOCKTRI, nb * k, k, nb};
    return gen_dense_rows(ctx, &s, stream_key(seed, TAG_BLOCKTRI), 0, d, A);
}

sap_status sap_gen_synthetic(sap_context *ctx, sap_int n, sap_int k, double d, double fill, uint64_t seed,
                             sap_csr **A, sap_int *p_out, sap_int *q_out)
{
    SAP_CHECK_CTX(ctx);
    const char *fn = "sap_gen_synthetic";
    sap_status st = check_band_args(ctx, fn, n, &k, d, A);
    if (st < 0) return st;
    if (!(fill > 0.0 && fill <= 1.0)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: fill = %g, must be in (0, 1]", fn, fill);

    sap_int *p = NULL, *q = NULL, *qinv = NULL, *cnt = NULL;
    sap_csr *B = NULL;
    SAP_ALLOC(ctx, p, n);
    SAP_ALLOC(ctx, q, n);
    SAP_ALLOC(ctx, qinv, n);
    SAP_ALLOC(ctx, cnt, n);

    sap_rng rng;
    sap__rng_seed(&rng, stream_key(seed, TAG_PERM));
    sap__rng_permutation(&rng, n, p);
    sap__rng_permutation(&rng, n, q);
    for (sap_int j = 0; j < n; j++) qinv[q[j]] = j;

    const row_shape s = {SHAPE_BAND, n, k, 0};
    const uint64_t vkey = stream_key(seed, TAG_VALUE), kkey = stream_key(seed, TAG_KEEP);
    const int nt = sap__threads(ctx);

    /* pass 1: entries kept in each band row (the diagonal always is) */
    SAP_OMP_FOR(nt)
    for (sap_int r = 0; r < n; r++) {
        sap_int lo, hi, c = 1;
        shape_row(&s, r, &lo, &hi);
        for (sap_int j = lo; j <= hi; j++)
            if (j != r && hash_unit(entry_hash(kkey, (uint64_t)r, (uint64_t)j)) < fill) c++;
        cnt[r] = c;
    }
    sap_int nnz = 0;
    for (sap_int r = 0; r < n; r++) nnz += cnt[r];
    SAP_TRY(sap_csr_create(ctx, n, n, nnz, &B));
    for (sap_int i = 0; i < n; i++) B->rowptr[i + 1] = B->rowptr[i] + cnt[p[i]];

    /* pass 2: row i of A is band row p[i] with column c moved to qinv[c] */
    sap_int *colind = B->colind;
    double *val = B->val;
    const sap_int *rowptr = B->rowptr;
    SAP_OMP_FOR_DYNAMIC(nt, 256)
    for (sap_int i = 0; i < n; i++) {
        sap_int r = p[i], lo, hi;
        shape_row(&s, r, &lo, &hi);
        sap_int p0 = rowptr[i], pos = p0, pd = -1;
        double sum = 0.0;
        for (sap_int j = lo; j <= hi; j++) {
            if (j == r) {
                pd = pos;
            } else if (hash_unit(entry_hash(kkey, (uint64_t)r, (uint64_t)j)) < fill) {
                double v = shape_value(vkey, 0, r, j);
                val[pos] = v;
                sum += fabs(v);
            } else {
                continue;
            }
            colind[pos++] = qinv[j];
        }
        val[pd] = dominant_diagonal(d, sum);
        sap_int len = pos - p0;
        sap__sort_pairs(colind + p0, val + p0, len);
    }

    if (p_out) memcpy(p_out, p, sizeof(sap_int) * (size_t)n);
    if (q_out) memcpy(q_out, q, sizeof(sap_int) * (size_t)n);
    *A = B;
    B = NULL;
cleanup:
    sap_csr_destroy(B);
    sap__free(ctx, p);
    sap__free(ctx, q);
    sap__free(ctx, qinv);
    sap__free(ctx, cnt);
    return st;
}
