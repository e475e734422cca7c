/* suite.c -- sap against the solvers users would pick instead (issue 6, item 6), with the
 * protocol of 003_899a8dfc78ed100b.txt section 4.3.3 (Table 8, Figure 12):
 *   x* = the parabola (sap_gen_xstar SAP_XSTAR_PARABOLA), b = A x*, x0 = 0; a solve
 *   succeeds iff ||x - x*|| / ||x*|| <= 0.01; the relative residual ||b - Ax|| / ||b|| is
 *   reported too; time to solution from the host CSR to x on the host, library/context
 *   initialisation measured apart and excluded for all solvers alike, as is a warm-up solve
 *   of a 64 x 64 tridiagonal system in the same process (first-call costs; --no-warmup).
 *   A solve that takes less than --repeat-below seconds (default 1) is repeated, whole,
 *   up to --repeat times (default 3) and the best time is kept.
 * Systems: every matrix of a folder (its MANIFEST.tsv, else *.mtx / *.mtx.gz) and a
 * generated set (sap_gen_spec strings; see gen_set below).
 * Solvers (bench/anchors/): sap (sap_solver_*, defaults), superlu, umfpack, mumps, pardiso
 * (MKL, dlopen), cudss (dlopen), cusolver_qr, cusparse_ilu0; and sap's direct methods
 * forced, beside the strategy's choice: sap_direct_host (SuiteSparse), sap_direct_cudss
 * (cuDSS through sap, on a cuda context).  A solver that is not built in or cannot be
 * loaded is reported as n/a.
 *
 * Robustness: the parent never initialises CUDA (nor OpenMP).  For each system a child
 * loads or generates the matrix and writes it to a binary file in a temporary folder;
 * then every solver runs in its own child (process group) under a wall-clock limit and
 * sends its result through a pipe; a crash, a hang (killed at the limit) or an
 * out-of-memory kill is recorded as crash / timeout / oom and the suite goes on.
 *
 * usage: suite [--dir DIR] [--gen | --no-gen] [--no-real] [--match SUBSTR] [--only N,N]
 *              [--skip N,N] [--max-n N] [--min-n N] [--part I/M] [--solvers LIST] [--timeout S]
 *              [--oracle-timeout S]
 *              [--prep-timeout S] [--deadline S] [--out DIR] [--append] [--plot] [--tmp DIR]
 *              [--add NAME=SPEC] [--list] [--no-warmup] [--repeat R] [--repeat-below S]
 *        suite --report-only A.csv[,B.csv...] [--out DIR] [--plot]
 * Output in --out (default bench/results): suite.csv, suite.md, suite_children.log (the
 * solvers' own output), suite_speedup.png with --plot (python3 bench/suite_plot.py). */
#define _GNU_SOURCE
#include "sap.h"
#include "suite_anchor.h"
#include "suite_report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SAP_MATRIX_DIR_DEFAULT
#define SAP_MATRIX_DIR_DEFAULT "../shared/matrices"
#endif
#ifndef SAP_SOURCE_DIR
#define SAP_SOURCE_DIR "."
#endif

static const suite_solver_fn solver_fns[SUITE_NSOLVERS] = {
    suite_run_sap,     suite_run_superlu, suite_run_umfpack,     suite_run_mumps,
    suite_run_pardiso, suite_run_cudss,   suite_run_cusolver_qr, suite_run_cusparse_ilu0,
    suite_run_sap_direct_host, suite_run_sap_direct_cudss, suite_run_sap_sapd, suite_run_sap_sapc,
    suite_run_sap_band_lu, suite_run_sap_ilu, suite_run_sap_bjacobi, suite_run_sap_jacobi};

/* the iterative methods of sap's toolbox forced (the oracle column): their own time limit */
static int oracle_iterative(int s)
{
    return !strncmp(suite_solver_names[s], "sap_", 4) && strncmp(suite_solver_names[s], "sap_direct", 10);
}

/* The generated set: name, spec, N (for --max-n before generating). */
typedef struct gen_item {
    const char *name, *spec;
    long long n;
} gen_item;

static const gen_item gen_set[] = {
    {"synthetic_50k_K20", "gen:synthetic:N=50000,K=20,d=1,fill=0.3,seed=1", 50000},
    {"synthetic_100k_K50", "gen:synthetic:N=100000,K=50,d=1,fill=0.2,seed=2", 100000},
    {SUITE_TARGET_SYNTHETIC, "gen:synthetic:N=400000,K=100,d=1,fill=0.2,seed=3", 400000},
    {"banded_200k_K200", "gen:banded:N=200000,K=200,d=1", 200000},
    {"poisson3d_100", "gen:poisson3d:n=100", 1000000},
    {"radiative_10k", "gen:radiative:n=10000", 10000},
    {"convdiff3d_40", "gen:convdiff3d:n=40", 64000},
    {"aniso3d_40", "gen:aniso3d:n=40", 64000},
    {"recirc2d_300", "gen:recirc2d:n=300", 90000},
};

typedef struct item {
    char name[96];
    char set[8];
    char *path; /* file path or spec */
    long long n_hint, nnz_hint;
} item;

