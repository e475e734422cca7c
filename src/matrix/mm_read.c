/* mm_read.c -- Matrix Market reader: coordinate and array files with real, integer or
 * pattern fields, general, symmetric or skew-symmetric, plain or gzip-compressed, into a
 * canonical CSR or a dense matrix.
 *
 * How it reads: the whole (decompressed) text is in one buffer.  The banner and the size
 * line are parsed line by line; the entries are parsed by a hand-written tokenizer that
 * relies on a '\n' at the end of every line it sees (the text up to its last newline is
 * parsed in place; an unterminated last line is copied and given one), converts numbers
 * with sap__parse_double (mm_number.h: fast_float, always correctly rounded), and counts lines for the messages.  With several threads the entry section
 * is split at newlines into one chunk per thread; each chunk parses into its own slice of
 * the triplet arrays (sized by its line count), so no merging is needed.  When anything
 * is wrong (a malformed line, a count mismatch) the entry section is parsed again serially
 * without storing, which finds the first error and its line exactly.
 *
 * Semantics (beyond the Matrix Market definition):
 *  - Banner words are case-insensitive.  Comment lines (first non-blank character '%')
 *    and blank lines are allowed anywhere after the banner; CRLF line ends are accepted.
 *  - Duplicate coordinate entries are summed (in file order).
 *  - Symmetric and skew-symmetric files are expanded to the full matrix by default
 *    (opt->expand_symmetry = 1): each off-diagonal entry (i, j) also gives (j, i), negated
 *    for skew.  Entries in the upper triangle are accepted and mirrored the same way, so a
 *    file that stores both (i, j) and (j, i) gets their sum in both places.  With
 *    expand_symmetry = 0 the entries are returned where the file puts them.
 *  - A skew-symmetric file must not hold a nonzero diagonal entry (SAP_ERR_PARSE).
 *  - Array files keep every value, zeros included; a symmetric array file expands to the
 *    full dense pattern, a skew-symmetric one too, with explicit zeros on the diagonal.
 *  - Integer fields accept [+-]digits only; pattern entries are 1.0.
 *  - The size line may declare at most rows*cols coordinate entries; sizes beyond int64,
 *    or needing more memory than the machine has, give SAP_ERR_TOO_LARGE. */
#define _POSIX_C_SOURCE 200809L
#include "matrix/mm_text.h"
#include "matrix/mm_number.h"

#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MM_MAX_CHUNKS 64
#define MM_MIN_CHUNK_BYTES ((size_t)1 << 20)

void sap_mm_read_options_init(sap_mm_read_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->allow_nonfinite = 0;
    opt->require_square = 0;
    opt->expand_symmetry = 1;
}

/* "name: " before messages about a file, nothing for memory buffers */
#define SRC_FMT "%s%s"
#define SRC_ARG(name) ((name) ? (name) : ""), ((name) ? ": " : "")

typedef struct mm_header {
    sap_mm_format format;
    sap_mm_field field;
    sap_symmetry symmetry;
    sap_int nrows, ncols;
    sap_int entries; /* declared: coordinate nnz, or the number of array values */
    int64_t lines;   /* lines up to and including the size line */
    size_t data;     /* offset of the first byte after the size line */
} mm_header;

/* ---- header --------------------------------------------------------------------------- */

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

