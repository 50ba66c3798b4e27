/* agent: the helper thread inside the target. See agent.c. */
#ifndef CN_AGENT_H
#define CN_AGENT_H

#include "cn_config.h"

/* Bytes the signal handler writes to the wake pipe. */
#define CN_WAKE_SUSPEND 'S'
#define CN_WAKE_RESUME	'R'
#define CN_WAKE_TOGGLE	'T'

/* Start the thread with every signal blocked in it; it owns wake_fd and sock from now on. */
int cn_agent_start(const struct cn_config *cfg, int wake_fd, int sock);

/* At process exit: remove the status file. */
void cn_agent_exit(void);

#endif
