/* test_bjacobi.c -- block-Jacobi: the binary16 conversion, block detection (supervariables
 * of node-structured matrices with random node sizes 1..32, scattered by a symmetric
 * permutation; agglomeration; uniform blocks; bad options), the batched factorization
 * through the device table (Gauss-Jordan and LU, blocks that need pivoting, against a
 * dense LAPACK reference), singular / ill-conditioned / non-finite blocks and their
 * fallback, the adaptive precision choice on blocks of chosen kappa_1 (including the
 * thresholds themselves), the "bjacobi" / "bjacobi-adaptive" preconditioners with
 * NAME:VALUE, their report, and CG / BiCGStab with them against scalar Jacobi.
 * --backend cuda: the same factorizations and applies on a cuda context against the cpu
 * (precision choices and fallbacks identical, values to rounding) and a preconditioned
 * CG and BiCGStab on the device. */
#include "testing.h"

#include "device/device.h"
#include "matrix/csr_blocks.h"
#include "precond/precond_impl.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef SAP_HAVE_LAPACKE
#include <lapacke.h>
#endif

#define SAP_TEST_HAS_GPU_PART 1

static sap_context *C; /* cpu */

/* ---- helpers ---------------------------------------------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

/* A node-structured matrix: nnode nodes of sizes sz[] (rows of a node consecutive), node
 * i coupled densely to itself and to nodes i +- 1 and one random node (symmetric pattern);
 * values random, the diagonal made dominant by dom (0: not dominant).  Zero-diagonal
 * option: every node's diagonal entries are 0 (pivoting needed), kept dominant through
 * the off-diagonal entries of its own block. */
static sap_csr *node_matrix(sap_context *ctx, int nnode, const int *sz, double dom, int zero_diag, int couple)
{
    sap_int n = 0;
    sap_int *start = malloc(sizeof(sap_int) * (size_t)(nnode + 1));
    for (int i = 0; i < nnode; i++) start[i] = n, n += sz[i];
    start[nnode] = n;
    int *extra = malloc(sizeof(int) * (size_t)nnode);
    for (int i = 0; i < nnode; i++) extra[i] = (int)(rnd() % (uint64_t)nnode);
    sap_coo *T = NULL;
    sap_coo_create(ctx, n, n, 0, &T);
    unsigned char *adj = calloc((size_t)nnode * (size_t)nnode, 1);
    for (int i = 0; i < nnode; i++) {
        adj[(size_t)i * nnode + i] = 1;
        if (!couple) continue;
        int nb[3] = {i - 1, i + 1, extra[i]};
        for (int k = 0; k < 3; k++)
            if (nb[k] >= 0 && nb[k] < nnode) adj[(size_t)i * nnode + nb[k]] = adj[(size_t)nb[k] * nnode + i] = 1;
    }
    for (int NI = 0; NI < nnode; NI++)
        for (int NJ = 0; NJ < nnode; NJ++) {
            if (!adj[(size_t)NI * nnode + NJ]) continue;
            for (sap_int i = start[NI]; i < start[NI + 1]; i++)
                for (sap_int j = start[NJ]; j < start[NJ + 1]; j++) {
                    double v = urand() * (NI == NJ ? 1.0 : 0.1);
                    if (NI == NJ && i == j) v = zero_diag ? 0.0 : v + dom * sz[NI];
                    if (NI == NJ && zero_diag && j == start[NI] + (i - start[NI] + 1) % sz[NI]) v += dom * sz[NI];
                    sap_coo_push(T, i, j, v);
                }
        }
    sap_csr *A = NULL;
    sap_csr_from_coo(T, &A);
    sap_coo_destroy(T);
    free(adj);
    free(extra);
    free(start);
    return A;
}

static int random_sizes(int *sz, int nnode, int lo, int hi)
{
    int n = 0;
    for (int i = 0; i < nnode; i++) n += sz[i] = lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
    return n;
}

/* the factorization of A's blocks on ctx, built through the device table */
typedef struct fact {
    sap_context *ctx;
    sap_csr_blocks B;
    sap_bj_fact F;
} fact;

static sap_status fact_build(sap_context *ctx, const sap_csr *A, int maxb, int uniform, int variant, int adaptive,
                             fact *f)
{
    memset(f, 0, sizeof(*f));
    f->ctx = ctx;
    sap_status st = sap__csr_blocks(ctx, A, maxb, uniform, 1, &f->B);
    if (st < 0) return st;
    sap_bj_fact *F = &f->F;
    F->variant = variant;
    F->adaptive = adaptive;
    F->cond_fp16 = 1e2;
    F->cond_fp32 = 1e6;
    st = sap__bj_init(ctx, F, A, f->B.nb, f->B.rows, f->B.off);
    if (st >= 0) st = F->kt->load(F, A);
    if (st >= 0) st = F->kt->factor(F);
    return st;
}

static void fact_free(fact *f)
{
    sap__bj_fini(&f->F);
    sap__csr_blocks_free(f->ctx, &f->B);
}

