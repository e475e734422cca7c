/* solver_internal.h -- pieces shared by the sparse SaP pipeline sources (src/solver).
 * Internal. */
#ifndef SAP_SOLVER_INTERNAL_H
#define SAP_SOLVER_INTERNAL_H

#include "base/base.h"

/* ---- banded LU with partial pivoting on the host (solver_band_pivot.c) ------------------ */

/* LAPACK dgbtrf of the band of A with lower/upper half-bandwidths kl, ku (entries of A
 * outside the band are ignored: the caller refines against the full matrix).  Built
 * only when LAPACK was found (SAP_HAVE_LAPACK); otherwise create returns
 * SAP_ERR_NOT_COMPILED.  LAPACK indexes with 32-bit integers: n or the band storage
 * beyond 2^31 - 1 give SAP_ERR_TOO_LARGE. */
typedef struct sap__bp {
    sap_context *ctx;
    sap_int n, kl, ku, ldab;
    double *ab; /* ldab x n, LAPACK band storage with kl extra rows for the fill */
    int *ipiv;  /* n */
    double t_asmbl, t_lu;
} sap__bp;

/* 1 when the library was linked against LAPACK. */
int sap__bp_available(void);
/* Bytes the factorization of an n x n band with kl = ku = K needs. */
int64_t sap__bp_bytes(sap_int n, sap_int K);
/* Builds and factors; SAP_ERR_SINGULAR (exact zero pivot, named) when dgbtrf reports
 * info > 0.  On error *out is NULL. */
sap_status sap__bp_create(sap_context *ctx, const sap_csr *A, sap_int kl, sap_int ku, sap__bp **out);
/* New values of A (same pattern as at create): rebuilds the band and refactors. */
sap_status sap__bp_refactor(sap__bp *F, const sap_csr *A);
/* Solves in place: the nrhs columns of X (leading dimension ldx >= n) by one dgbtrs call. */
sap_status sap__bp_solve(sap__bp *F, sap_int nrhs, double *X, sap_int ldx);
void sap__bp_destroy(sap__bp *F);

#endif /* SAP_SOLVER_INTERNAL_H */
