/* hostbuf: the pinned host buffer ready for the next light nap, kept since a wake or made ahead by
 * threads of its own while the process idles, and let go by another beside the app's calls; the
 * agent thread, and an app thread that destroys the context it was pinned through. */
#define _GNU_SOURCE
#include "cuda/hostbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "clock.h"
#include "cuda/fns.h"
#include "cuda/gate.h"
#include "cuda/owned.h"

#define MAKERS	   4  /* threads that make a buffer ahead, at most */
#define MAKER_NICE 10 /* they run below the app's threads */
#define PAUSE_MS   1   /* no GPU work of the app's this long: a pause, a chunk is let go */
#define WAIT_MS	   20  /* a chunk waits this long at most for a pause */
#define TURN_MS	   100 /* and the calls that came during its unpin this long for their turn */
#define STAYED_MS  20  /* those inside since before it, this long */
#define INSIDE_MAX 64  /* the app's threads inside the driver looked at, at most */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { CU_MEMHOSTREGISTER_PORTABLE = 1, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713 };

/* The ready buffer, and whether its wake keeps it for the next nap; the threads making it ahead
 * (the next chunk to take, stop: they take no more). Changed under mu; once the process exits
 * (exiting) nothing touches it. */
static struct {
	struct cn_hostbuf b;
	bool keep;
	pthread_t th[MAKERS];
	unsigned n_th;
	atomic_size_t next;
	atomic_bool stop;
	atomic_uint working; /* threads not done yet */
} K;
/* The buffer being let go beside the app's calls by a thread of its own, which alone touches b
 * and st while on; left: its bytes still mapped; hurry: no more giving way to the app's calls;
 * stop: no more chunks (the process exits); done: the thread has ended. Its figures go to last
 * once it is joined, added to those not yet handed out (unsaid). on, th, last, unsaid change under
 * mu. */
static struct {
	struct cn_hostbuf b;
	pthread_t th;
	bool on;
	atomic_size_t left;
	atomic_bool hurry, stop, done;
	struct cn_hostbuf_gone st, last;
	bool unsaid;
} G;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool exiting;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *drv(unsigned idx)
{
	return cn_lookup_resolve(idx);
}

