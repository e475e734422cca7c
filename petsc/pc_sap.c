/* pc_sap.c -- the PETSc preconditioner type "sap" (see sap_petsc.h): each application of the
 * PC solves with the sap pipeline on the (sequential) preconditioning matrix: the whole
 * matrix in a sequential run, each rank's or subdomain's block under bjacobi or asm.  The
 * setup is kept across applications; a new matrix with the same nonzero pattern redoes the
 * numeric setup only (sap_solver_refactor). */
#include <petsc/private/pcimpl.h>
#include <stdio.h>
#include <string.h>

#include "sap.h"
#include "sap_petsc.h"

typedef struct {
    sap_context *ctx;
    sap_solver *S;
    sap_solver_options opt;
    char backend[16];
    PetscInt threads;
    PetscInt n, nnz;
    sap_int *rowptr, *colind; /* the pattern given to sap (int64) */
    double *val;              /* values in that order (refactor) */
    PetscObjectState state;   /* of the matrix set up */
} PC_Sap;

static PetscLogEvent ev_setup, ev_refactor, ev_solve;
static PetscBool registered;

/* The sap_solver_options_set names exposed as -pc_sap_<name>. */
static const char *const option_names[] = {"method", "fallback", "db", "scale", "cm", "drop", "partitions",
                                           "third_stage", "precision", "boost_threshold", "boost_value",
                                           "krylov", "tol", "maxit", "memory_limit", "host_small",
                                           "host_direct", "long_step", "stagnation"};

#define SAP_CHECK(pc, st, what)                                                                         \
    do {                                                                                                \
        if ((st) < 0)                                                                                   \
            SETERRQ(PetscObjectComm((PetscObject)(pc)), PETSC_ERR_LIB, "sap: %s: %s: %s", (what),      \
                    sap_status_name(st), sap_context_last_error(((PC_Sap *)(pc)->data)->ctx));         \
    } while (0)

static PetscErrorCode PCReset_Sap(PC pc)
{
    PC_Sap *s = (PC_Sap *)pc->data;
    PetscFunctionBegin;
    if (s->S) sap_solver_destroy(s->S);
    s->S = NULL;
    PetscCall(PetscFree(s->rowptr));
    PetscCall(PetscFree(s->colind));
    PetscCall(PetscFree(s->val));
    s->n = s->nnz = 0;
    PetscFunctionReturn(0);
}

static PetscErrorCode PCDestroy_Sap(PC pc)
{
    PC_Sap *s = (PC_Sap *)pc->data;
    PetscFunctionBegin;
    PetscCall(PCReset_Sap(pc));
    if (s->ctx) sap_context_destroy(s->ctx);
    PetscCall(PetscFree(pc->data));
    PetscFunctionReturn(0);
}

static PetscErrorCode PCSetFromOptions_Sap(PC pc, PetscOptionItems *PetscOptionsObject)
{
    PC_Sap *s = (PC_Sap *)pc->data;
    char value[256], opt[64], msg[512];
    PetscBool set;
    PetscFunctionBegin;
    PetscOptionsHeadBegin(PetscOptionsObject, "sap preconditioner options (sap_solver_options_set names)");
    for (size_t i = 0; i < sizeof(option_names) / sizeof(option_names[0]); i++) {
        snprintf(opt, sizeof opt, "-pc_sap_%s", option_names[i]);
        PetscCall(PetscOptionsString(opt, "sap solver option (see sap solve --opt help)", "PCSAP", "", value,
                                     sizeof value, &set));
        if (set && sap_solver_options_set_msg(&s->opt, option_names[i], value, msg, sizeof msg) != SAP_OK)
            SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG, "sap: %s: %s", opt, msg);
    }
    PetscCall(PetscOptionsString("-pc_sap_backend", "sap backend: auto, cpu or cuda", "PCSAP", s->backend,
                                 s->backend, sizeof s->backend, NULL));
    PetscCall(PetscOptionsInt("-pc_sap_threads", "CPU threads of sap (0: the OpenMP default)", "PCSAP",
                              s->threads, &s->threads, NULL));
    PetscOptionsHeadEnd();
    PetscFunctionReturn(0);
}

