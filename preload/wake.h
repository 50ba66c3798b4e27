/* wake: the agent's wake pipe, the one way into the agent thread. See wake.c. */
#ifndef CN_WAKE_H
#define CN_WAKE_H

#include <sys/types.h>

/* The wishes, one byte each. */
enum cn_wake {
	CN_WAKE_SUSPEND = 'S',
	CN_WAKE_RESUME = 'R',
	CN_WAKE_TOGGLE = 'T', /* the suspend and resume signals are one */
	CN_WAKE_PREPARE = 'P',
	CN_WAKE_QUERY = 'Q',
	CN_WAKE_NAP = 'N',  /* cudanap nap */
	CN_WAKE_CALL = 'C', /* a driver call of a napping process needs the GPU */
	CN_WAKE_ROOM = 'M', /* an allocation refused as out of memory: make room (agent/pager.c) */
	CN_WAKE_TRIM = 'G', /* give back the host copy kept ready (agent/cache.c) */
};

/* The pipe, close-on-exec, non-blocking, off fds 0-2, for this process. 0 or -errno. */
int cn_wake_open(void);
/* Close it: the agent could not start, or, in a forked child, it is the parent's. */
void cn_wake_close(void);

/* A wish, from any thread of this process, a signal handler included (async-signal-safe, errno
 * kept). Nothing when the pipe is not open, or is another process's. */
void cn_wake_send(enum cn_wake w);

/* The agent's end: the descriptor to poll, and the bytes waiting (the count, 0 or -1 when none:
 * the pipe is non-blocking). */
int cn_wake_fd(void);
ssize_t cn_wake_read(char *buf, size_t len);

#endif
