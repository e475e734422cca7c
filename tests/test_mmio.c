/* test_mmio.c -- Matrix Market I/O: round trips of every format variant (plain and .gz),
 * one test per malformed-input case (status and line number), truncated and corrupt gzip,
 * missing files, non-finite values, duplicates, rectangular and empty matrices, the
 * number conversions against the C library, the parallel parse against the serial one,
 * an out-of-memory sweep, and every matrix of the SuiteSparse set against MANIFEST.tsv. */
#define _POSIX_C_SOURCE 200809L
#include "testing.h"

#include "matrix/mm_number.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static sap_context *ctx;

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* Files made by this test (removed at the end). */
static char made[256][600];
static int nmade = 0;

static const char *tmpfile_path(const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", sap_test_tmpdir(), name);
    for (int k = 0; k < nmade; k++)
        if (!strcmp(made[k], path)) return made[k];
    if (nmade == 256) {
        fprintf(stderr, "too many temporary files\n");
        exit(1);
    }
    snprintf(made[nmade], sizeof(made[nmade]), "%s", path);
    return made[nmade++];
}

static void remove_tmpfiles(void)
{
    for (int k = 0; k < nmade; k++) remove(made[k]);
    rmdir(sap_test_tmpdir());
}

static void write_bytes(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    if (len) fwrite(text, 1, len, f);
    fclose(f);
}

static char *read_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = '\0';
    *len = got;
    return b;
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A random value of the given field. */
static double random_value(sap_mm_field field)
{
    if (field == SAP_MM_PATTERN) return 1.0;
    if (field == SAP_MM_INTEGER) return (double)((int64_t)(rnd() % 2001) - 1000);
    switch (rnd() % 6) {
    case 0: return (2 * urand() - 1) * pow(10.0, (double)((int)(rnd() % 61) - 30));
    case 1: return (double)(int)(rnd() % 100) / 10.0;
    case 2: return 1.0 / (double)(1 + rnd() % 1000);
    case 3: return (2 * urand() - 1) * pow(10.0, (double)((int)(rnd() % 601) - 300));
    case 4: return -(double)(rnd() % 7);
    default: return urand();
    }
}

/* An m x n matrix with about density * m * n entries, of the given field and symmetry. */
static sap_csr *random_matrix(sap_int m, sap_int n, double density, sap_mm_field field, sap_symmetry sym)
{
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    if (sap_coo_create(ctx, m, n, 0, &C) != SAP_OK) return NULL;
    for (sap_int i = 0; i < m; i++) {
        for (sap_int j = 0; j < n; j++) {
            if (sym != SAP_GENERAL && j > i) continue;
            if (sym == SAP_SKEW_SYMMETRIC && i == j) continue;
            if (urand() >= density) continue;
            double v = random_value(field);
            sap_coo_push(C, i, j, v);
            if (sym != SAP_GENERAL && i != j) sap_coo_push(C, j, i, sym == SAP_SKEW_SYMMETRIC ? -v : v);
        }
    }
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    return A;
}

static int csr_equal(const sap_csr *A, const sap_csr *B)
{
    if (!A || !B) return 0;
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz) return 0;
    if (memcmp(A->rowptr, B->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1))) return 0;
    if (A->nnz && memcmp(A->colind, B->colind, sizeof(sap_int) * (size_t)A->nnz)) return 0;
    for (sap_int k = 0; k < A->nnz; k++) {
        if (isnan(A->val[k]) && isnan(B->val[k])) continue;
        if (memcmp(&A->val[k], &B->val[k], sizeof(double))) return 0;
    }
    return 1;
}

static int dense_equal(const sap_dense *X, const sap_dense *Y)
{
    if (!X || !Y || X->nrows != Y->nrows || X->ncols != Y->ncols) return 0;
    for (sap_int j = 0; j < X->ncols; j++)
        for (sap_int i = 0; i < X->nrows; i++) {
            double a = X->val[i + j * X->ld], b = Y->val[i + j * Y->ld];
            if (memcmp(&a, &b, sizeof(double)) && !(a == 0 && b == 0)) return 0;
        }
    return 1;
}

/* The lower triangle of A (with the diagonal unless strict). */
static sap_csr *lower_of(const sap_csr *A, int strict)
{
    sap_coo *C = NULL;
    sap_csr *L = NULL;
    sap_coo_create(ctx, A->nrows, A->ncols, 0, &C);
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            if (j < i || (!strict && j == i)) sap_coo_push(C, i, j, A->val[p]);
        }
    sap_csr_from_coo(C, &L);
    sap_coo_destroy(C);
    return L;
}

static int has_line(const char *msg, long line)
{
    char needle[48];
    snprintf(needle, sizeof(needle), "line %ld:", line);
    return strstr(msg, needle) != NULL;
}

/* Parses text (copied into an exactly sized, unterminated heap block so that any read past
 * the end is caught by AddressSanitizer) and checks the status and the line number. */
static void expect_parse_opt(int srcline, const char *text, const sap_mm_read_options *opt, sap_status want, long line)
{
    size_t len = strlen(text);
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    sap_csr *A = NULL;
    sap_context_clear_error(ctx);
    sap_status st = sap_mm_parse_csr(ctx, copy, len, opt, &A, NULL);
    const char *msg = sap_context_last_error(ctx);
    CHECK_MSG(st == want, "test_mmio.c:%d: got %s, expected %s (%s)", srcline, sap_status_name(st),
              sap_status_name(want), msg);
    if (line > 0) CHECK_MSG(has_line(msg, line), "test_mmio.c:%d: message '%s' lacks 'line %ld:'", srcline, msg, line);
    if (st < 0) CHECK_MSG(A == NULL, "test_mmio.c:%d: output not NULL after an error", srcline);
    sap_csr_destroy(A);
    free(copy);
}
#define EXPECT(text, want, line) expect_parse_opt(__LINE__, text, NULL, want, line)
#define EXPECT_OPT(text, opt, want, line) expect_parse_opt(__LINE__, text, opt, want, line)

#define BANNER_CR "%%MatrixMarket matrix coordinate real general\n"
#define BANNER_CI "%%MatrixMarket matrix coordinate integer general\n"
#define BANNER_CP "%%MatrixMarket matrix coordinate pattern general\n"
#define BANNER_CS "%%MatrixMarket matrix coordinate real symmetric\n"
#define BANNER_CK "%%MatrixMarket matrix coordinate real skew-symmetric\n"
#define BANNER_AR "%%MatrixMarket matrix array real general\n"

/* ---- malformed input, one case at a time ------------------------------------------------ */

