/* suite_report.c -- suite.csv reading and writing, and the markdown summary of bench/suite:
 *  - a per-matrix table of times to solution like Table 8 of 003_899a8dfc78ed100b.txt
 *    (ms; failures marked: fail / NC / OOM / T/O / crash, n/a when not run);
 *  - solve counts per solver;
 *  - log2 speedups S = log2(T_anchor / T_sap) over the matrices both solve (Eq. 14 of the
 *    paper) with min, Q1, median, Q3, max (quartiles by linear interpolation between order
 *    statistics, as numpy.percentile), like Figure 12;
 *  - the issue's targets: sap's solve rate, crashes, the matrices where sap beats cuDSS,
 *    and the sap/cuDSS speedup on the generated synthetic N = 400,000, K = 100 system;
 *  - issue 19's targets over the systems with N >= 10,000 (sap against the fastest anchor,
 *    the medians against the CPU direct solvers and cuDSS, the oracle over sap's timed methods). */
#define _POSIX_C_SOURCE 200809L
#include "suite_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* sap_direct_host / sap_direct_cudss and sap_sapd .. sap_jacobi: sap_solver with that
 * method forced (sap's own toolbox beside the strategy's choice, for the oracle column;
 * not anchors: left out of the speedup table) */
const char *const suite_solver_names[SUITE_NSOLVERS] = {
    "sap",         "superlu",       "umfpack",         "mumps",          "pardiso",  "cudss",
    "cusolver_qr", "cusparse_ilu0", "sap_direct_host", "sap_direct_cudss", "sap_sapd", "sap_sapc",
    "sap_band_lu", "sap_ilu",       "sap_bjacobi",     "sap_jacobi"};

static void csv_field(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') fputc('"', f);
            fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
}

static void csv_num(FILE *f, double v, const char *fmt)
{
    if (isnan(v)) return; /* empty field */
    fprintf(f, fmt, v);
}

void suite_csv_header(FILE *f)
{
    fputs("name,set,N,nnz,spd,solver,status,time_s,init_s,rel_error,rel_residual,notes\n", f);
}

void suite_csv_write(FILE *f, const suite_row *r)
{
    csv_field(f, r->name);
    fprintf(f, ",%s,%lld,%lld,%d,", r->set, r->n, r->nnz, r->spd);
    csv_field(f, r->solver);
    fprintf(f, ",%s,", r->status);
    csv_num(f, r->time_s, "%.6g");
    fputc(',', f);
    csv_num(f, r->init_s, "%.4g");
    fputc(',', f);
    csv_num(f, r->rel_error, "%.3e");
    fputc(',', f);
    csv_num(f, r->rel_residual, "%.3e");
    fputc(',', f);
    csv_field(f, r->notes);
    fputc('\n', f);
    fflush(f);
}

int suite_rows_add(suite_rows *rows, const suite_row *r)
{
    for (int i = 0; i < rows->n; i++)
        if (!strcmp(rows->v[i].name, r->name) && !strcmp(rows->v[i].solver, r->solver)) {
            rows->v[i] = *r;
            return 0;
        }
    if (rows->n == rows->cap) {
        int cap = rows->cap ? 2 * rows->cap : 256;
        suite_row *v = realloc(rows->v, sizeof(suite_row) * (size_t)cap);
        if (!v) return -1;
        rows->v = v, rows->cap = cap;
    }
    rows->v[rows->n++] = *r;
    return 0;
}

void suite_rows_free(suite_rows *rows)
{
    free(rows->v);
    memset(rows, 0, sizeof *rows);
}

/* Splits one CSV record (quoted fields allowed, no newlines inside) into at most max
 * fields, in place. */
static int csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            char *w = ++p;
            fields[n++] = w;
            for (;;) {
                if (*p == '\0') break;
                if (*p == '"') {
                    if (p[1] == '"') {
                        *w++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *w++ = *p++;
            }
            *w = '\0';
            while (*p && *p != ',') p++;
        } else {
            fields[n++] = p;
            while (*p && *p != ',') p++;
        }
        if (*p != ',') break;
        *p++ = '\0';
    }
    return n;
}

static double num_or_nan(const char *s) { return (s && *s) ? strtod(s, NULL) : NAN; }