typedef struct options {
    const char *dir, *out, *match, *only, *skip, *tmp, *report_only;
    int gen, real, append, plot, list, no_warmup;
    long long max_n, min_n;
    double oracle_timeout; /* limit of the forced iterative methods (sap_sapd ..); <= 0: --timeout */
    int part_i, part_m;
    int solver_on[SUITE_NSOLVERS];
    double timeout, prep_timeout, deadline;
    int repeat;
    double repeat_below;
    char *extra_names[32], *extra_specs[32];
    int nextra;
} options;

/* ---- small helpers ------------------------------------------------------------------- */

static int in_list(const char *list, const char *name)
{
    if (!list) return 0;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == len && !strncmp(p, name, len)) return 1;
        if (!c) break;
        p = c + 1;
    }
    return 0;
}

static int mkdir_p(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0775);
            *p = '/';
        }
    return (mkdir(buf, 0775) == 0 || errno == EEXIST) ? 0 : -1;
}

static int write_full(int fd, const void *buf, size_t len)
{
    size_t put = 0;
    while (put < len) {
        ssize_t k = write(fd, (const char *)buf + put, len - put);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        put += (size_t)k;
    }
    return 0;
}

/* ---- the child processes ----------------------------------------------------------- */

static int g_log_fd = -1; /* the children's stdout/stderr */

typedef struct child_result {
    int rc; /* SUITE_RUN_* */
    double time_s, init_s, rel_error, rel_residual;
    char note[sizeof(((suite_run *)0)->note)];
} child_result;

typedef struct prep_result {
    int ok;
    long long n, nnz, K;
    int spd, sym;
    double load_s;
    char err[300];
} prep_result;

typedef struct run_outcome {
    int kind; /* 0: result read, 1: timeout, 2: crashed/killed before a result */
    char why[160];
} run_outcome;

/* Forks fn(arg, fd) in its own process group; the parent reads len bytes of result from
 * the pipe within timeout seconds.  The child's stdout and stderr go to the log. */
static run_outcome run_child(void (*fn)(void *, int), void *arg, void *result, size_t len, double timeout,
                             const char *label)
{
    run_outcome o = {0, ""};
    int fds[2];
    if (pipe(fds) != 0) {
        o.kind = 2;
        snprintf(o.why, sizeof o.why, "pipe: %s", strerror(errno));
        return o;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        o.kind = 2;
        snprintf(o.why, sizeof o.why, "fork: %s", strerror(errno));
        close(fds[0]), close(fds[1]);
        return o;
    }
    if (pid == 0) {
        setpgid(0, 0);
        close(fds[0]);
        if (g_log_fd >= 0) {
            char head[256];
            int k = snprintf(head, sizeof head, "==== %s (pid %d)\n", label, (int)getpid());
            if (k > 0) write_full(g_log_fd, head, (size_t)k);
            dup2(g_log_fd, 1);
            dup2(g_log_fd, 2);
        }
        fn(arg, fds[1]);
        _exit(0);
    }
    setpgid(pid, pid);
    close(fds[1]);
    double t0 = suite_now();
    size_t got = 0;
    int eof = 0;
    while (got < len) {
        double left = timeout - (suite_now() - t0);
        if (left <= 0) break;
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue;
        ssize_t k = read(fds[0], (char *)result + got, len - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            eof = 1;
            break;
        }
        got += (size_t)k;
    }
    close(fds[0]);
    int status = 0;
    if (got < len && !eof) { /* still running at the limit */
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        o.kind = 1;
        snprintf(o.why, sizeof o.why, "killed after %.0f s", timeout);
        return o;
    }
    /* result complete (or the child died): reap it, allowing 20 s for teardown */
    double t1 = suite_now();
    pid_t w = 0;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && suite_now() - t1 < 20) usleep(2000);
    if (w == 0) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        snprintf(o.why, sizeof o.why, "hung in teardown, killed");
    } else {
        kill(-pid, SIGKILL); /* leftovers of its process group, if any */
    }
    if (got == len) {
        if (w != 0 && WIFSIGNALED(status))
            snprintf(o.why, sizeof o.why, "crashed after the result: %s", strsignal(WTERMSIG(status)));
        return o;
    }
    o.kind = 2;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(o.why, sizeof o.why, "%s%s", strsignal(sig),
                 sig == SIGKILL ? " (killed from outside: out of memory?)" : "");
    } else if (WIFEXITED(status)) {
        snprintf(o.why, sizeof o.why, "exited with code %d before a result", WEXITSTATUS(status));
    } else {
        snprintf(o.why, sizeof o.why, "ended before a result");
    }
    return o;
}

/* The binary matrix file: header, rowptr, colind (int64), val (double). */
typedef struct bin_header {
    char magic[8];
    long long n, nnz;
    int spd, sym;
} bin_header;

typedef struct prep_arg {
    const item *it;
    const char *file; /* binary file to write */
    const char *tmpdir;
} prep_arg;

