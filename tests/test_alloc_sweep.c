/* test_alloc_sweep.c -- allocation-failure sweeps over every module (issue 13 item 6).
 * A representative run of each module is repeated with the k-th allocation of its context
 * failing, for k = 0, 1, 2, ... until the run makes no more allocations than k: the
 * reorderings (sap_reorder), the band solver (SaP-D, SaP-C, DIRECT), every registered
 * Krylov method with Jacobi, every registered preconditioner type (setup + apply), sap_solver
 * (auto and every method forced, fallback on and off; solve_many; refactor), the generators
 * (sap_gen_spec of each kind), sap_csr_stats, sap_matrix_create in every SpMV format.
 * At each k: an allocation that failed gives SAP_ERR_OUT_OF_MEMORY with a message in the
 * context (or success when a documented fallback absorbed it: then the result is checked
 * as in the run without failures); the objects given back are destroyed (a failed create
 * leaves its output NULL); the objects of the caller stay usable (the failed call is
 * repeated with the allocator healed and must then succeed); once everything is destroyed
 * the context's host bytes in use and the allocator's live blocks are back where they were
 * (the sweep's own leak accounting; LeakSanitizer in the ASan CI build on top).
 * Two modes: "one" fails only the k-th allocation (later ones succeed: fallbacks, retries),
 * "rest" fails the k-th and every later one (cleanup paths that allocate).
 * By default (CI) a reduced set runs: mode "one" and "rest", every k up to 150, then every
 * 7th (mode "one") or 23rd (mode "rest"); SAP_SWEEP_FULL=1 runs every k in both modes and
 * prints the summary table of bench/results/alloc_sweep.md.
 * --backend cuda: the same sweep on a cuda context through a device_alloc hook (cudaMalloc
 * behind a counter that can be told to fail) for the band solver, Krylov with Jacobi and
 * sap_solver auto (on the device: host_small = 0), host allocations swept too; and the
 * device pool: a failing device allocation while the pool caches blocks is
 * SAP_ERR_OUT_OF_MEMORY and the context stays usable.  77 without CUDA or a device;
 * SAP_TEST_GPU_DRYRUN=1 runs it on a cpu context (no device allocations). */
#define SAP_TEST_HAS_GPU_PART 1
#include "testing.h"

#ifdef SAP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the failing allocator ---------------------------------------------------------------- */

enum { SIDE_HOST = 0, SIDE_DEVICE = 1 };
enum { MODE_ONE = 0, MODE_REST = 1 };

typedef struct counter {
    long fail_at; /* allocation index (since armed) that fails; -1: none */
    long count;   /* allocations attempted since armed */
    long live;    /* blocks not yet freed */
    long failed;  /* allocations refused */
} counter;

typedef struct sweep_alloc {
    counter c[2]; /* host, device */
    int side;     /* which one is swept */
    int mode;     /* MODE_ONE / MODE_REST */
    int healed;   /* the run's checks and retries: nothing counted, nothing fails */
} sweep_alloc;

static int refuse(sweep_alloc *a, int side)
{
    counter *c = &a->c[side];
    if (a->healed) return 0;
    long k = __atomic_fetch_add(&c->count, 1, __ATOMIC_RELAXED);
    if (side != a->side || c->fail_at < 0) return 0;
    if (k == c->fail_at || (a->mode == MODE_REST && k > c->fail_at)) {
        __atomic_fetch_add(&c->failed, 1, __ATOMIC_RELAXED);
        return 1;
    }
    return 0;
}

static void *host_alloc(void *state, size_t bytes)
{
    sweep_alloc *a = state;
    if (refuse(a, SIDE_HOST)) return NULL;
    void *p = malloc(bytes);
    if (p) __atomic_fetch_add(&a->c[SIDE_HOST].live, 1, __ATOMIC_RELAXED);
    return p;
}

static void host_free(void *state, void *p)
{
    sweep_alloc *a = state;
    if (p) __atomic_fetch_sub(&a->c[SIDE_HOST].live, 1, __ATOMIC_RELAXED);
    free(p);
}

#ifdef SAP_HAVE_CUDA
static void *device_alloc(void *state, size_t bytes, int device)
{
    sweep_alloc *a = state;
    (void)device; /* the context made its device current */
    if (refuse(a, SIDE_DEVICE)) return NULL;
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    __atomic_fetch_add(&a->c[SIDE_DEVICE].live, 1, __ATOMIC_RELAXED);
    return p;
}

static void device_free(void *state, void *p, int device)
{
    sweep_alloc *a = state;
    (void)device;
    if (!p) return;
    cudaFree(p);
    __atomic_fetch_sub(&a->c[SIDE_DEVICE].live, 1, __ATOMIC_RELAXED);
}
#endif

/* Threads of the sweep's contexts: 1 (the reduced set: the allocation order is fixed and
 * OpenMP threads do not spin against other processes), 0 (the OpenMP default) too in the
 * full sweep. */
static int sweep_threads = 1;

static sap_context *sweep_context(sap_backend backend, sweep_alloc *a)
{
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = backend;
    cfg.print_level = SAP_PRINT_SILENT;
    cfg.threads = sweep_threads;
    cfg.allocator.host_alloc = host_alloc;
    cfg.allocator.host_free = host_free;
#ifdef SAP_HAVE_CUDA
    if (backend == SAP_BACKEND_CUDA) {
        cfg.allocator.device_alloc = device_alloc;
        cfg.allocator.device_free = device_free;
    }
#endif
    cfg.allocator.state = a;
    a->c[0].fail_at = a->c[1].fail_at = -1;
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, &cfg);
    if (st != SAP_OK) {
        printf("  creating the sweep's %s context: %s\n", sap_backend_name(backend), sap_status_name(st));
        return NULL;
    }
    return ctx;
}

/* ---- one run of an operation --------------------------------------------------------------- */

typedef struct run {
    sap_context *ctx;
    sweep_alloc *a;
    long k;               /* allocation to fail; -1: the reference run */
    int armed;
    int64_t host_base;    /* host bytes in use when armed */
    int64_t device_base;
    long live_base[2];
    sap_status first;     /* first error seen (SAP_OK: none) */
    const char *where;    /* the call that returned it */
    char msg[320];        /* the context's message then */
    double *out;          /* the result to compare with the reference run (op's choice) */
    sap_int nout;
    double tol;           /* relative tolerance of that comparison */
    int usable_failures;  /* a repeated call after a failure did not succeed */
    long count, failed;   /* allocations made and refused on the swept side (after the run) */
} run;

