/* reorder.c -- the composed SaP preprocessing: DB (+ scaling) -> CM on A + A^T ->
 * drop-off -> third stage, with the permutations and scalings kept so the solution of
 * the reordered system maps back to the original one, and statistics after each stage.
 *
 * Bookkeeping.  Each stage applies a row permutation p_s and a column permutation q_s
 * (new -> old) to the current matrix; the overall maps compose as
 * row_perm[i] = row_perm_prev[p_s[i]] and col_perm[j] = col_perm_prev[q_s[j]].  DB permutes
 * rows only; CM and the third stage are symmetric.  Scaling (DB) multiplies each entry as
 * (r_i * a_ij) * c_j, and sap_reorder_undo_matrix divides in the reverse order.  Without
 * per-stage statistics DB and CM share one permutation of A (the matrix in between is
 * never formed; the same result). */
#include "reorder/reorder_internal.h"
#include "base/csr_search.h"

#include <math.h>
#include <string.h>


void sap_reorder_options_init(sap_reorder_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->db = SAP_DB_PRODUCT;
    opt->scale = 1;
    opt->cm = 1;
    opt->cm_flags = SAP_CM_AUTO;
    opt->drop_delta = 1.0;
    opt->partitions = 1;
    opt->stats = 1;
}

void sap_reorder_result_destroy(sap_reorder_result *res)
{
    if (!res) return;
    sap_context *ctx = res->ctx;
    sap__free(ctx, res->row_perm);
    sap__free(ctx, res->col_perm);
    sap__free(ctx, res->row_scale);
    sap__free(ctx, res->col_scale);
    sap_csr_destroy(res->A);
    sap_csr_destroy(res->A_band);
    sap__free(ctx, res->offsets);
    sap__free(ctx, res->Ki_before);
    sap__free(ctx, res->Ki);
    sap__free(ctx, res);
}

/* Entries of the band of half-width K of an m x m matrix. */
static double band_entries(sap_int m, sap_int K)
{
    if (m <= 0) return 0.0;
    if (K >= m) K = m - 1;
    return (double)m * (double)(2 * K + 1) - (double)K * (double)(K + 1);
}

/* Statistics of M after a stage (K from sap_csr_stats). */
static sap_status stage_stats(const sap_csr *M, sap_reorder_stage *s)
{
    sap_matrix_stats ms;
    sap_status st = sap_csr_stats(M, &ms);
    if (st < 0) return st;
    s->K = ms.half_bandwidth;
    s->nnz = ms.nnz;
    s->mean_row_width = ms.mean_row_width;
    double be = band_entries(M->nrows, ms.half_bandwidth);
    s->band_fill = be > 0 ? (double)ms.nnz / be : 0.0;
    s->diag_dominance = ms.diag_dominance;
    s->zero_diagonal = ms.zero_diagonal;
    return SAP_OK;
}

/* In place: row i of M times rs[i], entry (i, j) then times cs[j]. */
void sap__scale_rows_cols_cpu(sap_csr *M, const double *rs, const double *cs, int nt)
{
    const sap_int n = M->nrows;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (M->nnz > SAP_REORDER_PAR_MIN)")
    for (sap_int i = 0; i < n; i++) {
        const double ri = rs[i];
        for (sap_int p = M->rowptr[i]; p < M->rowptr[i + 1]; p++) M->val[p] = (ri * M->val[p]) * cs[M->colind[p]];
    }
}

sap_status sap_reorder(const sap_csr *A, const sap_reorder_options *opt, sap_reorder_result **out)
{
    return sap__reorder_share(A, opt, out, NULL, NULL);
}

/* B's values r_i a_ij c_j in val (nnz doubles, taken), its pattern A's arrays, written by
 * sap__csr_rows_shape: sh (may be NULL) gets B's shape, dg (may be NULL) DB's S0 test into
 * *s0 (B unfinished where it fails) from the same pass. */
