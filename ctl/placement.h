/* placement: where a restore goes, and whether there is room for it. See placement.c. */
#ifndef CN_PLACEMENT_H
#define CN_PLACEMENT_H

#include "ctl_proto.h"
#include "cuda_abi.h"

/* Before a restore: gpu_map resolved against this machine's GPUs into the complete list of UUID
 * pairs the driver wants (*n_list 0: no map, the GPUs stay), and room checked, then held if asked,
 * on every target GPU. 0, or -1 with resp filled (BAD_GPU_MAP, NO_GPU_MEMORY). The holds are the
 * caller's to let go (cn_placement_release) just before the driver's restore. */
int cn_placement_place(const struct cn_req *req, struct cn_resp *resp, CUcheckpointGpuPair *list,
		       int *n_list, CUmemGenericAllocationHandle *held, int *n_held);
void cn_placement_release(CUmemGenericAllocationHandle *held, int n);

/* Whether a restore onto the GPU with this UUID would put a restored NCCL rank beside another
 * job's process, as req->pids say (preload/agent/beside.c): the pid NVML shows there that
 * forbids it, or 0 (also when NVML cannot say who is there: the check is then not made). */
int32_t cn_placement_beside(const struct cn_req *req, const struct cn_uuid *uuid);

#endif
