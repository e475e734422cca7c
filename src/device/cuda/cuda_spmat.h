/* cuda_spmat.h -- the cuda backend's sparse matrix (sap_spmat.impl) shared by its two
 * halves: building the formats on the device (cuda_spmat.cu) and the SpMV kernels
 * (cuda_spmv.cu).  CUDA C++, internal to src/device/cuda. */
#ifndef SAP_CUDA_SPMAT_H
#define SAP_CUDA_SPMAT_H

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_internal.h"

#define BLOCK 256
#define SLICE SAP_SELLP_SLICE
#define ELL_ALIGN 32
#define REM_LONG 256 /* HEC remainders longer than this get a block of threads each */

typedef struct cuda_spmat {
    sap_spmat pub; /* must be first: the table hands out &pub */
    sap_cuda_spmat_view v;
    int32_t *rowptr, *colind;
    void *val;
    int32_t *ell_col;
    void *ell_val;
    int32_t *slice_ptr, *sell_col;
    void *sell_val;
    int32_t *rem_rowptr, *rem_col, *rem_rows, *rem_long;
    void *rem_val;
    int32_t *long_rows;
    int32_t max_row, rem_max;
    int ell_rpt;   /* ELL rows per thread (1 or 2) */
    int sell_tpr;  /* SELL-P threads per row (1, 2, 4, 8) */
    int rem_tpr;   /* HEC remainder: threads per short remainder row */
    int32_t rem_nshort, rem_nlong;
    int32_t long_thr;
    double fmt_bytes; /* bytes of the format's arrays one SpMV reads (x and y excluded) */
    int32_t band_kl, band_w; /* BAND: lower bandwidth and diagonals stored (values in val) */
} cuda_spmat;

#define STREAM (sap__cuda_state(ctx)->stream)

static inline size_t psize(sap_precision p) { return p == SAP_FLOAT ? sizeof(float) : sizeof(double); }

static inline unsigned nblocks(int64_t threads) { return (unsigned)((threads + BLOCK - 1) / BLOCK); }

#endif /* SAP_CUDA_SPMAT_H */