static void test_malformed(void)
{
    /* banner */
    EXPECT("", SAP_ERR_BANNER, 1);
    EXPECT("hello\n3 3 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix coordinate real\n1 1 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix coordinate real general extra\n1 1 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket tensor coordinate real general\n1 1 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix sparse real general\n1 1 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix coordinate float general\n1 1 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix coordinate real upper\n1 1 1\n1 1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix array pattern general\n1 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n", SAP_ERR_BANNER, 1);
    EXPECT("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", SAP_ERR_UNSUPPORTED, 1);
    EXPECT("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", SAP_ERR_UNSUPPORTED, 1);
    /* case-insensitive banner, comments, blank lines, CRLF */
    EXPECT("%%matrixmarket MATRIX Coordinate REAL General\n2 2 1\n1 1 5\n", SAP_OK, 0);
    EXPECT("%%MatrixMarket matrix coordinate real general\r\n% c\r\n\r\n2 2 2\r\n1 1 5\r\n\r\n2 2 -1.5\r\n", SAP_OK, 0);
    EXPECT(BANNER_CR "%\n% comment\n   \n\t\n2 2 1\n% in the data\n\n  1   1   5  \n", SAP_OK, 0);

    /* size line */
    EXPECT(BANNER_CR, SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_CR "% only comments\n\n", SAP_ERR_SIZE_LINE, 4);
    EXPECT(BANNER_CR "3 x 1\n1 1 1\n", SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_CR "% c\n\n% c\n3 3 1.5\n1 1 1\n", SAP_ERR_SIZE_LINE, 5);
    EXPECT(BANNER_CR "-3 3 1\n1 1 1\n", SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_CR "3 3 -1\n", SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_CR "3 3\n1 1 1\n", SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_CR "3 3 1 1\n1 1 1\n", SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_AR "3 3 9\n", SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_CR "2 2 5\n1 1 1\n", SAP_ERR_SIZE_LINE, 2);
    EXPECT(BANNER_CS "3 4 1\n1 1 1\n", SAP_ERR_SIZE_LINE, 2);
    /* too large */
    EXPECT(BANNER_CR "99999999999999999999 3 1\n1 1 1\n", SAP_ERR_TOO_LARGE, 2);
    EXPECT(BANNER_CR "3 3 99999999999999999999\n1 1 1\n", SAP_ERR_TOO_LARGE, 2);
    EXPECT(BANNER_AR "4000000000 4000000000\n1\n", SAP_ERR_TOO_LARGE, 2);
    /* (a declared count the text cannot hold is reported before the memory checks) */
    EXPECT(BANNER_AR "100000000 100000000\n1\n", SAP_ERR_COUNT, 2);
    EXPECT(BANNER_CR "1000000000 1000000000 999999999999999\n1 1 1\n", SAP_ERR_COUNT, 2);
    EXPECT(BANNER_CR "9000000000000000000 1 1\n1 1 1\n", SAP_ERR_TOO_LARGE, 2);
    /* not square when required */
    sap_mm_read_options sq;
    sap_mm_read_options_init(&sq);
    sq.require_square = 1;
    EXPECT_OPT(BANNER_CR "% c\n3 4 1\n1 1 1\n", &sq, SAP_ERR_NOT_SQUARE, 3);
    EXPECT_OPT(BANNER_CR "4 4 1\n1 1 1\n", &sq, SAP_OK, 0);

    /* entry count */
    EXPECT(BANNER_CR "3 3 3\n1 1 1.0000\n2 2 2\n", SAP_ERR_COUNT, 5);
    EXPECT(BANNER_CR "3 3 3\n1 1 1.0000\n\n2 2 2\n\n", SAP_ERR_COUNT, 7);
    EXPECT(BANNER_CR "2 2 1\n1 1 1\n2 2 2\n", SAP_ERR_COUNT, 4);
    EXPECT(BANNER_CR "2 2 0\n% c\n1 1 1\n", SAP_ERR_COUNT, 4);
    EXPECT(BANNER_AR "2 2\n1.0\n2\n3\n", SAP_ERR_COUNT, 6);
    EXPECT(BANNER_AR "2 2\n1\n2\n3\n4\n5\n", SAP_ERR_COUNT, 7);
    EXPECT(BANNER_CR "2 2 1\n1 1 1\n2 2 2", SAP_ERR_COUNT, 4); /* complete extra line without newline */

    /* indices */
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n0 1 1\n", SAP_ERR_INDEX, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n4 1 1\n", SAP_ERR_INDEX, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n1 0 1\n", SAP_ERR_INDEX, 4);
    EXPECT(BANNER_CR "3 4 2\n1 1 1\n\n1 5 1\n", SAP_ERR_INDEX, 5);
    EXPECT(BANNER_CR "3 3 1\n-1 1 1\n", SAP_ERR_INDEX, 3);
    EXPECT(BANNER_CR "3 3 1\n1 -2 1\n", SAP_ERR_INDEX, 3);
    EXPECT(BANNER_CR "3 3 1\n99999999999999999999999 1 1\n", SAP_ERR_INDEX, 3);
    EXPECT(BANNER_CP "3 3 1\n3 4\n", SAP_ERR_INDEX, 3);

    /* parse errors */
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 abc\n", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1.0000\n2 2\n", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1.0000\n2\n", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 1 7\n", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_CR "3 3 1\n1.5 1 1\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CR "3 3 1\n1 x 1\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CR "3 3 1\na 1 1\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CR "3 3 1\n1 1 1.5x\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CR "3 3 1\n1 1 1e\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CR "3 3 1\n1 1 --1\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CR "3 3 1\n1 1 .\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CR "3 3 1\n1,1,1\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CI "3 3 1\n1 1 1.5\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CI "3 3 1\n1 1 1e3\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_CP "3 3 1\n1 1 1\n", SAP_ERR_PARSE, 3);
    EXPECT(BANNER_AR "2 1\n1\n2 3\n", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_AR "2 1\n1\nfoo\n", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_CK "3 3 2\n2 1 1\n2 2 3\n", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_CK "3 3 2\n2 1 1\n2 2 0\n", SAP_OK, 0);
    EXPECT(BANNER_CR "3 3 1\n1 1 1\0\n", SAP_OK, 0); /* strlen stops at the NUL: complete */

    /* non-finite */
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 nan\n", SAP_ERR_NONFINITE, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 inf\n2 2 1\n", SAP_ERR_NONFINITE, 3);
    EXPECT(BANNER_CR "3 3 1\n1 1 -Infinity\n", SAP_ERR_NONFINITE, 3);
    EXPECT(BANNER_CR "3 3 1\n1 1 1e400\n", SAP_ERR_NONFINITE, 3);
    EXPECT(BANNER_AR "1 2\n1\nNaN\n", SAP_ERR_NONFINITE, 4);
    sap_mm_read_options nf;
    sap_mm_read_options_init(&nf);
    nf.allow_nonfinite = 1;
    EXPECT_OPT(BANNER_CR "3 3 2\n1 1 1\n2 2 nan\n", &nf, SAP_OK, 0);
    {
        const char *t = BANNER_CR "3 3 3\n1 1 NaN\n2 2 -inf\n3 3 Infinity\n";
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), &nf, &A, NULL));
        if (A) {
            CHECK(isnan(A->val[0]));
            CHECK(isinf(A->val[1]) && A->val[1] < 0);
            CHECK(isinf(A->val[2]) && A->val[2] > 0);
        }
        sap_csr_destroy(A);
    }

    /* truncated: the last line is incomplete and has no newline */
    EXPECT(BANNER_CR "3 3 2\n1 1 1.0000\n2 2", SAP_ERR_TRUNCATED, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1.0000\n2", SAP_ERR_TRUNCATED, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 1.5e", SAP_ERR_TRUNCATED, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 -", SAP_ERR_TRUNCATED, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1.0000\n2 2 ", SAP_ERR_TRUNCATED, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 abc", SAP_ERR_PARSE, 4);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 3", SAP_OK, 0);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 3.", SAP_OK, 0);
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 3\n   ", SAP_OK, 0);
    EXPECT(BANNER_CR "3 3 3\n1 1 1.000000000\n2 2 3", SAP_ERR_COUNT, 5);

    /* a line number beyond a chunk boundary of the parallel parse: see test_parallel */
}

/* ---- mutations: random damage never crashes; results are canonical --------------------------- */

static void test_mutations(void)
{
    static const char *seeds[] = {
        BANNER_CR "% comment\n4 5 6\n1 1 1.5\n2 3 -2e-3\n4 5 7\n3 3 .25\n1 1 1\n2 2 1e300\n",
        BANNER_CS "4 4 5\n1 1 2\n2 1 -1\n3 2 -1\n4 4 3.0E+00\n4 1 1\n",
        BANNER_CK "3 3 2\n2 1 1\n3 1 -4\n",
        BANNER_CP "3 3 3\n1 2\n2 3\n3 1\n",
        BANNER_CI "2 2 2\n1 1 -7\n2 2 +8\n",
        BANNER_AR "2 3\n1\n2\n3\n4\n5\n6\n",
        "%%MatrixMarket matrix array integer symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
    };
    static const char alphabet[] = "0123456789 \t\n\r.-+eE%xn";
    long ok = 0, errors = 0, bad = 0;
    for (long it = 0; it < 20000; it++) {
        const char *seed = seeds[it % (sizeof(seeds) / sizeof(seeds[0]))];
        size_t len = strlen(seed);
        char *t = malloc(len + 16);
        memcpy(t, seed, len);
        int edits = 1 + (int)(rnd() % 3);
        for (int e = 0; e < edits; e++) {
            size_t pos = (size_t)(rnd() % len);
            switch (rnd() % 4) {
            case 0: t[pos] = alphabet[rnd() % (sizeof(alphabet) - 1)]; break; /* replace */
            case 1: len = pos + 1; break;                                     /* truncate */
            case 2:                                                           /* delete */
                memmove(t + pos, t + pos + 1, len - pos - 1);
                len--;
                break;
            default: /* insert */
                memmove(t + pos + 1, t + pos, len - pos);
                t[pos] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                len++;
                break;
            }
            if (len == 0) break;
        }
        char *exact = malloc(len ? len : 1); /* no slack: overreads are caught by ASan */
        memcpy(exact, t, len);
        sap_csr *A = NULL;
        sap_status st = sap_mm_parse_csr(ctx, exact, len, NULL, &A, NULL);
        if (st == SAP_OK) {
            ok++;
            if (!A || sap_csr_check(A) != SAP_OK) bad++;
        } else {
            errors++;
            if (A || !strstr(sap_context_last_error(ctx), "line ")) bad++;
        }
        sap_csr_destroy(A);
        free(exact);
        free(t);
    }
    CHECK_MSG(bad == 0, "%ld mutated inputs gave a bad result or a message without a line", bad);
    CHECK(ok > 0 && errors > 0);
}

/* ---- numbers -------------------------------------------------------------------------------- */

/* significant digits of a number in text (mantissa digits without leading and trailing
 * zeros) */
static int significant_digits(const char *t)
{
    int n = 0, last = 0, lead = 1;
    for (; *t && *t != 'e' && *t != 'E'; t++) {
        if (*t < '0' || *t > '9') continue;
        if (*t == '0' && lead) continue;
        lead = 0;
        n++;
        if (*t != '0') last = n;
    }
    return last;
}

/* a random double of every kind: any bit pattern, subnormal, +-0, extreme exponents,
 * short decimals, integers */