/* z = D^{-1} r through the backend (host vectors in and out) */
static sap_status fact_apply(fact *f, const double *r, double *z, sap_precision prec)
{
    const sap_backend_ops *ops = sap__ops(f->ctx);
    sap_vec vr = {0}, vz = {0};
    sap_status st = ops->vec_create(f->ctx, f->F.n, prec, &vr);
    if (st >= 0) st = ops->vec_create(f->ctx, f->F.n, prec, &vz);
    if (st >= 0) st = ops->vec_upload(f->ctx, &vr, r);
    if (st >= 0) st = f->F.kt->apply(&f->F, vr.data, vz.data, prec);
    if (st >= 0) st = ops->vec_download(f->ctx, &vz, z);
    if (vr.data) ops->vec_destroy(f->ctx, &vr);
    if (vz.data) ops->vec_destroy(f->ctx, &vz);
    return st;
}

/* dense reference: the block of rows rows[0..s) of A, solved by LAPACK dgesv (or our own
 * partial-pivoting elimination without LAPACKE); returns 0 when singular */
static int dense_solve(const sap_csr *A, const sap_int *rows, int s, const double *rhs, double *x, double *kappa1)
{
    double a[32 * 32], inv[32 * 32];
    memset(a, 0, sizeof(a));
    for (int i = 0; i < s; i++)
        for (sap_int p = A->rowptr[rows[i]]; p < A->rowptr[rows[i] + 1]; p++)
            for (int j = 0; j < s; j++)
                if (A->colind[p] == rows[j]) a[j * s + i] = A->val[p]; /* column-major */
    double n1 = 0;
    for (int j = 0; j < s; j++) {
        double c = 0;
        for (int i = 0; i < s; i++) c += fabs(a[j * s + i]);
        if (c > n1) n1 = c;
    }
    memcpy(inv, a, sizeof(double) * (size_t)(s * s));
#ifdef SAP_HAVE_LAPACKE
    lapack_int ipiv[32];
    if (LAPACKE_dgetrf(LAPACK_COL_MAJOR, s, s, inv, s, ipiv) != 0) return 0;
    if (LAPACKE_dgetri(LAPACK_COL_MAJOR, s, inv, s, ipiv) != 0) return 0;
#else
    /* Gauss-Jordan with partial pivoting on [a | NI] */
    double w[32 * 64];
    for (int i = 0; i < s; i++)
        for (int j = 0; j < 2 * s; j++) w[i * 64 + j] = j < s ? a[j * s + i] : (j - s == i);
    for (int k = 0; k < s; k++) {
        int p = k;
        for (int i = k + 1; i < s; i++)
            if (fabs(w[i * 64 + k]) > fabs(w[p * 64 + k])) p = i;
        if (w[p * 64 + k] == 0) return 0;
        for (int j = 0; j < 2 * s; j++) {
            double t = w[k * 64 + j];
            w[k * 64 + j] = w[p * 64 + j];
            w[p * 64 + j] = t;
        }
        double d = 1.0 / w[k * 64 + k];
        for (int j = 0; j < 2 * s; j++) w[k * 64 + j] *= d;
        for (int i = 0; i < s; i++)
            if (i != k) {
                double f = w[i * 64 + k];
                for (int j = 0; j < 2 * s; j++) w[i * 64 + j] -= f * w[k * 64 + j];
            }
    }
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++) inv[j * s + i] = w[i * 64 + s + j];
#endif
    double ni = 0;
    for (int j = 0; j < s; j++) {
        double c = 0;
        for (int i = 0; i < s; i++) c += fabs(inv[j * s + i]);
        if (c > ni) ni = c;
    }
    *kappa1 = n1 * ni;
    for (int i = 0; i < s; i++) {
        double v = 0;
        for (int j = 0; j < s; j++) v += inv[j * s + i] * rhs[j];
        x[i] = v;
    }
    return 1;
}

/* ---- binary16 ------------------------------------------------------------------------- */

static void test_half(void)
{
    static const struct {
        double x;
        uint16_t h;
    } cases[] = {{1.0, 0x3c00},           {-2.0, 0xc000},       {65504.0, 0x7bff},        {65519.99, 0x7bff},
                 {65520.0, 0x7c00},       {1e10, 0x7c00},       {0x1p-24, 0x0001},        {0x1p-25, 0x0000},
                 {0x1.8p-25, 0x0001},     {0x1p-14, 0x0400},    {0x1.ff8p-15, 0x03ff},    {0x1.ffcp-15, 0x0400},    {0x1.ffep-15, 0x0400},
                 {1.0 + 0x1p-11, 0x3c00}, {1.0 + 0x3p-11, 0x3c02}, {1.0 + 0x1p-12, 0x3c00}, {0.1, 0x2e66},
                 {-0.0, 0x8000},          {1e-30, 0x0000},      {0.333333333, 0x3555}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_MSG(sap__half_from_double(cases[i].x) == cases[i].h, "half(%a) = 0x%04x, expected 0x%04x", cases[i].x,
                  sap__half_from_double(cases[i].x), cases[i].h);
    CHECK(sap__half_from_double(INFINITY) == 0x7c00 && sap__half_from_double(-INFINITY) == 0xfc00);
    CHECK((sap__half_from_double(NAN) & 0x7c00) == 0x7c00 && (sap__half_from_double(NAN) & 0x3ff));
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN */
        if (sap__half_from_double(sap__half_to_double((uint16_t)h)) != h) bad++;
        /* the midpoint to the next value rounds to the even one of the two */
        if ((h & 0x7fff) < 0x7bff) {
            double a = sap__half_to_double((uint16_t)h), b = sap__half_to_double((uint16_t)(h + 1));
            uint16_t m = sap__half_from_double(0.5 * (a + b));
            if (m != ((h & 1) ? h + 1 : h)) bad++;
        }
    }
    CHECK_MSG(bad == 0, "%d binary16 round trips / ties wrong", bad);
}

