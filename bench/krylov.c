/* krylov.c -- time per iteration of CG and BiCGStab(2) (no preconditioner and Jacobi) on
 * the 7-point 3D Poisson matrix, against the minimum number of bytes each iteration must
 * move, on the backend chosen by --backend.
 *
 * usage: krylov [--backend cpu|cuda|auto] [--n N] [--iters K] [--reps R] [--threads L]
 *               [--format F] [--out DIR] [--note TEXT]
 *   --n N       grid points per direction (N^3 unknowns; default 160 on cuda, 100 on cpu)
 *   --iters K   CG runs K and 2K iterations, BiCGStab(2) K/2 and K (default 60 on the cpu,
 *               400 on cuda, where the fixed costs -- transfers of b and x, initial and final
 *               residual -- weigh more); the time per iteration is (T(2K) - T(K)) / K with T
 *               the best of R solves (default 5), which cancels those fixed costs ("diff");
 *               when noise makes that implausible (not in (0, 1] x T(2K) / 2K) it is
 *               T(2K) / 2K ("best/2K", an upper bound that includes the fixed costs)
 *   --threads L comma-separated CPU thread counts to run, e.g. 1,2 (default 0: all)
 *   --out DIR   where krylov_<backend>.csv and .md go (default bench/results)
 *   --note TEXT a remark added to the markdown file
 *
 * Minimum bytes per iteration (the "floor"): every kernel the driver calls reads each of
 * its vector operands once and writes each result once (V = 8 n bytes), and every SpMV
 * reads the matrix once in its smallest form -- 8-byte values, 4-byte column indices,
 * 4-byte row pointers: M = 12 nnz + 4 (n + 1) -- plus x once and y once:
 *   CG, none:          spmv (M + 2V), p.q (2V), cg_update x,r += (6V), p = r + beta p (3V)
 *                      = M + 13V
 *   CG, Jacobi:        + z = dinv .* r (3V), r.z (2V)                        = M + 18V
 *   BiCGStab(2), none: 4 SpMVs (4M + 8V); BiCG step 0: 2 dots (4V), 1 axpby into u (3V),
 *                      r -= alpha u (3V), x += alpha u (3V); step 1: 2 dots (4V), 2 axpby
 *                      into u (6V), 2 updates of r (6V), x (3V); MR: mdot of 3 and of 2
 *                      vectors (4V + 3V), one orthogonalisation axpby (3V), the update
 *                      maxpy x (4V), maxpy u (4V), r (3V + 3V)            = 4M + 64V
 *   BiCGStab(2), Jacobi (right): + 4 applications (3V each)             = 4M + 76V
 *   BiCG, none:        A p and A^T pt (2M + 4V), z . rt, pt . q (4V), p, pt updates (6V),
 *                      x, rt, r updates (9V)                              = 2M + 23V
 *   BiCG, Jacobi:      + M^-1 r and M^-T rt (3V each)                      = 2M + 29V
 *   CGS, none:         2 SpMVs (2M + 4V), 2 dots (4V), u, p, q, u + q (4V each: three
 *                      operands read, one written: 16V), x and r updates (6V) = 2M + 30V
 *   CGS, Jacobi:       + 2 applications (6V)                              = 2M + 36V
 *   QMR, none:         A p, A^T q (2M + 4V), v, w scaled (6V), z scaled (2V), 2 dots (4V),
 *                      2 norms (2V), M^-1 v and M^-T w as copies (4V), p, q, w updates
 *                      (9V), v~ (4V), d, s, x, r (12V)                    = 2M + 47V
 *   QMR, Jacobi:       the two copies become applications (+2V)           = 2M + 49V
 *   TFQMR, none:       2 SpMVs (2M + 4V), 2 dots (4V), y2, y1, v (4V each: 12V), two
 *                      half steps of w, d, x updates (18V)                = 2M + 38V
 *   TFQMR, Jacobi:     + 2 applications (6V)                              = 2M + 44V
 *   async-jacobi(2):   block_relax reads A once (M) with b, x and the cpu's copy of x
 *                      (5V), then the residual SpMV (M + 2V) and its norm (3V) = 2M + 10V
 *                      (iterations: one relaxation; the local sweeps reuse the block's
 *                      rows from cache)
 *   ir(gmres):         no fixed count (float GMRES iterations plus refinement steps):
 *                      time per iteration only, no floor ("-")
 * (BiCG, CGS, QMR, TFQMR run K/2 and K iterations like BiCGStab(2).)
 * floor = bytes / copy bandwidth, where the copy bandwidth counts bytes read + written by
 * a large copy: on the cpu the faster of memcpy and the backend's (threaded) copy kernel,
 * on a GPU the backend's copy kernel (device to device) on a 256 MiB vector.  The ratio
 * time / floor is the distance from the bandwidth limit (1 = at the limit).
 *
 * Writes one CSV row per case and a markdown table, with the date, machine, commit and
 * command, to DIR/krylov_<backend>.csv and .md. */
