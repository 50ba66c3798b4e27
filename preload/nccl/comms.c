/* comms: the process's NCCL communicators, their suspend and resume, and the gate that holds the
 * app's NCCL calls back meanwhile (docs/FILES.md). */
#define _GNU_SOURCE
#include "nccl/comms.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cn_sha256.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/gate.h"

#define MAX_COMMS 64

struct comm {
	_Atomic(ncclComm_t) comm; /* NULL: a free slot */
	uint64_t key;
	/* What only its ranks know (its unique id's hash, or its parent's and how it was made),
	 * for the proofs of the cut across nodes (base/cn_spanwire.h); none for one made of a
	 * process's own devices. */
	uint8_t secret[CN_SHA256_LEN];
	bool has_secret;
	int rank, nranks; /* nranks 0: not known yet (a split): asked at the suspend */
	atomic_ulong issued;
	atomic_int waiting;   /* app threads waiting at the gate to issue one more */
	unsigned long target; /* drain: issue up to this many */
	bool suspended;
};

static struct comm comms[MAX_COMMS];
/* The agent's own calls into NCCL (the suspend and resume, and whatever NCCL calls of its public
 * functions inside them) pass the gate it holds closed. */
static __thread bool agent_call __attribute__((tls_model("initial-exec")));
/* An app thread's place: inside an NCCL call or group (entered, not yet left); whether it left one
 * and has not been held since (hold.c holds a thread that tries to start GPU work); whether it went
 * on from there into a new collective while the driver gate held the app (hold.c says; that
 * collective's clock runs). */
static __thread struct {
	int inside;
	bool left, began;
} tl __attribute__((tls_model("initial-exec")));
static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;

enum { OPEN, CLOSED, DRAIN };
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* app threads wait for the gate, the agent for them */
	atomic_int phase;
	atomic_int inflight;
	atomic_int began_waiting; /* app threads waiting with a collective begun under the hold */
	bool suspended;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, OPEN, 0, 0, false };

void *cn_comms_sym(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name), *h;

	/* NCCL loaded late, as the dependency of a library opened RTLD_LOCAL (a framework's), is
	 * not in the global scope that RTLD_NEXT searches. */
	if (!f && (h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD)))
		f = dlsym(h, name);
	return f;
}

static struct comm *find(ncclComm_t c)
{
	for (int i = 0; c && i < MAX_COMMS; i++)
		if (atomic_load_explicit(&comms[i].comm, memory_order_acquire) == c)
			return &comms[i];
	return NULL;
}

void cn_comms_add(ncclComm_t c, uint64_t key, const uint8_t *secret, int rank, int nranks)
{
	pthread_mutex_lock(&registry);
	for (int i = 0; c && !find(c) && i < MAX_COMMS; i++) {
		if (atomic_load(&comms[i].comm))
			continue;
		comms[i].key = key;
		comms[i].has_secret = secret != NULL;
		if (secret)
			memcpy(comms[i].secret, secret, CN_SHA256_LEN);
		comms[i].rank = rank;
		comms[i].nranks = nranks;
		atomic_store(&comms[i].issued, 0);
		atomic_store(&comms[i].waiting, 0);
		comms[i].target = 0;
		comms[i].suspended = false;
		atomic_store_explicit(&comms[i].comm, c, memory_order_release);
		break;
	}
	pthread_mutex_unlock(&registry);
}

void cn_comms_remove(ncclComm_t c)
{
	struct comm *e;

	pthread_mutex_lock(&registry);
	if ((e = find(c)))
		atomic_store(&e->comm, NULL);
	pthread_mutex_unlock(&registry);
}

uint64_t cn_comms_key(ncclComm_t c)
{
	struct comm *e = find(c);

	return e ? e->key : 0;
}

const uint8_t *cn_comms_secret(ncclComm_t c)
{
	struct comm *e = find(c);

	return e && e->has_secret ? e->secret : NULL;
}

