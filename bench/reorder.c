/* reorder.c -- benchmark of the SaP reorderings over every matrix of the matrix directory
 * ($SAP_MATRIX_DIR, else the build's SAP_MATRIX_DIR_DEFAULT; MANIFEST.tsv order when
 * present, else all *.mtx.gz by name).
 *
 * Per matrix: N, nnz, the half-bandwidth K of the input; DB (sap_db_matching: status,
 * structural rank when singular, the matching cost sum c_ij with
 * c_ij = log(max_k |a_ik|) - log|a_ij| over non-zeros, time T_DB); CM
 * (sap_cm_reorder, SAP_CM_AUTO) on the DB-permuted matrix (K after DB+CM, T_CM) and on
 * the input itself (K_cm_orig, T_cm_orig: the like-for-like comparison with scipy's RCM
 * on the same pattern); drop-off of the DB-scaled, CM-ordered matrix for
 * delta = 0.99, 0.999, 0.9999 (K, T_Drop for 0.999 = sap_drop_off + sap_csr_band_drop);
 * the third stage (P = 16, fewer for small N so blocks keep >= 32 rows; on the DB+CM
 * matrix without drop-off, the setting of the report's Table 5): max K_i before and
 * after, T_3rd.
 * The DB optimality certificate: the scaling factors are exp of the matching's dual
 * variables, so max |r_i a_ij c_j| <= 1 with |.| = 1 on the matched entries proves the
 * matching optimal (up to rounding); both numbers are reported.
 * Times are the minimum over repetitions (at least 3, more while under 0.2 s in all,
 * at most 50); reordering inputs are rebuilt outside the timed region.
 *
 * Usage: reorder [--csv FILE] [--only NAME[,NAME...]] [--max-nnz N] [--P P] [--threads T]
 * (--threads: CPU threads of the context, 0 = the OpenMP default)
 * Writes one CSV row per matrix (columns in the header) and prints a table. */
#define _POSIX_C_SOURCE 200809L
#include "sap.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *matrix_dir(void)
{
    const char *d = getenv("SAP_MATRIX_DIR");
    if (d && *d) return d;
#ifdef SAP_MATRIX_DIR_DEFAULT
    return SAP_MATRIX_DIR_DEFAULT;
#else
    return "../shared/matrices";
#endif
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Matrix names (without .mtx.gz), in MANIFEST order if there is one. */
static char **list_matrices(const char *dir, int *count)
{
    char path[4096];
    int cap = 256, n = 0;
    char **names = malloc(sizeof(char *) * (size_t)cap);
    snprintf(path, sizeof(path), "%s/MANIFEST.tsv", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        char line[8192];
        int first = 1;
        while (fgets(line, sizeof(line), f)) {
            if (first) {
                first = 0;
                continue;
            }
            char *tab = strchr(line, '\t');
            if (!tab) continue;
            char *file = tab + 1, *tab2 = strchr(file, '\t');
            if (tab2) *tab2 = 0;
            size_t L = strlen(file);
            if (L > 7 && strcmp(file + L - 7, ".mtx.gz") == 0) file[L - 7] = 0;
            if (n == cap) names = realloc(names, sizeof(char *) * (size_t)(cap *= 2));
            names[n++] = strdup(file);
        }
        fclose(f);
    } else {
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            size_t L = strlen(e->d_name);
            if (L > 7 && strcmp(e->d_name + L - 7, ".mtx.gz") == 0) {
                if (n == cap) names = realloc(names, sizeof(char *) * (size_t)(cap *= 2));
                names[n] = strdup(e->d_name);
                names[n][L - 7] = 0;
                n++;
            }
        }
        if (d) closedir(d);
        qsort(names, (size_t)n, sizeof(char *), cmp_str);
    }
    *count = n;
    return names;
}

/* Repetition policy: at least 3 runs, more while the total stays under 0.2 s, at most 50;
 * a single run above 2 s is not repeated. */
static int more_reps(int done, double total, double last)
{
    if (last > 2.0) return 0;
    if (done < 3) return 1;
    return done < 50 && total < 0.2;
}

