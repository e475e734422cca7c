/* btd.c -- the block-tridiagonal solver object (sap_btd_*): creation from block arrays or a
 * CSR, the choice of algorithm and BCYCLIC variant, factor / refactor, solves of one or many
 * right-hand sides (host vectors, solved in the backend's memory), T x, statistics.  The
 * algorithms are btd_cyclic.c (BCYCLIC) and btd_spike.c (Spike, reduced Spike). */
#include "btd/btd_comm.h"
#include "btd/btd_impl.h"
#include "base/options.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the names (first of each value is the canonical one), NULL-terminated */
static const sap_name_value algo_words[] = {
    {"auto", SAP_BTD_AUTO},           {"bcyclic", SAP_BTD_BCYCLIC},           {"spike", SAP_BTD_SPIKE},
    {"reduced-spike", SAP_BTD_REDUCED_SPIKE}, {"reduced_spike", SAP_BTD_REDUCED_SPIKE},
    {"truncated-spike", SAP_BTD_REDUCED_SPIKE}, {NULL, 0}};
static const sap_name_value variant_words[] = {
    {"auto", SAP_BTD_VARIANT_AUTO}, {"getrs-batched", SAP_BTD_GETRS_BATCHED}, {"getrs", SAP_BTD_GETRS},
    {"getri-batched", SAP_BTD_GETRI_BATCHED}, {"getri", SAP_BTD_GETRI}, {NULL, 0}};

const char *sap_btd_algo_name(sap_btd_algo algo) { return sap__name_of(algo_words, (int)algo, "unknown"); }
const char *sap_btd_variant_name(sap_btd_variant v) { return sap__name_of(variant_words, (int)v, "unknown"); }

sap_status sap_btd_algo_parse(const char *name, sap_btd_algo *algo)
{
    int v;
    if (!algo || sap__enum_parse(algo_words, name, &v) != SAP_OK) return SAP_ERR_INVALID;
    return *algo = (sap_btd_algo)v, SAP_OK;
}

sap_status sap_btd_variant_parse(const char *name, sap_btd_variant *variant)
{
    int v;
    if (!variant || sap__enum_parse(variant_words, name, &v) != SAP_OK) return SAP_ERR_INVALID;
    return *variant = (sap_btd_variant)v, SAP_OK;
}

void sap_btd_options_init(sap_btd_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof *opt);
    opt->algo = SAP_BTD_AUTO;
    opt->variant = SAP_BTD_VARIANT_AUTO;
    opt->partitions = 0;
    opt->inexact = 0;
    opt->tol = 1e-12;
    opt->maxit = 50;
    opt->solves = 16;
}

static sap_status check_options(sap_context *ctx, const sap_btd_options *o)
{
    if ((unsigned)o->algo > SAP_BTD_REDUCED_SPIKE)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: unknown algorithm %d", (int)o->algo);
    if ((unsigned)o->variant > SAP_BTD_GETRI)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: unknown variant %d", (int)o->variant);
    if (o->partitions < 0 || o->partitions > (1 << 24))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: partitions %lld outside 0..2^24", (long long)o->partitions);
    if (!(o->tol > 0 && o->tol < 1))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: tol %g outside (0, 1)", o->tol);
    if (o->maxit < 0 || o->maxit > 100000)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: maxit %d outside 0..100000", o->maxit);
    if (o->solves < 0 || o->solves > 1000000)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: solves %d outside 0..10^6", o->solves);
    return SAP_OK;
}

/* ---- the object ------------------------------------------------------------------ */

void sap_btd_destroy(sap_btd *T)
{
    if (!T) return;
    sap_context *ctx = T->ctx;
    const sap_backend_ops *ops = T->ops;
    sap__spike_free(T);
    sap__dist_free(T);
    double *arrays[] = {T->D0, T->AC0, T->D, T->AC, T->Binv, T->H, T->W, T->Z, T->Zw, T->eye};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) ops->mem_free(ctx, arrays[i]);
    ops->mem_free(ctx, T->piv);
    ops->mem_free(ctx, T->info);
    sap__free(ctx, T);
}

