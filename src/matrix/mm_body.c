/* mm_body.c -- owns the entry section of a Matrix Market text: the tokenizer of
 * coordinate lines (row col [value]) and array lines (value), the checks on each entry
 * (index ranges, finiteness, skew diagonal, the declared count), and the split of the
 * section at newlines into one chunk per thread.  Each chunk parses into its own slice of
 * the triplet arrays (sized by its line count), so nothing is merged.  Runs of plain,
 * valid entry lines go through the fast path of the C++ unit (sap__mm_scan_*,
 * mm_number.h: fast_float inlined, no call per value); every other line (blank,
 * comment, malformed, out of range, rare syntax) is the tokenizer's here.  The tokenizer
 * relies on a '\n' ending every line it sees: the text up to its last newline is parsed
 * in place, an unterminated last line is copied and given one.  When anything is wrong
 * the section is parsed again serially without storing, which finds the first error
 * and its line exactly. */
#define _POSIX_C_SOURCE 200809L
#include "matrix/mm_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MM_MAX_CHUNKS 64
#define MM_MIN_CHUNK_BYTES ((size_t)1 << 20)

/* Number of '\n' bytes in [p, p + n) (eight at a time). */
static int64_t count_newlines(const char *p, size_t n)
{
    int64_t count = 0;
    size_t i = 0;
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL, low7 = 0x7F7F7F7F7F7F7F7FULL;
    const uint64_t nl = ones * (uint64_t)'\n';
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        uint64_t x = w ^ nl; /* zero bytes where '\n' */
        uint64_t t = ((x & low7) + low7) | x;
        count += (int64_t)((((~t & high) >> 7) * ones) >> 56); /* bytes that were '\n' */
    }
    for (; i < n; i++) count += p[i] == '\n';
    return count;
}

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


/* Where the fast scanner stopped (a line that is not a plain entry): a blank or comment
 * line is skipped (returns 1, p after it), else p is left at the line's first token. */
static int skip_empty_line(const char **pp, const char *end)
{
    const char *p = *pp;
    while (mm_isblank(*p)) p++;
    if (*p == '\n') {
        *pp = p + 1;
        return 1;
    }
    if (*p == '%') {
        *pp = (const char *)memchr(p, '\n', (size_t)(end - p)) + 1;
        return 1;
    }
    *pp = p;
    return 0;
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
    sap_mm_scan fast = {.end = end,
                        .cap = cap,
                        .row = R,
                        .col = C,
                        .val = V,
                        .nrows = nr,
                        .ncols = nc,
                        .field = (int)g->field,
                        .wide = wide,
                        .skew = skew,
                        .finite = finite};
    while (p < end) {
        /* runs of plain entry lines in the C++ unit; this loop does the others */
        fast.p = p;
        fast.line = line;
        fast.n = n;
        sap__mm_scan_coordinate(&fast);
        p = fast.p;
        line = fast.line;
        n = fast.n;
        if (p == end) break;
        line++;
        if (skip_empty_line(&p, end)) continue;
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
    sap_mm_scan fast = {.end = end, .cap = cap, .val = V, .field = (int)g->field, .finite = finite};
    while (p < end) {
        fast.p = p;
        fast.line = line;
        fast.n = n;
        sap__mm_scan_array(&fast);
        p = fast.p;
        line = fast.line;
        n = fast.n;
        if (p == end) break;
        line++;
        if (skip_empty_line(&p, end)) continue;
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

void sap__mm_data_free(sap_context *ctx, mm_data *d)
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

sap_status sap__mm_parse_text(sap_context *ctx, const char *name, const char *text, size_t len,
                              const sap_mm_read_options *opt, bool dense, mm_data *d)
{
    sap_status st = SAP_OK;
    memset(d, 0, sizeof(*d));
    SAP_TRY(sap__mm_parse_header(ctx, name, text, len, opt, &d->h));
    SAP_TRY(sap__mm_check_memory(ctx, name, &d->h, dense, opt->expand_symmetry != 0));
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
    for (int k = 0; k < T; k++) ch[k].nlines = count_newlines(ch[k].begin, (size_t)(ch[k].end - ch[k].begin));
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
    sap__mm_data_free(ctx, d);
    return st;
}
