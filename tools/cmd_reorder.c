/* cmd_reorder.c -- `sap reorder FILE|SPEC`: runs the SaP reordering chain (diagonal
 * boosting, Cuthill-McKee, drop-off, third stage) and reports each stage. */
#include "args.h"
#include "json_out.h"
#include "sap_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: sap reorder FILE|SPEC [--db|--transversal|--no-db] [--no-scale] [--cm|--no-cm]\n"
               "                   [--drop DELTA] [--partitions P] [-o OUT.mtx[.gz]]\n"
               "                   [--spy BEFORE.png,AFTER.png] [--threads N] [--allow-nonfinite] [--json]\n\n"
               "Reorders a square matrix into a diagonally heavy narrow band as SaP does and prints,\n"
               "for each stage, the half-bandwidth K, the mean row width inside the band, the\n"
               "fill of the band, the degree of diagonal dominance d and the time:\n\n"
               "  --db            diagonal boosting by max-product matching + scaling (default)\n"
               "  --transversal   diagonal boosting by a maximum transversal only (no scaling)\n"
               "  --no-db         no diagonal boosting\n"
               "  --no-scale      keep the matching's row permutation but not its scaling\n"
               "  --cm / --no-cm  Cuthill-McKee on A + A^T (default on)\n"
               "  --drop DELTA    drop-off keeping the fraction DELTA of ||A||_F^2 (e.g. 0.999)\n"
               "  --partitions P  third-stage Cuthill-McKee inside each of P diagonal blocks\n"
               "  -o OUT          write the reordered matrix (the dropped band with --drop)\n"
               "  --spy B,A       draw the pattern before and after as PNG images\n"
               "  --threads N     CPU threads (default: all)\n"
               "  --json          print one JSON object (stages, DB, CM, drop-off, third stage,\n"
               "                  files written) instead of the table\n"
               "  --allow-nonfinite  accept NaN/Inf values in the file\n"

               "  --symmetric-upper=warn|reject|sum  entries above the diagonal of a symmetric\n"
               "                     file: warn (default: take them as given, fill only missing\n"
               "                     mirrors), reject, or sum (mirror all: doubles a stored pair)\n");
}

static const char *stage_names[SAP_REORDER_STAGES] = {"original", "DB", "CM", "drop-off", "third stage"};
static const char *stage_timers[SAP_REORDER_STAGES] = {"", "T_DB", "T_CM", "T_Drop", "T_3rd"};

static void print_text(const char *input, const sap_csr *A, const sap_reorder_result *res,
                       const sap_reorder_options *opt_)
{
    const sap_reorder_options opt = *opt_;
    printf("matrix %s: %lld x %lld, %lld nonzeros\n\n", input, (long long)A->nrows, (long long)A->ncols,
           (long long)A->nnz);
    printf("%-12s %-7s %10s %12s %12s %10s %12s %10s %10s\n", "stage", "timer", "K", "nnz", "mean width",
           "band fill", "d", "zero diag", "time (s)");
    for (int s = 0; s < SAP_REORDER_STAGES; s++) {
        const sap_reorder_stage *g = &res->stage[s];
        if (!g->done) continue;
        char dbuf[32];
        if (isinf(g->diag_dominance)) snprintf(dbuf, sizeof(dbuf), "inf");
        else snprintf(dbuf, sizeof(dbuf), "%.4g", g->diag_dominance);
        printf("%-12s %-7s %10lld %12lld %12.1f %10.4f %12s %10lld %10.4f\n", stage_names[s], stage_timers[s],
               (long long)g->K, (long long)g->nnz, g->mean_row_width, g->band_fill, dbuf,
               (long long)g->zero_diagonal, g->time);
    }
    printf("\n");
    if (res->stage[SAP_STAGE_DB].done)
        printf("DB: %lld of %lld matched (%lld greedily, %lld augmenting paths), cost %.6g, %s\n",
               (long long)res->db.matched, (long long)res->db.n, (long long)res->db.initial_matched,
               (long long)res->db.augmentations, res->db.cost,
               opt.db == SAP_DB_PRODUCT && opt.scale ? "scaled to I-matrix form" : "not scaled");
    if (res->stage[SAP_STAGE_CM].done)
        printf("CM: %s, K %lld -> %lld, %lld component%s, %lld searches\n",
               res->cm.chosen == SAP_CM_FORCE_CM ? "Cuthill-McKee"
               : res->cm.chosen == SAP_CM_FORCE_RCM ? "reverse Cuthill-McKee"
                                                  : "identity kept (no ordering was narrower)",
               (long long)res->cm.K_before, (long long)res->cm.K_after, (long long)res->cm.components,
               res->cm.components == 1 ? "" : "s", (long long)res->cm.tries);
    if (res->stage[SAP_STAGE_DROP].done)
        printf("drop-off: K = %lld keeps %.6f of ||A||_F^2 (delta %.6g)\n", (long long)res->K_drop,
               res->kept_fraction, opt.drop_delta);
    if (res->stage[SAP_STAGE_THIRD].done) {
        sap_int kmax = 0, kbmax = 0;
        double ksum = 0;
        for (sap_int b = 0; b < res->P; b++) {
            if (res->Ki[b] > kmax) kmax = res->Ki[b];
            if (res->Ki_before[b] > kbmax) kbmax = res->Ki_before[b];
            ksum += (double)res->Ki[b];
        }
        printf("third stage: P = %lld blocks, max K_i %lld -> %lld, mean K_i %.1f\n", (long long)res->P,
               (long long)kbmax, (long long)kmax, ksum / (double)res->P);
    }
    printf("total time %.4f s\n", res->time_total);

}

