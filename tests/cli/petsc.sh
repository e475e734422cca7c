#!/usr/bin/env bash
# The PETSc plugin (petsc/, libsap_petsc.so) through examples/petsc/laplacian.c: sequential
# -pc_type sap with -pc_sap_* options, -dll_append loading, bjacobi and asm over 2 MPI ranks
# with -sub_pc_type sap, the sap events in -log_view, and a bad option refused.  Skipped
# (exit 77) where the build has no PETSc (SAP_DEPS_PETSC=1 scripts/deps.sh installs it).
# usage: petsc.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
BUILD=$(dirname "$SAP")
P=$BUILD/petsc
if [ ! -x "$P/petsc_laplacian" ]; then
    echo "petsc: SKIPPED: this build has no PETSc plugin (PETSc/MPI not found: SAP_DEPS_PETSC=1 scripts/deps.sh installs petsc-dev)"
    exit 77
fi
rm -rf "$W" && mkdir -p "$W"
. "$(dirname "$0")/lib.bash"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1
# Under AddressSanitizer: Open MPI keeps memory to exit in components it has unloaded by
# then (stacks LeakSanitizer cannot attribute, so no suppression list holds), so leak
# checking is off here (ASan's other checks stay on); the plugin's own memory is checked by
# PETSc's -malloc_debug -malloc_dump below, the library's by its own tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
MPI="mpiexec -n 2"
converged() { contains "$W/out" "converged"; lacks "$W/out" "NOT converged"; }

# sequential, the automatic choice and forced methods through -pc_sap_*; nothing the plugin
# allocated through PETSc is left at PetscFinalize (-malloc_dump lists any such block)
expect 0 "$P/petsc_laplacian" -pc_type sap -ksp_type gmres -ksp_view -malloc_debug -malloc_dump
converged
lacks "$W/out" "pc_sap.c"
lacks "$W/err" "pc_sap.c"
contains "$W/out" "type: sap"
contains "$W/out" "sap stages (s): T_DB"
expect 0 "$P/petsc_laplacian" -pc_type sap -pc_sap_method sap-c -pc_sap_partitions 4 -pc_sap_tol 1e-6 -ksp_view
converged
contains "$W/out" "method sap-c"
# new values on the same pattern: the second setup is a refactor (SapRefactor in -log_view)
expect 0 "$P/petsc_laplacian" -pc_type sap -ksp_type cg -m 40 -n 20 -log_view -second_solve
converged
contains "$W/out" "laplacian + 0.5 I: .*, converged"
contains "$W/out" "SapRefactor  *1 "
contains "$W/out" "SapSetup"
contains "$W/out" "SapSolve"
# the plugin loaded at run time into a program not linked to it
expect 0 "$P/petsc_laplacian_dll" -dll_append "$(cd "$P" && pwd)/libsap_petsc.so" -pc_type sap -ksp_view
converged
contains "$W/out" "type: sap"
# parallel: each rank's block through sap, bjacobi and asm, with the sap events in -log_view
expect 0 $MPI "$P/petsc_laplacian" -m 48 -n 48 -ksp_type gmres -pc_type bjacobi -sub_pc_type sap -log_view \
    -second_solve
converged
contains "$W/out" "laplacian + 0.5 I: .*, converged"
contains "$W/out" "SapSetup"
contains "$W/out" "SapSolve"
expect 0 $MPI "$P/petsc_laplacian" -ksp_type gmres -pc_type asm -sub_pc_type sap -sub_pc_sap_method sap-d \
    -sub_pc_sap_partitions 2
converged
# refused: a bad option value, a parallel matrix given to -pc_type sap directly
"$P/petsc_laplacian" -pc_type sap -pc_sap_method bogus >"$W/out" 2>"$W/err"
if [ $? -ne 0 ]; then ok; else bad "a bad -pc_sap_method was accepted"; fi
contains "$W/err" "bad value 'bogus'"
$MPI "$P/petsc_laplacian" -pc_type sap >"$W/out" 2>"$W/err"
if [ $? -ne 0 ]; then ok; else bad "a parallel matrix was accepted by -pc_type sap"; fi
contains "$W/err" "sub_pc_type sap"
summary petsc
