/* mm_write.c -- Matrix Market writer: a CSR or a dense matrix to a coordinate or array
 * file, real, integer or pattern, general, symmetric or skew-symmetric, plain or gzip
 * (paths ending in ".gz").
 *
 * Everything is checked before the file is opened (options, symmetry of the matrix,
 * integrality for the integer field), so an error leaves no file behind; a write error
 * removes the partial file.  Lines are formatted in parallel slabs (one buffer per
 * thread) and written in order through one big buffer; reals go through
 * sap__format_double (mm_number.h: std::to_chars): with precision 17 (the default) the
 * shortest text that reads back bit for bit, else exactly what printf("%.*g") prints.
 *
 * Output:
 *  - coordinate, CSR: the entries row by row (explicit zeros included); symmetric: the
 *    lower triangle with the diagonal; skew-symmetric: the strict lower triangle.
 *  - coordinate, dense: the nonzero entries (NaN included) column by column, same
 *    triangles.
 *  - array: every value column-major (a CSR's missing entries are 0); symmetric: the
 *    lower triangle with the diagonal column by column; skew: the strict lower triangle.
 *  - comment: each line of opt->comment becomes a comment line (a '%' is added unless
 *    the line starts with one). */
#define _POSIX_C_SOURCE 200809L
#include "base/csr_search.h"
#include "matrix/mm_io.h"
#include "matrix/mm_number.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define SLAB ((int64_t)1 << 15) /* items a thread formats at a time */
#define LINE_MAX_BYTES (2 * 21 + 2 + SAP_NUMBER_MAX + 2)
#define PARALLEL_MIN_ITEMS ((int64_t)1 << 17)

void sap_mm_write_options_init(sap_mm_write_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->format = SAP_MM_COORDINATE;
    opt->field = SAP_MM_REAL;
    opt->symmetry = SAP_GENERAL;
    opt->precision = 17;
    opt->comment = NULL;
}

static const char *format_name(sap_mm_format f) { return f == SAP_MM_ARRAY ? "array" : "coordinate"; }
static const char *field_name(sap_mm_field f)
{
    return f == SAP_MM_INTEGER ? "integer" : f == SAP_MM_PATTERN ? "pattern" : "real";
}
static const char *symmetry_name(sap_symmetry s)
{
    return s == SAP_SYMMETRIC ? "symmetric" : s == SAP_SKEW_SYMMETRIC ? "skew-symmetric" : "general";
}

static sap_status check_options(sap_context *ctx, const sap_mm_write_options *opt, sap_int nrows, sap_int ncols)
{
    if (opt->format != SAP_MM_COORDINATE && opt->format != SAP_MM_ARRAY)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown Matrix Market format %d", (int)opt->format);
    if (opt->field != SAP_MM_REAL && opt->field != SAP_MM_INTEGER && opt->field != SAP_MM_PATTERN)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown Matrix Market field %d", (int)opt->field);
    if (opt->symmetry != SAP_GENERAL && opt->symmetry != SAP_SYMMETRIC && opt->symmetry != SAP_SKEW_SYMMETRIC)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown symmetry %d", (int)opt->symmetry);
    if (opt->precision < 1 || opt->precision > 17)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "precision %d outside 1..17", opt->precision);
    if (opt->format == SAP_MM_ARRAY && opt->field == SAP_MM_PATTERN)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "the array format has no pattern field");
    if (opt->field == SAP_MM_PATTERN && opt->symmetry == SAP_SKEW_SYMMETRIC)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "a pattern file cannot be skew-symmetric");
    if (opt->symmetry != SAP_GENERAL && nrows != ncols)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "a %s file needs a square matrix, this one is %lld x %lld",
                         symmetry_name(opt->symmetry), (long long)nrows, (long long)ncols);
    return SAP_OK;
}

/* an integer field value must be integral and fit in int64 */
static bool integral(double v) { return v == floor(v) && fabs(v) < 9.2233720368547758e18; }

/* ---- the item streams ------------------------------------------------------------------- */

/* What to write: the entries of a CSR (items = positions 0..nnz-1) or the positions of a
 * dense matrix in column-major order (items = 0..nrows*ncols-1), filtered by triangle
 * and, for dense coordinate output, by value. */
typedef struct mm_src {
    const sap_csr *A;
    const sap_dense *X;
    sap_mm_format format;
    sap_mm_field field;
    sap_symmetry symmetry;
    int precision;
    int64_t items;
} mm_src;

