/* mm_text.h -- internal helpers of the Matrix Market reader and writer (not installed):
 * loading a whole file (plain or gzip) into memory and a buffered output sink (plain or
 * gzip).  The number conversions are in mm_number.h. */
#ifndef SAP_MM_TEXT_H
#define SAP_MM_TEXT_H

#include "base/base.h"

#include <math.h>
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

/* Number of '\n' bytes in [p, p + n). */
int64_t sap__mm_count_newlines(const char *p, size_t n);

/* Physical memory in bytes (an upper bound for what a read may allocate), or a large
 * constant where unknown. */
int64_t sap__mm_memory_limit(void);

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

/* ---- parsing ------------------------------------------------------------------------- */

static inline bool mm_isdigit(char c) { return (unsigned char)(c - '0') < 10; }
/* Separators inside a line: blank, tab, carriage return (of CRLF files). */
static inline bool mm_isblank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

#endif /* SAP_MM_TEXT_H */