static void prep_child(void *varg, int fd)
{
    prep_arg *a = varg;
    prep_result pr;
    memset(&pr, 0, sizeof pr);
    double t0 = suite_now();
    sap_context *ctx = NULL;
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CPU;
    sap_status s = sap_context_create(&ctx, &cfg);
    sap_csr *A = NULL;
    if (s == SAP_OK) {
        sap_mm_read_options mo;
        sap_mm_read_options_init(&mo);
        mo.require_square = 1;
        const char *path = a->it->path;
        char unz[1200];
        size_t pl = strlen(path);
        if (!sap_has_zlib() && pl > 3 && !strcmp(path + pl - 3, ".gz")) { /* no zlib: gunzip first */
            snprintf(unz, sizeof unz, "%s/%s.mtx", a->tmpdir, a->it->name);
            char cmd[2600];
            snprintf(cmd, sizeof cmd, "gzip -dc '%s' > '%s'", path, unz);
            if (system(cmd) == 0) path = unz;
        }
        s = sap_matrix_load(ctx, path, &mo, &A);
        if (path == unz) unlink(unz);
    }
    if (s != SAP_OK) {
        snprintf(pr.err, sizeof pr.err, "load: %s: %.200s", sap_status_name(s), ctx ? sap_context_last_error(ctx) : "");
    } else if (A->nrows != A->ncols) {
        snprintf(pr.err, sizeof pr.err, "not square");
        s = SAP_ERR_NOT_SQUARE;
    } else {
        sap_matrix_stats st;
        if (sap_csr_stats(A, &st) == SAP_OK) pr.spd = st.spd_estimate, pr.sym = st.numerically_symmetric,
                                             pr.K = st.half_bandwidth;
        pr.n = A->nrows, pr.nnz = A->nnz;
        FILE *f = fopen(a->file, "wb");
        bin_header h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, "SAPSUIT1", 8);
        h.n = pr.n, h.nnz = pr.nnz, h.spd = pr.spd, h.sym = pr.sym;
        int ok = f && fwrite(&h, sizeof h, 1, f) == 1 &&
                 fwrite(A->rowptr, sizeof(int64_t), (size_t)A->nrows + 1, f) == (size_t)A->nrows + 1 &&
                 fwrite(A->colind, sizeof(int64_t), (size_t)A->nnz, f) == (size_t)A->nnz &&
                 fwrite(A->val, sizeof(double), (size_t)A->nnz, f) == (size_t)A->nnz;
        if (f && fclose(f) != 0) ok = 0;
        if (!ok) snprintf(pr.err, sizeof pr.err, "cannot write %s: %s", a->file, strerror(errno));
        else pr.ok = 1;
    }
    pr.load_s = suite_now() - t0;
    write_full(fd, &pr, sizeof pr);
    _exit(0);
}

typedef struct solve_arg {
    const char *file;
    const char *name;
    int solver;
    int warmup;
    int repeat;
    double repeat_below;
} solve_arg;

