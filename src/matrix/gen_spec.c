/* gen_spec.c -- generator spec strings "gen:NAME:key=value,..." (sap_gen_spec), their
 * help text, and sap_matrix_load (a spec or a Matrix Market file).
 *
 * Generator names and keys are case-insensitive.  Integer values accept plain decimal
 * (200000), exponent form (2e5) and the suffixes k = 1e3, M = 1e6, G = 1e9 (200k, 1.5M)
 * as long as the value is integral; real values are anything strtod reads that is
 * finite; booleans are 0/1/true/false/yes/no/on/off.  Every error is SAP_ERR_INVALID
 * with a message that names the key and lists the valid ones. */
#include "base/options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The values of every generator's keys (each generator uses some of them). */
typedef struct gen_args {
    int64_t n, k, nx, ny, nz, nb, bw, dof;
    double d, fill, albedo, tau, shift, beta, eps, jump, nu;
    int sym;
    uint64_t seed;
} gen_args;

enum {
    GEN_BANDED,
    GEN_SYNTHETIC,
    GEN_POISSON2D,
    GEN_POISSON3D,
    GEN_RADIATIVE,
    GEN_BLOCKTRIDIAG,
    GEN_CONVDIFF3D,
    GEN_ELASTICITY3D,
    GEN_ANISO3D,
    GEN_RECIRC2D,
    GEN_COUNT
};

#define GEN_MAX_KEYS 6
#define GA(member) SAP_OPT_AT(gen_args, member)
#define KEY_N(h) {.name = "n", .help = h, .kind = SAP_OPT_INT, GA(n)}
#define KEY_K(h) {.name = "k", .help = h, .kind = SAP_OPT_INT, GA(k)}
#define KEY_D {.name = "d", .help = "degree of diagonal dominance", .def = "1", .kind = SAP_OPT_REAL, GA(d)}
#define KEY_SEED {.name = "seed", .help = "random seed", .def = "1", .kind = SAP_OPT_UINT64, GA(seed)}

typedef struct gen_def {
    const char *name;
    const char *usage; /* NULL: from the keys, "gen:NAME:req=,req=[,opt=def,...]" */
    const char *help;  /* what it builds (lines indented by the help generator) */
    int nkeys;
    sap_opt_def keys[GEN_MAX_KEYS];
} gen_def;

