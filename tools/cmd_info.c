/* cmd_info.c -- `sap info FILE|SPEC`: prints the statistics of a matrix. */
#define _POSIX_C_SOURCE 200809L
#include "args.h"
#include "json_out.h"
#include "sap_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: sap info FILE|SPEC [--threads N] [--allow-nonfinite] [--symmetric-upper=M] [--json]\n\n"
               "Prints the statistics of a matrix: size, nnz, half-bandwidth K, symmetry,\n"
               "zero diagonal entries, degree of diagonal dominance d = min_i |a_ii| / sum_j!=i |a_ij|,\n"
               "estimated SPD-ness and norms.  FILE is Matrix Market (.mtx or .mtx.gz); SPEC is a\n"
               "generator spec such as gen:banded:N=1000,K=10,d=1 (see sap gen --help).\n\n"
               "  --threads N        CPU threads (default: all)\n"
               "  --allow-nonfinite  accept NaN/Inf values in the file\n"
               "  --symmetric-upper=warn|reject|sum  entries above the diagonal of a symmetric\n"
               "                     file: warn (default: take them as given, fill only missing\n"
               "                     mirrors), reject, or sum (mirror all: doubles a stored pair)\n"
               "  --json             print one JSON object instead of the table\n");
}

static const char *fmt_names[] = {"coordinate", "array"};
static const char *field_names[] = {"real", "integer", "pattern"};
static const char *sym_names[] = {"general", "symmetric", "skew-symmetric"};

static const char *yesno(int v) { return v ? "yes" : "no"; }

static void fmt_d(char *buf, size_t n, double d)
{
    if (isinf(d)) snprintf(buf, n, "inf");
    else snprintf(buf, n, "%.6g", d);
}

/* The statistics as one JSON line (mi: what the file said, NULL for a generator spec). */
static int print_json(const char *input, const sap_mm_info *mi, const sap_matrix_stats *s, double tload)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "matrix", input);
    if (mi) {
        cJSON_AddStringToObject(o, "format", fmt_names[mi->format]);
        cJSON_AddStringToObject(o, "field", field_names[mi->field]);
        cJSON_AddStringToObject(o, "symmetry", sym_names[mi->symmetry]);
        cJSON_AddNumberToObject(o, "stored_entries", (double)mi->entries);
    }
    cJSON_AddNumberToObject(o, "nrows", (double)s->nrows);
    cJSON_AddNumberToObject(o, "ncols", (double)s->ncols);
    cJSON_AddNumberToObject(o, "nnz", (double)s->nnz);
    cJSON_AddNumberToObject(o, "half_bandwidth", (double)s->half_bandwidth);
    cJSON_AddNumberToObject(o, "lower_bandwidth", (double)s->lower_bandwidth);
    cJSON_AddNumberToObject(o, "upper_bandwidth", (double)s->upper_bandwidth);
    cJSON_AddNumberToObject(o, "empty_rows", (double)s->empty_rows);
    cJSON_AddNumberToObject(o, "max_row_nnz", (double)s->max_row_nnz);
    cJSON_AddNumberToObject(o, "mean_row_nnz", sap_tool_json_sig(s->mean_row_nnz, 6));
    cJSON_AddNumberToObject(o, "mean_row_width", sap_tool_json_sig(s->mean_row_width, 6));
    cJSON_AddBoolToObject(o, "structurally_symmetric", s->structurally_symmetric);
    cJSON_AddBoolToObject(o, "numerically_symmetric", s->numerically_symmetric);
    cJSON_AddNumberToObject(o, "symmetry_deviation", sap_tool_json_sig(s->symmetry_deviation, 6));
    cJSON_AddNumberToObject(o, "zero_diagonal", (double)s->zero_diagonal);
    if (isinf(s->diag_dominance)) cJSON_AddStringToObject(o, "diag_dominance", "inf"); /* JSON has no infinity */
    else cJSON_AddNumberToObject(o, "diag_dominance", sap_tool_json_sig(s->diag_dominance, 6));
    cJSON_AddNumberToObject(o, "dominant_rows", (double)s->dominant_rows);
    cJSON_AddBoolToObject(o, "spd_estimate", s->spd_estimate);
    cJSON_AddNumberToObject(o, "norm_one", s->norm_one);
    cJSON_AddNumberToObject(o, "norm_inf", s->norm_inf);
    cJSON_AddNumberToObject(o, "norm_fro", s->norm_fro);
    cJSON_AddNumberToObject(o, "norm_max", s->norm_max);
    cJSON_AddNumberToObject(o, "load_seconds", sap_tool_json_fixed(tload, 6));
    int rc = sap_tool_json_print(stdout, o, SAP_JSON_LINE);
    cJSON_Delete(o);
    return rc;
}

