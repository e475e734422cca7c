// mm_number.cpp -- owns the number conversions of the Matrix Market reader and writer
// (declared in mm_number.h): fast_float for reals, the reader's fast path over runs of
// well-formed entry lines (fast_float inlined into the line loop), std::to_chars for
// output.  The library's only C++ unit: no exceptions, no allocation, nothing but the C
// interface is visible outside it.
#include "matrix/mm_number.h"

#include <fast_float/fast_float.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <type_traits>

namespace {

// strtod on a NUL-terminated copy of [s, e): the rare values fast_float reports out of range
const char *parse_double_strtod(const char *s, const char *e, double *v)
{
    char buf[4096];
    const size_t n = static_cast<size_t>(e - s);
    if (n >= sizeof(buf)) return nullptr; // a number of more than 4095 characters
    std::memcpy(buf, s, n);
    buf[n] = '\0';
    char *stop = nullptr;
    const double x = std::strtod(buf, &stop);
    if (stop != buf + n) return nullptr;
    *v = x;
    return e;
}

// fast_float::from_chars is an out-of-line template here (GCC does not inline it by
// itself): flatten inlines it, and what it calls, into the line loops.
#if defined(__GNUC__)
#define SAP_FLATTEN __attribute__((flatten))
#else
#define SAP_FLATTEN
#endif

inline bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; } // as mm_isblank

enum { REAL = 0, INTEGER = 1, PATTERN = 2 };

// A value of the file's field at p, as mm_body.c's parse_value + sap__parse_double would
// read it, inline; nullptr where that tokenizer should decide (malformed or rare forms).
template <int Field>
inline const char *value(const char *p, const char *end, double *v)
{
    if (Field == INTEGER) {
        const char *q = p;
        if (*q == '-' || *q == '+') q++;
        if (!is_digit(*q)) return nullptr;
        while (is_digit(*q)) q++;
        if (!is_blank(*q) && *q != '\n') return nullptr;
    }
    if (*p == '+') { // fast_float takes no '+'
        p++;
        if (*p == '-') return nullptr;
    }
    const fast_float::from_chars_result r = fast_float::from_chars(p, end, *v);
    if (r.ec != std::errc()) return nullptr;
    if (r.ptr[-1] == ')') return nullptr; // "nan(chars)"
    return r.ptr;
}

template <bool Wide, int Field>
SAP_FLATTEN void scan_coordinate(sap_mm_scan *s)
{
    using Index = typename std::conditional<Wide, int64_t, int32_t>::type;
    const char *p = s->p;
    const char *const end = s->end;
    int64_t n = s->n;
    const int64_t n0 = n, cap = s->cap;
    Index *const R = static_cast<Index *>(s->row);
    Index *const C = static_cast<Index *>(s->col);
    double *const V = s->val;
    const uint64_t nr = s->nrows, nc = s->ncols;
    const bool skew = s->skew != 0, finite = s->finite != 0;
    while (p < end && n < cap) {
        const char *q = p;
        while (is_blank(*q)) q++;
        if (!is_digit(*q)) break;
        uint64_t i = 0, j = 0;
        q = sap__parse_u64(q, end, &i);
        if (!is_blank(*q)) break;
        do q++;
        while (is_blank(*q));
        if (!is_digit(*q)) break;
        q = sap__parse_u64(q, end, &j);
        double v = 1.0;
        if (Field != PATTERN) {
            if (!is_blank(*q)) break;
            do q++;
            while (is_blank(*q));
            q = value<Field>(q, end, &v);
            if (!q) break;
        }
        while (is_blank(*q)) q++;
        if (*q != '\n') break;
        if (i - 1 >= nr || j - 1 >= nc) break; // i == 0 wraps
        if (Field != PATTERN) {
            if (finite && !std::isfinite(v)) break;
            if (skew && i == j && v != 0.0) break;
        }
        if (R) {
            R[n] = static_cast<Index>(i - 1);
            C[n] = static_cast<Index>(j - 1);
            if (Field != PATTERN && V) V[n] = v;
        }
        n++;
        p = q + 1;
    }
    s->line += n - n0; // one line an entry
    s->n = n;
    s->p = p;
}

template <int Field>
SAP_FLATTEN void scan_array(sap_mm_scan *s)
{
    const char *p = s->p;
    const char *const end = s->end;
    int64_t n = s->n;
    const int64_t n0 = n, cap = s->cap;
    double *const V = s->val;
    const bool finite = s->finite != 0;
    while (p < end && n < cap) {
        const char *q = p;
        while (is_blank(*q)) q++;
        double v;
        q = value<Field>(q, end, &v);
        if (!q) break;
        while (is_blank(*q)) q++;
        if (*q != '\n') break;
        if (finite && !std::isfinite(v)) break;
        if (V) V[n] = v;
        n++;
        p = q + 1;
    }
    s->line += n - n0;
    s->n = n;
    s->p = p;
}

} // namespace

extern "C" void sap__mm_scan_coordinate(sap_mm_scan *s)
{
    if (s->wide) {
        if (s->field == PATTERN)
            scan_coordinate<true, PATTERN>(s);
        else if (s->field == INTEGER)
            scan_coordinate<true, INTEGER>(s);
        else
            scan_coordinate<true, REAL>(s);
    } else {
        if (s->field == PATTERN)
            scan_coordinate<false, PATTERN>(s);
        else if (s->field == INTEGER)
            scan_coordinate<false, INTEGER>(s);
        else
            scan_coordinate<false, REAL>(s);
    }
}

extern "C" void sap__mm_scan_array(sap_mm_scan *s)
{
    if (s->field == INTEGER)
        scan_array<INTEGER>(s);
    else
        scan_array<REAL>(s);
}

extern "C" const char *sap__parse_double(const char *p, const char *end, double *v)
{
    const char *s = p;
    if (p < end && *p == '+') { // fast_float, like std::from_chars, takes no '+'
        p++;
        if (p < end && *p == '-') return nullptr;
    }
    double x = 0.0;
    const fast_float::from_chars_result r = fast_float::from_chars(p, end, x);
    if (r.ec == std::errc::invalid_argument) return nullptr;
    if (r.ptr[-1] == ')') return nullptr; // "nan(chars)": not a Matrix Market number
    if (r.ec == std::errc::result_out_of_range) return parse_double_strtod(s, r.ptr, v);
    *v = x;
    return r.ptr;
}

extern "C" int sap__format_double(char *out, double v, int precision)
{
    if (precision >= 17) return static_cast<int>(std::to_chars(out, out + SAP_NUMBER_MAX, v).ptr - out);
    if (precision < 1) precision = 1;
    const std::to_chars_result r = std::to_chars(out, out + SAP_NUMBER_MAX, v, std::chars_format::general, precision);
    return static_cast<int>(r.ptr - out);
}

extern "C" int sap__format_u64(char *out, uint64_t v)
{
    return static_cast<int>(std::to_chars(out, out + SAP_NUMBER_MAX, v).ptr - out);
}

extern "C" int sap__format_i64(char *out, int64_t v)
{
    return static_cast<int>(std::to_chars(out, out + SAP_NUMBER_MAX, v).ptr - out);
}
