/* banded.c -- the banded SaP solver against LAPACK dgbsv (OpenBLAS, all host cores) on
 * the papers' synthetic banded matrices (sap_gen_banded, x* = parabola, b = A x*):
 *   grid    Table 3 of the SaP paper: N x K, d = 1 (SaP-D and SaP-C with P = 50 and
 *           the automatic choice, dgbsv)
 *   psweep  Table 1: N = 200,000, K = 200, d = 1, P in a list (SaP-D, SaP-C); another N, K:
 *           the first of --n, --k
 *   dsweep  Table 2: N = 200,000, K = 200, P = 50, d in a list (SaP-D, SaP-C)
 *   e2e     end to end, N x K x d lists: exactly what `sap solve gen:banded:N=..,K=..,d=..`
 *           does from the CSR in host memory to x in host memory (sap_solver_create +
 *           setup + solve with the default options: the same automatic choices, printed
 *           with their reason), best of --repeat runs, against dgbsv (all host cores) in
 *           the same run, timed with and without building its band from the CSR
 *   synthetic  the same end to end on `gen:synthetic:N=..,K=..,fill=..` (the band hidden
 *           by random row and column permutations: DB and CM must find it), N x K lists,
 *           --fill F (default 1); dgbsv runs on the un-permuted band (the generator's
 *           permutations undone), the system it solves being the same one reordered
 * The grid also times every point end to end as `sap solve` (the e2e column, best of
 * --repeat) and names the share of that wall time the solver's profile accounts for
 * (T_create + T_stats + T_DB + T_CM + T_Drop + third stage + T_Dtransf + T_Asmbl + T_LU +
 * T_SPK + T_LUrdcd + T_Kry + T_refine over the wall time: the "named" column).  Points
 * whose dgbsv would exceed --dgbsv-max-gflop (2 N K (2K + 1) flop) are skipped whole in
 * the grid, so a capped run still fits its time; --grid-methods auto runs only the
 * automatic choice (not SaP-D / SaP-C with P = 50) besides the end-to-end run.
 * --reorder-graph host|gpu builds the CM graph on the host cores or (cuda context) on the
 * GPU whatever the matrix (default auto: the library's offload threshold, device.h).
 *   apply   one preconditioner application (SaP-D and SaP-C, float factors) at each N:K:P
 *           of --apply (P = 0: automatic), with the per-step sweeps and the backend's
 *           default, beside its bytes floor at the copy bandwidth measured in the same run;
 *           writes <out>/<STEM>_apply.md
 *   factor  the SaP-D factorization (float factors) at each N:K:P of --factor (P = 0:
 *           automatic) with the per-row LU kernels and the blocked ones (SAP_BAND_FACTOR=
 *           rows / blocked), median of --repeat x 2, beside the SGEMM rate measured in the
 *           same run (cuBLAS on cuda, the BLAS on all host cores on cpu); the rate counts the
 *           2 N K^2 flops of a banded LU; writes <out>/<STEM>_factor.md
 *   multi   many right-hand sides of one system at each N x K x d and each --nrhs (default
 *           1,4,16): sap_solver_solve_many (lockstep Krylov, one pass over the band factors
 *           per step for all columns) against the columns one after another and against
 *           dgbsv with all columns; writes <out>/<STEM>_multi.md and .csv
 * prints a table like Table 3 and the speedup distribution (Figure 5), and writes
 * <out>/<STEM>.csv and <out>/<STEM>.md (STEM: banded unless --name).
 *
 * usage: banded [--backend cuda|cpu] [--n LIST] [--k LIST] [--p LIST] [--d LIST]
 *               [--parts grid,psweep,dsweep,e2e,synthetic,apply,factor,multi,multidev] [--out DIR] [--dgbsv-max-gflop G]
 *               [--threads T] [--warmup 0|1] [--repeat R] [--name STEM] [--fill F] [--sync-timing 0|1]
 *               [--grid-methods all|auto] [--reorder-graph auto|host|gpu] [--apply N:K:P,...]
 *               [--factor N:K:P,...] [--solver-opts key=value,...] (sap_solver options of the e2e runs)
 *               [--nrhs LIST] (multi)
 * LIST is comma separated.  SaP times: "dev" is the papers' total time D_Tot / C_Tot =
 * T_LU + T_SPK + T_LUrdcd + T_Kry (the factorization and the solve on the device, the
 * system already there: in the grid and sweep rows T_Kry without the copies of b and x
 * between host and device, sap_band_stats.time_kry_transfer, which "total" keeps; the e2e
 * rows' device part is sap solve's T_Kry whole); "total" is end to end from the host CSR:
 * setup (host band build, uploads, the Krylov matrix, automatic choices, T_BC) + T_Kry.
 * SAP_LOG=info prints the library's progress messages (each solve's T_Kry parts) on
 * stderr; --sync-timing 1 times those parts with the device synchronized around each.  dgbsv: the factor+solve
 * call only.  Speedups over dgbsv are reported on both, for the automatic choice and for
 * the best run at each point. */
#define _DEFAULT_SOURCE /* getloadavg */
#define _POSIX_C_SOURCE 200809L
#include "sap.h"
#include "band/band_impl.h"
#include "device/device.h" /* sap__offload_set_min_nnz: --reorder-graph */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef SAP_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif
#ifdef SAP_HAVE_OPENBLAS
extern void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const float *alpha,
                   const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
                   const int *ldc, size_t, size_t);
extern void dgbsv_(const int *n, const int *kl, const int *ku, const int *nrhs, double *ab, const int *ldab, int *ipiv,
                   double *b, const int *ldb, int *info);
extern void openblas_set_num_threads(int);
extern int openblas_get_num_threads(void);
#endif

static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_list(const char *s, double *v, int max)
{
    int n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) v[n++] = atof(tok);
    return n;
}

typedef struct run_result {
    int ok;
    sap_band_stats st;
    double total, device, resid;
} run_result;

static double rel_res(const sap_csr *A, const double *x, const double *b, double *work)
{
    memcpy(work, b, sizeof(double) * (size_t)A->nrows);
    sap_csr_spmv(A, -1.0, x, 1.0, work);
    double nr = 0, nb = 0;
    for (sap_int i = 0; i < A->nrows; i++) nr += work[i] * work[i], nb += b[i] * b[i];
    return sqrt(nr / nb);
}

/* the largest rel_res of nrhs columns (column c at c * n) */
static double worst_rel_res(const sap_csr *A, int nrhs, const double *x, const double *b, double *work)
{
    const size_t n = (size_t)A->nrows;
    double w = 0;
    for (int c = 0; c < nrhs; c++) w = fmax(w, rel_res(A, x + (size_t)c * n, b + (size_t)c * n, work));
    return w;
}

/* --sync-timing 1: the band solves' Krylov parts timed with the device synchronized around
 * each (slower; for the SAP_LOG=info breakdown, not for the tables) */
static int sync_timing = 0;

static run_result run_sap(sap_context *ctx, const sap_csr *A, const double *b, double *x, double *work,
                          sap_band_method m, sap_int P)
{
    run_result r;
    memset(&r, 0, sizeof r);
    sap_band_options o;
    sap_band_options_init(&o);
    o.method = m;
    o.partitions = P;
    o.krylov.sync_timing = sync_timing;
    o.krylov.history = 0;
    sap_band_solver *S = NULL;
    memset(x, 0, sizeof(double) * (size_t)A->nrows);
    sap_status s = sap_band_solver_create(ctx, A, &o, &S);
    if (s == SAP_OK) s = sap_band_solver_solve(S, b, x, &r.st);
    r.ok = s >= 0;
    if (s != SAP_OK) fprintf(stderr, "  sap %s P=%lld: %s (%s)\n", sap_band_method_name(m), (long long)P,
                             sap_status_name(s), sap_context_last_error(ctx));
    r.total = r.st.time_setup + r.st.time_kry;
    r.device = r.st.time_lu + r.st.time_spk + r.st.time_lurdcd + r.st.time_kry - r.st.time_kry_transfer;
    r.resid = rel_res(A, x, b, work);
    sap_band_solver_destroy(S);
    return r;
}

/* dgbsv's flops on an N x N band of half-width K (2 N K (2K + 1)), in Gflop. */
static double dgbsv_gflop(sap_int n, sap_int K) { return 2.0 * (double)n * (double)K * (double)(2 * K + 1) * 1e-9; }

/* dgbsv time (s) or -1 (not available / skipped), x receives the solution. */
/* dgbsv with nrhs right-hand sides (columns of b and x at i * n): the call's seconds, *resid
 * the largest relative residual of the columns */
static double run_dgbsv_many(const sap_csr *A, sap_int K, int nrhs, const double *b, double *x, double max_gflop,
                             double *resid, double *work)
{
#ifdef SAP_HAVE_OPENBLAS
    if (dgbsv_gflop(A->nrows, K) > max_gflop) return -2;
    const int n = (int)A->nrows, kl = (int)K, ku = (int)K, ldab = 2 * kl + ku + 1, one = nrhs;
    double *ab = calloc((size_t)ldab * (size_t)n, sizeof(double));
    int *ipiv = malloc(sizeof(int) * (size_t)n);
    if (!ab || !ipiv) {
        free(ab);
        free(ipiv);
        return -1;
    }
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            ab[(size_t)(kl + ku + i - j) + (size_t)j * (size_t)ldab] = A->val[p];
        }
    memcpy(x, b, sizeof(double) * (size_t)n * (size_t)nrhs);
    int info = 0;
    double t0 = now();
    dgbsv_(&n, &kl, &ku, &one, ab, &ldab, ipiv, x, &n, &info);
    double t = now() - t0;
    free(ab);
    free(ipiv);
    *resid = worst_rel_res(A, nrhs, x, b, work);
    return info == 0 ? t : -1;
