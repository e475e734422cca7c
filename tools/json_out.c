/* json_out.c -- owns how JSON reaches a file: cJSON writes the document (escaping, numbers,
 * null for NaN/Inf), this file only lays its whitespace out.  cJSON's formatted output puts
 * a tab after each colon and indents with tabs; the tool's layout, kept from its earlier
 * output, is ": " with two-space indents (or one line).  cJSON escapes every control
 * character inside strings, so each raw tab or newline in its output is layout. */
#include "json_out.h"

#include "sap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int put_layout(FILE *f, const char *s, sap_json_layout layout)
{
    char prev = 0; /* the last character written */
    for (const char *p = s; *p; p++) {
        if (*p == '\t') {
            if (prev == ':') { /* "key":<tab>value */
                fputc(' ', f);
                prev = ' ';
            } else if (layout == SAP_JSON_PRETTY) {
                fputs("  ", f);
            }
            continue;
        }
        if (*p == '\n' && layout == SAP_JSON_LINE) {
            const char *q = p + 1;
            while (*q == '\t') q++;
            /* nothing after an opening or before a closing bracket, a space after a comma */
            if (prev != '{' && prev != '[' && *q != '}' && *q != ']') {
                fputc(' ', f);
                prev = ' ';
            }
            p = q - 1;
            continue;
        }
        fputc(*p, f);
        prev = *p;
    }
    fputc('\n', f);
    return ferror(f) ? -1 : 0;
}

int sap_tool_json_print(FILE *f, const cJSON *doc, sap_json_layout layout)
{
    char *s = doc ? cJSON_Print(doc) : NULL;
    if (!s) return -1;
    int rc = put_layout(f, s, layout);
    cJSON_free(s);
    return rc;
}

int sap_tool_json_write(const char *path, const cJSON *doc, sap_json_layout layout)
{
    if (strcmp(path, "-") == 0) return sap_tool_json_print(stdout, doc, layout);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int rc = sap_tool_json_print(f, doc, layout);
    if (fclose(f) != 0) rc = -1;
    return rc;
}

double sap_tool_json_sig(double v, int digits)
{
    if (!isfinite(v)) return v;
    char buf[64];
    snprintf(buf, sizeof(buf), "%.*g", digits, v);
    return strtod(buf, NULL);
}

double sap_tool_json_fixed(double v, int decimals)
{
    if (!isfinite(v) || fabs(v) > 1e15) return v;
    char buf[64];
    snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    return strtod(buf, NULL);
}

int sap_tool_json_wrote(const char *command, const char *path, const sap_csr *A, cJSON *extra)
{
    cJSON *o = extra ? extra : cJSON_CreateObject();
    if (!o) return -1;
    cJSON_AddStringToObject(o, "command", command);
    cJSON_AddStringToObject(o, "output", path);
    cJSON_AddNumberToObject(o, "nrows", (double)A->nrows);
    cJSON_AddNumberToObject(o, "ncols", (double)A->ncols);
    cJSON_AddNumberToObject(o, "nnz", (double)A->nnz);
    int rc = sap_tool_json_print(stdout, o, SAP_JSON_LINE);
    cJSON_Delete(o);
    return rc;
}
