/* solver_cost.c -- the measured cost model of the automatic plan: the machine's rates,
 * measured on the backend (~0.1 s: a stream of vector updates, the latency of a small one,
 * LAPACK's banded LU on a small band, the band apply's sweep step; cached per backend and
 * thread count in the process and for a day in a file per machine), and the predicted time of every candidate
 * method of an AUTO chain: setup + iterations x time per iteration.
 *
 * Iterations are unknown in advance: a short probe (SV_PROBE_ITERS steps of the Krylov
 * method with a Jacobi preconditioner on the backend, run only when it costs a small share
 * of the best band method's prediction) measures the time of one step on this matrix and
 * the residual slope, from which the steps Jacobi needs follow; the stronger
 * preconditioners need fewer (SV_GAIN_*: the iteration ratio to Jacobi of IC(0)/ILU(0) on
 * the 2D/3D elliptic test matrices, block-Jacobi by the square root of the block size,
 * SaP by the part of the off-diagonal ||A||_F^2 its band keeps) and cost more per step
 * (the bytes of their factors at the measured bandwidth, a launch per level of a
 * triangular solve).  Without a probe the iterative methods have no prediction and keep
 * the fallback order after those that have one.  Internal. */
#define _POSIX_C_SOURCE 200809L /* gethostname, mkdir, getpid */
#include "band/band_impl.h"
#include "device/device.h"
#include "matrix/backend_matrix.h"
#include "matrix/csr_blocks.h"
#include "reorder/reorder_internal.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the rates, measured once per process ------------------------------------------------ */

#define SV_CAL_N (1 << 22)  /* doubles of a stream vector (32 MB: beyond the caches of most hosts) */
#define SV_CAL_LAT_N 256    /* a vector whose update is all latency */
#define SV_CAL_K 48         /* half-bandwidth of the band factorizations measured */
#define SV_CAL_BAND_N 2048  /* ... and their rows (4 N K^2 ~ 2e7 flop) */
#define SV_CAL_SLOTS 8

typedef struct cal_slot {
    int used, backend, threads;
    sap__cost_rates r;
} cal_slot;
static cal_slot cal_cache[SV_CAL_SLOTS];
static atomic_flag cal_lock = ATOMIC_FLAG_INIT;

/* ts[0..k-1] sorted: ts[k] into its place (the medians of the timings) */
static void sort_last(double *ts, int k)
{
    for (int q = k; q > 0 && ts[q] < ts[q - 1]; q--) {
        const double tmp = ts[q];
        ts[q] = ts[q - 1];
        ts[q - 1] = tmp;
    }
}

/* bytes/s of y = a x + b y (3 vectors) and seconds of one small update, on ctx's backend */
static void measure_stream(sap_context *ctx, double *bw, double *lat)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_vec x, y, u, v;
    memset(&x, 0, sizeof(x)), memset(&y, 0, sizeof(y)), memset(&u, 0, sizeof(u)), memset(&v, 0, sizeof(v));
    *bw = 0, *lat = 0;
    if (ops->vec_create(ctx, SV_CAL_N, SAP_DOUBLE, &x) < 0 || ops->vec_create(ctx, SV_CAL_N, SAP_DOUBLE, &y) < 0 ||
        ops->vec_create(ctx, SV_CAL_LAT_N, SAP_DOUBLE, &u) < 0 || ops->vec_create(ctx, SV_CAL_LAT_N, SAP_DOUBLE, &v) < 0)
        goto done;
    ops->set(ctx, &x, 1.0), ops->set(ctx, &y, 0.0), ops->set(ctx, &u, 1.0), ops->set(ctx, &v, 0.0);
    ops->axpby(ctx, 0.5, &x, 0.5, &y); /* first touch */
    ops->synchronize(ctx);
    /* the median of 3 (the best of a few can be an outlier on a shared host) */
    double ts[3];
    for (int r = 0; r < 3; r++) {
        const double t0 = sap__wtime();
        ops->axpby(ctx, 0.5, &x, 0.5, &y);
        ops->synchronize(ctx);
        ts[r] = sap__wtime() - t0;
        sort_last(ts, r);
    }
    if (ts[1] > 0) *bw = 3.0 * 8.0 * SV_CAL_N / ts[1];
    const double t0 = sap__wtime();
    for (int r = 0; r < 16; r++) ops->axpby(ctx, 0.5, &u, 0.5, &v);
    ops->synchronize(ctx);
    *lat = (sap__wtime() - t0) / 16.0;
done:
    if (x.data) ops->vec_destroy(ctx, &x);
    if (y.data) ops->vec_destroy(ctx, &y);
    if (u.data) ops->vec_destroy(ctx, &u);
    if (v.data) ops->vec_destroy(ctx, &v);
}

/* An n x n band of half-bandwidth K, diagonally dominant (the calibration's matrix). */
static sap_csr *calibration_band(sap_context *ctx, sap_int n, sap_int K)
{
    sap_csr *A = NULL;
    if (sap_csr_create(ctx, n, n, n * (2 * K + 1), &A) < 0) return NULL;
    int64_t p = 0;
    for (sap_int i = 0; i < n; i++) {
        A->rowptr[i] = p;
        for (sap_int j = i - K; j <= i + K; j++) {
            if (j < 0 || j >= n) continue;
            A->colind[p] = j;
            A->val[p++] = j == i ? 4.0 * (double)K : -1.0 / (1.0 + (double)(j % 7));
        }
    }
    A->rowptr[n] = p;
    A->nnz = p;
    return A;
}

