/* reorder_gpu.c -- the reordering stages that a cuda context may run on the GPU, timed
 * CPU (the context's OpenMP threads, all host cores by default) vs GPU (uploads and
 * downloads included, 32-bit indices narrowed on the host included): DB weights (S1 of
 * sap_db_matching), the DB scaling of the permuted matrix, and the graph of A + A^T for
 * Cuthill-McKee (the GPU builds the index-sorted lists, the host then sorts them by
 * degree as on the CPU path, both timed).  Then whole sap_reorder calls (DB + scaling +
 * CM, no third stage) on a cpu context and on a cuda context with the GPU path forced,
 * for matrices up to 2e7 entries.  Times are the minimum of 3 runs after a warm-up.
 *
 * Usage: reorder_gpu [MATRIX_OR_GEN_SPEC ...]   (default: a size sweep of
 * gen:synthetic:N=...,K=50 plus G3_circuit, cage11 and Andrews from $SAP_MATRIX_DIR)
 * Prints a markdown table.  Needs CUDA (prints a note and exits 0 without). */
#include "sap.h"
#include "base/base.h"

#include "reorder/reorder_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SAP_HAVE_CUDA
#define REPS 3
#define BEST(var, stmt)                                                                               \
    do {                                                                                              \
        var = INFINITY;                                                                               \
        for (int r_ = 0; r_ < REPS; r_++) {                                                           \
            double t_ = sap__wtime();                                                                 \
            stmt;                                                                                     \
            t_ = sap__wtime() - t_;                                                                   \
            if (t_ < var) var = t_;                                                                   \
        }                                                                                             \
    } while (0)

static sap_csr *clone_to(sap_context *ctx, const sap_csr *A)
{
    sap_csr *B = NULL;
    if (sap_csr_create(ctx, A->nrows, A->ncols, A->nnz, &B) != SAP_OK) return NULL;
    memcpy(B->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1));
    memcpy(B->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
    memcpy(B->val, A->val, sizeof(double) * (size_t)A->nnz);
    return B;
}

