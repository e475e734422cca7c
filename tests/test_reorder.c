/* test_reorder.c -- the SaP reorderings, per backend (sap_test_main).
 * --backend cpu: DB matching (optimality against brute force and a dense assignment
 * solver, scaling to I-matrix form, structural singularity), maximum transversal,
 * Cuthill-McKee (paths, grids, disconnected graphs), drop-off, the third stage, the
 * composed chain (solve after reordering and map back; undo the matrix), real matrices
 * (mbeacxc: structural rank 448 of 496) and an out-of-memory sweep.
 * --backend cuda: the reordering stages that run on the GPU
 * (src/device/cuda/reorder_cuda.cu) against their CPU versions: DB weights (a few ulps:
 * log() may differ in the last bit), DB scaling (bit for bit) and the symmetrized CM graph
 * (identical), on random matrices (odd sizes, empty rows, explicit zeros, one row) and on
 * matrices of the collection; then sap_db_matching, sap_cm_reorder and sap_reorder on a
 * cuda context with the GPU path forced (both offload thresholds 0) against a cpu context.
 * Exits 77 (skipped) without CUDA or without a device (SAP_TEST_GPU_DRYRUN is not honored
 * here: the forced offload needs a cuda context). */
#define SAP_TEST_HAS_GPU_PART 1
#include "testing.h"

#include "band/band_impl.h"
#include "reorder/reorder_internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) * 0x1.0p-53; }
static sap_int below(sap_int n) { return (sap_int)(rnd() % (uint64_t)n); }
static void shuffle(sap_int *p, sap_int n)
{
    for (sap_int i = 0; i < n; i++) p[i] = i;
    for (sap_int i = n - 1; i > 0; i--) {
        sap_int j = below(i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* Dense n x n (row-major) with a presence mask -> canonical CSR (explicit zeros kept). */
static sap_csr *csr_from_dense_mask(sap_context *ctx, sap_int n, const double *a, const unsigned char *mask)
{
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    if (sap_coo_create(ctx, n, n, n * n + 1, &C) != SAP_OK) return NULL;
    for (sap_int i = 0; i < n; i++)
        for (sap_int j = 0; j < n; j++)
            if (mask[i * n + j]) sap_coo_push(C, i, j, a[i * n + j]);
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    return A;
}

/* COO lists -> CSR. */
static sap_csr *csr_from_lists(sap_context *ctx, sap_int n, sap_int m, const sap_int *r, const sap_int *c,
                               const double *v)
{
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    if (sap_coo_create(ctx, n, n, m + 1, &C) != SAP_OK) return NULL;
    for (sap_int k = 0; k < m; k++) sap_coo_push(C, r[k], c[k], v ? v[k] : 1.0);
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    return A;
}

static sap_int bandwidth(const sap_csr *A)
{
    sap_int K = 0;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int d = llabs(A->colind[p] - i);
            if (d > K) K = d;
        }
    return K;
}

static double csr_get(const sap_csr *A, sap_int i, sap_int j)
{
    for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
        if (A->colind[p] == j) return A->val[p];
    return 0.0;
}

/* Checks the DB scaling on A: B = diag(r) A diag(c) with rows permuted by rowperm has
 * |b_kk| = 1 and |b_ij| <= 1 within tol. */
static int check_imatrix(const sap_csr *A, const sap_int *rowperm, const double *r, const double *c, double tol)
{
    sap_int n = A->nrows;
    sap_int *inv = malloc(sizeof(sap_int) * (size_t)(n + 1));
    for (sap_int k = 0; k < n; k++) inv[rowperm[k]] = k;
    int ok = 1;
    for (sap_int i = 0; i < n && ok; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            double b = fabs(r[i] * A->val[p] * c[j]);
            if (b > 1.0 + tol) {
                fprintf(stderr, "  |b(%lld,%lld)| = %.17g > 1\n", (long long)inv[i], (long long)j, b);
                ok = 0;
                break;
            }
            if (inv[i] == j && fabs(b - 1.0) > tol) {
                fprintf(stderr, "  |b(%lld,%lld)| = %.17g != 1 on the diagonal\n", (long long)j, (long long)j, b);
                ok = 0;
                break;
            }
        }
    free(inv);
    return ok;
}

/* Dense LU with partial pivoting; solves a x = b in place (a row-major n x n). */
static int dense_solve(sap_int n, double *a, double *b)
{
    for (sap_int k = 0; k < n; k++) {
        sap_int piv = k;
        for (sap_int i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[piv * n + k])) piv = i;
        if (a[piv * n + k] == 0.0) return -1;
        if (piv != k) {
            for (sap_int j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[piv * n + j];
                a[piv * n + j] = t;
            }
            double t = b[k];
            b[k] = b[piv];
            b[piv] = t;
        }
        for (sap_int i = k + 1; i < n; i++) {
            double f = a[i * n + k] / a[k * n + k];
            if (f == 0.0) continue;
            for (sap_int j = k; j < n; j++) a[i * n + j] -= f * a[k * n + j];
            b[i] -= f * b[k];
        }
    }
    for (sap_int k = n - 1; k >= 0; k--) {
        double s = b[k];
        for (sap_int j = k + 1; j < n; j++) s -= a[k * n + j] * b[j];
        b[k] = s / a[k * n + k];
    }
    return 0;
}

static double *to_dense(const sap_csr *A)
{
    sap_int n = A->nrows;
    double *d = calloc((size_t)(n * n + 1), sizeof(double));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) d[i * n + A->colind[p]] += A->val[p];
    return d;
}

/* Minimum-cost assignment of a dense n x n cost matrix (row-major) by shortest
 * augmenting paths with potentials, O(n^3).  Returns the optimal cost; col_of_row
 * receives the assignment. */