/* flop/s per thread of LAPACK's dgbtrf (kl = ku = K: 4 N K^2) */
static double measure_lapack(sap_context *ctx)
{
    if (!sap__bp_available()) return 0;
    const sap_int n = SV_CAL_BAND_N, K = SV_CAL_K;
    sap__bp *F = NULL;
    double rate = 0;
    sap_csr *A = calibration_band(ctx, n, K);
    if (!A) return 0;
    if (sap__bp_create(ctx, A, K, K, &F) == SAP_OK && F->t_lu > 0)
        rate = 4.0 * (double)n * (double)K * (double)K / F->t_lu / (double)sap__threads(ctx);
    sap__bp_destroy(F);
    sap_csr_destroy(A);
    return rate;
}

/* ---- the sweeps of the SaP apply ------------------------------------------------------- */

double sap__cost_sweep_rounds(sap_context *ctx, sap_int n, sap_int P, sap_int K, sap_precision prec)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    if (P < 1) P = 1;
    const sap_int np = (n + P - 1) / P;
    sap_int slots = ops->band && ops->band->solve_slots ? ops->band->solve_slots(ctx, n, np, K, prec) : ops->units(ctx);
    if (slots < 1) slots = 1;
    return ceil((double)P / (double)slots);
}

/* Seconds of one dependent sweep step (a row of one partition's forward or backward
 * sweep) of the backend's band block solve at half-bandwidth K: the real apply of a SaP-D
 * factorization of SV_SWEEP_P partitions of SV_SWEEP_NP rows, timed (median of 3) and
 * divided by its rounds x 2 n_p steps; 0 when it could not be measured. */
#define SV_SWEEP_P 2
static double measure_sweep_step(sap_context *ctx, sap_int np, sap_int K)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = SV_SWEEP_P * np;
    sap_band_fact *F = NULL;
    sap_vec r, z;
    memset(&r, 0, sizeof(r)), memset(&z, 0, sizeof(z));
    double step = 0;
    sap_csr *A = calibration_band(ctx, n, K);
    if (!A) return 0;
    const sap_band_factor_opts fo = {.boost_threshold = -1, .boost_value = -1, .coupled = 0};
    sap_int dropped = 0;
    double tbc = 0;
    if (sap__band_fact_create(ctx, A, SV_SWEEP_P, 0, SAP_DOUBLE, &fo, 0, &F, &dropped, &tbc) < 0) goto done;
    if (ops->vec_create(ctx, n, SAP_DOUBLE, &r) < 0 || ops->vec_create(ctx, n, SAP_DOUBLE, &z) < 0) goto done;
    ops->set(ctx, &r, 1.0);
    if (sap__band_fact_apply(F, r.data, z.data) < 0) goto done; /* first touch */
    ops->synchronize(ctx);
    double ts[3];
    for (int q = 0; q < 3; q++) {
        const double t0 = sap__wtime();
        if (sap__band_fact_apply(F, r.data, z.data) < 0) goto done;
        ops->synchronize(ctx);
        ts[q] = sap__wtime() - t0;
        sort_last(ts, q);
    }
    step = ts[1] / (sap__cost_sweep_rounds(ctx, n, SV_SWEEP_P, K, SAP_DOUBLE) * (2.0 * (double)np - 1.0));
done:
    if (r.data) ops->vec_destroy(ctx, &r);
    if (z.data) ops->vec_destroy(ctx, &z);
    sap__band_fact_destroy(F);
    sap_csr_destroy(A);
    return step;
}

/* sweep[0] + sweep[1] K from two half-bandwidths, in double (float steps are not slower
 * than that): a device's steps are mostly a barrier's latency, which grows with the
 * threads of the block (one per band row, 64 to 1024): cuda K = 64 and 640 (1024
 * threads); a host's steps are mostly K multiply-adds: 16 and 64 (its factorization of
 * the calibration band costs ms) */
static void measure_sweep(sap_context *ctx, double sweep[2])
{
    const int gpu = sap__solver_on_cuda(ctx);
    const sap_int K1 = gpu ? 64 : 16, K2 = gpu ? 640 : 64, np = gpu ? 1024 : 512;
    const double s1 = measure_sweep_step(ctx, np, K1), s2 = measure_sweep_step(ctx, np, K2);
    sweep[0] = sweep[1] = 0;
    if (!(s1 > 0 && s2 > 0)) return;
    double b = (s2 - s1) / (double)(K2 - K1), a = s1 - b * (double)K1;
    if (b < 0) b = 0, a = 0.5 * (s1 + s2);
    if (a < 0) a = 0, b = s2 / (double)K2;
    sweep[0] = a;
    sweep[1] = b;
}

int sap__cost_rates_peek(const sap_context *ctx, sap__cost_rates *r)
{
    const int be = (int)ctx->backend, nt = sap__threads(ctx);
    int found = 0;
    memset(r, 0, sizeof(*r));
    sap__spin_lock(&cal_lock);
    for (int i = 0; i < SV_CAL_SLOTS && !found; i++)
        if (cal_cache[i].used && cal_cache[i].backend == be && cal_cache[i].threads == nt) {
            *r = cal_cache[i].r;
            found = 1;
        }
    sap__spin_unlock(&cal_lock);
    return found;
}

