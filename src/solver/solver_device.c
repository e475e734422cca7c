/* solver_device.c -- the device-pointer entry points of sap_solver (sap.h: the caller's
 * device arrays): create from a device CSR, solve and refactor with device vectors.
 *
 * create: the statistics of the plan on the device (the backend's csr_stats op).  When the
 *   method needs no host copy of A (Krylov + Jacobi: given, or the automatic method on a
 *   matrix dominant in every row; host_need_*), S->A is a shape (n, nnz, no arrays), the
 *   solver keeps a device copy of the CSR (D->a_*), the setup runs on the device statistics
 *   with no DB / CM / drop-off and the Jacobi diagonal comes from the device copy; the host
 *   copy is fetched (sap__solver_dev_fetch) only when something needs it later (a host
 *   vector, a solve through the host, the automatic plan's fallback to the host plan).
 *   Otherwise the CSR is downloaded once into the solver's own host matrix S->A (the host
 *   stages of setup need it: DB, CM, the preconditioner's band).  Either way the Krylov
 *   matrix D->M is built on the device from the device arrays (device -> device), and the
 *   attempts build no Krylov matrix of their own (solver_method_krylov.c).
 * solve: the current attempt's Krylov method runs on D->M, in the ORIGINAL order, with
 *   the attempt's preconditioner Pc (built for R->A = Dr P A Q Dc, then the third stage
 *   t) applied as M^-1 = Q Dc T^T Pc^-1 T Dr P: two device gathers around Pc (wrap_apply),
 *   so A M^-1 is similar to the attempt's preconditioned matrix and the iteration behaves
 *   alike.  The true residual and the refinement passes run on the device too.  What has
 *   no device-vector solve goes through the host (host_solve) and the statistics say so.
 * Every phase is measured with the context's transfer counters (sap_solver_device_stats). */
#include "krylov/krylov_impl.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct sap__solver_dev {
    sap_matrix *M;           /* A on the device, original order, from the caller's arrays */
    const sap__attempt *att; /* the attempt the gathers below were built for (NULL: none) */
    int identity;            /* the attempt's order is the original one: Pc applies as is */
    sap_int *p_r, *p_c;      /* backend memory: the gathers in and out of the attempt's order */
    double *s_r, *s_c;       /* their scaling (NULL: none) */
    sap_vec t1, t2;          /* the attempt's order */
    sap_vec t1k, t2k;        /* the same for blocks of columns (the lockstep solve; grown) */
    sap_vec r, d, xn, x0;    /* refinement, the initial guess */
    sap_precond wrap;        /* Pc in the original order (wrap_type) */
    int check;               /* the caller's pointers are checked (0: the cpu tests) */
    /* no host copy of A (S->A a shape): the solver's device copy of the caller's CSR, its
     * statistics (valid until a refactor), and whether the automatic plan's fallback to the
     * host plan was taken */
    sap_int *a_rp, *a_ci;
    double *a_val;
    sap_matrix_stats ms;
    int ms_valid, escaped;
    sap_solver_device_stats st;
};

/* ---- transfer accounting ---------------------------------------------------------------- */

typedef struct dev_mark {
    int64_t h2d, d2h;
} dev_mark;

static dev_mark mark(const sap_context *ctx)
{
    sap_context_stats c;
    dev_mark m = {0, 0};
    if (sap_context_get_stats(ctx, &c) == SAP_OK) {
        m.h2d = c.h2d_bytes;
        m.d2h = c.d2h_bytes;
    }
    return m;
}

void sap__solver_dev_count_a(sap_solver *S, int64_t bytes)
{
    if (S->dev) S->dev->st.a_h2d_bytes += bytes;
}

/* The host stages of a device-array solver stay on the host: the offloaded reordering
 * stages (device.h: sap__offload) would upload A's pattern to a device that has it. */
typedef struct offload_save {
    sap_int v[SAP_OFFLOAD_COUNT];
} offload_save;

static offload_save host_stages_begin(sap_solver *S)
{
    offload_save o;
    for (int i = 0; i < SAP_OFFLOAD_COUNT; i++) {
        o.v[i] = S->ctx->offload_min_nnz[i];
        sap__offload_set_min_nnz(S->ctx, (sap_offload_op)i, INT64_MAX);
    }
    return o;
}

static void host_stages_end(sap_solver *S, offload_save o)
{
    for (int i = 0; i < SAP_OFFLOAD_COUNT; i++) sap__offload_set_min_nnz(S->ctx, (sap_offload_op)i, o.v[i]);
}

/* ---- the attempt's preconditioner in the original order --------------------------------- */

static sap_status wrap_apply(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    struct sap__solver_dev *D = P->data;
    sap_precond *pc = ((const sap__attempt *)D->att)->pc;
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_status st = ops->gather(ctx, r, D->p_r, D->s_r, &D->t1);
    if (st < 0) return st;
    if (sap__precond_is_identity(pc)) st = ops->copy(ctx, &D->t1, &D->t2);
    else st = sap__precond_apply_vec(pc, &D->t1, &D->t2);
    if (st < 0) return st;
    return ops->gather(ctx, &D->t2, D->p_c, D->s_c, z);
}

/* k columns: gathered into blocks in the attempt's order, one block apply there (SaP: one
 * pass over the factors), gathered back */
static sap_status wrap_apply_block(sap_precond *P, sap_int k, const sap_vec *r, sap_vec *z)
{
    struct sap__solver_dev *D = P->data;
    sap_precond *pc = ((const sap__attempt *)D->att)->pc;
    sap_context *ctx = P->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = P->n;
    sap_status st = SAP_OK;
    sap_vec *blk[2] = {&D->t1k, &D->t2k};
    for (int i = 0; i < 2; i++)
        if (blk[i]->n != k * n) {
            if (blk[i]->data) ops->vec_destroy(ctx, blk[i]);
            SAP_TRY(ops->vec_create(ctx, k * n, SAP_DOUBLE, blk[i]));
        }
    for (sap_int c = 0; c < k; c++) {
        const sap_vec rc = sap__vec_column(r, n, c);
        sap_vec tc = sap__vec_column(&D->t1k, n, c);
        SAP_TRY(ops->gather(ctx, &rc, D->p_r, D->s_r, &tc));
    }
    if (sap__precond_is_identity(pc)) SAP_TRY(ops->copy(ctx, &D->t1k, &D->t2k));
    else SAP_TRY(sap__precond_apply_block(pc, k, &D->t1k, &D->t2k));
    for (sap_int c = 0; c < k; c++) {
        const sap_vec tc = sap__vec_column(&D->t2k, n, c);
        sap_vec zc = sap__vec_column(z, n, c);
        SAP_TRY(ops->gather(ctx, &tc, D->p_c, D->s_c, &zc));
    }
cleanup:
    return st;
}

