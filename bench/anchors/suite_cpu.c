/* suite_cpu.c -- the CPU anchors of bench/suite, all with their default settings as in the
 * paper (section 4.3.3): SuperLU (dgssv), UMFPACK (umfpack_di_*), MUMPS (dmumps_c,
 * sequential with threaded BLAS) linked when CMake found them (SAP_SUITE_HAVE_SUPERLU,
 * _UMFPACK, _MUMPS), and MKL PARDISO loaded at run time with dlopen ($SAP_MKL_LIB, else
 * libmkl_rt.so.3 / .so.2 / .so from the library path).
 *
 * SuperLU and UMFPACK take compressed columns; the suite's CSR is the compressed-column
 * form of A^T, so they factor A^T and solve the transposed system (SuperLU's dgssv does so
 * itself for SLU_NR input; UMFPACK with UMFPACK_Aat), which needs no conversion beyond
 * the 32-bit index copy -- the same work as factoring A.  The 32-bit (and for MUMPS,
 * 1-based coordinate) copies are inside the timed region. */
#define _GNU_SOURCE
#include "suite_anchor.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SAP_SUITE_HAVE_SUPERLU
#include <slu_ddefs.h>
#endif
#ifdef SAP_SUITE_HAVE_UMFPACK
#include <umfpack.h>
#endif
#ifdef SAP_SUITE_HAVE_MUMPS
#include <dmumps_c.h>
#endif

/* ---- SuperLU ------------------------------------------------------------------------ */

int suite_run_superlu(const suite_problem *p, double *x, suite_run *r)
{
#ifndef SAP_SUITE_HAVE_SUPERLU
    (void)p;
    (void)x;
    suite_note(r, "SuperLU not built in (libsuperlu-dev not found at configure time)");
    return SUITE_RUN_NA;
#else
    r->init_s = 0;
    double t0 = suite_now();
    int *rp = suite_int32_rowptr(p, 0, r);
    int *ci = suite_int32_colind(p, 0, r);
    double *a = malloc(sizeof(double) * (size_t)(p->nnz > 0 ? p->nnz : 1));
    int *perm_r = malloc(sizeof(int) * (size_t)p->n);
    int *perm_c = malloc(sizeof(int) * (size_t)p->n);
    if (!rp || !ci || !a || !perm_r || !perm_c) {
        free(rp), free(ci), free(a), free(perm_r), free(perm_c);
        if (!r->note[0]) suite_note(r, "host allocation failed");
        return SUITE_RUN_OOM;
    }
    memcpy(a, p->val, sizeof(double) * (size_t)p->nnz);
    memcpy(x, p->b, sizeof(double) * (size_t)p->n);
    int n = (int)p->n;
    SuperMatrix A, L, U, B;
    superlu_options_t options;
    SuperLUStat_t stat;
    /* SLU_NR: row-wise storage; dgssv factors A^T (the column view) and solves with TRANS */
    dCreate_CompRow_Matrix(&A, n, n, (int)p->nnz, a, ci, rp, SLU_NR, SLU_D, SLU_GE);
    dCreate_Dense_Matrix(&B, n, 1, x, n, SLU_DN, SLU_D, SLU_GE);
    set_default_options(&options);
    options.PrintStat = NO;
    StatInit(&stat);
    int info = 0;
    dgssv(&options, &A, perm_c, perm_r, &L, &U, &B, &stat, &info);
    r->time_s = suite_now() - t0;
    int rc = SUITE_RUN_DONE;
    if (info > 0 && info <= n) {
        suite_note(r, "dgssv: U(%d,%d) is exactly zero (singular)", info, info);
        rc = SUITE_RUN_FAILED;
    } else if (info > n) {
        suite_note(r, "dgssv: memory allocation failed after %d bytes", info - n);
        rc = SUITE_RUN_OOM;
    } else if (info < 0) {
        suite_note(r, "dgssv: argument %d invalid", -info);
        rc = SUITE_RUN_FAILED;
    }
    if (info == 0 || (info > 0 && info <= n)) {
        SCformat *Ls = (SCformat *)L.Store;
        NCformat *Us = (NCformat *)U.Store;
        suite_note(r, "colperm=COLAMD nnz(L+U)=%lld", (long long)Ls->nnz + (long long)Us->nnz - n);
        Destroy_SuperNode_Matrix(&L);
        Destroy_CompCol_Matrix(&U);
    }
    StatFree(&stat);
    Destroy_SuperMatrix_Store(&A);
    Destroy_SuperMatrix_Store(&B);
    free(rp), free(ci), free(a), free(perm_r), free(perm_c);
    return rc;
#endif
}

