/* fuzz_mm_gz.c -- the Matrix Market reader through a file (sap_mm_read_csr), gzip path.
 *
 * The input is the file text; it is written gzip-compressed to a private temporary file
 * and read back by sap_mm_read_csr (which recognizes gzip by its magic bytes).  An input
 * that itself starts with the gzip magic is written as is, so corrupt and cut-short gzip
 * streams reach zlib's error paths (a seed holds a real .gz for that); an input starting
 * with "CUT" is compressed and then cut short by its length mod 64 + 1 bytes.
 * Invariants: reading the compressed file gives exactly what sap_mm_parse_csr gives on
 * the text (same status; same matrix); a corrupt or cut stream is an error with a
 * message, never a matrix; nothing leaks. */
#include "fuzz_common.h"

#ifdef SAP_HAVE_ZLIB
#include <zlib.h>
#endif

#define FUZZ_GZ_BUDGET ((size_t)64 << 20)

int sap_fuzz_mm_gz(const uint8_t *data, size_t size)
{
#ifdef SAP_HAVE_ZLIB
    char path[300];
    fuzz_temp_path(path, sizeof(path), ".mtx.gz");
    int raw = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    int cut = size >= 3 && memcmp(data, "CUT", 3) == 0;
    if (raw) {
        FILE *f = fopen(path, "wb");
        FUZZ_CHECK(f, "cannot write %s", path);
        if (size) FUZZ_CHECK(fwrite(data, 1, size, f) == size, "short write to %s", path);
        fclose(f);
    } else {
        uLong bound = compressBound((uLong)size) + 32;
        unsigned char *z = (unsigned char *)malloc(bound);
        z_stream s;
        memset(&s, 0, sizeof(s));
        FUZZ_CHECK(deflateInit2(&s, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
        s.next_in = (Bytef *)(uintptr_t)data;
        s.avail_in = (uInt)size;
        s.next_out = z;
        s.avail_out = (uInt)bound;
        FUZZ_CHECK(deflate(&s, Z_FINISH) == Z_STREAM_END, "deflate");
        size_t zlen = bound - s.avail_out;
        deflateEnd(&s);
        if (cut) {
            size_t drop = size % 64 + 1;
            zlen = zlen > drop ? zlen - drop : 0;
        }
        FILE *f = fopen(path, "wb");
        FUZZ_CHECK(f, "cannot write %s", path);
        if (zlen) FUZZ_CHECK(fwrite(z, 1, zlen, f) == zlen, "short write to %s", path);
        fclose(f);
        free(z);
    }

    fuzz_budget budget;
    sap_context *ctx = fuzz_context(&budget, FUZZ_GZ_BUDGET);
    sap_csr *A = NULL;
    sap_mm_info info;
    sap_status st = sap_mm_read_csr(ctx, path, NULL, &A, &info);
    fuzz_check_error(ctx, st, "sap_mm_read_csr");
    if (st < 0) FUZZ_CHECK(A == NULL, "an error (%s) left a matrix", sap_status_name(st));
    else fuzz_check_csr(A, 0, "sap_mm_read_csr");
    if (!raw && !cut) {
        /* the same bytes from memory: the same outcome */
        sap_csr *B = NULL;
        sap_status sm = sap_mm_parse_csr(ctx, (const char *)data, size, NULL, &B, NULL);
        if (sm != SAP_ERR_OUT_OF_MEMORY && st != SAP_ERR_OUT_OF_MEMORY) {
            FUZZ_CHECK(sm == st, "from the .gz file %s, from memory %s (%s)", sap_status_name(st),
                       sap_status_name(sm), sap_context_last_error(ctx));
            if (st == SAP_OK) FUZZ_CHECK(fuzz_csr_equal(A, B), "the .gz file and the text give different matrices");
        }
        sap_csr_destroy(B);
    }
    if (cut && size > 0) FUZZ_CHECK(st < 0, "a cut-short gzip stream read as %s", sap_status_name(st));
    sap_csr_destroy(A);
    fuzz_context_done(ctx, &budget);
    remove(path);
#else
    (void)data;
    (void)size;
#endif
    return 0;
}

#ifndef SAP_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return sap_fuzz_mm_gz(data, size); }
#endif
