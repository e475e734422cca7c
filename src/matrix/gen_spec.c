/* gen_spec.c -- generator spec strings "gen:NAME:key=value,..." (sap_gen_spec), their
 * help text, and sap_matrix_load (a spec or a Matrix Market file).
 *
 * Generator names and keys are case-insensitive.  Integer values accept plain decimal
 * (200000), exponent form (2e5) and the suffixes k = 1e3, M = 1e6, G = 1e9 (200k, 1.5M)
 * as long as the value is integral; real values are anything strtod reads that is
 * finite; booleans are 0/1/true/false/yes/no/on/off.  Every error is SAP_ERR_INVALID
 * with a message that names the key and lists the valid ones. */
#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { KEY_INT, KEY_REAL, KEY_SEED, KEY_BOOL } key_type;

typedef struct key_def {
    const char *name;
    key_type type;
    const char *def; /* default value text; NULL = required (or see the Poisson dims) */
} key_def;

enum { GEN_BANDED, GEN_SYNTHETIC, GEN_POISSON2D, GEN_POISSON3D, GEN_RADIATIVE, GEN_BLOCKTRIDIAG, GEN_COUNT };

#define GEN_MAX_KEYS 6

typedef struct gen_def {
    const char *name;
    int nkeys;
    key_def keys[GEN_MAX_KEYS];
} gen_def;

/* Keep in step with the help text below. */
static const gen_def gen_defs[GEN_COUNT] = {
    [GEN_BANDED] = {"banded",
                    5,
                    {{"n", KEY_INT, NULL},
                     {"k", KEY_INT, NULL},
                     {"d", KEY_REAL, "1"},
                     {"sym", KEY_BOOL, "0"},
                     {"seed", KEY_SEED, "1"}}},
    [GEN_SYNTHETIC] = {"synthetic",
                       5,
                       {{"n", KEY_INT, NULL},
                        {"k", KEY_INT, NULL},
                        {"d", KEY_REAL, "1"},
                        {"fill", KEY_REAL, "1"},
                        {"seed", KEY_SEED, "1"}}},
    /* n sets every dimension; nx, ny (nz) override it */
    [GEN_POISSON2D] = {"poisson2d", 3, {{"n", KEY_INT, NULL}, {"nx", KEY_INT, NULL}, {"ny", KEY_INT, NULL}}},
    [GEN_POISSON3D] = {"poisson3d",
                       4,
                       {{"n", KEY_INT, NULL}, {"nx", KEY_INT, NULL}, {"ny", KEY_INT, NULL}, {"nz", KEY_INT, NULL}}},
    [GEN_RADIATIVE] = {"radiative",
                       5,
                       {{"n", KEY_INT, NULL},
                        {"albedo", KEY_REAL, "0.75"},
                        {"tau", KEY_REAL, "1000"},
                        {"bw", KEY_INT, "-1"},
                        {"shift", KEY_REAL, "0"}}},
    [GEN_BLOCKTRIDIAG] = {"blocktridiag",
                          4,
                          {{"nb", KEY_INT, NULL}, {"k", KEY_INT, NULL}, {"d", KEY_REAL, "1"}, {"seed", KEY_SEED, "1"}}},
};

