/* launch: the programs the agent starts, the controller and the INI's hooks. See launch.c. */
#ifndef CN_LAUNCH_H
#define CN_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cn_config.h"

struct cn_launch_spawn {
	const char *path;
	char *const *argv;
	const char *const *drop; /* NULL-ended "NAME=" prefixes left out of the environment */
	const char *const *add;	 /* NULL-ended "NAME=value" entries added to it */
	int fd3;		 /* becomes the child's fd 3; -1 for none */
	bool quiet;		 /* stdout and stderr on /dev/null too, not only stdin */
	bool session;		 /* a session of its own; otherwise a process group of its own */
};

/* posix_spawn with default dispositions, an empty mask and cudanap gone from LD_PRELOAD.
 * Returns 0 or -errno. */
int cn_launch_spawn(const struct cn_launch_spawn *s, pid_t *pid);

/* Where cudanap-ctl is, into path: beside libcudanap.so, else in ctl/ beside it (the build tree),
 * else the installed libexec path (there when none was found). Called once from the constructor;
 * false if there is none. */
bool cn_launch_ctl_locate(char *path, size_t len);

/* Start the controller at ctl_path for this process; *sock gets the agent's end (close-on-exec).
 * 0 or -errno. */
int cn_launch_ctl_spawn(const char *ctl_path, int *sock);

/* The INI's on_suspended / on_resumed / on_failure command after an event: `sh -c cmd` with
 * CUDANAP_PID, _EVENT, _STATE and _RESULT set, cudanap stripped from LD_PRELOAD, stdin on
 * /dev/null, default signal dispositions and an empty mask, in its own process group; waited for
 * at most c->hook_timeout_ms, then its group killed. Returns the exit status (0-255),
 * 128+signal, -ETIMEDOUT, or another -errno. */
int cn_launch_hook(const struct cn_config *c, const char *cmd, const char *event, const char *state,
		   const char *result);

#endif