/* ---- the rates, cached per machine ----------------------------------------------------------
 * Measuring costs ~0.1 s of a process's first solve (most of it the page faults of the
 * stream vectors), so the rates are also kept in a file per machine, backend, device and
 * thread count: $SAP_CACHE_DIR (off: no file), else $XDG_CACHE_HOME/sap, else
 * $HOME/.cache/sap; file rates-<hash of the key>.txt, two lines: the key, then the rates
 * and the time they were measured.  A file older than SV_CAL_FILE_AGE (the host's load
 * changes the rates), of another key, or with a value that is not finite and >= 0 is
 * measured again and rewritten (a temporary file renamed over it: concurrent processes
 * see one or the other). */
#define SV_CAL_FILE_AGE 86400.0 /* seconds */

static int cache_dir(char *dir, size_t len)
{
    const char *e = getenv("SAP_CACHE_DIR");
    if (e) {
        if (!e[0] || !strcmp(e, "off") || !strcmp(e, "0")) return 0;
        return snprintf(dir, len, "%s", e) < (int)len;
    }
    if ((e = getenv("XDG_CACHE_HOME")) && e[0]) return snprintf(dir, len, "%s/sap", e) < (int)len;
    if ((e = getenv("HOME")) && e[0]) return snprintf(dir, len, "%s/.cache/sap", e) < (int)len;
    return 0;
}

/* The key of ctx's rates and the file that keeps them; 0 when there is none. */
static int cache_file(const sap_context *ctx, int nt, char *key, size_t kl, char *path, size_t pl)
{
    char dir[1024], host[256] = "?";
    if (!cache_dir(dir, sizeof(dir))) return 0;
    if (gethostname(host, sizeof(host) - 1) != 0) snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = 0;
    const char *dev = sap_context_device_name(ctx);
    if (snprintf(key, kl, "sap-rates 1 %s backend %s threads %d host %s device %s", SAP_VERSION_STRING,
                 sap_backend_name(ctx->backend), nt, host, dev ? dev : "?") >= (int)kl)
        return 0;
    for (char *c = key; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *c = key; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return snprintf(path, pl, "%s/rates-%016llx.txt", dir, (unsigned long long)h) < (int)pl;
}

static int rate_ok(double v) { return isfinite(v) && v >= 0; }

/* 1 when path holds the rates of key, measured less than SV_CAL_FILE_AGE ago. */
static int cache_load(const char *path, const char *key, sap__cost_rates *m)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1400];
    int ok = 0;
    if (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = 0;
        double v[8];
        if (!strcmp(line, key) &&
            fscanf(f, "%lg %lg %lg %lg %lg %lg %lg %lg", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
            ok = 1;
            for (int i = 0; i < 8; i++) ok &= rate_ok(v[i]);
            const double age = (double)time(NULL) - v[7];
            if (ok && v[0] > 0 && age >= 0 && age < SV_CAL_FILE_AGE) {
                memset(m, 0, sizeof(*m));
                m->bw = v[0], m->lat = v[1], m->band[0] = v[2], m->band[1] = v[3];
                m->lapack = v[4], m->sweep[0] = v[5], m->sweep[1] = v[6];
            } else {
                ok = 0;
            }
        }
    }
    fclose(f);
    return ok;
}

/* Writes the rates (best effort: a folder that cannot be made or written is no error). */
static void cache_save(const char *path, const char *key, const sap__cost_rates *m)
{
    char dir[1200], tmp[1300];
    if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir)) return;
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = 0;
    /* the folder and its parent (…/.cache/sap) */
    char *up = strrchr(dir, '/');
    if (up && up != dir) {
        *up = 0;
        mkdir(dir, 0700);
        *up = '/';
    }
    mkdir(dir, 0700);
    if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof(tmp)) return;
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    const int w = fprintf(f, "%s\n%.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", key, m->bw, m->lat, m->band[0],
                          m->band[1], m->lapack, m->sweep[0], m->sweep[1], (double)time(NULL));
    if (fclose(f) != 0 || w < 0 || rename(tmp, path) != 0) remove(tmp);
}

void sap__cost_rates_get(const sap_context *cctx, sap__cost_rates *r)
{
    sap_context *ctx = (sap_context *)cctx; /* measuring writes only its error state */
    const int be = (int)ctx->backend, nt = sap__threads(ctx);
    sap__spin_lock(&cal_lock);
    for (int i = 0; i < SV_CAL_SLOTS; i++)
        if (cal_cache[i].used && cal_cache[i].backend == be && cal_cache[i].threads == nt) {
            *r = cal_cache[i].r;
            sap__spin_unlock(&cal_lock);
            return;
        }
    sap__spin_unlock(&cal_lock);
    const double t0 = sap__wtime();
    sap__cost_rates m;
    memset(&m, 0, sizeof(m));
    char key[1400], path[1200];
    const int cached = cache_file(ctx, nt, key, sizeof(key), path, sizeof(path));
    if (cached && cache_load(path, key, &m)) {
        m.seconds = sap__wtime() - t0;
        goto keep;
    }
    sap__try_begin(ctx);
    measure_stream(ctx, &m.bw, &m.lat);
    /* the SaP band factorization's in-cache rate is not measured here (its first call pays
     * the thread pool's start, tenths of a second on a loaded host): m.band stays 0 and
     * band_solver.c keeps its measured constant; beyond the cache it is memory-bound at
     * the bandwidth measured above */
    m.lapack = measure_lapack(ctx);
    measure_sweep(ctx, m.sweep);
    sap__try_end(ctx);
    sap_context_clear_error(ctx);
    m.seconds = sap__wtime() - t0;
    if (cached && m.bw > 0) cache_save(path, key, &m);
keep:
    sap__spin_lock(&cal_lock);
    int slot = -1;
    for (int i = 0; i < SV_CAL_SLOTS && slot < 0; i++)
        if (!cal_cache[i].used) slot = i;
    if (slot < 0) slot = (int)(m.seconds * 1e9) % SV_CAL_SLOTS; /* full: replace one */
    cal_cache[slot].used = 1;
    cal_cache[slot].backend = be;
    cal_cache[slot].threads = nt;
    cal_cache[slot].r = m;
    sap__spin_unlock(&cal_lock);
    *r = m;
}

