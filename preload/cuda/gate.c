/* gate: the app's driver calls, held while its process is suspended, and the threads inside one.
 *
 * Every driver call of the app's passes here on its way into libcuda (wrap.c). While the gate is
 * open, passing costs the thread a store to its own record, a compiler fence and one load of the
 * gate's word. A suspend closes the gate before it locks the process: from then on a thread
 * that calls the driver waits here, outside libcuda, until the process runs again; the calls of
 * XLA's poller that entered libcuda while it was checkpointed crashed JAX (DESIGN.md). Threads
 * already inside a call when the gate closes are seen in their records: the suspend waits for
 * them, or gives up and opens the gate again.
 *
 * The agent's side pays for the ordering instead of the app's: after it closes the gate it runs
 * membarrier(2), which puts a full barrier in every thread of the process, so that a thread either
 * saw the gate closed or had its record's store visible to the agent. Where membarrier cannot be
 * used, the app's threads fence at each call. Nested calls (an interposer calling the driver from
 * inside one of our calls, libcuda calling its own exported names) pass without a second look.
 *
 * Records live in a static array, one cache line each, taken at a thread's first call and given
 * back at its exit; a thread that finds none free is counted in one shared counter instead. */
#define _GNU_SOURCE
#include "gate.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fns.h"

#define MAX_THREADS 4096

__thread struct cn_tl cn_tl __attribute__((tls_model("initial-exec")));
atomic_int cn_gate_word;
bool cn_gate_fence;

static struct cn_thr thr[MAX_THREADS];
static atomic_uint n_thr;	  /* records ever taken: the agent looks at [0, n_thr) */
static atomic_uint unrecorded_in; /* threads without a record inside a call */
static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The gate's waiters: app threads wait on cv under mu while the word says closed. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long held;
static double longest_ms;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* A thread's exit gives its record back. */
static void thread_gone(void *p)
{
	struct cn_thr *r = p;

	pthread_mutex_lock(&registry);
	atomic_store(&r->in, 0);
	r->used = false;
	pthread_mutex_unlock(&registry);
	cn_tl.rec = NULL;
	cn_tl.checked_in = false;
}

static void init(void)
{
	/* Decided once, before any thread has a record: the fast path reads it unlocked. */
	cn_gate_fence = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) < 0;
#ifdef __SANITIZE_THREAD__
	cn_gate_fence = true;
#endif
	pthread_key_create(&exit_key, thread_gone);
}

static void check_in(void)
{
	struct cn_thr *r = NULL;
	unsigned n;

	pthread_once(&once, init);
	cn_tl.checked_in = true;
	pthread_mutex_lock(&registry);
	n = atomic_load(&n_thr);
	for (unsigned i = 0; i < n && !r; i++)
		if (!thr[i].used)
			r = &thr[i];
	if (!r && n < MAX_THREADS) {
		r = &thr[n];
		atomic_store(&n_thr, n + 1);
	}
	if (r) {
		r->used = true;
		r->tid = (pid_t)syscall(SYS_gettid);
		atomic_store(&r->in, 0);
	}
	pthread_mutex_unlock(&registry);
	if (r && pthread_setspecific(exit_key, r) == 0)
		cn_tl.rec = r;
	else if (r)
		thread_gone(r);
}

void cn_gate_self(void)
{
	cn_tl.ours = true;
}

/* Mark the thread inside idx; false when the gate turned out closed. */
static bool enter(unsigned idx)
{
	if (cn_tl.rec)
		return cn_gate_try(idx);
	atomic_fetch_add(&unrecorded_in, 1);
	cn_tl.counted = true;
	if (!atomic_load(&cn_gate_word))
		return true;
	atomic_fetch_sub(&unrecorded_in, 1);
	cn_tl.counted = false;
	return false;
}

static void outside(void)
{
	if (cn_tl.rec) {
		cn_gate_out();
	} else if (cn_tl.counted) {
		cn_tl.counted = false;
		atomic_fetch_sub(&unrecorded_in, 1);
	}
}

void cn_gate_pass(unsigned idx)
{
	double t0;

	if (!cn_tl.checked_in)
		check_in();
	if (enter(idx))
		return;
	t0 = cn_now_ms();
	for (;;) {
		outside();
		pthread_mutex_lock(&mu);
		held++;
		while (atomic_load(&cn_gate_word))
			pthread_cond_wait(&cv, &mu);
		if (cn_now_ms() - t0 > longest_ms)
			longest_ms = cn_now_ms() - t0;
		pthread_mutex_unlock(&mu);
		if (enter(idx))
			return;
		/* Closed again between the wake and the look: wait again, counted once. */
		pthread_mutex_lock(&mu);
		held--;
		pthread_mutex_unlock(&mu);
	}
}

void cn_gate_leave(void)
{
	outside();
}

/* The first app thread inside a call, or NULL; *others: whether a thread without a record is. */
static const struct cn_thr *inside(bool *others)
{
	unsigned n = atomic_load(&n_thr);

	*others = atomic_load(&unrecorded_in) > 0;
	for (unsigned i = 0; i < n; i++)
		if (atomic_load_explicit(&thr[i].in, memory_order_acquire))
			return &thr[i];
	return NULL;
}

void cn_gate_shut(void)
{
	pthread_once(&once, init);
	pthread_mutex_lock(&mu);
	if (!atomic_load(&cn_gate_word)) {
		held = 0;
		longest_ms = 0;
	}
	atomic_store(&cn_gate_word, 1);
	pthread_mutex_unlock(&mu);
	if (!cn_gate_fence)
		membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

int cn_gate_close(unsigned timeout_ms, double *waited_ms, char *why, size_t len)
{
	double t0 = cn_now_ms();
	long pause_ns = 50 * 1000;
	const struct cn_thr *r;
	bool others;

	cn_gate_shut();
	while ((r = inside(&others)) || others) {
		struct timespec ts = { 0, pause_ns };
		unsigned idx;

		*waited_ms = cn_now_ms() - t0;
		if (timeout_ms && *waited_ms >= timeout_ms) {
			idx = r ? atomic_load(&r->in) : 0;
			if (idx)
				snprintf(why, len, "thread %d stayed inside %s", (int)r->tid,
					 cn_fn_name(idx - 1));
			else
				snprintf(why, len, "a thread stayed inside a driver call");
			cn_gate_open();
			return -1;
		}
		nanosleep(&ts, NULL);
		if (pause_ns < 1000 * 1000)
			pause_ns *= 2;
	}
	*waited_ms = cn_now_ms() - t0;
	return 0;
}

void cn_gate_open(void)
{
	pthread_mutex_lock(&mu);
	atomic_store(&cn_gate_word, 0);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

bool cn_gate_is_closed(void)
{
	return atomic_load(&cn_gate_word) != 0;
}

void cn_gate_held(unsigned long *calls, double *longest)
{
	pthread_mutex_lock(&mu);
	*calls = held;
	*longest = longest_ms;
	pthread_mutex_unlock(&mu);
}

void cn_gate_after_fork(void)
{
	unsigned n = atomic_load(&n_thr);

	pthread_mutex_init(&registry, NULL);
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&cv, NULL);
	for (unsigned i = 0; i < n; i++)
		if (&thr[i] != cn_tl.rec) {
			thr[i].used = false;
			atomic_store(&thr[i].in, 0);
		}
	if (cn_tl.rec)
		cn_tl.rec->tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&unrecorded_in, 0);
	atomic_store(&cn_gate_word, 0);
	held = 0;
	longest_ms = 0;
}
