/* context.c -- the library context of a subcommand and the way library failures are
 * reported (the message of the context on stderr, exit code 1). */
#include "sap_tool.h"

#include <stdio.h>

int sap_tool_fail(const char *cmd, sap_context *ctx, sap_status st)
{
    const char *msg = ctx ? sap_context_last_error(ctx) : "";
    fprintf(stderr, "sap %s: %s%s%s\n", cmd, sap_status_string(st), msg[0] ? ": " : "", msg);
    return 1;
}

void sap_tool_read_warning(const char *cmd, sap_context *ctx, sap_status st)
{
    if (st <= 0) return;
    const char *msg = ctx ? sap_context_last_error(ctx) : "";
    fprintf(stderr, "sap %s: warning: %s%s%s\n", cmd, sap_status_string(st), msg[0] ? ": " : "", msg);
}

void sap_tool_warn_threads(const char *cmd, const sap_context *ctx, long long requested)
{
    if (ctx && requested > sap_context_threads(ctx))
        fprintf(stderr, "sap %s: warning: --threads %lld clamped to %d (the library's limit for this machine)\n", cmd,
                requested, sap_context_threads(ctx));
}

sap_context *sap_tool_context(const char *cmd, const char *backend, int threads, int verbose)
{
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    if (backend && sap_backend_parse(backend, &cfg.backend) != SAP_OK) {
        fprintf(stderr, "sap %s: unknown backend '%s' (expected cpu, cuda or auto)\n", cmd, backend);
        return NULL;
    }
    cfg.threads = threads;
    cfg.print_level = verbose ? SAP_PRINT_INFO : SAP_PRINT_SILENT;
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, &cfg);
    if (st != SAP_OK) {
        fprintf(stderr, "sap %s: cannot create a %s context: %s\n", cmd, sap_backend_name(cfg.backend),
                sap_status_string(st));
        return NULL;
    }
    sap_tool_warn_threads(cmd, ctx, threads);
    return ctx;
}
