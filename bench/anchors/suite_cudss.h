/* suite_cudss.h -- the few cuDSS declarations bench/suite needs to call the library
 * through dlopen/dlsym, written here instead of including cudss.h (the library is not
 * part of the build; it is loaded at run time from $SAP_CUDSS_LIB or libcudss.so.1).
 * Checked against the headers of nvidia-cudss-cu13 1.0.0.35 (cudss.h and
 * cudss_data_types.h, CUDSS_VERSION 10000): the enum values below are the ones of that
 * version; suite_run_cudss refuses another major version (cudssGetProperty). */
#ifndef SAP_SUITE_CUDSS_H
#define SAP_SUITE_CUDSS_H

#include <stddef.h>
#include <stdint.h>
#include <library_types.h> /* cudaDataType_t, libraryPropertyType (CUDA toolkit) */

typedef struct suite_cudssContext *suite_cudssHandle_t;
typedef struct suite_cudssMatrix *suite_cudssMatrix_t;
typedef struct suite_cudssData *suite_cudssData_t;
typedef struct suite_cudssConfig *suite_cudssConfig_t;
typedef int suite_cudssStatus_t;

enum { /* cudssStatus_t */
    SUITE_CUDSS_STATUS_SUCCESS = 0,
    SUITE_CUDSS_STATUS_NOT_INITIALIZED = 1,
    SUITE_CUDSS_STATUS_ALLOC_FAILED = 2,
    SUITE_CUDSS_STATUS_INVALID_VALUE = 3,
    SUITE_CUDSS_STATUS_NOT_SUPPORTED = 4,
    SUITE_CUDSS_STATUS_EXECUTION_FAILED = 5,
    SUITE_CUDSS_STATUS_INTERNAL_ERROR = 6,
    SUITE_CUDSS_STATUS_IR_FAILED = 7
};
enum { /* cudssPhase_t */
    SUITE_CUDSS_PHASE_ANALYSIS = (1 << 0) | (1 << 1), /* REORDERING | SYMBOLIC_FACTORIZATION */
    SUITE_CUDSS_PHASE_FACTORIZATION = 1 << 2,
    SUITE_CUDSS_PHASE_SOLVE = (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9)
};
enum { /* cudssMatrixType_t */
    SUITE_CUDSS_MTYPE_GENERAL = 0,
    SUITE_CUDSS_MTYPE_SYMMETRIC = 1,
    SUITE_CUDSS_MTYPE_HERMITIAN = 2,
    SUITE_CUDSS_MTYPE_SPD = 3,
    SUITE_CUDSS_MTYPE_HPD = 4
};
enum { SUITE_CUDSS_MVIEW_FULL = 0, SUITE_CUDSS_MVIEW_LOWER = 1, SUITE_CUDSS_MVIEW_UPPER = 2 };
enum { SUITE_CUDSS_BASE_ZERO = 0, SUITE_CUDSS_BASE_ONE = 1 };
enum { SUITE_CUDSS_LAYOUT_COL_MAJOR = 0, SUITE_CUDSS_LAYOUT_ROW_MAJOR = 1 };
enum { /* cudssDataParam_t (first entries) */
    SUITE_CUDSS_DATA_INFO = 0,
    SUITE_CUDSS_DATA_LU_NNZ = 1,
    SUITE_CUDSS_DATA_NPIVOTS = 2
};

typedef suite_cudssStatus_t (*suite_cudssCreate_fn)(suite_cudssHandle_t *handle);
typedef suite_cudssStatus_t (*suite_cudssDestroy_fn)(suite_cudssHandle_t handle);
typedef suite_cudssStatus_t (*suite_cudssGetProperty_fn)(libraryPropertyType propertyType, int *value);
typedef suite_cudssStatus_t (*suite_cudssConfigCreate_fn)(suite_cudssConfig_t *config);
typedef suite_cudssStatus_t (*suite_cudssConfigDestroy_fn)(suite_cudssConfig_t config);
typedef suite_cudssStatus_t (*suite_cudssDataCreate_fn)(const suite_cudssHandle_t handle, suite_cudssData_t *data);
typedef suite_cudssStatus_t (*suite_cudssDataDestroy_fn)(suite_cudssHandle_t handle, suite_cudssData_t data);
typedef suite_cudssStatus_t (*suite_cudssDataGet_fn)(const suite_cudssHandle_t handle, const suite_cudssData_t data,
                                                     int param, void *value, size_t sizeInBytes,
                                                     size_t *sizeWritten);
/* cuDSS 1.0: separate offset (row start/end) and column index types */
typedef suite_cudssStatus_t (*suite_cudssMatrixCreateCsr_fn)(suite_cudssMatrix_t *matrix, int64_t nrows,
                                                             int64_t ncols, int64_t nnz, const void *rowStart,
                                                             const void *rowEnd, const void *colIndices,
                                                             const void *values, cudaDataType_t offsetType,
                                                             cudaDataType_t indexType, cudaDataType_t valueType,
                                                             int mtype, int mview, int indexBase);
typedef suite_cudssStatus_t (*suite_cudssMatrixCreateDn_fn)(suite_cudssMatrix_t *matrix, int64_t nrows,
                                                            int64_t ncols, int64_t ld, const void *values,
                                                            cudaDataType_t valueType, int layout);
typedef suite_cudssStatus_t (*suite_cudssMatrixDestroy_fn)(suite_cudssMatrix_t matrix);
typedef suite_cudssStatus_t (*suite_cudssExecute_fn)(suite_cudssHandle_t handle, int phase,
                                                     const suite_cudssConfig_t config, suite_cudssData_t data,
                                                     const suite_cudssMatrix_t inputMatrix,
                                                     suite_cudssMatrix_t solution, const suite_cudssMatrix_t rhs);

#endif