/* ---- detection -------------------------------------------------------------------------- */

static void test_detect(void)
{
    for (int rep = 0; rep < 3; rep++) {
        int sz[200];
        const int nnode = 60 + 40 * rep;
        const sap_int n = random_sizes(sz, nnode, 1, 32);
        sap_csr *A0 = node_matrix(C, nnode, sz, 1.0, 0, 1);
        sap_int *p = malloc(sizeof(sap_int) * (size_t)n), *node = malloc(sizeof(sap_int) * (size_t)n);
        for (sap_int i = 0; i < n; i++) p[i] = i;
        for (sap_int i = n - 1; i > 0; i--) {
            sap_int j = (sap_int)(rnd() % (uint64_t)(i + 1)), t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        sap_csr *A = NULL;
        CHECK_OK(C, sap_csr_permute(A0, p, p, &A));
        /* node of each new row: new row i is old row p[i] */
        {
            sap_int *oldnode = malloc(sizeof(sap_int) * (size_t)n);
            sap_int r = 0;
            for (int NI = 0; NI < nnode; NI++)
                for (int k = 0; k < sz[NI]; k++) oldnode[r++] = NI;
            for (sap_int i = 0; i < n; i++) node[i] = oldnode[p[i]];
            free(oldnode);
        }
        /* without agglomeration: the nodes exactly */
        sap_csr_blocks B;
        CHECK_OK(C, sap__csr_blocks(C, A, 32, 0, 0, &B));
        CHECK_MSG(B.nb == nnode, "%lld blocks, %d nodes", (long long)B.nb, nnode);
        int ok = 1;
        sap_int total = 0;
        for (sap_int b = 0; b < B.nb; b++) {
            const sap_int s = B.off[b + 1] - B.off[b];
            for (sap_int k = B.off[b]; k < B.off[b + 1]; k++) {
                ok &= node[B.rows[k]] == node[B.rows[B.off[b]]];
                if (k > B.off[b]) ok &= B.rows[k] > B.rows[k - 1];
            }
            ok &= s == sz[node[B.rows[B.off[b]]]];
            if (b > 0) ok &= B.rows[B.off[b]] > B.rows[B.off[b - 1]]; /* in the order of their first rows */
            total += s;
        }
        CHECK_MSG(ok && total == n, "supervariables are the nodes (rep %d)", rep);
        sap_int hsum = 0;
        for (int s = 1; s <= 32; s++) hsum += B.hist[s];
        CHECK(hsum == B.nb && B.nsuper == nnode);
        sap__csr_blocks_free(C, &B);
        /* agglomerated: each node inside one block of <= maxblock rows, every row once */
        for (int maxb = 32; maxb >= 8; maxb -= 24) {
            CHECK_OK(C, sap__csr_blocks(C, A, maxb, 0, 1, &B));
            unsigned char *seen = calloc((size_t)n, 1);
            sap_int *blk_of_node = malloc(sizeof(sap_int) * (size_t)nnode);
            for (int NI = 0; NI < nnode; NI++) blk_of_node[NI] = -1;
            ok = 1;
            for (sap_int b = 0; b < B.nb; b++) {
                ok &= B.off[b + 1] - B.off[b] <= maxb && B.off[b + 1] > B.off[b];
                for (sap_int k = B.off[b]; k < B.off[b + 1]; k++) {
                    sap_int r = B.rows[k], NI = node[r];
                    ok &= !seen[r];
                    seen[r] = 1;
                    if (sz[NI] <= maxb) {
                        if (blk_of_node[NI] < 0) blk_of_node[NI] = b;
                        ok &= blk_of_node[NI] == b;
                    }
                }
            }
            CHECK_MSG(ok && B.nb < nnode + (maxb < 32 ? n / maxb + nnode : 0), "agglomerated blocks (maxblock %d)",
                      maxb);
            CHECK(B.maxb <= maxb);
            free(seen);
            free(blk_of_node);
            sap__csr_blocks_free(C, &B);
        }
        /* uniform */
        CHECK_OK(C, sap__csr_blocks(C, A, 24, 1, 1, &B));
        CHECK(B.nb == (n + 23) / 24 && B.off[1] == 24 && B.rows[5] == 5 && B.off[B.nb] == n);
        char text[600];
        sap__csr_blocks_describe(&B, text, sizeof(text));
        CHECK(strstr(text, " 24:") != NULL);
        sap__csr_blocks_free(C, &B);
        sap_csr_destroy(A);
        sap_csr_destroy(A0);
        free(p);
        free(node);
    }
    /* bad input */
    sap_csr *A = NULL, *R = NULL;
    sap_csr_blocks B;
    sap_gen_banded(C, 50, 2, 2.0, 0, 1, &A);
    CHECK_STATUS(C, sap__csr_blocks(C, A, 0, 0, 1, &B), SAP_ERR_INVALID);
    CHECK_STATUS(C, sap__csr_blocks(C, A, 33, 0, 1, &B), SAP_ERR_INVALID);
    CHECK(strstr(sap_context_last_error(C), "1..32") != NULL);
    CHECK_OK(C, sap_csr_create(C, 3, 4, 0, &R));
    CHECK_STATUS(C, sap__csr_blocks(C, R, 8, 0, 1, &B), SAP_ERR_NOT_SQUARE);
    /* a banded matrix: supervariables of one row, agglomerated into consecutive blocks */
    CHECK_OK(C, sap__csr_blocks(C, A, 8, 0, 1, &B));
    CHECK(B.nb == 7 && B.rows[9] == 9 && B.off[1] == 8);
    sap__csr_blocks_free(C, &B);
    sap_csr_destroy(R);
    sap_csr_destroy(A);
}

/* ---- factorization ---------------------------------------------------------------------- */

/* every block's apply against the dense reference; returns the worst relative error */
static double check_against_dense(fact *f, const sap_csr *A, const double *r, const double *z)
{
    double worst = 0;
    for (sap_int b = 0; b < f->F.nb; b++) {
        const sap_int o = f->F.off[b];
        const int s = (int)(f->F.off[b + 1] - o);
        double rhs[32], x[32], kappa = 0;
        for (int i = 0; i < s; i++) rhs[i] = r[f->F.rows[o + i]];
        if (!dense_solve(A, f->F.rows + o, s, rhs, x, &kappa)) continue;
        double num = 0, den = 0;
        for (int i = 0; i < s; i++) {
            num += (z[f->F.rows[o + i]] - x[i]) * (z[f->F.rows[o + i]] - x[i]);
            den += x[i] * x[i];
        }
        const double e = sqrt(num / (den > 0 ? den : 1)) / (kappa > 1 ? kappa : 1);
        if (e > worst) worst = e;
        /* kappa_1 as the reference has it */
        if (!f->F.info[b] && fabs(f->F.cond[b] - kappa) > 1e-8 * kappa) worst = 1;
    }
    return worst;
}

static void test_factor(void)
{
    for (int zero_diag = 0; zero_diag < 2; zero_diag++)
        for (int variant = 0; variant < 2; variant++) {
            int sz[120];
            const int nnode = 120;
            const sap_int n = random_sizes(sz, nnode, 1, 32);
            sap_csr *A = node_matrix(C, nnode, sz, zero_diag ? 1.0 : 0.5, zero_diag, 1);
            fact f;
            CHECK_OK(C, fact_build(C, A, 32, 0, variant, 0, &f));
            double *r = malloc(sizeof(double) * (size_t)n), *z = malloc(sizeof(double) * (size_t)n);
            for (sap_int i = 0; i < n; i++) r[i] = urand();
            CHECK_OK(C, fact_apply(&f, r, z, SAP_DOUBLE));
            sap_int bad = 0;
            for (sap_int b = 0; b < f.F.nb; b++) bad += f.F.info[b] != 0 || f.F.bprec[b] != SAP_BJ_FP64;
            CHECK_MSG(bad == 0, "%lld blocks failed or not fp64", (long long)bad);
            const double e = check_against_dense(&f, A, r, z);
            CHECK_MSG(e < 1e-13, "variant %s zero diagonal %d: relative error / kappa %.3g", variant ? "lu" : "gj",
                      zero_diag, e);
            /* float vectors */
            CHECK_OK(C, fact_apply(&f, r, z, SAP_FLOAT));
            CHECK(check_against_dense(&f, A, r, z) < 1e-6);
            fact_free(&f);
            free(r);
            free(z);
            sap_csr_destroy(A);
        }
}

/* block-diagonal matrix of 2 x 2 .. 4 x 4 blocks with prescribed contents */
static sap_csr *blockdiag(sap_context *ctx, int nb, int s, const double *vals /* nb * s * s row-major */)
{
    sap_coo *T = NULL;
    sap_coo_create(ctx, nb * s, nb * s, 0, &T);
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++) sap_coo_push(T, b * s + i, b * s + j, vals[(b * s + i) * s + j]);
    sap_csr *A = NULL;
    sap_csr_from_coo(T, &A);
    sap_coo_destroy(T);
    return A;
}

