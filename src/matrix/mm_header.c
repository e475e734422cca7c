/* mm_header.c -- owns the first lines of a Matrix Market text: the %%MatrixMarket banner
 * (object, format, field, symmetry; words case-insensitive), the comment and blank lines
 * before the size line, the size line itself (sizes beyond int64 are SAP_ERR_TOO_LARGE),
 * and the checks that need only the header: squareness, declared entries against the
 * positions, and memory. */
#define _POSIX_C_SOURCE 200809L
#include "matrix/mm_read.h"

#include <stdio.h>
#include <unistd.h>

int64_t sap__mm_memory_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && size > 0 && (int64_t)pages <= INT64_MAX / size) return (int64_t)pages * size;
    return (int64_t)1 << 47;
}

static const char *line_end(const char *p, const char *end)
{
    const char *q = memchr(p, '\n', (size_t)(end - p));
    return q ? q : end;
}

/* Splits [p, e) at blanks into at most max tokens; returns the number found (which may
 * exceed max: the rest are counted, not stored). */
static int split(const char *p, const char *e, const char **tok, size_t *tlen, int max)
{
    int n = 0;
    while (p < e) {
        while (p < e && mm_isblank(*p)) p++;
        if (p == e) break;
        const char *s = p;
        while (p < e && !mm_isblank(*p)) p++;
        if (n < max) {
            tok[n] = s;
            tlen[n] = (size_t)(p - s);
        }
        n++;
    }
    return n;
}

static bool word_is(const char *t, size_t n, const char *word)
{
    size_t m = strlen(word);
    if (n != m) return false;
    for (size_t k = 0; k < n; k++) {
        char c = t[k];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[k]) return false;
    }
    return true;
}

/* Parses a size: digits only; 1 ok, 0 not a non-negative integer, -1 negative, 2 too large. */
static int parse_size(const char *t, size_t n, sap_int *out)
{
    const char *p = t, *e = t + n;
    bool neg = false;
    if (p < e && (*p == '-' || *p == '+')) neg = *p++ == '-';
    uint64_t v = 0;
    if (sap__parse_u64(p, e, &v) != e) return 0; /* no digits, or something after them */
    if (neg) return v == 0 ? (*out = 0, 1) : -1;
    if (v > (uint64_t)INT64_MAX) return 2; /* UINT64_MAX: saturated */
    *out = (sap_int)v;
    return 1;
}

