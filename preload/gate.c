/* gate: restores onto one GPU that start together take turns through the driver's setup.
 *
 * A restore is the driver's setup (ioctls before it copies a byte: about 50 ms for 4 GiB on an
 * H100), the copy, and its closing ioctls (60-80 ms). The ioctls of several processes go through
 * the kernel driver one at a time, interleaved: eight processes of 4 GiB resumed together all
 * began copying only after about 370 ms, once every one of them was through, then copied at once
 * and queued again at the end. Taking turns, each goes through its setup alone and lets the next
 * one in as soon as it starts copying: the first copies after 50 ms, the others join one by one.
 * On an H100, in the same run, the eight resumed in 1.41 s instead of 1.73 s (one process of
 * 32 GiB: 1.25 s). Letting the next one in later, once what is left of a copy would take as long
 * as a setup, so that the copies follow each other, was slower (1.82 s against 1.63 s in another
 * run): several processes copying at once move more than one alone.
 *
 * A turn is an flock on <status dir>/.restore-gate-<GPU UUID> (the processes of a job share the
 * directory; restores onto other GPUs do not wait); a process on several GPUs takes them in order;
 * one whose GPUs are not known takes <status dir>/.restore-gate. A process that dies lets go with
 * its descriptors, and one whose restore never gets to copy holds up the others no longer than the
 * wait's bound. */
#define _GNU_SOURCE
#include "gate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define POLL_NS 200000 /* between tries: well under one process's setup */

static struct {
	int fd[CN_MAX_GPUS];
	int n;
} g;
static atomic_bool inside;

static int by_uuid(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static void close_all(bool unlock)
{
	for (int i = 0; i < g.n; i++) {
		if (unlock)
			flock(g.fd[i], LOCK_UN);
		close(g.fd[i]);
	}
	g.n = 0;
}

/* Take one gate file, polling until the deadline; its descriptor or -1. */
static int take(const char *path, double deadline)
{
	const struct timespec pause = { 0, POLL_NS };
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if ((errno != EWOULDBLOCK && errno != EINTR) || cn_now_ms() >= deadline) {
			close(fd);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	return fd;
}

int cn_gate_enter(const char *dir, const unsigned char (*uuids)[16], int n, unsigned max_ms,
		  double *waited_ms)
{
	unsigned char sorted[CN_MAX_GPUS][16];
	double t0 = cn_now_ms();
	char path[4096], s[CN_UUID_STR_LEN];
	int fd;

	cn_gate_leave();
	n = n < 0 ? 0 : n > CN_MAX_GPUS ? CN_MAX_GPUS : n;
	if (n)
		memcpy(sorted, uuids, (size_t)n * 16);
	qsort(sorted, (size_t)n, 16, by_uuid);
	for (int i = 0; i < (n ? n : 1); i++) {
		if (n)
			cn_uuid_format(sorted[i], s);
		if (snprintf(path, sizeof(path), "%s/.restore-gate%s%s", dir, n ? "-" : "",
			     n ? s : "") >= (int)sizeof(path) ||
		    (fd = take(path, t0 + max_ms)) < 0) {
			close_all(true);
			*waited_ms = cn_now_ms() - t0;
			return -1;
		}
		g.fd[g.n++] = fd;
	}
	*waited_ms = cn_now_ms() - t0;
	atomic_store(&inside, true);
	return 0;
}

void cn_gate_leave(void)
{
	if (atomic_exchange(&inside, false))
		close_all(true);
}

void cn_gate_after_fork(void)
{
	/* The locks belong to the open files, which the parent shares: unlocking here would let the
	 * next process in while the parent is still in its turn. */
	atomic_store(&inside, false);
	close_all(false);
}
