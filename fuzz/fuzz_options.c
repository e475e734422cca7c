/* fuzz_options.c -- the option parsers: sap_solver_options_set ("name=value"),
 * sap_precond_set_options / set_option / get_option on every registered preconditioner
 * type, sap_krylov_parse and the small enum parsers.
 *
 * Input: the first byte picks the target ((byte - '0') mod 5: 0 solver option, 1 precond
 * option list, 2 Krylov spec, 3 one precond option, 4 the enum parsers), the second (for
 * the preconditioner targets) the type ((byte - '0') mod sap_precond_type_count()); the
 * rest is the text, e.g. "0tol=1e-8", "12partitions=4,K=3", "2gmres:20", "34method=sap-c".
 * Invariants: a rejected option leaves the options (solver) or the preconditioner's
 * report (all-or-none) unchanged; an accepted value prints (get_option) to text that is
 * accepted again and prints the same (a fixed point); a parsed Krylov spec names a method
 * with a parameter in range; every error on a context leaves a message; nothing leaks. */
#include "fuzz_common.h"

#define FUZZ_OPT_BUDGET ((size_t)16 << 20)

/* "name=value" -> name, value (in place); no '=': the whole text is the name, value "" */
static void fuzz_opt_split(char *s, char **name, char **value)
{
    char *eq = strchr(s, '=');
    *name = s;
    if (eq) {
        *eq = '\0';
        *value = eq + 1;
    } else {
        *value = s + strlen(s);
    }
}

static void fuzz_opt_solver(char *text)
{
    char *name, *value;
    fuzz_opt_split(text, &name, &value);
    sap_solver_options o, before;
    sap_solver_options_init(&o);
    memcpy(&before, &o, sizeof(o));
    sap_status st = sap_solver_options_set(&o, name, value);
    if (st < 0) {
        FUZZ_CHECK(st == SAP_ERR_INVALID, "sap_solver_options_set: %s", sap_status_name(st));
        FUZZ_CHECK(memcmp(&o, &before, sizeof(o)) == 0, "a rejected option changed the options");
    } else {
        FUZZ_CHECK(st == SAP_OK, "sap_solver_options_set returned %s", sap_status_name(st));
        /* the options must still make a solver (a tiny one), or be rejected with a message */
        fuzz_budget budget;
        sap_context *ctx = fuzz_context(&budget, FUZZ_OPT_BUDGET);
        sap_int rowptr[3] = {0, 1, 2}, colind[2] = {0, 1};
        double val[2] = {2.0, 3.0};
        sap_csr *A = NULL;
        FUZZ_CHECK(sap_csr_from_arrays(ctx, 2, 2, rowptr, colind, val, &A) == SAP_OK, "sap_csr_from_arrays");
        sap_solver *S = NULL;
        sap_status sc = sap_solver_create(ctx, A, &o, &S);
        fuzz_check_error(ctx, sc, "sap_solver_create");
        sap_solver_destroy(S);
        sap_csr_destroy(A);
        fuzz_context_done(ctx, &budget);
    }
}

static void fuzz_opt_precond(int type, char *text, int single)
{
    const char *tname = sap_precond_type_name(type);
    FUZZ_CHECK(tname, "sap_precond_type_name(%d) is NULL below the count", type);
    FUZZ_CHECK(sap_precond_type_help(type), "sap_precond_type_help(%d) is NULL", type);
    fuzz_budget budget;
    sap_context *ctx = fuzz_context(&budget, FUZZ_OPT_BUDGET);
    sap_precond *P = NULL;
    sap_status st = sap_precond_create(ctx, tname, &P);
    FUZZ_CHECK(st == SAP_OK, "sap_precond_create(%s): %s", tname, sap_status_name(st));
    static char before[8192], after[8192];
    FUZZ_CHECK(sap_precond_report(P, 0, before, sizeof(before)) == SAP_OK, "sap_precond_report");
    if (!single) {
        st = sap_precond_set_options(P, text);
        fuzz_check_error(ctx, st, "sap_precond_set_options");
        if (st < 0) {
            FUZZ_CHECK(sap_precond_report(P, 0, after, sizeof(after)) == SAP_OK, "sap_precond_report");
            FUZZ_CHECK(strcmp(before, after) == 0, "a rejected option list '%s' changed %s:\n%s\nto\n%s", text, tname,
                       before, after);
        }
        FUZZ_CHECK(sap_precond_report(P, 1, after, sizeof(after)) == SAP_OK, "sap_precond_report (json)");
    } else {
        char *name, *value;
        fuzz_opt_split(text, &name, &value);
        st = sap_precond_set_option(P, name, value);
        fuzz_check_error(ctx, st, "sap_precond_set_option");
        if (st < 0) {
            FUZZ_CHECK(sap_precond_report(P, 0, after, sizeof(after)) == SAP_OK, "sap_precond_report");
            FUZZ_CHECK(strcmp(before, after) == 0, "a rejected option changed %s", tname);
        } else {
            /* print, set the printed text again, print again: the same text */
            char v1[512], v2[512];
            st = sap_precond_get_option(P, name, v1, sizeof(v1));
            FUZZ_CHECK(st == SAP_OK, "get_option(%s) after set_option succeeded: %s", name, sap_status_name(st));
            st = sap_precond_set_option(P, name, v1);
            FUZZ_CHECK(st == SAP_OK, "%s: option %s printed as '%s' (set as '%s') is rejected: %s", tname, name, v1,
                       value, sap_context_last_error(ctx));
            st = sap_precond_get_option(P, name, v2, sizeof(v2));
            FUZZ_CHECK(st == SAP_OK && strcmp(v1, v2) == 0, "%s: option %s prints '%s', then '%s'", tname, name, v1,
                       v2);
        }
    }
    sap_precond_destroy(P);
    fuzz_context_done(ctx, &budget);
}