/* ---- UMFPACK ------------------------------------------------------------------------ */

int suite_run_umfpack(const suite_problem *p, double *x, suite_run *r)
{
#ifndef SAP_SUITE_HAVE_UMFPACK
    (void)p;
    (void)x;
    suite_note(r, "UMFPACK not built in (libsuitesparse-dev not found at configure time)");
    return SUITE_RUN_NA;
#else
    double Control[UMFPACK_CONTROL], Info[UMFPACK_INFO];
    umfpack_di_defaults(Control);
    r->init_s = 0;
    double t0 = suite_now();
    int *rp = suite_int32_rowptr(p, 0, r);
    int *ci = suite_int32_colind(p, 0, r);
    if (!rp || !ci) {
        free(rp), free(ci);
        return SUITE_RUN_OOM;
    }
    int n = (int)p->n;
    void *Symbolic = NULL, *Numeric = NULL;
    /* (rp, ci, val) read as compressed columns is A^T */
    int st = umfpack_di_symbolic(n, n, rp, ci, p->val, &Symbolic, Control, Info);
    const char *phase = "symbolic";
    if (st == UMFPACK_OK) {
        phase = "numeric";
        st = umfpack_di_numeric(rp, ci, p->val, Symbolic, &Numeric, Control, Info);
    }
    if (st == UMFPACK_OK || st == UMFPACK_WARNING_singular_matrix) {
        int st2 = umfpack_di_solve(UMFPACK_Aat, rp, ci, p->val, x, p->b, Numeric, Control, Info);
        if (st == UMFPACK_OK || st2 < 0) phase = "solve", st = st2;
    }
    r->time_s = suite_now() - t0;
    int rc = SUITE_RUN_DONE;
    if (st == UMFPACK_ERROR_out_of_memory) {
        suite_note(r, "umfpack %s: out of memory", phase);
        rc = SUITE_RUN_OOM;
    } else if (st < 0) {
        suite_note(r, "umfpack %s: status %d", phase, st);
        rc = SUITE_RUN_FAILED;
    } else if (st > 0) {
        suite_note(r, "umfpack %s: warning %d (%s)", phase, st,
                   st == UMFPACK_WARNING_singular_matrix ? "singular matrix" : "see umfpack.h");
    }
    if (rc == SUITE_RUN_DONE) {
        int strat = (int)Info[UMFPACK_STRATEGY_USED];
        suite_note(r, "strategy=%s nnz(L+U)=%.0f",
                   strat == UMFPACK_STRATEGY_SYMMETRIC ? "symmetric" : "unsymmetric",
                   Info[UMFPACK_LNZ] + Info[UMFPACK_UNZ] - (double)n);
    }
    umfpack_di_free_numeric(&Numeric);
    umfpack_di_free_symbolic(&Symbolic);
    free(rp), free(ci);
    return rc;
#endif
}

/* ---- MUMPS (sequential) ------------------------------------------------------------- */