static double dense_assignment(sap_int n, const double *cost, sap_int *col_of_row)
{
    double *u = calloc((size_t)n + 1, sizeof(double)), *v = calloc((size_t)n + 1, sizeof(double));
    double *minv = malloc(sizeof(double) * ((size_t)n + 1));
    sap_int *p = calloc((size_t)n + 1, sizeof(sap_int)), *way = calloc((size_t)n + 1, sizeof(sap_int));
    unsigned char *used = malloc((size_t)n + 1);
    for (sap_int i = 1; i <= n; i++) {
        p[0] = i;
        sap_int j0 = 0;
        for (sap_int j = 0; j <= n; j++) {
            minv[j] = INFINITY;
            used[j] = 0;
        }
        do {
            used[j0] = 1;
            sap_int i0 = p[j0], j1 = 0;
            double delta = INFINITY;
            for (sap_int j = 1; j <= n; j++) {
                if (used[j]) continue;
                double cur = cost[(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
                if (cur < minv[j]) {
                    minv[j] = cur;
                    way[j] = j0;
                }
                if (minv[j] < delta) {
                    delta = minv[j];
                    j1 = j;
                }
            }
            for (sap_int j = 0; j <= n; j++) {
                if (used[j]) {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            sap_int j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0);
    }
    double total = 0.0;
    for (sap_int j = 1; j <= n; j++) {
        col_of_row[p[j] - 1] = j - 1;
        total += cost[(p[j] - 1) * n + (j - 1)];
    }
    free(u);
    free(v);
    free(minv);
    free(p);
    free(way);
    free(used);
    return total;
}

/* The optimal DB cost of A by the dense solver (A must be structurally nonsingular). */
static double dense_db_cost(const sap_csr *A)
{
    sap_int n = A->nrows;
    double *cost = malloc(sizeof(double) * (size_t)(n * n + 1));
    double big = 0.0;
    for (sap_int k = 0; k < n * n; k++) cost[k] = -1.0;
    for (sap_int i = 0; i < n; i++) {
        double amax = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) amax = fmax(amax, fabs(A->val[p]));
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->val[p] != 0.0) {
                double c = log(amax) - log(fabs(A->val[p]));
                cost[i * n + A->colind[p]] = c;
                big = fmax(big, c);
            }
    }
    big = (big + 1.0) * (double)(n + 1) * 4.0;
    for (sap_int k = 0; k < n * n; k++)
        if (cost[k] < 0.0) cost[k] = big;
    sap_int *col = malloc(sizeof(sap_int) * (size_t)(n + 1));
    double c = dense_assignment(n, cost, col);
    free(cost);
    free(col);
    return c;
}

/* ---- DB against brute force ----------------------------------------------------------------- */

typedef struct brute {
    sap_int rank;   /* largest number of non-zeros on a permuted diagonal */
    double best;    /* max sum log |a_{i,s(i)}| over zero-free permutations (-inf if none) */
} brute;

static void brute_rec(sap_int n, sap_int k, sap_int *perm, unsigned char *usedc, const double *a,
                      const unsigned char *nz, sap_int cnt, double logsum, brute *b)
{
    if (k == n) {
        if (cnt > b->rank) b->rank = cnt;
        if (cnt == n && logsum > b->best) b->best = logsum;
        return;
    }
    if (b->rank == n && cnt < k) return; /* cannot beat the rank nor be zero-free */
    for (sap_int j = 0; j < n; j++) {
        if (usedc[j]) continue;
        usedc[j] = 1;
        perm[k] = j;
        int z = nz[k * n + j];
        brute_rec(n, k + 1, perm, usedc, a, nz, cnt + z, z ? logsum + log(fabs(a[k * n + j])) : logsum, b);
        usedc[j] = 0;
    }
}

static void test_db_bruteforce(sap_context *ctx)
{
    int cases = 0, singular = 0, with_zeros = 0, s0 = 0;
    for (int trial = 0; trial < 2500; trial++) {
        sap_int n = 1 + below(8);
        double density = 0.15 + 0.8 * unif();
        double zero_prob = trial % 3 == 0 ? 0.25 : 0.0;
        double a[64];
        unsigned char mask[64], nz[64];
        int has_zero = 0;
        for (sap_int k = 0; k < n * n; k++) {
            mask[k] = unif() < density;
            double mag = exp(6.0 * (unif() - 0.5));
            a[k] = (unif() < 0.5 ? -mag : mag);
            if (trial % 7 == 0) a[k] = (double)(1 + below(3)); /* many ties */
            if (mask[k] && unif() < zero_prob) {
                a[k] = 0.0;
                has_zero = 1;
            }
            nz[k] = mask[k] && a[k] != 0.0;
        }
        /* every fifth trial: each row's diagonal entry its largest (DB's S0: the identity,
         * no weights), every tenth symmetric too (S0's symmetric scaling) */
        const int rowmax = trial % 5 == 1;
        if (rowmax) {
            if (trial % 10 == 1)
                for (sap_int i = 0; i < n; i++)
                    for (sap_int j = 0; j < i; j++) {
                        a[j * n + i] = a[i * n + j];
                        mask[j * n + i] = mask[i * n + j];
                        nz[j * n + i] = nz[i * n + j];
                    }
            for (sap_int i = 0; i < n; i++) {
                double m = 1e-3;
                for (sap_int j = 0; j < n; j++)
                    if (j != i && mask[i * n + j] && fabs(a[i * n + j]) > m) m = fabs(a[i * n + j]);
                a[i * n + i] = (unif() < 0.5 ? -m : m) * (1.25 + unif());
                mask[i * n + i] = nz[i * n + i] = 1;
            }
        }
        sap_csr *A = csr_from_dense_mask(ctx, n, a, mask);
        CHECK(A != NULL);
        if (!A) continue;
        brute b = {0, -INFINITY};
        sap_int perm[8];
        unsigned char usedc[8] = {0};
        brute_rec(n, 0, perm, usedc, a, nz, 0, 0.0, &b);

        sap_int rowperm[8], tperm[8], matched = -1;
        double r[8], c[8];
        sap_db_info info;
        sap_status st = sap_db_matching(A, rowperm, r, c, &info);
        sap_status st2 = sap_max_transversal(A, tperm, &matched);
        cases++;
        with_zeros += has_zero;
        if (b.rank < n) {
            singular++;
            CHECK_STATUS(ctx, st, SAP_ERR_STRUCTURALLY_SINGULAR);
            CHECK_MSG(info.matched == b.rank, "trial %d: DB matched %lld, brute-force rank %lld", trial,
                      (long long)info.matched, (long long)b.rank);
            CHECK_STATUS(ctx, st2, SAP_ERR_STRUCTURALLY_SINGULAR);
            CHECK(matched == b.rank);
            char want[64];
            snprintf(want, sizeof(want), "structural rank %lld of %lld", (long long)b.rank, (long long)n);
            CHECK_MSG(strstr(sap_context_last_error(ctx), want) != NULL, "message '%s'", sap_context_last_error(ctx));
        } else {
            CHECK_OK(ctx, st);
            CHECK_OK(ctx, sap_perm_check(ctx, n, rowperm));
            double logp = 0.0;
            int zero_free = 1;
            for (sap_int k = 0; k < n; k++) {
                double d = a[rowperm[k] * n + k];
                if (!nz[rowperm[k] * n + k]) zero_free = 0;
                else logp += log(fabs(d));
            }
            CHECK(zero_free);
            CHECK_CLOSE(logp, b.best, 1e-11);
            CHECK_CLOSE(info.log_product, b.best, 1e-11);
            CHECK(info.matched == n);
            CHECK(info.cost >= -1e-12);
            CHECK(check_imatrix(A, rowperm, r, c, 1e-12));
            if (rowmax) { /* S0: the identity, its scaling symmetric on a symmetric matrix */
                s0++;
                for (sap_int k = 0; k < n; k++) CHECK(rowperm[k] == k);
                CHECK(info.augmentations == 0 && info.time_initial == 0);
                if (trial % 10 == 1)
                    for (sap_int k = 0; k < n; k++) CHECK(r[k] == c[k]);
            }
            /* transversal: zero-free diagonal */
            CHECK_OK(ctx, st2);
            CHECK(matched == n);
            CHECK_OK(ctx, sap_perm_check(ctx, n, tperm));
            for (sap_int k = 0; k < n; k++) CHECK(nz[tperm[k] * n + k]);
        }
        sap_csr_destroy(A);
    }
    printf("db brute force: %d cases (%d structurally singular, %d with explicit zeros, %d with the diagonal "
           "each row's largest)\n",
           cases, singular, with_zeros, s0);
    CHECK(s0 >= 400);
}

/* DB on larger random matrices against the dense assignment solver. */
static void test_db_dense_reference(sap_context *ctx)
{
    for (int trial = 0; trial < 12; trial++) {
        sap_int n = 20 + below(180);
        sap_int m = 0, cap = n * 8 + n;
        sap_int *ri = malloc(sizeof(sap_int) * (size_t)cap), *ci = malloc(sizeof(sap_int) * (size_t)cap);
        double *v = malloc(sizeof(double) * (size_t)cap);
        sap_int *hid = malloc(sizeof(sap_int) * (size_t)n);
        shuffle(hid, n);
        for (sap_int i = 0; i < n; i++) { /* a hidden transversal keeps it nonsingular */
            ri[m] = i;
            ci[m] = hid[i];
            v[m++] = exp(4.0 * (unif() - 0.5));
        }
        for (sap_int k = 0; k < n * 6; k++) {
            ri[m] = below(n);
            ci[m] = below(n);
            v[m++] = (unif() - 0.5) * exp(8.0 * (unif() - 0.5));
        }
        sap_csr *A = csr_from_lists(ctx, n, m, ri, ci, v);
        sap_int *rowperm = malloc(sizeof(sap_int) * (size_t)n);
        double *r = malloc(sizeof(double) * (size_t)n), *c = malloc(sizeof(double) * (size_t)n);
        sap_db_info info;
        sap_status st = sap_db_matching(A, rowperm, r, c, &info);
        /* duplicates may have summed to exact zero only with probability 0 */
        CHECK_OK(ctx, st);
        if (st == SAP_OK) {
            double ref = dense_db_cost(A);
            CHECK_CLOSE(info.cost, ref, 1e-10);
            CHECK(check_imatrix(A, rowperm, r, c, 1e-12));
        }
        sap_csr_destroy(A);
        free(ri);
        free(ci);
        free(v);
        free(hid);
        free(rowperm);
        free(r);
        free(c);
    }
}

/* ---- Cuthill-McKee ------------------------------------------------------------------------- */

/* Edges of an nx x ny grid (node x + nx*y) relabelled by lab[], appended to lists. */
static void grid_edges(sap_int nx, sap_int ny, sap_int off, const sap_int *lab, sap_int *r, sap_int *c, sap_int *m)
{
    for (sap_int y = 0; y < ny; y++)
        for (sap_int x = 0; x < nx; x++) {
            sap_int u = off + x + nx * y;
            r[*m] = lab[u];
            c[(*m)++] = lab[u];
            if (x + 1 < nx) {
                r[*m] = lab[u];
                c[(*m)++] = lab[u + 1];
                r[*m] = lab[u + 1];
                c[(*m)++] = lab[u];
            }
            if (y + 1 < ny) {
                r[*m] = lab[u];
                c[(*m)++] = lab[u + nx];
                r[*m] = lab[u + nx];
                c[(*m)++] = lab[u];
            }
        }
}

static sap_int cm_bandwidth_of(sap_context *ctx, const sap_csr *A, int flags, sap_cm_info *info, sap_int *perm)
{
    sap_status st = sap_cm_reorder(A, flags, perm, info);
    CHECK_OK(ctx, st);
    if (st != SAP_OK) return -1;
    CHECK_OK(ctx, sap_perm_check(ctx, A->nrows, perm));
    sap_csr *B = NULL;
    CHECK_OK(ctx, sap_csr_permute(A, perm, perm, &B));
    sap_int K = B ? bandwidth(B) : -1;
    CHECK(K == info->K_after);
    sap_csr_destroy(B);
    return K;
}

static void test_cm_path_grid(sap_context *ctx)
{
    /* paths under a random relabelling: bandwidth 1, CM and RCM */
    for (int t = 0; t < 4; t++) {
        sap_int n = t == 0 ? 2 : 10 + below(2000);
        sap_int *lab = malloc(sizeof(sap_int) * (size_t)n), *r = malloc(sizeof(sap_int) * (size_t)(3 * n)),
                *c = malloc(sizeof(sap_int) * (size_t)(3 * n)), *perm = malloc(sizeof(sap_int) * (size_t)n);
        shuffle(lab, n);
        sap_int m = 0;
        for (sap_int i = 0; i < n; i++) {
            r[m] = lab[i];
            c[m++] = lab[i];
            if (i + 1 < n) {
                r[m] = lab[i];
                c[m++] = lab[i + 1];
            }
        }
        sap_csr *A = csr_from_lists(ctx, n, m, r, c, NULL); /* nonsymmetric pattern */
        sap_cm_info info;
        for (int f = 0; f < 3; f++) {
            sap_int K = cm_bandwidth_of(ctx, A, f, &info, perm);
            CHECK_MSG(K == 1, "path n=%lld flags %d: K = %lld", (long long)n, f, (long long)K);
        }
        CHECK(info.components == 1);
        sap_csr_destroy(A);
        free(lab);
        free(r);
        free(c);
        free(perm);
    }
    /* grids: the bandwidth of a grid is min(nx, ny) */
    const sap_int dims[][2] = {{10, 10}, {30, 7}, {7, 30}, {50, 40}, {1, 20}, {2, 2}, {64, 64}, {100, 13}};
    for (size_t g = 0; g < sizeof(dims) / sizeof(dims[0]); g++) {
        sap_int nx = dims[g][0], ny = dims[g][1], n = nx * ny;
        sap_int *lab = malloc(sizeof(sap_int) * (size_t)n), *r = malloc(sizeof(sap_int) * (size_t)(5 * n)),
                *c = malloc(sizeof(sap_int) * (size_t)(5 * n)), *perm = malloc(sizeof(sap_int) * (size_t)n);
        shuffle(lab, n);
        sap_int m = 0;
        grid_edges(nx, ny, 0, lab, r, c, &m);
        sap_csr *A = csr_from_lists(ctx, n, m, r, c, NULL);
        sap_cm_info info;
        sap_int K = cm_bandwidth_of(ctx, A, SAP_CM_FORCE_RCM, &info, perm);
        sap_int opt = nx < ny ? nx : ny;
        if (opt == 1 && n > 1) opt = 1;
        CHECK_MSG(K == opt, "grid %lld x %lld: RCM bandwidth %lld (optimum %lld), %lld tries",
                  (long long)nx, (long long)ny, (long long)K, (long long)opt, (long long)info.tries);
        CHECK(info.chosen == SAP_CM_FORCE_RCM);
        CHECK(info.profile_rcm <= info.profile_cm);
        sap_int K2 = cm_bandwidth_of(ctx, A, SAP_CM_AUTO, &info, perm);
        CHECK(K2 == K);
        sap_csr_destroy(A);
        free(lab);
        free(r);
        free(c);
        free(perm);
    }
}

static sap_int find_root(sap_int *parent, sap_int x)
{
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
}

static void test_cm_disconnected(sap_context *ctx)
{
    /* grid 8x5, path 30, 5 isolated nodes, grid 12x12, triangle, grid 3x40 */
    const sap_int n = 40 + 30 + 5 + 144 + 3 + 120;
    sap_int *lab = malloc(sizeof(sap_int) * n), *r = malloc(sizeof(sap_int) * 6 * n), *c = malloc(sizeof(sap_int) * 6 * n);
    sap_int *perm = malloc(sizeof(sap_int) * n), *parent = malloc(sizeof(sap_int) * n);
    shuffle(lab, n);
    sap_int m = 0, off = 0;
    grid_edges(8, 5, off, lab, r, c, &m);
    off += 40;
    for (sap_int i = 0; i < 30; i++) {
        r[m] = lab[off + i];
        c[m++] = lab[off + i];
        if (i + 1 < 30) {
            r[m] = lab[off + i + 1];
            c[m++] = lab[off + i];
        }
    }
    off += 30;
    for (sap_int i = 0; i < 5; i++) {
        r[m] = lab[off + i];
        c[m++] = lab[off + i];
    }
    off += 5;
    grid_edges(12, 12, off, lab, r, c, &m);
    off += 144;
    for (sap_int i = 0; i < 3; i++)
        for (sap_int j = 0; j < 3; j++) {
            r[m] = lab[off + i];
            c[m++] = lab[off + j];
        }
    off += 3;
    grid_edges(3, 40, off, lab, r, c, &m);
    off += 120;
    CHECK(off == n);
    sap_csr *A = csr_from_lists(ctx, n, m, r, c, NULL);
    sap_cm_info info;
    sap_int K = cm_bandwidth_of(ctx, A, SAP_CM_AUTO, &info, perm);
    CHECK_MSG(K >= 12 && K <= 13, "disconnected: K = %lld (the 12 x 12 grid needs 12)", (long long)K);
    CHECK(info.components == 1 + 1 + 5 + 1 + 1 + 1);
    /* each component occupies consecutive positions */
    for (sap_int i = 0; i < n; i++) parent[i] = i;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int a = find_root(parent, i), b = find_root(parent, A->colind[p]);
            if (a != b) parent[a] = b;
        }
    sap_int changes = 0;
    for (sap_int k = 1; k < n; k++) changes += find_root(parent, perm[k]) != find_root(parent, perm[k - 1]);
    CHECK_MSG(changes == info.components - 1, "components interleaved: %lld changes", (long long)changes);
    /* CM of the each grid alone gives the same K */
    sap_csr_destroy(A);
    free(lab);
    free(r);
    free(c);
    free(perm);
    free(parent);

    /* a diagonal matrix and an empty one */
    sap_int dr[5] = {0, 1, 2, 3, 4};
    A = csr_from_lists(ctx, 5, 5, dr, dr, NULL);
    sap_int p5[5];
    CHECK_OK(ctx, sap_cm_reorder(A, SAP_CM_FORCE_RCM, p5, &info));
    CHECK(info.K_after == 0 && info.components == 5);
    CHECK_OK(ctx, sap_perm_check(ctx, 5, p5));
    sap_csr_destroy(A);
    sap_csr *E = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 0, 0, 0, &E));
    CHECK_OK(ctx, sap_cm_reorder(E, SAP_CM_AUTO, NULL, &info));
    sap_db_info dbi;
    CHECK_OK(ctx, sap_db_matching(E, NULL, NULL, NULL, &dbi));
    sap_csr_destroy(E);
}

