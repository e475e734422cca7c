/* _sapmodule.c -- the C extension of the Python package sap: a thin layer over the C
 * library's public API (include/sap.h) through the Python C API (C11, no NumPy headers:
 * arrays arrive through the buffer protocol, so NumPy arrays are read in place).
 *
 * Errors: a library error (status < 0) raises the exception the Python side's factory
 * (_set_error_factory) builds from (status, name, message); warnings (status > 0) are
 * returned as the status for the Python side to report.  The GIL is released around
 * every call into the library that does work (setup, solve, refactor, reorder, reads). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sap.h"

static PyObject *error_factory; /* callable(status, name, message) -> exception */

/* Raises the library error 'st' with message 'msg' (ctx's last error when msg is NULL). */
static PyObject *raise_status(sap_status st, const char *msg)
{
    if (!msg || !*msg) msg = sap_status_string(st);
    if (!error_factory) {
        PyErr_Format(PyExc_RuntimeError, "%s: %s", sap_status_name(st), msg);
        return NULL;
    }
    PyObject *exc = PyObject_CallFunction(error_factory, "iss", (int)st, sap_status_name(st), msg);
    if (!exc) return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *set_error_factory(PyObject *self, PyObject *f)
{
    if (!PyCallable_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
        return NULL;
    }
    Py_XSETREF(error_factory, Py_NewRef(f));
    Py_RETURN_NONE;
}

/* A context for one object or call: backend name ("auto", "cpu", "cuda") and threads. */
static sap_context *make_context(const char *backend, int threads)
{
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    char msg[256];
    sap_status st = sap_backend_parse(backend ? backend : "auto", &cfg.backend);
    if (st != SAP_OK) {
        snprintf(msg, sizeof msg, "unknown backend '%s' (auto, cpu or cuda)", backend);
        raise_status(SAP_ERR_INVALID, msg);
        return NULL;
    }
    if (threads < 0) {
        raise_status(SAP_ERR_INVALID, "threads must be >= 0 (0: the OpenMP default)");
        return NULL;
    }
    cfg.threads = threads;
    cfg.print_level = SAP_PRINT_SILENT; /* errors are raised, warnings issued */
    sap_context *ctx = NULL;
    st = sap_context_create(&ctx, &cfg);
    if (st != SAP_OK) {
        snprintf(msg, sizeof msg, "cannot create a '%s' context: %s", backend, sap_status_string(st));
        raise_status(st, msg);
        return NULL;
    }
    return ctx;
}

/* Raises st with ctx's last error (ctx may be NULL). */
static PyObject *raise_ctx(sap_status st, const sap_context *ctx)
{
    return raise_status(st, ctx ? sap_context_last_error(ctx) : NULL);
}

/* ---- buffers ------------------------------------------------------------------------ */

/* A C-contiguous buffer of 'itemsize'-byte items of 'fmt' kind ('q'/'l' int64, 'd').  n: the
 * items expected (-1: any).  Fills *view; raises and returns -1 on a mismatch. */
static int get_buffer(PyObject *obj, Py_buffer *view, char kind, Py_ssize_t n, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    int ok = 0;
    if (kind == 'd') ok = (strcmp(f, "d") == 0 && view->itemsize == 8);
    else ok = ((strcmp(f, "q") == 0 || strcmp(f, "l") == 0) && view->itemsize == 8);
    if (!ok) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous %s buffer, got format '%s'", what,
                     kind == 'd' ? "float64" : "int64", view->format ? view->format : "B");
        return -1;
    }
    if (n >= 0 && view->len / 8 != n) {
        Py_ssize_t got = view->len / 8;
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: expected %zd entries, got %zd", what, n, got);
        return -1;
    }
    return 0;
}

/* A CSR over user arrays: a view of them (canonical = 1, checked by sap_csr_check) or a
 * canonical copy (sap_csr_from_arrays: sorts, sums duplicates).  *owned says which. */
typedef struct csr_in {
    Py_buffer rp, ci, va;
    int have;
    sap_csr view;
    sap_csr *owned;
    const sap_csr *A;
} csr_in;

static void csr_in_release(csr_in *c)
{
    if (c->owned) sap_csr_destroy(c->owned);
    c->owned = NULL;
    if (c->have) {
        PyBuffer_Release(&c->rp);
        PyBuffer_Release(&c->ci);
        PyBuffer_Release(&c->va);
    }
    c->have = 0;
}

