/* reorder_internal.h -- pieces shared by the reordering sources (src/reorder): the
 * maximum-cardinality matching used by the transversal and by DB's singular-matrix
 * path, and the symmetric graph + Cuthill-McKee core shared by the global CM stage and
 * the per-block third stage; the drop-off fraction the sparse solver asks for.  Not installed. */
#ifndef SAP_REORDER_INTERNAL_H
#define SAP_REORDER_INTERNAL_H

#include "device/device.h"

#include <stdatomic.h>

/* Parallel loops only pay above this much work (entries touched). */
#define SAP_REORDER_PAR_MIN 200000

/* ---- drop-off (dropoff.c), also used by the sparse solver ------------------------------ */

/* *fraction = the part of ||A||_F^2 in the entries with |i - j| <= K (1 for a zero
 * matrix; NaN when the squares overflow), from the distance histogram of sap_drop_off. */
sap_status sap__drop_kept_fraction(const sap_csr *A, sap_int K, double *fraction);
/* *h (allocated from A's context, hl entries): h[d] = the sum of a_ij^2 over |i - j| = d,
 * the distance histogram of sap_drop_off (one parallel pass). */
sap_status sap__drop_hist(const sap_csr *A, double **h, sap_int *hl);
/* sap_drop_off's K and kept fraction from a distance histogram h of hl entries
 * (sap__csr_scan's or its own). */
/* sap__drop_kept_fraction's figure from such a histogram. */
double sap__drop_kept_from_hist(const double *h, sap_int hl, sap_int K);
/* ... of the band of half-bandwidth K cut into diagonal blocks of np rows (SaP-D's
 * decoupled partitions): an entry at distance d < np falls inside one block with
 * probability 1 - d / np (its row anywhere in its block), none at d >= np. */
double sap__drop_kept_in_blocks(const double *h, sap_int hl, sap_int K, double np);
sap_status sap__drop_from_hist(sap_context *ctx, const double *h, sap_int hl, double delta, sap_int *K,
                               double *kept_fraction);

/* ---- sap_reorder with the pattern shared (reorder.c) ---------------------------------- */

/* sap_reorder, except that where DB's matching is the identity and nothing after it
 * reorders (no CM, one partition, no drop-off, no statistics) *shared becomes 1 and
 * (*res)->A holds only its own scaled values: its rowptr and colind are A's arrays (no copy
 * of the pattern into fresh pages), so the caller must keep A alive and set them to NULL
 * before the result is destroyed.  Else *shared = 0 and the result is sap_reorder's. */
/* shape (may be NULL; sap__copy_shape, base.h) is filled where the pass that writes the
 * result learns it: the shared path (*shared = 1) and a DB that permutes the rows with
 * nothing after it. */
sap_status sap__reorder_share(const sap_csr *A, const sap_reorder_options *opt, sap_reorder_result **res,
                              int *shared, sap__copy_shape *shape);

/* ---- matching (transversal.c) ---------------------------------------------------- */

/* Maximum-cardinality matching of the bipartite row/column graph of the square A,
 * explicit zeros excluded (DFS with lookahead, MC21 style).  match_row[i] is the column
 * of row i (-1 if unmatched), match_col[j] the row of column j; on entry they may hold a
 * valid partial matching (warm start) or all -1.  *size receives the matching size. */
sap_status sap__max_matching(const sap_csr *A, sap_int *match_row, sap_int *match_col, sap_int *size);

/* ---- CPU versions of the stages that also run on the GPU (for the tests and bench) ---- */

/* sap_db_matching, and (weights non-NULL, on success) its weight array handed over: nnz
 * doubles of A's context whose pages are already touched (NULL where none was made), for
 * the caller to reuse (the permuted copy's values: 640 MB of fresh pages less at 80M
 * entries). */
sap_status sap__db_matching(const sap_csr *A, sap_int *rowperm, double *row_scale, double *col_scale,
                            sap_db_info *info, double **weights);
/* DB's S0 result once the identity is known to be a maximum-product matching (every row's
 * diagonal d[i] = |a_ii| > 0 its largest; sym: |a_ij|^2 <= d_i d_j everywhere): rowperm the
 * identity, the scaling r_i = c_i = 1 / sqrt(d_i) (sym) or r_i = 1 / d_i, c_i = 1 (both
 * may be NULL), info's matched counts and log product (its times left to the caller). */
void sap__db_identity(sap_context *ctx, sap_int n, const double *d, int sym, sap_int *rowperm, double *row_scale,
                      double *col_scale, sap_db_info *info);
/* DB S1: row maxima (loga[i] = log a_i, 0 for an all-zero row) and weights c[p] =
 * log a_i - log |a_ij| (0 at the maximum, +INFINITY at explicit zeros); *nonfinite
 * counts NaN/Inf values.  nt threads (db_matching.c). */
void sap__db_weights_cpu(const sap_csr *A, int nt, double *c, double *loga, sap_int *nonfinite);

/* M->val[p] = (rs[i] * M->val[p]) * cs[j], nt threads (reorder.c). */
void sap__scale_rows_cols_cpu(sap_csr *M, const double *rs, const double *cs, int nt);

/* ---- symmetric graph and Cuthill-McKee (cuthill_mckee.c) ------------------------------ */

/* Node indices of the CM graphs: 32-bit halves the memory traffic of the searches.
 * Graphs of more than 2^28 - 1 nodes are refused (SAP_ERR_TOO_LARGE): that also keeps the
 * search stamps run * (nodes + 1) + position within 64 bits over a whole call. */