int cn_comms_secrets(uint8_t (*out)[CN_SHA256_LEN], int max)
{
	int n = 0;

	pthread_mutex_lock(&registry);
	for (int i = 0; i < MAX_COMMS && n < max; i++) {
		bool seen = false;

		if (!atomic_load(&comms[i].comm) || !comms[i].has_secret)
			continue;
		for (int j = 0; j < n && !seen; j++)
			seen = memcmp(out[j], comms[i].secret, CN_SHA256_LEN) == 0;
		if (!seen)
			memcpy(out[n++], comms[i].secret, CN_SHA256_LEN);
	}
	pthread_mutex_unlock(&registry);
	return n;
}

void cn_comms_issued(ncclComm_t c)
{
	struct comm *e = find(c);

	if (e)
		atomic_fetch_add(&e->issued, 1);
}

/* ---- the gate ---- */

static bool any_behind(void)
{
	for (int i = 0; i < MAX_COMMS; i++)
		if (atomic_load(&comms[i].comm) && atomic_load(&comms[i].issued) < comms[i].target)
			return true;
	return false;
}

/* Under gate.mu. While draining, one call at a time, so that a count never passes its target. */
static bool allowed(ncclComm_t c, int kind)
{
	struct comm *e;

	switch (atomic_load(&gate.phase)) {
	case OPEN:
		return true;
	case DRAIN:
		if (atomic_load(&gate.inflight) > 0)
			return false;
		if (kind == CN_COMMS_GROUP)
			return any_behind();
		return kind == CN_COMMS_OP && (e = find(c)) && atomic_load(&e->issued) < e->target;
	default:
		return false;
	}
}

/* A thread waiting at the gate to issue an operation, counted on its communicator, where the cut
 * sees it (a group's operations are not known before it starts). */
static atomic_int *waiting_on(ncclComm_t c, int kind)
{
	struct comm *e;

	return kind == CN_COMMS_OP && (e = find(c)) ? &e->waiting : NULL;
}

void cn_comms_enter(ncclComm_t c, int kind)
{
	atomic_int *w;

	if (agent_call)
		return;
	tl.left = false;
	/* Counted in before the phase is read; the agent writes the phase before it counts: one of
	 * the two always sees the other. */
	atomic_fetch_add(&gate.inflight, 1);
	if (atomic_load(&gate.phase) == OPEN) {
		tl.inside++;
		return;
	}
	atomic_fetch_sub(&gate.inflight, 1);
	w = waiting_on(c, kind);
	pthread_mutex_lock(&gate.mu);
	pthread_cond_broadcast(&gate.cv);
	if (w)
		atomic_fetch_add(w, 1);
	if (tl.began)
		atomic_fetch_add(&gate.began_waiting, 1);
	while (!allowed(c, kind))
		pthread_cond_wait(&gate.cv, &gate.mu);
	if (w)
		atomic_fetch_sub(w, 1);
	if (tl.began)
		atomic_fetch_sub(&gate.began_waiting, 1);
	atomic_fetch_add(&gate.inflight, 1);
	pthread_mutex_unlock(&gate.mu);
	tl.inside++;
}

void cn_comms_leave(void)
{
	if (agent_call)
		return;
	if (tl.inside > 0 && --tl.inside == 0) {
		tl.left = true;
		tl.began = false;
	}
	atomic_fetch_sub(&gate.inflight, 1);
	if (atomic_load(&gate.phase) != OPEN) {
		pthread_mutex_lock(&gate.mu);
		pthread_cond_broadcast(&gate.cv);
		pthread_mutex_unlock(&gate.mu);
	}
}

bool cn_comms_thread_inside(void)
{
	return tl.inside > 0;
}

bool cn_comms_thread_finishing(void)
{
	return tl.left;
}

void cn_comms_thread_held(void)
{
	tl.left = false;
	tl.began = false;
}

void cn_comms_thread_began(void)
{
	tl.began = true;
}

bool cn_comms_behind(void)
{
	return atomic_load(&gate.phase) == DRAIN && any_behind();
}

int cn_comms_began_waiting(void)
{
	return atomic_load(&gate.began_waiting);
}

static void set_phase(int phase)
{
	pthread_mutex_lock(&gate.mu);
	atomic_store(&gate.phase, phase);
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
}