#else
    (void)A, (void)K, (void)nrhs, (void)b, (void)x, (void)max_gflop, (void)resid, (void)work;
    return -1;
#endif
}

/* The papers' synthetic banded matrix (seed 42), x* = parabola, b = A x*, x and a work
 * vector; 0 (and a message) when the generation fails. */
static int make_problem(sap_context *ctx, sap_int n, sap_int K, double d, sap_csr **A, double **b, double **x,
                        double **xs, double **work)
{
    if (sap_gen_banded(ctx, n, K, d, 0, 42, A) != SAP_OK) {
        fprintf(stderr, "generation failed N=%lld K=%lld: %s\n", (long long)n, (long long)K, sap_context_last_error(ctx));
        return 0;
    }
    *b = malloc(sizeof(double) * (size_t)n);
    *x = malloc(sizeof(double) * (size_t)n);
    *xs = malloc(sizeof(double) * (size_t)n);
    *work = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, *xs);
    sap_csr_spmv(*A, 1.0, *xs, 0.0, *b);
    return 1;
}

static void free_problem(sap_csr *A, double *b, double *x, double *xs, double *work)
{
    free(b);
    free(x);
    free(xs);
    free(work);
    sap_csr_destroy(A);
}

static FILE *csv, *md, *apply_md;
/* speedups over dgbsv at grid points with N >= 10,000: automatic choice on the device
 * time, best run on the device time, automatic choice end to end (the band solver from
 * the host CSR, against the dgbsv call), `sap solve` end to end against the dgbsv call
 * and against dgbsv with its band assembly from the same CSR */
enum { SP_AUTO_DEV, SP_BEST_DEV, SP_AUTO_TOTAL, SP_E2E_CALL, SP_E2E_ASM, SP_KINDS };
static double speedups[SP_KINDS][4096];
static int nspeed;
/* the share of the e2e wall time the profile names, over every end-to-end run */
static double named_min = INFINITY;
static int named_runs;

/* ---- end to end: sap_solver as `sap solve` runs it ------------------------------------ */

static const char *solver_method_of(const sap_solver_stats *st) { return sap_solver_method_name(st->method); }

/* --solver-opts "key=value,...": sap_solver options for the e2e runs (e.g. krylov=bicgstabl:2,
 * the Krylov method before the automatic Richardson) */
static const char *e2e_opts = NULL;

/* One sap_solver run from the host CSR to x on the host (create, setup, solve); seconds or
 * -1.  st receives its statistics. */
/* the default options with --solver-opts applied */
static void solver_options(sap_solver_options *so_)
{
    sap_solver_options so;
    sap_solver_options_init(&so);
    if (e2e_opts) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", e2e_opts);
        char *save = NULL;
        for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(kv, '=');
            if (!eq) continue;
            *eq = '\0';
            if (sap_solver_options_set(&so, kv, eq + 1) != SAP_OK) fprintf(stderr, "bad solver option %s\n", kv);
        }
    }
    *so_ = so;
}

static double run_solver(sap_context *ctx, const sap_csr *A, const double *b, double *x, sap_solver_stats *st)
{
    sap_solver_options so;
    solver_options(&so);
    memset(x, 0, sizeof(double) * (size_t)A->nrows);
    sap_solver *S = NULL;
    const double t0 = now();
    sap_status s = sap_solver_create_borrowed(ctx, A, &so, &S); /* as sap solve */
    if (s >= 0) s = sap_solver_setup(S);
    if (s >= 0) s = sap_solver_solve(S, b, x);
    const double t = now() - t0;
    if (S) sap_solver_get_stats(S, st);
    if (s != SAP_OK && s != SAP_WARN_BOOSTED_PIVOTS)
        fprintf(stderr, "  sap_solver: %s (%s)\n", sap_status_name(s), sap_context_last_error(ctx));
    sap_solver_destroy(S);
    return s >= 0 ? t : -1;
}

typedef struct e2e_result {
    double wall, dev, named, resid; /* wall INFINITY: every run failed */
    sap_solver_stats st;
} e2e_result;

/* The seconds the profile names (every T_* of sap_solver_stats). */
static double named_seconds(const sap_solver_stats *s)
{
    return s->time_create + s->time_stats + s->time_refine + s->time_db + s->time_cm + s->time_drop + s->time_third +
           s->time_transfer + s->time_asmbl + s->time_lu + s->time_spk + s->time_lurdcd + s->time_kry;
}

/* `sap solve` on A x = b, best of repeat runs: one line on stdout, one csv row, two md
 * rows (the profile; the reason and the named share). */
static e2e_result e2e_sap(sap_context *ctx, const char *part, const sap_csr *A, sap_int K, double d,
                          const double *b, double *x, double *work, int repeat)
{
    const sap_int n = A->nrows;
    e2e_result e;
    memset(&e, 0, sizeof(e));
    e.wall = INFINITY;
    e.resid = NAN;
    for (int r = 0; r < repeat; r++) {
        sap_solver_stats st;
        memset(&st, 0, sizeof(st));
        const double t = run_solver(ctx, A, b, x, &st);
        if (t > 0 && t < e.wall) {
            e.wall = t;
            e.st = st;
            e.resid = rel_res(A, x, b, work);
        }
    }
    const sap_solver_stats *s = &e.st;
    e.dev = s->time_lu + s->time_spk + s->time_lurdcd + s->time_kry;
    e.named = isfinite(e.wall) ? named_seconds(s) / e.wall : 0.0;
    if (isfinite(e.wall)) {
        if (e.named < named_min) named_min = e.named;
        named_runs++;
    }
    printf("%-6s N=%8lld K=%4lld d=%.2f e2e %-10s P=%4lld it=%6.2f res=%.1e | create %.4f stats %.4f DB %.4f CM %.4f "
           "Drop %.4f third %.4f Dtransf %.4f Asmbl %.4f LU %.4f SPK %.4f rdcd %.4f Kry %.4f refine %.4f | dev %.4f "
           "e2e %.4f s (named %.1f%%)\n",
           part, (long long)n, (long long)K, d, solver_method_of(s), (long long)s->partitions, s->iterations, e.resid,
           s->time_create, s->time_stats, s->time_db, s->time_cm, s->time_drop, s->time_third, s->time_transfer,
           s->time_asmbl, s->time_lu, s->time_spk, s->time_lurdcd, s->time_kry, s->time_refine, e.dev, e.wall,
           100.0 * e.named);
    printf("       K_original %lld, K_cm %lld, K_max %lld; reason: %s\n", (long long)s->K_original, (long long)s->K_cm,
           (long long)s->K_max, s->reason);
    fflush(stdout);
    fprintf(csv, "%s,%lld,%lld,%.3g,e2e,0,%lld,%s,%.2f,%.3e,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n", part, (long long)n,
            (long long)K, d, (long long)s->partitions, solver_method_of(s), s->iterations, e.resid, s->time_asmbl,
            s->time_lu, s->time_spk, s->time_lurdcd, s->time_kry, e.dev, e.wall, isfinite(e.wall));
    fprintf(md, "| %s | %lld | %lld | %.2g | %s (sap solve) | %lld | %.2f | %.1e | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |\n",
            part, (long long)n, (long long)K, d, solver_method_of(s), (long long)s->partitions, s->iterations, e.resid,
            s->time_asmbl, s->time_lu, s->time_spk, s->time_lurdcd, s->time_kry, e.dev, e.wall);
    fprintf(md, "| | | | | named %.1f%% of the e2e wall time: T_create %.4f, T_stats %.4f, T_DB %.4f, T_CM %.4f, T_Drop %.4f, "
                "third %.4f, T_Dtransf %.4f, T_refine %.4f; K %lld -> %lld; reason: %s | | | | | | | | | | |\n",
            100.0 * e.named, s->time_create, s->time_stats, s->time_db, s->time_cm, s->time_drop, s->time_third,
            s->time_transfer, s->time_refine, (long long)s->K_original, (long long)s->K_cm, s->reason);
    return e;
}

/* dgbsv on the band A (half-width K) with nrhs columns, best of repeat runs: *call the
 * dgbsv call, *asm the call with its band assembly from A's CSR; 0 when skipped or not
 * available. */
static int e2e_dgbsv(const sap_csr *A, sap_int K, int nrhs, const double *b, double *x, double *work, int repeat,
                     double max_gflop, double *call, double *asm_, double *resid)
{
    double tl = INFINITY, ta = INFINITY, lres = NAN;
    for (int r = 0; r < repeat; r++) {
        double res = 0;
        const double t0 = now();
        const double t = run_dgbsv_many(A, K, nrhs, b, x, max_gflop, &res, work);
        /* tall includes rel_res (one SpMV): a small upper bound, nothing subtracted */
        const double tall = now() - t0;
        if (t <= 0) break;
        if (t < tl) tl = t, lres = res;
        if (tall < ta) ta = tall;
    }
    *call = tl;
    *asm_ = ta;
    *resid = lres;
    return isfinite(tl);
}