static int csr_in_get(csr_in *c, sap_context *ctx, Py_ssize_t nrows, Py_ssize_t ncols, PyObject *indptr,
                      PyObject *indices, PyObject *data, int canonical)
{
    memset(c, 0, sizeof *c);
    if (nrows < 0 || ncols < 0) {
        raise_status(SAP_ERR_INVALID, "matrix dimensions must be >= 0");
        return -1;
    }
    if (get_buffer(indptr, &c->rp, 'q', nrows + 1, 0, "indptr") != 0) return -1;
    if (get_buffer(indices, &c->ci, 'q', -1, 0, "indices") != 0) {
        PyBuffer_Release(&c->rp);
        return -1;
    }
    if (get_buffer(data, &c->va, 'd', c->ci.len / 8, 0, "data") != 0) {
        PyBuffer_Release(&c->rp);
        PyBuffer_Release(&c->ci);
        return -1;
    }
    c->have = 1;
    const sap_int *rp = c->rp.buf;
    sap_int nnz = (sap_int)(c->ci.len / 8);
    if (rp[nrows] != nnz) {
        char msg[160];
        snprintf(msg, sizeof msg, "indptr[%zd] = %lld but there are %lld column indices", nrows,
                 (long long)rp[nrows], (long long)nnz);
        csr_in_release(c);
        raise_status(SAP_ERR_INVALID, msg);
        return -1;
    }
    sap_status st;
    if (canonical) {
        c->view.ctx = ctx;
        c->view.nrows = nrows;
        c->view.ncols = ncols;
        c->view.nnz = nnz;
        c->view.rowptr = (sap_int *)c->rp.buf;
        c->view.colind = (sap_int *)c->ci.buf;
        c->view.val = (double *)c->va.buf;
        Py_BEGIN_ALLOW_THREADS
        st = sap_csr_check(&c->view);
        Py_END_ALLOW_THREADS
        if (st == SAP_OK) {
            c->A = &c->view;
            return 0;
        }
        sap_context_clear_error(ctx); /* not canonical after all: copy */
    }
    Py_BEGIN_ALLOW_THREADS
    st = sap_csr_from_arrays(ctx, nrows, ncols, c->rp.buf, c->ci.buf, c->va.buf, &c->owned);
    Py_END_ALLOW_THREADS
    if (st != SAP_OK) {
        raise_ctx(st, ctx);
        csr_in_release(c);
        return -1;
    }
    c->A = c->owned;
    return 0;
}

/* ---- Csr: a matrix the library made (generators, Matrix Market) ----------------------- */

typedef struct {
    PyObject_HEAD
    sap_context *ctx;
    sap_csr *A;
    int status; /* of the read (a warning such as SAP_WARN_MM_UPPER, else 0) */
    char message[512];
} CsrObject;

