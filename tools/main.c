/* main.c -- the sap command-line tool: the command list, the top-level help and version,
 * and the dispatch to the subcommands (cmd_<name>.c). */
#include "sap_tool.h"

#include <stdio.h>
#include <string.h>

#ifndef SAP_TOOL_PETSC
#define SAP_TOOL_PETSC 0 /* 1: this build also made the PETSc plugin (petsc/, libsap_petsc) */
#endif

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"info", sap_cmd_info, "print the statistics of a matrix (file or generator spec)"},
    {"gen", sap_cmd_gen, "generate a matrix from a spec and write it as Matrix Market"},
    {"spy", sap_cmd_spy, "draw the sparsity pattern of a matrix as a PNG"},
    {"reorder", sap_cmd_reorder, "reorder a matrix into a narrow, diagonally heavy band (DB, CM, drop-off)"},
    {"solve", sap_cmd_solve, "solve A x = b with a preconditioned Krylov method"},
    {"btd", sap_cmd_btd, "block-tridiagonal direct solve (BCYCLIC, Spike, reduced Spike) with its profile"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: sap <command> [options]   (sap <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-8s %s\n", "version", "print the version and the build's features (--json: as JSON)");
    fprintf(f, "\nA matrix is a Matrix Market file (.mtx or .mtx.gz) or a generator spec such as\n"
               "gen:banded:N=200000,K=200,d=1 (sap gen --help lists the generators).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "version") == 0 || strcmp(name, "--version") == 0) {
        /* --version --json: the same as one JSON object */
        int json = argc > 2 && strcmp(argv[2], "--json") == 0;
        static const char *const lib[] = {"cuda", "openmp", "lapack", "zlib", "mpi", "metis", "suitesparse"};
        printf(json ? "{\"version\": \"%s\"" : "sap %s\nfeatures:", sap_version_string());
        for (size_t i = 0; i < sizeof(lib) / sizeof(lib[0]); i++)
            printf(json ? ", \"%s\": %s" : " %s=%s", lib[i], sap_has_feature(lib[i]) ? (json ? "true" : "yes")
                                                                                 : (json ? "false" : "no"));
        printf(json ? ", \"petsc_plugin\": %s}\n" : " petsc-plugin=%s\n",
               SAP_TOOL_PETSC ? (json ? "true" : "yes") : (json ? "false" : "no"));
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(name, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "sap: unknown command '%s'\n", name);
    usage(stderr);
    return 2;
}
