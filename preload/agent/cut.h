/* cut: the agent's side of the rendezvous with the command line. See cut.c. */
#ifndef CN_CUT_H
#define CN_CUT_H

#include <stddef.h>

/* Write <status dir>/<pid>.nccl-<what> (atomically: a reader sees all of it or nothing). */
int cn_cut_say(const char *what, const char *text);

/* Wait, at most timeout_ms, for <status dir>/<pid>.nccl-<what> from the command line and take
 * it (read, removed). 0 with its text in buf; -1 with why: the command line gave up (nccl-abort,
 * its reason), or never answered. */
int cn_cut_wait(const char *what, char *buf, size_t len, unsigned timeout_ms, char *why,
		size_t wlen);

/* Remove what this process said and what was said to it. */
void cn_cut_clear(void);

#endif