static void dgbsv_rows(const char *part, sap_int n, sap_int K, double d, double call, double asm_, double lres,
                       const e2e_result *e)
{
    printf("%-6s N=%8lld K=%4lld d=%.2f dgbsv      res=%.1e call %.4f s, with band assembly %.4f s | sap e2e "
           "speedup %.2fx (vs call %.2fx), device-part speedup %.1fx\n",
           part, (long long)n, (long long)K, d, lres, call, asm_, asm_ / e->wall, call / e->wall, call / e->dev);
    fprintf(csv, "%s,%lld,%lld,%.3g,dgbsv,0,0,dgbsv,0,%.3e,0,0,0,0,0,%.6f,%.6f,1\n", part, (long long)n, (long long)K,
            d, lres, call, asm_);
    fprintf(md, "| %s | %lld | %lld | %.2g | **dgbsv** | - | - | %.1e | | | | | | %.4f (call) | %.4f (with band assembly); "
                "sap solve: %.2fx, %.2fx vs the call, device part %.1fx |\n",
            part, (long long)n, (long long)K, d, lres, call, asm_, asm_ / e->wall, call / e->wall, call / e->dev);
    fflush(stdout);
}

static void point(sap_context *ctx, const char *part, sap_int n, sap_int K, double d, const sap_int *Ps, int nP,
                  int with_auto, int with_lapack, double max_gflop, int e2e_repeat)
{
    sap_csr *A = NULL;
    double *b = NULL, *x = NULL, *xs = NULL, *work = NULL;
    if (!make_problem(ctx, n, K, d, &A, &b, &x, &xs, &work)) return;
    double best = INFINITY, best_dev = INFINITY, auto_dev = INFINITY, auto_total = INFINITY;
    const char *best_name = "-";
    for (int ip = 0; ip <= nP; ip++) {
        if (ip == nP && !with_auto) break;
        const sap_int P = ip < nP ? Ps[ip] : 0;
        for (int m = (ip == nP ? 0 : 1); m <= (ip == nP ? 0 : 2); m++) {
            run_result r = run_sap(ctx, A, b, x, work, (sap_band_method)m, P);
            const char *mn = m == 0 ? "auto" : sap_band_method_name((sap_band_method)m);
            printf("%-6s N=%8lld K=%3lld d=%.2f %-6s P=%4lld(%4lld) it=%6.2f res=%.1e | BC %8.4f LU %8.4f SPK %8.4f "
                   "rdcd %8.4f Kry %8.4f | dev %8.4f total %8.4f s\n",
                   part, (long long)n, (long long)K, d, mn, (long long)P, (long long)r.st.partitions, r.st.iterations,
                   r.resid, r.st.time_bc, r.st.time_lu, r.st.time_spk, r.st.time_lurdcd, r.st.time_kry, r.device, r.total);
            fflush(stdout);
            fprintf(csv, "%s,%lld,%lld,%.3g,%s,%lld,%lld,%s,%.2f,%.3e,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n", part,
                    (long long)n, (long long)K, d, mn, (long long)P, (long long)r.st.partitions,
                    sap_band_method_name(r.st.method), r.st.iterations, r.resid, r.st.time_bc, r.st.time_lu,
                    r.st.time_spk, r.st.time_lurdcd, r.st.time_kry, r.device, r.total, r.ok);
            fprintf(md, "| %s | %lld | %lld | %.2g | %s | %lld | %.2f | %.1e | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |\n",
                    part, (long long)n, (long long)K, d, mn, (long long)r.st.partitions, r.st.iterations, r.resid,
                    r.st.time_bc, r.st.time_lu, r.st.time_spk, r.st.time_lurdcd, r.st.time_kry, r.device, r.total);
            if (r.ok && r.resid <= 1.01e-10) {
                if (r.total < best) best = r.total, best_name = mn;
                if (r.device < best_dev) best_dev = r.device;
                if (m == 0) auto_dev = r.device, auto_total = r.total;
            }
        }
    }
    e2e_result e;
    memset(&e, 0, sizeof(e));
    e.wall = INFINITY;
    if (e2e_repeat > 0) e = e2e_sap(ctx, part, A, K, d, b, x, work, e2e_repeat);
    if (with_lapack) {
        double call = 0, asm_ = 0, lres = 0;
        if (e2e_dgbsv(A, K, 1, b, x, work, 1, max_gflop, &call, &asm_, &lres)) {
            const double t = call;
            printf("%-6s N=%8lld K=%3lld d=%.2f dgbsv  res=%.1e time %.4f s  speedup auto: device %.1fx, end to end "
                   "%.2fx; best device %.1fx, best end to end (%s) %.2fx\n",
                   part, (long long)n, (long long)K, d, lres, t, t / auto_dev, t / auto_total, t / best_dev, best_name,
                   t / best);
            if (e2e_repeat > 0) {
                dgbsv_rows(part, n, K, d, call, asm_, lres, &e);
            } else {
                fprintf(csv, "%s,%lld,%lld,%.3g,dgbsv,0,0,dgbsv,0,%.3e,0,0,0,0,0,%.6f,%.6f,1\n", part, (long long)n,
                        (long long)K, d, lres, t, asm_);
                fprintf(md, "| %s | %lld | %lld | %.2g | **dgbsv** | - | - | %.1e | | | | | | | %.4f (auto: %.1fx device, %.2fx end to end) |\n",
                        part, (long long)n, (long long)K, d, lres, t, t / auto_dev, t / auto_total);
            }
            if (n >= 10000 && nspeed < 4096 && isfinite(best) && isfinite(auto_dev) &&
                (e2e_repeat <= 0 || isfinite(e.wall))) {
                speedups[SP_AUTO_DEV][nspeed] = t / auto_dev;
                speedups[SP_BEST_DEV][nspeed] = t / best_dev;
                speedups[SP_AUTO_TOTAL][nspeed] = t / auto_total;
                speedups[SP_E2E_CALL][nspeed] = e2e_repeat > 0 ? t / e.wall : NAN;
                speedups[SP_E2E_ASM][nspeed] = e2e_repeat > 0 ? asm_ / e.wall : NAN;
                nspeed++;
            }
        } else {
            printf("%-6s N=%8lld K=%3lld dgbsv %s\n", part, (long long)n, (long long)K,
                   dgbsv_gflop(n, K) > max_gflop ? "skipped (--dgbsv-max-gflop)" : "not available");
        }
        fflush(stdout);
    }
    free_problem(A, b, x, xs, work);
}

static void e2e_point(sap_context *ctx, sap_int n, sap_int K, double d, int repeat, double max_gflop)
{
    sap_csr *A = NULL;
    double *b = NULL, *x = NULL, *xs = NULL, *work = NULL;
    if (!make_problem(ctx, n, K, d, &A, &b, &x, &xs, &work)) return;
    e2e_result e = e2e_sap(ctx, "e2e", A, K, d, b, x, work, repeat);
    double call = 0, asm_ = 0, lres = 0;
    if (e2e_dgbsv(A, K, 1, b, x, work, repeat, max_gflop, &call, &asm_, &lres))
        dgbsv_rows("e2e", n, K, d, call, asm_, lres, &e);
    else
        printf("e2e    N=%8lld K=%4lld dgbsv skipped or not available\n", (long long)n, (long long)K);
    fflush(stdout);
    free_problem(A, b, x, xs, work);
}

/* gen:synthetic:N=n,K=K,d=d,fill=fill (seed 42, as `sap solve` with that spec and seed=42)
 * end to end; dgbsv on the band the generator hid: A(i, c) = Band(p[i], q[c]), so
 * Band = A(pinv, qinv) and A x = b is Band y = c with y[q[c]] = x[c], c[p[i]] = b[i]. */
static void synthetic_point(sap_context *ctx, sap_int n, sap_int K, double d, double fill, int repeat,
                            double max_gflop)
{
    sap_csr *A = NULL, *B = NULL;
    sap_int *p = malloc(sizeof(sap_int) * (size_t)n), *q = malloc(sizeof(sap_int) * (size_t)n);
    sap_int *pinv = malloc(sizeof(sap_int) * (size_t)n), *qinv = malloc(sizeof(sap_int) * (size_t)n);
    double *b = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n);
    double *xs = malloc(sizeof(double) * (size_t)n), *work = malloc(sizeof(double) * (size_t)n);
    double *c = malloc(sizeof(double) * (size_t)n);
    char part[16] = "synth";
    const double tg = now();
    if (!p || !q || !pinv || !qinv || !b || !x || !xs || !work || !c ||
        sap_gen_synthetic(ctx, n, K, d, fill, 42, &A, p, q) != SAP_OK) {
        fprintf(stderr, "synthetic N=%lld K=%lld: %s\n", (long long)n, (long long)K, sap_context_last_error(ctx));
        goto done;
    }
    printf("synth  N=%8lld K=%4lld d=%.2f fill %.2f: %lld nonzeros, generated in %.3f s\n", (long long)n, (long long)K,
           d, fill, (long long)A->nnz, now() - tg);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    e2e_result e = e2e_sap(ctx, part, A, K, d, b, x, work, repeat);
    if (sap_perm_invert(ctx, n, p, pinv) != SAP_OK || sap_perm_invert(ctx, n, q, qinv) != SAP_OK ||
        sap_csr_permute(A, pinv, qinv, &B) != SAP_OK) {
        fprintf(stderr, "synthetic: un-permuting the band: %s\n", sap_context_last_error(ctx));
        goto done;
    }
    for (sap_int i = 0; i < n; i++) c[p[i]] = b[i];
    double call = 0, asm_ = 0, lres = 0;
    if (e2e_dgbsv(B, K, 1, c, x, work, repeat, max_gflop, &call, &asm_, &lres))
        dgbsv_rows(part, n, K, d, call, asm_, lres, &e);
    else
        printf("synth  N=%8lld K=%4lld dgbsv skipped or not available\n", (long long)n, (long long)K);
    fflush(stdout);
