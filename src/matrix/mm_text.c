/* mm_text.c -- whole-file loading (plain or gzip), the buffered output sink, and the
 * number conversions of the Matrix Market reader and writer (see mm_text.h). */
#define _POSIX_C_SOURCE 200809L
#include "matrix/mm_text.h"

#include "matrix/mm_pow5.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef SAP_HAVE_ZLIB
#include <zlib.h>
#endif

/* ---- 128-bit arithmetic ---------------------------------------------------------------- */

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 mm_u128;
static inline void mm_mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    mm_u128 p = (mm_u128)a * b;
    *hi = (uint64_t)(p >> 64);
    *lo = (uint64_t)p;
}
#else
static inline void mm_mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *lo = (mid << 32) | (uint32_t)p00;
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
#endif

static inline int mm_clz64(uint64_t x)
{
#if defined(__GNUC__)
    return __builtin_clzll(x);
#else
    int n = 0;
    while (!(x & ((uint64_t)1 << 63))) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

/* floor(q * log2(5)) for q in [-342, 340] */
static inline int32_t mm_floor_log2_pow5(int32_t q) { return ((217706 * q) >> 16) - q; }

/* ---- parsing --------------------------------------------------------------------------- */

/* Eisel-Lemire (Lemire, "Number Parsing at a Gigabyte per Second", Software: Practice and
 * Experience 51(8), 2021; the algorithm of fast_float): the double nearest to w * 10^q,
 * w != 0 with at most 19 digits.  Returns false in the rare case it cannot decide. */
bool sap__mm_eisel_lemire(uint64_t w, int64_t q, double *out)
{
    if (w == 0 || q < SAP_MM_POW5_MIN) {
        *out = 0.0;
        return true;
    }
    if (q > SAP_MM_POW5_MAX) {
        *out = HUGE_VAL;
        return true;
    }
    int lz = mm_clz64(w);
    w <<= lz;
    size_t idx = 2 * (size_t)(q - SAP_MM_POW5_MIN);
    uint64_t hi, lo;
    mm_mul64(w, mm_pow5[idx], &hi, &lo);
    const uint64_t precision_mask = UINT64_MAX >> 55; /* 52 mantissa bits + 3 */
    if ((hi & precision_mask) == precision_mask) {
        uint64_t hi2, lo2;
        mm_mul64(w, mm_pow5[idx + 1], &hi2, &lo2);
        lo += hi2;
        if (hi2 > lo) hi++;
    }
    if (lo == UINT64_MAX && !(q >= -27 && q <= 55)) return false;
    int upperbit = (int)(hi >> 63);
    int shift = upperbit + 64 - 52 - 3;
    uint64_t mant = hi >> shift;
    int32_t power2 = (int32_t)(((217706 * (int32_t)q) >> 16) + 63) + upperbit - lz + 1023;
    if (power2 <= 0) { /* subnormal */
        if (-power2 + 1 >= 64) {
            *out = 0.0;
            return true;
        }
        mant >>= -power2 + 1;
        mant += (mant & 1);
        mant >>= 1;
        power2 = mant < ((uint64_t)1 << 52) ? 0 : 1;
    } else {
        if (lo <= 1 && q >= -4 && q <= 23 && (mant & 3) == 1) {
            if ((mant << shift) == hi) mant &= ~(uint64_t)1; /* exactly halfway: to even */
        }
        mant += (mant & 1);
        mant >>= 1;
        if (mant >= ((uint64_t)2 << 52)) {
            mant = (uint64_t)1 << 52;
            power2++;
        }
        mant &= ~((uint64_t)1 << 52);
        if (power2 >= 0x7FF) {
            *out = HUGE_VAL;
            return true;
        }
    }
    uint64_t bits = mant | ((uint64_t)power2 << 52);
    memcpy(out, &bits, sizeof(bits));
    return true;
}

static inline char mm_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

static bool mm_match(const char *s, const char *word)
{
    for (; *word; s++, word++)
        if (mm_lower(*s) != *word) return false;
    return true;
}

const char *sap__mm_parse_special(const char *s, double *out)
{
    bool neg = false;
    const char *p = s;
    if (*p == '-') {
        neg = true;
        p++;
    } else if (*p == '+') {
        p++;
    }
    double v;
    if (mm_match(p, "nan")) {
        v = NAN;
        p += 3;
    } else if (mm_match(p, "infinity")) {
        v = HUGE_VAL;
        p += 8;
    } else if (mm_match(p, "inf")) {
        v = HUGE_VAL;
        p += 3;
    } else {
        return NULL;
    }
    *out = neg ? -v : v;
    return p;
}

const char *sap__mm_parse_real_slow(const char *s, const char *e, double *out)
{
    char buf[4096];
    size_t n = (size_t)(e - s);
    if (n >= sizeof(buf)) return NULL; /* a number of more than 4095 characters */
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + n) return NULL; /* cannot happen in the "C" locale */
    *out = v;
    return e;
}