/* ---- the probe: a few Jacobi-preconditioned Krylov steps on this matrix ------------------ */

#define SV_PROBE_ITERS 30      /* steps of the probe */
#define SV_PROBE_SHARE 0.1     /* run only when predicted below this share of the best band method */
#define SV_PROBE_MAX_S 0.5     /* the probe stops after this many seconds (8 steps at least) */
#define SV_PROBE_SPMV 3.0      /* SpMV-equivalents of one counted step (vectors included) */
#define SV_PROBE_REC (4 * SV_PROBE_ITERS + 8)
#define SV_PROBE_FAR 100.0    /* steps predicted beyond this times the probe's: no prediction */

typedef struct probe_rec {
    int n;
    double t0;
    double r[SV_PROBE_REC], it[SV_PROBE_REC];
} probe_rec;

static int probe_monitor(void *state, double iteration, double relres)
{
    probe_rec *p = state;
    /* a time limit: a probe on a slow backend or a loaded host stops early */
    if (p->n >= 8 && sap__wtime() - p->t0 > SV_PROBE_MAX_S) return 1;
    if (p->n < SV_PROBE_REC) {
        p->r[p->n] = relres;
        p->it[p->n] = iteration;
        p->n++;
    }
    return 0;
}

/* Seconds of one SpMV of R->A on the backend at the measured bandwidth. */
static double spmv_seconds(const sap_solver *S, const sap__cost_rates *r)
{
    const double bytes = 12.0 * (double)S->A->nnz + 24.0 * (double)S->A->nrows;
    return (r->bw > 0 ? bytes / r->bw : 0) + r->lat;
}

/* A 64-bit fingerprint of n doubles (their bits, four lanes): the probe's b against the first
 * solve's.  The probe's iterate only starts that solve, whose steps end on the true
 * residual: a collision would cost steps, never a wrong x.  (The copy of b it replaces was
 * 8 MB of fresh pages on poisson3d_100.) */
static uint64_t vec_fingerprint(const double *v, sap_int n)
{
    uint64_t h[4] = {1, 2, 3, 4}, r = (uint64_t)n;
    for (sap_int i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, &v[i], sizeof(w));
        h[i & 3] = sap__mix64(h[i & 3] ^ w);
    }
    for (int l = 0; l < 4; l++) r = sap__mix64(r ^ h[l]);
    return r;
}