static double norm2(const double *v, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

/* y = A x (serial; the parent's children keep OpenMP for the solvers) */
static void csr_mv(const suite_problem *p, const double *x, double *y)
{
    for (int64_t i = 0; i < p->n; i++) {
        double s = 0;
        for (int64_t k = p->rowptr[i]; k < p->rowptr[i + 1]; k++) s += p->val[k] * x[p->colind[k]];
        y[i] = s;
    }
}

static void solve_child(void *varg, int fd)
{
    solve_arg *a = varg;
    child_result res;
    memset(&res, 0, sizeof res);
    res.rel_error = res.rel_residual = NAN;
    res.rc = SUITE_RUN_FAILED;
    FILE *f = fopen(a->file, "rb");
    bin_header h;
    int64_t *rowptr = NULL, *colind = NULL;
    double *val = NULL, *xs = NULL, *b = NULL, *x = NULL, *w = NULL;
    if (!f || fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, "SAPSUIT1", 8)) {
        snprintf(res.note, sizeof res.note, "cannot read the matrix file %s", a->file);
        goto out;
    }
    size_t n = (size_t)h.n, nnz = (size_t)h.nnz;
    rowptr = malloc(sizeof(int64_t) * (n + 1));
    colind = malloc(sizeof(int64_t) * (nnz ? nnz : 1));
    val = malloc(sizeof(double) * (nnz ? nnz : 1));
    xs = malloc(sizeof(double) * n);
    b = malloc(sizeof(double) * n);
    x = calloc(n, sizeof(double));
    w = malloc(sizeof(double) * n);
    if (!rowptr || !colind || !val || !xs || !b || !x || !w) {
        res.rc = SUITE_RUN_OOM;
        snprintf(res.note, sizeof res.note, "host allocation for the system failed");
        goto out;
    }
    if (fread(rowptr, sizeof(int64_t), n + 1, f) != n + 1 || fread(colind, sizeof(int64_t), nnz, f) != nnz ||
        fread(val, sizeof(double), nnz, f) != nnz) {
        snprintf(res.note, sizeof res.note, "short matrix file %s", a->file);
        goto out;
    }
    fclose(f);
    f = NULL;
    {
        sap_context *ctx = NULL;
        sap_context_config cfg;
        sap_context_config_init(&cfg);
        cfg.backend = SAP_BACKEND_CPU; /* only for sap_gen_xstar: never touches the GPU */
        if (sap_context_create(&ctx, &cfg) != SAP_OK ||
            sap_gen_xstar(ctx, (sap_int)n, SAP_XSTAR_PARABOLA, 0, xs) != SAP_OK) {
            snprintf(res.note, sizeof res.note, "sap_gen_xstar failed");
            sap_context_destroy(ctx);
            goto out;
        }
        sap_context_destroy(ctx);
    }
    suite_problem p;
    memset(&p, 0, sizeof p);
    p.name = a->name;
    p.n = h.n, p.nnz = h.nnz;
    p.rowptr = rowptr, p.colind = colind, p.val = val;
    p.spd = h.spd, p.symmetric = h.sym;
    csr_mv(&p, xs, b);
    p.b = b;
    /* warm-up (excluded like the initialisation): the solver first solves a small
     * tridiagonal system, so that one-time costs of its first call (thread pools, lazy
     * loading of GPU modules, JIT) are not charged to the measured system */
    double warm_s = 0;
    if (a->warmup) {
        enum { NW = 64 };
        int64_t wrp[NW + 1], wci[3 * NW];
        double wv[3 * NW], wx[NW], wb[NW], wxs[NW];
        int64_t k = 0;
        for (int i = 0; i < NW; i++) {
            wrp[i] = k;
            for (int j = i - 1; j <= i + 1; j++)
                if (j >= 0 && j < NW) wci[k] = j, wv[k] = (i == j) ? 4.0 : -1.0, k++;
            wxs[i] = 1.0 + i;
        }
        wrp[NW] = k;
        suite_problem wp;
        memset(&wp, 0, sizeof wp);
        wp.name = "warm-up";
        wp.n = NW, wp.nnz = k, wp.rowptr = wrp, wp.colind = wci, wp.val = wv, wp.spd = 1, wp.symmetric = 1;
        csr_mv(&wp, wxs, wb);
        wp.b = wb;
        memset(wx, 0, sizeof wx);
        suite_run wr;
        memset(&wr, 0, sizeof wr);
        double tw = suite_now();
        int wrc = solver_fns[a->solver](&wp, wx, &wr);
        warm_s = suite_now() - tw;
        if (wrc == SUITE_RUN_NA) { /* not available: report that without running the system */
            res.rc = SUITE_RUN_NA;
            memcpy(res.note, wr.note, sizeof res.note);
            goto out;
        }
        printf("warm-up: rc %d, %.3f s (%s)\n", wrc, warm_s, wr.note);
        fflush(stdout);
    }
    { /* test hooks for the robustness of the parent: SAP_SUITE_TEST_{CRASH,HANG,EXIT}=solver */
        const char *c = getenv("SAP_SUITE_TEST_CRASH"), *hang = getenv("SAP_SUITE_TEST_HANG"),
                   *e = getenv("SAP_SUITE_TEST_EXIT");
        if (c && !strcmp(c, suite_solver_names[a->solver])) raise(SIGSEGV);
        if (hang && !strcmp(hang, suite_solver_names[a->solver]))
            for (;;) pause();
        if (e && !strcmp(e, suite_solver_names[a->solver])) exit(3);
    }
    suite_run run;
    memset(&run, 0, sizeof run);
    res.rc = solver_fns[a->solver](&p, x, &run);
    res.time_s = run.time_s, res.init_s = run.init_s + warm_s;
    memcpy(res.note, run.note, sizeof res.note);
    /* short runs are repeated (the whole solve from the host CSR each time) and the best
     * time is kept: one sample of a few ms says more about the machine's noise than about
     * the solver.  The x of the last run is measured. */
    int runs = 1;
    while (res.rc == SUITE_RUN_DONE && runs < a->repeat && run.time_s < a->repeat_below) {
        suite_run again;
        memset(&again, 0, sizeof again);
        memset(x, 0, sizeof(double) * n);
        int rc2 = solver_fns[a->solver](&p, x, &again);
        runs++;
        if (rc2 != SUITE_RUN_DONE) { /* keep the first result; note the odd repeat */
            res.rc = rc2;
            memcpy(res.note, again.note, sizeof res.note);
            break;
        }
        if (again.time_s < res.time_s) res.time_s = again.time_s;
        run = again;
    }
    if (runs > 1 && res.rc == SUITE_RUN_DONE) {
        size_t l = strlen(res.note);
        snprintf(res.note + l, sizeof res.note - l, "%sbest of %d", l ? "; " : "", runs);
    }
    if (res.rc == SUITE_RUN_DONE) {
        for (size_t i = 0; i < n; i++) w[i] = x[i] - xs[i];
        res.rel_error = norm2(w, h.n) / norm2(xs, h.n);
        csr_mv(&p, x, w);
        for (size_t i = 0; i < n; i++) w[i] = b[i] - w[i];
        double nb = norm2(b, h.n);
        res.rel_residual = nb > 0 ? norm2(w, h.n) / nb : norm2(w, h.n);
    }
out:
    if (f) fclose(f);
    write_full(fd, &res, sizeof res);
    /* no frees: _exit right away (the process ends) */
    _exit(0);
}

