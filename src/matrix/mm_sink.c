/* mm_sink.c -- owns writing the bytes of an output file: a 1 MiB buffer flushed to a
 * plain file, or through zlib (level 1) when the path ends in ".gz"; a failed write
 * removes the partial file. */
#define _POSIX_C_SOURCE 200809L
#include "matrix/mm_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef SAP_HAVE_ZLIB
#include <zlib.h>
#endif

#define SINK_CAP ((size_t)1 << 20)

sap_status sap__mm_sink_open(sap_context *ctx, const char *path, sap_mm_sink *s)
{
    memset(s, 0, sizeof(*s));
    s->ctx = ctx;
    s->path = path;
    sap_status st = SAP_OK;
    if (sap__mm_ends_with_gz(path)) {
#ifdef SAP_HAVE_ZLIB
        errno = 0;
        gzFile gz = gzopen(path, "wb1"); /* level 1: ~5x faster than 6, files ~25% larger */
        if (!gz)
            return SAP_ERROR(ctx, SAP_ERR_IO, "%s: cannot open for writing: %s", path,
                             errno ? strerror(errno) : "zlib error");
        gzbuffer(gz, 1 << 20);
        s->gz = gz;
#else
        return SAP_ERROR(ctx, SAP_ERR_NOT_COMPILED, "%s: writing .gz files needs zlib, and this build of sap has none",
                         path);
#endif
    } else {
        FILE *f = fopen(path, "wb");
        if (!f) return SAP_ERROR(ctx, SAP_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        s->file = f;
    }
    SAP_ALLOC(ctx, s->buf, SINK_CAP);
    s->cap = SINK_CAP;
    return SAP_OK;
cleanup:
    sap__mm_sink_close(s, 0);
    return st;
}

static sap_status sink_flush(sap_mm_sink *s)
{
    if (s->len == 0) return SAP_OK;
    size_t n = s->len;
    s->len = 0;
#ifdef SAP_HAVE_ZLIB
    if (s->gz) {
        const char *p = s->buf;
        while (n > 0) {
            unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
            int w = gzwrite((gzFile)s->gz, p, chunk);
            if (w <= 0) {
                int zerr = Z_OK;
                const char *msg = gzerror((gzFile)s->gz, &zerr);
                return SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error: %s", s->path,
                                 zerr == Z_ERRNO ? strerror(errno) : (msg ? msg : "zlib error"));
            }
            p += w;
            n -= (size_t)w;
        }
        return SAP_OK;
    }
#endif
    if (fwrite(s->buf, 1, n, (FILE *)s->file) != n)
        return SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error: %s", s->path, strerror(errno));
    return SAP_OK;
}

sap_status sap__mm_sink_write(sap_mm_sink *s, const char *p, size_t n)
{
    while (n > 0) {
        if (s->len == s->cap) {
            sap_status st = sink_flush(s);
            if (st < 0) return st;
        }
        size_t k = s->cap - s->len < n ? s->cap - s->len : n;
        memcpy(s->buf + s->len, p, k);
        s->len += k;
        p += k;
        n -= k;
    }
    return SAP_OK;
}

sap_status sap__mm_sink_close(sap_mm_sink *s, int ok)
{
    sap_status st = SAP_OK;
    if (ok && s->buf) st = sink_flush(s);
    if (s->file) {
        if (fclose((FILE *)s->file) != 0 && st == SAP_OK && ok)
            st = SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error: %s", s->path, strerror(errno));
        s->file = NULL;
    }
#ifdef SAP_HAVE_ZLIB
    if (s->gz) {
        int r = gzclose_w((gzFile)s->gz);
        if (r != Z_OK && st == SAP_OK && ok)
            st = SAP_ERROR(s->ctx, SAP_ERR_IO, "%s: write error (zlib %d): %s", s->path, r,
                           r == Z_ERRNO ? strerror(errno) : "compression failed");
        s->gz = NULL;
    }
#endif
    sap__free(s->ctx, s->buf);
    s->buf = NULL;
    if (!ok || st < 0) remove(s->path);
    return st;
}