static const sap_precond_type wrap_type = {
    .name = "device-order", .help = "the attempt's preconditioner between the gathers of its order",
    .mixed_precision_apply = 1, .apply = wrap_apply, .apply_block = wrap_apply_block};

static void free_gathers(sap_solver *S, struct sap__solver_dev *D)
{
    sap_context *ctx = S->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    void *ps[] = {D->p_r, D->p_c, D->s_r, D->s_c};
    for (int i = 0; i < 4; i++)
        if (ps[i]) ops->mem_free(ctx, ps[i]);
    D->p_r = D->p_c = NULL;
    D->s_r = D->s_c = NULL;
    D->att = NULL;
}

static void free_copy(sap_context *ctx, struct sap__solver_dev *D)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    void *ps[] = {D->a_rp, D->a_ci, D->a_val};
    for (int i = 0; i < 3; i++)
        if (ps[i]) ops->mem_free(ctx, ps[i]);
    D->a_rp = D->a_ci = NULL;
    D->a_val = NULL;
}

void sap__solver_dev_forget(sap_solver *S, const sap__attempt *a)
{
    struct sap__solver_dev *D = S->dev;
    if (!D) return;
    if (D->att && (!a || a == D->att)) free_gathers(S, D);
    if (a) return;
    sap_context *ctx = S->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_vec *vs[] = {&D->t1, &D->t2, &D->r, &D->d, &D->xn, &D->x0, &D->t1k, &D->t2k};
    for (int i = 0; i < 8; i++)
        if (vs[i]->data) ops->vec_destroy(ctx, vs[i]);
    free_copy(ctx, D);
    sap_matrix_destroy(D->M);
    sap__free(ctx, D);
    S->dev = NULL;
}

/* Uploads n entries (sap_int or double) into new backend memory. */
static sap_status up(sap_context *ctx, const void *h, size_t bytes, void **d)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_status st = ops->mem_alloc(ctx, bytes ? bytes : 1, d);
    if (st < 0) return st;
    return ops->mem_upload(ctx, *d, h, bytes);
}

/* The gathers of attempt a: in, r_att[i] = s_r[i] r[p_r[i]] with p_r[i] = row_perm[t[i]]
 * and s_r[i] = row_scale[p_r[i]] (sap_reorder_apply_rhs, then t); out, z[o] = s_c[o]
 * y[p_c[o]] with p_c = tinv[cinv[o]] and s_c[o] = col_scale[o] (t undone, then
 * sap_reorder_undo_solution). */
static sap_status build_gathers(sap_solver *S, struct sap__solver_dev *D, const sap__attempt *a)
{
    sap_context *ctx = S->ctx;
    const sap_reorder_result *R = S->R;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    sap_int *pr = NULL, *pc = NULL, *tinv = NULL;
    double *sr = NULL;
    const dev_mark m0 = mark(S->ctx);
    free_gathers(S, D);
    D->att = a;
    D->identity = R->A == S->A && !a->t && !R->row_scale && !R->col_scale;
    if (D->identity) return SAP_OK;
    SAP_ALLOC(ctx, pr, n > 0 ? n : 1);
    SAP_ALLOC(ctx, pc, n > 0 ? n : 1);
    SAP_ALLOC(ctx, tinv, n > 0 ? n : 1);
    for (sap_int i = 0; i < n; i++) {
        pr[i] = R->row_perm[a->t ? a->t[i] : i];
        tinv[a->t ? a->t[i] : i] = i;
    }
    for (sap_int j = 0; j < n; j++) pc[R->col_perm[j]] = tinv[j];
    SAP_TRY(up(ctx, pr, sizeof(sap_int) * (size_t)n, (void **)&D->p_r));
    SAP_TRY(up(ctx, pc, sizeof(sap_int) * (size_t)n, (void **)&D->p_c));
    if (R->row_scale) {
        SAP_ALLOC(ctx, sr, n > 0 ? n : 1);
        for (sap_int i = 0; i < n; i++) sr[i] = R->row_scale[pr[i]];
        SAP_TRY(up(ctx, sr, sizeof(double) * (size_t)n, (void **)&D->s_r));
    }
    if (R->col_scale) SAP_TRY(up(ctx, R->col_scale, sizeof(double) * (size_t)n, (void **)&D->s_c));
cleanup:
    sap__free(ctx, pr);
    sap__free(ctx, pc);
    sap__free(ctx, tinv);
    sap__free(ctx, sr);
    {
        const dev_mark m1 = mark(S->ctx);
        D->st.perm_h2d_bytes += m1.h2d - m0.h2d;
        D->st.setup_h2d_bytes += m1.h2d - m0.h2d;
    }
    if (st < 0) free_gathers(S, D);
    return st;
}

/* ---- no host copy of A: the device statistics and the plan -------------------------------- */

/* Why the options need the host copy of A whatever the matrix (NULL: they may not). */
static const char *host_need_opts(const sap_solver_options *o, char *buf, size_t size)
{
    if (o->method != SAP_METHOD_AUTO && o->method != SAP_METHOD_JACOBI) {
        snprintf(buf, size, "method %s works on the host matrix", sap_solver_method_name(o->method));
        return buf;
    }
    if (o->db > 0) return "DB given";
    if (o->cm > 0) return "CM given";
    if (!o->krylov_auto) {
        const sap_krylov_method *m = sap__krylov_find_id((int)o->krylov.type);
        if (m && (m->dual || m->param_is_method)) {
            snprintf(buf, size, "Krylov method %s builds a copy of A on the host", m->name);
            return buf;
        }
    }
    return NULL;
}

/* Why the matrix needs it under these options (NULL: Krylov + Jacobi from the device CSR).
 * The automatic plan takes that path where Jacobi is sure to help: every row diagonally
 * dominant with a nonzero diagonal (what the host plan reads as "DB not needed"); other
 * matrices get the host plan (DB, CM, the bands, the cost model). */
