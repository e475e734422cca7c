/* solver_method_direct.c -- what the sparse direct strategy methods share (not a method
 * itself; the methods are solver_method_direct_host.c and solver_method_direct_cudss.c): a
 * sparse direct factorization of the ORIGINAL matrix through a direct-kernel table
 * (device/direct_kernels.h; the solvers order and pivot for themselves: no DB, CM or
 * band), applied as a direct solve inside the shared refinement loop in double
 * (solver_refine.c; several right-hand sides go through one solve), and the prediction of
 * their time from a host symbolic analysis (fill and flops), which is the budget the
 * attempts before them get (solver_monitor.c).  A singular matrix found by the
 * factorization ends the chain (solver_attempt.c): no other method can solve it. */
#include "device/device.h"
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

/* The prediction (flops and fill from the host symbolic analysis): */
#define SV_DIRECT_HOST_RATE 2.0e9   /* flop/s per host thread of the multifrontal / supernodal
                                       factorization (BLAS-3 on fronts; small fronts are slower):
                                       CHOLMOD's exact count on a loaded 2-core host */
#define SV_UMF_FLOPS_DISCOUNT 0.1   /* UMFPACK's flop estimate of its unsymmetric strategy is an
                                       upper bound (its symbolic analysis knows no pivots): about
                                       10x the work measured on the circuit-like test matrices */
#define SV_DIRECT_GPU_RATE 1.0e11   /* flop/s of cuDSS on a GPU */
#define SV_DIRECT_GPU_FIXED 0.05    /* seconds of cuDSS's fixed cost (handle, launches) ... */
#define SV_DIRECT_GPU_ROW 7.0e-6    /* ... and of its analysis per row: cuDSS 1.0's whole solve of
                                       the low-fill systems of bench/suite on an H100 / H200 host
                                       grows with N, not with nnz: 0.054-0.083 s at N = 10,000
                                       (cryg10000), 0.13-0.2 s at 13,436 (bayer10), 0.21-0.27 s at
                                       14,214 (airfoil_2d), 0.48-0.61 s at 50,000-64,000
                                       (synthetic_50k_K20, aniso3d_40), 0.56 s at 90,000
                                       (recirc2d_300), 11.3 s at 1.6e6 (G3_circuit), where UMFPACK
                                       takes 0.047-0.46 s on the first five (suite.md) */
#define SV_DIRECT_BYTE_TIME 2.0e-9  /* seconds per byte of factors written and read (solve) */
#define SV_DIRECT_AN_FLOOR 5.0e-8   /* seconds per entry of A of the least host symbolic analysis:
                                       half the fastest measured on the H100 machine's host
                                       (CHOLMOD on bcsstk18: 0.017 s for 1.5e5 entries; UMFPACK
                                       2-3.3e-7 s an entry on cryg10000, bayer10, cage10) */

typedef struct direct_state {
    const sap_direct_kernels *k;
    sap_context *c; /* where it runs */
    sap_direct *D;
    sap_direct_info info;
} direct_state;

void sap__solver_direct_forget(sap_solver *S)
{
    if (S->dpre) sap__direct_host_kernels()->destroy(S->dpre);
    S->dpre = NULL;
    S->dpred_done = S->dpred_ok = 0;
}

/* The host symbolic analysis, once. */
static void predict_once(sap_solver *S)
{
    if (S->dpred_done) return;
    S->dpred_done = 1;
    const sap_direct_kernels *k = sap__direct_host_kernels();
    if (!k->available(S->x, NULL, 0)) return;
    sap_direct_info info;
    const double t0 = sap__wtime();
    sap__try_begin(S->x);
    sap_status st = k->analyse(S->x, S->A, S->stats.spd, &S->dpre, &info);
    sap__try_end(S->x);
    S->stats.time_analysis += sap__wtime() - t0;
    if (st < 0) {
        sap_context_clear_error(S->x);
        return;
    }
    S->dpred_ok = 1;
    S->dpred_flops = info.bound ? SV_UMF_FLOPS_DISCOUNT * info.flops : info.flops;
    S->dpred_lu_nnz = info.lu_nnz;
    S->dpred_t_analyse = info.t_analyse;
    snprintf(S->dpred_solver, sizeof(S->dpred_solver), "%s", info.solver);
}

