/* cuda_abi: the few driver-API types and values cudanap uses, mirroring cuda.h so that the preload
 * builds without a CUDA Toolkit (docs/FILES.md). */
#ifndef CN_CUDA_ABI_H
#define CN_CUDA_ABI_H

#include <stdint.h>
#include <string.h>

#include "cn_uuid.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct {
	char bytes[16];
} CUuuid;

/* The driver's UUID of a GPU as cudanap's: the same 16 bytes, converted here alone. */
_Static_assert(sizeof(CUuuid) == sizeof(struct cn_uuid), "CUuuid and struct cn_uuid");
static inline struct cn_uuid cn_uuid_of_cu(const CUuuid *c)
{
	struct cn_uuid u;

	memcpy(u.b, c->bytes, sizeof(u.b));
	return u;
}

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_DEINITIALIZED = 4,
	CUDA_ERROR_DEVICE_UNAVAILABLE = 46, /* an exclusive compute mode, another context there */
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
	CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
	CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_ILLEGAL_STATE = 401,
	CUDA_ERROR_OPERATING_SYSTEM = 304,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_UNKNOWN = 999,
};

enum {
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
	CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
};

typedef struct {
	unsigned int timeoutMs;
	unsigned int reserved0;
	uint64_t reserved1[7];
} CUcheckpointLockArgs;

typedef struct {
	uint64_t reserved[8];
} CUcheckpointCheckpointArgs;

typedef struct {
	CUuuid oldUuid;
	CUuuid newUuid;
} CUcheckpointGpuPair;

typedef struct {
	CUcheckpointGpuPair *gpuPairs;
	unsigned int gpuPairsCount;
	char reserved[52 - sizeof(CUcheckpointGpuPair *)];
	uint64_t reserved1;
} CUcheckpointRestoreArgs;

typedef struct {
	uint64_t reserved[8];
} CUcheckpointUnlockArgs;

/* CUDA IPC: the handle one process exports and another opens. The runtime's cudaIpcMemHandle_t
 * is the same 64 bytes. */
typedef struct {
	char reserved[64];
} CUipcMemHandle;

/* Virtual memory management: the restore's hold is a physical allocation, with no context. */
typedef unsigned long long CUmemGenericAllocationHandle;

enum {
	CU_MEM_ALLOCATION_TYPE_PINNED = 1,
	CU_MEM_LOCATION_TYPE_DEVICE = 1,
	CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
};

/* Where memory lies or who reaches it: cuMemGetAccess asks by one. */
typedef struct {
	int type; /* CUmemLocationType */
	int id;	  /* a device ordinal for CU_MEM_LOCATION_TYPE_DEVICE */
} CUmemLocation;

typedef struct {
	int type;		  /* CUmemAllocationType */
	int requestedHandleTypes; /* CUmemAllocationHandleType */
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

/* Access to memory from a device: cuMemSetAccess and cuMemPoolSetAccess take a list of these. */
typedef struct {
	CUmemLocation location;
	int flags; /* CUmemAccess_flags: 0 none, 1 read, 3 read and write */
} CUmemAccessDesc;

/* NVML, the management library beside the driver (libnvidia-ml.so.1). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
};

#define NVML_VALUE_NOT_AVAILABLE     (~0ULL)
#define NVML_DEVICE_UUID_BUFFER_SIZE 96

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#endif