#define _POSIX_C_SOURCE 200809L
#include "sap.h"
#include "device/device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef SAP_SOURCE_DIR
#define SAP_SOURCE_DIR "."
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: krylov [--backend cpu|cuda|auto] [--n N] [--iters K] [--reps R] [--threads L]\n"
               "              [--format auto|csr|ell|sellp|hec] [--out DIR] [--note TEXT]\n");
}

/* bytes read + written per second by a large copy */
static double copy_bandwidth(sap_context *ctx, double *memcpy_gbs, double *kernel_gbs)
{
    const size_t bytes = (size_t)256 << 20;
    *memcpy_gbs = 0.0;
    if (sap_context_backend(ctx) == SAP_BACKEND_CPU) {
        char *a = malloc(bytes), *b = malloc(bytes);
        if (a && b) {
            memset(a, 1, bytes);
            memset(b, 2, bytes);
            double best = 1e30;
            for (int r = 0; r < 5; r++) {
                double t0 = now();
                memcpy(b, a, bytes);
                double t = now() - t0;
                if (t < best) best = t;
                a[r] = b[bytes - 1 - (size_t)r]; /* keep the copies */
            }
            *memcpy_gbs = 2.0 * (double)bytes / best / 1e9;
        }
        free(a);
        free(b);
    }
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_vec x, y;
    const sap_int n = (sap_int)(bytes / sizeof(double));
    *kernel_gbs = 0.0;
    if (ops->vec_create(ctx, n, SAP_DOUBLE, &x) == SAP_OK) {
        if (ops->vec_create(ctx, n, SAP_DOUBLE, &y) == SAP_OK) {
            ops->set(ctx, &x, 1.0);
            ops->copy(ctx, &x, &y);
            ops->synchronize(ctx);
            double best = 1e30;
            for (int r = 0; r < 5; r++) {
                double t0 = now();
                ops->copy(ctx, &x, &y);
                ops->synchronize(ctx);
                double t = now() - t0;
                if (t < best) best = t;
            }
            *kernel_gbs = 2.0 * (double)bytes / best / 1e9;
            ops->vec_destroy(ctx, &y);
        }
        ops->vec_destroy(ctx, &x);
    }
    return *memcpy_gbs > *kernel_gbs ? *memcpy_gbs : *kernel_gbs;
}

typedef struct bcase {
    const char *method, *precond;
    sap_krylov_type type;
    int param;
    double spmvs, vectors; /* per iteration: SpMVs and vector passes (units of 8 n bytes) */
} bcase;

