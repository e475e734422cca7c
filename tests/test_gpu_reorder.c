/* test_gpu_reorder.c -- the reordering stages that run on the GPU (src/kernels/cuda/
 * reorder_cuda.cu) against their CPU versions: DB weights (a few ulps: log() may differ
 * in the last bit), DB scaling (bit for bit) and the symmetrized CM graph (identical), on
 * random matrices (odd sizes, empty rows, explicit zeros, one row) and on matrices of the
 * collection; then sap_db_matching, sap_cm_reorder and sap_reorder on a cuda context with
 * the GPU path forced (both offload thresholds 0) against a cpu context.  Exits 77
 * (skipped) without CUDA or without a device. */
#include "testing.h"

#include "reorder/reorder_internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static sap_context *G;
#ifdef SAP_HAVE_CUDA
static sap_context *C;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double urand(void) { return (double)(rnd() >> 11) * 0x1.0p-53; }

/* Random n x n matrix on ctx: about 'per_row' entries a row within a band of width bw
 * (bw <= 0: anywhere), the diagonal always stored unless empty_rows picks the row
 * (then the row is empty), a fraction of explicit zeros, values spread over decades. */
static sap_csr *random_matrix(sap_context *ctx, sap_int n, sap_int per_row, sap_int bw, double empty_rows,
                              double zeros, uint64_t seed)
{
    rng_state = seed * 2654435761u + 12345;
    sap_int cap = n * (per_row + 1);
    sap_int *rp = calloc((size_t)n + 1, sizeof(sap_int)), *ci = malloc(sizeof(sap_int) * (size_t)(cap + 1));
    double *v = malloc(sizeof(double) * (size_t)(cap + 1));
    char *mark = calloc((size_t)n + 1, 1);
    sap_int *cols = malloc(sizeof(sap_int) * (size_t)(per_row + 2));
    sap_int nnz = 0;
    for (sap_int i = 0; i < n; i++) {
        rp[i] = nnz;
        if (urand() < empty_rows) continue;
        sap_int k = 0;
        cols[k++] = i;
        mark[i] = 1;
        for (sap_int t = 0; t < per_row; t++) {
            sap_int j;
            if (bw > 0) {
                j = i - bw + (sap_int)(rnd() % (uint64_t)(2 * bw + 1));
                if (j < 0 || j >= n) continue;
            } else {
                j = (sap_int)(rnd() % (uint64_t)n);
            }
            if (mark[j]) continue;
            mark[j] = 1;
            cols[k++] = j;
        }
        for (sap_int a = 1; a < k; a++) { /* insertion sort */
            sap_int x = cols[a], b = a - 1;
            while (b >= 0 && cols[b] > x) {
                cols[b + 1] = cols[b];
                b--;
            }
            cols[b + 1] = x;
        }
        for (sap_int a = 0; a < k; a++) {
            mark[cols[a]] = 0;
            ci[nnz] = cols[a];
            double x = (urand() - 0.5) * pow(10.0, 6.0 * urand() - 3.0);
            if (cols[a] != i && urand() < zeros) x = 0.0;
            if (cols[a] == i) x = (x >= 0 ? 1.0 : -1.0) * (1.0 + fabs(x) * (double)k);
            v[nnz++] = x;
        }
    }
    rp[n] = nnz;
    sap_csr *A = NULL;
    if (sap_csr_create(ctx, n, n, nnz, &A) == SAP_OK) {
        memcpy(A->rowptr, rp, sizeof(sap_int) * (size_t)(n + 1));
        memcpy(A->colind, ci, sizeof(sap_int) * (size_t)nnz);
        memcpy(A->val, v, sizeof(double) * (size_t)nnz);
    }
    free(rp);
    free(ci);
    free(v);
    free(mark);
    free(cols);
    return A;
}

static sap_csr *clone_to(sap_context *ctx, const sap_csr *A)
{
    sap_csr *B = NULL;
    if (sap_csr_create(ctx, A->nrows, A->ncols, A->nnz, &B) != SAP_OK) return NULL;
    memcpy(B->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1));
    memcpy(B->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
    memcpy(B->val, A->val, sizeof(double) * (size_t)A->nnz);
    return B;
}