/* The CSR of the preconditioning matrix (sequential AIJ; other types are converted). */
static PetscErrorCode get_csr(PC pc, Mat *aij, PetscInt *n, const PetscInt **ia, const PetscInt **ja,
                              const PetscScalar **va, PetscBool *converted)
{
    PetscBool isaij, done;
    PetscFunctionBegin;
    PetscCall(PetscObjectTypeCompare((PetscObject)pc->pmat, MATSEQAIJ, &isaij));
    *converted = PETSC_FALSE;
    *aij = pc->pmat;
    if (!isaij) {
        PetscMPIInt size;
        PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)pc->pmat), &size));
        if (size > 1)
            SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_SUP,
                    "sap: -pc_type sap takes a sequential matrix; in parallel use -pc_type bjacobi "
                    "-sub_pc_type sap (or asm)");
        PetscCall(MatConvert(pc->pmat, MATSEQAIJ, MAT_INITIAL_MATRIX, aij));
        *converted = PETSC_TRUE;
    }
    PetscCall(MatGetRowIJ(*aij, 0, PETSC_FALSE, PETSC_FALSE, n, ia, ja, &done));
    if (!done) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "sap: cannot get the rows of the matrix");
    PetscCall(MatSeqAIJGetArrayRead(*aij, va));
    PetscFunctionReturn(0);
}

static PetscErrorCode put_csr(Mat aij, PetscInt n, const PetscInt *ia, const PetscInt *ja, const PetscScalar *va,
                              PetscBool converted)
{
    PetscBool done;
    PetscFunctionBegin;
    PetscCall(MatSeqAIJRestoreArrayRead(aij, &va));
    PetscCall(MatRestoreRowIJ(aij, 0, PETSC_FALSE, PETSC_FALSE, &n, &ia, &ja, &done));
    if (converted) PetscCall(MatDestroy(&aij));
    PetscFunctionReturn(0);
}

static PetscErrorCode PCSetUp_Sap(PC pc)
{
    PC_Sap *s = (PC_Sap *)pc->data;
    Mat aij;
    PetscInt n;
    const PetscInt *ia, *ja;
    const PetscScalar *va;
    PetscBool converted = PETSC_FALSE;
    PetscFunctionBegin;
    if (!s->ctx) {
        sap_context_config cfg;
        sap_context_config_init(&cfg);
        if (sap_backend_parse(s->backend, &cfg.backend) != SAP_OK)
            SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG,
                    "sap: -pc_sap_backend %s: expected auto, cpu or cuda", s->backend);
        cfg.threads = (int)s->threads;
        sap_status st = sap_context_create(&s->ctx, &cfg);
        if (st != SAP_OK)
            SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_LIB, "sap: cannot create a %s context: %s",
                    s->backend, sap_status_string(st));
    }
    PetscCall(get_csr(pc, &aij, &n, &ia, &ja, &va, &converted));
    PetscInt nnz = ia[n];
    int same_pattern = s->S && pc->setupcalled && pc->flag == SAME_NONZERO_PATTERN && n == s->n && nnz == s->nnz;
    if (same_pattern) {
        for (PetscInt k = 0; k < nnz; k++) s->val[k] = PetscRealPart(va[k]);
        PetscCall(PetscLogEventBegin(ev_refactor, pc, 0, 0, 0));
        sap_status st = sap_solver_refactor(s->S, s->val);
        PetscCall(PetscLogEventEnd(ev_refactor, pc, 0, 0, 0));
        PetscCall(put_csr(aij, n, ia, ja, va, converted));
        SAP_CHECK(pc, st, "refactor");
        PetscFunctionReturn(0);
    }
    PetscCall(PCReset_Sap(pc));
    PetscCall(PetscMalloc1(n + 1, &s->rowptr));
    PetscCall(PetscMalloc1(nnz > 0 ? nnz : 1, &s->colind));
    PetscCall(PetscMalloc1(nnz > 0 ? nnz : 1, &s->val));
    for (PetscInt i = 0; i <= n; i++) s->rowptr[i] = ia[i];
    for (PetscInt k = 0; k < nnz; k++) {
        s->colind[k] = ja[k];
        s->val[k] = PetscRealPart(va[k]);
    }
    s->n = n;
    s->nnz = nnz;
    PetscCall(put_csr(aij, n, ia, ja, va, converted));
    sap_csr *A = NULL;
    sap_status st = sap_csr_from_arrays(s->ctx, n, n, s->rowptr, s->colind, s->val, &A);
    SAP_CHECK(pc, st, "the matrix");
    /* PETSc's AIJ rows are sorted without duplicates: the CSR order is the library's, so
     * refactor takes s->val in the same order */
    if (A->nnz != nnz) {
        sap_csr_destroy(A);
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "sap: the matrix rows are not sorted and unique");
    }
    st = sap_solver_create(s->ctx, A, &s->opt, &s->S);
    sap_csr_destroy(A);
    SAP_CHECK(pc, st, "create");
    PetscCall(PetscLogEventBegin(ev_setup, pc, 0, 0, 0));
    st = sap_solver_setup(s->S);
    PetscCall(PetscLogEventEnd(ev_setup, pc, 0, 0, 0));
    SAP_CHECK(pc, st, "setup");
    PetscFunctionReturn(0);
}