/* The op's inputs are ready: the allocations from here on are counted and swept. */
static void arm(run *r)
{
    for (int i = 0; i < 2; i++) {
        r->a->c[i].count = 0;
        r->a->c[i].failed = 0;
    }
    r->a->c[r->a->side].fail_at = r->k;
    r->armed = 1;
}

/* The allocator heals (the "usable afterwards" checks). */
static void heal(run *r)
{
    r->a->c[0].fail_at = r->a->c[1].fail_at = -1;
    r->a->healed = 1;
}

static sap_status step(run *r, const char *what, sap_status st)
{
    if (st < 0 && r->first == SAP_OK) {
        r->first = st;
        r->where = what;
        snprintf(r->msg, sizeof(r->msg), "%s", sap_context_last_error(r->ctx));
    }
    return st;
}
#define STEP(r, call) step((r), #call, (call))

/* After a failure: the same call again with the allocator healed must succeed. */
#define RETRY_OK(r, call)                                                                           \
    do {                                                                                            \
        heal(r);                                                                                    \
        sap_status rs__ = (call);                                                                   \
        if (rs__ < 0) {                                                                             \
            (r)->usable_failures++;                                                                 \
            CHECK_MSG(0, "k = %ld: after %s failed, %s again gave %s (%s)", (r)->k, (r)->where,     \
                      #call, sap_status_name(rs__), sap_context_last_error((r)->ctx));              \
        }                                                                                           \
    } while (0)

typedef void (*sweep_op)(run *r, const void *arg);

/* ---- the sweep driver ---------------------------------------------------------------------- */

typedef struct sweep_summary {
    char name[96];
    const char *backend, *side, *mode;
    int threads;
    long points;   /* allocations of the run without failures */
    long swept;    /* values of k run */
    long errors;   /* runs that returned SAP_ERR_OUT_OF_MEMORY */
    long absorbed; /* runs where a fallback absorbed the failure */
    int failures;  /* checks that failed */
} sweep_summary;

#define MAX_SUMMARY 256
static sweep_summary summary[MAX_SUMMARY];
static int nsummary = 0;
static int full = 0;

static long next_k(long k, int mode)
{
    if (full || k < 150) return k + 1;
    return k + (mode == MODE_ONE ? 7 : 23);
}

static int run_once(sap_backend backend, int side, int mode, long k, sweep_op op, const void *arg, run *out,
                    const char *name)
{
    sweep_alloc a;
    memset(&a, 0, sizeof(a));
    a.side = side;
    a.mode = mode;
    memset(out, 0, sizeof(*out));
    out->a = &a;
    out->k = k;
    out->tol = 1e-12;
    out->ctx = sweep_context(backend, &a);
    if (!out->ctx) {
        CHECK(0);
        return -1;
    }
    const int f0 = sap_test_failures;
    sap_context_stats s;
    sap_context_get_stats(out->ctx, &s); /* what the context itself holds */
    out->host_base = s.host_bytes_in_use;
    out->device_base = s.device_bytes_in_use;
    out->live_base[0] = a.c[0].live;
    out->live_base[1] = a.c[1].live;
    op(out, arg);
    if (!out->armed) {
        CHECK_MSG(0, "%s: the operation never armed the allocator", name);
        sap_context_destroy(out->ctx);
        return -1;
    }
    heal(out);
    sap_context_get_stats(out->ctx, &s);
    /* on cuda the context's device pool keeps host tables that grow on first use (freed with
     * the context): there the check after sap_context_destroy below is the leak proof */
    if (backend == SAP_BACKEND_CPU) {
        CHECK_MSG(s.host_bytes_in_use == out->host_base, "%s, k = %ld: %lld host bytes leaked", name, k,
                  (long long)(s.host_bytes_in_use - out->host_base));
        CHECK_MSG(a.c[SIDE_HOST].live == out->live_base[SIDE_HOST], "%s, k = %ld: %ld host blocks leaked", name, k,
                  a.c[SIDE_HOST].live - out->live_base[SIDE_HOST]);
    }
    CHECK_MSG(s.device_bytes_in_use == out->device_base, "%s, k = %ld: %lld device bytes leaked", name, k,
              (long long)(s.device_bytes_in_use - out->device_base));
    sap_context_destroy(out->ctx);
    out->ctx = NULL;
    CHECK_MSG(a.c[SIDE_HOST].live == 0 && a.c[SIDE_DEVICE].live == 0,
              "%s, k = %ld: %ld host / %ld device blocks not freed at context destroy", name, k, a.c[SIDE_HOST].live,
              a.c[SIDE_DEVICE].live);
    out->a = NULL;
    /* what the run saw, for the caller */
    out->count = a.c[side].count;
    out->failed = a.c[side].failed;
    return sap_test_failures - f0;
}

static int compare_out(const run *ref, const run *r)
{
    if (!ref->out || !r->out || ref->nout != r->nout) return 0;
    for (sap_int i = 0; i < r->nout; i++)
        if (!sap_test_close(r->out[i], ref->out[i], r->tol)) return 0;
    return 1;
}

static void sweep(const char *name, sap_backend backend, int side, int mode, sweep_op op, const void *arg)
{
    const double t0 = sap_test_wtime();
    const int f0 = sap_test_failures;
    sweep_summary *sum = nsummary < MAX_SUMMARY ? &summary[nsummary++] : &summary[MAX_SUMMARY - 1];
    memset(sum, 0, sizeof(*sum));
    snprintf(sum->name, sizeof(sum->name), "%s", name);
    sum->backend = sap_backend_name(backend);
    sum->side = side == SIDE_HOST ? "host" : "device";
    sum->mode = mode == MODE_ONE ? "one" : "rest";
    sum->threads = sweep_threads;

    /* a first run fills what the library measures once per process (the cost model's rates),
     * so that the reference run and the swept runs make the same allocations */
    run warm;
    memset(&warm, 0, sizeof(warm));
    const int wr = run_once(backend, side, mode, -1, op, arg, &warm, name);
    free(warm.out);
    if (wr < 0) return;
    run ref;
    if (run_once(backend, side, mode, -1, op, arg, &ref, name) < 0) return;
    if (ref.first < 0) {
        CHECK_MSG(0, "%s: the run without failures gave %s at %s (%s)", name, sap_status_name(ref.first), ref.where,
                  ref.msg);
        free(ref.out);
        return;
    }
    const long points = ref.count;
    sum->points = points;
    for (long k = 0;; k = next_k(k, mode)) {
        if (k > points) k = points; /* the last run: no allocation fails */
        run r;
        char what[160];
        snprintf(what, sizeof(what), "%s [%s %s, %s]", name, sum->backend, sum->side, sum->mode);
        if (run_once(backend, side, mode, k, op, arg, &r, what) < 0) {
            free(r.out);
            break;
        }
        sum->swept++;
        const long failed = r.failed;
        if (!failed) {
            CHECK_MSG(r.first == SAP_OK, "%s, k = %ld (no allocation failed): %s at %s (%s)", what, k,
                      sap_status_name(r.first), r.where, r.msg);
            CHECK_MSG(k >= points, "%s: k = %ld of %ld allocations failed nothing", what, k, points);
            if (r.first == SAP_OK && ref.out)
                CHECK_MSG(compare_out(&ref, &r), "%s, k = %ld: the result differs from the reference run", what, k);
            free(r.out);
            break;
        }
        if (r.first < 0) {
            sum->errors++;
            CHECK_MSG(r.first == SAP_ERR_OUT_OF_MEMORY, "%s, k = %ld: %s gave %s (%s)", what, k, r.where,
                      sap_status_name(r.first), r.msg);
            CHECK_MSG(r.msg[0] != 0, "%s, k = %ld: %s gave %s without a message", what, k, r.where,
                      sap_status_name(r.first));
        } else {
            sum->absorbed++; /* the op checked the result itself */
            if (ref.out && r.out)
                CHECK_MSG(compare_out(&ref, &r), "%s, k = %ld: the result after an absorbed failure differs", what, k);
        }
        free(r.out);
        if (k >= points) {
            CHECK_MSG(0, "%s: allocation %ld still failed: more allocations than the reference run's %ld", what, k,
                      points);
            break;
        }
        if (sap_test_failures - f0 > 20) {
            printf("  %s: too many failures, sweep stopped at k = %ld\n", what, k);
            break;
        }
    }
    free(ref.out);
    sum->failures = sap_test_failures - f0;
    printf("  %-44s %-4s %-6s %-4s t%d %5ld allocations, %5ld runs (%ld errors, %ld absorbed)%s %.2f s\n", name,
           sum->backend, sum->side, sum->mode, sum->threads, points, sum->swept, sum->errors, sum->absorbed,
           sum->failures ? " FAILED" : "", sap_test_wtime() - t0);
    fflush(stdout);
}

static void sweep_modes(const char *name, sap_backend backend, int side, sweep_op op, const void *arg)
{
    sweep(name, backend, side, MODE_ONE, op, arg);
    sweep(name, backend, side, MODE_REST, op, arg);
}

/* ---- helpers ------------------------------------------------------------------------------- */

/* The reference matrices, on a plain context. */
static sap_context *plain;

/* A copy of B on ctx (not through B's context). */
static sap_csr *copy_to(sap_context *ctx, const sap_csr *B)
{
    sap_csr *A = NULL;
    if (sap_csr_from_arrays(ctx, B->nrows, B->ncols, B->rowptr, B->colind, B->val, &A) != SAP_OK) return NULL;
    return A;
}

static sap_csr *gen(const char *spec)
{
    sap_csr *A = NULL;
    sap_status st = sap_gen_spec(plain, spec, &A);
    CHECK_MSG(st == SAP_OK, "%s: %s", spec, sap_status_name(st));
    return A;
}

static void keep_out(run *r, const double *v, sap_int n, double tol)
{
    free(r->out);
    r->out = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!r->out) return;
    memcpy(r->out, v, sizeof(double) * (size_t)n);
    r->nout = n;
    r->tol = tol;
}

