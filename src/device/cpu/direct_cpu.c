/* direct_cpu.c -- the cpu backend's sparse direct solver (device/direct_kernels.h):
 * SuiteSparse, CHOLMOD (supernodal Cholesky) for an SPD-looking matrix and UMFPACK
 * (unsymmetric-pattern multifrontal LU with partial pivoting) otherwise or when CHOLMOD
 * finds the matrix not positive definite.  Built when CMake found SuiteSparse
 * (SAP_HAVE_SUITESPARSE; scripts/deps.sh installs libsuitesparse-dev); otherwise every
 * operation reports SAP_ERR_NOT_COMPILED ("not built with SuiteSparse").
 *
 * Threads: both spend their time in BLAS (dense frontal matrices / supernodes), which
 * runs on the BLAS library's own threads (OpenBLAS: OPENBLAS_NUM_THREADS, all cores by
 * default), NOT the context's: the bits of a result must not change with the context's
 * thread count (README, Determinism), and BLAS results do with its threads (with the
 * BLAS threads following the context's, tests/test_determinism.c saw AUTO's x on
 * cryg10000, started from a failed UMFPACK solve, differ by 2e-8 between 1 and 2).
 *
 * The CSR of A is the CSC of A^T: UMFPACK factors A^T and solves with UMFPACK_Aat
 * (A x = b); CHOLMOD reads the CSC's upper triangle (stype = 1), which is A's lower one,
 * the same matrix when A is symmetric. */
#include "device/cpu/cpu_internal.h"
#include "device/direct_kernels.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef SAP_HAVE_SUITESPARSE
#include <cholmod.h>
#include <umfpack.h>

struct sap_direct {
    sap_context *ctx;
    sap_int n;
    int chol;          /* CHOLMOD in use (else UMFPACK) */
    cholmod_common cc; /* started when chol was tried */
    int cc_started;
    cholmod_factor *L;
    void *sym, *num; /* UMFPACK */
    int *rp32, *ci32; /* A's pattern in 32-bit indices: UMFPACK's "di" routines (NULL: "dl") */
    double control[UMFPACK_CONTROL];
    const sap_csr *A; /* the matrix of the latest factor (UMFPACK's solve refines with it) */
    double flops;     /* of the factorization, as the analysis predicts it */
};

/* BLAS threads for a factorization: one for each SV_DIRECT_BLAS_FLOPS of its predicted work,
 * at most OpenBLAS's own count.  The fronts / supernodes of a small factorization are too
 * small for many threads: CHOLMOD on bcsstk17 (1.6e8 flop) took 0.046-0.052 s with one
 * OpenBLAS thread, 0.057 s with 4 and 0.065-0.95 s with the 16 of the H100 machine's host
 * (the same process, alternating), and up to 1.35 s inside bench/suite. */
#define SV_DIRECT_BLAS_FLOPS 1.0e9

/* UMFPACK's 32-bit routines ("di": int indices, its memory in at most 2^31 8-byte units) where
 * the pattern fits and the analysis bounds the factorization's memory below SV_UMF_DI_UNITS
 * units (4 GB); else the 64-bit ones ("dl").  The "di" routines move half the index bytes:
 * 7-10% less time on bayer10, cryg10000 and airfoil_2d (best of 10, alternating, one host
 * thread), what UMFPACK's own users (SciPy, the suite's anchor) get. */
#define SV_UMF_DI_UNITS 5.0e8

static void umf_free_numeric(sap_direct *D)
{
    if (D->num && D->rp32) umfpack_di_free_numeric(&D->num);
    else if (D->num) umfpack_dl_free_numeric(&D->num);
    D->num = NULL;
}

static void umf_free(sap_direct *D)
{
    umf_free_numeric(D);
    if (D->sym && D->rp32) umfpack_di_free_symbolic(&D->sym);
    else if (D->sym) umfpack_dl_free_symbolic(&D->sym);
    D->sym = NULL;
    sap__free(D->ctx, D->rp32);
    sap__free(D->ctx, D->ci32);
    D->rp32 = D->ci32 = NULL;
}

/* A's CSR as CHOLMOD's CSC of A^T (no copy), upper triangle. */
static cholmod_sparse chol_view(const sap_csr *A)
{
    cholmod_sparse s;
    memset(&s, 0, sizeof(s));
    s.nrow = (size_t)A->nrows;
    s.ncol = (size_t)A->ncols;
    s.nzmax = (size_t)(A->nnz > 0 ? A->nnz : 1);
    s.p = (void *)A->rowptr;
    s.i = (void *)A->colind;
    s.x = (void *)A->val;
    s.stype = 1;
    s.itype = CHOLMOD_LONG;
    s.xtype = CHOLMOD_REAL;
    s.dtype = CHOLMOD_DOUBLE;
    s.sorted = 1;
    s.packed = 1;
    return s;
}

