/* cmd_reorder.c -- `sap reorder FILE|SPEC`: runs the SaP reordering chain (diagonal
 * boosting, Cuthill-McKee, drop-off, third stage) and reports each stage. */
#include "sap_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: sap reorder FILE|SPEC [--db|--transversal|--no-db] [--no-scale] [--cm|--no-cm]\n"
               "                   [--drop DELTA] [--partitions P] [-o OUT.mtx[.gz]]\n"
               "                   [--spy BEFORE.png,AFTER.png] [--threads N]\n\n"
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
               "  --threads N     CPU threads (default: all)\n");
}

static const char *stage_names[SAP_REORDER_STAGES] = {"original", "DB", "CM", "drop-off", "third stage"};
static const char *stage_timers[SAP_REORDER_STAGES] = {"", "T_DB", "T_CM", "T_Drop", "T_3rd"};

static int parse_delta(const char *s, double *d)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !(v > 0.0) || v > 1.0) return -1;
    *d = v;
    return 0;
}

int sap_cmd_reorder(int argc, char **argv)
{
    const char *input = NULL, *out = NULL, *spy = NULL;
    long long threads = 0, partitions = 0;
    sap_reorder_options opt;
    sap_reorder_options_init(&opt);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--db")) opt.db = SAP_DB_PRODUCT;
        else if (!strcmp(a, "--transversal")) opt.db = SAP_DB_TRANSVERSAL;
        else if (!strcmp(a, "--no-db")) opt.db = SAP_DB_NONE;
        else if (!strcmp(a, "--no-scale")) opt.scale = 0;
        else if (!strcmp(a, "--cm")) opt.cm = 1;
        else if (!strcmp(a, "--no-cm")) opt.cm = 0;
        else if (!strcmp(a, "--drop") && has) {
            if (parse_delta(argv[++i], &opt.drop_delta)) {
                fprintf(stderr, "sap reorder: --drop needs a fraction in (0, 1]\n");
                return 2;
            }
        } else if (!strcmp(a, "--partitions") && has) {
            if (sap_tool_parse_int(argv[++i], &partitions) || partitions < 1) {
                fprintf(stderr, "sap reorder: --partitions needs a positive integer\n");
                return 2;
            }
        } else if (!strcmp(a, "--threads") && has) {
            if (sap_tool_parse_int(argv[++i], &threads)) {
                fprintf(stderr, "sap reorder: --threads needs a non-negative integer\n");
                return 2;
            }
        } else if (!strcmp(a, "-o") && has) out = argv[++i];
        else if (!strcmp(a, "--spy") && has) spy = argv[++i];
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "sap reorder: unknown option or missing value '%s'\n", a);
            return 2;
        } else if (!input) input = a;
        else {
            fprintf(stderr, "sap reorder: more than one matrix given\n");
            return 2;
        }
    }
    if (!input) {
        fprintf(stderr, "sap reorder: no matrix given\nusage: sap reorder FILE|SPEC [options] (--help for details)\n");
        return 2;
    }
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
    opt.partitions = partitions;

    sap_context *ctx = sap_tool_context("reorder", "cpu", (int)threads, 0);
    if (!ctx) return 1;
    int rc = 0;
    sap_csr *A = NULL;
    sap_reorder_result *res = NULL;
    sap_status st = sap_matrix_load(ctx, input, NULL, &A);
    if (st >= 0 && A->nrows != A->ncols)
        st = SAP_ERR_NOT_SQUARE, fprintf(stderr, "sap reorder: the matrix is %lld x %lld, not square\n",
                                         (long long)A->nrows, (long long)A->ncols);
    if (st >= 0) st = sap_reorder(A, &opt, &res);
    if (st < 0) {
        rc = sap_tool_fail("reorder", ctx, st);
        goto done;
    }
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
        printf("wrote %s (%s)\n", out, res->A_band ? "the band after drop-off" : "the reordered matrix");
    }
    if (spy) {
        if (sap_tool_spy_png(A, spy_before, 600) || sap_tool_spy_png(final, spy_after, 600)) {
            fprintf(stderr, "sap reorder: cannot write the spy images '%s'\n", spy);
            rc = 1;
            goto done;
        }
        printf("wrote %s and %s\n", spy_before, spy_after);
    }
done:
    sap_reorder_result_destroy(res);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
}
