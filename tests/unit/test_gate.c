/* Unit tests of the gate (preload/cuda/), compiled into this program with its trampoline, against
 * gatedrv.c: functions taken by dlsym come back as the gate's entry points and answer right; while
 * the gate is closed no call of eight busy threads enters the driver, and all go on once it opens;
 * a thread inside a call holds a close up for as long as it stays, or makes it fail at its timeout
 * naming the thread and the function; cudanap's own thread passes a closed gate; the calls that
 * work the GPU are counted and queries are not; while the process naps, four threads' queries are
 * answered at the gate and four threads' synchronizations ask for one wake between them, and run
 * once each after it; a forked child starts with the gate open. Also built under ThreadSanitizer
 * (the tsan suite), which cannot see into the trampoline's machine code: there every call takes the
 * slow path, the same steps in C. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cuda/fns.h"
#include "cuda/gate.h"
#include "tap.h"

#define THREADS 8

typedef int (*query_fn)(void *);
static query_fn query;
static int (*sync_fn)(void);
static atomic_int *inside, *violations, *closed_flag, *hold_ms;
static atomic_long *calls;
static atomic_bool stop;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		query(NULL);
	return NULL;
}

static void *sync_once(void *arg)
{
	(void)arg;
	sync_fn();
	return NULL;
}

static atomic_int wakes;
static atomic_long answered;

static void wake(void)
{
	atomic_fetch_add(&wakes, 1);
}

static void *asking(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		if (query(NULL) == 0)
			atomic_fetch_add(&answered, 1);
	return NULL;
}

static void *ours(void *arg)
{
	(void)arg;
	cn_gate_self();
	query(NULL);
	return NULL;
}

/* The driver's functions through dlsym on its handle: the gate's entry points, which answer. */
static void *load(const char *lib)
{
	void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
	int (*bias)(void *, float);

	ok(h != NULL, "the test driver loads (%s)", lib ? lib : "CUDANAP_LIBCUDA unset");
	if (!h)
		return NULL;
	query = (query_fn)dlsym(h, "cuStreamQuery");
	sync_fn = (int (*)(void))dlsym(h, "cuCtxSynchronize");
	bias = (int (*)(void *, float))dlsym(h, "cuTexRefSetMipmapLevelBias");
	inside = dlsym(h, "gatedrv_inside");
	violations = dlsym(h, "gatedrv_violations");
	closed_flag = dlsym(h, "gatedrv_closed");
	hold_ms = dlsym(h, "gatedrv_hold_ms");
	calls = dlsym(h, "gatedrv_calls");
	ok(cn_fns_index((void *)query) >= 0 && cn_fns_index((void *)sync_fn) >= 0,
	   "dlsym on the driver's handle hands out the gate's entry points");
	ok(cn_fns_index(inside) < 0 && inside,
	   "a name that is not a driver function comes back bare");
	ok(query(NULL) == 0 && bias(NULL, 0.75f) == 0, "calls through them answer right");
	return h;
}

/* Closes under busy threads: none inside, none entering, all going on once it is open. */
static void test_closes(void)
{
	pthread_t t[THREADS];
	unsigned long held;
	double waited, longest;
	char why[200];
	bool clean = true;
	long before;

	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, busy, NULL);
	sleep_ms(50);
	for (int round = 0; round < 20; round++) {
		if (cn_gate_close_drained(2000, &waited, why, sizeof(why)) < 0) {
			clean = false;
			break;
		}
		/* From here no call may be in the driver, nor enter it. */
		clean &= atomic_load(inside) == 0;
		atomic_store(closed_flag, 1);
		before = atomic_load(calls);
		sleep_ms(20);
		clean &= atomic_load(calls) == before;
		atomic_store(closed_flag, 0);
		cn_gate_open();
		sleep_ms(10);
	}
	ok(clean && atomic_load(violations) == 0,
	   "20 closes under 8 busy threads: none inside, none entered (%d violations)",
	   atomic_load(violations));
	before = atomic_load(calls);
	sleep_ms(50);
	ok(atomic_load(calls) > before, "the threads go on once it is open");
	cn_gate_held(&held, &longest);
	ok(held > 0, "the calls that waited are counted (%lu, the longest %.1f ms)", held, longest);
	atomic_store(&stop, true);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

