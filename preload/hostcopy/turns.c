/* turns: restores onto one GPU that start together take turns through the driver's setup, and copy
 * at most two at a time (flock files in the status dir). The turn is the agent's, around the
 * restore; the place the driver's thread's, inside it (docs/PERFORMANCE.md, Whole jobs). */
#define _GNU_SOURCE
#include "hostcopy/turns.h"

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
#include "cn_gpumap.h"
#include "cn_safe.h"

#define POLL_NS	   200000 /* between tries: well under one process's setup */
#define COPY_SLOTS 2

/* The turns held (fd) and the places (slot); the GPUs and directory they are for. */
static struct {
	int fd[CN_MAX_GPUS], slot[CN_MAX_GPUS];
	int n, n_slots;
	struct cn_uuid uuid[CN_MAX_GPUS];
	int n_gpus;
	char dir[4096];
} g;
static atomic_bool inside, copying;

static int by_uuid(const void *a, const void *b)
{
	const struct cn_uuid *x = a, *y = b;

	return memcmp(x->b, y->b, sizeof(x->b));
}

static void close_fds(int *fd, int *n, bool unlock)
{
	for (int i = 0; i < *n; i++) {
		if (unlock)
			flock(fd[i], LOCK_UN);
		close(fd[i]);
	}
	*n = 0;
}

/* Take one of count turn files (path%d when count > 1) in the directory dir, polling until the
 * deadline; its descriptor or -1 (none could be opened, or the deadline passed). *polled: it was
 * not free. */
static int take(int dir, const char *path, int count, double deadline, bool *polled)
{
	const struct timespec pause = { 0, POLL_NS };
	int fd[COPY_SLOTS], got = -1, open_fds = 0;
	char name[4200];

	for (int i = 0; i < count; i++) {
		if (count > 1)
			snprintf(name, sizeof(name), "%s%d", path, i);
		/* the directory was checked just before, but a file in it could be anything */
		fd[i] = cn_safe_lock_file(dir, count > 1 ? name : path);
		open_fds += fd[i] >= 0;
	}
	while (open_fds && got < 0) {
		for (int i = 0; i < count && got < 0; i++) {
			if (fd[i] < 0)
				continue;
			if (flock(fd[i], LOCK_EX | LOCK_NB) == 0) {
				got = i;
			} else if (errno != EWOULDBLOCK && errno != EINTR) {
				close(fd[i]);
				fd[i] = -1;
				open_fds--;
			}
		}
		if (got < 0 && cn_clock_ms() >= deadline)
			break;
		if (got < 0) {
			*polled = true;
			nanosleep(&pause, NULL);
		}
	}
	for (int i = 0; i < count; i++)
		if (i != got && fd[i] >= 0)
			close(fd[i]);
	return got < 0 ? -1 : fd[got];
}

/* Take kind's file for each GPU in order (count places each), at most max_ms in all. *waited_ms:
 * how long, 0 when each was free at once. */
static int take_all(const char *kind, int count, int *fds, int *n, unsigned max_ms,
		    double *waited_ms)
{
	double t0 = cn_clock_ms();
	bool polled = false;
	char path[4200], s[CN_UUID_STR_LEN], why[300];
	struct cn_owner o;
	/* The status dir checked again, now, and used by its fd: one a tmp cleaner removed and
	 * another user made again is not ours (cn_safe.h). */
	int fd, dir = cn_safe_dir_of(g.dir, (int)getpid(), &o, why, sizeof(why));

	*waited_ms = 0;
	if (dir < 0)
		return -1;
	for (int i = 0; i < (g.n_gpus ? g.n_gpus : 1); i++) {
		if (g.n_gpus)
			cn_uuid_fmt(&g.uuid[i], s);
		if (snprintf(path, sizeof(path), ".restore-%s%s%s%s", kind, g.n_gpus ? "-" : "",
			     g.n_gpus ? s : "", count > 1 ? "-" : "") >= (int)sizeof(path) ||
		    (fd = take(dir, path, count, t0 + max_ms, &polled)) < 0) {
			close_fds(fds, n, true);
			*waited_ms = cn_clock_ms() - t0;
			close(dir);
			return -1;
		}
		fds[(*n)++] = fd;
	}
	close(dir);
	*waited_ms = polled ? cn_clock_ms() - t0 : 0;
	return 0;
}

int cn_turns_enter(const char *dir, const struct cn_uuid *uuids, int n, unsigned max_ms,
		   double *waited_ms)
{
	cn_turns_leave();
	n = n < 0 ? 0 : n > CN_MAX_GPUS ? CN_MAX_GPUS : n;
	if (n)
		memcpy(g.uuid, uuids, (size_t)n * sizeof(g.uuid[0]));
	qsort(g.uuid, (size_t)n, sizeof(g.uuid[0]), by_uuid);
	g.n_gpus = n;
	snprintf(g.dir, sizeof(g.dir), "%s", dir);
	if (take_all("turn", 1, g.fd, &g.n, max_ms, waited_ms) < 0)
		return -1;
	atomic_store(&inside, true);
	return 0;
}

int cn_turns_next(unsigned max_ms, double *waited_ms)
{
	*waited_ms = 0;
	if (!atomic_exchange(&inside, false))
		return -1;
	close_fds(g.fd, &g.n, true);
	if (take_all("copy", COPY_SLOTS, g.slot, &g.n_slots, max_ms, waited_ms) < 0)
		return -1;
	atomic_store(&copying, true);
	return 0;
}

void cn_turns_copied(void)
{
	if (atomic_exchange(&copying, false))
		close_fds(g.slot, &g.n_slots, true);
}

void cn_turns_leave(void)
{
	if (atomic_exchange(&inside, false))
		close_fds(g.fd, &g.n, true);
	cn_turns_copied();
}

void cn_turns_after_fork(void)
{
	/* The locks belong to the open files, which the parent shares: unlocking here would let the
	 * next process in while the parent is still in its turn. */
	atomic_store(&inside, false);
	atomic_store(&copying, false);
	close_fds(g.fd, &g.n, false);
	close_fds(g.slot, &g.n_slots, false);
}