sap_status sap__btd_alloc(sap_context *ctx, sap_int k, sap_int nb, const sap_btd_options *opt, sap_btd **out)
{
    sap_status st = SAP_OK;
    sap_btd *T = NULL;
    *out = NULL;
    if (k < 1 || nb < 1) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: k = %lld and nb = %lld must be >= 1",
                                          (long long)k, (long long)nb);
    if (2 * k > INT32_MAX / 2 || k * nb > INT32_MAX / 2 || (double)k * k * nb * 3 > 1e15)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "sap_btd: k = %lld, nb = %lld exceed the 32-bit LAPACK sizes",
                         (long long)k, (long long)nb);
    sap_btd_options o;
    sap_btd_options_init(&o);
    if (opt) o = *opt;
    SAP_TRY(check_options(ctx, &o));
    SAP_CALLOC(ctx, T, 1);
    if (!T) goto cleanup;
    T->ctx = ctx;
    T->ops = sap__ops(ctx);
    T->dk = T->ops->dense;
    T->k = k;
    T->nb = nb;
    T->kk = k * k;
    T->opt = o;
    T->st.singular_block = -1;
    if (!T->dk) SAP_FAIL(ctx, SAP_ERR_NOT_COMPILED, "sap_btd: the %s backend has no dense kernels", T->ops->name);
    SAP_TRY(sap__mem_check(ctx, "sap_btd", (double)nb * T->kk * 8 * 8));
    size_t nd = (size_t)nb * (size_t)T->kk * 8;
    SAP_TRY(T->ops->mem_alloc(ctx, nd, (void **)&T->D0));
    SAP_TRY(T->ops->mem_alloc(ctx, 2 * nd, (void **)&T->AC0));
    SAP_TRY(T->ops->mem_alloc(ctx, nd, (void **)&T->D));
    SAP_TRY(T->ops->mem_alloc(ctx, 2 * nd, (void **)&T->AC));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)nb * (size_t)k * 4, (void **)&T->piv));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)nb * 4, (void **)&T->info));
    SAP_TRY(T->dk->zero(ctx, (int)k, (int)k, (int)nb, T->D0, (int)k, T->kk));
    SAP_TRY(T->dk->zero(ctx, (int)k, 2 * (int)k, (int)nb, T->AC0, (int)k, 2 * T->kk));
    *out = T;
    return SAP_OK;
cleanup:
    sap_btd_destroy(T);
    return st;
}

/* Uploads host blocks (as sap_btd_create takes them) into D0 / AC0. */
static sap_status set_values(sap_btd *T, const double *lower, const double *diag, const double *upper)
{
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const sap_int k = T->k, nb = T->nb;
    const int64_t kk = T->kk;
    double *ac = NULL;
    if (!diag || (nb > 1 && (!lower || !upper)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: NULL block array (diag%s)", nb > 1 ? ", lower, upper" : "");
    for (int64_t i = 0; i < nb * kk; i++) {
        int64_t b = i / kk;
        if (!isfinite(diag[i]) || (b > 0 && !isfinite(lower[i])) || (b < nb - 1 && !isfinite(upper[i])))
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_btd: NaN or Inf in block row %lld", (long long)b);
    }
    SAP_CALLOC(ctx, ac, (size_t)(2 * nb * kk));
    if (!ac) goto cleanup;
    for (sap_int b = 0; b < nb; b++) {
        if (b > 0) memcpy(ac + 2 * b * kk, lower + b * kk, (size_t)kk * 8);
        if (b < nb - 1) memcpy(ac + 2 * b * kk + kk, upper + b * kk, (size_t)kk * 8);
    }
    SAP_TRY(T->ops->mem_upload(ctx, T->D0, diag, (size_t)(nb * kk) * 8));
    SAP_TRY(T->ops->mem_upload(ctx, T->AC0, ac, (size_t)(2 * nb * kk) * 8));
    (void)k;
    T->factored = 0;
cleanup:
    sap__free(ctx, ac);
    return st;
}

sap_status sap_btd_create(sap_context *ctx, sap_int k, sap_int nb, const double *lower, const double *diag,
                          const double *upper, const sap_btd_options *opt, sap_btd **T)
{
    SAP_CHECK_CTX(ctx);
    if (!T) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_create: T is NULL");
    *T = NULL;
    sap_btd *B;
    sap_status st = sap__btd_alloc(ctx, k, nb, opt, &B);
    if (st != SAP_OK) return st;
    st = set_values(B, lower, diag, upper);
    if (st != SAP_OK) {
        sap_btd_destroy(B);
        return st;
    }
    *T = B;
    return SAP_OK;
}

/* ---- from a CSR ------------------------------------------------------------------ */

sap_status sap_btd_detect_block(const sap_csr *A, sap_int *k)
{
    if (!A || !k) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows != A->ncols) return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "sap_btd_detect_block: %lld x %lld matrix",
                                               (long long)A->nrows, (long long)A->ncols);
    sap_int n = A->nrows;
    *k = n;
    if (n == 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_detect_block: empty matrix");
    /* the largest distance of an entry from the diagonal bounds k from below */
    sap_int K = 0;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int d = A->colind[p] > i ? A->colind[p] - i : i - A->colind[p];
            if (d > K) K = d;
        }
    for (sap_int c = (K + 1) / 2 > 1 ? (K + 1) / 2 : 1; c <= n; c++) {
        if (n % c) continue;
        int ok = 1;
        for (sap_int i = 0; i < n && ok; i++)
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                sap_int d = A->colind[p] / c - i / c;
                if (d > 1 || d < -1) {
                    ok = 0;
                    break;
                }
            }
        if (ok) return *k = c, SAP_OK;
    }
    return SAP_OK;
}

