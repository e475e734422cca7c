/* spy.c -- renders the sparsity pattern of a CSR matrix into a PNG, shading each pixel
 * by the (log) number of entries that fall into it. */
#include "png_write.h"
#include "sap_tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sap_tool_spy_png(const sap_csr *A, const char *path, int size)
{
    if (!A || A->nrows <= 0 || A->ncols <= 0 || size <= 0) return -1;
    sap_int n = A->nrows > A->ncols ? A->nrows : A->ncols;
    /* pixels per matrix entry (small matrices) or entries per pixel (large ones) */
    int w, h;
    int cell = 1;
    if (n <= size) {
        cell = (int)(size / n);
        w = (int)(A->ncols * cell);
        h = (int)(A->nrows * cell);
    } else {
        w = (int)((double)A->ncols * size / (double)n);
        h = (int)((double)A->nrows * size / (double)n);
        if (w < 1) w = 1;
        if (h < 1) h = 1;
    }
    uint32_t *count = calloc((size_t)w * (size_t)h, sizeof(uint32_t));
    if (!count) return -2;
    for (sap_int i = 0; i < A->nrows; i++) {
        int y = n <= size ? (int)(i * cell) : (int)((double)i * h / (double)A->nrows);
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            int x = n <= size ? (int)(j * cell) : (int)((double)j * w / (double)A->ncols);
            if (x >= w) x = w - 1;
            if (y >= h) y = h - 1;
            count[(size_t)y * w + x]++;
        }
    }
    uint32_t maxc = 0;
    for (size_t k = 0; k < (size_t)w * h; k++)
        if (count[k] > maxc) maxc = count[k];

    int W = w + 2, H = h + 2; /* one-pixel frame */
    uint8_t *rgb = malloc((size_t)W * H * 3);
    if (!rgb) {
        free(count);
        return -2;
    }
    memset(rgb, 255, (size_t)W * H * 3);
    for (int x = 0; x < W; x++)
        for (int c = 0; c < 3; c++) {
            rgb[(size_t)x * 3 + c] = 128;
            rgb[((size_t)(H - 1) * W + x) * 3 + c] = 128;
        }
    for (int y = 0; y < H; y++)
        for (int c = 0; c < 3; c++) {
            rgb[((size_t)y * W) * 3 + c] = 128;
            rgb[((size_t)y * W + W - 1) * 3 + c] = 128;
        }
    const double lo[3] = {150, 185, 235}, hi[3] = {8, 24, 88};
    double lmax = log1p((double)maxc);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint32_t c = count[(size_t)y * w + x];
            if (!c) continue;
            double t = maxc > 1 ? 0.25 + 0.75 * log1p((double)c) / lmax : 1.0;
            if (n <= size) t = 1.0;
            int y0 = y + 1, x0 = x + 1;
            for (int ch = 0; ch < 3; ch++)
                rgb[((size_t)y0 * W + x0) * 3 + ch] = (uint8_t)(lo[ch] + t * (hi[ch] - lo[ch]) + 0.5);
        }
    /* small matrices: fill each cell (cell x cell pixels) from its top-left pixel */
    if (n <= size && cell > 1) {
        for (sap_int i = 0; i < A->nrows; i++)
            for (sap_int j = 0; j < A->ncols; j++) {
                size_t src = ((size_t)(i * cell + 1) * W + (size_t)(j * cell + 1)) * 3;
                if (rgb[src] == 255 && rgb[src + 1] == 255) continue;
                for (int dy = 0; dy < cell; dy++)
                    for (int dx = 0; dx < cell; dx++) {
                        size_t dst = ((size_t)(i * cell + dy + 1) * W + (size_t)(j * cell + dx + 1)) * 3;
                        memcpy(rgb + dst, rgb + src, 3);
                    }
            }
    }
    int rc = sap_png_write_rgb(path, rgb, W, H);
    free(rgb);
    free(count);
    return rc;
}
