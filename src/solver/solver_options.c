/* solver_options.c -- sap_solver options: defaults, method names, setting by name. */
#define _POSIX_C_SOURCE 200809L /* strcasecmp under -std=c11 */
#include "solver/solver_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const method_names[] = {"auto", "sap-d", "sap-c", "band-lu", "band-pivot", "jacobi"};

const char *sap_solver_method_name(sap_solver_method method)
{
    if ((int)method < SAP_METHOD_AUTO || (int)method > SAP_METHOD_JACOBI) return "unknown";
    return method_names[method];
}

sap_status sap_solver_method_parse(const char *name, sap_solver_method *method)
{
    if (!name || !method) return SAP_ERR_INVALID;
    static const struct {
        const char *s;
        sap_solver_method m;
    } tab[] = {{"auto", SAP_METHOD_AUTO},        {"sap-d", SAP_METHOD_SAPD},         {"sapd", SAP_METHOD_SAPD},
               {"sap-c", SAP_METHOD_SAPC},       {"sapc", SAP_METHOD_SAPC},          {"band-lu", SAP_METHOD_BAND_LU},
               {"bandlu", SAP_METHOD_BAND_LU},   {"band-pivot", SAP_METHOD_BAND_PIVOT},
               {"bandpivot", SAP_METHOD_BAND_PIVOT}, {"jacobi", SAP_METHOD_JACOBI}};
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcasecmp(tab[i].s, name) == 0) {
            *method = tab[i].m;
            return SAP_OK;
        }
    return SAP_ERR_INVALID;
}

void sap_solver_options_init(sap_solver_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->method = SAP_METHOD_AUTO;
    opt->fallback = 1;
    opt->db = -1;
    opt->scale = -1;
    opt->cm = -1;
    opt->drop_delta = -1.0;
    opt->partitions = 0;
    opt->third_stage = -1;
    opt->factor_precision = -1;
    opt->boost_threshold = -1.0;
    opt->boost_value = 0.0;
    opt->krylov_auto = 1;
    sap_krylov_options_init(&opt->krylov);
    opt->memory_limit = 0;
    opt->host_small = 1;
    opt->host_direct = 1;
}