static void set_name(sap_direct_info *info, int chol)
{
    if (chol)
        snprintf(info->solver, sizeof(info->solver), "CHOLMOD %d.%d.%d", CHOLMOD_MAIN_VERSION, CHOLMOD_SUB_VERSION,
                 CHOLMOD_SUBSUB_VERSION);
    else
        snprintf(info->solver, sizeof(info->solver), "UMFPACK %d.%d.%d", UMFPACK_MAIN_VERSION, UMFPACK_SUB_VERSION,
                 UMFPACK_SUBSUB_VERSION);
    info->cholesky = chol;
}

static const char *umf_status(int s)
{
    switch (s) {
    case UMFPACK_WARNING_singular_matrix: return "singular matrix";
    case UMFPACK_ERROR_out_of_memory: return "out of memory";
    case UMFPACK_ERROR_invalid_matrix: return "invalid matrix";
    case UMFPACK_ERROR_different_pattern: return "different pattern";
    default: return "error";
    }
}

static sap_status umf_symbolic(sap_direct *D, const sap_csr *A, sap_direct_info *info)
{
    double Info[UMFPACK_INFO];
    const double t0 = sap__wtime();
    umf_free(D);
    int s = UMFPACK_ERROR_out_of_memory;
    if (A->nrows < INT32_MAX && A->nnz < INT32_MAX) {
        const sap_int n = A->nrows, nnz = A->nnz;
        D->rp32 = sap__alloc(D->ctx, (size_t)(n + 1), sizeof(int), false, __FILE__, __LINE__);
        D->ci32 = sap__alloc(D->ctx, (size_t)(nnz > 0 ? nnz : 1), sizeof(int), false, __FILE__, __LINE__);
        if (!D->rp32 || !D->ci32) {
            umf_free(D);
            return SAP_ERROR(D->ctx, SAP_ERR_OUT_OF_MEMORY, "UMFPACK symbolic analysis: out of memory (%.3g GB)",
                             4.0 * (double)(n + 1 + nnz) / 1e9);
        }
        const sap_int *rp = A->rowptr, *ci = A->colind;
        const int nt = sap__threads(D->ctx);
        (void)nt;
        SAP_OMP("omp parallel for schedule(static) num_threads(nt) if (nnz > 100000)")
        for (sap_int i = 0; i <= n; i++) D->rp32[i] = (int)rp[i];
        SAP_OMP("omp parallel for schedule(static) num_threads(nt) if (nnz > 100000)")
        for (sap_int k = 0; k < nnz; k++) D->ci32[k] = (int)ci[k];
        s = umfpack_di_symbolic((int)n, (int)n, D->rp32, D->ci32, A->val, &D->sym, D->control, Info);
        if (s == UMFPACK_OK && !(Info[UMFPACK_NUMERIC_SIZE_ESTIMATE] < SV_UMF_DI_UNITS))
            s = UMFPACK_ERROR_out_of_memory; /* the 64-bit routines instead */
        if (s != UMFPACK_OK) umf_free(D);
    }
    if (s != UMFPACK_OK)
        s = (int)umfpack_dl_symbolic((SuiteSparse_long)A->nrows, (SuiteSparse_long)A->ncols,
                                     (const SuiteSparse_long *)A->rowptr, (const SuiteSparse_long *)A->colind, A->val,
                                     &D->sym, D->control, Info);
    if (s != UMFPACK_OK)
        return SAP_ERROR(D->ctx, s == UMFPACK_ERROR_out_of_memory ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_INVALID,
                         "UMFPACK symbolic analysis: %s (status %d)", umf_status(s), s);
    D->chol = 0;
    set_name(info, 0);
    if (Info[UMFPACK_STRATEGY_USED] == UMFPACK_STRATEGY_SYMMETRIC && Info[UMFPACK_SYMMETRIC_LUNZ] > 0) {
        /* AMD on A + A^T, pivots on the diagonal preferred: its counts (without pivoting)
         * are the estimate; LNZ/UNZ_ESTIMATE bound any partial pivoting (cryg10000: 6.7e6
         * bounded, 4.2e5 factored) */
        info->flops = Info[UMFPACK_SYMMETRIC_FLOPS];
        info->lu_nnz = Info[UMFPACK_SYMMETRIC_LUNZ] + (double)A->nrows;
        info->bound = 0;
    } else {
        info->flops = Info[UMFPACK_FLOPS_ESTIMATE];
        info->lu_nnz = Info[UMFPACK_LNZ_ESTIMATE] + Info[UMFPACK_UNZ_ESTIMATE];
        info->bound = 1;
    }
    D->flops = info->flops;
    info->t_analyse += sap__wtime() - t0;
    return SAP_OK;
}