static void test_singular(void)
{
    /* 2 x 2 blocks: ok, exactly singular, ill-conditioned (kappa ~ 1e17), zero diagonal
     * needing a pivot, singular with a zero diagonal entry */
    const double v[] = {2, 1, 1, 3, /**/ 1, 2, 2, 4, /**/ 1, 1, 1, 1 + 1e-16 * 4, /**/ 0, 5, 4, 0, /**/ 0, 0, 0, 7};
    sap_csr *A = blockdiag(C, 5, 2, v);
    for (int variant = 0; variant < 2; variant++) {
        fact f;
        CHECK_OK(C, fact_build(C, A, 2, 1, variant, 1, &f));
        CHECK(f.F.info[0] == SAP_BJ_OK && f.F.info[1] == SAP_BJ_SINGULAR && f.F.info[3] == SAP_BJ_OK &&
              f.F.info[4] == SAP_BJ_SINGULAR);
        CHECK(f.F.info[2] != SAP_BJ_OK);
        double r[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, z[10];
        CHECK_OK(C, fact_apply(&f, r, z, SAP_DOUBLE));
        /* fallback: scalar Jacobi (zero diagonal -> 1) */
        CHECK_CLOSE(z[2], 3.0 / 1.0, 1e-15);
        CHECK_CLOSE(z[3], 4.0 / 4.0, 1e-15);
        CHECK_CLOSE(z[8], 9.0, 1e-15);
        CHECK_CLOSE(z[9], 10.0 / 7.0, 1e-15);
        /* the pivoted block: [0 5; 4 0] x = (7, 8) -> x = (2, 1.4) */
        CHECK_CLOSE(z[6], 2.0, 1e-3); /* kappa_1 = 1.25: stored in fp16 */
        CHECK_CLOSE(z[7], 1.4, 1e-3);
        fact_free(&f);
    }
    /* through the preconditioner: a warning naming the block, or an error */
    sap_precond *P = NULL;
    CHECK_OK(C, sap_precond_create(C, "bjacobi:2", &P));
    CHECK_OK(C, sap_precond_set_option(P, "uniform", "on"));
    CHECK_STATUS(C, sap_precond_setup_numeric(P, A), SAP_WARN_BOOSTED_PIVOTS);
    CHECK(strstr(sap_context_last_error(C), "block 1 ") != NULL);
    CHECK(strstr(sap_context_last_error(C), "3 of 5 blocks") != NULL);
    char rep[2048];
    CHECK_OK(C, sap_precond_report(P, 0, rep, sizeof(rep)));
    CHECK(strstr(rep, "fallback to scalar Jacobi: 3 blocks") != NULL);
    CHECK_OK(C, sap_precond_set_option(P, "singular", "error"));
    CHECK_STATUS(C, sap_precond_setup_numeric(P, A), SAP_ERR_SINGULAR);
    CHECK_STATUS(C, sap_precond_set_option(P, "maxblock", "33"), SAP_ERR_INVALID);
    CHECK_STATUS(C, sap_precond_set_option(P, "variant", "qr"), SAP_ERR_INVALID);
    sap_precond_destroy(P);
    CHECK_STATUS(C, sap_precond_create(C, "bjacobi:40", &P), SAP_ERR_INVALID);
    CHECK(P == NULL);
    CHECK_STATUS(C, sap_precond_create(C, "jacobi:4", &P), SAP_ERR_INVALID);
    CHECK_STATUS(C, sap_precond_create(C, "nosuch:4", &P), SAP_ERR_INVALID);
    /* non-finite values */
    A->val[0] = NAN;
    CHECK_OK(C, sap_precond_create(C, "bjacobi-adaptive:2", &P));
    CHECK_STATUS(C, sap_precond_setup_numeric(P, A), SAP_ERR_NONFINITE);
    CHECK_OK(C, sap_precond_set_options(P, "cond_fp16=1e7,cond_fp32=1e6"));
    A->val[0] = 2;
    CHECK_STATUS(C, sap_precond_setup_numeric(P, A), SAP_ERR_INVALID);
    sap_precond_destroy(P);
    sap_csr_destroy(A);
}

/* ---- adaptive precision --------------------------------------------------------------- */

static void test_adaptive(void)
{
    /* [1 a; 0 1]: kappa_1 = (1 + a)^2 exactly; diag(1, 1, 1, k) blocks padded to 2 x 2 */
    static const struct {
        double a;
        int prec;
    } cases[] = {{9, SAP_BJ_FP16},  {9.0001, SAP_BJ_FP32}, {999, SAP_BJ_FP32}, {999.01, SAP_BJ_FP64},
                 {0, SAP_BJ_FP16},  {30, SAP_BJ_FP32},     {1e5, SAP_BJ_FP64}, {3, SAP_BJ_FP16}};
    /* the thresholds themselves (kappa exactly 1e2 and 1e6) at even b: unscaled blocks */
    const int nb = (int)(sizeof(cases) / sizeof(cases[0]));
    double v[4 * 8];
    for (int b = 0; b < nb; b++) {
        /* scaled by 1e6 (structural-mechanics magnitudes: the stored inverse is ~1e-6) */
        const double sc = b % 2 ? 1e6 : 1.0;
        v[4 * b + 0] = sc;
        v[4 * b + 1] = cases[b].a * sc;
        v[4 * b + 2] = 0;
        v[4 * b + 3] = sc;
    }
    sap_csr *A = blockdiag(C, nb, 2, v);
    for (int variant = 0; variant < 2; variant++) {
        fact f;
        CHECK_OK(C, fact_build(C, A, 2, 1, variant, 1, &f));
        for (int b = 0; b < nb; b++) {
            CHECK_MSG(f.F.bprec[b] == cases[b].prec, "%s a = %g: kappa %.17g precision %d, expected %d",
                      variant ? "lu" : "gj", cases[b].a, f.F.cond[b], f.F.bprec[b], cases[b].prec);
            CHECK_CLOSE(f.F.cond[b], (1 + cases[b].a) * (1 + cases[b].a), 1e-14);
        }
        /* compact storage: s^2 values of each block's precision (16-byte aligned), fewer
         * bytes than fp64 blocks; a second factor (new values, same pattern) writes the
         * fp64-sized slots again and compacts them the same way */
        for (int rep = 0; rep < 2; rep++) {
            if (rep) CHECK_OK(C, f.F.kt->factor(&f.F));
            int64_t fp64 = 0;
            for (int b = 0; b < nb; b++) {
                CHECK(f.F.soff[b + 1] - f.F.soff[b] == sap__bj_slot_bytes(2, f.F.bprec[b]));
                fp64 += sap__bj_slot_bytes(2, SAP_BJ_FP64);
            }
            CHECK(f.F.soff[0] == 0 && f.F.soff[nb] < fp64);
        }
        CHECK(sap__bj_slot_bytes(3, SAP_BJ_FP16) == 32 && sap__bj_slot_bytes(32, SAP_BJ_FP16) == 2048 &&
              sap__bj_slot_bytes(1, SAP_BJ_FP64) == 16);
        /* the error of the apply stays within kappa * u of the storage */
        double r[16], z[16];
        for (int i = 0; i < 2 * nb; i++) r[i] = urand();
        CHECK_OK(C, fact_apply(&f, r, z, SAP_DOUBLE));
        for (int b = 0; b < nb; b++) {
            double sc = b % 2 ? 1e6 : 1.0, a = cases[b].a;
            double x1 = r[2 * b + 1] / sc, x0 = r[2 * b] / sc - a * x1;
            double u = cases[b].prec == SAP_BJ_FP16 ? 0x1p-11 : cases[b].prec == SAP_BJ_FP32 ? 0x1p-24 : 0x1p-53;
            double kap = (1 + a) * (1 + a), err = fabs(z[2 * b] - x0) + fabs(z[2 * b + 1] - x1);
            double nx = fabs(x0) + fabs(x1);
            CHECK_MSG(err <= 4 * kap * u * nx + 1e-300, "block %d: error %.3g, bound %.3g", b, err, 4 * kap * u * nx);
        }
        fact_free(&f);
    }
    /* thresholds as options: everything fp32 with cond_fp16=0 */
    sap_precond *P = NULL;
    CHECK_OK(C, sap_precond_create(C, "bjacobi-adaptive", &P));
    CHECK_OK(C, sap_precond_set_options(P, "maxblock=2,uniform=1,cond_fp16=0,cond_fp32=1e300"));
    CHECK_OK(C, sap_precond_setup_numeric(P, A));
    char rep[2048];
    CHECK_OK(C, sap_precond_report(P, 0, rep, sizeof(rep)));
    CHECK_MSG(strstr(rep, "fp16 0.0%, fp32 100.0%") != NULL, "%s", rep);
    sap_precond_destroy(P);
    sap_csr_destroy(A);
}

/* ---- Krylov with block-Jacobi ------------------------------------------------------------ */

/* gen:elasticity3d (3 unknowns per node of an m^3 grid, SPD); asym scales the couplings
 * to later nodes (a nonsymmetric system of the same pattern) */
static sap_csr *elastic_like(sap_context *ctx, int m, double asym)
{
    sap_csr *A = NULL;
    if (sap_gen_elasticity3d(ctx, m, m, m, 3, &A) != SAP_OK) return NULL;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] / 3 > i / 3) A->val[p] *= 1.0 + asym;
    return A;
}

