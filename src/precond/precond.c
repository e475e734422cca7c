/* precond.c -- the sap_precond front end: creation by name (registry.c), options through
 * the type's table, call-order checks, timing of the setups, precision conversion around
 * apply, reports. */
#include "precond/precond_impl.h"

#include <stdio.h>
#include <string.h>

/* The "V1,V2,.." of "NAME:V1,V2,..": the i-th plain value sets the i-th option of the
 * type's table; "key=value" items are passed as they are. */
static sap_status set_positional(sap_precond *P, const char *args)
{
    sap_status st = SAP_OK;
    const size_t len = strlen(args);
    char *list = NULL;
    size_t cap = len + 1, w = 0;
    for (int i = 0; i < P->type->nopts; i++) cap += strlen(P->type->opts[i].name) + 1;
    SAP_ALLOC(P->ctx, list, cap);
    int k = 0;
    for (const char *s = args; *s;) {
        const char *e = strchr(s, ',');
        const size_t n = e ? (size_t)(e - s) : strlen(s);
        if (w) list[w++] = ',';
        if (!memchr(s, '=', n)) {
            if (k >= P->type->nopts)
                SAP_FAIL(P->ctx, SAP_ERR_INVALID, "preconditioner '%s' takes at most %d values ('%s' given)",
                         P->type->name, P->type->nopts, args);
            const size_t m = strlen(P->type->opts[k].name);
            memcpy(list + w, P->type->opts[k].name, m);
            w += m;
            list[w++] = '=';
        }
        k++;
        memcpy(list + w, s, n);
        w += n;
        s = e ? e + 1 : s + n;
    }
    list[w] = '\0';
    st = sap_precond_set_options(P, list);
cleanup:
    sap__free(P->ctx, list);
    return st;
}

sap_status sap_precond_create(sap_context *ctx, const char *name, sap_precond **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_precond_create: output pointer is NULL");
    *out = NULL;
    if (!name) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_precond_create: name is NULL");
    /* "NAME:V1,V2,..": the type's options in table order (or key=value items) */
    const char *colon = strchr(name, ':');
    char tname[64];
    if (colon) {
        if ((size_t)(colon - name) >= sizeof(tname))
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown preconditioner '%.80s'", name);
        memcpy(tname, name, (size_t)(colon - name));
        tname[colon - name] = '\0';
    }
    const sap_precond_type *type = sap__precond_find(colon ? tname : name);
    if (!type) {
        char known[512] = "";
        for (int i = 0; i < sap_precond_type_count(); i++) {
            if (i) strncat(known, ", ", sizeof(known) - strlen(known) - 1);
            strncat(known, sap_precond_type_name(i), sizeof(known) - strlen(known) - 1);
        }
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown preconditioner '%s' (known: %s)", name, known);
    }
    sap_status st = SAP_OK;
    sap_precond *P = NULL;
    SAP_CALLOC(ctx, P, 1);
    P->ctx = ctx;
    P->type = type;
    P->prec = SAP_DOUBLE;
    P->state = SAP_PC_CREATED;
    if (type->opts_size > 0) {
        unsigned char *o = NULL;
        SAP_CALLOC(ctx, o, type->opts_size);
        P->opts = o;
        if (sap__opt_defaults(type->opts, type->nopts, P->opts) < 0)
            SAP_FAIL(ctx, SAP_ERR_INVALID, "preconditioner '%s': a default option value does not parse", type->name);
    }
    if (type->create) SAP_TRY(type->create(P));
    if (colon) SAP_TRY(set_positional(P, colon + 1));
    *out = P;
    return SAP_OK;
cleanup:
    sap_precond_destroy(P);
    return st;
}

sap_status sap_precond_set_option(sap_precond *P, const char *name, const char *value)
{
    if (!P) return SAP_ERR_INVALID;
    if (!name || !value)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "sap_precond_set_option: name or value is NULL");
    char err[1024];
    sap_status st = SAP_OK;
    unsigned char *copy = NULL;
    if (P->type->nopts == 0)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "preconditioner '%s' has no options ('%s' given)", P->type->name,
                         name);
    /* parse into a copy: P's options are unchanged on error */
    SAP_ALLOC(P->ctx, copy, P->type->opts_size);
    memcpy(copy, P->opts, P->type->opts_size);
    if (sap__opt_set(P->type->opts, P->type->nopts, copy, name, value, "option", err, sizeof(err)) < 0)
        SAP_FAIL(P->ctx, SAP_ERR_INVALID, "preconditioner '%s': %s", P->type->name, err);
    memcpy(P->opts, copy, P->type->opts_size);
    /* the numeric setup must be redone with the new option */
    if (P->state > SAP_PC_SYMBOLIC) P->state = SAP_PC_SYMBOLIC;
