/* light: a light nap's memory: what cudanap owns copied into pinned host memory and released, its
 * addresses kept, and put back at the wake. The agent thread, the gate closed; fault threads and a
 * giver beside it. */
#define _GNU_SOURCE
#include "cuda/light.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_hostmem.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/hostbuf.h"
#include "cuda/owned.h"

#define CHUNK	    CN_HOSTBUF_CHUNK /* the host copy is faulted in and pinned by chunks of this */
#define FAULTERS    8		     /* threads that fault the host copy in, at most */
#define MAX_STREAMS 16		     /* contexts copied through at once */

enum { CU_MEMHOSTREGISTER_PORTABLE = 1, CU_STREAM_NON_BLOCKING = 1, CU_EVENT_DISABLE_TIMING = 2 };
enum { CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713 };

typedef CUresult (*copy_out_fn)(void *, CUdeviceptr, size_t, void *);
typedef CUresult (*copy_in_fn)(CUdeviceptr, const void *, size_t, void *);

/* Where a span's memory is: on the GPU only (not given back yet, or its copy back confirmed),
 * on the host only (given back), or mapped again with its copy back not yet confirmed. */
enum { ON_GPU, ON_HOST, MAPPED };

/* The nap's host copy: its spans (owned.c), where each lies in it and is, which chunks are
 * pinned, and which chunks are ready (faulted in and their pinning tried: pin_r says how); the
 * event that says each span's copy out is done. The copy maps bytes (a kept one's may be more
 * than the spans' total). */
static struct {
	struct cn_owned_span *span;
	size_t *at;
	unsigned char *where;
	void **ev;
	size_t n;
	char *host;
	size_t total, bytes, chunks;
	bool *pinned;
	atomic_bool *ready;
	CUresult *pin_r;
	unsigned long long kept;
	double wait_ms;	      /* the copy's waits for chunks to be ready */
	atomic_ullong pin_us; /* the pinning, in all threads */
} L;

/* The contexts the spans are copied through, a stream each. */
static struct {
	void *ctx, *stream;
} S[MAX_STREAMS];
static int n_streams;

static void *drv(unsigned idx)
{
	return cn_lookup_resolve(idx);
}

static CUresult set_ctx(void *ctx)
{
	return ((CUresult(*)(void *))drv(CN_FN_IDX_cuCtxSetCurrent))(ctx);
}

