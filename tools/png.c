/* png.c -- writes an 8-bit RGB PNG: signature, IHDR, one IDAT (zlib stream), IEND. */
#include "png.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SAP_HAVE_ZLIB
#include <zlib.h>
#endif

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *buf, size_t len)
{
    uint32_t c = crc;
    for (size_t i = 0; i < len; i++) c = crc_table[(c ^ buf[i]) & 0xff] ^ (c >> 8);
    return c;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int write_chunk(FILE *f, const char *type, const uint8_t *data, size_t len)
{
    uint8_t hdr[8];
    put32(hdr, (uint32_t)len);
    memcpy(hdr + 4, type, 4);
    uint32_t crc = crc_update(0xffffffffu, hdr + 4, 4);
    crc = crc_update(crc, data, len) ^ 0xffffffffu;
    uint8_t tail[4];
    put32(tail, crc);
    if (fwrite(hdr, 1, 8, f) != 8) return -1;
    if (len && fwrite(data, 1, len, f) != len) return -1;
    if (fwrite(tail, 1, 4, f) != 4) return -1;
    return 0;
}

#ifndef SAP_HAVE_ZLIB
/* zlib stream made of stored deflate blocks (no compression). */
static uint8_t *deflate_stored(const uint8_t *raw, size_t n, size_t *outlen)
{
    size_t blocks = n / 65535 + 1;
    uint8_t *out = malloc(2 + n + 5 * blocks + 4);
    if (!out) return NULL;
    size_t w = 0;
    out[w++] = 0x78;
    out[w++] = 0x01;
    size_t pos = 0;
    do {
        size_t len = n - pos > 65535 ? 65535 : n - pos;
        out[w++] = (pos + len == n) ? 1 : 0;
        out[w++] = (uint8_t)(len & 0xff);
        out[w++] = (uint8_t)(len >> 8);
        out[w++] = (uint8_t)(~len & 0xff);
        out[w++] = (uint8_t)((~len >> 8) & 0xff);
        memcpy(out + w, raw + pos, len);
        w += len;
        pos += len;
    } while (pos < n);
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + raw[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    put32(out + w, (b << 16) | a);
    w += 4;
    *outlen = w;
    return out;
}
#endif

int sap_png_write_rgb(const char *path, const uint8_t *rgb, int width, int height)
{
    if (width <= 0 || height <= 0) return -1;
    crc_init();
    size_t stride = (size_t)width * 3 + 1;
    size_t rawlen = stride * (size_t)height;
    uint8_t *raw = malloc(rawlen);
    if (!raw) return -2;
    for (int y = 0; y < height; y++) {
        raw[(size_t)y * stride] = 0; /* filter: none */
        memcpy(raw + (size_t)y * stride + 1, rgb + (size_t)y * width * 3, (size_t)width * 3);
    }
    uint8_t *z = NULL;
    size_t zlen = 0;
#ifdef SAP_HAVE_ZLIB
    uLongf bound = compressBound((uLong)rawlen);
    z = malloc(bound);
    if (z && compress2(z, &bound, raw, (uLong)rawlen, 6) == Z_OK) zlen = bound;
    else {
        free(z);
        z = NULL;
    }
#else
    z = deflate_stored(raw, rawlen, &zlen);
#endif
    free(raw);
    if (!z) return -2;

    int rc = -1;
    FILE *f = fopen(path, "wb");
    if (f) {
        static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        uint8_t ihdr[13];
        put32(ihdr, (uint32_t)width);
        put32(ihdr + 4, (uint32_t)height);
        ihdr[8] = 8;  /* bit depth */
        ihdr[9] = 2;  /* colour type: RGB */
        ihdr[10] = 0; /* deflate */
        ihdr[11] = 0; /* adaptive filtering */
        ihdr[12] = 0; /* no interlace */
        if (fwrite(sig, 1, 8, f) == 8 && write_chunk(f, "IHDR", ihdr, 13) == 0 && write_chunk(f, "IDAT", z, zlen) == 0 &&
            write_chunk(f, "IEND", NULL, 0) == 0)
            rc = 0;
        if (fclose(f) != 0) rc = -1;
    }
    free(z);
    return rc;
}
