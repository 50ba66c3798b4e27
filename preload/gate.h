/* gate: see gate.c. The agent enters it before a restore; the driver's first large copy (copy.c)
 * or the end of the restore leaves it. */
#ifndef CN_GATE_H
#define CN_GATE_H

#include "cn_config.h" /* CN_MAX_GPUS: at most that many UUIDs */

/* Wait, at most max_ms, for the restore gates of the n GPUs (UUIDs; n == 0: the directory's one
 * gate). 0 once inside all of them; -1 when they could not be had, and the restore goes on
 * without. *waited_ms: the time it took. */
int cn_gate_enter(const char *dir, const unsigned char (*uuids)[16], int n, unsigned max_ms,
		  double *waited_ms);
/* Let the next process in; nothing when not inside. Any thread. */
void cn_gate_leave(void);
/* In a forked child: the parent's place is not the child's (closed, never unlocked). */
void cn_gate_after_fork(void);

#endif