/* Runs the probe; S->probe_* receive its step time and the steps Jacobi needs. */
static void run_probe(sap_solver *S)
{
    sap_context *x = S->x;
    const sap_int n = S->A->nrows;
    sap_matrix *M = NULL;
    sap_precond *pc = NULL;
    sap_krylov *kry = NULL;
    double *b = NULL, *y = NULL;
    probe_rec rec;
    memset(&rec, 0, sizeof(rec));
    double tp[6] = {sap__wtime(), 0, 0, 0, 0, 0}, steps = 0; /* the parts' ends and steps, for the log */
    sap__try_begin(x);
    if (S->ctx != x) sap__try_begin(S->ctx); /* (y's failure, on S's context, is expected too) */
    b = sap__alloc(x, (size_t)(n > 0 ? n : 1), sizeof(double), false, __FILE__, __LINE__);
    /* (on S's context: it becomes probe_y without a copy) */
    y = sap__alloc(S->ctx, (size_t)(n > 0 ? n : 1), sizeof(double), true, __FILE__, __LINE__);
    if (!b || !y) goto done;
    /* the caller's b when the setup knows it (sap_solver_setup_rhs; not a zero one): its
     * steps are the first attempt's (sap__solver_probe_guess) */
    int own_b = 0;
    if (S->hint_b && sap__solver_nrm2(S->hint_b, n) > 0 && sap_reorder_apply_rhs(S->R, S->hint_b, b) >= 0) {
        S->probe_b_fp = vec_fingerprint(S->hint_b, n);
        own_b = 1;
    }
    /* a right-hand side with every frequency and a smooth part: A times a fixed pseudo-random
     * vector plus a bump over the row order (R->A is in CM's order, whose levels follow the
     * geometry: a smooth field, the slow modes of a Jacobi-like iteration, as the solution of
     * a discretised PDE is).  With the random vector alone the fast modes made most of the
     * residual, which fell several decades in the first steps: Jacobi's steps predicted 2-3x
     * too few (host, x* the parabola: airfoil_2d 99 of 208, recirc2d 469 of 1326); with the
     * bump airfoil_2d 240, recirc2d no prediction (the residual not halved over the probe) */
    if (!own_b) {
        for (sap_int i = 0; i < n; i++)
            y[i] = (double)((i * 2654435761u) % 1000u) / 1000.0 - 0.5 +
                   sin(3.14159265358979 * ((double)i + 0.5) / (double)n);
        if (sap_csr_spmv(S->R->A, 1.0, y, 0.0, b) < 0) goto done;
        memset(y, 0, sizeof(double) * (size_t)n);
    }
    sap_band_source src;
    memset(&src, 0, sizeof(src));
    tp[1] = sap__wtime();
    /* the Krylov matrix as an attempt makes it (sap__solver_band_matrix): kept for one */
    if (sap__solver_band_matrix(x, S->R->A, &M, &src) < 0) goto done;
    tp[2] = sap__wtime();
    if (sap_precond_create(x, "jacobi", &pc) < 0 || sap_precond_setup_numeric(pc, S->R->A) < 0) goto done;
    tp[3] = sap__wtime();
    sap_krylov_options ko;
    sap_krylov_options_init(&ko);
    const int cg = S->stats.spd && !S->stats.db_used;
    ko.type = cg ? SAP_KRYLOV_CG : SAP_KRYLOV_BICGSTABL;
    ko.param = cg ? 0 : 2;
    ko.tol = S->opt.krylov.tol;
    ko.maxit = cg ? SV_PROBE_ITERS : 2 * SV_PROBE_ITERS; /* BiCGStab(2): 4 SpMVs an iteration */
    ko.monitor = probe_monitor;
    ko.monitor_state = &rec;
    if (sap_krylov_create(x, &ko, &kry) < 0) goto done;
    sap_krylov_stats ks;
    const double t0 = tp[4] = sap__wtime();
    rec.t0 = t0;
    sap_status st = sap_krylov_solve(kry, M, pc, b, y, &ks);
    tp[5] = sap__wtime();
    steps = ks.iterations;
    const double t = tp[5] - t0;
    S->probe_left = 1;
    if (own_b && st >= 0) { /* its iterate for the first attempt (y is finite on a warning) */
        S->probe_y = y;
        y = NULL;
        S->probe_y_it = ks.iterations;
        const double tl = S->opt.krylov.tol > 0 && S->opt.krylov.tol < 1 ? S->opt.krylov.tol : 1e-10;
        const double left = ks.relative_residual > tl ? log10(ks.relative_residual / tl) / -log10(tl) : 0;
        S->probe_left = left < 1 ? left : 1;
    }
    if ((st < 0 && st != SAP_ERR_BREAKDOWN) || ks.iterations <= 0 || rec.n < 4) goto done;
    S->probe_t_it = t / ks.iterations;
    S->probe_ran = 1;
    /* the slope of log10 relres over the second half of the probe (CG's first steps are
     * faster than its rate) */
    const int h = rec.n / 2;
    const double r0 = rec.r[h] > 0 ? rec.r[h] : 1e-300, r1 = rec.r[rec.n - 1] > 0 ? rec.r[rec.n - 1] : 1e-300;
    const double di = rec.it[rec.n - 1] - rec.it[h];
    const double slope = di > 0 ? (log10(r1) - log10(r0)) / di : 0; /* decades per step, < 0 */
    const double tol = S->opt.krylov.tol > 0 ? S->opt.krylov.tol : 1e-10;
    /* converging: the residual at least halved over the probe and falling in its second
     * half; else (stagnating, diverging, or so slow that the steps would be more than
     * SV_PROBE_FAR times the probe's) no prediction */
    const double rfirst = rec.r[0] > 0 ? rec.r[0] : 1e-300;
    if (ks.relative_residual <= tol) S->probe_iters = ks.iterations;
    else if (slope < 0 && isfinite(slope) && r1 <= 0.5 * rfirst) S->probe_iters = ks.iterations + (log10(tol) - log10(r1)) / slope;
    else S->probe_iters = INFINITY;
    if (S->probe_iters > SV_PROBE_FAR * ks.iterations) S->probe_iters = INFINITY;
    S->probe_time = t;
done:
    if (tp[5] > 0)
        sap__log(S->ctx, SAP_PRINT_INFO,
                 "sap_solver: probe %.3g ms: right-hand side %.3g, matrix %.3g, Jacobi %.3g, Krylov %.3g, %.3g steps "
                 "%.3g (%.3g ms each)",
                 1e3 * (sap__wtime() - tp[0]), 1e3 * (tp[1] - tp[0]), 1e3 * (tp[2] - tp[1]), 1e3 * (tp[3] - tp[2]),
                 1e3 * (tp[4] - tp[3]), steps, 1e3 * (tp[5] - tp[4]), steps > 0 ? 1e3 * (tp[5] - tp[4]) / steps : 0.0);
    sap_krylov_destroy(kry);
    sap_precond_destroy(pc);
    if (M && S->probe_ran) { /* the first Krylov attempt on R->A takes it (no second upload) */
        sap__solver_probe_release(S);
        S->probe_M = M;
        S->probe_src = src;
        S->probe_x = x;
        M = NULL;
    }
    sap_matrix_destroy(M);
    sap__free(x, b);
    sap__free(S->ctx, y);
    if (S->ctx != x) {
        sap__try_end(S->ctx);
        sap_context_clear_error(S->ctx);
    }
    sap__try_end(x);
    sap_context_clear_error(x);
}

