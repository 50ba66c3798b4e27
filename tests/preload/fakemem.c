/* fakemem: the fake GPUs' memory, what each process holds on each GPU and what is left (part of
 * libfakecuda; the opening comment of fakecuda.c says what the tests set).
 *
 * A process holds its footprint ($CUDANAP_FAKE_FOOTPRINT_MIB, 1000) on each GPU it is on, and with
 * $CUDANAP_FAKE_GPU_MIB its allocations on the GPU each was made on: the GPUs it started on
 * ($CUDANAP_FAKE_START_GPU, "0,1,...": its slots, slot 0 first) keep their order through the
 * restores that move them (struct pstate's slot), and an allocation made through CUDA device d
 * (GPU N-1-d) is counted in the slot that GPU started as, or in slot 0 when the process was not
 * started on it. The MiB of each slot are in <pid>.allocs ("M0 M1 ..."), their sum in <pid>.alloc
 * (what the tests read). So a process over eight GPUs shows eight different sizes, each on the GPU
 * its slot is on now, as NVML shows a real one's. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakecuda.h"

static const char *fake_dir(void)
{
	const char *dir = getenv("CUDANAP_FAKE_DIR");

	return dir ? dir : "/tmp";
}

static void path_of(char *buf, size_t len, int pid, const char *ext)
{
	snprintf(buf, len, "%s/%d.%s", fake_dir(), pid, ext);
}

long long fake_footprint_mib(void)
{
	const char *s = getenv("CUDANAP_FAKE_FOOTPRINT_MIB");

	return s ? atoll(s) : 1000;
}

long long fake_sized_mib(void)
{
	const char *s = getenv("CUDANAP_FAKE_GPU_MIB");

	return s ? atoll(s) : 0;
}

/* The MiB of pid's allocations in each slot (none: 0). */
static void allocs_of(int pid, long long m[FAKE_SLOTS])
{
	char p[4200];
	FILE *f;

	memset(m, 0, FAKE_SLOTS * sizeof(m[0]));
	path_of(p, sizeof(p), pid, "allocs");
	f = fopen(p, "re");
	for (int i = 0; f && i < FAKE_SLOTS && fscanf(f, "%lld", &m[i]) == 1; i++)
		;
	if (f)
		fclose(f);
}

long long fake_slot_mib(int pid, int slot)
{
	long long m[FAKE_SLOTS];

	allocs_of(pid, m);
	return fake_footprint_mib() + (slot >= 0 && slot < FAKE_SLOTS ? m[slot] : 0);
}

long long fake_used_on(int pid, const struct pstate *st, int k)
{
	long long m[FAKE_SLOTS], v = 0;

	allocs_of(pid, m);
	for (int i = 0; i < st->n_slots; i++)
		if (st->slot[i] == k)
			v += fake_footprint_mib() + m[i];
	return v;
}

bool fake_peek(int pid, struct pstate *st)
{
	char p[4200], buf[FAKE_STATE_LEN];

	path_of(p, sizeof(p), pid, "state");
	for (int i = 0; i < 50; i++) {
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0)
			return false;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (fake_state_parse(buf, st) == 0)
			return true;
		usleep(1000);
	}
	return false;
}

long long fake_free_mib(int k)
{
	char p[4200];
	long long v = 80000;
	FILE *f;

	if (fake_sized_mib()) { /* what the processes whose memory is on it leave */
		DIR *d = opendir(fake_dir());
		struct dirent *e;

		v = fake_sized_mib();
		while (d && (e = readdir(d))) {
			char name[64];
			int pid = atoi(e->d_name);
			struct pstate st;

			snprintf(name, sizeof(name), "%d.gpu", pid);
			if (strcmp(name, e->d_name) == 0 && fake_peek(pid, &st))
				v -= fake_used_on(pid, &st, k);
		}
		if (d)
			closedir(d);
		return v;
	}
	snprintf(p, sizeof(p), "%s/free.%d", fake_dir(), k);
	f = fopen(p, "re");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* The slot of this process's that CUDA device dev (-1: the current context's) started as. */
static int slot_of(int dev)
{
	const char *g = getenv("CUDANAP_FAKE_START_GPU");
	int gpu, i = 0;

	if (dev < 0)
		dev = fake_ctx_device(fake_ctx_current());
	if (dev < 0 || !g)
		return 0;
	gpu = fake_gpus() - 1 - dev;
	for (const char *c = g; i < FAKE_SLOTS; i++) {
		if (atoi(c) == gpu)
			return i;
		c = strchr(c, ',');
		if (!c)
			break;
		c++;
	}
	return 0;
}

/* text put in pid's file ext, over what was there: truncated to its length after the write, never
 * to nothing first (ext4 writes back a file truncated to nothing at its close, which a process of
 * thousands of pieces, each counted here, waits for). */
static int put(int pid, const char *ext, const char *text)
{
	char p[4200];
	size_t n = strlen(text);
	int fd;
	bool done;

	path_of(p, sizeof(p), pid, ext);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	/* readable by every user's fake driver (fakecuda.c: one GPU across users), whatever the
	 * umask */
	done = fchmod(fd, 0644) == 0 && pwrite(fd, text, n, 0) == (ssize_t)n &&
	       ftruncate(fd, (off_t)n) == 0;
	close(fd);
	return done ? 0 : -1;
}

CUresult fake_account(int dev, long long mib)
{
	char text[FAKE_SLOTS * 24], sum[24];
	struct pstate st;
	long long m[FAKE_SLOTS], total = 0;
	size_t o = 0;
	int s;

	if (!fake_sized_mib() || !fake_peek(getpid(), &st))
		return CUDA_SUCCESS;
	s = slot_of(dev);
	if (s >= st.n_slots)
		s = 0;
	if (mib > 0 && fake_free_mib(st.slot[s]) < mib)
		return CUDA_ERROR_OUT_OF_MEMORY;
	allocs_of(getpid(), m);
	m[s] = m[s] + mib > 0 ? m[s] + mib : 0;
	for (int i = 0; i < FAKE_SLOTS; i++) {
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%lld%c", m[i],
				      i + 1 < FAKE_SLOTS ? ' ' : '\n');
		total += m[i];
	}
	snprintf(sum, sizeof(sum), "%lld\n", total);
	return put(getpid(), "allocs", text) == 0 && put(getpid(), "alloc", sum) == 0
		       ? CUDA_SUCCESS
		       : CUDA_ERROR_OPERATING_SYSTEM;
}