static sap_status parse_header(sap_context *ctx, const char *name, const char *text, size_t len,
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
    int64_t mem = sap__mm_memory_limit();
    bool dims_overflow = sap__mul_overflows(h->nrows, h->ncols, INT64_MAX);
    if (h->format == SAP_MM_COORDINATE) {
        h->entries = v[2];
        if (!dims_overflow && h->entries > h->nrows * h->ncols)
            return SAP_ERROR(ctx, SAP_ERR_SIZE_LINE,
                             SRC_FMT "line %lld: %lld entries declared, more than the %lld x %lld = %lld positions",
                             SRC_ARG(name), (long long)line, (long long)h->entries, (long long)h->nrows,
                             (long long)h->ncols, (long long)(h->nrows * h->ncols));
        if (h->nrows >= mem / (int64_t)sizeof(sap_int) || h->entries > mem / 24)
            return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                             SRC_FMT "line %lld: a %lld x %lld matrix with %lld entries needs more memory than the "
                                     "%lld bytes of this machine",
                             SRC_ARG(name), (long long)line, (long long)h->nrows, (long long)h->ncols,
                             (long long)h->entries, (long long)mem);
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
        if (h->nrows * h->ncols > mem / 16)
            return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                             SRC_FMT "line %lld: a dense %lld x %lld matrix needs more memory than the %lld bytes of "
                                     "this machine",
                             SRC_ARG(name), (long long)line, (long long)h->nrows, (long long)h->ncols, (long long)mem);
    }
    if (opt->require_square && h->nrows != h->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE,
                         SRC_FMT "line %lld: the matrix is %lld x %lld, a square one is required", SRC_ARG(name),
                         (long long)line, (long long)h->nrows, (long long)h->ncols);
    return SAP_OK;
}

/* ---- entries -------------------------------------------------------------------------- */

typedef struct mm_chunk {
    const char *begin, *end; /* end[-1] == '\n' */
    int64_t line0;           /* lines before the chunk */
    int64_t nlines;          /* '\n' in the chunk */
    int64_t off, cap, count; /* slice of the triplet arrays, entries parsed */
    bool unterminated;       /* the copied last line of an input without a final newline */
    sap_status err;
    int64_t err_line;
    char msg[240];
} mm_chunk;

typedef struct mm_cfg {
    sap_mm_format format;
    sap_mm_field field;
    sap_symmetry symmetry;
    uint64_t nrows, ncols;
    bool allow_nonfinite;
    bool wide;       /* indices stored as int64 (else int32: both dimensions < 2^31) */
    void *row, *col; /* NULL: validate only */
    double *val;     /* NULL: pattern or validate only */
} mm_cfg;

/* end of the token at p (first blank or newline) */
static const char *token_end(const char *p)
{
    while (!mm_isblank(*p) && *p != '\n') p++;
    return p;
}

/* could [s, e) be the beginning of a number cut off by the end of the input? */
static bool number_prefix(const char *s, const char *e)
{
    for (; s < e; s++)
        if (!mm_isdigit(*s) && *s != '+' && *s != '-' && *s != '.' && *s != 'e' && *s != 'E') return false;
    return true;
}

