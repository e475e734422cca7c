/* precond_impl.h -- the internal preconditioner interface.  A preconditioner is one file
 * (pc_<name>.c) with a private data struct and static functions filling a
 * sap_precond_ops table, registered by name in precond.c.  The front end (precond.c)
 * validates arguments, enforces the call order (symbolic -> numeric -> apply), times
 * the setups and converts between the solver's precision and the preconditioner's, so
 * an implementation only computes.  Internal. */
#ifndef SAP_PRECOND_IMPL_H
#define SAP_PRECOND_IMPL_H

#include "device/device.h"

typedef struct sap_precond_ops {
    const char *name;
    /* 1: apply accepts r and z of any precision (it converts itself, e.g. the identity);
     * 0: the front end hands apply vectors of the preconditioner's precision only */
    int mixed_precision_apply;
    /* 1: the preconditioner is the identity (Krylov drivers skip it) */
    int identity;
    /* each may be NULL (nothing to do) */
    sap_status (*create)(sap_precond *P);
    /* pattern-only analysis; A is square, n = P->n is set */
    sap_status (*setup_symbolic)(sap_precond *P, const sap_csr *A);
    /* values; called after setup_symbolic with a matrix of the same size */
    sap_status (*setup_numeric)(sap_precond *P, const sap_csr *A);
    /* z = M^{-1} r on the backend (r and z: length P->n, precision P->prec unless
     * mixed_precision_apply) */
    sap_status (*apply)(sap_precond *P, const sap_vec *r, sap_vec *z);
    /* frees P->data */
    void (*destroy)(sap_precond *P);
} sap_precond_ops;

enum { SAP_PC_CREATED = 0, SAP_PC_SYMBOLIC = 1, SAP_PC_NUMERIC = 2 };

struct sap_precond {
    sap_context *ctx;
    const sap_precond_ops *ops;
    void *data;                         /* implementation private */
    sap_precision prec;                 /* precision of setup_numeric's result and of apply */
    sap_int n;                          /* size (set by the symbolic setup) */
    int state;                          /* SAP_PC_* */
    sap_vec wr, wz;                     /* precision conversion work vectors (created on first use) */
    sap_vec hr, hz;                     /* work vectors of the host-vector sap_precond_apply */
    double time_symbolic, time_numeric; /* seconds of the last setups */
};

/* The registered implementations (precond.c holds the table). */
extern const sap_precond_ops sap__pc_none_ops;
extern const sap_precond_ops sap__pc_jacobi_ops;

/* z = M^{-1} r with backend vectors of any precision (converted through P's work vectors
 * when they differ from P->prec).  Used by the Krylov drivers. */
sap_status sap__precond_apply_vec(sap_precond *P, const sap_vec *r, sap_vec *z);
/* 1 when P is NULL or the identity (nothing to apply). */
int sap__precond_is_identity(const sap_precond *P);
/* SAP_ERR_INVALID (with a message) unless P is set up for vectors of length n. */
sap_status sap__precond_check_ready(const sap_precond *P, sap_int n);

#endif /* SAP_PRECOND_IMPL_H */