bool cn_hostbuf_unpin(struct cn_hostbuf *b)
{
	CUresult (*unreg)(void *) = drv(CN_FN_IDX_cuMemHostUnregister);
	bool left = false;

	for (size_t c = 0; b->pinned && c < b->chunks; c++) {
		CUresult r = b->pinned[c] && unreg ? unreg(b->host + c * CN_HOSTBUF_CHUNK)
						   : CUDA_SUCCESS;

		if (r == CUDA_SUCCESS || r == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
			b->pinned[c] = false;
		left |= b->pinned[c];
	}
	return left;
}

/* The making threads told to stop and waited for (each ends after its chunk); mu held. */
static void stop_making(void)
{
	atomic_store(&K.stop, true);
	for (unsigned i = 0; i < K.n_th; i++)
		pthread_join(K.th[i], NULL);
	K.n_th = 0;
	atomic_store(&K.stop, false);
}

/* The length of b's chunk c: CN_HOSTBUF_CHUNK, or what is left for the last. */
static size_t chunk_len(const struct cn_hostbuf *b, size_t c)
{
	size_t at = c * CN_HOSTBUF_CHUNK;

	return b->bytes - at < CN_HOSTBUF_CHUNK ? b->bytes - at : CN_HOSTBUF_CHUNK;
}

/* ---- let go beside the app's calls ---- */

/* Until the app's GPU work pauses: no work call of the app's began since the last unpin began
 * (*was), or none for PAUSE_MS; WAIT_MS at most, or until hurried. */
static void wait_for_pause(unsigned long *was)
{
	struct timespec t = { 0, PAUSE_MS * 1000000L };
	unsigned long now = cn_gate_work();
	double t0 = cn_clock_ms();

	while (now != *was && !atomic_load(&G.hurry) && cn_clock_ms() - t0 < WAIT_MS) {
		*was = now;
		nanosleep(&t, NULL);
		now = cn_gate_work();
	}
	G.st.waited_ms += cn_clock_ms() - t0;
}

static bool among(const struct cn_inside *c, const struct cn_inside *set, int n)
{
	for (int i = 0; i < n; i++)
		if (set[i].tid == c->tid && set[i].calls == c->calls)
			return true;
	return false;
}

/* Until the app's calls inside the driver at the end of an unpin have had their turn: an unpin
 * holds the driver's lock they need, and a thread that unpins one chunk after another takes it
 * back before a waiting call does, which would wait for the whole. One that came during the unpin
 * (not inside at its start: before) is waited for TURN_MS at most, one inside since before it
 * STAYED_MS (it may have entered just before and not reached the lock, or wait for its own work:
 * a sync), or until hurried. */
static void wait_for_turns(const struct cn_inside *before, int n_before)
{
	struct timespec t = { 0, 200000 };
	struct cn_inside came[INSIDE_MAX], stayed[INSIDE_MAX], now[INSIDE_MAX];
	int n_came = 0, n_stayed = 0, n = cn_gate_inside(now, INSIDE_MAX);
	double t0 = cn_clock_ms(), dt = 0;

	for (int i = 0; i < n; i++) {
		if (among(&now[i], before, n_before))
			stayed[n_stayed++] = now[i];
		else
			came[n_came++] = now[i];
	}
	while ((n_came || (n_stayed && dt < STAYED_MS)) && !atomic_load(&G.hurry) &&
	       dt < TURN_MS) {
		int c = 0, s = 0;

		nanosleep(&t, NULL);
		n = cn_gate_inside(now, INSIDE_MAX);
		for (int i = 0; i < n_came; i++)
			if (among(&came[i], now, n))
				came[c++] = came[i];
		for (int i = 0; i < n_stayed; i++)
			if (among(&stayed[i], now, n))
				stayed[s++] = stayed[i];
		n_came = c;
		n_stayed = s;
		dt = cn_clock_ms() - t0;
	}
	G.st.waited_ms += cn_clock_ms() - t0;
}

/* The going thread: each chunk unpinned in a pause of the app's GPU work, the calls that came
 * meanwhile let through, then unmapped (one the driver could not unpin stays mapped); without its
 * context (gone with its pinning) each is only unmapped. */
static void *going(void *arg)
{
	CUresult (*unreg)(void *) = drv(CN_FN_IDX_cuMemHostUnregister);
	CUresult (*set)(void *) = drv(CN_FN_IDX_cuCtxSetCurrent);
	struct cn_hostbuf *b = &G.b;
	bool ctx = set && set(b->ctx) == CUDA_SUCCESS;
	double t0 = cn_clock_ms();
	unsigned long work = cn_gate_work();

	/* at the app's priority: it holds the driver's lock while it unpins */
	(void)arg;
	for (size_t c = 0; b->pinned && c < b->chunks && !atomic_load(&G.stop); c++) {
		char *p = b->host + c * CN_HOSTBUF_CHUNK;
		size_t len = chunk_len(b, c);

		if (b->pinned[c] && ctx && unreg) {
			struct cn_inside before[INSIDE_MAX];
			int n_before;
			CUresult r;

			wait_for_pause(&work);
			work = cn_gate_work();
			n_before = cn_gate_inside(before, INSIDE_MAX);
			r = unreg(p);
			wait_for_turns(before, n_before);
			if (r == CUDA_SUCCESS || r == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
				b->pinned[c] = false;
		}
		if (!b->pinned[c] || !ctx)
			munmap(p, len);
		else
			G.st.left_mib += len >> 20;
		atomic_fetch_sub(&G.left, len);
		G.st.chunks++;
	}
	if (ctx)
		set(NULL);
	G.st.ms = cn_clock_ms() - t0;
	atomic_store(&G.done, true);
	return NULL;
}

/* The going thread hurried (or stopped) and waited for, its buffer's record freed, its figures
 * kept for cn_hostbuf_gone; mu held. */
static void going_done(bool stop)
{
	struct cn_hostbuf_gone *l = &G.last;

	if (!G.on)
		return;
	atomic_store(&G.hurry, true);
	atomic_store(&G.stop, stop);
	pthread_join(G.th, NULL);
	free(G.b.pinned);
	memset(&G.b, 0, sizeof(G.b));
	atomic_store(&G.left, 0);
	G.on = false;
	if (!G.unsaid)
		memset(l, 0, sizeof(*l));
	l->mib += G.st.mib;
	l->left_mib += G.st.left_mib;
	l->chunks += G.st.chunks;
	l->ms += G.st.ms;
	l->waited_ms += G.st.waited_ms;
	G.unsaid = true;
}

/* The ready buffer unpinned and unmapped (left mapped where the driver could not unpin it); mu
 * held. Pushed, not set: an app thread's (ctx_gone) current context stays its own. Without its
 * context (gone with its pinning) it is unmapped. */
static void let_go(void)
{
	CUresult (*push)(void *) = drv(CN_FN_IDX_cuCtxPushCurrent_v2);
	CUresult (*pop)(void **) = drv(CN_FN_IDX_cuCtxPopCurrent_v2);
	bool pinned = false;
	void *was;

	if (exiting)
		return;
	stop_making();
	going_done(false);
	if (!K.b.host)
		return;
	if (push && pop && push(K.b.ctx) == CUDA_SUCCESS) {
		pinned = cn_hostbuf_unpin(&K.b);
		pop(&was);
	}
	if (!pinned)
		munmap(K.b.host, K.b.bytes);
	free(K.b.pinned);
	memset(&K.b, 0, sizeof(K.b));
	K.keep = false;
}

/* The ready buffer handed to a going thread (let go at once where none can start), which gives
 * way to the app's calls unless hurry; one still going is waited for first, hurried; mu held. */
static void let_go_beside(bool hurry)
{
	if (exiting)
		return;
	stop_making();
	if (!K.b.host)
		return;
	going_done(false);
	G.b = K.b;
	memset(&G.st, 0, sizeof(G.st));
	G.st.mib = G.b.bytes >> 20;
	atomic_store(&G.left, G.b.bytes);
	atomic_store(&G.hurry, hurry);
	atomic_store(&G.stop, false);
	atomic_store(&G.done, false);
	if (pthread_create(&G.th, NULL, going, NULL) != 0) {
		memset(&G.b, 0, sizeof(G.b));
		let_go();
		return;
	}
	G.on = true;
	memset(&K.b, 0, sizeof(K.b));
	K.keep = false;
}

/* A context going away (owned.c): the buffer pinned through it let go first; at a device's reset,
 * whichever device it was pinned through. */
static void ctx_gone(void *ctx, int dev)
{
	(void)dev;
	pthread_mutex_lock(&mu);
	if (G.on && (!ctx || G.b.ctx == ctx))
		going_done(false);
	if (K.b.host && (!ctx || K.b.ctx == ctx))
		let_go();
	pthread_mutex_unlock(&mu);
}

/* At exit: a let-go or a making under way ends first (a going one after its chunk), none starts
 * after (the driver tears itself down). Set after the runtime's exit handler, so it runs before the
 * runtime's teardown. */
static void at_exit(void)
{
	pthread_mutex_lock(&mu);
	stop_making();
	going_done(true);
	exiting = true;
	pthread_mutex_unlock(&mu);
}

static void watch(void)
{
	cn_owned_watch_ctx(ctx_gone);
	atexit(at_exit);
}

void cn_hostbuf_fault(char *p, size_t len)
{
	for (size_t o = 0; o < len; o += CN_HOSTBUF_STEP) {
		size_t n = len - o < CN_HOSTBUF_STEP ? len - o : CN_HOSTBUF_STEP;

		/* one write per 4 KiB page where the kernel predates MADV_POPULATE_WRITE (5.14) */
		if (madvise(p + o, n, MADV_POPULATE_WRITE) != 0)
			for (size_t k = 0; k < n; k += 4096)
				p[o + k] = 0;
	}
}

/* ---- made ahead ---- */

/* A making thread: the next chunk not taken yet faulted in and pinned, until none is left or it is
 * told to stop. Low priority: the app, if it works meanwhile, goes first. */
static void *maker(void *arg)
{
	CUresult (*reg)(void *, size_t, unsigned) = drv(CN_FN_IDX_cuMemHostRegister_v2);
	CUresult (*set)(void *) = drv(CN_FN_IDX_cuCtxSetCurrent);
	size_t c;

	(void)arg;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), MAKER_NICE);
	if (set(K.b.ctx) == CUDA_SUCCESS)
		while (!atomic_load(&K.stop) && (c = atomic_fetch_add(&K.next, 1)) < K.b.chunks) {
			char *p = K.b.host + c * CN_HOSTBUF_CHUNK;
			size_t len = chunk_len(&K.b, c);

			cn_hostbuf_fault(p, len);
			K.b.pinned[c] = reg(p, len, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
		}
	set(NULL);
	atomic_fetch_sub(&K.working, 1);
	return NULL;
}

int cn_hostbuf_ahead(size_t bytes, void *ctx, unsigned threads)
{
	int r = 0;

	if (!drv(CN_FN_IDX_cuMemHostRegister_v2) || !drv(CN_FN_IDX_cuCtxSetCurrent) || !bytes)
		return -ENOSYS;
	pthread_once(&once, watch);
	pthread_mutex_lock(&mu);
	if (exiting || K.b.host) {
		r = exiting ? -ESHUTDOWN : -EEXIST;
		goto out;
	}
	K.b.chunks = (bytes + CN_HOSTBUF_CHUNK - 1) / CN_HOSTBUF_CHUNK;
	K.b.pinned = calloc(K.b.chunks, sizeof(*K.b.pinned));
	K.b.host = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (K.b.host == MAP_FAILED || !K.b.pinned) {
		if (K.b.host != MAP_FAILED)
			munmap(K.b.host, bytes);
		free(K.b.pinned);
		memset(&K.b, 0, sizeof(K.b));
		r = -ENOMEM;
		goto out;
	}
	madvise(K.b.host, bytes, MADV_HUGEPAGE);
	/* pinned pages are copied into a forked child at the fork: none of it goes there */
	madvise(K.b.host, bytes, MADV_DONTFORK);
	K.b.bytes = bytes;
	K.b.ctx = ctx;
	K.keep = true;
	atomic_store(&K.next, 0);
	atomic_store(&K.stop, false);
	threads = threads < 1 ? 1 : threads > MAKERS ? MAKERS : threads;
	for (K.n_th = 0; K.n_th < threads && K.n_th < K.b.chunks; K.n_th++) {
		atomic_fetch_add(&K.working, 1);
		if (pthread_create(&K.th[K.n_th], NULL, maker, NULL) != 0) {
			atomic_fetch_sub(&K.working, 1);
			break;
		}
	}
out:
	pthread_mutex_unlock(&mu);
	return r;
}

bool cn_hostbuf_making(void)
{
	return atomic_load(&K.working) > 0;
}

/* ---- kept, taken, let go ---- */

void cn_hostbuf_keep(struct cn_hostbuf *b, bool keep)
{
	pthread_once(&once, watch);
	pthread_mutex_lock(&mu);
	let_go();
	K.keep = keep;
	K.b = *b;
	memset(b, 0, sizeof(*b));
	pthread_mutex_unlock(&mu);
}

bool cn_hostbuf_take(size_t total, void *ctx, struct cn_hostbuf *b)
{
	bool took = false;

	pthread_mutex_lock(&mu);
	stop_making();
	going_done(false); /* the app's calls wait for the nap: its memory freed before the nap's */
	if (K.b.host && (K.b.bytes < total || K.b.bytes / 2 > total || K.b.ctx != ctx)) {
		let_go();
	} else if (K.b.host) {
		*b = K.b;
		memset(&K.b, 0, sizeof(K.b));
		K.keep = false;
		took = true;
	}
	pthread_mutex_unlock(&mu);
	return took;
}

unsigned long long cn_hostbuf_bytes(void)
{
	unsigned long long n;

	pthread_mutex_lock(&mu);
	n = K.b.bytes;
	pthread_mutex_unlock(&mu);
	return n;
}

static void let_go_how(enum cn_hostbuf_how how)
{
	if (how == CN_HOSTBUF_NOW)
		let_go();
	else
		let_go_beside(how == CN_HOSTBUF_ASIDE);
}

bool cn_hostbuf_let_go(enum cn_hostbuf_how how)
{
	bool went;

	pthread_mutex_lock(&mu);
	went = K.b.host && !exiting;
	let_go_how(how);
	pthread_mutex_unlock(&mu);
	return went;
}

bool cn_hostbuf_let_go_unkept(enum cn_hostbuf_how how)
{
	bool went;

	pthread_mutex_lock(&mu);
	went = K.b.host && !K.keep && !exiting;
	if (went)
		let_go_how(how);
	pthread_mutex_unlock(&mu);
	return went;
}

bool cn_hostbuf_going(void)
{
	bool on;

	pthread_mutex_lock(&mu);
	on = G.on || G.unsaid;
	pthread_mutex_unlock(&mu);
	return on;
}

unsigned long long cn_hostbuf_held_bytes(void)
{
	unsigned long long n;

	pthread_mutex_lock(&mu);
	n = K.b.bytes + (G.on ? atomic_load(&G.left) : 0);
	pthread_mutex_unlock(&mu);
	return n;
}

void cn_hostbuf_hurry(void)
{
	pthread_mutex_lock(&mu);
	if (G.on)
		atomic_store(&G.hurry, true);
	pthread_mutex_unlock(&mu);
}

bool cn_hostbuf_gone(struct cn_hostbuf_gone *st)
{
	bool said = false;

	pthread_mutex_lock(&mu);
	if (G.on && atomic_load(&G.done))
		going_done(false);
	if (G.unsaid) {
		*st = G.last;
		G.unsaid = false;
		said = true;
	}
	pthread_mutex_unlock(&mu);
	return said;
}

void cn_hostbuf_after_fork(void)
{
	/* K's record left as it may be half changed; the threads are the parent's */
	memset(&K, 0, sizeof(K));
	memset(&G, 0, sizeof(G)); /* the going thread too (its buffer was never mapped here) */
	pthread_mutex_init(&mu, NULL);
	exiting = false;
}
