/* wake: the agent's wake pipe, the one way from any thread into the agent thread; its writer's side
 * is async-signal-safe (docs/FILES.md). */
#define _GNU_SOURCE
#include "wake.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static pid_t owner = -1; /* the process whose agent reads the pipe */
static int rd = -1, wr = -1;

/* Keep our descriptors off 0-2 even when the app started with stdio closed. */
static int high_fd(int fd)
{
	int n;

	if (fd > 2)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return n;
}

int cn_wake_open(void)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	p[0] = high_fd(p[0]);
	p[1] = high_fd(p[1]);
	if (p[0] < 0 || p[1] < 0) {
		if (p[0] >= 0)
			close(p[0]);
		if (p[1] >= 0)
			close(p[1]);
		return -EMFILE;
	}
	rd = p[0];
	wr = p[1];
	owner = getpid();
	return 0;
}

void cn_wake_close(void)
{
	int r = rd, w = wr;

	wr = rd = -1;
	if (w >= 0)
		close(w);
	if (r >= 0)
		close(r);
}

void cn_wake_send(enum cn_wake wish)
{
	int saved = errno;
	char b = (char)wish;

	if (wr >= 0 && getpid() == owner && write(wr, &b, 1) < 0) {
		/* Pipe full: the agent has a backlog, and it folds bytes anyway. */
	}
	errno = saved;
}

int cn_wake_fd(void)
{
	return rd;
}

ssize_t cn_wake_read(char *buf, size_t len)
{
	return rd >= 0 ? read(rd, buf, len) : -1;
}