static sap_status scaled_view(const sap_csr *A, const double *rs, const double *cs, const double *dg, double *val,
                              sap__copy_shape *sh, int *s0, sap_csr **out)
{
    sap_context *ctx = A->ctx;
    sap_csr *B = sap__alloc(ctx, 1, sizeof(sap_csr), true, __FILE__, __LINE__);
    if (!B) {
        sap__free(ctx, val);
        return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "sap_reorder: out of memory");
    }
    B->ctx = ctx;
    B->nrows = A->nrows;
    B->ncols = A->ncols;
    B->nnz = A->nnz;
    B->rowptr = A->rowptr;
    B->colind = A->colind;
    B->val = val;
    const sap_status st =
        sap__csr_rows_shape(A, NULL, rs, cs, dg, B, sap__threads_for(ctx, (double)A->nnz + (double)A->nrows), sh, s0);
    if (st < 0) { /* its values freed with it, not the pattern */
        B->rowptr = NULL;
        B->colind = NULL;
        sap_csr_destroy(B);
        return st;
    }
    *out = B;
    return st;
}

/* DB where the result may share A's pattern, when the identity is a maximum-product
 * matching (DB's S0, db_matching.c): |a_ii| of each row (a binary search a row), then
 * scaled_view's one pass tests S0 on every row while it writes the copy with the
 * symmetric scaling r = c = 1 / sqrt|a_ii| (and reads its shape); where some |a_ij|^2 >
 * |a_ii a_jj| a second pass writes it with r = 1 / |a_ii|, c = 1: sap__db_matching's
 * result and values, one pass over A instead of three (gen:banded N = 50,000, K = 1,500,
 * d = 0.5 on 16 cores: 150 ms of DB -> 80).  *done = 0, nothing made, where S0 fails
 * (the matching's turn: it finds the failing row again at once).  R->db's matching time
 * is the diagonal's; the test is the copy's. */
static sap_status db_identity_copy(const sap_csr *A, int scale, sap_reorder_result *R, sap_int *p,
                                   sap__copy_shape *sh, sap_csr **cur, int *done)
{
    sap_context *ctx = A->ctx;
    sap_status st = SAP_OK;
    const sap_int n = A->nrows, *rp = A->rowptr, *ci = A->colind;
    const double t0 = sap__wtime();
    double *dg = NULL, *w = NULL;
    sap_csr *B = NULL;
    *done = 0;
    if (n == 0) return SAP_OK;
    SAP_ALLOC(ctx, dg, n);
    int bad = 0;
    const int nt = sap__threads_for(ctx, 16.0 * (double)n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(| : bad) if (n > 65536)")
    for (sap_int i = 0; i < n; i++) {
        const sap_int q = sap__csr_find(rp, ci, i, i);
        dg[i] = q < 0 ? 0.0 : fabs(A->val[q]);
        bad |= !(dg[i] > 0 && dg[i] < INFINITY);
    }
    if (bad) goto cleanup;
    double *rs = scale ? R->row_scale : NULL, *cs = scale ? R->col_scale : NULL;
    const double t1 = sap__wtime();
    int s0 = 0;
    sap__db_identity(ctx, n, dg, 1, p, rs, cs, &R->db);
    if (A->nnz > 0 && !(w = sap__alloc(ctx, (size_t)A->nnz, sizeof(double), false, __FILE__, __LINE__)))
        SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "sap_reorder: out of memory");
    st = scaled_view(A, rs, cs, dg, w, sh, &s0, &B);
    w = NULL; /* taken */
    if (st < 0) goto cleanup;
    if (s0 == 2) { /* the unsymmetric I-matrix form, into the same values */
        sap__db_identity(ctx, n, dg, 0, p, rs, cs, &R->db);
        w = B->val;
        B->val = NULL;
        B->rowptr = NULL, B->colind = NULL;
        sap_csr_destroy(B);
        B = NULL;
        st = scaled_view(A, rs, cs, NULL, w, sh, NULL, &B);
        w = NULL;
        if (st < 0) goto cleanup;
    }
    if (s0 == 0) goto cleanup; /* (scaled_view filled no sh) */
    R->db.time = R->db.time_weights = t1 - t0;
    *cur = B;
    B = NULL;
    *done = 1;
cleanup:
    if (B) B->rowptr = NULL, B->colind = NULL; /* A's */
    sap_csr_destroy(B);
    sap__free(ctx, w);
    sap__free(ctx, dg);
    return st;
}

