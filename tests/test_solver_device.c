/* test_solver_device.c -- the device-pointer entry points of sap_solver
 * (sap_solver_create_device, _solve_device, _solve_many_device, _refactor_device).
 *   cpu: a cpu context and host pointers are refused with a clear message; the device
 *        path's logic (the Krylov iteration in the original order with the reorderings
 *        inside the preconditioner, the refinement, the chain, refactor, the host route of
 *        band-pivot) runs on the cpu backend through the internal entry point without the
 *        pointer check, against sap_solver_solve on the same matrices.
 *   cuda: the CSR, b and x in device memory: x matches the host path, no byte of A went
 *        host -> device, nothing went up during the solves, and every byte that went up
 *        is accounted for as the preconditioner's data or the permutations.
 * The device statistics (the backend's csr_stats op): the cpu op against
 * sap__csr_stats_quick and sap_csr_check on generated and collection matrices and on broken
 * copies; the cuda op against the cpu op, field for field.  No host copy of A: Krylov +
 * Jacobi (given, or the automatic plan on a diagonally dominant matrix) on Poisson 3D reads
 * no byte of A to the host (download_bytes 0, a_h2d 0) and gives the host path's x; a
 * band method, or the automatic plan on a matrix that is not dominant, downloads A and says
 * why; a later host-vector solve, or the failure of the device-only plan, downloads then. */
#include "testing.h"

#include "device/device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAP_TEST_HAS_GPU_PART 1

/* csr_stats.c (internal): the host statistics the op is compared with */
sap_status sap__csr_stats_quick(const sap_csr *A, sap_matrix_stats *stats);

/* solver_device.c (internal): check = 0 takes host arrays on any backend */
sap_status sap__solver_create_dev(sap_context *ctx, sap_int n, sap_int nnz, const sap_int *rowptr,
                                  const sap_int *colind, const double *val, const sap_solver_options *opt, int check,
                                  sap_solver **out);

static double max_rel_diff(const double *x, const double *y, sap_int n)
{
    double d = 0, m = 0;
    for (sap_int i = 0; i < n; i++) {
        d = fmax(d, fabs(x[i] - y[i]));
        m = fmax(m, fabs(y[i]));
    }
    return m > 0 ? d / m : d;
}

static void rhs(sap_int n, double *b)
{
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + 0.5 * sin(0.37 * (double)i);
}

/* The matrices: SPD (CG, no reordering), nonsymmetric with hidden permutations (DB + CM),
 * and SaP-D with the third stage (P = 4). */
typedef struct dev_case {
    const char *what;
    sap_csr *A;
    sap_solver_options opt;
} dev_case;

/* c->A made (status st) with method m and P partitions (0: auto); 1 when made. */
static int set_case(dev_case *c, sap_status st, const char *what, sap_solver_method m, sap_int P)
{
    if (st < 0) return 0;
    c->what = what;
    sap_solver_options_init(&c->opt);
    c->opt.method = m;
    c->opt.partitions = P;
    c->opt.third_stage = P > 1 ? 1 : -1;
    return 1;
}

static int make_cases(sap_context *ctx, dev_case *c)
{
    int k = 0;
    k += set_case(&c[k], sap_gen_poisson2d(ctx, 40, 40, &c[k].A), "poisson2d 40x40, sap-d (CG)", SAP_METHOD_SAPD, 0);
    k += set_case(&c[k], sap_gen_synthetic(ctx, 1500, 8, 1.2, 0.6, 7, &c[k].A, NULL, NULL),
                  "synthetic 1500 (DB + CM)", SAP_METHOD_SAPD, 0);
    k += set_case(&c[k], sap_gen_synthetic(ctx, 2000, 6, 1.5, 0.8, 11, &c[k].A, NULL, NULL),
                  "synthetic 2000, sap-d P = 4 (third stage)", SAP_METHOD_SAPD, 4);
    return k;
}

static void free_cases(dev_case *c, int k)
{
    for (int i = 0; i < k; i++) sap_csr_destroy(c[i].A);
}

/* Copies n bytes of host memory into new device memory of G. */
static void *to_device(sap_context *G, const void *h, size_t bytes)
{
    void *d = NULL;
    if (sap__ops(G)->mem_alloc(G, bytes ? bytes : 8, &d) != SAP_OK) return NULL;
    if (sap__ops(G)->mem_upload(G, d, h, bytes) != SAP_OK) {
        sap__ops(G)->mem_free(G, d);
        return NULL;
    }
    return d;
}

/* ---- the device statistics -------------------------------------------------------------- */

/* The matrices the statistics are checked on (host, context C); returns how many. */
static int stats_matrices(sap_context *C, sap_csr **M, const char **names)
{
    int k = 0;
    if (sap_gen_poisson2d(C, 12, 9, &M[k]) >= 0) names[k++] = "poisson2d 12x9";
    if (sap_gen_poisson3d(C, 6, 5, 4, &M[k]) >= 0) names[k++] = "poisson3d 6x5x4";
    if (sap_gen_synthetic(C, 700, 9, 1.1, 0.5, 3, &M[k], NULL, NULL) >= 0) names[k++] = "synthetic 700";
    if (sap_gen_banded(C, 500, 7, 2.0, 1, 5, &M[k]) >= 0) names[k++] = "banded symmetric 500";
    if (sap_gen_banded(C, 400, 5, 0.5, 0, 9, &M[k]) >= 0) names[k++] = "banded 400, d 0.5";
    static const char *coll[] = {"494_bus", "add20", "Trefethen_2000", "bcsstk01", "arc130", "LFAT5"};
    if (sap_test_have_matrices("collection matrices of the statistics test"))
        for (size_t i = 0; i < sizeof(coll) / sizeof(coll[0]); i++) {
            M[k] = sap_test_load_matrix(C, coll[i]);
            if (M[k]) names[k++] = coll[i];
        }
    /* an asymmetric value in an SPD-looking matrix, a zero diagonal entry, an empty row */
    if (sap_gen_poisson2d(C, 8, 8, &M[k]) >= 0) {
        M[k]->val[M[k]->rowptr[10] + 1] += 0.25;
        names[k++] = "poisson2d, one value off";
    }
    if (sap_gen_poisson2d(C, 8, 8, &M[k]) >= 0) {
        for (sap_int p = M[k]->rowptr[7]; p < M[k]->rowptr[8]; p++)
            if (M[k]->colind[p] == 7) M[k]->val[p] = 0.0;
        names[k++] = "poisson2d, a zero diagonal entry";
    }
    return k;
}