/* Host block arrays of A for block width k (checked). */
sap_status sap__btd_csr_blocks(sap_context *ctx, const sap_csr *A, sap_int k, double **lo, double **di, double **up)
{
    sap_status st = SAP_OK;
    sap_int n = A->nrows, nb = n / k;
    int64_t kk = k * k;
    double *l = NULL, *d = NULL, *u = NULL;
    SAP_CALLOC(ctx, l, (size_t)(nb * kk));
    SAP_CALLOC(ctx, d, (size_t)(nb * kk));
    SAP_CALLOC(ctx, u, (size_t)(nb * kk));
    if (!l || !d || !u) goto cleanup;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p], bi = i / k, bj = j / k;
            int64_t at = bi * kk + (i % k) + (j % k) * k;
            if (bj == bi) d[at] += A->val[p];
            else if (bj == bi - 1) l[at] += A->val[p];
            else if (bj == bi + 1) u[at] += A->val[p];
            else SAP_FAIL(ctx, SAP_ERR_INVALID, "sap_btd: entry (%lld, %lld) lies outside the block-tridiagonal "
                          "pattern of block width %lld", (long long)i, (long long)j, (long long)k);
        }
    *lo = l, *di = d, *up = u;
    return SAP_OK;
cleanup:
    sap__free(ctx, l);
    sap__free(ctx, d);
    sap__free(ctx, u);
    return st;
}

static sap_status check_csr_k(sap_context *ctx, const sap_csr *A, sap_int k)
{
    if (A->nrows != A->ncols) return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "sap_btd: %lld x %lld matrix",
                                               (long long)A->nrows, (long long)A->ncols);
    if (k <= 0 || A->nrows % k)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd: block width %lld does not divide n = %lld", (long long)k,
                         (long long)A->nrows);
    return SAP_OK;
}

sap_status sap_btd_create_csr(sap_context *ctx, const sap_csr *A, sap_int k, const sap_btd_options *opt,
                              sap_btd **T)
{
    SAP_CHECK_CTX(ctx);
    if (!A || !T) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_create_csr: NULL argument");
    *T = NULL;
    sap_status st = SAP_OK;
    double *l = NULL, *d = NULL, *u = NULL;
    if (k == 0) SAP_TRY(sap_btd_detect_block(A, &k));
    SAP_TRY(check_csr_k(ctx, A, k));
    SAP_TRY(sap__btd_csr_blocks(ctx, A, k, &l, &d, &u));
    SAP_TRY(sap_btd_create(ctx, k, A->nrows / k, l, d, u, opt, T));
cleanup:
    sap__free(ctx, l);
    sap__free(ctx, d);
    sap__free(ctx, u);
    return st;
}

sap_int sap_btd_block_size(const sap_btd *T) { return T ? T->k : 0; }
sap_int sap_btd_block_rows(const sap_btd *T) { return T ? T->nb : 0; }

/* ---- factor ---------------------------------------------------------------------- */

