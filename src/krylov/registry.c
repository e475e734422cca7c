/* registry.c -- the Krylov methods: every built-in method, one line each, and the
 * registration of more at run time (sap__krylov_register), with the enumeration the CLI
 * lists them from.  Thread-safety as src/precond/registry.c: built-ins installed once, a
 * spin lock serialises registrations, the count is published with release and read with
 * acquire, published slots are never written again. */
#include "krylov/krylov_impl.h"

#include <stdio.h>
#include <string.h>

/* Every built-in Krylov method: one line here (ids are their sap_krylov_type). */
static const sap_krylov_method *const builtin[] = {
    &sap__krylov_cg_method,     /* cg.c        */
    &sap__krylov_bicgstab_method, /* bicgstab.c  */
    &sap__krylov_bicgstabl_method, /* bicgstabl.c */
    &sap__krylov_gmres_method,  /* gmres.c     */
    &sap__krylov_fgmres_method, /* gmres.c     */
    &sap__krylov_idr_method,    /* idr.c       */
    &sap__krylov_bicg_method,   /* bicg.c      */
    &sap__krylov_cgs_method,    /* cgs.c       */
    &sap__krylov_qmr_method,    /* qmr.c       */
    &sap__krylov_tfqmr_method,  /* tfqmr.c     */
    &sap__krylov_ir_method,     /* ir.c        */
    &sap__krylov_async_jacobi_method, /* async_jacobi.c */
    &sap__krylov_richardson_method, /* richardson.c */
};
#define NBUILTIN ((int)(sizeof(builtin) / sizeof(builtin[0])))

#define HELP_LEN 512
static const sap_krylov_method *methods[SAP_KRYLOV_MAX_METHODS];
static int ids[SAP_KRYLOV_MAX_METHODS];
static char helps[SAP_KRYLOV_MAX_METHODS][HELP_LEN];
static atomic_int nmethods;
static atomic_int init_flag;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static void build_help(const sap_krylov_method *m, char *buf, size_t size)
{
    const char *sides = (m->sides & KRY_SIDES_SYMMETRIC) ? "symmetric"
                        : (m->sides & KRY_SIDES_LEFT) && (m->sides & KRY_SIDES_RIGHT) ? "left or right"
                        : (m->sides & KRY_SIDES_LEFT) ? "left only" : "right only";
    if (m->param_is_method) {
        const sap_krylov_method *im = NULL;
        for (int i = 0; i < NBUILTIN && !im; i++)
            if (builtin[i]->id == m->default_param - 1) im = builtin[i];
        snprintf(buf, size, "%s[:method]: %s (method default %s; preconditioning %s)\n", m->name, m->help ? m->help : "",
                 im ? im->name : "?", sides);
    } else if (m->max_param)
        snprintf(buf, size, "%s[:p]: %s (p default %d, 1..%d; preconditioning %s)\n", m->name, m->help ? m->help : "",
                 m->default_param, m->max_param, sides);
    else
        snprintf(buf, size, "%s: %s (preconditioning %s)\n", m->name, m->help ? m->help : "", sides);
}

static void install_builtins(void)
{
    for (int i = 0; i < NBUILTIN; i++) {
        methods[i] = builtin[i];
        ids[i] = builtin[i]->id;
        build_help(builtin[i], helps[i], HELP_LEN);
    }
    atomic_store_explicit(&nmethods, NBUILTIN, memory_order_release);
}

static int count(void)
{
    sap__once(&init_flag, install_builtins);
    return atomic_load_explicit(&nmethods, memory_order_acquire);
}

const sap_krylov_method *sap__krylov_find_id(int id)
{
    const int n = count();
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return methods[i];
    return NULL;
}

static int find_index(const char *s, size_t len)
{
    const int n = count();
    for (int i = 0; i < n; i++)
        if (sap__word_eq(s, len, methods[i]->name)) return i;
    return -1;
}

const sap_krylov_method *sap__krylov_find_name(const char *s, size_t len, int *id)
{
    if (!s) return NULL;
    int i = find_index(s, len);
    if (i < 0) return NULL;
    if (id) *id = ids[i];
    return methods[i];
}

sap_status sap__krylov_register(const sap_krylov_method *m, sap_krylov_type *id)
{
    if (!m || !m->name || !m->name[0] || strchr(m->name, ':') || !m->run || !m->nvec) return SAP_ERR_INVALID;
    if (!(m->sides & (KRY_SIDES_LEFT | KRY_SIDES_RIGHT | KRY_SIDES_SYMMETRIC))) return SAP_ERR_INVALID;
    if (m->max_param < 0 || (m->max_param > 0 && (m->default_param < 1 || m->default_param > m->max_param)))
        return SAP_ERR_INVALID;
    count();
    sap_status st = SAP_OK;
    sap__spin_lock(&lock);
    const int n = atomic_load_explicit(&nmethods, memory_order_relaxed);
    if (find_index(m->name, strlen(m->name)) >= 0) st = SAP_ERR_INVALID;
    else if (n >= SAP_KRYLOV_MAX_METHODS) st = SAP_ERR_TOO_LARGE;
    else {
        methods[n] = m;
        ids[n] = SAP_KRYLOV_FIRST_REGISTERED + (n - NBUILTIN);
        build_help(m, helps[n], HELP_LEN);
        if (id) *id = (sap_krylov_type)ids[n];
        atomic_store_explicit(&nmethods, n + 1, memory_order_release);
    }
    sap__spin_unlock(&lock);
    return st;
}

int sap_krylov_method_count(void) { return count(); }

const char *sap_krylov_method_name(int i) { return i >= 0 && i < count() ? methods[i]->name : NULL; }

const char *sap_krylov_method_help(int i) { return i >= 0 && i < count() ? helps[i] : NULL; }