done:
    sap_csr_destroy(A);
    sap_csr_destroy(B);
    free(p), free(q), free(pinv), free(qinv), free(b), free(x), free(xs), free(work), free(c);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- apply: one preconditioner application (sap__band_fact_apply on device vectors) ------
 * For N:K:P (P = 0: the automatic P of the method), SaP-D and SaP-C with float factors,
 * two sweep kernels of the backend (SAP_BAND_SWEEP=step: the per-step sweeps; =chunked:
 * the chunked ones; the backend's default picks one of them from P): the median seconds of one application over 'reps' (each synchronized),
 * the bytes it must read (the factor entries inside the partitions, SaP-C also its
 * coupling, spike and reduced-system blocks, and the vectors) and that floor at the
 * device bandwidth measured in the same run (a copy of a 512 MB vector). */
static double copy_bandwidth(sap_context *ctx)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = 128 << 20; /* 128 Mi floats: 512 MB each way */
    sap_vec a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    double bw = 0;
    if (ops->vec_create(ctx, n, SAP_FLOAT, &a) == SAP_OK && ops->vec_create(ctx, n, SAP_FLOAT, &b) == SAP_OK) {
        ops->copy(ctx, &a, &b);
        ops->synchronize(ctx);
        double best = 1e30;
        for (int r = 0; r < 5; r++) {
            const double t0 = now();
            ops->copy(ctx, &a, &b);
            ops->synchronize(ctx);
            const double t = now() - t0;
            if (t < best) best = t;
        }
        bw = 2.0 * 4.0 * (double)n / best;
    }
    if (a.data) ops->vec_destroy(ctx, &a);
    if (b.data) ops->vec_destroy(ctx, &b);
    return bw;
}

static double apply_bytes(const sap_band_fact *F)
{
    const sap_band_layout *L = &F->L;
    const double es = F->prec == SAP_FLOAT ? 4.0 : 8.0;
    double e = 0;
    for (sap_int b = 0; b < L->P; b++) {
        const double nb = (double)(L->off[b + 1] - L->off[b]);
        const double ke = fmin((double)L->Ki[b], nb - 1);
        e += nb * (2 * ke + 1) - ke * (ke + 1); /* the band entries inside the partition */
    }
    double bytes = e * es + 2.0 * es * (double)L->n;
    if (F->coupled && L->P > 1) bytes = 2.0 * bytes + 5.0 * es * (double)L->coff[L->P - 1]; /* 2 sweeps; B C V W R */
    return bytes;
}


/* The SGEMM rate (flop/s) of the context's device: cuBLAS on a cuda context, the BLAS on
 * all host cores on cpu; 0 where neither is there. */
static double sgemm_rate(sap_context *ctx)
{
    double best = 1e30, flop = 0;
#ifdef SAP_HAVE_CUDA
    if (sap_context_backend(ctx) == SAP_BACKEND_CUDA) {
        const int m = 8192;
        float *a = NULL, *b = NULL, *c = NULL;
        cublasHandle_t h = NULL;
        if (cudaMalloc((void **)&a, sizeof(float) * m * m) == cudaSuccess &&
            cudaMalloc((void **)&b, sizeof(float) * m * m) == cudaSuccess &&
            cudaMalloc((void **)&c, sizeof(float) * m * m) == cudaSuccess && cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
            cudaMemset(a, 0, sizeof(float) * m * m);
            cudaMemset(b, 0, sizeof(float) * m * m);
            const float one = 1, zero = 0;
            for (int r = 0; r < 6; r++) {
                cudaDeviceSynchronize();
                const double t0 = now();
                cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, a, m, b, m, &zero, c, m);
                cudaDeviceSynchronize();
                if (r > 0 && now() - t0 < best) best = now() - t0;
            }
            flop = 2.0 * m * (double)m * m;
        }
        if (h) cublasDestroy(h);
        cudaFree(a);
        cudaFree(b);
        cudaFree(c);
        return flop > 0 ? flop / best : 0;
    }
#endif
#ifdef SAP_HAVE_OPENBLAS
    const int m = 2048;
    float *a = calloc((size_t)m * m, sizeof(float)), *b = calloc((size_t)m * m, sizeof(float)),
          *c = calloc((size_t)m * m, sizeof(float));
    if (a && b && c) {
        const float one = 1, zero = 0;
        for (int r = 0; r < 4; r++) {
            const double t0 = now();
            sgemm_("N", "N", &m, &m, &m, &one, a, &m, b, &m, &zero, c, &m, 1, 1);
            if (r > 0 && now() - t0 < best) best = now() - t0;
        }
        flop = 2.0 * m * (double)m * m;
    }
    free(a);
    free(b);
    free(c);
#endif
    (void)ctx;
    return flop > 0 ? flop / best : 0;
}

/* One SaP-D float factorization at N, K, P (0: automatic) per LU kernel: median T_LU. */
static void factor_point(sap_context *ctx, FILE *fmd, sap_int n, sap_int K, sap_int Pin, int reps, double sgemm)
{
    sap_csr *A = NULL;
    if (sap_gen_banded(ctx, n, K, 1.0, 0, 42, &A) != SAP_OK) {
        fprintf(stderr, "generation failed N=%lld K=%lld\n", (long long)n, (long long)K);
        return;
    }
    sap_band_method m = SAP_BAND_SAPD;
    sap_int P = Pin;
    sap__band_auto(ctx, n, K, 1.0, &m, &P, NULL, NULL, 0);
    static const char *kern[2] = {"rows", "blocked"};
    double tm[2] = {-1, -1}, actual = 0;
    double *ts = malloc(sizeof(double) * (size_t)(reps > 0 ? reps : 1));
    for (int v = 0; v < 2; v++) {
        setenv("SAP_BAND_FACTOR", kern[v], 1);
        int ok = 0;
        for (int i = 0; i < reps; i++) {
            sap_band_factor_opts fo = {-1.0, 0.0, 0, SAP_BAND_KERNEL_AUTO};
            sap_band_fact *F = NULL;
            sap_int dropped = 0;
            double tbc = 0;
            sap_status st = sap__band_fact_create(ctx, A, P, 0, SAP_FLOAT, &fo, 0, &F, &dropped, &tbc);
            if (st < 0) {
                fprintf(stderr, "factor N=%lld K=%lld P=%lld %s: %s (%s)\n", (long long)n, (long long)K, (long long)P,
                        kern[v], sap_status_name(st), sap_context_last_error(ctx));
                break;
            }
            ts[ok++] = F->t_lu;
            if (!actual) /* the LU's own flops: 2 sum_k min(K_e, n_b - 1 - k)^2 a partition */
                for (sap_int b = 0; b < F->L.P; b++) {
                    const double nb = (double)(F->L.off[b + 1] - F->L.off[b]);
                    const double ke = fmin((double)F->L.Ki[b], nb - 1);
                    actual += 2.0 * ((nb - ke) * ke * ke + (ke - 1) * ke * (2 * ke - 1) / 6.0);
                }
            sap__band_fact_destroy(F);
        }
        if (ok) {
            qsort(ts, (size_t)ok, sizeof(double), cmpd);
            tm[v] = ts[ok / 2];
        }
    }
    unsetenv("SAP_BAND_FACTOR");
    free(ts);
    sap_csr_destroy(A);
    const double fl = 2.0 * (double)n * (double)K * (double)K;
    const double r0 = tm[0] > 0 ? fl / tm[0] : 0, r1 = tm[1] > 0 ? fl / tm[1] : 0;
    const double ra = tm[1] > 0 ? actual / tm[1] : 0;
    printf("factor N=%lld K=%lld P=%lld float: rows %.4f ms (%.2f Tflop/s), blocked %.4f ms (%.2f Tflop/s, %.1f%% of "
           "SGEMM %.2f Tflop/s; its own %.3g flop at %.2f Tflop/s, %.1f%%), blocked %.2fx\n",
           (long long)n, (long long)K, (long long)P, 1e3 * tm[0], 1e-12 * r0, 1e3 * tm[1], 1e-12 * r1,
           sgemm > 0 ? 100.0 * r1 / sgemm : 0, 1e-12 * sgemm, actual, 1e-12 * ra, sgemm > 0 ? 100.0 * ra / sgemm : 0,
           tm[1] > 0 ? tm[0] / tm[1] : 0);
    fprintf(csv, "factor,%lld,%lld,1,sap-d,%lld,%lld,rows/blocked,0,0,0,0,0,0,%.6f,%.6f,%.6f,%d\n", (long long)n,
            (long long)K, (long long)Pin, (long long)P, tm[0], tm[1], sgemm > 0 ? fl / sgemm : 0, tm[0] > 0 && tm[1] > 0);
    fprintf(fmd, "| %lld | %lld | %lld | %.3f | %.2f | %.3f | %.2f | %.1f%% | %.3g | %.1f%% | %.2fx |\n", (long long)n,
            (long long)K, (long long)P, 1e3 * tm[0], 1e-12 * r0, 1e3 * tm[1], 1e-12 * r1,
            sgemm > 0 ? 100.0 * r1 / sgemm : 0, actual, sgemm > 0 ? 100.0 * ra / sgemm : 0,
            tm[1] > 0 ? tm[0] / tm[1] : 0);
}

