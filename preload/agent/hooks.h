/* hooks: run the INI's on_suspended / on_resumed / on_failure command after an event. */
#ifndef CN_HOOKS_H
#define CN_HOOKS_H

#include "cn_config.h"

/* Runs `sh -c cmd` with CUDANAP_PID, _EVENT, _STATE and _RESULT set, cudanap stripped from
 * LD_PRELOAD, stdin on /dev/null, default signal dispositions and an empty mask, in its own
 * process group; waits at most c->hook_timeout_ms, then kills the group. Returns the exit status
 * (0-255), 128+signal, -ETIMEDOUT, or another -errno. */
int cn_hooks_run(const struct cn_config *c, const char *cmd, const char *event, const char *state,
		 const char *result);

#endif
