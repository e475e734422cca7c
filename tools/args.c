/* args.c -- owns the command line: one getopt_long loop for every command, the shared
 * options (declared once in the table below, with their checks and messages), the
 * positional arguments, and the usage errors (exit code 2). */
#include "args.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* getopt values of the shared options without a short form */
enum { VAL_THREADS = 0x80, VAL_BACKEND, VAL_JSON, VAL_ALLOW_NONFINITE, VAL_XSTAR, VAL_SYMMETRIC_UPPER };

typedef struct shared_opt {
    unsigned bit;
    struct option opt;
    const char *shortopt; /* getopt short form ("h", "o:"), or NULL */
} shared_opt;

static const shared_opt shared_opts[] = {
    {SAP_ARG_HELP, {"help", no_argument, NULL, 'h'}, "h"},
    {SAP_ARG_THREADS, {"threads", required_argument, NULL, VAL_THREADS}, NULL},
    {SAP_ARG_BACKEND, {"backend", required_argument, NULL, VAL_BACKEND}, NULL},
    {SAP_ARG_QUIET, {"quiet", no_argument, NULL, 'q'}, "q"},
    {SAP_ARG_JSON, {"json", no_argument, NULL, VAL_JSON}, NULL},
    {SAP_ARG_OUTPUT, {NULL, 0, NULL, 'o'}, "o:"}, /* -o only */
    {SAP_ARG_READ, {"allow-nonfinite", no_argument, NULL, VAL_ALLOW_NONFINITE}, NULL},
    {SAP_ARG_READ, {"symmetric-upper", required_argument, NULL, VAL_SYMMETRIC_UPPER}, NULL},
    {SAP_ARG_XSTAR, {"xstar", required_argument, NULL, VAL_XSTAR}, NULL},
};
#define NSHARED (sizeof(shared_opts) / sizeof(shared_opts[0]))
#define MAX_LONGOPTS 64

int sap_tool_parse_int(const char *s, long long *out)
{
    if (!s || !*s) return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (*end || v < 0 || v != floor(v) || v > 9.0e18) return -1;
    *out = (long long)v;
    return 0;
}