int64_t sap__mm_count_newlines(const char *p, size_t n)
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

int64_t sap__mm_memory_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && size > 0 && (int64_t)pages <= INT64_MAX / size) return (int64_t)pages * size;
    return (int64_t)1 << 47;
}

/* ---- loading ---------------------------------------------------------------------------- */

static bool ends_with_gz(const char *path)
{
    size_t n = strlen(path);
    return n >= 3 && path[n - 3] == '.' && (path[n - 2] == 'g' || path[n - 2] == 'G') &&
           (path[n - 1] == 'z' || path[n - 1] == 'Z');
}

/* Grows *buf (holding len bytes, capacity *cap + SAP_MM_PAD) to at least need bytes:
 * exactly need the first time, doubling afterwards. */
static sap_status grow(sap_context *ctx, char **buf, size_t len, size_t *cap, size_t need)
{
    size_t ncap = *cap ? *cap : need; /* the first size is a good guess: take it as is */
    while (ncap < need) {
        if (ncap > (SIZE_MAX - SAP_MM_PAD) / 2) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "file too large");
        ncap *= 2;
    }
    char *nb = sap__alloc(ctx, ncap + SAP_MM_PAD, 1, false, __FILE__, __LINE__);
    if (!nb) return SAP_ERR_OUT_OF_MEMORY;
    if (*buf) {
        memcpy(nb, *buf, len);
        sap__free(ctx, *buf);
    }
    *buf = nb;
    *cap = ncap;
    return SAP_OK;
}