/* A close waits for a thread inside a call, within its timeout, and names the one that stays. */
static void test_inside(void)
{
	double waited;
	char why[200];
	pthread_t s;

	atomic_store(hold_ms, 300);
	pthread_create(&s, NULL, sync_once, NULL);
	sleep_ms(50);
	ok(cn_gate_close_drained(5000, &waited, why, sizeof(why)) == 0 && waited >= 150,
	   "a close waits for a thread inside a call (%.0f ms)", waited);
	cn_gate_open();
	pthread_join(s, NULL);
	atomic_store(hold_ms, 500);
	pthread_create(&s, NULL, sync_once, NULL);
	sleep_ms(50);
	ok(cn_gate_close_drained(100, &waited, why, sizeof(why)) < 0 && !cn_gate_stops_calls(),
	   "one that stays past the timeout fails the close, which opens the gate again");
	ok(strstr(why, "stayed inside cuCtxSynchronize") != NULL, "naming the call: %s", why);
	pthread_join(s, NULL);
	cn_gate_close_now();
	pthread_create(&s, NULL, ours, NULL);
	pthread_join(s, NULL);
	ok(1, "cudanap's own thread passes a closed gate");
	cn_gate_open();
}

/* Napping: the queries answered at the gate, the synchronizations waiting for one wake. */
static void test_nap(void *h)
{
	atomic_long *syncs = dlsym(h, "gatedrv_syncs");
	unsigned long w0 = cn_gate_work();
	pthread_t t[THREADS];
	double waited;
	char why[200];
	long s0, a0;
	bool entered;

	query(NULL);
	ok(cn_gate_work() == w0, "a query is no work for the naps");
	sync_fn();
	ok(cn_gate_work() == w0 + 1, "a synchronization is");
	atomic_store(hold_ms, 0);
	atomic_store(&stop, false);
	cn_gate_nap(CN_GATE_NAP_CLOSING, wake);
	ok(cn_gate_close_drained(1000, &waited, why, sizeof(why)) == 0, "closed for a nap");
	cn_gate_nap(CN_GATE_NAP_ASLEEP, wake);
	atomic_store(closed_flag, 1);
	s0 = atomic_load(syncs);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, i % 2 ? asking : sync_once, NULL);
	sleep_ms(100);
	a0 = atomic_load(&answered);
	sleep_ms(50);
	ok(atomic_load(&answered) > a0 && a0 > 0,
	   "napping: four threads' queries are answered at the gate (%ld)", a0);
	ok(atomic_load(&wakes) == 1 && atomic_load(syncs) == s0,
	   "four threads' synchronizations wait, having asked for one wake (%d)",
	   atomic_load(&wakes));
	entered = atomic_load(violations) != 0;
	atomic_store(closed_flag, 0);
	cn_gate_nap(CN_GATE_NAP_NONE, NULL);
	cn_gate_open();
	atomic_store(&stop, true);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ok(!entered && atomic_load(syncs) == s0 + THREADS / 2,
	   "none entered the driver while it napped; after the wake each ran once");
}

/* A child forked while the gate is closed starts with it open. */
static void test_fork(void)
{
	pid_t c;
	int st = -1;

	cn_gate_close_now();
	fflush(stdout);
	c = fork();
	if (c == 0) {
		cn_gate_after_fork();
		_exit(query(NULL) == 0 && !cn_gate_stops_calls() ? 0 : 1);
	}
	waitpid(c, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "a child forked while the gate is closed starts with it open");
	cn_gate_open();
}

int main(void)
{
	void *h = load(getenv("CUDANAP_LIBCUDA"));

	if (!h)
		return tap_done();
	test_closes();
	test_inside();
	test_nap(h);
	test_fork();
	return tap_done();
}
