/* methods.c -- the strategy methods of the sparse solver: every built-in method, one line
 * each, and the registration of more at run time (sap__solver_method_register), with the
 * public enumeration (sap_solver_method_count / _name / _help), the names and parsing.
 *
 * Index i of the enumeration is the sap_solver_method value: 0 is "auto" (no method: the
 * plan picks the first one and the chain), the built-ins follow in enum order, then the
 * registered ones in registration order.
 *
 * Thread-safety: as the preconditioner registry.  The built-ins are installed once
 * (sap__once); a registration takes a spin lock, fills the next slot, its help and its
 * words, then publishes the new count with a release store.  Readers load the count with
 * acquire and read slots below it without locking: a published slot is never written
 * again. */
#include "solver/solver_internal.h"

#include <stdio.h>
#include <string.h>

extern const sap__solver_method_type sap__sm_sapd, sap__sm_sapc, sap__sm_band_lu, sap__sm_band_pivot, sap__sm_jacobi,
    sap__sm_direct_host, sap__sm_direct_cudss;
extern const sap__solver_method_type sap__sm_bcyclic, sap__sm_spike, sap__sm_reduced_spike;
extern const sap__solver_method_type sap__sm_ilu, sap__sm_bjacobi;

/* Every built-in strategy method: one line here (in sap_solver_method order). */
static const sap__solver_method_type *const builtin[] = {
    &sap__sm_sapd,       /* solver_method_sap.c        */
    &sap__sm_sapc,       /* solver_method_sap.c        */
    &sap__sm_band_lu,    /* solver_method_band_lu.c    */
    &sap__sm_band_pivot, /* solver_method_band_pivot.c */
    &sap__sm_jacobi,     /* solver_method_jacobi.c     */
    &sap__sm_direct_host,  /* solver_method_direct_host.c  */
    &sap__sm_direct_cudss, /* solver_method_direct_cudss.c */
    &sap__sm_bcyclic,    /* solver_method_btd.c        */
    &sap__sm_spike,      /* solver_method_btd.c        */
    &sap__sm_reduced_spike, /* solver_method_btd.c     */
    &sap__sm_ilu,        /* solver_method_ilu.c        */
    &sap__sm_bjacobi,    /* solver_method_bjacobi.c    */
};
#define NBUILTIN ((int)(sizeof(builtin) / sizeof(builtin[0])))

#define AUTO_HELP "first method from the matrix statistics, then a fallback chain"
#define HELP_LEN 256

static const sap__solver_method_type *types[SV_MAX_METHODS + 1]; /* [0]: auto (NULL) */
static char helps[SV_MAX_METHODS + 1][HELP_LEN];
static atomic_int ntypes; /* entries of types[], auto included */
static atomic_int init_flag;
static atomic_flag lock = ATOMIC_FLAG_INIT;

/* "auto", then every name and alias; NULL-terminated (zero-initialised beyond) */
sap_name_value sap__solver_method_words[2 * SV_MAX_METHODS + 2];
static int nwords;

static void add_words(const sap__solver_method_type *t, int value)
{
    /* the entry after the current end is written first, the end's name last: a reader
     * that runs through the table meanwhile stops at the old end or sees whole entries */
    sap_name_value *w = sap__solver_method_words + nwords;
    if (t->alias) {
        w[1].value = value;
        w[1].name = t->alias;
    }
    w[0].value = value;
    atomic_thread_fence(memory_order_release);
    w[0].name = t->name;
    nwords += t->alias ? 2 : 1;
}

static void set_help(int i, const char *name, const char *help)
{
    snprintf(helps[i], HELP_LEN, "%s: %s\n", name, help ? help : "");
}

static void install_builtins(void)
{
    types[0] = NULL;
    sap__solver_method_words[0].name = "auto";
    sap__solver_method_words[0].value = SAP_METHOD_AUTO;
    nwords = 1;
    set_help(0, "auto", AUTO_HELP);
    for (int i = 0; i < NBUILTIN; i++) {
        types[i + 1] = builtin[i];
        set_help(i + 1, builtin[i]->name, builtin[i]->help);
        add_words(builtin[i], i + 1);
    }
    atomic_store_explicit(&ntypes, NBUILTIN + 1, memory_order_release);
}

static int count(void)
{
    sap__once(&init_flag, install_builtins);
    return atomic_load_explicit(&ntypes, memory_order_acquire);
}

/* The index of the method named s (name or alias, case-insensitive; "auto" is 0), or -1. */
static int find(const char *s)
{
    if (!s) return -1;
    const size_t len = strlen(s);
    if (sap__word_eq(s, len, "auto")) return 0;
    const int n = count();
    for (int i = 1; i < n; i++)
        if (sap__word_eq(s, len, types[i]->name) || (types[i]->alias && sap__word_eq(s, len, types[i]->alias)))
            return i;
    return -1;
}

const sap__solver_method_type *sap__solver_method_get(sap_solver_method m)
{
    const int i = (int)m;
    return i > 0 && i < count() ? types[i] : NULL;
}

sap_status sap__solver_method_register(const sap__solver_method_type *t, sap_solver_method *value)
{
    if (!t || !t->name || !t->name[0] || !t->build || !t->numeric || !t->solve || !t->estimate || t->refine_passes < 0)
        return SAP_ERR_INVALID;
    count(); /* the built-ins first */
    sap_status st = SAP_OK;
    sap__spin_lock(&lock);
    const int n = atomic_load_explicit(&ntypes, memory_order_relaxed);
    if (find(t->name) >= 0 || (t->alias && find(t->alias) >= 0)) st = SAP_ERR_INVALID;
    else if (n >= SV_MAX_METHODS + 1) st = SAP_ERR_TOO_LARGE;
    else {
        types[n] = t;
        set_help(n, t->name, t->help);
        add_words(t, n);
        atomic_store_explicit(&ntypes, n + 1, memory_order_release);
        if (value) *value = (sap_solver_method)n;
    }
    sap__spin_unlock(&lock);
    return st;
}

int sap_solver_method_count(void) { return count(); }

const char *sap_solver_method_name(sap_solver_method method)
{
    const int i = (int)method;
    if (i == 0) return "auto";
    return i > 0 && i < count() ? types[i]->name : "unknown";
}

const char *sap_solver_method_help(int i) { return i >= 0 && i < count() ? helps[i] : NULL; }

sap_status sap_solver_method_parse(const char *name, sap_solver_method *method)
{
    if (!name || !method) return SAP_ERR_INVALID;
    const int i = find(name);
    if (i < 0) return SAP_ERR_INVALID;
    *method = (sap_solver_method)i;
    return SAP_OK;
}