/* The --json output: every stage run with its statistics, the stages' details, the files. */
static int print_json(const char *input, const sap_csr *A, const sap_reorder_result *res, const char *out,
                      const char *spy_before, const char *spy_after)
{
    cJSON *o = cJSON_CreateObject(), *stages = cJSON_CreateArray();
    if (!o || !stages) {
        cJSON_Delete(o);
        cJSON_Delete(stages);
        return -1;
    }
    cJSON_AddStringToObject(o, "command", "reorder");
    cJSON_AddStringToObject(o, "matrix", input);
    cJSON_AddNumberToObject(o, "nrows", (double)A->nrows);
    cJSON_AddNumberToObject(o, "nnz", (double)A->nnz);
    for (int s = 0; s < SAP_REORDER_STAGES; s++) {
        const sap_reorder_stage *g = &res->stage[s];
        cJSON *e = g->done ? cJSON_CreateObject() : NULL;
        if (!e) continue;
        cJSON_AddStringToObject(e, "stage", stage_names[s]);
        if (stage_timers[s][0]) cJSON_AddStringToObject(e, "timer", stage_timers[s]);
        cJSON_AddNumberToObject(e, "K", (double)g->K);
        cJSON_AddNumberToObject(e, "nnz", (double)g->nnz);
        cJSON_AddNumberToObject(e, "mean_row_width", sap_tool_json_sig(g->mean_row_width, 6));
        cJSON_AddNumberToObject(e, "band_fill", sap_tool_json_sig(g->band_fill, 6));
        if (isinf(g->diag_dominance)) cJSON_AddStringToObject(e, "diag_dominance", "inf");
        else cJSON_AddNumberToObject(e, "diag_dominance", sap_tool_json_sig(g->diag_dominance, 6));
        cJSON_AddNumberToObject(e, "zero_diagonal", (double)g->zero_diagonal);
        cJSON_AddNumberToObject(e, "seconds", sap_tool_json_fixed(g->time, 6));
        cJSON_AddItemToArray(stages, e);
    }
    cJSON_AddItemToObject(o, "stages", stages);
    if (res->stage[SAP_STAGE_DB].done) {
        cJSON_AddNumberToObject(o, "db_matched", (double)res->db.matched);
        cJSON_AddBoolToObject(o, "db_scaled", res->row_scale != NULL);
    }
    if (res->stage[SAP_STAGE_CM].done) {
        cJSON_AddStringToObject(o, "cm_ordering", res->cm.chosen == SAP_CM_FORCE_CM    ? "cm"
                                                  : res->cm.chosen == SAP_CM_FORCE_RCM ? "rcm"
                                                                                       : "identity");
        cJSON_AddNumberToObject(o, "cm_components", (double)res->cm.components);
    }
    if (res->stage[SAP_STAGE_DROP].done) {
        cJSON_AddNumberToObject(o, "K_drop", (double)res->K_drop);
        cJSON_AddNumberToObject(o, "kept_fraction", sap_tool_json_sig(res->kept_fraction, 8));
    }
    if (res->stage[SAP_STAGE_THIRD].done) {
        cJSON *ki = cJSON_CreateArray();
        for (sap_int b = 0; ki && b < res->P; b++) cJSON_AddItemToArray(ki, cJSON_CreateNumber((double)res->Ki[b]));
        cJSON_AddNumberToObject(o, "partitions", (double)res->P);
        if (ki) cJSON_AddItemToObject(o, "K_i", ki);
    }
    cJSON_AddNumberToObject(o, "seconds", sap_tool_json_fixed(res->time_total, 6));
    if (out) cJSON_AddStringToObject(o, "output", out);
    if (spy_before[0]) {
        cJSON_AddStringToObject(o, "spy_before", spy_before);
        cJSON_AddStringToObject(o, "spy_after", spy_after);
    }
    int rc = sap_tool_json_print(stdout, o, SAP_JSON_LINE);
    cJSON_Delete(o);
    return rc;
}

enum { OPT_DB = SAP_ARG_OWN, OPT_TRANSVERSAL, OPT_NO_DB, OPT_NO_SCALE, OPT_CM, OPT_NO_CM, OPT_DROP, OPT_PARTITIONS, OPT_SPY };

typedef struct reorder_args {
    sap_reorder_options opt;
    long long partitions;
    const char *spy;
} reorder_args;