static double random_double(long it)
{
    double v;
    uint64_t bits = rnd();
    switch (it % 8) {
    case 0:
        memcpy(&v, &bits, sizeof(v));
        if (!isfinite(v)) v = 1.0;
        break;
    case 1: v = (double)(rnd() % 2000000) / (double)(1 + rnd() % 100000); break;
    case 2: v = ldexp((double)(rnd() >> 11), (int)(rnd() % 200) - 150); break;
    case 3: v = (double)(rnd() % 100000) * pow(10.0, (double)((int)(rnd() % 40) - 20)); break;
    case 4: /* subnormal */
        bits &= 0x000FFFFFFFFFFFFFULL;
        if (!bits) bits = 1;
        memcpy(&v, &bits, sizeof(v));
        break;
    case 5: v = ldexp(1.0 + urand(), (int)(rnd() % 2046) - 1022); break; /* any exponent */
    case 6: v = it % 16 == 6 ? 0.0 : (double)((int64_t)(rnd() % 20001) - 10000); break;
    default: {
        static const double edge[] = {DBL_MAX, DBL_MIN, 4.9406564584124654e-324, 2.2250738585072009e-308,
                                      1e23, 9007199254740993.0, 0.1, 1e-7, 1e16, 123456789012345680.0};
        v = edge[rnd() % (sizeof(edge) / sizeof(edge[0]))];
        break;
    }
    }
    if (rnd() & 1) v = -v;
    return v;
}

static void test_numbers(void)
{
    /* precision 1..16: the formatter prints exactly what printf("%.*g") prints; 17 (the
     * default): the shortest text that reads back bit for bit (as few significant digits
     * as the least %.*g that reads back) */
    long bad = 0, bad_short = 0;
    char a[64], b[64];
    for (long it = 0; it < 300000; it++) {
        double v;
        if (it % 5 == 0) { /* any bit pattern, NaN and Inf included (printf's text) */
            uint64_t bits = rnd();
            memcpy(&v, &bits, sizeof(v));
        } else
            v = random_double(it);
        int P = it % 3 ? 1 + (int)(rnd() % 16) : 17;
        int n = sap__format_double(a, v, P);
        a[n] = '\0';
        if (P < 17) {
            snprintf(b, sizeof(b), "%.*g", P, v);
            if (strcmp(a, b)) {
                if (bad < 10) fprintf(stderr, "format %.17g with precision %d: '%s', printf: '%s'\n", v, P, a, b);
                bad++;
            }
            continue;
        }
        if (!isfinite(v)) { /* inf, -inf, nan, -nan: printf's text */
            snprintf(b, sizeof(b), "%.17g", v);
            if (strcmp(a, b)) {
                if (bad_short < 10) fprintf(stderr, "shortest format of %s: '%s'\n", b, a);
                bad_short++;
            }
            continue;
        }
        double w = strtod(a, NULL);
        int k = 1;
        for (; k < 17; k++) {
            snprintf(b, sizeof(b), "%.*g", k, v);
            if (strtod(b, NULL) == v) break;
        }
        snprintf(b, sizeof(b), "%.*g", k, v);
        const bool integer_text = !strpbrk(a, ".eE"); /* the exact integer, checked by length alone */
        if (memcmp(&w, &v, sizeof(v)) || strlen(a) > strlen(b) || (!integer_text && significant_digits(a) > k) ||
            n >= SAP_NUMBER_MAX) {
            if (bad_short < 10) fprintf(stderr, "shortest format of %.17g: '%s' (%%.%dg reads back)\n", v, a, k);
            bad_short++;
        }
    }
    CHECK_MSG(bad == 0, "%ld formatting mismatches", bad);
    CHECK_MSG(bad_short == 0, "%ld shortest formats that are not exact or not shortest", bad_short);
    /* the shortest forms of a few values, as the writer prints them */
    {
        static const double v[] = {0.0, -0.0, 1.0, 0.1, -2.5, 1e22, 1e23, 5e-324, 1.7976931348623157e308, 100, 1e-5};
        static const char *want[] = {"0", "-0", "1", "0.1", "-2.5", "1e+22", "1e+23", "5e-324", "1.7976931348623157e+308",
                                     "100", "1e-05"};
        for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
            int n = sap__format_double(a, v[k], 17);
            a[n] = '\0';
            CHECK_MSG(strcmp(a, want[k]) == 0, "shortest format of %.17g: '%s', expected '%s'", v[k], a, want[k]);
        }
    }

    /* the parser gives what strtod gives: random decimal strings through the public API */
    enum { N = 20000 };
    char *text = malloc((size_t)N * 64 + 256);
    double *ref = malloc(sizeof(double) * N);
    char *o = text;
    o += sprintf(o, "%%%%MatrixMarket matrix array real general\n%d 1\n", N);
    for (int k = 0; k < N; k++) {
        char t[64], *q = t;
        if (rnd() & 1) *q++ = "-+"[rnd() & 1];
        int nd = 1 + (int)(rnd() % 24), dot = (int)(rnd() % (unsigned)(nd + 1));
        for (int d = 0; d < nd; d++) {
            if (d == dot) *q++ = '.';
            *q++ = (char)('0' + rnd() % 10);
        }
        if (rnd() % 3) q += sprintf(q, "%c%d", "eE"[rnd() & 1], (int)(rnd() % 660) - 330);
        *q = '\0';
        ref[k] = strtod(t, NULL);
        if (!isfinite(ref[k])) {
            strcpy(t, "0");
            ref[k] = 0.0;
        }
        o += sprintf(o, "%s\n", t);
    }
    sap_mm_read_options opt;
    sap_mm_read_options_init(&opt);
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_mm_parse_csr(ctx, text, (size_t)(o - text), &opt, &A, NULL));
    if (A) {
        long mism = 0;
        for (int k = 0; k < N; k++)
            if (memcmp(&A->val[k], &ref[k], sizeof(double))) mism++;
        CHECK_MSG(mism == 0, "%ld values differ from strtod", mism);
    }
    sap_csr_destroy(A);
    free(text);
    free(ref);

    /* hard cases */
    static const char *hard[] = {"2.2250738585072011e-308",
                                 "2.2250738585072012e-308",
                                 "4.9406564584124654e-324",
                                 "2.4703282292062327e-324",
                                 "2.4703282292062328e-324",
                                 "1.7976931348623157e308",
                                 "9007199254740993",
                                 "9007199254740992.5",
                                 "0.1",
                                 "1e23",
                                 "8.98846567431158e307",
                                 "123456789012345678901234567890",
                                 "0.000000000000000000000000000000000000001",
                                 "1e-400",
                                 ".5",
                                 "5.",
                                 "+3",
                                 "7.0e+0",
                                 "00000000000000000000000000000001.5"};
    for (size_t k = 0; k < sizeof(hard) / sizeof(hard[0]); k++) {
        char t[256];
        int n = snprintf(t, sizeof(t), "%s1 1\n%s\n", BANNER_AR, hard[k]);
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, (size_t)n, NULL, &B, NULL));
        double want = strtod(hard[k], NULL);
        if (B) CHECK_MSG(memcmp(&B->val[0], &want, sizeof(double)) == 0, "%s parsed as %.17g", hard[k], B->val[0]);
        sap_csr_destroy(B);
    }
}

/* Plain entry lines go through the C++ fast path, the others through mm_body.c's
 * tokenizer: lines of both kinds interleaved give the right values, and an error after
 * them the right line. */
static void test_fast_path_mix(void)
{
    const char *text = BANNER_CR "% comment\n4 4 9\n"
                                 "1 1 1.5\n"          /* line 4: fast */
                                 "\n"                 /* blank */
                                 "2 2 +2.5\n"         /* '+': tokenizer */
                                 "% between\n"
                                 "3 3 1e-400\r\n"     /* underflow: 0, CRLF */
                                 "\t4\t4\t-4.25 \n" /* tabs and a trailing blank: fast */
                                 "1 2 .5\n"
                                 "2 1 5.\n"
                                 "1 3 1E+2\n"
                                 "1 4 -0\n"
                                 "4 1 7\n";
    sap_csr *A = NULL;
    sap_mm_read_options opt;
    sap_mm_read_options_init(&opt);
    CHECK_OK(ctx, sap_mm_parse_csr(ctx, text, strlen(text), &opt, &A, NULL));
    if (A) {
        const double want[] = {1.5, 0.5, 100.0, -0.0, 5.0, 2.5, 0.0, 7.0, -4.25}; /* CSR order */
        CHECK(A->nnz == 9);
        for (sap_int k = 0; k < A->nnz && k < 9; k++)
            CHECK_MSG(memcmp(&A->val[k], &want[k], sizeof(double)) == 0, "value %lld: %.17g, expected %.17g",
                      (long long)k, A->val[k], want[k]);
    }
    sap_csr_destroy(A);
    /* errors after such lines: exact line numbers */
    static const struct {
        const char *text;
        sap_status st;
        const char *line;
    } bad[] = {
        {BANNER_CR "2 2 3\n1 1 1\n\n2 2 +2\n2 3 1\n", SAP_ERR_INDEX, "line 6:"},
        {BANNER_CR "2 2 3\n1 1 1\n% c\n2 2 2\n1 2 nan\n", SAP_ERR_NONFINITE, "line 6:"},
        {BANNER_CR "2 2 3\n1 1 1\n2 2 2\n1 2 1.5x\n", SAP_ERR_PARSE, "line 5:"},
        {BANNER_CR "2 2 2\n1 1 1\n2 2 2\n1 2 3\n", SAP_ERR_COUNT, "line 5:"},
        {BANNER_AR "3 1\n1\n\n+2\n1e999\n", SAP_ERR_NONFINITE, "line 6:"},
        {BANNER_CK "2 2 2\n2 1 1\n\n2 2 1\n", SAP_ERR_PARSE, "line 5:"},
        {BANNER_CI "2 2 2\n1 1 1\n2 2 1.5\n", SAP_ERR_PARSE, "line 4:"},
        {BANNER_CR "2 2 2\n1 1 1\n2 99999999999999999999999 1\n", SAP_ERR_INDEX, "line 4:"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        A = NULL;
        CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, bad[k].text, strlen(bad[k].text), NULL, &A, NULL), bad[k].st);
        CHECK_MSG(strstr(sap_context_last_error(ctx), bad[k].line) != NULL, "case %zu: %s (expected %s)", k,
                  sap_context_last_error(ctx), bad[k].line);
        sap_csr_destroy(A);
    }
}