static const char help_text[] =
    "Generator specs: gen:NAME:key=value,key=value,...\n"
    "(names and keys are case-insensitive; integers accept 200000, 2e5, 200k, 1.5M;\n"
    "keys in [brackets] are optional, shown with their defaults)\n"
    "\n"
    "  gen:banded:N=,K=[,d=1,sym=0,seed=1]\n"
    "      dense banded N x N matrix of half-bandwidth K (K >= N is clamped to N-1):\n"
    "      off-diagonal entries uniform in [-1,1], a_ii = d * sum_{j!=i} |a_ij|, so the\n"
    "      degree of diagonal dominance is d; sym=1 makes it symmetric (SPD for d > 1)\n"
    "  gen:synthetic:N=,K=[,d=1,fill=1,seed=1]\n"
    "      banded as above with each off-diagonal band entry kept with probability\n"
    "      fill in (0,1], then hidden by random row and column permutations\n"
    "  gen:poisson2d:n=  or  gen:poisson2d:nx=,ny=\n"
    "      5-point Laplacian (4 on the diagonal, -1 off it) on an nx x ny grid;\n"
    "      n sets both dimensions, nx/ny override it\n"
    "  gen:poisson3d:n=  or  gen:poisson3d:nx=,ny=,nz=\n"
    "      7-point Laplacian (6 on the diagonal, -1 off it) on an nx x ny x nz grid\n"
    "  gen:radiative:n=[,albedo=0.75,tau=1000,bw=-1,shift=0]\n"
    "      Galerkin matrix (n elements) of the stellar-atmosphere radiative-transfer\n"
    "      operator albedo/2 int_0^tau E1(|t-s|) phi(s) ds, minus shift*I; entries with\n"
    "      |i-j| > bw dropped; bw=-1 takes the paper's bw = n (1 - exp(-n/(tc tau))),\n"
    "      tc = max(n/100, 5): about 100 n / tau for n >= 500, so the default tau\n"
    "      gives bw ~ n/10 (raise tau or set bw for large n); symmetric Toeplitz;\n"
    "      albedo=0.75,shift=0.75 is the shift-and-invert matrix of the SLEPc paper\n"
    "  gen:blocktridiag:nb=,k=[,d=1,seed=1]\n"
    "      nb x nb block rows of dense k x k blocks (diagonal and both off-diagonal\n"
    "      blocks), off-diagonal entries uniform in [-1,1], degree of diagonal\n"
    "      dominance d\n"
    "\n"
    "Examples: gen:banded:N=200000,K=200,d=1   gen:synthetic:N=400000,K=100,fill=0.2\n"
    "          gen:poisson3d:n=160   gen:radiative:n=10000   gen:blocktridiag:nb=100,k=64\n";

const char *sap_gen_spec_help(void) { return help_text; }

/* ---- small string helpers ------------------------------------------------------------------- */

/* Case-insensitive comparison of s[0..len) with the NUL-terminated word. */
static int word_equals(const char *s, size_t len, const char *word)
{
    size_t wl = strlen(word);
    if (wl != len) return 0;
    for (size_t i = 0; i < len; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)word[i])) return 0;
    return 1;
}

static void trim(const char **s, size_t *len)
{
    while (*len > 0 && isspace((unsigned char)(*s)[0])) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && isspace((unsigned char)(*s)[*len - 1])) (*len)--;
}