/* apply with z = r gives what z != r gives (both variants) */
static void test_alias(sap_context *ctx)
{
    sap_csr *A = elastic_like(ctx, 6, 0.0);
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = A->nrows;
    double *h = malloc(sizeof(double) * (size_t)n), *z1 = malloc(sizeof(double) * (size_t)n),
           *z2 = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) h[i] = urand();
    for (int v = 0; v < 2; v++) {
        sap_precond *P = NULL;
        sap_vec r = {0}, z = {0};
        CHECK_OK(ctx, sap_precond_create(ctx, "bjacobi-adaptive", &P));
        CHECK_OK(ctx, sap_precond_set_option(P, "variant", v ? "lu" : "gj"));
        CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
        CHECK_OK(ctx, ops->vec_create(ctx, n, SAP_DOUBLE, &r));
        CHECK_OK(ctx, ops->vec_create(ctx, n, SAP_DOUBLE, &z));
        CHECK_OK(ctx, ops->vec_upload(ctx, &r, h));
        CHECK_OK(ctx, sap__precond_apply_vec(P, &r, &z));
        CHECK_OK(ctx, ops->vec_download(ctx, &z, z1));
        CHECK_OK(ctx, sap__precond_apply_vec(P, &r, &r));
        CHECK_OK(ctx, ops->vec_download(ctx, &r, z2));
        CHECK_MSG(memcmp(z1, z2, sizeof(double) * (size_t)n) == 0, "variant %d: apply in place differs", v);
        ops->vec_destroy(ctx, &r);
        ops->vec_destroy(ctx, &z);
        sap_precond_destroy(P);
    }
    free(h);
    free(z1);
    free(z2);
    sap_csr_destroy(A);
}