/* ---- drop-off ----------------------------------------------------------------------------- */

static double kept_sum(const sap_csr *A, sap_int K)
{
    double s = 0.0;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (llabs(A->colind[p] - i) <= K) s += A->val[p] * A->val[p];
    return s;
}

static void test_dropoff(sap_context *ctx)
{
    for (int t = 0; t < 6; t++) {
        sap_int n = 50 + below(400), Kmax = 1 + below(40), m = 0;
        sap_int *r = malloc(sizeof(sap_int) * (size_t)(n * 4 * 41)), *c = malloc(sizeof(sap_int) * (size_t)(n * 4 * 41));
        double *v = malloc(sizeof(double) * (size_t)(n * 4 * 41));
        for (sap_int i = 0; i < n; i++)
            for (sap_int d = -Kmax; d <= Kmax; d++) {
                sap_int j = i + d;
                if (j < 0 || j >= n || (d != 0 && unif() < 0.4)) continue;
                r[m] = i;
                c[m] = j;
                v[m++] = (unif() - 0.5) * exp(-0.3 * (double)llabs(d)) * (t == 5 && d > 2 ? 0.0 : 1.0);
            }
        sap_csr *A = csr_from_lists(ctx, n, m, r, c, v);
        double total = kept_sum(A, n);
        const double deltas[] = {0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0};
        for (size_t k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
            double delta = deltas[k], frac = -1.0;
            sap_int K = -1;
            CHECK_OK(ctx, sap_drop_off(A, delta, &K, &frac));
            CHECK(K >= 0 && K <= bandwidth(A));
            double kept = kept_sum(A, K);
            CHECK_MSG(kept >= delta * total * (1.0 - 1e-13), "delta %g: K = %lld keeps %.17g of %.17g", delta,
                      (long long)K, kept, total);
            CHECK_CLOSE(frac, kept / total, 1e-12);
            if (K > 0) {
                double less = kept_sum(A, K - 1);
                CHECK_MSG(less < delta * total * (1.0 + 1e-13), "delta %g: K-1 = %lld already keeps %.17g", delta,
                          (long long)(K - 1), less / total);
            }
            if (delta == 0.0) CHECK(K == 0);
            sap_csr *B = NULL;
            CHECK_OK(ctx, sap_csr_band_drop(A, K, &B));
            if (B) {
                CHECK_OK(ctx, sap_csr_check(B));
                CHECK(bandwidth(B) <= K);
                CHECK_CLOSE(kept_sum(B, n), kept, 1e-14);
                sap_int cnt = 0;
                for (sap_int i = 0; i < n; i++)
                    for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) cnt += llabs(A->colind[p] - i) <= K;
                CHECK(cnt == B->nnz);
            }
            sap_csr_destroy(B);
        }
        sap_int K;
        CHECK_STATUS(ctx, sap_drop_off(A, 1.5, &K, NULL), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap_drop_off(A, NAN, &K, NULL), SAP_ERR_INVALID);
        sap_csr *B = NULL;
        CHECK_STATUS(ctx, sap_csr_band_drop(A, -1, &B), SAP_ERR_INVALID);
        sap_csr_destroy(A);
        free(r);
        free(c);
        free(v);
    }
    /* a zero matrix keeps everything at K = 0 */
    sap_int zr[3] = {0, 1, 2}, zc[3] = {2, 0, 1};
    double zv[3] = {0, 0, 0};
    sap_csr *Z = csr_from_lists(ctx, 3, 3, zr, zc, zv);
    sap_int K = -1;
    double f = 0;
    CHECK_OK(ctx, sap_drop_off(Z, 0.99, &K, &f));
    CHECK(K == 0 && f == 1.0);
    sap_csr_destroy(Z);
}

/* ---- third stage ---------------------------------------------------------------------------- */

static void check_third_stage(sap_context *ctx, const sap_csr *A, sap_int P, int verbose)
{
    sap_int n = A->nrows;
    sap_int *perm = malloc(sizeof(sap_int) * (size_t)n), *off = malloc(sizeof(sap_int) * (size_t)(P + 1));
    sap_int *kb = malloc(sizeof(sap_int) * (size_t)P), *ka = malloc(sizeof(sap_int) * (size_t)P);
    CHECK_OK(ctx, sap_third_stage(A, P, SAP_CM_AUTO, perm, kb, ka));
    CHECK_OK(ctx, sap_perm_check(ctx, n, perm));
    CHECK_OK(ctx, sap_partition_offsets(n, P, off));
    sap_int q = n / P, rem = n % P;
    for (sap_int b = 0; b < P; b++) CHECK(off[b + 1] - off[b] == q + (b < rem));
    sap_csr *B = NULL;
    CHECK_OK(ctx, sap_csr_permute(A, perm, perm, &B));
    sap_int kmax_before = 0, kmax_after = 0;
    for (sap_int b = 0; b < P && B; b++) {
        sap_int s = off[b], e = off[b + 1];
        for (sap_int i = s; i < e; i++) CHECK(perm[i] >= s && perm[i] < e);
        sap_int K = 0, K0 = 0;
        for (sap_int i = s; i < e; i++) {
            for (sap_int p = B->rowptr[i]; p < B->rowptr[i + 1]; p++)
                if (B->colind[p] >= s && B->colind[p] < e) K = K > llabs(B->colind[p] - i) ? K : llabs(B->colind[p] - i);
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                if (A->colind[p] >= s && A->colind[p] < e) K0 = K0 > llabs(A->colind[p] - i) ? K0 : llabs(A->colind[p] - i);
        }
        CHECK(K == ka[b]);
        CHECK(K0 == kb[b]);
        CHECK(ka[b] <= kb[b]);
        kmax_before = kb[b] > kmax_before ? kb[b] : kmax_before;
        kmax_after = ka[b] > kmax_after ? ka[b] : kmax_after;
    }
    if (verbose)
        printf("third stage: N = %lld, K = %lld, P = %lld: max K_i %lld -> %lld\n", (long long)n,
               (long long)bandwidth(A), (long long)P, (long long)kmax_before, (long long)kmax_after);
    sap_csr_destroy(B);
    free(perm);
    free(off);
    free(kb);
    free(ka);
}

static void test_third_stage(sap_context *ctx)
{
    /* a 3D grid (7-point) after a global RCM: the middle blocks are wide, the others
     * shrink under their own CM */
    sap_int nx = 14, ny = 12, nz = 10, n = nx * ny * nz, m = 0;
    sap_int *r = malloc(sizeof(sap_int) * (size_t)(7 * n)), *c = malloc(sizeof(sap_int) * (size_t)(7 * n));
    sap_int *lab = malloc(sizeof(sap_int) * (size_t)n), *perm = malloc(sizeof(sap_int) * (size_t)n);
    shuffle(lab, n);
    for (sap_int z = 0; z < nz; z++)
        for (sap_int y = 0; y < ny; y++)
            for (sap_int x = 0; x < nx; x++) {
                sap_int u = x + nx * (y + ny * z);
                r[m] = lab[u];
                c[m++] = lab[u];
                if (x + 1 < nx) {
                    r[m] = lab[u];
                    c[m++] = lab[u + 1];
                }
                if (y + 1 < ny) {
                    r[m] = lab[u + nx];
                    c[m++] = lab[u];
                }
                if (z + 1 < nz) {
                    r[m] = lab[u];
                    c[m++] = lab[u + nx * ny];
                }
            }
    sap_csr *A = csr_from_lists(ctx, n, m, r, c, NULL), *B = NULL;
    sap_cm_info info;
    CHECK_OK(ctx, sap_cm_reorder(A, SAP_CM_AUTO, perm, &info));
    CHECK_OK(ctx, sap_csr_permute(A, perm, perm, &B));
    const sap_int Ps[] = {1, 2, 5, 16, 33};
    for (size_t k = 0; k < sizeof(Ps) / sizeof(Ps[0]); k++) check_third_stage(ctx, B, Ps[k], Ps[k] == 16);
    check_third_stage(ctx, A, 7, 0); /* unordered input */
    sap_int kb[1], ka[1];
    CHECK_STATUS(ctx, sap_third_stage(B, n + 1, SAP_CM_AUTO, perm, kb, ka), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_third_stage(B, 0, SAP_CM_AUTO, perm, kb, ka), SAP_ERR_INVALID);
    sap_int off[4];
    CHECK(sap_partition_offsets(10, 3, off) == SAP_OK && off[1] == 4 && off[2] == 7 && off[3] == 10);
    CHECK(sap_partition_offsets(2, 3, off) == SAP_ERR_INVALID);
    sap_csr_destroy(A);
    sap_csr_destroy(B);
    free(r);
    free(c);
    free(lab);
    free(perm);
}

