/* torch: a training loop shaped as PyTorch's process group runs its collectives (for target.c),
 * over the fake NCCL and the fake driver, to show whether a suspended job's collectives time out:
 *   torch start COMM_INDEX MS TIMEOUT_MS   the loop and its watchdog start: "torch ok"
 *   torch stat   "torch STEPS TIMEOUTS BEATS LISTED OLDEST_MS WAITING ISSUED" (WAITING: the
 *                operation its step waits for; ISSUED: how many it has issued)
 * Each step launches its "compute" (cuLaunchKernel), spends MS ms outside the driver, then makes a
 * collective as ProcessGroupNCCL::collective does: it asks whether the stream captures
 * (cuStreamIsCapturing), creates the work, whose clock starts now, issues the all-reduce, records
 * the work's end (cuEventRecord) and hands the work to the watchdog; then it waits, outside the
 * driver, for the all-reduce to be done on every rank (loss.item()). The watchdog thread, every
 * 100 ms: one heartbeat, then for each listed work first its clock against TIMEOUT_MS (a timeout:
 * counted, and the work dropped), then its end event queried (cuEventQuery) and the work dropped
 * if its all-reduce is done. So a work created before a suspend and listed, or waiting to be
 * issued, across a sleep longer than TIMEOUT_MS times out, as PyTorch's watchdog kills a job. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

void torch_command(const char *line, void *const *comms, int n);

struct work {
	double start;
	unsigned long seq;
	struct work *next;
};

static struct {
	void *comm;
	unsigned ms, timeout_ms;
	pthread_mutex_t mu;
	struct work *list;
	atomic_ulong steps, timeouts, beats, waiting; /* waiting: the seq its step waits for */
	int (*allreduce)(const void *, void *, size_t, int, int, void *, void *);
	int (*done)(void *, unsigned long);
	unsigned long (*issued)(void *);
	bool started;
} t = { .mu = PTHREAD_MUTEX_INITIALIZER };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *steps(void *arg)
{
	CUstream s = (CUstream)8;

	(void)arg;
	for (;;) {
		struct work *w;
		unsigned long seq;
		int capturing = 0;

		cuLaunchKernel(NULL, 1, 2, 3, 4, 5, 6, 7, s, (void **)9, (void **)10);
		usleep(t.ms * 1000);
		cuStreamIsCapturing(s, &capturing);
		if (!(w = calloc(1, sizeof(*w))))
			abort();
		w->start = now_ms();
		t.allreduce(NULL, NULL, 1, 0, 0, t.comm, NULL);
		w->seq = seq = t.issued(t.comm);
		cuEventRecord(w, s);
		pthread_mutex_lock(&t.mu);
		w->next = t.list;
		t.list = w;
		pthread_mutex_unlock(&t.mu);
		/* w is the watchdog's now: it frees it once done */
		atomic_store(&t.waiting, seq);
		while (!t.done(t.comm, seq))
			usleep(1000);
		atomic_fetch_add(&t.steps, 1);
	}
	return NULL;
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(100 * 1000);
		pthread_mutex_lock(&t.mu);
		atomic_fetch_add(&t.beats, 1);
		for (struct work **p = &t.list, *w; (w = *p);) {
			bool drop = false;

			if (now_ms() - w->start > t.timeout_ms) {
				atomic_fetch_add(&t.timeouts, 1);
				drop = true;
			} else {
				cuEventQuery(w);
				drop = t.done(t.comm, w->seq);
			}
			if (drop) {
				*p = w->next;
				free(w);
			} else {
				p = &w->next;
			}
		}
		pthread_mutex_unlock(&t.mu);
	}
	return NULL;
}

static const char *start(const char *args, void *const *comms, int n)
{
	pthread_t a, b;
	int i;

	if (t.started || sscanf(args, "%d %u %u", &i, &t.ms, &t.timeout_ms) != 3 || i < 0 || i >= n)
		return "bad";
	t.comm = comms[i];
	t.allreduce = (int (*)(const void *, void *, size_t, int, int, void *, void *))dlsym(
		RTLD_DEFAULT, "ncclAllReduce");
	t.done = (int (*)(void *, unsigned long))dlsym(RTLD_DEFAULT, "fakeNcclDone");
	t.issued = (unsigned long (*)(void *))dlsym(RTLD_DEFAULT, "fakeNcclIssued");
	if (!t.allreduce || !t.done || !t.issued)
		return "nosym";
	if (pthread_create(&a, NULL, steps, NULL) || pthread_create(&b, NULL, watchdog, NULL))
		return "failed";
	t.started = true;
	return "ok";
}

void torch_command(const char *line, void *const *comms, int n)
{
	double oldest = 0, now = now_ms();
	unsigned listed = 0;

	if (strncmp(line, "torch start ", 12) == 0) {
		printf("torch %s\n", start(line + 12, comms, n));
		return;
	}
	pthread_mutex_lock(&t.mu);
	for (struct work *w = t.list; w; w = w->next, listed++)
		if (now - w->start > oldest)
			oldest = now - w->start;
	pthread_mutex_unlock(&t.mu);
	printf("torch %lu %lu %lu %u %.0f %lu %lu\n", (unsigned long)atomic_load(&t.steps),
	       (unsigned long)atomic_load(&t.timeouts), (unsigned long)atomic_load(&t.beats),
	       listed, oldest, (unsigned long)atomic_load(&t.waiting),
	       t.issued ? t.issued(t.comm) : 0);
}
