/* test_memory_limit.c -- the sparse solver's memory estimate and what it does when the
 * band does not fit (issue 13): on the cpu backend with a small memory_limit option, and
 * (--backend cuda) on a GPU whose memory has been filled by another allocation first,
 * leaving about 1 GB: the estimate must stay under what is free, and the solve must still
 * succeed (a narrower band, another method, or the host) with the memory decision in
 * stats.reason / stats.tried. */
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef SAP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define SAP_TEST_HAS_GPU_PART 1

/* b = A x* (parabola), solve, check the residual; returns the stats. */
static void solve_case(sap_context *ctx, const char *label, const sap_csr *A, const sap_solver_options *o,
                       sap_solver_stats *st)
{
    const sap_int n = A->nrows;
    double *xs = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    double *x = calloc((size_t)n, sizeof(double));
    CHECK_OK(ctx, sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs));
    CHECK_OK(ctx, sap_csr_spmv(A, 1.0, xs, 0.0, b));
    sap_solver *S = NULL;
    memset(st, 0, sizeof(*st));
    CHECK_OK(ctx, sap_solver_create(ctx, A, o, &S));
    sap_status s = sap_solver_setup(S);
    CHECK_MSG(s >= 0, "%s: setup %s (%s)", label, sap_status_name(s), sap_context_last_error(ctx));
    if (s >= 0) {
        s = sap_solver_solve(S, b, x);
        CHECK_MSG(s == SAP_OK, "%s: solve %s (%s)", label, sap_status_name(s), sap_context_last_error(ctx));
        const double r = sap_test_rel_residual(A, x, b);
        CHECK_MSG(r < 1e-8, "%s: residual %.3g", label, r);
    }
    if (S) sap_solver_get_stats(S, st);
    printf("  %s: method %s, K %lld, estimate %.3g GB; %s\n", label, sap_solver_method_name(st->method),
           (long long)st->K_drop, (double)st->memory_estimate / 1e9, st->reason);
    for (int i = 0; i < st->ntries && i < SAP_SOLVER_MAX_TRIES; i++)
        printf("    tried %s P %lld K %lld: %s %s\n", sap_solver_method_name(st->tried[i].method),
               (long long)st->tried[i].partitions, (long long)st->tried[i].half_bandwidth,
               sap_status_name(st->tried[i].status), st->tried[i].note);
    sap_solver_destroy(S);
    free(xs);
    free(b);
    free(x);
}

/* cpu: a memory_limit a quarter of what the automatic band needs */
static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 100000, 60, 1.0, 0, 3, &A));
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.host_direct = 0; /* the SaP path, not the direct band LU of small bands */
    sap_solver_stats free_st, lim_st;
    solve_case(ctx, "no limit", A, &o, &free_st);
    CHECK(free_st.memory_estimate > 0);
    o.memory_limit = free_st.memory_estimate / 4;
    solve_case(ctx, "limit 1/4", A, &o, &lim_st);
    CHECK_MSG(lim_st.memory_estimate <= o.memory_limit, "estimate %lld > limit %lld",
              (long long)lim_st.memory_estimate, (long long)o.memory_limit);
    CHECK_MSG(strstr(lim_st.reason, "given") != NULL, "the limit is named: %s", lim_st.reason);
    /* a limit no method fits: a clean error, never an attempt to allocate */
    o.memory_limit = 1024;
    sap_solver *S = NULL;
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    sap_status s = sap_solver_setup(S);
    CHECK_MSG(s < 0 || s == SAP_OK, "tiny limit: %s", sap_status_name(s));
    if (s < 0) CHECK(sap_context_last_error(ctx)[0] != '\0');
    sap_solver_destroy(S);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return 0;
}

/* cuda: the device filled but for ~1 GB by a plain cudaMalloc outside the library */
static int gpu_part(void)
{
#ifndef SAP_HAVE_CUDA
    return 77;
#else
    sap_context *G = NULL;
    int dryrun = 0;
    int rc = sap_test_gpu_context(sap_test_name(), 0, &G, &dryrun);
    if (rc) return rc;
    size_t fr = 0, tot = 0;
    void *hog = NULL;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        sap_context_destroy(G);
        return 1;
    }
    const size_t leave = (size_t)1 << 30;
    if (fr > leave + ((size_t)256 << 20) && cudaMalloc(&hog, fr - leave) != cudaSuccess) hog = NULL;
    cudaMemGetInfo(&fr, &tot);
    printf("device: %.2f GB free of %.2f GB after the filler\n", (double)fr / 1e9, (double)tot / 1e9);
    CHECK(hog != NULL);
    sap_csr *A = NULL;
    /* a band hidden by permutations, 2% full: the matrix ~0.1 GB fits, the band after CM,
     * 1e6 x 401 floats = 1.6 GB, does not */
    CHECK_OK(G, sap_gen_synthetic(G, 1000000, 200, 1.0, 0.02, 4, &A, NULL, NULL));
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.host_small = 0;
    sap_solver_stats st;
    solve_case(G, "1 GB free", A, &o, &st);
    CHECK_MSG(st.memory_estimate <= (int64_t)fr, "estimate %.3g GB > %.3g GB free", (double)st.memory_estimate / 1e9,
              (double)fr / 1e9);
    CHECK_MSG(strstr(st.reason, "free device") != NULL || st.on_host, "the device limit is named: %s", st.reason);
    sap_csr_destroy(A);
    if (hog) cudaFree(hog);
    sap_context_destroy(G);
    return 0;
#endif
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_memory_limit", cpu_part, gpu_part); }