static sap_int apply_K = -1;
static sap_csr *apply_A = NULL;

static void apply_point(sap_context *ctx, sap_int n, sap_int K, sap_int Pin, int coupled, int reps, double bw)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    if (apply_A && (apply_A->nrows != n || apply_K != K)) { /* kept for the next point of the same N and K */
        sap_csr_destroy(apply_A);
        apply_A = NULL;
    }
    if (!apply_A && sap_gen_banded(ctx, n, K, 1.0, 0, 42, &apply_A) != SAP_OK) {
        fprintf(stderr, "generation failed N=%lld K=%lld\n", (long long)n, (long long)K);
        return;
    }
    apply_K = K;
    const sap_csr *A = apply_A;
    sap_band_method m = coupled ? SAP_BAND_SAPC : SAP_BAND_SAPD;
    sap_int P = Pin;
    sap__band_auto(ctx, n, K, 1.0, &m, &P, NULL, NULL, 0);
    double *h = malloc(sizeof(double) * (size_t)n), *z0 = malloc(sizeof(double) * (size_t)n),
           *z1 = malloc(sizeof(double) * (size_t)n), *ts = malloc(sizeof(double) * (size_t)reps);
    for (sap_int i = 0; i < n; i++) h[i] = sin(0.37 * (double)i) + 0.5;
    static const char *sweeps[2] = {"step", "chunked"};
    double tm[2] = {-1, -1}, bytes = 0;
    for (int v = 0; v < 2; v++) {
        if (sweeps[v]) setenv("SAP_BAND_SWEEP", sweeps[v], 1);
        else unsetenv("SAP_BAND_SWEEP");
        sap_band_factor_opts fo = {-1.0, 0.0, coupled, SAP_BAND_KERNEL_AUTO};
        sap_band_fact *F = NULL;
        sap_int dropped = 0;
        double tbc = 0;
        sap_vec r, z;
        memset(&r, 0, sizeof r);
        memset(&z, 0, sizeof z);
        sap_status st = sap__band_fact_create(ctx, A, P, 0, SAP_FLOAT, &fo, 0, &F, &dropped, &tbc);
        if (st >= 0) st = ops->vec_create(ctx, n, SAP_FLOAT, &r);
        if (st >= 0) st = ops->vec_create(ctx, n, SAP_FLOAT, &z);
        if (st >= 0) st = ops->vec_upload(ctx, &r, h);
        if (st >= 0) st = sap__band_fact_apply(F, r.data, z.data);
        if (st >= 0) st = ops->synchronize(ctx);
        for (int i = 0; i < reps && st >= 0; i++) {
            const double t0 = now();
            st = sap__band_fact_apply(F, r.data, z.data);
            if (st >= 0) st = ops->synchronize(ctx);
            ts[i] = now() - t0;
        }
        if (st >= 0) st = ops->vec_download(ctx, &z, v ? z1 : z0);
        if (st >= 0) {
            qsort(ts, (size_t)reps, sizeof(double), cmpd);
            tm[v] = ts[reps / 2];
            bytes = apply_bytes(F);
        } else {
            fprintf(stderr, "apply N=%lld K=%lld P=%lld: %s (%s)\n", (long long)n, (long long)K, (long long)P,
                    sap_status_name(st), sap_context_last_error(ctx));
        }
        if (r.data) ops->vec_destroy(ctx, &r);
        if (z.data) ops->vec_destroy(ctx, &z);
        sap__band_fact_destroy(F);
    }
    unsetenv("SAP_BAND_SWEEP");
    double num = 0, den = 0;
    for (sap_int i = 0; i < n; i++) num += (z1[i] - z0[i]) * (z1[i] - z0[i]), den += z0[i] * z0[i];
    const double diff = den > 0 ? sqrt(num / den) : 0, floor_s = bw > 0 ? bytes / bw : 0;
    printf("apply N=%lld K=%lld P=%lld %s float: per-step sweeps %.4f ms, chunked %.4f ms (%.1fx); bytes %.1f MB, "
           "floor %.4f ms at %.0f GB/s (chunked %.1fx the floor); results differ by %.2e\n",
           (long long)n, (long long)K, (long long)P, coupled ? "sap-c" : "sap-d", 1e3 * tm[0], 1e3 * tm[1],
           tm[1] > 0 ? tm[0] / tm[1] : 0, bytes * 1e-6, 1e3 * floor_s, bw * 1e-9, floor_s > 0 ? tm[1] / floor_s : 0, diff);
    fprintf(csv, "apply,%lld,%lld,1,%s,%lld,%lld,step/chunked,0,%.3e,0,0,0,0,%.6f,%.6f,%.6f,%d\n", (long long)n,
            (long long)K, coupled ? "sap-c" : "sap-d", (long long)Pin, (long long)P, diff, tm[0], tm[1], floor_s,
            tm[0] > 0 && tm[1] > 0);
    fprintf(apply_md, "| %lld | %lld | %lld | %s | %.4f | %.4f | %.1fx | %.1f | %.4f | %.1fx | %.1e |\n", (long long)n,
            (long long)K, (long long)P, coupled ? "SaP-C" : "SaP-D", 1e3 * tm[0], 1e3 * tm[1],
            tm[1] > 0 ? tm[0] / tm[1] : 0, bytes * 1e-6, 1e3 * floor_s, floor_s > 0 ? tm[1] / floor_s : 0, diff);
    free(h);
    free(z0);
    free(z1);
    free(ts);
}

/* <out>/<stem>_<part>.md opened for writing; NULL (said on stderr) when it cannot be */
/* The system of a --parts multi / multidev point: gen:banded (seed 42) and B = A x* for
 * nrhs random x* (seeds 1..), column-major; NULL (said on stderr) when it fails */
static sap_csr *multi_system(sap_context *ctx, sap_int n, sap_int K, double d, int nrhs, double **B)
{
    sap_csr *A = NULL;
    *B = NULL;
    if (sap_gen_banded(ctx, n, K, d, 0, 42, &A) != SAP_OK) {
        fprintf(stderr, "generation failed: %s\n", sap_context_last_error(ctx));
        return NULL;
    }
    double *b = malloc(sizeof(double) * (size_t)n * (size_t)nrhs), *xs = malloc(sizeof(double) * (size_t)n);
    for (int c = 0; c < nrhs; c++) {
        sap_gen_xstar(ctx, n, SAP_XSTAR_RANDOM, 1 + (uint64_t)c, xs);
        sap_csr_spmv(A, 1.0, xs, 0.0, b + (size_t)c * n);
    }
    free(xs);
    *B = b;
    return A;
}

/* --parts multi: nrhs right-hand sides of one system (b = A x*, x* random with seeds 1..):
 * one sap_solver (create + setup, as `sap solve`, timed once), then all columns through
 * sap_solver_solve_many (the Krylov method in lockstep, one pass over the band factors per
 * step for all columns) and the same columns one after another (sap_solver_solve), best
 * of repeat each, against dgbsv with nrhs columns (one factorization; all host cores),
 * with and without its band assembly. */
static void multi_point(sap_context *ctx, FILE *f, FILE *fc, sap_int n, sap_int K, double d, int nrhs, int repeat,
                        double max_gflop)
{
    double *B = NULL;
    sap_csr *A = multi_system(ctx, n, K, d, nrhs, &B);
    if (!A) return;
    const size_t nk = (size_t)n * (size_t)nrhs;
    double *X = malloc(sizeof(double) * nk), *work = malloc(sizeof(double) * (size_t)n);
    sap_solver_options so;
    solver_options(&so);
    sap_solver *S = NULL;
    double t0 = now();
    sap_status st = sap_solver_create_borrowed(ctx, A, &so, &S);
    if (st >= 0) st = sap_solver_setup(S);
    const double t_setup = now() - t0;
    double t_many = INFINITY, t_one = INFINITY, it_many = 0, it_one = 0, kry_many = 0, res_many = 0, res_one = 0;
    sap_solver_stats ss;
    memset(&ss, 0, sizeof(ss));
    for (int r = 0; r < repeat && st >= 0; r++) {
        memset(X, 0, sizeof(double) * nk);
        t0 = now();
        st = sap_solver_solve_many(S, nrhs, B, n, X, n);
        const double t = now() - t0;
        sap_solver_get_stats(S, &ss);
        if (t < t_many) {
            t_many = t;
            it_many = ss.iterations;
            kry_many = ss.time_kry;
            res_many = worst_rel_res(A, nrhs, X, B, work);
        }
        memset(X, 0, sizeof(double) * nk);
        double it = 0;
        t0 = now();
        for (int c = 0; c < nrhs && st >= 0; c++) {
            st = sap_solver_solve(S, B + (size_t)c * n, X + (size_t)c * n);
            sap_solver_get_stats(S, &ss);
            it += ss.iterations;
        }
        const double t1 = now() - t0;
        if (t1 < t_one) {
            t_one = t1;
            it_one = it;
            res_one = worst_rel_res(A, nrhs, X, B, work);
        }
    }
    if (st < 0) fprintf(stderr, "  sap_solver: %s (%s)\n", sap_status_name(st), sap_context_last_error(ctx));
    sap_solver_get_stats(S, &ss);
    double lres = NAN, call = INFINITY, asm_ = INFINITY;
    e2e_dgbsv(A, K, nrhs, B, X, work, repeat, max_gflop, &call, &asm_, &lres);
    const double e2e = t_setup + t_many;
    printf("multi  N=%8lld K=%4lld d=%.2f nrhs=%3d %s | setup %.4f s | solve_many %.4f s (%.2f ms a column, T_Kry "
           "%.4f, %g it, res %.1e) | one by one %.4f s (%g it, res %.1e) | %.2fx | e2e %.4f s | dgbsv call %.4f, "
           "with assembly %.4f (res %.1e): %.2fx, %.2fx\n",
           (long long)n, (long long)K, d, nrhs, solver_method_of(&ss), t_setup, t_many, 1e3 * t_many / nrhs, kry_many,
           it_many, res_many, t_one, it_one, res_one, t_one / t_many, e2e, call, asm_, lres, call / e2e, asm_ / e2e);
    fprintf(f, "| %lld | %lld | %.2g | %d | %s | %.4f | %.4f | %.2f | %.4f | %g | %.1e | %.4f | %g | %.2fx | %.4f | "
               "%.4f | %.4f | %.2fx | %.2fx |\n",
            (long long)n, (long long)K, d, nrhs, solver_method_of(&ss), t_setup, t_many, 1e3 * t_many / nrhs, kry_many,
            it_many, res_many, t_one, it_one, t_one / t_many, e2e, call, asm_, call / e2e, asm_ / e2e);
    fprintf(fc, "%lld,%lld,%.3g,%d,%s,%.6f,%.6f,%.6f,%g,%.3e,%.6f,%g,%.3e,%.6f,%.6f,%.6f,%.3e\n", (long long)n,
            (long long)K, d, nrhs, solver_method_of(&ss), t_setup, t_many, kry_many, it_many, res_many, t_one, it_one,
            res_one, e2e, call, asm_, lres);
    fflush(f);
    fflush(fc);
    fflush(stdout);
    sap_solver_destroy(S);
    free(B);
    free(X);
    free(work);
    sap_csr_destroy(A);
}