static PetscErrorCode PCApply_Sap(PC pc, Vec x, Vec y)
{
    PC_Sap *s = (PC_Sap *)pc->data;
    const PetscScalar *b;
    PetscScalar *z;
    PetscFunctionBegin;
    PetscCall(VecSet(y, 0.0));
    PetscCall(VecGetArrayRead(x, &b));
    PetscCall(VecGetArray(y, &z));
    PetscCall(PetscLogEventBegin(ev_solve, pc, x, y, 0));
    sap_status st = sap_solver_solve(s->S, (const double *)b, (double *)z);
    PetscCall(PetscLogEventEnd(ev_solve, pc, x, y, 0));
    PetscCall(VecRestoreArray(y, &z));
    PetscCall(VecRestoreArrayRead(x, &b));
    SAP_CHECK(pc, st, "solve");
    /* a warning (not converged to -pc_sap_tol): the outer Krylov method absorbs it */
    PetscFunctionReturn(0);
}

static PetscErrorCode PCView_Sap(PC pc, PetscViewer viewer)
{
    PC_Sap *s = (PC_Sap *)pc->data;
    PetscBool ascii;
    PetscFunctionBegin;
    PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
    if (!ascii) PetscFunctionReturn(0);
    if (!s->S) {
        PetscCall(PetscViewerASCIIPrintf(viewer, "  sap: not set up\n"));
        PetscFunctionReturn(0);
    }
    sap_solver_stats t;
    sap_solver_get_stats(s->S, &t);
    PetscCall(PetscViewerASCIIPrintf(viewer, "  sap %s on %s: method %s, %s\n", sap_version_string(),
                                     sap_context_device_name(s->ctx), sap_solver_method_name(t.method),
                                     t.reason));
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  sap: n %" PetscInt_FMT ", K original %lld, after CM %lld, after drop-off "
                                     "%lld, P %lld, Krylov %s\n",
                                     s->n, (long long)t.K_original, (long long)t.K_cm, (long long)t.K_drop,
                                     (long long)t.partitions, sap_krylov_name(t.krylov_type)));
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  sap stages (s): T_DB %.3g T_CM %.3g T_Drop %.3g T_Dtransf %.3g "
                                     "T_Asmbl %.3g T_LU %.3g T_SPK %.3g T_LUrdcd %.3g T_Kry %.3g (last solve: "
                                     "%g iterations, residual %.3g)\n",
                                     t.time_db, t.time_cm, t.time_drop, t.time_transfer, t.time_asmbl, t.time_lu,
                                     t.time_spk, t.time_lurdcd, t.time_kry, t.iterations, t.relative_residual));
    PetscFunctionReturn(0);
}

static PetscErrorCode PCCreate_Sap(PC pc)
{
    PC_Sap *s;
    PetscFunctionBegin;
    PetscCall(PetscNew(&s));
    sap_solver_options_init(&s->opt);
    /* a preconditioner: a modest inner tolerance by default (-pc_sap_tol changes it) */
    s->opt.krylov.tol = 1e-8;
    strcpy(s->backend, "auto");
    pc->data = (void *)s;
    pc->ops->setup = PCSetUp_Sap;
    pc->ops->apply = PCApply_Sap;
    pc->ops->reset = PCReset_Sap;
    pc->ops->destroy = PCDestroy_Sap;
    pc->ops->setfromoptions = PCSetFromOptions_Sap;
    pc->ops->view = PCView_Sap;
    PetscFunctionReturn(0);
}

PetscErrorCode PCRegisterSap(void)
{
    PetscFunctionBegin;
    if (registered) PetscFunctionReturn(0);
    registered = PETSC_TRUE;
    PetscCall(PCRegister(PCSAP, PCCreate_Sap));
    PetscCall(PetscLogEventRegister("SapSetup", PC_CLASSID, &ev_setup));
    PetscCall(PetscLogEventRegister("SapRefactor", PC_CLASSID, &ev_refactor));
    PetscCall(PetscLogEventRegister("SapSolve", PC_CLASSID, &ev_solve));
    PetscFunctionReturn(0);
}

/* Called by PETSc when the library is loaded with -dll_append (libsap_petsc.so). */
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_sap_petsc(void);
PetscErrorCode PetscDLLibraryRegister_sap_petsc(void) { return PCRegisterSap(); }