/* ---- the chain ------------------------------------------------------------------------------ */

/* A random nonsymmetric, structurally nonsingular matrix hiding a heavy transversal. */
static sap_csr *random_system(sap_context *ctx, sap_int n, double heavy)
{
    sap_int cap = n * 10, m = 0;
    sap_int *r = malloc(sizeof(sap_int) * (size_t)cap), *c = malloc(sizeof(sap_int) * (size_t)cap);
    double *v = malloc(sizeof(double) * (size_t)cap);
    sap_int *hid = malloc(sizeof(sap_int) * (size_t)n);
    shuffle(hid, n);
    for (sap_int i = 0; i < n; i++) {
        r[m] = i;
        c[m] = hid[i];
        v[m++] = (unif() < 0.5 ? -1 : 1) * heavy * (1.0 + unif());
    }
    for (sap_int k = 0; k < 4 * n; k++) {
        sap_int i = below(n), d = below(9) - 4, j = (hid[i] + d + n) % n; /* near the hidden entry */
        if (unif() < 0.3) j = below(n);
        r[m] = i;
        c[m] = j;
        v[m++] = unif() - 0.5;
    }
    sap_csr *A = csr_from_lists(ctx, n, m, r, c, v);
    free(r);
    free(c);
    free(v);
    free(hid);
    return A;
}

/* Runs the chain on A and checks it; strict: well-conditioned A, so the solution through
 * the reordered system must match the direct one (else only the backward error). */
static void check_chain(sap_context *ctx, const sap_csr *A, const sap_reorder_options *opt, const char *what,
                        int strict)
{
    sap_int n = A->nrows;
    sap_reorder_result *R = NULL;
    sap_status st = sap_reorder(A, opt, &R);
    CHECK_OK(ctx, st);
    if (st != SAP_OK) return;
    CHECK_OK(ctx, sap_perm_check(ctx, n, R->row_perm));
    CHECK_OK(ctx, sap_perm_check(ctx, n, R->col_perm));
    CHECK_OK(ctx, sap_csr_check(R->A));
    CHECK(R->A->nnz == A->nnz);
    /* the definition: A(i, j) = r[p[i]] * A_orig(p[i], q[j]) * c[q[j]] */
    for (int t = 0; t < 50; t++) {
        sap_int i = below(n);
        for (sap_int p = R->A->rowptr[i]; p < R->A->rowptr[i + 1]; p++) {
            sap_int j = R->A->colind[p];
            sap_int oi = R->row_perm[i], oj = R->col_perm[j];
            double want = csr_get(A, oi, oj);
            if (R->row_scale) want = R->row_scale[oi] * want * R->col_scale[oj];
            CHECK_CLOSE(R->A->val[p], want, 1e-14);
        }
    }
    /* the matrix back */
    sap_csr *U = NULL;
    CHECK_OK(ctx, sap_reorder_undo_matrix(R, R->A, &U));
    if (U) {
        CHECK(U->nnz == A->nnz);
        int same_pattern = 1, exact = 1;
        double maxrel = 0.0;
        for (sap_int i = 0; i <= n; i++) same_pattern &= U->rowptr[i] == A->rowptr[i];
        for (sap_int p = 0; p < A->nnz && same_pattern; p++) {
            same_pattern &= U->colind[p] == A->colind[p];
            if (U->val[p] != A->val[p]) exact = 0;
            if (A->val[p] != 0.0) maxrel = fmax(maxrel, fabs(U->val[p] - A->val[p]) / fabs(A->val[p]));
        }
        CHECK_MSG(same_pattern, "%s: pattern not recovered", what);
        if (!R->row_scale) CHECK_MSG(exact, "%s: values not recovered exactly", what);
        else CHECK_MSG(maxrel <= 8e-16, "%s: values recovered to %.3g", what, maxrel);
    }
    sap_csr_destroy(U);
    /* solve the reordered system densely and map back */
    double *b = malloc(sizeof(double) * (size_t)n), *bh = malloc(sizeof(double) * (size_t)n);
    double *x = malloc(sizeof(double) * (size_t)n), *xref = malloc(sizeof(double) * (size_t)n);
    double *y = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) b[i] = unif() - 0.5;
    CHECK_OK(ctx, sap_reorder_apply_rhs(R, b, bh));
    double *Dh = to_dense(R->A), *D = to_dense(A);
    memcpy(y, bh, sizeof(double) * (size_t)n);
    memcpy(xref, b, sizeof(double) * (size_t)n);
    CHECK(dense_solve(n, Dh, y) == 0);
    CHECK(dense_solve(n, D, xref) == 0);
    CHECK_OK(ctx, sap_reorder_undo_solution(R, y, x));
    double err = 0.0, nrm = 0.0;
    for (sap_int i = 0; i < n; i++) {
        err = fmax(err, fabs(x[i] - xref[i]));
        nrm = fmax(nrm, fabs(xref[i]));
    }
    if (strict) CHECK_MSG(err <= 1e-9 * fmax(1.0, nrm), "%s: solution differs by %.3g (|x| %.3g)", what, err, nrm);
    /* normwise backward error of x in the original system */
    double *Ax = calloc((size_t)n, sizeof(double));
    double anorm = 0.0, xn = 0.0, bn = 0.0, res = 0.0;
    for (sap_int i = 0; i < n; i++) {
        double rs = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            Ax[i] += A->val[p] * x[A->colind[p]];
            rs += fabs(A->val[p]);
        }
        anorm = fmax(anorm, rs);
        xn = fmax(xn, fabs(x[i]));
        bn = fmax(bn, fabs(b[i]));
    }
    for (sap_int i = 0; i < n; i++) res = fmax(res, fabs(Ax[i] - b[i]));
    double berr = res / (anorm * xn + bn);
    CHECK_MSG(berr <= 1e-13, "%s: backward error %.3g", what, berr);
    /* apply_solution is the inverse of undo_solution */
    double *y2 = malloc(sizeof(double) * (size_t)n);
    CHECK_OK(ctx, sap_reorder_apply_solution(R, x, y2));
    for (sap_int i = 0; i < n; i++) CHECK_CLOSE(y2[i], y[i], 1e-13);
    /* stage bookkeeping */
    CHECK(R->stage[SAP_STAGE_ORIGINAL].done);
    if (opt->stats) CHECK(R->stage[SAP_STAGE_ORIGINAL].nnz == A->nnz);
    if (opt->db == SAP_DB_PRODUCT && opt->scale && opt->stats)
        CHECK(R->stage[SAP_STAGE_DB].zero_diagonal == 0);
    if (R->A_band) {
        CHECK(opt->drop_delta < 1.0);
        CHECK(R->A_band->nnz <= R->A->nnz);
        CHECK(R->kept_fraction >= opt->drop_delta * (1 - 1e-13));
    }
    if (R->P > 1) {
        const sap_csr *F = R->A_band ? R->A_band : R->A;
        for (sap_int bk = 0; bk < R->P; bk++) {
            CHECK(R->Ki[bk] <= R->Ki_before[bk]);
            sap_int s = R->offsets[bk], e = R->offsets[bk + 1], K = 0;
            for (sap_int i = s; i < e; i++)
                for (sap_int p = F->rowptr[i]; p < F->rowptr[i + 1]; p++)
                    if (F->colind[p] >= s && F->colind[p] < e && llabs(F->colind[p] - i) > K) K = llabs(F->colind[p] - i);
            CHECK(K == R->Ki[bk]);
        }
    }
    free(b);
    free(bh);
    free(x);
    free(xref);
    free(y);
    free(y2);
    free(Dh);
    free(D);
    free(Ax);
    sap_reorder_result_destroy(R);
}

static void test_chain(sap_context *ctx)
{
    for (int t = 0; t < 6; t++) {
        sap_int n = 30 + below(250);
        sap_csr *A = random_system(ctx, n, t % 2 ? 10.0 : 2.0);
        sap_reorder_options o;
        sap_reorder_options_init(&o);
        o.partitions = 1 + below(6);
        check_chain(ctx, A, &o, "db+scale+cm+3rd", 1);
        o.scale = 0;
        check_chain(ctx, A, &o, "db+cm+3rd", 1);
        o.db = SAP_DB_TRANSVERSAL;
        o.cm_flags = SAP_CM_FORCE_CM;
        check_chain(ctx, A, &o, "transversal+cm", 1);
        o.db = SAP_DB_NONE;
        o.cm = 0;
        o.partitions = 1;
        check_chain(ctx, A, &o, "nothing", 1);
        sap_reorder_options_init(&o);
        o.drop_delta = 0.99;
        o.partitions = 4;
        o.stats = t % 2;
        check_chain(ctx, A, &o, "with drop-off", 1);
        sap_csr_destroy(A);
    }
    /* invalid arguments */
    sap_csr *R = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 3, 4, 0, &R));
    sap_reorder_result *res = (sap_reorder_result *)1;
    CHECK_STATUS(ctx, sap_reorder(R, NULL, &res), SAP_ERR_NOT_SQUARE);
    CHECK(res == NULL);
    sap_int p[4];
    CHECK_STATUS(ctx, sap_db_matching(R, p, NULL, NULL, NULL), SAP_ERR_NOT_SQUARE);
    CHECK_STATUS(ctx, sap_cm_reorder(R, 0, p, NULL), SAP_ERR_NOT_SQUARE);
    CHECK_STATUS(ctx, sap_max_transversal(R, p, NULL), SAP_ERR_NOT_SQUARE);
    sap_csr_destroy(R);
    sap_csr *A = random_system(ctx, 10, 3.0);
    double rs[10];
    CHECK_STATUS(ctx, sap_db_matching(A, p, rs, NULL, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_cm_reorder(A, 7, p, NULL), SAP_ERR_INVALID);
    sap_reorder_options o;
    sap_reorder_options_init(&o);
    o.db = (sap_db_mode)9;
    CHECK_STATUS(ctx, sap_reorder(A, &o, &res), SAP_ERR_INVALID);
    A->val[3] = NAN;
    sap_int pp[10];
    CHECK_STATUS(ctx, sap_db_matching(A, pp, NULL, NULL, NULL), SAP_ERR_NONFINITE);
    sap_csr_destroy(A);
}

/* ---- real matrices -------------------------------------------------------------------------- */

static sap_csr *load(sap_context *ctx, const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.mtx.gz", sap_test_matrix_dir(), name);
    sap_csr *A = NULL;
    sap_status st = sap_mm_read_csr(ctx, path, NULL, &A, NULL);
    if (st != SAP_OK) {
        fprintf(stderr, "cannot read %s: %s (%s)\n", path, sap_status_name(st), sap_context_last_error(ctx));
        return NULL;
    }
    return A;
}

