/* outcome: the words of a state, an action, a result, a nap and an answer (see cn_outcome.h). */
#include "cn_outcome.h"

#include <stddef.h>
#include <string.h>

#include "cuda_abi.h"

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

CN_NAMES_DEFINE(cn_outcome_state, enum cn_state, CN_STATE_RUNNING, CN_STATE_UNKNOWN, "running",
		"locked", "checkpointed", "failed", "no-cuda", "napping")
CN_NAMES_DEFINE(cn_outcome_action, enum cn_action, CN_ACTION_START, CN_ACTION_UNKNOWN, "start",
		"prepare", "suspend", "resume", "nap", "wake")
CN_NAMES_DEFINE(cn_outcome_nap, enum cn_nap, CN_NAP_UNSAID, CN_NAP_UNSAID, "", "off", "awake",
		"napping", "waking", "waiting for room", "not napped",
		"waiting for an NCCL job to sleep")
CN_NAMES_DEFINE(cn_outcome_ask, enum cn_ask, CN_ASK_UNASKED, CN_ASK_UNASKED, "", "yes", "no",
		"no-cuda", "asleep")
CN_NAMES_DEFINE(cn_outcome_depth_why, enum cn_depth_why, CN_DEPTH_WHY_NONE, CN_DEPTH_WHY_NONE, "",
		"depth full", "to disk", "naps off", "owns nothing", "host cache", "exclusive",
		"deepened", "host full")
_Static_assert(N(cn_outcome_depth_why_words) == CN_DEPTH_WHY_HOST_FULL + 1,
	       "a word for each enum cn_depth_why");

bool cn_outcome_nap_asleep(int nap)
{
	return nap == CN_NAP_NAPPING || nap == CN_NAP_WAKING || nap == CN_NAP_WAITING ||
	       nap == CN_NAP_BESIDE;
}

const char *cn_outcome_result_name(int result)
{
	static const struct {
		int result;
		const char *name;
	} names[] = {
		{ CN_RES_NONE, "" },
		{ CN_RES_OK, "ok" },
		{ CN_RES_NO_DRIVER, "NO_DRIVER" },
		{ CN_RES_BAD_MAP, "BAD_GPU_MAP" },
		{ CN_RES_NO_CONTROLLER, "NO_CONTROLLER" },
		{ CN_RES_CONFIG, "CONFIG_ERROR" },
		{ CN_RES_REFUSED, "REFUSED" },
		{ CN_RES_NO_ROOM, "NO_GPU_MEMORY" },
		{ CN_RES_NO_HOST, "NO_HOST_MEMORY" },
		{ CN_RES_NO_DISK, "NO_DISK_SPACE" },
		{ CN_RES_CONTROLLER_GONE, "CONTROLLER_GONE" },
		{ CN_RES_BAD_REQUEST, "BAD_REQUEST" },
		{ CN_RES_READBACK, "HIBERNATE_READ_ERROR" },
		{ CN_RES_FOOTPRINT, "FOOTPRINT_UNKNOWN" },
		{ CN_RES_NCCL_CUT, "NCCL_NOT_AT_CUT" },
		{ CN_RES_NCCL_SUSPEND, "NCCL_SUSPEND_FAILED" },
		{ CN_RES_NCCL_WAITING, "NCCL_WAITING" },
		{ CN_RES_NCCL_RESUME, "NCCL_RESUME_FAILED" },
		{ CN_RES_BESIDE, "BESIDE_RESTORED" },
		{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY" },
	};

	for (int i = 0; i < N(names); i++)
		if (names[i].result == result)
			return names[i].name;
	return NULL;
}