static void Csr_dealloc(CsrObject *self)
{
    if (self->A) sap_csr_destroy(self->A);
    if (self->ctx) sap_context_destroy(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Csr_export(CsrObject *self, PyObject *args)
{
    PyObject *o_rp, *o_ci, *o_va;
    if (!PyArg_ParseTuple(args, "OOO", &o_rp, &o_ci, &o_va)) return NULL;
    Py_buffer rp, ci, va;
    if (get_buffer(o_rp, &rp, 'q', self->A->nrows + 1, 1, "indptr") != 0) return NULL;
    if (get_buffer(o_ci, &ci, 'q', self->A->nnz, 1, "indices") != 0) {
        PyBuffer_Release(&rp);
        return NULL;
    }
    if (get_buffer(o_va, &va, 'd', self->A->nnz, 1, "data") != 0) {
        PyBuffer_Release(&rp);
        PyBuffer_Release(&ci);
        return NULL;
    }
    memcpy(rp.buf, self->A->rowptr, (size_t)(self->A->nrows + 1) * sizeof(sap_int));
    memcpy(ci.buf, self->A->colind, (size_t)self->A->nnz * sizeof(sap_int));
    memcpy(va.buf, self->A->val, (size_t)self->A->nnz * sizeof(double));
    PyBuffer_Release(&rp);
    PyBuffer_Release(&ci);
    PyBuffer_Release(&va);
    Py_RETURN_NONE;
}

static PyObject *Csr_get_shape(CsrObject *self, void *unused)
{
    return Py_BuildValue("(LL)", (long long)self->A->nrows, (long long)self->A->ncols);
}
static PyObject *Csr_get_nnz(CsrObject *self, void *unused) { return PyLong_FromLongLong(self->A->nnz); }
static PyObject *Csr_get_status(CsrObject *self, void *unused)
{
    return Py_BuildValue("(is)", self->status, self->message);
}

static PyMethodDef Csr_methods[] = {
    {"export", (PyCFunction)Csr_export, METH_VARARGS,
     "export(indptr, indices, data): copies the CSR arrays into writable int64/int64/float64 buffers"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Csr_getset[] = {{"shape", (getter)Csr_get_shape, NULL, "(nrows, ncols)", NULL},
                                   {"nnz", (getter)Csr_get_nnz, NULL, "stored entries", NULL},
                                   {"status", (getter)Csr_get_status, NULL, "(warning status, message)", NULL},
                                   {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject CsrType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sap._sap.Csr",
    .tp_basicsize = sizeof(CsrObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A CSR matrix made by the library (read with export()).",
    .tp_dealloc = (destructor)Csr_dealloc,
    .tp_methods = Csr_methods,
    .tp_getset = Csr_getset,
};

/* load(spec_or_path, backend): a generator spec ("gen:..." or "banded:N=...") or a Matrix
 * Market file through sap_matrix_load. */
static PyObject *py_load(PyObject *self, PyObject *args)
{
    const char *what;
    if (!PyArg_ParseTuple(args, "s", &what)) return NULL;
    sap_context *ctx = make_context("cpu", 0);
    if (!ctx) return NULL;
    sap_csr *A = NULL;
    sap_status st;
    Py_BEGIN_ALLOW_THREADS
    st = sap_matrix_load(ctx, what, NULL, &A);
    Py_END_ALLOW_THREADS
    if (st < 0 || !A) {
        raise_ctx(st < 0 ? st : SAP_ERR_INVALID, ctx);
        if (A) sap_csr_destroy(A);
        sap_context_destroy(ctx);
        return NULL;
    }
    CsrObject *o = PyObject_New(CsrObject, &CsrType);
    if (!o) {
        sap_csr_destroy(A);
        sap_context_destroy(ctx);
        return NULL;
    }
    o->ctx = ctx;
    o->A = A;
    o->status = (int)st;
    snprintf(o->message, sizeof o->message, "%s", st > 0 ? sap_context_last_error(ctx) : "");
    return (PyObject *)o;
}

/* ---- info and reorder ------------------------------------------------------------------- */

#define SET_ITEM(d, key, value)                                                                   \
    do {                                                                                          \
        PyObject *v_ = (value);                                                                   \
        if (!v_ || PyDict_SetItemString((d), (key), v_) != 0) {                                   \
            Py_XDECREF(v_);                                                                       \
            Py_DECREF(d);                                                                         \
            return NULL;                                                                          \
        }                                                                                         \
        Py_DECREF(v_);                                                                            \
    } while (0)

static PyObject *stats_dict(const sap_matrix_stats *s)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    SET_ITEM(d, "nrows", PyLong_FromLongLong(s->nrows));
    SET_ITEM(d, "ncols", PyLong_FromLongLong(s->ncols));
    SET_ITEM(d, "nnz", PyLong_FromLongLong(s->nnz));
    SET_ITEM(d, "half_bandwidth", PyLong_FromLongLong(s->half_bandwidth));
    SET_ITEM(d, "lower_bandwidth", PyLong_FromLongLong(s->lower_bandwidth));
    SET_ITEM(d, "upper_bandwidth", PyLong_FromLongLong(s->upper_bandwidth));
    SET_ITEM(d, "empty_rows", PyLong_FromLongLong(s->empty_rows));
    SET_ITEM(d, "max_row_nnz", PyLong_FromLongLong(s->max_row_nnz));
    SET_ITEM(d, "mean_row_nnz", PyFloat_FromDouble(s->mean_row_nnz));
    SET_ITEM(d, "mean_row_width", PyFloat_FromDouble(s->mean_row_width));
    SET_ITEM(d, "structurally_symmetric", PyBool_FromLong(s->structurally_symmetric));
    SET_ITEM(d, "numerically_symmetric", PyBool_FromLong(s->numerically_symmetric));
    SET_ITEM(d, "symmetry_deviation", PyFloat_FromDouble(s->symmetry_deviation));
    SET_ITEM(d, "zero_diagonal", PyLong_FromLongLong(s->zero_diagonal));
    SET_ITEM(d, "diag_dominance", PyFloat_FromDouble(s->diag_dominance));
    SET_ITEM(d, "dominant_rows", PyLong_FromLongLong(s->dominant_rows));
    SET_ITEM(d, "spd_estimate", PyBool_FromLong(s->spd_estimate));
    SET_ITEM(d, "norm_one", PyFloat_FromDouble(s->norm_one));
    SET_ITEM(d, "norm_inf", PyFloat_FromDouble(s->norm_inf));
    SET_ITEM(d, "norm_fro", PyFloat_FromDouble(s->norm_fro));
    SET_ITEM(d, "norm_max", PyFloat_FromDouble(s->norm_max));
    return d;
}

/* info(nrows, ncols, indptr, indices, data, canonical) -> dict (sap_csr_stats) */
static PyObject *py_info(PyObject *self, PyObject *args)
{
    Py_ssize_t nrows, ncols;
    PyObject *rp, *ci, *va;
    int canonical;
    if (!PyArg_ParseTuple(args, "nnOOOp", &nrows, &ncols, &rp, &ci, &va, &canonical)) return NULL;
    sap_context *ctx = make_context("cpu", 0);
    if (!ctx) return NULL;
    csr_in c;
    if (csr_in_get(&c, ctx, nrows, ncols, rp, ci, va, canonical) != 0) {
        sap_context_destroy(ctx);
        return NULL;
    }
    sap_matrix_stats s;
    sap_status st;
    Py_BEGIN_ALLOW_THREADS
    st = sap_csr_stats(c.A, &s);
    Py_END_ALLOW_THREADS
    PyObject *r = st < 0 ? raise_ctx(st, ctx) : stats_dict(&s);
    csr_in_release(&c);
    sap_context_destroy(ctx);
    return r;
}

static PyObject *int_bytes(const sap_int *p, sap_int n)
{
    if (!p) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)(n * (sap_int)sizeof(sap_int)));
}
static PyObject *double_bytes(const double *p, sap_int n)
{
    if (!p) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)(n * (sap_int)sizeof(double)));
}

/* The dict of a reorder result (NULL with an exception set on failure). */
static PyObject *reorder_dict(const sap_reorder_result *res, sap_status st)
{
    static const char *names[SAP_REORDER_STAGES] = {"original", "db", "cm", "drop", "third"};
    PyObject *stages = PyDict_New();
    if (!stages) return NULL;
    for (int s = 0; s < SAP_REORDER_STAGES; s++) {
        const sap_reorder_stage *g = &res->stage[s];
        if (!g->done) continue;
        PyObject *e = Py_BuildValue("{s:L,s:L,s:d,s:d,s:d,s:L,s:d}", "K", (long long)g->K, "nnz",
                                    (long long)g->nnz, "mean_row_width", g->mean_row_width, "band_fill",
                                    g->band_fill, "diag_dominance", g->diag_dominance, "zero_diagonal",
                                    (long long)g->zero_diagonal, "time", g->time);
        if (!e || PyDict_SetItemString(stages, names[s], e) != 0) {
            Py_XDECREF(e);
            Py_DECREF(stages);
            return NULL;
        }
        Py_DECREF(e);
    }
    PyObject *d = PyDict_New();
    if (!d) {
        Py_DECREF(stages);
        return NULL;
    }
    SET_ITEM(d, "stages", stages);
    SET_ITEM(d, "row_perm", int_bytes(res->row_perm, res->n));
    SET_ITEM(d, "col_perm", int_bytes(res->col_perm, res->n));
    SET_ITEM(d, "row_scale", double_bytes(res->row_scale, res->n));
    SET_ITEM(d, "col_scale", double_bytes(res->col_scale, res->n));
    SET_ITEM(d, "K_drop", PyLong_FromLongLong(res->K_drop));
    SET_ITEM(d, "kept_fraction", PyFloat_FromDouble(res->kept_fraction));
    SET_ITEM(d, "partitions", PyLong_FromLongLong(res->P));
    SET_ITEM(d, "offsets", int_bytes(res->offsets, res->P + 1));
    SET_ITEM(d, "Ki", int_bytes(res->Ki, res->P));
    SET_ITEM(d, "time", PyFloat_FromDouble(res->time_total));
    SET_ITEM(d, "status", PyLong_FromLong(st));
    return d;
}

/* reorder(n, indptr, indices, data, canonical, db, scale, cm, drop, partitions) -> dict with
 * the permutations and scalings as bytes (int64 / float64) and the per-stage bandwidths. */
static PyObject *py_reorder(PyObject *self, PyObject *args)
{
    Py_ssize_t n;
    PyObject *rp, *ci, *va;
    int canonical, db, scale, cm;
    double drop;
    Py_ssize_t partitions;
    if (!PyArg_ParseTuple(args, "nOOOpiiidn", &n, &rp, &ci, &va, &canonical, &db, &scale, &cm, &drop, &partitions))
        return NULL;
    sap_context *ctx = make_context("cpu", 0);
    if (!ctx) return NULL;
    csr_in c;
    if (csr_in_get(&c, ctx, n, n, rp, ci, va, canonical) != 0) {
        sap_context_destroy(ctx);
        return NULL;
    }
    sap_reorder_options opt;
    sap_reorder_options_init(&opt);
    opt.db = (sap_db_mode)db;
    opt.scale = scale;
    opt.cm = cm;
    opt.drop_delta = drop;
    opt.partitions = partitions;
    sap_reorder_result *res = NULL;
    sap_status st;
    Py_BEGIN_ALLOW_THREADS
    st = sap_reorder(c.A, &opt, &res);
    Py_END_ALLOW_THREADS
    csr_in_release(&c);
    if (st < 0 || !res) {
        raise_ctx(st < 0 ? st : SAP_ERR_INVALID, ctx);
        sap_context_destroy(ctx);
        return NULL;
    }
    PyObject *d = reorder_dict(res, st);
    sap_reorder_result_destroy(res);
    sap_context_destroy(ctx);
    return d;
}

/* ---- Solver ------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    sap_context *ctx;
    sap_solver *S;
    sap_int n, nnz;
    PyThread_type_lock lock; /* one library call at a time on this solver */
} SolverObject;