/* b = A x* with x* the parabola (host arrays, malloc). */
static void rhs(const sap_csr *A, double **b, double **x)
{
    const sap_int n = A->nrows;
    double *xs = malloc(sizeof(double) * (size_t)n);
    *b = malloc(sizeof(double) * (size_t)n);
    *x = calloc((size_t)n, sizeof(double));
    sap_gen_xstar(plain, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, *b);
    free(xs);
}

/* ---- reorderings --------------------------------------------------------------------------- */

typedef struct reorder_arg {
    const sap_csr *A;
    sap_reorder_options opt;
} reorder_arg;

static void check_reorder(run *r, const sap_reorder_result *res, const sap_csr *A)
{
    CHECK(res && res->A && res->A->nrows == A->nrows && res->A->nnz == A->nnz);
    if (!res || !res->A) return;
    heal(r); /* the checks allocate */
    CHECK_OK(r->ctx, sap_csr_check(res->A));
    CHECK_OK(r->ctx, sap_perm_check(r->ctx, res->n, res->row_perm));
    CHECK_OK(r->ctx, sap_perm_check(r->ctx, res->n, res->col_perm));
    /* the permutations and K are the result */
    const sap_int n = res->n;
    double *v = malloc(sizeof(double) * (size_t)(2 * n + 2));
    for (sap_int i = 0; i < n; i++) {
        v[i] = (double)res->row_perm[i];
        v[n + i] = (double)res->col_perm[i];
    }
    v[2 * n] = (double)res->K_drop;
    v[2 * n + 1] = (double)res->P;
    keep_out(r, v, 2 * n + 2, 0);
    free(v);
}

static void op_reorder(run *r, const void *argp)
{
    const reorder_arg *arg = argp;
    sap_csr *A = copy_to(r->ctx, arg->A);
    if (!A) return;
    arm(r);
    sap_reorder_result *res = NULL;
    if (STEP(r, sap_reorder(A, &arg->opt, &res)) >= 0) {
        check_reorder(r, res, A);
    } else {
        CHECK(res == NULL);
        sap_reorder_result_destroy(res);
        res = NULL;
        RETRY_OK(r, sap_reorder(A, &arg->opt, &res));
    }
    sap_reorder_result_destroy(res);
    sap_csr_destroy(A);
}