static inline bool keep(const mm_src *s, sap_int i, sap_int j, double v)
{
    if (s->symmetry == SAP_SYMMETRIC && i < j) return false;
    if (s->symmetry == SAP_SKEW_SYMMETRIC && i <= j) return false;
    if (s->X && s->format == SAP_MM_COORDINATE && v == 0.0) return false;
    return true;
}

static inline char *put_line(char *o, const mm_src *s, sap_int i, sap_int j, double v)
{
    if (s->format == SAP_MM_COORDINATE) {
        o += sap__format_u64(o, (uint64_t)i + 1);
        *o++ = ' ';
        o += sap__format_u64(o, (uint64_t)j + 1);
        if (s->field != SAP_MM_PATTERN) *o++ = ' ';
    }
    if (s->field == SAP_MM_REAL)
        o += sap__format_double(o, v, s->precision);
    else if (s->field == SAP_MM_INTEGER)
        o += sap__format_i64(o, (int64_t)v);
    *o++ = '\n';
    return o;
}

/* Formats items [k0, k1) into out; returns the bytes written. */
static size_t format_items(const mm_src *s, int64_t k0, int64_t k1, char *out)
{
    char *o = out;
    if (s->A) {
        const sap_csr *A = s->A;
        /* the row of position k0: the last i with rowptr[i] <= k0 */
        sap_int lo = 0, hi = A->nrows;
        while (lo < hi) {
            sap_int mid = lo + (hi - lo + 1) / 2;
            if (A->rowptr[mid] <= k0)
                lo = mid;
            else
                hi = mid - 1;
        }
        sap_int i = lo;
        for (int64_t k = k0; k < k1; k++) {
            while (A->rowptr[i + 1] <= k) i++;
            sap_int j = A->colind[k];
            double v = A->val[k];
            if (keep(s, i, j, v)) o = put_line(o, s, i, j, v);
        }
    } else {
        const sap_dense *X = s->X;
        const sap_int m = X->nrows;
        sap_int j = (sap_int)(k0 / m), i = (sap_int)(k0 % m);
        for (int64_t k = k0; k < k1; k++) {
            double v = X->val[i + j * X->ld];
            if (keep(s, i, j, v)) o = put_line(o, s, i, j, v);
            if (++i == m) {
                i = 0;
                j++;
            }
        }
    }
    return (size_t)(o - out);
}

/* counts what format_items would write (the size line of coordinate files) */
static int64_t count_items(const mm_src *s)
{
    int64_t n = 0;
    if (s->A) {
        const sap_csr *A = s->A;
        if (s->symmetry == SAP_GENERAL) return A->nnz;
        for (sap_int i = 0; i < A->nrows; i++)
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) n += keep(s, i, A->colind[p], A->val[p]);
    } else {
        const sap_dense *X = s->X;
        for (sap_int j = 0; j < X->ncols; j++)
            for (sap_int i = 0; i < X->nrows; i++) n += keep(s, i, j, X->val[i + j * X->ld]);
    }
    return n;
}

static sap_status write_header(sap_mm_sink *sk, const mm_src *s, const char *comment, int64_t count)
{
    char line[256];
    int n = snprintf(line, sizeof(line), "%%%%MatrixMarket matrix %s %s %s\n", format_name(s->format),
                     field_name(s->field), symmetry_name(s->symmetry));
    sap_status st = sap__mm_sink_write(sk, line, (size_t)n);
    if (st < 0) return st;
    if (comment && *comment) {
        const char *p = comment;
        while (*p) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (*p != '%') st = sap__mm_sink_write(sk, "%", 1);
            if (st >= 0) st = sap__mm_sink_write(sk, p, len);
            if (st >= 0) st = sap__mm_sink_write(sk, "\n", 1);
            if (st < 0) return st;
            p += len;
            if (*p == '\n') p++;
        }
    }
    sap_int m = s->A ? s->A->nrows : s->X->nrows, c = s->A ? s->A->ncols : s->X->ncols;
    if (s->format == SAP_MM_COORDINATE)
        n = snprintf(line, sizeof(line), "%lld %lld %lld\n", (long long)m, (long long)c, (long long)count);
    else
        n = snprintf(line, sizeof(line), "%lld %lld\n", (long long)m, (long long)c);
    return sap__mm_sink_write(sk, line, (size_t)n);
}