/* --parts multidev: the same columns with everything in device memory (A's CSR, B, X:
 * sap_solver_create_device): sap_solver_solve_many_device (the first column alone, the
 * others in lockstep) against sap_solver_solve_device one column after another, best of
 * repeat each (the solver's setup, timed once, ran at the first call before them) */
static void multi_dev_point(sap_context *ctx, FILE *f, sap_int n, sap_int K, double d, int nrhs, int repeat)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    if (!ops->ptr_check) {
        fprintf(stderr, "multidev: the %s backend takes no device arrays\n", ops->name);
        return;
    }
    double *B = NULL;
    sap_csr *A = multi_system(ctx, n, K, d, nrhs, &B);
    if (!A) return;
    const size_t nk = (size_t)n * (size_t)nrhs, nnz = (size_t)A->nnz;
    double *X = malloc(sizeof(double) * nk), *work = malloc(sizeof(double) * (size_t)n);
    void *d_rp = NULL, *d_ci = NULL, *d_v = NULL, *d_B = NULL, *d_X = NULL;
    sap_status st = ops->mem_alloc(ctx, sizeof(sap_int) * (size_t)(n + 1), &d_rp);
    if (st >= 0) st = ops->mem_alloc(ctx, sizeof(sap_int) * nnz, &d_ci);
    if (st >= 0) st = ops->mem_alloc(ctx, sizeof(double) * nnz, &d_v);
    if (st >= 0) st = ops->mem_alloc(ctx, sizeof(double) * nk, &d_B);
    if (st >= 0) st = ops->mem_alloc(ctx, sizeof(double) * nk, &d_X);
    if (st >= 0) st = ops->mem_upload(ctx, d_rp, A->rowptr, sizeof(sap_int) * (size_t)(n + 1));
    if (st >= 0) st = ops->mem_upload(ctx, d_ci, A->colind, sizeof(sap_int) * nnz);
    if (st >= 0) st = ops->mem_upload(ctx, d_v, A->val, sizeof(double) * nnz);
    if (st >= 0) st = ops->mem_upload(ctx, d_B, B, sizeof(double) * nk);
    sap_solver_options so;
    solver_options(&so);
    sap_solver *S = NULL;
    double t_create = now();
    if (st >= 0) st = sap_solver_create_device(ctx, n, (sap_int)nnz, d_rp, d_ci, d_v, &so, &S);
    t_create = now() - t_create;
    double t_setup = 0, t_many = INFINITY, t_one = INFINITY, it_many = 0, it_one = 0, res_many = 0, res_one = 0;
    sap_solver_stats ss;
    memset(&ss, 0, sizeof(ss));
    memset(X, 0, sizeof(double) * nk);
    if (st >= 0) { /* the setup at the first solve, and where its time went */
        st = ops->mem_upload(ctx, d_X, X, sizeof(double) * (size_t)n);
        double t0 = now();
        if (st >= 0) st = sap_solver_solve_device(S, d_B, d_X);
        t_setup = now() - t0;
        sap_solver_device_stats ds;
        sap_solver_get_stats(S, &ss);
        sap_solver_get_device_stats(S, &ds);
        printf("multidev create %.4f s (A down %.4f s, %.3f GB: %s; Krylov matrix %.4f s) | first solve %.4f s: "
               "stats %.4f DB %.4f CM %.4f Drop %.4f third %.4f Dtransf %.4f Asmbl %.4f LU %.4f SPK %.4f rdcd %.4f "
               "Kry %.4f refine %.4f (named %.4f); setup up %.3f GB\n",
               t_create, ds.time_download, 1e-9 * (double)ds.download_bytes, ds.download_reason, ds.time_matrix,
               t_setup, ss.time_stats, ss.time_db, ss.time_cm, ss.time_drop, ss.time_third, ss.time_transfer,
               ss.time_asmbl, ss.time_lu, ss.time_spk, ss.time_lurdcd, ss.time_kry, ss.time_refine,
               named_seconds(&ss) - ss.time_create, 1e-9 * (double)ds.setup_h2d_bytes);
    }
    for (int r = 0; r < repeat && st >= 0; r++) {
        for (int pass = 0; pass < 2 && st >= 0; pass++) {
            memset(X, 0, sizeof(double) * nk);
            st = ops->mem_upload(ctx, d_X, X, sizeof(double) * nk);
            double it = 0, t0 = now();
            if (pass == 0 && st >= 0) {
                st = sap_solver_solve_many_device(S, nrhs, d_B, n, d_X, n);
                sap_solver_get_stats(S, &ss);
                it = ss.iterations;
            }
            for (int c = 0; pass == 1 && c < nrhs && st >= 0; c++) {
                st = sap_solver_solve_device(S, (double *)d_B + (size_t)c * n, (double *)d_X + (size_t)c * n);
                sap_solver_get_stats(S, &ss);
                it += ss.iterations;
            }
            const double t = now() - t0;
            if (st >= 0) st = ops->mem_download(ctx, X, d_X, sizeof(double) * nk);
            const double res = worst_rel_res(A, nrhs, X, B, work);
            if (pass == 0 && t < t_many) t_many = t, it_many = it, res_many = res;
            if (pass == 1 && t < t_one) t_one = t, it_one = it, res_one = res;
        }
    }
    if (st < 0) fprintf(stderr, "  sap_solver (device arrays): %s (%s)\n", sap_status_name(st), sap_context_last_error(ctx));
    else {
        sap_solver_get_stats(S, &ss);
        printf("multidev N=%8lld K=%4lld d=%.2f nrhs=%3d %s | first solve (setup) %.4f s | solve_many_device %.4f s "
               "(%.2f ms a column, %g it, res %.1e) | one by one %.4f s (%g it, res %.1e) | %.2fx\n",
               (long long)n, (long long)K, d, nrhs, solver_method_of(&ss), t_setup, t_many, 1e3 * t_many / nrhs,
               it_many, res_many, t_one, it_one, res_one, t_one / t_many);
        fprintf(f, "| %lld | %lld | %.2g | %d | %s | %.4f | %.4f | %.2f | %g | %.1e | %.4f | %g | %.1e | %.2fx |\n",
                (long long)n, (long long)K, d, nrhs, solver_method_of(&ss), t_setup, t_many, 1e3 * t_many / nrhs,
                it_many, res_many, t_one, it_one, res_one, t_one / t_many);
        fflush(f);
    }
    fflush(stdout);
    sap_solver_destroy(S);
    void *ps[] = {d_rp, d_ci, d_v, d_B, d_X};
    for (int i = 0; i < 5; i++)
        if (ps[i]) ops->mem_free(ctx, ps[i]);
    free(B);
    free(X);
    free(work);
    sap_csr_destroy(A);
}

/* 1 when the comma-separated list has the item (multi and multidev both start so) */
static int has_part(const char *list, const char *item)
{
    const size_t l = strlen(item);
    for (const char *p = list; (p = strstr(p, item)) != NULL; p += l)
        if ((p == list || p[-1] == ',') && (p[l] == '\0' || p[l] == ',')) return 1;
    return 0;
}

/* the run's date, command and host load (the first line of every md file it writes) */
static char run_header[1400];

static FILE *part_md(const char *out, const char *stem, const char *part)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s_%s.md", out, stem, part);
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "cannot write %s\n", path);
    else fputs(run_header, f);
    return f;
}

