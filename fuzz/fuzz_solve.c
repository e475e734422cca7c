/* fuzz_solve.c -- whole solves on tiny fuzzed matrices: the sparse SaP pipeline
 * (sap_solver_*) with a fuzzed method and options, and one Krylov method (sap_krylov_solve,
 * then sap_krylov_solve_many on three columns: the lockstep forms) with a fuzzed
 * preconditioner.
 *
 * Input layout (fuzz/corpus/fuzz_solve/ has examples as .hex text, which fuzz/run.sh turns
 * into bytes):
 *   h[0]  n = 1 + h[0] % 64; bit6: the band LU kernels forced blocked (SAP_BAND_FACTOR=blocked,
 *         the automatic choice takes them only from K = 32 / 80 on)
 *   h[1]  solver method (% 6: auto, sap-d, sap-c, band-lu, band-pivot, jacobi)
 *   h[2]  solver flags: bit0 fallback, bits1-2 db (auto/none/product/transversal),
 *         bit3 float factors, bit4 no CM, bit5 host_direct off, bit6 third stage, bit7 scale
 *   h[3]  low nibble: partitions (% 9, 0 = auto); high nibble: drop-off (0 auto, else
 *         1 - 10^-k, 15 none)
 *   h[4]  Krylov method (% sap_krylov_method_count()), parameter (h[4] >> 3) % 9
 *   h[5]  preconditioner type (% sap_precond_type_count()), bit7 float
 *   h[6]  bit0 refactor, bit1 the refactor values hold a NaN, bit2 two right-hand sides,
 *         bit3 nonzero initial guess, bits4-5 rhs (ones, A*ones, zero, e_1), bit6 left
 *         preconditioning, bit7 krylov_auto off
 *   h[7]  L = h[7] % 48: the next L bytes are the preconditioner's option list
 *         (sap_precond_set_options, e.g. "partitions=2,K=3"; errors are fine)
 *   then entries of 4 bytes (i, j, kind, aux), at most 512: value by kind % 8: 0 zero,
 *   1 aux - 128, 2 NaN, 3 +-Inf (aux sign), 4 a denormal, 5 the next 8 bytes as a double,
 *   6 1 + aux / 256, 7 +-1e300.  Repeated (i, j) are summed.
 *
 * Invariants: NaN/Inf in A is SAP_ERR_NONFINITE at sap_solver_create; a status >= 0 from a
 * solve gives a finite x; SAP_OK from sap_krylov_solve (or for a column of
 * sap_krylov_solve_many, whose status is then >= 0 for every column) means
 * stats.true_residual <= tol;
 * SAP_OK from either means a small backward error ||b - Ax|| / (||A|| ||x|| + ||b||);
 * every error leaves a message; nothing leaks.  maxit is small (20), so every input runs in milliseconds. */
#include "fuzz_common.h"

#define FUZZ_SOLVE_BUDGET ((size_t)64 << 20)
#define FUZZ_SOLVE_MAXN 64
#define FUZZ_SOLVE_MAXNNZ 512
#define FUZZ_SOLVE_MAXIT 20

typedef struct fuzz_reader {
    const uint8_t *p;
    size_t left;
} fuzz_reader;

static int fuzz_take(fuzz_reader *r, void *out, size_t n)
{
    if (r->left < n) return 0;
    memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
    return 1;
}

static double fuzz_value(fuzz_reader *r, uint8_t kind, uint8_t aux)
{
    switch (kind % 8) {
    case 0: return 0.0;
    case 1: return (double)aux - 128.0;
    case 2: return NAN;
    case 3: return aux & 1 ? -INFINITY : INFINITY;
    case 4: return (aux & 1 ? -1.0 : 1.0) * 4.9406564584124654e-324 * (1 + aux);
    case 5: {
        double v = 0;
        if (!fuzz_take(r, &v, sizeof(v))) return 1.0;
        return v;
    }
    case 6: return 1.0 + aux / 256.0;
    default: return aux & 1 ? -1e300 : 1e300;
    }
}