static const gen_def gen_defs[GEN_COUNT] = {
    [GEN_BANDED] = {"banded", NULL,
                    "dense banded N x N matrix of half-bandwidth K (K >= N is clamped to N-1):\n"
                    "off-diagonal entries uniform in [-1,1], a_ii = d * sum_{j!=i} |a_ij|, so the\n"
                    "degree of diagonal dominance is d; sym=1 makes it symmetric (SPD for d > 1)",
                    5,
                    {KEY_N("size"), KEY_K("half-bandwidth"), KEY_D,
                     {.name = "sym", .help = "symmetric", .def = "0", .kind = SAP_OPT_BOOL, GA(sym)}, KEY_SEED}},
    [GEN_SYNTHETIC] = {"synthetic", NULL,
                       "banded as above with each off-diagonal band entry kept with probability\n"
                       "fill in (0,1], then hidden by random row and column permutations",
                       5,
                       {KEY_N("size"), KEY_K("half-bandwidth"), KEY_D,
                        {.name = "fill", .help = "probability of keeping a band entry", .def = "1",
                         .kind = SAP_OPT_REAL, GA(fill)},
                        KEY_SEED}},
    /* n sets every dimension; nx, ny (nz) override it */
    [GEN_POISSON2D] = {"poisson2d", "gen:poisson2d:n=  or  gen:poisson2d:nx=,ny=",
                       "5-point Laplacian (4 on the diagonal, -1 off it) on an nx x ny grid;\n"
                       "n sets both dimensions, nx/ny override it",
                       3,
                       {KEY_N("grid size in every dimension"),
                        {.name = "nx", .help = "grid points in x", .kind = SAP_OPT_INT, GA(nx)},
                        {.name = "ny", .help = "grid points in y", .kind = SAP_OPT_INT, GA(ny)}}},
    [GEN_POISSON3D] = {"poisson3d", "gen:poisson3d:n=  or  gen:poisson3d:nx=,ny=,nz=",
                       "7-point Laplacian (6 on the diagonal, -1 off it) on an nx x ny x nz grid",
                       4,
                       {KEY_N("grid size in every dimension"),
                        {.name = "nx", .help = "grid points in x", .kind = SAP_OPT_INT, GA(nx)},
                        {.name = "ny", .help = "grid points in y", .kind = SAP_OPT_INT, GA(ny)},
                        {.name = "nz", .help = "grid points in z", .kind = SAP_OPT_INT, GA(nz)}}},
    [GEN_RADIATIVE] = {"radiative", NULL,
                       "Galerkin matrix (n elements) of the stellar-atmosphere radiative-transfer\n"
                       "operator albedo/2 int_0^tau E1(|t-s|) phi(s) ds, minus shift*I; entries with\n"
                       "|i-j| > bw dropped; bw=-1 takes the paper's bw = n (1 - exp(-n/(tc tau))),\n"
                       "tc = max(n/100, 5): about 100 n / tau for n >= 500, so the default tau\n"
                       "gives bw ~ n/10 (raise tau or set bw for large n); symmetric Toeplitz;\n"
                       "albedo=0.75,shift=0.75 is the shift-and-invert matrix of the SLEPc paper",
                       5,
                       {KEY_N("elements"),
                        {.name = "albedo", .help = "albedo", .def = "0.75", .kind = SAP_OPT_REAL, GA(albedo)},
                        {.name = "tau", .help = "optical depth", .def = "1000", .kind = SAP_OPT_REAL, GA(tau)},
                        {.name = "bw", .help = "half-bandwidth kept (-1: the paper's)", .def = "-1",
                         .kind = SAP_OPT_INT, GA(bw)},
                        {.name = "shift", .help = "diagonal shift", .def = "0", .kind = SAP_OPT_REAL, GA(shift)}}},
    [GEN_BLOCKTRIDIAG] = {"blocktridiag", NULL,
                          "nb x nb block rows of dense k x k blocks (diagonal and both off-diagonal\n"
                          "blocks), off-diagonal entries uniform in [-1,1], degree of diagonal\n"
                          "dominance d",
                          4,
                          {{.name = "nb", .help = "block rows", .kind = SAP_OPT_INT, GA(nb)},
                           KEY_K("block size"), KEY_D, KEY_SEED}},
    [GEN_CONVDIFF3D] = {"convdiff3d", NULL,
                        "3D convection-diffusion -lap u + beta (1,1,1).grad u, 7-point central\n"
                        "differences on an n x n x n grid (nonsymmetric; n=108 is the size of atmosmodd)",
                        2,
                        {KEY_N("grid size in every dimension"),
                         {.name = "beta", .help = "convection speed", .def = "50", .kind = SAP_OPT_REAL, GA(beta)}}},
    [GEN_ELASTICITY3D] = {"elasticity3d", "gen:elasticity3d:n=[,dof=3]  or  gen:elasticity3d:nx=,ny=,nz=[,dof=3]",
                          "dof unknowns per node of an nx x ny x nz grid: L (x) K, L the 7-point Laplacian\n"
                          "with varying coefficients, K = dof x dof SPD coupling (SPD; natural blocks of dof rows)",
                          5,
                          {KEY_N("grid size in every dimension"),
                           {.name = "nx", .help = "grid points in x", .kind = SAP_OPT_INT, GA(nx)},
                           {.name = "ny", .help = "grid points in y", .kind = SAP_OPT_INT, GA(ny)},
                           {.name = "nz", .help = "grid points in z", .kind = SAP_OPT_INT, GA(nz)},
                           {.name = "dof", .help = "unknowns per node (1..32)", .def = "3", .kind = SAP_OPT_INT,
                            GA(dof), .lo = 1, .hi = 32}}},
    [GEN_ANISO3D] = {"aniso3d", NULL,
                     "3D anisotropic diffusion -div(k diag(1,1,eps) grad u) on n x n x n cells, k = jump\n"
                     "on a 4x4x4 checkerboard of sub-cubes, 1 elsewhere (finite volumes; SPD)",
                     3,
                     {KEY_N("cells in every dimension"),
                      {.name = "eps", .help = "diffusion in z relative to x and y", .def = "1e-3", .kind = SAP_OPT_REAL,
                       GA(eps)},
                      {.name = "jump", .help = "coefficient on the checkerboard's cells", .def = "1e3",
                       .kind = SAP_OPT_REAL, GA(jump)}}},
    [GEN_RECIRC2D] = {"recirc2d", NULL,
                      "2D convection-diffusion -nu lap u + w.grad u with the recirculating wind\n"
                      "w = (2y(1-x^2), -2x(1-y^2)) on [-1,1]^2, n x n points, upwind (nonsymmetric)",
                      2,
                      {KEY_N("interior points in every dimension"),
                       {.name = "nu", .help = "viscosity", .def = "0.005", .kind = SAP_OPT_REAL, GA(nu)}}},
};
#undef GA

