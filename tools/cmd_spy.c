/* cmd_spy.c -- `sap spy FILE|SPEC -o out.png`: draws the sparsity pattern. */
#include "sap_tool.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: sap spy FILE|SPEC -o OUT.png [--size PIXELS]\n\n"
               "Draws the sparsity pattern of a matrix as a PNG.  Matrices with more rows than\n"
               "pixels are density-shaded: the darker a pixel, the more entries fall into it\n"
               "(logarithmic scale).\n\n"
               "  -o OUT.png       output image (required)\n"
               "  --size PIXELS    image size (default 600)\n");
}

int sap_cmd_spy(int argc, char **argv)
{
    const char *input = NULL, *out = NULL;
    long long size = 600;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            if (sap_tool_parse_int(argv[++i], &size) || size < 16 || size > 8192) {
                fprintf(stderr, "sap spy: --size needs an integer in 16..8192\n");
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sap spy: unknown option or missing value '%s'\n", argv[i]);
            return 2;
        } else if (!input) input = argv[i];
        else {
            fprintf(stderr, "sap spy: more than one matrix given\n");
            return 2;
        }
    }
    if (!input || !out) {
        fprintf(stderr, "sap spy: %s\nusage: sap spy FILE|SPEC -o OUT.png [--size PIXELS]\n",
                !input ? "no matrix given" : "no output file given (-o OUT.png)");
        return 2;
    }
    sap_context *ctx = sap_tool_context("spy", "cpu", 0, 0);
    if (!ctx) return 1;
    sap_csr *A = NULL;
    sap_status st = sap_matrix_load(ctx, input, NULL, &A);
    int rc = 0;
    if (st < 0) rc = sap_tool_fail("spy", ctx, st);
    else if (A->nrows == 0 || A->ncols == 0) {
        fprintf(stderr, "sap spy: the matrix is empty (%lld x %lld)\n", (long long)A->nrows, (long long)A->ncols);
        rc = 1;
    } else {
        int e = sap_tool_spy_png(A, out, (int)size);
        if (e) {
            fprintf(stderr, "sap spy: cannot write '%s'%s\n", out, e == -2 ? " (out of memory)" : "");
            rc = 1;
        } else {
            printf("wrote %s: pattern of %lld x %lld, %lld nonzeros\n", out, (long long)A->nrows,
                   (long long)A->ncols, (long long)A->nnz);
        }
    }
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
}
