/* options.c -- typed option tables (parse, defaults, help, dump) and the case-insensitive
 * name -> enum helper every *_parse function uses. */
#include "base/options.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names -> enum values ------------------------------------------------------------------ */

int sap__word_eq(const char *s, size_t len, const char *word)
{
    size_t wl = strlen(word);
    if (wl != len) return 0;
    for (size_t i = 0; i < len; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)word[i])) return 0;
    return 1;
}

int sap__name_lookup(const sap_name_value *tab, const char *s, size_t len, int *value)
{
    if (!tab || !s) return 0;
    if (len == (size_t)-1) len = strlen(s);
    for (; tab->name; tab++)
        if (sap__word_eq(s, len, tab->name)) {
            if (value) *value = tab->value;
            return 1;
        }
    return 0;
}

const char *sap__name_of(const sap_name_value *tab, int value, const char *unknown)
{
    for (; tab && tab->name; tab++)
        if (tab->value == value) return tab->name;
    return unknown;
}

/* 1 when tab[i] is the first word of its value */
static int canonical(const sap_name_value *tab, int i)
{
    for (int j = 0; j < i; j++)
        if (tab[j].value == tab[i].value) return 0;
    return 1;
}

/* appends to buf (always NUL-terminated), returns the length the full text needs */
static size_t cat(char *buf, size_t size, size_t used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(used < size ? buf + used : NULL, used < size ? size - used : 0, fmt, ap);
    va_end(ap);
    return used + (w > 0 ? (size_t)w : 0);
}

size_t sap__name_list(const sap_name_value *tab, const char *sep, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (int i = 0; tab && tab[i].name; i++)
        if (canonical(tab, i)) used = cat(buf, size, used, "%s%s", used ? sep : "", tab[i].name);
    return used;
}

sap_status sap__enum_parse(const sap_name_value *tab, const char *name, int *value)
{
    if (!name || !value) return SAP_ERR_INVALID;
    return sap__name_lookup(tab, name, (size_t)-1, value) ? SAP_OK : SAP_ERR_INVALID;
}

/* ---- value parsers ------------------------------------------------------------------------- */

/* s[0..len) as a C string in buf (0 when empty or too long) */
static int to_cstr(const char *s, size_t len, char *buf, size_t size)
{
    if (len == 0 || len >= size) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return 1;
}

static int parse_real(const char *s, size_t len, double *out)
{
    char buf[128];
    if (!to_cstr(s, len, buf, sizeof(buf))) return 0;
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end == buf || *end != '\0' || errno == ERANGE || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

/* 200000, 2e5, 200k, 0.2M, 2G, 1T: an integral value below 2^63 */
static int parse_int(const char *s, size_t len, long long *out)
{
    char buf[128];
    if (!to_cstr(s, len, buf, sizeof(buf))) return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(buf, &end, 10); /* plain decimal first: exact for every 64-bit value */
    if (end != buf && *end == '\0') {
        if (errno == ERANGE) return 0;
        *out = v;
        return 1;
    }
    double mult = 1.0;
    size_t n = len;
    switch (buf[n - 1]) {
    case 'k': case 'K': mult = 1e3; break;
    case 'm': case 'M': mult = 1e6; break;
    case 'g': case 'G': mult = 1e9; break;
    case 't': case 'T': mult = 1e12; break;
    default: break;
    }
    if (mult != 1.0) buf[--n] = '\0';
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) /* no hexadecimal, inf or nan spellings */
        if (!(isdigit((unsigned char)buf[i]) || buf[i] == '.' || buf[i] == 'e' || buf[i] == 'E' || buf[i] == '+' ||
              buf[i] == '-'))
            return 0;
    errno = 0;
    double d = strtod(buf, &end);
    if (end == buf || *end != '\0' || !isfinite(d)) return 0;
    d *= mult;
    if (d != floor(d) || fabs(d) >= 9223372036854775807.0) return 0;
    *out = (long long)d;
    return 1;
}

static int parse_u64(const char *s, size_t len, uint64_t *out)
{
    char buf[128];
    if (!to_cstr(s, len, buf, sizeof(buf))) return 0;
    int digits = 1;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)buf[i])) digits = 0;
    if (digits) {
        errno = 0;
        unsigned long long v = strtoull(buf, NULL, 10);
        if (errno == ERANGE) return 0;
        *out = (uint64_t)v;
        return 1;
    }
    long long v;
    if (!parse_int(s, len, &v) || v < 0) return 0;
    *out = (uint64_t)v;
    return 1;
}