/* ---- the structure the candidates' costs need -------------------------------------------- */

/* Levels of the lower triangle of R->A (a level-scheduled triangular solve launches one
 * step per level). */
static sap_int lower_levels(sap_context *ctx, const sap_csr *A)
{
    const sap_int n = A->nrows;
    sap__try_begin(ctx);
    sap_int *lev = sap__alloc(ctx, (size_t)(n > 0 ? n : 1), sizeof(sap_int), false, __FILE__, __LINE__), top = 0;
    sap__try_end(ctx);
    if (!lev) { /* no memory for the count: every row a level (the most a solve can take) */
        sap_context_clear_error(ctx);
        return n;
    }
    for (sap_int i = 0; i < n; i++) {
        sap_int l = 0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const sap_int j = A->colind[p];
            if (j < i && lev[j] + 1 > l) l = lev[j] + 1;
        }
        lev[i] = l;
        if (l + 1 > top) top = l + 1;
    }
    sap__free(ctx, lev);
    return top;
}

sap_status sap__cost_blocks(sap_solver *S)
{
    sap_csr_blocks B;
    memset(&B, 0, sizeof(B));
    sap_status st = sap__csr_blocks(S->ctx, S->R->A, SAP_BLOCKS_MAX, 0, 0, &B); /* natural: not agglomerated */
    if (st == SAP_OK) S->bj_avg = B.nb > 0 ? (double)B.n / (double)B.nb : 1.0;
    sap__csr_blocks_free(S->ctx, &B);
    return st;
}

/* Host seconds of the structure passes (the lower-triangle levels and the natural blocks:
 * about two passes over the CSR, one thread each), at SV_STRUCT_BW bytes/s (H200 host:
 * 0.09-0.14 s on poisson3d_100's 6.9e6 entries, 5 ms on cage11's 5.6e5). */
#define SV_STRUCT_BW 2.0e9
double sap__cost_structure_seconds(const sap_solver *S)
{
    return 2.0 * (12.0 * (double)S->A->nnz + 16.0 * (double)S->A->nrows) / SV_STRUCT_BW;
}

void sap__cost_structure(sap_solver *S)
{
    const double t0 = sap__wtime();
    S->levels = lower_levels(S->ctx, S->R->A);
    S->bj_avg = 0;
    sap__try_begin(S->ctx);
    sap_status st = sap__cost_blocks(S);
    sap__try_end(S->ctx);
    if (st < 0) sap_context_clear_error(S->ctx); /* unknown: bjacobi is not a candidate */
    S->stats.time_structure += sap__wtime() - t0;
}

/* ---- the predictions ----------------------------------------------------------------------- */

#define SV_GAIN_ILU 2.0        /* IC(0) / ILU(0): Jacobi's steps divided by this (steps go with sqrt(kappa); IC(0) divides kappa of a 2D/3D Laplacian by ~4) */
#define SV_SAP_ITERS_MIN 4.0   /* steps of a SaP method whose band keeps (nearly) everything */
#define SV_SAP_ITERS_NODECAY 40.0 /* ... at most, for a reordered matrix that is not diagonally
                                     dominant (d < 1): its spikes need not decay (SaP paper,
                                     section 2), so the truncation's error has no bound; the
                                     prior is SV_SAP_ITERS_MIN / d up to this, and the learned
                                     cut corrects it after the first steps */
#define SV_SAP_RICH_STEPS 8.0  /* Richardson steps (one SpMV + one apply each) where SaP-D / SaP-C
                                  is near A^-1: each cuts the residual 14-50x with float
                                  factors, ~8 to 1e-10 (measured: 9-11 SpMVs on gen:banded) */
#define SV_DIRECT_PREDICT_NNZ 5.0e6 /* the host symbolic analysis up front only below this nnz */
#define SV_DIRECT_ASK 0.5      /* ... and when the best other prediction is above (s) or missing */

/* Off-diagonal part of ||A||_F^2 that attempt m's band keeps, its K, P and precision; < 0
 * when the plan would not run it. */
static double band_shape(sap_solver *S, sap_solver_method m, sap_int *K, sap_int *P, sap_precision *prec)
{
    double kept = 1, diag = 1;
    char note[96];
    sap__try_begin(S->ctx);
    sap_status st = sap__solver_choose(S, m, 0, K, P, prec, &kept, note, sizeof(note));
    /* SaP-D drops the entries between its partitions too, whatever K (airfoil_2d: K = 440
     * across partitions of 222 rows, 150 steps where the whole band predicted a few) */
    if (st >= 0 && m == SAP_METHOD_SAPD && *P > 1) st = sap__solver_kept_in_blocks(S, *K, *P, &kept);
    if (st >= 0 && !S->cost_diag_known) {
        st = sap__solver_kept_fraction(S, 0, &S->cost_diag);
        S->cost_diag_known = st >= 0;
    }
    diag = S->cost_diag;
    sap__try_end(S->ctx);
    if (st < 0) {
        sap_context_clear_error(S->ctx);
        return -1;
    }
    return diag < 1 ? (kept - diag) / (1 - diag) : 1;
}

