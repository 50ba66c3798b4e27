/* null: a libnccl.so.2 whose calls do nothing and return at once, so that bench-ncclcall measures a
 * call alone. It has no version and no suspend API: the preload sees an NCCL it would refuse to
 * suspend, which changes nothing on the paths measured. */
#include <stdlib.h>

#include "nccl_abi.h"

#define EXPORT __attribute__((visibility("default")))

struct ncclComm {
	int rank;
};

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	(void)nranks, (void)id;
	*comm = malloc(sizeof(**comm));
	if (!*comm)
		return NCCL_INTERNAL_ERROR;
	(*comm)->rank = rank;
	return NCCL_SUCCESS;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	free(comm);
	return NCCL_SUCCESS;
}

EXPORT ncclResult_t ncclGroupStart(void)
{
	return NCCL_SUCCESS;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	return NCCL_SUCCESS;
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *d, size_t n, ncclDataType_t t,
				  ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	(void)s, (void)d, (void)n, (void)t, (void)op, (void)comm, (void)st;
	return NCCL_SUCCESS;
}