/* "n, k, d (default 1), ..." */
static void key_list(const gen_def *g, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->nkeys && used < size; i++) {
        const key_def *k = &g->keys[i];
        int w = k->def ? snprintf(buf + used, size - used, "%s%s (default %s)", i ? ", " : "", k->name, k->def)
                       : snprintf(buf + used, size - used, "%s%s", i ? ", " : "", k->name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* ---- value parsing ------------------------------------------------------------------------------ */

typedef struct key_value {
    int set;
    long long i;
    double r;
    uint64_t u;
} key_value;

/* Copies s[0..len) into buf as a C string; 0 when it does not fit or is empty. */
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
    if (end == buf || *end != '\0' || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

static int parse_int(const char *s, size_t len, long long *out)
{
    char buf[128];
    if (!to_cstr(s, len, buf, sizeof(buf))) return 0;
    /* plain decimal first (exact for every 64-bit value) */
    char *end = NULL;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (end != buf && *end == '\0') {
        if (errno == ERANGE) return 0;
        *out = v;
        return 1;
    }
    /* exponent form and suffixes: an integral value below 2^63 */
    double mult = 1.0;
    size_t n = len;
    switch (buf[n - 1]) {
    case 'k': case 'K': mult = 1e3; break;
    case 'm': case 'M': mult = 1e6; break;
    case 'g': case 'G': mult = 1e9; break;
    default: break;
    }
    if (mult != 1.0) buf[--n] = '\0';
    if (n == 0) return 0;
    /* no hexadecimal, inf or nan spellings */
    for (size_t i = 0; i < n; i++)
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

static int parse_seed(const char *s, size_t len, uint64_t *out)
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

static int parse_bool(const char *s, size_t len, long long *out)
{
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (word_equals(s, len, yes[i])) {
            *out = 1;
            return 1;
        }
        if (word_equals(s, len, no[i])) {
            *out = 0;
            return 1;
        }
    }
    return 0;
}

static int parse_value(const key_def *k, const char *s, size_t len, key_value *v)
{
    switch (k->type) {
    case KEY_INT: return parse_int(s, len, &v->i);
    case KEY_REAL: return parse_real(s, len, &v->r);
    case KEY_SEED: return parse_seed(s, len, &v->u);
    case KEY_BOOL: return parse_bool(s, len, &v->i);
    }
    return 0;
}

static const char *type_name(key_type t)
{
    switch (t) {
    case KEY_INT: return "an integer";
    case KEY_REAL: return "a finite real number";
    case KEY_SEED: return "a non-negative integer";
    case KEY_BOOL: return "0/1/true/false/yes/no/on/off";
    }
    return "a value";
}

/* ---- the spec ----------------------------------------------------------------------------------- */

/* Index of key 'name' in g, or -1. */
static int find_key(const gen_def *g, const char *name)
{
    for (int i = 0; i < g->nkeys; i++)
        if (!strcmp(g->keys[i].name, name)) return i;
    return -1;
}

/* Poisson dimension: its own key if given, else n, else a "missing key" error. */
static sap_status grid_dim(sap_context *ctx, const gen_def *g, const key_value *vals, const char *key, sap_int *dim)
{
    int k = find_key(g, key), kn = find_key(g, "n");
    if (vals[k].set) *dim = (sap_int)vals[k].i;
    else if (vals[kn].set) *dim = (sap_int)vals[kn].i;
    else {
        char keys[256];
        key_list(g, keys, sizeof(keys));
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: missing key '%s' (give n, or every one of nx, ny%s; keys: %s)",
                         g->name, key, g == &gen_defs[GEN_POISSON3D] ? ", nz" : "", keys);
    }
    return SAP_OK;
}

sap_status sap_gen_spec(sap_context *ctx, const char *spec, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_spec: output pointer A is NULL");
    *A = NULL;
    if (!spec) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_spec: spec is NULL");
    if (strncmp(spec, "gen:", 4) != 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "'%.64s' is not a generator spec (gen:NAME:key=value,...)", spec);

    /* the generator name */
    const char *name = spec + 4, *colon = strchr(name, ':');
    size_t name_len = colon ? (size_t)(colon - name) : strlen(name);
    trim(&name, &name_len);
    const gen_def *g = NULL;
    int gi = 0;
    for (; gi < GEN_COUNT; gi++)
        if (word_equals(name, name_len, gen_defs[gi].name)) {
            g = &gen_defs[gi];
            break;
        }
    if (!g)
        return SAP_ERROR(ctx, SAP_ERR_INVALID,
                         "unknown generator '%.*s' (valid: banded, synthetic, poisson2d, poisson3d, radiative, "
                         "blocktridiag)",
                         (int)(name_len > 64 ? 64 : name_len), name);

    char keys[512];
    key_list(g, keys, sizeof(keys));
    key_value vals[GEN_MAX_KEYS];
    memset(vals, 0, sizeof(vals));

    /* key=value items */
    const char *p = colon ? colon + 1 : NULL;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *item = p;
        p = comma ? comma + 1 : NULL;
        trim(&item, &len);
        if (len == 0) continue; /* empty item, e.g. a trailing comma */
        const char *eq = memchr(item, '=', len);
        if (!eq)
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: '%.*s' is not key=value (keys: %s)", g->name,
                             (int)(len > 64 ? 64 : len), item, keys);
        const char *key = item, *value = eq + 1;
        size_t key_len = (size_t)(eq - item), value_len = len - key_len - 1;
        trim(&key, &key_len);
        trim(&value, &value_len);
        int ki = 0;
        for (; ki < g->nkeys; ki++)
            if (word_equals(key, key_len, g->keys[ki].name)) break;
        if (ki == g->nkeys)
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: unknown key '%.*s' (keys: %s)", g->name,
                             (int)(key_len > 64 ? 64 : key_len), key, keys);
        const key_def *kd = &g->keys[ki];
        if (vals[ki].set)
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: key '%s' given twice (keys: %s)", g->name, kd->name, keys);
        if (!parse_value(kd, value, value_len, &vals[ki]))
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: key '%s': bad value '%.*s' (expected %s)", g->name,
                             kd->name, (int)(value_len > 64 ? 64 : value_len), value, type_name(kd->type));
        vals[ki].set = 1;
    }

    /* defaults; required keys (the Poisson dimensions are resolved below) */
    int grid = gi == GEN_POISSON2D || gi == GEN_POISSON3D;
    for (int ki = 0; ki < g->nkeys; ki++) {
        const key_def *kd = &g->keys[ki];
        if (vals[ki].set) continue;
        if (kd->def) {
            if (!parse_value(kd, kd->def, strlen(kd->def), &vals[ki]))
                return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: bad default for key '%s'", g->name, kd->name);
        } else if (!grid) {
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: missing required key '%s' (keys: %s)", g->name, kd->name,
                             keys);
        }
    }

