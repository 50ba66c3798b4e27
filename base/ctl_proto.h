/* proto: the messages between the helper thread (agent) and the controller, one request and one
 * answer per SOCK_SEQPACKET datagram. The agent asks, the controller answers; nothing else flows.
 */
#ifndef CN_PROTO_H
#define CN_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "cn_config.h"
#include "cn_gpumap.h"
#include "cn_outcome.h"
#include "cn_uuid.h"

enum cn_op {
	CN_OP_STATE = 1,
	CN_OP_LOCK,
	CN_OP_CHECKPOINT,
	CN_OP_RESTORE,
	CN_OP_UNLOCK,
	CN_OP_PREPARE, /* no driver call: the footprint, and the host check of CN_OP_LOCK */
	CN_OP_QUERY, /* no driver call but the state: the footprint, the host memory free, the model
		      */
	CN_OP_USERS, /* no driver call: what other processes hold on one GPU, and its free memory */
	CN_OP_GPU,   /* no driver call: every process on one GPU, and its memory (the node pager) */
};

/* CN_OP_USERS and CN_OP_RESTORE: the processes asked about at most. */
#define CN_USERS_MAX 64

struct cn_req {
	uint32_t op;
	uint32_t timeout_ms;  /* CN_OP_LOCK */
	struct cn_gpumap map; /* CN_OP_RESTORE: gpu_map (the INI's or a one-shot), unresolved */
	/* CN_OP_RESTORE: where the GPUs the process started on are now (those not at home). */
	uint32_t n_moves;
	struct cn_gpu_move moves[CN_MAX_GPUS];
	/* CN_OP_RESTORE: the footprint the checkpoint answer gave, echoed back by the agent (the
	 * controller keeps no state between requests), and what to demand beyond it. */
	uint32_t n_use;
	struct cn_gpu_use use[CN_MAX_GPUS];
	uint64_t margin_bytes;
	uint32_t reserve;
	/* CN_OP_LOCK and CN_OP_PREPARE: refuse, before locking, a process whose host copy would not
	 * fit beside this much free host memory. */
	uint32_t host_check;
	uint64_t host_margin_bytes;
	uint64_t
		prepared_bytes; /* CN_OP_LOCK: host memory the process holds for the copy already */
	/* CN_OP_LOCK of a light nap: its host copy's size (what cudanap owns), checked instead of
	 * the footprint (0), which counts the context that stays. */
	uint64_t copy_bytes;
	/* ... or, hibernating, beside this much free space in the hibernate dir (statvfs, taken by
	 * the agent, which opened the file there): then host memory is not checked. */
	uint32_t to_disk;
	uint64_t disk_free_bytes;
	/* CN_OP_USERS: the GPU (use[0].uuid) and the processes to look at. CN_OP_RESTORE and
	 * CN_OP_QUERY (preload/agent/beside.c): with pids_only, the only processes allowed on the
	 * target GPUs (a process with NCCL communicators: itself and its own job's other ranks);
	 * without, those whose GPUs it must not go onto (restored ranks of NCCL jobs). */
	uint32_t n_pids;
	int32_t pids[CN_USERS_MAX];
	uint32_t pids_only;
};

struct cn_resp {
	int32_t result; /* enum cn_result: a CUresult, or cudanap's own */
	int32_t state;	/* enum cn_state after the call, CN_STATE_UNKNOWN if unreadable */
	double elapsed_ms;
	uint64_t call_ns;  /* CLOCK_MONOTONIC at the start of the driver call */
	char name[48];	   /* the driver's name of a CUDA result ("CUDA_ERROR_NOT_READY") */
	char message[256]; /* human words for the result */
	char note[200];	   /* a warning beside a success: "" when none */
	/* CN_OP_CHECKPOINT and CN_OP_PREPARE: what the process holds per GPU; n_use 0 when
	 * unknown (note says why). */
	uint32_t n_use;
	struct cn_gpu_use use[CN_MAX_GPUS];
	/* CN_OP_RESTORE: of elapsed_ms, the time before the driver's call: the room check (NVML),
	 * and allocating then freeing the hold on each target GPU. */
	double check_ms, hold_ms;
	/* The machine's GPUs in nvidia-smi order (CN_OP_CHECKPOINT and CN_OP_PREPARE: as NVML lists
	 * them; CN_OP_RESTORE: as the driver does); n_gpus 0 when not known. */
	uint32_t n_gpus;
	struct cn_uuid gpus[CN_MAX_GPUS];
	/* CN_OP_RESTORE, done: where the GPUs the process started on are now. */
	uint32_t n_moves;
	struct cn_gpu_move moves[CN_MAX_GPUS];
	/* CN_OP_QUERY: the host memory a checkpoint's copy could take now (0 with host_which ""
	 * when not known) and what bounds it ("MemAvailable", "cgroup /job memory.max").
	 * CN_OP_QUERY and CN_OP_CHECKPOINT: the model of the first GPU the process holds memory
	 * on, "" when not known. */
	uint64_t host_available;
	char host_which[160];
	char model[96];
	/* CN_OP_QUERY: for each of gpus, whether it is of that model, and the bytes free on it
	 * (NVML's; 0 when not known), for a nap's wake_on = any. */
	uint8_t same_model[CN_MAX_GPUS];
	uint64_t gpu_free[CN_MAX_GPUS];
	/* CN_OP_QUERY: for each of gpus, the process a restore there would be refused beside (the
	 * request's pids, as for CN_OP_RESTORE; 0: none), for the same, and for a restored NCCL
	 * rank's warning that another job's process shares its GPUs (preload/agent/beside.c). */
	int32_t gpu_beside[CN_MAX_GPUS];
	/* CN_OP_USERS: what each of pids holds on the GPU (NVML's; 0 for none), the host memory
	 * a nap's copy of it could take now (as CN_OP_QUERY's host_available; 0 when not known),
	 * and the GPU's free memory (result not CUDA_SUCCESS when NVML could not say). */
	uint64_t pid_bytes[CN_USERS_MAX];
	uint64_t pid_host[CN_USERS_MAX];
	uint64_t free_bytes;
	/* CN_OP_GPU: the processes with memory on the GPU (use[0].uuid), NVML's compute processes,
	 * with pid_bytes and pid_host as for CN_OP_USERS (more_procs set when there were more than
	 * CN_USERS_MAX), and its memory in all. */
	uint32_t n_procs, more_procs;
	int32_t procs[CN_USERS_MAX];
	uint64_t total_bytes;
};

/* The GPUs travel as their 16 bytes each: the layout of the raw byte arrays they were. */
_Static_assert(sizeof(struct cn_gpu_use) == 24 && offsetof(struct cn_gpu_use, bytes) == 16,
	       "struct cn_gpu_use's layout");
_Static_assert(sizeof(struct cn_gpu_move) == 32 && sizeof(struct cn_gpu_pair) == 40,
	       "struct cn_gpu_move's and cn_gpu_pair's layout");
_Static_assert(sizeof(((struct cn_resp *)0)->gpus) == CN_MAX_GPUS * 16,
	       "struct cn_resp's gpus: 16 bytes each");

#endif
