/* suite_anchor.h -- the interface between bench/suite.c and the solvers it compares
 * (sap and the anchors).  Every solver runs in a forked child process: it gets the system
 * as a host CSR (0-based, 64-bit indices, canonical: sorted columns, no duplicates) and a
 * right-hand side b, and returns x on the host.
 *
 * Timing protocol (the paper's, section 4.3.3 of 003_899a8dfc78ed100b.txt): time_s runs
 * from the host CSR to x on the host: every conversion of the CSR into the solver's
 * format, all transfers, analysis, factorization and solve.  Library or context
 * initialisation (cudaFree(0), sap_context_create, cudssCreate, MUMPS JOB_INIT, dlopen)
 * is timed separately as init_s and is not part of time_s, for every solver alike.
 * Freeing the solver's objects after x is on the host is not timed either. */
#ifndef SAP_SUITE_ANCHOR_H
#define SAP_SUITE_ANCHOR_H

#include <stdint.h>
#include <stddef.h>

typedef struct suite_problem {
    const char *name;
    int64_t n, nnz;
    const int64_t *rowptr; /* n + 1 */
    const int64_t *colind; /* nnz */
    const double *val;     /* nnz */
    const double *b;       /* n */
    int spd;               /* sap_csr_stats spd_estimate: numerically symmetric, a_ii > 0 */
    int symmetric;         /* numerically symmetric */
} suite_problem;

/* What a solver function returns (the child then measures x). */
enum {
    SUITE_RUN_DONE = 0,   /* x was computed (success still depends on ||x - x*|| / ||x*||) */
    SUITE_RUN_FAILED = 1, /* the solver reported an error; note says which */
    SUITE_RUN_OOM = 2,    /* the solver reported out of memory */
    SUITE_RUN_NA = 3      /* not available here (not built, library not loadable, skipped) */
};

typedef struct suite_run {
    double time_s; /* time to solution (see above) */
    double init_s; /* excluded initialisation */
    char note[960];
} suite_run;

/* Appends printf-style text to r->note ("; " separated). */
void suite_note(suite_run *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
double suite_now(void);

typedef int (*suite_solver_fn)(const suite_problem *p, double *x, suite_run *r);

/* Solvers.  Each one exists in every build; one that was not compiled in returns
 * SUITE_RUN_NA with a note. */
int suite_run_sap(const suite_problem *p, double *x, suite_run *r);
int suite_run_superlu(const suite_problem *p, double *x, suite_run *r);
int suite_run_umfpack(const suite_problem *p, double *x, suite_run *r);
int suite_run_mumps(const suite_problem *p, double *x, suite_run *r);
int suite_run_pardiso(const suite_problem *p, double *x, suite_run *r);
int suite_run_cudss(const suite_problem *p, double *x, suite_run *r);
int suite_run_cusolver_qr(const suite_problem *p, double *x, suite_run *r);
int suite_run_cusparse_ilu0(const suite_problem *p, double *x, suite_run *r);
/* sap_solver with method=direct-host / direct-cudss forced (fallback=0) */
int suite_run_sap_direct_host(const suite_problem *p, double *x, suite_run *r);
int suite_run_sap_direct_cudss(const suite_problem *p, double *x, suite_run *r);
/* sap_solver with an iterative method of its toolbox forced (fallback=0): sap-d, sap-c,
 * band-lu, ilu, bjacobi, jacobi (the suite's oracle column) */
int suite_run_sap_sapd(const suite_problem *p, double *x, suite_run *r);
int suite_run_sap_sapc(const suite_problem *p, double *x, suite_run *r);
int suite_run_sap_band_lu(const suite_problem *p, double *x, suite_run *r);
int suite_run_sap_ilu(const suite_problem *p, double *x, suite_run *r);
int suite_run_sap_bjacobi(const suite_problem *p, double *x, suite_run *r);
int suite_run_sap_jacobi(const suite_problem *p, double *x, suite_run *r);

/* 32-bit copies of the CSR index arrays (base 0 or 1); NULL when an index or nnz does not
 * fit in int32 or the allocation failed (note says which). */
int *suite_int32_rowptr(const suite_problem *p, int base, suite_run *r);
int *suite_int32_colind(const suite_problem *p, int base, suite_run *r);

#endif
