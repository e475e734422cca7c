/* hostscan.c -- scans of a host vector the solvers make before a solve: is it all zero (an
 * initial guess that need not be uploaded, nor multiplied by A), and where is its first
 * NaN or Inf; and a copy on all the context's threads (the staged transfers).  Both read the vector's bits in blocks (an OR or a test of the exponent
 * field, which the compiler vectorises; no branch an entry) on the context's threads: at
 * n = 10^6 a scan with a branch an entry took ~1.8 ms on the H200 host, more than the
 * GPU's whole Richardson solve of a narrow band takes to read its factors 10 times. */
#include "base/base.h"

#include <stdint.h>
#include <string.h>

#define SCAN_BLOCK 4096

static inline uint64_t bits_of(const double *x, sap_int i)
{
    uint64_t u;
    memcpy(&u, x + i, sizeof u);
    return u;
}

int sap__host_all_zero(const sap_context *ctx, const double *x, sap_int n)
{
    if (n <= 0) return 1;
    const sap_int nb = (n + SCAN_BLOCK - 1) / SCAN_BLOCK;
    const int nt = sap__threads_for(ctx, (double)n);
    int nonzero = 0;
    (void)nt;
    SAP_OMP_FOR_DYNAMIC(nt, 8)
    for (sap_int blk = 0; blk < nb; blk++) {
        int seen;
        SAP_OMP("omp atomic read")
        seen = nonzero;
        if (seen) continue;
        const sap_int i0 = blk * SCAN_BLOCK, i1 = i0 + SCAN_BLOCK < n ? i0 + SCAN_BLOCK : n;
        uint64_t acc = 0;
        for (sap_int i = i0; i < i1; i++) acc |= bits_of(x, i) << 1; /* the sign out: -0.0 is zero */
        if (acc) {
            SAP_OMP("omp atomic write")
            nonzero = 1;
        }
    }
    return !nonzero;
}

sap_int sap__host_first_nonfinite(const sap_context *ctx, const double *x, sap_int n)
{
    if (n <= 0) return n;
    const sap_int nb = (n + SCAN_BLOCK - 1) / SCAN_BLOCK;
    const int nt = sap__threads_for(ctx, (double)n);
    sap_int first = n; /* a thread's own least so far (the reduction takes the least of them) */
    (void)nt;
    SAP_OMP("omp parallel for schedule(dynamic, 8) num_threads(nt) reduction(min : first)")
    for (sap_int blk = 0; blk < nb; blk++) {
        const sap_int i0 = blk * SCAN_BLOCK;
        if (first <= i0) continue; /* this thread found one before this block already */
        const sap_int i1 = i0 + SCAN_BLOCK < n ? i0 + SCAN_BLOCK : n;
        uint64_t bad = 0;
        for (sap_int i = i0; i < i1; i++) bad |= (uint64_t)((bits_of(x, i) & 0x7ff0000000000000u) == 0x7ff0000000000000u);
        if (!bad) continue;
        sap_int i = i0;
        while ((bits_of(x, i) & 0x7ff0000000000000u) != 0x7ff0000000000000u) i++;
        if (i < first) first = i;
    }
    return first;
}

/* memcpy on the context's threads, in slices of at least COPY_SLICE bytes (a first touch of
 * fresh destination pages is paid on every thread at once) */
#define COPY_SLICE ((size_t)1 << 20)
void sap__host_copy(const sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    const size_t ns = (bytes + COPY_SLICE - 1) / COPY_SLICE;
    int nt = ns > 1 ? sap__threads(ctx) : 1;
    if ((size_t)nt > ns) nt = (int)ns;
    if (nt <= 1) {
        memcpy(dst, src, bytes);
        return;
    }
    const size_t per = (bytes + (size_t)nt - 1) / (size_t)nt;
    SAP_OMP_FOR(nt)
    for (int t = 0; t < nt; t++) {
        const size_t a = (size_t)t * per, b = a + per < bytes ? a + per : bytes;
        if (a < b) memcpy((char *)dst + a, (const char *)src + a, b - a);
    }
}