/* "gen:banded:n=,k=[,d=1,sym=0,seed=1]" */
static size_t usage_of(const gen_def *g, char *buf, size_t size)
{
    if (g->usage) return (size_t)snprintf(buf, size, "%s", g->usage);
    size_t used = (size_t)snprintf(buf, size, "gen:%s:", g->name);
    int first = 1, opt = 0;
    for (int i = 0; i < g->nkeys && used < size; i++)
        if (!g->keys[i].def) {
            used += (size_t)snprintf(buf + used, size - used, "%s%s=", first ? "" : ",", g->keys[i].name);
            first = 0;
        }
    for (int i = 0; i < g->nkeys && used < size; i++)
        if (g->keys[i].def) {
            used += (size_t)snprintf(buf + used, size - used, "%s%s%s=%s", opt ? "" : "[", first ? "" : ",",
                                     g->keys[i].name, g->keys[i].def);
            first = 0;
            opt = 1;
        }
    if (opt && used < size) used += (size_t)snprintf(buf + used, size - used, "]");
    return used;
}

static char help_text[6144];
static atomic_int help_once;

static void build_help(void)
{
    char *b = help_text;
    size_t size = sizeof(help_text), used = 0;
#define PUT(...)                                                                                                       \
    do {                                                                                                               \
        if (used < size) used += (size_t)snprintf(b + used, size - used, __VA_ARGS__);                                 \
    } while (0)
    PUT("Generator specs: gen:NAME:key=value,key=value,...\n"
        "(names and keys are case-insensitive; integers accept 200000, 2e5, 200k, 1.5M;\n"
        "keys in [brackets] are optional, shown with their defaults)\n\n");
    for (int gi = 0; gi < GEN_COUNT; gi++) {
        const gen_def *g = &gen_defs[gi];
        char usage[256];
        usage_of(g, usage, sizeof(usage));
        PUT("  %s\n", usage);
        for (const char *line = g->help; *line;) {
            const char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            PUT("      %.*s\n", (int)len, line);
            line += len + (nl ? 1 : 0);
        }
    }
    PUT("\nExamples: gen:banded:N=200000,K=200,d=1   gen:synthetic:N=400000,K=100,fill=0.2\n"
        "          gen:poisson3d:n=160   gen:radiative:n=10000   gen:blocktridiag:nb=100,k=64\n");
#undef PUT
}

const char *sap_gen_spec_help(void)
{
    sap__once(&help_once, build_help);
    return help_text;
}

/* ---- the spec ----------------------------------------------------------------------------------- */

static void trim(const char **s, size_t *len)
{
    while (*len > 0 && isspace((unsigned char)(*s)[0])) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && isspace((unsigned char)(*s)[*len - 1])) (*len)--;
}

