/* context.c -- sap_context: configuration, errors, logging, statistics (the backend is
 * opened by the device layer: src/device/device.c). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 without OpenMP */
#include "base/base.h"
#include "base/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void sap_context_config_init(sap_context_config *cfg)
{
    if (!cfg) return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->backend = SAP_BACKEND_AUTO;
    cfg->device = 0;
    cfg->threads = 0;
    cfg->print_level = SAP_PRINT_WARNINGS;
}

const char *sap_backend_name(sap_backend backend) { return sap__name_of(sap__backend_words, (int)backend, "unknown"); }

sap_status sap_backend_parse(const char *name, sap_backend *backend)
{
    int v = 0;
    sap_status st = sap__enum_parse(sap__backend_words, name, backend ? &v : NULL);
    if (st == SAP_OK) *backend = (sap_backend)v;
    return st;
}

static int default_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Threads asked for, clamped to SAP_THREADS_PER_CPU x the online processors (more only
 * oversubscribes, and tens of thousands overflow the OpenMP runtime's stacks) with a
 * warning; 0 gives the OpenMP default. */
#define SAP_THREADS_PER_CPU 4
static int clamp_threads(sap_context *ctx, int threads)
{
    if (threads <= 0) return default_threads();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    const long most = SAP_THREADS_PER_CPU * cpus;
    if (threads > most) {
        sap__log(ctx, SAP_PRINT_WARNINGS, "sap: %d threads clamped to %ld (%d per online processor, %ld online)", threads,
                 most, SAP_THREADS_PER_CPU, cpus);
        return (int)most;
    }
    return threads;
}

void sap__context_describe_cpu(sap_context *ctx)
{
    snprintf(ctx->device_name, sizeof(ctx->device_name), "cpu (%d thread%s)", ctx->threads,
             ctx->threads == 1 ? "" : "s");
}

sap_context *sap__context_new(const sap_context_config *cfg, sap_status *st)
{
    *st = SAP_ERR_INVALID;
    if (cfg->backend != SAP_BACKEND_AUTO && cfg->backend != SAP_BACKEND_CPU && cfg->backend != SAP_BACKEND_CUDA)
        return NULL;
    if (cfg->threads < 0 || cfg->device < 0) return NULL;
    if (cfg->print_level < SAP_PRINT_SILENT || cfg->print_level > SAP_PRINT_DEBUG) return NULL;
    void *mem = cfg->allocator.host_alloc ? cfg->allocator.host_alloc(cfg->allocator.state, sizeof(sap_context))
                                          : malloc(sizeof(sap_context));
    *st = SAP_ERR_OUT_OF_MEMORY;
    if (!mem) return NULL;
    sap_context *ctx = mem;
    memset(ctx, 0, sizeof(*ctx));
    ctx->alloc = cfg->allocator;
    ctx->device = cfg->device;
    ctx->threads = clamp_threads(ctx, cfg->threads);
    ctx->print_level = cfg->print_level;
    ctx->log = cfg->log;
    ctx->log_state = cfg->log_state;
    ctx->backend = SAP_BACKEND_CPU;
    ctx->backend_asked = cfg->backend;
    sap__context_describe_cpu(ctx);
    *st = SAP_OK;
    return ctx;
}

void sap__context_free(sap_context *ctx)
{
    if (!ctx) return;
    sap_allocator a = ctx->alloc;
    if (a.host_free) a.host_free(a.state, ctx);
    else free(ctx);
}

sap_backend sap_context_backend(const sap_context *ctx) { return ctx ? ctx->backend : SAP_BACKEND_CPU; }

const char *sap_context_device_name(const sap_context *ctx) { return ctx ? ctx->device_name : "none"; }

int sap_context_threads(const sap_context *ctx) { return ctx ? ctx->threads : 0; }

sap_status sap_context_set_threads(sap_context *ctx, int threads)
{
    SAP_CHECK_CTX(ctx);
    if (threads < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "threads must be >= 0 (got %d)", threads);
    ctx->threads = clamp_threads(ctx, threads);
    if (ctx->backend == SAP_BACKEND_CPU) sap__context_describe_cpu(ctx);
    return SAP_OK;
}

sap_status sap_context_set_print_level(sap_context *ctx, int level)
{
    SAP_CHECK_CTX(ctx);
    if (level < SAP_PRINT_SILENT || level > SAP_PRINT_DEBUG)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "print level must be in 0..4 (got %d)", level);
    ctx->print_level = level;
    return SAP_OK;
}

int sap_context_print_level(const sap_context *ctx) { return ctx ? ctx->print_level : 0; }

const char *sap_context_last_error(const sap_context *ctx) { return ctx ? ctx->errmsg : ""; }

void sap_context_clear_error(sap_context *ctx)
{
    if (ctx) ctx->errmsg[0] = '\0';
}

sap_status sap_context_get_stats(const sap_context *ctx, sap_context_stats *stats)
{
    if (!ctx || !stats) return SAP_ERR_INVALID;
    *stats = ctx->stats;
    return SAP_OK;
}

void sap_context_reset_peak_stats(sap_context *ctx)
{
    if (!ctx) return;
    ctx->stats.host_bytes_peak = ctx->stats.host_bytes_in_use;
    ctx->stats.device_bytes_peak = ctx->stats.device_bytes_in_use;
    ctx->stats.device_block_bytes_peak = ctx->stats.device_block_bytes;
}

void sap_context_reset_transfer_stats(sap_context *ctx)
{
    if (!ctx) return;
    ctx->stats.h2d_bytes = ctx->stats.d2h_bytes = 0;
    ctx->stats.h2d_copies = ctx->stats.d2h_copies = 0;
}

/* ---- messages ------------------------------------------------------------------------ */

static void emit(sap_context *ctx, int level, const char *msg)
{
    if (!ctx) return;
    if (level > ctx->print_level) return;
    if (ctx->try_depth > 0 && level <= SAP_PRINT_WARNINGS) return; /* an expected failure */
    if (ctx->log) ctx->log(ctx->log_state, level, msg);
    else fprintf(stderr, "%s\n", msg);
}

static const char *basename_of(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\') b = p + 1;
    return b;
}

sap_status sap__verror(sap_context *ctx, sap_status status, const char *file, int line, const char *fmt,
                       va_list ap)
{
    if (!ctx) return status;
    int n = snprintf(ctx->errmsg, sizeof(ctx->errmsg), "%s:%d: ", basename_of(file), line);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof(ctx->errmsg)) vsnprintf(ctx->errmsg + n, sizeof(ctx->errmsg) - (size_t)n, fmt, ap);
    emit(ctx, status < 0 ? SAP_PRINT_ERRORS : SAP_PRINT_WARNINGS, ctx->errmsg);
    return status;
}

sap_status sap__error(sap_context *ctx, sap_status status, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sap_status s = sap__verror(ctx, status, file, line, fmt, ap);
    va_end(ap);
    return s;
}

void sap__log(sap_context *ctx, int level, const char *fmt, ...)
{
    if (!ctx || level > ctx->print_level) return;
    char buf[SAP_ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    emit(ctx, level, buf);
}

double sap__wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
