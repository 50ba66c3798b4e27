/* gate: the app's driver calls, held while its process is suspended, and the threads inside one.
 * In the app's threads at their calls; the agent closes, holds and opens it (docs/ARCHITECTURE.md,
 * The gate on the app's driver calls). */
#define _GNU_SOURCE
#include "cuda/gate.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuda/answers.h"
#include "clock.h"
#include "cuda/fns.h"

#define MAX_THREADS 4096

/* The gate's word. */
enum { OPEN, CLOSED, HOLDING };

__thread struct cn_gate_tl cn_gate_tl
	__attribute__((tls_model("initial-exec"))) = { .depth = CN_TL_FRESH };
atomic_int cn_gate_word;
bool cn_gate_fence;

/* A thread that has called the driver: where its mark and its counts are. */
static struct cn_thr {
	atomic_uint *in, *calls, *work;
	pid_t tid;
} thr[MAX_THREADS];
static unsigned n_thr;		     /* records ever taken: [0, n_thr), under registry */
static atomic_uint unrecorded_in;    /* threads without a record inside a call */
static atomic_ulong unrecorded_work; /* and their calls that worked the GPU */
static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The gate's waiters: app threads wait on cv under mu while the word says closed. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long held;
static double longest_ms;
/* A nap's phase (gate.h), and its wake: asked for once. */
static atomic_int nap_phase;
static void (*nap_wake)(void);
static atomic_bool wake_asked;
static atomic_bool leaving; /* exit() runs its handlers */
/* While it holds: which calls go on. */
static _Atomic(bool (*)(unsigned, const void *)) hold_lets;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* A thread's exit gives its record back. */
static void thread_gone(void *p)
{
	struct cn_thr *r = p;

	pthread_mutex_lock(&registry);
	r->in = NULL;
	pthread_mutex_unlock(&registry);
	atomic_store(&cn_gate_tl.in, 0);
	cn_gate_tl.depth = CN_TL_FRESH;
	cn_gate_tl.checked_in = false;
}

static void leave(void)
{
	atomic_store(&leaving, true);
}

static void init(void)
{
	/* Decided once, before any thread has a record: the fast path reads it unlocked. */
	cn_gate_fence = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) < 0;
#ifdef __SANITIZE_THREAD__
	cn_gate_fence = true;
#endif
	pthread_key_create(&exit_key, thread_gone);
	atexit(leave);
}

void cn_gate_check_in(void)
{
	struct cn_thr *r = NULL;

	if (cn_gate_tl.checked_in || cn_gate_tl.ours)
		return;
	pthread_once(&once, init);
	cn_gate_tl.checked_in = true;
	pthread_mutex_lock(&registry);
	for (unsigned i = 0; i < n_thr && !r; i++)
		if (!thr[i].in)
			r = &thr[i];
	if (!r && n_thr < MAX_THREADS)
		r = &thr[n_thr++];
	if (r) {
		r->in = &cn_gate_tl.in;
		r->calls = &cn_gate_tl.calls;
		r->work = &cn_gate_tl.work;
		r->tid = (pid_t)syscall(SYS_gettid);
	}
	pthread_mutex_unlock(&registry);
	if (r && pthread_setspecific(exit_key, r) == 0)
		cn_gate_tl.depth = 0;
	else if (r)
		thread_gone(r);
}

void cn_gate_self(void)
{
	cn_gate_tl.ours = true;
}

/* Whether a call of idx made from caller goes on now. */
static bool may_go(unsigned idx, const void *caller)
{
	int w = atomic_load(&cn_gate_word);
	bool (*lets)(unsigned, const void *);

	if (w == OPEN)
		return true;
	lets = atomic_load(&hold_lets);
	return w == HOLDING && lets && lets(idx, caller);
}

/* Mark the thread inside idx; false when the gate turned out closed, or holding the call. */
static bool enter(unsigned idx, const void *caller)
{
	atomic_fetch_add_explicit(&cn_gate_tl.calls, 1, memory_order_relaxed);
	if (cn_fns[idx].work) {
		if (cn_gate_tl.depth < CN_TL_FRESH)
			atomic_fetch_add_explicit(&cn_gate_tl.work, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&unrecorded_work, 1, memory_order_relaxed);
	}
	if (cn_gate_tl.depth < CN_TL_FRESH) {
		if (cn_gate_fence) {
			atomic_exchange(&cn_gate_tl.in, idx + 1);
		} else {
			atomic_store_explicit(&cn_gate_tl.in, idx + 1, memory_order_relaxed);
			atomic_signal_fence(memory_order_seq_cst);
		}
		return may_go(idx, caller);
	}
	atomic_fetch_add(&unrecorded_in, 1);
	cn_gate_tl.counted = true;
	if (may_go(idx, caller))
		return true;
	atomic_fetch_sub(&unrecorded_in, 1);
	cn_gate_tl.counted = false;
	return false;
}

static void outside(void)
{
	atomic_store_explicit(&cn_gate_tl.in, 0, memory_order_release);
	if (cn_gate_tl.counted) {
		cn_gate_tl.counted = false;
		atomic_fetch_sub(&unrecorded_in, 1);
	}
}

/* Under mu, the gate closed for a nap: the function that answers call idx without the GPU, or
 * NULL with the wake asked for when it needs the GPU. While the nap is under way a call that
 * needs no GPU waits for it to end, to be answered then. */
static void *napping(unsigned idx)
{
	int phase = atomic_load(&nap_phase);
	bool gone = atomic_load(&leaving);
	void *answer = phase != CN_GATE_NAP_ASLEEP ? NULL
		       : gone			   ? cn_answers_leaving_fn(idx)
						   : cn_answers_fn(idx);

	if (answer || phase == CN_GATE_NAP_NONE ||
	    (phase == CN_GATE_NAP_CLOSING && (gone || cn_answers_can(idx))))
		return answer; /* leaving, the nap under way: asked again once asleep */
	if (!atomic_exchange(&wake_asked, true) && nap_wake)
		nap_wake();
	return NULL;
}

