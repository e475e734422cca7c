/* sap_petsc.h -- the PETSc preconditioner type "sap" (PCSAP): the sap sparse solver
 * (include/sap.h) as a PETSc PC.
 *
 * Loading: as a plugin, `-dll_append /path/to/libsap_petsc.so` (PETSc calls
 * PetscDLLibraryRegister_sap_petsc, which registers the type), or linked: call
 * PCRegisterSap() after PetscInitialize.  Then `-pc_type sap`, or per block
 * `-pc_type bjacobi -sub_pc_type sap` / `-pc_type asm -sub_pc_type sap` with MPI.
 *
 * Options (-pc_sap_<name> for every sap_solver_options_set name): -pc_sap_method,
 * -pc_sap_precision, -pc_sap_tol, -pc_sap_maxit, -pc_sap_partitions, -pc_sap_drop,
 * -pc_sap_db, -pc_sap_krylov, ... plus -pc_sap_backend cpu|cuda|auto and -pc_sap_threads.
 * -log_view lists the events SapSetup, SapRefactor and SapSolve; -ksp_view (PCView) prints
 * the method chosen, why, the bandwidths and the stage times T_DB, T_CM, T_Drop, T_Asmbl,
 * T_LU, T_SPK, T_Kry. */
#ifndef SAP_PETSC_H
#define SAP_PETSC_H

#include <petscpc.h>

#define PCSAP "sap"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers PCSAP (idempotent). */
PETSC_EXTERN PetscErrorCode PCRegisterSap(void);

#ifdef __cplusplus
}
#endif

#endif
