/* sap_tool.h -- shared declarations of the sap command-line tool (built on the public
 * API only).  Each subcommand is one cmd_<name>.c file with an entry point below; the
 * command line is parsed by args.h, JSON printed by json_out.h. */
#ifndef SAP_TOOL_H
#define SAP_TOOL_H

#include "sap.h"

/* Subcommand entry points: argv[0] is the subcommand name.  Return the process exit
 * code (0 success, 1 failure, 2 usage error). */
int sap_cmd_info(int argc, char **argv);
int sap_cmd_gen(int argc, char **argv);
int sap_cmd_spy(int argc, char **argv);
int sap_cmd_reorder(int argc, char **argv);
int sap_cmd_solve(int argc, char **argv);
int sap_cmd_btd(int argc, char **argv);

/* Prints "sap <cmd>: <status text>: <context message>" to stderr and returns 1. */
int sap_tool_fail(const char *cmd, sap_context *ctx, sap_status st);
/* After reading a matrix: prints "sap CMD: warning: MESSAGE" for a warning status (st > 0,
 * e.g. SAP_WARN_MM_UPPER), nothing otherwise. */
void sap_tool_read_warning(const char *cmd, sap_context *ctx, sap_status st);

/* Creates a context for a subcommand from the common options (backend name, threads,
 * verbosity); prints the reason and returns NULL on failure. */
/* A warning on stderr when the context runs fewer threads than --threads asked for. */
void sap_tool_warn_threads(const char *cmd, const sap_context *ctx, long long requested);
sap_context *sap_tool_context(const char *cmd, const char *backend, int threads, int verbose);

/* Draws the sparsity pattern of A into a PNG of about size x size pixels (density-shaded
 * when the matrix has more rows than pixels).  0 on success, < 0 on failure. */
int sap_tool_spy_png(const sap_csr *A, const char *path, int size);

#endif
