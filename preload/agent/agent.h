/* agent: the helper thread inside the target. See agent.c. */
#ifndef CN_AGENT_H
#define CN_AGENT_H

#include <stdbool.h>

#include "cn_config.h"

/* Start the thread with every signal blocked in it, reading the wake pipe (wake.c, open); it starts
 * the controller at ctl_path (cn_launch_ctl_locate) at the first request. 0 or -errno. */
int cn_agent_start(const struct cn_config *cfg, const char *ctl_path);

/* In a child forked without exec, which has no agent thread: close the parent's line to its
 * controller and, with start (the child's own wake pipe is open), start a thread of the child's
 * own with the same configuration. 0, or -errno. */
int cn_agent_fork_child(bool start);

/* At process exit: remove the status file. */
void cn_agent_exit(void);

/* The same from _exit(), which may be called anywhere, a signal handler included: unlink only. */
void cn_agent_exit_now(void);

#endif
