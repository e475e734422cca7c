/* mm_io.h -- the bytes of Matrix Market files (not installed): a whole input file, plain
 * or gzip, in memory (mm_load.c), and a buffered output sink, plain or gzip (mm_sink.c).
 * Nothing here knows the format; the reader is mm_read.h, the numbers mm_number.h. */
#ifndef SAP_MM_IO_H
#define SAP_MM_IO_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Zero bytes sap__mm_load() leaves after the text (room for a sentinel). */
#define SAP_MM_PAD 64

/* Reads the whole file at path into *text (from the context allocator; free with
 * sap__free), *len bytes followed by SAP_MM_PAD zero bytes.  gzip input is recognized by
 * its magic bytes (any name) and decompressed; *gzipped (may be NULL) says so.
 * Errors: SAP_ERR_IO (with path and strerror), SAP_ERR_TRUNCATED (gzip stream cut short
 * or corrupt), SAP_ERR_NOT_COMPILED (gzip without zlib), SAP_ERR_OUT_OF_MEMORY. */
sap_status sap__mm_load(sap_context *ctx, const char *path, char **text, size_t *len, int *gzipped);

/* Does path end in ".gz" (any case)? */
static inline bool sap__mm_ends_with_gz(const char *path)
{
    size_t n = strlen(path);
    return n >= 3 && path[n - 3] == '.' && (path[n - 2] == 'g' || path[n - 2] == 'G') &&
           (path[n - 1] == 'z' || path[n - 1] == 'Z');
}

/* ---- output sink ------------------------------------------------------------------- */

typedef struct sap_mm_sink {
    sap_context *ctx;
    const char *path;
    void *file; /* FILE * */
    void *gz;   /* gzFile */
    char *buf;
    size_t len, cap;
} sap_mm_sink;

/* Opens path for writing (through zlib when it ends in ".gz"). */
sap_status sap__mm_sink_open(sap_context *ctx, const char *path, sap_mm_sink *s);
/* Writes n bytes (buffered). */
sap_status sap__mm_sink_write(sap_mm_sink *s, const char *p, size_t n);
/* Flushes and closes; with ok == 0 (an earlier error) the partial file is removed.
 * Returns the first error of flushing or closing. */
sap_status sap__mm_sink_close(sap_mm_sink *s, int ok);

#endif /* SAP_MM_IO_H */