double sap__cost_predict(sap_solver *S, sap_solver_method m, double *iters, char *why, size_t wl)
{
    sap__cost_rates r;
    sap__cost_rates_get(S->x, &r);
    const sap__solver_method_type *t = sap__solver_method_get(m);
    const double n = (double)S->A->nrows, nnz = (double)S->A->nnz;
    *iters = 0;
    if (why && wl) why[0] = 0;
    if (!t) return -1;
    if (t->direct && t->band == SAP__SM_BAND_NONE) {
        /* the analysis up front only where the direct method could win: the best other
         * prediction unknown, or above the least the direct one can take and above what
         * the analysis is expected to cost (a quick iteration predicted in ms pays no
         * analysis; a learned cut asks for it later) */
        const int could_win = S->cost_best < 0 || (S->cost_best > sap__solver_direct_floor(S, m) &&
                                                   sap__solver_direct_analysis_guess(S) <= S->cost_best);
        if (S->dpred_done ||
            (could_win && (m == SAP_METHOD_DIRECT_CUDSS ||
                           (nnz <= SV_DIRECT_PREDICT_NNZ && (S->cost_best < 0 || S->cost_best > SV_DIRECT_ASK))))) {
            const double p = sap__solver_direct_predict(S, m);
            if (p > 0 && why) snprintf(why, wl, "%.3g flop", S->dpred_flops);
            return p;
        }
        return -1;
    }
    /* per step: the probe's Jacobi step plus the preconditioner's extra bytes */
    const double applies = 1.0; /* preconditioner applications per counted step (CG: one; BiCGStab(2): its quarter steps) */
    const double tj = S->probe_ran ? S->probe_t_it : SV_PROBE_SPMV * spmv_seconds(S, &r);
    const double bw = r.bw > 0 ? r.bw : 1e10;
    /* from the probe's iterate of the caller's b (sap__solver_probe_guess): Jacobi goes on
     * where the probe stopped, the others have the decades left to go */
    const int guess = S->probe_y != NULL;
    const double left = guess ? S->probe_left : 1.0;
    if (m == SAP_METHOD_JACOBI) {
        if (!S->probe_ran || !isfinite(S->probe_iters)) return -1;
        *iters = guess ? fmax(S->probe_iters - S->probe_y_it, 0.0) : S->probe_iters;
        if (why) snprintf(why, wl, "%.0f it x %.2g ms%s", *iters, 1e3 * tj, guess ? " after the probe's" : "");
        return *iters * tj + (guess ? spmv_seconds(S, &r) : 0.0); /* and the residual of the start */
    }
    if (m == SAP_METHOD_ILU) { /* (levels < 0: the structure passes did not run) */
        if (!S->probe_ran || !isfinite(S->probe_iters) || S->levels < 0) return -1;
        *iters = S->probe_iters / SV_GAIN_ILU * left;
        const double trsv = 12.0 * nnz / bw + 2.0 * (double)S->levels * r.lat;
        const double step = tj + applies * trsv, setup = 3.0 * 12.0 * nnz / bw + 2.0 * (double)S->levels * r.lat;
        if (why) snprintf(why, wl, "%.0f it x %.2g ms", *iters, 1e3 * step);
        return setup + *iters * step;
    }
    if (m == SAP_METHOD_BJACOBI) {
        if (!S->probe_ran || !isfinite(S->probe_iters) || S->bj_avg <= 1.0) return -1;
        *iters = S->probe_iters / sqrt(S->bj_avg) * left;
        const double step = tj + applies * n * S->bj_avg * 8.0 / bw;
        if (why) snprintf(why, wl, "%.0f it x %.2g ms", *iters, 1e3 * step);
        return n * S->bj_avg * S->bj_avg * 8.0 / bw + *iters * step;
    }
    /* the band methods: the setup the plan predicts for the K it would use */
    sap_int K = 0, P = 1;
    sap_precision prec = SAP_DOUBLE;
    const double off = band_shape(S, m, &K, &P, &prec);
    if (off < 0) return -1;
    const sap__sm_estimate e = sap__solver_estimate_all(S, m, P, K, prec);
    if (t->direct) { /* band-pivot: a direct solve and a few refinement steps */
        *iters = 1;
        const double step = 2.0 * n * (3.0 * (double)K + 1.0) * 8.0 / bw;
        if (why) snprintf(why, wl, "setup %.2g s, K %lld", e.seconds, (long long)K);
        return e.seconds + 3.0 * step;
    }
    /* SaP methods: steps between SaP's few and Jacobi's, by the part of the off-diagonal
     * entries the band leaves out */
    double it = SV_SAP_ITERS_MIN;
    /* Jacobi made no headway in the probe and the band leaves entries out: no prediction
     * (after those that have one; recirc2d_300: SaP-D priced at 40 steps ran 290 and
     * failed, 0.28 s before the direct solve) */
    if (S->probe_ran && !isfinite(S->probe_iters) && off < 1.0 - 1e-9) return -1;
    if (S->probe_ran && isfinite(S->probe_iters)) {
        const double kept_out = sqrt(1.0 - off > 0 ? 1.0 - off : 0) * S->probe_iters * left;
        if (kept_out > it) it = kept_out;
    }
    const double d = S->d_cm;
    if (isfinite(d) && d >= 0 && d < 1) {
        const double nodecay = d > SV_SAP_ITERS_MIN / SV_SAP_ITERS_NODECAY ? SV_SAP_ITERS_MIN / d : SV_SAP_ITERS_NODECAY;
        if (nodecay > it) it = nodecay;
    }
    *iters = it;
    /* the attempt's Krylov method: CG (one apply a step) where SaP-D runs on an SPD matrix
     * without DB, else BiCGStab(2) (an iteration = 2l = 4 applies) */
    const int coupled = m == SAP_METHOD_SAPC;
    const int cg = S->stats.spd && !S->stats.db_used && !coupled &&
                   (!S->opt.krylov_auto ? S->opt.krylov.type == SAP_KRYLOV_CG : 1);
    const double apc = cg ? 1.0 : 4.0;
    const double ta = sap__cost_apply_seconds(S->x, &r, S->A->nrows, K, P, prec, coupled);
    /* the automatic Krylov method of a SaP attempt is Richardson (krylov/richardson.c) until
     * a step contracts less than 4x, then BiCGStab(2): a near-exact band costs
     * SV_SAP_RICH_STEPS steps of one SpMV + one apply */
    if (!cg && S->opt.krylov_auto && it <= SV_SAP_ITERS_MIN) {
        const double step = tj + ta;
        *iters = SV_SAP_RICH_STEPS;
        if (why) snprintf(why, wl, "setup %.2g s + %.0f Richardson steps x %.2g ms", e.seconds, SV_SAP_RICH_STEPS, 1e3 * step);
        return e.seconds + SV_SAP_RICH_STEPS * step;
    }
    const double step = tj + apc * ta;
    if (why)
        snprintf(why, wl, "setup %.2g s + %.0f it x %.2g ms%s", e.seconds, it, 1e3 * step,
                 isfinite(d) && d < 1 ? " (d < 1: no decay bound)" : "");
    return e.seconds + it * step;
}