static const bcase cases[] = {
    {"cg", "none", SAP_KRYLOV_CG, 0, 1, 13},
    {"cg", "jacobi", SAP_KRYLOV_CG, 0, 1, 18},
    {"bicgstab(2)", "none", SAP_KRYLOV_BICGSTABL, 2, 4, 64},
    {"bicgstab(2)", "jacobi", SAP_KRYLOV_BICGSTABL, 2, 4, 76},
    {"bicg", "none", SAP_KRYLOV_BICG, 0, 2, 23},
    {"bicg", "jacobi", SAP_KRYLOV_BICG, 0, 2, 29},
    {"cgs", "none", SAP_KRYLOV_CGS, 0, 2, 30},
    {"cgs", "jacobi", SAP_KRYLOV_CGS, 0, 2, 36},
    {"qmr", "none", SAP_KRYLOV_QMR, 0, 2, 47},
    {"qmr", "jacobi", SAP_KRYLOV_QMR, 0, 2, 49},
    {"tfqmr", "none", SAP_KRYLOV_TFQMR, 0, 2, 38},
    {"tfqmr", "jacobi", SAP_KRYLOV_TFQMR, 0, 2, 44},
    {"ir(gmres)", "none", SAP_KRYLOV_IR, SAP_KRYLOV_GMRES + 1, 1, 0},
    {"ir(gmres)", "jacobi", SAP_KRYLOV_IR, SAP_KRYLOV_GMRES + 1, 1, 0},
    {"async-jacobi(2)", "none", SAP_KRYLOV_ASYNC_JACOBI, 2, 2, 10},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* best time of reps solves with maxit iterations; 0 on failure */
static double timed_solve(sap_context *ctx, sap_matrix *M, sap_precond *P, const bcase *c, sap_int maxit, int reps,
                          const double *b, double *x, sap_int n)
{
    sap_krylov_options o;
    sap_krylov_options_init(&o);
    o.type = c->type;
    o.param = c->param;
    o.tol = 1e-30; /* never reached: exactly maxit iterations */
    o.maxit = maxit;
    o.history = 0;
    o.sync_timing = 0;
    sap_krylov *K = NULL;
    if (sap_krylov_create(ctx, &o, &K) != SAP_OK) return 0.0;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        memset(x, 0, sizeof(double) * (size_t)n);
        sap_krylov_stats ks;
        sap_status st = sap_krylov_solve(K, M, P, b, x, &ks);
        if (st != SAP_WARN_NOT_CONVERGED || ks.iterations != (double)maxit) {
            fprintf(stderr, "krylov: %s/%s stopped after %g of %lld iterations: %s (%s)\n", c->method, c->precond,
                    ks.iterations, (long long)maxit, sap_status_name(st), sap_context_last_error(ctx));
            best = 0.0;
            break;
        }
        if (ks.time_total < best) best = ks.time_total;
    }
    sap_krylov_destroy(K);
    return best;
}

static void machine_name(sap_context *ctx, char *buf, size_t len)
{
    struct utsname u;
    char cpu[256] = "unknown cpu";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f))
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    p += 2;
                    p[strcspn(p, "\n")] = '\0';
                    snprintf(cpu, sizeof(cpu), "%s", p);
                }
                break;
            }
        fclose(f);
    }
    uname(&u);
    if (sap_context_backend(ctx) == SAP_BACKEND_CUDA)
        snprintf(buf, len, "%s; %s %s; device: %s", cpu, u.sysname, u.machine, sap_context_device_name(ctx));
    else snprintf(buf, len, "%s, %ld cores online; %s %s", cpu, sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.machine);
}

static void git_commit(char *buf, size_t len)
{
    const char *env = getenv("SAP_COMMIT"); /* set by bench/gpu_run.sh where git is absent */
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return;
    }
    snprintf(buf, len, "unknown");
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "git -C '%s' rev-parse --short HEAD 2>/dev/null", SAP_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (fgets(buf, (int)len, p)) buf[strcspn(buf, "\n")] = '\0';
    else snprintf(buf, len, "unknown");
    pclose(p);
}