static void test_real(sap_context *ctx)
{
    if (!sap_test_have_matrices("the real-matrix reorderings")) return;
    const char *names[] = {"west0067", "pores_1", "bfwa62", "fs_183_1", "impcol_a", "west0479",
                           "bcsstk01", "gr_30_30", "add32", "plskz362", "nos4", "rdb800l"};
    printf("%-10s %6s %7s %6s %6s %6s %6s %9s %9s\n", "matrix", "N", "nnz", "K0", "K_db", "K_cm", "K_drop",
           "max K_i", "DB cost");
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        sap_csr *A = load(ctx, names[k]);
        CHECK_MSG(A != NULL, "%s", names[k]);
        if (!A) continue;
        sap_int n = A->nrows;
        sap_int *rowperm = malloc(sizeof(sap_int) * (size_t)n), *tp = malloc(sizeof(sap_int) * (size_t)n);
        double *r = malloc(sizeof(double) * (size_t)n), *c = malloc(sizeof(double) * (size_t)n);
        sap_db_info info;
        sap_status st = sap_db_matching(A, rowperm, r, c, &info);
        CHECK_OK(ctx, st);
        if (st == SAP_OK) {
            CHECK_OK(ctx, sap_perm_check(ctx, n, rowperm));
            CHECK_MSG(check_imatrix(A, rowperm, r, c, 1e-12), "%s: not an I-matrix", names[k]);
            if (n <= 1000) CHECK_CLOSE(info.cost, dense_db_cost(A), 1e-9);
            sap_int matched = 0;
            CHECK_OK(ctx, sap_max_transversal(A, tp, &matched));
            for (sap_int j = 0; j < n; j++) CHECK(csr_get(A, tp[j], j) != 0.0);
        }
        sap_reorder_options o;
        sap_reorder_options_init(&o);
        o.drop_delta = 0.999;
        o.partitions = 4;
        sap_reorder_result *R = NULL;
        st = sap_reorder(A, &o, &R);
        CHECK_OK(ctx, st);
        if (R) {
            CHECK_OK(ctx, sap_perm_check(ctx, n, R->row_perm));
            CHECK_OK(ctx, sap_perm_check(ctx, n, R->col_perm));
            CHECK(R->stage[SAP_STAGE_DB].zero_diagonal == 0);
            CHECK(R->stage[SAP_STAGE_CM].K <= R->stage[SAP_STAGE_DB].K);
            CHECK(R->stage[SAP_STAGE_DROP].K <= R->stage[SAP_STAGE_CM].K);
            CHECK(R->stage[SAP_STAGE_THIRD].K <= R->stage[SAP_STAGE_DROP].K);
            printf("%-10s %6lld %7lld %6lld %6lld %6lld %6lld %9lld %9.4g\n", names[k], (long long)n,
                   (long long)A->nnz, (long long)R->stage[SAP_STAGE_ORIGINAL].K, (long long)R->stage[SAP_STAGE_DB].K,
                   (long long)R->stage[SAP_STAGE_CM].K, (long long)R->stage[SAP_STAGE_DROP].K,
                   (long long)R->stage[SAP_STAGE_THIRD].K, R->db.cost);
            check_chain(ctx, A, &o, names[k], 0);
        }
        sap_reorder_result_destroy(R);
        sap_csr_destroy(A);
        free(rowperm);
        free(tp);
        free(r);
        free(c);
    }

    /* mbeacxc: structurally singular, structural rank 448 of 496 */
    sap_csr *A = load(ctx, "mbeacxc");
    CHECK(A != NULL);
    if (A) {
        sap_int n = A->nrows;
        CHECK(n == 496);
        sap_int *p = malloc(sizeof(sap_int) * (size_t)n);
        sap_db_info info;
        memset(&info, 0, sizeof(info));
        CHECK_STATUS(ctx, sap_db_matching(A, p, NULL, NULL, &info), SAP_ERR_STRUCTURALLY_SINGULAR);
        CHECK_MSG(info.matched == 448, "mbeacxc: DB matched %lld", (long long)info.matched);
        CHECK(strstr(sap_context_last_error(ctx), "448") != NULL);
        sap_int matched = 0;
        CHECK_STATUS(ctx, sap_max_transversal(A, p, &matched), SAP_ERR_STRUCTURALLY_SINGULAR);
        CHECK(matched == 448);
        sap_reorder_result *R = (sap_reorder_result *)1;
        CHECK_STATUS(ctx, sap_reorder(A, NULL, &R), SAP_ERR_STRUCTURALLY_SINGULAR);
        CHECK(R == NULL);
        CHECK(strstr(sap_context_last_error(ctx), "structural rank 448 of 496") != NULL);
        printf("mbeacxc: %s (%s)\n", sap_status_name(SAP_ERR_STRUCTURALLY_SINGULAR), sap_context_last_error(ctx));
        sap_reorder_options o;
        sap_reorder_options_init(&o);
        o.db = SAP_DB_NONE;
        o.partitions = 8;
        CHECK_OK(ctx, sap_reorder(A, &o, &R));
        sap_reorder_result_destroy(R);
        free(p);
        sap_csr_destroy(A);
    }
}

/* ---- out of memory ---------------------------------------------------------------------------- */

static void test_oom(void)
{
    int failures_seen = 0, done = 0;
    for (long k = 0; k < 2000 && !done; k++) {
        sap_test_failing_alloc state = {-1, 0, 0};
        sap_context *ctx = sap_test_failing_context(&state);
        CHECK(ctx != NULL);
        if (!ctx) return;
        sap_csr *A = random_system(ctx, 40, 3.0);
        /* a second component and a singular-free structure: all stages run */
        state.fail_at = state.count + k;
        sap_reorder_options o;
        sap_reorder_options_init(&o);
        o.drop_delta = 0.99;
        o.partitions = 3;
        sap_reorder_result *R = NULL;
        sap_status st = sap_reorder(A, &o, &R);
        if (st == SAP_OK) {
            done = 1;
            CHECK(R != NULL);
        } else {
            failures_seen++;
            CHECK_MSG(st == SAP_ERR_OUT_OF_MEMORY, "fail_at %ld: %s", k, sap_status_name(st));
            CHECK(R == NULL);
        }
        sap_reorder_result_destroy(R);
        state.fail_at = -1;
        sap_csr_destroy(A);
        sap_context_destroy(ctx);
        CHECK_MSG(state.live == 0, "fail_at %ld: %ld blocks leaked", k, state.live);
    }
    CHECK(done);
    printf("oom sweep: %d failing allocations checked\n", failures_seen);
}

/* The parallel graph build (per-thread transposed pattern, lists sorted by rank), the
 * parallel bandwidth, CM and DB on 4 threads give exactly what 1 thread gives, on matrices
 * above the parallel threshold with symmetric (fill 1) and unsymmetric (fill 0.4)
 * patterns. */
static void test_cm_parallel(void)
{
    sap_context *c[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        sap_context_config cfg;
        sap_context_config_init(&cfg);
        cfg.backend = SAP_BACKEND_CPU;
        cfg.threads = k ? 4 : 1;
        CHECK_OK(NULL, sap_context_create(&c[k], &cfg));
        if (!c[k]) return;
    }
    const double fills[2] = {1.0, 0.4};
    for (int f = 0; f < 2; f++) {
        const sap_int n = 8000;
        sap_csr *A[2] = {NULL, NULL};
        sap__cm_work w[2];
        memset(w, 0, sizeof(w));
        sap_int *perm[2] = {malloc(sizeof(sap_int) * n), malloc(sizeof(sap_int) * n)};
        sap_cm_info info[2];
        for (int k = 0; k < 2; k++) {
            CHECK_OK(c[k], sap_gen_synthetic(c[k], n, 40, 1.0, fills[f], 7, &A[k], NULL, NULL));
            if (!A[k]) continue;
            CHECK(A[k]->nnz > SAP_REORDER_PAR_MIN);
            CHECK_OK(c[k], sap__cm_work_create(c[k], n, A[k]->nnz, &w[k]));
            if (k) {
                w[k].tcnt = malloc(sizeof(sap_int) * 4 * (size_t)n);
                w[k].tcnt_threads = 4;
            }
            sap__cm_build_graph(A[k], 0, n, k ? 4 : 1, &w[k]);
            CHECK_OK(c[k], sap_cm_reorder(A[k], SAP_CM_AUTO, perm[k], &info[k]));
        }
        if (A[0] && A[1] && w[0].xadj && w[1].xadj) {
            CHECK_MSG(memcmp(w[0].xadj, w[1].xadj, sizeof(sap_int) * (size_t)(n + 1)) == 0,
                      "fill %g: graph row pointers differ", fills[f]);
            CHECK_MSG(memcmp(w[0].adj, w[1].adj, sizeof(sap__cm_idx) * (size_t)w[0].xadj[n]) == 0,
                      "fill %g: neighbour lists differ", fills[f]);
            CHECK_MSG(memcmp(w[0].bydeg, w[1].bydeg, sizeof(sap__cm_idx) * (size_t)n) == 0,
                      "fill %g: degree order differs", fills[f]);
            CHECK_MSG(memcmp(perm[0], perm[1], sizeof(sap_int) * (size_t)n) == 0, "fill %g: CM orders differ",
                      fills[f]);
            CHECK(info[0].K_before == info[1].K_before && info[0].K_after == info[1].K_after);
            CHECK(sap__block_bandwidth(A[0], 0, n) == sap__block_bandwidth(A[1], 0, n));
            CHECK(sap__block_bandwidth(A[1], 0, n) == info[1].K_before);
            /* DB: the parallel column minima give the same matching and scaling */
            sap_int *dp[2] = {malloc(sizeof(sap_int) * n), malloc(sizeof(sap_int) * n)};
            double *rs[2] = {malloc(sizeof(double) * n), malloc(sizeof(double) * n)};
            double *cs[2] = {malloc(sizeof(double) * n), malloc(sizeof(double) * n)};
            for (int k = 0; k < 2; k++) CHECK_OK(c[k], sap_db_matching(A[k], dp[k], rs[k], cs[k], NULL));
            CHECK_MSG(memcmp(dp[0], dp[1], sizeof(sap_int) * (size_t)n) == 0, "fill %g: DB permutations differ",
                      fills[f]);
            CHECK_MSG(memcmp(rs[0], rs[1], sizeof(double) * (size_t)n) == 0 &&
                          memcmp(cs[0], cs[1], sizeof(double) * (size_t)n) == 0,
                      "fill %g: DB scalings differ", fills[f]);
            for (int k = 0; k < 2; k++) free(dp[k]), free(rs[k]), free(cs[k]);
        }
        for (int k = 0; k < 2; k++) {
            free(w[k].tcnt);
            w[k].tcnt = NULL;
            sap__cm_work_free(c[k], &w[k]);
            sap_csr_destroy(A[k]);
            free(perm[k]);
        }
    }
    sap_context_destroy(c[0]);
    sap_context_destroy(c[1]);
}