static int same_double(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* The op's statistics against the host's (the fields the plan reads) */
static void check_same_stats(const char *what, const sap_matrix_stats *a, const sap_matrix_stats *h)
{
    CHECK_MSG(a->nrows == h->nrows && a->ncols == h->ncols && a->nnz == h->nnz, "%s: sizes", what);
    CHECK_MSG(a->half_bandwidth == h->half_bandwidth && a->lower_bandwidth == h->lower_bandwidth &&
                  a->upper_bandwidth == h->upper_bandwidth,
              "%s: bandwidths %lld/%lld/%lld vs %lld/%lld/%lld", what, (long long)a->half_bandwidth,
              (long long)a->lower_bandwidth, (long long)a->upper_bandwidth, (long long)h->half_bandwidth,
              (long long)h->lower_bandwidth, (long long)h->upper_bandwidth);
    CHECK_MSG(a->empty_rows == h->empty_rows && a->max_row_nnz == h->max_row_nnz, "%s: rows %lld/%lld vs %lld/%lld",
              what, (long long)a->empty_rows, (long long)a->max_row_nnz, (long long)h->empty_rows,
              (long long)h->max_row_nnz);
    CHECK_MSG(a->mean_row_nnz == h->mean_row_nnz && a->mean_row_width == h->mean_row_width, "%s: means", what);
    CHECK_MSG(a->zero_diagonal == h->zero_diagonal && a->dominant_rows == h->dominant_rows,
              "%s: zero diagonal %lld vs %lld, dominant %lld vs %lld", what, (long long)a->zero_diagonal,
              (long long)h->zero_diagonal, (long long)a->dominant_rows, (long long)h->dominant_rows);
    CHECK_MSG(same_double(a->diag_dominance, h->diag_dominance), "%s: d %.17g vs %.17g", what, a->diag_dominance,
              h->diag_dominance);
    CHECK_MSG(a->numerically_symmetric == h->numerically_symmetric && a->spd_estimate == h->spd_estimate,
              "%s: symmetric %d vs %d, spd %d vs %d", what, a->numerically_symmetric, h->numerically_symmetric,
              a->spd_estimate, h->spd_estimate);
}

/* csr_stats of ctx on the host CSR A (uploaded to ctx's memory); chk, ms, dinv (host, n) */
static sap_status run_stats(sap_context *ctx, const sap_csr *A, sap_dev_csr_check *chk, sap_matrix_stats *ms,
                            double *dinv)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = A->nrows, nnz = A->nnz;
    sap_int *rp = to_device(ctx, A->rowptr, sizeof(sap_int) * (size_t)(n + 1));
    sap_int *ci = to_device(ctx, A->colind, sizeof(sap_int) * (size_t)nnz);
    double *v = to_device(ctx, A->val, sizeof(double) * (size_t)nnz);
    double *d = NULL;
    sap_status st = SAP_ERR_OUT_OF_MEMORY;
    if (rp && ci && v && ops->mem_alloc(ctx, sizeof(double) * (size_t)(n > 0 ? n : 1), (void **)&d) == SAP_OK) {
        const sap_dev_csr C = {n, nnz, rp, ci, v};
        st = ops->csr_stats(ctx, &C, chk, ms, dinv ? d : NULL);
        if (st >= 0 && dinv) ops->mem_download(ctx, dinv, d, sizeof(double) * (size_t)n);
    }
    void *ps[] = {rp, ci, v, d};
    for (int i = 0; i < 4; i++)
        if (ps[i]) ops->mem_free(ctx, ps[i]);
    return st;
}

static int chk_clean(const sap_dev_csr_check *c)
{
    return c->bad_rowptr < 0 && c->bad_col < 0 && c->bad_order < 0 && c->nonfinite < 0;
}

