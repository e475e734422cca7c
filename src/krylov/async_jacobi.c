/* async_jacobi.c -- block-asynchronous Jacobi (the MAGMA-sparse relaxation): a stationary
 * iteration, each iteration one launch of the backend's block_relax (blocks of
 * SAP_RELAX_BLOCK rows, k local Jacobi sweeps per block; k is the parameter, default 2,
 * "async-jacobi:5") on a CSR copy of A (sap__matrix_derived; A itself when it is CSR),
 * then the true residual r = b - A x, whose relative norm is monitored.  On the cpu
 * backend the blocks read the other blocks' values of the previous iteration (block
 * Jacobi, deterministic); on cuda they read them as they are (asynchronous: the iterates,
 * iteration counts and the last bits of x vary from run to run, by design).  With a
 * preconditioner M each iteration adds a preconditioned Richardson step x += M^-1 r after
 * the relaxation (a two-stage splitting; opt.side is ignored).  Convergence needs a matrix
 * Jacobi converges on (e.g. diagonally dominant or an M-matrix); a relative residual
 * above ASYNC_DIVERGED stops with SAP_WARN_BREAKDOWN ("diverges") before it overflows. */
#include "krylov/krylov_impl.h"

#include <stdio.h>

#define ASYNC_DIVERGED 1e8

static sap_status async_jacobi_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *z = &s->w[1], *scratch = &s->w[2], *x = s->x;
    const sap_spmat *C = NULL;
    SAP_TRY(sap__matrix_derived(s->M, 0, s->A->prec, SAP_FORMAT_CSR, &C));

    double rn = 0.0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(sap__krylov_track_best(s, x)); /* x0: a finite fallback if the iteration overflows */
    for (;;) {
        SAP_TRY(ops->block_relax(s->ctx, C, s->K->param, s->b, x, scratch));
        SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
        if (s->P) {
            SAP_TRY(sap__krylov_prec(s, r, z));
            SAP_TRY(ops->axpby(s->ctx, 1.0, z, 1.0, x));
            SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
        }
        if (sap__krylov_check(s, s->iter + 1.0, rn)) break;
        if (s->relres > ASYNC_DIVERGED) {
            s->reason = KRY_BREAKDOWN;
            snprintf(s->msg, sizeof(s->msg),
                     "%s: diverges at iteration %g (relative residual %.3e): Jacobi needs e.g. a diagonally "
                     "dominant matrix",
                     s->method, s->iter, s->relres);
            break;
        }
        SAP_TRY(sap__krylov_track_best(s, x));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int async_jacobi_nvec(int param)
{
    (void)param;
    return 3; /* r, M^-1 r, scratch */
}

const sap_krylov_method sap__krylov_async_jacobi_method = {
    .name = "async-jacobi",
    .help = "block-asynchronous Jacobi, p local sweeps per block of 256 rows (cuda: asynchronous, "
            "nondeterministic; cpu: block Jacobi); a preconditioner adds a Richardson step",
    .id = SAP_KRYLOV_ASYNC_JACOBI, .default_param = 2, .max_param = 64, .nvec = async_jacobi_nvec, .steps = 1,
    .sides = KRY_SIDES_SYMMETRIC, .run = async_jacobi_run};
