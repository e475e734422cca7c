/* solver_band_pivot.c -- the BAND_PIVOT method of the sparse pipeline: LAPACK dgbtrf /
 * dgbtrs (banded LU with partial pivoting) on the host.  The Fortran symbols are declared
 * here (no LAPACKE needed); the library links LAPACK when CMake finds it and defines
 * SAP_HAVE_LAPACK, otherwise the method reports SAP_ERR_NOT_COMPILED. */
#include "solver/solver_internal.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#ifdef SAP_HAVE_LAPACK
/* Fortran LAPACK (column-major, 32-bit integers; the hidden length of the character
 * argument is passed last, as gfortran expects). */
extern void dgbtrf_(const int *m, const int *n, const int *kl, const int *ku, double *ab, const int *ldab, int *ipiv,
                    int *info);
extern void dgbtrs_(const char *trans, const int *n, const int *kl, const int *ku, const int *nrhs, const double *ab,
                    const int *ldab, const int *ipiv, double *b, const int *ldb, int *info, size_t trans_len);
#endif

int sap__bp_available(void)
{
#ifdef SAP_HAVE_LAPACK
    return 1;
#else
    return 0;
#endif
}

int64_t sap__bp_bytes(sap_int n, sap_int K) { return (int64_t)n * (3 * (int64_t)K + 1) * 8 + (int64_t)n * 4; }

void sap__bp_destroy(sap__bp *F)
{
    if (!F) return;
    sap_context *ctx = F->ctx;
    sap__free(ctx, F->ab);
    sap__free(ctx, F->ipiv);
    sap__free(ctx, F);
}

#ifdef SAP_HAVE_LAPACK
/* OpenBLAS maps a work buffer (BUFFER_SIZE: up to 128 MB of address space on x86-64) for
 * each of its threads at their first call and, when RLIMIT_AS refuses the mapping, retries
 * it for ever (sap solve --method band-pivot under ulimit -v hung in dgbtrs -> dtbsv ->
 * blas_memory_alloc: bench/results/alloc_sweep.md).  So LAPACK is called only with that
 * much address space left under the limit per OpenBLAS thread; otherwise a clean error. */
#define SV_BLAS_BUFFER (160.0 * 1024 * 1024)
/* flops per OpenBLAS thread of dgbtrf / dgbtrs: a smaller call takes fewer threads */
#define SV_BP_BLAS_FLOPS 2.0e8

static sap_status blas_headroom(sap_context *ctx, const char *call)
{
    const double left = sap__host_address_space_left();
    if (left < 0) return SAP_OK; /* no RLIMIT_AS */
    const int nt = sap__blas_threads_now();
    const double need = SV_BLAS_BUFFER * (double)(nt > 0 ? nt : 1);
    if (left >= need) return SAP_OK;
    return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY,
                     "band-pivot: %s needs about %.0f MB of address space for the BLAS work buffers (%d thread%s), "
                     "%.0f MB left under RLIMIT_AS",
                     call, need / 1048576.0, nt, nt == 1 ? "" : "s", left / 1048576.0);
}

/* ab(kl + ku + i - j, j) = a_ij (0-based rows of the LAPACK layout) */
static sap_status fill_and_factor(sap__bp *F, const sap_csr *A)
{
    sap_context *ctx = F->ctx;
    const sap_int n = F->n, kl = F->kl, ku = F->ku, ld = F->ldab;
    double t0 = sap__wtime();
    /* zeroed and filled on threads by the work (each (i, j) slot written by row i's thread
     * only): a band of a few MB on every core waits on the slowest of them */
    const int ntz = sap__threads_for(ctx, (double)n * (double)ld / 16.0), ntf = sap__threads_for(ctx, (double)A->nnz);
    (void)ntz;
    (void)ntf;
    SAP_OMP("omp parallel for num_threads(ntz) schedule(static)")
    for (sap_int j = 0; j < n; j++) memset(F->ab + (size_t)j * (size_t)ld, 0, sizeof(double) * (size_t)ld);
    sap_int bad = 0;
    SAP_OMP("omp parallel for num_threads(ntf) schedule(static, 256) reduction(+ : bad)")
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const sap_int j = A->colind[p];
            if (!isfinite(A->val[p])) bad++;
            if (j - i > ku || i - j > kl) continue;
            F->ab[(kl + ku + i - j) + j * ld] = A->val[p];
        }
    if (bad) return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "band-pivot: %lld NaN/Inf entries", (long long)bad);
    F->t_asmbl = sap__wtime() - t0;
    t0 = sap__wtime();
    int m = (int)n, nn = (int)n, ikl = (int)kl, iku = (int)ku, ildab = (int)ld, info = 0;
    sap_status hs = blas_headroom(ctx, "dgbtrf");
    if (hs < 0) return hs;
    const int blas = sap__blas_threads_for(2.0 * (double)n * (double)kl * (double)(kl + ku + 1), SV_BP_BLAS_FLOPS);
    dgbtrf_(&m, &nn, &ikl, &iku, F->ab, &ildab, F->ipiv, &info);
    sap__blas_threads_restore(blas);
    F->t_lu = sap__wtime() - t0;
    if (info < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "band-pivot: dgbtrf argument %d is invalid", -info);
    if (info > 0)
        return SAP_ERROR(ctx, SAP_ERR_SINGULAR, "band-pivot: dgbtrf found U(%d,%d) = 0 (the band is singular)", info,
                         info);
    return SAP_OK;
}
#endif

