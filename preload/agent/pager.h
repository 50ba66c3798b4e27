/* pager: [nap] make_room, idle processes of the user napped to make GPU memory for this one. See
 * pager.c. */
#ifndef CN_PAGER_H
#define CN_PAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_uuid.h"

/* What is needed on one GPU: bytes, for a new context (context), or the GPU to itself
 * (exclusive: a context the driver refused as unavailable, the GPU being in an exclusive compute
 * mode with another process's context there). */
struct cn_pager_need {
	struct cn_uuid uuid;
	uint64_t bytes;
	bool context, exclusive;
};

/* The agent read its INI: make_room on or off for the gate's side. */
void cn_pager_config(void);
/* At the agent's start, and in a forked child: no request, no turn (the parent's is its own). */
void cn_pager_reset(void);

/* Agent thread: make room for each need (what: for the log), napping idle processes. 0: room
 * there, and this process holds the turn until cn_pager_release; -EAGAIN: another process makes
 * room now (try again later); -1: none could be made (why says what is free and who was tried).
 * overlap (a light nap's wake, on one GPU): where every process needed naps lightly, they are asked
 * at once and not waited for: 0 says the room is coming, cn_pager_coming while it still may, and
 * the caller, once it is done, calls cn_pager_settle before cn_pager_release. */
int cn_pager_make(const struct cn_pager_need *need, int n, const char *what, bool overlap,
		  char *why, size_t len);
/* After cn_pager_make's -1: when (monotonic ms) the first process of the user that was idle less
 * than [nap] min_idle_s will have been idle that long, and which (pid); 0 when none. */
double cn_pager_idle_soon_ms(int *pid);
bool cn_pager_coming(void);
void cn_pager_settle(void);
void cn_pager_release(void);

/* Whether no other process of the directory holds the turn now (looked at, not kept). */
bool cn_pager_turn_free(void);

/* App thread, from the gate: the driver refused call idx (its argument registers gp) as out of
 * memory, or a context as unavailable (unavailable). True when room was made: the caller tries the
 * call once more, then cn_pager_done. */
bool cn_pager_oom(unsigned idx, const uint64_t *gp, bool unavailable);
void cn_pager_done(void);

/* Agent thread: an app thread asked (its byte on the pipe); and the ticks that try again while
 * another process holds the turn. */
void cn_pager_asked(void);
int cn_pager_timeout_ms(void);
void cn_pager_tick(void);

#endif