sap_status sap__mm_parse_header(sap_context *ctx, const char *name, const char *text, size_t len,
                                const sap_mm_read_options *opt, mm_header *h)
{
    const char *end = text + len, *p = text;
    memset(h, 0, sizeof(*h));
    if (len == 0)
        return SAP_ERROR(ctx, SAP_ERR_BANNER, SRC_FMT "line 1: empty input (no %%%%MatrixMarket banner)",
                         SRC_ARG(name));
    const char *le = line_end(p, end);
    const char *tok[6];
    size_t tl[6];
    int nt = split(p, le, tok, tl, 6);
    if (nt == 0 || !word_is(tok[0], tl[0], "%%matrixmarket")) {
        int show = (int)(le - p < 40 ? le - p : 40);
        return SAP_ERROR(ctx, SAP_ERR_BANNER,
                         SRC_FMT "line 1: expected a '%%%%MatrixMarket matrix ...' banner, found '%.*s'", SRC_ARG(name),
                         show, p);
    }
    if (nt != 5)
        return SAP_ERROR(ctx, SAP_ERR_BANNER,
                         SRC_FMT "line 1: the banner needs 4 words after %%%%MatrixMarket (object format field "
                                 "symmetry), found %d",
                         SRC_ARG(name), nt - 1);
#define TOKARG(k) (int)(tl[k] < 40 ? tl[k] : 40), tok[k]
    if (word_is(tok[1], tl[1], "vector"))
        return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, SRC_FMT "line 1: object 'vector' is not supported (only 'matrix')",
                         SRC_ARG(name));
    if (!word_is(tok[1], tl[1], "matrix"))
        return SAP_ERROR(ctx, SAP_ERR_BANNER, SRC_FMT "line 1: unknown object '%.*s' (expected 'matrix')",
                         SRC_ARG(name), TOKARG(1));
    if (word_is(tok[2], tl[2], "coordinate"))
        h->format = SAP_MM_COORDINATE;
    else if (word_is(tok[2], tl[2], "array"))
        h->format = SAP_MM_ARRAY;
    else
        return SAP_ERROR(ctx, SAP_ERR_BANNER, SRC_FMT "line 1: unknown format '%.*s' (expected coordinate or array)",
                         SRC_ARG(name), TOKARG(2));
    if (word_is(tok[3], tl[3], "real"))
        h->field = SAP_MM_REAL;
    else if (word_is(tok[3], tl[3], "integer"))
        h->field = SAP_MM_INTEGER;
    else if (word_is(tok[3], tl[3], "pattern"))
        h->field = SAP_MM_PATTERN;
    else if (word_is(tok[3], tl[3], "complex"))
        return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, SRC_FMT "line 1: complex matrices are not supported", SRC_ARG(name));
    else
        return SAP_ERROR(ctx, SAP_ERR_BANNER,
                         SRC_FMT "line 1: unknown field '%.*s' (expected real, integer, pattern or complex)",
                         SRC_ARG(name), TOKARG(3));
    if (word_is(tok[4], tl[4], "general"))
        h->symmetry = SAP_GENERAL;
    else if (word_is(tok[4], tl[4], "symmetric"))
        h->symmetry = SAP_SYMMETRIC;
    else if (word_is(tok[4], tl[4], "skew-symmetric"))
        h->symmetry = SAP_SKEW_SYMMETRIC;
    else if (word_is(tok[4], tl[4], "hermitian"))
        return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, SRC_FMT "line 1: hermitian matrices are not supported",
                         SRC_ARG(name));
    else
        return SAP_ERROR(ctx, SAP_ERR_BANNER,
                         SRC_FMT "line 1: unknown symmetry '%.*s' (expected general, symmetric or skew-symmetric)",
                         SRC_ARG(name), TOKARG(4));
    if (h->field == SAP_MM_PATTERN && h->format == SAP_MM_ARRAY)
        return SAP_ERROR(ctx, SAP_ERR_BANNER, SRC_FMT "line 1: 'array pattern' is not a valid combination",
                         SRC_ARG(name));
    if (h->field == SAP_MM_PATTERN && h->symmetry == SAP_SKEW_SYMMETRIC)
        return SAP_ERROR(ctx, SAP_ERR_BANNER, SRC_FMT "line 1: 'pattern skew-symmetric' is not a valid combination",
                         SRC_ARG(name));

    /* comments and blank lines, then the size line */
    int64_t line = 1;
    p = le < end ? le + 1 : end;
    for (;;) {
        if (p >= end)
            return SAP_ERROR(ctx, SAP_ERR_SIZE_LINE, SRC_FMT "line %lld: missing size line (end of input)",
                             SRC_ARG(name), (long long)line + 1);
        line++;
        le = line_end(p, end);
        const char *q = p;
        while (q < le && mm_isblank(*q)) q++;
        if (q == le || *q == '%') {
            p = le < end ? le + 1 : end;
            continue;
        }
        break;
    }
    int want = h->format == SAP_MM_COORDINATE ? 3 : 2;
    nt = split(p, le, tok, tl, 6);
    if (nt != want)
        return SAP_ERROR(ctx, SAP_ERR_SIZE_LINE,
                         SRC_FMT "line %lld: the size line of a%s file needs %d numbers (%s), found %d words",
                         SRC_ARG(name), (long long)line, want == 3 ? " coordinate" : "n array", want,
                         want == 3 ? "rows cols entries" : "rows cols", nt);
    sap_int v[3] = {0, 0, 0};
    static const char *what[3] = {"row count", "column count", "entry count"};
    for (int k = 0; k < want; k++) {
        int r = parse_size(tok[k], tl[k], &v[k]);
        if (r == 0)
            return SAP_ERROR(ctx, SAP_ERR_SIZE_LINE, SRC_FMT "line %lld: %s '%.*s' is not a non-negative integer",
                             SRC_ARG(name), (long long)line, what[k], TOKARG(k));
        if (r < 0)
            return SAP_ERROR(ctx, SAP_ERR_SIZE_LINE, SRC_FMT "line %lld: %s '%.*s' is negative", SRC_ARG(name),
                             (long long)line, what[k], TOKARG(k));
        if (r == 2)
            return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, SRC_FMT "line %lld: %s '%.*s' does not fit in 64 bits",
                             SRC_ARG(name), (long long)line, what[k], TOKARG(k));
    }