/* ctx's stream (made at its first use), current: NULL when none could be made. */
static void *stream_of(void *ctx)
{
	CUresult (*create)(void **, unsigned) = drv(CN_FN_IDX_cuStreamCreate);
	int i;

	if (set_ctx(ctx) != CUDA_SUCCESS)
		return NULL;
	for (i = 0; i < n_streams; i++)
		if (S[i].ctx == ctx)
			return S[i].stream;
	if (n_streams == MAX_STREAMS || !create ||
	    create(&S[i].stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
		return NULL;
	S[i].ctx = ctx;
	n_streams++;
	return S[i].stream;
}

/* Every stream's copies done, the streams gone, no context current: the driver's first error. */
static CUresult streams_done(void)
{
	CUresult (*sync)(void *) = drv(CN_FN_IDX_cuStreamSynchronize);
	CUresult (*destroy)(void *) = drv(CN_FN_IDX_cuStreamDestroy_v2);
	CUresult r = CUDA_SUCCESS;

	for (int i = 0; i < n_streams; i++) {
		CUresult e = set_ctx(S[i].ctx);

		if (e == CUDA_SUCCESS)
			e = sync(S[i].stream);
		if (r == CUDA_SUCCESS)
			r = e;
		destroy(S[i].stream);
	}
	n_streams = 0;
	set_ctx(NULL);
	return r;
}

/* ---- the host copy ---- */

static size_t chunk_len(size_t c)
{
	return L.bytes - c * CHUNK < CHUNK ? L.bytes - c * CHUNK : CHUNK;
}

static atomic_size_t next_fault;
static atomic_bool fault_go; /* the fault threads begin once all are started */

/* Chunk c made ready: its pages made (the kernel's zeroing is the first cost), then pinned (the
 * second); the threads that do it share both, the copy waits only for the chunk it reaches. */
static void ready_chunk(size_t c, bool populate)
{
	CUresult (*reg)(void *, size_t, unsigned) = drv(CN_FN_IDX_cuMemHostRegister_v2);
	char *p = L.host + c * CHUNK;
	size_t len = chunk_len(c);
	double t0;

	if (populate)
		cn_hostbuf_fault(p, len);
	t0 = cn_clock_ms();
	L.pin_r[c] = reg(p, len, CU_MEMHOSTREGISTER_PORTABLE);
	L.pinned[c] = L.pin_r[c] == CUDA_SUCCESS;
	atomic_fetch_add(&L.pin_us, (unsigned long long)((cn_clock_ms() - t0) * 1000));
	atomic_store(&L.ready[c], true);
}

/* A thread that readies chunks: the next chunk not taken yet, until none is left; it begins once
 * every fault thread is started (starting one needs the memory map's lock, which faulting holds;
 * the giver, started after them, waits for one 16 MiB step of it at most). The pinning is
 * portable: any of the app's contexts is current for it. */
static void *readier(void *arg)
{
	struct timespec nap = { 0, 20000 };
	size_t c;

	while (!atomic_load(&fault_go))
		nanosleep(&nap, NULL);
	set_ctx(arg);
	while ((c = atomic_fetch_add(&next_fault, 1)) < L.chunks)
		if (!atomic_load(&L.ready[c])) /* a buffer made ahead in part: the rest */
			ready_chunk(c, true);
	set_ctx(NULL);
	return NULL;
}

/* Chunk c ready (by the threads, or here without them; pinned again after cn_light_unpin): how
 * its pinning went. */
static CUresult pin(size_t c, bool threads)
{
	struct timespec nap = { 0, 20000 };
	double t0 = cn_clock_ms();

	/* ready first: a thread's pinned[c] is read only after its ready[c] */
	if (atomic_load(&L.ready[c]) && L.pinned[c])
		return CUDA_SUCCESS;
	while (threads && !atomic_load(&L.ready[c]))
		nanosleep(&nap, NULL);
	if (!threads)
		ready_chunk(c, !atomic_load(&L.ready[c]));
	L.wait_ms += cn_clock_ms() - t0;
	return L.pin_r[c];
}

/* The nap's host copy as a buffer of its own (hostbuf.h), for what the two share. */
static struct cn_hostbuf as_buf(void)
{
	return (struct cn_hostbuf){ L.host, L.bytes, L.chunks, L.pinned,
				    L.n ? L.span[0].ctx : NULL };
}

/* Through a context of the app's (the driver asks for one). */
static void unpin_all(void)
{
	struct cn_hostbuf b = as_buf();

	if (!L.pinned || !L.n || set_ctx(L.span[0].ctx) != CUDA_SUCCESS)
		return;
	cn_hostbuf_unpin(&b);
	set_ctx(NULL);
}

/* The record of the host copy let go, and the copy itself unless keep. */
static void drop(bool keep)
{
	if (L.host && !keep)
		munmap(L.host, L.bytes);
	free(L.span);
	free(L.at);
	free(L.where);
	free(L.ev);
	free(L.pinned);
	free((void *)L.ready);
	free(L.pin_r);
	memset(&L, 0, sizeof(L));
}

/* The host copy dropped; memory the driver could not unpin is left mapped rather than unmapped
 * under its registration. */
static void forget(void)
{
	bool pinned = false;

	unpin_all();
	for (size_t c = 0; L.pinned && c < L.chunks; c++)
		pinned |= L.pinned[c];
	drop(pinned);
}

/* The buffer ready since the last wake or made ahead (hostbuf.c) taken for a copy of total bytes:
 * true when it holds them. */
static bool take_ready(size_t total)
{
	struct cn_hostbuf b;

	if (!cn_hostbuf_take(total, L.span[0].ctx, &b))
		return false;
	L.host = b.host;
	L.bytes = b.bytes;
	L.chunks = b.chunks;
	L.pinned = b.pinned;
	return true;
}

/* The spans read, their places in the host copy laid out, the host copy mapped: 0, 1 when it is
 * the copy kept since the last wake (pinned already), -1 with why. Whether the host has room for
 * it was checked by the lock (the controller's host check, with its size). */
static int lay_out(char *why, size_t len, double *take_ms)
{
	size_t total = 0;
	double t0;
	bool took;

	L.span = cn_owned_spans(&L.n, &L.kept);
	if (!L.span || !L.n) {
		snprintf(why, len, L.span ? "it owns no GPU memory to give back" : "out of memory");
		return -1;
	}
	L.at = calloc(L.n, sizeof(*L.at));
	L.where = calloc(L.n, sizeof(*L.where)); /* ON_GPU */
	L.ev = calloc(L.n, sizeof(*L.ev));
	if (!L.where || !L.ev) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	for (size_t i = 0; L.at && i < L.n; i++) {
		L.at[i] = total;
		total += L.span[i].bytes;
	}
	L.total = total;
	t0 = cn_clock_ms();
	took = L.at && take_ready(total);
	*take_ms = cn_clock_ms() - t0;
	if (took) {
		/* pinned already: each chunk ready as it is (one the driver could not pin, or one a
		 * making ahead did not reach, is readied by the copy) */
		L.ready = calloc(L.chunks, sizeof(*L.ready));
		L.pin_r = calloc(L.chunks, sizeof(*L.pin_r)); /* CUDA_SUCCESS */
		for (size_t c = 0; L.ready && c < L.chunks; c++)
			atomic_store(&L.ready[c], L.pinned[c]);
		if (L.ready && L.pin_r)
			return 1;
		snprintf(why, len, "out of memory");
		return -1;
	}
	L.bytes = total;
	L.chunks = (total + CHUNK - 1) / CHUNK;
	L.pinned = calloc(L.chunks, sizeof(*L.pinned));
	L.ready = calloc(L.chunks, sizeof(*L.ready));
	L.pin_r = calloc(L.chunks, sizeof(*L.pin_r));
	L.host = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (L.host == MAP_FAILED)
		L.host = NULL;
	if (!L.at || !L.pinned || !L.ready || !L.pin_r || !L.host) {
		snprintf(why, len, "no host memory for a copy of %zu MiB", total >> 20);
		return -1;
	}
	madvise(L.host, total, MADV_HUGEPAGE);
	/* pinned pages are copied into a forked child at the fork: none of it goes there */
	madvise(L.host, total, MADV_DONTFORK);
	return 0;
}

/* Whether a chunk of the host copy is not ready yet (a fresh copy, or one made ahead in part). */
static bool unready(void)
{
	for (size_t c = 0; c < L.chunks; c++)
		if (!atomic_load(&L.ready[c]))
			return true;
	return false;
}

/* Span i's copy between the GPU and the host copy, cut where the host copy's chunks are, on its
 * context's stream (out: to the host). */
static CUresult copy(size_t i, bool out, bool threads)
{
	copy_out_fn to_host = drv(CN_FN_IDX_cuMemcpyDtoHAsync_v2);
	copy_in_fn to_gpu = drv(CN_FN_IDX_cuMemcpyHtoDAsync_v2);
	const struct cn_owned_span *sp = &L.span[i];
	void *s = stream_of(sp->ctx);
	CUresult r = s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;

	for (size_t done = 0; r == CUDA_SUCCESS && done < sp->bytes;) {
		size_t at = L.at[i] + done, c = at / CHUNK;
		size_t n = (c + 1) * CHUNK - at;

		n = n < sp->bytes - done ? n : sp->bytes - done;
		r = pin(c, threads);
		if (r == CUDA_SUCCESS)
			r = out ? to_host(L.host + at, sp->va + done, n, s)
				: to_gpu(sp->va + done, L.host + at, n, s);
		done += n;
	}
	return r;
}

/* Each span's event, and its context's stream, made before the copies begin: the driver's own
 * allocations for them then wait for no fault thread. */
static CUresult make_events(void)
{
	CUresult (*create)(void **, unsigned) = drv(CN_FN_IDX_cuEventCreate);
	CUresult r = CUDA_SUCCESS;

	for (size_t i = 0; r == CUDA_SUCCESS && i < L.n; i++) {
		r = stream_of(L.span[i].ctx) ? create(&L.ev[i], CU_EVENT_DISABLE_TIMING)
					     : CUDA_ERROR_INVALID_VALUE;
		if (r != CUDA_SUCCESS)
			L.ev[i] = NULL;
	}
	return r;
}

/* Span i's event recorded after its copy out, on its stream, as soon as the copy is issued. */
static CUresult mark(size_t i)
{
	CUresult (*record)(void *, void *) = drv(CN_FN_IDX_cuEventRecord);
	void *s = stream_of(L.span[i].ctx);

	return s && L.ev[i] ? record(L.ev[i], s) : CUDA_ERROR_INVALID_VALUE;
}

/* Span i's copy out done: its event waited for, and let go. */
static CUresult copied(size_t i)
{
	CUresult (*wait)(void *) = drv(CN_FN_IDX_cuEventSynchronize);
	CUresult (*destroy)(void *) = drv(CN_FN_IDX_cuEventDestroy_v2);
	CUresult r;

	if (!L.ev[i] || set_ctx(L.span[i].ctx) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	r = wait(L.ev[i]);
	destroy(L.ev[i]);
	L.ev[i] = NULL;
	return r;
}

/* The events of spans whose copies were issued but not waited for, let go (after a failure). */
static void drop_events(void)
{
	CUresult (*destroy)(void *) = drv(CN_FN_IDX_cuEventDestroy_v2);

	for (size_t i = 0; L.ev && i < L.n; i++)
		if (L.ev[i] && set_ctx(L.span[i].ctx) == CUDA_SUCCESS) {
			destroy(L.ev[i]);
			L.ev[i] = NULL;
		}
	set_ctx(NULL);
}

/* The driver's functions a light nap needs: the name of one missing, or NULL. */
static const char *missing(void)
{
	static const struct {
		unsigned idx;
		const char *name;
	} need[] = {
		{ CN_FN_IDX_cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync" },
		{ CN_FN_IDX_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync" },
		{ CN_FN_IDX_cuMemHostRegister_v2, "cuMemHostRegister" },
		{ CN_FN_IDX_cuMemHostUnregister, "cuMemHostUnregister" },
		{ CN_FN_IDX_cuStreamCreate, "cuStreamCreate" },
		{ CN_FN_IDX_cuStreamSynchronize, "cuStreamSynchronize" },
		{ CN_FN_IDX_cuStreamDestroy_v2, "cuStreamDestroy" },
		{ CN_FN_IDX_cuEventCreate, "cuEventCreate" },
		{ CN_FN_IDX_cuEventRecord, "cuEventRecord" },
		{ CN_FN_IDX_cuEventSynchronize, "cuEventSynchronize" },
		{ CN_FN_IDX_cuEventDestroy_v2, "cuEventDestroy" },
		{ CN_FN_IDX_cuCtxSetCurrent, "cuCtxSetCurrent" },
		{ CN_FN_IDX_cuMemGetAccess, "cuMemGetAccess" },
	};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!drv(need[i].idx))
			return need[i].name;
	return NULL;
}

static void name_error(CUresult r, const char *what, char *why, size_t len)
{
	const char *name = NULL;
	CUresult (*get)(CUresult, const char **) = drv(CN_FN_IDX_cuGetErrorName);

	if (!get || get(r, &name) != CUDA_SUCCESS || !name)
		name = "a CUDA error";
	snprintf(why, len, "%s: %s (%d)", what, name, r);
}

/* ---- the nap and the wake ---- */

/* What is on the host put back: each span given back made anew and mapped (trying again for
 * wait_ms, and while coming says so, while the GPU has no room), each copied back, the copies
 * waited for; once all is back, the host copy moves to K, kept for the next nap when keep
 * (else cn_light_let_go_unkept lets it go once the app's calls go on).
 * CUDA_SUCCESS, or the driver's answer with *at the span it stopped at: what is mapped stays, and
 * the next try copies it again. */
static CUresult put_back(bool keep, unsigned wait_ms, bool (*coming)(void), size_t *at)
{
	double until = cn_clock_ms() + wait_ms;
	struct timespec nap = { 0, 2000000 };
	CUresult r = CUDA_SUCCESS, done;
	size_t i;

	for (i = 0; r == CUDA_SUCCESS && i < L.n; i++) {
		if (L.where[i] == ON_HOST) {
			r = cn_owned_take(&L.span[i]);
			if (r == CUDA_ERROR_OUT_OF_MEMORY &&
			    (cn_clock_ms() < until || (coming && coming()))) {
				nanosleep(&nap, NULL);
				r = CUDA_SUCCESS;
				i--;
				continue;
			}
			if (r == CUDA_SUCCESS)
				L.where[i] = MAPPED;
		}
		if (r == CUDA_SUCCESS && L.where[i] == MAPPED)
			r = copy(i, false, false);
	}
	*at = r == CUDA_SUCCESS ? L.n : i - 1;
	done = streams_done();
	for (size_t k = 0; done == CUDA_SUCCESS && k < L.n; k++)
		if (L.where[k] == MAPPED && (r == CUDA_SUCCESS || k < *at))
			L.where[k] = ON_GPU;
	if (r == CUDA_SUCCESS)
		r = done;
	if (r == CUDA_SUCCESS) {
		struct cn_hostbuf b = as_buf();

		cn_hostbuf_keep(&b, keep);
		L.host = NULL;
		L.pinned = NULL;
		forget();
	}
	return r;
}

/* Between the agent thread, which issues the copies out, and the giver beside it, which gives
 * each piece back once its copy is done: the spans issued, whether either side failed, the
 * giver's first error and its times. Until the giver is joined, L.ev[i] and L.where[i] of a span
 * below issued are the giver's; the agent thread touches only those above. */
static struct {
	atomic_size_t issued;
	atomic_bool stop;
	CUresult r;
	double copy_ms, give_ms;
} G;

/* The giver: span by span, once its copy is issued, the copy waited for and the piece given back,
 * until every span is or either side fails. */
static void *giver(void *arg)
{
	struct timespec nap = { 0, 20000 };
	CUresult r = CUDA_SUCCESS;

	(void)arg;
	for (size_t i = 0; r == CUDA_SUCCESS && i < L.n; i++) {
		double t0, t1;

		while (atomic_load(&G.issued) <= i && !atomic_load(&G.stop))
			nanosleep(&nap, NULL);
		if (atomic_load(&G.stop))
			break;
		t0 = cn_clock_ms();
		r = copied(i);
		t1 = cn_clock_ms();
		G.copy_ms += t1 - t0;
		if (r == CUDA_SUCCESS)
			r = cn_owned_give(&L.span[i]);
		G.give_ms += cn_clock_ms() - t1;
		if (r == CUDA_SUCCESS)
			L.where[i] = ON_HOST;
	}
	if (r != CUDA_SUCCESS) {
		G.r = r;
		atomic_store(&G.stop, true);
	}
	set_ctx(NULL);
	return NULL;
}

/* Every span copied out and given back: this thread issues each copy as its chunks are ready
 * (threads: fault threads ready them), the giver gives each piece back as its copy ends, so the
 * copy engine never waits for a release, nor a release for the next issue (either may wait for
 * the driver while the fault threads pin). Without a thread for it, the giving follows the
 * copies. The steps' times in st. */
static CUresult copy_all_out(bool threads, struct cn_light_stats *st)
{
	CUresult r = CUDA_SUCCESS;
	pthread_t th;
	bool beside;

	atomic_store(&G.issued, 0);
	atomic_store(&G.stop, false);
	G.r = CUDA_SUCCESS;
	G.copy_ms = G.give_ms = 0;
	beside = pthread_create(&th, NULL, giver, NULL) == 0;
	for (size_t i = 0; r == CUDA_SUCCESS && i < L.n && !atomic_load(&G.stop); i++) {
		double c0 = cn_clock_ms();

		r = copy(i, true, threads);
		if (r == CUDA_SUCCESS)
			r = mark(i);
		st->issue_ms += cn_clock_ms() - c0;
		if (r == CUDA_SUCCESS)
			atomic_store(&G.issued, i + 1);
	}
	if (r != CUDA_SUCCESS)
		atomic_store(&G.stop, true);
	if (beside)
		pthread_join(th, NULL);
	else if (r == CUDA_SUCCESS)
		giver(NULL);
	st->copy_ms = G.copy_ms;
	st->give_ms = G.give_ms;
	return r != CUDA_SUCCESS ? r : G.r;
}

int cn_light_out(struct cn_light_stats *st, char *why, size_t len)
{
	pthread_t th[FAULTERS];
	unsigned n_th = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	const char *lack = missing();
	double t0 = cn_clock_ms();
	CUresult r;
	int kept;

	memset(st, 0, sizeof(*st));
	if (L.host) {
		snprintf(why, len, "its owned memory is on the host already");
		return -1;
	}
	if (lack) {
		snprintf(why, len, "the driver has no %s", lack);
		return -1;
	}
	kept = lay_out(why, len, &st->take_ms);
	if (kept < 0) {
		forget();
		return -1;
	}
	r = make_events();
	atomic_store(&next_fault, 0);
	atomic_store(&fault_go, false);
	while (r == CUDA_SUCCESS && unready() && n_th < FAULTERS &&
	       n_th + 1 < (unsigned)(cpus > 1 ? cpus : 2) && n_th < L.chunks &&
	       pthread_create(&th[n_th], NULL, readier, L.span[0].ctx) == 0)
		n_th++;
	atomic_store(&fault_go, true);
	st->lay_ms = cn_clock_ms() - t0;
	if (r == CUDA_SUCCESS)
		r = copy_all_out(n_th > 0, st);
	st->end_ms = cn_clock_ms();
	atomic_store(&next_fault, L.chunks); /* the fault threads stop at their next chunk */
	for (unsigned k = 0; k < n_th; k++)
		pthread_join(th[k], NULL);
	if (r == CUDA_SUCCESS)
		r = streams_done();
	if (r != CUDA_SUCCESS) {
		size_t at;

		name_error(r, "copying its memory to the host", why, len);
		streams_done();
		drop_events();
		if (put_back(false, 0, NULL, &at) != CUDA_SUCCESS)
			snprintf(why + strlen(why), len - strlen(why),
				 "; part of it stays on the host until its wake");
		else
			cn_hostbuf_let_go_unkept(CN_HOSTBUF_NOW);
		return -1;
	}
	st->bytes = L.total;
	st->kept = L.kept;
	st->spans = L.n;
	st->threads = n_th;
	st->reused = kept > 0;
	st->wait_ms = L.wait_ms;
	st->pin_ms = (double)atomic_load(&L.pin_us) / 1000;
	st->ms = cn_clock_ms() - t0;
	st->issue_ms -= L.wait_ms;
	st->end_ms = cn_clock_ms() - st->end_ms;
	return 0;
}

int cn_light_in(bool keep, unsigned wait_ms, bool (*coming)(void), struct cn_light_stats *st,
		char *why, size_t len)
{
	const char *lack = missing();
	double t0 = cn_clock_ms();
	unsigned long long bytes;
	size_t at, spans;
	CUresult r;

	memset(st, 0, sizeof(*st));
	if (!L.host)
		return 0;
	if (lack) {
		snprintf(why, len, "the driver has no %s", lack);
		return -1;
	}
	bytes = L.total;
	spans = L.n;
	r = put_back(keep, wait_ms, coming, &at);
	if (r == CUDA_ERROR_OUT_OF_MEMORY) {
		snprintf(why, len, "no room on GPU %d for its %zu MiB still on the host",
			 L.span[at].dev, (size_t)(cn_light_left(L.span[at].dev) >> 20));
		return 1;
	}
	if (r != CUDA_SUCCESS) {
		name_error(r, "copying its memory back to the GPU", why, len);
		return -1;
	}
	st->bytes = bytes;
	st->spans = spans;
	st->ms = cn_clock_ms() - t0;
	return 0;
}

bool cn_light_holding(void)
{
	return L.host != NULL;
}

unsigned long long cn_light_left(int dev)
{
	unsigned long long b = 0;

	for (size_t i = 0; i < L.n; i++)
		if (L.where[i] != ON_GPU && (dev < 0 || L.span[i].dev == dev))
			b += L.span[i].bytes;
	return b;
}

void cn_light_unpin(void)
{
	unpin_all();
	cn_hostbuf_let_go(CN_HOSTBUF_NOW);
}

void cn_light_after_fork(void)
{
	/* The parent's host copy is not the child's, never mapped here (MADV_DONTFORK): its record
	 * let go, nothing unmapped */
	drop(true);
	cn_hostbuf_after_fork();
	n_streams = 0;
}