/* Poisson dimension: its own key if given, else n, else a "missing key" error. */
static sap_status grid_dim(sap_context *ctx, const gen_def *g, const gen_args *a, const unsigned char *given,
                           int key, int64_t v, sap_int *dim)
{
    if (given[key]) *dim = (sap_int)v;
    else if (given[0]) *dim = (sap_int)a->n;
    else {
        char keys[256];
        sap__opt_names(g->keys, g->nkeys, keys, sizeof(keys));
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: missing key '%s' (give n, or every one of nx, ny%s; keys: %s)",
                         g->name, g->keys[key].name, g == &gen_defs[GEN_POISSON3D] || g == &gen_defs[GEN_ELASTICITY3D] ? ", nz" : "", keys);
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
        if (sap__word_eq(name, name_len, gen_defs[gi].name)) {
            g = &gen_defs[gi];
            break;
        }
    if (!g) {
        char valid[256] = "";
        for (int i = 0; i < GEN_COUNT; i++) {
            if (i) strncat(valid, ", ", sizeof(valid) - strlen(valid) - 1);
            strncat(valid, gen_defs[i].name, sizeof(valid) - strlen(valid) - 1);
        }
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown generator '%.*s' (valid: %s)",
                         (int)(name_len > 64 ? 64 : name_len), name, valid);
    }

    /* key=value items, then the defaults, then the required keys (the Poisson dimensions
     * are resolved below) */
    gen_args a;
    memset(&a, 0, sizeof(a));
    unsigned char given[GEN_MAX_KEYS] = {0};
    char err[1024];
    if (sap__opt_parse_list(g->keys, g->nkeys, &a, colon ? colon + 1 : NULL, (size_t)-1, given, "key", err,
                            sizeof(err)) < 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: %s", g->name, err);
    int grid = gi == GEN_POISSON2D || gi == GEN_POISSON3D || gi == GEN_ELASTICITY3D;
    for (int ki = 0; ki < g->nkeys; ki++) {
        const sap_opt_def *kd = &g->keys[ki];
        if (given[ki]) continue;
        if (kd->def) {
            if (sap__opt_parse(kd, &a, kd->def, (size_t)-1, "key", err, sizeof(err)) < 0)
                return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: bad default for key '%s'", g->name, kd->name);
        } else if (!grid) {
            char keys[512];
            sap__opt_names(g->keys, g->nkeys, keys, sizeof(keys));
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "gen:%s: missing required key '%s' (keys: %s)", g->name, kd->name,
                             keys);
        }
    }

    sap_status st = SAP_OK;
    switch (gi) {
    case GEN_BANDED: return sap_gen_banded(ctx, (sap_int)a.n, (sap_int)a.k, a.d, a.sym, a.seed, A);
    case GEN_SYNTHETIC: return sap_gen_synthetic(ctx, (sap_int)a.n, (sap_int)a.k, a.d, a.fill, a.seed, A, NULL, NULL);
    case GEN_POISSON2D: {
        sap_int nx = 0, ny = 0;
        if ((st = grid_dim(ctx, g, &a, given, 1, a.nx, &nx)) < 0 || (st = grid_dim(ctx, g, &a, given, 2, a.ny, &ny)) < 0)
            return st;
        return sap_gen_poisson2d(ctx, nx, ny, A);
    }
    case GEN_POISSON3D: {
        sap_int nx = 0, ny = 0, nz = 0;
        if ((st = grid_dim(ctx, g, &a, given, 1, a.nx, &nx)) < 0 || (st = grid_dim(ctx, g, &a, given, 2, a.ny, &ny)) < 0 ||
            (st = grid_dim(ctx, g, &a, given, 3, a.nz, &nz)) < 0)
            return st;
        return sap_gen_poisson3d(ctx, nx, ny, nz, A);
    }
    case GEN_ELASTICITY3D: {
        sap_int nx = 0, ny = 0, nz = 0;
        if ((st = grid_dim(ctx, g, &a, given, 1, a.nx, &nx)) < 0 || (st = grid_dim(ctx, g, &a, given, 2, a.ny, &ny)) < 0 ||
            (st = grid_dim(ctx, g, &a, given, 3, a.nz, &nz)) < 0)
            return st;
        return sap_gen_elasticity3d(ctx, nx, ny, nz, (int)a.dof, A);
    }
    case GEN_RADIATIVE: return sap_gen_radiative(ctx, (sap_int)a.n, a.albedo, a.tau, (sap_int)a.bw, a.shift, A);
    case GEN_BLOCKTRIDIAG: return sap_gen_blocktridiag(ctx, (sap_int)a.nb, (sap_int)a.k, a.d, a.seed, A);
    case GEN_CONVDIFF3D: return sap_gen_convdiff3d(ctx, (sap_int)a.n, a.beta, A);
    case GEN_ANISO3D: return sap_gen_aniso3d(ctx, (sap_int)a.n, a.eps, a.jump, A);
    case GEN_RECIRC2D: return sap_gen_recirc2d(ctx, (sap_int)a.n, a.nu, A);
    default: break;
    }
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
