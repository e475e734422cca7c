/* json_out.h -- prints the cJSON documents of the tool (sap info --json, sap solve --report)
 * in its layout, and rounds values the way the text output shows them. */
#ifndef SAP_TOOL_JSON_OUT_H
#define SAP_TOOL_JSON_OUT_H

#include <cjson/cJSON.h>
#include <stdio.h>

typedef enum sap_json_layout {
    SAP_JSON_LINE,  /* one line: {"a": 1, "b": [1, 2]} */
    SAP_JSON_PRETTY /* one member per line, indented by two spaces */
} sap_json_layout;

/* Prints doc followed by a newline.  0 on success, -1 when out of memory or on a write error. */
int sap_tool_json_print(FILE *f, const cJSON *doc, sap_json_layout layout);

/* Writes doc to the file path (created or truncated; "-": standard output).  0 on success, -1 on failure. */
int sap_tool_json_write(const char *path, const cJSON *doc, sap_json_layout layout);

/* The one-line JSON outcome of a command that wrote a matrix-derived file (sap gen, sap
 * spy): {"command": ..., "output": path, "nrows", "ncols", "nnz"} plus extra members
 * (may be NULL, taken over), on stdout.  0 on success, -1 on failure. */
struct sap_csr;
int sap_tool_json_wrote(const char *command, const char *path, const struct sap_csr *A, cJSON *extra);

/* v rounded to `digits` significant digits (as %.*g prints it); non-finite v unchanged. */
double sap_tool_json_sig(double v, int digits);

/* v rounded to `decimals` digits after the point (as %.*f prints it), e.g. seconds to 1e-6. */
double sap_tool_json_fixed(double v, int decimals);

#endif