static sap_int half_bandwidth(const sap_csr *A)
{
    sap_int K = 0;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int d = A->colind[p] > i ? A->colind[p] - i : i - A->colind[p];
            if (d > K) K = d;
        }
    return K;
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL, *only = NULL;
    long long max_nnz = -1;
    sap_int Pdef = 16;
    int threads = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--csv") && a + 1 < argc) csv_path = argv[++a];
        else if (!strcmp(argv[a], "--only") && a + 1 < argc) only = argv[++a];
        else if (!strcmp(argv[a], "--max-nnz") && a + 1 < argc) max_nnz = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--P") && a + 1 < argc) Pdef = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--threads") && a + 1 < argc) threads = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: %s [--csv FILE] [--only NAME,...] [--max-nnz N] [--P P] [--threads T]\n", argv[0]);
            return 2;
        }
    }
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    cfg.print_level = SAP_PRINT_SILENT;
    cfg.threads = threads;
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    const char *dir = matrix_dir();
    int count = 0;
    char **names = list_matrices(dir, &count);
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    if (csv_path && !csv) {
        fprintf(stderr, "cannot write %s\n", csv_path);
        return 1;
    }
    const char *header =
        "name,n,nnz,K0,db_status,db_matched,db_cost,db_log_product,db_initial,T_DB,T_DB_S1,T_DB_S2,T_DB_S3,T_DB_S4,"
        "K_dbcm,cm_tries,cm_chosen,T_CM,K_cm_orig,T_cm_orig,K_drop_0.99,K_drop_0.999,K_drop_0.9999,T_Drop,"
        "P,Ki_max_before,Ki_max_after,T_3rd,threads,db_cert_max_abs,db_cert_diag_dev";
    if (csv) fprintf(csv, "%s\n", header);
    printf("sap reorder benchmark: %s, %d threads\n", dir, sap_context_threads(ctx));
    printf("%-16s %8s %9s %7s %8s %10s %9s %7s %9s %7s %9s %6s %6s %6s %4s %7s %9s\n", "matrix", "N", "nnz", "K0",
           "DB", "cost", "T_DB", "K_cm", "T_CM", "K_cm0", "T_cm0", "K.99", "K.999", "K.9999", "P", "maxKi", "T_3rd");

    for (int m = 0; m < count; m++) {
        if (only) {
            const char *s = strstr(only, names[m]);
            size_t L = strlen(names[m]);
            int ok = 0;
            while (s) {
                if ((s == only || s[-1] == ',') && (s[L] == 0 || s[L] == ',')) ok = 1;
                s = strstr(s + 1, names[m]);
            }
            if (!ok) continue;
        }
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s.mtx.gz", dir, names[m]);
        sap_csr *A = NULL;
        sap_status st = sap_mm_read_csr(ctx, path, NULL, &A, NULL);
        if (st != SAP_OK) {
            fprintf(stderr, "%s: read failed: %s (%s)\n", names[m], sap_status_name(st), sap_context_last_error(ctx));
            continue;
        }
        if (A->nrows != A->ncols || (max_nnz >= 0 && A->nnz > max_nnz)) {
            sap_csr_destroy(A);
            continue;
        }
        const sap_int n = A->nrows;
        sap_int *rowperm = malloc(sizeof(sap_int) * (size_t)(n + 1));
        sap_int *perm = malloc(sizeof(sap_int) * (size_t)(n + 1));
        double *r = malloc(sizeof(double) * (size_t)(n + 1)), *c = malloc(sizeof(double) * (size_t)(n + 1));
        const sap_int K0 = half_bandwidth(A);

        /* DB */
        sap_db_info dbi, best_dbi;
        memset(&best_dbi, 0, sizeof(best_dbi));
        double t_db = INFINITY, total = 0.0;
        sap_status db_st = SAP_OK;
        for (int rep = 0;; rep++) {
            double t0 = now();
            db_st = sap_db_matching(A, rowperm, r, c, &dbi);
            double t = now() - t0;
            total += t;
            if (t < t_db) {
                t_db = t;
                best_dbi = dbi;
            }
            if (db_st != SAP_OK && db_st != SAP_ERR_STRUCTURALLY_SINGULAR) break;
            if (!more_reps(rep + 1, total, t)) break;
        }
        const char *db_status = db_st == SAP_OK ? "ok" : db_st == SAP_ERR_STRUCTURALLY_SINGULAR ? "singular" : "error";
        /* optimality certificate: the scaling comes from the duals, so max |r_i a_ij c_j| <= 1
         * with |.| = 1 on the matching proves the matching optimal (up to rounding) */
        double cert_off = NAN, cert_diag = NAN;
        if (db_st == SAP_OK) {
            sap_int *inv = malloc(sizeof(sap_int) * (size_t)(n + 1));
            for (sap_int k = 0; k < n; k++) inv[rowperm[k]] = k;
            cert_off = 0.0;
            cert_diag = 0.0;
            for (sap_int i = 0; i < n; i++)
                for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                    double b = fabs(r[i] * A->val[p] * c[A->colind[p]]);
                    if (b > cert_off) cert_off = b;
                    if (inv[i] == A->colind[p] && fabs(b - 1.0) > cert_diag) cert_diag = fabs(b - 1.0);
                }
            free(inv);
        }

        /* the DB-permuted, scaled matrix (the input itself when singular) */
        sap_csr *B1 = NULL;
        if (db_st == SAP_OK) {
            sap_csr_permute(A, rowperm, NULL, &B1);
            double *rp = malloc(sizeof(double) * (size_t)(n + 1));
            for (sap_int i = 0; i < n; i++) rp[i] = r[rowperm[i]];
            sap_csr_scale(B1, rp, c);
            free(rp);
        } else {
            sap_csr_copy(A, &B1);
        }

        /* CM on the DB matrix, and on the input */
        sap_cm_info cmi, cmi0;
        double t_cm = INFINITY, t_cm0 = INFINITY;
        total = 0.0;
        for (int rep = 0;; rep++) {
            double t0 = now();
            sap_cm_reorder(B1, SAP_CM_AUTO, perm, &cmi);
            double t = now() - t0;
            total += t;
            if (t < t_cm) t_cm = t;
            if (!more_reps(rep + 1, total, t)) break;
        }
        total = 0.0;
        for (int rep = 0;; rep++) {
            double t0 = now();
            sap_cm_reorder(A, SAP_CM_AUTO, rowperm, &cmi0); /* rowperm reused as scratch */
            double t = now() - t0;
            total += t;
            if (t < t_cm0) t_cm0 = t;
            if (!more_reps(rep + 1, total, t)) break;
        }
        sap_csr *B2 = NULL;
        sap_csr_permute(B1, perm, perm, &B2);

        /* drop-off */
        const double deltas[3] = {0.99, 0.999, 0.9999};
        sap_int Kd[3] = {0, 0, 0};
        double t_drop = INFINITY;
        for (int k = 0; k < 3; k++) {
            double frac;
            total = 0.0;
            for (int rep = 0;; rep++) {
                double t0 = now();
                sap_drop_off(B2, deltas[k], &Kd[k], &frac);
                sap_csr *D = NULL;
                sap_csr_band_drop(B2, Kd[k], &D);
                double t = now() - t0;
                sap_csr_destroy(D);
                total += t;
                if (k == 1 && t < t_drop) t_drop = t;
                if (k != 1 || !more_reps(rep + 1, total, t)) break;
            }
        }

        /* third stage */
        sap_int P = Pdef;
        if (P > n / 32) P = n / 32;
        if (P < 1) P = 1;
        sap_int kb_max = 0, ka_max = 0;
        double t_3rd = 0.0;
        if (P > 1) {
            sap_int *kb = malloc(sizeof(sap_int) * (size_t)P), *ka = malloc(sizeof(sap_int) * (size_t)P);
            t_3rd = INFINITY;
            total = 0.0;
            for (int rep = 0;; rep++) {
                double t0 = now();
                sap_third_stage(B2, P, SAP_CM_AUTO, perm, kb, ka);
                double t = now() - t0;
                total += t;
                if (t < t_3rd) t_3rd = t;
                if (!more_reps(rep + 1, total, t)) break;
            }
            for (sap_int b = 0; b < P; b++) {
                if (kb[b] > kb_max) kb_max = kb[b];
                if (ka[b] > ka_max) ka_max = ka[b];
            }
            free(kb);
            free(ka);
        } else {
            kb_max = ka_max = half_bandwidth(B2);
        }

        char cost[64];
        if (db_st == SAP_OK) snprintf(cost, sizeof(cost), "%.6g", best_dbi.cost);
        else snprintf(cost, sizeof(cost), "rank %lld", (long long)best_dbi.matched);
        printf("%-16s %8lld %9lld %7lld %8s %10s %9.3e %7lld %9.3e %7lld %9.3e %6lld %6lld %6lld %4lld %7lld %9.3e\n",
               names[m], (long long)n, (long long)A->nnz, (long long)K0, db_status, cost, t_db,
               (long long)cmi.K_after, t_cm, (long long)cmi0.K_after, t_cm0, (long long)Kd[0], (long long)Kd[1],
               (long long)Kd[2], (long long)P, (long long)ka_max, t_3rd);
        fflush(stdout);
        if (csv) {
            fprintf(csv,
                    "%s,%lld,%lld,%lld,%s,%lld,%.17g,%.17g,%lld,%.6e,%.6e,%.6e,%.6e,%.6e,%lld,%lld,%s,%.6e,%lld,%.6e,"
                    "%lld,%lld,%lld,%.6e,%lld,%lld,%lld,%.6e,%d,%.17g,%.3e\n",
                    names[m], (long long)n, (long long)A->nnz, (long long)K0, db_status, (long long)best_dbi.matched,
                    db_st == SAP_OK ? best_dbi.cost : NAN, db_st == SAP_OK ? best_dbi.log_product : NAN,
                    (long long)best_dbi.initial_matched, t_db, best_dbi.time_weights, best_dbi.time_initial,
                    best_dbi.time_augment, best_dbi.time_extract, (long long)cmi.K_after, (long long)cmi.tries,
                    cmi.chosen == SAP_CM_FORCE_RCM ? "rcm" : cmi.chosen == SAP_CM_FORCE_CM ? "cm" : "identity", t_cm,
                    (long long)cmi0.K_after, t_cm0, (long long)Kd[0], (long long)Kd[1], (long long)Kd[2], t_drop,
                    (long long)P, (long long)kb_max, (long long)ka_max, t_3rd, sap_context_threads(ctx), cert_off, cert_diag);
            fflush(csv);
        }
        sap_csr_destroy(B2);
        sap_csr_destroy(B1);
        sap_csr_destroy(A);
        free(rowperm);
        free(perm);
        free(r);
        free(c);
    }
    if (csv) fclose(csv);
    for (int m = 0; m < count; m++) free(names[m]);
    free(names);
    sap_context_destroy(ctx);
    return 0;
}
