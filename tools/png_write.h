/* png_write.h -- writes 8-bit RGB images as PNG through libspng (used by `sap spy`). */
#ifndef SAP_TOOL_PNG_WRITE_H
#define SAP_TOOL_PNG_WRITE_H

#include <stdint.h>

/* Writes width x height RGB pixels (row-major, 3 bytes each) to path.
 * Returns 0 on success, -1 on an I/O or encoder error, -2 when out of memory. */
int sap_png_write_rgb(const char *path, const uint8_t *rgb, int width, int height);

#endif
