/* outcome: a process's state and an action's end as numbers, and their one table of words each
 * (docs/FILES.md). */
#ifndef CN_OUTCOME_H
#define CN_OUTCOME_H

#include <stdbool.h>

#include "cn_names.h"

/* A process's CUDA state: CUprocessState's numbers, and ours. */
enum cn_state {
	CN_STATE_UNKNOWN = -1, /* not said, or not readable */
	CN_STATE_RUNNING = 0,
	CN_STATE_LOCKED = 1,
	CN_STATE_CHECKPOINTED = 2,
	CN_STATE_FAILED = 3,
	CN_STATE_NO_CUDA = 4, /* no CUDA in the process, or no driver on the machine */
	/* Checkpointed by a nap: it wakes by itself at its next CUDA call that needs the GPU. A
	 * word of the status file and of what the command line prints (cn_status_state), never
	 * the driver's state: read back, it is CN_STATE_CHECKPOINTED. */
	CN_STATE_NAPPING = 5,
};

/* The action a status file tells of. */
enum cn_action {
	CN_ACTION_UNKNOWN = -1,
	CN_ACTION_START,
	CN_ACTION_PREPARE,
	CN_ACTION_SUSPEND,
	CN_ACTION_RESUME,
	CN_ACTION_NAP,	/* a suspend by [nap] or cudanap nap */
	CN_ACTION_WAKE, /* a resume by a call that needs the GPU */
};

/* How an action ended: CUDA's CUresult (>= 0; CUDA_SUCCESS is "ok"), or one of cudanap's own. */
enum cn_result {
	CN_RES_NONE = -100, /* none yet: the action runs */
	CN_RES_OK = 0,
	CN_RES_NO_DRIVER = -1,	     /* libcuda or its checkpoint API could not be loaded */
	CN_RES_BAD_MAP = -2,	     /* gpu_map does not fit the GPUs this machine has */
	CN_RES_NO_CONTROLLER = -3,   /* the controller could not be started */
	CN_RES_CONFIG = -4,	     /* the INI, read again at the action, is broken */
	CN_RES_REFUSED = -5,	     /* a check before the lock said no */
	CN_RES_NO_ROOM = -6,	     /* a target GPU lacks the free memory the restore needs */
	CN_RES_NO_HOST = -7,	     /* the host lacks the memory the checkpoint's copy needs */
	CN_RES_NO_DISK = -8,	     /* the hibernate dir lacks the space for the copy */
	CN_RES_CONTROLLER_GONE = -9, /* the controller died during the request */
	CN_RES_BAD_REQUEST = -10,    /* the controller could not read the request */
	CN_RES_READBACK = -11,	     /* the hibernated copy could not be read back */
	CN_RES_FOOTPRINT = -12,	     /* what the process holds on its GPUs is not known */
	CN_RES_NCCL_CUT = -13,	     /* the job's ranks did not reach the cut */
	CN_RES_NCCL_SUSPEND = -14,   /* ncclCommSuspend failed */
	CN_RES_NCCL_WAITING = -15,   /* resumed; its communicators wait for the other ranks */
	CN_RES_NCCL_RESUME = -16,    /* ncclCommResume failed */
	CN_RES_BESIDE = -17,	     /* a restored NCCL job would share its GPUs (beside.c) */
};

/* Where a process's naps stand ([nap] idle_s, cudanap nap). */
enum cn_nap {
	CN_NAP_UNSAID = 0, /* nothing said yet */
	CN_NAP_OFF,	   /* it does not nap by itself */
	CN_NAP_AWAKE,
	CN_NAP_NAPPING,
	CN_NAP_WAKING,
	CN_NAP_WAITING, /* its wake waits for room on a GPU */
	CN_NAP_REFUSED, /* it cannot nap: nap_why says why */
	CN_NAP_BESIDE,	/* its wake waits for a restored NCCL job to leave its GPU (beside.c) */
};

/* Why a process's nap is full rather than light: [nap] depth, and auto's choice. */
enum cn_depth_why {
	CN_DEPTH_WHY_NONE = 0,	 /* light, or no nap yet */
	CN_DEPTH_WHY_ASKED,	 /* [nap] depth = full */
	CN_DEPTH_WHY_DISK,	 /* [nap] to = disk */
	CN_DEPTH_WHY_NAPS_OFF,	 /* depth = auto, and naps are off ([nap] idle_s, make_room) */
	CN_DEPTH_WHY_NOT_OWNED,	 /* cudanap owns none of its memory */
	CN_DEPTH_WHY_HOST_CACHE, /* its light copy would be over [memory] host_cache */
	CN_DEPTH_WHY_EXCLUSIVE,	 /* a GPU of it is in exclusive-process compute mode */
	CN_DEPTH_WHY_DEEPENED,	 /* a light nap deepened ([nap] full_after_s, a suspend) */
	CN_DEPTH_WHY_HOST_FULL,	 /* [nap] to = auto: the host had no room for its copy: to disk */
};

/* What a suspend would do now, as the last query found it. */
enum cn_ask {
	CN_ASK_UNASKED = 0,
	CN_ASK_YES,
	CN_ASK_NO,
	CN_ASK_NO_CUDA,
	CN_ASK_ASLEEP,
};

/* What an action ended with: the process's state after it, and the result. */
struct cn_outcome {
	enum cn_state state;
	int result; /* enum cn_result */
};

/* The words of each, made here and in no other place: "checkpointed", "suspend", "napping", "yes"
 * ("" for the unknown, unsaid and unasked); and back, the unknown (or unsaid, unasked) value for a
 * word that is none of them. */
CN_NAMES_DECLARE(cn_outcome_state, enum cn_state);
CN_NAMES_DECLARE(cn_outcome_action, enum cn_action);
CN_NAMES_DECLARE(cn_outcome_nap, enum cn_nap);
CN_NAMES_DECLARE(cn_outcome_ask, enum cn_ask);
CN_NAMES_DECLARE(cn_outcome_depth_why, enum cn_depth_why);

/* The name of a result: "ok", cudanap's own ("NO_GPU_MEMORY"), or a CUDA error's that cudanap
 * itself gives (CUDA_ERROR_NOT_READY); NULL for another CUDA error, whose name the driver gives. */
const char *cn_outcome_result_name(int result);

/* Whether a nap state is one of a process asleep by a nap: napping, waking, or its wake waiting
 * (for room, or for a restored NCCL job to leave its GPU). */
bool cn_outcome_nap_asleep(int nap);

#endif