int suite_run_mumps(const suite_problem *p, double *x, suite_run *r)
{
#ifndef SAP_SUITE_HAVE_MUMPS
    (void)p;
    (void)x;
    suite_note(r, "MUMPS not built in (libmumps-seq-dev not found at configure time)");
    return SUITE_RUN_NA;
#else
    DMUMPS_STRUC_C id;
    memset(&id, 0, sizeof id);
    double t0 = suite_now();
    id.comm_fortran = -987654; /* USE_COMM_WORLD; the sequential library ignores it */
    id.par = 1;
    id.sym = 0; /* unsymmetric, the default */
    id.job = -1; /* JOB_INIT */
    dmumps_c(&id);
    r->init_s = suite_now() - t0;
    if (id.infog[0] < 0) {
        suite_note(r, "dmumps JOB_INIT: INFOG(1)=%d", id.infog[0]);
        return SUITE_RUN_FAILED;
    }
    t0 = suite_now();
    int *irn = malloc(sizeof(int) * (size_t)(p->nnz > 0 ? p->nnz : 1));
    int *jcn = malloc(sizeof(int) * (size_t)(p->nnz > 0 ? p->nnz : 1));
    double *a = malloc(sizeof(double) * (size_t)(p->nnz > 0 ? p->nnz : 1));
    if (!irn || !jcn || !a || p->n > 2147483647) {
        free(irn), free(jcn), free(a);
        id.job = -2;
        dmumps_c(&id);
        suite_note(r, "host allocation failed or N too large");
        return SUITE_RUN_OOM;
    }
    for (int64_t i = 0; i < p->n; i++)
        for (int64_t k = p->rowptr[i]; k < p->rowptr[i + 1]; k++) {
            irn[k] = (int)i + 1;
            jcn[k] = (int)p->colind[k] + 1;
        }
    memcpy(a, p->val, sizeof(double) * (size_t)p->nnz);
    memcpy(x, p->b, sizeof(double) * (size_t)p->n);
    id.n = (int)p->n;
    id.nnz = p->nnz;
    id.irn = irn;
    id.jcn = jcn;
    id.a = a;
    id.rhs = x;
    id.icntl[0] = -1; /* no error, diagnostic or global output */
    id.icntl[1] = -1;
    id.icntl[2] = -1;
    id.icntl[3] = 0;
    int retries = 0;
    for (;;) {
        id.job = 6; /* analysis + factorization + solve */
        dmumps_c(&id);
        /* -8/-9: a work array was too small for the default relaxation ICNTL(14) = 20%;
         * what a user does: retry with more (twice at most) */
        if ((id.infog[0] == -8 || id.infog[0] == -9) && retries < 2) {
            retries++;
            id.icntl[13] *= 2;
            memcpy(x, p->b, sizeof(double) * (size_t)p->n);
            continue;
        }
        break;
    }
    r->time_s = suite_now() - t0;
    int rc = SUITE_RUN_DONE;
    int e = id.infog[0];
    if (e < 0) {
        suite_note(r, "dmumps: INFOG(1)=%d INFOG(2)=%d%s", e, id.infog[1],
                   e == -10 ? " (numerically singular)" : e == -13 ? " (allocation failed)" : "");
        rc = (e == -13 || e == -19 || e == -17 || e == -20) ? SUITE_RUN_OOM : SUITE_RUN_FAILED;
    } else {
        suite_note(r, "ordering=%d nnz(factors)=%lld", id.infog[6], (long long)id.infog[28]);
    }
    if (retries) suite_note(r, "ICNTL(14) raised to %d after -8/-9", id.icntl[13]);
    id.job = -2;
    dmumps_c(&id);
    free(irn), free(jcn), free(a);
    return rc;
#endif
}

/* ---- MKL PARDISO, loaded at run time ------------------------------------------------ */

typedef void (*pardisoinit_fn)(void *pt, const int *mtype, int *iparm);
typedef void (*pardiso_fn)(void *pt, const int *maxfct, const int *mnum, const int *mtype, const int *phase,
                           const int *n, const void *a, const int *ia, const int *ja, int *perm, const int *nrhs,
                           int *iparm, const int *msglvl, void *b, void *x, int *error);
typedef void (*mkl_version_fn)(char *buf, int len);