/* The three stages, GPU (on G) vs CPU, on A (a matrix of C). */
static void compare_stages(const sap_csr *A, const char *what)
{
    const sap_int n = A->nrows, nnz = A->nnz;
    /* weights */
    double *cc = malloc(sizeof(double) * (size_t)(nnz + 1)), *cg = malloc(sizeof(double) * (size_t)(nnz + 1));
    double *lc = malloc(sizeof(double) * (size_t)(n + 1)), *lg = malloc(sizeof(double) * (size_t)(n + 1));
    sap_int nfc = -1, nfg = -1;
    sap__db_weights_cpu(A, 4, cc, lc, &nfc);
    CHECK_OK(G, sap__ops(G)->db_weights(G, A, cg, lg, &nfg));
    CHECK_MSG(nfc == nfg, "%s: nonfinite %lld vs %lld", what, (long long)nfc, (long long)nfg);
    sap_int bad = 0;
    double worst = 0.0;
    for (sap_int i = 0; i < n; i++) {
        if (fabs(lg[i] - lc[i]) > 4 * DBL_EPSILON * fabs(lc[i])) bad++;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (isinf(cc[p]) || cc[p] == 0.0) {
                if (cg[p] != cc[p]) bad++;
                continue;
            }
            double scale = fabs(lc[i]) + fabs(log(fabs(A->val[p])));
            double d = fabs(cg[p] - cc[p]);
            if (d > worst * scale) worst = d / (scale > 0 ? scale : 1.0);
            if (d > 8 * DBL_EPSILON * scale) bad++;
        }
    }
    CHECK_MSG(bad == 0, "%s: %lld weights differ by more than a few ulps (worst %.3g)", what, (long long)bad, worst);

    /* scaling */
    double *rs = malloc(sizeof(double) * (size_t)(n + 1)), *cs = malloc(sizeof(double) * (size_t)(n + 1));
    for (sap_int i = 0; i < n; i++) {
        rs[i] = exp(4.0 * urand() - 2.0);
        cs[i] = exp(4.0 * urand() - 2.0);
    }
    sap_csr *Mc = clone_to(C, A), *Mg = clone_to(C, A);
    CHECK(Mc && Mg);
    if (Mc && Mg) {
        sap__scale_rows_cols_cpu(Mc, rs, cs, 4);
        CHECK_OK(G, sap__ops(G)->scale_rows_cols(G, Mg, rs, cs));
        CHECK_MSG(nnz == 0 || memcmp(Mc->val, Mg->val, sizeof(double) * (size_t)nnz) == 0, "%s: scaled values differ",
                  what);
    }
    sap_csr_destroy(Mc);
    sap_csr_destroy(Mg);

    /* symmetrized graph */
    sap__cm_work w;
    memset(&w, 0, sizeof(w));
    CHECK_OK(C, sap__cm_work_create(C, n, nnz, &w));
    sap_int *xg = malloc(sizeof(sap_int) * (size_t)(n + 1));
    int32_t *ag = malloc(sizeof(int32_t) * (size_t)(2 * nnz + 1));
    sap_int nadj = -1;
    if (w.xadj) {
        sap__cm_build_graph(A, 0, n, 4, &w);
        CHECK_OK(G, sap__ops(G)->sym_graph(G, A, xg, ag, &nadj));
        CHECK_MSG(memcmp(xg, w.xadj, sizeof(sap_int) * (size_t)(n + 1)) == 0, "%s: graph row pointers differ", what);
        CHECK_MSG(nadj == w.xadj[n], "%s: %lld graph entries vs %lld", what, (long long)nadj, (long long)w.xadj[n]);
        if (nadj == w.xadj[n])
            CHECK_MSG(nadj == 0 || memcmp(ag, w.adj2, sizeof(int32_t) * (size_t)nadj) == 0, "%s: graph lists differ",
                      what);
    }
    sap__cm_work_free(C, &w);
    free(xg);
    free(ag);
    free(rs);
    free(cs);
    free(cc);
    free(cg);
    free(lc);
    free(lg);
}

/* The public entry points on the cuda context (GPU path forced) vs the cpu context. */
static void compare_reorder(const sap_csr *Ac, const char *what)
{
    sap_csr *Ag = clone_to(G, Ac);
    CHECK(Ag != NULL);
    if (!Ag) return;
    const sap_int n = Ac->nrows;
    sap_int *pc = malloc(sizeof(sap_int) * (size_t)(n + 1)), *pg = malloc(sizeof(sap_int) * (size_t)(n + 1));
    sap_cm_info ic, ig;
    sap_status sc = sap_cm_reorder(Ac, SAP_CM_AUTO, pc, &ic), sg = sap_cm_reorder(Ag, SAP_CM_AUTO, pg, &ig);
    CHECK_MSG(sc == sg, "%s: cm status %s vs %s", what, sap_status_name(sc), sap_status_name(sg));
    if (sc == SAP_OK && sg == SAP_OK) {
        CHECK_MSG(memcmp(pc, pg, sizeof(sap_int) * (size_t)n) == 0, "%s: CM permutations differ", what);
        CHECK_MSG(ic.K_after == ig.K_after, "%s: CM K %lld vs %lld", what, (long long)ic.K_after,
                  (long long)ig.K_after);
    }
    sap_reorder_options o;
    sap_reorder_options_init(&o);
    o.partitions = n > 64 ? 4 : 1;
    sap_reorder_result *rc = NULL, *rg = NULL;
    sc = sap_reorder(Ac, &o, &rc);
    sg = sap_reorder(Ag, &o, &rg);
    CHECK_MSG(sc == sg, "%s: reorder status %s vs %s", what, sap_status_name(sc), sap_status_name(sg));
    if (rc && rg) {
        CHECK_CLOSE(rg->db.cost, rc->db.cost, 1e-12);
        int same = memcmp(rc->row_perm, rg->row_perm, sizeof(sap_int) * (size_t)n) == 0 &&
                   memcmp(rc->col_perm, rg->col_perm, sizeof(sap_int) * (size_t)n) == 0;
        if (same) {
            CHECK_MSG(rc->K_drop == rg->K_drop, "%s: K %lld vs %lld", what, (long long)rc->K_drop,
                      (long long)rg->K_drop);
            sap_int bad = 0;
            for (sap_int p = 0; p < rc->A->nnz; p++)
                if (!sap_test_close(rc->A->val[p], rg->A->val[p], 1e-12)) bad++;
            CHECK_MSG(bad == 0, "%s: %lld reordered values differ", what, (long long)bad);
        }
        printf("  %-28s n=%-8lld cost %.17g / %.17g, K %lld / %lld, permutations %s\n", what, (long long)n,
               rc->db.cost, rg->db.cost, (long long)rc->K_drop, (long long)rg->K_drop,
               same ? "identical" : "differ (tie among equal-cost matchings)");
    }
    sap_reorder_result_destroy(rc);
    sap_reorder_result_destroy(rg);
    free(pc);
    free(pg);
    sap_csr_destroy(Ag);
}

