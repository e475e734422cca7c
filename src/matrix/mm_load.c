/* mm_load.c -- owns reading an input file into memory: plain text in one read where the
 * size is known, gzip (recognized by its magic bytes, whatever the name) through zlib's
 * gzread with a 1 MiB buffer into a buffer sized from the gzip trailer (ISIZE), and the
 * SAP_MM_PAD zero bytes after the text that the entry parser relies on. */
#define _POSIX_C_SOURCE 200809L
#include "matrix/mm_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#ifdef SAP_HAVE_ZLIB
#include <zlib.h>
#endif

/* Grows *buf (holding len bytes, capacity *cap + SAP_MM_PAD) to at least need bytes:
 * exactly need the first time, doubling afterwards. */
static sap_status grow(sap_context *ctx, char **buf, size_t len, size_t *cap, size_t need)
{
    size_t ncap = *cap ? *cap : need; /* the first size is a good guess: take it as is */
    while (ncap < need) {
        if (ncap > (SIZE_MAX - SAP_MM_PAD) / 2) return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "file too large");
        ncap *= 2;
    }
    char *nb = sap__alloc(ctx, ncap + SAP_MM_PAD, 1, false, __FILE__, __LINE__);
    if (!nb) return SAP_ERR_OUT_OF_MEMORY;
    if (*buf) {
        memcpy(nb, *buf, len);
        sap__free(ctx, *buf);
    }
    *buf = nb;
    *cap = ncap;
    return SAP_OK;
}

sap_status sap__mm_load(sap_context *ctx, const char *path, char **text, size_t *len, int *gzipped)
{
    SAP_CHECK_CTX(ctx);
    *text = NULL;
    *len = 0;
    if (gzipped) *gzipped = 0;
    sap_status st = SAP_OK;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    FILE *f = NULL;
#ifdef SAP_HAVE_ZLIB
    gzFile gz = NULL;
#endif
#ifndef SAP_HAVE_ZLIB
    if (sap__mm_ends_with_gz(path))
        SAP_FAIL(ctx, SAP_ERR_NOT_COMPILED, "%s: reading .gz files needs zlib, and this build of sap has none", path);
#endif
    f = fopen(path, "rb");
    if (!f) SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    int64_t fsize = -1;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode)) fsize = (int64_t)sb.st_size;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode))
        SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot read: %s", path, strerror(EISDIR));
    unsigned char magic[2] = {0, 0};
    size_t got = fread(magic, 1, 2, f);
    if (got < 2 && ferror(f)) SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    bool is_gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;

    if (!is_gz) {
        /* plain text: one read of the whole file where its size is known */
        size_t hint = fsize >= 0 ? (size_t)fsize : (size_t)1 << 16;
        if (fsize >= 0 && (uint64_t)fsize > (uint64_t)(SIZE_MAX / 2))
            SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "%s: file of %lld bytes is too large", path, (long long)fsize);
        SAP_TRY(grow(ctx, &buf, 0, &cap, hint + 1));
        memcpy(buf, magic, got);
        n = got;
        for (;;) {
            if (n == cap) SAP_TRY(grow(ctx, &buf, n, &cap, cap + 1));
            size_t r = fread(buf + n, 1, cap - n, f);
            n += r;
            if (r == 0) {
                if (ferror(f)) SAP_FAIL(ctx, SAP_ERR_IO, "%s: read error: %s", path, strerror(errno));
                break;
            }
        }
        fclose(f);
        f = NULL;
    } else {
#ifndef SAP_HAVE_ZLIB
        SAP_FAIL(ctx, SAP_ERR_NOT_COMPILED, "%s: the file is gzip-compressed but this build of sap has no zlib", path);
#else
        if (gzipped) *gzipped = 1;
        /* ISIZE (the last 4 bytes: uncompressed size mod 2^32) as the first guess */
        size_t hint = 0;
        if (fsize >= 18 && fseek(f, -4, SEEK_END) == 0) {
            unsigned char t[4];
            if (fread(t, 1, 4, f) == 4) {
                uint64_t isize =
                    (uint64_t)t[0] | ((uint64_t)t[1] << 8) | ((uint64_t)t[2] << 16) | ((uint64_t)t[3] << 24);
                /* deflate expands at most ~1032x; beyond 4 GiB ISIZE wraps around */
                if (isize >= (uint64_t)fsize / 2 && isize <= (uint64_t)fsize * 1032) hint = (size_t)isize;
            }
        }
        if (hint == 0 && fsize > 0) hint = (size_t)fsize * 4;
        fclose(f);
        f = NULL;
        gz = gzopen(path, "rb");
        if (!gz) SAP_FAIL(ctx, SAP_ERR_IO, "%s: cannot open: %s", path, errno ? strerror(errno) : "zlib error");
        gzbuffer(gz, 1 << 20);
        SAP_TRY(grow(ctx, &buf, 0, &cap, hint + 1));
        for (;;) {
            if (n == cap) SAP_TRY(grow(ctx, &buf, n, &cap, cap + 1));
            size_t want = cap - n;
            if (want > (1u << 30)) want = 1u << 30;
            int r = gzread(gz, buf + n, (unsigned)want);
            if (r < 0) break; /* the error is examined below */
            n += (size_t)r;
            if ((size_t)r < want) break;
        }
        int zerr = Z_OK;
        const char *zmsg = gzerror(gz, &zerr);
        if (zerr == Z_ERRNO) SAP_FAIL(ctx, SAP_ERR_IO, "%s: read error: %s", path, strerror(errno));
        if (zerr != Z_OK)
            SAP_FAIL(ctx, SAP_ERR_TRUNCATED, "%s: gzip stream %s after %zu bytes of text (%s)", path,
                     zerr == Z_BUF_ERROR ? "cut short" : "corrupt", n, zmsg ? zmsg : "zlib error");
        int cr = gzclose_r(gz);
        gz = NULL;
        if (cr == Z_BUF_ERROR)
            SAP_FAIL(ctx, SAP_ERR_TRUNCATED, "%s: gzip stream cut short after %zu bytes of text", path, n);
        if (cr != Z_OK) SAP_FAIL(ctx, SAP_ERR_IO, "%s: error closing the gzip stream (%d)", path, cr);
#endif
    }
    memset(buf + n, 0, SAP_MM_PAD);
    *text = buf;
    *len = n;
    return SAP_OK;
cleanup:
    if (f) fclose(f);
#ifdef SAP_HAVE_ZLIB
    if (gz) gzclose_r(gz);
#endif
    sap__free(ctx, buf);
    return st;
}