int suite_csv_read(const char *path, suite_rows *rows)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0 || !strncmp(line, "name,", 5)) continue;
        char *fl[12];
        int nf = csv_split(line, fl, 12);
        if (nf < 11) {
            fprintf(stderr, "%s:%d: %d fields, skipped\n", path, lineno, nf);
            continue;
        }
        suite_row r;
        memset(&r, 0, sizeof r);
        snprintf(r.name, sizeof r.name, "%s", fl[0]);
        snprintf(r.set, sizeof r.set, "%s", fl[1]);
        r.n = atoll(fl[2]);
        r.nnz = atoll(fl[3]);
        r.spd = atoi(fl[4]);
        snprintf(r.solver, sizeof r.solver, "%s", fl[5]);
        snprintf(r.status, sizeof r.status, "%s", fl[6]);
        r.time_s = num_or_nan(fl[7]);
        r.init_s = num_or_nan(fl[8]);
        r.rel_error = num_or_nan(fl[9]);
        r.rel_residual = num_or_nan(fl[10]);
        snprintf(r.notes, sizeof r.notes, "%s", nf > 11 ? fl[11] : "");
        suite_rows_add(rows, &r);
    }
    free(line);
    fclose(f);
    return 0;
}

/* ---- summary -------------------------------------------------------------------------- */

typedef struct mat_entry {
    const char *name, *set;
    long long n, nnz;
    int spd;
    const suite_row *by_solver[SUITE_NSOLVERS];
} mat_entry;

static int solver_index(const char *s)
{
    for (int i = 0; i < SUITE_NSOLVERS; i++)
        if (!strcmp(s, suite_solver_names[i])) return i;
    return -1;
}

static int cmp_mat(const void *a, const void *b)
{
    const mat_entry *x = a, *y = b;
    int sx = strcmp(x->set, "real") != 0, sy = strcmp(y->set, "real") != 0; /* real first */
    if (sx != sy) return sx - sy;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *s, int n, double q) /* s sorted, n >= 1 */
{
    double pos = q * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1) return s[n - 1];
    double f = pos - i;
    return s[i] + f * (s[i + 1] - s[i]);
}

static int is_ok(const suite_row *r) { return r && !strcmp(r->status, "ok") && r->time_s > 0; }
static int was_run(const suite_row *r) { return r && strcmp(r->status, "n-a") != 0; }

/* Cell of the per-matrix table. */
static void cell(char *buf, size_t len, const suite_row *r)
{
    if (!r) {
        snprintf(buf, len, " ");
    } else if (is_ok(r)) {
        snprintf(buf, len, "%.3E", r->time_s * 1e3);
    } else if (!strcmp(r->status, "oom")) {
        snprintf(buf, len, "OOM");
    } else if (!strcmp(r->status, "timeout")) {
        snprintf(buf, len, "T/O");
    } else if (!strcmp(r->status, "crash")) {
        snprintf(buf, len, "CRASH");
    } else if (!strcmp(r->status, "n-a")) {
        snprintf(buf, len, "n/a");
    } else if (strstr(r->notes, "not converged") || strstr(r->notes, "NOT_CONVERGED")) {
        snprintf(buf, len, "NC");
    } else {
        snprintf(buf, len, "-");
    }
}

/* ---- issue 19's targets over the systems with N >= SUITE_I19_MIN_N --------------------
 * Anchors: SuperLU, UMFPACK, MUMPS, PARDISO (CPU direct) and cuDSS.  sap's toolbox as the
 * suite measures it: sap's choice (solver "sap") and each method forced (sap_direct_host,
 * sap_direct_cudss, sap_sapd .. sap_jacobi); the oracle column is the best of those that solved.
 * Medians are over the systems both sides solve; a system an anchor solves and sap does not
 * is listed and counts against "never over 1.5x". */
#define SUITE_I19_MIN_N 10000

