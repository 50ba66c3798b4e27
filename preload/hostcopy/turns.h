/* turns: see turns.c. The agent takes its turn before a restore; at the driver's first large copy
 * (copy.c) the process moves on to a place to copy in, which it gives up when its copy is done;
 * the end of the restore leaves whatever is still held. */
#ifndef CN_TURNS_H
#define CN_TURNS_H

#include "cn_config.h" /* CN_MAX_GPUS: at most that many UUIDs */

/* Wait, at most max_ms, for the restore turns on the n GPUs (UUIDs; n == 0: the directory's one
 * turn). 0 once inside all of them; -1 when they could not be had, and the restore goes on
 * without. *waited_ms: the time it took. */
int cn_turns_enter(const char *dir, const struct cn_uuid *uuids, int n, unsigned max_ms,
		   double *waited_ms);
/* Out of the turn, into a place to copy in: wait at most max_ms for one on each GPU. 0 once had;
 * -1 when not inside, or none could be had (the copy goes on without). *waited_ms: the wait. */
int cn_turns_next(unsigned max_ms, double *waited_ms);
/* Give the place up: the copy is done. Nothing when none is held. */
void cn_turns_copied(void);
/* Let go of the turn and the place, whichever is held. Any thread. */
void cn_turns_leave(void);
/* In a forked child: the parent's place is not the child's (closed, never unlocked). */
void cn_turns_after_fork(void);

#endif