/* ---- the matrix list --------------------------------------------------------------- */

static int add_item(item **items, int *n, int *cap, const char *name, const char *set, const char *path,
                    long long n_hint, long long nnz_hint)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 128;
        item *v = realloc(*items, sizeof(item) * (size_t)c);
        if (!v) return -1;
        *items = v, *cap = c;
    }
    item *it = &(*items)[(*n)++];
    memset(it, 0, sizeof *it);
    snprintf(it->name, sizeof it->name, "%s", name);
    snprintf(it->set, sizeof it->set, "%s", set);
    it->path = strdup(path);
    it->n_hint = n_hint, it->nnz_hint = nnz_hint;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void list_real(const char *dir, item **items, int *n, int *cap)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        char *line = NULL;
        size_t lcap = 0;
        while (getline(&line, &lcap, f) > 0) {
            char *fl[8] = {0};
            int nf = 0;
            for (char *p = line; nf < 8;) {
                fl[nf++] = p;
                char *t = strchr(p, '\t');
                if (!t) break;
                *t = '\0';
                p = t + 1;
            }
            if (nf < 5 || !strcmp(fl[0], "name")) continue;
            char fp[1200];
            snprintf(fp, sizeof fp, "%s/%s", dir, fl[1]);
            struct stat sb;
            if (stat(fp, &sb) != 0) { /* the folder may hold the file decompressed */
                size_t l = strlen(fp);
                if (l > 3 && !strcmp(fp + l - 3, ".gz")) fp[l - 3] = '\0';
                if (stat(fp, &sb) != 0) {
                    fprintf(stderr, "suite: %s listed in MANIFEST.tsv but missing, skipped\n", fl[1]);
                    continue;
                }
            }
            add_item(items, n, cap, fl[0], "real", fp, atoll(fl[2]), atoll(fl[4]));
        }
        free(line);
        fclose(f);
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "suite: cannot open the matrix folder %s\n", dir);
        return;
    }
    char **names = NULL;
    int nn = 0, nc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        int mtx = (l > 4 && !strcmp(e->d_name + l - 4, ".mtx")) || (l > 7 && !strcmp(e->d_name + l - 7, ".mtx.gz"));
        if (!mtx) continue;
        if (nn == nc) {
            nc = nc ? 2 * nc : 64;
            char **v = realloc(names, sizeof(char *) * (size_t)nc);
            if (!v) break;
            names = v;
        }
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof(char *), cmp_str);
    for (int i = 0; i < nn; i++) {
        char nm[96];
        snprintf(nm, sizeof nm, "%s", names[i]);
        char *dot = strstr(nm, ".mtx");
        if (dot) *dot = '\0';
        char fp[1200];
        snprintf(fp, sizeof fp, "%s/%s", dir, names[i]);
        add_item(items, n, cap, nm, "real", fp, 0, 0);
        free(names[i]);
    }
    free(names);
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void)
{
    printf("usage: suite [--dir DIR] [--gen | --no-gen] [--no-real] [--match SUBSTR] [--only NAME,..]\n"
           "             [--skip NAME,..] [--max-n N] [--min-n N] [--part I/M] [--solvers LIST] [--timeout S]\n"
           "             [--oracle-timeout S]\n"
           "             [--prep-timeout S] [--deadline S] [--out DIR] [--append] [--plot] [--tmp DIR]\n"
           "             [--add NAME=SPEC] [--list]\n"
           "             [--no-warmup] [--repeat R] [--repeat-below S]\n"
           "       suite --report-only A.csv[,B.csv..] [--out DIR] [--plot]\n"
           "solvers: sap,superlu,umfpack,mumps,pardiso,cudss,cusolver_qr,cusparse_ilu0,sap_direct_host,sap_direct_cudss,\n"
           "         sap_sapd,sap_sapc,sap_band_lu,sap_ilu,sap_bjacobi,sap_jacobi (default: all)\n"
           "dir default: $SAP_MATRIX_DIR, else %s; out default: bench/results\n",
           SAP_MATRIX_DIR_DEFAULT);
}

static void run_plot(const char *csv, const char *out)
{
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "python3 '%s/bench/suite_plot.py' '%s' '%s/suite_speedup.png'", SAP_SOURCE_DIR, csv, out);
    fflush(stdout);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "suite: plotting failed (rc %d): %s\n", rc, cmd);
}

static void missing_arg(const char *a)
{
    fprintf(stderr, "suite: %s needs a value\n", a);
    exit(2);
}

static void command_line(char *buf, size_t len, int argc, char **argv)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc && k + 2 < len; i++) {
        int w = snprintf(buf + k, len - k, "%s%s", i ? " " : "", i == 0 ? "suite" : argv[i]);
        if (w > 0) k += (size_t)w;
    }
}