/* bytes: "2G", "512M", "1.5k", "100000", "2e5", "4KB" (binary suffixes; fractions of a
 * byte are cut) */
static int parse_bytes(const char *s, size_t len, long long *out)
{
    char buf[128];
    if (!to_cstr(s, len, buf, sizeof(buf))) return 0;
    char *end = NULL;
    errno = 0;
    double d = strtod(buf, &end);
    if (end == buf || errno == ERANGE || !isfinite(d) || d < 0) return 0;
    double mult = 1;
    if (*end) {
        char c = (char)tolower((unsigned char)*end);
        if (c == 'k') mult = 1024.0;
        else if (c == 'm') mult = 1048576.0;
        else if (c == 'g') mult = 1073741824.0;
        else if (c == 't') mult = 1099511627776.0;
        else return 0;
        end++;
        if (*end == 'B' || *end == 'b') end++;
        if (*end) return 0;
    }
    d *= mult;
    if (d > 9.0e18 || (mult == 1 && d != floor(d))) return 0;
    *out = (long long)floor(d);
    return 1;
}

static const sap_name_value bool_words[] = {{"1", 1},   {"on", 1},  {"true", 1},  {"yes", 1}, {"0", 0},
                                            {"off", 0}, {"no", 0}, {"false", 0}, {NULL, 0}};

static void store_int(void *field, size_t size, long long v)
{
    if (size == sizeof(int64_t)) {
        int64_t x = (int64_t)v;
        memcpy(field, &x, sizeof(x));
    } else if (size == sizeof(int32_t)) {
        int32_t x = (int32_t)v;
        memcpy(field, &x, sizeof(x));
    } else if (size == sizeof(int16_t)) {
        int16_t x = (int16_t)v;
        memcpy(field, &x, sizeof(x));
    } else {
        signed char x = (signed char)v;
        memcpy(field, &x, 1);
    }
}

static long long load_int(const void *field, size_t size)
{
    if (size == sizeof(int64_t)) {
        int64_t x;
        memcpy(&x, field, sizeof(x));
        return x;
    }
    if (size == sizeof(int32_t)) {
        int32_t x;
        memcpy(&x, field, sizeof(x));
        return x;
    }
    if (size == sizeof(int16_t)) {
        int16_t x;
        memcpy(&x, field, sizeof(x));
        return x;
    }
    signed char x;
    memcpy(&x, field, 1);
    return x;
}

/* range of integer fields that fit the size */
static int int_fits(size_t size, long long v)
{
    if (size >= 8) return 1;
    if (size == 4) return v >= INT32_MIN && v <= INT32_MAX;
    if (size == 2) return v >= INT16_MIN && v <= INT16_MAX;
    return v >= -128 && v <= 127;
}

static int has_range(const sap_opt_def *d) { return d->lo < d->hi || d->kind == SAP_OPT_FRACTION; }
static double range_lo(const sap_opt_def *d) { return d->lo < d->hi ? d->lo : 0.0; }
static double range_hi(const sap_opt_def *d) { return d->lo < d->hi ? d->hi : 1.0; }

static void fmt_num(char *buf, size_t size, double v)
{
    if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, size, "%.0f", v);
    else snprintf(buf, size, "%g", v);
}

void sap__opt_accepts(const sap_opt_def *d, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    if (d->kind == SAP_OPT_ENUM) {
        used = cat(buf, size, used, "one of ");
        char list[512];
        sap__name_list(d->choices, "|", list, sizeof(list));
        cat(buf, size, used, "%s", list);
        return;
    }
    if (d->choices) {
        char list[256];
        sap__name_list(d->choices, "|", list, sizeof(list));
        used = cat(buf, size, used, "%s or ", list);
    }
    const char *what = "a value";
    switch (d->kind) {
    case SAP_OPT_INT: what = "an integer"; break;
    case SAP_OPT_UINT64: what = "a non-negative integer"; break;
    case SAP_OPT_REAL: what = "a finite real number"; break;
    case SAP_OPT_FRACTION: what = "a fraction"; break;
    case SAP_OPT_BOOL: what = "0/1/true/false/yes/no/on/off"; break;
    case SAP_OPT_BYTES: what = "a byte count (suffixes k/M/G/T)"; break;
    case SAP_OPT_STRING: what = "a text"; break;
    default: what = d->meta ? d->meta : "a value"; break;
    }
    used = cat(buf, size, used, "%s", what);
    if (has_range(d) && d->kind != SAP_OPT_BOOL && d->kind != SAP_OPT_STRING) {
        char lo[32], hi[32];
        fmt_num(lo, sizeof(lo), range_lo(d));
        fmt_num(hi, sizeof(hi), range_hi(d));
        if (isinf(range_hi(d))) cat(buf, size, used, " >= %s", lo);
        else if (isinf(range_lo(d))) cat(buf, size, used, " <= %s", hi);
        else cat(buf, size, used, " in [%s, %s]", lo, hi);
    }
}