/* ---- the band solver ----------------------------------------------------------------------- */

typedef struct band_arg {
    const sap_csr *A;
    sap_band_options opt;
} band_arg;

static void op_band(run *r, const void *argp)
{
    const band_arg *arg = argp;
    sap_csr *A = copy_to(r->ctx, arg->A);
    if (!A) return;
    double *b, *x;
    rhs(A, &b, &x);
    arm(r);
    sap_band_solver *S = NULL;
    sap_band_stats bs;
    if (STEP(r, sap_band_solver_create(r->ctx, A, &arg->opt, &S)) < 0) {
        CHECK(S == NULL);
        RETRY_OK(r, sap_band_solver_create(r->ctx, A, &arg->opt, &S));
    } else if (STEP(r, sap_band_solver_setup(S)) < 0) {
        RETRY_OK(r, sap_band_solver_setup(S));
    }
    if (S && STEP(r, sap_band_solver_solve(S, b, x, &bs)) < 0) {
        memset(x, 0, sizeof(double) * (size_t)A->nrows);
        RETRY_OK(r, sap_band_solver_solve(S, b, x, &bs));
    }
    if (S) {
        const double res = sap_test_rel_residual(A, x, b);
        CHECK_MSG(res < 1e-8, "band %s k = %ld: residual %g", sap_band_method_name(arg->opt.method), r->k, res);
        keep_out(r, x, A->nrows, 1e-6);
    }
    sap_band_solver_destroy(S);
    sap_csr_destroy(A);
    free(b);
    free(x);
}

/* sap_band_solver_create_band: the tall-and-thin band arrays of arg->A */
static void op_band_arrays(run *r, const void *argp)
{
    const band_arg *arg = argp;
    const sap_csr *A = arg->A;
    const sap_int n = A->nrows, K = 4;
    double *band = calloc((size_t)(n * (2 * K + 1)), sizeof(double));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            band[(A->colind[p] - i + K) * n + i] = A->val[p];
    double *b, *x;
    rhs(A, &b, &x);
    arm(r);
    sap_band_solver *S = NULL;
    sap_band_stats bs;
    if (STEP(r, sap_band_solver_create_band(r->ctx, n, K, band, &arg->opt, &S)) < 0) {
        CHECK(S == NULL);
        RETRY_OK(r, sap_band_solver_create_band(r->ctx, n, K, band, &arg->opt, &S));
    }
    if (S && STEP(r, sap_band_solver_solve(S, b, x, &bs)) < 0) {
        memset(x, 0, sizeof(double) * (size_t)n);
        RETRY_OK(r, sap_band_solver_solve(S, b, x, &bs));
    }
    if (S) {
        const double res = sap_test_rel_residual(A, x, b);
        CHECK_MSG(res < 1e-8, "band arrays k = %ld: residual %g", r->k, res);
        keep_out(r, x, n, 1e-6);
    }
    sap_band_solver_destroy(S);
    free(band);
    free(b);
    free(x);
}

/* ---- Krylov methods with Jacobi ------------------------------------------------------------ */

typedef struct krylov_arg {
    const sap_csr *A;
    sap_krylov_options opt;
    const char *precond; /* NULL: jacobi */
} krylov_arg;

static void op_krylov(run *r, const void *argp)
{
    const krylov_arg *arg = argp;
    sap_csr *A = copy_to(r->ctx, arg->A);
    if (!A) return;
    double *b, *x;
    rhs(A, &b, &x);
    arm(r);
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_krylov_stats ks;
    if (STEP(r, sap_matrix_create(r->ctx, A, NULL, &M)) < 0) {
        CHECK(M == NULL);
        RETRY_OK(r, sap_matrix_create(r->ctx, A, NULL, &M));
    }
    const char *pc = arg->precond ? arg->precond : "jacobi";
    if (STEP(r, sap_precond_create(r->ctx, pc, &P)) < 0) {
        CHECK(P == NULL);
        RETRY_OK(r, sap_precond_create(r->ctx, pc, &P));
    }
    if (P && STEP(r, sap_precond_setup_numeric(P, A)) < 0) RETRY_OK(r, sap_precond_setup_numeric(P, A));
    if (STEP(r, sap_krylov_create(r->ctx, &arg->opt, &K)) < 0) {
        CHECK(K == NULL);
        RETRY_OK(r, sap_krylov_create(r->ctx, &arg->opt, &K));
    }
    if (M && P && K) {
        sap_status st = STEP(r, sap_krylov_solve(K, M, P, b, x, &ks));
        if (st < 0) {
            memset(x, 0, sizeof(double) * (size_t)A->nrows);
            RETRY_OK(r, st = sap_krylov_solve(K, M, P, b, x, &ks));
        }
        if (st >= 0) {
            const double res = sap_test_rel_residual(A, x, b);
            CHECK_MSG(st == SAP_OK && res < 1e-8, "krylov %s k = %ld: %s, residual %g", sap_krylov_name(arg->opt.type),
                      r->k, sap_status_name(st), res);
            keep_out(r, x, A->nrows, 1e-12);
        }
    }
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    sap_csr_destroy(A);
    free(b);
    free(x);
}

/* ---- preconditioners ----------------------------------------------------------------------- */

typedef struct precond_arg {
    const sap_csr *A;
    const char *name;
} precond_arg;

