/* nccl_abi.h -- the few NVIDIA NCCL declarations the device-to-device exchanges between
 * processes (src/device/cuda/nccl_cuda.cu) call through dlopen/dlsym, written here instead
 * of including nccl.h so that no build needs NCCL.  The values are those of NCCL 2.x
 * (nccl.h of NCCL 2.28; point-to-point ncclSend / ncclRecv exist since 2.7, and the loader
 * refuses an older or another major version: ncclGetVersion).  Plain C.  Internal. */
#ifndef SAP_NCCL_ABI_H
#define SAP_NCCL_ABI_H

#include <stddef.h>

#define SAP_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[SAP_NCCL_UNIQUE_ID_BYTES];
} sap_ncclUniqueId;                          /* ncclUniqueId, passed by value */
typedef struct sap_ncclComm *sap_ncclComm_t; /* ncclComm_t */
typedef int sap_ncclResult_t;                /* ncclResult_t: ncclSuccess = 0 */
enum { SAP_NCCL_SUCCESS = 0 };
enum { SAP_NCCL_FLOAT64 = 8 };               /* ncclDataType_t: ncclFloat64 = ncclDouble = 8 */

typedef sap_ncclResult_t (*sap_ncclGetVersion_fn)(int *version);
typedef sap_ncclResult_t (*sap_ncclGetUniqueId_fn)(sap_ncclUniqueId *id);
typedef sap_ncclResult_t (*sap_ncclCommInitRank_fn)(sap_ncclComm_t *comm, int nranks, sap_ncclUniqueId id, int rank);
typedef sap_ncclResult_t (*sap_ncclCommDestroy_fn)(sap_ncclComm_t comm);
typedef const char *(*sap_ncclGetErrorString_fn)(sap_ncclResult_t result);
typedef sap_ncclResult_t (*sap_ncclSend_fn)(const void *buf, size_t count, int datatype, int peer, sap_ncclComm_t comm,
                                            void *stream /* cudaStream_t */);
typedef sap_ncclResult_t (*sap_ncclRecv_fn)(void *buf, size_t count, int datatype, int peer, sap_ncclComm_t comm,
                                            void *stream /* cudaStream_t */);
typedef sap_ncclResult_t (*sap_ncclGroupStart_fn)(void);
typedef sap_ncclResult_t (*sap_ncclGroupEnd_fn)(void);

#endif /* SAP_NCCL_ABI_H */