sap_status sap__mm_load(sap_context *ctx, const char *path, char **text, size_t *len, int *gzipped)
{
    SAP_CHECK_CTX(ctx);
    *text = NULL;
    *len = 0;
    if (gzipped) *gzipped = 0;
    sap_status st = SAP_OK;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    FILE *f = NULL;
#ifdef SAP_HAVE_ZLIB
    gzFile gz = NULL;
#endif
#ifndef SAP_HAVE_ZLIB
    if (ends_with_gz(path))
        SAP_FAIL(ctx, SAP_ERR_NOT_COMPILED, "%s: reading .gz files needs zlib, and this build of sap has none", path);
#endif
    f = fopen(path, "rb");
    if (!f) SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    int64_t fsize = -1;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode)) fsize = (int64_t)sb.st_size;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode))
        SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot read: %s", path, strerror(EISDIR));
    unsigned char magic[2] = {0, 0};
    size_t got = fread(magic, 1, 2, f);
    if (got < 2 && ferror(f)) SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    bool is_gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;

    if (!is_gz) {
        /* plain text: one read of the whole file where its size is known */
        size_t hint = fsize >= 0 ? (size_t)fsize : (size_t)1 << 16;
        if (fsize >= 0 && (uint64_t)fsize > (uint64_t)(SIZE_MAX / 2))
            SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "%s: file of %lld bytes is too large", path, (long long)fsize);
        SAP_TRY(grow(ctx, &buf, 0, &cap, hint + 1));
        memcpy(buf, magic, got);
        n = got;
        for (;;) {
            if (n == cap) SAP_TRY(grow(ctx, &buf, n, &cap, cap + 1));
            size_t r = fread(buf + n, 1, cap - n, f);
            n += r;
            if (r == 0) {
                if (ferror(f)) SAP_FAIL(ctx, SAP_ERR_IO, "%s: read error: %s", path, strerror(errno));
                break;
            }
        }
        fclose(f);
        f = NULL;
    } else {
#ifndef SAP_HAVE_ZLIB
        SAP_FAIL(ctx, SAP_ERR_NOT_COMPILED, "%s: the file is gzip-compressed but this build of sap has no zlib", path);
#else
        if (gzipped) *gzipped = 1;
        /* ISIZE (the last 4 bytes: uncompressed size mod 2^32) as the first guess */
        size_t hint = 0;
        if (fsize >= 18 && fseek(f, -4, SEEK_END) == 0) {
            unsigned char t[4];
            if (fread(t, 1, 4, f) == 4) {
                uint64_t isize =
                    (uint64_t)t[0] | ((uint64_t)t[1] << 8) | ((uint64_t)t[2] << 16) | ((uint64_t)t[3] << 24);
                /* deflate expands at most ~1032x; beyond 4 GiB ISIZE wraps around */
                if (isize >= (uint64_t)fsize / 2 && isize <= (uint64_t)fsize * 1032) hint = (size_t)isize;
            }
        }
        if (hint == 0 && fsize > 0) hint = (size_t)fsize * 4;
        fclose(f);
        f = NULL;
        gz = gzopen(path, "rb");
        if (!gz) SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot open: %s", path, errno ? strerror(errno) : "zlib error");
        gzbuffer(gz, 1 << 20);
        SAP_TRY(grow(ctx, &buf, 0, &cap, hint + 1));
        for (;;) {
            if (n == cap) SAP_TRY(grow(ctx, &buf, n, &cap, cap + 1));
            size_t want = cap - n;
            if (want > (1u << 30)) want = 1u << 30;
            int r = gzread(gz, buf + n, (unsigned)want);
            if (r < 0) break; /* the error is examined below */
            n += (size_t)r;
            if ((size_t)r < want) break;
        }
        int zerr = Z_OK;
        const char *zmsg = gzerror(gz, &zerr);
        if (zerr == Z_ERRNO) SAP_FAIL(ctx, SAP_ERR_IO, "%s: read error: %s", path, strerror(errno));
        if (zerr != Z_OK)
            SAP_FAIL(ctx, SAP_ERR_TRUNCATED, "%s: gzip stream %s after %zu bytes of text (%s)", path,
                     zerr == Z_BUF_ERROR ? "cut short" : "corrupt", n, zmsg ? zmsg : "zlib error");
        int cr = gzclose_r(gz);
        gz = NULL;
        if (cr == Z_BUF_ERROR)
            SAP_FAIL(ctx, SAP_ERR_TRUNCATED, "%s: gzip stream cut short after %zu bytes of text", path, n);
        if (cr != Z_OK) SAP_FAIL(ctx, SAP_ERR_IO, "%s: error closing the gzip stream (%d)", path, cr);
#endif
    }
    memset(buf + n, 0, SAP_MM_PAD);
    *text = buf;
    *len = n;
    return SAP_OK;
cleanup:
    if (f) fclose(f);
#ifdef SAP_HAVE_ZLIB
    if (gz) gzclose_r(gz);
#endif
    sap__free(ctx, buf);
    return st;
}

/* ---- output sink ---------------------------------------------------------------------- */

#define SINK_CAP ((size_t)1 << 20)

sap_status sap__mm_sink_open(sap_context *ctx, const char *path, sap_mm_sink *s)
{
    memset(s, 0, sizeof(*s));
    s->ctx = ctx;
    s->path = path;
    sap_status st = SAP_OK;
    if (ends_with_gz(path)) {
#ifdef SAP_HAVE_ZLIB
        errno = 0;
        gzFile gz = gzopen(path, "wb1"); /* level 1: ~5x faster than 6, files ~25% larger */
        if (!gz)
            return SAP_ERROR(ctx, SAP_ERR_IO, "%s: cannot open for writing: %s", path,
                             errno ? strerror(errno) : "zlib error");
        gzbuffer(gz, 1 << 20);
        s->gz = gz;
#else
        return SAP_ERROR(ctx, SAP_ERR_NOT_COMPILED, "%s: writing .gz files needs zlib, and this build of sap has none",
                         path);
#endif
    } else {
        FILE *f = fopen(path, "wb");
        if (!f) return SAP_ERROR(ctx, SAP_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        s->file = f;
    }
    SAP_ALLOC(ctx, s->buf, SINK_CAP);
    s->cap = SINK_CAP;
    return SAP_OK;
cleanup:
    sap__mm_sink_close(s, 0);
    return st;
}

static sap_status sink_flush(sap_mm_sink *s)
{
    if (s->len == 0) return SAP_OK;
    size_t n = s->len;
    s->len = 0;
#ifdef SAP_HAVE_ZLIB
    if (s->gz) {
        const char *p = s->buf;
        while (n > 0) {
            unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
            int w = gzwrite((gzFile)s->gz, p, chunk);
            if (w <= 0) {
                int zerr = Z_OK;
                const char *msg = gzerror((gzFile)s->gz, &zerr);
                return SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error: %s", s->path,
                                 zerr == Z_ERRNO ? strerror(errno) : (msg ? msg : "zlib error"));
            }
            p += w;
            n -= (size_t)w;
        }
        return SAP_OK;
    }
#endif
    if (fwrite(s->buf, 1, n, (FILE *)s->file) != n)
        return SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error: %s", s->path, strerror(errno));
    return SAP_OK;
}

