/* solver_options.c -- sap_solver options: defaults, setting by name, help (the method names
 * come from the strategy-method registry, methods.c).
 * One table (base/options.h) gives the names, kinds, accepted words, ranges, defaults and
 * help of every option; sap_solver_options_init, _set and _help all come from it. */
#include "base/options.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const sap_name_value db_words[] = {{"auto", -1},
                                          {"-1", -1},
                                          {"none", SAP_DB_NONE},
                                          {"off", SAP_DB_NONE},
                                          {"0", SAP_DB_NONE},
                                          {"product", SAP_DB_PRODUCT},
                                          {"on", SAP_DB_PRODUCT},
                                          {"1", SAP_DB_PRODUCT},
                                          {"transversal", SAP_DB_TRANSVERSAL},
                                          {"2", SAP_DB_TRANSVERSAL},
                                          {NULL, 0}};
static const sap_name_value precision_words[] = {
    {"auto", -1}, {"float", SAP_FLOAT}, {"single", SAP_FLOAT}, {"double", SAP_DOUBLE}, {NULL, 0}};
static const sap_name_value auto_m1[] = {{"auto", -1}, {"-1", -1}, {NULL, 0}};
static const sap_name_value auto_is_m1[] = {{"auto", -1}, {NULL, 0}};
static const sap_name_value auto_is_0[] = {{"auto", 0}, {NULL, 0}};
static const sap_name_value budget_words[] = {{"auto", 0}, {"off", -1}, {"none", -1}, {NULL, 0}};
static const sap_name_value drop_words[] = {{"auto", -1}, {"none", 1}, {"off", 1}, {NULL, 0}};

/* krylov=auto | a sap_krylov_parse spec (which clears krylov_auto) */
static int krylov_parse(void *obj, const char *value)
{
    sap_solver_options *o = obj;
    if (sap__word_eq(value, strlen(value), "auto")) {
        o->krylov_auto = 1;
        return 0;
    }
    if (sap_krylov_parse(value, &o->krylov.type, &o->krylov.param) != SAP_OK) return -1;
    o->krylov_auto = 0;
    return 0;
}

static void krylov_print(const void *obj, char *buf, size_t size)
{
    const sap_solver_options *o = obj;
    if (o->krylov_auto) snprintf(buf, size, "auto");
    else if (o->krylov.param) snprintf(buf, size, "%s:%d", sap_krylov_name(o->krylov.type), o->krylov.param);
    else snprintf(buf, size, "%s", sap_krylov_name(o->krylov.type));
}