static const char *host_need_stats(const sap_solver_options *o, const sap_matrix_stats *ms, sap_int n, char *buf,
                                   size_t size)
{
    if (o->method != SAP_METHOD_AUTO) return NULL;
    if (n == 0) return "empty system";
    if (ms->zero_diagonal > 0 || ms->dominant_rows < n) {
        snprintf(buf, size, "the automatic plan: %lld rows not diagonally dominant, %lld zero diagonal entries",
                 (long long)(n - ms->dominant_rows), (long long)ms->zero_diagonal);
        return buf;
    }
    return NULL;
}

/* The error of a failed csr_stats check, as the host path words it (a value or the row
 * pointer's ends fetched for the message: a few bytes). */
static sap_status check_error(sap_context *ctx, const sap_dev_csr *A, const sap_dev_csr_check *c, const char *fn)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    if (c->bad_rowptr >= 0 && c->bad_rowptr == A->n) {
        sap_int e[2] = {0, 0};
        ops->mem_download(ctx, &e[0], A->rowptr, sizeof(sap_int));
        ops->mem_download(ctx, &e[1], A->rowptr + A->n, sizeof(sap_int));
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: the row pointer runs from %lld to %lld (need 0 to nnz = %lld)", fn,
                         (long long)e[0], (long long)e[1], (long long)A->nnz);
    }
    if (c->bad_rowptr >= 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: CSR rowptr decreases at row %lld", fn, (long long)c->bad_rowptr);
    if (c->bad_col >= 0)
        return SAP_ERROR(ctx, SAP_ERR_INDEX, "%s: CSR row %lld: column out of range", fn, (long long)c->bad_col);
    if (c->bad_order >= 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: CSR row %lld: columns not strictly increasing", fn,
                         (long long)c->bad_order);
    if (c->nonfinite >= 0) {
        double v = 0;
        ops->mem_download(ctx, &v, A->val + c->nonfinite, sizeof(double));
        return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "%s: entry %lld of the matrix is %g", fn, (long long)c->nonfinite, v);
    }
    return SAP_OK;
}

static int check_bad(const sap_dev_csr_check *c)
{
    return c->bad_rowptr >= 0 || c->bad_col >= 0 || c->bad_order >= 0 || c->nonfinite >= 0;
}

/* csr_stats on A, its d2h bytes counted as the statistics' */
static sap_status dev_csr_stats(sap_context *ctx, struct sap__solver_dev *D, const sap_dev_csr *A,
                                sap_dev_csr_check *chk, sap_matrix_stats *ms, double *dinv)
{
    const dev_mark m0 = mark(ctx);
    sap_status st = sap__ops(ctx)->csr_stats(ctx, A, chk, ms, dinv);
    D->st.stats_d2h_bytes += mark(ctx).d2h - m0.d2h;
    return st;
}

static sap_dev_csr own_csr(const sap_solver *S)
{
    const struct sap__solver_dev *D = S->dev;
    sap_dev_csr c = {S->A->nrows, S->A->nnz, D->a_rp, D->a_ci, D->a_val};
    return c;
}

sap_status sap__solver_dev_stats(sap_solver *S, sap_matrix_stats *ms)
{
    struct sap__solver_dev *D = S->dev;
    if (!D->ms_valid) {
        sap_dev_csr_check chk;
        const sap_dev_csr A = own_csr(S);
        sap_status st = dev_csr_stats(S->ctx, D, &A, &chk, &D->ms, NULL);
        if (st < 0) return st;
        if (check_bad(&chk)) return check_error(S->ctx, &A, &chk, "sap_solver_setup");
        D->ms_valid = 1;
    }
    *ms = D->ms;
    return SAP_OK;
}

void sap__solver_dev_plan_chain(sap_solver *S)
{
    const struct sap__solver_dev *D = S->dev;
    S->cost_ordered = 0;
    for (int i = 0; i < SV_MAX_CHAIN; i++) S->pred[i] = S->pred_it[i] = -1;
    S->levels = 0;
    S->bj_avg = -1;
    S->nchain = 1;
    S->chain[0] = SAP_METHOD_JACOBI;
    if (S->opt.method == SAP_METHOD_AUTO)
        snprintf(S->why_first, sizeof(S->why_first),
                 "device arrays, all rows dominant (d = %.3g): Jacobi on the device CSR, no host A%s",
                 D->ms.diag_dominance, S->opt.fallback ? " (host plan if it fails)" : "");
    else
        snprintf(S->why_first, sizeof(S->why_first), "jacobi given: on the device CSR, no host A");
}

sap_status sap__solver_dev_pc_setup(sap_solver *S, sap_precond *pc)
{
    const sap_dev_csr A = own_csr(S);
    const dev_mark m0 = mark(S->ctx);
    sap_status st = sap__precond_setup_dev(pc, &A);
    S->dev->st.stats_d2h_bytes += mark(S->ctx).d2h - m0.d2h;
    return st;
}

/* The caller's device CSR into host arrays (rp: n + 1, ci and v: nnz), counted in the
 * statistics' download entries; the row pointer's ends are checked before the entries are
 * read (a wrong nnz would read past the caller's arrays). */
static sap_status download_csr(sap_context *ctx, struct sap__solver_dev *D, sap_int n, sap_int nnz, const sap_int *d_rp,
                               const sap_int *d_ci, const double *d_v, sap_int *rp, sap_int *ci, double *v)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    const double t0 = sap__wtime();
    sap_status st = ops->mem_download(ctx, rp, d_rp, sizeof(sap_int) * (size_t)(n + 1));
    if (st < 0) return st;
    if (rp[0] != 0 || rp[n] != nnz)
        return SAP_ERROR(ctx, SAP_ERR_INVALID,
                         "sap_solver_create_device: the row pointer runs from %lld to %lld (need 0 to nnz = %lld)",
                         (long long)rp[0], (long long)rp[n], (long long)nnz);
    if (nnz > 0) {
        st = ops->mem_download(ctx, ci, d_ci, sizeof(sap_int) * (size_t)nnz);
        if (st >= 0) st = ops->mem_download(ctx, v, d_v, sizeof(double) * (size_t)nnz);
        if (st < 0) return st;
    }
    D->st.time_download += sap__wtime() - t0;
    D->st.download_bytes += (int64_t)(sizeof(sap_int) * (size_t)(n + 1 + nnz) + sizeof(double) * (size_t)nnz);
    return SAP_OK;
}

