/* solve_problem.c -- owns the system that `sap solve` solves: the context (on the backend
 * asked for, with a log hook that keeps why 'auto' chose it), the matrix A, and the
 * right-hand side b (read with --rhs, else manufactured as b = A x*). */
#include "solve.h"
#include "sap_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps the backend message; prints the library's long-step warnings (also under --quiet:
 * hours of work that cannot be interrupted deserve a line); the rest is dropped (errors
 * are printed from sap_context_last_error where they are handled). */
static void capture_log(void *state, int level, const char *message)
{
    solve_problem *p = state;
    if (level == SAP_PRINT_INFO && p->log_info) fprintf(stderr, "%s\n", message);
    if (level == SAP_PRINT_INFO && strstr(message, "backend"))
        snprintf(p->backend_log, sizeof(p->backend_log), "%s", message);
    if (level == SAP_PRINT_INFO && strncmp(message, "sap_solver: probe ", 18) == 0)
        snprintf(p->probe_log, sizeof(p->probe_log), "%s", message + 12);
    if (level == SAP_PRINT_INFO && strncmp(message, "sap_solver: setup parts ", 24) == 0)
        snprintf(p->setup_log, sizeof(p->setup_log), "%s", message + 12);
    if (level == SAP_PRINT_INFO && strncmp(message, "sap_reorder: DB ", 16) == 0)
        snprintf(p->db_log, sizeof(p->db_log), "%s", message + 13);
    if (level == SAP_PRINT_WARNINGS && strstr(message, "long step:")) {
        fprintf(stderr, "\r%s\n", message);
        fflush(stderr);
    }
}

static int create_context(const solve_args *a, solve_problem *p)
{
    const sap_backend backend = a->common.backend;
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = backend;
    cfg.threads = (int)a->common.threads;
    cfg.print_level = SAP_PRINT_INFO;
    cfg.log = capture_log;
    cfg.log_state = p;
    const char *lv = getenv("SAP_LOG");
    p->log_info = lv && strcmp(lv, "info") == 0;
    sap_status st = sap_context_create(&p->ctx, &cfg);
    if (st != SAP_OK) {
        fprintf(stderr, "sap solve: cannot create a %s context: %s\n", sap_backend_name(backend),
                sap_status_string(st));
        return 1;
    }
    sap_tool_warn_threads("solve", p->ctx, a->common.threads);
    snprintf(p->backend_why, sizeof(p->backend_why), "requested");
    if (backend == SAP_BACKEND_AUTO) {
        const char *m = strchr(p->backend_log, '(');
        if (sap_context_backend(p->ctx) == SAP_BACKEND_CUDA)
            snprintf(p->backend_why, sizeof(p->backend_why), "auto: CUDA device found");
        else if (m) snprintf(p->backend_why, sizeof(p->backend_why), "auto: %.*s", (int)strcspn(m + 1, ")"), m + 1);
        else
            snprintf(p->backend_why, sizeof(p->backend_why), "auto: %s",
                     sap_has_cuda() ? "no usable CUDA device" : "built without CUDA");
    }
    return 0;
}

int solve_problem_load(const solve_args *a, solve_problem *p)
{
    memset(p, 0, sizeof(*p));
    if (create_context(a, p)) return 1;
    sap_context *ctx = p->ctx;
    const double t0 = solve_now();
    sap_status st = sap_matrix_load(ctx, a->input, &a->common.read, &p->A);
    if (st < 0) return sap_tool_fail("solve", ctx, st);
    sap_tool_read_warning("solve", ctx, st);
    const sap_csr *A = p->A;
    if (A->nrows != A->ncols) {
        fprintf(stderr, "sap solve: the matrix is %lld x %lld, not square\n", (long long)A->nrows, (long long)A->ncols);
        return 1;
    }
    const sap_int n = A->nrows;
    const size_t n1 = (size_t)(n > 0 ? n : 1);
    p->b = malloc(sizeof(double) * n1);
    if (!p->b) {
        fprintf(stderr, "sap solve: out of memory\n");
        return 1;
    }
    if (a->rhs) {
        st = sap_mm_read_dense(ctx, a->rhs, NULL, &p->Bfile, NULL);
        if (st < 0) return sap_tool_fail("solve", ctx, st);
        if (p->Bfile->nrows != n || p->Bfile->ncols < 1) {
            fprintf(stderr, "sap solve: the right-hand side is %lld x %lld, the matrix has %lld rows\n",
                    (long long)p->Bfile->nrows, (long long)p->Bfile->ncols, (long long)n);
            return 1;
        }
        for (sap_int i = 0; i < n; i++) p->b[i] = p->Bfile->val[i];
    } else {
        p->xs = malloc(sizeof(double) * n1);
        if (!p->xs) {
            fprintf(stderr, "sap solve: out of memory\n");
            return 1;
        }
        st = sap_gen_xstar(ctx, n, a->common.xstar, 1, p->xs);
        if (st >= 0) st = sap_csr_spmv(A, 1.0, p->xs, 0.0, p->b);
        if (st < 0) return sap_tool_fail("solve", ctx, st);
    }
    p->t_load = solve_now() - t0;
    return 0;
}

void solve_problem_free(solve_problem *p)
{
    free(p->b);
    free(p->xs);
    sap_dense_destroy(p->Bfile);
    sap_csr_destroy(p->A);
    sap_context_destroy(p->ctx);
    memset(p, 0, sizeof(*p));
}
