/* bench_out.h -- what the benchmark programs share: say() prints a line and keeps it, so
 * that the program can copy its whole output into its markdown report (bench_out_text,
 * bench_out_free), bench_cmp_double for qsort, bench_in_list (an item of a comma list), and,
 * in a CUDA build, bench_time_calls (median seconds per call of a queued operation), CU() and
 * (after cusparse.h) CUSP(), which stop the program on a CUDA runtime or cuSPARSE error.  Header-only (static functions): each benchmark is one program. */
#ifndef SAP_BENCH_OUT_H
#define SAP_BENCH_OUT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *bench_outbuf = NULL;
static size_t bench_outlen = 0, bench_outcap = 0;

/* printf to stdout (flushed), the text also kept for the report */
static inline void say(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fputs(line, stdout);
    fflush(stdout);
    size_t l = strlen(line);
    if (bench_outlen + l + 1 > bench_outcap) {
        size_t nc = bench_outcap ? bench_outcap * 2 : 65536;
        while (nc < bench_outlen + l + 1) nc *= 2;
        char *p = realloc(bench_outbuf, nc);
        if (!p) return;
        bench_outbuf = p;
        bench_outcap = nc;
    }
    memcpy(bench_outbuf + bench_outlen, line, l + 1);
    bench_outlen += l;
}

/* 1 when word is one of the comma-separated items of list (NULL list: every word is). */
static inline int bench_in_list(const char *list, const char *word)
{
    if (!list) return 1;
    size_t l = strlen(word);
    for (const char *f = strstr(list, word); f; f = strstr(f + 1, word))
        if ((f == list || f[-1] == ',') && (f[l] == '\0' || f[l] == ',')) return 1;
    return 0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* everything said so far ("" if nothing) */
static inline const char *bench_out_text(void) { return bench_outbuf ? bench_outbuf : ""; }
static inline void bench_out_free(void)
{
    free(bench_outbuf);
    bench_outbuf = NULL;
    bench_outlen = bench_outcap = 0;
}

#ifdef SAP_HAVE_CUDA
#include <cuda_runtime_api.h>
#define CU(call)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

/* Median seconds per call of fn over min(batches, 64) batches of back-to-back calls on
 * stream, each batch sized to take at least min_batch_ms (after a warm-up). */
static inline double bench_time_calls(cudaStream_t stream, void (*fn)(void *arg), void *arg, int batches,
                                      double min_batch_ms)
{
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) fn(arg); /* warm-up */
    CU(cudaStreamSynchronize(stream));
    /* size a batch to take at least min_batch_ms */
    int reps = 1;
    float ms = 0;
    for (;;) {
        CU(cudaEventRecord(e0, stream));
        for (int i = 0; i < reps; i++) fn(arg);
        CU(cudaEventRecord(e1, stream));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        if (ms >= min_batch_ms || reps >= (1 << 16)) break;
        int next = ms > 0 ? (int)(reps * (min_batch_ms * 1.2 / ms)) + 1 : reps * 8;
        reps = next > reps * 8 ? reps * 8 : (next < reps * 2 ? reps * 2 : next);
    }
    double t[64];
    int nb = batches < 64 ? batches : 64;
    for (int b = 0; b < nb; b++) {
        CU(cudaEventRecord(e0, stream));
        for (int i = 0; i < reps; i++) fn(arg);
        CU(cudaEventRecord(e1, stream));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        t[b] = (double)ms * 1e-3 / reps;
    }
    qsort(t, (size_t)nb, sizeof(double), bench_cmp_double);
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    return t[nb / 2];
}
#endif
#if defined(SAP_HAVE_CUDA) && defined(CUSPARSE_VER_MAJOR)
#define CUSP(call)                                                                                   \
    do {                                                                                             \
        cusparseStatus_t s_ = (call);                                                                \
        if (s_ != CUSPARSE_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cusparseGetErrorString(s_)); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)
#endif

#endif /* SAP_BENCH_OUT_H */