/* ---- round trips -------------------------------------------------------------------------- */

/* the writer's default (shortest) text reads back bit for bit: random doubles of every
 * kind (subnormals, +-0, extreme exponents) through a file, plain and gzip */
static void test_shortest_round_trip(void)
{
    enum { N = 60000 };
    sap_dense *X = NULL;
    CHECK_OK(ctx, sap_dense_create(ctx, N, 1, &X));
    if (!X) return;
    for (long k = 0; k < N; k++) X->val[k] = random_double(k);
    X->val[0] = 0.0;
    X->val[1] = -0.0;
    X->val[2] = 4.9406564584124654e-324;
    X->val[3] = -1.7976931348623157e308;
    for (int gz = 0; gz < 2; gz++) {
        const char *path = tmpfile_path(gz ? "shortest.mtx.gz" : "shortest.mtx");
        sap_mm_write_options wo;
        sap_mm_write_options_init(&wo);
        wo.format = SAP_MM_ARRAY; /* every value, -0 included (coordinate output drops zeros) */
        CHECK_OK(ctx, sap_mm_write_dense(X, path, &wo));
        sap_dense *Y = NULL;
        CHECK_OK(ctx, sap_mm_read_dense(ctx, path, NULL, &Y, NULL));
        if (Y) {
            long mism = 0;
            for (long k = 0; k < N; k++)
                if (memcmp(&X->val[k], &Y->val[k], sizeof(double))) {
                    if (mism < 5) fprintf(stderr, "wrote %.17g, read %.17g\n", X->val[k], Y->val[k]);
                    mism++;
                }
            CHECK_MSG(mism == 0, "%ld values differ after the round trip", mism);
        }
        sap_dense_destroy(Y);
    }
    sap_dense_destroy(X);
}

static void round_trip(sap_mm_format format, sap_mm_field field, sap_symmetry sym, int gz, sap_int m, sap_int n)
{
    char name[128];
    snprintf(name, sizeof(name), "rt_%d_%d_%d_%lldx%lld.mtx%s", (int)format, (int)field, (int)sym, (long long)m,
             (long long)n, gz ? ".gz" : "");
    const char *path = tmpfile_path(name);
    sap_csr *A = random_matrix(m, n, 0.4, field, sym);
    CHECK(A != NULL);
    if (!A) return;
    sap_mm_write_options wo;
    sap_mm_write_options_init(&wo);
    wo.format = format;
    wo.field = field;
    wo.symmetry = sym;
    wo.comment = "written by test_mmio\n% second comment line";
    CHECK_OK(ctx, sap_mm_write_csr(A, path, &wo));

    sap_csr *B = NULL;
    sap_mm_info info;
    memset(&info, 0, sizeof(info));
    CHECK_OK(ctx, sap_mm_read_csr(ctx, path, NULL, &B, &info));
    CHECK(info.format == format && info.field == field && info.symmetry == sym);
    CHECK(info.nrows == m && info.ncols == n);
    if (format == SAP_MM_COORDINATE) {
        CHECK_MSG(csr_equal(A, B), "%s: coordinate round trip differs", name);
        sap_int stored = 0;
        for (sap_int i = 0; i < m; i++)
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                stored += sym == SAP_GENERAL || A->colind[p] < i || (sym == SAP_SYMMETRIC && A->colind[p] == i);
        CHECK(info.entries == stored);
    } else {
        /* array: every position is stored; compare as dense */
        CHECK(B && B->nnz == m * n);
        sap_dense *DA = NULL, *DB = NULL;
        sap_csr_to_dense(A, &DA);
        if (B) sap_csr_to_dense(B, &DB);
        CHECK_MSG(dense_equal(DA, DB), "%s: array round trip differs", name);
        sap_dense *X = NULL;
        CHECK_OK(ctx, sap_mm_read_dense(ctx, path, NULL, &X, NULL));
        CHECK_MSG(dense_equal(DA, X), "%s: read_dense differs", name);
        sap_dense_destroy(X);
        sap_dense_destroy(DA);
        sap_dense_destroy(DB);
    }
    /* the stored triangle as is */
    if (sym != SAP_GENERAL) {
        sap_mm_read_options ro;
        sap_mm_read_options_init(&ro);
        ro.expand_symmetry = 0;
        sap_csr *T = NULL;
        CHECK_OK(ctx, sap_mm_read_csr(ctx, path, &ro, &T, NULL));
        sap_csr *L = lower_of(A, sym == SAP_SKEW_SYMMETRIC);
        if (format == SAP_MM_COORDINATE) {
            CHECK_MSG(csr_equal(L, T), "%s: stored triangle differs", name);
        } else {
            sap_dense *DL = NULL, *DT = NULL;
            sap_csr_to_dense(L, &DL);
            if (T) sap_csr_to_dense(T, &DT);
            CHECK_MSG(dense_equal(DL, DT), "%s: stored triangle (array) differs", name);
            CHECK(T && T->nnz == (sym == SAP_SYMMETRIC ? m * (m + 1) / 2 : m * (m - 1) / 2));
            sap_dense_destroy(DL);
            sap_dense_destroy(DT);
        }
        sap_csr_destroy(L);
        sap_csr_destroy(T);
    }
    /* dense writer, same options */
    {
        sap_dense *DA = NULL, *X = NULL;
        sap_csr_to_dense(A, &DA);
        char dname[160];
        snprintf(dname, sizeof(dname), "dense_%s", name);
        const char *dpath = tmpfile_path(dname);
        CHECK_OK(ctx, sap_mm_write_dense(DA, dpath, &wo));
        CHECK_OK(ctx, sap_mm_read_dense(ctx, dpath, NULL, &X, NULL));
        CHECK_MSG(dense_equal(DA, X), "%s: dense round trip differs", dname);
        sap_dense_destroy(DA);
        sap_dense_destroy(X);
    }
    sap_csr_destroy(A);
    sap_csr_destroy(B);
}