static PyTypeObject SolverType;

static void Solver_dealloc(SolverObject *self)
{
    if (self->S) sap_solver_destroy(self->S);
    if (self->ctx) sap_context_destroy(self->ctx);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* opt from a sequence of (name, value) strings for sap_solver_options_set; -1 raised. */
static int parse_options(PyObject *options, sap_solver_options *opt)
{
    sap_solver_options_init(opt);
    PyObject *seq = PySequence_Fast(options, "options must be a sequence of (name, value) pairs");
    if (!seq) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *name, *value;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss", &name, &value)) {
            Py_DECREF(seq);
            return -1;
        }
        char msg[512];
        sap_status st = sap_solver_options_set_msg(opt, name, value, msg, sizeof msg);
        if (st != SAP_OK) {
            Py_DECREF(seq);
            raise_status(st, msg);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* Solver(nrows, ncols, indptr, indices, data, canonical, options, backend, threads)
 * options: a sequence of (name, value) strings for sap_solver_options_set. */
static int Solver_init(SolverObject *self, PyObject *args, PyObject *kw)
{
    Py_ssize_t nrows, ncols;
    PyObject *rp, *ci, *va, *options;
    int canonical, threads;
    const char *backend;
    if (!PyArg_ParseTuple(args, "nnOOOpOsi", &nrows, &ncols, &rp, &ci, &va, &canonical, &options, &backend,
                          &threads))
        return -1;
    if (self->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Solver already initialized");
        return -1;
    }
    sap_solver_options opt;
    if (parse_options(options, &opt) != 0) return -1;
    self->ctx = make_context(backend, threads);
    if (!self->ctx) return -1;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        PyErr_NoMemory();
        return -1;
    }
    csr_in c;
    if (csr_in_get(&c, self->ctx, nrows, ncols, rp, ci, va, canonical) != 0) return -1;
    sap_status st;
    Py_BEGIN_ALLOW_THREADS
    st = sap_solver_create(self->ctx, c.A, &opt, &self->S);
    Py_END_ALLOW_THREADS
    self->nnz = (sap_int)(c.ci.len / 8);
    csr_in_release(&c);
    if (st < 0) {
        raise_ctx(st, self->ctx);
        return -1;
    }
    self->n = nrows;
    return 0;
}

static int solver_ready(SolverObject *self)
{
    if (!self->S) {
        PyErr_SetString(PyExc_RuntimeError, "Solver is not initialized");
        return 0;
    }
    return 1;
}

/* Runs a library call without the GIL, serialised on the solver's lock. */
#define SOLVER_CALL(self, st, call)                                                               \
    do {                                                                                          \
        Py_BEGIN_ALLOW_THREADS                                                                    \
        PyThread_acquire_lock((self)->lock, WAIT_LOCK);                                           \
        sap_context_clear_error((self)->ctx);                                                     \
        (st) = (call);                                                                            \
        PyThread_release_lock((self)->lock);                                                      \
        Py_END_ALLOW_THREADS                                                                      \
    } while (0)

static PyObject *status_result(SolverObject *self, sap_status st)
{
    if (st < 0) return raise_ctx(st, self->ctx);
    return Py_BuildValue("(is)", (int)st, st > 0 ? sap_context_last_error(self->ctx) : "");
}

static PyObject *Solver_setup(SolverObject *self, PyObject *unused)
{
    if (!solver_ready(self)) return NULL;
    sap_status st;
    SOLVER_CALL(self, st, sap_solver_setup(self->S));
    return status_result(self, st);
}

/* refactor(values): float64 buffer of nnz values in the CSR order given at creation. */
static PyObject *Solver_refactor(SolverObject *self, PyObject *arg)
{
    if (!solver_ready(self)) return NULL;
    Py_buffer v;
    if (get_buffer(arg, &v, 'd', -1, 0, "values") != 0) return NULL;
    sap_solver_stats s;
    sap_solver_get_stats(self->S, &s);
    if (v.len / 8 != s.nnz) {
        PyBuffer_Release(&v);
        char msg[160];
        snprintf(msg, sizeof msg, "refactor: expected %lld values (the matrix's stored entries), got %zd",
                 (long long)s.nnz, v.len / 8);
        return raise_status(SAP_ERR_INVALID, msg);
    }
    sap_status st;
    SOLVER_CALL(self, st, sap_solver_refactor(self->S, v.buf));
    PyBuffer_Release(&v);
    return status_result(self, st);
}

/* solve(B, X, nrhs): B and X hold nrhs columns of length n one after another (column-major);
 * X holds the initial guess and receives the solution. */
static PyObject *Solver_solve(SolverObject *self, PyObject *args)
{
    PyObject *ob, *ox;
    Py_ssize_t nrhs;
    if (!PyArg_ParseTuple(args, "OOn", &ob, &ox, &nrhs)) return NULL;
    if (!solver_ready(self)) return NULL;
    if (nrhs < 1) return raise_status(SAP_ERR_INVALID, "solve: at least one right-hand side is needed");
    Py_buffer b, x;
    if (get_buffer(ob, &b, 'd', self->n * nrhs, 0, "b") != 0) return NULL;
    if (get_buffer(ox, &x, 'd', self->n * nrhs, 1, "x") != 0) {
        PyBuffer_Release(&b);
        return NULL;
    }
    sap_status st;
    sap_int n = self->n;
    if (nrhs == 1) SOLVER_CALL(self, st, sap_solver_solve(self->S, b.buf, x.buf));
    else SOLVER_CALL(self, st, sap_solver_solve_many(self->S, nrhs, b.buf, n, x.buf, n));
    PyBuffer_Release(&b);
    PyBuffer_Release(&x);
    return status_result(self, st);
}

/* _bench_solve(b, x, reps[, x0]) -> (status, seconds): reps calls of sap_solver_solve from C
 * (x zeroed before each, as Solver.solve starts from 0, or set to x0, as Solver.solve(b, x0)
 * does), timed inside the extension: the C API's cost, against which
 * bench/python_overhead.py measures the Python layer's. */
static PyObject *Solver_bench_solve(SolverObject *self, PyObject *args)
{
    PyObject *ob, *ox, *ox0 = NULL;
    Py_ssize_t reps;
    if (!PyArg_ParseTuple(args, "OOn|O", &ob, &ox, &reps, &ox0)) return NULL;
    if (!solver_ready(self)) return NULL;
    Py_buffer b, x, x0;
    x0.buf = NULL;
    if (get_buffer(ob, &b, 'd', self->n, 0, "b") != 0) return NULL;
    if (get_buffer(ox, &x, 'd', self->n, 1, "x") != 0) {
        PyBuffer_Release(&b);
        return NULL;
    }
    if (ox0 && ox0 != Py_None && get_buffer(ox0, &x0, 'd', self->n, 0, "x0") != 0) {
        PyBuffer_Release(&b);
        PyBuffer_Release(&x);
        return NULL;
    }
    sap_status st = SAP_OK;
    struct timespec t0, t1;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    timespec_get(&t0, TIME_UTC);
    for (Py_ssize_t r = 0; r < reps && st >= 0; r++) {
        if (x0.buf) memcpy(x.buf, x0.buf, (size_t)self->n * sizeof(double));
        else memset(x.buf, 0, (size_t)self->n * sizeof(double));
        st = sap_solver_solve(self->S, b.buf, x.buf);
    }
    timespec_get(&t1, TIME_UTC);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    PyBuffer_Release(&x);
    if (x0.buf) PyBuffer_Release(&x0);
    if (st < 0) return raise_ctx(st, self->ctx);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return Py_BuildValue("(id)", (int)st, s);
}

/* The device-array entry points (CuPy): device pointers arrive as integers. */

/* solve_device(b_ptr, x_ptr, nrhs): nrhs columns of length n one after another in device
 * memory (column-major; sap_solver_solve_many_device: the band methods solve the columns
 * after the first in lockstep); x holds the initial guess and receives the solution. */
static PyObject *Solver_solve_device(SolverObject *self, PyObject *args)
{
    unsigned long long pb, px;
    Py_ssize_t nrhs;
    if (!PyArg_ParseTuple(args, "KKn", &pb, &px, &nrhs)) return NULL;
    if (!solver_ready(self)) return NULL;
    if (nrhs < 1) return raise_status(SAP_ERR_INVALID, "solve: at least one right-hand side is needed");
    const double *b = (const double *)(uintptr_t)pb;
    double *x = (double *)(uintptr_t)px;
    sap_status st;
    sap_int n = self->n;
    if (nrhs == 1) SOLVER_CALL(self, st, sap_solver_solve_device(self->S, b, x));
    else SOLVER_CALL(self, st, sap_solver_solve_many_device(self->S, nrhs, b, n, x, n));
    return status_result(self, st);
}

/* refactor_device(values_ptr): nnz float64 values in device memory. */
static PyObject *Solver_refactor_device(SolverObject *self, PyObject *arg)
{
    if (!solver_ready(self)) return NULL;
    unsigned long long pv = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    sap_status st;
    SOLVER_CALL(self, st, sap_solver_refactor_device(self->S, (const double *)(uintptr_t)pv));
    return status_result(self, st);
}

/* _bench_solve_device(b_ptr, x_ptr, reps) -> (status, seconds): reps calls of
 * sap_solver_solve_device from C, timed inside the extension (x as it is: the caller gives
 * the same start for both sides of the comparison). */
static PyObject *Solver_bench_solve_device(SolverObject *self, PyObject *args)
{
    unsigned long long pb, px;
    Py_ssize_t reps;
    if (!PyArg_ParseTuple(args, "KKn", &pb, &px, &reps)) return NULL;
    if (!solver_ready(self)) return NULL;
    sap_status st = SAP_OK;
    struct timespec t0, t1;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    timespec_get(&t0, TIME_UTC);
    for (Py_ssize_t r = 0; r < reps && st >= 0; r++)
        st = sap_solver_solve_device(self->S, (const double *)(uintptr_t)pb, (double *)(uintptr_t)px);
    timespec_get(&t1, TIME_UTC);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (st < 0) return raise_ctx(st, self->ctx);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return Py_BuildValue("(id)", (int)st, sec);
}

/* device_solver(n, nnz, indptr_ptr, indices_ptr, data_ptr, options, backend, threads): a
 * Solver over a CSR in device memory (int64 indices, float64 values), read during the call
 * only (sap_solver_create_device). */
static PyObject *py_device_solver(PyObject *mod, PyObject *args)
{
    Py_ssize_t n, nnz;
    unsigned long long prp, pci, pva;
    PyObject *options;
    const char *backend;
    int threads;
    if (!PyArg_ParseTuple(args, "nnKKKOsi", &n, &nnz, &prp, &pci, &pva, &options, &backend, &threads)) return NULL;
    sap_solver_options opt;
    if (parse_options(options, &opt) != 0) return NULL;
    SolverObject *self = (SolverObject *)PyType_GenericNew(&SolverType, NULL, NULL);
    if (!self) return NULL;
    self->ctx = make_context(backend, threads);
    self->lock = self->ctx ? PyThread_allocate_lock() : NULL;
    if (!self->ctx || !self->lock) {
        if (self->ctx && !self->lock) PyErr_NoMemory();
        Py_DECREF(self);
        return NULL;
    }
    sap_status st;
    Py_BEGIN_ALLOW_THREADS
    st = sap_solver_create_device(self->ctx, (sap_int)n, (sap_int)nnz, (const sap_int *)(uintptr_t)prp,
                                  (const sap_int *)(uintptr_t)pci, (const double *)(uintptr_t)pva, &opt, &self->S);
    Py_END_ALLOW_THREADS
    if (st < 0) {
        raise_ctx(st, self->ctx);
        Py_DECREF(self);
        return NULL;
    }
    self->n = (sap_int)n;
    self->nnz = (sap_int)nnz;
    return (PyObject *)self;
}

static PyObject *Solver_stats(SolverObject *self, PyObject *unused)
{
    if (!solver_ready(self)) return NULL;
    sap_solver_stats s;
    sap_context_stats cs;
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    sap_solver_device_stats ds;
    sap_status st = sap_solver_get_stats(self->S, &s);
    if (st == SAP_OK) st = sap_context_get_stats(self->ctx, &cs);
    if (st == SAP_OK) st = sap_solver_get_device_stats(self->S, &ds);
    PyThread_release_lock(self->lock);
    if (st != SAP_OK) return raise_ctx(st, self->ctx);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    SET_ITEM(d, "n", PyLong_FromLongLong(s.n));
    SET_ITEM(d, "nnz", PyLong_FromLongLong(s.nnz));
    SET_ITEM(d, "backend", PyUnicode_FromString(sap_backend_name(sap_context_backend(self->ctx))));
    SET_ITEM(d, "device", PyUnicode_FromString(sap_context_device_name(self->ctx)));
    SET_ITEM(d, "method", PyUnicode_FromString(sap_solver_method_name(s.method)));
    SET_ITEM(d, "reason", PyUnicode_FromString(s.reason));
    SET_ITEM(d, "spd", PyBool_FromLong(s.spd));
    SET_ITEM(d, "db_used", PyBool_FromLong(s.db_used));
    SET_ITEM(d, "scaled", PyBool_FromLong(s.scaled));
    SET_ITEM(d, "cm_used", PyBool_FromLong(s.cm_used));
    SET_ITEM(d, "third_stage_used", PyBool_FromLong(s.third_stage_used));
    SET_ITEM(d, "K_original", PyLong_FromLongLong(s.K_original));
    SET_ITEM(d, "K_cm", PyLong_FromLongLong(s.K_cm));
    SET_ITEM(d, "K_drop", PyLong_FromLongLong(s.K_drop));
    SET_ITEM(d, "K_max", PyLong_FromLongLong(s.K_max));
    SET_ITEM(d, "kept_fraction", PyFloat_FromDouble(s.kept_fraction));
    SET_ITEM(d, "partitions", PyLong_FromLongLong(s.partitions));
    SET_ITEM(d, "factor_precision", PyUnicode_FromString(s.factor_precision == SAP_FLOAT ? "float" : "double"));
    SET_ITEM(d, "krylov", PyUnicode_FromString(sap_krylov_name(s.krylov_type)));
    SET_ITEM(d, "on_host", PyBool_FromLong(s.on_host));
    SET_ITEM(d, "boosted_pivots", PyLong_FromLongLong(s.boosted_pivots));
    SET_ITEM(d, "dropped_entries", PyLong_FromLongLong(s.dropped_entries));
    SET_ITEM(d, "memory_estimate", PyLong_FromLongLong(s.memory_estimate));
    SET_ITEM(d, "iterations", PyFloat_FromDouble(s.iterations));
    SET_ITEM(d, "relative_residual", PyFloat_FromDouble(s.relative_residual));
    SET_ITEM(d, "nrhs", PyLong_FromLongLong(s.nrhs));
    SET_ITEM(d, "status", PyUnicode_FromString(sap_status_name(s.status)));
    PyObject *t = Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "stats",
                                s.time_stats, "probe", s.time_probe, "structure", s.time_structure, "analysis",
                                s.time_analysis, "db", s.time_db, "cm",
                                s.time_cm, "drop", s.time_drop, "third", s.time_third, "transfer",
                                s.time_transfer, "asmbl", s.time_asmbl, "lu", s.time_lu, "spk", s.time_spk,
                                "lurdcd", s.time_lurdcd, "kry", s.time_kry, "setup", s.time_setup, "solve",
                                s.time_solve);
    SET_ITEM(d, "times", t);
    PyObject *tried = PyList_New(0);
    if (!tried) {
        Py_DECREF(d);
        return NULL;
    }
    for (int i = 0; i < s.ntries && i < SAP_SOLVER_MAX_TRIES; i++) {
        const sap_solver_try *y = &s.tried[i];
        PyObject *e = Py_BuildValue("{s:s,s:L,s:L,s:s,s:d,s:d,s:s}", "method", sap_solver_method_name(y->method),
                                    "partitions", (long long)y->partitions, "half_bandwidth",
                                    (long long)y->half_bandwidth, "status", sap_status_name(y->status),
                                    "iterations", y->iterations, "time", y->time, "note", y->note);
        if (!e || PyList_Append(tried, e) != 0) {
            Py_XDECREF(e);
            Py_DECREF(tried);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(e);
    }
    SET_ITEM(d, "tried", tried);
    PyObject *tr = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L}", "h2d_bytes", (long long)cs.h2d_bytes, "d2h_bytes",
                                 (long long)cs.d2h_bytes, "h2d_copies", (long long)cs.h2d_copies, "d2h_copies",
                                 (long long)cs.d2h_copies, "host_bytes_peak", (long long)cs.host_bytes_peak,
                                 "device_bytes_peak", (long long)cs.device_bytes_peak);
    SET_ITEM(d, "transfers", tr);
    if (ds.device_arrays) {
        /* where the data of a solver over device arrays went (sap_solver_device_stats) */
        PyObject *dv = Py_BuildValue(
            "{s:L,s:L,s:s,s:d,s:L,s:d,s:L,s:L,s:L,s:L,s:L,s:L,s:s,s:L}", "device_solves", (long long)ds.device_solves,
            "host_solves", (long long)ds.host_solves, "host_reason", ds.host_reason, "time_download",
            ds.time_download, "download_bytes", (long long)ds.download_bytes, "time_matrix", ds.time_matrix,
            "a_h2d_bytes", (long long)ds.a_h2d_bytes, "setup_h2d_bytes", (long long)ds.setup_h2d_bytes,
            "perm_h2d_bytes", (long long)ds.perm_h2d_bytes, "solve_h2d_bytes", (long long)ds.solve_h2d_bytes,
            "solve_d2h_bytes", (long long)ds.solve_d2h_bytes, "host_solve_bytes", (long long)ds.host_solve_bytes,
            "download_reason", ds.download_reason, "stats_d2h_bytes", (long long)ds.stats_d2h_bytes);
        SET_ITEM(d, "device_arrays", dv);
        PyObject *times = PyDict_GetItemString(d, "times"); /* borrowed */
        PyObject *td = PyFloat_FromDouble(ds.time_download);
        if (!td || PyDict_SetItemString(times, "download", td) != 0) {
            Py_XDECREF(td);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(td);
    }
    return d;
}

