/* png_write.c -- owns PNG output: hands an 8-bit RGB image to libspng, which writes the
 * chunks, the CRCs and the zlib stream. */
#include "png_write.h"

#include <spng.h>
#include <stdio.h>

int sap_png_write_rgb(const char *path, const uint8_t *rgb, int width, int height)
{
    if (!path || !rgb || width <= 0 || height <= 0) return -1;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    spng_ctx *enc = spng_ctx_new(SPNG_CTX_ENCODER);
    if (!enc) {
        fclose(f);
        return -2;
    }
    struct spng_ihdr ihdr = {0};
    ihdr.width = (uint32_t)width;
    ihdr.height = (uint32_t)height;
    ihdr.bit_depth = 8;
    ihdr.color_type = SPNG_COLOR_TYPE_TRUECOLOR;
    const size_t len = (size_t)width * (size_t)height * 3;
    int e = spng_set_png_file(enc, f);
    if (!e) e = spng_set_ihdr(enc, &ihdr);
    if (!e) e = spng_encode_image(enc, rgb, len, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    spng_ctx_free(enc);
    int rc = e == SPNG_EMEM ? -2 : e ? -1 : 0;
    if (fclose(f) != 0 && !rc) rc = -1;
    return rc;
}