static void test_round_trips(void)
{
    for (int gz = 0; gz < 2; gz++) {
#ifndef SAP_HAVE_ZLIB
        if (gz) break;
#endif
        for (int f = 0; f < 2; f++)
            for (int fld = 0; fld < 3; fld++)
                for (int s = 0; s < 3; s++) {
                    if (f == SAP_MM_ARRAY && fld == SAP_MM_PATTERN) continue;
                    if (fld == SAP_MM_PATTERN && s == SAP_SKEW_SYMMETRIC) continue;
                    round_trip((sap_mm_format)f, (sap_mm_field)fld, (sap_symmetry)s, gz, 9, 9);
                    round_trip((sap_mm_format)f, (sap_mm_field)fld, (sap_symmetry)s, gz, 1, 1);
                    if (s == SAP_GENERAL) {
                        round_trip((sap_mm_format)f, (sap_mm_field)fld, SAP_GENERAL, gz, 5, 8);
                        round_trip((sap_mm_format)f, (sap_mm_field)fld, SAP_GENERAL, gz, 8, 3);
                    }
                }
    }

    /* the exact text of a small file */
    {
        sap_coo *C = NULL;
        sap_csr *A = NULL;
        sap_coo_create(ctx, 2, 3, 0, &C);
        sap_coo_push(C, 0, 0, 1.5);
        sap_coo_push(C, 1, 2, -2.0);
        sap_coo_push(C, 1, 0, 0.1);
        sap_csr_from_coo(C, &A);
        const char *path = tmpfile_path("exact.mtx");
        CHECK_OK(ctx, sap_mm_write_csr(A, path, NULL));
        size_t len = 0;
        char *t = read_bytes(path, &len);
        const char *want = "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 1.5\n2 1 0.1\n2 3 -2\n";
        CHECK_MSG(t && strcmp(t, want) == 0, "file text:\n%s", t ? t : "(none)");
        free(t);
        sap_mm_write_options wo;
        sap_mm_write_options_init(&wo);
        wo.precision = 6;
        wo.comment = "hello";
        CHECK_OK(ctx, sap_mm_write_csr(A, path, &wo));
        t = read_bytes(path, &len);
        want = "%%MatrixMarket matrix coordinate real general\n%hello\n2 3 3\n1 1 1.5\n2 1 0.1\n2 3 -2\n";
        CHECK_MSG(t && strcmp(t, want) == 0, "file text:\n%s", t ? t : "(none)");
        free(t);
        wo.format = SAP_MM_ARRAY;
        wo.comment = NULL;
        CHECK_OK(ctx, sap_mm_write_csr(A, path, &wo));
        t = read_bytes(path, &len);
        want = "%%MatrixMarket matrix array real general\n2 3\n1.5\n0.1\n0\n0\n0\n-2\n";
        CHECK_MSG(t && strcmp(t, want) == 0, "file text:\n%s", t ? t : "(none)");
        free(t);
        sap_coo_destroy(C);
        sap_csr_destroy(A);
    }

    /* a symmetric array file by hand: lower triangle column by column */
    {
        const char *t = "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n";
        const char *path = tmpfile_path("symarray.mtx");
        write_bytes(path, t, strlen(t));
        sap_dense *X = NULL;
        CHECK_OK(ctx, sap_mm_read_dense(ctx, path, NULL, &X, NULL));
        double want[9] = {1, 2, 3, 2, 4, 5, 3, 5, 6};
        if (X) CHECK(memcmp(X->val, want, sizeof(want)) == 0);
        sap_dense_destroy(X);
        t = "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n";
        write_bytes(path, t, strlen(t));
        CHECK_OK(ctx, sap_mm_read_dense(ctx, path, NULL, &X, NULL));
        double wskew[9] = {0, 1, 2, -1, 0, 3, -2, -3, 0};
        if (X) CHECK(memcmp(X->val, wskew, sizeof(wskew)) == 0);
        sap_dense_destroy(X);
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_read_csr(ctx, path, NULL, &A, NULL));
        CHECK(A && A->nnz == 9 && A->val[0] == 0.0 && A->val[1] == -1.0);
        sap_csr_destroy(A);
    }

    /* coordinate file into a dense matrix (a right-hand side) */
    {
        const char *t = BANNER_CS "3 3 3\n1 1 2\n3 1 -1\n3 3 4\n";
        const char *path = tmpfile_path("coord_dense.mtx");
        write_bytes(path, t, strlen(t));
        sap_dense *X = NULL;
        CHECK_OK(ctx, sap_mm_read_dense(ctx, path, NULL, &X, NULL));
        double want[9] = {2, 0, -1, 0, 0, 0, -1, 0, 4};
        if (X) CHECK(memcmp(X->val, want, sizeof(want)) == 0);
        sap_dense_destroy(X);
    }

    /* NaN written and read back when allowed */
    {
        sap_coo *C = NULL;
        sap_csr *A = NULL, *B = NULL;
        sap_coo_create(ctx, 2, 2, 0, &C);
        sap_coo_push(C, 0, 0, NAN);
        sap_coo_push(C, 1, 1, -INFINITY);
        sap_csr_from_coo(C, &A);
        const char *path = tmpfile_path("nan.mtx");
        CHECK_OK(ctx, sap_mm_write_csr(A, path, NULL));
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, path, NULL, &B, NULL), SAP_ERR_NONFINITE);
        CHECK(has_line(sap_context_last_error(ctx), 3));
        sap_mm_read_options ro;
        sap_mm_read_options_init(&ro);
        ro.allow_nonfinite = 1;
        CHECK_OK(ctx, sap_mm_read_csr(ctx, path, &ro, &B, NULL));
        CHECK(B && isnan(B->val[0]) && isinf(B->val[1]) && B->val[1] < 0);
        sap_csr_destroy(B);
        sap_csr_destroy(A);
        sap_coo_destroy(C);
    }
}

/* ---- semantics ---------------------------------------------------------------------------- */

static void test_semantics(void)
{
    /* duplicates are summed, unsorted input sorted */
    {
        const char *t = BANNER_CR "3 3 6\n3 3 1\n1 1 1\n1 3 2\n1 1 2\n1 2 5\n1 3 0.5\n";
        sap_csr *A = NULL;
        sap_mm_info info;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, &info));
        CHECK(info.entries == 6 && info.lines == 8 && info.bytes == (int64_t)strlen(t));
        if (A) {
            CHECK(A->nnz == 4);
            CHECK(A->rowptr[1] == 3 && A->colind[0] == 0 && A->colind[1] == 1 && A->colind[2] == 2);
            CHECK(A->val[0] == 3.0 && A->val[1] == 5.0 && A->val[2] == 2.5 && A->val[3] == 1.0);
            CHECK_OK(ctx, sap_csr_check(A));
        }
        sap_csr_destroy(A);
    }
    /* symmetric: upper-triangle entries are mirrored too (with a warning); pattern entries are 1 */
    {
        const char *t = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n1 3\n2 2\n";
        sap_csr *A = NULL;
        CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL), SAP_WARN_MM_UPPER);
        if (A) {
            CHECK(A->nnz == 5);
            CHECK(A->rowptr[1] == 2 && A->colind[0] == 1 && A->colind[1] == 2);
            for (sap_int k = 0; k < A->nnz; k++) CHECK(A->val[k] == 1.0);
        }
        sap_csr_destroy(A);
    }
    /* skew: mirrored negated */
    {
        const char *t = BANNER_CK "3 3 2\n2 1 4\n3 2 -1.5\n";
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL));
        if (A) {
            CHECK(A->nnz == 4);
            CHECK(A->colind[0] == 1 && A->val[0] == -4.0);
            CHECK(A->colind[1] == 0 && A->val[1] == 4.0);
            CHECK(A->colind[2] == 2 && A->val[2] == 1.5);
            CHECK(A->colind[3] == 1 && A->val[3] == -1.5);
        }
        sap_csr_destroy(A);
    }
    /* empty matrices */
    {
        const char *t = BANNER_CR "3 4 0\n";
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL));
        CHECK(A && A->nrows == 3 && A->ncols == 4 && A->nnz == 0);
        const char *path = tmpfile_path("empty.mtx");
        if (A) CHECK_OK(ctx, sap_mm_write_csr(A, path, NULL));
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_mm_read_csr(ctx, path, NULL, &B, NULL));
        CHECK(csr_equal(A, B));
        sap_csr_destroy(A);
        sap_csr_destroy(B);
        t = BANNER_CR "0 0 0";
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL));
        CHECK(A && A->nrows == 0 && A->nnz == 0);
        sap_csr_destroy(A);
        t = BANNER_AR "0 5\n";
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL));
        CHECK(A && A->nrows == 0 && A->ncols == 5 && A->nnz == 0);
        sap_csr_destroy(A);
    }
    /* a long unsorted row (merge sort path) with duplicates */
    {
        enum { L = 500 };
        char *t = malloc(64 * 2 * L + 256);
        char *o = t + sprintf(t, "%s2 %d %d\n", BANNER_CR, L, 2 * L);
        for (int k = 0; k < L; k++) o += sprintf(o, "1 %d %d\n", L - k, k);
        for (int k = 0; k < L; k++) o += sprintf(o, "1 %d 1\n", (k * 7) % L + 1);
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, (size_t)(o - t), NULL, &A, NULL));
        if (A) {
            CHECK(A->nnz == L);
            CHECK_OK(ctx, sap_csr_check(A));
            int ok = 1;
            for (int c = 0; c < L; c++) ok &= A->colind[c] == c && A->val[c] == (double)(L - 1 - c) + 1.0;
            CHECK(ok);
        }
        sap_csr_destroy(A);
        free(t);
    }
    /* more than 2^31 columns: 64-bit indices inside the reader too */
    {
        const char *t = BANNER_CR "3 3000000000 3\n1 2999999999 1.5\n3 1 2\n1 2 -1\n";
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL));
        CHECK(A && A->ncols == 3000000000LL && A->nnz == 3 && A->colind[0] == 1 && A->colind[1] == 2999999998LL &&
              A->val[1] == 1.5 && A->colind[2] == 0);
        sap_csr_destroy(A);
        t = BANNER_CR "3 3000000000 1\n1 3000000001 1.5\n";
        EXPECT(t, SAP_ERR_INDEX, 3);
    }
    /* the text need not be NUL-terminated: only len bytes are read */
    {
        const char *t = BANNER_CR "2 2 1\n1 1 7\nGARBAGE";
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t) - 7, NULL, &A, NULL));
        CHECK(A && A->nnz == 1 && A->val[0] == 7.0);
        sap_csr_destroy(A);
    }
    /* arguments */
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, NULL, 5, NULL, NULL, NULL), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_mm_read_csr(ctx, NULL, NULL, NULL, NULL), SAP_ERR_INVALID);
    CHECK(sap_mm_parse_csr(NULL, "", 0, NULL, NULL, NULL) == SAP_ERR_INVALID);
    CHECK(sap_mm_write_csr(NULL, "x", NULL) == SAP_ERR_INVALID);
}

/* ---- files ---------------------------------------------------------------------------------- */