/* The CM searches with their wide levels on 4 threads (sap__cm_work_parallel, down to
 * levels of 1 and 8 adjacency entries) give the orderings, bandwidths, envelopes and tries
 * of the serial searches, and every component's segment of the CM order (FORCE_CM) is
 * exactly the breadth-first order from its first node with the neighbours taken by
 * (degree, index), checked by a plain node-by-node search here.  Graphs: random
 * unsymmetric patterns with empty rows (many components and isolated nodes), a band
 * hidden by random permutations (fill 0.5: unsymmetric), and the two side by side. */
/* xorshift, unlike the cpu part's splitmix rnd() */
static uint64_t xs_state = 0x9e3779b97f4a7c15ull;
static uint64_t xs_rnd(void)
{
    xs_state ^= xs_state << 13;
    xs_state ^= xs_state >> 7;
    xs_state ^= xs_state << 17;
    return xs_state;
}
static double xs_urand(void) { return (double)(xs_rnd() >> 11) * 0x1.0p-53; }

/* Random n x n matrix on ctx: about 'per_row' entries a row within a band of width bw
 * (bw <= 0: anywhere), the diagonal always stored unless empty_rows picks the row
 * (then the row is empty), a fraction of explicit zeros, values spread over decades. */
static sap_csr *random_matrix(sap_context *ctx, sap_int n, sap_int per_row, sap_int bw, double empty_rows,
                              double zeros, uint64_t seed)
{
    xs_state = seed * 2654435761u + 12345;
    sap_int cap = n * (per_row + 1);
    sap_int *rp = calloc((size_t)n + 1, sizeof(sap_int)), *ci = malloc(sizeof(sap_int) * (size_t)(cap + 1));
    double *v = malloc(sizeof(double) * (size_t)(cap + 1));
    char *mark = calloc((size_t)n + 1, 1);
    sap_int *cols = malloc(sizeof(sap_int) * (size_t)(per_row + 2));
    sap_int nnz = 0;
    for (sap_int i = 0; i < n; i++) {
        rp[i] = nnz;
        if (xs_urand() < empty_rows) continue;
        sap_int k = 0;
        cols[k++] = i;
        mark[i] = 1;
        for (sap_int t = 0; t < per_row; t++) {
            sap_int j;
            if (bw > 0) {
                j = i - bw + (sap_int)(xs_rnd() % (uint64_t)(2 * bw + 1));
                if (j < 0 || j >= n) continue;
            } else {
                j = (sap_int)(xs_rnd() % (uint64_t)n);
            }
            if (mark[j]) continue;
            mark[j] = 1;
            cols[k++] = j;
        }
        for (sap_int a = 1; a < k; a++) { /* insertion sort */
            sap_int x = cols[a], b = a - 1;
            while (b >= 0 && cols[b] > x) {
                cols[b + 1] = cols[b];
                b--;
            }
            cols[b + 1] = x;
        }
        for (sap_int a = 0; a < k; a++) {
            mark[cols[a]] = 0;
            ci[nnz] = cols[a];
            double x = (xs_urand() - 0.5) * pow(10.0, 6.0 * xs_urand() - 3.0);
            if (cols[a] != i && xs_urand() < zeros) x = 0.0;
            if (cols[a] == i) x = (x >= 0 ? 1.0 : -1.0) * (1.0 + fabs(x) * (double)k);
            v[nnz++] = x;
        }
    }
    rp[n] = nnz;
    sap_csr *A = NULL;
    if (sap_csr_create(ctx, n, n, nnz, &A) == SAP_OK) {
        memcpy(A->rowptr, rp, sizeof(sap_int) * (size_t)(n + 1));
        memcpy(A->colind, ci, sizeof(sap_int) * (size_t)nnz);
        memcpy(A->val, v, sizeof(double) * (size_t)nnz);
    }
    free(rp);
    free(ci);
    free(v);
    free(mark);
    free(cols);
    return A;
}

static void check_cm_levels(sap_context *ctx, const sap_csr *A, const char *what)
{
    const sap_int n = A->nrows;
    sap__cm_work w[3];
    memset(w, 0, sizeof(w));
    sap_int *perm[3] = {malloc(sizeof(sap_int) * (size_t)(n + 1)), malloc(sizeof(sap_int) * (size_t)(n + 1)),
                        malloc(sizeof(sap_int) * (size_t)(n + 1))};
    sap_int *pos = malloc(sizeof(sap_int) * (size_t)(n + 1)), *ref = malloc(sizeof(sap_int) * (size_t)(n + 1));
    sap_int *rank = malloc(sizeof(sap_int) * (size_t)(n + 1));
    const sap_int level_min[3] = {0, 1, 8};
    for (int flags = SAP_CM_AUTO; flags <= SAP_CM_FORCE_CM; flags++) {
        sap__cm_result r[3];
        for (int k = 0; k < 3; k++) {
            CHECK_OK(ctx, sap__cm_work_create(ctx, n, A->nnz, &w[k]));
            if (k) CHECK_OK(ctx, sap__cm_work_parallel(ctx, &w[k], 4, level_min[k]));
            sap__cm_build_graph(A, 0, n, 1, &w[k]);
            sap__cm_order(&w[k], n, flags, perm[k], &r[k]);
        }
        for (int k = 1; k < 3; k++) {
            CHECK_MSG(memcmp(perm[0], perm[k], sizeof(sap_int) * (size_t)n) == 0,
                      "%s flags %d level min %lld: the parallel search's order differs", what, flags,
                      (long long)level_min[k]);
            CHECK_MSG(r[0].bandwidth == r[k].bandwidth && r[0].components == r[k].components &&
                          r[0].tries == r[k].tries && r[0].profile_cm == r[k].profile_cm &&
                          r[0].profile_rcm == r[k].profile_rcm && r[0].reversed == r[k].reversed,
                      "%s flags %d: results differ (K %lld / %lld, tries %lld / %lld)", what, flags,
                      (long long)r[0].bandwidth, (long long)r[k].bandwidth, (long long)r[0].tries,
                      (long long)r[k].tries);
        }
        if (flags == SAP_CM_FORCE_CM) {
            /* the reference: each segment is the node-by-node CM order from its first node */
            const sap_int *xadj = w[1].xadj;
            const sap__cm_idx *bydeg = w[1].bydeg;
            for (sap_int k = 0; k < n; k++) rank[bydeg[k]] = k;
            for (sap_int v = 0; v < n; v++) pos[v] = -1;
            sap_int base = 0, bad = 0, ncomp = 0;
            sap_int *nb = malloc(sizeof(sap_int) * (size_t)(n + 1));
            while (base < n) {
                sap_int head = base, tail = base;
                ref[tail] = perm[1][base];
                pos[ref[tail++]] = 0;
                while (head < tail) {
                    const sap_int u = ref[head++];
                    sap_int m = 0;
                    for (sap_int p = xadj[u]; p < xadj[u + 1]; p++)
                        if (pos[w[1].adj2[p]] < 0) nb[m++] = w[1].adj2[p];
                    for (sap_int a = 1; a < m; a++) { /* by (degree, index) = by rank */
                        sap_int x = nb[a], b = a - 1;
                        while (b >= 0 && rank[nb[b]] > rank[x]) {
                            nb[b + 1] = nb[b];
                            b--;
                        }
                        nb[b + 1] = x;
                    }
                    for (sap_int a = 0; a < m; a++) {
                        pos[nb[a]] = 0;
                        ref[tail++] = nb[a];
                    }
                }
                for (sap_int k = base; k < tail; k++) bad += ref[k] != perm[1][k];
                base = tail;
                ncomp++;
            }
            free(nb);
            CHECK_MSG(bad == 0 && ncomp == r[1].components, "%s: %lld positions differ from the plain CM search",
                      what, (long long)bad);
        }
        for (int k = 0; k < 3; k++) sap__cm_work_free(ctx, &w[k]);
    }
    for (int k = 0; k < 3; k++) free(perm[k]);
    free(pos);
    free(ref);
    free(rank);
}

static void test_cm_levels(sap_context *ctx)
{
    sap_csr *A = random_matrix(ctx, 3000, 2, 0, 0.1, 0.0, 11);
    if (A) check_cm_levels(ctx, A, "random, empty rows");
    sap_csr *B = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 3000, 25, 1.0, 0.5, 5, &B, NULL, NULL));
    if (B) check_cm_levels(ctx, B, "hidden band");
    sap_csr *D = random_matrix(ctx, 4000, 6, 60, 0.02, 0.0, 12);
    if (D) check_cm_levels(ctx, D, "random band, empty rows");
    if (A && B) { /* block diagonal: the two side by side */
        const sap_int n = A->nrows + B->nrows;
        sap_csr *C = NULL;
        CHECK_OK(ctx, sap_csr_create(ctx, n, n, A->nnz + B->nnz, &C));
        if (C) {
            memcpy(C->rowptr, A->rowptr, sizeof(sap_int) * (size_t)A->nrows);
            for (sap_int i = 0; i <= B->nrows; i++) C->rowptr[A->nrows + i] = A->nnz + B->rowptr[i];
            memcpy(C->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
            memcpy(C->val, A->val, sizeof(double) * (size_t)A->nnz);
            for (sap_int p = 0; p < B->nnz; p++) {
                C->colind[A->nnz + p] = B->colind[p] + A->nrows;
                C->val[A->nnz + p] = B->val[p];
            }
            check_cm_levels(ctx, C, "two blocks");
            sap_csr_destroy(C);
        }
    }
    sap_csr_destroy(A);
    sap_csr_destroy(B);
    sap_csr_destroy(D);
}

/* sap_reorder without the per-stage statistics builds the CM graph from A's rows in the DB
 * order and permutes A once, scaling on the way; with them it forms the DB matrix, then
 * the CM one.  Both give the same permutations, scalings and matrix, bit for bit: DB with
 * and without scaling and the transversal, every CM flag, on random unsymmetric patterns
 * (rows of up to 40 entries spread anywhere: the sorted rows of the permutation), a hidden
 * band (the dense window), a narrow band CM cannot beat (AUTO keeps the DB order) and
 * with drop-off and the third stage after them. */