/* The cpu op against the host statistics and checks. */
static void test_stats_cpu(void)
{
    sap_context *C = sap_test_context(SAP_BACKEND_CPU);
    sap_csr *M[16];
    const char *names[16];
    const int k = stats_matrices(C, M, names);
    CHECK(k >= 7);
    for (int i = 0; i < k; i++) {
        const sap_csr *A = M[i];
        const sap_int n = A->nrows;
        sap_dev_csr_check chk;
        sap_matrix_stats ms, hs;
        double *dinv = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        CHECK_OK(C, run_stats(C, A, &chk, &ms, dinv));
        CHECK_OK(C, sap__csr_stats_quick(A, &hs));
        CHECK_MSG(chk_clean(&chk), "%s: checks %lld %lld %lld %lld", names[i], (long long)chk.bad_rowptr,
                  (long long)chk.bad_col, (long long)chk.bad_order, (long long)chk.nonfinite);
        check_same_stats(names[i], &ms, &hs);
        sap_int zrow = -1;
        for (sap_int r = 0; r < n; r++) {
            double dg = 0;
            for (sap_int p = A->rowptr[r]; p < A->rowptr[r + 1]; p++)
                if (A->colind[p] == r) dg = A->val[p];
            if (dg == 0 && zrow < 0) zrow = r;
            CHECK_MSG(dinv[r] == (dg != 0 ? 1.0 / dg : 0.0), "%s: dinv[%lld]", names[i], (long long)r);
        }
        CHECK_MSG(chk.zero_diag_row == zrow, "%s: first zero diagonal row %lld vs %lld", names[i],
                  (long long)chk.zero_diag_row, (long long)zrow);
        free(dinv);
    }
    /* broken copies: the op finds what sap_csr_check and create find, at the same place */
    {
        sap_csr *B = NULL;
        sap_dev_csr_check chk;
        sap_matrix_stats ms;
        CHECK_OK(C, sap_csr_copy(M[0], &B));
        B->colind[B->rowptr[6] + 1] = B->nrows; /* a column out of range in row 6 */
        CHECK_OK(C, run_stats(C, B, &chk, &ms, NULL));
        CHECK(chk.bad_col == 6 && chk.bad_rowptr < 0);
        CHECK_STATUS(C, sap_csr_check(B), SAP_ERR_INDEX);
        sap_csr_destroy(B);
        CHECK_OK(C, sap_csr_copy(M[0], &B));
        sap_int *c9 = B->colind + B->rowptr[9], t = c9[0]; /* columns of row 9 swapped */
        c9[0] = c9[1];
        c9[1] = t;
        CHECK_OK(C, run_stats(C, B, &chk, &ms, NULL));
        CHECK(chk.bad_order == 9 && chk.bad_col < 0);
        CHECK_STATUS(C, sap_csr_check(B), SAP_ERR_INVALID);
        sap_csr_destroy(B);
        CHECK_OK(C, sap_csr_copy(M[0], &B));
        B->val[17] = NAN;
        B->val[40] = INFINITY;
        CHECK_OK(C, run_stats(C, B, &chk, &ms, NULL));
        CHECK(chk.nonfinite == 17);
        sap_csr_destroy(B);
        CHECK_OK(C, sap_csr_copy(M[0], &B));
        B->rowptr[4] = B->rowptr[5] + 1; /* decreases at row 4 */
        CHECK_OK(C, run_stats(C, B, &chk, &ms, NULL));
        CHECK_MSG(chk.bad_rowptr == 4, "bad rowptr %lld", (long long)chk.bad_rowptr);
        B->rowptr[4] = B->rowptr[3];
        B->rowptr[B->nrows] = B->nnz - 1; /* the end */
        CHECK_OK(C, run_stats(C, B, &chk, &ms, NULL));
        CHECK(chk.bad_rowptr == B->nrows);
        B->rowptr[B->nrows] = B->nnz;
        sap_csr_destroy(B);
    }
    for (int i = 0; i < k; i++) sap_csr_destroy(M[i]);
    sap_context_destroy(C);
}

/* ---- no host copy of A ------------------------------------------------------------------- */

/* x of the host path (method jacobi on the host context C) */
static void host_x(sap_context *C, const sap_csr *A, const double *b, double *x)
{
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.method = SAP_METHOD_JACOBI;
    sap_solver *R = NULL;
    memset(x, 0, sizeof(double) * (size_t)A->nrows);
    CHECK_OK(C, sap_solver_create(C, A, &o, &R));
    if (R) CHECK_OK(C, sap_solver_solve(R, b, x));
    sap_solver_destroy(R);
}

/* Solves A x = b through the device entry points of G (check: the pointer check, 0 on the
 * cpu backend) with options o; x (host) receives the solution; ds the device statistics.
 * refactor: then 2 A from device values, the solution checked.  Returns the status. */
static sap_status dev_solve(sap_context *G, int check, const sap_csr *A, const double *b, const sap_solver_options *o,
                            int refactor, double *x, sap_solver_device_stats *ds, sap_solver_stats *ss,
                            sap_solver **keep)
{
    const sap_backend_ops *ops = sap__ops(G);
    const sap_int n = A->nrows, nnz = A->nnz;
    sap_int *rp = to_device(G, A->rowptr, sizeof(sap_int) * (size_t)(n + 1));
    sap_int *ci = to_device(G, A->colind, sizeof(sap_int) * (size_t)nnz);
    double *v = to_device(G, A->val, sizeof(double) * (size_t)nnz);
    double *db = to_device(G, b, sizeof(double) * (size_t)n);
    memset(x, 0, sizeof(double) * (size_t)n);
    double *dx = to_device(G, x, sizeof(double) * (size_t)n);
    sap_solver *S = NULL;
    sap_status st = SAP_ERR_OUT_OF_MEMORY;
    if (rp && ci && v && db && dx) st = sap__solver_create_dev(G, n, nnz, rp, ci, v, o, check, &S);
    if (st >= 0) st = sap_solver_solve_device(S, db, dx);
    if (st >= 0) ops->mem_download(G, x, dx, sizeof(double) * (size_t)n);
    if (st >= 0 && refactor) {
        double *v2 = malloc(sizeof(double) * (size_t)(nnz > 0 ? nnz : 1)), *x2 = calloc((size_t)n, sizeof(double));
        for (sap_int p = 0; p < nnz; p++) v2[p] = 2.0 * A->val[p];
        double *dv2 = to_device(G, v2, sizeof(double) * (size_t)nnz);
        CHECK_OK(G, sap_solver_refactor_device(S, dv2));
        ops->mem_upload(G, dx, x2, sizeof(double) * (size_t)n);
        CHECK_OK(G, sap_solver_solve_device(S, db, dx));
        ops->mem_download(G, x2, dx, sizeof(double) * (size_t)n);
        for (sap_int j = 0; j < n; j++) x2[j] *= 2.0;
        CHECK_MSG(sap_test_rel_residual(A, x2, b) <= 1e-8, "residual after refactor %g", sap_test_rel_residual(A, x2, b));
        if (dv2) ops->mem_free(G, dv2);
        /* NaN in the new values: refused as on the host path */
        v2[3] = NAN;
        dv2 = to_device(G, v2, sizeof(double) * (size_t)nnz);
        CHECK_STATUS(G, sap_solver_refactor_device(S, dv2), SAP_ERR_NONFINITE);
        if (dv2) ops->mem_free(G, dv2);
        /* back to A */
        CHECK_OK(G, sap_solver_refactor_device(S, v));
        free(v2), free(x2);
    }
    if (S) {
        sap_solver_get_device_stats(S, ds);
        sap_solver_get_stats(S, ss);
    }
    if (keep) *keep = S;
    else sap_solver_destroy(S);
    void *ps[] = {rp, ci, v, db, dx};
    for (int i = 0; i < 5; i++)
        if (ps[i]) ops->mem_free(G, ps[i]);
    return st;
}

