/* outcome: the words of a state, an action, a result, a nap and an answer (see cn_outcome.h). */
#include "cn_outcome.h"

#include <stddef.h>
#include <string.h>

#include "cuda_abi.h"

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static const char *const states[] = { "running", "locked", "checkpointed", "failed", "no-cuda" };
static const char *const actions[] = { "start", "prepare", "suspend", "resume", "nap", "wake" };
static const char *const naps[] = { "",		 "off",	   "awake",
				    "napping",	 "waking", "waiting for room",
				    "not napped" };
static const char *const asks[] = { "", "yes", "no", "no-cuda", "asleep" };

/* The word of value v among words (numbered from first), "" when there is none. */
static const char *word(const char *const *words, int n, int first, int v)
{
	return v >= first && v - first < n ? words[v - first] : "";
}

/* The value of w among words, unknown when it is none of them. */
static int value(const char *const *words, int n, int first, int unknown, const char *w)
{
	for (int i = 0; i < n; i++)
		if (strcmp(words[i], w) == 0)
			return first + i;
	return unknown;
}

const char *cn_outcome_state_word(int state)
{
	return word(states, N(states), CN_STATE_RUNNING, state);
}

int cn_outcome_state_of(const char *w)
{
	return value(states, N(states), CN_STATE_RUNNING, CN_STATE_UNKNOWN, w);
}

const char *cn_outcome_action_word(int action)
{
	return word(actions, N(actions), CN_ACTION_START, action);
}

int cn_outcome_action_of(const char *w)
{
	return value(actions, N(actions), CN_ACTION_START, CN_ACTION_UNKNOWN, w);
}

const char *cn_outcome_nap_word(int nap)
{
	return word(naps, N(naps), CN_NAP_UNSAID, nap);
}

int cn_outcome_nap_of(const char *w)
{
	return value(naps, N(naps), CN_NAP_UNSAID, CN_NAP_UNSAID, w);
}

const char *cn_outcome_ask_word(int ask)
{
	return word(asks, N(asks), CN_ASK_UNASKED, ask);
}

int cn_outcome_ask_of(const char *w)
{
	return value(asks, N(asks), CN_ASK_UNASKED, CN_ASK_UNASKED, w);
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
		{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY" },
	};

	for (int i = 0; i < N(names); i++)
		if (names[i].result == result)
			return names[i].name;
	return NULL;
}
