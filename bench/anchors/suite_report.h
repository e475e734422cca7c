/* suite_report.h -- the rows of bench/suite (suite.csv) and the summary (suite.md). */
#ifndef SAP_SUITE_REPORT_H
#define SAP_SUITE_REPORT_H

#include <stdio.h>

#define SUITE_NSOLVERS 16
extern const char *const suite_solver_names[SUITE_NSOLVERS]; /* "sap" first */

/* The generated system the speedup target is about (N = 400,000, K = 100). */
#define SUITE_TARGET_SYNTHETIC "synthetic_400k_K100"

typedef struct suite_row {
    char name[96];
    char set[8];      /* "real" (matrix folder) or "gen" (generated) */
    long long n, nnz;
    int spd;          /* sap_csr_stats spd_estimate */
    char solver[24];
    char status[12];  /* ok, fail, timeout, crash, oom, n-a */
    double time_s;    /* time to solution (NaN when not measured) */
    double init_s;    /* excluded initialisation */
    double rel_error; /* ||x - x*|| / ||x*|| (NaN when no x) */
    double rel_residual;
    char notes[1024];
} suite_row;

typedef struct suite_rows {
    suite_row *v;
    int n, cap;
} suite_rows;

void suite_csv_header(FILE *f);
void suite_csv_write(FILE *f, const suite_row *r);
/* Appends the rows of a CSV file (later rows for the same matrix and solver replace
 * earlier ones).  Returns 0, or -1 when the file cannot be read. */
int suite_csv_read(const char *path, suite_rows *rows);
int suite_rows_add(suite_rows *rows, const suite_row *r); /* replaces (name, solver) */
void suite_rows_free(suite_rows *rows);

/* Writes the markdown summary (Table 8-like table, counts, log2 speedup quartiles, issue 19's targets,
 * the cuDSS comparison and the synthetic target).  'command' goes into the header. */
int suite_write_markdown(const suite_rows *rows, const char *path, const char *command);

#endif
