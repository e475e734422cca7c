/* cmd_spy.c -- `sap spy FILE|SPEC -o out.png`: draws the sparsity pattern. */
#include "args.h"
#include "json_out.h"
#include "sap_tool.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: sap spy FILE|SPEC -o OUT.png [--size PIXELS] [--allow-nonfinite] [--json]\n\n"
               "Draws the sparsity pattern of a matrix as a PNG.  Matrices with more rows than\n"
               "pixels are density-shaded: the darker a pixel, the more entries fall into it\n"
               "(logarithmic scale).\n\n"
               "  -o OUT.png       output image (required)\n"
               "  --size PIXELS    image size (default 600)\n"
               "  --json           print the outcome as one JSON object\n"
               "  --allow-nonfinite  accept NaN/Inf values in the file\n"

               "  --symmetric-upper=warn|reject|sum  entries above the diagonal of a symmetric\n"
               "                     file: warn (default: take them as given, fill only missing\n"
               "                     mirrors), reject, or sum (mirror all: doubles a stored pair)\n");
}

enum { OPT_SIZE = SAP_ARG_OWN };

static int take(void *state, int val, const char *arg)
{
    long long *size = state;
    if (val == OPT_SIZE && !sap_tool_parse_int(arg, size) && *size >= 16 && *size <= 8192) return 0;
    fprintf(stderr, "sap spy: --size needs an integer in 16..8192\n");
    return 2;
}

int sap_cmd_spy(int argc, char **argv)
{
    static const struct option own[] = {{"size", required_argument, NULL, OPT_SIZE}, {NULL, 0, NULL, 0}};
    long long size = 600;
    const sap_tool_command cmd = {"spy", SAP_ARG_OUTPUT | SAP_ARG_READ | SAP_ARG_JSON, own, "matrix", 1, usage, take, &size};
    sap_tool_args args;
    int rc = sap_tool_parse_args(&cmd, argc, argv, &args);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = sap_tool_need_positional(&cmd, &args))) return rc;
    const char *input = args.positional[0], *out = args.output;
    if (!out) {
        fprintf(stderr, "sap spy: no output file given (-o OUT.png)\nusage: sap spy FILE|SPEC -o OUT.png [--size PIXELS]\n");
        return 2;
    }
    sap_context *ctx = sap_tool_context("spy", "cpu", 0, 0);
    if (!ctx) return 1;
    sap_csr *A = NULL;
    sap_status st = sap_matrix_load(ctx, input, &args.read, &A);
    sap_tool_read_warning("spy", ctx, st);
    if (st < 0) rc = sap_tool_fail("spy", ctx, st);
    else if (A->nrows == 0 || A->ncols == 0) {
        fprintf(stderr, "sap spy: the matrix is empty (%lld x %lld)\n", (long long)A->nrows, (long long)A->ncols);
        rc = 1;
    } else {
        int e = sap_tool_spy_png(A, out, (int)size);
        if (e) {
            fprintf(stderr, "sap spy: cannot write '%s'%s\n", out, e == -2 ? " (out of memory)" : "");
            rc = 1;
        } else if (args.json) {
            cJSON *extra = cJSON_CreateObject();
            if (extra) cJSON_AddNumberToObject(extra, "size", (double)size);
            if (!extra || sap_tool_json_wrote("spy", out, A, extra)) {
                fprintf(stderr, "sap spy: cannot print the JSON outcome\n");
                rc = 1;
            }
        } else {
            printf("wrote %s: pattern of %lld x %lld, %lld nonzeros\n", out, (long long)A->nrows,
                   (long long)A->ncols, (long long)A->nnz);
        }
    }
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
}