/* Poisson 3D (nx^3) with jacobi given and with the automatic plan: no byte of A to the
 * host; a band method and the automatic plan on a matrix that is not dominant: A downloaded,
 * the reason given; a host-vector solve afterwards downloads then. */
static void test_no_host(sap_context *G, int check, sap_int nx)
{
    sap_context *C = sap_test_context(SAP_BACKEND_CPU);
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_poisson3d(C, nx, nx, nx, &A));
    if (!A) {
        sap_context_destroy(C);
        return;
    }
    const sap_int n = A->nrows;
    const int64_t full = (int64_t)sizeof(sap_int) * (n + 1 + A->nnz) + (int64_t)sizeof(double) * A->nnz;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    double *xr = calloc((size_t)n, sizeof(double));
    rhs(n, b);
    host_x(C, A, b, xr);
    for (int auto_plan = 0; auto_plan < 2; auto_plan++) {
        sap_solver_options o;
        sap_solver_options_init(&o);
        o.method = auto_plan ? SAP_METHOD_AUTO : SAP_METHOD_JACOBI;
        sap_solver_device_stats ds;
        sap_solver_stats ss;
        sap_solver *S = NULL;
        memset(&ds, 0, sizeof(ds));
        CHECK_OK(G, dev_solve(G, check, A, b, &o, 1, x, &ds, &ss, &S));
        const char *what = auto_plan ? "poisson3d, auto" : "poisson3d, jacobi";
        printf("  %s (n = %lld): %s, %.4g it; A down %lld B, A up %lld B, statistics d2h %lld B, setup up %lld B; %s\n",
               what, (long long)n, sap_solver_method_name(ss.method), ss.iterations, (long long)ds.download_bytes,
               (long long)ds.a_h2d_bytes, (long long)ds.stats_d2h_bytes, (long long)ds.setup_h2d_bytes, ss.reason);
        CHECK_MSG(ds.download_bytes == 0 && ds.a_h2d_bytes == 0, "%s: download %lld, a_h2d %lld (%s)", what,
                  (long long)ds.download_bytes, (long long)ds.a_h2d_bytes, ds.download_reason);
        CHECK_MSG(ds.download_reason[0] == 0, "%s: reason '%s'", what, ds.download_reason);
        CHECK(ds.device_solves >= 1 && ds.host_solves == 0);
        if (check) CHECK(ds.stats_d2h_bytes > 0 && ds.stats_d2h_bytes < 4096); /* cuda counts transfers */
        CHECK(ss.method == SAP_METHOD_JACOBI);
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual %g", what, sap_test_rel_residual(A, x, b));
        CHECK_MSG(max_rel_diff(x, xr, n) < 1e-6, "%s: x differs from the host path by %g", what,
                  max_rel_diff(x, xr, n));
        if (S && auto_plan) { /* host vectors: the host copy now, counted and explained */
            memset(x, 0, sizeof(double) * (size_t)n);
            CHECK_OK(G, sap_solver_solve(S, b, x));
            sap_solver_get_device_stats(S, &ds);
            CHECK_MSG(ds.download_bytes == full, "host-vector solve: download %lld of %lld", (long long)ds.download_bytes,
                      (long long)full);
            CHECK_MSG(strstr(ds.download_reason, "host vectors") != NULL, "reason '%s'", ds.download_reason);
            CHECK(sap_test_rel_residual(A, x, b) <= 1e-8);
        }
        sap_solver_destroy(S);
    }
    /* a band method: downloaded at create, and why */
    {
        sap_csr *B = NULL;
        CHECK_OK(C, sap_gen_banded(C, 3000, 12, 1.0, 0, 21, &B));
        if (B) {
            const sap_int m = B->nrows;
            double *bb = malloc(sizeof(double) * (size_t)m), *xb = calloc((size_t)m, sizeof(double));
            rhs(m, bb);
            sap_solver_options o;
            sap_solver_options_init(&o);
            o.method = SAP_METHOD_SAPD;
            sap_solver_device_stats ds;
            sap_solver_stats ss;
            memset(&ds, 0, sizeof(ds));
            CHECK_OK(G, dev_solve(G, check, B, bb, &o, 0, xb, &ds, &ss, NULL));
            const int64_t fb = (int64_t)sizeof(sap_int) * (m + 1 + B->nnz) + (int64_t)sizeof(double) * B->nnz;
            printf("  banded 3000, sap-d: A down %lld B (%s)\n", (long long)ds.download_bytes, ds.download_reason);
            CHECK(ds.download_bytes == fb && ds.a_h2d_bytes == 0);
            CHECK_MSG(strstr(ds.download_reason, "sap-d") != NULL, "reason '%s'", ds.download_reason);
            CHECK(sap_test_rel_residual(B, xb, bb) <= 1e-8);
            /* the automatic plan on a matrix not dominant in every row: the host plan */
            sap_csr_destroy(B);
            B = NULL;
            CHECK_OK(C, sap_gen_banded(C, 3000, 12, 0.5, 0, 21, &B));
            if (!B) {
                free(bb), free(xb);
                goto done;
            }
            o.method = SAP_METHOD_AUTO;
            memset(&ds, 0, sizeof(ds));
            CHECK_OK(G, dev_solve(G, check, B, bb, &o, 0, xb, &ds, &ss, NULL));
            printf("  banded 3000, auto: %s; A down %lld B (%s)\n", sap_solver_method_name(ss.method),
                   (long long)ds.download_bytes, ds.download_reason);
            CHECK(ds.download_bytes == fb);
            CHECK_MSG(strstr(ds.download_reason, "automatic plan") != NULL, "reason '%s'", ds.download_reason);
            CHECK(sap_test_rel_residual(B, xb, bb) <= 1e-8);
            free(bb), free(xb);
        }
    done:
        sap_csr_destroy(B);
    }
    free(b), free(x), free(xr);
    sap_csr_destroy(A);
    sap_context_destroy(C);
}