sap_status sap__mm_sink_write(sap_mm_sink *s, const char *p, size_t n)
{
    while (n > 0) {
        if (s->len == s->cap) {
            sap_status st = sink_flush(s);
            if (st < 0) return st;
        }
        size_t k = s->cap - s->len < n ? s->cap - s->len : n;
        memcpy(s->buf + s->len, p, k);
        s->len += k;
        p += k;
        n -= k;
    }
    return SAP_OK;
}

sap_status sap__mm_sink_close(sap_mm_sink *s, int ok)
{
    sap_status st = SAP_OK;
    if (ok && s->buf) st = sink_flush(s);
    if (s->file) {
        if (fclose((FILE *)s->file) != 0 && st == SAP_OK && ok)
            st = SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error: %s", s->path, strerror(errno));
        s->file = NULL;
    }
#ifdef SAP_HAVE_ZLIB
    if (s->gz) {
        int r = gzclose_w((gzFile)s->gz);
        if (r != Z_OK && st == SAP_OK && ok)
            st = SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error (zlib %d): %s", s->path, r,
                           r == Z_ERRNO ? strerror(errno) : "compression failed");
        s->gz = NULL;
    }
#endif
    sap__free(s->ctx, s->buf);
    s->buf = NULL;
    if (!ok || st < 0) remove(s->path);
    return st;
}

/* ---- formatting ------------------------------------------------------------------------- */

static const uint64_t mm_pow10_u64[20] = {1ULL,
                                          10ULL,
                                          100ULL,
                                          1000ULL,
                                          10000ULL,
                                          100000ULL,
                                          1000000ULL,
                                          10000000ULL,
                                          100000000ULL,
                                          1000000000ULL,
                                          10000000000ULL,
                                          100000000000ULL,
                                          1000000000000ULL,
                                          10000000000000ULL,
                                          100000000000000ULL,
                                          1000000000000000ULL,
                                          10000000000000000ULL,
                                          100000000000000000ULL,
                                          1000000000000000000ULL,
                                          10000000000000000000ULL};

/* With |v| = m * 2^e (2^52 <= m < 2^53): the integer part of |v| * 10^s in *ip and the
 * next 64 bits of its fraction in *frac, to within 1/8 unit of the last fraction bit
 * (the table's relative error is below 2^-127 and |v| * 10^s < 2^61). */
static bool scaled(uint64_t m, int32_t e, int32_t s, uint64_t *ip, uint64_t *frac)
{
#if defined(__SIZEOF_INT128__)
    if (s < SAP_MM_POW5_MIN || s > SAP_MM_POW5_MAX) return false;
    size_t idx = 2 * (size_t)(s - SAP_MM_POW5_MIN);
    /* 10^s = 5^s 2^s ~ T 2^(floor(s log2 5) - 127 + s); the product m*T is H:lo (192 bits) */
    mm_u128 a = (mm_u128)m * mm_pow5[idx];
    mm_u128 b = (mm_u128)m * mm_pow5[idx + 1];
    mm_u128 H = a + (b >> 64);
    uint64_t lo = (uint64_t)b;
    int32_t E = e + s + mm_floor_log2_pow5(s) - 127; /* |v| 10^s = (H:lo) 2^E */
    int32_t t = -E - 64;                             /* |v| 10^s = (H:lo) >> (t + 64) */
    if (t < 0 || t > 127) return false;
    mm_u128 I = H >> t;
    if (I >> 64) return false;
    *ip = (uint64_t)I;
    if (t >= 64)
        *frac = (uint64_t)(H >> (t - 64));
    else if (t == 0)
        *frac = lo;
    else
        *frac = ((uint64_t)H << (64 - t)) | (lo >> t);
    return true;
#else
    (void)m, (void)e, (void)s, (void)ip, (void)frac;
    return false;
#endif
}