static sap_status bad_value(const sap_opt_def *d, const char *value, size_t len, const char *noun, char *err,
                            size_t errlen)
{
    if (err && errlen) {
        char acc[600];
        sap__opt_accepts(d, acc, sizeof(acc));
        snprintf(err, errlen, "%s '%s': bad value '%.*s' (expected %s)", noun ? noun : "option", d->name,
                 (int)(len > 64 ? 64 : len), value, acc);
    }
    return SAP_ERR_INVALID;
}

sap_status sap__opt_parse(const sap_opt_def *d, void *obj, const char *value, size_t len, const char *noun,
                          char *err, size_t errlen)
{
    if (!d || !obj || !value) return SAP_ERR_INVALID;
    if (len == (size_t)-1) len = strlen(value);
    char *field = (char *)obj + d->offset;
    int word = 0;
    /* the words of the table first (for ENUM the only ones) */
    if (d->kind != SAP_OPT_CUSTOM && d->kind != SAP_OPT_STRING && sap__name_lookup(d->choices, value, len, &word)) {
        if (d->kind == SAP_OPT_REAL || d->kind == SAP_OPT_FRACTION) {
            double x = (double)word;
            memcpy(field, &x, sizeof(x));
        } else if (d->kind == SAP_OPT_UINT64) {
            uint64_t x = (uint64_t)(int64_t)word;
            memcpy(field, &x, sizeof(x));
        } else {
            store_int(field, d->size, word);
        }
        return SAP_OK;
    }
    switch (d->kind) {
    case SAP_OPT_ENUM: return bad_value(d, value, len, noun, err, errlen);
    case SAP_OPT_BOOL: {
        if (!sap__name_lookup(bool_words, value, len, &word)) return bad_value(d, value, len, noun, err, errlen);
        store_int(field, d->size, word);
        return SAP_OK;
    }
    case SAP_OPT_INT:
    case SAP_OPT_BYTES: {
        long long v = 0;
        int ok = d->kind == SAP_OPT_INT ? parse_int(value, len, &v) : parse_bytes(value, len, &v);
        if (!ok || !int_fits(d->size, v) || (has_range(d) && ((double)v < range_lo(d) || (double)v > range_hi(d))))
            return bad_value(d, value, len, noun, err, errlen);
        store_int(field, d->size, v);
        return SAP_OK;
    }
    case SAP_OPT_UINT64: {
        uint64_t v = 0;
        if (!parse_u64(value, len, &v) || (has_range(d) && ((double)v < range_lo(d) || (double)v > range_hi(d))))
            return bad_value(d, value, len, noun, err, errlen);
        memcpy(field, &v, sizeof(v));
        return SAP_OK;
    }
    case SAP_OPT_REAL:
    case SAP_OPT_FRACTION: {
        double v = 0;
        if (!parse_real(value, len, &v) || (has_range(d) && (v < range_lo(d) || v > range_hi(d))))
            return bad_value(d, value, len, noun, err, errlen);
        memcpy(field, &v, sizeof(v));
        return SAP_OK;
    }
    case SAP_OPT_STRING: {
        if (len >= d->size) return bad_value(d, value, len, noun, err, errlen);
        memcpy(field, value, len);
        field[len] = '\0';
        return SAP_OK;
    }
    case SAP_OPT_CUSTOM: {
        char buf[256];
        if (len >= sizeof(buf) || !d->parse) return bad_value(d, value, len, noun, err, errlen);
        memcpy(buf, value, len);
        buf[len] = '\0';
        if (d->parse(obj, buf) != 0) return bad_value(d, value, len, noun, err, errlen);
        return SAP_OK;
    }
    }
    return bad_value(d, value, len, noun, err, errlen);
}

int sap__opt_find(const sap_opt_def *defs, int n, const char *s, size_t len)
{
    if (!s) return -1;
    if (len == (size_t)-1) len = strlen(s);
    for (int i = 0; i < n; i++)
        if (sap__word_eq(s, len, defs[i].name) || (defs[i].alias && sap__word_eq(s, len, defs[i].alias))) return i;
    return -1;
}

