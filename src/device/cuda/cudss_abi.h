/* cudss_abi.h -- the few NVIDIA cuDSS declarations the direct-cudss method
 * (src/device/cuda/direct_cuda.cu) and bench/suite's cudss anchor call through
 * dlopen/dlsym, written here instead of including cudss.h so that no build needs cuDSS.
 * The values are those of cuDSS 1.x (cudss.h and cudss_data_types.h of nvidia-cudss-cu13
 * 1.0.0.35, CUDSS_VERSION 10000); the loaders refuse another major version
 * (cudssGetProperty).  Plain C (no CUDA code).  Internal. */
#ifndef SAP_CUDSS_ABI_H
#define SAP_CUDSS_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <library_types.h> /* cudaDataType_t, libraryPropertyType (CUDA toolkit) */

typedef struct sap_cudssContext *sap_cudssHandle_t;
typedef struct sap_cudssMatrix *sap_cudssMatrix_t;
typedef struct sap_cudssData *sap_cudssData_t;
typedef struct sap_cudssConfig *sap_cudssConfig_t;
typedef int sap_cudssStatus_t;

enum { /* cudssStatus_t */
    SAP_CUDSS_STATUS_SUCCESS = 0,
    SAP_CUDSS_STATUS_ALLOC_FAILED = 2
};
enum { /* cudssPhase_t */
    SAP_CUDSS_PHASE_ANALYSIS = (1 << 0) | (1 << 1), /* REORDERING | SYMBOLIC_FACTORIZATION */
    SAP_CUDSS_PHASE_FACTORIZATION = 1 << 2,
    SAP_CUDSS_PHASE_SOLVE = (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9)
};
enum { SAP_CUDSS_MTYPE_GENERAL = 0, SAP_CUDSS_MTYPE_SPD = 3 };      /* cudssMatrixType_t */
enum { SAP_CUDSS_MVIEW_FULL = 0 };                                  /* cudssMatrixViewType_t */
enum { SAP_CUDSS_BASE_ZERO = 0 };                                   /* cudssIndexBase_t */
enum { SAP_CUDSS_LAYOUT_COL_MAJOR = 0 };                            /* cudssLayout_t */
enum { SAP_CUDSS_DATA_INFO = 0, SAP_CUDSS_DATA_LU_NNZ = 1 };        /* cudssDataParam_t */

typedef sap_cudssStatus_t (*sap_cudssCreate_fn)(sap_cudssHandle_t *handle);
typedef sap_cudssStatus_t (*sap_cudssDestroy_fn)(sap_cudssHandle_t handle);
typedef sap_cudssStatus_t (*sap_cudssSetStream_fn)(sap_cudssHandle_t handle, void *stream /* cudaStream_t */);
typedef sap_cudssStatus_t (*sap_cudssGetProperty_fn)(libraryPropertyType propertyType, int *value);
typedef sap_cudssStatus_t (*sap_cudssConfigCreate_fn)(sap_cudssConfig_t *config);
typedef sap_cudssStatus_t (*sap_cudssConfigDestroy_fn)(sap_cudssConfig_t config);
typedef sap_cudssStatus_t (*sap_cudssDataCreate_fn)(const sap_cudssHandle_t handle, sap_cudssData_t *data);
typedef sap_cudssStatus_t (*sap_cudssDataDestroy_fn)(sap_cudssHandle_t handle, sap_cudssData_t data);
typedef sap_cudssStatus_t (*sap_cudssDataGet_fn)(const sap_cudssHandle_t handle, const sap_cudssData_t data, int param,
                                                 void *value, size_t sizeInBytes, size_t *sizeWritten);
/* cuDSS 1.x: separate offset (row start/end) and column index types */
typedef sap_cudssStatus_t (*sap_cudssMatrixCreateCsr_fn)(sap_cudssMatrix_t *matrix, int64_t nrows, int64_t ncols,
                                                         int64_t nnz, const void *rowStart, const void *rowEnd,
                                                         const void *colIndices, const void *values,
                                                         cudaDataType_t offsetType, cudaDataType_t indexType,
                                                         cudaDataType_t valueType, int mtype, int mview,
                                                         int indexBase);
typedef sap_cudssStatus_t (*sap_cudssMatrixCreateDn_fn)(sap_cudssMatrix_t *matrix, int64_t nrows, int64_t ncols,
                                                        int64_t ld, const void *values, cudaDataType_t valueType,
                                                        int layout);
typedef sap_cudssStatus_t (*sap_cudssMatrixDestroy_fn)(sap_cudssMatrix_t matrix);
typedef sap_cudssStatus_t (*sap_cudssExecute_fn)(sap_cudssHandle_t handle, int phase, const sap_cudssConfig_t config,
                                                 sap_cudssData_t data, const sap_cudssMatrix_t inputMatrix,
                                                 sap_cudssMatrix_t solution, const sap_cudssMatrix_t rhs);

/* The functions of one loaded cuDSS library. */
typedef struct sap_cudss_api {
    int ok;        /* usable; else why says why not */
    char why[200];
    int major, minor, patch;
    sap_cudssCreate_fn Create;
    sap_cudssDestroy_fn Destroy;
    sap_cudssSetStream_fn SetStream;
    sap_cudssGetProperty_fn GetProperty;
    sap_cudssConfigCreate_fn ConfigCreate;
    sap_cudssConfigDestroy_fn ConfigDestroy;
    sap_cudssDataCreate_fn DataCreate;
    sap_cudssDataDestroy_fn DataDestroy;
    sap_cudssDataGet_fn DataGet;
    sap_cudssMatrixCreateCsr_fn MatrixCreateCsr;
    sap_cudssMatrixCreateDn_fn MatrixCreateDn;
    sap_cudssMatrixDestroy_fn MatrixDestroy;
    sap_cudssExecute_fn Execute;
} sap_cudss_api;

#ifdef __cplusplus
extern "C" {
#endif
/* The process' cuDSS (direct_cuda.cu): loaded with dlopen at the first call (thread-safe)
 * from $SAP_CUDSS_LIB, else libcudss.so.1 then libcudss.so.0, and never unloaded; the
 * cuDSS 1.x interface only. */
const sap_cudss_api *sap__cudss_api(void);
#ifdef __cplusplus
}
#endif

#endif /* SAP_CUDSS_ABI_H */