/* The device-only plan fails (3 iterations): A downloaded then, the host plan solves. */
static void test_escape(void)
{
    sap_context *C = sap_test_context(SAP_BACKEND_CPU);
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_poisson3d(C, 8, 8, 8, &A));
    if (!A) {
        sap_context_destroy(C);
        return;
    }
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    rhs(n, b);
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.krylov.maxit = 3;
    sap_solver_device_stats ds;
    sap_solver_stats ss;
    memset(&ds, 0, sizeof(ds));
    sap_status st = dev_solve(C, 0, A, b, &o, 0, x, &ds, &ss, NULL);
    printf("  escape: %s by %s; A down %lld B (%s)\n", sap_status_name(st), sap_solver_method_name(ss.method),
           (long long)ds.download_bytes, ds.download_reason);
    CHECK_MSG(strstr(ds.download_reason, "failed") != NULL, "reason '%s'", ds.download_reason);
    CHECK(ds.download_bytes > 0);
    CHECK(ss.method != SAP_METHOD_JACOBI || st != SAP_OK);
    if (st == SAP_OK) CHECK(sap_test_rel_residual(A, x, b) <= 1e-8);
    free(b), free(x);
    sap_csr_destroy(A);
    sap_context_destroy(C);
}

/* ---- cpu ------------------------------------------------------------------------------------- */

static void test_refusals(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 5, 5, &A));
    sap_solver *S = (sap_solver *)(uintptr_t)1;
    CHECK_STATUS(ctx, sap_solver_create_device(ctx, A->nrows, A->nnz, A->rowptr, A->colind, A->val, NULL, &S),
                 SAP_ERR_INVALID);
    CHECK(S == NULL);
    CHECK_MSG(strstr(sap_context_last_error(ctx), "cuda context") != NULL, "message: %s", sap_context_last_error(ctx));
    CHECK_STATUS(ctx, sap_solver_create_device(ctx, A->nrows, A->nnz, A->rowptr, A->colind, A->val, NULL, NULL),
                 SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_solver_create_device(ctx, -1, A->nnz, A->rowptr, A->colind, A->val, NULL, &S),
                 SAP_ERR_INVALID);
    /* a host-made solver has no device entry */
    sap_solver *H = NULL;
    CHECK_OK(ctx, sap_solver_create(ctx, A, NULL, &H));
    double b[25], x[25];
    rhs(25, b);
    memset(x, 0, sizeof(x));
    CHECK_STATUS(ctx, sap_solver_solve_device(H, b, x), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_solver_refactor_device(H, A->val), SAP_ERR_INVALID);
    sap_solver_device_stats ds;
    CHECK_OK(ctx, sap_solver_get_device_stats(H, &ds));
    CHECK(ds.device_arrays == 0);
    CHECK_STATUS(ctx, sap_solver_solve_device(NULL, b, x), SAP_ERR_INVALID);
    sap_solver_destroy(H);
    /* a bad row pointer is caught before anything is built */
    sap_int rp[26];
    memcpy(rp, A->rowptr, sizeof(rp));
    rp[25] = A->nnz + 1;
    CHECK_STATUS(ctx, sap__solver_create_dev(ctx, 25, A->nnz, rp, A->colind, A->val, NULL, 0, &S), SAP_ERR_INVALID);
    CHECK(S == NULL);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
}

