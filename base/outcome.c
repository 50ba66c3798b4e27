/* outcome: the words of a state, an action, a result, a nap and an answer (see cn_outcome.h). */
#include "cn_outcome.h"

#include <stddef.h>
#include <string.h>

#include "cuda_abi.h"

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static const char *const states[] = { "running", "locked",  "checkpointed",
				      "failed",	 "no-cuda", "napping" };
static const char *const actions[] = { "start", "prepare", "suspend", "resume", "nap", "wake" };
static const char *const naps[] = { "",		  "off",
				    "awake",	  "napping",
				    "waking",	  "waiting for room",
				    "not napped", "waiting for an NCCL job to sleep" };
static const char *const asks[] = { "", "yes", "no", "no-cuda", "asleep" };
static const char *const depth_whys[] = { "",	       "depth full",   "to disk",
					  "naps off",  "owns nothing", "host cache",
					  "exclusive", "deepened" };
_Static_assert(N(depth_whys) == CN_DEPTH_WHY_DEEPENED + 1, "a word for each enum cn_depth_why");

/* Each kind's words, the value of the first, and the value a word that is none of them reads as. */
static const struct {
	const char *const *words;
	int n, first, unknown;
} kinds[] = {
	[CN_OUTCOME_STATE] = { states, N(states), CN_STATE_RUNNING, CN_STATE_UNKNOWN },
	[CN_OUTCOME_ACTION] = { actions, N(actions), CN_ACTION_START, CN_ACTION_UNKNOWN },
	[CN_OUTCOME_NAP] = { naps, N(naps), CN_NAP_UNSAID, CN_NAP_UNSAID },
	[CN_OUTCOME_ASK] = { asks, N(asks), CN_ASK_UNASKED, CN_ASK_UNASKED },
	[CN_OUTCOME_DEPTH_WHY] = { depth_whys, N(depth_whys), CN_DEPTH_WHY_NONE,
				   CN_DEPTH_WHY_NONE },
};

const char *cn_outcome_word(enum cn_outcome_kind kind, int v)
{
	int i = v - kinds[kind].first;

	return i >= 0 && i < kinds[kind].n ? kinds[kind].words[i] : "";
}

int cn_outcome_of(enum cn_outcome_kind kind, const char *w)
{
	for (int i = 0; i < kinds[kind].n; i++)
		if (strcmp(kinds[kind].words[i], w) == 0)
			return kinds[kind].first + i;
	return kinds[kind].unknown;
}

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