sap_status sap__solver_dev_fetch(sap_solver *S, const char *why)
{
    struct sap__solver_dev *D = S->dev;
    sap_csr *A = S->A;
    if (!D || A->rowptr) return SAP_OK;
    sap_context *ctx = S->ctx;
    const sap_int n = A->nrows, nnz = A->nnz;
    sap_status st = SAP_OK;
    sap_int *rp = NULL, *ci = NULL;
    double *v = NULL;
    SAP_ALLOC(ctx, rp, n + 1);
    SAP_ALLOC(ctx, ci, nnz > 0 ? nnz : 1);
    SAP_ALLOC(ctx, v, nnz > 0 ? nnz : 1);
    SAP_TRY(download_csr(ctx, D, n, nnz, D->a_rp, D->a_ci, D->a_val, rp, ci, v));
    A->rowptr = rp;
    A->colind = ci;
    A->val = v;
    rp = ci = NULL;
    v = NULL;
    snprintf(D->st.download_reason, sizeof(D->st.download_reason), "%.127s", why);
    sap__log(ctx, SAP_PRINT_INFO, "sap_solver (device arrays): A downloaded: %s", why);
    free_copy(ctx, D); /* the host copy holds A now (a refactor downloads its values) */
cleanup:
    sap__free(ctx, rp);
    sap__free(ctx, ci);
    sap__free(ctx, v);
    return st;
}

/* The device copy of the caller's CSR (device -> device) and the solver on it with no host
 * copy of A (S->A a shape). */
static sap_status create_no_host(sap_context *ctx, struct sap__solver_dev **Dp, const sap_dev_csr *C,
                                 const sap_solver_options *o, sap_solver **out)
{
    const sap_backend_ops *ops = sap__ops(ctx);
    struct sap__solver_dev *D = *Dp;
    sap_solver *S = NULL;
    sap_status st = SAP_OK;
    const sap_int n = C->n, nnz = C->nnz;
    const size_t bi = sizeof(sap_int) * (size_t)(nnz > 0 ? nnz : 1), bv = sizeof(double) * (size_t)(nnz > 0 ? nnz : 1);
    SAP_TRY(ops->mem_alloc(ctx, sizeof(sap_int) * (size_t)(n + 1), (void **)&D->a_rp));
    SAP_TRY(ops->mem_alloc(ctx, bi, (void **)&D->a_ci));
    SAP_TRY(ops->mem_alloc(ctx, bv, (void **)&D->a_val));
    SAP_TRY(ops->mem_copy(ctx, D->a_rp, C->rowptr, sizeof(sap_int) * (size_t)(n + 1)));
    if (nnz > 0) {
        SAP_TRY(ops->mem_copy(ctx, D->a_ci, C->colind, sizeof(sap_int) * (size_t)nnz));
        SAP_TRY(ops->mem_copy(ctx, D->a_val, C->val, sizeof(double) * (size_t)nnz));
    }
    SAP_TRY(sap__solver_create_shape(ctx, n, nnz, o, &S));
    S->dev = D;
    *Dp = NULL;
    {
        const dev_mark m0 = mark(ctx);
        const double t0 = sap__wtime();
        SAP_TRY(sap__matrix_create_dev(ctx, S->A, D->a_rp, D->a_ci, D->a_val, &D->M));
        SAP_TRY(ops->synchronize(ctx)); /* the caller's arrays were read */
        D->st.time_matrix = sap__wtime() - t0;
        D->st.setup_h2d_bytes += mark(ctx).h2d - m0.h2d;
        D->st.stats_d2h_bytes += mark(ctx).d2h - m0.d2h; /* the row statistics of the format */
    }
    *out = S;
    return SAP_OK;
cleanup:
    if (S) {
        sap_solver_destroy(S); /* frees D with it */
    } else {
        free_copy(ctx, D);
        sap__free(ctx, D);
        *Dp = NULL;
    }
    return st;
}

/* ---- create --------------------------------------------------------------------------------- */

static sap_status vec_ready(sap_context *ctx, sap_int n, sap_vec *v)
{
    if (v->data || n == 0) return SAP_OK;
    return sap__ops(ctx)->vec_create(ctx, n, SAP_DOUBLE, v);
}

/* check = 0: the arrays are taken as backend memory without the device check (the cpu
 * tests of this file, whose "device" is the host). */
sap_status sap__solver_create_dev(sap_context *ctx, sap_int n, sap_int nnz, const sap_int *rowptr,
                                  const sap_int *colind, const double *val, const sap_solver_options *opt, int check,
                                  sap_solver **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create_device: output pointer is NULL");
    *out = NULL;
    const sap_backend_ops *ops = sap__ops(ctx);
    if (n < 0 || nnz < 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create_device: n = %lld, nnz = %lld", (long long)n,
                         (long long)nnz);
    sap_status st = SAP_OK;
    sap_csr *H = NULL;
    sap_solver *S = NULL;
    struct sap__solver_dev *D = NULL;
    if (check) {
        if (!ops->ptr_check)
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create_device: the %s backend takes no device arrays",
                             ops->name);
        SAP_TRY(ops->ptr_check(ctx, rowptr, "sap_solver_create_device: d_rowptr"));
        if (nnz > 0) {
            SAP_TRY(ops->ptr_check(ctx, colind, "sap_solver_create_device: d_colind"));
            SAP_TRY(ops->ptr_check(ctx, val, "sap_solver_create_device: d_val"));
        }
    } else if (!rowptr || (nnz > 0 && (!colind || !val))) {
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_create_device: NULL array");
    }
    SAP_CALLOC(ctx, D, 1);
    D->st.device_arrays = 1;
    D->check = check;
    sap_solver_options o;
    if (opt) o = *opt;
    else sap_solver_options_init(&o);
    o.host_small = 0; /* the caller's data is on the device */
    char buf[160];
    const char *why = host_need_opts(&o, buf, sizeof(buf));
    if (!why && !ops->csr_stats) why = "the backend has no device statistics";
    if (!why) {
        /* the statistics on the device: they decide whether A is downloaded */
        const sap_dev_csr C = {n, nnz, rowptr, colind, val};
        sap_dev_csr_check chk;
        SAP_TRY(dev_csr_stats(ctx, D, &C, &chk, &D->ms, NULL));
        if (check_bad(&chk)) SAP_TRY(check_error(ctx, &C, &chk, "sap_solver_create_device"));
        why = host_need_stats(&o, &D->ms, n, buf, sizeof(buf));
        if (!why) {
            D->ms_valid = 1;
            return create_no_host(ctx, &D, &C, &o, out);
        }
    }
    snprintf(D->st.download_reason, sizeof(D->st.download_reason), "%.127s", why);
    SAP_TRY(sap_csr_create(ctx, n, n, nnz, &H));
    SAP_TRY(download_csr(ctx, D, n, nnz, rowptr, colind, val, H->rowptr, H->colind, H->val));
    /* the solver takes H (checks: square, indices, NaN/Inf) */
    SAP_TRY(sap_solver_create_borrowed(ctx, H, &o, &S));
    S->A_owned = 1;
    H = NULL;
    S->dev = D;
    D = NULL;
    dev_mark m0 = mark(S->ctx);
    const double t0 = sap__wtime();
    SAP_TRY(sap__matrix_create_dev(ctx, S->A, rowptr, colind, val, &S->dev->M));
    S->dev->st.time_matrix = sap__wtime() - t0;
    S->dev->st.setup_h2d_bytes += mark(S->ctx).h2d - m0.h2d;
    *out = S;
    return SAP_OK;