int sap_cmd_info(int argc, char **argv)
{
    static const sap_tool_command cmd = {"info", SAP_ARG_THREADS | SAP_ARG_READ | SAP_ARG_JSON, NULL, "matrix", 1, usage,
                                         NULL, NULL};
    sap_tool_args args;
    int rc = sap_tool_parse_args(&cmd, argc, argv, &args);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = sap_tool_need_positional(&cmd, &args))) return rc;
    const char *input = args.positional[0];
    const int json = args.json;
    const sap_mm_read_options ropt = args.read;
    sap_context *ctx = sap_tool_context("info", "cpu", (int)args.threads, 0);
    if (!ctx) return 1;

    sap_csr *A = NULL;
    sap_mm_info mi;
    int from_file = strncmp(input, "gen:", 4) != 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sap_status st = from_file ? sap_mm_read_csr(ctx, input, &ropt, &A, &mi) : sap_gen_spec(ctx, input, &A);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double tload = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (st < 0) {
        rc = sap_tool_fail("info", ctx, st);
        sap_context_destroy(ctx);
        return rc;
    }
    sap_tool_read_warning("info", ctx, st);
    sap_matrix_stats s;
    st = sap_csr_stats(A, &s);
    if (st < 0) {
        rc = sap_tool_fail("info", ctx, st);
        sap_csr_destroy(A);
        sap_context_destroy(ctx);
        return rc;
    }
    char dbuf[64];
    fmt_d(dbuf, sizeof(dbuf), s.diag_dominance);
    if (json) {
        if (print_json(input, from_file ? &mi : NULL, &s, tload)) {
            fprintf(stderr, "sap info: cannot print the JSON (out of memory or write error)\n");
            sap_csr_destroy(A);
            sap_context_destroy(ctx);
            return 1;
        }
    } else {
        printf("matrix                  %s\n", input);
        if (from_file)
            printf("file                    %s %s %s, %lld stored entries\n", fmt_names[mi.format],
                   field_names[mi.field], sym_names[mi.symmetry], (long long)mi.entries);
        printf("size                    %lld x %lld\n", (long long)s.nrows, (long long)s.ncols);
        printf("nnz                     %lld (%.2f per row, max %lld, %lld empty rows)\n", (long long)s.nnz,
               s.mean_row_nnz, (long long)s.max_row_nnz, (long long)s.empty_rows);
        printf("half-bandwidth K        %lld (lower %lld, upper %lld; mean row width %.1f)\n",
               (long long)s.half_bandwidth, (long long)s.lower_bandwidth, (long long)s.upper_bandwidth,
               s.mean_row_width);
        printf("structurally symmetric  %s\n", yesno(s.structurally_symmetric));
        printf("numerically symmetric   %s", yesno(s.numerically_symmetric));
        if (!s.numerically_symmetric && s.structurally_symmetric)
            printf(" (max |a_ij - a_ji| / max |a_ij| = %.3g)", s.symmetry_deviation);
        printf("\n");
        printf("zero diagonal entries   %lld\n", (long long)s.zero_diagonal);
        printf("diagonal dominance d    %s (%lld of %lld rows dominant)\n", dbuf, (long long)s.dominant_rows,
               (long long)s.nrows);
        printf("SPD (estimate)          %s\n", yesno(s.spd_estimate));
        printf("norms                   1: %.6g  inf: %.6g  fro: %.6g  max: %.6g\n", s.norm_one, s.norm_inf,
               s.norm_fro, s.norm_max);
        printf("load time               %.3f s\n", tload);
    }
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return 0;
}