int main(int argc, char **argv)
{
    const char *backend_name = "cpu", *out = SAP_SOURCE_DIR "/bench/results", *fmt_name = "auto";
    long nn = 0, iters = 0, reps = 5;
    const char *threads_list = "0", *note = NULL;
    for (int i = 1; i < argc; i++) {
        const int has = i + 1 < argc;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--backend") && has) backend_name = argv[++i];
        else if (!strcmp(argv[i], "--n") && has) nn = atol(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && has) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && has) reps = atol(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && has) threads_list = argv[++i];
        else if (!strcmp(argv[i], "--format") && has) fmt_name = argv[++i];
        else if (!strcmp(argv[i], "--out") && has) out = argv[++i];
        else if (!strcmp(argv[i], "--note") && has) note = argv[++i];
        else {
            usage(stderr);
            return 2;
        }
    }
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    int tlist[16], nthr = 0;
    for (const char *q = threads_list; *q && nthr < 16;) {
        char *end = NULL;
        long t = strtol(q, &end, 10);
        if (end == q || t < 0) {
            nthr = -1;
            break;
        }
        tlist[nthr++] = (int)t;
        q = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') {
            nthr = -1;
            break;
        }
    }
    if (sap_backend_parse(backend_name, &cfg.backend) != SAP_OK || (iters != 0 && iters < 2) || reps < 1 || nn < 0 || nthr < 1) {
        usage(stderr);
        return 2;
    }
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    if (sap_spmv_format_parse(fmt_name, &mo.format) != SAP_OK) {
        usage(stderr);
        return 2;
    }
    cfg.threads = tlist[0];
    cfg.print_level = SAP_PRINT_ERRORS;
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, &cfg);
    if (st != SAP_OK) {
        fprintf(stderr, "krylov: cannot create a %s context: %s\n", backend_name, sap_status_string(st));
        return 1;
    }
    const int gpu = sap_context_backend(ctx) == SAP_BACKEND_CUDA;
    if (nn == 0) nn = gpu ? 160 : 100;
    if (iters == 0) iters = gpu ? 400 : 60;
    const char *bname = sap_backend_name(sap_context_backend(ctx));

    sap_csr *A = NULL;
    sap_matrix *M = NULL;
    st = sap_gen_poisson3d(ctx, nn, nn, nn, &A);
    if (st == SAP_OK) st = sap_matrix_create(ctx, A, &mo, &M);
    if (st != SAP_OK) {
        fprintf(stderr, "krylov: %s: %s\n", sap_status_string(st), sap_context_last_error(ctx));
        return 1;
    }
    const sap_int n = A->nrows, nnz = A->nnz;
    double *b = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) b[i] = 1.0;
    sap_precond *J = NULL;
    sap_precond_create(ctx, "jacobi", &J);
    sap_precond_setup_numeric(J, A);

    const double Mb = 12.0 * (double)nnz + 4.0 * (double)(n + 1), V = 8.0 * (double)n;
    char machine[600], commit[64], date[64], cmdline[1024] = "";
    machine_name(ctx, machine, sizeof(machine));
    git_commit(commit, sizeof(commit));
    time_t tt = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&tt));
    for (int i = 0; i < argc; i++) {
        strncat(cmdline, i ? " " : "", sizeof(cmdline) - strlen(cmdline) - 1);
        strncat(cmdline, argv[i], sizeof(cmdline) - strlen(cmdline) - 1);
    }
    printf("krylov benchmark: %s, 3D Poisson %ld^3 (n = %lld, nnz = %lld), format %s\n", bname, nn, (long long)n,
           (long long)nnz, sap_spmv_format_name(sap_matrix_format(M)));

    /* per thread count: copy bandwidth, then every case */
    double res[16][NCASES][4], copy[16][3];
    int diffused[16][NCASES];
    int thr[16];
    for (int ti = 0; ti < nthr; ti++) {
        if (!gpu) sap_context_set_threads(ctx, tlist[ti]);
        thr[ti] = sap_context_threads(ctx);
        copy[ti][0] = copy_bandwidth(ctx, &copy[ti][1], &copy[ti][2]);
        printf("\n%d thread%s; copy bandwidth (read + write): %.1f GB/s (memcpy %.1f, backend copy %.1f)\n", thr[ti],
               thr[ti] == 1 ? "" : "s", copy[ti][0], copy[ti][1], copy[ti][2]);
        printf("%-16s %-7s %12s %14s %10s %12s %8s\n", "method", "precond", "ms/iter", "min MB/iter", "GB/s",
               "floor ms", "ratio");
        for (size_t k = 0; k < NCASES; k++) {
            const bcase *c = &cases[k];
            const sap_int kk = c->type == SAP_KRYLOV_CG || c->type == SAP_KRYLOV_IR || c->type == SAP_KRYLOV_ASYNC_JACOBI
                                   ? iters
                                   : iters / 2;
            sap_precond *P = strcmp(c->precond, "none") ? J : NULL;
            /* best of reps solves of K and of 2K iterations: (T(2K) - T(K)) / K cancels the
             * fixed costs (set-up, initial and final residual); when noise makes it
             * implausible (a busy machine) fall back to T(2K) / 2K */
            const double t1 = timed_solve(ctx, M, P, c, kk, (int)reps, b, x, n);
            const double t2 = timed_solve(ctx, M, P, c, 2 * kk, (int)reps, b, x, n);
            const double simple = t2 > 0.0 ? t2 / (double)(2 * kk) : NAN;
            const double diff = t1 > 0.0 && t2 > 0.0 ? (t2 - t1) / (double)kk : NAN;
            const int use_diff = diff > 0.0 && diff <= simple;
            const double tpi = use_diff ? diff : simple;
            diffused[ti][k] = use_diff;
            const double bytes = c->vectors > 0 ? c->spmvs * (Mb + 2.0 * V) + (c->vectors - 2.0 * c->spmvs) * V : NAN;
            const double gbs = bytes / tpi / 1e9, floor_t = bytes / (copy[ti][0] * 1e9);
            res[ti][k][0] = tpi;
            res[ti][k][1] = bytes;
            res[ti][k][2] = gbs;
            res[ti][k][3] = floor_t;
            printf("%-16s %-7s %12.3f %14.1f %10.1f %12.3f %8.2f\n", c->method, c->precond, tpi * 1e3, bytes / 1e6, gbs,
                   floor_t * 1e3, tpi / floor_t);
        }
    }

    /* results files */
    char path[1400];
    snprintf(path, sizeof(path), "%s/krylov_%s.csv", out, bname);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(
            f, "date,machine,commit,backend,threads,grid,n,nnz,format,method,precond,iterations,timing,time_per_iter_s,"
               "min_bytes_per_iter,achieved_GBps,copy_GBps,floor_s,ratio_to_floor\n");
        for (int ti = 0; ti < nthr; ti++)
            for (size_t k = 0; k < NCASES; k++)
                fprintf(f, "%s,\"%s\",%s,%s,%d,%ld,%lld,%lld,%s,%s,%s,%ld,%s,%.6e,%.0f,%.2f,%.2f,%.6e,%.3f\n", date,
                        machine, commit, bname, thr[ti], nn, (long long)n, (long long)nnz,
                        sap_spmv_format_name(sap_matrix_format(M)), cases[k].method, cases[k].precond,
                        cases[k].type == SAP_KRYLOV_CG || cases[k].type == SAP_KRYLOV_IR ||
                                cases[k].type == SAP_KRYLOV_ASYNC_JACOBI
                            ? iters
                            : iters / 2, diffused[ti][k] ? "diff" : "best/2K",
                        res[ti][k][0], res[ti][k][1], res[ti][k][2], copy[ti][0], res[ti][k][3],
                        res[ti][k][0] / res[ti][k][3]);
        fclose(f);
        printf("wrote %s\n", path);
    } else {
        fprintf(stderr, "krylov: cannot write %s\n", path);
    }
    snprintf(path, sizeof(path), "%s/krylov_%s.md", out, bname);
    f = fopen(path, "w");
    if (f) {
        fprintf(f, "# Krylov time per iteration vs. the bandwidth floor (%s)\n\n", bname);
        fprintf(f, "- date: %s\n- machine: %s\n- commit: %s\n- command: `%s`\n", date, machine, commit, cmdline);
        fprintf(f, "- matrix: 7-point 3D Poisson %ld^3, n = %lld, nnz = %lld, SpMV format %s (%s)\n", nn, (long long)n,
                (long long)nnz, sap_spmv_format_name(sap_matrix_format(M)), sap_matrix_format_reason(M));
        fprintf(f,
                "- time per iteration: (T(2K) - T(K)) / K, T the best of %ld solves of exactly K and 2K "
                "iterations (CG, IR and async-jacobi K = %ld; BiCGStab(2) K = %ld outer iterations of 4 SpMVs, BiCG, CGS, "
                "QMR, TFQMR the same K of 2 SpMVs); where noise makes that "
                "implausible, T(2K) / 2K (marked *)\n- floor = minimum bytes per iteration / copy bandwidth (bytes "
                "read + written by a 256 MiB copy); the byte counts are documented in bench/krylov.c\n\n",
                reps, iters, iters / 2);
        if (note) fprintf(f, "Note: %s\n\n", note);
        fprintf(f, "| threads | method | precond | ms / iteration | min MB / iteration | achieved GB/s | copy GB/s | "
                   "floor ms | time / floor |\n");
        fprintf(f, "|---:|---|---|---:|---:|---:|---:|---:|---:|\n");
        for (int ti = 0; ti < nthr; ti++)
            for (size_t k = 0; k < NCASES; k++)
                fprintf(f, "| %d | %s | %s | %.3f%s | %.1f | %.1f | %.1f | %.3f | %.2f |\n", thr[ti], cases[k].method,
                        cases[k].precond, res[ti][k][0] * 1e3, diffused[ti][k] ? "" : " *", res[ti][k][1] / 1e6,
                        res[ti][k][2], copy[ti][0], res[ti][k][3] * 1e3, res[ti][k][0] / res[ti][k][3]);
        fclose(f);
        printf("wrote %s\n", path);
    }
    free(b);
    free(x);
    sap_precond_destroy(J);
    sap_matrix_destroy(M);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return 0;
}