cleanup:
    sap__free(P->ctx, copy);
    return st;
}

sap_status sap_precond_set_options(sap_precond *P, const char *list)
{
    if (!P) return SAP_ERR_INVALID;
    if (!list) return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "sap_precond_set_options: list is NULL");
    char err[1024];
    sap_status st = SAP_OK;
    unsigned char *copy = NULL;
    if (P->type->opts_size > 0) {
        SAP_ALLOC(P->ctx, copy, P->type->opts_size);
        memcpy(copy, P->opts, P->type->opts_size);
    } else {
        static unsigned char none;
        copy = NULL;
        if (sap__opt_parse_list(NULL, 0, &none, list, (size_t)-1, NULL, "option", err, sizeof(err)) < 0)
            return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "preconditioner '%s': %s", P->type->name, err);
        return SAP_OK;
    }
    if (sap__opt_parse_list(P->type->opts, P->type->nopts, copy, list, (size_t)-1, NULL, "option", err, sizeof(err)) <
        0)
        SAP_FAIL(P->ctx, SAP_ERR_INVALID, "preconditioner '%s': %s", P->type->name, err);
    memcpy(P->opts, copy, P->type->opts_size);
    if (P->state > SAP_PC_SYMBOLIC) P->state = SAP_PC_SYMBOLIC;
cleanup:
    sap__free(P->ctx, copy);
    return st;
}

sap_status sap_precond_get_option(const sap_precond *P, const char *name, char *buf, size_t size)
{
    if (!P || !name || !buf || size == 0) return SAP_ERR_INVALID;
    int i = sap__opt_find(P->type->opts, P->type->nopts, name, (size_t)-1);
    if (i < 0)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "preconditioner '%s' has no option '%.64s'", P->type->name, name);
    sap__opt_format(&P->type->opts[i], P->opts, buf, size);
    return SAP_OK;
}

sap_status sap_precond_report(const sap_precond *P, int json, char *buf, size_t size)
{
    if (!P || !buf || size == 0) return SAP_ERR_INVALID;
    char opts[2048], rep[1024] = "";
    sap__opt_dump(P->type->opts, P->type->nopts, P->opts, json, opts, sizeof(opts));
    if (P->type->report && P->state == SAP_PC_NUMERIC) P->type->report(P, rep, sizeof(rep));
    if (!json) {
        snprintf(buf, size, "preconditioner %s (%s)\n%s%s%s", P->type->name, P->prec == SAP_FLOAT ? "float" : "double",
                 opts, rep, rep[0] && rep[strlen(rep) - 1] != '\n' ? "\n" : "");
        return SAP_OK;
    }
    /* the report as a JSON string */
    char esc[2100];
    size_t k = 0;
    for (const char *c = rep; *c && k + 7 < sizeof(esc); c++) {
        if (*c == '"' || *c == '\\') {
            esc[k++] = '\\';
            esc[k++] = *c;
        } else if (*c == '\n') {
            esc[k++] = '\\';
            esc[k++] = 'n';
        } else if ((unsigned char)*c >= 0x20) {
            esc[k++] = *c;
        }
    }
    esc[k] = '\0';
    snprintf(buf, size, "{\"type\": \"%s\", \"precision\": \"%s\", \"options\": %s, \"report\": \"%s\"}",
             P->type->name, P->prec == SAP_FLOAT ? "float" : "double", opts, esc);
    return SAP_OK;
}

static void free_work(sap_precond *P)
{
    const sap_backend_ops *ops = sap__ops(P->ctx);
    sap_vec *v[6] = {&P->wr, &P->wz, &P->hr, &P->hz, &P->br, &P->bz};
    for (int i = 0; i < 6; i++)
        if (v[i]->data) ops->vec_destroy(P->ctx, v[i]);
}

void sap_precond_destroy(sap_precond *P)
{
    if (!P) return;
    if (P->type && P->type->destroy) P->type->destroy(P);
    free_work(P);
    sap__free(P->ctx, P->opts);
    sap__free(P->ctx, P);
}

