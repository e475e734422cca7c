/* mm_read.h -- internals of the Matrix Market reader (not installed), shared by its
 * parts, one concern a file:
 *   mm_header.c    the banner and the size line (mm_header), the declared count against
 *                  the bytes of the input, the one memory estimate of the read;
 *   mm_body.c      the entry lines (coordinate or array) into triplet arrays, in parallel
 *                  chunks split at newlines, with exact line numbers in the messages;
 *   mm_assemble.c  the parsed entries into a canonical CSR or a dense matrix (symmetric
 *                  expansion; duplicates summed through sap__csr_canonicalize);
 *   mm_read.c      the public functions and the reader's documented semantics.
 * Reading the file into memory is mm_load.c (mm_io.h); numbers are mm_number.h. */
#ifndef SAP_MM_READ_H
#define SAP_MM_READ_H

#include "base/base.h"
#include "matrix/mm_number.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* "name: " before messages about a file, nothing for memory buffers */
#define SRC_FMT "%s%s"
#define SRC_ARG(name) ((name) ? (name) : ""), ((name) ? ": " : "")

static inline bool mm_isdigit(char c) { return (unsigned char)(c - '0') < 10; }
/* Separators inside a line: blank, tab, carriage return (of CRLF files). */
static inline bool mm_isblank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* What the banner and the size line say. */
typedef struct mm_header {
    sap_mm_format format;
    sap_mm_field field;
    sap_symmetry symmetry;
    sap_int nrows, ncols;
    sap_int entries; /* declared: coordinate nnz, or the number of array values */
    int64_t lines;   /* lines up to and including the size line */
    size_t data;     /* offset of the first byte after the size line */
} mm_header;

/* Parses the banner and the size line of text into *h, checking the sizes against the
 * options and the machine's memory. */
sap_status sap__mm_parse_header(sap_context *ctx, const char *name, const char *text, size_t len,
                                const sap_mm_read_options *opt, mm_header *h);

/* The one estimate of the bytes a read needs at its peak (the parsed entries, the row
 * counts and pointers, the CSR with mirrored entries or the dense matrix; the reader has
 * no column-sized array: the steps that do, statistics, norms, transposes, check their
 * own through sap__alloc), checked before anything is allocated: SAP_ERR_TOO_LARGE beyond the machine's memory,
 * SAP_ERR_OUT_OF_MEMORY beyond what the process can get now (sap__mem_check). */
sap_status sap__mm_check_memory(sap_context *ctx, const char *name, const mm_header *h, bool dense, bool expand);

/* Physical memory in bytes (an upper bound for what a read may allocate), or a large
 * constant where unknown. */
int64_t sap__mm_memory_limit(void);

/* One slice of the entry section, parsed by one thread. */
typedef struct mm_chunk {
    const char *begin, *end; /* end[-1] == '\n' */
    int64_t line0;           /* lines before the chunk */
    int64_t nlines;          /* '\n' in the chunk */
    int64_t off, cap, count; /* slice of the triplet arrays, entries parsed */
    bool unterminated;       /* the copied last line of an input without a final newline */
    sap_status err;
    int64_t err_line;
    char msg[240];
} mm_chunk;

/* The parsed entries: chunk k holds count entries at off in row/col/val. */
typedef struct mm_data {
    mm_header h;
    int nchunks;
    mm_chunk *chunks;
    bool wide; /* row/col hold sap_int, else int32_t */
    void *row, *col;
    double *val;
    int64_t count, lines;
    char *tail;
} mm_data;

/* Parses the whole text (header and entries) into d, checking the memory of the read
 * into a CSR or (dense) a dense matrix first; d is freed with sap__mm_data_free, also
 * after an error. */
sap_status sap__mm_parse_text(sap_context *ctx, const char *name, const char *text, size_t len,
                              const sap_mm_read_options *opt, bool dense, mm_data *d);
void sap__mm_data_free(sap_context *ctx, mm_data *d);

/* The parsed entries of d as a canonical CSR (coordinate or array file) or a dense
 * matrix; opt->expand_symmetry: mirror symmetric and skew-symmetric files;
 * opt->symmetric_upper: entries above their diagonal (SAP_WARN_MM_UPPER, or
 * SAP_ERR_PARSE; sap.h).  name (NULL for memory) starts the messages. */
sap_status sap__mm_build_csr(sap_context *ctx, const char *name, const mm_data *d, const sap_mm_read_options *opt,
                             sap_csr **out);
sap_status sap__mm_build_dense(sap_context *ctx, const char *name, const mm_data *d, const sap_mm_read_options *opt,
                               sap_dense **out);

/* Runs BODY with r, j (sap_int) and v (double) bound to each parsed coordinate entry, in
 * file order. */
#define FOR_TRIPLETS(d, BODY)                                                                                          \
    do {                                                                                                               \
        for (int k_ = 0; k_ < (d)->nchunks; k_++) {                                                                    \
            const mm_chunk *c_ = &(d)->chunks[k_];                                                                     \
            if (c_->count == 0) continue;                                                                              \
            const double *V_ = (d)->val ? (d)->val + c_->off : NULL;                                                   \
            if ((d)->wide) {                                                                                           \
                const sap_int *R_ = (const sap_int *)(d)->row + c_->off;                                               \
                const sap_int *C_ = (const sap_int *)(d)->col + c_->off;                                               \
                for (int64_t q_ = 0; q_ < c_->count; q_++) {                                                           \
                    const sap_int r = R_[q_], j = C_[q_];                                                              \
                    const double v = V_ ? V_[q_] : 1.0;                                                                \
                    (void)v, (void)j;                                                                                  \
                    BODY;                                                                                              \
                }                                                                                                      \
            } else {                                                                                                   \
                const int32_t *R_ = (const int32_t *)(d)->row + c_->off;                                               \
                const int32_t *C_ = (const int32_t *)(d)->col + c_->off;                                               \
                for (int64_t q_ = 0; q_ < c_->count; q_++) {                                                           \
                    const sap_int r = R_[q_], j = C_[q_];                                                              \
                    const double v = V_ ? V_[q_] : 1.0;                                                                \
                    (void)v, (void)j;                                                                                  \
                    BODY;                                                                                              \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

/* Calls body(i, j, v) for the array values in file order (column-major; the lower
 * triangle of symmetric files with the diagonal, the strict lower one of skew files). */
#define FOR_ARRAY_VALUES(d, BODY)                                                                                      \
    do {                                                                                                               \
        const sap_int n_ = (d)->h.nrows;                                                                               \
        const sap_symmetry sy_ = (d)->h.symmetry;                                                                      \
        sap_int i = sy_ == SAP_SKEW_SYMMETRIC ? 1 : 0, j = 0;                                                          \
        for (int k_ = 0; k_ < (d)->nchunks; k_++) {                                                                    \
            const mm_chunk *c_ = &(d)->chunks[k_];                                                                     \
            if (c_->count == 0) continue;                                                                              \
            const double *V_ = (d)->val + c_->off;                                                                     \
            for (int64_t q_ = 0; q_ < c_->count; q_++) {                                                               \
                double v = V_[q_];                                                                                     \
                BODY;                                                                                                  \
                if (++i == n_) {                                                                                       \
                    j++;                                                                                               \
                    i = sy_ == SAP_GENERAL ? 0 : sy_ == SAP_SYMMETRIC ? j : j + 1;                                     \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

#endif /* SAP_MM_READ_H */
