/* hooks: see hooks.h. Runs in the agent thread of the target: posix_spawn, not fork, because the
 * target is multi-threaded and must not run its atfork handlers for us. */
#define _GNU_SOURCE
#include "hooks.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_ENV 4096

/* LD_PRELOAD without any libcudanap entry: a hook is not a job. */
static void strip_preload(const char *in, char *out, size_t len)
{
	char buf[4096], *save = NULL, *tok;
	size_t o = 0;

	snprintf(buf, sizeof(buf), "%s", in);
	out[0] = '\0';
	for (tok = strtok_r(buf, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
		const char *base = strrchr(tok, '/');

		base = base ? base + 1 : tok;
		if (strncmp(base, "libcudanap", 10) == 0)
			continue;
		o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ":" : "", tok);
		if (o >= len)
			break;
	}
}

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

int cn_hook_run(const struct cn_config *c, const char *cmd, const char *event, const char *state,
		const char *result)
{
	static char preload[4096], vars[4][512];
	static char *envp[MAX_ENV + 6];
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	size_t n = 0;
	pid_t pid;
	int r;

	for (char **e = environ; e && *e && n < MAX_ENV; e++) {
		if (strncmp(*e, "CUDANAP_PID=", 12) == 0 ||
		    strncmp(*e, "CUDANAP_EVENT=", 14) == 0 ||
		    strncmp(*e, "CUDANAP_STATE=", 14) == 0 ||
		    strncmp(*e, "CUDANAP_RESULT=", 15) == 0)
			continue;
		if (strncmp(*e, "LD_PRELOAD=", 11) == 0) {
			strcpy(preload, "LD_PRELOAD=");
			strip_preload(*e + 11, preload + 11, sizeof(preload) - 11);
			envp[n++] = preload;
			continue;
		}
		envp[n++] = *e;
	}
	snprintf(vars[0], sizeof(vars[0]), "CUDANAP_PID=%d", (int)getpid());
	snprintf(vars[1], sizeof(vars[1]), "CUDANAP_EVENT=%s", event);
	snprintf(vars[2], sizeof(vars[2]), "CUDANAP_STATE=%s", state);
	snprintf(vars[3], sizeof(vars[3]), "CUDANAP_RESULT=%s", result);
	for (int i = 0; i < 4; i++)
		envp[n++] = vars[i];
	envp[n] = NULL;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", 0, 0);
	r = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (r)
		return -r;
	return wait_with_timeout(pid, c->hook_timeout_ms);
}
