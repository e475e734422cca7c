/* band_cpu.c -- the cpu implementation of the band kernel table (band_impl.h): batched
 * LU / UL without pivoting with pivot boosting, truncated spikes, reduced systems and
 * the banded sweeps, in float and double, OpenMP across partitions.
 * PARTIAL: no parallelism inside one partition yet (P >= threads is what the automatic
 * choice picks on the cpu, so the threads are busy except for P < threads). */
#include "device/cpu/cpu_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S d
#define REAL double
#include "device/cpu/band_cpu_t.h"
#undef S
#undef REAL

#define S s
#define REAL float
#include "device/cpu/band_cpu_t.h"
#undef S
#undef REAL

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
static sap_status cpu_block_solve(sap_band_fact *Fa, const void *r, void *z) { return DISPATCH(block_solve, Fa, r, z); }
static sap_status cpu_reduced_solve(sap_band_fact *Fa, const void *g) { return DISPATCH(reduced_solve, Fa, g); }
static sap_status cpu_purify(sap_band_fact *Fa, const void *r, void *f) { return DISPATCH(purify, Fa, r, f); }
static sap_status cpu_fill_from_band(sap_band_fact *Fa, const sap_band_source *src, double *norms)
{
    return DISPATCH(fill_from_band, Fa, src, norms);
}

/* band_block_solve runs one partition per thread (one thread below 4096 rows) */
static sap_int cpu_solve_slots(sap_context *ctx, sap_int n, sap_int nmax, sap_int K, sap_precision prec)
{
    (void)nmax, (void)K, (void)prec;
    return n < 4096 ? 1 : (sap_int)sap__threads(ctx);
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
};