typedef int32_t sap__cm_idx;
#define SAP__CM_MAX_NODES (((sap_int)1 << 28) - 1)

/* Workspace of the CM core for graphs of at most cap_n nodes and cap_e stored entries of
 * the source rows.  The core never allocates, so one workspace per thread lets the third
 * stage order its blocks inside a parallel region. */
typedef struct sap__cm_work {
    sap_int cap_n, cap_e;
    sap_int *xadj;      /* cap_n + 1: graph row pointers */
    sap__cm_idx *adj;   /* 2 cap_e: neighbours, each list sorted by (degree, index) */
    sap__cm_idx *adj2;  /* 2 cap_e: the same lists sorted by index (build scratch) */
    sap_int *tptr;      /* cap_n + 1: transposed pattern of the source block */
    sap__cm_idx *tind;  /* cap_e, aliases adj (dead before adj is written) */
    sap_int *stamp;     /* cap_n: run * (cap_n + 1) + position of the last search reaching it */
    sap__cm_idx *q[2];  /* cap_n each: BFS queues (the current level structure and a trial) */
    sap__cm_idx *bydeg; /* cap_n: nodes sorted by (degree, index), set by the build */
    sap_int *cnt;       /* cap_n + 1: counting-sort buckets, component starts */
    sap_int *tcnt;      /* tcnt_threads x cap_n or NULL: per-thread column counts of the
                           parallel transposed pattern (sap_cm_reorder allocates it) */
    int tcnt_threads;
    _Atomic sap_int *claim; /* cap_n or NULL: the parallel search's claims (sap__cm_work_parallel) */
    sap_int *par_off;       /* threads + 1: its per-thread offsets */
    int threads;            /* threads of a parallel search level */
    sap_int par_level;      /* adjacency entries from which a level is searched in parallel */
    double t_ser, t_par;    /* seconds and adjacency entries of the wide levels searched */
    sap_int e_ser, e_par;   /* serially and in parallel (the faster way is taken) */
    sap_int wide;           /* wide levels searched */
    sap_int run;        /* last run id used in stamp[] */
} sap__cm_work;

sap_status sap__cm_work_create(sap_context *ctx, sap_int cap_n, sap_int cap_e, sap__cm_work *w);
void sap__cm_work_free(sap_context *ctx, sap__cm_work *w);
/* Lets the searches of w run their levels of at least level_min adjacency entries on
 * 'threads' threads (OpenMP builds; serial inside a parallel region): allocates the
 * claims.  The orderings are the same as the serial ones. */
sap_status sap__cm_work_parallel(sap_context *ctx, sap__cm_work *w, int threads, sap_int level_min);

/* Builds in w the adjacency of B + B^T without its diagonal, where B = A[s:e, s:e] (only
 * entries with both indices in [s, e); stored entries count, explicit zeros included),
 * with each neighbour list sorted by ascending degree then index.  Needs
 * e - s <= cap_n and the rows' stored entries <= cap_e.  threads > 1 runs the row loops
 * in parallel, the transposed pattern too when w->tcnt holds threads x (e - s) counts
 * (call with 1 inside a parallel region). */
void sap__cm_build_graph(const sap_csr *A, sap_int s, sap_int e, int threads, sap__cm_work *w);
/* The same for B = A(rows, :)[s:e, s:e] (rows: a permutation; NULL: the identity). */
void sap__cm_build_graph_rows(const sap_csr *A, const sap_int *rows, sap_int s, sap_int e, int threads,
                              sap__cm_work *w);

/* The second half of sap__cm_build_graph: given w->xadj and the index-sorted lists in
 * w->adj2 of an m-node graph, sorts the nodes and the lists by (degree, index) (nt > 1:
 * the lists in parallel; the same lists). */
void sap__cm_finish_graph(sap__cm_work *w, sap_int m, int nt);

/* Outcome of the CM core on the graph held in w. */
typedef struct sap__cm_result {
    sap_int bandwidth;    /* half-bandwidth of the ordering (same for CM and RCM) */
    sap_int components;
    sap_int tries;        /* BFS runs, aborted ones included */
    sap_int profile_cm;   /* envelope sizes of the CM and of the reversed ordering */
    sap_int profile_rcm;
    int reversed;         /* 1 when perm holds the reversed (RCM) ordering */
} sap__cm_result;

/* Orders the m = e - s nodes of the graph in w: components one after another (in order
 * of their minimum-degree node), each from the best of several start nodes
 * (pseudo-peripheral search plus extra tries), reversed or not per flags
 * (SAP_CM_AUTO keeps the smaller envelope; the half-bandwidth is the same).
 * perm[k] (new -> old) is a local node index in 0..m-1. */
void sap__cm_order(sap__cm_work *w, sap_int m, int flags, sap_int *perm, sap__cm_result *res);

/* Half-bandwidth max |i - j| over the stored entries of A[s:e, s:e]. */
sap_int sap__block_bandwidth(const sap_csr *A, sap_int s, sap_int e);
/* The same for A(rows, :) (rows NULL: A). */
sap_int sap__block_bandwidth_rows(const sap_csr *A, const sap_int *rows, sap_int s, sap_int e);

/* sap_cm_reorder of A(rows, :) without forming it (rows: a permutation, new -> old; NULL:
 * A itself); the graph is built on the host. */
sap_status sap__cm_reorder_rows(const sap_csr *A, const sap_int *rows, int flags, sap_int *perm, sap_cm_info *info);

#endif /* SAP_REORDER_INTERNAL_H */
