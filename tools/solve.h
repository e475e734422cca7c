/* solve.h -- the parts of `sap solve`, one file each: the command line (solve_args.c), the
 * system A x = b (solve_problem.c), the two ways to solve it (solve_sparse.c: the SaP
 * pipeline of sap_solver; solve_krylov.c: a chosen Krylov method and preconditioner), the
 * progress line and SIGINT (solve_progress.c), and the reports (report_text.c, report_json.c).
 * cmd_solve.c runs them in order. */
#ifndef SAP_TOOL_SOLVE_H
#define SAP_TOOL_SOLVE_H

#include "args.h"
#include "sap.h"

#define SAP_SOLVE_NOT_CONVERGED 3 /* exit code: iteration limit, stagnation or breakdown */
#define SAP_SOLVE_INTERRUPTED 130 /* exit code: stopped by SIGINT (128 + 2): the best x so far
                                     is reported and written with -o */
#define SAP_SOLVE_LONG_STEP 5.0   /* seconds: a step predicted longer is announced on stderr
                                     (also under --quiet) */
#define SAP_SOLVE_REFUSE 3600.0   /* seconds: a step predicted longer is refused (exit 1)
                                     unless --force */
#define SAP_SOLVE_MAX_OPTS 32

/* ---- the command line (solve_args.c) ---------------------------------------------------- */

typedef struct solve_args {
    sap_tool_args common; /* matrix (positional[0]), -o, --backend, --threads, --quiet, --xstar, ... */
    const char *input, *rhs, *report;
    int pipeline;         /* neither --precond, --krylov, --side, --format nor --precond-precision */
    /* the SaP pipeline */
    sap_solver_options sopt;
    sap_int nrhs;
    /* the explicit Krylov path */
    sap_krylov_options kopt; /* tol, maxit and stagnation also go to sopt.krylov */
    sap_matrix_options mopt;
    const char *precond;     /* a registered preconditioner type (sap_precond_type_name) */
    const char *pc_opts[SAP_SOLVE_MAX_OPTS]; /* --pc-opt NAME=VALUE, in order */
    int npc_opts;
    sap_precision pprec;
    sap_int partitions;      /* --partitions (SaP pipeline; on the explicit path: partitions_given) */
    int partitions_given;
    const char *side;        /* as given: left or right */
    int force;               /* --force: run steps predicted above SAP_SOLVE_REFUSE */
} solve_args;

/* Parses and checks the command line.  0 go on, 1 done (--help or --opt help printed:
 * exit 0), 2 usage error (the reason on stderr). */
int solve_parse_args(int argc, char **argv, solve_args *a);

/* ---- the system (solve_problem.c) ------------------------------------------------------- */

typedef struct solve_problem {
    sap_context *ctx;
    char backend_log[256];  /* the context's last log message about the backend (its log hook) */
    char probe_log[256];    /* the automatic plan's last probe: its parts' times (the log hook) */
    char setup_log[320];    /* the last setup's T_stats parts (the log hook) */
    int log_info;           /* SAP_LOG=info: every INFO message to stderr */
    char db_log[256];       /* the last reordering's DB parts (the log hook) */
    char backend_why[300];  /* "requested", or why 'auto' chose the backend */
    sap_csr *A;             /* square */
    sap_dense *Bfile;       /* the --rhs file (all its columns), or NULL */
    double *b;              /* the first right-hand side (n) */
    double *xs;             /* x* of a manufactured b = A x* (n), or NULL with --rhs */
    double t_load;          /* seconds to load A and make b */
} solve_problem;

/* Creates the context and loads A and b.  Returns 0, or the exit code (1) after printing why. */
int solve_problem_load(const solve_args *a, solve_problem *p);
void solve_problem_free(solve_problem *p);

/* ---- what both ways of solving give ------------------------------------------------------ */