static int fuzz_all_finite(const double *v, sap_int n)
{
    for (sap_int i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

/* The normwise backward error ||b - A x|| / (||A|| ||x|| + ||b||) (infinity norms, long
 * double; inf when anything overflows).  A converged solve has one near tol or below: the
 * library's ||b - A x|| / ||b|| <= tol, computed in double, differs from the exact residual
 * by about n eps ||A|| ||x||, which is why the check is on the backward error (an x
 * of 1e307 from a 1e-308 pivot has a relative residual far above tol in any exact
 * arithmetic, and is still the best double answer). */
static double fuzz_backward_error(const sap_csr *A, const double *b, const double *x)
{
    long double rmax = 0, amax = 0, xmax = 0, bmax = 0;
    for (sap_int i = 0; i < A->nrows; i++) {
        long double s = b[i], arow = 0;
        for (sap_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            s -= (long double)A->val[k] * x[A->colind[k]];
            arow += fabsl((long double)A->val[k]);
        }
        rmax = fmaxl(rmax, fabsl(s));
        amax = fmaxl(amax, arow);
        xmax = fmaxl(xmax, fabsl((long double)x[i]));
        bmax = fmaxl(bmax, fabsl((long double)b[i]));
    }
    long double den = amax * xmax + bmax;
    if (den == 0) return rmax == 0 ? 0 : INFINITY;
    return (double)(rmax / den);
}

/* A finite x from a status >= 0; a converged one solves the system (backward error). */
static void fuzz_check_x(const sap_csr *A, const double *b, const double *x, sap_status st, double tol,
                         const char *what)
{
    if (st < 0) return;
    FUZZ_CHECK(fuzz_all_finite(x, A->nrows), "%s returned %s with a non-finite x", what, sap_status_name(st));
    if (st == SAP_OK && fuzz_all_finite(b, A->nrows)) {
        double be = fuzz_backward_error(A, b, x);
        FUZZ_CHECK(!(be > 1e3 * tol + 1e-6), "%s returned SAP_OK with a backward error of %g", what, be);
    }
}

static void fuzz_solver_path(sap_context *ctx, const sap_csr *A, const uint8_t *h, const double *b, const double *x0,
                             int nonfinite)
{
    sap_int n = A->nrows;
    sap_solver_options o;
    sap_solver_options_init(&o);
    static const char *const methods[] = {"auto", "sap-d", "sap-c", "band-lu", "band-pivot", "jacobi"};
    static const char *const dbs[] = {"auto", "none", "product", "transversal"};
    char buf[64];
    FUZZ_CHECK(sap_solver_options_set(&o, "method", methods[h[1] % 6]) == SAP_OK, "method");
    FUZZ_CHECK(sap_solver_options_set(&o, "fallback", h[2] & 1 ? "1" : "0") == SAP_OK, "fallback");
    FUZZ_CHECK(sap_solver_options_set(&o, "db", dbs[(h[2] >> 1) & 3]) == SAP_OK, "db");
    FUZZ_CHECK(sap_solver_options_set(&o, "precision", h[2] & 8 ? "float" : "double") == SAP_OK, "precision");
    if (h[2] & 16) FUZZ_CHECK(sap_solver_options_set(&o, "cm", "0") == SAP_OK, "cm");
    if (h[2] & 32) FUZZ_CHECK(sap_solver_options_set(&o, "host_direct", "0") == SAP_OK, "host_direct");
    FUZZ_CHECK(sap_solver_options_set(&o, "third_stage", h[2] & 64 ? "1" : "auto") == SAP_OK, "third_stage");
    FUZZ_CHECK(sap_solver_options_set(&o, "scale", h[2] & 128 ? "1" : "auto") == SAP_OK, "scale");
    snprintf(buf, sizeof(buf), "%d", (h[3] & 15) % 9);
    FUZZ_CHECK(sap_solver_options_set(&o, "partitions", buf) == SAP_OK, "partitions");
    int drop = h[3] >> 4;
    if (drop == 15) FUZZ_CHECK(sap_solver_options_set(&o, "drop", "none") == SAP_OK, "drop");
    else if (drop) {
        snprintf(buf, sizeof(buf), "%.17g", 1.0 - pow(10.0, -drop));
        FUZZ_CHECK(sap_solver_options_set(&o, "drop", buf) == SAP_OK, "drop %s", buf);
    }
    FUZZ_CHECK(sap_solver_options_set(&o, "maxit", "20") == SAP_OK, "maxit");
    FUZZ_CHECK(sap_solver_options_set(&o, "tol", "1e-8") == SAP_OK, "tol");
    FUZZ_CHECK(sap_solver_options_set(&o, "memory_limit", "16M") == SAP_OK, "memory_limit");
    if (h[6] & 128) {
        const char *kname = sap_krylov_method_name(h[4] % sap_krylov_method_count());
        FUZZ_CHECK(sap_solver_options_set(&o, "krylov", kname) == SAP_OK, "krylov %s", kname);
    }

    sap_solver *S = NULL;
    sap_status st = sap_solver_create(ctx, A, &o, &S);
    fuzz_check_error(ctx, st, "sap_solver_create");
    if (nonfinite)
        /* (bad options, e.g. more partitions than rows, may be reported first) */
        FUZZ_CHECK(st == SAP_ERR_NONFINITE || st == SAP_ERR_INVALID || st == SAP_ERR_OUT_OF_MEMORY,
                   "sap_solver_create of a matrix with NaN/Inf: %s (%s)", sap_status_name(st),
                   sap_context_last_error(ctx));
    if (st < 0) {
        FUZZ_CHECK(S == NULL, "sap_solver_create failed (%s) but left a solver", sap_status_name(st));
        return;
    }
    st = sap_solver_setup(S);
    fuzz_check_error(ctx, st, "sap_solver_setup");
    double *x = (double *)malloc(2 * (size_t)n * sizeof(double));
    double *bb = (double *)malloc(2 * (size_t)n * sizeof(double));
    memcpy(x, x0, (size_t)n * sizeof(double));
    if (st >= 0) {
        st = sap_solver_solve(S, b, x);
        fuzz_check_error(ctx, st, "sap_solver_solve");
        fuzz_check_x(A, b, x, st, 1e-8, "sap_solver_solve");
        sap_solver_stats ss;
        FUZZ_CHECK(sap_solver_get_stats(S, &ss) == SAP_OK, "sap_solver_get_stats");
        FUZZ_CHECK(ss.ntries >= 0 && ss.ntries <= SAP_SOLVER_MAX_TRIES, "ntries %d", ss.ntries);
    }
    if (h[6] & 1) {
        /* new values on the same pattern: A scaled by 2 (the solution halves) */
        double *v = (double *)malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof(double));
        for (sap_int k = 0; k < A->nnz; k++) v[k] = 2 * A->val[k];
        if ((h[6] & 2) && A->nnz) v[A->nnz / 2] = NAN;
        sap_status sr = sap_solver_refactor(S, v);
        fuzz_check_error(ctx, sr, "sap_solver_refactor");
        if ((h[6] & 2) && A->nnz)
            FUZZ_CHECK(sr == SAP_ERR_NONFINITE, "sap_solver_refactor with a NaN value: %s", sap_status_name(sr));
        free(v);
        if (sr >= 0) {
            memcpy(x, x0, (size_t)n * sizeof(double));
            st = sap_solver_solve(S, b, x);
            fuzz_check_error(ctx, st, "sap_solver_solve after refactor");
            if (st >= 0) FUZZ_CHECK(fuzz_all_finite(x, n), "solve after refactor: %s, non-finite x", sap_status_name(st));
        }
    }
    if (h[6] & 4) {
        memcpy(bb, b, (size_t)n * sizeof(double));
        memcpy(bb + n, b, (size_t)n * sizeof(double));
        memset(x, 0, 2 * (size_t)n * sizeof(double));
        st = sap_solver_solve_many(S, 2, bb, n, x, n);
        fuzz_check_error(ctx, st, "sap_solver_solve_many");
        if (st >= 0)
            FUZZ_CHECK(fuzz_all_finite(x, 2 * n), "sap_solver_solve_many: %s, non-finite x", sap_status_name(st));
    }
    free(x);
    free(bb);
    sap_solver_destroy(S);
}

static void fuzz_krylov_path(sap_context *ctx, const sap_csr *A, const uint8_t *h, const char *pc_opts,
                             const double *b, const double *x0)
{
    sap_int n = A->nrows;
    sap_matrix *M = NULL;
    sap_status st = sap_matrix_create(ctx, A, NULL, &M);
    fuzz_check_error(ctx, st, "sap_matrix_create");
    if (st < 0) return;
    const char *pname = sap_precond_type_name(h[5] % sap_precond_type_count());
    sap_precond *P = NULL;
    st = sap_precond_create(ctx, pname, &P);
    fuzz_check_error(ctx, st, "sap_precond_create");
    int pc_ok = 0;
    if (st >= 0) {
        sap_status so = sap_precond_set_options(P, pc_opts);
        fuzz_check_error(ctx, so, "sap_precond_set_options");
        if (h[5] & 128) FUZZ_CHECK(sap_precond_set_precision(P, SAP_FLOAT) == SAP_OK, "set_precision");
        st = sap_precond_setup_numeric(P, A);
        fuzz_check_error(ctx, st, "sap_precond_setup_numeric");
        pc_ok = st >= 0;
        if (pc_ok) {
            double *z = (double *)malloc((size_t)n * sizeof(double));
            st = sap_precond_apply(P, b, z);
            fuzz_check_error(ctx, st, "sap_precond_apply");
            free(z);
        }
        char rep[2048];
        FUZZ_CHECK(sap_precond_report(P, h[5] & 1, rep, sizeof(rep)) == SAP_OK, "sap_precond_report");
    }
    sap_krylov_options ko;
    sap_krylov_options_init(&ko);
    int nk = sap_krylov_method_count();
    sap_krylov_type kt;
    int kp;
    FUZZ_CHECK(sap_krylov_parse(sap_krylov_method_name(h[4] % nk), &kt, &kp) == SAP_OK, "krylov parse");
    ko.type = kt;
    ko.param = (h[4] >> 3) % 9;
    ko.maxit = FUZZ_SOLVE_MAXIT;
    ko.tol = 1e-8;
    ko.side = h[6] & 64 ? SAP_PRECOND_LEFT : SAP_PRECOND_RIGHT;
    ko.stagnation_window = h[6] & 8 ? 5 : 0;
    sap_krylov *K = NULL;
    st = sap_krylov_create(ctx, &ko, &K);
    fuzz_check_error(ctx, st, "sap_krylov_create");
    if (st >= 0) {
        double *x = (double *)malloc((size_t)n * sizeof(double));
        memcpy(x, x0, (size_t)n * sizeof(double));
        sap_krylov_stats ks;
        st = sap_krylov_solve(K, M, pc_ok ? P : NULL, b, x, &ks);
        fuzz_check_error(ctx, st, "sap_krylov_solve");
        FUZZ_CHECK(ks.status == st, "stats.status %s, returned %s", sap_status_name(ks.status), sap_status_name(st));
        if (st == SAP_OK)
            FUZZ_CHECK(ks.true_residual <= ko.tol, "%s: SAP_OK with true residual %g > tol",
                       sap_krylov_name(kt), ks.true_residual);
        fuzz_check_x(A, b, x, st, ko.tol, sap_krylov_name(kt));
        FUZZ_CHECK(ks.history_length >= 0, "history length %lld", (long long)ks.history_length);
        free(x);
        /* three columns at once (the lockstep forms): b, -2 b and 0 from x0, 0 and x0; each
         * column's status holds as the single solve's, the returned one is the worst */
        const sap_int k = 3;
        double *B = (double *)malloc((size_t)(k * n) * sizeof(double));
        double *X = (double *)malloc((size_t)(k * n) * sizeof(double));
        sap_krylov_stats kk[3];
        for (sap_int i = 0; i < n; i++) {
            B[i] = b[i], B[n + i] = -2.0 * b[i], B[2 * n + i] = 0.0;
            X[i] = x0[i], X[n + i] = 0.0, X[2 * n + i] = x0[i];
        }
        st = sap_krylov_solve_many(K, M, pc_ok ? P : NULL, k, B, n, X, n, kk);
        fuzz_check_error(ctx, st, "sap_krylov_solve_many");
        for (sap_int c = 0; c < k && st >= 0; c++) {
            FUZZ_CHECK(kk[c].status >= 0, "sap_krylov_solve_many returned %s with column %lld at %s",
                       sap_status_name(st), (long long)c, sap_status_name(kk[c].status));
            if (kk[c].status == SAP_OK)
                FUZZ_CHECK(kk[c].true_residual <= ko.tol, "%s many, column %lld: SAP_OK with true residual %g > tol",
                           sap_krylov_name(kt), (long long)c, kk[c].true_residual);
            fuzz_check_x(A, B + c * n, X + c * n, kk[c].status, ko.tol, sap_krylov_name(kt));
        }
        free(B);
        free(X);
    }
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
}

int sap_fuzz_solve(const uint8_t *data, size_t size)
{
    uint8_t h[8];
    fuzz_reader r = {data, size};
    if (!fuzz_take(&r, h, sizeof(h))) return 0;
    sap_int n = 1 + h[0] % FUZZ_SOLVE_MAXN;
    if (h[0] & 64) setenv("SAP_BAND_FACTOR", "blocked", 1);
    else unsetenv("SAP_BAND_FACTOR");
    char pc_opts[64];
    size_t L = h[7] % 48;
    if (L > r.left) L = r.left;
    memcpy(pc_opts, r.p, L);
    pc_opts[L] = '\0';
    r.p += L;
    r.left -= L;

    fuzz_budget budget;
    sap_context *ctx = fuzz_context(&budget, FUZZ_SOLVE_BUDGET);
    sap_coo *C = NULL;
    FUZZ_CHECK(sap_coo_create(ctx, n, n, 16, &C) == SAP_OK, "sap_coo_create");
    uint8_t e[4];
    for (int k = 0; k < FUZZ_SOLVE_MAXNNZ && fuzz_take(&r, e, 4); k++) {
        double v = fuzz_value(&r, e[2], e[3]);
        FUZZ_CHECK(sap_coo_push(C, e[0] % n, e[1] % n, v) == SAP_OK, "sap_coo_push");
    }
    sap_csr *A = NULL;
    FUZZ_CHECK(sap_csr_from_coo(C, &A) == SAP_OK, "sap_csr_from_coo");
    sap_coo_destroy(C);
    fuzz_check_csr(A, 1, "sap_csr_from_coo");
    int nonfinite = !fuzz_all_finite(A->val, A->nnz);

    double *b = (double *)malloc((size_t)n * sizeof(double));
    double *x0 = (double *)malloc((size_t)n * sizeof(double));
    double *ones = (double *)malloc((size_t)n * sizeof(double));
    for (sap_int i = 0; i < n; i++) {
        ones[i] = 1.0;
        b[i] = 1.0;
        x0[i] = h[6] & 8 ? 0.5 * (double)(i % 3) : 0.0;
    }
    switch ((h[6] >> 4) & 3) {
    case 1: FUZZ_CHECK(sap_csr_spmv(A, 1.0, ones, 0.0, b) == SAP_OK, "sap_csr_spmv"); break;
    case 2: memset(b, 0, (size_t)n * sizeof(double)); break;
    case 3:
        memset(b, 0, (size_t)n * sizeof(double));
        b[0] = 1.0;
        break;
    default: break;
    }

    fuzz_solver_path(ctx, A, h, b, x0, nonfinite);
    fuzz_krylov_path(ctx, A, h, pc_opts, b, x0);

    free(b);
    free(x0);
    free(ones);
    sap_csr_destroy(A);
    fuzz_context_done(ctx, &budget);
    return 0;
}

#ifndef SAP_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return sap_fuzz_solve(data, size); }
#endif