static void one(sap_context *C, sap_context *G, const char *spec)
{
    sap_csr *A = NULL;
    sap_status st = sap_matrix_load(C, spec, NULL, &A);
    if (st != SAP_OK) {
        printf("| %s | not loaded (%s) |\n", spec, sap_status_name(st));
        return;
    }
    const sap_int n = A->nrows, nnz = A->nnz;
    const int nt = sap__threads(C);
    double *c = malloc(sizeof(double) * (size_t)(nnz + 1)), *la = malloc(sizeof(double) * (size_t)(n + 1));
    double *rs = malloc(sizeof(double) * (size_t)(n + 1)), *cs = malloc(sizeof(double) * (size_t)(n + 1));
    for (sap_int i = 0; i < n; i++) rs[i] = cs[i] = 1.0 + 1e-3 * (double)(i % 7);
    sap_int nf = 0, nadj = 0;
    double tw_c, tw_g, ts_c, ts_g, tg_c, tg_g;
    sap__db_weights_cpu(A, nt, c, la, &nf);
    sap__ops(G)->db_weights(G, A, c, la, &nf); /* warm-up: pool blocks, module load */
    BEST(tw_c, sap__db_weights_cpu(A, nt, c, la, &nf));
    BEST(tw_g, sap__ops(G)->db_weights(G, A, c, la, &nf));
    sap__scale_rows_cols_cpu(A, rs, cs, nt);
    sap__ops(G)->scale_rows_cols(G, A, rs, cs);
    BEST(ts_c, sap__scale_rows_cols_cpu(A, rs, cs, nt));
    BEST(ts_g, sap__ops(G)->scale_rows_cols(G, A, rs, cs));
    sap__cm_work w;
    memset(&w, 0, sizeof(w));
    tg_c = tg_g = NAN;
    if (sap__cm_work_create(C, n, nnz, &w) == SAP_OK) {
        sap__cm_build_graph(A, 0, n, nt, &w);
        sap__ops(G)->sym_graph(G, A, w.xadj, w.adj2, &nadj);
        BEST(tg_c, sap__cm_build_graph(A, 0, n, nt, &w));
        BEST(tg_g, sap__ops(G)->sym_graph(G, A, w.xadj, w.adj2, &nadj); sap__cm_finish_graph(&w, n, nt));
    }
    sap__cm_work_free(C, &w);
    double tr_c = NAN, tr_g = NAN;
    if (nnz <= 20000000) {
        sap_reorder_options o;
        sap_reorder_options_init(&o);
        o.stats = 0;
        sap_csr *Ag = clone_to(G, A);
        sap_reorder_result *r = NULL;
        sap_int keep_g = G->offload_min_nnz[SAP_OFFLOAD_GRAPH], keep_d = G->offload_min_nnz[SAP_OFFLOAD_DB];
        double t = sap__wtime();
        if (sap_reorder(A, &o, &r) == SAP_OK) tr_c = sap__wtime() - t;
        sap_reorder_result_destroy(r);
        r = NULL;
        sap__offload_set_min_nnz(G, SAP_OFFLOAD_GRAPH, 0);
        sap__offload_set_min_nnz(G, SAP_OFFLOAD_DB, 0);
        t = sap__wtime();
        if (Ag && sap_reorder(Ag, &o, &r) == SAP_OK) tr_g = sap__wtime() - t;
        sap__offload_set_min_nnz(G, SAP_OFFLOAD_GRAPH, keep_g);
        sap__offload_set_min_nnz(G, SAP_OFFLOAD_DB, keep_d);
        sap_reorder_result_destroy(r);
        sap_csr_destroy(Ag);
    }
    printf("| %s | %lld | %lld | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | %.1f | %.1f |\n", spec,
           (long long)n, (long long)nnz, 1e3 * tw_c, 1e3 * tw_g, tw_c / tw_g, 1e3 * ts_c, 1e3 * ts_g, ts_c / ts_g,
           1e3 * tg_c, 1e3 * tg_g, tg_c / tg_g, 1e3 * tr_c, 1e3 * tr_g);
    fflush(stdout);
    free(c);
    free(la);
    free(rs);
    free(cs);
    sap_csr_destroy(A);
}
#endif

int main(int argc, char **argv)
{
#ifndef SAP_HAVE_CUDA
    (void)argc;
    (void)argv;
    printf("reorder_gpu: built without CUDA\n");
    return 0;
#else
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.print_level = SAP_PRINT_SILENT;
    sap_context *C = NULL, *G = NULL;
    if (sap_context_create(&C, &cfg) != SAP_OK) return 1;
    cfg.backend = SAP_BACKEND_CUDA;
    if (sap_context_create(&G, &cfg) != SAP_OK) {
        printf("reorder_gpu: no CUDA device\n");
        sap_context_destroy(C);
        return 0;
    }
    printf("device: %s, CPU threads: %d\n\n", sap_context_device_name(G), sap__threads(C));
    printf("| matrix | N | nnz | weights CPU ms | GPU ms | CPU/GPU | scaling CPU ms | GPU ms | CPU/GPU | graph CPU ms "
           "| GPU ms | CPU/GPU | sap_reorder cpu ms | cuda (forced) ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    if (argc > 1) {
        for (int k = 1; k < argc; k++) one(C, G, argv[k]);
    } else {
        static const char *gens[] = {"gen:banded:N=10000,K=10", "gen:synthetic:N=10000,K=50",
                                     "gen:synthetic:N=30000,K=50", "gen:synthetic:N=100000,K=50",
                                     "gen:synthetic:N=300000,K=50", "gen:synthetic:N=1000000,K=50"};
        for (size_t k = 0; k < sizeof gens / sizeof gens[0]; k++) one(C, G, gens[k]);
        const char *dir = getenv("SAP_MATRIX_DIR");
        static const char *mats[] = {"Andrews", "cage11", "G3_circuit"};
        for (size_t k = 0; dir && k < sizeof mats / sizeof mats[0]; k++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, mats[k]);
            one(C, G, path);
        }
    }
    sap_context_destroy(G);
    sap_context_destroy(C);
    return 0;
#endif
}