static void fuzz_opt_krylov(const char *text)
{
    sap_krylov_type type = SAP_KRYLOV_CG;
    int param = -1;
    sap_status st = sap_krylov_parse(text, &type, &param);
    if (st < 0) {
        FUZZ_CHECK(st == SAP_ERR_INVALID, "sap_krylov_parse: %s", sap_status_name(st));
        return;
    }
    const char *name = sap_krylov_name(type);
    FUZZ_CHECK(name && name[0], "sap_krylov_parse gave type %d without a name", (int)type);
    FUZZ_CHECK(param >= 0 && param <= 1000, "sap_krylov_parse gave param %d", param);
    /* the name parses back to the same type */
    sap_krylov_type t2;
    int p2;
    FUZZ_CHECK(sap_krylov_parse(name, &t2, &p2) == SAP_OK && t2 == type, "'%s' does not parse back", name);
    /* and the options make a solver */
    fuzz_budget budget;
    sap_context *ctx = fuzz_context(&budget, FUZZ_OPT_BUDGET);
    sap_krylov_options ko;
    sap_krylov_options_init(&ko);
    ko.type = type;
    ko.param = param;
    sap_krylov *K = NULL;
    st = sap_krylov_create(ctx, &ko, &K);
    fuzz_check_error(ctx, st, "sap_krylov_create");
    FUZZ_CHECK(st == SAP_OK, "sap_krylov_create after sap_krylov_parse('%s'): %s (%s)", text, sap_status_name(st),
               sap_context_last_error(ctx));
    sap_krylov_destroy(K);
    fuzz_context_done(ctx, &budget);
}

static void fuzz_opt_enums(const char *text)
{
    sap_backend b;
    if (sap_backend_parse(text, &b) == SAP_OK) FUZZ_CHECK(sap_backend_name(b), "backend without a name");
    sap_solver_method m;
    if (sap_solver_method_parse(text, &m) == SAP_OK) {
        sap_solver_method m2;
        FUZZ_CHECK(sap_solver_method_parse(sap_solver_method_name(m), &m2) == SAP_OK && m2 == m,
                   "solver method '%s' does not parse back", text);
    }
    sap_spmv_format f;
    if (sap_spmv_format_parse(text, &f) == SAP_OK) FUZZ_CHECK(sap_spmv_format_name(f), "format without a name");
    sap_band_method bm;
    if (sap_band_method_parse(text, &bm) == SAP_OK) FUZZ_CHECK(sap_band_method_name(bm), "band method without a name");
}

int sap_fuzz_options(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int target = (uint8_t)(data[0] - '0') % 5; /* '0'..'4' in the seeds */
    int np = sap_precond_type_count();
    FUZZ_CHECK(np >= 1, "no preconditioner types");
    if (target == 1 || target == 3) {
        if (size < 2) return 0;
        int type = (uint8_t)(data[1] - '0') % np;
        char *text = fuzz_strndup(data + 2, size - 2);
        fuzz_opt_precond(type, text, target == 3);
        free(text);
        return 0;
    }
    char *text = fuzz_strndup(data + 1, size - 1);
    if (target == 0) fuzz_opt_solver(text);
    else if (target == 2) fuzz_opt_krylov(text);
    else fuzz_opt_enums(text);
    free(text);
    return 0;
}

#ifndef SAP_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return sap_fuzz_options(data, size); }
#endif