const char *sap_precond_name(const sap_precond *P) { return P && P->type ? P->type->name : "none"; }

sap_status sap_precond_set_precision(sap_precond *P, sap_precision precision)
{
    if (!P) return SAP_ERR_INVALID;
    if (precision != SAP_DOUBLE && precision != SAP_FLOAT)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "sap_precond_set_precision: unknown precision %d", (int)precision);
    if (precision != P->prec) {
        P->prec = precision;
        free_work(P);
        /* the numeric setup must be redone in the new precision */
        if (P->state > SAP_PC_SYMBOLIC) P->state = SAP_PC_SYMBOLIC;
    }
    return SAP_OK;
}

static sap_status check_matrix(sap_precond *P, const sap_csr *A, const char *fn)
{
    if (!A) return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "%s: matrix is NULL", fn);
    if (A->nrows != A->ncols)
        return SAP_ERROR(P->ctx, SAP_ERR_NOT_SQUARE, "%s (%s): the matrix is %lld x %lld, not square", fn, P->type->name,
                         (long long)A->nrows, (long long)A->ncols);
    return SAP_OK;
}

sap_status sap_precond_setup_symbolic(sap_precond *P, const sap_csr *A)
{
    if (!P) return SAP_ERR_INVALID;
    sap_status st = check_matrix(P, A, "sap_precond_setup_symbolic");
    if (st < 0) return st;
    double t0 = sap__wtime();
    if (P->n != A->nrows) free_work(P);
    P->n = A->nrows;
    P->state = SAP_PC_CREATED;
    if (P->type->setup_symbolic) {
        st = P->type->setup_symbolic(P, A);
        if (st < 0) return st;
    }
    P->state = SAP_PC_SYMBOLIC;
    P->time_symbolic = sap__wtime() - t0;
    return st;
}

sap_status sap_precond_setup_numeric(sap_precond *P, const sap_csr *A)
{
    if (!P) return SAP_ERR_INVALID;
    sap_status st = check_matrix(P, A, "sap_precond_setup_numeric");
    if (st < 0) return st;
    if (P->state < SAP_PC_SYMBOLIC || P->n != A->nrows) {
        /* lazy: the symbolic setup was not done (or was done for another size) */
        st = sap_precond_setup_symbolic(P, A);
        if (st < 0) return st;
    }
    double t0 = sap__wtime();
    P->state = SAP_PC_SYMBOLIC;
    if (P->type->setup_numeric) {
        sap_status s2 = P->type->setup_numeric(P, A);
        if (s2 < 0 || s2 == SAP_WARN_INTERRUPTED) return s2; /* not set up (a stop request) */
        if (s2 > st) st = s2;
    }
    P->state = SAP_PC_NUMERIC;
    P->time_numeric = sap__wtime() - t0;
    return st;
}

int sap__precond_has_setup_dev(const sap_precond *P)
{
    return P && (P->type->setup_dev || (!P->type->setup_symbolic && !P->type->setup_numeric));
}

sap_status sap__precond_setup_dev(sap_precond *P, const sap_dev_csr *A)
{
    if (!P) return SAP_ERR_INVALID;
    if (!A || A->n < 0) return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "preconditioner '%s': no device matrix", P->type->name);
    if (!sap__precond_has_setup_dev(P))
        return SAP_ERROR(P->ctx, SAP_ERR_UNSUPPORTED, "preconditioner '%s' is set up from the host matrix only",
                         P->type->name);
    double t0 = sap__wtime();
    if (P->n != A->n) free_work(P);
    P->n = A->n;
    P->state = SAP_PC_SYMBOLIC;
    sap_status st = SAP_OK;
    if (P->type->setup_dev) {
        st = P->type->setup_dev(P, A);
        if (st < 0 || st == SAP_WARN_INTERRUPTED) return st;
    }
    P->state = SAP_PC_NUMERIC;
    P->time_numeric = sap__wtime() - t0;
    return st;
}

int sap__precond_is_identity(const sap_precond *P) { return !P || P->type->identity; }

sap_status sap__precond_check_ready(const sap_precond *P, sap_int n)
{
    if (!P) return SAP_OK;
    if (P->state != SAP_PC_NUMERIC)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID,
                         "preconditioner '%s' is not set up (call sap_precond_setup_numeric first)", P->type->name);
    if (P->n != n)
        return SAP_ERROR(P->ctx, SAP_ERR_INVALID, "preconditioner '%s' was set up for n = %lld, not %lld", P->type->name,
                         (long long)P->n, (long long)n);
    return SAP_OK;
}