static sap_status solve_with(sap_context *ctx, const sap_csr *A, sap_krylov_type type, const char *pc,
                             sap_precision pprec, sap_krylov_stats *ks)
{
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + 0.5 * sin((double)i);
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_status st = sap_matrix_create(ctx, A, NULL, &M);
    if (st >= 0) st = sap_precond_create(ctx, pc, &P);
    if (st >= 0) st = sap_precond_set_precision(P, pprec);
    if (st >= 0) st = sap_precond_setup_numeric(P, A);
    sap_krylov_options opt;
    sap_krylov_options_init(&opt);
    opt.type = type;
    opt.tol = 1e-8;
    opt.maxit = 2000;
    if (st >= 0) st = sap_krylov_create(ctx, &opt, &K);
    if (st >= 0) st = sap_krylov_solve(K, M, P, b, x, ks);
    if (st >= 0 && sap_test_rel_residual(A, x, b) > 1e-7) st = SAP_WARN_INEXACT;
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    free(b);
    free(x);
    return st;
}

static void test_krylov(sap_context *ctx)
{
    for (int nonsym = 0; nonsym < 2; nonsym++) {
        sap_csr *A = elastic_like(ctx, 9, nonsym ? 0.1 : 0.0);
        const sap_krylov_type type = nonsym ? SAP_KRYLOV_BICGSTAB : SAP_KRYLOV_CG;
        const char *pcs[] = {"jacobi", "bjacobi", "bjacobi-adaptive", "bjacobi:3", "bjacobi-adaptive:12"};
        double its[5];
        for (int k = 0; k < 5; k++) {
            sap_krylov_stats ks;
            memset(&ks, 0, sizeof(ks));
            sap_status st = solve_with(ctx, A, type, pcs[k], SAP_DOUBLE, &ks);
            CHECK_MSG(st == SAP_OK, "%s + %s: %s (%s)", nonsym ? "bicgstab" : "cg", pcs[k], sap_status_name(st),
                      sap_context_last_error(ctx));
            its[k] = ks.iterations;
        }
        printf("%s iterations: jacobi %g, bjacobi %g, bjacobi-adaptive %g, bjacobi:3 %g, bjacobi-adaptive:12 %g\n",
               nonsym ? "bicgstab" : "cg", its[0], its[1], its[2], its[3], its[4]);
        /* blocks of the nodes beat scalar Jacobi; adaptive close to double */
        CHECK_MSG(its[1] < its[0] && its[3] < its[0], "iterations jacobi %g bjacobi %g bjacobi:3 %g", its[0], its[1],
                  its[3]);
        /* (BiCGStab's counts are erratic: there 1.5x) */
        CHECK_MSG(its[2] <= (nonsym ? 1.5 : 1.1) * its[1] + 1, "iterations bjacobi %g adaptive %g", its[1], its[2]);
        /* float preconditioner, LU variant */
        sap_krylov_stats ks;
        CHECK_OK(ctx, solve_with(ctx, A, type, "bjacobi-adaptive", SAP_FLOAT, &ks));
        sap_precond *P = NULL;
        CHECK_OK(ctx, sap_precond_create(ctx, "bjacobi", &P));
        CHECK_OK(ctx, sap_precond_set_option(P, "variant", "lu"));
        CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
        char rep[2048];
        CHECK_OK(ctx, sap_precond_report(P, 0, rep, sizeof(rep)));
        CHECK_MSG(strstr(rep, "variant: lu") && strstr(rep, "(729 supervariables)") && strstr(rep, " 30:"), "%s",
                  rep);
        sap_precond_destroy(P);
        sap_csr_destroy(A);
    }
}

