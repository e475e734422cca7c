/* mm_number.h -- the number conversions of the Matrix Market reader and writer (not
 * installed), in one C++ unit (mm_number.cpp) behind a C interface:
 *   text -> double   fast_float (Lemire, "Number Parsing at a Gigabyte per Second", 2021;
 *                    Debian libfast-float-dev), always the correctly rounded double, as
 *                    strtod() gives in the "C" locale;
 *   text -> integer  a saturating digit loop, inline below;
 *   entry lines      the reader's fast path (sap__mm_scan_*): runs of well-formed entry
 *                    lines with fast_float inlined into the loop, no call per value;
 *                    mm_body.c does every other line and all error reporting;
 *   double -> text   std::to_chars (C++17; libstdc++ uses Ryu): the shortest text that
 *                    reads back bit for bit, or exactly what printf("%.*g") prints. */
#ifndef SAP_MM_NUMBER_H
#define SAP_MM_NUMBER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parses a decimal real number at p (not beyond end): [+-]digits[.digits][(e|E)[+-]digits]
 * with at least one digit in the mantissa, or nan / inf / infinity (any case, optional
 * sign).  Returns the end of the number, or NULL when no number starts at p.  A mantissa
 * followed by an 'e' without exponent digits ends before the 'e'.  Values beyond the
 * double range give +-HUGE_VAL (or +-0).  The caller checks what follows. */
const char *sap__parse_double(const char *p, const char *end, double *v);

/* Parses the digits at p (not beyond end; no sign) as an unsigned integer, saturating at
 * UINT64_MAX.  Returns the end of the digits, or NULL when p is not a digit.  Inline (a
 * loop of the hot path of the reader: two indices a line), C and C++ alike. */
static inline const char *sap__parse_u64(const char *p, const char *end, uint64_t *v)
{
    if (p >= end || (unsigned char)(*p - '0') >= 10) return 0;
    uint64_t x = 0;
    for (; p < end && (unsigned char)(*p - '0') < 10; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        x = x > (UINT64_MAX - 9) / 10 ? UINT64_MAX : 10 * x + d;
    }
    *v = x;
    return p;
}

/* The fast path of the entry section (mm_body.c): a run of lines of one chunk. */
typedef struct sap_mm_scan {
    const char *p;        /* in: the start of a line; out: the start of the first line left */
    const char *end;      /* end of the chunk: end[-1] == '\n' */
    int64_t line;         /* lines before p (counts the lines consumed) */
    int64_t n, cap;       /* entries stored in the slice, its capacity */
    void *row, *col;      /* coordinate slices: int64_t (wide) or int32_t, 0-based; NULL: store nothing */
    double *val;          /* value slice; NULL: pattern or store nothing */
    uint64_t nrows, ncols;
    int field;            /* 0 real, 1 integer, 2 pattern (sap_mm_field) */
    int wide, skew, finite; /* int64 indices; skew-symmetric (diagonal must be 0); reject NaN/Inf */
} sap_mm_scan;

/* Consume lines from s->p while each is a plain, valid entry: blanks, "i j[ value]" (or
 * "value" for array files), blanks, '\n', with the indices in range, the value finite
 * (unless allowed), a zero diagonal for skew files, and room in the slice; store each
 * and advance s->p, s->line and s->n.  Stop at s->end or before the first other line
 * (blank, comment, malformed, out of range, rare syntax such as a '+' before the value
 * or an out-of-range exponent), which the caller's full tokenizer then handles exactly
 * as before; accepting a line here gives the same values as that tokenizer would. */
void sap__mm_scan_coordinate(sap_mm_scan *s);
void sap__mm_scan_array(sap_mm_scan *s);

/* Longest output of the formatters below (a %.17g real is at most 24 bytes) plus slack. */
#define SAP_NUMBER_MAX 40

/* Writes v at out (no NUL); returns the number of bytes written (< SAP_NUMBER_MAX).
 * precision >= 17: the shortest text that reads back as exactly v (std::to_chars without
 * precision, Ryu: at most 17 significant digits, the nearest to v of the shortest,
 * fixed or scientific whichever is shorter, e.g. 0.1, 1e+22, 5e-324, -0); precision
 * 1..16 (below 1 is 1): exactly what printf("%.*g", precision, v) prints. */
int sap__format_double(char *out, double v, int precision);

/* Writes v in decimal at out (no NUL); returns the number of bytes written (<= 20). */
int sap__format_u64(char *out, uint64_t v);
int sap__format_i64(char *out, int64_t v);

#ifdef __cplusplus
}
#endif

#endif /* SAP_MM_NUMBER_H */
