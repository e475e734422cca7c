/* mm_text.h -- internal helpers of the Matrix Market reader and writer (not installed):
 * loading a whole file (plain or gzip) into memory, a buffered output sink (plain or
 * gzip), and fast, correctly rounded conversions between text and numbers.
 *
 * Number parsing: mm_parse_real() accumulates up to 19 significant digits in a uint64
 * and a decimal exponent, then takes Clinger's exact fast path (mantissa <= 2^53,
 * |exponent| <= 22: one multiplication or division by an exact power of ten), else the
 * Eisel-Lemire algorithm with a table of 128-bit powers of five (mm_pow5.h; it proves
 * its result correctly rounded or gives up), else strtod().  Results are always the
 * correctly rounded double, as strtod() gives in the "C" locale.
 *
 * Number formatting: sap__mm_format_real() prints exactly what printf("%.*g") prints,
 * computing the digits with the same 128-bit table and falling back to snprintf() in the
 * rare cases it cannot prove the rounding (near-ties, subnormals, NaN/Inf). */
#ifndef SAP_MM_TEXT_H
#define SAP_MM_TEXT_H

#include "base/base.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Zero bytes sap__mm_load() leaves after the text (room for a sentinel). */
#define SAP_MM_PAD 64

/* Reads the whole file at path into *text (from the context allocator; free with
 * sap__free), *len bytes followed by SAP_MM_PAD zero bytes.  gzip input is recognized by
 * its magic bytes (any name) and decompressed; *gzipped (may be NULL) says so.
 * Errors: SAP_ERR_IO (with path and strerror), SAP_ERR_TRUNCATED (gzip stream cut short
 * or corrupt), SAP_ERR_NOT_COMPILED (gzip without zlib), SAP_ERR_OUT_OF_MEMORY. */
sap_status sap__mm_load(sap_context *ctx, const char *path, char **text, size_t *len, int *gzipped);

/* Number of '\n' bytes in [p, p + n). */
int64_t sap__mm_count_newlines(const char *p, size_t n);

/* Physical memory in bytes (an upper bound for what a read may allocate), or a large
 * constant where unknown. */
int64_t sap__mm_memory_limit(void);

/* ---- output sink ------------------------------------------------------------------- */

typedef struct sap_mm_sink {
    sap_context *ctx;
    const char *path;
    void *file; /* FILE * */
    void *gz;   /* gzFile */
    char *buf;
    size_t len, cap;
} sap_mm_sink;

/* Opens path for writing (through zlib when it ends in ".gz"). */
sap_status sap__mm_sink_open(sap_context *ctx, const char *path, sap_mm_sink *s);
/* Writes n bytes (buffered). */
sap_status sap__mm_sink_write(sap_mm_sink *s, const char *p, size_t n);
/* Flushes and closes; with ok == 0 (an earlier error) the partial file is removed.
 * Returns the first error of flushing or closing. */
sap_status sap__mm_sink_close(sap_mm_sink *s, int ok);

/* ---- formatting ---------------------------------------------------------------------- */

/* Longest output of sap__mm_format_real / _int (with precision <= 17) plus slack. */
#define SAP_MM_NUMBER_MAX 40

/* Writes v as printf("%.*g", precision, v) would (precision 1..17) at out (no NUL);
 * returns the number of bytes written (< SAP_MM_NUMBER_MAX). */
int sap__mm_format_real(char *out, double v, int precision);

/* Writes an unsigned or signed integer in decimal; returns the bytes written. */
static inline int sap__mm_format_u64(char *out, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (int k = 0; k < n; k++) out[k] = tmp[n - 1 - k];
    return n;
}

static inline int sap__mm_format_i64(char *out, int64_t v)
{
    if (v < 0) {
        out[0] = '-';
        return 1 + sap__mm_format_u64(out + 1, (uint64_t)0 - (uint64_t)v);
    }
    return sap__mm_format_u64(out, (uint64_t)v);
}

/* ---- parsing ------------------------------------------------------------------------- */

static inline bool mm_isdigit(char c) { return (unsigned char)(c - '0') < 10; }
/* Separators inside a line: blank, tab, carriage return (of CRLF files). */
static inline bool mm_isblank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Slow path (strtod on a copy of [s, e)), and Eisel-Lemire; see mm_text.c. */
const char *sap__mm_parse_real_slow(const char *s, const char *e, double *out);
bool sap__mm_eisel_lemire(uint64_t w, int64_t q, double *out);
/* "nan", "inf", "infinity" (any case, optional sign) at s; NULL if none. */
const char *sap__mm_parse_special(const char *s, double *out);

/* Parses a decimal real number at p: [+-]digits[.digits][(e|E)[+-]digits], at least one
 * digit in the mantissa, or nan/inf/infinity.  The text after the number must contain a
 * byte that ends it (a '\n' sentinel), so no end pointer is needed.  Returns the end of
 * the number, or NULL when no number starts at p.  The caller checks what follows. */
static inline const char *mm_parse_real(const char *p, double *out)
{
    static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *s = p;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    } else if (*p == '+') {
        p++;
    }
    const char *digits = p;
    uint64_t w = 0;
    while (mm_isdigit(*p)) {
        w = 10 * w + (uint64_t)(*p - '0');
        p++;
    }
    int64_t ndig = p - digits;
    int64_t exp10 = 0;
    if (*p == '.') {
        p++;
        const char *frac = p;
        while (mm_isdigit(*p)) {
            w = 10 * w + (uint64_t)(*p - '0');
            p++;
        }
        exp10 = -(int64_t)(p - frac);
        ndig += p - frac;
    }
    if (ndig == 0) return sap__mm_parse_special(s, out);
    if (*p == 'e' || *p == 'E') {
        p++;
        bool eneg = false;
        if (*p == '-') {
            eneg = true;
            p++;
        } else if (*p == '+') {
            p++;
        }
        if (!mm_isdigit(*p)) return NULL;
        int64_t ev = 0;
        while (mm_isdigit(*p)) {
            if (ev < 100000000) ev = 10 * ev + (*p - '0');
            p++;
        }
        exp10 += eneg ? -ev : ev;
    }
    if (ndig > 19) {
        /* leading zeros are not significant */
        for (const char *q = digits; *q == '0' || *q == '.'; q++)
            if (*q == '0') ndig--;
        if (ndig > 19) return sap__mm_parse_real_slow(s, p, out);
    }
    double v;
    if (w == 0) {
        v = 0.0;
    } else if (exp10 >= -22 && exp10 <= 22 && w <= ((uint64_t)1 << 53)) {
        v = (double)w;
        v = exp10 < 0 ? v / pow10[-exp10] : v * pow10[exp10];
    } else if (!sap__mm_eisel_lemire(w, exp10, &v)) {
        return sap__mm_parse_real_slow(s, p, out);
    }
    *out = neg ? -v : v;
    return p;
}

#endif /* SAP_MM_TEXT_H */