static double gpu_fixed(const sap_solver *S) { return SV_DIRECT_GPU_FIXED + SV_DIRECT_GPU_ROW * (double)S->A->nrows; }

/* Seconds of the factorization and one solve with the predicted flops and fill. */
static double predicted_seconds(const sap_solver *S, int gpu)
{
    const double bytes = 12.0 * (S->dpred_lu_nnz + (double)S->A->nnz);
    if (gpu) return gpu_fixed(S) + S->dpred_t_analyse + S->dpred_flops / SV_DIRECT_GPU_RATE + bytes * 1e-10;
    return S->dpred_t_analyse + S->dpred_flops / (SV_DIRECT_HOST_RATE * (double)sap__threads(S->x)) +
           bytes * SV_DIRECT_BYTE_TIME;
}

double sap__solver_direct_floor(const sap_solver *S, sap_solver_method m)
{
    if (m != SAP_METHOD_DIRECT_HOST && m != SAP_METHOD_DIRECT_CUDSS) return 0;
    /* predicted_seconds with t_analyse = 0, no flops and the fewest factor entries any
     * analysis can report: L + U (or L of a Cholesky) hold at least half of A's
     * off-diagonal entries plus nothing else (lu_nnz >= (nnz - n) / 2) */
    const double nnz = (double)S->A->nnz, n = (double)S->A->nrows;
    const double lu = nnz > n ? 0.5 * (nnz - n) : 0.0, bytes = 12.0 * (lu + nnz);
    const double an = SV_DIRECT_AN_FLOOR * nnz; /* the analysis that prediction needs */
    if (m == SAP_METHOD_DIRECT_CUDSS) return gpu_fixed(S) + an + bytes * 1e-10;
    return an + bytes * SV_DIRECT_BYTE_TIME;
}

/* What the host analysis behind a prediction is expected to take (0 once made): SuiteSparse's
 * orderings and symbolic counts, 2-3.3e-7 s an entry for UMFPACK on the H100 machine's host
 * (cryg10000, bayer10, cage10), more for CHOLMOD on 3D grids (gen:aniso3d:n=40: 0.6 s for
 * 4.4e5 entries on a 2-core host).  An attempt younger than this is not stopped to ask for
 * it: on gen:convdiff3d:n=40 the 0.24 s analysis came in the middle of a 20 ms Jacobi solve. */
#define SV_DIRECT_AN_GUESS 2.5e-7
#define SV_DIRECT_AN_GUESS_SPD 1.0e-6 /* CHOLMOD tries METIS after AMD where AMD's fill is high */

double sap__solver_direct_analysis_guess(const sap_solver *S)
{
    if (S->dpred_done) return 0.0;
    return (S->stats.spd ? SV_DIRECT_AN_GUESS_SPD : SV_DIRECT_AN_GUESS) * (double)S->A->nnz;
}

/* AUTO's direct-first rule: a system far from diagonally dominant, not already banded,
 * with few entries (its host analysis costs milliseconds), whose direct-host solve is
 * predicted below what the plan's own passes (DB, CM, the structure passes, the probe, the
 * band's assembly) take before any method runs: 0.05-0.1 s on the N >= 10,000 systems of
 * the H100 suite (bench/results/suite_h100_8cb8639.md: sap's total minus its attempts).
 * There UMFPACK's 37-61 ms (cryg10000, bayer10) beat every method sap reached after its
 * plan (0.21-0.34 s). */