sap_status sap_btd_factor(sap_btd *T)
{
    if (!T) return SAP_ERR_INVALID;
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const int k = (int)T->k;
    double t0 = sap__wtime();
    T->factored = 0;
    T->st.singular_block = -1;
    T->st.solves = 0;
    T->algo = T->opt.algo == SAP_BTD_AUTO ? (T->comm ? SAP_BTD_SPIKE : SAP_BTD_BCYCLIC) : T->opt.algo;
    if (T->comm && T->opt.inexact && T->comm->size > 1)
        SAP_FAIL(ctx, SAP_ERR_UNSUPPORTED, "sap_btd: the inexact reduced Spike is not implemented over processes");
    T->variant = T->opt.variant;
    if (T->variant == SAP_BTD_VARIANT_AUTO) {
        double tc = 0;
        sap_btd_variant v = SAP_BTD_GETRS_BATCHED;
        SAP_TRY(sap__bc_choose_variant(T, &v, &tc));
        T->variant = v;
        T->st.time_calibrate += tc;
    }
    SAP_TRY(T->ops->synchronize(ctx));
    t0 = sap__wtime();
    int getri = T->variant == SAP_BTD_GETRI || T->variant == SAP_BTD_GETRI_BATCHED;
    size_t nd = (size_t)T->nb * (size_t)T->kk * 8;
    if (getri && !T->Binv) {
        SAP_TRY(T->ops->mem_alloc(ctx, nd, (void **)&T->Binv));
        SAP_TRY(T->ops->mem_alloc(ctx, 2 * nd, (void **)&T->W));
    }
    SAP_TRY(T->dk->lacpy(ctx, k, k, (int)T->nb, T->D0, k, T->kk, T->D, k, T->kk));
    SAP_TRY(T->dk->lacpy(ctx, k, 2 * k, (int)T->nb, T->AC0, k, 2 * T->kk, T->AC, k, 2 * T->kk));
    if (T->comm && T->algo == SAP_BTD_BCYCLIC) {
        T->P = T->comm->size;
        SAP_TRY(T->dist_interior ? sap__bi_factor(T) : sap__bc_factor_dist(T));
    } else if (T->comm) {
        T->P = T->comm->size;
        SAP_TRY(sap__dist_factor(T));
    } else if (T->algo == SAP_BTD_BCYCLIC) {
        T->P = 1;
        if (!T->H) {
            int64_t hb = sap__bc_history(T, T->nb);
            SAP_TRY(T->ops->mem_alloc(ctx, (size_t)(hb > 0 ? hb : 1) * 8, (void **)&T->H));
        }
        SAP_TRY(sap__bc_factor(T, 0, T->nb, T->H));
    } else {
        SAP_TRY(sap__spike_factor(T));
    }
    SAP_TRY(T->ops->synchronize(ctx));
    T->factored = 1;
cleanup:
    T->st.time_factor = sap__wtime() - t0;
    T->st.algo = T->algo;
    T->st.variant = T->variant;
    T->st.k = T->k;
    T->st.nb = T->nb;
    T->st.partitions = T->P;
    return st;
}

sap_status sap_btd_refactor(sap_btd *T, const double *lower, const double *diag, const double *upper)
{
    if (!T) return SAP_ERR_INVALID;
    sap_status st = set_values(T, lower, diag, upper);
    if (st == SAP_OK && T->comm && T->hA1 && T->hCl) { /* the couplings to the neighbouring processes */
        if (T->comm->rank > 0) memcpy(T->hA1, lower, (size_t)T->kk * 8);
        if (T->comm->rank + 1 < T->comm->size) memcpy(T->hCl, upper + (T->nb - 1) * T->kk, (size_t)T->kk * 8);
        T->cd_fresh = 0;
    }
    return st != SAP_OK ? st : sap_btd_factor(T);
}

sap_status sap_btd_refactor_csr(sap_btd *T, const sap_csr *A)
{
    if (!T || !A) return SAP_ERR_INVALID;
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    double *l = NULL, *d = NULL, *u = NULL;
    SAP_TRY(check_csr_k(ctx, A, T->k));
    if (A->nrows != T->k * T->nb)
        SAP_FAIL(ctx, SAP_ERR_INVALID, "sap_btd_refactor_csr: n = %lld, the object has %lld", (long long)A->nrows,
                 (long long)(T->k * T->nb));
    SAP_TRY(sap__btd_csr_blocks(ctx, A, T->k, &l, &d, &u));
    SAP_TRY(sap_btd_refactor(T, l, d, u));
cleanup:
    sap__free(ctx, l);
    sap__free(ctx, d);
    sap__free(ctx, u);
    return st;
}

