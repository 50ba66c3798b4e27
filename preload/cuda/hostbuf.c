/* hostbuf: the pinned host buffer ready for the next light nap, kept since a wake or made ahead by
 * threads of its own while the process idles; the agent thread, and an app thread that destroys
 * the context it was pinned through. */
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
#include "cuda/fns.h"
#include "cuda/owned.h"

#define MAKERS	   4  /* threads that make a buffer ahead, at most */
#define MAKER_NICE 10 /* they run below the app's threads */
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

/* A context going away (owned.c): the buffer pinned through it let go first; at a device's reset,
 * whichever device it was pinned through. */
static void ctx_gone(void *ctx, int dev)
{
	(void)dev;
	pthread_mutex_lock(&mu);
	if (K.b.host && (!ctx || K.b.ctx == ctx))
		let_go();
	pthread_mutex_unlock(&mu);
}

/* At exit: a let-go or a making under way ends first, none starts after (the driver tears itself
 * down). Set after the runtime's exit handler, so it runs before the runtime's teardown. */
static void at_exit(void)
{
	pthread_mutex_lock(&mu);
	stop_making();
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
			size_t len = K.b.bytes - c * CN_HOSTBUF_CHUNK < CN_HOSTBUF_CHUNK
					     ? K.b.bytes - c * CN_HOSTBUF_CHUNK
					     : CN_HOSTBUF_CHUNK;

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

bool cn_hostbuf_let_go(void)
{
	bool went;

	pthread_mutex_lock(&mu);
	went = K.b.host && !exiting;
	let_go();
	pthread_mutex_unlock(&mu);
	return went;
}

bool cn_hostbuf_let_go_unkept(void)
{
	bool went;

	pthread_mutex_lock(&mu);
	went = K.b.host && !K.keep && !exiting;
	if (went)
		let_go();
	pthread_mutex_unlock(&mu);
	return went;
}

void cn_hostbuf_after_fork(void)
{
	/* K's record left as it may be half changed; the threads are the parent's */
	memset(&K, 0, sizeof(K));
	pthread_mutex_init(&mu, NULL);
	exiting = false;
}