static void real_matrices(void)
{
    if (!sap_test_have_matrices("real matrices")) return;
    static const char *names[] = {"bcsstk17", "cage11", "Andrews", "airfoil_2d", "G3_circuit"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.mtx.gz", sap_test_matrix_dir(), names[k]);
        sap_csr *A = NULL;
        if (sap_mm_read_csr(C, path, NULL, &A, NULL) != SAP_OK) {
            printf("  %s: not readable, skipped\n", names[k]);
            continue;
        }
        compare_stages(A, names[k]);
        compare_reorder(A, names[k]);
        sap_csr_destroy(A);
    }
}
#endif

int main(void)
{
    int rc = sap_test_gpu_context("test_gpu_reorder", 0, &G, NULL);
    if (rc) return rc;
#ifdef SAP_HAVE_CUDA
    C = sap_test_context(SAP_BACKEND_CPU);
    printf("device: %s\n", sap_context_device_name(G));
    sap__offload_set_min_nnz(G, SAP_OFFLOAD_GRAPH, 0); /* force the GPU path */
    sap__offload_set_min_nnz(G, SAP_OFFLOAD_DB, 0);

    static const struct {
        sap_int n, per_row, bw;
        double empty, zeros;
    } cases[] = {
        {1, 0, 0, 0.0, 0.0},       {1, 3, 0, 0.0, 0.0},      {2, 1, 0, 0.0, 0.5},      {7, 3, 0, 0.3, 0.3},
        {31, 5, 0, 0.0, 0.1},      {33, 4, 3, 0.1, 0.2},     {257, 9, 0, 0.05, 0.05}, {1001, 7, 20, 0.0, 0.1},
        {4099, 40, 0, 0.02, 0.02}, {30011, 12, 200, 0.0, 0.0}, {200003, 8, 0, 0.001, 0.01},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char what[96];
        snprintf(what, sizeof what, "random n=%lld r=%lld bw=%lld e=%.2f z=%.2f", (long long)cases[k].n,
                 (long long)cases[k].per_row, (long long)cases[k].bw, cases[k].empty, cases[k].zeros);
        sap_csr *A = random_matrix(C, cases[k].n, cases[k].per_row, cases[k].bw, cases[k].empty, cases[k].zeros,
                                   (uint64_t)k + 1);
        CHECK(A != NULL);
        if (!A) continue;
        compare_stages(A, what);
        if (cases[k].empty == 0.0) compare_reorder(A, what);
        sap_csr_destroy(A);
    }
    /* an all-zero matrix with stored entries, and an empty one */
    {
        sap_csr *A = random_matrix(C, 5, 3, 0, 0.0, 1.0, 99);
        if (A) {
            for (sap_int p = 0; p < A->nnz; p++) A->val[p] = 0.0;
            compare_stages(A, "zero values");
            sap_csr_destroy(A);
        }
        sap_csr *E = random_matrix(C, 9, 3, 0, 1.0, 0.0, 5);
        if (E) {
            compare_stages(E, "no entries");
            sap_csr_destroy(E);
        }
    }
    /* generated banded-synthetic matrix */
    {
        sap_csr *A = NULL;
        CHECK_OK(C, sap_gen_spec(C, "gen:synthetic:N=50001,K=30", &A));
        if (A) {
            compare_stages(A, "gen synthetic");
            compare_reorder(A, "gen synthetic");
            sap_csr_destroy(A);
        }
    }
    real_matrices();
    sap_context_destroy(C);
    sap_context_destroy(G);
#endif
    return sap_test_finish("test_gpu_reorder");
}