static void test_files(void)
{
    /* missing file, directory */
    {
        sap_csr *A = NULL;
        const char *path = tmpfile_path("does_not_exist.mtx");
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, path, NULL, &A, NULL), SAP_ERR_IO);
        const char *msg = sap_context_last_error(ctx);
        CHECK_MSG(strstr(msg, path) && strstr(msg, "No such file"), "message: %s", msg);
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, sap_test_tmpdir(), NULL, &A, NULL), SAP_ERR_IO);
        sap_dense *X = NULL;
        CHECK_STATUS(ctx, sap_mm_read_dense(ctx, path, NULL, &X, NULL), SAP_ERR_IO);
        CHECK(A == NULL && X == NULL);
        /* unwritable */
        sap_csr *B = random_matrix(3, 3, 0.5, SAP_MM_REAL, SAP_GENERAL);
        CHECK_STATUS(ctx, sap_mm_write_csr(B, "/nonexistent_dir_sap/x.mtx", NULL), SAP_ERR_IO);
        CHECK(strstr(sap_context_last_error(ctx), "/nonexistent_dir_sap/x.mtx") != NULL);
        sap_csr_destroy(B);
    }
    /* errors in files carry the line too */
    {
        const char *path = tmpfile_path("bad.mtx");
        const char *t = BANNER_CR "% c\n3 3 2\n1 1 1\n\n2 7 1\n";
        write_bytes(path, t, strlen(t));
        sap_csr *A = NULL;
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, path, NULL, &A, NULL), SAP_ERR_INDEX);
        CHECK(has_line(sap_context_last_error(ctx), 6));
        CHECK(strstr(sap_context_last_error(ctx), path) != NULL);
    }
    /* writer checks: nothing is written on error */
    {
        sap_csr *A = random_matrix(6, 6, 0.5, SAP_MM_REAL, SAP_GENERAL);
        const char *path = tmpfile_path("nonsym.mtx");
        remove(path);
        sap_mm_write_options wo;
        sap_mm_write_options_init(&wo);
        wo.symmetry = SAP_SYMMETRIC;
        CHECK_STATUS(ctx, sap_mm_write_csr(A, path, &wo), SAP_ERR_INVALID);
        CHECK(strstr(sap_context_last_error(ctx), "not symmetric") != NULL);
        wo.symmetry = SAP_SKEW_SYMMETRIC;
        CHECK_STATUS(ctx, sap_mm_write_csr(A, path, &wo), SAP_ERR_INVALID);
        wo.symmetry = SAP_GENERAL;
        wo.field = SAP_MM_INTEGER;
        A->val[0] = 1.5;
        CHECK_STATUS(ctx, sap_mm_write_csr(A, path, &wo), SAP_ERR_INVALID);
        CHECK(strstr(sap_context_last_error(ctx), "not an integer") != NULL);
        CHECK(!file_exists(path));
        sap_mm_write_options_init(&wo);
        wo.precision = 0;
        CHECK_STATUS(ctx, sap_mm_write_csr(A, path, &wo), SAP_ERR_INVALID);
        sap_mm_write_options_init(&wo);
        wo.format = SAP_MM_ARRAY;
        wo.field = SAP_MM_PATTERN;
        CHECK_STATUS(ctx, sap_mm_write_csr(A, path, &wo), SAP_ERR_INVALID);
        sap_csr *R = random_matrix(3, 4, 0.5, SAP_MM_REAL, SAP_GENERAL);
        sap_mm_write_options_init(&wo);
        wo.symmetry = SAP_SYMMETRIC;
        CHECK_STATUS(ctx, sap_mm_write_csr(R, path, &wo), SAP_ERR_INVALID);
        CHECK(!file_exists(path));
        sap_csr_destroy(R);
        sap_csr_destroy(A);
        /* a symmetric matrix with an explicit upper entry missing its mirror fails */
        const char *t = BANNER_CR "2 2 1\n1 2 3\n";
        sap_csr *U = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &U, NULL));
        sap_mm_write_options_init(&wo);
        wo.symmetry = SAP_SYMMETRIC;
        if (U) CHECK_STATUS(ctx, sap_mm_write_csr(U, path, &wo), SAP_ERR_INVALID);
        sap_csr_destroy(U);
    }
#ifdef SAP_HAVE_ZLIB
    /* gzip: recognized by its magic bytes under any name; truncated and corrupt streams */
    {
        sap_csr *A = random_matrix(300, 300, 0.05, SAP_MM_REAL, SAP_GENERAL);
        const char *gzpath = tmpfile_path("big.mtx.gz");
        CHECK_OK(ctx, sap_mm_write_csr(A, gzpath, NULL));
        size_t len = 0;
        char *bytes = read_bytes(gzpath, &len);
        CHECK(bytes && len > 100 && (unsigned char)bytes[0] == 0x1f && (unsigned char)bytes[1] == 0x8b);
        const char *renamed = tmpfile_path("big_gzip_without_suffix.mtx");
        write_bytes(renamed, bytes, len);
        sap_csr *B = NULL;
        sap_mm_info info;
        CHECK_OK(ctx, sap_mm_read_csr(ctx, renamed, NULL, &B, &info));
        CHECK(csr_equal(A, B));
        sap_csr_destroy(B);
        B = NULL;
        const char *cut = tmpfile_path("cut.mtx.gz");
        size_t cuts[3] = {len / 2, len - 4, 20};
        for (int k = 0; k < 3; k++) {
            write_bytes(cut, bytes, cuts[k]);
            CHECK_STATUS(ctx, sap_mm_read_csr(ctx, cut, NULL, &B, NULL), SAP_ERR_TRUNCATED);
            CHECK(strstr(sap_context_last_error(ctx), cut) != NULL);
            CHECK(B == NULL);
        }
        char *bad = malloc(len);
        memcpy(bad, bytes, len);
        for (size_t k = len / 3; k < len / 3 + 16; k++) bad[k] ^= 0x5a;
        write_bytes(cut, bad, len);
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, cut, NULL, &B, NULL), SAP_ERR_TRUNCATED);
        memcpy(bad, bytes, len);
        bad[len - 6] ^= 0x01; /* the CRC */
        write_bytes(cut, bad, len);
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, cut, NULL, &B, NULL), SAP_ERR_TRUNCATED);
        free(bad);
        free(bytes);
        /* a plain file named .gz is read as text */
        const char *t = BANNER_CR "1 1 1\n1 1 2\n";
        const char *plain_gz = tmpfile_path("plain.mtx.gz");
        write_bytes(plain_gz, t, strlen(t));
        CHECK_OK(ctx, sap_mm_read_csr(ctx, plain_gz, NULL, &B, NULL));
        sap_csr_destroy(B);
        sap_csr_destroy(A);
    }
#else
    {
        sap_csr *A = random_matrix(3, 3, 0.5, SAP_MM_REAL, SAP_GENERAL), *B = NULL;
        CHECK_STATUS(ctx, sap_mm_write_csr(A, tmpfile_path("x.mtx.gz"), NULL), SAP_ERR_NOT_COMPILED);
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, tmpfile_path("x.mtx.gz"), NULL, &B, NULL), SAP_ERR_NOT_COMPILED);
        sap_csr_destroy(A);
    }
#endif
}

/* ---- the parallel parse matches the serial one ------------------------------------------------ */

static void test_parallel(void)
{
    /* about 3 MB of text so that two threads parse two chunks */
    sap_int n = 20000;
    sap_csr *A = NULL;
    sap_coo *C = NULL;
    sap_coo_create(ctx, n, n, 0, &C);
    for (sap_int k = 0; k < 120000; k++)
        sap_coo_push(C, (sap_int)(rnd() % (uint64_t)n), (sap_int)(rnd() % (uint64_t)n), random_value(SAP_MM_REAL));
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    const char *path = tmpfile_path("parallel.mtx");
    CHECK_OK(ctx, sap_mm_write_csr(A, path, NULL));
    size_t len = 0;
    char *text = read_bytes(path, &len);
    CHECK(len > ((size_t)2 << 20));
    sap_csr *B1 = NULL, *B2 = NULL;
    sap_context_set_threads(ctx, 1);
    CHECK_OK(ctx, sap_mm_parse_csr(ctx, text, len, NULL, &B1, NULL));
    sap_context_set_threads(ctx, 2);
    CHECK_OK(ctx, sap_mm_parse_csr(ctx, text, len, NULL, &B2, NULL));
    CHECK(csr_equal(A, B1));
    CHECK(csr_equal(A, B2));
    sap_csr_destroy(B1);
    sap_csr_destroy(B2);
    /* an error in the second half: the line number is exact with two threads */
    long nl = 0, target = 0;
    size_t pos = 0;
    for (size_t k = 0; k < len; k++)
        if (text[k] == '\n') {
            nl++;
            if (k > len * 3 / 4 && !target) {
                target = nl + 1;
                pos = k + 1;
            }
        }
    text[pos] = 'x'; /* first character of line target */
    B2 = NULL;
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, text, len, NULL, &B2, NULL), SAP_ERR_PARSE);
    CHECK_MSG(has_line(sap_context_last_error(ctx), target), "%s (want line %ld)", sap_context_last_error(ctx), target);
    /* one entry too few (the last line removed) and too many */
    text[pos] = '1';
    size_t cut = len - 1;
    while (text[cut - 1] != '\n') cut--;
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, text, cut, NULL, &B2, NULL), SAP_ERR_COUNT);
    CHECK_MSG(has_line(sap_context_last_error(ctx), nl), "%s (want line %ld)", sap_context_last_error(ctx), nl);
    char *more = malloc(len + 64);
    memcpy(more, text, len);
    size_t ml = len + (size_t)sprintf(more + len, "1 1 1\n");
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, more, ml, NULL, &B2, NULL), SAP_ERR_COUNT);
    CHECK_MSG(has_line(sap_context_last_error(ctx), nl + 1), "%s (want line %ld)", sap_context_last_error(ctx), nl + 1);
    free(more);
    free(text);
    sap_csr_destroy(A);
    sap_context_set_threads(ctx, 0);
}

