/* agent: the helper thread inside the target. See agent.c. */
#ifndef CN_AGENT_H
#define CN_AGENT_H

#include "cn_config.h"

/* Bytes the signal handler writes to the wake pipe. */
#define CN_WAKE_SUSPEND 'S'
#define CN_WAKE_RESUME	'R'
#define CN_WAKE_TOGGLE	'T'
#define CN_WAKE_PREPARE 'P'
#define CN_WAKE_QUERY	'Q'
#define CN_WAKE_NAP	'N' /* cudanap nap */
#define CN_WAKE_CALL	'C' /* a driver call of a napping process needs the GPU (nap.c) */

/* Write b to the agent's wake pipe: async-signal-safe, from any thread (cudanap.c). */
void cn_wake_agent(char b);

/* Start the thread with every signal blocked in it; it owns wake_fd from now on, and starts the
 * controller at the first request. */
int cn_agent_start(const struct cn_config *cfg, int wake_fd);

/* In a child forked without exec, which has no agent thread: close the parent's descriptors and
 * start a thread of the child's own on wake_fd, with the same configuration (wake_fd -1: only
 * close them). 0, or -errno with wake_fd left to the caller. */
int cn_agent_fork_child(int wake_fd);

/* At process exit: remove the status file. */
void cn_agent_exit(void);

/* The same from _exit(), which may be called anywhere, a signal handler included: unlink only. */
void cn_agent_exit_now(void);

#endif