#define SV_DIRECT_FIRST_NNZ 5.0e5 /* (bcsstk17, 4.3e5 entries, d = 0.025: CHOLMOD 87 ms on the
                                     H100 host, cuDSS 76 ms, where the plan spent 0.15 s on
                                     iterative attempts before cuDSS: suite at 4871fcb) */
#define SV_DIRECT_FIRST_S 0.1
#define SV_DIRECT_FIRST_BAND 2.0 /* "already banded": K within this factor of the bound */
#define SV_DIRECT_FIRST_D 0.1 /* and only where a row's off-diagonal sum exceeds 10x its
                                 diagonal (d < 0.1: cryg10000 0.0025, bayer10 0, bcsstk18
                                 0.0045): there simple iterations and SaP's truncation have no
                                 bound; cage10 (d = 0.5) converges in 5 Jacobi steps (3 ms on an
                                 H100) while its UMFPACK analysis alone took 0.05 s */
#define SV_DIRECT_FIRST_MIN_N 5000 /* below: the host's banded LU of a small system (auto_first)
                                      costs no analysis and is as fast */

int sap__solver_direct_first(sap_solver *S, const sap_matrix_stats *ms, char *why, size_t wl)
{
    const sap_solver_options *o = &S->opt;
    if (why && wl) why[0] = 0;
    if (o->method == SAP_METHOD_DIRECT_HOST || o->method == SAP_METHOD_DIRECT_CUDSS) {
        snprintf(why, wl, "not needed by %s", sap_solver_method_name(o->method));
        return 1;
    }
    if (o->method != SAP_METHOD_AUTO || o->time_budget < 0 || !o->host_direct || o->db >= 0 || o->cm >= 0) return 0;
    const sap_int n = ms->nrows, lb = ms->max_row_nnz / 2 > 1 ? ms->max_row_nnz / 2 : 1;
    if (n < SV_DIRECT_FIRST_MIN_N || (double)S->A->nnz > SV_DIRECT_FIRST_NNZ ||
        !(ms->diag_dominance < SV_DIRECT_FIRST_D) ||
        (double)ms->half_bandwidth <= SV_DIRECT_FIRST_BAND * (double)lb)
        return 0;
    const double p = sap__solver_direct_predict(S, SAP_METHOD_DIRECT_HOST);
    if (p <= 0 || p > SV_DIRECT_FIRST_S) return 0;
    snprintf(why, wl, "direct-host first: predicted %.2g s (%s, %.3g flop) < %.2g s", p, S->dpred_solver,
             S->dpred_flops, SV_DIRECT_FIRST_S);
    return 1;
}

double sap__solver_direct_predict(sap_solver *S, sap_solver_method m)
{
    if (m != SAP_METHOD_DIRECT_HOST && m != SAP_METHOD_DIRECT_CUDSS) return -1;
    predict_once(S);
    if (!S->dpred_ok) return -1;
    return predicted_seconds(S, m == SAP_METHOD_DIRECT_CUDSS);
}

void sap__solver_direct_estimate(const sap_solver *S, const sap__solver_method_type *t, sap_int P, sap_int K,
                            sap_precision prec, sap__sm_estimate *e)
{
    (void)P;
    (void)K;
    (void)prec;
    /* the prediction when a budget or a build asked for it; else the matrix and vectors
     * (nothing is known of the fill before an analysis) */
    const double n = (double)S->A->nrows;
    if (S->dpred_ok) {
        e->bytes = sap__solver_bytes(12.0 * (S->dpred_lu_nnz + (double)S->A->nnz) + 4 * n * 8);
        e->flops = S->dpred_flops;
        e->seconds = predicted_seconds(S, t->method == SAP_METHOD_DIRECT_CUDSS);
    } else {
        e->bytes = sap__solver_bytes(12.0 * (double)S->A->nnz + 4 * n * 8);
        e->flops = 0;
        e->seconds = SV_SECONDS_UNKNOWN; /* not the band rate of sap__solver_estimate_all */
    }
}