/* ---- out of memory -------------------------------------------------------------------------- */

typedef sap_status (*oom_op)(sap_context *c, const char *arg);

static sap_status op_read_gz(sap_context *c, const char *path)
{
    sap_csr *A = NULL;
    sap_status st = sap_mm_read_csr(c, path, NULL, &A, NULL);
    sap_csr_destroy(A);
    return st;
}

static sap_status op_parse(sap_context *c, const char *text)
{
    sap_csr *A = NULL;
    sap_status st = sap_mm_parse_csr(c, text, strlen(text), NULL, &A, NULL);
    sap_csr_destroy(A);
    return st;
}

static sap_status op_read_dense(sap_context *c, const char *path)
{
    sap_dense *X = NULL;
    sap_status st = sap_mm_read_dense(c, path, NULL, &X, NULL);
    sap_dense_destroy(X);
    return st;
}

static sap_status op_write(sap_context *c, const char *path)
{
    const char *t = BANNER_CS "4 4 5\n1 1 1.5\n2 1 2\n3 3 3\n4 2 -1\n4 4 0.25\n";
    sap_csr *A = NULL;
    sap_status st = sap_mm_parse_csr(c, t, strlen(t), NULL, &A, NULL);
    if (st < 0) return st;
    sap_mm_write_options wo;
    sap_mm_write_options_init(&wo);
    wo.symmetry = SAP_SYMMETRIC;
    st = sap_mm_write_csr(A, path, &wo);
    if (st >= 0) {
        wo.format = SAP_MM_ARRAY;
        st = sap_mm_write_csr(A, path, &wo);
    }
    sap_csr_destroy(A);
    return st;
}

static void oom_sweep(const char *what, oom_op op, const char *arg)
{
    int done = 0;
    for (long k = 0; k < 200 && !done; k++) {
        sap_test_failing_alloc state = {k, 0, 0};
        sap_context *c = sap_test_failing_context(&state);
        if (!c) {
            CHECK(c != NULL);
            return;
        }
        sap_status st = op(c, arg);
        if (st == SAP_OK)
            done = 1;
        else
            CHECK_MSG(st == SAP_ERR_OUT_OF_MEMORY, "%s: allocation %ld failing gave %s (%s)", what, k,
                      sap_status_name(st), sap_context_last_error(c));
        sap_context_destroy(c);
        CHECK_MSG(state.live == 0, "%s: %ld blocks leaked when allocation %ld fails", what, state.live, k);
    }
    CHECK_MSG(done, "%s never succeeded", what);
}

static void test_oom(void)
{
    /* unsorted rows with duplicates (the sort scratch), a symmetric file, an unterminated line */
    static char text[8192];
    char *o = text + sprintf(text, "%s40 40 80\n", BANNER_CS);
    for (int k = 0; k < 79; k++) o += sprintf(o, "40 %d %d.5\n", 40 - (k % 40), k);
    sprintf(o, "1 1 1");
    oom_sweep("parse", op_parse, text);
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_mm_parse_csr(ctx, text, strlen(text), NULL, &A, NULL));
    const char *path = tmpfile_path(
#ifdef SAP_HAVE_ZLIB
        "oom.mtx.gz"
#else
        "oom.mtx"
#endif
    );
    sap_mm_write_options wo;
    sap_mm_write_options_init(&wo);
    wo.symmetry = SAP_SYMMETRIC;
    CHECK_OK(ctx, sap_mm_write_csr(A, path, &wo));
    sap_csr_destroy(A);
    oom_sweep("read", op_read_gz, path);
    oom_sweep("read dense", op_read_dense, path);
    oom_sweep("write", op_write, tmpfile_path("oom_out.mtx"));
}

/* ---- the SuiteSparse matrices ------------------------------------------------------------------ */

static void test_matrix_dir(void)
{
    const char *dir = sap_test_matrix_dir();
    char mpath[1024];
    snprintf(mpath, sizeof(mpath), "%s/MANIFEST.tsv", dir);
    FILE *f = fopen(mpath, "r");
    if (!f) {
        printf("note: %s not found; skipping the SuiteSparse matrices\n", mpath);
        return;
    }
    if (!sap_has_zlib()) {
        printf("note: this build has no zlib; skipping the (.gz) SuiteSparse matrices\n");
        fclose(f);
        return;
    }
    char line[4096];
    int count = 0, header = 1;
    double t0 = sap_test_wtime();
    double mb = 0;
    while (fgets(line, sizeof(line), f)) {
        if (header) {
            header = 0;
            continue;
        }
        char name[256], file[256], sym[64], field[64];
        long long rows, cols, nnz;
        if (sscanf(line, "%255[^\t]\t%255[^\t]\t%lld\t%lld\t%lld\t%63[^\t]\t%63[^\t]", name, file, &rows, &cols, &nnz,
                   sym, field) != 7) {
            CHECK_MSG(0, "bad MANIFEST line: %s", line);
            continue;
        }
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        sap_mm_read_options ro;
        sap_mm_read_options_init(&ro);
        ro.expand_symmetry = 0;
        sap_csr *T = NULL, *A = NULL;
        sap_mm_info info;
        memset(&info, 0, sizeof(info));
        sap_status st = sap_mm_read_csr(ctx, path, &ro, &T, &info);
        CHECK_MSG(st == SAP_OK, "%s: %s (%s)", name, sap_status_name(st), sap_context_last_error(ctx));
        if (st != SAP_OK) continue;
        mb += (double)info.bytes / 1e6;
        CHECK_MSG(info.nrows == rows && info.ncols == cols, "%s: %lld x %lld, manifest %lld x %lld", name,
                  (long long)info.nrows, (long long)info.ncols, rows, cols);
        CHECK_MSG(info.entries == nnz, "%s: %lld entries, manifest %lld", name, (long long)info.entries, nnz);
        const char *want_sym = info.symmetry == SAP_SYMMETRIC        ? "symmetric"
                               : info.symmetry == SAP_SKEW_SYMMETRIC ? "skew-symmetric"
                                                                     : "general";
        CHECK_MSG(strcmp(sym, want_sym) == 0, "%s: symmetry %s, manifest %s", name, want_sym, sym);
        CHECK_MSG(strcmp(field, info.field == SAP_MM_INTEGER ? "integer" : "real") == 0, "%s: field differs", name);
        /* no duplicates in these files: the stored triangle keeps every entry */
        CHECK_MSG(T->nnz == nnz, "%s: %lld stored entries in the CSR, manifest %lld", name, (long long)T->nnz, nnz);
        CHECK_OK(ctx, sap_csr_check(T));
        /* expanded count by brute force: off-diagonal entries twice */
        sap_int diag = 0, upper = 0;
        for (sap_int i = 0; i < T->nrows; i++)
            for (sap_int p = T->rowptr[i]; p < T->rowptr[i + 1]; p++) {
                diag += T->colind[p] == i;
                upper += T->colind[p] > i;
            }
        if (info.symmetry != SAP_GENERAL) CHECK_MSG(upper == 0, "%s: %lld upper entries", name, (long long)upper);
        sap_int want = info.symmetry == SAP_GENERAL ? T->nnz : 2 * T->nnz - diag;
        CHECK_OK(ctx, sap_mm_read_csr(ctx, path, NULL, &A, NULL));
        if (A)
            CHECK_MSG(A->nnz == want, "%s: expanded nnz %lld, expected %lld", name, (long long)A->nnz, (long long)want);
        sap_csr_destroy(A);
        sap_csr_destroy(T);
        count++;
    }
    fclose(f);
    printf("read %d SuiteSparse matrices (%.1f MB of text, twice) in %.2f s\n", count, mb, sap_test_wtime() - t0);
    CHECK(count > 0);
}

/* ---- declared sizes the input cannot hold or the machine cannot store (issue 13) ---------- */

static double phys_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (double)pages * (double)psz : 1e300;
}