sap_status sap__bp_create(sap_context *ctx, const sap_csr *A, sap_int kl, sap_int ku, sap__bp **out)
{
    *out = NULL;
#ifndef SAP_HAVE_LAPACK
    (void)A;
    (void)kl;
    (void)ku;
    return SAP_ERROR(ctx, SAP_ERR_NOT_COMPILED, "band-pivot: this build has no LAPACK (dgbtrf)");
#else
    sap_status st = SAP_OK;
    sap__bp *F = NULL;
    const sap_int n = A->nrows;
    if (kl < 0) kl = 0;
    if (ku < 0) ku = 0;
    if (n > 0 && kl > n - 1) kl = n - 1;
    if (n > 0 && ku > n - 1) ku = n - 1;
    const sap_int ld = 2 * kl + ku + 1;
    if (n > INT_MAX || sap__mul_overflows(ld, n, INT_MAX))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                         "band-pivot: the band storage (%lld x %lld) exceeds LAPACK's 32-bit indexing",
                         (long long)ld, (long long)n);
    SAP_CALLOC(ctx, F, 1);
    F->ctx = ctx;
    F->n = n;
    F->kl = kl;
    F->ku = ku;
    F->ldab = ld;
    SAP_ALLOC(ctx, F->ab, (size_t)ld * (size_t)(n > 0 ? n : 1));
    SAP_ALLOC(ctx, F->ipiv, n > 0 ? n : 1);
    SAP_TRY(fill_and_factor(F, A));
    *out = F;
    return SAP_OK;
cleanup:
    sap__bp_destroy(F);
    return st;
#endif
}

sap_status sap__bp_refactor(sap__bp *F, const sap_csr *A)
{
#ifndef SAP_HAVE_LAPACK
    (void)A;
    return SAP_ERROR(F->ctx, SAP_ERR_NOT_COMPILED, "band-pivot: this build has no LAPACK");
#else
    if (A->nrows != F->n) return SAP_ERROR(F->ctx, SAP_ERR_INVALID, "band-pivot: size changed");
    return fill_and_factor(F, A);
#endif
}

sap_status sap__bp_solve(sap__bp *F, sap_int nrhs, double *X, sap_int ldx)
{
#ifndef SAP_HAVE_LAPACK
    (void)nrhs;
    (void)X;
    (void)ldx;
    return SAP_ERROR(F->ctx, SAP_ERR_NOT_COMPILED, "band-pivot: this build has no LAPACK");
#else
    if (nrhs <= 0 || F->n == 0) return SAP_OK;
    if (nrhs > INT_MAX || ldx > INT_MAX)
        return SAP_ERROR(F->ctx, SAP_ERR_TOO_LARGE, "band-pivot: too many right-hand sides for LAPACK");
    int nn = (int)F->n, ikl = (int)F->kl, iku = (int)F->ku, ild = (int)F->ldab, inr = (int)nrhs, ildx = (int)ldx;
    int info = 0;
    sap_status hs = blas_headroom(F->ctx, "dgbtrs");
    if (hs < 0) return hs;
    const int blas = sap__blas_threads_for(4.0 * (double)F->n * (double)(2 * F->kl + F->ku + 1) * (double)nrhs,
                                           SV_BP_BLAS_FLOPS);
    dgbtrs_("N", &nn, &ikl, &iku, &inr, F->ab, &ild, F->ipiv, X, &ildx, &info, (size_t)1);
    sap__blas_threads_restore(blas);
    if (info != 0) return SAP_ERROR(F->ctx, SAP_ERR_INVALID, "band-pivot: dgbtrs argument %d is invalid", -info);
    return SAP_OK;
#endif
}