sap_status sap__reorder_share(const sap_csr *A, const sap_reorder_options *opt, sap_reorder_result **out,
                              int *shared, sap__copy_shape *shape)
{
    if (shared) *shared = 0;
    if (shape) shape->done = 0, shape->hist = NULL, shape->hist_len = 0;
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *out = NULL;
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "reordering a %lld x %lld matrix", (long long)A->nrows,
                         (long long)A->ncols);
    sap_reorder_options o;
    sap_reorder_options_init(&o);
    if (opt) o = *opt;
    if (o.db != SAP_DB_NONE && o.db != SAP_DB_PRODUCT && o.db != SAP_DB_TRANSVERSAL)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown DB mode %d", (int)o.db);
    if (o.cm_flags < SAP_CM_AUTO || o.cm_flags > SAP_CM_FORCE_CM)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown Cuthill-McKee flags %d", o.cm_flags);
    if (!(o.drop_delta >= 0.0)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "drop_delta = %g", o.drop_delta);
    const sap_int n = A->nrows;
    sap_int P = o.partitions > 1 ? o.partitions : 1;
    if (P > n && n > 0) P = n;
    if (n == 0) P = 1;

    sap_status st = SAP_OK;
    sap_reorder_result *R = NULL;
    sap_int *p = NULL, *tmp = NULL;
    sap_csr *cur = NULL, *next = NULL, *band = NULL;
    double t;
    SAP_CALLOC(ctx, R, 1);
    R->ctx = ctx;
    R->n = n;
    R->P = P;
    R->kept_fraction = 1.0;
    SAP_ALLOC(ctx, R->row_perm, n);
    SAP_ALLOC(ctx, R->col_perm, n);
    SAP_ALLOC(ctx, R->offsets, P + 1);
    SAP_ALLOC(ctx, R->Ki_before, P);
    SAP_ALLOC(ctx, R->Ki, P);
    SAP_ALLOC(ctx, p, n);
    SAP_ALLOC(ctx, tmp, n);
    for (sap_int i = 0; i < n; i++) R->row_perm[i] = R->col_perm[i] = i;
    SAP_TRY(sap_partition_offsets(n, P, R->offsets));
    if (o.stats) SAP_TRY(stage_stats(A, &R->stage[SAP_STAGE_ORIGINAL]));
    R->stage[SAP_STAGE_ORIGINAL].done = 1;

    /* DB and CM without the matrix in between: the CM graph is built from A's rows in the
     * DB order, and one permutation of A with the scaling on the way gives the result (the
     * same matrix as the stages one after another; needs neither statistics of the middle
     * stage nor the device) */
    const int fused = o.db != SAP_DB_NONE && o.cm && !o.stats && !sap__offload(ctx, SAP_OFFLOAD_DB, A->nnz) &&
                      !sap__offload(ctx, SAP_OFFLOAD_GRAPH, A->nnz);

    /* ---- DB ---------------------------------------------------------------------------- */
    t = sap__wtime();
    if (o.db == SAP_DB_PRODUCT) {
        int scale = o.scale != 0;
        if (scale) {
            SAP_ALLOC(ctx, R->row_scale, n);
            SAP_ALLOC(ctx, R->col_scale, n);
        }
        /* (the matching's weight array, A's size, holds the permuted copy's values below:
         * its pages are touched already; gen:synthetic N = 200,000: 640 MB) */
        double *w = NULL;
        /* the result final after DB (its shape read in the pass that writes it) */
        const int final = !fused && !o.cm && P == 1 && o.drop_delta >= 1.0 && !o.stats;
        const int may_share = shared && final, with_shape = final && shape;
        int s0 = 0;
        if (may_share) SAP_TRY(db_identity_copy(A, scale, R, p, shape, &cur, &s0));
        if (!s0) SAP_TRY(sap__db_matching(A, p, R->row_scale, R->col_scale, &R->db, fused ? NULL : &w));
        int ident = may_share && !s0;
        for (sap_int i = 0; ident && i < n; i++) ident = p[i] == i;
        if (s0) {
            *shared = 1; /* the copy made with S0's test */
        } else if (ident) {
            /* the matching kept the order: the scaled values only, A's pattern shared */
            if (!w && A->nnz > 0) w = sap__alloc(ctx, (size_t)A->nnz, sizeof(double), false, __FILE__, __LINE__);
            if (!w && A->nnz > 0) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "sap_reorder: out of memory");
            SAP_TRY(scaled_view(A, R->row_scale, R->col_scale, NULL, w, shape, NULL, &cur));
            *shared = 1;
        } else if (!fused) {
            /* the rows permuted and scaled in one pass over A on the host's threads
             * (memory-bound: the device would move the matrix both ways for it) */
            SAP_TRY(sap__csr_permute_scaled_shape(A, p, NULL, R->row_scale, R->col_scale, w,
                                                  with_shape ? shape : NULL, &cur));
        }
    } else if (o.db == SAP_DB_TRANSVERSAL) {
        sap_int matched = 0;
        SAP_TRY(sap_max_transversal(A, p, &matched));
        R->db.n = n;
        R->db.matched = matched;
        if (!fused) SAP_TRY(sap_csr_permute(A, p, NULL, &cur));
    } else {
        SAP_TRY(sap_csr_copy(A, &cur));
    }
    if (o.db != SAP_DB_NONE) {
        memcpy(R->row_perm, p, sizeof(sap_int) * (size_t)n);
        R->stage[SAP_STAGE_DB].time = sap__wtime() - t;
        sap__log(ctx, SAP_PRINT_INFO,
                 "sap_reorder: DB %.3g ms: matching %.3g (weights %.3g, initial %.3g, augmenting %.3g, extraction "
                 "%.3g), the permuted copy %.3g", 1e3 * R->stage[SAP_STAGE_DB].time, 1e3 * R->db.time,
                 1e3 * R->db.time_weights, 1e3 * R->db.time_initial, 1e3 * R->db.time_augment,
                 1e3 * R->db.time_extract, fused ? 0.0 : 1e3 * (R->stage[SAP_STAGE_DB].time - R->db.time));
        R->stage[SAP_STAGE_DB].done = 1;
        if (o.stats) SAP_TRY(stage_stats(cur, &R->stage[SAP_STAGE_DB]));
    }

    /* ---- CM on cur + cur^T -------------------------------------------------------------- */
    if (fused) {
        /* CM of A(p, :); R->A = A(p[pc], pc) scaled, its one copy (T_CM's; T_DB's when CM
         * keeps the DB order) */
        t = sap__wtime();
        SAP_TRY(sap__cm_reorder_rows(A, p, o.cm_flags, tmp, &R->cm));
        const int moved = R->cm.chosen != SAP_CM_AUTO;
        if (moved)
            for (sap_int i = 0; i < n; i++) {
                R->row_perm[i] = p[tmp[i]];
                R->col_perm[i] = tmp[i];
            }
        const double tp = sap__wtime();
        SAP_TRY(sap__csr_permute_scaled(A, R->row_perm, moved ? R->col_perm : NULL, R->row_scale, R->col_scale,
                                        &cur));
        const double tc = sap__wtime();
        R->stage[SAP_STAGE_CM].time = moved ? tc - t : tp - t;
        if (!moved) R->stage[SAP_STAGE_DB].time += tc - tp;
        R->stage[SAP_STAGE_CM].done = 1;
    } else if (o.cm) {
        t = sap__wtime();
        SAP_TRY(sap_cm_reorder(cur, o.cm_flags, p, &R->cm));
        if (R->cm.chosen != SAP_CM_AUTO) { /* AUTO reports the identity kept */
            SAP_TRY(sap_csr_permute(cur, p, p, &next));
            sap_csr_destroy(cur);
            cur = next;
            next = NULL;
            for (sap_int i = 0; i < n; i++) tmp[i] = R->row_perm[p[i]];
            memcpy(R->row_perm, tmp, sizeof(sap_int) * (size_t)n);
            for (sap_int i = 0; i < n; i++) tmp[i] = R->col_perm[p[i]];
            memcpy(R->col_perm, tmp, sizeof(sap_int) * (size_t)n);
        }
        R->stage[SAP_STAGE_CM].time = sap__wtime() - t;
        R->stage[SAP_STAGE_CM].done = 1;
        if (o.stats) SAP_TRY(stage_stats(cur, &R->stage[SAP_STAGE_CM]));
    }
    R->K_drop = sap__block_bandwidth(cur, 0, n);

    /* ---- drop-off ------------------------------------------------------------------------ */
    if (o.drop_delta < 1.0) {
        t = sap__wtime();
        sap_int K = 0;
        SAP_TRY(sap_drop_off(cur, o.drop_delta, &K, &R->kept_fraction));
        SAP_TRY(sap_csr_band_drop(cur, K, &band));
        R->K_drop = K;
        R->stage[SAP_STAGE_DROP].time = sap__wtime() - t;
        R->stage[SAP_STAGE_DROP].done = 1;
        if (o.stats) SAP_TRY(stage_stats(band, &R->stage[SAP_STAGE_DROP]));
        R->stage[SAP_STAGE_DROP].K = K;
    }

    /* ---- third stage --------------------------------------------------------------------- */
    if (P > 1) {
        t = sap__wtime();
        const sap_csr *B = band ? band : cur;
        SAP_TRY(sap_third_stage(B, P, o.cm_flags, p, R->Ki_before, R->Ki));
        SAP_TRY(sap_csr_permute(cur, p, p, &next));
        sap_csr_destroy(cur);
        cur = next;
        next = NULL;
        if (band) {
            SAP_TRY(sap_csr_permute(band, p, p, &next));
            sap_csr_destroy(band);
            band = next;
            next = NULL;
        }
        for (sap_int i = 0; i < n; i++) tmp[i] = R->row_perm[p[i]];
        memcpy(R->row_perm, tmp, sizeof(sap_int) * (size_t)n);
        for (sap_int i = 0; i < n; i++) tmp[i] = R->col_perm[p[i]];
        memcpy(R->col_perm, tmp, sizeof(sap_int) * (size_t)n);
        R->stage[SAP_STAGE_THIRD].time = sap__wtime() - t;
        R->stage[SAP_STAGE_THIRD].done = 1;
        if (o.stats) {
            const sap_csr *F = band ? band : cur;
            sap_reorder_stage *s = &R->stage[SAP_STAGE_THIRD];
            SAP_TRY(stage_stats(F, s));
            sap_int kmax = 0, inblock = 0;
            double be = 0.0;
            for (sap_int b = 0; b < P; b++) {
                sap_int s0 = R->offsets[b], s1 = R->offsets[b + 1];
                if (R->Ki[b] > kmax) kmax = R->Ki[b];
                be += band_entries(s1 - s0, R->Ki[b]);
                for (sap_int i = s0; i < s1; i++)
                    for (sap_int q = F->rowptr[i]; q < F->rowptr[i + 1]; q++) inblock += F->colind[q] >= s0 && F->colind[q] < s1;
            }
            s->K = kmax;
            s->band_fill = be > 0 ? (double)inblock / be : 0.0;
        }
    } else {
        sap_int K = sap__block_bandwidth(band ? band : cur, 0, n);
        R->Ki_before[0] = R->Ki[0] = K;
    }

    R->A = cur;
    cur = NULL;
    R->A_band = band;
    band = NULL;
    R->time_total = 0.0;
    for (int s = 0; s < SAP_REORDER_STAGES; s++) R->time_total += R->stage[s].time;
    *out = R;
    R = NULL;