#undef TOKARG
    h->nrows = v[0];
    h->ncols = v[1];
    h->lines = line;
    h->data = le < end ? (size_t)(le + 1 - text) : len;
    if (h->symmetry != SAP_GENERAL && h->nrows != h->ncols)
        return SAP_ERROR(ctx, SAP_ERR_SIZE_LINE,
                         SRC_FMT "line %lld: a %s matrix must be square, the size line says %lld x %lld", SRC_ARG(name),
                         (long long)line, h->symmetry == SAP_SYMMETRIC ? "symmetric" : "skew-symmetric",
                         (long long)h->nrows, (long long)h->ncols);
    bool dims_overflow = sap__mul_overflows(h->nrows, h->ncols, INT64_MAX);
    if (h->format == SAP_MM_COORDINATE) {
        h->entries = v[2];
        if (!dims_overflow && h->entries > h->nrows * h->ncols)
            return SAP_ERROR(ctx, SAP_ERR_SIZE_LINE,
                             SRC_FMT "line %lld: %lld entries declared, more than the %lld x %lld = %lld positions",
                             SRC_ARG(name), (long long)line, (long long)h->entries, (long long)h->nrows,
                             (long long)h->ncols, (long long)(h->nrows * h->ncols));
    } else {
        if (dims_overflow)
            return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                             SRC_FMT "line %lld: an array of %lld x %lld values overflows 64 bits", SRC_ARG(name),
                             (long long)line, (long long)h->nrows, (long long)h->ncols);
        sap_int n = h->nrows;
        if (h->symmetry == SAP_GENERAL)
            h->entries = h->nrows * h->ncols;
        else if (h->symmetry == SAP_SYMMETRIC)
            h->entries = n % 2 ? (n + 1) / 2 * n : n / 2 * (n + 1);
        else
            h->entries = n % 2 ? (n - 1) / 2 * n : n / 2 * (n - 1);
    }
    /* A declared count the rest of the text cannot hold: the shortest entry line is
     * "i j\n" (pattern), "i j v\n" (coordinate) or "v\n" (array); the last line may lack
     * its newline.  Reported here, before anything is sized by the count. */
    const int64_t minline = h->format == SAP_MM_ARRAY ? 2 : h->field == SAP_MM_PATTERN ? 4 : 6;
    const int64_t rest = (int64_t)(len - h->data);
    const int64_t most = (rest + 1) / minline;
    if (h->entries > most)
        return SAP_ERROR(ctx, SAP_ERR_COUNT,
                         SRC_FMT "line %lld: the size line declares %lld %s, but the %lld bytes after it can hold at "
                                 "most %lld (an entry line takes at least %lld bytes): the %s is truncated or its "
                                 "size line is wrong",
                         SRC_ARG(name), (long long)line, (long long)h->entries,
                         h->format == SAP_MM_COORDINATE ? "entries" : "values", (long long)rest, (long long)most,
                         (long long)minline, name ? "file" : "text");
    if (opt->require_square && h->nrows != h->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE,
                         SRC_FMT "line %lld: the matrix is %lld x %lld, a square one is required", SRC_ARG(name),
                         (long long)line, (long long)h->nrows, (long long)h->ncols);
    return SAP_OK;
}

static void fmt_bytes(char *buf, size_t n, double x)
{
    if (x >= 1e9) snprintf(buf, n, "%.3g GB", x / 1e9);
    else if (x >= 1e6) snprintf(buf, n, "%.3g MB", x / 1e6);
    else if (x >= 1e3) snprintf(buf, n, "%.3g kB", x / 1e3);
    else snprintf(buf, n, "%.0f bytes", x);
}

sap_status sap__mm_check_memory(sap_context *ctx, const char *name, const mm_header *h, bool dense, bool expand)
{
    const double E = (double)h->entries, nr = (double)h->nrows, nc = (double)h->ncols;
    const bool coordinate = h->format == SAP_MM_COORDINATE;
    const bool wide = h->nrows > INT32_MAX || h->ncols > INT32_MAX;
    /* the parsed entries (mm_body.c: row and column indices, values) */
    const double ebytes = coordinate ? E * (2.0 * (wide ? 8.0 : 4.0) + (h->field == SAP_MM_PATTERN ? 0.0 : 8.0))
                                     : 8.0 * E;
    double rows = 0.0, csr = 0.0, out = 0.0;
    if (dense) {
        out = 8.0 * nr * nc;
    } else {
        double nnz;
        if (coordinate) {
            nnz = expand && h->symmetry != SAP_GENERAL ? 2.0 * E : E; /* mirrored entries */
            rows = 8.0 * (nr + 1.0);                                   /* the row counts of the assembly */
        } else {
            nnz = h->symmetry == SAP_GENERAL || expand ? nr * nc : E;
        }
        rows += 8.0 * (nr + 1.0); /* the CSR's row pointers */
        csr = 16.0 * nnz;
    }
    /* everything lives at once at the end of the assembly (the entries are freed after) */
    const double need = ebytes + rows + csr + out;
    char b[3][32], step[480];
    const double parts[3] = {ebytes, rows, dense ? out : csr};
    for (int k = 0; k < 3; k++) fmt_bytes(b[k], sizeof(b[k]), parts[k]);
    snprintf(step, sizeof(step),
             SRC_FMT "line %lld: reading a %lld x %lld %s with %lld %s (parsed entries %s, row counts and pointers %s, "
                     "%s %s)",
             SRC_ARG(name), (long long)h->lines, (long long)h->nrows, (long long)h->ncols,
             dense ? "dense matrix" : "matrix", (long long)h->entries, coordinate ? "entries" : "values", b[0], b[1],
             dense ? "the dense matrix" : "the CSR entries", b[2]);
    const double phys = (double)sap__mm_memory_limit();
    if (need > phys)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%s needs %.3g GB of memory, more than the %.3g GB of this machine",
                         step, need / 1e9, phys / 1e9);
    return sap__mem_check(ctx, step, need);
}
