/* matrix.c -- sap_matrix: a sparse matrix resident on the context's backend in one SpMV
 * format and precision; format names. */
#include "base/options.h"
#include "matrix/backend_matrix.h"

#include <stdint.h>
#include <string.h>

static const char *const format_names[] = {"auto", "csr", "ell", "sellp", "hec", "band"};

const char *sap_spmv_format_name(sap_spmv_format format)
{
    if (format < SAP_FORMAT_AUTO || format > SAP_FORMAT_BAND) return "unknown";
    return format_names[format];
}

sap_status sap_spmv_format_parse(const char *name, sap_spmv_format *format)
{
    int v = 0;
    sap_status st = sap__enum_parse(sap__format_words, name, format ? &v : NULL);
    if (st == SAP_OK) *format = (sap_spmv_format)v;
    return st;
}

void sap_matrix_options_init(sap_matrix_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->format = SAP_FORMAT_AUTO;
    opt->precision = SAP_DOUBLE;
}

/* The host copy of A in a new matrix object of ctx (M->sm not yet set). */
static sap_status host_copy(sap_context *ctx, const sap_csr *A, sap_matrix **out)
{
    sap_status st = SAP_OK;
    sap_matrix *M = NULL;
    SAP_CALLOC(ctx, M, 1);
    M->ctx = ctx;
    M->nrows = A->nrows;
    M->ncols = A->ncols;
    M->nnz = A->nnz;
    SAP_ALLOC(ctx, M->rowptr, A->nrows + 1);
    SAP_ALLOC(ctx, M->colind, A->nnz);
    SAP_ALLOC(ctx, M->val, A->nnz);
    sap__par_memcpy(ctx, M->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1));
    if (A->nnz > 0) sap__par_memcpy(ctx, M->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
    if (A->nnz > 0) sap__par_memcpy(ctx, M->val, A->val, sizeof(double) * (size_t)A->nnz);
    *out = M;
    return SAP_OK;
cleanup:
    sap_matrix_destroy(M);
    return st;
}

sap_status sap__matrix_create_dev(sap_context *ctx, const sap_csr *A, const sap_int *rowptr, const sap_int *colind,
                                  const double *val, sap_matrix **out)
{
    *out = NULL;
    sap_matrix *M = NULL;
    sap_status st = SAP_OK;
    if (A->rowptr) SAP_TRY(sap_csr_check(A));
    if (!sap__ops(ctx)->spmat_create_dev)
        return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED, "the %s backend builds no matrix from device arrays",
                         sap__ops(ctx)->name);
    if (A->rowptr) {
        SAP_TRY(host_copy(ctx, A, &M));
    } else { /* a shape: no host copy */
        SAP_CALLOC(ctx, M, 1);
        M->ctx = ctx;
        M->nrows = A->nrows;
        M->ncols = A->ncols;
        M->nnz = A->nnz;
    }
    SAP_TRY(sap__ops(ctx)->spmat_create_dev(ctx, A, rowptr, colind, val, &M->sm));
    *out = M;
    return SAP_OK;
cleanup:
    sap_matrix_destroy(M);
    return st;
}

/* sap_matrix_create (view = 0: a host copy of A) and sap__matrix_create_view. */
static sap_status create(sap_context *ctx, const sap_csr *A, const sap_matrix_options *opt_in, int view, int checked,
                         sap_matrix **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_create: output pointer is NULL");
    *out = NULL;
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_create: matrix is NULL");
    sap_matrix_options opt;
    if (opt_in) opt = *opt_in;
    else sap_matrix_options_init(&opt);
    if (opt.format < SAP_FORMAT_AUTO || opt.format > SAP_FORMAT_BAND)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_create: unknown SpMV format %d", (int)opt.format);
    if (opt.precision != SAP_DOUBLE && opt.precision != SAP_FLOAT)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_create: unknown precision %d", (int)opt.precision);
    if (checked && (!A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))) /* a shape without host arrays */
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_create: the CSR has no host arrays");
    sap_status st = checked ? SAP_OK : sap_csr_check(A);
    if (st < 0) return st;

    sap_matrix *M = NULL;
    if (view) {
        SAP_CALLOC(ctx, M, 1);
        M->ctx = ctx;
        M->nrows = A->nrows;
        M->ncols = A->ncols;
        M->nnz = A->nnz;
        M->view = 1;
        M->rowptr = A->rowptr;
        M->colind = A->colind;
        M->val = A->val;
    } else {
        SAP_TRY(host_copy(ctx, A, &M));
    }
    SAP_TRY(sap__ops(ctx)->spmat_create(ctx, A, opt.format, opt.precision, &M->sm));
    *out = M;
    return SAP_OK;
cleanup:
    sap_matrix_destroy(M);
    return st;
}

sap_status sap_matrix_create(sap_context *ctx, const sap_csr *A, const sap_matrix_options *opt_in, sap_matrix **out)
{
    return create(ctx, A, opt_in, 0, 0, out);
}

sap_status sap__matrix_create_view(sap_context *ctx, const sap_csr *A, const sap_matrix_options *opt, int checked,
                                   sap_matrix **out)
{
    return create(ctx, A, opt, 1, checked, out);
}

static void drop_derived(sap_matrix *M)
{
    for (int i = 0; i < M->nderived; i++) sap__ops(M->ctx)->spmat_destroy(M->ctx, M->derived[i].sm);
    M->nderived = 0;
}

static void host_view(const sap_matrix *M, sap_csr *A)
{
    memset(A, 0, sizeof(*A));
    A->ctx = M->ctx;
    A->nrows = M->nrows;
    A->ncols = M->ncols;
    A->nnz = M->nnz;
    A->rowptr = M->rowptr;
    A->colind = M->colind;
    A->val = M->val;
}