/* Under gate.mu: wait until done() or the deadline; false at the deadline. */
static bool wait_until(bool (*done)(void), const struct timespec *deadline)
{
	while (!done())
		if (pthread_cond_timedwait(&gate.cv, &gate.mu, deadline) == ETIMEDOUT)
			return done();
	return true;
}

static void deadline_in(unsigned ms, struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static bool idle(void)
{
	return atomic_load(&gate.inflight) == 0;
}

static struct comm *past_target(void)
{
	for (int i = 0; i < MAX_COMMS; i++)
		if (atomic_load(&comms[i].comm) && atomic_load(&comms[i].issued) > comms[i].target)
			return &comms[i];
	return NULL;
}

/* Every communicator at its target, or one past it (the ranks issued different operations). */
static bool drained(void)
{
	return idle() && (!any_behind() || past_target());
}

/* ---- the agent's side ---- */

int cn_comms_nccl_version(void)
{
	ncclResult_t (*get)(int *) = (ncclResult_t(*)(int *))cn_comms_sym("ncclGetVersion");
	int v = 0;

	if (!get || get(&v) != NCCL_SUCCESS)
		return 0;
	return v;
}

bool cn_comms_have_api(void)
{
	return cn_comms_sym("ncclCommSuspend") && cn_comms_sym("ncclCommResume");
}

int cn_comms_count(void)
{
	int n = 0;

	for (int i = 0; i < MAX_COMMS; i++)
		n += atomic_load(&comms[i].comm) != NULL;
	return n;
}

/* Whether the communicator in slot i has ranks in other processes: not when this process holds
 * all of them (ncclCommInitAll's, one per GPU, whose key is made of the devices and so is the
 * same in any process that makes one on the same GPUs). A split's count not known yet: it does. */
static bool spans(int i)
{
	int here = 0;

	if (!comms[i].nranks)
		return true;
	for (int j = 0; j < MAX_COMMS; j++)
		here += atomic_load(&comms[j].comm) && comms[j].key == comms[i].key;
	return here < comms[i].nranks;
}

void cn_comms_keys(char *out, size_t len)
{
	size_t at = 0;
	int n = 0;

	out[0] = '\0';
	pthread_mutex_lock(&registry);
	for (int i = 0; i < MAX_COMMS && n < CN_COMMS_KEYS; i++) {
		bool seen = false;

		if (!atomic_load(&comms[i].comm) || !spans(i))
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = atomic_load(&comms[j].comm) && comms[j].key == comms[i].key;
		if (seen || at + 18 > len)
			continue;
		at += (size_t)snprintf(out + at, len - at, "%s%016" PRIx64, n ? "," : "",
				       comms[i].key);
		n++;
	}
	pthread_mutex_unlock(&registry);
}

bool cn_comms_suspended(void)
{
	return gate.suspended;
}

/* Ranks and sizes of communicators made by a split, asked of NCCL now that no call is under way. */
static void complete(void)
{
	ncclResult_t (*count)(ncclComm_t, int *) =
		(ncclResult_t(*)(ncclComm_t, int *))cn_comms_sym("ncclCommCount");
	ncclResult_t (*rank)(ncclComm_t, int *) =
		(ncclResult_t(*)(ncclComm_t, int *))cn_comms_sym("ncclCommUserRank");

	for (int i = 0; count && rank && i < MAX_COMMS; i++) {
		ncclComm_t c = atomic_load(&comms[i].comm);

		if (c && comms[i].nranks <= 0 &&
		    (count(c, &comms[i].nranks) != NCCL_SUCCESS ||
		     rank(c, &comms[i].rank) != NCCL_SUCCESS))
			comms[i].nranks = 0;
	}
}

int cn_comms_quiesce(unsigned timeout_ms, char *cut, size_t len, char *why, size_t wlen)
{
	struct timespec deadline;
	bool ok;

	deadline_in(timeout_ms, &deadline);
	pthread_mutex_lock(&gate.mu);
	atomic_store(&gate.phase, CLOSED);
	ok = wait_until(idle, &deadline);
	pthread_mutex_unlock(&gate.mu);
	if (!ok) {
		set_phase(OPEN);
		snprintf(why, wlen, "an NCCL call of the app's did not return within %u ms",
			 timeout_ms);
		return -1;
	}
	complete();
	if (cn_comms_list(cut, len) < 0) {
		set_phase(OPEN);
		snprintf(why, wlen, "too many communicators");
		return -1;
	}
	return 0;
}

int cn_comms_list(char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < MAX_COMMS; i++)
		if (atomic_load(&comms[i].comm))
			o += (size_t)snprintf(
				out + o, o < len ? len - o : 0, "%016" PRIx64 " %d %d %lu\n",
				comms[i].key, comms[i].rank, comms[i].nranks,
				(unsigned long)atomic_load(&comms[i].issued) +
					(unsigned long)atomic_load(&comms[i].waiting));
	return o < len ? 0 : -1;
}