static int take(void *state, int val, const char *arg)
{
    reorder_args *r = state;
    switch (val) {
    case OPT_DB: r->opt.db = SAP_DB_PRODUCT; return 0;
    case OPT_TRANSVERSAL: r->opt.db = SAP_DB_TRANSVERSAL; return 0;
    case OPT_NO_DB: r->opt.db = SAP_DB_NONE; return 0;
    case OPT_NO_SCALE: r->opt.scale = 0; return 0;
    case OPT_CM: r->opt.cm = 1; return 0;
    case OPT_NO_CM: r->opt.cm = 0; return 0;
    case OPT_SPY: r->spy = arg; return 0;
    case OPT_DROP: {
        double d = 0;
        if (sap_tool_parse_real(arg, &d) || !(d > 0.0) || d > 1.0) {
            fprintf(stderr, "sap reorder: --drop needs a fraction in (0, 1]\n");
            return 2;
        }
        r->opt.drop_delta = d;
        return 0;
    }
    case OPT_PARTITIONS:
        if (sap_tool_parse_int(arg, &r->partitions) || r->partitions < 1) {
            fprintf(stderr, "sap reorder: --partitions needs a positive integer\n");
            return 2;
        }
        return 0;
    default: return 2;
    }
}

int sap_cmd_reorder(int argc, char **argv)
{
    static const struct option own[] = {
        {"db", no_argument, NULL, OPT_DB},          {"transversal", no_argument, NULL, OPT_TRANSVERSAL},
        {"no-db", no_argument, NULL, OPT_NO_DB},    {"no-scale", no_argument, NULL, OPT_NO_SCALE},
        {"cm", no_argument, NULL, OPT_CM},          {"no-cm", no_argument, NULL, OPT_NO_CM},
        {"drop", required_argument, NULL, OPT_DROP}, {"partitions", required_argument, NULL, OPT_PARTITIONS},
        {"spy", required_argument, NULL, OPT_SPY},  {NULL, 0, NULL, 0}};
    reorder_args r;
    memset(&r, 0, sizeof(r));
    sap_reorder_options_init(&r.opt);
    const sap_tool_command cmd = {"reorder", SAP_ARG_THREADS | SAP_ARG_OUTPUT | SAP_ARG_READ | SAP_ARG_JSON, own, "matrix", 1, usage,
                                  take, &r};
    sap_tool_args args;
    int rc = sap_tool_parse_args(&cmd, argc, argv, &args);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = sap_tool_need_positional(&cmd, &args))) return rc;
    const char *input = args.positional[0], *out = args.output, *spy = r.spy;
    sap_reorder_options opt = r.opt;
    char spy_before[1024] = "", spy_after[1024] = "";
    if (spy) {
        const char *comma = strchr(spy, ',');
        if (!comma || comma == spy || !comma[1] || (size_t)(comma - spy) >= sizeof(spy_before) ||
            strlen(comma + 1) >= sizeof(spy_after)) {
            fprintf(stderr, "sap reorder: --spy needs two file names: BEFORE.png,AFTER.png\n");
            return 2;
        }
        memcpy(spy_before, spy, (size_t)(comma - spy));
        strcpy(spy_after, comma + 1);
    }
    opt.partitions = r.partitions;

    sap_context *ctx = sap_tool_context("reorder", "cpu", (int)args.threads, 0);
    if (!ctx) return 1;
    sap_csr *A = NULL;
    sap_reorder_result *res = NULL;
    sap_status st = sap_matrix_load(ctx, input, &args.read, &A);
    sap_tool_read_warning("reorder", ctx, st);
    if (st >= 0 && A->nrows != A->ncols)
        st = SAP_ERR_NOT_SQUARE, fprintf(stderr, "sap reorder: the matrix is %lld x %lld, not square\n",
                                         (long long)A->nrows, (long long)A->ncols);
    if (st >= 0) st = sap_reorder(A, &opt, &res);
    if (st < 0) {
        rc = sap_tool_fail("reorder", ctx, st);
        goto done;
    }
    if (!args.json) print_text(input, A, res, &opt);

    const sap_csr *final = res->A_band ? res->A_band : res->A;
    if (out) {
        sap_mm_write_options wo;
        sap_mm_write_options_init(&wo);
        char comment[512];
        snprintf(comment, sizeof(comment), "reordered by sap %s from %s", sap_version_string(), input);
        wo.comment = comment;
        st = sap_mm_write_csr(final, out, &wo);
        if (st < 0) {
            rc = sap_tool_fail("reorder", ctx, st);
            goto done;
        }
        if (!args.json) printf("wrote %s (%s)\n", out, res->A_band ? "the band after drop-off" : "the reordered matrix");
    }
    if (spy) {
        if (sap_tool_spy_png(A, spy_before, 600) || sap_tool_spy_png(final, spy_after, 600)) {
            fprintf(stderr, "sap reorder: cannot write the spy images '%s'\n", spy);
            rc = 1;
            goto done;
        }
        if (!args.json) printf("wrote %s and %s\n", spy_before, spy_after);
    }
    if (args.json && print_json(input, A, res, out, spy_before, spy_after)) {
        fprintf(stderr, "sap reorder: cannot print the JSON output\n");
        rc = 1;
    }
done:
    sap_reorder_result_destroy(res);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
}
