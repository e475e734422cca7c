/* gen_flow.c -- two harder PDE families for the strategy's suite (issue 19), finite volumes
 * on a grid in natural (lexicographic) order, x fastest, Dirichlet boundary:
 *
 * sap_gen_aniso3d: -div(k(x) D grad u) on the unit cube, n^3 cells, D = diag(1, 1, eps)
 *   (weak coupling in z) and k piecewise constant with jumps: k = jump on the cells of a
 *   4 x 4 x 4 checkerboard of sub-cubes, 1 elsewhere.  The face coefficient between two
 *   cells is the harmonic mean of their k times D's entry; a boundary face counts k of its
 *   cell (twice: the boundary value sits half a cell away).  Scaled by h^2: an SPD
 *   M-matrix, weakly diagonally dominant, with entries spread over |log10 eps| + |log10
 *   jump| decades -- hard for point iterations and incomplete factorizations alike.
 *
 * sap_gen_recirc2d: -nu lap u + w . grad u on [-1, 1]^2, n^2 interior points, with the
 *   recirculating wind w = (2 y (1 - x^2), -2 x (1 - y^2)) (the "double glazing" problem
 *   of Elman, Silvester and Wathen), first-order upwind differences for the convection
 *   (an M-matrix for every nu > 0), scaled by h^2: nonsymmetric, weakly dominant, with
 *   closed streamlines that make Gauss-Seidel-like sweeps and ILU slow when nu is small. */
#include "matrix/gen_rows.h"

#include <math.h>

/* The coefficients' range: every entry finite and far from underflow (the fuzzer's jump =
 * 1e308 made the harmonic means and diagonal sums overflow) */
#define GEN_FLOW_MIN 1e-12
#define GEN_FLOW_MAX 1e12

static sap_status check_n(sap_context *ctx, const char *fn, sap_int n, int ndim)
{
    if (n < 1) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: n = %lld, must be >= 1", fn, (long long)n);
    sap_int rows = 1;
    for (int d = 0; d < ndim; d++) {
        if (sap__mul_overflows(rows, n, SAP_NNZ_MAX / 7))
            return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%s: grid too large (n = %lld)", fn, (long long)n);
        rows *= n;
    }
    return SAP_OK;
}

/* ---- anisotropic diffusion with jumps ------------------------------------------------ */

typedef struct aniso {
    sap_int n;
    double eps, jump;
} aniso;

static double aniso_k(const aniso *g, sap_int x, sap_int y, sap_int z)
{
    const sap_int c = (4 * x / g->n) + (4 * y / g->n) + (4 * z / g->n);
    return c % 2 ? 1.0 : g->jump;
}

/* Row i (cell (x, y, z)) in increasing column order; returns the count (<= 7). */
static int aniso_row(const aniso *g, sap_int i, sap_int *cols, double *vals)
{
    const sap_int n = g->n, x = i % n, y = (i / n) % n, z = i / (n * n);
    const sap_int c[3] = {x, y, z}, stride[3] = {1, n, n * n};
    const double dir[3] = {1.0, 1.0, g->eps}, k = aniso_k(g, x, y, z);
    double off[2][3], diag = 0; /* [lower, upper][dimension] */
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 2; s++) {
            sap_int nb[3] = {x, y, z};
            nb[d] += s ? 1 : -1;
            if (nb[d] < 0 || nb[d] >= n) { /* boundary face: the value half a cell away */
                off[s][d] = 0;
                diag += 2.0 * k * dir[d];
                continue;
            }
            const double kn = aniso_k(g, nb[0], nb[1], nb[2]);
            off[s][d] = 2.0 * k * kn / (k + kn) * dir[d];
            diag += off[s][d];
        }
    int m = 0;
    for (int d = 2; d >= 0; d--)
        if (c[d] > 0) {
            cols[m] = i - stride[d];
            vals[m++] = -off[0][d];
        }
    cols[m] = i;
    vals[m++] = diag;
    for (int d = 0; d < 3; d++)
        if (c[d] < n - 1) {
            cols[m] = i + stride[d];
            vals[m++] = -off[1][d];
        }
    return m;
}

/* ---- recirculating convection-diffusion ---------------------------------------------- */

typedef struct recirc {
    sap_int n;
    double nu, h;
} recirc;

/* Row i (point (x, y)) in increasing column order; returns the count (<= 5). */
static int recirc_row(const recirc *g, sap_int i, sap_int *cols, double *vals)
{
    const sap_int n = g->n, ix = i % n, iy = i / n;
    const double h = g->h, x = -1.0 + h * (double)(ix + 1), y = -1.0 + h * (double)(iy + 1);
    const double wx = 2.0 * y * (1.0 - x * x), wy = -2.0 * x * (1.0 - y * y);
    /* h^2 (-nu lap) + h^2 upwind (w . grad): the upstream neighbour takes |w| h */
    const double west = -g->nu - (wx > 0 ? wx * h : 0.0), east = -g->nu - (wx < 0 ? -wx * h : 0.0);
    const double south = -g->nu - (wy > 0 ? wy * h : 0.0), north = -g->nu - (wy < 0 ? -wy * h : 0.0);
    const double diag = 4.0 * g->nu + (fabs(wx) + fabs(wy)) * h;
    int m = 0;
    if (iy > 0) cols[m] = i - n, vals[m++] = south;
    if (ix > 0) cols[m] = i - 1, vals[m++] = west;
    cols[m] = i, vals[m++] = diag;
    if (ix < n - 1) cols[m] = i + 1, vals[m++] = east;
    if (iy < n - 1) cols[m] = i + n, vals[m++] = north;
    return m;
}

static int aniso_row_v(const void *g, sap_int i, sap_int *cols, double *vals) { return aniso_row(g, i, cols, vals); }
static int recirc_row_v(const void *g, sap_int i, sap_int *cols, double *vals) { return recirc_row(g, i, cols, vals); }

sap_status sap_gen_aniso3d(sap_context *ctx, sap_int n, double eps, double jump, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_aniso3d: output pointer A is NULL");
    *A = NULL;
    if (!(eps >= GEN_FLOW_MIN && eps <= GEN_FLOW_MAX))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_aniso3d: eps = %g, must be in [%g, %g]", eps, GEN_FLOW_MIN,
                         GEN_FLOW_MAX);
    if (!(jump >= GEN_FLOW_MIN && jump <= GEN_FLOW_MAX))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_aniso3d: jump = %g, must be in [%g, %g]", jump, GEN_FLOW_MIN,
                         GEN_FLOW_MAX);
    sap_status st = check_n(ctx, "sap_gen_aniso3d", n, 3);
    if (st < 0) return st;
    const aniso g = {n, eps, jump};
    const sap_int rows = n * n * n;
    return sap__gen_rows(ctx, rows, 7 * rows - 6 * n * n, aniso_row_v, &g, A);
}

sap_status sap_gen_recirc2d(sap_context *ctx, sap_int n, double nu, sap_csr **A)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_recirc2d: output pointer A is NULL");
    *A = NULL;
    if (!(nu >= GEN_FLOW_MIN && nu <= GEN_FLOW_MAX))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_gen_recirc2d: nu = %g, must be in [%g, %g]", nu, GEN_FLOW_MIN,
                         GEN_FLOW_MAX);
    sap_status st = check_n(ctx, "sap_gen_recirc2d", n, 2);
    if (st < 0) return st;
    const recirc g = {n, nu, 2.0 / (double)(n + 1)};
    const sap_int rows = n * n;
    return sap__gen_rows(ctx, rows, 5 * rows - 4 * n, recirc_row_v, &g, A);
}