#define V(key) vals[find_key(g, key)]
    sap_status st = SAP_OK;
    switch (gi) {
    case GEN_BANDED:
        return sap_gen_banded(ctx, (sap_int)V("n").i, (sap_int)V("k").i, V("d").r, (int)V("sym").i, V("seed").u, A);
    case GEN_SYNTHETIC:
        return sap_gen_synthetic(ctx, (sap_int)V("n").i, (sap_int)V("k").i, V("d").r, V("fill").r, V("seed").u, A,
                                 NULL, NULL);
    case GEN_POISSON2D: {
        sap_int nx = 0, ny = 0;
        if ((st = grid_dim(ctx, g, vals, "nx", &nx)) < 0 || (st = grid_dim(ctx, g, vals, "ny", &ny)) < 0) return st;
        return sap_gen_poisson2d(ctx, nx, ny, A);
    }
    case GEN_POISSON3D: {
        sap_int nx = 0, ny = 0, nz = 0;
        if ((st = grid_dim(ctx, g, vals, "nx", &nx)) < 0 || (st = grid_dim(ctx, g, vals, "ny", &ny)) < 0 ||
            (st = grid_dim(ctx, g, vals, "nz", &nz)) < 0)
            return st;
        return sap_gen_poisson3d(ctx, nx, ny, nz, A);
    }
    case GEN_RADIATIVE:
        return sap_gen_radiative(ctx, (sap_int)V("n").i, V("albedo").r, V("tau").r, (sap_int)V("bw").i, V("shift").r,
                                 A);
    case GEN_BLOCKTRIDIAG:
        return sap_gen_blocktridiag(ctx, (sap_int)V("nb").i, (sap_int)V("k").i, V("d").r, V("seed").u, A);
    default: break;
    }
#undef V
    return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: generator not dispatched", g->name);
}

sap_status sap_matrix_load(sap_context *ctx, const char *path_or_spec, const sap_mm_read_options *opt, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_load: output pointer A is NULL");
    *A = NULL;
    if (!path_or_spec) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_load: path is NULL");
    if (strncmp(path_or_spec, "gen:", 4) == 0) return sap_gen_spec(ctx, path_or_spec, A);
    return sap_mm_read_csr(ctx, path_or_spec, opt, A, NULL);
}