static sap_status write_items(sap_context *ctx, const char *path, const mm_src *s, const char *comment)
{
    sap_status st = SAP_OK;
    sap_mm_sink sk;
    int opened = 0;
    char *bufs = NULL;
    int64_t count = s->format == SAP_MM_COORDINATE ? count_items(s) : 0;
    int T = 1;
#ifdef _OPENMP
    if (s->items >= PARALLEL_MIN_ITEMS) T = sap__threads(ctx);
    if (T > 64) T = 64;
#endif
    const int64_t slab = s->items < SLAB ? (s->items > 0 ? s->items : 1) : SLAB;
    const size_t bufsize = (size_t)(slab * LINE_MAX_BYTES);
    SAP_ALLOC(ctx, bufs, (size_t)T * bufsize);
    SAP_TRY(sap__mm_sink_open(ctx, path, &sk));
    opened = 1;
    SAP_TRY(write_header(&sk, s, comment, count));
    size_t lens[64];
    for (int64_t k0 = 0; k0 < s->items; k0 += (int64_t)T * slab) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(T) schedule(static, 1) if (T > 1)
#endif
        for (int t = 0; t < T; t++) {
            int64_t a = k0 + (int64_t)t * slab, b = a + slab;
            if (a > s->items) a = s->items;
            if (b > s->items) b = s->items;
            lens[t] = format_items(s, a, b, bufs + (size_t)t * bufsize);
        }
        for (int t = 0; t < T; t++) SAP_TRY(sap__mm_sink_write(&sk, bufs + (size_t)t * bufsize, lens[t]));
    }
    opened = 0;
    st = sap__mm_sink_close(&sk, 1);
cleanup:
    if (opened) sap__mm_sink_close(&sk, 0);
    sap__free(ctx, bufs);
    return st;
}

/* ---- checks ------------------------------------------------------------------------------- */

/* value of A(i, j), 0 when absent; *found says whether it is stored */
static double csr_get(const sap_csr *A, sap_int i, sap_int j, bool *found)
{
    sap_int p = sap__csr_find(A->rowptr, A->colind, i, j);
    *found = p >= 0;
    return p >= 0 ? A->val[p] : 0.0;
}

static sap_status check_csr(sap_context *ctx, const sap_csr *A, const sap_mm_write_options *opt)
{
    const bool skew = opt->symmetry == SAP_SKEW_SYMMETRIC;
    for (sap_int i = 0; i < A->nrows; i++) {
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            double v = A->val[p];
            if (opt->field == SAP_MM_INTEGER && !integral(v))
                return SAP_ERROR(ctx, SAP_ERR_INVALID,
                                 "entry (%lld, %lld) = %.17g is not an integer (integer field; indices 0-based)",
                                 (long long)i, (long long)j, v);
            if (opt->symmetry == SAP_GENERAL) continue;
            if (skew && i == j) {
                if (v != 0.0)
                    return SAP_ERROR(ctx, SAP_ERR_INVALID,
                                     "diagonal entry (%lld, %lld) = %.17g is not zero: the matrix is not "
                                     "skew-symmetric (indices 0-based)",
                                     (long long)i, (long long)j, v);
                continue;
            }
            if (i == j) continue;
            bool found;
            double w = csr_get(A, j, i, &found);
            if (opt->field == SAP_MM_PATTERN) {
                if (!found)
                    return SAP_ERROR(ctx, SAP_ERR_INVALID,
                                     "entry (%lld, %lld) is stored but (%lld, %lld) is not: the pattern is not "
                                     "symmetric (indices 0-based)",
                                     (long long)i, (long long)j, (long long)j, (long long)i);
            } else if (skew ? !(v == -w) : !(v == w)) {
                return SAP_ERROR(ctx, SAP_ERR_INVALID,
                                 "entry (%lld, %lld) = %.17g but (%lld, %lld) = %.17g%s: the matrix is not %s "
                                 "(indices 0-based)",
                                 (long long)i, (long long)j, v, (long long)j, (long long)i, w,
                                 found ? "" : " (not stored)", skew ? "skew-symmetric" : "symmetric");
            }
        }
    }
    return SAP_OK;
}