cleanup:
    sap_csr_destroy(H);
    sap__free(ctx, D);
    sap_solver_destroy(S);
    return st;
}

sap_status sap_solver_create_device(sap_context *ctx, sap_int n, sap_int nnz, const sap_int *d_rowptr,
                                    const sap_int *d_colind, const double *d_val, const sap_solver_options *opt,
                                    sap_solver **S)
{
    return sap__solver_create_dev(ctx, n, nnz, d_rowptr, d_colind, d_val, opt, 1, S);
}

/* ---- solve ---------------------------------------------------------------------------------- */

static sap_status need_dev(sap_solver *S, const char *fn)
{
    if (!S) return SAP_ERR_INVALID;
    if (!S->dev)
        return SAP_ERROR(S->ctx, SAP_ERR_INVALID, "%s: the solver was not made by sap_solver_create_device", fn);
    return SAP_OK;
}

/* Why the current attempt cannot solve with device vectors (NULL: it can). */
static const char *device_unfit(const sap_solver *S, char *buf, size_t size)
{
    const sap__attempt *a = S->att;
    if (!a) return "no method is built (the chain restarts on the host)";
    if (S->x != S->ctx) {
        snprintf(buf, size, "the system is solved on the host (%s)", S->mem_why);
        return buf;
    }
    if (!a->kry) {
        snprintf(buf, size, "%s has no device-vector solve", sap_solver_method_name(a->method));
        return buf;
    }
    if (a->kry->method->dual || a->kry->method->param_is_method) {
        snprintf(buf, size, "Krylov method %s builds a copy of A on the host", a->kry->method->name);
        return buf;
    }
    return NULL;
}

/* The current attempt's preconditioner in the original order (its gathers built once). */
static sap_status dev_pc(sap_solver *S, sap_precond **P)
{
    struct sap__solver_dev *D = S->dev;
    sap__attempt *a = S->att;
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    if (D->att != a) SAP_TRY(build_gathers(S, D, a));
    if (!D->identity) {
        SAP_TRY(vec_ready(ctx, n, &D->t1));
        SAP_TRY(vec_ready(ctx, n, &D->t2));
        memset(&D->wrap, 0, sizeof(D->wrap));
        D->wrap.ctx = ctx;
        D->wrap.type = &wrap_type;
        D->wrap.data = D;
        D->wrap.prec = SAP_DOUBLE;
        D->wrap.n = n;
        D->wrap.state = SAP_PC_NUMERIC;
    }
    *P = D->identity ? a->pc : &D->wrap;
cleanup:
    return st;
}

/* One device column through the current attempt, refined on the true residual in the
 * original system (as solve_col of solver_solve.c). */
static sap_status dev_col(sap_solver *S, const sap_vec *b, sap_vec *x, double *iters, double *res, double *tkry)
{
    struct sap__solver_dev *D = S->dev;
    sap__attempt *a = S->att;
    sap_context *ctx = S->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = S->A->nrows;
    const double tol = S->opt.krylov.tol;
    sap_status st = SAP_OK;
    sap_precond *P = NULL;
    SAP_TRY(dev_pc(S, &P));
    SAP_TRY(vec_ready(ctx, n, &D->r));
    SAP_TRY(vec_ready(ctx, n, &D->d));
    SAP_TRY(vec_ready(ctx, n, &D->xn));
    sap_krylov_stats ks;
    double t0 = sap__wtime();
    sap_status kst = sap__krylov_solve_vec(a->kry, D->M, P, b, x, &ks);
    *iters += ks.iterations;
    *tkry += sap__wtime() - t0;
    if (kst < 0 && kst != SAP_ERR_BREAKDOWN) return kst;
    double bn = 0, rel = 0;
    SAP_TRY(ops->nrm2(ctx, b, &bn));
    if (bn == 0) { /* x = 0 (the Krylov solve set it) */
        *res = 0;
        return SAP_OK;
    }
    SAP_TRY(ops->copy(ctx, b, &D->r));
    SAP_TRY(ops->spmv(ctx, D->M->sm, -1.0, x, 1.0, &D->r));
    SAP_TRY(ops->nrm2(ctx, &D->r, &rel));
    rel /= bn;
    for (int pass = 0; pass < a->type->refine_passes && rel > tol && isfinite(rel) && kst != SAP_WARN_INTERRUPTED;
         pass++) {
        SAP_TRY(ops->set(ctx, &D->d, 0.0));
        t0 = sap__wtime();
        sap_status ps = sap__krylov_solve_vec(a->kry, D->M, P, &D->r, &D->d, &ks);
        *iters += ks.iterations;
        *tkry += sap__wtime() - t0;
        if (ps < 0 && ps != SAP_ERR_BREAKDOWN) return ps;
        double rel2 = 0;
        SAP_TRY(ops->copy(ctx, x, &D->xn));
        SAP_TRY(ops->axpby(ctx, 1.0, &D->d, 1.0, &D->xn));
        SAP_TRY(ops->copy(ctx, b, &D->d));
        SAP_TRY(ops->spmv(ctx, D->M->sm, -1.0, &D->xn, 1.0, &D->d));
        SAP_TRY(ops->nrm2(ctx, &D->d, &rel2));
        rel2 /= bn;
        if (!(rel2 < rel)) break; /* no progress: keep x */
        const int slow = rel2 > 0.5 * rel;
        SAP_TRY(ops->copy(ctx, &D->xn, x));
        SAP_TRY(ops->copy(ctx, &D->d, &D->r));
        rel = rel2;
        kst = ps;
        if (slow && a->type->refine_slow == SAP__REFINE_SLOW_STOPS_COLUMN) break;
    }
    *res = rel;
    if (!isfinite(rel))
        return SAP_ERROR(ctx, SAP_ERR_BREAKDOWN, "sap_solver %s: non-finite residual", sap_solver_method_name(a->method));
    if (rel <= tol) return SAP_OK;
    if (S->interrupted || kst == SAP_WARN_INTERRUPTED)
        return SAP_ERROR(ctx, SAP_WARN_INTERRUPTED,
                         "sap_solver %s: interrupted by the monitor; x returned: the best so far, true residual "
                         "||b - A x|| / ||b|| = %.3e",
                         sap_solver_method_name(a->method), rel);
    if (kst > 0 || kst == SAP_ERR_BREAKDOWN) return kst;
    return SAP_ERROR(ctx, SAP_WARN_INEXACT, "sap_solver %s: residual %.3g of the original system above tol %.3g",
                     sap_solver_method_name(a->method), rel, tol);
cleanup:
    return st;
}