static void test_reorder_fused(sap_context *ctx)
{
    sap_csr *M[4] = {random_matrix(ctx, 1500, 5, 0, 0.0, 0.0, 21), random_matrix(ctx, 900, 40, 0, 0.0, 0.1, 22),
                     NULL, random_matrix(ctx, 1200, 4, 2, 0.0, 0.0, 23)};
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 2500, 30, 1.0, 0.6, 9, &M[2], NULL, NULL));
    const char *names[4] = {"random", "random long rows", "hidden band", "narrow band"};
    int kept_db_order = 0;
    for (int m = 0; m < 4; m++) {
        if (!M[m]) continue;
        for (int mode = 0; mode < 4; mode++) {
            for (int flags = SAP_CM_AUTO; flags <= SAP_CM_FORCE_CM; flags++) {
                sap_reorder_options o;
                sap_reorder_options_init(&o);
                o.db = mode == 2 ? SAP_DB_TRANSVERSAL : SAP_DB_PRODUCT;
                o.scale = mode != 1;
                o.cm_flags = flags;
                if (mode == 3) {
                    o.drop_delta = 0.999;
                    o.partitions = 3;
                }
                sap_reorder_result *R[2] = {NULL, NULL};
                for (int k = 0; k < 2; k++) {
                    o.stats = k;
                    CHECK_OK(ctx, sap_reorder(M[m], &o, &R[k]));
                }
                if (R[0] && R[1]) {
                    const sap_int n = M[m]->nrows, nnz = M[m]->nnz;
                    const sap_csr *F = R[0]->A, *S = R[1]->A;
                    int same = memcmp(R[0]->row_perm, R[1]->row_perm, sizeof(sap_int) * (size_t)n) == 0 &&
                               memcmp(R[0]->col_perm, R[1]->col_perm, sizeof(sap_int) * (size_t)n) == 0 &&
                               F->nnz == S->nnz && memcmp(F->rowptr, S->rowptr, sizeof(sap_int) * (size_t)(n + 1)) == 0 &&
                               memcmp(F->colind, S->colind, sizeof(sap_int) * (size_t)nnz) == 0 &&
                               memcmp(F->val, S->val, sizeof(double) * (size_t)nnz) == 0 &&
                               (R[0]->row_scale != NULL) == (R[1]->row_scale != NULL) &&
                               R[0]->cm.chosen == R[1]->cm.chosen && R[0]->cm.K_before == R[1]->cm.K_before &&
                               R[0]->cm.K_after == R[1]->cm.K_after && R[0]->K_drop == R[1]->K_drop;
                    if (same && R[0]->row_scale)
                        same = memcmp(R[0]->row_scale, R[1]->row_scale, sizeof(double) * (size_t)n) == 0 &&
                               memcmp(R[0]->col_scale, R[1]->col_scale, sizeof(double) * (size_t)n) == 0;
                    if (same && mode == 3)
                        same = (R[0]->A_band != NULL) == (R[1]->A_band != NULL) &&
                               memcmp(R[0]->Ki, R[1]->Ki, sizeof(sap_int) * 3) == 0;
                    CHECK_MSG(same, "%s, DB mode %d, CM flags %d: the reordering without the matrix in between differs",
                              names[m], mode, flags);
                    kept_db_order += R[0]->cm.chosen == SAP_CM_AUTO;
                }
                for (int k = 0; k < 2; k++) sap_reorder_result_destroy(R[k]);
            }
        }
    }
    CHECK_MSG(kept_db_order > 0, "no case kept the DB order (the narrow band should)");
    for (int m = 0; m < 4; m++) sap_csr_destroy(M[m]);
}

/* A DB with nothing after it (sap__reorder_share): the pass that writes its result (the
 * scaled values alone where the matching keeps the order, the shared path; the permuted
 * copy where it does not) gives R->A's K and d as sap__band_shape does and its distance
 * histogram bit for bit as sap__drop_hist does, the values sap_reorder's. */
static void test_reorder_share_shape(sap_context *ctx)
{
    sap_csr *M[6] = {NULL, NULL, NULL, random_matrix(ctx, 1500, 5, 0, 0.0, 0.0, 31), NULL, NULL};
    /* row-maximal diagonals: the symmetric scaling (unsymmetric and symmetric values),
     * several histogram blocks (> 200,000 entries each); rows of very different sizes (the
     * unsymmetric scaling); one NaN (DB's error); no S0 (the matching) */
    CHECK_OK(ctx, sap_gen_banded(ctx, 3001, 120, 0.5, 0, 5, &M[0]));
    CHECK_OK(ctx, sap_gen_banded(ctx, 2003, 150, 1.5, 1, 6, &M[1]));
    CHECK_OK(ctx, sap_gen_banded(ctx, 997, 7, 0.02, 0, 7, &M[2]));
    CHECK_OK(ctx, sap_gen_banded(ctx, 1999, 7, 1.0, 0, 8, &M[4]));
    CHECK_OK(ctx, sap_gen_banded(ctx, 500, 3, 1.0, 0, 9, &M[5]));
    if (M[4])
        for (sap_int i = 0; i < M[4]->nrows; i += 3)
            for (sap_int q = M[4]->rowptr[i]; q < M[4]->rowptr[i + 1]; q++) M[4]->val[q] *= 1e-4;
    if (M[5]) M[5]->val[M[5]->rowptr[250] + 1] = NAN;
    int cases[2] = {0, 0}; /* DBs that permuted, that kept the order */
    for (int m = 0; m < 6; m++) {
        if (!M[m]) continue;
        for (int want = 0; want < 2; want++) {
            sap_reorder_options o;
            sap_reorder_options_init(&o);
            o.cm = 0;
            o.stats = 0;
            sap_reorder_result *R = NULL, *Q = NULL;
            int shared = 0;
            sap__copy_shape sh = {.want_hist = want};
            if (m == 5) { /* the NaN: DB's error either way, nothing made */
                sap_status s1 = sap__reorder_share(M[m], &o, &R, &shared, &sh), s2 = sap_reorder(M[m], &o, &Q);
                CHECK_MSG(s1 == SAP_ERR_NONFINITE && s2 == s1 && !R && !Q && !shared && !sh.done && !sh.hist,
                          "NaN: %s / %s, shared %d, shape %d", sap_status_string(s1), sap_status_string(s2), shared,
                          sh.done);
                goto next;
            }
            CHECK_OK(ctx, sap__reorder_share(M[m], &o, &R, &shared, &sh));
            CHECK_OK(ctx, sap_reorder(M[m], &o, &Q));
            if (!R || !Q) goto next;
            const sap_int n = M[m]->nrows;
            int ident = 1;
            for (sap_int i = 0; i < n; i++) ident &= Q->row_perm[i] == i;
            cases[ident]++;
            CHECK_MSG(shared == ident && sh.done, "matrix %d: shared %d, shape %d, identity matching %d", m, shared,
                      sh.done, ident);
            CHECK_MSG(memcmp(R->A->val, Q->A->val, sizeof(double) * (size_t)M[m]->nnz) == 0 &&
                          memcmp(R->row_scale, Q->row_scale, sizeof(double) * (size_t)n) == 0 &&
                          memcmp(R->col_scale, Q->col_scale, sizeof(double) * (size_t)n) == 0 &&
                          R->db.log_product == Q->db.log_product && R->db.matched == Q->db.matched,
                      "matrix %d: the shared copy's values, scaling or DB figures differ from sap_reorder's", m);
            if (m == 4) { /* the unsymmetric scaling */
                int unit = 1;
                for (sap_int i = 0; i < n; i++) unit &= R->col_scale[i] == 1.0;
                CHECK_MSG(unit && ident, "rows of different sizes: the unsymmetric scaling (c = 1) expected");
            }
            if (sh.done) {
                sap_int K = -1;
                double d = -1;
                sap__band_shape(R->A, 3, &K, &d);
                CHECK_MSG(K == sh.K && d == sh.d, "matrix %d: pass K %lld d %.17g, band_shape K %lld d %.17g", m,
                          (long long)sh.K, sh.d, (long long)K, d);
                CHECK_MSG((sh.hist != NULL) == want, "matrix %d: histogram %s, wanted %d", m,
                          sh.hist ? "made" : "not made", want);
                double *h = NULL;
                sap_int hl = 0;
                CHECK_OK(ctx, sap__drop_hist(R->A, &h, &hl));
                if (sh.hist && h)
                    CHECK_MSG(hl == sh.hist_len && memcmp(h, sh.hist, sizeof(double) * (size_t)hl) == 0,
                              "matrix %d: the pass's histogram (%lld) differs from sap__drop_hist's (%lld)", m,
                              (long long)sh.hist_len, (long long)hl);
                sap__free(ctx, h);
            }
        next:
            sap__free(ctx, sh.hist);
            if (R && shared) R->A->rowptr = NULL, R->A->colind = NULL;
            sap_reorder_result_destroy(R);
            sap_reorder_result_destroy(Q);
        }
    }
    CHECK_MSG(cases[0] > 0 && cases[1] > 0, "%d DBs permuted, %d kept the order: both wanted", cases[0], cases[1]);
    for (int m = 0; m < 6; m++) sap_csr_destroy(M[m]);
}

/* sap__block_bandwidth(_rows): the widest |j - i| of the entries with both i and j in
 * [s, e), against every entry read, on random blocks of matrices with empty rows and
 * rows reaching past the block on either side; with and without a row map. */
static void test_block_bandwidth(sap_context *ctx)
{
    sap_csr *M[2] = {random_matrix(ctx, 700, 6, 0, 0.1, 0.0, 41), random_matrix(ctx, 900, 9, 60, 0.05, 0.0, 42)};
    int bad = 0, cases = 0;
    for (int m = 0; m < 2; m++) {
        if (!M[m]) continue;
        const sap_int n = M[m]->nrows;
        sap_int *rows = malloc(sizeof(sap_int) * (size_t)n);
        if (!rows) continue;
        for (sap_int i = 0; i < n; i++) rows[i] = n - 1 - i;
        xs_state = 77 + (uint64_t)m;
        for (int t = 0; t < 200; t++) {
            sap_int s = (sap_int)(xs_rnd() % (uint64_t)n), e = (sap_int)(xs_rnd() % (uint64_t)(n + 1));
            if (t == 0) s = 0, e = n;
            if (s > e) { sap_int x = s; s = e; e = x; }
            for (int map = 0; map < 2; map++) {
                sap_int K = 0;
                for (sap_int i = s; i < e; i++) {
                    const sap_int r = map ? rows[i] : i;
                    for (sap_int p = M[m]->rowptr[r]; p < M[m]->rowptr[r + 1]; p++) {
                        const sap_int j = M[m]->colind[p], d = j > i ? j - i : i - j;
                        if (j >= s && j < e && d > K) K = d;
                    }
                }
                bad += sap__block_bandwidth_rows(M[m], map ? rows : NULL, s, e) != K;
                cases++;
            }
        }
        free(rows);
    }
    CHECK_MSG(bad == 0 && cases == 800, "block bandwidth: %d of %d blocks wrong", bad, cases);
    for (int m = 0; m < 2; m++) sap_csr_destroy(M[m]);
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    test_db_bruteforce(ctx);
    test_db_dense_reference(ctx);
    test_cm_path_grid(ctx);
    test_cm_disconnected(ctx);
    test_dropoff(ctx);
    test_third_stage(ctx);
    test_chain(ctx);
    test_real(ctx);
    test_cm_parallel();
    test_cm_levels(ctx);
    test_reorder_fused(ctx);
    test_reorder_share_shape(ctx);
    test_block_bandwidth(ctx);
    test_oom();
    sap_context_destroy(ctx);
    return 0;
}

/* ==== --backend cuda: the GPU stages against their CPU versions ======================== */

static sap_context *G;
#ifdef SAP_HAVE_CUDA
static sap_context *C;