static void test_oom(void)
{
    /* every allocation of the setups and the apply failing in turn: a clean
     * SAP_ERR_OUT_OF_MEMORY, nothing leaked */
    int done = 0;
    for (long k = 0; k < 400 && !done; k++) {
        sap_test_failing_alloc state = {-1, 0, 0};
        sap_context *ctx = sap_test_failing_context(&state);
        if (!ctx) {
            CHECK(0);
            return;
        }
        state.fail_at = state.count + k;
        sap_csr *A = elastic_like(ctx, 3, 0.0);
        sap_precond *P = NULL;
        sap_status st = A ? sap_precond_create(ctx, k % 2 ? "bjacobi-adaptive" : "bjacobi:5", &P) : SAP_ERR_OUT_OF_MEMORY;
        if (st == SAP_OK) st = sap_precond_setup_numeric(P, A);
        double r[81], z[81];
        for (int i = 0; i < 81; i++) r[i] = 1.0;
        if (st == SAP_OK) st = sap_precond_apply(P, r, z);
        CHECK_MSG(st == SAP_OK || st == SAP_ERR_OUT_OF_MEMORY, "k %ld: %s", k, sap_status_name(st));
        if (st == SAP_OK) done = 1;
        sap_precond_destroy(P);
        sap_csr_destroy(A);
        sap_context_destroy(ctx);
        CHECK_MSG(state.live == 0, "leak: %ld blocks (fail at %ld)", state.live, k);
    }
    CHECK(done);
}

static int cpu_part(void)
{
    C = sap_test_context(SAP_BACKEND_CPU);
    if (!C) return 1;
    test_half();
    test_detect();
    test_factor();
    test_singular();
    test_adaptive();
    test_krylov(C);
    test_alias(C);
    test_oom();
    sap_context_destroy(C);
    return 0;
}

/* ---- GPU: the same factorizations against the cpu --------------------------------------- */

