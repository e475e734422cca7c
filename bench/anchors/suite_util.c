/* suite_util.c -- small helpers shared by the solvers of bench/suite. */
#define _POSIX_C_SOURCE 200809L
#include "suite_anchor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double suite_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void suite_note(suite_run *r, const char *fmt, ...)
{
    size_t len = strlen(r->note);
    if (len + 3 >= sizeof r->note) return;
    if (len) {
        memcpy(r->note + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + len, sizeof r->note - len, fmt, ap);
    va_end(ap);
    for (char *c = r->note + len; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
}

int *suite_int32_rowptr(const suite_problem *p, int base, suite_run *r)
{
    if (p->nnz + base > 2147483647 || p->n > 2147483646) {
        suite_note(r, "nnz=%lld does not fit 32-bit indices", (long long)p->nnz);
        return NULL;
    }
    int *a = malloc(sizeof(int) * (size_t)(p->n + 1));
    if (!a) {
        suite_note(r, "host allocation failed");
        return NULL;
    }
    for (int64_t i = 0; i <= p->n; i++) a[i] = (int)p->rowptr[i] + base;
    return a;
}

int *suite_int32_colind(const suite_problem *p, int base, suite_run *r)
{
    if (p->n + base > 2147483647) {
        suite_note(r, "N=%lld does not fit 32-bit indices", (long long)p->n);
        return NULL;
    }
    int *a = malloc(sizeof(int) * (size_t)(p->nnz > 0 ? p->nnz : 1));
    if (!a) {
        suite_note(r, "host allocation failed");
        return NULL;
    }
    for (int64_t k = 0; k < p->nnz; k++) a[k] = (int)p->colind[k] + base;
    return a;
}