static PyObject *Solver_reset_transfers(SolverObject *self, PyObject *unused)
{
    if (!solver_ready(self)) return NULL;
    sap_context_reset_transfer_stats(self->ctx);
    Py_RETURN_NONE;
}

static PyMethodDef Solver_methods[] = {
    {"setup", (PyCFunction)Solver_setup, METH_NOARGS, "setup() -> (status, message)"},
    {"refactor", (PyCFunction)Solver_refactor, METH_O, "refactor(values) -> (status, message)"},
    {"solve", (PyCFunction)Solver_solve, METH_VARARGS, "solve(b, x, nrhs) -> (status, message)"},
    {"stats", (PyCFunction)Solver_stats, METH_NOARGS, "stats() -> dict"},
    {"_bench_solve", (PyCFunction)Solver_bench_solve, METH_VARARGS,
     "_bench_solve(b, x, reps[, x0]) -> (status, seconds): the C API timed from C"},
    {"reset_transfers", (PyCFunction)Solver_reset_transfers, METH_NOARGS, "zero the transfer counters"},
    {"solve_device", (PyCFunction)Solver_solve_device, METH_VARARGS,
     "solve_device(b_ptr, x_ptr, nrhs) -> (status, message): device arrays"},
    {"refactor_device", (PyCFunction)Solver_refactor_device, METH_O,
     "refactor_device(values_ptr) -> (status, message): device values"},
    {"_bench_solve_device", (PyCFunction)Solver_bench_solve_device, METH_VARARGS,
     "_bench_solve_device(b_ptr, x_ptr, reps) -> (status, seconds): the C API timed from C"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject SolverType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sap._sap.Solver",
    .tp_basicsize = sizeof(SolverObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The library's sap_solver over a CSR matrix (the sap.Solver class wraps it).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Solver_init,
    .tp_dealloc = (destructor)Solver_dealloc,
    .tp_methods = Solver_methods,
};

/* ---- module ----------------------------------------------------------------------------- */

static PyObject *py_build_info(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:s,s:O,s:O,s:O,s:O}", "version", sap_version_string(), "cuda",
                         sap_has_feature("cuda") ? Py_True : Py_False, "zlib",
                         sap_has_feature("zlib") ? Py_True : Py_False, "lapack",
                         sap_has_feature("lapack") ? Py_True : Py_False, "openmp",
                         sap_has_feature("openmp") ? Py_True : Py_False);
}

