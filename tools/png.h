/* png.h -- a minimal PNG writer for 8-bit RGB images (used by `sap spy`). */
#ifndef SAP_PNG_H
#define SAP_PNG_H

#include <stddef.h>
#include <stdint.h>

/* Writes width x height RGB pixels (row-major, 3 bytes each) to path.  Uses zlib's
 * deflate when built with zlib, else stored (uncompressed) deflate blocks.
 * Returns 0 on success, -1 on an I/O error, -2 when out of memory. */
int sap_png_write_rgb(const char *path, const uint8_t *rgb, int width, int height);

#endif