sap_status sap__solver_direct_build(sap_solver *S, sap__attempt *a, const sap_direct_kernels *k, sap_context *c,
                                   sap_status unavailable, char *note, size_t nl)
{
    sap_status st = SAP_OK;
    direct_state *d = NULL;
    char why[200];
    if (!k->available(c, why, sizeof(why))) {
        snprintf(note, nl, "%.90s", why);
        SAP_FAIL(S->ctx, unavailable, "sap_solver %s: %s", a->type->name, why);
    }
    SAP_CALLOC(S->ctx, d, 1);
    d->k = k;
    d->c = c;
    a->impl = d;
    int reused = 0;
    if (k == sap__direct_host_kernels() && S->dpre && S->x == c) {
        /* the analysis of the prediction (timed in T_stats: time_analysis) */
        reused = 1;
        d->D = S->dpre;
        S->dpre = NULL;
        snprintf(d->info.solver, sizeof(d->info.solver), "%s", S->dpred_solver);
        d->info.t_analyse = S->dpred_t_analyse;
        d->info.flops = S->dpred_flops;
        d->info.lu_nnz = S->dpred_lu_nnz;
    } else {
        SAP_TRY(k->analyse(c, S->A, S->stats.spd, &d->D, &d->info));
    }
    const double ta = d->info.t_analyse;
    /* the factors against the memory limit (when the analysis predicted them) */
    const double bytes = 12.0 * (d->info.lu_nnz + (double)S->A->nnz) + 4.0 * (double)S->A->nrows * 8.0;
    a->mem = sap__solver_bytes(bytes);
    if (bytes > (double)S->mem_limit) {
        snprintf(note, nl, "factors %.3g GB > limit %.3g GB", bytes / 1e9, (double)S->mem_limit / 1e9);
        SAP_FAIL(S->ctx, SAP_ERR_OUT_OF_MEMORY, "sap_solver %s: %s (%s)", a->type->name, note, d->info.solver);
    }
    SAP_TRY(k->factor(d->D, S->A, &d->info));
    a->t_lu = d->info.t_factor;
    a->t_asmbl = reused ? 0.0 : ta;
    snprintf(note + strlen(note), nl - strlen(note), "%s%s nnz(LU) %.3g, %.2g flop, analyse %.2gs factor %.2gs",
             note[0] ? ", " : "", d->info.solver, d->info.lu_nnz, d->info.flops, ta, d->info.t_factor);
cleanup:
    return st;
}

sap_status sap__solver_direct_numeric(sap_solver *S, sap__attempt *a)
{
    direct_state *d = a->impl;
    sap_status st = d->k->factor(d->D, S->A, &d->info);
    a->t_lu = d->info.t_factor;
    return st;
}

/* The m columns of R in one solve of the original system; one iteration a call. */
sap_status sap__solver_direct_solve(sap_solver *S, sap__attempt *a, sap_int m, const double *R, sap_int ldr,
                               const double *X0, sap_int ldx0, double *X, sap_int ldx, double *iters, double *tkry)
{
    (void)S;
    (void)X0;
    (void)ldx0;
    direct_state *d = a->impl;
    const double t0 = sap__wtime();
    sap_status st = d->k->solve(d->D, m, R, ldr, X, ldx, &d->info);
    if (tkry) *tkry += sap__wtime() - t0;
    if (iters) *iters += 1;
    return st;
}

void sap__solver_direct_report(const sap_solver *S, const sap__attempt *a, char *buf, size_t size)
{
    (void)S;
    const direct_state *d = a->impl;
    snprintf(buf, size, "%s%s", d ? d->info.solver : "direct", d && d->info.cholesky ? " (Cholesky)" : "");
}

void sap__solver_direct_destroy(sap_solver *S, sap__attempt *a)
{
    direct_state *d = a->impl;
    if (!d) return;
    if (d->D) d->k->destroy(d->D);
    sap__free(S->ctx, d);
    a->impl = NULL;
}
