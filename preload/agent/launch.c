/* launch: the programs the agent starts, the controller and the INI's hooks, by posix_spawn with
 * nothing of the app's (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/launch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_ENV 4096

/* LD_PRELOAD without any libcudanap entry. */
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

static bool dropped(const char *e, const char *const *drop)
{
	for (; drop && *drop; drop++)
		if (strncmp(e, *drop, strlen(*drop)) == 0)
			return true;
	return false;
}

int cn_launch_spawn(const struct cn_launch_spawn *s, pid_t *pid)
{
	static char preload[4096];
	static char *envp[MAX_ENV + 16];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	size_t n = 0;
	int r;

	for (char **e = environ; e && *e && n < MAX_ENV; e++) {
		if (dropped(*e, s->drop))
			continue;
		if (strncmp(*e, "LD_PRELOAD=", 11) == 0) {
			strcpy(preload, "LD_PRELOAD=");
			strip_preload(*e + 11, preload + 11, sizeof(preload) - 11);
			envp[n++] = preload;
			continue;
		}
		envp[n++] = *e;
	}
	for (const char *const *a = s->add; a && *a && n < MAX_ENV + 15; a++)
		envp[n++] = (char *)*a;
	envp[n] = NULL;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, (s->session ? POSIX_SPAWN_SETSID : POSIX_SPAWN_SETPGROUP) |
					      POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDWR, 0);
	if (s->quiet) {
		posix_spawn_file_actions_adddup2(&fa, STDIN_FILENO, STDOUT_FILENO);
		posix_spawn_file_actions_adddup2(&fa, STDIN_FILENO, STDERR_FILENO);
	}
	if (s->fd3 >= 0)
		posix_spawn_file_actions_adddup2(&fa, s->fd3, 3); /* dup2 clears close-on-exec */
	/* The app's descriptors without close-on-exec (a pipe its parent waits on for an end)
	 * stay the app's: a helper holding one would keep that end away. */
	posix_spawn_file_actions_addclosefrom_np(&fa, s->fd3 >= 0 ? 4 : 3);
	r = posix_spawn(pid, s->path, &fa, &at, s->argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return -r;
}

/* dir/rel into path if that is an executable file. */
static bool try_ctl(char *path, size_t len, const char *dir, size_t dir_len, const char *rel)
{
	if (!rel[0] || dir_len + 1 + strlen(rel) >= len)
		return false;
	snprintf(path, len, "%.*s/%s", (int)dir_len, dir, rel);
	return access(path, X_OK) == 0;
}

bool cn_launch_ctl_locate(char *path, size_t len)
{
	char lib[PATH_MAX];
	const char *slash;
	Dl_info info;

	if (dladdr((void *)cn_launch_ctl_locate, &info) && info.dli_fname &&
	    realpath(info.dli_fname, lib) && (slash = strrchr(lib, '/')) &&
	    (try_ctl(path, len, lib, (size_t)(slash - lib), "cudanap-ctl") ||
	     try_ctl(path, len, lib, (size_t)(slash - lib), "../ctl/cudanap-ctl") ||
	     try_ctl(path, len, lib, (size_t)(slash - lib), CN_CTL_REL)))
		return true;
	snprintf(path, len, "%s", CN_CTL_PATH);
	return access(path, X_OK) == 0;
}

int cn_launch_ctl_spawn(const char *ctl_path, int *sock_out)
{
	static const char *const drop[] = {
		/* nvidia-smi numbering is the PCI order over all GPUs,
		   whatever the app was told. */
		"CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=", "CUDANAP_CONFIG=", NULL
	};
	static const char *const add[] = { "CUDANAP_CONFIG=off", NULL };
	char arg[16];
	char *argv[] = { "cudanap-ctl", arg, NULL };
	struct cn_launch_spawn s = { .path = ctl_path,
				     .argv = argv,
				     .drop = drop,
				     .add = add,
				     .quiet = true,
				     .session = true };
	int sv[2], r, status;
	pid_t pid;

	if (!ctl_path[0])
		return -ENOENT;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* Off 0-2, where an app with stdio closed would have them, and off 3, the child's slot. */
	for (int i = 0; i < 2; i++)
		if (sv[i] <= 3) {
			int fd = fcntl(sv[i], F_DUPFD_CLOEXEC, 4);

			close(sv[i]);
			sv[i] = fd;
		}
	if (sv[0] < 0 || sv[1] < 0) {
		r = -errno;
		if (sv[0] >= 0)
			close(sv[0]);
		if (sv[1] >= 0)
			close(sv[1]);
		return r;
	}
	snprintf(arg, sizeof(arg), "%d", (int)getpid());
	s.fd3 = sv[1];
	r = cn_launch_spawn(&s, &pid);
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		return r;
	}
	/* It forks at once and this first process exits; ECHILD if the app reaped it first. */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*sock_out = sv[0];
	return 0;
}

/* ---- the INI's hooks ---- */

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

int cn_launch_hook(const struct cn_config *c, const char *cmd, const char *event, const char *state,
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