/* The device logic on the cpu backend against sap_solver_solve. */
static void test_cpu_logic(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    dev_case c[4];
    int k = make_cases(ctx, c);
    CHECK(k == 3);
    for (int i = 0; i < k; i++) {
        const sap_csr *A = c[i].A;
        const sap_int n = A->nrows;
        double *b = malloc(sizeof(double) * (size_t)n * 2), *x = calloc((size_t)n * 2, sizeof(double));
        double *xr = calloc((size_t)n, sizeof(double));
        rhs(n, b);
        for (sap_int j = 0; j < n; j++) b[n + j] = cos(0.11 * (double)j);
        sap_solver *S = NULL, *R = NULL;
        CHECK_OK(ctx, sap__solver_create_dev(ctx, n, A->nnz, A->rowptr, A->colind, A->val, &c[i].opt, 0, &S));
        CHECK_OK(ctx, sap_solver_create(ctx, A, &c[i].opt, &R));
        if (!S || !R) {
            sap_solver_destroy(S);
            sap_solver_destroy(R);
            free(b), free(x), free(xr);
            continue;
        }
        CHECK_OK(ctx, sap_solver_solve_device(S, b, x));
        CHECK_OK(ctx, sap_solver_solve(R, b, xr));
        sap_solver_stats ss, rs;
        sap_solver_get_stats(S, &ss);
        sap_solver_get_stats(R, &rs);
        CHECK_MSG(ss.method == rs.method, "%s: method %s vs %s", c[i].what, sap_solver_method_name(ss.method),
                  sap_solver_method_name(rs.method));
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual %g", c[i].what,
                  sap_test_rel_residual(A, x, b));
        CHECK_MSG(max_rel_diff(x, xr, n) < 1e-6, "%s: x differs from the host path by %g", c[i].what,
                  max_rel_diff(x, xr, n));
        sap_solver_device_stats ds;
        CHECK_OK(ctx, sap_solver_get_device_stats(S, &ds));
        CHECK(ds.device_arrays == 1);
        CHECK_MSG(ds.device_solves == 1 && ds.host_solves == 0, "%s: %lld device, %lld host solves (%s)", c[i].what,
                  (long long)ds.device_solves, (long long)ds.host_solves, ds.host_reason);
        CHECK(ds.a_h2d_bytes == 0);
        /* two columns at once, then new values (2 A: x / 2) */
        memset(x, 0, sizeof(double) * (size_t)n * 2);
        CHECK_OK(ctx, sap_solver_solve_many_device(S, 2, b, n, x, n));
        CHECK(sap_test_rel_residual(A, x + n, b + n) <= 1e-8);
        double *v2 = malloc(sizeof(double) * (size_t)(A->nnz > 0 ? A->nnz : 1));
        for (sap_int p = 0; p < A->nnz; p++) v2[p] = 2.0 * A->val[p];
        sap_status rf = sap_solver_refactor_device(S, v2);
        CHECK_MSG(rf >= 0, "%s: refactor %s", c[i].what, sap_status_name(rf));
        memset(x, 0, sizeof(double) * (size_t)n);
        CHECK_OK(ctx, sap_solver_solve_device(S, b, x));
        for (sap_int j = 0; j < n; j++) x[j] *= 2.0;
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual after refactor %g", c[i].what,
                  sap_test_rel_residual(A, x, b));
        /* NaN in b: refused, x untouched */
        b[0] = NAN;
        CHECK_STATUS(ctx, sap_solver_solve_device(S, b, x), SAP_ERR_NONFINITE);
        v2[0] = NAN;
        CHECK_STATUS(ctx, sap_solver_refactor_device(S, v2), SAP_ERR_NONFINITE);
        free(v2);
        sap_solver_destroy(S);
        sap_solver_destroy(R);
        free(b), free(x), free(xr);
    }
    /* band-pivot has no device-vector solve: through the host, and the statistics say so */
    {
        const sap_csr *A = c[1].A;
        const sap_int n = A->nrows;
        sap_solver_options o;
        sap_solver_options_init(&o);
        o.method = SAP_METHOD_BAND_PIVOT;
        double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
        rhs(n, b);
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap__solver_create_dev(ctx, n, A->nnz, A->rowptr, A->colind, A->val, &o, 0, &S));
        if (S) {
            CHECK_OK(ctx, sap_solver_solve_device(S, b, x));
            CHECK(sap_test_rel_residual(A, x, b) <= 1e-8);
            sap_solver_device_stats ds;
            sap_solver_get_device_stats(S, &ds);
            CHECK(ds.host_solves == 1 && ds.device_solves == 0);
            CHECK_MSG(strstr(ds.host_reason, "band-pivot") != NULL, "reason: %s", ds.host_reason);
        }
        sap_solver_destroy(S);
        free(b), free(x);
    }
    free_cases(c, k > 0 ? k : 0);
    sap_context_destroy(ctx);
}

/* sap_solver_solve_many_device with 5 columns (one with a non-zero initial guess): the first
 * alone, the other 4 in lockstep (the try's note says so), every column to 1e-8 and the host
 * solve_many's x; a NaN in a column is refused.  check = 1: a cuda context, the arrays in its
 * memory; 0: the host arrays as the backend's (cpu). */