static void op_precond(run *r, const void *argp)
{
    const precond_arg *arg = argp;
    sap_csr *A = copy_to(r->ctx, arg->A);
    if (!A) return;
    const sap_int n = A->nrows;
    double *b, *z;
    rhs(A, &b, &z);
    arm(r);
    sap_precond *P = NULL;
    if (STEP(r, sap_precond_create(r->ctx, arg->name, &P)) < 0) {
        CHECK(P == NULL);
        RETRY_OK(r, sap_precond_create(r->ctx, arg->name, &P));
    }
    if (P && strncmp(arg->name, "sap", 3) == 0 && STEP(r, sap_precond_set_option(P, "partitions", "3")) < 0)
        RETRY_OK(r, sap_precond_set_option(P, "partitions", "3"));
    if (P) {
        if (STEP(r, sap_precond_setup_symbolic(P, A)) < 0) RETRY_OK(r, sap_precond_setup_symbolic(P, A));
        if (STEP(r, sap_precond_setup_numeric(P, A)) < 0) RETRY_OK(r, sap_precond_setup_numeric(P, A));
        sap_status st = STEP(r, sap_precond_apply(P, b, z));
        if (st < 0) RETRY_OK(r, st = sap_precond_apply(P, b, z));
        if (st >= 0) keep_out(r, z, n, 1e-12);
    }
    sap_precond_destroy(P);
    sap_csr_destroy(A);
    free(b);
    free(z);
}

/* ---- sap_solver ----------------------------------------------------------------------------- */

typedef struct solver_arg {
    const sap_csr *A;
    sap_solver_options opt;
    int what; /* 0: solve, 1: solve_many, 2: setup + solve + refactor + solve */
} solver_arg;

static void op_solver(run *r, const void *argp)
{
    const solver_arg *arg = argp;
    sap_csr *A = copy_to(r->ctx, arg->A);
    if (!A) return;
    const sap_int n = A->nrows;
    const sap_int nrhs = arg->what == 1 ? 3 : 1;
    double *B = malloc(sizeof(double) * (size_t)(n * nrhs)), *X = calloc((size_t)(n * nrhs), sizeof(double));
    double *xs = malloc(sizeof(double) * (size_t)n);
    for (sap_int c = 0; c < nrhs; c++) {
        sap_gen_xstar(plain, n, c == 0 ? SAP_XSTAR_PARABOLA : SAP_XSTAR_RANDOM, (uint64_t)c, xs);
        sap_csr_spmv(A, 1.0, xs, 0.0, B + c * n);
    }
    free(xs);
    double *vals2 = NULL;
    sap_csr *A2 = NULL;
    double *B2 = NULL;
    if (arg->what == 2) { /* the refactored system: A + diag(|a_ii|) */
        A2 = copy_to(plain, A);
        for (sap_int i = 0; i < n; i++)
            for (sap_int p = A2->rowptr[i]; p < A2->rowptr[i + 1]; p++)
                if (A2->colind[p] == i) A2->val[p] *= 2;
        vals2 = A2->val;
        B2 = malloc(sizeof(double) * (size_t)n);
        memcpy(B2, B, sizeof(double) * (size_t)n); /* any right-hand side */
    }
    arm(r);
    sap_solver *S = NULL;
    sap_status st = STEP(r, sap_solver_create(r->ctx, A, &arg->opt, &S));
    if (st < 0) {
        CHECK(S == NULL);
        RETRY_OK(r, st = sap_solver_create(r->ctx, A, &arg->opt, &S));
    }
    if (S && arg->what == 2 && STEP(r, sap_solver_setup(S)) < 0) RETRY_OK(r, sap_solver_setup(S));
    if (S) {
        if (arg->what == 1) {
            st = STEP(r, sap_solver_solve_many(S, nrhs, B, n, X, n));
            if (st < 0) {
                memset(X, 0, sizeof(double) * (size_t)(n * nrhs));
                RETRY_OK(r, st = sap_solver_solve_many(S, nrhs, B, n, X, n));
            }
        } else {
            st = STEP(r, sap_solver_solve(S, B, X));
            if (st < 0) {
                memset(X, 0, sizeof(double) * (size_t)n);
                RETRY_OK(r, st = sap_solver_solve(S, B, X));
            }
        }
        if (st >= 0)
            for (sap_int c = 0; c < nrhs; c++) {
                const double res = sap_test_rel_residual(A, X + c * n, B + c * n);
                CHECK_MSG(st == SAP_OK && res < 1e-8, "solver %s fallback %d, k = %ld: %s, residual %g (column %lld)",
                          sap_solver_method_name(arg->opt.method), arg->opt.fallback, r->k, sap_status_name(st), res,
                          (long long)c);
            }
    }
    if (S && arg->what == 2) {
        if (STEP(r, sap_solver_refactor(S, vals2)) < 0) RETRY_OK(r, sap_solver_refactor(S, vals2));
        memset(X, 0, sizeof(double) * (size_t)n);
        st = STEP(r, sap_solver_solve(S, B2, X));
        if (st < 0) {
            memset(X, 0, sizeof(double) * (size_t)n);
            RETRY_OK(r, st = sap_solver_solve(S, B2, X));
        }
        if (st >= 0) {
            const double res = sap_test_rel_residual(A2, X, B2);
            CHECK_MSG(st == SAP_OK && res < 1e-8, "solver %s refactor, k = %ld: %s, residual %g",
                      sap_solver_method_name(arg->opt.method), r->k, sap_status_name(st), res);
        }
    }
    sap_solver_destroy(S);
    sap_csr_destroy(A);
    sap_csr_destroy(A2);
    free(B);
    free(B2);
    free(X);
}

/* ---- generators, statistics, backend matrices ---------------------------------------------- */

static void keep_csr(run *r, const sap_csr *A)
{
    const sap_int m = A->nrows + 1 + 2 * A->nnz;
    double *v = malloc(sizeof(double) * (size_t)m);
    for (sap_int i = 0; i <= A->nrows; i++) v[i] = (double)A->rowptr[i];
    for (sap_int p = 0; p < A->nnz; p++) {
        v[A->nrows + 1 + p] = (double)A->colind[p];
        v[A->nrows + 1 + A->nnz + p] = A->val[p];
    }
    keep_out(r, v, m, 0);
    free(v);
}

static void op_gen(run *r, const void *argp)
{
    const char *spec = argp;
    arm(r);
    sap_csr *A = NULL;
    if (STEP(r, sap_gen_spec(r->ctx, spec, &A)) < 0) {
        CHECK(A == NULL);
        RETRY_OK(r, sap_gen_spec(r->ctx, spec, &A));
    }
    if (A) keep_csr(r, A);
    sap_csr_destroy(A);
}