static sap_csr *clone_to(sap_context *ctx, const sap_csr *A)
{
    sap_csr *B = NULL;
    if (sap_csr_create(ctx, A->nrows, A->ncols, A->nnz, &B) != SAP_OK) return NULL;
    memcpy(B->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1));
    memcpy(B->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
    memcpy(B->val, A->val, sizeof(double) * (size_t)A->nnz);
    return B;
}

/* The three stages, GPU (on G) vs CPU, on A (a matrix of C). */
static void compare_stages(const sap_csr *A, const char *what)
{
    const sap_int n = A->nrows, nnz = A->nnz;
    /* weights */
    double *cc = malloc(sizeof(double) * (size_t)(nnz + 1)), *cg = malloc(sizeof(double) * (size_t)(nnz + 1));
    double *lc = malloc(sizeof(double) * (size_t)(n + 1)), *lg = malloc(sizeof(double) * (size_t)(n + 1));
    sap_int nfc = -1, nfg = -1;
    sap__db_weights_cpu(A, 4, cc, lc, &nfc);
    CHECK_OK(G, sap__ops(G)->db_weights(G, A, cg, lg, &nfg));
    CHECK_MSG(nfc == nfg, "%s: nonfinite %lld vs %lld", what, (long long)nfc, (long long)nfg);
    sap_int bad = 0;
    double worst = 0.0;
    for (sap_int i = 0; i < n; i++) {
        if (fabs(lg[i] - lc[i]) > 4 * DBL_EPSILON * fabs(lc[i])) bad++;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (isinf(cc[p]) || cc[p] == 0.0) {
                if (cg[p] != cc[p]) bad++;
                continue;
            }
            double scale = fabs(lc[i]) + fabs(log(fabs(A->val[p])));
            double d = fabs(cg[p] - cc[p]);
            if (d > worst * scale) worst = d / (scale > 0 ? scale : 1.0);
            if (d > 8 * DBL_EPSILON * scale) bad++;
        }
    }
    CHECK_MSG(bad == 0, "%s: %lld weights differ by more than a few ulps (worst %.3g)", what, (long long)bad, worst);

    /* scaling */
    double *rs = malloc(sizeof(double) * (size_t)(n + 1)), *cs = malloc(sizeof(double) * (size_t)(n + 1));
    for (sap_int i = 0; i < n; i++) {
        rs[i] = exp(4.0 * xs_urand() - 2.0);
        cs[i] = exp(4.0 * xs_urand() - 2.0);
    }
    sap_csr *Mc = clone_to(C, A), *Mg = clone_to(C, A);
    CHECK(Mc && Mg);
    if (Mc && Mg) {
        sap__scale_rows_cols_cpu(Mc, rs, cs, 4);
        CHECK_OK(G, sap__ops(G)->scale_rows_cols(G, Mg, rs, cs));
        CHECK_MSG(nnz == 0 || memcmp(Mc->val, Mg->val, sizeof(double) * (size_t)nnz) == 0, "%s: scaled values differ",
                  what);
    }
    sap_csr_destroy(Mc);
    sap_csr_destroy(Mg);

    /* symmetrized graph */
    sap__cm_work w;
    memset(&w, 0, sizeof(w));
    CHECK_OK(C, sap__cm_work_create(C, n, nnz, &w));
    sap_int *xg = malloc(sizeof(sap_int) * (size_t)(n + 1));
    int32_t *ag = malloc(sizeof(int32_t) * (size_t)(2 * nnz + 1));
    sap_int nadj = -1;
    if (w.xadj) {
        sap__cm_build_graph(A, 0, n, 4, &w);
        CHECK_OK(G, sap__ops(G)->sym_graph(G, A, xg, ag, &nadj));
        CHECK_MSG(memcmp(xg, w.xadj, sizeof(sap_int) * (size_t)(n + 1)) == 0, "%s: graph row pointers differ", what);
        CHECK_MSG(nadj == w.xadj[n], "%s: %lld graph entries vs %lld", what, (long long)nadj, (long long)w.xadj[n]);
        if (nadj == w.xadj[n])
            CHECK_MSG(nadj == 0 || memcmp(ag, w.adj2, sizeof(int32_t) * (size_t)nadj) == 0, "%s: graph lists differ",
                      what);
    }
    sap__cm_work_free(C, &w);
    free(xg);
    free(ag);
    free(rs);
    free(cs);
    free(cc);
    free(cg);
    free(lc);
    free(lg);
}

/* The public entry points on the cuda context (GPU path forced) vs the cpu context. */
static void compare_reorder(const sap_csr *Ac, const char *what)
{
    sap_csr *Ag = clone_to(G, Ac);
    CHECK(Ag != NULL);
    if (!Ag) return;
    const sap_int n = Ac->nrows;
    sap_int *pc = malloc(sizeof(sap_int) * (size_t)(n + 1)), *pg = malloc(sizeof(sap_int) * (size_t)(n + 1));
    sap_cm_info ic, ig;
    sap_status sc = sap_cm_reorder(Ac, SAP_CM_AUTO, pc, &ic), sg = sap_cm_reorder(Ag, SAP_CM_AUTO, pg, &ig);
    CHECK_MSG(sc == sg, "%s: cm status %s vs %s", what, sap_status_name(sc), sap_status_name(sg));
    if (sc == SAP_OK && sg == SAP_OK) {
        CHECK_MSG(memcmp(pc, pg, sizeof(sap_int) * (size_t)n) == 0, "%s: CM permutations differ", what);
        CHECK_MSG(ic.K_after == ig.K_after, "%s: CM K %lld vs %lld", what, (long long)ic.K_after,
                  (long long)ig.K_after);
    }
    sap_reorder_options o;
    sap_reorder_options_init(&o);
    o.partitions = n > 64 ? 4 : 1;
    sap_reorder_result *rc = NULL, *rg = NULL;
    sc = sap_reorder(Ac, &o, &rc);
    sg = sap_reorder(Ag, &o, &rg);
    CHECK_MSG(sc == sg, "%s: reorder status %s vs %s", what, sap_status_name(sc), sap_status_name(sg));
    if (rc && rg) {
        CHECK_CLOSE(rg->db.cost, rc->db.cost, 1e-12);
        int same = memcmp(rc->row_perm, rg->row_perm, sizeof(sap_int) * (size_t)n) == 0 &&
                   memcmp(rc->col_perm, rg->col_perm, sizeof(sap_int) * (size_t)n) == 0;
        if (same) {
            CHECK_MSG(rc->K_drop == rg->K_drop, "%s: K %lld vs %lld", what, (long long)rc->K_drop,
                      (long long)rg->K_drop);
            sap_int bad = 0;
            for (sap_int p = 0; p < rc->A->nnz; p++)
                if (!sap_test_close(rc->A->val[p], rg->A->val[p], 1e-12)) bad++;
            CHECK_MSG(bad == 0, "%s: %lld reordered values differ", what, (long long)bad);
        }
        printf("  %-28s n=%-8lld cost %.17g / %.17g, K %lld / %lld, permutations %s\n", what, (long long)n,
               rc->db.cost, rg->db.cost, (long long)rc->K_drop, (long long)rg->K_drop,
               same ? "identical" : "differ (tie among equal-cost matchings)");
    }
    sap_reorder_result_destroy(rc);
    sap_reorder_result_destroy(rg);
    free(pc);
    free(pg);
    sap_csr_destroy(Ag);
}

static void real_matrices(void)
{
    if (!sap_test_have_matrices("real matrices")) return;
    static const char *names[] = {"bcsstk17", "cage11", "Andrews", "airfoil_2d", "G3_circuit"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.mtx.gz", sap_test_matrix_dir(), names[k]);
        sap_csr *A = NULL;
        if (sap_mm_read_csr(C, path, NULL, &A, NULL) != SAP_OK) {
            printf("  %s: not readable, skipped\n", names[k]);
            continue;
        }
        compare_stages(A, names[k]);
        compare_reorder(A, names[k]);
        sap_csr_destroy(A);
    }
}
#endif

static int gpu_part(void)
{
    int rc = sap_test_gpu_context(sap_test_name(), 0, &G, NULL);
    if (rc) return rc;
#ifdef SAP_HAVE_CUDA
    C = sap_test_context(SAP_BACKEND_CPU);
    printf("device: %s\n", sap_context_device_name(G));
    sap__offload_set_min_nnz(G, SAP_OFFLOAD_GRAPH, 0); /* force the GPU path */
    sap__offload_set_min_nnz(G, SAP_OFFLOAD_DB, 0);

    static const struct {
        sap_int n, per_row, bw;
        double empty, zeros;
    } cases[] = {
        {1, 0, 0, 0.0, 0.0},       {1, 3, 0, 0.0, 0.0},      {2, 1, 0, 0.0, 0.5},      {7, 3, 0, 0.3, 0.3},
        {31, 5, 0, 0.0, 0.1},      {33, 4, 3, 0.1, 0.2},     {257, 9, 0, 0.05, 0.05}, {1001, 7, 20, 0.0, 0.1},
        {4099, 40, 0, 0.02, 0.02}, {30011, 12, 200, 0.0, 0.0}, {200003, 8, 0, 0.001, 0.01},
    };
    const int tiny = sap_test_tiny(); /* racecheck: every kernel, the small cases only */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (tiny && cases[k].n > 5000) continue;
        char what[96];
        snprintf(what, sizeof what, "random n=%lld r=%lld bw=%lld e=%.2f z=%.2f", (long long)cases[k].n,
                 (long long)cases[k].per_row, (long long)cases[k].bw, cases[k].empty, cases[k].zeros);
        sap_csr *A = random_matrix(C, cases[k].n, cases[k].per_row, cases[k].bw, cases[k].empty, cases[k].zeros,
                                   (uint64_t)k + 1);
        CHECK(A != NULL);
        if (!A) continue;
        compare_stages(A, what);
        if (cases[k].empty == 0.0) compare_reorder(A, what);
        sap_csr_destroy(A);
    }
    /* an all-zero matrix with stored entries, and an empty one */
    {
        sap_csr *A = random_matrix(C, 5, 3, 0, 0.0, 1.0, 99);
        if (A) {
            for (sap_int p = 0; p < A->nnz; p++) A->val[p] = 0.0;
            compare_stages(A, "zero values");
            sap_csr_destroy(A);
        }
        sap_csr *E = random_matrix(C, 9, 3, 0, 1.0, 0.0, 5);
        if (E) {
            compare_stages(E, "no entries");
            sap_csr_destroy(E);
        }
    }
    /* generated banded-synthetic matrix */
    {
        sap_csr *A = NULL;
        CHECK_OK(C, sap_gen_spec(C, tiny ? "gen:synthetic:N=2001,K=30" : "gen:synthetic:N=50001,K=30", &A));
        if (A) {
            compare_stages(A, "gen synthetic");
            compare_reorder(A, "gen synthetic");
            sap_csr_destroy(A);
        }
    }
    if (!tiny) real_matrices();
    sap_context_destroy(C);
    sap_context_destroy(G);
#endif
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_reorder", cpu_part, gpu_part); }
