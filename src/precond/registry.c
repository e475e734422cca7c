/* registry.c -- the preconditioner types: every built-in type, one line each, and the
 * registration of more at run time (sap__precond_register), with the enumeration the CLI
 * lists them and their options from.
 *
 * Thread-safety: the table is process-wide.  The built-ins are installed once
 * (sap__once); a registration takes a spin lock (registrations are rare and short), fills
 * the next slot and its help text, then publishes the new count with a release store.
 * Readers load the count with acquire and read slots below it without locking: a
 * published slot is never written again. */
#include "precond/precond_impl.h"

#include <stdio.h>
#include <string.h>

extern const sap_precond_type sap__pc_none, sap__pc_jacobi, sap__pc_sapd, sap__pc_sapc, sap__pc_sap;
extern const sap_precond_type sap__pc_ilu0, sap__pc_iluk, sap__pc_ilut, sap__pc_ic0, sap__pc_parilu, sap__pc_parilut;
extern const sap_precond_type sap__pc_bilu, sap__pc_bilut, sap__pc_ras, sap__pc_isai;
extern const sap_precond_type sap__pc_bjacobi, sap__pc_bjacobi_adaptive;

/* Every built-in preconditioner: one line here. */
static const sap_precond_type *const builtin[] = {
    &sap__pc_none,   /* pc_none.c   */
    &sap__pc_jacobi, /* pc_jacobi.c */
    &sap__pc_sapd,   /* pc_sap.c    */
    &sap__pc_sapc,   /* pc_sap.c    */
    &sap__pc_sap,    /* pc_sap.c    */
    &sap__pc_ilu0,   /* pc_ilu0.c   */
    &sap__pc_iluk,   /* pc_iluk.c   */
    &sap__pc_ilut,   /* pc_ilut.c   */
    &sap__pc_ic0,    /* pc_ic0.c    */
    &sap__pc_parilu, /* pc_parilu.c */
    &sap__pc_parilut, /* pc_parilut.c */
    &sap__pc_bilu,   /* pc_bilu.c   */
    &sap__pc_bilut,  /* pc_bilut.c  */
    &sap__pc_ras,    /* pc_ras.c    */
    &sap__pc_isai,   /* pc_isai.c   */
    &sap__pc_bjacobi, &sap__pc_bjacobi_adaptive, /* pc_bjacobi.c */
};
#define NBUILTIN ((int)(sizeof(builtin) / sizeof(builtin[0])))

#define HELP_LEN 3072
static const sap_precond_type *types[SAP_PC_MAX_TYPES];
static char helps[SAP_PC_MAX_TYPES][HELP_LEN];
static atomic_int ntypes;
static atomic_int init_flag;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static void build_help(const sap_precond_type *t, char *buf, size_t size)
{
    int w = snprintf(buf, size, "%s: %s\n", t->name, t->help ? t->help : "");
    if (w > 0 && (size_t)w < size && t->nopts > 0) sap__opt_help(t->opts, t->nopts, "    ", buf + w, size - (size_t)w);
}

static sap_status check_type(const sap_precond_type *t)
{
    if (!t || !t->name || !t->name[0] || !t->apply) return SAP_ERR_INVALID;
    if (t->nopts < 0 || (t->nopts > 0 && (!t->opts || t->opts_size == 0))) return SAP_ERR_INVALID;
    for (int i = 0; i < t->nopts; i++)
        if (!t->opts[i].name || t->opts[i].offset + t->opts[i].size > t->opts_size) return SAP_ERR_INVALID;
    return SAP_OK;
}

static void install_builtins(void)
{
    for (int i = 0; i < NBUILTIN; i++) {
        types[i] = builtin[i];
        build_help(builtin[i], helps[i], HELP_LEN);
    }
    atomic_store_explicit(&ntypes, NBUILTIN, memory_order_release);
}

static int count(void)
{
    sap__once(&init_flag, install_builtins);
    return atomic_load_explicit(&ntypes, memory_order_acquire);
}

const sap_precond_type *sap__precond_find(const char *name)
{
    if (!name) return NULL;
    const int n = count();
    for (int i = 0; i < n; i++)
        if (sap__word_eq(name, strlen(name), types[i]->name)) return types[i];
    return NULL;
}

sap_status sap__precond_register(const sap_precond_type *t)
{
    sap_status st = check_type(t);
    if (st < 0) return st;
    /* the defaults must parse (into scratch memory) */
    if (t->nopts > 0) {
        unsigned char scratch[4096];
        if (t->opts_size > sizeof(scratch)) return SAP_ERR_INVALID;
        memset(scratch, 0, t->opts_size);
        if (sap__opt_defaults(t->opts, t->nopts, scratch) < 0) return SAP_ERR_INVALID;
    }
    count(); /* the built-ins first */
    sap__spin_lock(&lock);
    const int n = atomic_load_explicit(&ntypes, memory_order_relaxed);
    if (sap__precond_find(t->name)) st = SAP_ERR_INVALID;
    else if (n >= SAP_PC_MAX_TYPES) st = SAP_ERR_TOO_LARGE;
    else {
        types[n] = t;
        build_help(t, helps[n], HELP_LEN);
        atomic_store_explicit(&ntypes, n + 1, memory_order_release);
    }
    sap__spin_unlock(&lock);
    return st;
}

int sap_precond_type_count(void) { return count(); }

const char *sap_precond_type_name(int i)
{
    return i >= 0 && i < count() ? types[i]->name : NULL;
}

const char *sap_precond_type_help(int i)
{
    return i >= 0 && i < count() ? helps[i] : NULL;
}