static void test_many_lockstep(sap_context *ctx, int check)
{
    enum { K = 5 };
    dev_case c[4];
    const int k = make_cases(ctx, c);
    const sap_backend_ops *ops = sap__ops(ctx);
    for (int i = 0; i < k; i++) {
        const sap_csr *A = c[i].A;
        const sap_int n = A->nrows, nnz = A->nnz;
        const size_t nb = sizeof(double) * (size_t)n * K;
        double *B = malloc(nb), *X = calloc((size_t)n * K, sizeof(double)), *XR = calloc((size_t)n * K, sizeof(double));
        for (int j = 0; j < K; j++)
            for (sap_int r = 0; r < n; r++) B[j * n + r] = 1.0 + 0.5 * sin(0.37 * (double)r + (double)j);
        for (sap_int r = 0; r < n; r++) X[2 * n + r] = XR[2 * n + r] = 0.1 * cos((double)r);
        const sap_int *rp = A->rowptr, *ci = A->colind;
        const double *v = A->val;
        double *dB = B, *dX = X;
        if (check) {
            rp = to_device(ctx, A->rowptr, sizeof(sap_int) * (size_t)(n + 1));
            ci = to_device(ctx, A->colind, sizeof(sap_int) * (size_t)nnz);
            v = to_device(ctx, A->val, sizeof(double) * (size_t)nnz);
            dB = to_device(ctx, B, nb);
            dX = to_device(ctx, X, nb);
        }
        sap_solver *S = NULL, *R = NULL;
        if (rp && ci && v && dB && dX) {
            CHECK_OK(ctx, sap__solver_create_dev(ctx, n, nnz, rp, ci, v, &c[i].opt, check, &S));
            CHECK_OK(ctx, sap_solver_create(ctx, A, &c[i].opt, &R));
        }
        if (S && R) {
            CHECK_OK(ctx, sap_solver_solve_many_device(S, K, dB, n, dX, n));
            CHECK_OK(ctx, sap_solver_solve_many(R, K, B, n, XR, n));
            if (check) ops->mem_download(ctx, X, dX, nb);
            for (int j = 0; j < K; j++) {
                const double res = sap_test_rel_residual(A, X + j * n, B + j * n);
                CHECK_MSG(res <= 1e-8, "%s: many column %d residual %g", c[i].what, j, res);
                CHECK_MSG(max_rel_diff(X + j * n, XR + j * n, n) < 1e-6, "%s: many column %d differs from the host by %g",
                          c[i].what, j, max_rel_diff(X + j * n, XR + j * n, n));
            }
            sap_solver_device_stats ds;
            sap_solver_get_device_stats(S, &ds);
            sap_solver_stats ss;
            sap_solver_get_stats(S, &ss);
            int lock = 0;
            for (int t = 0; t < ss.ntries; t++) lock |= strstr(ss.tried[t].note, "device lockstep: 4 columns, 4") != NULL;
            CHECK_MSG(lock && ds.device_solves == K && ds.host_solves == 0 && ss.nrhs == K,
                      "%s: lockstep %d, %lld device / %lld host solves, nrhs %lld", c[i].what, lock,
                      (long long)ds.device_solves, (long long)ds.host_solves, (long long)ss.nrhs);
            /* a NaN in column 3: refused, that column's x untouched */
            B[3 * n + 7] = NAN;
            for (sap_int r = 0; r < n; r++) X[3 * n + r] = 0.25;
            if (check) ops->mem_upload(ctx, dB, B, nb);
            if (check) ops->mem_upload(ctx, dX, X, nb);
            CHECK_STATUS(ctx, sap_solver_solve_many_device(S, K, dB, n, dX, n), SAP_ERR_NONFINITE);
            if (check) ops->mem_download(ctx, X, dX, nb);
            int kept = 1;
            for (sap_int r = 0; r < n; r++) kept &= X[3 * n + r] == 0.25;
            CHECK_MSG(kept, "%s: the NaN column's x changed", c[i].what);
        }
        sap_solver_destroy(S);
        sap_solver_destroy(R);
        if (check) {
            void *ps[] = {(void *)(uintptr_t)rp, (void *)(uintptr_t)ci, (void *)(uintptr_t)v, dB, dX};
            for (int j = 0; j < 5; j++)
                if (ps[j]) ops->mem_free(ctx, ps[j]);
        }
        free(B), free(X), free(XR);
    }
    free_cases(c, k > 0 ? k : 0);
}

static int cpu_part(void)
{
    test_refusals();
    test_cpu_logic();
    test_stats_cpu();
    {
        sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
        test_no_host(ctx, 0, 12);
        test_many_lockstep(ctx, 0);
        sap_context_destroy(ctx);
    }
    test_escape();
    return 0;
}

/* ---- cuda ------------------------------------------------------------------------------------ */

