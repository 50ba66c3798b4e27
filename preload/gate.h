/* gate: see gate.c. The agent enters it before a restore and leaves it when the restore returns;
 * the driver's copies (copy.c) report their progress, and it lets the next process in early. */
#ifndef CN_GATE_H
#define CN_GATE_H

#include <stddef.h>

#define CN_GATE_MAX 16 /* GPUs one process can restore onto (CN_MAX_GPUS) */

/* Wait, at most max_ms, for the restore gates of the n GPUs (UUIDs; n == 0: the directory's one
 * gate). expect: the bytes the restore will copy (0: not known). 0 once inside all of them; -1
 * when they could not be had, and the restore goes on without. *waited_ms: the time it took. */
int cn_gate_enter(const char *dir, const unsigned char (*uuids)[16], int n, unsigned max_ms,
		  size_t expect, double *waited_ms);
/* The restore has copied done bytes and starts on more (the driver's thread, each large copy). */
void cn_gate_progress(size_t done);
/* Let the next process in; nothing when not inside. Any thread. */
void cn_gate_leave(void);
/* In a forked child: the parent's place is not the child's (closed, never unlocked). */
void cn_gate_after_fork(void);

#endif