static void destroy(sap_direct *D)
{
    if (!D) return;
    if (D->L) cholmod_l_free_factor(&D->L, &D->cc);
    if (D->cc_started) cholmod_l_finish(&D->cc);
    umf_free(D);
    sap__free(D->ctx, D);
}

static sap_status analyse(sap_context *ctx, const sap_csr *A, int spd, sap_direct **out, sap_direct_info *info)
{
    sap_status st = SAP_OK;
    sap_direct *D = NULL;
    *out = NULL;
    memset(info, 0, sizeof(*info));
    SAP_CALLOC(ctx, D, 1);
    D->ctx = ctx;
    D->n = A->nrows;
    umfpack_dl_defaults(D->control);
    /* no refinement inside umfpack_dl_solve (2 steps by default, each a residual and a solve
     * with the factors): the caller refines on the true residual (solver_refine.c), which
     * after a direct solve usually stops at its first check */
    D->control[UMFPACK_IRSTEP] = 0;
    if (spd) {
        const double t0 = sap__wtime();
        cholmod_l_start(&D->cc);
        D->cc_started = 1;
        D->cc.print = 0;
        D->cc.error_handler = NULL;
        cholmod_sparse s = chol_view(A);
        D->L = cholmod_l_analyze(&s, &D->cc);
        if (!D->L) {
            if (D->cc.status == CHOLMOD_OUT_OF_MEMORY)
                SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "CHOLMOD analysis: out of memory");
            SAP_FAIL(ctx, SAP_ERR_INVALID, "CHOLMOD analysis failed (status %d)", D->cc.status);
        }
        D->chol = 1;
        set_name(info, 1);
        info->flops = D->cc.fl;
        info->lu_nnz = D->cc.lnz;
        D->flops = D->cc.fl;
        info->t_analyse = sap__wtime() - t0;
    } else {
        SAP_TRY(umf_symbolic(D, A, info));
    }
    *out = D;
    D = NULL;
cleanup:
    destroy(D);
    return st;
}

static sap_status factor(sap_direct *D, const sap_csr *A, sap_direct_info *info)
{
    sap_context *ctx = D->ctx;
    const double t0 = sap__wtime();
    sap_status st = SAP_OK;
    D->A = A;
    const double nb = ceil(D->flops / SV_DIRECT_BLAS_FLOPS);
    const int blas = sap__blas_threads(nb < 1 ? 1 : nb > 4096 ? 4096 : (int)nb);
    if (D->chol) {
        cholmod_sparse s = chol_view(A);
        const int ok = cholmod_l_factorize(&s, D->L, &D->cc);
        if (ok && D->cc.status == CHOLMOD_OK) {
            info->lu_nnz = D->cc.lnz;
            goto done;
        }
        if (D->cc.status == CHOLMOD_OUT_OF_MEMORY) {
            st = SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "CHOLMOD factorization: out of memory");
            goto done;
        }
        /* not positive definite (or a zero pivot): LU with pivoting instead */
        sap__log(ctx, SAP_PRINT_INFO, "sap direct: CHOLMOD: not positive definite (column %lld), UMFPACK instead",
                 (long long)D->L->minor);
        cholmod_l_free_factor(&D->L, &D->cc);
        D->chol = 0;
        st = umf_symbolic(D, A, info);
        if (st < 0) goto done;
    }
    double Info[UMFPACK_INFO];
    umf_free_numeric(D);
    const int s = D->rp32 ? umfpack_di_numeric(D->rp32, D->ci32, A->val, D->sym, &D->num, D->control, Info)
                          : (int)umfpack_dl_numeric((const SuiteSparse_long *)A->rowptr,
                                                    (const SuiteSparse_long *)A->colind, A->val, D->sym, &D->num,
                                                    D->control, Info);
    if (s == UMFPACK_WARNING_singular_matrix) {
        st = SAP_ERROR(ctx, SAP_ERR_SINGULAR,
                       "sap direct: UMFPACK: the matrix is singular (a zero pivot with partial pivoting; "
                       "estimated reciprocal condition %.2g)",
                       Info[UMFPACK_RCOND]);
    } else if (s != UMFPACK_OK) {
        st = SAP_ERROR(ctx, s == UMFPACK_ERROR_out_of_memory ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_INVALID,
                       "UMFPACK factorization: %s (status %d)", umf_status(s), s);
    } else {
        info->lu_nnz = Info[UMFPACK_LNZ] + Info[UMFPACK_UNZ];
    }
