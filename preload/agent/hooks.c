/* hooks: see hooks.h. Runs in the agent thread of the target; launch.c starts the command. */
#define _GNU_SOURCE
#include "agent/hooks.h"
#include "agent/launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int wait_with_timeout(pid_t pid, unsigned timeout_ms)
{
	struct timespec tick = { 0, 5 * 1000 * 1000 };
	unsigned waited = 0;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (r < 0 && errno != EINTR)
			return -errno; /* ECHILD: the app reaped it */
		if (waited >= timeout_ms) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		nanosleep(&tick, NULL);
		waited += 5;
	}
}

int cn_hooks_run(const struct cn_config *c, const char *cmd, const char *event, const char *state,
		 const char *result)
{
	static const char *const drop[] = { "CUDANAP_PID=", "CUDANAP_EVENT=", "CUDANAP_STATE=",
					    "CUDANAP_RESULT=", NULL };
	static char vars[4][512];
	const char *add[] = { vars[0], vars[1], vars[2], vars[3], NULL };
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	struct cn_launch_spawn s = {
		.path = "/bin/sh", .argv = argv, .drop = drop, .add = add, .fd3 = -1
	};
	pid_t pid;
	int r;

	snprintf(vars[0], sizeof(vars[0]), "CUDANAP_PID=%d", (int)getpid());
	snprintf(vars[1], sizeof(vars[1]), "CUDANAP_EVENT=%s", event);
	snprintf(vars[2], sizeof(vars[2]), "CUDANAP_STATE=%s", state);
	snprintf(vars[3], sizeof(vars[3]), "CUDANAP_RESULT=%s", result);
	r = cn_launch_spawn(&s, &pid);
	if (r < 0)
		return r;
	return wait_with_timeout(pid, c->hook_timeout_ms);
}