sap_status sap__precond_apply_vec(sap_precond *P, const sap_vec *r, sap_vec *z)
{
    if (!P || !r || !z) return SAP_ERR_INVALID;
    sap_context *ctx = P->ctx;
    sap_status st = sap__precond_check_ready(P, r->n);
    if (st < 0) return st;
    if (z->n != r->n) return SAP_ERROR(ctx, SAP_ERR_INVALID, "preconditioner apply: r and z differ in length");
    if (P->type->mixed_precision_apply || (r->prec == P->prec && z->prec == P->prec)) return P->type->apply(P, r, z);
    /* convert r into P's precision, apply there, convert back */
    const sap_backend_ops *ops = sap__ops(ctx);
    if (!P->wr.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->wr));
    if (!P->wz.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->wz));
    const sap_vec *rin = r;
    if (r->prec != P->prec) {
        SAP_TRY(ops->copy(ctx, r, &P->wr));
        rin = &P->wr;
    }
    sap_vec *zout = z->prec == P->prec ? z : &P->wz;
    SAP_TRY(P->type->apply(P, rin, zout));
    if (zout != z) SAP_TRY(ops->copy(ctx, zout, z));
cleanup:
    return st;
}

/* a block of n elements in P's precision in *v (recreated when its length differs) */
static sap_status work_block(sap_precond *P, sap_int n, sap_vec *v)
{
    const sap_backend_ops *ops = sap__ops(P->ctx);
    if (v->data && v->n == n) return SAP_OK;
    if (v->data) ops->vec_destroy(P->ctx, v);
    memset(v, 0, sizeof(*v));
    return ops->vec_create(P->ctx, n, P->prec, v);
}

sap_status sap__precond_apply_block(sap_precond *P, sap_int k, const sap_vec *r, sap_vec *z)
{
    if (!P || !r || !z) return SAP_ERR_INVALID;
    sap_context *ctx = P->ctx;
    sap_status st = sap__precond_check_ready(P, P->n);
    if (st < 0) return st;
    const sap_int n = P->n;
    if (k < 1 || r->n != k * n || z->n != r->n)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "preconditioner apply: %lld columns of length %lld do not match "
                                               "blocks of %lld and %lld", (long long)k, (long long)n,
                         (long long)r->n, (long long)z->n);
    if (!P->type->apply_block || k == 1) {
        for (sap_int c = 0; c < k; c++) {
            const sap_vec rc = sap__vec_column(r, n, c);
            sap_vec zc = sap__vec_column(z, n, c);
            SAP_TRY(sap__precond_apply_vec(P, &rc, &zc));
        }
        return SAP_OK;
    }
    if (P->type->mixed_precision_apply || (r->prec == P->prec && z->prec == P->prec))
        return P->type->apply_block(P, k, r, z);
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_vec *rin = r;
    if (r->prec != P->prec) {
        SAP_TRY(work_block(P, r->n, &P->br));
        SAP_TRY(ops->copy(ctx, r, &P->br));
        rin = &P->br;
    }
    sap_vec *zout = z;
    if (z->prec != P->prec) {
        SAP_TRY(work_block(P, z->n, &P->bz));
        zout = &P->bz;
    }
    SAP_TRY(P->type->apply_block(P, k, rin, zout));
    if (zout != z) SAP_TRY(ops->copy(ctx, zout, z));
cleanup:
    return st;
}

sap_status sap_precond_apply(sap_precond *P, const double *r, double *z)
{
    if (!P) return SAP_ERR_INVALID;
    sap_context *ctx = P->ctx;
    sap_status st = sap__precond_check_ready(P, P->n);
    if (st < 0) return st;
    if (P->n > 0 && (!r || !z)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_precond_apply: NULL vector");
    const sap_backend_ops *ops = sap__ops(ctx);
    if (!P->hr.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->hr));
    if (!P->hz.data) SAP_TRY(ops->vec_create(ctx, P->n, P->prec, &P->hz));
    SAP_TRY(ops->vec_upload(ctx, &P->hr, r));
    SAP_TRY(sap__precond_apply_vec(P, &P->hr, &P->hz));
    SAP_TRY(ops->vec_download(ctx, &P->hz, z));
cleanup:
    return st;
}
