/* gen_poisson.c -- 5-point 2D and 7-point 3D finite-difference Laplacians (Dirichlet
 * boundary, unscaled), built directly in CSR form.
 *
 * Natural (lexicographic) ordering with x fastest: grid point (x, y) is row x + nx y,
 * (x, y, z) is row x + nx (y + ny z).  The diagonal is 4 (2D) or 6 (3D), every neighbour
 * -1, so nnz = 5 n - 2 (nx + ny) in 2D and 7 n - 2 (nx ny + ny nz + nx nz) in 3D.
 * The 3D convection-diffusion matrix (sap_gen_convdiff3d) adds central differences of
 * beta (1, 1, 1) . grad u on the same grid (h = 1 / (n + 1), scaled by h^2): neighbours
 * -1 -+ beta h / 2 (nonsymmetric; an M-matrix while beta h < 2). */
#include "matrix/gen_rows.h"

#include <math.h>

/* The stencil in column order: offsets -sz, -sy, -1, 0, +1, +sy, +sz (a dimension of
 * extent 1 contributes nothing).  dims[d] is the extent, stride[d] its row stride. */
typedef struct grid {
    int ndim;
    sap_int dims[3], stride[3];
    sap_int n;
    double diag;
    double conv; /* convection: lower neighbours -1 - conv, upper ones -1 + conv */
} grid;

/* Row i's neighbours in increasing column order; returns the count (<= 7). */
static int grid_row(const grid *g, sap_int i, sap_int *cols, double *vals)
{
    sap_int coord[3] = {0, 0, 0};
    sap_int rem = i;
    for (int d = 0; d < g->ndim; d++) {
        coord[d] = rem % g->dims[d];
        rem /= g->dims[d];
    }
    int c = 0;
    for (int d = g->ndim - 1; d >= 0; d--)
        if (coord[d] > 0) {
            cols[c] = i - g->stride[d];
            vals[c++] = -1.0 - g->conv;
        }
    cols[c] = i;
    vals[c++] = g->diag;
    for (int d = 0; d < g->ndim; d++)
        if (coord[d] < g->dims[d] - 1) {
            cols[c] = i + g->stride[d];
            vals[c++] = -1.0 + g->conv;
        }
    return c;
}

static int grid_row_v(const void *g, sap_int i, sap_int *cols, double *vals) { return grid_row(g, i, cols, vals); }

static sap_status gen_grid(sap_context *ctx, const char *fn, int ndim, const sap_int *dims, double conv, sap_csr **out)
{
    static const char *names[3] = {"nx", "ny", "nz"};
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: output pointer A is NULL", fn);
    *out = NULL;
    grid g;
    g.ndim = ndim;
    g.n = 1;
    g.diag = 2.0 * ndim;
    g.conv = conv;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 1)
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: %s = %lld, must be >= 1", fn, names[d], (long long)dims[d]);
        if (sap__mul_overflows(g.n, dims[d], SAP_NNZ_MAX / 7))
            return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%s: grid too large (%s = %lld)", fn, names[d],
                             (long long)dims[d]);
        g.dims[d] = dims[d];
        g.stride[d] = g.n;
        g.n *= dims[d];
    }

    /* nnz = (2 ndim + 1) n - 2 sum_d (n / dims[d]) */
    sap_int nnz = (2 * ndim + 1) * g.n;
    for (int d = 0; d < ndim; d++) nnz -= 2 * (g.n / g.dims[d]);
    return sap__gen_rows(ctx, g.n, nnz, grid_row_v, &g, out);
}

sap_status sap_gen_poisson2d(sap_context *ctx, sap_int nx, sap_int ny, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    sap_int dims[2] = {nx, ny};
    return gen_grid(ctx, "sap_gen_poisson2d", 2, dims, 0.0, A);
}

sap_status sap_gen_poisson3d(sap_context *ctx, sap_int nx, sap_int ny, sap_int nz, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    sap_int dims[3] = {nx, ny, nz};
    return gen_grid(ctx, "sap_gen_poisson3d", 3, dims, 0.0, A);
}

sap_status sap_gen_convdiff3d(sap_context *ctx, sap_int n, double beta, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    if (!isfinite(beta)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_convdiff3d: beta = %g", beta);
    const sap_int dims[3] = {n, n, n};
    return gen_grid(ctx, "sap_gen_convdiff3d", 3, dims, beta / (2.0 * (double)(n + 1)), A);
}
