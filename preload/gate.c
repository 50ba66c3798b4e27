/* gate: restores onto one GPU that start together take turns, a pipeline of one process at a time.
 *
 * A restore is the driver's setup (tens of milliseconds of ioctls before it copies a byte: 4 GiB
 * on an H100, about 50 ms), the copy, and the driver's closing ioctls (60-80 ms). The ioctls of
 * several processes go through the kernel driver one at a time, interleaved. Eight processes of
 * 4 GiB resumed together therefore all began copying only after about 370 ms, copied at once, all
 * finished at about the same moment, and then queued again for their closing ioctls: 1.73 s
 * against 1.25 s for one process of 32 GiB.
 *
 * Taking turns: a process goes through its setup alone and starts copying; when what it has left
 * to copy, at the rate it is copying, takes about as long as its own setup took, it lets the next
 * one in, whose setup then runs beside the end of this copy. Copies follow each other at the full
 * rate, and each process's closing ioctls run beside the next one's copy.
 *
 * A turn is an flock on <status dir>/.restore-gate-<GPU UUID> (the processes of a job share the
 * directory; restores onto other GPUs do not wait); a process on several GPUs takes them in order;
 * one whose GPUs are not known takes <status dir>/.restore-gate. A process that dies lets go with
 * its descriptors, and one whose restore never returns holds up the others no longer than the
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

#include "cn_config.h"

#define POLL_NS 200000 /* between tries: well under one process's setup */

static struct {
	int fd[CN_GATE_MAX];
	int n;
	double entered_ms, copying_ms, setup_ms;
	size_t expect;
} g;
static atomic_bool inside, copying;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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
		if ((errno != EWOULDBLOCK && errno != EINTR) || now_ms() >= deadline) {
			close(fd);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	return fd;
}

int cn_gate_enter(const char *dir, const unsigned char (*uuids)[16], int n, unsigned max_ms,
		  size_t expect, double *waited_ms)
{
	unsigned char sorted[CN_GATE_MAX][16];
	double t0 = now_ms();
	char path[4096], s[CN_UUID_STR_LEN];
	int fd;

	cn_gate_leave();
	n = n < 0 ? 0 : n > CN_GATE_MAX ? CN_GATE_MAX : n;
	memcpy(sorted, uuids, (size_t)n * 16);
	qsort(sorted, (size_t)n, 16, by_uuid);
	for (int i = 0; i < (n ? n : 1); i++) {
		if (n)
			cn_uuid_format(sorted[i], s);
		if (snprintf(path, sizeof(path), "%s/.restore-gate%s%s", dir, n ? "-" : "",
			     n ? s : "") >= (int)sizeof(path) ||
		    (fd = take(path, t0 + max_ms)) < 0) {
			close_all(true);
			*waited_ms = now_ms() - t0;
			return -1;
		}
		g.fd[g.n++] = fd;
	}
	g.entered_ms = now_ms();
	*waited_ms = g.entered_ms - t0;
	g.expect = expect;
	atomic_store(&copying, false);
	atomic_store(&inside, true);
	return 0;
}

void cn_gate_progress(size_t done)
{
	double now, left_ms;

	if (!atomic_load_explicit(&inside, memory_order_relaxed))
		return;
	now = now_ms();
	if (!atomic_exchange(&copying, true)) {
		g.copying_ms = now;
		g.setup_ms = now - g.entered_ms;
		if (!g.expect)
			cn_gate_leave(); /* nothing to measure what is left by: the next goes in now */
		return;
	}
	if (done == 0 || now <= g.copying_ms)
		return;
	left_ms = (double)(g.expect > done ? g.expect - done : 0) * (now - g.copying_ms) /
		  (double)done;
	if (left_ms <= g.setup_ms)
		cn_gate_leave();
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