int main(int argc, char **argv)
{
    const double t_start = suite_now();
    options o;
    memset(&o, 0, sizeof o);
    o.dir = getenv("SAP_MATRIX_DIR");
    if (!o.dir || !*o.dir) o.dir = SAP_MATRIX_DIR_DEFAULT;
    o.out = "bench/results";
    o.gen = 1, o.real = 1;
    o.timeout = 60, o.prep_timeout = 300;
    o.repeat = 3, o.repeat_below = 1.0;
    o.part_i = 1, o.part_m = 1;
    for (int s = 0; s < SUITE_NSOLVERS; s++) o.solver_on[s] = 1;
    o.tmp = getenv("TMPDIR");
    if (!o.tmp || !*o.tmp) o.tmp = "/tmp";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_ARG (v ? (void)++i : missing_arg(a))
        if (!strcmp(a, "--dir")) NEED_ARG, o.dir = v;
        else if (!strcmp(a, "--gen")) o.gen = 1;
        else if (!strcmp(a, "--no-gen")) o.gen = 0;
        else if (!strcmp(a, "--no-real")) o.real = 0;
        else if (!strcmp(a, "--match")) NEED_ARG, o.match = v;
        else if (!strcmp(a, "--only")) NEED_ARG, o.only = v;
        else if (!strcmp(a, "--skip")) NEED_ARG, o.skip = v;
        else if (!strcmp(a, "--max-n")) NEED_ARG, o.max_n = (long long)atof(v);
        else if (!strcmp(a, "--min-n")) NEED_ARG, o.min_n = (long long)atof(v);
        else if (!strcmp(a, "--oracle-timeout")) NEED_ARG, o.oracle_timeout = atof(v);
        else if (!strcmp(a, "--part")) {
            NEED_ARG;
            if (sscanf(v, "%d/%d", &o.part_i, &o.part_m) != 2 || o.part_m < 1 || o.part_i < 1 ||
                o.part_i > o.part_m) {
                fprintf(stderr, "suite: --part wants I/M with 1 <= I <= M\n");
                return 2;
            }
        } else if (!strcmp(a, "--solvers")) {
            NEED_ARG;
            for (int s = 0; s < SUITE_NSOLVERS; s++) o.solver_on[s] = in_list(v, suite_solver_names[s]);
            for (const char *p = v; *p;) { /* unknown names are an error */
                const char *c = strchr(p, ',');
                size_t l = c ? (size_t)(c - p) : strlen(p);
                int known = 0;
                for (int s = 0; s < SUITE_NSOLVERS; s++)
                    if (strlen(suite_solver_names[s]) == l && !strncmp(p, suite_solver_names[s], l)) known = 1;
                if (!known && l) {
                    fprintf(stderr, "suite: unknown solver '%.*s'\n", (int)l, p);
                    return 2;
                }
                if (!c) break;
                p = c + 1;
            }
        } else if (!strcmp(a, "--timeout")) NEED_ARG, o.timeout = atof(v);
        else if (!strcmp(a, "--prep-timeout")) NEED_ARG, o.prep_timeout = atof(v);
        else if (!strcmp(a, "--deadline")) NEED_ARG, o.deadline = atof(v);
        else if (!strcmp(a, "--out")) NEED_ARG, o.out = v;
        else if (!strcmp(a, "--append")) o.append = 1;
        else if (!strcmp(a, "--plot")) o.plot = 1;
        else if (!strcmp(a, "--list")) o.list = 1;
        else if (!strcmp(a, "--no-warmup")) o.no_warmup = 1;
        else if (!strcmp(a, "--repeat")) NEED_ARG, o.repeat = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(a, "--repeat-below")) NEED_ARG, o.repeat_below = atof(v);
        else if (!strcmp(a, "--tmp")) NEED_ARG, o.tmp = v;
        else if (!strcmp(a, "--report-only")) NEED_ARG, o.report_only = v;
        else if (!strcmp(a, "--add")) {
            NEED_ARG;
            const char *eq = strchr(v, '=');
            if (!eq || o.nextra >= 32) {
                fprintf(stderr, "suite: --add wants NAME=SPEC\n");
                return 2;
            }
            o.extra_names[o.nextra] = strndup(v, (size_t)(eq - v));
            o.extra_specs[o.nextra] = strdup(eq + 1);
            o.nextra++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        } else {
            fprintf(stderr, "suite: unknown argument %s\n", a);
            usage();
            return 2;
        }