size_t sap__opt_names(const sap_opt_def *defs, int n, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (int i = 0; i < n; i++)
        used = defs[i].def ? cat(buf, size, used, "%s%s (default %s)", i ? ", " : "", defs[i].name, defs[i].def)
                           : cat(buf, size, used, "%s%s", i ? ", " : "", defs[i].name);
    return used;
}

sap_status sap__opt_set(const sap_opt_def *defs, int n, void *obj, const char *name, const char *value,
                        const char *noun, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!obj || !name || !value) return SAP_ERR_INVALID;
    int i = sap__opt_find(defs, n, name, (size_t)-1);
    if (i < 0) {
        if (err && errlen) {
            char names[1024];
            sap__opt_names(defs, n, names, sizeof(names));
            snprintf(err, errlen, "unknown %s '%.64s' (valid: %s)", noun ? noun : "option", name, names);
        }
        return SAP_ERR_INVALID;
    }
    return sap__opt_parse(&defs[i], obj, value, (size_t)-1, noun, err, errlen);
}

sap_status sap__opt_defaults(const sap_opt_def *defs, int n, void *obj)
{
    for (int i = 0; i < n; i++) {
        if (!defs[i].def) continue;
        sap_status st = sap__opt_parse(&defs[i], obj, defs[i].def, (size_t)-1, NULL, NULL, 0);
        if (st < 0) return st;
    }
    return SAP_OK;
}

static void trim(const char **s, size_t *len)
{
    while (*len > 0 && isspace((unsigned char)(*s)[0])) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && isspace((unsigned char)(*s)[*len - 1])) (*len)--;
}

sap_status sap__opt_parse_list(const sap_opt_def *defs, int n, void *obj, const char *list, size_t len,
                               unsigned char *given, const char *noun, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!obj) return SAP_ERR_INVALID;
    if (!list) return SAP_OK;
    if (len == (size_t)-1) len = strlen(list);
    if (!noun) noun = "option";
    char names[1024];
    sap__opt_names(defs, n, names, sizeof(names));
    const char *p = list, *stop = list + len;
    while (p < stop) {
        const char *comma = memchr(p, ',', (size_t)(stop - p));
        const char *item = p;
        size_t ilen = comma ? (size_t)(comma - p) : (size_t)(stop - p);
        p = comma ? comma + 1 : stop;
        trim(&item, &ilen);
        if (ilen == 0) continue; /* empty item, e.g. a trailing comma */
        const char *eq = memchr(item, '=', ilen);
        if (!eq) {
            if (err) snprintf(err, errlen, "'%.*s' is not %s=value (%ss: %s)", (int)(ilen > 64 ? 64 : ilen), item, noun,
                              noun, names);
            return SAP_ERR_INVALID;
        }
        const char *key = item, *value = eq + 1;
        size_t klen = (size_t)(eq - item), vlen = ilen - klen - 1;
        trim(&key, &klen);
        trim(&value, &vlen);
        int i = sap__opt_find(defs, n, key, klen);
        if (i < 0) {
            if (err) snprintf(err, errlen, "unknown %s '%.*s' (%ss: %s)", noun, (int)(klen > 64 ? 64 : klen), key,
                              noun, names);
            return SAP_ERR_INVALID;
        }
        if (given && given[i]) {
            if (err) snprintf(err, errlen, "%s '%s' given twice (%ss: %s)", noun, defs[i].name, noun, names);
            return SAP_ERR_INVALID;
        }
        sap_status st = sap__opt_parse(&defs[i], obj, value, vlen, noun, err, errlen);
        if (st < 0) return st;
        if (given) given[i] = 1;
    }
    return SAP_OK;
}

void sap__opt_format(const sap_opt_def *d, const void *obj, char *buf, size_t size)
{
    if (!size) return;
    buf[0] = '\0';
    const char *field = (const char *)obj + d->offset;
    switch (d->kind) {
    case SAP_OPT_INT:
    case SAP_OPT_BYTES:
    case SAP_OPT_BOOL:
    case SAP_OPT_ENUM: {
        long long v = load_int(field, d->size);
        const char *w = (v >= INT32_MIN && v <= INT32_MAX) ? sap__name_of(d->choices, (int)v, NULL) : NULL;
        if (w) snprintf(buf, size, "%s", w);
        else snprintf(buf, size, "%lld", v);
        return;
    }
    case SAP_OPT_UINT64: {
        uint64_t v;
        memcpy(&v, field, sizeof(v));
        snprintf(buf, size, "%llu", (unsigned long long)v);
        return;
    }
    case SAP_OPT_REAL:
    case SAP_OPT_FRACTION: {
        double v;
        memcpy(&v, field, sizeof(v));
        const char *w = (v == floor(v) && fabs(v) < 1e9) ? sap__name_of(d->choices, (int)v, NULL) : NULL;
        if (w) snprintf(buf, size, "%s", w);
        else snprintf(buf, size, "%.17g", v);
        return;
    }
    case SAP_OPT_STRING: snprintf(buf, size, "%.*s", (int)d->size, field); return;
    case SAP_OPT_CUSTOM:
        if (d->print) d->print(obj, buf, size);
        return;
    }
}