/* Seconds of one SaP preconditioner apply (n rows, P partitions, half-bandwidth K): the
 * factors' bytes at the bandwidth or the sweeps' dependent steps, whichever is longer.  A
 * block solve sweeps each partition forward and backward (2 n_p - 1 steps), the partitions
 * in rounds of the backend's slots; SaP-C adds a second block solve and the reduced
 * systems' 2 m steps (m = min(K, n_p)) and three launches. */
double sap__cost_apply_seconds(sap_context *x, const sap__cost_rates *r, sap_int n, sap_int K, sap_int P,
                               sap_precision prec, int coupled)
{
    if (P < 1) P = 1;
    const double es = prec == SAP_FLOAT ? 4.0 : 8.0, bw = r->bw > 0 ? r->bw : 1e10;
    const double np = ceil((double)n / (double)P), m = (double)K < np ? (double)K : np;
    const double solves = coupled ? 2.0 : 1.0;
    const double t_bytes = solves * (double)n * (2.0 * (double)K + 1.0) * es / bw + (coupled ? 4.0 : 1.0) * r->lat;
    double t_steps = 0;
    if (r->sweep[0] > 0 || r->sweep[1] > 0) {
        const double step = r->sweep[0] + r->sweep[1] * (double)K;
        const double rounds = sap__cost_sweep_rounds(x, n, P, K, prec);
        t_steps = solves * rounds * (2.0 * np - 1.0) * step;
        if (coupled && P > 1) t_steps += 2.0 * m * (r->sweep[0] + r->sweep[1] * m) + 3.0 * r->lat;
    }
    return t_steps > t_bytes ? t_steps : t_bytes;
}

int sap__solver_probe_take(sap_solver *S, sap_context *x, const sap_csr *A, sap_matrix **M, sap_band_source *src)
{
    if (!S->probe_M || S->probe_x != x || !S->R || A != S->R->A) return 0;
    *M = S->probe_M;
    *src = S->probe_src;
    S->probe_M = NULL;
    return 1;
}

void sap__solver_probe_release(sap_solver *S)
{
    sap_matrix_destroy(S->probe_M);
    S->probe_M = NULL;
}

/* the probe's iterate, freed */
static void probe_guess_drop(sap_solver *S)
{
    sap__free(S->ctx, S->probe_y);
    S->probe_y = NULL;
}

int sap__solver_probe_guess(sap_solver *S, const double *rhs, double *y)
{
    if (!S->probe_y) return 0;
    const sap_int n = S->A->nrows;
    const int same = vec_fingerprint(rhs, n) == S->probe_b_fp;
    if (same) memcpy(y, S->probe_y, sizeof(double) * (size_t)n);
    probe_guess_drop(S); /* once: the first Krylov solve of the first right-hand side */
    return same;
}

void sap__solver_probe_forget(sap_solver *S)
{
    sap__solver_probe_release(S);
    probe_guess_drop(S);
}

void sap__cost_probe(sap_solver *S, double best_band)
{
    if (S->probe_ran || S->probe_tried) return;
    S->probe_tried = 1;
    sap__cost_rates r;
    sap__cost_rates_get(S->x, &r);
    /* the probe's steps (its matrix, the upload on a device, is the first Krylov attempt's:
     * sap__solver_probe_take; synthetic N = 100,000 K = 50 had its probe skipped for a 3 ms
     * upload, and SaP-D's 55 ms attempt ran where Jacobi's took 19 ms) */
    const double est = SV_PROBE_ITERS * SV_PROBE_SPMV * spmv_seconds(S, &r);
    /* without a band prediction the probe is what there is (it stops itself after
     * SV_PROBE_MAX_S) */
    if (best_band > 0 && est > SV_PROBE_SHARE * best_band) return;
    const double t0 = sap__wtime();
    run_probe(S);
    S->stats.time_probe += sap__wtime() - t0;
}
