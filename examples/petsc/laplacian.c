/* laplacian.c -- a PETSc KSP tutorial-like program (after KSP ex2): the 5-point Laplacian on
 * an m x n grid, distributed by rows over the MPI ranks, solved with the options given on
 * the command line, e.g. with sap on each rank's diagonal block:
 *
 *   mpiexec -n 2 ./petsc_laplacian -m 64 -n 64 -ksp_type gmres -pc_type bjacobi \
 *       -sub_pc_type sap -ksp_converged_reason -log_view
 *
 * Built linked to libsap_petsc (it calls PCRegisterSap), and as petsc_laplacian_dll, which
 * is not linked to it: there the type comes from -dll_append /path/libsap_petsc.so.
 * The exact solution is all ones; the program prints the error norm and the iterations.
 * -second_solve: then shifts the diagonal (same nonzero pattern: sap refactors) and solves
 * again. */
#include <petscksp.h>

#ifndef SAP_PETSC_DLL
#include "sap_petsc.h"
#endif

int main(int argc, char **argv)
{
    PetscInt m = 32, n = 32, Istart, Iend, its;
    PetscReal norm;
    Vec x, b, u;
    Mat A;
    KSP ksp;
    KSPConvergedReason reason;

    PetscCall(PetscInitialize(&argc, &argv, NULL, "5-point Laplacian solved with KSP (sap as PC)\n"));
#ifndef SAP_PETSC_DLL
    PetscCall(PCRegisterSap());
#endif
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-m", &m, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));

    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, m * n, m * n));
    PetscCall(MatSetFromOptions(A));
    PetscCall(MatMPIAIJSetPreallocation(A, 5, NULL, 5, NULL));
    PetscCall(MatSeqAIJSetPreallocation(A, 5, NULL));
    PetscCall(MatGetOwnershipRange(A, &Istart, &Iend));
    for (PetscInt Ii = Istart; Ii < Iend; Ii++) {
        PetscInt i = Ii / n, j = Ii - i * n, J;
        PetscScalar v = -1.0;
        if (i > 0) { J = Ii - n; PetscCall(MatSetValues(A, 1, &Ii, 1, &J, &v, ADD_VALUES)); }
        if (i < m - 1) { J = Ii + n; PetscCall(MatSetValues(A, 1, &Ii, 1, &J, &v, ADD_VALUES)); }
        if (j > 0) { J = Ii - 1; PetscCall(MatSetValues(A, 1, &Ii, 1, &J, &v, ADD_VALUES)); }
        if (j < n - 1) { J = Ii + 1; PetscCall(MatSetValues(A, 1, &Ii, 1, &J, &v, ADD_VALUES)); }
        v = 4.0;
        PetscCall(MatSetValues(A, 1, &Ii, 1, &Ii, &v, ADD_VALUES));
    }
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));

    PetscCall(MatCreateVecs(A, &u, &b));
    PetscCall(VecDuplicate(b, &x));
    PetscCall(VecSet(u, 1.0));
    PetscCall(MatMult(A, u, b));

    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetOperators(ksp, A, A));
    PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT));
    PetscCall(KSPSetFromOptions(ksp));
    PetscCall(KSPSolve(ksp, b, x));

    PetscCall(VecAXPY(x, -1.0, u));
    PetscCall(VecNorm(x, NORM_2, &norm));
    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "laplacian %" PetscInt_FMT "x%" PetscInt_FMT ": error norm %g, iterations %" PetscInt_FMT ", %s\n",
                          m, n, (double)norm, its, reason > 0 ? "converged" : "NOT converged"));
    PetscBool second = PETSC_FALSE;
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-second_solve", &second, NULL));
    if (second && reason > 0) {
        PetscCall(MatShift(A, 0.5)); /* new values, same pattern */
        PetscCall(MatMult(A, u, b));
        PetscCall(KSPSetOperators(ksp, A, A));
        PetscCall(KSPSolve(ksp, b, x));
        PetscCall(VecAXPY(x, -1.0, u));
        PetscCall(VecNorm(x, NORM_2, &norm));
        PetscCall(KSPGetIterationNumber(ksp, &its));
        PetscCall(KSPGetConvergedReason(ksp, &reason));
        PetscCall(PetscPrintf(PETSC_COMM_WORLD, "laplacian + 0.5 I: error norm %g, iterations %" PetscInt_FMT ", %s\n",
                              (double)norm, its, reason > 0 ? "converged" : "NOT converged"));
    }

    PetscCall(KSPDestroy(&ksp));
    PetscCall(VecDestroy(&u));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&b));
    PetscCall(MatDestroy(&A));
    PetscCall(PetscFinalize());
    return reason > 0 ? 0 : 3;
}
