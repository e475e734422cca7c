/* mm_read.c -- owns the public Matrix Market reader (sap_mm_read_csr, sap_mm_parse_csr,
 * sap_mm_read_dense) and its semantics: coordinate and array files with real, integer or
 * pattern fields, general, symmetric or skew-symmetric, plain or gzip-compressed, into a
 * canonical CSR or a dense matrix.
 *
 * How it reads: mm_load.c puts the whole (decompressed) text in one buffer; mm_header.c
 * parses the banner and the size line; mm_body.c parses the entries, in parallel chunks,
 * converting numbers with sap__parse_double (mm_number.h: fast_float, always correctly
 * rounded) and counting lines for the messages; mm_assemble.c builds the result.
 *
 * Semantics (beyond the Matrix Market definition):
 *  - Banner words are case-insensitive.  Comment lines (first non-blank character '%')
 *    and blank lines are allowed anywhere after the banner; CRLF line ends are accepted.
 *  - Duplicate coordinate entries are summed (in file order).
 *  - Symmetric and skew-symmetric files are expanded to the full matrix by default
 *    (opt->expand_symmetry = 1): each off-diagonal entry (i, j) also gives (j, i), negated
 *    for skew.  Entries above the diagonal (the format stores the lower triangle) follow
 *    opt->symmetric_upper: by default (WARN) every stored entry is taken as given and only
 *    the mirrors the file lacks are filled in, with SAP_WARN_MM_UPPER and the count (so a
 *    file storing both triangles is never doubled); REJECT is SAP_ERR_PARSE; SUM mirrors
 *    every entry and sums (the old behaviour).  With expand_symmetry = 0 the entries are
 *    returned where the file puts them.
 *  - A skew-symmetric file must not hold a nonzero diagonal entry (SAP_ERR_PARSE).
 *  - Array files keep every value, zeros included; a symmetric array file expands to the
 *    full dense pattern, a skew-symmetric one too, with explicit zeros on the diagonal.
 *  - Integer fields accept [+-]digits only; pattern entries are 1.0.
 *  - The size line may declare at most rows*cols coordinate entries; sizes beyond int64,
 *    or needing more memory than the machine has, give SAP_ERR_TOO_LARGE. */
#define _POSIX_C_SOURCE 200809L
#include "matrix/mm_io.h"
#include "matrix/mm_read.h"

void sap_mm_read_options_init(sap_mm_read_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->allow_nonfinite = 0;
    opt->require_square = 0;
    opt->expand_symmetry = 1;
    opt->symmetric_upper = SAP_MM_UPPER_WARN;
}

static void fill_info(sap_mm_info *info, const mm_data *d, size_t len)
{
    if (!info) return;
    info->format = d->h.format;
    info->field = d->h.field;
    info->symmetry = d->h.symmetry;
    info->nrows = d->h.nrows;
    info->ncols = d->h.ncols;
    info->entries = d->h.entries;
    info->bytes = (int64_t)len;
    info->lines = d->lines;
}

static sap_status parse_csr(sap_context *ctx, const char *name, const char *text, size_t len,
                            const sap_mm_read_options *opt, sap_csr **A, sap_mm_info *info)
{
    mm_data d;
    sap_status st = sap__mm_parse_text(ctx, name, text, len, opt, false, &d);
    if (st < 0) return st;
    st = sap__mm_build_csr(ctx, name, &d, opt, A);
    if (st >= 0) fill_info(info, &d, len);
    sap__mm_data_free(ctx, &d);
    return st;
}

/* opt, or the defaults written into *def when opt is NULL. */
static const sap_mm_read_options *options_or_default(const sap_mm_read_options *opt, sap_mm_read_options *def)
{
    if (opt) return opt;
    sap_mm_read_options_init(def);
    return def;
}

static sap_status check_options(sap_context *ctx, const sap_mm_read_options *opt)
{
    if (opt->symmetric_upper < SAP_MM_UPPER_WARN || opt->symmetric_upper > SAP_MM_UPPER_SUM)
        return SAP_ERROR(ctx, SAP_ERR_INVALID,
                         "sap_mm_read_options: symmetric_upper = %d is not a sap_mm_upper (0 warn, 1 reject, 2 sum)",
                         opt->symmetric_upper);
    return SAP_OK;
}

sap_status sap_mm_parse_csr(sap_context *ctx, const char *text, size_t len, const sap_mm_read_options *opt, sap_csr **A,
                            sap_mm_info *info)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *A = NULL;
    if (!text && len > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "text is NULL");
    sap_mm_read_options def;
    opt = options_or_default(opt, &def);
    if (check_options(ctx, opt) < 0) return SAP_ERR_INVALID;
    return parse_csr(ctx, NULL, text ? text : "", len, opt, A, info);
}

sap_status sap_mm_read_csr(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_csr **A,
                           sap_mm_info *info)
{
    SAP_CHECK_CTX(ctx);
    if (!A) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *A = NULL;
    if (!path) return SAP_ERROR(ctx, SAP_ERR_INVALID, "path is NULL");
    sap_mm_read_options def;
    opt = options_or_default(opt, &def);
    if (check_options(ctx, opt) < 0) return SAP_ERR_INVALID;
    char *text = NULL;
    size_t len = 0;
    sap_status st = sap__mm_load(ctx, path, &text, &len, NULL);
    if (st < 0) return st;
    st = parse_csr(ctx, path, text, len, opt, A, info);
    sap__free(ctx, text);
    return st;
}

sap_status sap_mm_read_dense(sap_context *ctx, const char *path, const sap_mm_read_options *opt, sap_dense **X,
                             sap_mm_info *info)
{
    SAP_CHECK_CTX(ctx);
    if (!X) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *X = NULL;
    if (!path) return SAP_ERROR(ctx, SAP_ERR_INVALID, "path is NULL");
    sap_mm_read_options def;
    opt = options_or_default(opt, &def);
    if (check_options(ctx, opt) < 0) return SAP_ERR_INVALID;
    char *text = NULL;
    size_t len = 0;
    sap_status st = sap__mm_load(ctx, path, &text, &len, NULL);
    if (st < 0) return st;
    mm_data d;
    st = sap__mm_parse_text(ctx, path, text, len, opt, true, &d);
    if (st >= 0) {
        if (sap__mul_overflows(d.h.nrows, d.h.ncols, sap__mm_memory_limit() / 8)) {
            st = SAP_ERROR(ctx, SAP_ERR_TOO_LARGE,
                           "%s: a dense %lld x %lld matrix needs more memory than this machine has", path,
                           (long long)d.h.nrows, (long long)d.h.ncols);
        } else {
            st = sap__mm_build_dense(ctx, path, &d, opt, X);
            if (st >= 0) fill_info(info, &d, len);
        }
        sap__mm_data_free(ctx, &d);
    }
    sap__free(ctx, text);
    return st;
}