int cn_comms_drain(const char *targets, unsigned timeout_ms, char *why, size_t wlen)
{
	struct timespec deadline;
	const char *p = targets;
	struct comm *over;
	bool ok;

	for (int i = 0; i < MAX_COMMS; i++)
		comms[i].target = atomic_load(&comms[i].issued);
	while (*p) {
		uint64_t key;
		unsigned long n;
		int used;

		if (sscanf(p, "%" SCNx64 " %lu%n", &key, &n, &used) != 2)
			break;
		for (int i = 0; i < MAX_COMMS; i++)
			if (atomic_load(&comms[i].comm) && comms[i].key == key)
				comms[i].target = n;
		p += used;
		p += strspn(p, "\n ");
	}
	deadline_in(timeout_ms, &deadline);
	pthread_mutex_lock(&gate.mu);
	if (!past_target()) {
		atomic_store(&gate.phase, DRAIN);
		pthread_cond_broadcast(&gate.cv);
		/* A rank behind runs its app (hold.c lets its driver calls go) up to its target. */
		cn_gate_recheck();
		ok = wait_until(drained, &deadline);
	}
	over = past_target();
	ok = !over && !any_behind() && idle();
	atomic_store(&gate.phase, ok ? CLOSED : OPEN);
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
	if (over)
		snprintf(why, wlen,
			 "communicator %016" PRIx64 " has issued %lu operations, more than its "
			 "peers' %lu: the ranks do not issue the same ones",
			 over->key, (unsigned long)atomic_load(&over->issued), over->target);
	else if (!ok)
		snprintf(why, wlen,
			 "the app did not issue the NCCL operations its peers had issued within %u "
			 "ms",
			 timeout_ms);
	return ok ? 0 : -1;
}

/* The live communicators by key: every rank suspends and resumes them in the same order, so
 * that no two ranks wait in each other's barrier. */
static int by_key(const void *a, const void *b)
{
	const struct comm *x = *(struct comm *const *)a, *y = *(struct comm *const *)b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int sorted(struct comm **out)
{
	int n = 0;

	for (int i = 0; i < MAX_COMMS; i++)
		if (atomic_load(&comms[i].comm))
			out[n++] = &comms[i];
	qsort(out, (size_t)n, sizeof(out[0]), by_key);
	return n;
}

/* NCCL's suspend and resume save the calling thread's device (cudaGetDevice: 0 on a thread without
 * a context, as the agent's is) and set it back at the end, which from CUDA 12 on creates that
 * device's primary context: a rank on GPU 1 came back from each resume holding 518 MiB on GPU 0 too
 * (two H100s, NCCL 2.30.7). So the communicator's own device is made current on the agent's
 * thread around each call: NCCL sets back the device it works on, and touches no other. */
struct on_device {
	CUdevice dev;
	bool held; /* its primary context retained and current */
};

static void device_enter(ncclComm_t c, struct on_device *o)
{
	ncclResult_t (*cu_device)(ncclComm_t, int *) =
		(ncclResult_t(*)(ncclComm_t, int *))cn_comms_sym("ncclCommCuDevice");
	CUresult (*get)(CUdevice *, int) =
		(CUresult(*)(CUdevice *, int))cn_lookup_resolve(CN_FN_IDX_cuDeviceGet);
	CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(
		CUcontext *, CUdevice))cn_lookup_resolve(CN_FN_IDX_cuDevicePrimaryCtxRetain);
	CUresult (*set)(CUcontext) =
		(CUresult(*)(CUcontext))cn_lookup_resolve(CN_FN_IDX_cuCtxSetCurrent);
	CUresult (*release)(CUdevice) =
		(CUresult(*)(CUdevice))cn_lookup_resolve(CN_FN_IDX_cuDevicePrimaryCtxRelease_v2);
	CUcontext ctx;
	int ordinal;

	o->held = false;
	if (!cu_device || !get || !retain || !set || !release ||
	    cu_device(c, &ordinal) != NCCL_SUCCESS || get(&o->dev, ordinal) != CUDA_SUCCESS ||
	    retain(&ctx, o->dev) != CUDA_SUCCESS)
		return;
	if (set(ctx) != CUDA_SUCCESS) {
		release(o->dev);
		return;
	}
	o->held = true;
}