void *cn_gate_pass(unsigned idx, const void *caller)
{
	double t0;
	void *answer = NULL;

	if (enter(idx, caller))
		return NULL;
	t0 = cn_clock_ms();
	for (;;) {
		outside();
		pthread_mutex_lock(&mu);
		held++;
		while (!may_go(idx, caller) && !(answer = napping(idx)))
			pthread_cond_wait(&cv, &mu);
		if (answer)
			held--;
		else if (cn_clock_ms() - t0 > longest_ms)
			longest_ms = cn_clock_ms() - t0;
		pthread_mutex_unlock(&mu);
		if (answer)
			return answer;
		if (enter(idx, caller))
			return NULL;
		/* Closed again between the wake and the look: wait again, counted once. */
		pthread_mutex_lock(&mu);
		held--;
		pthread_mutex_unlock(&mu);
	}
}

bool cn_gate_leaving(void)
{
	return atomic_load(&leaving);
}

void cn_gate_nap(enum cn_gate_nap phase, void (*wake)(void))
{
	pthread_mutex_lock(&mu);
	if (phase == CN_GATE_NAP_CLOSING)
		atomic_store(&wake_asked, false);
	nap_wake = wake;
	atomic_store(&nap_phase, phase);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

unsigned long cn_gate_work(void)
{
	unsigned long sum = atomic_load(&unrecorded_work);

	pthread_mutex_lock(&registry);
	for (unsigned i = 0; i < n_thr; i++)
		if (thr[i].in)
			sum += atomic_load(thr[i].work);
	pthread_mutex_unlock(&registry);
	return sum;
}

void cn_gate_leave(void)
{
	outside();
}

/* Under registry: a thread inside a call, or -1; *idx its call's. */
static pid_t inside(unsigned *idx)
{
	for (unsigned i = 0; i < n_thr; i++)
		if (thr[i].in && (*idx = atomic_load_explicit(thr[i].in, memory_order_acquire)))
			return thr[i].tid;
	*idx = 0;
	return atomic_load(&unrecorded_in) ? 0 : -1;
}

int cn_gate_inside(struct cn_inside *out, int max)
{
	int n = 0;

	pthread_mutex_lock(&registry);
	for (unsigned i = 0; i < n_thr && n < max; i++) {
		unsigned idx = thr[i].in ? atomic_load(thr[i].in) : 0;

		if (idx)
			out[n++] = (struct cn_inside){ thr[i].tid, idx - 1,
						       atomic_load(thr[i].calls) };
	}
	pthread_mutex_unlock(&registry);
	return n;
}

/* The word set to w; the counts of what it held start again when it was open. Every thread then
 * either saw the new word or has its mark visible to the agent. */
static void set_word(int w)
{
	pthread_once(&once, init);
	pthread_mutex_lock(&mu);
	if (atomic_load(&cn_gate_word) == OPEN) {
		held = 0;
		longest_ms = 0;
	}
	atomic_store(&cn_gate_word, w);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (!cn_gate_fence)
		membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

void cn_gate_close_now(void)
{
	set_word(CLOSED);
}

void cn_gate_hold(bool (*lets)(unsigned idx, const void *caller))
{
	atomic_store(&hold_lets, lets);
	set_word(HOLDING);
}

void cn_gate_recheck(void)
{
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

bool cn_gate_is_holding(void)
{
	return atomic_load(&cn_gate_word) == HOLDING;
}

int cn_gate_close_drained(unsigned timeout_ms, double *waited_ms, char *why, size_t len)
{
	double t0 = cn_clock_ms();
	long pause_ns = 50 * 1000;
	unsigned idx;
	pid_t tid;

	cn_gate_close_now();
	for (;;) {
		struct timespec ts = { 0, pause_ns };

		pthread_mutex_lock(&registry);
		tid = inside(&idx);
		pthread_mutex_unlock(&registry);
		*waited_ms = cn_clock_ms() - t0;
		if (tid < 0)
			return 0;
		if (timeout_ms && *waited_ms >= timeout_ms) {
			if (idx)
				snprintf(why, len, "thread %d stayed inside %s", (int)tid,
					 cn_lookup_name(idx - 1));
			else
				snprintf(why, len, "a thread stayed inside a driver call");
			cn_gate_open();
			return -1;
		}
		nanosleep(&ts, NULL);
		if (pause_ns < 1000 * 1000)
			pause_ns *= 2;
	}
}

void cn_gate_open(void)
{
	pthread_mutex_lock(&mu);
	atomic_store(&cn_gate_word, OPEN);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

bool cn_gate_stops_calls(void)
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
	pthread_mutex_init(&registry, NULL);
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&cv, NULL);
	for (unsigned i = 0; i < n_thr; i++)
		if (thr[i].in != &cn_gate_tl.in)
			thr[i].in = NULL;
		else
			thr[i].tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&unrecorded_in, 0);
	atomic_store(&cn_gate_word, 0);
	atomic_store(&nap_phase, CN_GATE_NAP_NONE);
	atomic_store(&wake_asked, false);
	atomic_store(&leaving, false); /* a child forked in an exit handler runs on */
	/* A context this thread kept during the parent's nap is the parent's. */
	cn_answers_forget();
	if (cn_gate_tl.lifted) {
		cn_gate_tl.lifted = false;
		cn_gate_tl.depth -= CN_TL_FRESH;
	}
	held = 0;
	longest_ms = 0;
}