int sap_tool_parse_real(const char *s, double *out)
{
    if (!s || !*s) return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (*end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int sap_tool_parse_xstar(const char *s, sap_xstar *out)
{
    if (!strcmp(s, "parabola")) *out = SAP_XSTAR_PARABOLA;
    else if (!strcmp(s, "random")) *out = SAP_XSTAR_RANDOM;
    else if (!strcmp(s, "ones")) *out = SAP_XSTAR_ONES;
    else return -1;
    return 0;
}

static int usage_error(const sap_tool_command *cmd)
{
    fprintf(stderr, "try 'sap %s --help'\n", cmd->name);
    return 2;
}

/* A shared option's value: 0 taken, 1 done (--help), 2 usage error. */
static int take_shared(const sap_tool_command *cmd, int val, const char *arg, sap_tool_args *a)
{
    switch (val) {
    case 'h': cmd->usage(stdout); return 1;
    case 'q': a->quiet = 1; return 0;
    case 'o': a->output = arg; return 0;
    case VAL_JSON: a->json = 1; return 0;
    case VAL_ALLOW_NONFINITE: a->read.allow_nonfinite = 1; return 0;
    case VAL_SYMMETRIC_UPPER:
        if (!strcmp(arg, "warn")) a->read.symmetric_upper = SAP_MM_UPPER_WARN;
        else if (!strcmp(arg, "reject")) a->read.symmetric_upper = SAP_MM_UPPER_REJECT;
        else if (!strcmp(arg, "sum")) a->read.symmetric_upper = SAP_MM_UPPER_SUM;
        else {
            fprintf(stderr, "sap %s: unknown --symmetric-upper '%s' (warn, reject or sum)\n", cmd->name, arg);
            return 2;
        }
        return 0;
    case VAL_THREADS:
        if (sap_tool_parse_int(arg, &a->threads) || a->threads > 1000000) {
            fprintf(stderr, "sap %s: --threads needs a non-negative integer\n", cmd->name);
            return 2;
        }
        return 0;
    case VAL_BACKEND:
        if (sap_backend_parse(arg, &a->backend) != SAP_OK) {
            fprintf(stderr, "sap %s: unknown backend '%s' (cpu, cuda or auto)\n", cmd->name, arg);
            return 2;
        }
        a->backend_name = arg;
        return 0;
    case VAL_XSTAR:
        if (sap_tool_parse_xstar(arg, &a->xstar)) {
            fprintf(stderr, "sap %s: unknown --xstar '%s' (parabola, random or ones)\n", cmd->name, arg);
            return 2;
        }
        a->xstar_name = arg;
        return 0;
    default: return 2;
    }
}

/* The long option that argv element s names ("--name" or "--name=value"), or NULL. */
static const char *option_word(const char *s, char *buf, size_t n)
{
    if (strncmp(s, "--", 2) != 0) return NULL;
    size_t len = strcspn(s, "=");
    if (len >= n) len = n - 1;
    memcpy(buf, s, len);
    buf[len] = 0;
    return buf;
}

int sap_tool_parse_args(const sap_tool_command *cmd, int argc, char **argv, sap_tool_args *a)
{
    memset(a, 0, sizeof(*a));
    a->backend_name = "auto";
    a->backend = SAP_BACKEND_AUTO;
    a->xstar_name = "parabola";
    a->xstar = SAP_XSTAR_PARABOLA;
    sap_mm_read_options_init(&a->read);

    /* the option tables getopt_long reads: the shared options taken, then the command's */
    struct option longopts[MAX_LONGOPTS];
    char shortopts[32] = ":"; /* ':' first: a missing value is reported apart from an unknown option */
    size_t nl = 0;
    for (size_t i = 0; i < NSHARED; i++) {
        if (!(cmd->shared & shared_opts[i].bit) && shared_opts[i].bit != SAP_ARG_HELP) continue;
        if (shared_opts[i].opt.name) longopts[nl++] = shared_opts[i].opt;
        if (shared_opts[i].shortopt) strcat(shortopts, shared_opts[i].shortopt);
    }
    for (const struct option *o = cmd->own; o && o->name && nl + 1 < MAX_LONGOPTS; o++) longopts[nl++] = *o;
    memset(&longopts[nl], 0, sizeof(longopts[nl]));

    opterr = 0; /* the messages below name the command */
    optind = 0; /* a fresh scan (GNU getopt) */
    for (;;) {
        int c = getopt_long(argc, argv, shortopts, longopts, NULL);
        if (c == -1) break;
        const char *word = argv[optind - 1];
        char buf[128];
        if (c == ':') {
            if (optopt && optopt < 0x80) fprintf(stderr, "sap %s: option '-%c' needs a value\n", cmd->name, optopt);
            else fprintf(stderr, "sap %s: option '%s' needs a value\n", cmd->name, word);
            return usage_error(cmd);
        }
        if (c == '?') {
            const char *lw = option_word(word, buf, sizeof(buf));
            if (lw && optopt) fprintf(stderr, "sap %s: option '%s' takes no value\n", cmd->name, lw);
            else if (lw) {
                int matches = 0;
                for (size_t i = 0; i < nl; i++) matches += !strncmp(longopts[i].name, lw + 2, strlen(lw + 2));
                if (matches > 1) fprintf(stderr, "sap %s: ambiguous option '%s'\n", cmd->name, lw);
                else fprintf(stderr, "sap %s: unknown option '%s'\n", cmd->name, lw);
            } else if (optopt) fprintf(stderr, "sap %s: unknown option '-%c'\n", cmd->name, optopt);
            else fprintf(stderr, "sap %s: unknown option '%s'\n", cmd->name, word);
            return usage_error(cmd);
        }
        int rc = c >= SAP_ARG_OWN ? cmd->take(cmd->state, c, optarg) : take_shared(cmd, c, optarg, a);
        if (rc) return rc;
    }
    for (int i = optind; i < argc; i++) {
        if (a->npositional >= cmd->max_positional) {
            if (cmd->max_positional == 1)
                fprintf(stderr, "sap %s: more than one %s given ('%s', '%s')\n", cmd->name, cmd->positional,
                        a->positional[0], argv[i]);
            else fprintf(stderr, "sap %s: unexpected argument '%s'\n", cmd->name, argv[i]);
            return usage_error(cmd);
        }
        a->positional[a->npositional++] = argv[i];
    }
    return 0;
}

int sap_tool_need_positional(const sap_tool_command *cmd, const sap_tool_args *a)
{
    if (a->npositional > 0) return 0;
    fprintf(stderr, "sap %s: no %s given\n", cmd->name, cmd->positional);
    return usage_error(cmd);
}