/* one N:K[:P] item of a list option into v (P = 0 when absent); 0 (said on stderr) when bad */
static int parse_nkp(const char *tok, const char *opt, sap_int v[3])
{
    long long n = 0, k = 0, p = 0;
    if (sscanf(tok, "%lld:%lld:%lld", &n, &k, &p) < 2 || n < 2 || k < 0 || k >= n || p < 0) {
        fprintf(stderr, "bad %s item %s (N:K:P)\n", opt, tok);
        return 0;
    }
    v[0] = (sap_int)n, v[1] = (sap_int)k, v[2] = (sap_int)p;
    return 1;
}

int main(int argc, char **argv)
{
    const char *backend = "auto", *out = "bench/results", *parts = "grid,psweep,dsweep", *stem = "banded";
    const char *factor_list = "50000:1500:0,50000:1500:1,200000:200:0,200000:500:0,100000:128:0,100000:64:0,"
                              "100000:32:0,20000:600:1";
    const char *apply_list = "200000:200:2000,200000:200:1000,200000:200:400,200000:200:200,10974:521:10,50000:1500:0";
    double Ns[32] = {1000, 10000, 100000, 200000, 500000, 1000000}, Ks[16] = {10, 20, 50, 100, 200, 500};
    double Pl[32] = {10, 20, 50, 100, 200, 400, 1000, 2000}, dl[16] = {0.06, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2};
    int nN = 6, nK = 6, nPl = 8, nd = 8, threads = 0, warmup = 1, repeat = 3, d_given = 0, grid_all = 1;
    int n_given = 0, k_given = 0; /* psweep: N = 200,000, K = 200 unless --n / --k (their first) */
    double max_gflop = 1e9, fill = 1.0;
    int graph_where = 0; /* 0 auto, 1 host, 2 gpu */
    double nrhs_l[16] = {1, 4, 16};
    int nrhs_n = 3;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "missing value for %s\n", o);
            return 2;
        }
        i++;
        if (!strcmp(o, "--backend")) backend = v;
        else if (!strcmp(o, "--out")) out = v;
        else if (!strcmp(o, "--name")) stem = v;
        else if (!strcmp(o, "--parts")) parts = v;
        else if (!strcmp(o, "--apply")) apply_list = v;
        else if (!strcmp(o, "--factor")) factor_list = v;
        else if (!strcmp(o, "--solver-opts")) e2e_opts = v;
        else if (!strcmp(o, "--n")) nN = parse_list(v, Ns, 32), n_given = 1;
        else if (!strcmp(o, "--k")) nK = parse_list(v, Ks, 16), k_given = 1;
        else if (!strcmp(o, "--p")) nPl = parse_list(v, Pl, 32);
        else if (!strcmp(o, "--d")) nd = parse_list(v, dl, 16), d_given = 1;
        else if (!strcmp(o, "--repeat")) repeat = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(o, "--dgbsv-max-gflop")) max_gflop = atof(v);
        else if (!strcmp(o, "--threads")) threads = atoi(v);
        else if (!strcmp(o, "--warmup")) warmup = atoi(v);
        else if (!strcmp(o, "--sync-timing")) sync_timing = atoi(v) != 0;
        else if (!strcmp(o, "--fill")) fill = atof(v);
        else if (!strcmp(o, "--nrhs")) nrhs_n = parse_list(v, nrhs_l, 16);
        else if (!strcmp(o, "--reorder-graph")) graph_where = !strcmp(v, "host") ? 1 : !strcmp(v, "gpu") ? 2 : 0;
        else if (!strcmp(o, "--grid-methods")) {
            if (strcmp(v, "all") && strcmp(v, "auto")) {
                fprintf(stderr, "--grid-methods %s: need all or auto\n", v);
                return 2;
            }
            grid_all = !strcmp(v, "all");
        }
        else {
            fprintf(stderr, "unknown option %s\n", o);
            return 2;
        }
    }
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    if (sap_backend_parse(backend, &cfg.backend) != SAP_OK) return 2;
    cfg.threads = threads;
    const char *lv = getenv("SAP_LOG");
    cfg.print_level = lv && !strcmp(lv, "info") ? SAP_PRINT_INFO : SAP_PRINT_ERRORS;
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) {
        fprintf(stderr, "no context for backend %s\n", backend);
        return 1;
    }
#ifdef SAP_HAVE_OPENBLAS
    openblas_set_num_threads((int)sysconf(_SC_NPROCESSORS_ONLN));
    printf("dgbsv: OpenBLAS, %d threads\n", openblas_get_num_threads());
#else
    printf("dgbsv: not linked (OpenBLAS not found at configure time)\n");