/* 0/1 from on/off/true/false/yes/no/1/0; with allow_auto also "auto" -> -1. */
static int parse_bool(const char *v, int allow_auto, int *out)
{
    static const char *const yes[] = {"1", "on", "true", "yes"}, *const no[] = {"0", "off", "false", "no"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    if (allow_auto && (strcasecmp(v, "auto") == 0 || strcmp(v, "-1") == 0)) {
        *out = -1;
        return 0;
    }
    return -1;
}

static int parse_num(const char *v, double *out)
{
    if (!*v) return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (*end || errno == ERANGE || !isfinite(d)) return -1;
    *out = d;
    return 0;
}

/* Non-negative integer with optional k/M/G suffix (powers of 1024 for bytes when
 * binary, else 1000): "2G", "512M", "100000", "2e5". */
static int parse_size(const char *v, int binary, int64_t *out)
{
    if (!*v) return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (errno == ERANGE || !isfinite(d) || d < 0) return -1;
    double mult = 1;
    if (*end) {
        char c = (char)tolower((unsigned char)*end);
        if (c == 'k') mult = binary ? 1024.0 : 1e3;
        else if (c == 'm') mult = binary ? 1048576.0 : 1e6;
        else if (c == 'g') mult = binary ? 1073741824.0 : 1e9;
        else if (c == 't') mult = binary ? 1099511627776.0 : 1e12;
        else return -1;
        end++;
        if (binary && (*end == 'B' || *end == 'b')) end++;
        if (*end) return -1;
    }
    d *= mult;
    if (d > 9.0e18 || (mult == 1 && d != floor(d))) return -1;
    d = floor(d);
    *out = (int64_t)d;
    return 0;
}

sap_status sap_solver_options_set(sap_solver_options *opt, const char *name, const char *value)
{
    if (!opt || !name || !value) return SAP_ERR_INVALID;
    sap_solver_options o = *opt;
    int b = 0;
    double d = 0;
    int64_t z = 0;
    int bad = 0;
    if (!strcasecmp(name, "method")) {
        bad = sap_solver_method_parse(value, &o.method) != SAP_OK;
    } else if (!strcasecmp(name, "fallback")) {
        bad = parse_bool(value, 0, &b);
        o.fallback = b;
    } else if (!strcasecmp(name, "db")) {
        if (!strcasecmp(value, "auto") || !strcmp(value, "-1")) o.db = -1;
        else if (!strcasecmp(value, "none") || !strcasecmp(value, "off") || !strcmp(value, "0")) o.db = SAP_DB_NONE;
        else if (!strcasecmp(value, "product") || !strcasecmp(value, "on") || !strcmp(value, "1")) o.db = SAP_DB_PRODUCT;
        else if (!strcasecmp(value, "transversal") || !strcmp(value, "2")) o.db = SAP_DB_TRANSVERSAL;
        else bad = 1;
    } else if (!strcasecmp(name, "scale")) {
        bad = parse_bool(value, 1, &b);
        o.scale = b;
    } else if (!strcasecmp(name, "cm")) {
        bad = parse_bool(value, 1, &b);
        o.cm = b;
    } else if (!strcasecmp(name, "drop") || !strcasecmp(name, "drop_delta")) {
        if (!strcasecmp(value, "auto")) o.drop_delta = -1;
        else if (!strcasecmp(value, "none") || !strcasecmp(value, "off")) o.drop_delta = 1;
        else {
            bad = parse_num(value, &d) || d < 0;
            o.drop_delta = d;
        }
    } else if (!strcasecmp(name, "partitions") || !strcasecmp(name, "P")) {
        if (!strcasecmp(value, "auto")) o.partitions = 0;
        else {
            bad = parse_size(value, 0, &z);
            o.partitions = (sap_int)z;
        }
    } else if (!strcasecmp(name, "third_stage")) {
        bad = parse_bool(value, 1, &b);
        o.third_stage = b;
    } else if (!strcasecmp(name, "precision")) {
        if (!strcasecmp(value, "auto")) o.factor_precision = -1;
        else if (!strcasecmp(value, "float") || !strcasecmp(value, "single")) o.factor_precision = SAP_FLOAT;
        else if (!strcasecmp(value, "double")) o.factor_precision = SAP_DOUBLE;
        else bad = 1;
    } else if (!strcasecmp(name, "boost_threshold")) {
        if (!strcasecmp(value, "auto")) o.boost_threshold = -1;
        else {
            bad = parse_num(value, &d);
            o.boost_threshold = d;
        }
    } else if (!strcasecmp(name, "boost_value")) {
        if (!strcasecmp(value, "auto")) o.boost_value = 0;
        else {
            bad = parse_num(value, &d);
            o.boost_value = d;
        }
    } else if (!strcasecmp(name, "krylov")) {
        if (!strcasecmp(value, "auto")) o.krylov_auto = 1;
        else {
            bad = sap_krylov_parse(value, &o.krylov.type, &o.krylov.param) != SAP_OK;
            o.krylov_auto = 0;
        }
    } else if (!strcasecmp(name, "tol")) {
        bad = parse_num(value, &d) || d < 0;
        o.krylov.tol = d;
    } else if (!strcasecmp(name, "maxit")) {
        bad = parse_size(value, 0, &z);
        o.krylov.maxit = (sap_int)z;
    } else if (!strcasecmp(name, "stagnation")) {
        bad = parse_size(value, 0, &z);
        o.krylov.stagnation_window = (sap_int)z;
    } else if (!strcasecmp(name, "memory_limit")) {
        if (!strcasecmp(value, "auto")) o.memory_limit = 0;
        else bad = parse_size(value, 1, &o.memory_limit);
    } else if (!strcasecmp(name, "host_small")) {
        bad = parse_bool(value, 0, &b);
        o.host_small = b;
    } else if (!strcasecmp(name, "host_direct")) {
        bad = parse_bool(value, 0, &b);
        o.host_direct = b;
    } else {
        return SAP_ERR_INVALID;
    }
    if (bad) return SAP_ERR_INVALID;
    *opt = o;
    return SAP_OK;
}

const char *sap_solver_options_help(void)
{
    return "sap_solver options (NAME=VALUE):\n"
           "  method=auto|sap-d|sap-c|band-lu|band-pivot|jacobi   (default auto)\n"
           "  fallback=1|0          on failure try the next method (default 1)\n"
           "  db=auto|none|product|transversal   diagonal boosting (default auto: off for SPD)\n"
           "  scale=auto|0|1        DB scaling (default auto: with db=product)\n"
           "  cm=auto|0|1           Cuthill-McKee on A + A^T (default on)\n"
           "  drop=auto|none|DELTA  drop-off keeping DELTA of ||A||_F^2 (default auto)\n"
           "  partitions=auto|P     SaP partitions (default auto)\n"
           "  third_stage=auto|0|1  per-partition CM (default auto: SaP-D with P > 1)\n"
           "  precision=auto|float|double   factor precision (default auto)\n"
           "  boost_threshold=auto|T, boost_value=auto|V   pivot boosting\n"
           "  krylov=auto|cg|bicgstab|bicgstabl:2|gmres:20|fgmres:30|idr:4   (default auto)\n"
           "  tol=T                 relative residual (default 1e-10)\n"
           "  maxit=N               iterations of the final method (default 1000)\n"
           "  stagnation=N          stagnation window (default 0: off)\n"
           "  memory_limit=auto|BYTES   e.g. 2G, 512M (default auto: 90% of free device / physical memory)\n"
           "  host_small=1|0        small systems on the host on a cuda context (default 1)\n"
           "  host_direct=1|0       on the host, AUTO solves small bands directly by banded LU\n"
           "                        with pivoting when it costs <= 4e9 flops (default 1)\n";
}