#undef NEED_ARG
    }
    if (mkdir_p(o.out) != 0) {
        fprintf(stderr, "suite: cannot create %s\n", o.out);
        return 1;
    }
    char cmd[2048];
    command_line(cmd, sizeof cmd, argc, argv);
    char csv_path[1200], md_path[1200], log_path[1200];
    snprintf(csv_path, sizeof csv_path, "%s/suite.csv", o.out);
    snprintf(md_path, sizeof md_path, "%s/suite.md", o.out);
    snprintf(log_path, sizeof log_path, "%s/suite_children.log", o.out);

    /* ---- report only: merge CSV files ---- */
    if (o.report_only) {
        suite_rows rows = {0};
        char *list = strdup(o.report_only);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            if (suite_csv_read(tok, &rows) != 0) fprintf(stderr, "suite: cannot read %s\n", tok);
            else printf("read %s\n", tok);
        }
        free(list);
        FILE *f = fopen(csv_path, "w");
        if (!f) {
            fprintf(stderr, "suite: cannot write %s\n", csv_path);
            return 1;
        }
        suite_csv_header(f);
        for (int i = 0; i < rows.n; i++) suite_csv_write(f, &rows.v[i]);
        fclose(f);
        suite_write_markdown(&rows, md_path, cmd);
        printf("merged %d rows -> %s, %s\n", rows.n, csv_path, md_path);
        if (o.plot) run_plot(csv_path, o.out);
        suite_rows_free(&rows);
        return 0;
    }

    /* ---- the systems ---- */
    item *items = NULL;
    int nitems = 0, cap = 0;
    if (o.real) list_real(o.dir, &items, &nitems, &cap);
    if (o.gen)
        for (size_t g = 0; g < sizeof gen_set / sizeof gen_set[0]; g++)
            add_item(&items, &nitems, &cap, gen_set[g].name, "gen", gen_set[g].spec, gen_set[g].n, 0);
    for (int e = 0; e < o.nextra; e++) add_item(&items, &nitems, &cap, o.extra_names[e], "gen", o.extra_specs[e], 0, 0);
    /* filters, then every M-th for --part */
    int nsel = 0;
    for (int i = 0; i < nitems; i++) {
        item *it = &items[i];
        int keep = 1;
        if (o.match && !strstr(it->name, o.match)) keep = 0;
        if (o.only && !in_list(o.only, it->name)) keep = 0;
        if (o.skip && in_list(o.skip, it->name)) keep = 0;
        if (o.max_n > 0 && it->n_hint > o.max_n) keep = 0;
        if (o.min_n > 0 && it->n_hint > 0 && it->n_hint < o.min_n) keep = 0; /* an --add spec: N unknown, kept */
        if (keep) items[nsel++] = *it;
    }
    int nrun = 0;
    for (int i = 0; i < nsel; i++)
        if (i % o.part_m == o.part_i - 1) items[nrun++] = items[i];
    if (o.list) {
        for (int i = 0; i < nrun; i++) printf("%-28s %-4s N=%-9lld %s\n", items[i].name, items[i].set, items[i].n_hint,
                                              items[i].path);
        return 0;
    }
    if (nrun == 0) {
        fprintf(stderr, "suite: no systems selected (folder %s)\n", o.dir);
        return 1;
    }

    /* ---- outputs ---- */
    struct stat sb;
    int had_csv = o.append && stat(csv_path, &sb) == 0 && sb.st_size > 0;
    FILE *csv = fopen(csv_path, o.append ? "a" : "w");
    if (!csv) {
        fprintf(stderr, "suite: cannot write %s\n", csv_path);
        return 1;
    }
    if (!had_csv) suite_csv_header(csv);
    g_log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | (o.append ? 0 : O_TRUNC), 0644);
    char tmpl[1200];
    snprintf(tmpl, sizeof tmpl, "%s/sap_suite_XXXXXX", o.tmp);
    char *tmpdir = mkdtemp(tmpl);
    if (!tmpdir) {
        fprintf(stderr, "suite: cannot create a temporary folder in %s\n", o.tmp);
        return 1;
    }

    printf("suite: %d systems (part %d/%d), timeout %.0f s, results in %s\n", nrun, o.part_i, o.part_m, o.timeout,
           o.out);
    printf("%-26s %9s %10s |", "matrix", "N", "nnz");
    for (int s = 0; s < SUITE_NSOLVERS; s++)
        if (o.solver_on[s]) printf(" %12.12s", suite_solver_names[s]);
    printf("   (time to solution in s, or status)\n");
    fflush(stdout);

    suite_rows all = {0};
    char notrun_path[1200];
    snprintf(notrun_path, sizeof notrun_path, "%s/suite_not_run.txt", o.out);
    unlink(notrun_path);
    int n_notrun = 0;
    for (int i = 0; i < nrun; i++) {
        item *it = &items[i];
        double remaining = o.deadline > 0 ? o.deadline - (suite_now() - t_start) : 1e30;
        if (remaining < 5) { /* --deadline: list what was not started */
            FILE *nf = fopen(notrun_path, "w");
            printf("deadline (%.0f s) reached: %d systems not run (%s):", o.deadline, nrun - i, notrun_path);
            for (int j = i; j < nrun; j++) {
                printf(" %s", items[j].name);
                if (nf) fprintf(nf, "%s\n", items[j].name);
            }
            printf("\n");
            if (nf) fclose(nf);
            n_notrun = nrun - i;
            break;
        }
        char file[1400];
        snprintf(file, sizeof file, "%s/m.bin", tmpdir);
        prep_arg pa = {it, file, tmpdir};
        prep_result pr;
        memset(&pr, 0, sizeof pr);
        char label[256];
        snprintf(label, sizeof label, "%s: load", it->name);
        run_outcome po = run_child(prep_child, &pa, &pr, sizeof pr, fmin(o.prep_timeout, remaining), label);
        if (po.kind != 0) {
            pr.ok = 0;
            snprintf(pr.err, sizeof pr.err, "load %s: %s", po.kind == 1 ? "timeout" : "crashed", po.why);
        }
        long long n = pr.ok ? pr.n : it->n_hint, nnz = pr.ok ? pr.nnz : it->nnz_hint;
        printf("%-26.26s %9lld %10lld |", it->name, n, nnz);
        fflush(stdout);
        for (int s = 0; s < SUITE_NSOLVERS; s++) {
            if (!o.solver_on[s]) continue;
            suite_row row;
            memset(&row, 0, sizeof row);
            snprintf(row.name, sizeof row.name, "%s", it->name);
            snprintf(row.set, sizeof row.set, "%s", it->set);
            snprintf(row.solver, sizeof row.solver, "%s", suite_solver_names[s]);
            row.n = n, row.nnz = nnz, row.spd = pr.spd;
            row.time_s = row.init_s = row.rel_error = row.rel_residual = NAN;
            remaining = o.deadline > 0 ? o.deadline - (suite_now() - t_start) : 1e30;
            const double lim = oracle_iterative(s) && o.oracle_timeout > 0 ? fmin(o.oracle_timeout, o.timeout) : o.timeout;
            double eff_timeout = fmin(lim, remaining);
            if (!pr.ok) {
                snprintf(row.status, sizeof row.status, "n-a");
                snprintf(row.notes, sizeof row.notes, "matrix not available: %s", pr.err);
            } else if (eff_timeout < 1) {
                snprintf(row.status, sizeof row.status, "n-a");
                snprintf(row.notes, sizeof row.notes, "not run: suite deadline (--deadline) reached");
            } else {
                solve_arg sa = {file, it->name, s, !o.no_warmup, o.repeat, o.repeat_below};
                child_result cr;
                memset(&cr, 0, sizeof cr);
                snprintf(label, sizeof label, "%s: %s", it->name, suite_solver_names[s]);
                run_outcome ro = run_child(solve_child, &sa, &cr, sizeof cr, eff_timeout, label);
                if (ro.kind == 1 && eff_timeout < lim) {
                    snprintf(row.status, sizeof row.status, "n-a");
                    snprintf(row.notes, sizeof row.notes, "not finished before the suite deadline (--deadline)");
                } else if (ro.kind == 1) {
                    snprintf(row.status, sizeof row.status, "timeout");
                    row.time_s = lim;
                    snprintf(row.notes, sizeof row.notes, "%s", ro.why);
                } else if (ro.kind == 2) {
                    int killed = strstr(ro.why, "out of memory?") != NULL;
                    snprintf(row.status, sizeof row.status, killed ? "oom" : "crash");
                    snprintf(row.notes, sizeof row.notes, "%s", ro.why);
                } else {
                    row.time_s = cr.time_s, row.init_s = cr.init_s;
                    row.rel_error = cr.rel_error, row.rel_residual = cr.rel_residual;
                    const char *st = "fail";
                    if (cr.rc == SUITE_RUN_DONE)
                        st = (isfinite(cr.rel_error) && cr.rel_error <= 0.01) ? "ok" : "fail";
                    else if (cr.rc == SUITE_RUN_OOM) st = "oom";
                    else if (cr.rc == SUITE_RUN_NA) st = "n-a";
                    snprintf(row.status, sizeof row.status, "%s", st);
                    if (cr.rc == SUITE_RUN_NA) row.time_s = row.init_s = NAN;
                    snprintf(row.notes, sizeof row.notes, "%s%s%s", cr.note,
                             (cr.rc == SUITE_RUN_DONE && !strcmp(st, "fail")) ? "; error above 1%" : "",
                             ro.why[0] ? "; " : "");
                    if (ro.why[0]) {
                        size_t l = strlen(row.notes);
                        snprintf(row.notes + l, sizeof row.notes - l, "%s", ro.why);
                        if (strstr(ro.why, "crashed")) snprintf(row.status, sizeof row.status, "crash");
                    }
                }
            }
            suite_csv_write(csv, &row);
            suite_rows_add(&all, &row);
            char c[16];
            if (!strcmp(row.status, "ok")) snprintf(c, sizeof c, "%.3g", row.time_s);
            else snprintf(c, sizeof c, "%s", row.status);
            printf(" %12s", c);
            fflush(stdout);
        }
        printf("\n");
        fflush(stdout);
        unlink(file);
    }
    fclose(csv);
    rmdir(tmpdir);
    if (g_log_fd >= 0) close(g_log_fd);

    /* the summary covers the whole CSV (with --append, the earlier rows too) */
    suite_rows rows = {0};
    if (suite_csv_read(csv_path, &rows) != 0) rows = all;
    else suite_rows_free(&all);
    suite_write_markdown(&rows, md_path, cmd);
    printf("wrote %s, %s (solver output: %s)%s\n", csv_path, md_path, log_path,
           n_notrun ? "; some systems not run, see suite_not_run.txt" : "");
    if (o.plot) run_plot(csv_path, o.out);
    suite_rows_free(&rows);
    for (int i = 0; i < nitems && i < nrun; i++) free(items[i].path);
    free(items);
    return 0;
}
