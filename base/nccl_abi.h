/* nccl_abi: the few NCCL types and values cudanap uses, declared here so that building the preload
 * needs no NCCL headers. They mirror nccl.h (NCCL 2.28 to 2.30); the layouts are NCCL's ABI. */
#ifndef CN_NCCL_ABI_H
#define CN_NCCL_ABI_H

#include <stddef.h>

typedef struct ncclComm *ncclComm_t;
typedef struct {
	char internal[128];
} ncclUniqueId;
typedef int ncclResult_t; /* ncclSuccess 0, ..., ncclInProgress 7 */
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct ncclConfig ncclConfig_t; /* passed through, never read */
typedef struct CUstream_st *cudaStream_t;

#define NCCL_SUCCESS		  0
#define NCCL_INTERNAL_ERROR	  3
#define NCCL_INVALID_USAGE	  5
#define NCCL_SUSPEND_MEM	  0x01
#define NCCL_STAT_GPU_MEM_PERSIST 2

/* The entry points interpose.c defines, as nccl.h declares them. */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
				    ncclConfig_t *config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int n_ids,
				      ncclUniqueId *ids, ncclConfig_t *config);
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config);
ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int n_exclude, ncclComm_t *newcomm,
			    ncclConfig_t *config, int flags);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nranks, const ncclUniqueId *id, int rank,
			  ncclComm_t *newcomm, ncclConfig_t *config);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommRegister(ncclComm_t comm, void *buff, size_t size, void **handle);
ncclResult_t ncclCommDeregister(ncclComm_t comm, void *handle);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t st);
ncclResult_t ncclReduceScatter(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op,
			       ncclComm_t comm, cudaStream_t st);
ncclResult_t ncclReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op,
			int root, ncclComm_t comm, cudaStream_t st);
ncclResult_t ncclBcast(void *b, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
		       cudaStream_t st);
ncclResult_t ncclBroadcast(const void *s, void *d, size_t n, ncclDataType_t t, int root,
			   ncclComm_t comm, cudaStream_t st);
ncclResult_t ncclAllGather(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm,
			   cudaStream_t st);
ncclResult_t ncclAlltoAll(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm,
			  cudaStream_t st);
ncclResult_t ncclGather(const void *s, void *d, size_t n, ncclDataType_t t, int root,
			ncclComm_t comm, cudaStream_t st);
ncclResult_t ncclScatter(const void *s, void *d, size_t n, ncclDataType_t t, int root,
			 ncclComm_t comm, cudaStream_t st);
ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
		      cudaStream_t st);
ncclResult_t ncclRecv(void *d, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
		      cudaStream_t st);

#endif