/* ---- solves ---------------------------------------------------------------------- */

sap_status sap__btd_reserve(sap_btd *T, int64_t doubles)
{
    if (doubles <= T->zcap) return SAP_OK;
    T->ops->mem_free(T->ctx, T->Z);
    T->ops->mem_free(T->ctx, T->Zw);
    T->Z = T->Zw = NULL;
    T->zcap = 0;
    sap_status st = T->ops->mem_alloc(T->ctx, (size_t)doubles * 8, (void **)&T->Z);
    if (st == SAP_OK) st = T->ops->mem_alloc(T->ctx, (size_t)doubles * 8, (void **)&T->Zw);
    if (st == SAP_OK) T->zcap = doubles;
    return st;
}

sap_status sap__btd_apply(sap_btd *T, const double *x, double *y, int nrhs)
{
    const int k = (int)T->k, n = (int)(T->k * T->nb), nb = (int)T->nb;
    const int64_t kk = T->kk;
    sap_status st = T->dk->gemm(T->ctx, k, nrhs, k, 1.0, T->D0, k, kk, x, n, k, 0.0, y, n, k, nb);
    if (st == SAP_OK && nb > 1)
        st = T->dk->gemm(T->ctx, k, nrhs, k, 1.0, T->AC0 + 2 * kk, k, 2 * kk, x, n, k, 1.0, y + k, n, k, nb - 1);
    if (st == SAP_OK && nb > 1)
        st = T->dk->gemm(T->ctx, k, nrhs, k, 1.0, T->AC0 + kk, k, 2 * kk, x + k, n, k, 1.0, y, n, k, nb - 1);
    return st;
}

/* z (backend, n x nrhs, ld n) := T^{-1} z with the factors */
static sap_status solve_direct(sap_btd *T, double *z, int nrhs)
{
    if (T->comm && T->algo == SAP_BTD_BCYCLIC) return T->dist_interior ? sap__bi_solve(T, z, nrhs) : sap__bc_solve_dist(T, z, nrhs);
    if (T->comm) return sap__dist_solve(T, z, nrhs);
    if (T->algo == SAP_BTD_BCYCLIC) return sap__bc_solve(T, 0, T->nb, T->H, z, (int)(T->k * T->nb), nrhs);
    return sap__spike_solve(T, z, nrhs);
}

static sap_vec vec_of(double *p, sap_int n) { return (sap_vec){.n = n, .prec = SAP_DOUBLE, .data = p}; }

/* reduced Spike as the preconditioner of an iterative refinement: x += M^{-1}(b - T x) */
static sap_status solve_inexact(sap_btd *T, int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx)
{
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const sap_int n = T->k * T->nb;
    double *bz = NULL, *r = NULL;
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)n * 8, (void **)&bz));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)n * 8, (void **)&r));
    double worst = 0;
    int maxit = 0;
    sap_status res = SAP_OK;
    for (int c = 0; c < nrhs; c++) {
        sap_vec vb = vec_of(bz, n), vr = vec_of(r, n), vx = vec_of(T->Z, n);
        SAP_TRY(T->ops->vec_upload(ctx, &vb, B + c * ldb));
        double nb2, nr2;
        SAP_TRY(T->ops->nrm2(ctx, &vb, &nb2));
        SAP_TRY(T->ops->copy(ctx, &vb, &vx));
        SAP_TRY(solve_direct(T, T->Z, 1));
        int it = 0;
        for (;;) {
            SAP_TRY(sap__btd_apply(T, T->Z, r, 1));
            SAP_TRY(T->ops->axpby(ctx, 1.0, &vb, -1.0, &vr));
            SAP_TRY(T->ops->nrm2(ctx, &vr, &nr2));
            if (!isfinite(nr2)) SAP_FAIL(ctx, SAP_ERR_BREAKDOWN, "sap_btd: reduced Spike refinement diverged (NaN)");
            if (nr2 <= T->opt.tol * nb2 || it >= T->opt.maxit) break;
            SAP_TRY(solve_direct(T, r, 1));
            SAP_TRY(T->ops->axpby(ctx, 1.0, &vr, 1.0, &vx));
            it++;
        }
        double rel = nb2 > 0 ? nr2 / nb2 : nr2;
        if (rel > worst) worst = rel;
        if (it > maxit) maxit = it;
        if (rel > T->opt.tol) res = SAP_WARN_NOT_CONVERGED;
        SAP_TRY(T->ops->vec_download(ctx, &vx, X + c * ldx));
    }
    T->st.iterations = maxit;
    T->st.relative_residual = worst;
    st = res;
    if (res != SAP_OK)
        SAP_ERROR(ctx, res, "sap_btd: reduced Spike refinement reached %d steps with ||b - Tx|| / ||b|| = %.3g "
                  "(tol %.3g)", T->opt.maxit, worst, T->opt.tol);