/* Through the host: b and x copied, sap_solver_solve, x back. */
static sap_status host_solve(sap_solver *S, const double *d_b, double *d_x, const char *why)
{
    struct sap__solver_dev *D = S->dev;
    sap_context *ctx = S->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = S->A->nrows;
    const size_t vb = sizeof(double) * (size_t)n;
    sap_status st = SAP_OK;
    double *hb = NULL, *hx = NULL;
    const dev_mark m0 = mark(S->ctx);
    const int64_t a0 = D->st.a_h2d_bytes;
    snprintf(D->st.host_reason, sizeof(D->st.host_reason), "%s", why);
    sap__log(ctx, SAP_PRINT_INFO, "sap_solver_solve_device: through the host: %s", why);
    SAP_TRY(sap__solver_dev_fetch(S, "a solve through the host"));
    SAP_ALLOC(ctx, hb, n > 0 ? n : 1);
    SAP_ALLOC(ctx, hx, n > 0 ? n : 1);
    SAP_TRY(ops->mem_download(ctx, hb, d_b, vb));
    SAP_TRY(ops->mem_download(ctx, hx, d_x, vb));
    {
        const offload_save o = host_stages_begin(S);
        st = sap_solver_solve(S, hb, hx);
        host_stages_end(S, o);
    }
    if (st < 0) goto cleanup;
    {
        sap_status su = ops->mem_upload(ctx, d_x, hx, vb);
        if (su < 0) st = su;
    }
    D->st.host_solves++;
cleanup:
    {
        const dev_mark m1 = mark(S->ctx);
        D->st.host_solve_bytes += (m1.h2d - m0.h2d) - (D->st.a_h2d_bytes - a0) + (m1.d2h - m0.d2h);
    }
    sap__free(ctx, hb);
    sap__free(ctx, hx);
    return st;
}

/* The statistics of a device solve of one column (as solve_col_chain and solve_many). */
static void col_stats(sap_solver *S, sap_status st, double ia, double it, double res, double tkry, double t0)
{
    sap__attempt *a = S->att;
    sap_solver_stats *s = &S->stats;
    s->nrhs = 1;
    s->iterations = it;
    s->relative_residual = res;
    s->time_kry = tkry;
    s->time_solve = sap__wtime() - t0;
    s->time_refine = s->time_solve - tkry;
    s->status = st;
    if (a->itry >= 0 && a->itry < s->ntries) {
        sap_solver_try *t = &s->tried[a->itry];
        t->status = st;
        t->iterations += ia;
        t->time += s->time_solve;
        sap__solver_try_note(S, a->itry, "device: %s, %.4g it, res %.1e%s%s", sap_status_name(st), t->iterations, res,
                             a->note[0] ? "; " : "", a->note);
    }
    sap__solver_att_stats(S, a);
    if (st != SAP_OK) sap__solver_relay(S);
}

/* The setup with the host stages kept on the host, its uploads counted. */
static sap_status dev_setup(sap_solver *S)
{
    struct sap__solver_dev *D = S->dev;
    const dev_mark m0 = mark(S->ctx);
    const offload_save o = host_stages_begin(S);
    sap_status ss = sap_solver_setup(S);
    host_stages_end(S, o);
    D->st.setup_h2d_bytes += mark(S->ctx).h2d - m0.h2d;
    return ss;
}

/* 1 when a failure of the device-only plan (no host copy of A, the automatic method) hands
 * over to the host plan: A downloaded, the whole setup again. */
static int can_escape(const sap_solver *S, sap_status st)
{
    const struct sap__solver_dev *D = S->dev;
    return !S->A->rowptr && !D->escaped && S->opt.method == SAP_METHOD_AUTO && S->opt.fallback && st != SAP_OK &&
           st != SAP_WARN_INTERRUPTED && st != SAP_ERR_NONFINITE && st != SAP_ERR_INVALID && !S->interrupted;
}

static sap_status escape(sap_solver *S, sap_status failed)
{
    struct sap__solver_dev *D = S->dev;
    char why[96];
    snprintf(why, sizeof(why), "the automatic plan: Krylov + Jacobi on the device failed (%s)",
             sap_status_name(failed));
    D->escaped = 1;
    sap__log(S->ctx, SAP_PRINT_INFO, "sap_solver_solve_device: %s; the host plan", why);
    sap_status st = sap__solver_dev_fetch(S, why);
    if (st < 0) return st;
    return dev_setup(S);
}

