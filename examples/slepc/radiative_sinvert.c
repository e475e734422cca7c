/* radiative_sinvert.c -- SLEPc shift-and-invert with sap's block-tridiagonal solver (the
 * setting of Lamas Davina and Roman 2018): the 5 eigenvalues closest to sigma = 0.75 of the
 * radiative-transfer operator (gen:radiative, albedo 0.75, band from the paper's equation 21
 * with tau chosen so that the band fits the blocks of width k), Krylov-Schur with basis 16,
 * tol 1e-8, EPS + STSINVERT whose KSP is PREONLY with a PCSHELL applying sap_btd_solve on
 * A - sigma I (BCYCLIC, factored once).  Anchor in the same run: the same EPS with PETSc's
 * own sparse LU (PCLU) as the ST's solver.  Prints the eigenvalues, their relative errors,
 * the factorization / solve / total times of both and the largest eigenvalue difference.
 *
 * usage: slepc_radiative_sinvert [-k 64] [-nb 100] [-backend cpu|cuda|auto]
 * (and any SLEPc/PETSc option).  Sequential (one process). */
#include "sap.h"

#include <math.h>
#include <slepceps.h>
#include <stdio.h>
#include <string.h>

typedef struct shell {
    sap_btd *T;
    long solves;
    double seconds;
} shell;

static PetscErrorCode shell_apply(PC pc, Vec x, Vec y)
{
    shell *s;
    const PetscScalar *px;
    PetscScalar *py;
    PetscFunctionBeginUser;
    PetscCall(PCShellGetContext(pc, &s));
    PetscCall(VecGetArrayRead(x, &px));
    PetscCall(VecGetArray(y, &py));
    double t0 = MPI_Wtime();
    sap_status st = sap_btd_solve(s->T, px, py);
    s->seconds += MPI_Wtime() - t0;
    s->solves++;
    PetscCall(VecRestoreArrayRead(x, &px));
    PetscCall(VecRestoreArray(y, &py));
    PetscCheck(st == SAP_OK, PETSC_COMM_SELF, PETSC_ERR_LIB, "sap_btd_solve: %s", sap_status_name(st));
    PetscFunctionReturn(0);
}

typedef struct run {
    PetscInt nconv;
    double val[16], err[16];
    double total, factor, solve;
    long solves;
} run;