static int gpu_part(void)
{
    sap_context *G = NULL;
    int rc = sap_test_gpu_context(sap_test_name(), 0, &G, NULL);
    if (rc) return rc;
    sap_context *C = sap_test_context(SAP_BACKEND_CPU);
    dev_case c[4];
    int k = make_cases(C, c);
    CHECK(k == 3);
    for (int i = 0; i < k; i++) {
        const sap_csr *A = c[i].A;
        const sap_int n = A->nrows, nnz = A->nnz;
        double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
        double *xr = calloc((size_t)n, sizeof(double));
        rhs(n, b);
        sap_int *d_rp = to_device(G, A->rowptr, sizeof(sap_int) * (size_t)(n + 1));
        sap_int *d_ci = to_device(G, A->colind, sizeof(sap_int) * (size_t)nnz);
        double *d_v = to_device(G, A->val, sizeof(double) * (size_t)nnz);
        double *d_b = to_device(G, b, sizeof(double) * (size_t)n);
        double *d_x = to_device(G, x, sizeof(double) * (size_t)n);
        CHECK(d_rp && d_ci && d_v && d_b && d_x);
        /* host pointers on a cuda context: refused */
        sap_solver *S = NULL;
        CHECK_STATUS(G, sap_solver_create_device(G, n, nnz, A->rowptr, A->colind, A->val, &c[i].opt, &S),
                     SAP_ERR_INVALID);
        CHECK_MSG(strstr(sap_context_last_error(G), "host memory") != NULL ||
                      strstr(sap_context_last_error(G), "not memory CUDA knows") != NULL,
                  "message: %s", sap_context_last_error(G));
        sap_context_reset_transfer_stats(G);
        CHECK_OK(G, sap_solver_create_device(G, n, nnz, d_rp, d_ci, d_v, &c[i].opt, &S));
        if (!S) continue;
        CHECK_STATUS(G, sap_solver_solve_device(S, b, d_x), SAP_ERR_INVALID); /* a host b */
        CHECK_OK(G, sap_solver_solve_device(S, d_b, d_x));
        CHECK_OK(G, sap_solver_solve_device(S, d_b, d_x)); /* again, from the solution */
        sap_context_stats cs;
        sap_context_get_stats(G, &cs);
        sap_solver_device_stats ds;
        sap_solver_get_device_stats(S, &ds);
        sap__ops(G)->mem_download(G, x, d_x, sizeof(double) * (size_t)n);
        sap_solver *R = NULL;
        CHECK_OK(C, sap_solver_create(C, A, &c[i].opt, &R));
        CHECK_OK(C, sap_solver_solve(R, b, xr));
        printf("  %s: %lld device solves; A down %lld B in %.2e s, Krylov matrix %.2e s; up: setup %lld B (perm %lld), "
               "solves %lld B, A %lld B; context h2d %lld B\n",
               c[i].what, (long long)ds.device_solves, (long long)ds.download_bytes, ds.time_download, ds.time_matrix,
               (long long)ds.setup_h2d_bytes, (long long)ds.perm_h2d_bytes, (long long)ds.solve_h2d_bytes,
               (long long)ds.a_h2d_bytes, (long long)cs.h2d_bytes);
        CHECK_MSG(ds.device_solves == 2 && ds.host_solves == 0, "%s: host route: %s", c[i].what, ds.host_reason);
        CHECK(ds.download_bytes == (int64_t)sizeof(sap_int) * (n + 1 + nnz) + (int64_t)sizeof(double) * nnz);
        CHECK(ds.a_h2d_bytes == 0);
        CHECK(ds.solve_h2d_bytes == 0);
        /* everything that went up since the counters were reset: the preconditioner's data
         * and the permutations, never A */
        CHECK_MSG(cs.h2d_bytes == ds.setup_h2d_bytes, "%s: context h2d %lld B, accounted %lld B", c[i].what,
                  (long long)cs.h2d_bytes, (long long)ds.setup_h2d_bytes);
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual %g", c[i].what, sap_test_rel_residual(A, x, b));
        CHECK_MSG(max_rel_diff(x, xr, n) < 1e-6, "%s: x differs from the host path by %g", c[i].what,
                  max_rel_diff(x, xr, n));
        /* refactor with 2 A from device memory */
        double *v2 = malloc(sizeof(double) * (size_t)(nnz > 0 ? nnz : 1));
        for (sap_int p = 0; p < nnz; p++) v2[p] = 2.0 * A->val[p];
        double *d_v2 = to_device(G, v2, sizeof(double) * (size_t)nnz);
        CHECK(sap_solver_refactor_device(S, d_v2) >= 0);
        memset(x, 0, sizeof(double) * (size_t)n);
        sap__ops(G)->mem_upload(G, d_x, x, sizeof(double) * (size_t)n);
        CHECK_OK(G, sap_solver_solve_device(S, d_b, d_x));
        sap__ops(G)->mem_download(G, x, d_x, sizeof(double) * (size_t)n);
        for (sap_int j = 0; j < n; j++) x[j] *= 2.0;
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual after refactor %g", c[i].what,
                  sap_test_rel_residual(A, x, b));
        sap_solver_get_device_stats(S, &ds);
        CHECK(ds.a_h2d_bytes == 0 && ds.solve_h2d_bytes == 0);
        sap__ops(G)->mem_free(G, d_v2);
        free(v2);
        sap_solver_destroy(R);
        sap_solver_destroy(S);
        void *ps[] = {d_rp, d_ci, d_v, d_b, d_x};
        for (int j = 0; j < 5; j++)
            if (ps[j]) sap__ops(G)->mem_free(G, ps[j]);
        free(b), free(x), free(xr);
    }
    free_cases(c, k > 0 ? k : 0);
    /* the cuda csr_stats op against the cpu op, field for field */
    {
        sap_csr *M[16];
        const char *names[16];
        const int km = stats_matrices(C, M, names);
        for (int i = 0; i < km; i++) {
            const sap_int n = M[i]->nrows;
            sap_dev_csr_check cg, cc;
            sap_matrix_stats mg, mc;
            double *dg = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
            double *dc = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
            CHECK_OK(G, run_stats(G, M[i], &cg, &mg, dg));
            CHECK_OK(C, run_stats(C, M[i], &cc, &mc, dc));
            CHECK_MSG(memcmp(&cg, &cc, sizeof(cg)) == 0, "%s: checks differ", names[i]);
            check_same_stats(names[i], &mg, &mc);
            CHECK_MSG(memcmp(dg, dc, sizeof(double) * (size_t)n) == 0, "%s: 1 / diag differs", names[i]);
            free(dg), free(dc);
        }
        /* broken copies */
        sap_csr *B = NULL;
        CHECK_OK(C, sap_csr_copy(M[0], &B));
        B->colind[B->rowptr[6] + 1] = B->nrows;
        B->val[3] = NAN;
        sap_dev_csr_check cg, cc;
        sap_matrix_stats ms;
        CHECK_OK(G, run_stats(G, B, &cg, &ms, NULL));
        CHECK_OK(C, run_stats(C, B, &cc, &ms, NULL));
        CHECK(memcmp(&cg, &cc, sizeof(cg)) == 0 && cg.bad_col == 6 && cg.nonfinite == 3);
        B->colind[B->rowptr[6] + 1] = B->colind[B->rowptr[6] + 2] - 1;
        B->rowptr[4] = B->rowptr[5] + 1;
        CHECK_OK(G, run_stats(G, B, &cg, &ms, NULL));
        CHECK(cg.bad_rowptr == 4);
        sap_csr_destroy(B);
        for (int i = 0; i < km; i++) sap_csr_destroy(M[i]);
    }
    /* no host copy of A on the device (Poisson 3D, n = 27000) */
    test_no_host(G, 1, 30);
    test_many_lockstep(G, 1);
    sap_context_destroy(C);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_solver_device", cpu_part, gpu_part); }