static void test_limits(void)
{
    /* a count the text cannot hold: at once, naming the count and the most it could hold */
    EXPECT(BANNER_CR "100000 100000 1000000000\n1 1 1.0\n2 2 1.0\n3 3 1.0\n", SAP_ERR_COUNT, 2);
    CHECK(strstr(sap_context_last_error(ctx), "declares 1000000000 entries") != NULL);
    CHECK(strstr(sap_context_last_error(ctx), "at most 4") != NULL);
    EXPECT(BANNER_CP "3 3 3\n1 1\n2 2\n", SAP_ERR_COUNT, 2);  /* 8 bytes: at most 2 "i j\n" lines */
    EXPECT(BANNER_CP "3 3 2\n1 1\n2 2", SAP_OK, 0);           /* the shortest lines, no final newline */
    EXPECT(BANNER_CR "3 3 2\n1 1 1\n2 2 2", SAP_OK, 0);
    EXPECT(BANNER_CR "3 3 3\n1 1 1\n2 2 2\n", SAP_ERR_COUNT, 2);
    EXPECT(BANNER_AR "2 2\n1\n2\n3\n4", SAP_OK, 0);
    EXPECT(BANNER_AR "3 3\n1\n2\n3\n4\n", SAP_ERR_COUNT, 2);
    CHECK(strstr(sap_context_last_error(ctx), "declares 9 values") != NULL);
    {
        const char *t = BANNER_CR "100000 100000 1000000000\n1 1 1.0\n2 2 1.0\n3 3 1.0\n";
        const char *path = tmpfile_path("declares_1e9.mtx");
        write_bytes(path, t, strlen(t));
        sap_csr *A = NULL;
        double t0 = sap_test_wtime();
        CHECK_STATUS(ctx, sap_mm_read_csr(ctx, path, NULL, &A, NULL), SAP_ERR_COUNT);
        CHECK(strstr(sap_context_last_error(ctx), path) != NULL);
        CHECK(sap_test_wtime() - t0 < 5.0);
        CHECK(A == NULL);
    }
    /* sizes the machine can never hold: the one estimate, before any allocation */
    EXPECT(BANNER_CR "1099511627776 1099511627776 1\n1 1 1\n", SAP_ERR_TOO_LARGE, 2);
    CHECK(strstr(sap_context_last_error(ctx), "row counts and pointers") != NULL);
    CHECK(strstr(sap_context_last_error(ctx), "GB") != NULL);
    /* the rows of the issue: 2^31 and 3e9 rows with one entry (34 and 48 GB of row arrays) */
    static const char *rows[2] = {BANNER_CR "2147483648 2147483648 1\n1 1 1\n",
                                  BANNER_CR "3000000000 3000000000 1\n1 1 1\n"};
    for (int k = 0; k < 2; k++) {
        double t0 = sap_test_wtime();
        sap_csr *A = NULL;
        sap_status st = sap_mm_parse_csr(ctx, rows[k], strlen(rows[k]), NULL, &A, NULL);
        if (phys_bytes() < 34e9 || st < 0) {
            CHECK_MSG(st == SAP_ERR_TOO_LARGE || st == SAP_ERR_OUT_OF_MEMORY, "row %d: %s (%s)", k,
                      sap_status_name(st), sap_context_last_error(ctx));
            CHECK(strstr(sap_context_last_error(ctx), "needs") != NULL);
            CHECK(sap_test_wtime() - t0 < 5.0);
        }
        sap_csr_destroy(A);
    }
    /* 3 x 3e9 with one entry: the read is small; the statistics' column sums check themselves */
    {
        const char *t = BANNER_CR "3 3000000000 1\n1 1 1\n";
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL));
        if (A && phys_bytes() < 24e9) {
            sap_matrix_stats ms;
            double t0 = sap_test_wtime();
            CHECK_STATUS(ctx, sap_csr_stats(A, &ms), SAP_ERR_OUT_OF_MEMORY);
            CHECK(sap_test_wtime() - t0 < 5.0);
        }
        sap_csr_destroy(A);
    }
}

/* ---- entries above the diagonal of symmetric files ---------------------------------------- */

static void test_symmetric_upper(void)
{
    /* both triangles of (1,2) stored, (2,3) only above, (3,3) on the diagonal */
    const char *t = BANNER_CS "3 3 5\n1 1 4\n2 1 1\n1 2 1\n3 3 4\n2 3 2\n";
    sap_mm_read_options o;
    sap_mm_read_options_init(&o);
    CHECK(o.symmetric_upper == SAP_MM_UPPER_WARN);
    sap_csr *A = NULL;
    /* warn (default): as given, missing mirrors filled, nothing doubled */
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, t, strlen(t), NULL, &A, NULL), SAP_WARN_MM_UPPER);
    const char *msg = sap_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "2 of the 5 entries") && strstr(msg, "1 of them with their mirror"), "%s", msg);
    if (A) {
        CHECK_OK(ctx, sap_csr_check(A));
        CHECK(A->nnz == 6);
        /* rows: 0: (0,4) (1,1); 1: (0,1) (2,2); 2: (1,2) (2,4) */
        static const sap_int rp[4] = {0, 2, 4, 6}, ci[6] = {0, 1, 0, 2, 1, 2};
        static const double va[6] = {4, 1, 1, 2, 2, 4};
        for (int k = 0; k < 4; k++) CHECK(A->rowptr[k] == rp[k]);
        for (int k = 0; k < 6; k++) CHECK(A->colind[k] == ci[k] && A->val[k] == va[k]);
    }
    sap_csr_destroy(A);
    A = NULL;
    /* reject */
    o.symmetric_upper = SAP_MM_UPPER_REJECT;
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, t, strlen(t), &o, &A, NULL), SAP_ERR_PARSE);
    msg = sap_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "2 of the 5 entries") && strstr(msg, "(1, 2)"), "%s", msg);
    CHECK(A == NULL);
    /* reject still rejects without expansion; warn then returns the entries as stored */
    o.expand_symmetry = 0;
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, t, strlen(t), &o, &A, NULL), SAP_ERR_PARSE);
    o.symmetric_upper = SAP_MM_UPPER_WARN;
    CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), &o, &A, NULL));
    CHECK(A && A->nnz == 5);
    sap_csr_destroy(A);
    A = NULL;
    o.expand_symmetry = 1;
    /* sum: the old behaviour, every entry mirrored, the stored pair doubled */
    o.symmetric_upper = SAP_MM_UPPER_SUM;
    CHECK_OK(ctx, sap_mm_parse_csr(ctx, t, strlen(t), &o, &A, NULL));
    if (A) {
        CHECK(A->nnz == 6);
        CHECK(A->val[1] == 2.0 && A->val[2] == 2.0); /* (0,1) and (1,0) */
    }
    sap_csr_destroy(A);
    A = NULL;
    /* a lower-triangle file: no warning whatever the mode */
    const char *low = BANNER_CS "2 2 2\n1 1 1\n2 1 3\n";
    for (int m = 0; m < 3; m++) {
        o.symmetric_upper = m;
        CHECK_OK(ctx, sap_mm_parse_csr(ctx, low, strlen(low), &o, &A, NULL));
        CHECK(A && A->nnz == 3);
        sap_csr_destroy(A);
        A = NULL;
    }
    /* an upper-triangle skew file: mirrors negated; the full skew matrix stored: as given */
    const char *sk = BANNER_CK "2 2 1\n1 2 5\n";
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, sk, strlen(sk), NULL, &A, NULL), SAP_WARN_MM_UPPER);
    CHECK(A && A->nnz == 2 && A->val[0] == 5.0 && A->val[1] == -5.0);
    sap_csr_destroy(A);
    A = NULL;
    const char *skf = BANNER_CK "2 2 2\n1 2 5\n2 1 -5\n";
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, skf, strlen(skf), NULL, &A, NULL), SAP_WARN_MM_UPPER);
    CHECK(A && A->nnz == 2 && A->val[0] == 5.0 && A->val[1] == -5.0);
    sap_csr_destroy(A);
    A = NULL;
    /* dense: the same choice */
    const char *path = tmpfile_path("sym_upper.mtx");
    write_bytes(path, t, strlen(t));
    sap_dense *D = NULL;
    CHECK_STATUS(ctx, sap_mm_read_dense(ctx, path, NULL, &D, NULL), SAP_WARN_MM_UPPER);
    CHECK(strstr(sap_context_last_error(ctx), path) != NULL);
    if (D) CHECK(D->val[0 + 1 * D->ld] == 1.0 && D->val[1 + 0 * D->ld] == 1.0 && D->val[2 + 1 * D->ld] == 2.0);
    sap_dense_destroy(D);
    D = NULL;
    o.symmetric_upper = SAP_MM_UPPER_REJECT;
    CHECK_STATUS(ctx, sap_mm_read_dense(ctx, path, &o, &D, NULL), SAP_ERR_PARSE);
    CHECK(D == NULL);
    o.symmetric_upper = SAP_MM_UPPER_SUM;
    CHECK_OK(ctx, sap_mm_read_dense(ctx, path, &o, &D, NULL));
    if (D) CHECK(D->val[0 + 1 * D->ld] == 2.0);
    sap_dense_destroy(D);
    /* a value outside the enum */
    o.symmetric_upper = 7;
    CHECK_STATUS(ctx, sap_mm_parse_csr(ctx, t, strlen(t), &o, &A, NULL), SAP_ERR_INVALID);
}

int main(void)
{
    ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    test_malformed();
    test_mutations();
    test_numbers();
    test_fast_path_mix();
    test_round_trips();
    test_shortest_round_trip();
    test_semantics();
    test_files();
    test_parallel();
    test_oom();
    test_matrix_dir();
    test_limits();
    test_symmetric_upper();
    remove_tmpfiles();
    sap_context_destroy(ctx);
    return sap_test_finish("test_mmio");
}