/* EPS on A with shift-and-invert at sigma; sap != NULL: the ST's solver is the shell */
static PetscErrorCode solve_eps(Mat A, double sigma, shell *sap, run *r)
{
    EPS eps;
    ST st;
    KSP ksp;
    PC pc;
    PetscFunctionBeginUser;
    PetscCall(EPSCreate(PETSC_COMM_SELF, &eps));
    PetscCall(EPSSetOperators(eps, A, NULL));
    PetscCall(EPSSetProblemType(eps, EPS_NHEP));
    PetscCall(EPSSetType(eps, EPSKRYLOVSCHUR));
    PetscCall(EPSSetWhichEigenpairs(eps, EPS_TARGET_MAGNITUDE));
    PetscCall(EPSSetTarget(eps, sigma));
    PetscCall(EPSSetDimensions(eps, 5, 16, PETSC_DEFAULT));
    PetscCall(EPSSetTolerances(eps, 1e-8, PETSC_DEFAULT));
    PetscCall(EPSGetST(eps, &st));
    PetscCall(STSetType(st, STSINVERT));
    PetscCall(STGetKSP(st, &ksp));
    PetscCall(KSPSetType(ksp, KSPPREONLY));
    PetscCall(KSPGetPC(ksp, &pc));
    if (sap) {
        PetscCall(PCSetType(pc, PCSHELL));
        PetscCall(PCShellSetContext(pc, sap));
        PetscCall(PCShellSetApply(pc, shell_apply));
        PetscCall(PCShellSetName(pc, "sap_btd (BCYCLIC)"));
    } else {
        PetscCall(PCSetType(pc, PCLU));
    }
    PetscCall(EPSSetFromOptions(eps));
    double t0 = MPI_Wtime();
    PetscCall(EPSSetUp(eps)); /* PCLU factors here */
    r->factor = MPI_Wtime() - t0;
    PetscCall(EPSSolve(eps));
    r->total = MPI_Wtime() - t0;
    PetscCall(EPSGetConverged(eps, &r->nconv));
    if (r->nconv > 16) r->nconv = 16;
    for (PetscInt i = 0; i < r->nconv; i++) {
        PetscScalar kr, ki;
        PetscReal e;
        PetscCall(EPSGetEigenvalue(eps, i, &kr, &ki));
        PetscCall(EPSComputeError(eps, i, EPS_ERROR_RELATIVE, &e));
        r->val[i] = (double)kr, r->err[i] = (double)e;
    }
    PetscCall(EPSDestroy(&eps));
    PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
    PetscInt k = 64, nb = 100;
    char backend[16] = "auto";
    const double albedo = 0.75, sigma = 0.75;
    PetscCall(SlepcInitialize(&argc, &argv, NULL, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-k", &k, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-nb", &nb, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-backend", backend, sizeof backend, NULL));
    const sap_int n = (sap_int)k * nb;
    /* equation 21: bw = n (1 - exp(-n / (tc tau))), tc = max(n/100, 5); tau such that bw = k - 1 */
    double tc = fmax((double)n / 100.0, 5.0), tau = -(double)n / (tc * log(1.0 - (double)(k - 1) / (double)n));
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    if (sap_backend_parse(backend, &cfg.backend) != SAP_OK) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "backend");
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "sap_context_create");
    sap_csr *A = NULL, *As = NULL;
    if (sap_gen_radiative(ctx, n, albedo, tau, -1, 0.0, &A) != SAP_OK ||
        sap_gen_radiative(ctx, n, albedo, tau, -1, sigma, &As) != SAP_OK)
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "sap_gen_radiative: %s", sap_context_last_error(ctx));
    /* the operator for SLEPc (PETSc AIJ, 32-bit indices) */
    Mat M;
    PetscCall(MatCreateSeqAIJ(PETSC_COMM_SELF, (PetscInt)n, (PetscInt)n, 0, NULL, &M));
    PetscInt *nnzr;
    PetscCall(PetscMalloc1(n, &nnzr));
    for (sap_int i = 0; i < n; i++) nnzr[i] = (PetscInt)(A->rowptr[i + 1] - A->rowptr[i]);
    PetscCall(MatSeqAIJSetPreallocation(M, 0, nnzr));
    PetscCall(PetscFree(nnzr));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            PetscInt r = (PetscInt)i, c = (PetscInt)A->colind[p];
            PetscScalar v = A->val[p];
            PetscCall(MatSetValues(M, 1, &r, 1, &c, &v, INSERT_VALUES));
        }
    PetscCall(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
    /* sap: A - sigma I as a block-tridiagonal matrix, factored once */
    shell sh = {0};
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.algo = SAP_BTD_BCYCLIC;
    double t0 = MPI_Wtime();
    sap_status st = sap_btd_create_csr(ctx, As, (sap_int)k, &o, &sh.T);
    if (st == SAP_OK) st = sap_btd_factor(sh.T);
    double tfac = MPI_Wtime() - t0;
    if (st != SAP_OK) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "sap_btd: %s", sap_context_last_error(ctx));
    sap_btd_stats bs;
    sap_btd_get_stats(sh.T, &bs);
    run rs = {0}, rp = {0};
    PetscCall(solve_eps(M, sigma, &sh, &rs));
    /* total: creation (upload), calibration and factorization included */
    rs.factor = bs.time_factor, rs.solve = sh.seconds, rs.solves = sh.solves, rs.total += tfac;
    /* sap's line first: it stands even when PETSc's LU (much slower) is cut short */
    PetscCall(PetscPrintf(PETSC_COMM_SELF,
                          "radiative transfer: n = %lld (k = %d, %d block rows), albedo %.2f, tau %.4g, shift %.2f, "
                          "%s\n",
                          (long long)n, (int)k, (int)nb, albedo, tau, sigma, sap_context_device_name(ctx)));
    PetscCall(PetscPrintf(PETSC_COMM_SELF,
                          "sap_btd   : %d converged, factor %.4f s (%s, %s; calibration %.4f s), %ld solves %.4f s, "
                          "total %.4f s\n",
                          (int)rs.nconv, rs.factor, sap_btd_algo_name(bs.algo), sap_btd_variant_name(bs.variant),
                          bs.time_calibrate, rs.solves, rs.solve, rs.total));
    fflush(stdout);
    PetscCall(solve_eps(M, sigma, NULL, &rp));
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "%-3s %-22s %-10s %-22s %-10s\n", "i", "lambda (sap_btd)", "rel.err",
                          "lambda (PETSc LU)", "rel.err"));
    double maxdiff = 0;
    PetscInt m = rs.nconv > rp.nconv ? rs.nconv : rp.nconv;
    for (PetscInt i = 0; i < m; i++) {
        PetscCall(PetscPrintf(PETSC_COMM_SELF, "%-3d %-22.15f %-10.2e %-22.15f %-10.2e\n", (int)i,
                              i < rs.nconv ? rs.val[i] : NAN, i < rs.nconv ? rs.err[i] : NAN,
                              i < rp.nconv ? rp.val[i] : NAN, i < rp.nconv ? rp.err[i] : NAN));
        if (i < rs.nconv && i < rp.nconv) maxdiff = fmax(maxdiff, fabs(rs.val[i] - rp.val[i]));
    }
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "PETSc LU  : %d converged, setup (factor) %.4f s, total %.4f s\n",
                          (int)rp.nconv, rp.factor, rp.total));
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "speedup %.2fx, largest eigenvalue difference %.2e\n", rp.total / rs.total,
                          maxdiff));
    int ok = rs.nconv >= 5 && rp.nconv >= 5 && maxdiff <= 1e-8;
    for (PetscInt i = 0; i < 5 && i < rs.nconv; i++) ok = ok && rs.err[i] <= 1e-8;
    sap_btd_destroy(sh.T);
    sap_csr_destroy(A);
    sap_csr_destroy(As);
    PetscCall(MatDestroy(&M));
    sap_context_destroy(ctx);
    PetscCall(SlepcFinalize());
    return ok ? 0 : 1;
}