static void op_stats(run *r, const void *argp)
{
    sap_csr *A = copy_to(r->ctx, argp);
    if (!A) return;
    arm(r);
    sap_matrix_stats s;
    sap_status st = STEP(r, sap_csr_stats(A, &s));
    if (st < 0) RETRY_OK(r, st = sap_csr_stats(A, &s));
    if (st >= 0) {
        const double v[] = {(double)s.half_bandwidth, (double)s.structurally_symmetric, (double)s.numerically_symmetric,
                            s.symmetry_deviation,     (double)s.zero_diagonal,          s.diag_dominance,
                            (double)s.dominant_rows,  s.norm_one,                       s.norm_fro,
                            s.mean_row_width,         (double)s.spd_estimate};
        keep_out(r, v, (sap_int)(sizeof(v) / sizeof(v[0])), 0);
    }
    sap_csr_destroy(A);
}

typedef struct matrix_arg {
    const sap_csr *A;
    sap_matrix_options opt;
} matrix_arg;

static void op_matrix(run *r, const void *argp)
{
    const matrix_arg *arg = argp;
    sap_csr *A = copy_to(r->ctx, arg->A);
    if (!A) return;
    double *x, *y;
    rhs(A, &x, &y);
    arm(r);
    sap_matrix *M = NULL;
    if (STEP(r, sap_matrix_create(r->ctx, A, &arg->opt, &M)) < 0) {
        CHECK(M == NULL);
        RETRY_OK(r, sap_matrix_create(r->ctx, A, &arg->opt, &M));
    }
    if (M) {
        sap_status st = STEP(r, sap_matrix_spmv(M, 1.0, x, 0.0, y));
        if (st < 0) RETRY_OK(r, st = sap_matrix_spmv(M, 1.0, x, 0.0, y));
        if (st >= 0) keep_out(r, y, A->nrows, 0);
    }
    sap_matrix_destroy(M);
    sap_csr_destroy(A);
    free(x);
    free(y);
}

/* ---- the sweeps ---------------------------------------------------------------------------- */

static void sweeps_reorder(void)
{
    sap_csr *A = gen("gen:synthetic:n=120,k=5,d=0.8,fill=0.5,seed=3");
    if (!A) return;
    reorder_arg ra = {A, {0}};
    sap_reorder_options_init(&ra.opt);
    ra.opt.drop_delta = 0.99;
    ra.opt.partitions = 3;
    sweep_modes("sap_reorder DB+scale+CM+drop+third", SAP_BACKEND_CPU, SIDE_HOST, op_reorder, &ra);
    ra.opt.db = SAP_DB_TRANSVERSAL;
    ra.opt.cm_flags = SAP_CM_FORCE_RCM;
    ra.opt.drop_delta = 1;
    ra.opt.partitions = 1;
    ra.opt.stats = 0;
    sweep_modes("sap_reorder transversal+RCM", SAP_BACKEND_CPU, SIDE_HOST, op_reorder, &ra);
    sap_csr_destroy(A);
}

static void sweeps_band(sap_backend backend, int side, int both_modes)
{
    sap_csr *A = gen("gen:banded:n=240,k=4,d=0.6,seed=5");
    if (!A) return;
    static const sap_band_method methods[] = {SAP_BAND_SAPD, SAP_BAND_SAPC, SAP_BAND_DIRECT};
    for (int m = 0; m < 3; m++) {
        band_arg ba = {A, {0}};
        sap_band_options_init(&ba.opt);
        ba.opt.method = methods[m];
        ba.opt.partitions = methods[m] == SAP_BAND_DIRECT ? 1 : 3;
        char name[96];
        snprintf(name, sizeof(name), "sap_band_solver %s", sap_band_method_name(methods[m]));
        if (both_modes) sweep_modes(name, backend, side, op_band, &ba);
        else sweep(name, backend, side, MODE_ONE, op_band, &ba);
        if (backend == SAP_BACKEND_CPU && methods[m] != SAP_BAND_SAPD) {
            snprintf(name, sizeof(name), "sap_band_solver_create_band %s", sap_band_method_name(methods[m]));
            if (both_modes) sweep_modes(name, backend, side, op_band_arrays, &ba);
            else sweep(name, backend, side, MODE_ONE, op_band_arrays, &ba);
        }
    }
    sap_csr_destroy(A);
}

static void sweeps_krylov(sap_backend backend, int side, int both_modes)
{
    sap_csr *A = gen("gen:poisson2d:n=10");
    if (!A) return;
    for (int i = 0; i < sap_krylov_method_count(); i++) {
        krylov_arg ka = {A, {0}, NULL};
        sap_krylov_options_init(&ka.opt);
        CHECK_OK(plain, sap_krylov_parse(sap_krylov_method_name(i), &ka.opt.type, &ka.opt.param));
        ka.opt.tol = 1e-11;
        char name[96];
        snprintf(name, sizeof(name), "sap_krylov_solve %s + jacobi", sap_krylov_method_name(i));
        if (both_modes) sweep_modes(name, backend, side, op_krylov, &ka);
        else sweep(name, backend, side, MODE_ONE, op_krylov, &ka);
    }
    /* a banded preconditioner inside the iteration (float factors: the conversions) */
    krylov_arg ka = {A, {0}, "sap-c"};
    sap_krylov_options_init(&ka.opt);
    ka.opt.tol = 1e-11;
    if (both_modes) sweep_modes("sap_krylov_solve bicgstabl + sap-c", backend, side, op_krylov, &ka);
    else sweep("sap_krylov_solve bicgstabl + sap-c", backend, side, MODE_ONE, op_krylov, &ka);
    sap_csr_destroy(A);
}

static void sweeps_precond(void)
{
    sap_csr *A = gen("gen:banded:n=200,k=3,d=1.2,seed=7");
    if (!A) return;
    for (int i = 0; i < sap_precond_type_count(); i++) {
        precond_arg pa = {A, sap_precond_type_name(i)};
        char name[96];
        snprintf(name, sizeof(name), "sap_precond %s setup+apply", pa.name);
        sweep_modes(name, SAP_BACKEND_CPU, SIDE_HOST, op_precond, &pa);
    }
    sap_csr_destroy(A);
}

