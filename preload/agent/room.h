/* room: free GPU memory made on one GPU by napping the user's idle processes. See room.c. */
#ifndef CN_ROOM_H
#define CN_ROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_uuid.h"
#include "agent/state.h"

/* What is needed on one GPU: bytes, for a new context (context), or the GPU to itself
 * (exclusive: a context the driver refused as unavailable, the GPU being in an exclusive compute
 * mode with another process's context there). */
struct cn_room_need {
	struct cn_uuid uuid;
	uint64_t bytes;
	bool context, exclusive;
};

/* At the agent's start, and in a forked child: no turn (the parent's is its own). */
void cn_room_reset(void);

/* After cn_room_make's -1: the first process of the user that was idle less than [nap]
 * min_idle_s, which (pid) and when (monotonic ms) it will have been idle that long; at_ms 0 when
 * none. */
struct cn_room_soon {
	double at_ms;
	int pid;
};

/* Agent thread: make room for each need (what: for the log), napping idle processes. 0: room
 * there, and this process holds the turn until cn_room_release; -EAGAIN: another process makes
 * room now (try again later); -1: none could be made (why says what is free and who was tried).
 * overlap (a light nap's wake, on one GPU): where every process needed naps lightly, they are asked
 * at once and not waited for: 0 says the room is coming, cn_room_coming while it still may, and
 * the caller, once it is done, calls cn_room_settle before cn_room_release. */
int cn_room_make(struct cn_agent *ag, const struct cn_room_need *need, int n, const char *what,
		 bool overlap, struct cn_room_soon *soon, char *why, size_t len);
bool cn_room_coming(void);
void cn_room_settle(struct cn_agent *ag);
/* The turn given back: from the agent thread, or from the app's thread whose call the room was
 * made for, once it tried again (pager.c). */
void cn_room_release(void);

/* Whether no other process of the directory holds the turn now (looked at, not kept). */
bool cn_room_turn_free(struct cn_agent *ag);

#endif
