/* bjacobi_kernels.h -- the batched block-Jacobi kernels every backend implements (reached
 * through the device table: sap__ops(ctx)->bjacobi): extraction of variable-size diagonal
 * blocks (<= 32 rows, arbitrary row sets) from a CSR, their factorization in double with
 * implicit pivoting (Gauss-Jordan inversion or LU), the choice of each block's storage
 * precision from its 1-norm condition number, and the apply z = D^{-1} r reading the
 * mixed-precision storage (compact: s^2 values of the block's precision) in one pass.  The preconditioner that drives them is
 * src/precond/pc_bjacobi.c.  cpu: src/device/cpu/bjacobi_cpu.c (OpenMP across blocks, the
 * reference); cuda: src/device/cuda/bjacobi_cuda.cu (a group of 4/8/16/32 lanes of a warp
 * per block, one row per lane in registers, warp shuffles).  Internal. */
#ifndef SAP_DEVICE_BJACOBI_KERNELS_H
#define SAP_DEVICE_BJACOBI_KERNELS_H

#include "base/base.h"

/* factorization variants */
enum { SAP_BJ_GJ = 0, SAP_BJ_LU = 1 };
/* storage precision of a block (F->bprec) */
enum { SAP_BJ_FP64 = 0, SAP_BJ_FP32 = 1, SAP_BJ_FP16 = 2 };
/* F->info of a block: 0 ok; otherwise the block is replaced by its diagonal (scalar Jacobi,
 * a zero diagonal entry by 1), stored in fp64 */
enum { SAP_BJ_OK = 0, SAP_BJ_SINGULAR = 1, SAP_BJ_ILL = 2, SAP_BJ_NONFINITE = 3 };

/* The block layout, the options of the factorization and its results.  Host arrays are
 * owned by the preconditioner; dev is the backend's. */
typedef struct sap_bj_fact {
    sap_context *ctx;
    const struct sap_bjacobi_kernels *kt;
    sap_int n, nb;
    int maxb;             /* largest block (<= 32) */
    int variant;          /* SAP_BJ_GJ: the inverse is stored; SAP_BJ_LU: L\U and the pivots */
    int adaptive;         /* 1: per-block precision from kappa_1; 0: every block in fp64 */
    double cond_fp16;     /* fp16 when kappa_1 <= cond_fp16 (and the values fit fp16's range) */
    double cond_fp32;     /* else fp32 when kappa_1 <= cond_fp32 (and fit), else fp64 */
    /* layout (host, set before prepare) */
    const sap_int *rows;  /* n: rows of block b = rows[off[b] .. off[b+1]), ascending */
    const sap_int *off;   /* nb + 1 */
    int64_t *soff;        /* nb + 1: byte offsets of the blocks' compact storage: block b takes
                           * sap__bj_slot_bytes(s, bprec[b]) (s^2 values in its precision,
                           * rounded up to 16 bytes).  Set by sap__bj_init for fp64 blocks
                           * (the slots a factor writes before it compacts adaptive storage),
                           * by factor for the precisions chosen (unless no_results) */
    /* results of factor (host) */
    uint8_t *bprec;       /* nb: SAP_BJ_FP* */
    uint8_t *info;        /* nb: SAP_BJ_OK, ... */
    double *cond;         /* nb: kappa_1 (Inf when singular) */
    double *scale;        /* nb: a power of two; fp16/fp32 blocks store the inverse (GJ) or U
                           * (LU) divided by it, so the values sit in the middle of the
                           * format's range (exact; the precision rule is unchanged) */
    int no_results;       /* 1: factor leaves bprec, info, cond and scale in the backend's
                           * memory only (benchmarks timing the batched kernels alone) */
    void *dev;            /* backend private */
} sap_bj_fact;

typedef struct sap_bjacobi_kernels {
    const char *name;
    /* after the layout is set: backend set-up for the pattern of A (square, 32-bit
     * indices on cuda): block maps, device copies, the storage (soff[nb] bytes) */
    sap_status (*prepare)(sap_bj_fact *F, const sap_csr *A);
    void (*release)(sap_bj_fact *F);
    /* the values of A (same pattern as at prepare) into the backend */
    sap_status (*load)(sap_bj_fact *F, const sap_csr *A);
    /* extraction + factorization + precision choice of every block from the loaded
     * values; fills the host arrays bprec, info and cond */
    sap_status (*factor)(sap_bj_fact *F);
    /* z = D^{-1} r (r, z: length n, both double or both float, z != r) */
    sap_status (*apply)(sap_bj_fact *F, const void *r, void *z, sap_precision prec);
} sap_bjacobi_kernels;

/* Sets F's layout to the nb blocks rows[off[b] .. off[b+1]) of an n-row matrix (the arrays
 * stay the caller's), allocates the host arrays (soff, bprec, info, cond, scale), computes
 * soff and runs the backend's prepare for the pattern of A; F's options (variant,
 * adaptive, thresholds) are kept.  sap__bj_fini releases everything it set up. */
sap_status sap__bj_init(sap_context *ctx, sap_bj_fact *F, const sap_csr *A, sap_int nb, const sap_int *rows,
                        const sap_int *off);
void sap__bj_fini(sap_bj_fact *F);

/* The bytes of a block of s rows stored in precision prec (SAP_BJ_FP*): s^2 values rounded
 * up to 16 bytes (aligned 16-byte loads). */
int64_t sap__bj_slot_bytes(int64_t s, int prec);
/* soff[0..nb] from the blocks' sizes and bprec (a prefix sum of sap__bj_slot_bytes). */
void sap__bj_compact_offsets(sap_bj_fact *F);

/* Bytes one apply reads and writes at least: every block's storage in its precision, r
 * read once, z written once (vectors of elem bytes). */
double sap__bj_apply_bytes(const sap_bj_fact *F, size_t elem);

/* IEEE binary16 <-> double, round to nearest even (the cpu reference of cuda_fp16.h's
 * __double2half / __half2float). */
uint16_t sap__half_from_double(double x);
double sap__half_to_double(uint16_t h);

#endif /* SAP_DEVICE_BJACOBI_KERNELS_H */