#define SO(member) SAP_OPT_AT(sap_solver_options, member)
static const sap_opt_def solver_opts[] = {
    {.name = "method", .help = "strategy (a forced method still falls back unless fallback=0)", .def = "auto",
     .kind = SAP_OPT_ENUM, SO(method), .choices = sap__solver_method_words},
    {.name = "fallback", .help = "on failure try the next method", .def = "1", .kind = SAP_OPT_BOOL, SO(fallback)},
    {.name = "db", .help = "diagonal boosting (auto: off for SPD-looking matrices, else product)", .def = "auto",
     .kind = SAP_OPT_ENUM, SO(db), .choices = db_words},
    {.name = "scale", .help = "DB scaling (auto: with db=product)", .def = "auto", .kind = SAP_OPT_BOOL, SO(scale),
     .choices = auto_m1},
    {.name = "cm", .help = "Cuthill-McKee on A + A^T (auto: on)", .def = "auto", .kind = SAP_OPT_BOOL, SO(cm),
     .choices = auto_m1},
    {.name = "drop", .alias = "drop_delta", .help = "drop-off keeping DELTA of ||A||_F^2 (1: none)", .def = "auto",
     .kind = SAP_OPT_FRACTION, SO(drop_delta), .lo = 0, .hi = 1, .choices = drop_words, .meta = "DELTA"},
    {.name = "partitions", .alias = "P", .help = "SaP partitions", .def = "auto", .kind = SAP_OPT_INT,
     SO(partitions), .lo = 0, .hi = 9.2e18, .choices = auto_is_0, .meta = "P"},
    {.name = "block", .help = "block width of bcyclic/spike/reduced-spike (auto: detected)", .def = "auto",
     .kind = SAP_OPT_INT, SO(block), .lo = 0, .hi = 9.2e18, .choices = auto_is_0, .meta = "K"},
    {.name = "third_stage", .help = "per-partition CM (auto: SaP-D with P > 1)", .def = "auto", .kind = SAP_OPT_BOOL,
     SO(third_stage), .choices = auto_m1},
    {.name = "precision", .help = "factor precision", .def = "auto", .kind = SAP_OPT_ENUM, SO(factor_precision),
     .choices = precision_words},
    {.name = "boost_threshold", .help = "pivots below T are boosted (auto: eps * ||A_i||_inf)", .def = "auto",
     .kind = SAP_OPT_REAL, SO(boost_threshold), .choices = auto_is_m1, .meta = "T"},
    {.name = "boost_value", .help = "magnitude of a boosted pivot (auto: sqrt(eps) * ||A_i||_inf)", .def = "auto",
     .kind = SAP_OPT_REAL, SO(boost_value), .choices = auto_is_0, .meta = "V"},
    {.name = "krylov", .help = "Krylov method as sap_krylov_parse (cg, bicgstabl:2, gmres:20, ...); auto: CG for SPD with "
                               "SaP-D, else BiCGStab(2)",
     .def = "auto", .kind = SAP_OPT_CUSTOM, .meta = "auto|METHOD[:PARAM]", .parse = krylov_parse, .print = krylov_print},
    {.name = "tol", .help = "relative residual", .def = "1e-10", .kind = SAP_OPT_REAL, SO(krylov.tol), .lo = 0,
     .hi = INFINITY, .meta = "T"},
    {.name = "maxit", .help = "iterations of the final method", .def = "1000", .kind = SAP_OPT_INT, SO(krylov.maxit),
     .lo = 0, .hi = 9.2e18},
    {.name = "stagnation", .help = "stagnation window (0: off)", .def = "0", .kind = SAP_OPT_INT,
     SO(krylov.stagnation_window), .lo = 0, .hi = 9.2e18},
    {.name = "sync_timing", .help = "1: synchronise the device around each SpMV and preconditioner call of the "
                                    "Krylov method (its spmv / precond times exact); 0: no such waits (the solver "
                                    "reports T_Kry whole; on an H100, N = 200,000, K = 200: T_Kry 5.0 -> 4.5 ms)",
     .def = "0", .kind = SAP_OPT_BOOL, SO(krylov.sync_timing)},
    {.name = "memory_limit", .help = "e.g. 2G, 512M (auto: 90% of free device / physical memory)", .def = "auto",
     .kind = SAP_OPT_BYTES, SO(memory_limit), .choices = auto_is_0},
    {.name = "host_small", .help = "small systems on the host on a cuda context", .def = "1", .kind = SAP_OPT_BOOL,
     SO(host_small)},
    {.name = "host_direct", .help = "on the host, AUTO solves small bands directly by banded LU with pivoting "
                                    "when it costs <= 4e9 flops",
     .def = "1", .kind = SAP_OPT_BOOL, SO(host_direct)},
    {.name = "long_step", .help = "announce an attempt's setup predicted above S seconds (0: never)", .def = "5",
     .kind = SAP_OPT_REAL, SO(long_step), .lo = 0, .hi = INFINITY, .meta = "S"},
    {.name = "time_budget", .help = "seconds an iterative attempt with a fallback may take (auto: 2x the predicted "
                                    "direct solve; off: none)",
     .def = "auto", .kind = SAP_OPT_REAL, SO(time_budget), .lo = -1, .hi = INFINITY, .choices = budget_words,
     .meta = "S"},
};
#undef SO
#define NOPTS ((int)(sizeof(solver_opts) / sizeof(solver_opts[0])))

void sap_solver_options_init(sap_solver_options *opt)
{
    if (!opt) return;
    sap_solver_method_count(); /* the method words installed */
    memset(opt, 0, sizeof(*opt));
    sap_krylov_options_init(&opt->krylov);
    sap__opt_defaults(solver_opts, NOPTS, opt);
}

sap_status sap_solver_options_set_msg(sap_solver_options *opt, const char *name, const char *value, char *msg,
                                      size_t msglen)
{
    if (msg && msglen) msg[0] = 0;
    if (!opt || !name || !value) {
        if (msg && msglen) snprintf(msg, msglen, "sap_solver_options_set: NULL argument");
        return SAP_ERR_INVALID;
    }
    sap_solver_method_count(); /* the method words installed */
    sap_solver_options o = *opt;
    sap_status st = sap__opt_set(solver_opts, NOPTS, &o, name, value, "option", msg, msg ? msglen : 0);
    if (st < 0) return st;
    *opt = o;
    return SAP_OK;
}

sap_status sap_solver_options_set(sap_solver_options *opt, const char *name, const char *value)
{
    return sap_solver_options_set_msg(opt, name, value, NULL, 0);
}

static char help_text[4096];
static atomic_int help_once;

static void build_help(void)
{
    sap_solver_method_count(); /* the method words installed */
    size_t used = (size_t)snprintf(help_text, sizeof(help_text), "sap_solver options (NAME=VALUE):\n");
    sap__opt_help(solver_opts, NOPTS, "  ", help_text + used, sizeof(help_text) - used);
}

const char *sap_solver_options_help(void)
{
    sap__once(&help_once, build_help);
    return help_text;
}