#endif
    printf("backend %s: %s\n", sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx));
    if (graph_where) {
        sap__offload_set_min_nnz(ctx, SAP_OFFLOAD_GRAPH, graph_where == 1 ? INT64_MAX : 0);
        printf("CM graph on the %s (--reorder-graph)\n", graph_where == 1 ? "host cores" : "GPU when offered");
    }
    mkdir(out, 0755);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.csv", out, stem);
    csv = fopen(path, "w");
    snprintf(path, sizeof path, "%s/%s.md", out, stem);
    md = fopen(path, "w");
    if (!csv || !md) {
        fprintf(stderr, "cannot write into %s\n", out);
        return 1;
    }
    fprintf(csv, "part,N,K,d,method,P_asked,P,method_used,iterations,residual,T_BC,T_LU,T_SPK,T_LUrdcd,T_Kry,device,"
                 "total,ok\n");
    {
        char cmd[1024] = "", when[64] = "";
        for (int i = 0; i < argc; i++)
            snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
        time_t tt = time(NULL);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&tt));
        double la[1] = {-1};
        if (getloadavg(la, 1) < 1) la[0] = -1;
        snprintf(run_header, sizeof run_header, "<!-- %s; command: %s; host load average %.1f on %ld cores at the start -->\n",
                 when, cmd, la[0], sysconf(_SC_NPROCESSORS_ONLN));
        fputs(run_header, md);
        printf("host load average %.1f on %ld cores\n", la[0], sysconf(_SC_NPROCESSORS_ONLN));
    }
    fprintf(md, "# bench/banded: SaP-D / SaP-C vs dgbsv\n\nbackend %s: %s; times in seconds; total = setup (T_BC + "
                "factor + automatic choices) + T_Kry; dev = T_LU + T_SPK + T_LUrdcd + T_Kry, the last without the "
                "copies of b and x between host and device in the grid and sweep rows (the papers' T_Kry: the "
                "system on the device).\n\n",
            sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx));
    fprintf(md, "| part | N | K | d | method | P | it | residual | T_BC | T_LU | T_SPK | T_LUrdcd | T_Kry | dev | total |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    /* warm-up (context, kernels): K = 10 (per-row kernels) and K = 40 (the blocked LU's
     * GEMMs, the spikes' batched TRSM: the libraries' kernels load on first use) */
    if (warmup) {
        double *b = calloc(5000, sizeof(double)), *x = calloc(5000, sizeof(double)), *w = calloc(5000, sizeof(double));
        for (int i = 0; i < 5000; i++) b[i] = 1;
        for (int k = 10; k <= 40; k += 30) {
            sap_csr *A = NULL;
            sap_gen_banded(ctx, 5000, k, 1.0, 0, 1, &A);
            run_sap(ctx, A, b, x, w, SAP_BAND_SAPC, 8);
            run_sap(ctx, A, b, x, w, SAP_BAND_SAPD, 8);
            sap_csr_destroy(A);
        }
        free(b);
        free(x);
        free(w);
    }
    const sap_int P50[1] = {50};
    int skipped = 0;
    char skipped_list[1024] = "";
    if (strstr(parts, "grid"))
        for (int a = 0; a < nN; a++)
            for (int k = 0; k < nK; k++) {
                const sap_int n = (sap_int)Ns[a], K = (sap_int)Ks[k];
                if (K >= n) continue;
                if (dgbsv_gflop(n, K) > max_gflop) { /* the whole point: the run must fit its time */
                    printf("grid   N=%8lld K=%3lld skipped: dgbsv %.0f Gflop > --dgbsv-max-gflop %g\n", (long long)n,
                           (long long)K, dgbsv_gflop(n, K), max_gflop);
                    snprintf(skipped_list + strlen(skipped_list), sizeof skipped_list - strlen(skipped_list),
                             "%s(%lld, %lld)", skipped ? ", " : "", (long long)n, (long long)K);
                    skipped++;
                    continue;
                }
                const int with_p50 = grid_all && n >= 50;
                point(ctx, "grid", n, K, 1.0, with_p50 ? P50 : NULL, with_p50, 1, 1, max_gflop, repeat);
            }
    if (strstr(parts, "psweep")) {
        sap_int Ps[32];
        for (int i = 0; i < nPl; i++) Ps[i] = (sap_int)Pl[i];
        point(ctx, "psweep", n_given ? (sap_int)Ns[0] : 200000, k_given ? (sap_int)Ks[0] : 200, 1.0, Ps, nPl, 1, 0,
              max_gflop, 0);
    }
    if (strstr(parts, "dsweep"))
        for (int i = 0; i < nd; i++) point(ctx, "dsweep", 200000, 200, dl[i], P50, 1, 0, 0, max_gflop, 0);
    if (strstr(parts, "synthetic"))
        for (int a = 0; a < nN; a++)
            for (int k = 0; k < nK; k++)
                if ((sap_int)Ks[k] < (sap_int)Ns[a])
                    synthetic_point(ctx, (sap_int)Ns[a], (sap_int)Ks[k], d_given ? dl[0] : 1.0, fill, repeat,
                                    max_gflop);
    if (strstr(parts, "e2e") && !strstr(parts, "e2e_"))
        for (int a = 0; a < nN; a++)
            for (int k = 0; k < nK; k++)
                for (int i = 0; i < (d_given ? nd : 1); i++) {
                    if ((sap_int)Ks[k] >= (sap_int)Ns[a]) continue;
                    e2e_point(ctx, (sap_int)Ns[a], (sap_int)Ks[k], d_given ? dl[i] : 1.0, repeat, max_gflop);
                }
    if (has_part(parts, "multi") || has_part(parts, "multidev")) {
        FILE *fm = NULL, *fc = NULL, *fd = NULL;
        if (has_part(parts, "multi")) {
            if (!(fm = part_md(out, stem, "multi"))) return 1;
            snprintf(path, sizeof path, "%s/%s_multi.csv", out, stem);
            if (!(fc = fopen(path, "w"))) return 1;
            fprintf(fc, "N,K,d,nrhs,method,setup,solve_many,T_Kry,iterations,residual,one_by_one,iterations_one,"
                        "residual_one,e2e,dgbsv_call,dgbsv_with_assembly,dgbsv_residual\n");
            fprintf(fm, "# bench/banded --parts multi: many right-hand sides of one system\n\nbackend %s: %s; gen:banded, "
                        "b = A x* with random x* (one per column); one sap_solver (create + setup, default options and --solver-opts, as "
                        "`sap solve`), then sap_solver_solve_many of all columns (the Krylov method in lockstep: one "
                        "pass over the band factors per step for all columns) and the same columns one after another "
                        "(sap_solver_solve); best of %d; dgbsv with all columns (one factorization, all host cores), "
                        "its call and with its band assembly; e2e = setup + solve_many.\n\n"
                        "| N | K | d | nrhs | method | setup s | solve_many s | ms a column | T_Kry | it (sum) | worst res | "
                        "one by one s | it (sum) | many vs one | e2e s | dgbsv call s | with assembly s | e2e vs call | "
                        "e2e vs assembly |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
                    sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx), repeat);
        }
        if (has_part(parts, "multidev")) {
            if (!(fd = part_md(out, stem, "multidev"))) return 1;
            fprintf(fd, "# bench/banded --parts multidev: many right-hand sides, everything in device memory\n\nbackend %s: "
                        "%s; gen:banded, b = A x* with random x*; A's CSR, B and X in device memory "
                        "(sap_solver_create_device, default options and --solver-opts); the first solve (setup included) "
                        "timed once, then sap_solver_solve_many_device of all columns (the first alone, the others in "
                        "lockstep) and sap_solver_solve_device column after column; best of %d.\n\n"
                        "| N | K | d | nrhs | method | first solve s | solve_many_device s | ms a column | it (sum) | worst "
                        "res | one by one s | it (sum) | worst res | many vs one |\n"
                        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
                    sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx), repeat);
        }
        for (int a = 0; a < nN; a++)
            for (int k = 0; k < nK; k++)
                for (int i = 0; i < (d_given ? nd : 1); i++)
                    for (int j = 0; j < nrhs_n; j++) {
                        if (!((sap_int)Ks[k] < (sap_int)Ns[a] && nrhs_l[j] >= 1)) continue;
                        const sap_int n = (sap_int)Ns[a], K = (sap_int)Ks[k];
                        const double d = d_given ? dl[i] : 1.0;
                        if (fm) multi_point(ctx, fm, fc, n, K, d, (int)nrhs_l[j], repeat, max_gflop);
                        if (fd) multi_dev_point(ctx, fd, n, K, d, (int)nrhs_l[j], repeat);
                    }
        if (fm) fclose(fm);
        if (fc) fclose(fc);
        if (fd) fclose(fd);
    }
    if (strstr(parts, "apply")) {
        if (!(apply_md = part_md(out, stem, "apply"))) return 1;
        const double bw = copy_bandwidth(ctx);
        printf("device copy bandwidth %.0f GB/s\n", bw * 1e-9);
        fprintf(apply_md, "# bench/banded --parts apply: one preconditioner application\n\nbackend %s: %s; gen:banded "
                          "d = 1, float factors; median of %d applications (each synchronized); per-step: "
                          "SAP_BAND_SWEEP=step; chunked: =chunked (the default where P <= 4 per SM); floor: the bytes one application "
                          "must read at the copy bandwidth measured in the same run (%.0f GB/s).\n\n"
                          "| N | K | P | method | per-step ms | chunked ms | speedup | MB | floor ms | chunked / floor | "
                          "rel. difference |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
                sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx), 20 * repeat, bw * 1e-9);
        char buf[512];
        snprintf(buf, sizeof buf, "%s", apply_list);
        sap_int v[3];
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
            if (parse_nkp(tok, "--apply", v))
                for (int c = 0; c < 2; c++) apply_point(ctx, v[0], v[1], v[2], c, 20 * repeat, bw);
        sap_csr_destroy(apply_A);
        apply_A = NULL;
        fclose(apply_md);
    }
    if (strstr(parts, "factor")) {
        FILE *fmd = part_md(out, stem, "factor");
        if (!fmd) return 1;
        const double sg = sgemm_rate(ctx);
        printf("SGEMM rate %.2f Tflop/s\n", sg * 1e-12);
        fprintf(fmd, "# bench/banded --parts factor: the SaP-D factorization, per-row and blocked LU\n\nbackend %s: %s; "
                     "gen:banded d = 1, float factors; median T_LU of %d factorizations a kernel; SGEMM measured in the "
                     "same run: %.2f Tflop/s (%s); rates count the 2 N K^2 "
                     "flops of a banded LU (\"own flop\": the LU's own count, 2 sum_k min(K_i, n_i - 1 - k)^2 over the "
                     "partitions, smaller where partitions are shorter than 2 K).\n\n"
                     "| N | K | P | rows ms | rows Tflop/s | blocked ms | blocked Tflop/s | blocked / SGEMM | own flop | "
                     "own / SGEMM | blocked speedup |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
                sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx), 2 * repeat, sg * 1e-12,
                sap_context_backend(ctx) == SAP_BACKEND_CUDA ? "cuBLAS, m = n = k = 8192" : "BLAS sgemm, all threads, 2048");
        char buf[512];
        snprintf(buf, sizeof buf, "%s", factor_list);
        sap_int v[3];
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
            if (parse_nkp(tok, "--factor", v)) factor_point(ctx, fmd, v[0], v[1], v[2], 2 * repeat, sg);
        fclose(fmd);
    }
    if (nspeed) {
        static const char *names[SP_KINDS] = {"automatic choice, device time (T_LU + T_SPK + T_LUrdcd + T_Kry)",
                                              "best run, device time",
                                              "band solver (auto), end to end from the host CSR, vs the dgbsv call",
                                              "sap solve end to end, vs the dgbsv call",
                                              "sap solve end to end, vs dgbsv with its band assembly"};
        fprintf(md, "\nSpeedup over dgbsv at the %d grid points with N >= 10,000 (the distribution of Figure 5):\n\n"
                    "| speedup | min | Q1 | median | Q3 | max | points >= 20x |\n|---|---|---|---|---|---|---|\n",
                nspeed);
        printf("\nspeedup over dgbsv, %d grid points with N >= 10000 (min Q1 median Q3 max):\n", nspeed);
        for (int k = 0; k < SP_KINDS; k++) {
            double *v = speedups[k];
            if (isnan(v[0])) continue; /* no end-to-end runs */
            qsort(v, (size_t)nspeed, sizeof(double), cmpd);
            double q[5];
            for (int i = 0; i < 5; i++) { /* linear interpolation between order statistics */
                const double pos = 0.25 * i * (nspeed - 1);
                const int lo = (int)pos;
                q[i] = lo + 1 < nspeed ? v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) : v[lo];
            }
            int ge20 = 0;
            for (int i = 0; i < nspeed; i++) ge20 += v[i] >= 20.0;
            printf("  %-60s %7.2f %7.2f %7.2f %7.2f %7.2f  (%d >= 20x)\n", names[k], q[0], q[1], q[2], q[3], q[4], ge20);
            fprintf(md, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %d of %d |\n", names[k], q[0], q[1], q[2], q[3], q[4],
                    ge20, nspeed);
        }
        if (skipped)
            fprintf(md, "\n%d grid points skipped whole (dgbsv above --dgbsv-max-gflop %g): %s.\n", skipped, max_gflop,
                    skipped_list);
        fprintf(md, "\nAutomatic choice, device-time speedups in increasing order:");
        for (int i = 0; i < nspeed; i++) fprintf(md, " %.1f", speedups[SP_AUTO_DEV][i]);
        fprintf(md, "\n");
    }
    if (named_runs) {
        printf("profile coverage: the named T_* account for >= %.1f%% of the end-to-end wall time in all %d runs\n",
               100.0 * named_min, named_runs);
        fprintf(md, "\nProfile coverage: the named T_* account for at least %.1f%% of the end-to-end wall time (create "
                    "+ setup + solve) in each of the %d end-to-end runs.\n",
                100.0 * named_min, named_runs);
    }
    fclose(csv);
    fclose(md);
    sap_context_destroy(ctx);
    return 0;
}