static void sweeps_solver(void)
{
    /* nonsymmetric, DB and CM have work to do; P = 2 for SaP-D / SaP-C */
    sap_csr *A = gen("gen:synthetic:n=160,k=4,d=1.1,fill=0.7,seed=11");
    if (!A) return;
    for (int m = 0; m < sap_solver_method_count(); m++)
        for (int fb = 1; fb >= 0; fb--) {
            if (m == SAP_METHOD_AUTO && fb == 0) continue;
            solver_arg sa = {A, {0}, 0};
            sap_solver_options_init(&sa.opt);
            sa.opt.method = (sap_solver_method)m;
            sa.opt.fallback = fb;
            if (m != SAP_METHOD_AUTO) sa.opt.partitions = m == SAP_METHOD_SAPD || m == SAP_METHOD_SAPC ? 2 : 0;
            /* a forced method that cannot run here (not compiled, too small) is not swept */
            {
                sap_solver *S = NULL;
                double *b, *x;
                rhs(A, &b, &x);
                sap_status st = sap_solver_create(plain, A, &sa.opt, &S);
                if (st >= 0) st = sap_solver_solve(S, b, x);
                sap_solver_destroy(S);
                free(b);
                free(x);
                if (st != SAP_OK) {
                    printf("  sap_solver %s fallback %d: %s without failures, not swept (%s)\n",
                           sap_solver_method_name((sap_solver_method)m), fb, sap_status_name(st),
                           sap_context_last_error(plain));
                    continue;
                }
            }
            char name[96];
            snprintf(name, sizeof(name), "sap_solver %s fallback=%d", sap_solver_method_name((sap_solver_method)m), fb);
            sweep_modes(name, SAP_BACKEND_CPU, SIDE_HOST, op_solver, &sa);
        }
    /* auto without the direct solve: SaP first */
    solver_arg sa = {A, {0}, 0};
    sap_solver_options_init(&sa.opt);
    sa.opt.host_direct = 0;
    sweep_modes("sap_solver auto host_direct=0", SAP_BACKEND_CPU, SIDE_HOST, op_solver, &sa);
    /* drop-off and the third stage with P = 3, float factors */
    sa.opt.drop_delta = 0.95;
    sa.opt.third_stage = 1;
    sa.opt.partitions = 3;
    sa.opt.factor_precision = SAP_FLOAT;
    sweep_modes("sap_solver auto drop+third stage+float", SAP_BACKEND_CPU, SIDE_HOST, op_solver, &sa);
    sap_solver_options_init(&sa.opt);
    sa.opt.host_direct = 0;
    sa.what = 1;
    sweep_modes("sap_solver_solve_many auto (3 rhs)", SAP_BACKEND_CPU, SIDE_HOST, op_solver, &sa);
    sa.what = 2;
    sweep_modes("sap_solver_refactor auto host_direct=0", SAP_BACKEND_CPU, SIDE_HOST, op_solver, &sa);
    sap_solver_options_init(&sa.opt);
    sweep_modes("sap_solver_refactor auto", SAP_BACKEND_CPU, SIDE_HOST, op_solver, &sa);
    sap_csr_destroy(A);
    /* SPD: no DB, SaP-D with CG */
    A = gen("gen:poisson2d:n=12");
    if (!A) return;
    solver_arg sp = {A, {0}, 0};
    sap_solver_options_init(&sp.opt);
    sp.opt.host_direct = 0;
    sweep_modes("sap_solver auto SPD host_direct=0", SAP_BACKEND_CPU, SIDE_HOST, op_solver, &sp);
    sap_csr_destroy(A);
}

static void sweeps_gen_stats_matrix(void)
{
    static const char *const specs[] = {"gen:banded:n=60,k=3,sym=1", "gen:synthetic:n=60,k=3,fill=0.5",
                                        "gen:poisson2d:n=7",         "gen:poisson3d:n=4",
                                        "gen:radiative:n=50",        "gen:blocktridiag:nb=5,k=4",
                                        "gen:elasticity3d:n=3"};
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        char name[96];
        snprintf(name, sizeof(name), "sap_gen_spec %s", specs[i]);
        sweep_modes(name, SAP_BACKEND_CPU, SIDE_HOST, op_gen, specs[i]);
    }
    sap_csr *A = gen("gen:synthetic:n=100,k=4,fill=0.6,seed=2");
    if (!A) return;
    sweep_modes("sap_csr_stats", SAP_BACKEND_CPU, SIDE_HOST, op_stats, A);
    static const sap_spmv_format formats[] = {SAP_FORMAT_AUTO, SAP_FORMAT_CSR,  SAP_FORMAT_ELL,
                                              SAP_FORMAT_SELLP, SAP_FORMAT_HEC, SAP_FORMAT_BAND};
    sap_csr *Ab = gen("gen:banded:n=100,k=4,seed=2");
    for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++)
        for (int p = 0; p < 2; p++) {
            matrix_arg ma = {formats[f] == SAP_FORMAT_BAND ? Ab : A, {0}};
            sap_matrix_options_init(&ma.opt);
            ma.opt.format = formats[f];
            ma.opt.precision = p ? SAP_FLOAT : SAP_DOUBLE;
            char name[96];
            snprintf(name, sizeof(name), "sap_matrix_create %s %s + spmv", sap_spmv_format_name(formats[f]),
                     p ? "float" : "double");
            sweep_modes(name, SAP_BACKEND_CPU, SIDE_HOST, op_matrix, &ma);
        }
    sap_csr_destroy(A);
    sap_csr_destroy(Ab);
}

