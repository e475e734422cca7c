/* band_cpu.c -- the cpu implementation of the band kernel table (band_impl.h): batched
 * LU / UL without pivoting with pivot boosting, truncated spikes, reduced systems and
 * the banded sweeps, in float and double, OpenMP across partitions.
 * The LU of wide partitions and SaP-C's UL windows is blocked (sap_band_fact.blocked and
 * ul_blocked: gemm of LAPACK's BLAS, see band_lu_blocked); with fewer of them than
 * threads the BLAS gets the threads they leave.  The reduced systems' LU is LAPACK's getrf
 * where the spikes are BLAS.
 * PARTIAL: the per-row kernels (narrow bands, sweeps) have no parallelism inside one
 * partition (P >= threads is what the automatic choice picks on the cpu). */
#include "device/cpu/cpu_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The spikes as LAPACK's triangular solves (the coupling blocks of the factors made
 * dense, then trsm with m right-hand sides) and the reduced matrices I - W V as one gemm,
 * from a coupling size of CPU_SPIKES_BLOCKED_MMIN on where LAPACK is linked; SAP_BAND_SPIKES
 * = rows | blocked forces either (as on cuda).  The same 2 m^3 flops a spike as the
 * per-column substitutions, in level-3 BLAS. */
#define CPU_SPIKES_BLOCKED_MMIN 32
static int cpu_spikes_blocked(const sap_band_layout *L)
{
#ifdef SAP_HAVE_LAPACK
    sap_int mmax = 0;
    for (sap_int i = 0; i + 1 < L->P; i++)
        if (L->m[i] > mmax) mmax = L->m[i];
    const char *env = getenv("SAP_BAND_SPIKES");
    if (env && !strcmp(env, "rows")) return 0;
    if (env && !strcmp(env, "blocked")) return 1;
    return mmax >= CPU_SPIKES_BLOCKED_MMIN;
#else
    (void)L;
    return 0;
#endif
}

#define S d
#define REAL double
#define XGEMM dgemm_
#define XTRSM dtrsm_
#define XGETRF dgetrf_
#include "device/cpu/band_cpu_t.h"
#undef S
#undef REAL
#undef XGEMM
#undef XTRSM
#undef XGETRF

#define S s
#define REAL float
#define XGEMM sgemm_
#define XTRSM strsm_
#define XGETRF sgetrf_
#include "device/cpu/band_cpu_t.h"
#undef S
#undef REAL
#undef XGEMM
#undef XTRSM
#undef XGETRF

#define DISPATCH(fn, Fa, ...) ((Fa)->prec == SAP_FLOAT ? band_##fn##_s(Fa, __VA_ARGS__) : band_##fn##_d(Fa, __VA_ARGS__))

static sap_status cpu_factor(sap_band_fact *Fa, sap_int *boosted) { return DISPATCH(factor, Fa, boosted); }
static sap_status cpu_spikes(sap_band_fact *Fa)
{
    return Fa->prec == SAP_FLOAT ? band_spikes_s(Fa) : band_spikes_d(Fa);
}
static sap_status cpu_reduced_factor(sap_band_fact *Fa)
{
    return Fa->prec == SAP_FLOAT ? band_reduced_factor_s(Fa) : band_reduced_factor_d(Fa);
}
static sap_status cpu_block_solve(sap_band_fact *Fa, sap_int k, const void *r, void *z)
{
    if (k < 1) return SAP_ERROR(Fa->ctx, SAP_ERR_INVALID, "band block solve: %lld columns", (long long)k);
    return DISPATCH(block_solve, Fa, k, r, z);
}
static sap_status cpu_reduced_solve(sap_band_fact *Fa, sap_int k, const void *g, void *xr)
{
    return DISPATCH(reduced_solve, Fa, k, g, xr);
}
static sap_status cpu_purify(sap_band_fact *Fa, sap_int k, const void *r, void *f, const void *xr)
{
    return DISPATCH(purify, Fa, k, r, f, xr);
}
static sap_status cpu_fill_from_band(sap_band_fact *Fa, const sap_band_source *src, double *norms)
{
    return DISPATCH(fill_from_band, Fa, src, norms);
}

/* The automatic choice takes the blocked LU from this half-bandwidth on (with LAPACK's
 * BLAS).  Measured on the 2-core development host (bench/banded --parts factor --backend
 * cpu, float, N = 40,000, P = 16): blocked / per-row 0.66x at K = 48, 0.83x at 64, 1.32x at
 * 96, 1.52x at 128; 3x at K = 300 (N = 20,000), 4.6x at K = 600 (N = 5,000, P = 1). */
#define SAP_CPU_BLOCKED_KMIN 80

/* band_block_solve runs one partition per thread (one thread below 4096 rows) */
static sap_int cpu_solve_slots(sap_context *ctx, sap_int n, sap_int nmax, sap_int K, sap_precision prec)
{
    (void)nmax, (void)K, (void)prec;
    return n < 4096 ? 1 : (sap_int)sap__threads(ctx);
}

/* band_factor's blocked work: one skewed window per thread (one when fewer partitions than
 * threads) */
static double cpu_blocked_bytes(const sap_context *ctx, int64_t n, sap_int P, int64_t nmax, sap_int K, size_t es)
{
    const int nt = n < 4096 ? 1 : sap__threads(ctx);
    int64_t ke = (int64_t)K < nmax - 1 ? (int64_t)K : nmax - 1; /* a partition's band */
    if (ke < 0) ke = 0;
    return (double)(P < nt ? 1 : nt) * (double)sap__cpu_blk_elems(nmax, ke) * (double)es;
}

const sap_band_kernels sap__cpu_band_kernels = {
    .name = "cpu",
    .factor = cpu_factor,
    .spikes = cpu_spikes,
    .reduced_factor = cpu_reduced_factor,
    .block_solve = cpu_block_solve,
    .reduced_solve = cpu_reduced_solve,
    .purify = cpu_purify,
    .fill_from_band = cpu_fill_from_band,
    .solve_slots = cpu_solve_slots,
#ifdef SAP_HAVE_LAPACK
    .blocked_kmin = SAP_CPU_BLOCKED_KMIN,
#endif
    .blocked_bytes = cpu_blocked_bytes,
};

