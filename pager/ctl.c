/* ctl: the pager's own controller, cudanap-ctl started as root and asked only CN_OP_GPU: NVML is
 * loaded there, never here. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cn_safe.h"
#include "pager.h"

#define ANSWER_MS 10000 /* NVML that hangs longer: the controller is replaced */

extern char **environ;

static int sock = -1;

/* The controller's path, trusted: 0, or -1 with why. */
static int locate(char *path, size_t len, char *why, size_t wlen)
{
	static const char *const rel[] = { "cudanap-ctl", "../ctl/cudanap-ctl", CN_CTL_REL };
	char self[PATH_MAX], try[PATH_MAX * 2];
	char *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		*slash = '\0';
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(try, sizeof(try), "%s/%s", self, rel[i]);
			if (rel[i][0] && access(try, X_OK) == 0)
				return cn_safe_trusted(try, true, path, len, why, wlen);
		}
	}
	return cn_safe_trusted(CN_CTL_PATH, true, path, len, why, wlen);
}

static int start(char *why, size_t len)
{
	char path[PATH_MAX], arg[16];
	char *argv[] = { "cudanap-ctl", arg, NULL };
	posix_spawn_file_actions_t fa;
	int sv[2], r, status;
	pid_t pid;

	if (locate(path, sizeof(path), why, len) < 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, len, "socketpair: %s", strerror(errno));
		return -1;
	}
	snprintf(arg, sizeof(arg), "%d", (int)getpid());
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_adddup2(&fa, STDIN_FILENO, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, STDIN_FILENO, STDERR_FILENO);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	r = posix_spawn(&pid, path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (r != 0) {
		close(sv[0]);
		snprintf(why, len, "%s: cannot be started: %s", path, strerror(r));
		return -1;
	}
	/* it forks once, so that init adopts it: the first process is ours to reap */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sock = sv[0];
	return 0;
}

static void stop(void)
{
	if (sock >= 0)
		close(sock); /* it exits when its end closes */
	sock = -1;
}

int ctl_gpu(const struct cn_uuid *gpu, struct cn_resp *r, char *why, size_t len)
{
	static struct cn_req q;
	struct pollfd pf;
	ssize_t n;

	if (sock < 0 && start(why, len) < 0)
		return -1;
	memset(&q, 0, sizeof(q));
	q.op = CN_OP_GPU;
	q.use[0].uuid = *gpu;
	if (send(sock, &q, sizeof(q), MSG_NOSIGNAL) != (ssize_t)sizeof(q)) {
		stop();
		if (start(why, len) < 0 || send(sock, &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q)) {
			snprintf(why, len, "the pager's controller does not answer");
			stop();
			return -1;
		}
	}
	pf = (struct pollfd){ .fd = sock, .events = POLLIN };
	if (poll(&pf, 1, ANSWER_MS) != 1 || (n = recv(sock, r, sizeof(*r), 0)) != sizeof(*r)) {
		snprintf(why, len, "the pager's controller gave no answer in %d s",
			 ANSWER_MS / 1000);
		stop();
		return -1;
	}
	if (r->result != 0) {
		snprintf(why, len, "%s", r->message[0] ? r->message : "NVML cannot say");
		return -1;
	}
	return 0;
}
