/* args.h -- the one command-line parser of the tool: getopt_long over the options that
 * several commands share (declared once here) plus each command's own options. */
#ifndef SAP_TOOL_ARGS_H
#define SAP_TOOL_ARGS_H

#include "sap.h"

#include <getopt.h>
#include <stdio.h>

/* The shared options; a command takes the ones named in its mask. */
enum {
    SAP_ARG_HELP = 1u << 0,    /* -h, --help: print the usage, exit 0 (every command) */
    SAP_ARG_THREADS = 1u << 1, /* --threads N: CPU threads, 0 = all */
    SAP_ARG_BACKEND = 1u << 2, /* --backend cpu|cuda|auto */
    SAP_ARG_QUIET = 1u << 3,   /* -q, --quiet */
    SAP_ARG_JSON = 1u << 4,    /* --json */
    SAP_ARG_OUTPUT = 1u << 5,  /* -o FILE */
    SAP_ARG_READ = 1u << 6,    /* matrix reading: --allow-nonfinite, --symmetric-upper */
    SAP_ARG_XSTAR = 1u << 7    /* --xstar parabola|random|ones */
};

/* A command's own long options use getopt values from here on. */
#define SAP_ARG_OWN 0x100

#define SAP_ARG_MAX_POSITIONAL 4

/* The values of the shared options, and the positional arguments. */
typedef struct sap_tool_args {
    long long threads;        /* --threads (default 0: all) */
    const char *backend_name; /* --backend as given (default "auto") */
    sap_backend backend;      /* ... parsed */
    int quiet;                /* --quiet */
    int json;                 /* --json */
    const char *output;       /* -o (NULL when not given) */
    sap_mm_read_options read; /* --allow-nonfinite, --symmetric-upper */
    const char *xstar_name;   /* --xstar as given (default "parabola") */
    sap_xstar xstar;          /* ... parsed */
    const char *positional[SAP_ARG_MAX_POSITIONAL];
    int npositional;
} sap_tool_args;

/* What a command accepts. */
typedef struct sap_tool_command {
    const char *name;                /* "solve": messages start with "sap solve: " */
    unsigned shared;                 /* SAP_ARG_* mask */
    const struct option *own;        /* its own long options ({0} at the end; val >= SAP_ARG_OWN), or NULL */
    const char *positional;          /* what a positional argument is ("matrix"), for messages */
    int max_positional;              /* at most this many (<= SAP_ARG_MAX_POSITIONAL) */
    void (*usage)(FILE *f);          /* the --help text */
    /* Takes one of the command's own options: 0 taken, 1 done (the command exits 0, e.g.
     * after printing a list), 2 usage error (the handler printed why). */
    int (*take)(void *state, int val, const char *arg);
    void *state;
} sap_tool_command;

/* Parses argv[1..argc-1] (argv[0] is the command name).  Returns 0 to go on, 1 when the
 * command is done (--help printed, or the handler said so: exit 0), 2 on a usage error,
 * with the reason on stderr.  A command that needs a positional argument checks
 * npositional itself (sap_tool_need_positional). */
int sap_tool_parse_args(const sap_tool_command *cmd, int argc, char **argv, sap_tool_args *args);

/* 0 when args has a positional argument, else prints "sap CMD: no WHAT given" and returns 2. */
int sap_tool_need_positional(const sap_tool_command *cmd, const sap_tool_args *args);

/* Parses a non-negative integer option value; returns 0 on success. */
int sap_tool_parse_int(const char *s, long long *out);

/* Parses a finite number; returns 0 on success. */
int sap_tool_parse_real(const char *s, double *out);

/* Parses parabola|random|ones; returns 0 on success. */
int sap_tool_parse_xstar(const char *s, sap_xstar *out);

#endif