sap_status sap__matrix_host_csr(sap_matrix *M, int transpose, sap_csr **out)
{
    sap_csr A;
    host_view(M, &A);
    if (transpose) return sap_csr_transpose(&A, out);
    return sap_csr_copy(&A, out);
}

sap_status sap__matrix_derived(sap_matrix *M, int transpose, sap_precision prec, sap_spmv_format fmt,
                               const sap_spmat **out)
{
    transpose = transpose != 0;
    if (!transpose && prec == M->sm->prec && (fmt == SAP_FORMAT_AUTO || fmt == M->sm->format)) {
        *out = M->sm;
        return SAP_OK;
    }
    for (int i = 0; i < M->nderived; i++) {
        const struct sap_matrix_derived *d = &M->derived[i];
        if (d->transpose == transpose && d->prec == prec && (fmt == SAP_FORMAT_AUTO || fmt == d->format)) {
            *out = d->sm;
            return SAP_OK;
        }
    }
    sap_context *ctx = M->ctx;
    if (!M->rowptr)
        return SAP_ERROR(ctx, SAP_ERR_UNSUPPORTED,
                         "sap_matrix: a transposed or converted copy needs the host matrix (built from device arrays)");
    if (M->nderived == (int)(sizeof(M->derived) / sizeof(M->derived[0]))) drop_derived(M);
    sap_csr A;
    host_view(M, &A);
    sap_csr *T = NULL;
    sap_spmat *sm = NULL;
    sap_status st = SAP_OK;
    if (transpose) SAP_TRY(sap_csr_transpose(&A, &T));
    SAP_TRY(sap__ops(ctx)->spmat_create(ctx, T ? T : &A, fmt, prec, &sm));
    struct sap_matrix_derived *d = &M->derived[M->nderived++];
    d->transpose = transpose;
    d->prec = prec;
    d->format = sm->format;
    d->sm = sm;
    *out = sm;
cleanup:
    sap_csr_destroy(T);
    return st;
}

void sap_matrix_destroy(sap_matrix *M)
{
    if (!M) return;
    sap_context *ctx = M->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    drop_derived(M);
    if (M->sm) ops->spmat_destroy(ctx, M->sm);
    if (M->x.data) ops->vec_destroy(ctx, &M->x);
    if (M->y.data) ops->vec_destroy(ctx, &M->y);
    if (!M->view) {
        sap__free(ctx, M->val);
        sap__free(ctx, M->rowptr);
        sap__free(ctx, M->colind);
    }
    sap__free(ctx, M);
}

sap_status sap_matrix_update_values(sap_matrix *M, const double *val)
{
    if (!M) return SAP_ERR_INVALID;
    sap_context *ctx = M->ctx;
    if (!val && M->nnz > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_update_values: val is NULL");
    sap_csr A;
    host_view(M, &A);
    A.val = (double *)val; /* read only */
    sap_status st = sap__ops(ctx)->spmat_update_values(ctx, M->sm, &A);
    if (st < 0) return st;
    drop_derived(M);
    if (M->view) M->val = (double *)(uintptr_t)val; /* the new view (never written) */
    else if (M->nnz > 0) sap__par_memcpy(ctx, M->val, val, sizeof(double) * (size_t)M->nnz);
    return st;
}

sap_status sap__matrix_values_dev(sap_matrix *M, const double *host_val, const double *val)
{
    sap_context *ctx = M->ctx;
    if (M->view) /* host_val is the caller's scratch: a view cannot keep it */
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap__matrix_values_dev: not for a matrix that views its host CSR");
    sap_csr A;
    host_view(M, &A);
    sap_status st = sap__ops(ctx)->spmat_values_dev(ctx, M->sm, &A, val);
    if (st < 0) return st;
    drop_derived(M);
    if (M->nnz > 0 && M->val && host_val) sap__par_memcpy(ctx, M->val, host_val, sizeof(double) * (size_t)M->nnz);
    return st;
}

sap_spmv_format sap_matrix_format(const sap_matrix *M) { return M && M->sm ? M->sm->format : SAP_FORMAT_AUTO; }

const char *sap_matrix_format_reason(const sap_matrix *M) { return M && M->sm && M->sm->reason ? M->sm->reason : ""; }

sap_int sap_matrix_nrows(const sap_matrix *M) { return M ? M->nrows : 0; }

sap_int sap_matrix_ncols(const sap_matrix *M) { return M ? M->ncols : 0; }

sap_status sap_matrix_spmv(sap_matrix *M, double alpha, const double *x, double beta, double *y)
{
    if (!M) return SAP_ERR_INVALID;
    sap_context *ctx = M->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    if ((!x && M->ncols > 0) || (!y && M->nrows > 0))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_matrix_spmv: NULL vector");
    sap_status st = SAP_OK;
    if (!M->x.data) SAP_TRY(ops->vec_create(ctx, M->ncols, M->sm->prec, &M->x));
    if (!M->y.data) SAP_TRY(ops->vec_create(ctx, M->nrows, M->sm->prec, &M->y));
    SAP_TRY(ops->vec_upload(ctx, &M->x, x));
    if (beta != 0.0) SAP_TRY(ops->vec_upload(ctx, &M->y, y));
    SAP_TRY(ops->spmv(ctx, M->sm, alpha, &M->x, beta, &M->y));
    SAP_TRY(ops->vec_download(ctx, &M->y, y));
cleanup:
    return st;
}
