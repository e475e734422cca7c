/* test_gpu_krylov.c -- every Krylov solver through the public sap_krylov_solve on a cuda
 * context against the same solve on a cpu context: CG, BiCGStab, BiCGStab(2),
 * GMRES(20), FGMRES(30), IDR(4); no preconditioner, Jacobi in double and in float;
 * right and left preconditioning; SPD and nonsymmetric systems, tiny and one-row
 * systems; every SpMV format on the GPU.  Each GPU solve must reach the tolerance (true
 * residual), agree with the CPU solution, repeat bit-identically, and count its
 * transfers.  Exits 77 (skipped) without CUDA or without a device. */
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct system {
    const char *name;
    sap_csr *A;
    double *b, *xstar;
    int spd;
} system_t;

static sap_context *G, *C;

static double nrm(const double *v, sap_int n)
{
    double s = 0;
    for (sap_int i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

static void make_rhs(system_t *S)
{
    const sap_int n = S->A->nrows;
    S->xstar = malloc(sizeof(double) * (size_t)(n + 1));
    S->b = malloc(sizeof(double) * (size_t)(n + 1));
    CHECK_OK(C, sap_gen_xstar(C, n, SAP_XSTAR_RANDOM, 7, S->xstar));
    CHECK_OK(C, sap_csr_spmv(S->A, 1.0, S->xstar, 0.0, S->b));
}

/* One solve; returns the status, fills x and stats. */
static sap_status solve(sap_context *ctx, const system_t *S, sap_krylov_type type, int param, sap_precond_side side,
                        const char *pc, sap_precision pc_prec, sap_spmv_format fmt, double *x, sap_krylov_stats *stats)
{
    const sap_int n = S->A->nrows;
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_status st = SAP_ERR_INVALID;
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    mo.format = fmt;
    memset(x, 0, sizeof(double) * (size_t)n);
    memset(stats, 0, sizeof(*stats));
    CHECK_OK(ctx, sap_matrix_create(ctx, S->A, &mo, &M));
    if (!M) goto out;
    if (pc) {
        CHECK_OK(ctx, sap_precond_create(ctx, pc, &P));
        if (!P) goto out;
        CHECK_OK(ctx, sap_precond_set_precision(P, pc_prec));
        CHECK_OK(ctx, sap_precond_setup_symbolic(P, S->A));
        CHECK_OK(ctx, sap_precond_setup_numeric(P, S->A));
    }
    sap_krylov_options opt;
    sap_krylov_options_init(&opt);
    opt.type = type;
    opt.param = param;
    opt.side = side;
    opt.tol = 1e-10;
    opt.maxit = 4000;
    CHECK_OK(ctx, sap_krylov_create(ctx, &opt, &K));
    if (!K) goto out;
    st = sap_krylov_solve(K, M, P, S->b, x, stats);
out:
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    return st;
}

static void run_case(const system_t *S, sap_krylov_type type, int param, sap_precond_side side, const char *pc,
                     sap_precision pc_prec, sap_spmv_format fmt)
{
    const sap_int n = S->A->nrows;
    double *xg = malloc(sizeof(double) * (size_t)(n + 1)), *xg2 = malloc(sizeof(double) * (size_t)(n + 1));
    double *xc = malloc(sizeof(double) * (size_t)(n + 1)), *d = malloc(sizeof(double) * (size_t)(n + 1));
    sap_krylov_stats sg, sg2, sc;
    char what[256];
    snprintf(what, sizeof(what), "%s %s(%d) %s pc=%s%s fmt=%s", S->name, sap_krylov_name(type), param,
             side == SAP_PRECOND_LEFT ? "left" : "right", pc ? pc : "none",
             pc && pc_prec == SAP_FLOAT ? "(float)" : "", sap_spmv_format_name(fmt));
    sap_context_reset_transfer_stats(G);
    sap_status stg = solve(G, S, type, param, side, pc, pc_prec, fmt, xg, &sg);
    sap_context_stats cs;
    sap_context_get_stats(G, &cs);
    sap_status stc = solve(C, S, type, param, side, pc, pc_prec, SAP_FORMAT_AUTO, xc, &sc);
    sap_status stg2 = solve(G, S, type, param, side, pc, pc_prec, fmt, xg2, &sg2);

    CHECK_MSG(stg == SAP_OK, "%s: gpu status %s (%s), true residual %.3g after %g iterations", what,
              sap_status_name(stg), sap_context_last_error(G), sg.true_residual, sg.iterations);
    CHECK_MSG(stc == SAP_OK, "%s: cpu status %s (%s)", what, sap_status_name(stc), sap_context_last_error(C));
    CHECK_MSG(sg.true_residual <= 1e-10 * 1.0000001, "%s: gpu true residual %.3g", what, sg.true_residual);
    for (sap_int i = 0; i < n; i++) d[i] = xg[i] - xc[i];
    double rel = nrm(d, n) / fmax(nrm(xc, n), 1e-300);
    CHECK_MSG(rel <= 1e-6, "%s: gpu and cpu solutions differ by %.3g (relative)", what, rel);
    for (sap_int i = 0; i < n; i++) d[i] = xg[i] - S->xstar[i];
    double err = nrm(d, n) / fmax(nrm(S->xstar, n), 1e-300);
    CHECK_MSG(err <= 1e-5, "%s: error against x* %.3g", what, err);
    CHECK_MSG(fabs(sg.iterations - sc.iterations) <= 5 + 0.25 * sc.iterations,
              "%s: %g iterations on the gpu, %g on the cpu", what, sg.iterations, sc.iterations);
    /* deterministic: the same solve again is bit-identical */
    CHECK_MSG(stg2 == stg && sg2.iterations == sg.iterations && memcmp(xg, xg2, sizeof(double) * (size_t)n) == 0,
              "%s: a second gpu solve differs (%g vs %g iterations)", what, sg.iterations, sg2.iterations);
    CHECK_MSG(sap_context_backend(G) != SAP_BACKEND_CUDA ||
                  (cs.h2d_bytes >= (int64_t)(8 * n) && cs.d2h_bytes >= (int64_t)(8 * n) && cs.h2d_copies > 0 &&
                   cs.d2h_copies > 0),
              "%s: transfers not counted (h2d %lld, d2h %lld)", what, (long long)cs.h2d_bytes, (long long)cs.d2h_bytes);
    printf("%-70s gpu %6g it (%.2e)  cpu %6g it (%.2e)  diff %.1e\n", what, sg.iterations, sg.true_residual,
           sc.iterations, sc.true_residual, rel);
    free(xg);
    free(xg2);
    free(xc);
    free(d);
}

int main(void)
{
    int rc = sap_test_gpu_context("test_gpu_krylov", 1, &G, NULL);
    if (rc) return rc;
    C = sap_test_context(SAP_BACKEND_CPU);
    printf("device: %s\n", sap_context_device_name(G));

    system_t sys[4];
    memset(sys, 0, sizeof(sys));
    sys[0].name = "poisson2d 40x40";
    sys[0].spd = 1;
    CHECK_OK(C, sap_gen_poisson2d(C, 40, 40, &sys[0].A));
    sys[1].name = "banded nonsym n=3001 k=6";
    CHECK_OK(C, sap_gen_banded(C, 3001, 6, 1.2, 0, 11, &sys[1].A));
    sys[2].name = "banded spd n=31 k=3";
    sys[2].spd = 1;
    CHECK_OK(C, sap_gen_banded(C, 31, 3, 2.0, 1, 5, &sys[2].A));
    sys[3].name = "one row";
    sys[3].spd = 1;
    CHECK_OK(C, sap_gen_poisson2d(C, 1, 1, &sys[3].A));
    for (int s = 0; s < 4; s++)
        if (sys[s].A) make_rhs(&sys[s]);

    static const struct {
        sap_krylov_type type;
        int param;
    } solvers[] = {{SAP_KRYLOV_CG, 0},    {SAP_KRYLOV_BICGSTAB, 0}, {SAP_KRYLOV_BICGSTABL, 2},
                   {SAP_KRYLOV_GMRES, 20}, {SAP_KRYLOV_FGMRES, 30},  {SAP_KRYLOV_IDR, 4}};
    for (int s = 0; s < 4; s++) {
        if (!sys[s].A) continue;
        for (size_t k = 0; k < sizeof(solvers) / sizeof(solvers[0]); k++) {
            if (solvers[k].type == SAP_KRYLOV_CG && !sys[s].spd) continue;
            run_case(&sys[s], solvers[k].type, solvers[k].param, SAP_PRECOND_RIGHT, NULL, SAP_DOUBLE, SAP_FORMAT_AUTO);
            run_case(&sys[s], solvers[k].type, solvers[k].param, SAP_PRECOND_RIGHT, "jacobi", SAP_DOUBLE,
                     SAP_FORMAT_AUTO);
            if (solvers[k].type != SAP_KRYLOV_CG && solvers[k].type != SAP_KRYLOV_FGMRES)
                run_case(&sys[s], solvers[k].type, solvers[k].param, SAP_PRECOND_LEFT, "jacobi", SAP_DOUBLE,
                         SAP_FORMAT_AUTO);
            run_case(&sys[s], solvers[k].type, solvers[k].param, SAP_PRECOND_RIGHT, "jacobi", SAP_FLOAT,
                     SAP_FORMAT_AUTO);
        }
    }
    /* every SpMV format inside a solve */
    static const sap_spmv_format fmts[] = {SAP_FORMAT_CSR, SAP_FORMAT_ELL, SAP_FORMAT_SELLP, SAP_FORMAT_HEC,
                                           SAP_FORMAT_BAND};
    for (size_t f = 0; f < 5; f++) {
        if (sys[0].A) run_case(&sys[0], SAP_KRYLOV_CG, 0, SAP_PRECOND_RIGHT, "jacobi", SAP_DOUBLE, fmts[f]);
        if (sys[1].A) run_case(&sys[1], SAP_KRYLOV_BICGSTABL, 2, SAP_PRECOND_RIGHT, NULL, SAP_DOUBLE, fmts[f]);
    }

    for (int s = 0; s < 4; s++) {
        sap_csr_destroy(sys[s].A);
        free(sys[s].b);
        free(sys[s].xstar);
    }
    sap_context_destroy(G);
    sap_context_destroy(C);
    return sap_test_finish("test_gpu_krylov");
}
