/* precond_impl.h -- the internal preconditioner interface.  A preconditioner type is one
 * file (pc_<name>.c) with a private data struct, an option struct described by a typed
 * option table (base/options.h) and static functions filling a sap_precond_type; the
 * built-in types are listed once in registry.c, and more can be registered at run time
 * (sap__precond_register).  The front end (precond.c) validates arguments, sets options
 * through the type's table, enforces the call order (symbolic -> numeric -> apply), times
 * the setups and converts between the solver's precision and the preconditioner's, so a
 * type only computes.  Internal. */
#ifndef SAP_PRECOND_IMPL_H
#define SAP_PRECOND_IMPL_H

#include "base/options.h"
#include "device/device.h"

typedef struct sap_precond_type {
    const char *name; /* unique (case-insensitive), used by sap_precond_create */
    const char *help; /* one line: what it is */
    /* the type's options: a struct of opts_size bytes (P->opts, zeroed, then the table's
     * defaults) set by name through the table (sap_precond_set_option); nopts may be 0 */
    const sap_opt_def *opts;
    int nopts;
    size_t opts_size;
    /* 1: apply accepts r and z of any precision (it converts itself, e.g. the identity);
     * 0: the front end hands apply vectors of the preconditioner's precision only */
    int mixed_precision_apply;
    /* 1: the preconditioner is the identity (Krylov drivers skip it) */
    int identity;
    /* each may be NULL (nothing to do) except apply */
    /* P->data allocation etc.; P->opts already holds the defaults */
    sap_status (*create)(sap_precond *P);
    /* pattern-only analysis; A is square, n = P->n is set */
    sap_status (*setup_symbolic)(sap_precond *P, const sap_csr *A);
    /* values; called after setup_symbolic with a matrix of the same size */
    sap_status (*setup_numeric)(sap_precond *P, const sap_csr *A);
    /* symbolic + numeric setup from a square CSR in backend memory (the caller's device
     * arrays: no host copy of A); NULL: not offered (a type that needs the host matrix) */
    sap_status (*setup_dev)(sap_precond *P, const sap_dev_csr *A);
    /* z = M^{-1} r on the backend (r and z: length P->n, precision P->prec unless
     * mixed_precision_apply) */
    sap_status (*apply)(sap_precond *P, const sap_vec *r, sap_vec *z);
    /* the same for k columns at once (r, z: length k P->n, column c at element c P->n; P's
     * precision unless mixed_precision_apply), e.g. one pass over the factors for all of
     * them; NULL: the front end applies the columns one by one */
    sap_status (*apply_block)(sap_precond *P, sap_int k, const sap_vec *r, sap_vec *z);
    /* text of what the last setup chose (e.g. SaP-C's partitions and why), "" if nothing */
    void (*report)(const sap_precond *P, char *buf, size_t size);
    /* frees P->data */
    void (*destroy)(sap_precond *P);
} sap_precond_type;

enum { SAP_PC_CREATED = 0, SAP_PC_SYMBOLIC = 1, SAP_PC_NUMERIC = 2 };

struct sap_precond {
    sap_context *ctx;
    const sap_precond_type *type;
    void *opts;                         /* the type's option struct (type->opts_size bytes) */
    void *data;                         /* implementation private */
    sap_precision prec;                 /* precision of setup_numeric's result and of apply */
    sap_int n;                          /* size (set by the symbolic setup) */
    int state;                          /* SAP_PC_* */
    sap_vec wr, wz;                     /* precision conversion work vectors (created on first use) */
    sap_vec hr, hz;                     /* work vectors of the host-vector sap_precond_apply */
    sap_vec br, bz;                     /* precision conversion blocks of sap__precond_apply_block */
    double time_symbolic, time_numeric; /* seconds of the last setups */
};

/* ---- the registry (registry.c) ----------------------------------------------------------- */

/* Registers a preconditioner type from outside the library's sources (a plug-in, a test):
 * afterwards sap_precond_create(ctx, t->name, ...) creates it and the enumeration
 * functions list it.  t (and everything it points to) must stay valid for the rest of the
 * process: the registry keeps the pointer; types are never unregistered.  Thread-safe:
 * registrations are serialised by a lock and published with release/acquire atomics, so
 * lookups (creation, enumeration) never lock and may run concurrently with a registration.
 * SAP_ERR_INVALID: NULL or empty name, no apply, an option table without opts_size or
 * with a default that does not parse, or the name is taken (case-insensitively);
 * SAP_ERR_TOO_LARGE: the registry is full (SAP_PC_MAX_TYPES). */
#define SAP_PC_MAX_TYPES 64
sap_status sap__precond_register(const sap_precond_type *t);
/* The registered type named name (case-insensitive), or NULL. */
const sap_precond_type *sap__precond_find(const char *name);

/* The setup (symbolic and numeric) from a CSR in backend memory, for a type that offers it
 * (setup_dev), or for one with no setup at all (none); SAP_ERR_UNSUPPORTED otherwise. */
sap_status sap__precond_setup_dev(sap_precond *P, const sap_dev_csr *A);
/* 1 when P can be set up from a CSR in backend memory (sap__precond_setup_dev). */
int sap__precond_has_setup_dev(const sap_precond *P);
/* z = M^{-1} r with backend vectors of any precision (converted through P's work vectors
 * when they differ from P->prec).  Used by the Krylov drivers. */
sap_status sap__precond_apply_vec(sap_precond *P, const sap_vec *r, sap_vec *z);
/* The same for k columns (r, z: length k P->n, column c at element c P->n): the type's
 * apply_block when it has one, else column by column. */
sap_status sap__precond_apply_block(sap_precond *P, sap_int k, const sap_vec *r, sap_vec *z);

/* Column c of a block of columns of length m (a view: no copy). */
static inline sap_vec sap__vec_column(const sap_vec *V, sap_int m, sap_int c)
{
    const size_t es = V->prec == SAP_FLOAT ? sizeof(float) : sizeof(double);
    sap_vec v = {m, V->prec, (char *)V->data + (size_t)c * (size_t)m * es};
    return v;
}

/* 1 when P is NULL or the identity (nothing to apply). */
int sap__precond_is_identity(const sap_precond *P);
/* SAP_ERR_INVALID (with a message) unless P is set up for vectors of length n. */
sap_status sap__precond_check_ready(const sap_precond *P, sap_int n);

#endif /* SAP_PRECOND_IMPL_H */