static int fallback_format(char *out, double v, int precision)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof(tmp), "%.*g", precision, v);
    if (n < 0) n = 0;
    if (n > SAP_MM_NUMBER_MAX - 1) n = SAP_MM_NUMBER_MAX - 1;
    memcpy(out, tmp, (size_t)n);
    return n;
}

int sap__mm_format_real(char *out, double v, int precision)
{
    if (precision < 1) precision = 1;
    if (precision > 17) return fallback_format(out, v, precision);
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    bool neg = bits >> 63;
    uint64_t fracbits = bits & (((uint64_t)1 << 52) - 1);
    int32_t bexp = (int32_t)((bits >> 52) & 0x7FF);
    char *o = out;
    if (bexp == 0x7FF || bexp == 0) {
        if (bexp == 0 && fracbits == 0) { /* +-0 */
            if (neg) *o++ = '-';
            *o++ = '0';
            return (int)(o - out);
        }
        return fallback_format(out, v, precision); /* nan, inf, subnormal */
    }
    uint64_t m = fracbits | ((uint64_t)1 << 52);
    int32_t e = bexp - 1075; /* |v| = m 2^e */
    const int P = precision;
    const uint64_t lowN = mm_pow10_u64[P - 1], highN = mm_pow10_u64[P];
    uint64_t N;
    int32_t k;
    /* integers below 2^53 that have at most P digits print exactly */
    if (e <= 0 && e > -53 && (m & ((((uint64_t)1) << -e) - 1)) == 0 && (m >> -e) < highN) {
        uint64_t iv = m >> -e;
        if (neg) *o++ = '-';
        return (int)(o - out) + sap__mm_format_u64(o, iv);
    }
    /* k: the decimal exponent, floor(log10 |v|) or one less */
    k = ((e + 52) * 78913) >> 18;
    uint64_t ip, frac;
    int32_t s = P - 1 - k;
    if (!scaled(m, e, s, &ip, &frac)) return fallback_format(out, v, precision);
    if (ip >= highN) {
        k++;
        s--;
        if (!scaled(m, e, s, &ip, &frac)) return fallback_format(out, v, precision);
    }
    if (ip < lowN || ip >= highN) return fallback_format(out, v, precision);
    const uint64_t half = (uint64_t)1 << 63;
    if (frac > half - 4 && frac < half + 4) return fallback_format(out, v, precision); /* near a tie */
    N = ip + (frac > half);
    if (N == highN) {
        N = lowN;
        k++;
    }
    /* digits of N (P of them), trailing zeros stripped to L */
    char d[20];
    for (int t = P - 1; t >= 0; t--) {
        d[t] = (char)('0' + (int)(N % 10));
        N /= 10;
    }
    int L = P;
    while (L > 1 && d[L - 1] == '0') L--;
    if (neg) *o++ = '-';
    int X = k;
    if (X < -4 || X >= P) {
        *o++ = d[0];
        if (L > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)(L - 1));
            o += L - 1;
        }
        *o++ = 'e';
        int ax = X;
        if (ax < 0) {
            *o++ = '-';
            ax = -ax;
        } else {
            *o++ = '+';
        }
        if (ax < 10) *o++ = '0';
        o += sap__mm_format_u64(o, (uint64_t)ax);
    } else if (X >= 0) {
        memcpy(o, d, (size_t)(X + 1));
        o += X + 1;
        if (L > X + 1) {
            *o++ = '.';
            memcpy(o, d + X + 1, (size_t)(L - X - 1));
            o += L - X - 1;
        }
    } else {
        *o++ = '0';
        *o++ = '.';
        for (int t = 0; t < -X - 1; t++) *o++ = '0';
        memcpy(o, d, (size_t)L);
        o += L;
    }
    return (int)(o - out);
}