/* 1 when the formatted value is a JSON number */
static int json_number(const char *s)
{
    if (!*s) return 0;
    char *end = NULL;
    double v = strtod(s, &end);
    return *end == '\0' && isfinite(v) && (isdigit((unsigned char)s[0]) || s[0] == '-');
}

size_t sap__opt_dump(const sap_opt_def *defs, int n, const void *obj, int json, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    if (json) used = cat(buf, size, used, "{");
    for (int i = 0; i < n; i++) {
        char v[256];
        sap__opt_format(&defs[i], obj, v, sizeof(v));
        if (!json) {
            used = cat(buf, size, used, "%s=%s\n", defs[i].name, v);
            continue;
        }
        used = cat(buf, size, used, "%s\"%s\": ", i ? ", " : "", defs[i].name);
        if (json_number(v)) {
            used = cat(buf, size, used, "%s", v);
        } else {
            used = cat(buf, size, used, "\"");
            for (const char *c = v; *c; c++)
                used = (*c == '"' || *c == '\\') ? cat(buf, size, used, "\\%c", *c)
                       : ((unsigned char)*c < 0x20) ? cat(buf, size, used, "\\u%04x", (unsigned)*c)
                                                     : cat(buf, size, used, "%c", *c);
            used = cat(buf, size, used, "\"");
        }
    }
    if (json) used = cat(buf, size, used, "}");
    return used;
}

/* "auto|none|DELTA", "1|0", "sap-d|sap-c" */
static void accepted_short(const sap_opt_def *d, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    if (d->choices) used = sap__name_list(d->choices, "|", buf, size);
    if (d->kind == SAP_OPT_ENUM) return;
    const char *meta = d->meta;
    if (!meta) {
        switch (d->kind) {
        case SAP_OPT_BOOL: meta = "1|0"; break;
        case SAP_OPT_INT:
        case SAP_OPT_UINT64: meta = "N"; break;
        case SAP_OPT_BYTES: meta = "BYTES"; break;
        case SAP_OPT_STRING: meta = "TEXT"; break;
        default: meta = "X"; break;
        }
    }
    cat(buf, size, used, "%s%s", used ? "|" : "", meta);
}

size_t sap__opt_help(const sap_opt_def *defs, int n, const char *indent, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const sap_opt_def *d = &defs[i];
        char acc[256], lhs[300];
        accepted_short(d, acc, sizeof(acc));
        if (d->alias) snprintf(lhs, sizeof(lhs), "%s=%s (or %s=)", d->name, acc, d->alias);
        else snprintf(lhs, sizeof(lhs), "%s=%s", d->name, acc);
        used = cat(buf, size, used, "%s%-22s", indent ? indent : "", lhs);
        if (strlen(lhs) > 22) used = cat(buf, size, used, "\n%s%-22s", indent ? indent : "", "");
        used = cat(buf, size, used, " %s", d->help ? d->help : "");
        if (d->def) used = cat(buf, size, used, " (default %s)", d->def);
        used = cat(buf, size, used, "\n");
    }
    return used;
}

/* ---- once, spin lock ------------------------------------------------------------------------- */

void sap__once(atomic_int *flag, void (*fn)(void))
{
    if (atomic_load_explicit(flag, memory_order_acquire) == 2) return;
    int expected = 0;
    if (atomic_compare_exchange_strong(flag, &expected, 1)) {
        fn();
        atomic_store_explicit(flag, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(flag, memory_order_acquire) != 2) {
    }
}

void sap__spin_lock(atomic_flag *lock)
{
    while (atomic_flag_test_and_set_explicit(lock, memory_order_acquire)) {
    }
}

void sap__spin_unlock(atomic_flag *lock) { atomic_flag_clear_explicit(lock, memory_order_release); }