/* "- median WHAT = q over n systems (target >= target: met)"; v is sorted here */
static void median_line(FILE *f, double *v, int n, const char *what, double target, const char *against)
{
    if (n == 0) {
        fprintf(f, "- median against %s: no system both solve.\n", against);
        return;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double q = quantile(v, n, 0.5);
    fprintf(f, "- median %s = %.3g over %d systems (target >= %g: %s).\n", what, q, n, target,
            q >= target ? "met" : "not met");
}

static void write_issue19(FILE *f, const mat_entry *m, int nm, const int *present)
{
    static const char *const anchors[] = {"superlu", "umfpack", "mumps", "pardiso", "cudss"};
    static const char *const toolbox[] = {"sap",      "sap_direct_host", "sap_direct_cudss", "sap_sapd",
                                          "sap_sapc", "sap_band_lu",     "sap_ilu",          "sap_bjacobi",
                                          "sap_jacobi"};
    const int na = (int)(sizeof anchors / sizeof anchors[0]), nt = (int)(sizeof toolbox / sizeof toolbox[0]);
    fprintf(f, "\n## Targets of issue 19 (systems with N >= %d)\n\n", SUITE_I19_MIN_N);
    fprintf(f, "Anchors: SuperLU, UMFPACK, MUMPS, PARDISO (CPU direct; those run) and cuDSS.  Oracle: the fastest of "
               "sap's methods the suite times on its own (sap's choice and each method forced without fallback, "
               "of those run: sap_direct_host, sap_direct_cudss, sap_sapd, sap_sapc, sap_band_lu, sap_ilu, "
               "sap_bjacobi, sap_jacobi; the iterative ones under --oracle-timeout).  Ratios > 1 in the last three ratio columns: sap is faster.\n\n");
    fprintf(f, "| Name | N | sap (ms) | fastest anchor | its time (ms) | T_sap / T_fastest | T_CPU direct / T_sap "
               "| T_cuDSS / T_sap | best sap method | T_sap / T_best |\n");
    fprintf(f, "|---|---:|---:|---|---:|---:|---:|---:|---|---:|\n");
    double *r_cpu = malloc(sizeof(double) * (size_t)(nm > 0 ? nm : 1));
    double *r_cu = malloc(sizeof(double) * (size_t)(nm > 0 ? nm : 1));
    if (!r_cpu || !r_cu) {
        free(r_cpu), free(r_cu);
        return;
    }
    int n_sys = 0, n_missed = 0, n_cpu = 0, n_cu = 0, n_cmp = 0, n_over = 0, n_orc = 0, n_orc_ok = 0;
    double worst = 0;
    char missed[1024] = "", over[1024] = "";
    for (int j = 0; j < nm; j++) {
        if (m[j].n < SUITE_I19_MIN_N) continue;
        n_sys++;
        const suite_row *rs = m[j].by_solver[0];
        int fa = -1, fc = -1, fb = -1;
        for (int a = 0; a < na; a++) {
            int s = solver_index(anchors[a]);
            if (s < 0 || !present[s] || !is_ok(m[j].by_solver[s])) continue;
            double t = m[j].by_solver[s]->time_s;
            if (fa < 0 || t < m[j].by_solver[fa]->time_s) fa = s;
            if (strcmp(anchors[a], "cudss") && (fc < 0 || t < m[j].by_solver[fc]->time_s)) fc = s;
        }
        for (int k = 0; k < nt; k++) {
            int s = solver_index(toolbox[k]);
            if (s >= 0 && is_ok(m[j].by_solver[s]) && (fb < 0 || m[j].by_solver[s]->time_s < m[j].by_solver[fb]->time_s))
                fb = s;
        }
        const suite_row *rc = m[j].by_solver[solver_index("cudss")];
        char c_sap[48], c_fa[48] = "-", c_rf[32] = "-", c_rc[32] = "-", c_ru[32] = "-", c_rb[32] = "-";
        cell(c_sap, sizeof c_sap, rs);
        if (fa >= 0) snprintf(c_fa, sizeof c_fa, "%.3E", m[j].by_solver[fa]->time_s * 1e3);
        if (is_ok(rs)) {
            double ts = rs->time_s;
            if (fa >= 0) {
                double q = ts / m[j].by_solver[fa]->time_s;
                snprintf(c_rf, sizeof c_rf, "%.3g", q);
                n_cmp++;
                if (q > worst) worst = q;
                if (q > 1.5) {
                    n_over++;
                    size_t l = strlen(over);
                    snprintf(over + l, sizeof over - l, "%s%s (%.3gx)", l ? ", " : "", m[j].name, q);
                }
            }
            if (fc >= 0) {
                r_cpu[n_cpu] = m[j].by_solver[fc]->time_s / ts;
                snprintf(c_rc, sizeof c_rc, "%.3g", r_cpu[n_cpu++]);
            }
            if (is_ok(rc)) {
                r_cu[n_cu] = rc->time_s / ts;
                snprintf(c_ru, sizeof c_ru, "%.3g", r_cu[n_cu++]);
            }
        } else if (fa >= 0) {
            n_over++, n_missed++;
            size_t l = strlen(missed);
            snprintf(missed + l, sizeof missed - l, "%s%s", l ? ", " : "", m[j].name);
        }
        if (fb >= 0) {
            n_orc++;
            if (is_ok(rs)) {
                double q = rs->time_s / m[j].by_solver[fb]->time_s;
                n_orc_ok += q <= 1.3;
                snprintf(c_rb, sizeof c_rb, "%.3g", q);
            }
        }
        fprintf(f, "| %s | %lld | %s | %s | %s | %s | %s | %s | %s | %s |\n", m[j].name, m[j].n, c_sap,
                fa >= 0 ? suite_solver_names[fa] : "-", c_fa, c_rf, c_rc, c_ru, fb >= 0 ? suite_solver_names[fb] : "-",
                c_rb);
    }
    fprintf(f, "\n");
    if (!n_sys) {
        fprintf(f, "- no system with N >= %d in this run.\n", SUITE_I19_MIN_N);
    } else {
        fprintf(f, "- sap solves every system an anchor solves: %s%s.\n", n_missed ? "not met, missed: " : "met",
                missed);
        fprintf(f, "- T_sap <= 1.5 x the fastest anchor's: %s (%d of the %d systems an anchor solves over, or "
                   "unsolved by sap; worst solved ratio %.3g)%s%s.\n",
                n_over ? "not met" : "met", n_over, n_cmp + n_missed, worst, over[0] ? "; over: " : "", over);
        median_line(f, r_cpu, n_cpu, "T_fastest CPU direct / T_sap", 2, "the CPU direct solvers");
        median_line(f, r_cu, n_cu, "T_cuDSS / T_sap", 1, "cuDSS (or it is n/a)");
        fprintf(f, "- oracle: sap's choice within 1.3x of the best measured sap method on %d of %d systems "
                   "(%.0f%%; target >= 80%%: %s; a system sap's choice does not solve counts as outside).\n",
                n_orc_ok, n_orc, n_orc ? 100.0 * n_orc_ok / n_orc : 0.0,
                n_orc && n_orc_ok >= 0.8 * n_orc ? "met" : "not met");
    }
    free(r_cpu), free(r_cu);
}

int suite_write_markdown(const suite_rows *rows, const char *path, const char *command)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    /* group the rows by matrix */
    mat_entry *m = calloc((size_t)(rows->n > 0 ? rows->n : 1), sizeof *m);
    int nm = 0;
    if (!m) {
        fclose(f);
        return -1;
    }
    for (int i = 0; i < rows->n; i++) {
        const suite_row *r = &rows->v[i];
        int s = solver_index(r->solver);
        if (s < 0) continue;
        int j = 0;
        while (j < nm && strcmp(m[j].name, r->name)) j++;
        if (j == nm) {
            m[nm].name = r->name, m[nm].set = r->set, m[nm].n = r->n, m[nm].nnz = r->nnz, m[nm].spd = r->spd;
            nm++;
        }
        m[j].by_solver[s] = r;
    }
    qsort(m, (size_t)nm, sizeof *m, cmp_mat);
    int present[SUITE_NSOLVERS] = {0};
    for (int j = 0; j < nm; j++)
        for (int s = 0; s < SUITE_NSOLVERS; s++)
            if (was_run(m[j].by_solver[s])) present[s] = 1;

    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fprintf(f, "# bench/suite: sap against sparse direct and iterative solvers\n\n");
    fprintf(f, "Generated %s by `%s`.\n\n", date, command ? command : "suite");
    fprintf(f, "Protocol of 003_899a8dfc78ed100b.txt section 4.3.3: x* is the parabola (1 at both ends, 400 in the "
               "middle), b = A x*, x0 = 0; a solve succeeds iff ||x - x*||_2 / ||x*||_2 <= 0.01.  Time to "
               "solution runs from the host CSR to x on the host (format conversions, transfers, analysis, "
               "factorization, solve); library/context initialisation (cudaFree(0), sap_context_create, "
               "cudssCreate, MUMPS JOB_INIT, dlopen) and a warm-up solve of a 64 x 64 tridiagonal system (first-call "
               "costs: thread pools, lazy GPU module loading, JIT) are excluded for every solver alike (column "
               "init_s of suite.csv).  A solve under 1 s is repeated (whole, from the host CSR) up to 3 times and "
               "the best time kept (suite --repeat/--repeat-below).  Every (matrix, solver) runs in its own "
               "process with a wall-clock limit.\n\n");

    /* ---- per-matrix table ---- */
    fprintf(f, "## Times to solution (ms)\n\n");
    fprintf(f, "`-` the solver failed (error > 1%% or an error status; see suite.csv notes), NC no convergence, "
               "OOM out of memory, T/O over the time limit, n/a not run (not available or skipped).\n\n");
    fprintf(f, "| # | Name | set | N | nnz |");
    for (int s = 0; s < SUITE_NSOLVERS; s++)
        if (present[s]) fprintf(f, " %s |", suite_solver_names[s]);
    fprintf(f, "\n|---|---|---|---:|---:|");
    for (int s = 0; s < SUITE_NSOLVERS; s++)
        if (present[s]) fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int j = 0; j < nm; j++) {
        fprintf(f, "| %d | %s | %s | %lld | %lld |", j + 1, m[j].name, m[j].set, m[j].n, m[j].nnz);
        /* the fastest successful solver in bold */
        int best = -1;
        for (int s = 0; s < SUITE_NSOLVERS; s++)
            if (present[s] && is_ok(m[j].by_solver[s]) &&
                (best < 0 || m[j].by_solver[s]->time_s < m[j].by_solver[best]->time_s))
                best = s;
        for (int s = 0; s < SUITE_NSOLVERS; s++) {
            if (!present[s]) continue;
            char buf[48];
            cell(buf, sizeof buf, m[j].by_solver[s]);
            fprintf(f, s == best ? " **%s** |" : " %s |", buf);
        }
        fprintf(f, "\n");
    }

    /* ---- counts ---- */
    fprintf(f, "\n## Solve counts\n\n");
    fprintf(f, "| solver | solved | attempted | of which real | solved real | fail | NC | OOM | T/O | crash | n/a |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int sap_att = 0, sap_ok = 0, sap_att_real = 0, sap_ok_real = 0, sap_crash = 0;
    for (int s = 0; s < SUITE_NSOLVERS; s++) {
        int ok = 0, att = 0, att_real = 0, ok_real = 0, fail = 0, nc = 0, oom = 0, to = 0, crash = 0, na = 0;
        for (int j = 0; j < nm; j++) {
            const suite_row *r = m[j].by_solver[s];
            if (!r) continue;
            if (!was_run(r)) {
                na++;
                continue;
            }
            int real = !strcmp(m[j].set, "real");
            att++, att_real += real;
            char c[48];
            cell(c, sizeof c, r);
            if (is_ok(r)) ok++, ok_real += real;
            else if (!strcmp(c, "OOM")) oom++;
            else if (!strcmp(c, "T/O")) to++;
            else if (!strcmp(r->status, "crash")) crash++;
            else if (!strcmp(c, "NC")) nc++;
            else fail++;
        }
        if (!att && !na) continue;
        fprintf(f, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", suite_solver_names[s], ok, att,
                att_real, ok_real, fail, nc, oom, to, crash, na);
        if (s == 0) sap_att = att, sap_ok = ok, sap_att_real = att_real, sap_ok_real = ok_real, sap_crash = crash;
    }

    /* ---- speedups ---- */
    fprintf(f, "\n## log2 speedup of sap, S = log2(T_anchor / T_sap), over the matrices both solve\n\n");
    fprintf(f, "Positive: sap is faster (as Eq. 14 and Figure 12 of the paper).  Quartiles by linear "
               "interpolation.\n\n");
    fprintf(f, "| anchor | both solve | sap faster | min | Q1 | median | Q3 | max |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    double *sv = malloc(sizeof(double) * (size_t)(nm > 0 ? nm : 1));
    int cudss_both = 0, cudss_faster = 0;
    for (int a = 1; a < SUITE_NSOLVERS && sv; a++) {
        if (!present[a] || !strncmp(suite_solver_names[a], "sap_", 4)) continue;
        int k = 0, faster = 0;
        for (int j = 0; j < nm; j++) {
            const suite_row *rs = m[j].by_solver[0], *ra = m[j].by_solver[a];
            if (!is_ok(rs) || !is_ok(ra)) continue;
            sv[k] = log2(ra->time_s / rs->time_s);
            faster += sv[k] > 0;
            k++;
        }
        if (!strcmp(suite_solver_names[a], "cudss")) cudss_both = k, cudss_faster = faster;
        if (k == 0) {
            fprintf(f, "| %s | 0 | 0 | | | | | |\n", suite_solver_names[a]);
            continue;
        }
        qsort(sv, (size_t)k, sizeof *sv, cmp_double);
        fprintf(f, "| %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f |\n", suite_solver_names[a], k, faster, sv[0],
                quantile(sv, k, 0.25), quantile(sv, k, 0.5), quantile(sv, k, 0.75), sv[k - 1]);
    }
    free(sv);

    /* ---- targets ---- */
    fprintf(f, "\n## Targets of issue 6\n\n");
    if (sap_att) {
        fprintf(f, "- sap solves %d of %d systems it ran on (%.1f%%); real matrices: %d of %d (%.1f%%); target >= "
                   "90%%: %s.\n",
                sap_ok, sap_att, 100.0 * sap_ok / sap_att, sap_ok_real, sap_att_real,
                sap_att_real ? 100.0 * sap_ok_real / sap_att_real : 0.0,
                sap_att_real && sap_ok_real >= 0.9 * sap_att_real ? "met" : "not met");
        fprintf(f, "- sap crashes: %d (target 0).\n", sap_crash);
    } else {
        fprintf(f, "- sap did not run (n/a).\n");
    }
    if (present[solver_index("cudss")]) {
        fprintf(f, "- sap faster than cuDSS on %d of the %d systems both solve; target at least half: %s.\n",
                cudss_faster, cudss_both, cudss_both && 2 * cudss_faster >= cudss_both ? "met" : "not met");
    } else {
        fprintf(f, "- cuDSS did not run (n/a), so the comparison with it is open.\n");
    }
    int found = 0;
    for (int j = 0; j < nm; j++) {
        if (strcmp(m[j].name, SUITE_TARGET_SYNTHETIC)) continue;
        found = 1;
        const suite_row *rs = m[j].by_solver[0], *rc = m[j].by_solver[solver_index("cudss")];
        char a[48], b[48];
        cell(a, sizeof a, rs);
        cell(b, sizeof b, rc);
        if (is_ok(rs) && is_ok(rc))
            fprintf(f, "- %s (N = %lld, nnz = %lld): sap %.1f ms, cuDSS %.1f ms, speedup T_cuDSS / T_sap = %.2f "
                       "(target >= 5: %s).\n",
                    m[j].name, m[j].n, m[j].nnz, rs->time_s * 1e3, rc->time_s * 1e3, rc->time_s / rs->time_s,
                    rc->time_s / rs->time_s >= 5 ? "met" : "not met");
        else
            fprintf(f, "- %s (N = %lld, nnz = %lld): sap %s, cuDSS %s (ms): no speedup (one of them did not "
                       "solve or run).\n",
                    m[j].name, m[j].n, m[j].nnz, a, b);
    }
    if (!found) fprintf(f, "- %s was not in this run.\n", SUITE_TARGET_SYNTHETIC);
    write_issue19(f, m, nm, present);

    /* ---- sap details ---- */
    fprintf(f, "\n## sap: method chosen per system\n\n| Name | status | time (ms) | error | residual | notes |\n"
               "|---|---|---:|---:|---:|---|\n");
    for (int j = 0; j < nm; j++) {
        const suite_row *r = m[j].by_solver[0];
        if (!r) continue;
        fprintf(f, "| %s | %s | %.4g | %.2e | %.2e | ", m[j].name, r->status, r->time_s * 1e3, r->rel_error,
                r->rel_residual);
        for (const char *c = r->notes; *c; c++) fputs(*c == '|' ? "\\|" : (char[2]){*c, 0}, f);
        fprintf(f, " |\n");
    }
    free(m);
    fclose(f);
    return 0;
}