static int chunk_error(mm_chunk *c, int64_t n, sap_status st, int64_t line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int chunk_error(mm_chunk *c, int64_t n, sap_status st, int64_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
    va_end(ap);
    c->err = st;
    c->err_line = line;
    c->count = n;
    return -1;
}

#define TRUNC_MSG "the input ends in the middle of an entry (truncated file?)"

/* A token at tok that is not what was expected: PARSE, or TRUNCATED when it is the cut-off
 * start of a number at the very end of an input without a final newline. */
static int bad_token(mm_chunk *c, int64_t n, int64_t line, const char *tok, const char *label, const char *what)
{
    const char *e = token_end(tok);
    if (c->unterminated && e == c->end - 1 && number_prefix(tok, e)) {
        return chunk_error(c, n, SAP_ERR_TRUNCATED, line, TRUNC_MSG);
    }
    int len = (int)(e - tok < 40 ? e - tok : 40);
    return chunk_error(c, n, SAP_ERR_PARSE, line, "%s '%.*s' is not %s", label, len, tok, what);
}

static int missing(mm_chunk *c, int64_t n, int64_t line, const char *what)
{
    if (c->unterminated) return chunk_error(c, n, SAP_ERR_TRUNCATED, line, TRUNC_MSG);
    return chunk_error(c, n, SAP_ERR_PARSE, line, "missing %s", what);
}

/* a value of the file's field at p (the chunk ends at end); NULL when malformed */
static inline const char *parse_value(const char *p, const char *end, bool integer, double *v)
{
    if (integer) {
        const char *q = p;
        if (*q == '-' || *q == '+') q++;
        if (!mm_isdigit(*q)) return NULL;
        while (mm_isdigit(*q)) q++;
        if (!mm_isblank(*q) && *q != '\n') return NULL;
    }
    return sap__parse_double(p, end, v);
}

static int index_error(mm_chunk *c, int64_t n, int64_t line, const char *tok, const char *what, uint64_t max)
{
    const char *e = token_end(tok);
    int len = (int)(e - tok < 40 ? e - tok : 40);
    return chunk_error(c, n, SAP_ERR_INDEX, line, "%s index %.*s is out of range 1..%llu", what, len, tok,
                       (unsigned long long)max);
}

static int parse_coordinate(const mm_cfg *g, mm_chunk *c)
{
    const char *p = c->begin, *end = c->end;
    int64_t line = c->line0, n = 0;
    const int64_t cap = c->cap;
    const bool wide = g->wide;
    const size_t isz = wide ? sizeof(sap_int) : sizeof(int32_t);
    char *R = g->row ? (char *)g->row + isz * (size_t)c->off : NULL;
    char *C = g->col ? (char *)g->col + isz * (size_t)c->off : NULL;
    double *V = g->val ? g->val + c->off : NULL;
    const uint64_t nr = g->nrows, nc = g->ncols;
    const bool pattern = g->field == SAP_MM_PATTERN, integer = g->field == SAP_MM_INTEGER;
    const bool skew = g->symmetry == SAP_SKEW_SYMMETRIC, finite = !g->allow_nonfinite;
    while (p < end) {
        line++;
        while (mm_isblank(*p)) p++;
        if (*p == '\n') {
            p++;
            continue;
        }
        if (*p == '%') {
            p = (const char *)memchr(p, '\n', (size_t)(end - p)) + 1;
            continue;
        }
        const char *ti = p, *tj, *tv = NULL;
        uint64_t i, j;
        double v = 1.0;
        if (!mm_isdigit(*p)) {
            if (*p == '-' && mm_isdigit(p[1])) return index_error(c, n, line, ti, "row", nr);
            return bad_token(c, n, line, ti, "row index", "a positive integer");
        }
        p = sap__parse_u64(p, end, &i);
        if (!mm_isblank(*p)) {
            if (*p == '\n') return missing(c, n, line, "column index");
            return bad_token(c, n, line, ti, "row index", "a positive integer");
        }
        do p++;
        while (mm_isblank(*p));
        tj = p;
        if (!mm_isdigit(*p)) {
            if (*p == '\n') return missing(c, n, line, "column index");
            if (*p == '-' && mm_isdigit(p[1])) return index_error(c, n, line, tj, "column", nc);
            return bad_token(c, n, line, tj, "column index", "a positive integer");
        }
        p = sap__parse_u64(p, end, &j);
        if (!mm_isblank(*p) && *p != '\n') return bad_token(c, n, line, tj, "column index", "a positive integer");
        if (!pattern) {
            while (mm_isblank(*p)) p++;
            if (*p == '\n') return missing(c, n, line, "value");
            tv = p;
            const char *q = parse_value(p, end, integer, &v);
            if (!q || (!mm_isblank(*q) && *q != '\n'))
                return bad_token(c, n, line, tv, "value", integer ? "an integer" : "a real number");
            p = q;
        }
        while (mm_isblank(*p)) p++;
        if (*p != '\n') {
            const char *e = token_end(p);
            return chunk_error(c, n, SAP_ERR_PARSE, line, "unexpected '%.*s' after the %s",
                               (int)(e - p < 40 ? e - p : 40), p,
                               pattern ? "indices (a pattern file has no values)" : "value");
        }
        p++;
        if (i - 1 >= nr) return index_error(c, n, line, ti, "row", nr); /* i == 0 wraps */
        if (j - 1 >= nc) return index_error(c, n, line, tj, "column", nc);
        if (!pattern) {
            if (finite && !isfinite(v)) {
                const char *e = token_end(tv);
                return chunk_error(c, n, SAP_ERR_NONFINITE, line, "value %.*s is not finite",
                                   (int)(e - tv < 40 ? e - tv : 40), tv);
            }
            if (skew && i == j && v != 0.0)
                return chunk_error(c, n, SAP_ERR_PARSE, line,
                                   "diagonal entry (%llu, %llu) of a skew-symmetric matrix must be zero",
                                   (unsigned long long)i, (unsigned long long)j);
        }
        if (n == cap) return chunk_error(c, n, SAP_ERR_COUNT, line, "more entries than the size line declares");
        if (R) {
            if (wide) {
                ((sap_int *)R)[n] = (sap_int)(i - 1);
                ((sap_int *)C)[n] = (sap_int)(j - 1);
            } else {
                ((int32_t *)R)[n] = (int32_t)(i - 1);
                ((int32_t *)C)[n] = (int32_t)(j - 1);
            }
            if (V) V[n] = v;
        }
        n++;
    }
    c->count = n;
    return 0;
}

static int parse_array(const mm_cfg *g, mm_chunk *c)
{
    const char *p = c->begin, *end = c->end;
    int64_t line = c->line0, n = 0;
    const int64_t cap = c->cap;
    double *V = g->val ? g->val + c->off : NULL;
    const bool integer = g->field == SAP_MM_INTEGER, finite = !g->allow_nonfinite;
    while (p < end) {
        line++;
        while (mm_isblank(*p)) p++;
        if (*p == '\n') {
            p++;
            continue;
        }
        if (*p == '%') {
            p = (const char *)memchr(p, '\n', (size_t)(end - p)) + 1;
            continue;
        }
        const char *tv = p;
        double v;
        const char *q = parse_value(p, end, integer, &v);
        if (!q || (!mm_isblank(*q) && *q != '\n'))
            return bad_token(c, n, line, tv, "value", integer ? "an integer" : "a real number");
        p = q;
        while (mm_isblank(*p)) p++;
        if (*p != '\n') {
            const char *e = token_end(p);
            return chunk_error(c, n, SAP_ERR_PARSE, line,
                               "unexpected '%.*s' after the value (an array file has one value a line)",
                               (int)(e - p < 40 ? e - p : 40), p);
        }
        p++;
        if (finite && !isfinite(v)) {
            const char *e = token_end(tv);
            return chunk_error(c, n, SAP_ERR_NONFINITE, line, "value %.*s is not finite",
                               (int)(e - tv < 40 ? e - tv : 40), tv);
        }
        if (n == cap) return chunk_error(c, n, SAP_ERR_COUNT, line, "more values than the size line declares");
        if (V) V[n] = v;
        n++;
    }
    c->count = n;
    return 0;
}

static void parse_chunk(const mm_cfg *g, mm_chunk *c)
{
    c->err = SAP_OK;
    c->count = 0;
    if (g->format == SAP_MM_COORDINATE)
        parse_coordinate(g, c);
    else
        parse_array(g, c);
}

/* The parsed entries: chunk k holds count entries at off in row/col/val. */
typedef struct mm_data {
    mm_header h;
    int nchunks;
    mm_chunk *chunks;
    bool wide; /* row/col hold sap_int, else int32_t */
    void *row, *col;
    double *val;
    int64_t count, lines;
    char *tail;
} mm_data;

static void data_free(sap_context *ctx, mm_data *d)
{
    sap__free(ctx, d->chunks);
    sap__free(ctx, d->row);
    sap__free(ctx, d->col);
    sap__free(ctx, d->val);
    sap__free(ctx, d->tail);
    d->chunks = NULL;
    d->row = d->col = NULL;
    d->val = NULL;
    d->tail = NULL;
}

/* Parses the whole text into d (freed with data_free, also after an error). */
static sap_status parse_text(sap_context *ctx, const char *name, const char *text, size_t len,
                             const sap_mm_read_options *opt, mm_data *d)
{
    sap_status st = SAP_OK;
    memset(d, 0, sizeof(*d));
    SAP_TRY(parse_header(ctx, name, text, len, opt, &d->h));
    const mm_header *h = &d->h;
    const char *data = text + h->data;
    size_t dlen = len - h->data;
    /* [data, data + mlen) ends with '\n'; the rest is an unterminated last line */
    size_t mlen = dlen;
    while (mlen > 0 && data[mlen - 1] != '\n') mlen--;
    size_t tlen = dlen - mlen;

    int T = 1;
#ifdef _OPENMP
    T = sap__threads(ctx);
    if ((size_t)T > mlen / MM_MIN_CHUNK_BYTES) T = (int)(mlen / MM_MIN_CHUNK_BYTES);
    if (T > MM_MAX_CHUNKS) T = MM_MAX_CHUNKS;
    if (T < 1) T = 1;
#endif
    int nch = T + (tlen > 0);
    SAP_CALLOC(ctx, d->chunks, nch);
    d->nchunks = nch;
    mm_chunk *ch = d->chunks;
    /* split at newlines */
    const char *pos = data, *mend = data + mlen;
    for (int k = 0; k < T; k++) {
        const char *e = k == T - 1 ? mend : data + (mlen / (size_t)T) * (size_t)(k + 1);
        if (e < pos) e = pos;
        while (e < mend && e[-1] != '\n') e++;
        ch[k].begin = pos;
        ch[k].end = e;
        pos = e;
    }
    if (tlen > 0) {
        SAP_ALLOC(ctx, d->tail, tlen + 2);
        memcpy(d->tail, data + mlen, tlen);
        d->tail[tlen] = '\n';
        d->tail[tlen + 1] = '\0';
        ch[T].begin = d->tail;
        ch[T].end = d->tail + tlen + 1;
        ch[T].unterminated = true;
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(T) schedule(static, 1) if (T > 1)
#endif
    for (int k = 0; k < T; k++) ch[k].nlines = sap__mm_count_newlines(ch[k].begin, (size_t)(ch[k].end - ch[k].begin));
    if (tlen > 0) ch[T].nlines = 1;
    int64_t line = h->lines, total_cap = 0;
    for (int k = 0; k < nch; k++) {
        ch[k].line0 = line;
        line += ch[k].nlines;
        ch[k].cap = ch[k].nlines < h->entries ? ch[k].nlines : h->entries;
        ch[k].off = total_cap;
        total_cap += ch[k].cap;
    }
    d->lines = line;

    mm_cfg g;
    memset(&g, 0, sizeof(g));
    g.format = h->format;
    g.field = h->field;
    g.symmetry = h->symmetry;
    g.nrows = (uint64_t)h->nrows;
    g.ncols = (uint64_t)h->ncols;
    g.allow_nonfinite = opt->allow_nonfinite != 0;
    d->wide = h->nrows > INT32_MAX || h->ncols > INT32_MAX;
    if (h->format == SAP_MM_COORDINATE) {
        size_t isz = d->wide ? sizeof(sap_int) : sizeof(int32_t);
        d->row = sap__alloc(ctx, (size_t)total_cap, isz, false, __FILE__, __LINE__);
        d->col = sap__alloc(ctx, (size_t)total_cap, isz, false, __FILE__, __LINE__);
        if (!d->row || !d->col) {
            st = SAP_ERR_OUT_OF_MEMORY;
            goto cleanup;
        }
    }
    if (h->field != SAP_MM_PATTERN) SAP_ALLOC(ctx, d->val, total_cap);
    g.wide = d->wide;
    g.row = d->row;
    g.col = d->col;
    g.val = d->val;
#ifdef _OPENMP
#pragma omp parallel for num_threads(T) schedule(static, 1) if (T > 1)
#endif
    for (int k = 0; k < T; k++) parse_chunk(&g, &ch[k]);
    if (tlen > 0) parse_chunk(&g, &ch[T]);

    int64_t count = 0;
    bool bad = false;
    for (int k = 0; k < nch; k++) {
        count += ch[k].count;
        if (ch[k].err != SAP_OK) bad = true;
    }
    d->count = count;
    if (!bad && count == h->entries) return SAP_OK;

    /* Something is wrong: find the first error exactly with a serial pass that stores
     * nothing (the main text as one chunk, then the copied last line). */
    mm_cfg gv = g;
    gv.row = gv.col = NULL;
    gv.val = NULL;
    mm_chunk whole[2];
    memset(whole, 0, sizeof(whole));
    whole[0].begin = data;
    whole[0].end = mend;
    whole[0].line0 = h->lines;
    whole[0].cap = h->entries;
    int nw = 1;
    if (tlen > 0) {
        whole[1] = ch[T];
        whole[1].line0 = ch[T].line0;
        nw = 2;
    }
    int64_t seen = 0;
    for (int k = 0; k < nw; k++) {
        whole[k].cap = h->entries - seen;
        parse_chunk(&gv, &whole[k]);
        seen += whole[k].count;
        if (whole[k].err != SAP_OK)
            SAP_FAIL(ctx, whole[k].err, SRC_FMT "line %lld: %s", SRC_ARG(name), (long long)whole[k].err_line,
                     whole[k].msg);
    }
    if (seen < h->entries) {
        bool unterminated = len > 0 && text[len - 1] != '\n';
        SAP_FAIL(ctx, SAP_ERR_COUNT,
                 SRC_FMT "line %lld: end of input after %lld of the %lld %s the size line declares%s", SRC_ARG(name),
                 (long long)d->lines + 1, (long long)seen, (long long)h->entries,
                 h->format == SAP_MM_COORDINATE ? "entries" : "values",
                 unterminated ? " (the input does not end with a newline: truncated?)" : "");
    }
    for (int k = 0; k < nch; k++) /* not reached in practice */
        if (ch[k].err != SAP_OK)
            SAP_FAIL(ctx, ch[k].err, SRC_FMT "line %lld: %s", SRC_ARG(name), (long long)ch[k].err_line, ch[k].msg);
    SAP_FAIL(ctx, SAP_ERR_COUNT, SRC_FMT "%lld entries found, %lld declared", SRC_ARG(name), (long long)count,
             (long long)h->entries);
cleanup:
    data_free(ctx, d);
    return st;
}

/* ---- building the results ---------------------------------------------------------------- */

/* Stable sort of (col, val) pairs by col; tc, tv: scratch of n entries (may be NULL when
 * n <= 32). */
static void sort_row(sap_int *c, double *v, sap_int n, sap_int *tc, double *tv)
{
    if (n <= 32 || !tc) {
        for (sap_int a = 1; a < n; a++) {
            sap_int kc = c[a];
            double kv = v[a];
            sap_int b = a - 1;
            while (b >= 0 && c[b] > kc) {
                c[b + 1] = c[b];
                v[b + 1] = v[b];
                b--;
            }
            c[b + 1] = kc;
            v[b + 1] = kv;
        }
        return;
    }
    /* bottom-up merge sort: runs of 16 by insertion, then merges through the scratch */
    const sap_int run = 16;
    for (sap_int s = 0; s < n; s += run) sort_row(c + s, v + s, n - s < run ? n - s : run, NULL, NULL);
    sap_int *sc = c, *dc = tc;
    double *sv = v, *dv = tv;
    for (sap_int w = run; w < n; w *= 2) {
        for (sap_int lo = 0; lo < n; lo += 2 * w) {
            sap_int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            sap_int a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                if (sc[b] < sc[a]) {
                    dc[o] = sc[b];
                    dv[o++] = sv[b++];
                } else {
                    dc[o] = sc[a];
                    dv[o++] = sv[a++];
                }
            }
            while (a < mid) {
                dc[o] = sc[a];
                dv[o++] = sv[a++];
            }
            while (b < hi) {
                dc[o] = sc[b];
                dv[o++] = sv[b++];
            }
        }
        sap_int *xc = sc;
        sc = dc;
        dc = xc;
        double *xv = sv;
        sv = dv;
        dv = xv;
    }
    if (sc != c) {
        memcpy(c, sc, sizeof(sap_int) * (size_t)n);
        memcpy(v, sv, sizeof(double) * (size_t)n);
    }
}

/* Sorts unsorted rows and sums duplicates in place (rowptr and nnz updated). */
static sap_status canonicalize(sap_context *ctx, sap_csr *A)
{
    sap_status st = SAP_OK;
    sap_int *tc = NULL;
    double *tv = NULL;
    sap_int *rp = A->rowptr, *ci = A->colind;
    double *va = A->val;
    sap_int w = 0, start = 0;
    for (sap_int i = 0; i < A->nrows; i++) {
        sap_int a = start, b = rp[i + 1];
        start = b;
        bool sorted = true;
        for (sap_int q = a + 1; q < b; q++)
            if (ci[q] <= ci[q - 1]) {
                sorted = false;
                break;
            }
        if (sorted) {
            if (w != a) {
                memmove(ci + w, ci + a, sizeof(sap_int) * (size_t)(b - a));
                memmove(va + w, va + a, sizeof(double) * (size_t)(b - a));
            }
            rp[i] = w;
            w += b - a;
            continue;
        }
        if (b - a > 32 && !tc) {
            sap_int maxlen = 0;
            for (sap_int r = i; r < A->nrows; r++) {
                sap_int l = rp[r + 1] - (r == i ? a : rp[r]);
                if (l > maxlen) maxlen = l;
            }
            SAP_ALLOC(ctx, tc, maxlen);
            SAP_ALLOC(ctx, tv, maxlen);
        }
        sort_row(ci + a, va + a, b - a, tc, tv);
        rp[i] = w;
        for (sap_int q = a; q < b; q++) {
            if (w > rp[i] && ci[w - 1] == ci[q]) {
                va[w - 1] += va[q];
            } else {
                ci[w] = ci[q];
                va[w] = va[q];
                w++;
            }
        }
    }
    rp[A->nrows] = w;
    A->nnz = w;
cleanup:
    sap__free(ctx, tc);
    sap__free(ctx, tv);
    return st;
}

/* Runs BODY with r, j (sap_int) and v (double) bound to each parsed coordinate entry, in
 * file order. */
#define FOR_TRIPLETS(d, BODY)                                                                                          \
    do {                                                                                                               \
        for (int k_ = 0; k_ < (d)->nchunks; k_++) {                                                                    \
            const mm_chunk *c_ = &(d)->chunks[k_];                                                                     \
            if (c_->count == 0) continue;                                                                              \
            const double *V_ = (d)->val ? (d)->val + c_->off : NULL;                                                   \
            if ((d)->wide) {                                                                                           \
                const sap_int *R_ = (const sap_int *)(d)->row + c_->off;                                               \
                const sap_int *C_ = (const sap_int *)(d)->col + c_->off;                                               \
                for (int64_t q_ = 0; q_ < c_->count; q_++) {                                                           \
                    const sap_int r = R_[q_], j = C_[q_];                                                              \
                    const double v = V_ ? V_[q_] : 1.0;                                                                \
                    (void)v, (void)j;                                                                                  \
                    BODY;                                                                                              \
                }                                                                                                      \
            } else {                                                                                                   \
                const int32_t *R_ = (const int32_t *)(d)->row + c_->off;                                               \
                const int32_t *C_ = (const int32_t *)(d)->col + c_->off;                                               \
                for (int64_t q_ = 0; q_ < c_->count; q_++) {                                                           \
                    const sap_int r = R_[q_], j = C_[q_];                                                              \
                    const double v = V_ ? V_[q_] : 1.0;                                                                \
                    (void)v, (void)j;                                                                                  \
                    BODY;                                                                                              \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static sap_status build_csr_coordinate(sap_context *ctx, const mm_data *d, bool expand, sap_csr **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    const bool mirror = expand && h->symmetry != SAP_GENERAL;
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
    SAP_TRY(canonicalize(ctx, A));
    *out = A;
    A = NULL;
cleanup:
    sap__free(ctx, next);
    sap_csr_destroy(A);
    return st;
}

/* Calls body(i, j, v) for the array values in file order (column-major; the lower
 * triangle of symmetric files with the diagonal, the strict lower one of skew files). */
#define FOR_ARRAY_VALUES(d, BODY)                                                                                      \
    do {                                                                                                               \
        const sap_int n_ = (d)->h.nrows;                                                                               \
        const sap_symmetry sy_ = (d)->h.symmetry;                                                                      \
        sap_int i = sy_ == SAP_SKEW_SYMMETRIC ? 1 : 0, j = 0;                                                          \
        for (int k_ = 0; k_ < (d)->nchunks; k_++) {                                                                    \
            const mm_chunk *c_ = &(d)->chunks[k_];                                                                     \
            if (c_->count == 0) continue;                                                                              \
            const double *V_ = (d)->val + c_->off;                                                                     \
            for (int64_t q_ = 0; q_ < c_->count; q_++) {                                                               \
                double v = V_[q_];                                                                                     \
                BODY;                                                                                                  \
                if (++i == n_) {                                                                                       \
                    j++;                                                                                               \
                    i = sy_ == SAP_GENERAL ? 0 : sy_ == SAP_SYMMETRIC ? j : j + 1;                                     \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

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

static sap_status build_dense(sap_context *ctx, const mm_data *d, bool expand, sap_dense **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    sap_dense *D = NULL;
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
    sap_dense_destroy(D);
    return st;
}

/* ---- public functions ------------------------------------------------------------------------ */

static void fill_info(sap_mm_info *info, const mm_data *d, size_t len)
{
    if (!info) return;
    info->format = d->h.format;
    info->field = d->h.field;
    info->symmetry = d->h.symmetry;
    info->nrows = d->h.nrows;
    info->ncols = d->h.ncols;
    info->entries = d->h.entries;
    info->bytes = (int64_t)len;
    info->lines = d->lines;
}

static sap_status parse_csr(sap_context *ctx, const char *name, const char *text, size_t len,
                            const sap_mm_read_options *opt, sap_csr **A, sap_mm_info *info)
{
    mm_data d;
    sap_status st = parse_text(ctx, name, text, len, opt, &d);
    if (st < 0) return st;
    bool expand = opt->expand_symmetry != 0;
    if (d.h.format == SAP_MM_COORDINATE)
        st = build_csr_coordinate(ctx, &d, expand, A);
    else
        st = build_csr_array(ctx, &d, expand, A);
    if (st >= 0) fill_info(info, &d, len);
    data_free(ctx, &d);
    return st;
}

/* opt, or the defaults written into *def when opt is NULL. */
static const sap_mm_read_options *options_or_default(const sap_mm_read_options *opt, sap_mm_read_options *def)
{
    if (opt) return opt;
    sap_mm_read_options_init(def);
    return def;
}

sap_status sap_mm_parse_csr(sap_context *ctx, const char *text, size_t len, const sap_mm_read_options *opt, sap_csr **A,
                            sap_mm_info *info)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *A = NULL;
    if (!text && len > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "text is NULL");
    sap_mm_read_options def;
    opt = options_or_default(opt, &def);
    return parse_csr(ctx, NULL, text ? text : "", len, opt, A, info);
}

sap_status sap_mm_read_csr(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_csr **A,
                           sap_mm_info *info)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *A = NULL;
    if (!path) return SAP_ERROR(ctx, SAP_ERR_INVALID, "path is NULL");
    sap_mm_read_options def;
    opt = options_or_default(opt, &def);
    char *text = NULL;
    size_t len = 0;
    sap_status st = sap__mm_load(ctx, path, &text, &len, NULL);
    if (st < 0) return st;
    st = parse_csr(ctx, path, text, len, opt, A, info);
    sap__free(ctx, text);
    return st;
}

sap_status sap_mm_read_dense(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_dense **X,
                             sap_mm_info *info)
{
    SAP_CHECK_CTX(ctx);
    if (!X) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *X = NULL;
    if (!path) return SAP_ERROR(ctx, SAP_ERR_INVALID, "path is NULL");
    sap_mm_read_options def;
    opt = options_or_default(opt, &def);
    char *text = NULL;
    size_t len = 0;
    sap_status st = sap__mm_load(ctx, path, &text, &len, NULL);
    if (st < 0) return st;
    mm_data d;
    st = parse_text(ctx, path, text, len, opt, &d);
    if (st >= 0) {
        if (sap__mul_overflows(d.h.nrows, d.h.ncols, sap__mm_memory_limit() / 8)) {
            st = SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                           "%s: a dense %lld x %lld matrix needs more memory than this machine has", path,
                           (long long)d.h.nrows, (long long)d.h.ncols);
        } else {
            st = build_dense(ctx, &d, opt->expand_symmetry != 0, X);
            if (st >= 0) fill_info(info, &d, len);
        }
        data_free(ctx, &d);
    }
    sap__free(ctx, text);
    return st;
}