typedef struct solve_outcome {
    sap_int k;                   /* right-hand sides solved (columns of X) */
    double *X;                   /* the solution, n x k, column-major (the best iterate when not converged) */
    sap_status status;           /* SAP_OK, a warning (not converged) or SAP_ERR_BREAKDOWN */
    char message[1024];          /* the context's message when status is not SAP_OK */
    double residual;             /* true ||b - A x|| / ||b||, worst column */
    double error;                /* ||x - x*|| / ||x*||, worst column; NaN without x* */
    sap_context_stats transfers; /* bytes moved during the solve */
} solve_outcome;

/* ---- the progress line and SIGINT (solve_progress.c) ------------------------------------- */

typedef struct solve_progress {
    int live;           /* stderr is a terminal and --quiet was not given */
    double last;        /* when the line was last drawn */
    const char *method;
    int shown;
    int force;          /* --force: steps predicted above SAP_SOLVE_REFUSE run */
    char refused[160];  /* the step a monitor refused and its estimate ("": none) */
    double start;       /* when the first event came (the elapsed time shown counts from it) */
} solve_progress;

double solve_now(void); /* monotonic seconds */
/* A sap_krylov_monitor: redraws "method: iteration ... relative residual ..." every 0.1 s
 * (when live); returns 1 once SIGINT was received. */
int solve_progress_monitor(void *state, double iteration, double relres);
/* A sap_solver_monitor: the same line with the attempt's name, "NAME: setup (predicted ...)"
 * at a setup; returns 1 once SIGINT was received, or at the setup of a step predicted above
 * SAP_SOLVE_REFUSE without --force (refused then says which). */
int solve_progress_solver_monitor(void *state, const sap_solver_progress *p);
void solve_progress_clear(solve_progress *p);
/* "0.4 s", "12 s", "4.2 min", "3.1 h" */
void solve_fmt_seconds(double s, char *buf, size_t size);
/* SIGINT while solving: the first one sets the flag the monitors return (the solve stops at
 * its next check with the best x so far; a band factorization runs to its end first); the
 * handler is reset by it (SA_RESETHAND): a second SIGINT terminates at once. */
void solve_interrupt_install(void);
void solve_interrupt_restore(void);
int solve_interrupted(void);
/* The SIGINT flag itself, for sap_solver_options.interrupt (the cpu band factorization polls it). */
const volatile sig_atomic_t *solve_interrupt_flag(void);

/* ---- the SaP pipeline (solve_sparse.c) --------------------------------------------------- */

typedef struct solve_sparse_run {
    solve_outcome out;
    sap_solver_stats ss;
    solve_progress progress; /* the monitor state of the solver */
    double t_setup, t_solve, t_total;
} solve_sparse_run;

/* Solves with sap_solver.  Returns 0 when out holds a solution (converged or not), else the
 * exit code (1) after printing why. */
int solve_sparse(const solve_args *a, const solve_problem *p, solve_sparse_run *r);
void solve_sparse_free(solve_sparse_run *r);

/* ---- the explicit Krylov path (solve_krylov.c) ------------------------------------------- */

typedef struct solve_krylov_run {
    solve_outcome out;
    sap_matrix *M;
    sap_precond *P;
    sap_krylov *K;
    sap_krylov_stats ks;     /* its history belongs to K */
    char method[64];         /* "bicgstabl(2)" */
    const char *side;        /* as used: left, right, symmetric or "-" */
    solve_progress progress; /* the monitor state K holds */
    double t_matrix, t_precond, t_solve;
} solve_krylov_run;

/* Solves with sap_krylov_solve.  Returns as solve_sparse. */
int solve_krylov(const solve_args *a, const solve_problem *p, solve_krylov_run *r);
void solve_krylov_free(solve_krylov_run *r);

/* ---- the reports (report_text.c, report_json.c) ------------------------------------------ */

void solve_report_text_sparse(const solve_args *a, const solve_problem *p, const solve_sparse_run *r);
void solve_report_text_krylov(const solve_args *a, const solve_problem *p, const solve_krylov_run *r);
/* Write the JSON report to a->report; 0 on success, -1 on failure (nothing printed). */
int solve_report_json_sparse(const solve_args *a, const solve_problem *p, const solve_sparse_run *r);
int solve_report_json_krylov(const solve_args *a, const solve_problem *p, const solve_krylov_run *r);

#endif