cleanup:
    if (shared && *shared && R) { /* an error after the shared view was made: A keeps its pattern */
        if (R->A == cur) R->A = NULL;
        if (cur) cur->rowptr = NULL, cur->colind = NULL;
        *shared = 0;
    }
    sap_reorder_result_destroy(R);
    sap_csr_destroy(cur);
    sap_csr_destroy(next);
    sap_csr_destroy(band);
    sap__free(ctx, p);
    sap__free(ctx, tmp);
    return st;
}

/* ---- mapping vectors and matrices between the two systems ----------------------------------- */

sap_status sap_reorder_apply_rhs(const sap_reorder_result *res, const double *b, double *bhat)
{
    if (!res) return SAP_ERR_INVALID;
    if ((!b || !bhat) && res->n > 0) return SAP_ERROR(res->ctx, SAP_ERR_INVALID, "NULL vector");
    const sap_int n = res->n;
    const int nt = sap__threads_for(res->ctx, (double)n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (n > 65536)")
    for (sap_int i = 0; i < n; i++) {
        sap_int o = res->row_perm[i];
        bhat[i] = res->row_scale ? res->row_scale[o] * b[o] : b[o];
    }
    return SAP_OK;
}

sap_status sap_reorder_undo_solution(const sap_reorder_result *res, const double *y, double *x)
{
    if (!res) return SAP_ERR_INVALID;
    if ((!y || !x) && res->n > 0) return SAP_ERROR(res->ctx, SAP_ERR_INVALID, "NULL vector");
    const sap_int n = res->n;
    const int nt = sap__threads_for(res->ctx, (double)n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (n > 65536)")
    for (sap_int j = 0; j < n; j++) {
        sap_int o = res->col_perm[j];
        x[o] = res->col_scale ? res->col_scale[o] * y[j] : y[j];
    }
    return SAP_OK;
}

sap_status sap_reorder_apply_solution(const sap_reorder_result *res, const double *x, double *y)
{
    if (!res) return SAP_ERR_INVALID;
    if ((!y || !x) && res->n > 0) return SAP_ERROR(res->ctx, SAP_ERR_INVALID, "NULL vector");
    const sap_int n = res->n;
    const int nt = sap__threads_for(res->ctx, (double)n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) if (n > 65536)")
    for (sap_int j = 0; j < n; j++) {
        sap_int o = res->col_perm[j];
        y[j] = res->col_scale ? x[o] / res->col_scale[o] : x[o];
    }
    return SAP_OK;
}

sap_status sap_reorder_undo_matrix(const sap_reorder_result *res, const sap_csr *B, sap_csr **A)
{
    if (!res || !B) return SAP_ERR_INVALID;
    sap_context *ctx = res->ctx;
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *A = NULL;
    const sap_int n = res->n;
    if (B->nrows != n || B->ncols != n)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "matrix is %lld x %lld, the reordering is for n = %lld",
                         (long long)B->nrows, (long long)B->ncols, (long long)n);
    sap_status st = SAP_OK;
    sap_csr *C = NULL;
    sap_int *pinv = NULL, *qinv = NULL;
    SAP_ALLOC(ctx, pinv, n);
    SAP_ALLOC(ctx, qinv, n);
    SAP_TRY(sap_csr_copy(B, &C));
    if (res->row_scale) {
        for (sap_int i = 0; i < n; i++) {
            const double ri = res->row_scale[res->row_perm[i]];
            for (sap_int p = C->rowptr[i]; p < C->rowptr[i + 1]; p++)
                C->val[p] = (C->val[p] / res->col_scale[res->col_perm[C->colind[p]]]) / ri;
        }
    }
    for (sap_int i = 0; i < n; i++) {
        pinv[res->row_perm[i]] = i;
        qinv[res->col_perm[i]] = i;
    }
    SAP_TRY(sap_csr_permute(C, pinv, qinv, A));
cleanup:
    sap_csr_destroy(C);
    sap__free(ctx, pinv);
    sap__free(ctx, qinv);
    return st;
}