int suite_run_pardiso(const suite_problem *p, double *x, suite_run *r)
{
    double t0 = suite_now();
    /* one OpenMP runtime in the process: sap and the Debian solvers use GNU OpenMP */
    setenv("MKL_THREADING_LAYER", getenv("MKL_THREADING_LAYER") ? getenv("MKL_THREADING_LAYER") : "GNU", 1);
    const char *names[] = {getenv("SAP_MKL_LIB"), "libmkl_rt.so.3", "libmkl_rt.so.2", "libmkl_rt.so"};
    void *lib = NULL;
    char err[240] = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
        if (!names[i] || !names[i][0]) continue;
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        const char *e = lib ? NULL : dlerror();
        if (e && !err[0]) snprintf(err, sizeof err, "%s", e); /* the first failure (SAP_MKL_LIB if set) */
    }
    if (!lib) {
        suite_note(r, "MKL not loadable (set SAP_MKL_LIB): %.200s", err[0] ? err : "?");
        return SUITE_RUN_NA;
    }
    pardisoinit_fn pinit = (pardisoinit_fn)dlsym(lib, "pardisoinit");
    pardiso_fn pard = (pardiso_fn)dlsym(lib, "pardiso");
    mkl_version_fn ver = (mkl_version_fn)dlsym(lib, "MKL_Get_Version_String");
    if (!pinit || !pard) {
        suite_note(r, "MKL has no pardiso/pardisoinit");
        dlclose(lib);
        return SUITE_RUN_NA;
    }
    if (ver) {
        char buf[128] = {0};
        ver(buf, (int)sizeof buf - 1);
        char *c = strstr(buf, "Version ");
        suite_note(r, "MKL %.40s", c ? c + 8 : buf);
    }
    void *pt[64];
    int iparm[64];
    memset(pt, 0, sizeof pt);
    memset(iparm, 0, sizeof iparm);
    const int mtype = 11; /* real nonsymmetric, the default choice for a general matrix */
    pinit(pt, &mtype, iparm);
    r->init_s = suite_now() - t0;
    if (p->n > 2147483647 || p->nnz > 2147483647) {
        suite_note(r, "N or nnz exceeds 32-bit PARDISO");
        dlclose(lib);
        return SUITE_RUN_NA;
    }

    t0 = suite_now();
    int *ia = suite_int32_rowptr(p, 0, r);
    int *ja = suite_int32_colind(p, 0, r);
    if (!ia || !ja) {
        free(ia), free(ja);
        dlclose(lib);
        return SUITE_RUN_OOM;
    }
    iparm[34] = 1; /* zero-based ia/ja */
    const int maxfct = 1, mnum = 1, nrhs = 1, msglvl = 0;
    int n = (int)p->n, error = 0, phase = 13; /* analysis, factorization, solve + refinement */
    memset(x, 0, sizeof(double) * (size_t)p->n);
    pard(pt, &maxfct, &mnum, &mtype, &phase, &n, p->val, ia, ja, NULL, &nrhs, iparm, &msglvl, (void *)p->b, x,
         &error);
    r->time_s = suite_now() - t0;
    int rc = SUITE_RUN_DONE;
    if (error != 0) {
        suite_note(r, "pardiso error %d%s", error,
                   error == -2 ? " (not enough memory)" : error == -4 ? " (zero pivot)" : "");
        rc = (error == -2 || error == -9) ? SUITE_RUN_OOM : SUITE_RUN_FAILED;
    } else {
        suite_note(r, "perturbed pivots=%d refinement steps=%d nnz(factors)=%d", iparm[13], iparm[6], iparm[17]);
    }
    phase = -1; /* release */
    pard(pt, &maxfct, &mnum, &mtype, &phase, &n, NULL, ia, ja, NULL, &nrhs, iparm, &msglvl, NULL, NULL, &error);
    free(ia), free(ja);
    /* MKL keeps threads; no dlclose (the child exits right after) */
    return rc;
}
