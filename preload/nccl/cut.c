/* cut: how the ranks of a job agree, through the command line that suspends or resumes them all
 * (tools/ncclcut.c), on the point where their communicators are suspended or resumed. Files beside
 * the status file: the rank says (nccl-cut: its counts; nccl-ready: it is at the cut), the command
 * line answers (nccl-go: the counts to reach; nccl-commit: every rank is ready; nccl-abort: give
 * up). A rank waits with a bound: a plain signal, with no command line behind it, is refused. Runs
 * in the agent thread. */
#define _GNU_SOURCE
#include "cut.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_state.h"
#include "clock.h"
#include "steps.h"

static const char *const names[] = { "nccl-cut", "nccl-go", "nccl-ready", "nccl-commit",
				     "nccl-abort" };

static void path_of(const char *what, char *out, size_t len)
{
	snprintf(out, len, "%s/%d.%s", cn_ag.cfg.status_dir, (int)getpid(), what);
}

int cn_cut_say(const char *what, const char *text)
{
	char path[4300], tmp[4320];
	size_t n = strlen(text);
	int fd, ok;

	path_of(what, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ok = write(fd, text, n) == (ssize_t)n;
	if (close(fd) < 0 || !ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

/* The whole file, not only its first line. */
static int take(const char *what, char *buf, size_t len)
{
	char path[4300];
	ssize_t n;
	int fd;

	path_of(what, path, sizeof(path));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	unlink(path);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? (int)n : 0;
}

int cn_cut_wait(const char *what, char *buf, size_t len, unsigned timeout_ms, char *why,
		size_t wlen)
{
	double until = cn_now_ms() + timeout_ms;
	struct timespec tick = { 0, 2 * 1000 * 1000 };

	for (;;) {
		if (take("nccl-abort", why, wlen) >= 0) {
			why[strcspn(why, "\n")] = '\0';
			if (!why[0])
				snprintf(why, wlen, "the command line gave up");
			return -1;
		}
		if (take(what, buf, len) >= 0)
			return 0;
		if (cn_now_ms() >= until)
			break;
		nanosleep(&tick, NULL);
	}
	snprintf(why, wlen,
		 "no word from the command line within %u ms: the ranks of an NCCL job are "
		 "suspended and resumed together, by cudanap suspend|resume --tree, --slurm or "
		 "--all",
		 timeout_ms);
	return -1;
}

void cn_cut_clear(void)
{
	char path[4300];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path_of(names[i], path, sizeof(path));
		unlink(path);
	}
}