static void device_leave(const struct on_device *o)
{
	CUresult (*set)(CUcontext) =
		(CUresult(*)(CUcontext))cn_lookup_resolve(CN_FN_IDX_cuCtxSetCurrent);
	CUresult (*release)(CUdevice) =
		(CUresult(*)(CUdevice))cn_lookup_resolve(CN_FN_IDX_cuDevicePrimaryCtxRelease_v2);

	if (!o->held)
		return;
	set(NULL);
	release(o->dev);
}

int cn_comms_suspend(char *why, size_t wlen)
{
	ncclResult_t (*suspend)(ncclComm_t, int) =
		(ncclResult_t(*)(ncclComm_t, int))cn_comms_sym("ncclCommSuspend");
	struct comm *list[MAX_COMMS];
	int n = sorted(list), rc = 0;

	gate.suspended = true;
	agent_call = true;
	for (int i = 0; i < n && rc == 0; i++) {
		ncclComm_t c = atomic_load(&list[i]->comm);
		struct on_device on;
		ncclResult_t r = NCCL_INVALID_USAGE;

		if (suspend) {
			device_enter(c, &on);
			r = suspend(c, NCCL_SUSPEND_MEM);
			device_leave(&on);
		}
		if (r != NCCL_SUCCESS) {
			snprintf(why, wlen,
				 "ncclCommSuspend of communicator %016" PRIx64 " failed (%d)",
				 list[i]->key, r);
			rc = -1;
		} else {
			list[i]->suspended = true;
		}
	}
	agent_call = false;
	return rc;
}

int cn_comms_resume(char *why, size_t wlen)
{
	ncclResult_t (*resume)(ncclComm_t) =
		(ncclResult_t(*)(ncclComm_t))cn_comms_sym("ncclCommResume");
	struct comm *list[MAX_COMMS];
	int n = sorted(list), rc = 0;

	agent_call = true;
	for (int i = 0; i < n && rc == 0; i++) {
		ncclComm_t c = atomic_load(&list[i]->comm);
		struct on_device on;
		ncclResult_t r = NCCL_INVALID_USAGE;

		if (!list[i]->suspended)
			continue;
		if (resume) {
			device_enter(c, &on);
			r = resume(c);
			device_leave(&on);
		}
		if (r != NCCL_SUCCESS) {
			snprintf(why, wlen,
				 "ncclCommResume of communicator %016" PRIx64 " failed (%d)",
				 list[i]->key, r);
			rc = -1;
		} else {
			list[i]->suspended = false;
		}
	}
	agent_call = false;
	if (rc < 0)
		return rc;
	gate.suspended = false;
	set_phase(OPEN);
	return 0;
}

void cn_comms_open(void)
{
	set_phase(OPEN);
}

void cn_comms_after_fork(void)
{
	for (int i = 0; i < MAX_COMMS; i++)
		atomic_store(&comms[i].comm, NULL);
	pthread_mutex_init(&registry, NULL);
	pthread_mutex_init(&gate.mu, NULL);
	pthread_cond_init(&gate.cv, NULL);
	atomic_store(&gate.phase, OPEN);
	atomic_store(&gate.inflight, 0);
	atomic_store(&gate.began_waiting, 0);
	tl.inside = 0;
	tl.left = tl.began = false;
	gate.suspended = false;
}