static sap_status check_dense(sap_context *ctx, const sap_dense *X, const sap_mm_write_options *opt)
{
    const bool skew = opt->symmetry == SAP_SKEW_SYMMETRIC;
    const bool coord = opt->format == SAP_MM_COORDINATE;
    for (sap_int j = 0; j < X->ncols; j++) {
        for (sap_int i = 0; i < X->nrows; i++) {
            double v = X->val[i + j * X->ld];
            if (opt->field == SAP_MM_INTEGER && !(coord && v == 0.0) && !integral(v))
                return SAP_ERROR(ctx, SAP_ERR_INVALID,
                                 "entry (%lld, %lld) = %.17g is not an integer (integer field; indices 0-based)",
                                 (long long)i, (long long)j, v);
            if (opt->symmetry == SAP_GENERAL || i < j) continue;
            if (i == j) {
                if (skew && v != 0.0)
                    return SAP_ERROR(ctx, SAP_ERR_INVALID,
                                     "diagonal entry (%lld, %lld) = %.17g is not zero: the matrix is not "
                                     "skew-symmetric (indices 0-based)",
                                     (long long)i, (long long)j, v);
                continue;
            }
            double w = X->val[j + i * X->ld];
            bool ok = opt->field == SAP_MM_PATTERN ? ((v != 0.0) == (w != 0.0)) : skew ? v == -w : v == w;
            if (!ok)
                return SAP_ERROR(ctx, SAP_ERR_INVALID,
                                 "entry (%lld, %lld) = %.17g but (%lld, %lld) = %.17g: the matrix is not %s "
                                 "(indices 0-based)",
                                 (long long)i, (long long)j, v, (long long)j, (long long)i, w,
                                 skew ? "skew-symmetric" : "symmetric");
        }
    }
    return SAP_OK;
}

/* ---- public functions ----------------------------------------------------------------------- */

static sap_status write_dense(const sap_dense *X, const char *path, const sap_mm_write_options *opt)
{
    sap_context *ctx = X->ctx;
    sap_status st = check_options(ctx, opt, X->nrows, X->ncols);
    if (st < 0) return st;
    if (X->nrows < 0 || X->ncols < 0 || (X->ld < X->nrows && X->ncols > 0) || X->ld < 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "dense matrix %lld x %lld with ld %lld is invalid", (long long)X->nrows,
                         (long long)X->ncols, (long long)X->ld);
    if (X->nrows > 0 && X->ncols > 0 && !X->val) return SAP_ERROR(ctx, SAP_ERR_INVALID, "dense values are NULL");
    if (sap__mul_overflows(X->nrows, X->ncols, INT64_MAX))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "dense matrix %lld x %lld is too large", (long long)X->nrows,
                         (long long)X->ncols);
    st = check_dense(ctx, X, opt);
    if (st < 0) return st;
    mm_src s;
    memset(&s, 0, sizeof(s));
    s.X = X;
    s.format = opt->format;
    s.field = opt->field;
    s.symmetry = opt->symmetry;
    s.precision = opt->precision;
    s.items = X->nrows * X->ncols;
    return write_items(ctx, path, &s, opt->comment);
}

sap_status sap_mm_write_dense(const sap_dense *X, const char *path, const sap_mm_write_options *opt)
{
    if (!X || !X->ctx) return SAP_ERR_INVALID;
    if (!path) return SAP_ERROR(X->ctx, SAP_ERR_INVALID, "path is NULL");
    sap_mm_write_options def;
    if (!opt) {
        sap_mm_write_options_init(&def);
        opt = &def;
    }
    return write_dense(X, path, opt);
}

sap_status sap_mm_write_csr(const sap_csr *A, const char *path, const sap_mm_write_options *opt)
{
    if (!A || !A->ctx) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!path) return SAP_ERROR(ctx, SAP_ERR_INVALID, "path is NULL");
    sap_mm_write_options def;
    if (!opt) {
        sap_mm_write_options_init(&def);
        opt = &def;
    }
    sap_status st = check_options(ctx, opt, A->nrows, A->ncols);
    if (st < 0) return st;
    st = sap_csr_check(A);
    if (st < 0) return st;
    st = check_csr(ctx, A, opt);
    if (st < 0) return st;
    if (opt->format == SAP_MM_ARRAY) {
        if (sap__mul_overflows(A->nrows, A->ncols, INT64_MAX / 8))
            return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "a %lld x %lld matrix is too large for the array format",
                             (long long)A->nrows, (long long)A->ncols);
        sap_dense *X = NULL;
        st = sap_csr_to_dense(A, &X);
        if (st < 0) return st;
        st = write_dense(X, path, opt);
        sap_dense_destroy(X);
        return st;
    }
    mm_src s;
    memset(&s, 0, sizeof(s));
    s.A = A;
    s.format = opt->format;
    s.field = opt->field;
    s.symmetry = opt->symmetry;
    s.precision = opt->precision;
    s.items = A->nnz;
    return write_items(ctx, path, &s, opt->comment);
}