static PyObject *py_options_help(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(sap_solver_options_help());
}

static PyObject *py_gen_help(PyObject *self, PyObject *unused) { return PyUnicode_FromString(sap_gen_spec_help()); }

static PyObject *py_check_option(PyObject *self, PyObject *args)
{
    const char *name, *value;
    if (!PyArg_ParseTuple(args, "ss", &name, &value)) return NULL;
    sap_solver_options opt;
    sap_solver_options_init(&opt);
    char msg[512];
    sap_status st = sap_solver_options_set_msg(&opt, name, value, msg, sizeof msg);
    if (st != SAP_OK) return raise_status(st, msg);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_set_error_factory", set_error_factory, METH_O, "set the callable(status, name, message) -> exception"},
    {"load", py_load, METH_VARARGS, "load(spec_or_path) -> Csr (generator spec or Matrix Market file)"},
    {"info", py_info, METH_VARARGS, "info(nrows, ncols, indptr, indices, data, canonical) -> dict"},
    {"reorder", py_reorder, METH_VARARGS, "reorder(n, indptr, indices, data, canonical, db, scale, cm, drop, P)"},
    {"build_info", py_build_info, METH_NOARGS, "the library version and features"},
    {"options_help", py_options_help, METH_NOARGS, "sap_solver_options_help()"},
    {"gen_help", py_gen_help, METH_NOARGS, "sap_gen_spec_help()"},
    {"check_option", py_check_option, METH_VARARGS, "check_option(name, value): raises when refused"},
    {"device_solver", py_device_solver, METH_VARARGS,
     "device_solver(n, nnz, indptr_ptr, indices_ptr, data_ptr, options, backend, threads) -> Solver"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef sap_module = {PyModuleDef_HEAD_INIT, "_sap", "The C layer of the sap package.", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sap(void)
{
    if (PyType_Ready(&CsrType) < 0 || PyType_Ready(&SolverType) < 0) return NULL;
    PyObject *m = PyModule_Create(&sap_module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Csr", (PyObject *)&CsrType) < 0 ||
        PyModule_AddObjectRef(m, "Solver", (PyObject *)&SolverType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#define SAP_X_CONST(name, value, text) PyModule_AddIntConstant(m, #name, value);
    SAP_STATUS_TABLE(SAP_X_CONST)
#undef SAP_X_CONST
    return m;
}