done:
    sap__blas_threads_restore(blas);
    set_name(info, D->chol);
    info->t_factor = sap__wtime() - t0;
    return st;
}

static sap_status solve(sap_direct *D, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx,
                        sap_direct_info *info)
{
    sap_context *ctx = D->ctx;
    const double t0 = sap__wtime();
    sap_status st = SAP_OK;
    const sap_int n = D->n;
    if (D->chol) {
        cholmod_dense b;
        memset(&b, 0, sizeof(b));
        b.nrow = (size_t)n;
        b.ncol = (size_t)nrhs;
        b.nzmax = (size_t)(n * nrhs);
        b.d = (size_t)ldb;
        b.x = (void *)B;
        b.xtype = CHOLMOD_REAL;
        b.dtype = CHOLMOD_DOUBLE;
        cholmod_dense *x = cholmod_l_solve(CHOLMOD_A, D->L, &b, &D->cc);
        if (!x) return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "CHOLMOD solve failed (status %d)", D->cc.status);
        for (sap_int j = 0; j < nrhs; j++)
            memcpy(X + j * ldx, (double *)x->x + j * (sap_int)x->d, sizeof(double) * (size_t)n);
        cholmod_l_free_dense(&x, &D->cc);
    } else {
        if (!D->num) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap direct: solve before factor");
        double Info[UMFPACK_INFO];
        const sap_csr *A = D->A;
        for (sap_int j = 0; j < nrhs; j++) {
            const int s =
                D->rp32 ? umfpack_di_solve(UMFPACK_Aat, D->rp32, D->ci32, A->val, X + j * ldx, B + j * ldb, D->num,
                                           D->control, Info)
                        : (int)umfpack_dl_solve(UMFPACK_Aat, (const SuiteSparse_long *)A->rowptr,
                                                (const SuiteSparse_long *)A->colind, A->val, X + j * ldx, B + j * ldb,
                                                D->num, D->control, Info);
            if (s < 0) {
                st = SAP_ERROR(ctx, s == UMFPACK_ERROR_out_of_memory ? SAP_ERR_OUT_OF_MEMORY : SAP_ERR_INVALID,
                               "UMFPACK solve: %s (status %d)", umf_status(s), s);
                break;
            }
        }
    }
    info->t_solve = sap__wtime() - t0;
    return st;
}

static int available(sap_context *ctx, char *why, size_t wl)
{
    (void)ctx;
    if (why && wl) why[0] = 0;
    return 1;
}

#else /* !SAP_HAVE_SUITESPARSE */

struct sap_direct {
    int unused;
};

#define NOT_BUILT "sap direct-host: not built with SuiteSparse (install libsuitesparse-dev: scripts/deps.sh; reconfigure)"

static int available(sap_context *ctx, char *why, size_t wl)
{
    (void)ctx;
    if (why && wl) snprintf(why, wl, "%s", NOT_BUILT);
    return 0;
}

static sap_status analyse(sap_context *ctx, const sap_csr *A, int spd, sap_direct **out, sap_direct_info *info)
{
    (void)A;
    (void)spd;
    (void)info;
    *out = NULL;
    return SAP_ERROR(ctx, SAP_ERR_NOT_COMPILED, "%s", NOT_BUILT);
}

static sap_status factor(sap_direct *D, const sap_csr *A, sap_direct_info *info)
{
    (void)D;
    (void)A;
    (void)info;
    return SAP_ERR_NOT_COMPILED;
}

static sap_status solve(sap_direct *D, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx,
                        sap_direct_info *info)
{
    (void)D, (void)nrhs, (void)B, (void)ldb, (void)X, (void)ldx, (void)info;
    return SAP_ERR_NOT_COMPILED;
}

static void destroy(sap_direct *D) { (void)D; }

#endif

const sap_direct_kernels sap__cpu_direct_kernels = {
    .name = "suitesparse",
    .available = available,
    .analyse = analyse,
    .factor = factor,
    .solve = solve,
    .destroy = destroy,
};

const sap_direct_kernels *sap__direct_host_kernels(void) { return &sap__cpu_direct_kernels; }
