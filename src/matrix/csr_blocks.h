/* csr_blocks.h -- the diagonal blocks of a square CSR for block-Jacobi: supervariable
 * detection (rows with identical sparsity patterns, anywhere in the matrix) and
 * agglomeration of consecutive supervariables up to a maximum block size, or uniform
 * blocks of consecutive rows.  Internal (src/matrix/csr_blocks.c). */
#ifndef SAP_CSR_BLOCKS_H
#define SAP_CSR_BLOCKS_H

#include "base/base.h"

#define SAP_BLOCKS_MAX 32 /* the largest block a batched kernel takes (one warp) */

typedef struct sap_csr_blocks {
    sap_int n, nb;       /* rows, blocks */
    sap_int nsuper;      /* supervariables found (before agglomeration; uniform: 0) */
    int maxb;            /* the largest block */
    sap_int *rows;       /* n: the rows of block b are rows[off[b] .. off[b+1]), ascending */
    sap_int *off;        /* nb + 1 */
    sap_int hist[SAP_BLOCKS_MAX + 1]; /* hist[s]: blocks of size s */
} sap_csr_blocks;

/* The blocks of A (square, canonical).  uniform: blocks of maxblock consecutive rows (the
 * last one shorter).  Otherwise supervariables (rows of identical pattern; a supervariable
 * larger than maxblock is cut into pieces of maxblock rows), then, when agglomerate is set,
 * supervariables consecutive in the order of their first rows merged while the sum stays
 * <= maxblock.  The result depends on the pattern only and is the same for every thread
 * count.  SAP_ERR_INVALID: maxblock outside 1..SAP_BLOCKS_MAX or A not square. */
sap_status sap__csr_blocks(sap_context *ctx, const sap_csr *A, int maxblock, int uniform, int agglomerate,
                           sap_csr_blocks *B);
void sap__csr_blocks_free(sap_context *ctx, sap_csr_blocks *B);
/* "nb blocks (nsuper supervariables), sizes: 1:x 3:y ..." into buf. */
void sap__csr_blocks_describe(const sap_csr_blocks *B, char *buf, size_t size);

#endif /* SAP_CSR_BLOCKS_H */