cleanup:
    T->ops->mem_free(ctx, bz);
    T->ops->mem_free(ctx, r);
    return st;
}

sap_status sap_btd_solve_many(sap_btd *T, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx)
{
    if (!T) return SAP_ERR_INVALID;
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const sap_int n = T->k * T->nb;
    if (nrhs < 0 || (nrhs > 0 && (!B || !X)) || ldb < n || ldx < n || nrhs > INT32_MAX / 2)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_btd_solve_many: nrhs %lld, ldb %lld, ldx %lld (n = %lld)",
                         (long long)nrhs, (long long)ldb, (long long)ldx, (long long)n);
    if (nrhs == 0) return SAP_OK;
    double t0 = sap__wtime();
    for (sap_int c = 0; c < nrhs; c++)
        for (sap_int i = 0; i < n; i++)
            if (!isfinite(B[c * ldb + i]))
                return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_btd_solve: NaN or Inf in b (row %lld, column %lld)",
                                 (long long)i, (long long)c);
    if (!T->factored) SAP_TRY(sap_btd_factor(T));
    t0 = sap__wtime();
    T->st.iterations = 0;
    T->st.relative_residual = 0;
    if (T->algo == SAP_BTD_REDUCED_SPIKE && T->opt.inexact) {
        SAP_TRY(sap__btd_reserve(T, n));
        SAP_TRY(solve_inexact(T, (int)nrhs, B, ldb, X, ldx));
    } else {
        SAP_TRY(sap__btd_reserve(T, n * nrhs));
        for (sap_int c = 0; c < nrhs; c++) {
            sap_vec v = vec_of(T->Z + c * n, n);
            SAP_TRY(T->ops->vec_upload(ctx, &v, B + c * ldb));
        }
        SAP_TRY(solve_direct(T, T->Z, (int)nrhs));
        for (sap_int c = 0; c < nrhs; c++) {
            sap_vec v = vec_of(T->Z + c * n, n);
            SAP_TRY(T->ops->vec_download(ctx, &v, X + c * ldx));
        }
    }
    T->st.solves += nrhs;
cleanup:
    T->st.time_solve = sap__wtime() - t0;
    return st;
}

sap_status sap_btd_solve(sap_btd *T, const double *b, double *x)
{
    if (!T) return SAP_ERR_INVALID;
    return sap_btd_solve_many(T, 1, b, T->k * T->nb, x, T->k * T->nb);
}

sap_status sap_btd_matvec(sap_btd *T, const double *x, double *y)
{
    if (!T || !x || !y) return SAP_ERR_INVALID;
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const sap_int n = T->k * T->nb;
    double *dy = NULL;
    if (T->comm) return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, "sap_btd_matvec: not for a distributed object");
    SAP_TRY(sap__btd_reserve(T, n));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)n * 8, (void **)&dy));
    sap_vec vx = vec_of(T->Z, n), vy = vec_of(dy, n);
    SAP_TRY(T->ops->vec_upload(ctx, &vx, x));
    SAP_TRY(sap__btd_apply(T, T->Z, dy, 1));
    SAP_TRY(T->ops->vec_download(ctx, &vy, y));
cleanup:
    T->ops->mem_free(ctx, dy);
    return st;
}

sap_status sap_btd_get_stats(const sap_btd *T, sap_btd_stats *stats)
{
    if (!T || !stats) return SAP_ERR_INVALID;
    *stats = T->st;
    stats->transport = !T->comm || T->comm->size < 2 ? "none" : T->comm->transport;
    if (!T->factored && T->st.singular_block < 0) {
        stats->algo = T->opt.algo;
        stats->variant = T->opt.variant;
        stats->k = T->k;
        stats->nb = T->nb;
    }
    return SAP_OK;
}