/* returns the blocks the cpu replaced by their diagonal (info != 0) */
static sap_int compare_backends(sap_context *G, const sap_csr *A, int variant, int adaptive, int maxb, int uniform)
{
    fact fc, fg;
    CHECK_OK(C, fact_build(C, A, maxb, uniform, variant, adaptive, &fc));
    CHECK_OK(G, fact_build(G, A, maxb, uniform, variant, adaptive, &fg));
    sap_int dprec = 0, dinfo = 0, dsoff = 0, nfail = 0;
    double dcond = 0;
    for (sap_int b = 0; b < fc.F.nb; b++) {
        nfail += fc.F.info[b] != 0;
        dprec += fc.F.bprec[b] != fg.F.bprec[b];
        dsoff += fc.F.soff[b + 1] != fg.F.soff[b + 1]; /* the same compact storage */
        dinfo += fc.F.info[b] != fg.F.info[b];
        if (!fc.F.info[b]) {
            double e = fabs(fc.F.cond[b] - fg.F.cond[b]) / fc.F.cond[b];
            if (e > dcond) dcond = e;
        }
    }
    CHECK_MSG(dprec == 0 && dinfo == 0 && dsoff == 0 && dcond < 1e-10,
              "variant %d adaptive %d: %lld precisions, %lld infos, %lld offsets differ, kappa rel. diff %.3g", variant,
              adaptive, (long long)dprec, (long long)dinfo, (long long)dsoff, dcond);
    const sap_int n = A->nrows;
    double *r = malloc(sizeof(double) * (size_t)n), *zc = malloc(sizeof(double) * (size_t)n),
           *zg = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) r[i] = urand();
    for (int prec = 0; prec < 2; prec++) {
        const sap_precision vp = prec ? SAP_FLOAT : SAP_DOUBLE;
        CHECK_OK(C, fact_apply(&fc, r, zc, vp));
        CHECK_OK(G, fact_apply(&fg, r, zg, vp));
        double num = 0, den = 0;
        for (sap_int i = 0; i < n; i++) num += (zc[i] - zg[i]) * (zc[i] - zg[i]), den += zc[i] * zc[i];
        /* fp16 storage: one rounding of a value may differ (FMA contraction in the factor) */
        const double tol = prec ? 1e-5 : adaptive ? 2e-3 : 1e-11;
        CHECK_MSG(sqrt(num / den) < tol, "variant %d adaptive %d %s vectors: apply differs by %.3g", variant, adaptive,
                  prec ? "float" : "double", sqrt(num / den));
    }
    free(r);
    free(zc);
    free(zg);
    fact_free(&fc);
    fact_free(&fg);
    return nfail;
}

static int gpu_part(void)
{
    sap_context *G = NULL;
    int dryrun = 0;
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, &dryrun);
    if (rc) return rc;
    C = sap_test_context(SAP_BACKEND_CPU);
    const int smoke = sap_test_smoke();
    /* variable sizes 1..32 (every group width of the kernels), zero diagonals (pivoting) */
    for (int zd = 0; zd < 2; zd++) {
        int sz[3000];
        const int nnode = smoke ? 300 : 3000;
        random_sizes(sz, nnode, 1, 32);
        sap_csr *A = node_matrix(C, nnode, sz, 1.0, zd, 1);
        for (int variant = 0; variant < 2; variant++)
            for (int adaptive = 0; adaptive < 2; adaptive++) compare_backends(G, A, variant, adaptive, 32, 0);
        compare_backends(G, A, SAP_BJ_GJ, 1, 7, 1);
        /* maxb 16 cuts nodes: with zero diagonals some pieces are singular, so blocks that
         * fail share warps with blocks that do not (both variants, both precision modes) */
        sap_int nfail = 0;
        for (int variant = 0; variant < 2; variant++)
            for (int adaptive = 0; adaptive < 2; adaptive++) nfail += compare_backends(G, A, variant, adaptive, 16, 0);
        CHECK_MSG(!zd || nfail > 0, "zero diagonals, maxb 16: no singular block (%lld)", (long long)nfail);
        sap_csr_destroy(A);
    }
    /* the rows permuted: blocks of scattered rows (the row -> block map paths of the
     * factor's extraction and the apply's gathers), every variant and precision mode */
    {
        int sz[600];
        const int nnode = smoke ? 100 : 600;
        const sap_int n = random_sizes(sz, nnode, 1, 32);
        sap_csr *A0 = node_matrix(C, nnode, sz, 1.0, 0, 1), *A = NULL;
        sap_int *p = malloc(sizeof(sap_int) * (size_t)n);
        for (sap_int i = 0; i < n; i++) p[i] = i;
        for (sap_int i = n - 1; i > 0; i--) {
            sap_int j = (sap_int)(rnd() % (uint64_t)(i + 1)), t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        CHECK_OK(C, sap_csr_permute(A0, p, p, &A));
        for (int variant = 0; variant < 2; variant++)
            for (int adaptive = 0; adaptive < 2; adaptive++) compare_backends(G, A, variant, adaptive, 32, 0);
        free(p);
        sap_csr_destroy(A0);
        sap_csr_destroy(A);
    }
    /* singular and ill-conditioned blocks: the same fallbacks */
    {
        const double v[] = {2, 1, 1, 3, 1, 2, 2, 4, 1, 1, 1, 1 + 4e-16, 0, 5, 4, 0, 0, 0, 0, 7};
        sap_csr *A = blockdiag(C, 5, 2, v);
        for (int variant = 0; variant < 2; variant++) compare_backends(G, A, variant, 1, 2, 1);
        sap_csr_destroy(A);
    }
    test_krylov(G);
    test_alias(G);
    sap_context_destroy(C);
    sap_context_destroy(G);
    (void)dryrun;
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_bjacobi", cpu_part, gpu_part); }