sap_status sap_solver_solve_device(sap_solver *S, const double *d_b, double *d_x)
{
    sap_status st = need_dev(S, "sap_solver_solve_device");
    if (st < 0) return st;
    struct sap__solver_dev *D = S->dev;
    sap_context *ctx = S->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = S->A->nrows;
    if (n > 0 && (!d_b || !d_x)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_solve_device: NULL vector");
    if (n > 0 && D->check) {
        SAP_TRY(ops->ptr_check(ctx, d_b, "sap_solver_solve_device: d_b"));
        SAP_TRY(ops->ptr_check(ctx, d_x, "sap_solver_solve_device: d_x"));
    }
    sap_vec b = {n, SAP_DOUBLE, (void *)(uintptr_t)d_b}, x = {n, SAP_DOUBLE, d_x};
    if (n > 0) {
        double bn = 0, xn = 0;
        SAP_TRY(ops->nrm2(ctx, &b, &bn));
        SAP_TRY(ops->nrm2(ctx, &x, &xn));
        if (!isfinite(bn)) return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_solve_device: b contains NaN or Inf");
        if (!isfinite(xn))
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_solve_device: the initial x contains NaN or Inf");
    }
    S->interrupted = 0;
    if (!S->setup_done) {
        sap_status ss = dev_setup(S);
        if (ss < 0 && can_escape(S, ss)) {
            sap_context_clear_error(S->ctx);
            ss = escape(S, ss);
        }
        if (ss < 0) return ss;
    }
    const double t0 = sap__wtime();
    double it = 0, res = 0, tkry = 0;
    SAP_TRY(vec_ready(ctx, n, &D->x0));
    if (n > 0) SAP_TRY(ops->copy(ctx, &x, &D->x0));
    char buf[160];
    for (;;) {
        const char *why = device_unfit(S, buf, sizeof(buf));
        if (why) return host_solve(S, d_b, d_x, why);
        const dev_mark m0 = mark(S->ctx);
        const int64_t setup0 = D->st.setup_h2d_bytes; /* the attempt's gathers, built at its first solve */
        const int expected = sap__solver_can_fall_back(S);
        sap__solver_try_begin(S, expected);
        double ia = 0;
        st = dev_col(S, &b, &x, &ia, &res, &tkry);
        it += ia;
        sap__solver_try_end(S, expected);
        const dev_mark m1 = mark(S->ctx);
        D->st.solve_h2d_bytes += (m1.h2d - m0.h2d) - (D->st.setup_h2d_bytes - setup0);
        D->st.solve_d2h_bytes += m1.d2h - m0.d2h;
        if (st == SAP_OK) { /* the solver's method now: not time-boxed */
            S->att->budget_set = 1;
            S->att->budget = 0;
        }
        col_stats(S, st, ia, it, res, tkry, t0);
        if (!expected && can_escape(S, st)) { /* the host plan, from the initial guess */
            sap_status es = escape(S, st);
            if (es < 0) return es;
            if (n > 0) SAP_TRY(ops->copy(ctx, &D->x0, &x));
            continue;
        }
        if (st == SAP_OK || st == SAP_WARN_INTERRUPTED || st == SAP_ERR_NONFINITE || st == SAP_ERR_INVALID ||
            !expected)
            break;
        /* the next method of the chain, from the initial guess (its setup on the host) */
        sap__log(ctx, SAP_PRINT_INFO, "sap_solver_solve_device: %s failed (%s, residual %.2e), trying %s",
                 sap_solver_method_name(S->att->method), sap_status_name(st), res,
                 sap_solver_method_name(S->chain[S->ichain + 1]));
        const dev_mark m2 = mark(S->ctx);
        const offload_save o = host_stages_begin(S);
        sap_status cb = sap__solver_chain_build(S, S->ichain + 1);
        host_stages_end(S, o);
        D->st.setup_h2d_bytes += mark(S->ctx).h2d - m2.h2d;
        if (cb < 0 || cb == SAP_WARN_INTERRUPTED) return cb;
        if (n > 0) SAP_TRY(ops->copy(ctx, &D->x0, &x));
    }
    D->st.device_solves++;
    if (n > 0) SAP_TRY(ops->synchronize(ctx));
    return st;
cleanup:
    return st;
}

/* k device columns in lockstep through the current attempt (sap__krylov_solve_many_vec: one
 * SpMM and one block apply of its preconditioner a step), where its method has the form and
 * solves with device vectors; done[c] = 1 for the columns that met tol (their x final,
 * counted in *iters and *worst).  The others keep the lockstep's iterate as their initial
 * guess (done[c] = 0; one that is not finite starts again from zero); so do all k where
 * there is no lockstep form (then nothing ran) or it failed (its error cleared: the columns
 * go on alone, X untouched: the lockstep writes X at its end). */
static sap_status dev_many(sap_solver *S, sap_int k, const double *d_B, sap_int ldb, double *d_X, sap_int ldx,
                           int *done, double *iters, double *worst)
{
    struct sap__solver_dev *D = S->dev;
    sap__attempt *a = S->att;
    sap_context *ctx = S->ctx;
    const double tol = S->opt.krylov.tol;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    sap_krylov_stats *ks = NULL;
    char buf[160];
    if (!S->setup_done || !a || !a->type->batch || n == 0 || device_unfit(S, buf, sizeof(buf)) ||
        !a->kry->method->run_many)
        return SAP_OK;
    sap_precond *P = NULL;
    SAP_TRY(dev_pc(S, &P));
    SAP_CALLOC(ctx, ks, k);
    const double t0 = sap__wtime();
    sap__try_begin(ctx);
    sap_status sm = sap__krylov_solve_many_vec(a->kry, D->M, P, k, d_B, ldb, d_X, ldx, ks);
    sap__try_end(ctx);
    if (sm < 0 && sm != SAP_ERR_BREAKDOWN && sm != SAP_ERR_NONFINITE) {
        sap__log(ctx, SAP_PRINT_INFO, "sap_solver_solve_many_device: the lockstep solve failed (%s: %s); the columns "
                 "one after another", sap_status_name(sm), sap_context_last_error(ctx));
        sap_context_clear_error(ctx);
        goto cleanup;
    }
    {
        sap_int ndone = 0;
        double it = 0, res = 0;
        for (sap_int c = 0; c < k; c++) {
            it += ks[c].iterations;
            done[c] = ks[c].true_residual <= tol;
            if (!isfinite(ks[c].true_residual)) { /* (a b with NaN / Inf: x stays, its solve refuses it) */
                const sap_vec bc = {n, SAP_DOUBLE, (void *)(uintptr_t)(d_B + (size_t)c * (size_t)ldb)};
                sap_vec xc = {n, SAP_DOUBLE, d_X + (size_t)c * (size_t)ldx};
                double bn = 0;
                SAP_TRY(sap__ops(ctx)->nrm2(ctx, &bc, &bn));
                if (isfinite(bn)) SAP_TRY(sap__ops(ctx)->set(ctx, &xc, 0.0));
            }
            if (!done[c]) continue;
            ndone++;
            *iters += ks[c].iterations;
            if (ks[c].true_residual > *worst) *worst = ks[c].true_residual;
            if (ks[c].true_residual > res) res = ks[c].true_residual;
        }
        D->st.device_solves += ndone;
        if (a->itry >= 0 && a->itry < S->stats.ntries) {
            S->stats.tried[a->itry].iterations += it;
            S->stats.tried[a->itry].time += sap__wtime() - t0;
            sap__solver_try_note(S, a->itry, "device lockstep: %lld columns, %lld met tol (worst res %.1e)", (long long)k,
                                 (long long)ndone, res);
        }
    }
cleanup:
    sap__free(ctx, ks);
    return st;
}

sap_status sap_solver_solve_many_device(sap_solver *S, sap_int nrhs, const double *d_B, sap_int ldb, double *d_X,
                                        sap_int ldx)
{
    sap_status st = need_dev(S, "sap_solver_solve_many_device");
    if (st < 0) return st;
    const sap_int n = S->A->nrows;
    if (nrhs < 0 || ldb < n || ldx < n)
        return SAP_ERROR(S->ctx, SAP_ERR_INVALID, "sap_solver_solve_many_device: nrhs = %lld, ldb = %lld, ldx = %lld, "
                         "n = %lld", (long long)nrhs, (long long)ldb, (long long)ldx, (long long)n);
    sap_status worst = SAP_OK;
    double worst_res = 0, iters = 0;
    int *done = NULL;
    for (sap_int j = 0; j < nrhs; j++) {
        /* the first column alone (the setup, the chain's choices and fallbacks), then the
         * others in lockstep where the method has the form (columns it leaves above tol go
         * on alone from where it left them) */
        if (j == 1 && nrhs > 2) {
            done = (int *)sap__alloc(S->ctx, (size_t)nrhs, sizeof(int), true, __FILE__, __LINE__);
            if (!done) return SAP_ERROR(S->ctx, SAP_ERR_OUT_OF_MEMORY, "sap_solver_solve_many_device: out of memory");
            double it = 0, res = 0;
            const sap_status sm = dev_many(S, nrhs - 1, d_B + ldb, ldb, d_X + ldx, ldx, done + 1, &it, &res);
            if (sm < 0) {
                sap__free(S->ctx, done);
                return sm;
            }
            iters += it;
            if (res > worst_res || !isfinite(res)) worst_res = res;
        }
        if (done && done[j]) continue;
        sap_status sj = sap_solver_solve_device(S, d_B + j * ldb, d_X + j * ldx);
        if (sj < 0) {
            sap__free(S->ctx, done);
            return sj;
        }
        iters += S->stats.iterations;
        if (S->stats.relative_residual > worst_res || !isfinite(S->stats.relative_residual))
            worst_res = S->stats.relative_residual;
        if (sj != SAP_OK && worst == SAP_OK) worst = sj;
    }
    sap__free(S->ctx, done);
    S->stats.nrhs = nrhs;
    S->stats.iterations = iters;
    S->stats.relative_residual = worst_res;
    S->stats.status = worst;
    return worst;
}

/* ---- refactor, statistics ------------------------------------------------------------------- */

sap_status sap_solver_refactor_device(sap_solver *S, const double *d_val)
{
    sap_status st = need_dev(S, "sap_solver_refactor_device");
    if (st < 0) return st;
    struct sap__solver_dev *D = S->dev;
    sap_context *ctx = S->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int nnz = S->A->nnz;
    double *hv = NULL;
    if (nnz > 0) {
        if (!d_val) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_refactor_device: d_val is NULL");
        if (D->check) SAP_TRY(ops->ptr_check(ctx, d_val, "sap_solver_refactor_device: d_val"));
    }
    if (!S->A->rowptr) { /* no host copy: checked and copied on the device */
        sap_dev_csr C = own_csr(S);
        sap_dev_csr_check chk;
        C.val = d_val;
        SAP_TRY(dev_csr_stats(ctx, D, &C, &chk, NULL, NULL));
        if (check_bad(&chk)) SAP_TRY(check_error(ctx, &C, &chk, "sap_solver_refactor_device"));
        if (nnz > 0) SAP_TRY(ops->mem_copy(ctx, D->a_val, d_val, sizeof(double) * (size_t)nnz));
        SAP_TRY(sap__matrix_values_dev(D->M, NULL, D->a_val));
        D->ms_valid = 0;
        st = sap__solver_refactor_dev(S);
        if (nnz > 0) {
            sap_status ss = ops->synchronize(ctx); /* the caller's array was read */
            if (ss < 0) st = ss;
        }
        return st;
    }
    dev_mark m0 = mark(S->ctx);
    double t0 = sap__wtime();
    SAP_ALLOC(ctx, hv, nnz > 0 ? nnz : 1);
    SAP_TRY(ops->mem_download(ctx, hv, d_val, sizeof(double) * (size_t)nnz));
    D->st.time_download += sap__wtime() - t0;
    D->st.download_bytes += mark(S->ctx).d2h - m0.d2h;
    for (sap_int p = 0; p < nnz; p++)
        if (!isfinite(hv[p]))
            SAP_FAIL(ctx, SAP_ERR_NONFINITE, "sap_solver_refactor_device: value %lld is %g", (long long)p, hv[p]);
    m0 = mark(S->ctx);
    SAP_TRY(sap__matrix_values_dev(D->M, hv, d_val));
    {
        const offload_save o = host_stages_begin(S);
        st = sap_solver_refactor(S, hv);
        host_stages_end(S, o);
    }
    /* the permutations are the setup's: kept (a new attempt rebuilds them) */
    D->st.setup_h2d_bytes += mark(S->ctx).h2d - m0.h2d;
cleanup:
    sap__free(ctx, hv);
    return st;
}

sap_status sap_solver_get_device_stats(const sap_solver *S, sap_solver_device_stats *stats)
{
    if (!S || !stats) return SAP_ERR_INVALID;
    if (S->dev) *stats = S->dev->st;
    else memset(stats, 0, sizeof(*stats));
    return SAP_OK;
}