static void print_summary(const char *title)
{
    long points = 0, runs = 0;
    int bad = 0;
    for (int i = 0; i < nsummary; i++) {
        points += summary[i].points;
        runs += summary[i].swept;
        bad += summary[i].failures > 0;
    }
    printf("%s: %d sweeps, %ld allocation points, %ld runs, %d sweeps with failures (%s)\n", title, nsummary, points,
           runs, bad, full ? "full: every k" : "reduced: every k < 150, then every 7th / 23rd");
    if (!full) return;
    printf("\n| module / run | backend | side | mode | threads | allocations | runs | OOM errors | absorbed | result |\n");
    printf("|---|---|---|---|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < nsummary; i++)
        printf("| %s | %s | %s | %s | %s | %ld | %ld | %ld | %ld | %s |\n", summary[i].name, summary[i].backend,
               summary[i].side, summary[i].mode, summary[i].threads ? "1" : "default", summary[i].points, summary[i].swept, summary[i].errors,
               summary[i].absorbed, summary[i].failures ? "FAILED" : "survived");
}

static void read_env(void)
{
    const char *f = getenv("SAP_SWEEP_FULL");
    full = f && f[0] == '1';
}

static int cpu_part(void)
{
    read_env();
    plain = sap_test_context(SAP_BACKEND_CPU);
    if (!plain) return 1;
    sap_context_set_threads(plain, 1); /* no OpenMP team spinning between the runs */
    const double t0 = sap_test_wtime();
    for (int t = 0; t < (full ? 2 : 1); t++) {
        sweep_threads = t == 0 ? 1 : 0;
        sweeps_reorder();
        sweeps_band(SAP_BACKEND_CPU, SIDE_HOST, 1);
        sweeps_krylov(SAP_BACKEND_CPU, SIDE_HOST, 1);
        sweeps_precond();
        sweeps_solver();
        sweeps_gen_stats_matrix();
    }
    print_summary("host sweeps");
    printf("time %.1f s\n", sap_test_wtime() - t0);
    sap_context_destroy(plain);
    return 0;
}

/* ---- GPU part ------------------------------------------------------------------------------ */

#ifdef SAP_HAVE_CUDA
/* The device pool holds cached blocks when a device allocation fails: the matrix creation
 * either succeeds (the pool gave its cache back and tried again) or fails with
 * SAP_ERR_OUT_OF_MEMORY, and the context stays usable. */
static void pool_check(sap_backend backend, int mode)
{
    sweep_alloc a;
    memset(&a, 0, sizeof(a));
    a.side = SIDE_DEVICE;
    a.mode = mode;
    sap_context *ctx = sweep_context(backend, &a);
    if (!ctx) {
        CHECK(0);
        return;
    }
    sap_csr *A = NULL, *B = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 30, 30, &A));
    CHECK_OK(ctx, sap_gen_banded(ctx, 500, 3, 1.0, 0, 1, &B));
    double *x = NULL, *y = NULL;
    rhs(B, &x, &y);
    sap_matrix *M = NULL;
    /* fill the pool's cache */
    CHECK_OK(ctx, sap_matrix_create(ctx, A, NULL, &M));
    sap_matrix_destroy(M);
    M = NULL;
    for (long k = 0; k < 64; k++) {
        a.c[SIDE_DEVICE].count = 0;
        a.c[SIDE_DEVICE].failed = 0;
        a.c[SIDE_DEVICE].fail_at = k;
        sap_status st = sap_matrix_create(ctx, B, NULL, &M);
        a.c[SIDE_DEVICE].fail_at = -1;
        const long failed = a.c[SIDE_DEVICE].failed;
        if (st < 0) {
            CHECK_MSG(st == SAP_ERR_OUT_OF_MEMORY, "pool, k = %ld: %s (%s)", k, sap_status_name(st),
                      sap_context_last_error(ctx));
            CHECK(strstr(sap_context_last_error(ctx), "device memory") != NULL);
            CHECK(M == NULL);
        }
        /* usable: a matrix and a product */
        if (!M) CHECK_OK(ctx, sap_matrix_create(ctx, B, NULL, &M));
        if (M) {
            CHECK_OK(ctx, sap_matrix_spmv(M, 1.0, x, 0.0, y));
            const double res = sap_test_rel_residual(B, x, y);
            CHECK_MSG(res < 1e-14, "pool, k = %ld: spmv residual %g", k, res);
        }
        sap_matrix_destroy(M);
        M = NULL;
        /* the cache holds blocks again for the next k */
        CHECK_OK(ctx, sap_matrix_create(ctx, A, NULL, &M));
        sap_matrix_destroy(M);
        M = NULL;
        if (!failed) break;
    }
    free(x);
    free(y);
    sap_csr_destroy(A);
    sap_csr_destroy(B);
    sap_context_destroy(ctx);
    CHECK_MSG(a.c[SIDE_DEVICE].live == 0 && a.c[SIDE_HOST].live == 0, "pool check: %ld device, %ld host blocks left",
              a.c[SIDE_DEVICE].live, a.c[SIDE_HOST].live);
}
#endif

static int gpu_part(void)
{
    read_env();
    int dryrun = 0;
    sap_context *G = NULL;
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, &dryrun);
    if (rc) return rc;
    const sap_backend backend = sap_context_backend(G);
    sap_context_destroy(G);
    plain = sap_test_context(SAP_BACKEND_CPU);
    if (!plain) return 1;
    sap_context_set_threads(plain, 1); /* no OpenMP team spinning between the runs */
    const double t0 = sap_test_wtime();
    /* racecheck (sap_test_tiny): the device side, one failure mode (the kernels are the
     * other programs'; what runs here is the error paths) */
    const int tiny = sap_test_tiny();
    for (int side = SIDE_DEVICE; side >= (tiny ? SIDE_DEVICE : SIDE_HOST); side--) {
        sweeps_band(backend, side, side == SIDE_DEVICE && !tiny);
        sweeps_krylov(backend, side, side == SIDE_DEVICE && !tiny);
        sap_csr *A = gen("gen:synthetic:n=300,k=5,d=1.1,fill=0.7,seed=11");
        if (A) {
            solver_arg sa = {A, {0}, 0};
            sap_solver_options_init(&sa.opt);
            sa.opt.host_small = 0; /* on the device */
            if (side == SIDE_DEVICE && !tiny) sweep_modes("sap_solver auto host_small=0", backend, side, op_solver, &sa);
            else sweep("sap_solver auto host_small=0", backend, side, MODE_ONE, op_solver, &sa);
            sap_csr_destroy(A);
        }
    }
#ifdef SAP_HAVE_CUDA
    pool_check(backend, MODE_ONE);
    if (!tiny) pool_check(backend, MODE_REST);
#endif
    print_summary("device and host sweeps on the gpu backend");
    printf("time %.1f s\n", sap_test_wtime() - t0);
    sap_context_destroy(plain);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_alloc_sweep", cpu_part, gpu_part); }
