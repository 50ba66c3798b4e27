/* cudanap-hostpin: the ways to make fresh host memory ready for a light nap's copy out, each timed
 * against the pinned floor in the same run (docs/FILES.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cuda_abi.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define MIB	(1ull << 20)
#define PIECE	(64 * MIB) /* a copy's piece: the stream's unit of work */
#define MAX_TH	64
#define BOUNCES 4	    /* bounce buffers in flight */
#define BPIECE	(256 * MIB) /* each bounce buffer */

static struct {
	CUresult (*init)(unsigned);
	CUresult (*retain)(void **, int);
	CUresult (*set)(void *);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*memset)(CUdeviceptr, unsigned char, size_t);
	CUresult (*free)(CUdeviceptr);
	CUresult (*host_alloc)(void **, size_t, unsigned);
	CUresult (*host_free)(void *);
	CUresult (*reg)(void *, size_t, unsigned);
	CUresult (*unreg)(void *);
	CUresult (*stream)(void **, unsigned);
	CUresult (*sync)(void *);
	CUresult (*d2h)(void *, CUdeviceptr, size_t, void *);
	CUresult (*h2d)(CUdeviceptr, const void *, size_t, void *);
	CUresult (*ev_create)(void **, unsigned);
	CUresult (*ev_record)(void *, void *);
	CUresult (*ev_sync)(void *);
} cu;

static void *ctx, *st;
static CUdeviceptr dev;
static unsigned threads;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void check(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "cudanap-hostpin: %s: CUDA error %d\n", what, r);
		exit(1);
	}
}

static void load(void)
{
	const char *lib = getenv("CUDANAP_LIBCUDA");
	void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW);

	if (!h) {
		fprintf(stderr, "cudanap-hostpin: needs a GPU: %s\n", dlerror());
		exit(1);
	}
#define SYM(f, n) *(void **)&cu.f = dlsym(h, n)
	SYM(init, "cuInit");
	SYM(retain, "cuDevicePrimaryCtxRetain");
	SYM(set, "cuCtxSetCurrent");
	SYM(alloc, "cuMemAlloc_v2");
	SYM(memset, "cuMemsetD8_v2");
	SYM(free, "cuMemFree_v2");
	SYM(host_alloc, "cuMemHostAlloc");
	SYM(host_free, "cuMemFreeHost");
	SYM(reg, "cuMemHostRegister_v2");
	SYM(unreg, "cuMemHostUnregister");
	SYM(stream, "cuStreamCreate");
	SYM(sync, "cuStreamSynchronize");
	SYM(d2h, "cuMemcpyDtoHAsync_v2");
	SYM(h2d, "cuMemcpyHtoDAsync_v2");
	SYM(ev_create, "cuEventCreate");
	SYM(ev_record, "cuEventRecord");
	SYM(ev_sync, "cuEventSynchronize");
#undef SYM
	for (size_t i = 0; i < sizeof(cu) / sizeof(void *); i++)
		if (!((void **)&cu)[i]) {
			fprintf(stderr,
				"cudanap-hostpin: the driver lacks function %zu of the table\n", i);
			exit(1);
		}
}

static char *fresh(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("cudanap-hostpin: mmap");
		exit(1);
	}
	madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

/* ---- chunks readied by threads: faulted (fault), pinned (pin), in order of a shared counter ----
 */

struct ready {
	char *host;
	size_t bytes, chunk, n;
	bool fault, pin;
	atomic_size_t next;
	atomic_bool *done;
};

static void ready_one(struct ready *r, size_t c)
{
	char *p = r->host + c * r->chunk;
	size_t len = r->bytes - c * r->chunk < r->chunk ? r->bytes - c * r->chunk : r->chunk;

	if (r->fault && madvise(p, len, MADV_POPULATE_WRITE) != 0)
		for (size_t o = 0; o < len; o += 4096)
			p[o] = 0;
	if (r->pin)
		check(cu.reg(p, len, 1), "cuMemHostRegister");
	atomic_store(&r->done[c], true);
}

static void *readier(void *arg)
{
	struct ready *r = arg;
	size_t c;

	cu.set(ctx);
	while ((c = atomic_fetch_add(&r->next, 1)) < r->n)
		ready_one(r, c);
	return NULL;
}

static void ready_start(struct ready *r, pthread_t *th, unsigned n)
{
	r->n = (r->bytes + r->chunk - 1) / r->chunk;
	r->done = calloc(r->n, sizeof(*r->done));
	atomic_store(&r->next, 0);
	for (unsigned i = 0; i < n; i++)
		pthread_create(&th[i], NULL, readier, r);
}

static void ready_join(struct ready *r, pthread_t *th, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	free(r->done);
}

/* The GPU's bytes into host, PIECE by PIECE, each piece issued once its chunk is ready. */
static void copy_out_following(struct ready *r)
{
	struct timespec w = { 0, 20000 };

	for (size_t o = 0; o < r->bytes; o += PIECE) {
		size_t c = o / r->chunk, n = r->bytes - o < PIECE ? r->bytes - o : PIECE;

		while (r->done && !atomic_load(&r->done[c]))
			nanosleep(&w, NULL);
		check(cu.d2h(r->host + o, dev + o, n, st), "cuMemcpyDtoHAsync");
	}
	check(cu.sync(st), "cuStreamSynchronize");
}

static void unpin(char *host, size_t bytes, size_t chunk)
{
	for (size_t o = 0; o < bytes; o += chunk)
		cu.unreg(host + o);
}

/* ---- the ways ---- */

/* fault and pin by chunks of chunk bytes, th threads, the copies following: ms. */
static double way_chunks(size_t bytes, size_t chunk, unsigned th, bool fault)
{
	struct ready r = {
		.host = fresh(bytes), .bytes = bytes, .chunk = chunk, .fault = fault, .pin = true
	};
	pthread_t t[MAX_TH];
	double t0 = now_ms(), ms;

	ready_start(&r, t, th);
	copy_out_following(&r);
	ms = now_ms() - t0;
	ready_join(&r, t, th);
	unpin(r.host, bytes, chunk);
	munmap(r.host, bytes);
	return ms;
}

/* every page faulted by th threads, then pinned in one call, then copied: ms, and the steps. */
static double way_fault_then_pin(size_t bytes, unsigned th, double *f_ms, double *p_ms)
{
	struct ready r = {
		.host = fresh(bytes), .bytes = bytes, .chunk = 256 * MIB, .fault = true
	};
	pthread_t t[MAX_TH];
	double t0 = now_ms(), t1, t2, ms;

	ready_start(&r, t, th);
	ready_join(&r, t, th);
	t1 = now_ms();
	check(cu.reg(r.host, bytes, 1), "cuMemHostRegister (whole)");
	t2 = now_ms();
	r.done = NULL;
	copy_out_following(&r);
	ms = now_ms() - t0;
	*f_ms = t1 - t0;
	*p_ms = t2 - t1;
	cu.unreg(r.host);
	munmap(r.host, bytes);
	return ms;
}

/* the driver's own pinned allocation, then the copy: ms. */
static double way_host_alloc(size_t bytes, double *a_ms)
{
	struct ready r = { .bytes = bytes, .chunk = bytes };
	double t0 = now_ms(), ms;
	void *p;

	check(cu.host_alloc(&p, bytes, 1), "cuMemHostAlloc");
	*a_ms = now_ms() - t0;
	r.host = p;
	copy_out_following(&r);
	ms = now_ms() - t0;
	cu.host_free(p);
	return ms;
}

/* no pinning: BOUNCES pinned buffers of PIECE, the GPU copying into one while threads copy the
 * last out of another into fresh pages (which the copy faults). out: GPU to host. ms. */
struct bounce_job {
	char *dst;
	const char *src;
	size_t len;
};

static void *bounce_part(void *arg)
{
	struct bounce_job *j = arg;

	memcpy(j->dst, j->src, j->len);
	return NULL;
}

static void split_copy(char *dst, const char *src, size_t len, unsigned th)
{
	struct bounce_job j[MAX_TH];
	pthread_t t[MAX_TH];
	size_t per = (len / th + 4095) & ~4095ull;
	unsigned n = 0;

	for (size_t o = 0; o < len && n < th; o += per, n++) {
		j[n] = (struct bounce_job){ dst + o, src + o, len - o < per ? len - o : per };
		pthread_create(&t[n], NULL, bounce_part, &j[n]);
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static double way_bounce(size_t bytes, unsigned th, bool out, char *host)
{
	void *b[BOUNCES], *ev[BOUNCES];
	size_t at[BOUNCES];
	double t0;
	size_t pieces = (bytes + BPIECE - 1) / BPIECE;

	for (int i = 0; i < BOUNCES; i++) {
		check(cu.host_alloc(&b[i], BPIECE, 1), "cuMemHostAlloc (bounce)");
		check(cu.ev_create(&ev[i], 2), "cuEventCreate");
	}
	t0 = now_ms();
	for (size_t k = 0; k < pieces + BOUNCES; k++) {
		int s = (int)(k % BOUNCES);

		if (k >= BOUNCES) { /* the piece BOUNCES ago, done on the GPU: its host side */
			size_t o = at[s], n = bytes - o < BPIECE ? bytes - o : BPIECE;

			check(cu.ev_sync(ev[s]), "cuEventSynchronize");
			if (out)
				split_copy(host + o, b[s], n, th);
		}
		if (k < pieces) {
			size_t o = k * BPIECE, n = bytes - o < BPIECE ? bytes - o : BPIECE;

			at[s] = o;
			if (out)
				check(cu.d2h(b[s], dev + o, n, st), "cuMemcpyDtoHAsync (bounce)");
			else {
				split_copy(b[s], host + o, n, th);
				check(cu.h2d(dev + o, b[s], n, st), "cuMemcpyHtoDAsync (bounce)");
			}
			check(cu.ev_record(ev[s], st), "cuEventRecord");
		}
	}
	check(cu.sync(st), "cuStreamSynchronize");
	t0 = now_ms() - t0;
	for (int i = 0; i < BOUNCES; i++)
		cu.host_free(b[i]);
	return t0;
}

static void row(const char *way, size_t bytes, double ms, double floor_ms, const char *steps)
{
	printf("| %-44s | %6.1f | %7.1f | %5.2fx | %s |\n", way, (double)bytes / (1ull << 30), ms,
	       ms / floor_ms, steps);
}

/* "floor out MS in MS": bytes between GPU 0 and memory pinned before, each way, best of three. */
static int floor_only(size_t bytes)
{
	struct ready r = { .bytes = bytes, .chunk = bytes };
	double out = 1e30, in = 1e30, t;
	void *pinned;

	check(cu.alloc(&dev, bytes), "cuMemAlloc");
	check(cu.host_alloc(&pinned, bytes, 1), "cuMemHostAlloc (floor)");
	r.host = pinned;
	for (int k = 0; k < 3; k++) {
		t = now_ms();
		copy_out_following(&r);
		t = now_ms() - t;
		out = t < out ? t : out;
		t = now_ms();
		for (size_t o = 0; o < bytes; o += PIECE)
			check(cu.h2d(dev + o, (char *)pinned + o, bytes - o < PIECE ? bytes - o : PIECE, st),
			      "cuMemcpyHtoDAsync");
		check(cu.sync(st), "cuStreamSynchronize");
		t = now_ms() - t;
		in = t < in ? t : in;
	}
	printf("floor out %.1f in %.1f\n", out, in);
	cu.host_free(pinned);
	check(cu.free(dev), "cuMemFree");
	return 0;
}

/* "--both GiB": what the bus gives each way alone, both ways at once (two streams, two device
 * buffers, two pinned buffers), and out while threads fault in and pin other fresh memory (a copy
 * made ahead beside a nap): the question whether a nap out and a wake in beside it share the bus. */
static int both_ways(size_t bytes)
{
	CUdeviceptr d_out, d_in;
	void *h_out, *h_in, *st2, *ev_o, *ev_i;
	double out = 0, in = 0, t, t_o = 0, t_i = 0, both = 0, beside = 0;
	pthread_t th[MAX_TH];

	check(cu.alloc(&d_out, bytes), "cuMemAlloc");
	check(cu.alloc(&d_in, bytes), "cuMemAlloc");
	check(cu.host_alloc(&h_out, bytes, 1), "cuMemHostAlloc");
	check(cu.host_alloc(&h_in, bytes, 1), "cuMemHostAlloc");
	check(cu.stream(&st2, 1), "cuStreamCreate");
	check(cu.ev_create(&ev_o, 0), "cuEventCreate");
	check(cu.ev_create(&ev_i, 0), "cuEventCreate");
	for (int k = 0; k < 3; k++) {
		t = now_ms();
		check(cu.d2h(h_out, d_out, bytes, st), "d2h");
		check(cu.sync(st), "sync");
		t = now_ms() - t;
		out = k && out < t ? out : t;
		t = now_ms();
		check(cu.h2d(d_in, h_in, bytes, st2), "h2d");
		check(cu.sync(st2), "sync");
		t = now_ms() - t;
		in = k && in < t ? in : t;
		t = now_ms();
		for (size_t o = 0; o < bytes; o += PIECE) {
			size_t n = bytes - o < PIECE ? bytes - o : PIECE;

			check(cu.d2h((char *)h_out + o, d_out + o, n, st), "d2h");
			check(cu.h2d(d_in + o, (char *)h_in + o, n, st2), "h2d");
		}
		check(cu.ev_record(ev_o, st), "cuEventRecord");
		check(cu.ev_record(ev_i, st2), "cuEventRecord");
		check(cu.ev_sync(ev_o), "cuEventSynchronize");
		double a = now_ms() - t;
		check(cu.ev_sync(ev_i), "cuEventSynchronize");
		double b = now_ms() - t;
		if (!k || (a > b ? a : b) < both) {
			both = a > b ? a : b;
			t_o = a;
			t_i = b;
		}
	}
	{
		struct ready q = { .host = fresh(bytes), .bytes = bytes, .chunk = 256 * MIB,
				   .fault = true, .pin = true };

		ready_start(&q, th, threads);
		t = now_ms();
		check(cu.d2h(h_out, d_out, bytes, st), "d2h");
		check(cu.sync(st), "sync");
		beside = now_ms() - t;
		ready_join(&q, th, threads);
		unpin(q.host, bytes, q.chunk);
		munmap(q.host, bytes);
	}
	printf("%.0f GiB: out alone %.1f ms (%.1f GB/s), in alone %.1f ms (%.1f GB/s); both at "
	       "once %.1f ms (out done at %.1f, in at %.1f: %.1f GB/s together, %.2fx of one way "
	       "after the other); out beside %u threads pinning fresh memory %.1f ms (%.2fx alone)\n",
	       (double)bytes / (1ull << 30), out, bytes / out / 1e6, in, bytes / in / 1e6, both, t_o,
	       t_i, 2.0 * bytes / both / 1e6, both / (out + in), threads, beside, beside / out);
	cu.host_free(h_out);
	cu.host_free(h_in);
	cu.free(d_out);
	cu.free(d_in);
	return 0;
}

/* "--let-go GiB": what letting go of a pinned copy costs an app's calls beside it. An app thread
 * loops on a driver call (64 KiB from pageable memory to the GPU, then a stream sync) and a host
 * step (4 MiB mapped, written, unmapped: the memory map's lock) while the main thread lets go of
 * GiB pinned by 256 MiB chunks: every chunk unpinned and then the whole unmapped (hostbuf.c's
 * way), each chunk unpinned and unmapped in turn, the same with a 1 ms pause after each. Each
 * phase's app steps: how many, their mean and their longest, against a phase with nothing beside. */
enum { LG_IDLE = -1, LG_PHASES = 5 };
static struct {
	atomic_int phase, in; /* the phase now, the phase the app's step began in */
	atomic_bool stop;
	struct lg_stat {
		unsigned n;
		double drv_sum, drv_max, host_sum, host_max;
	} st[LG_PHASES];
} LG;

static void *lg_app(void *arg)
{
	static char src[64 << 10];
	CUdeviceptr d = *(CUdeviceptr *)arg;
	void *s;

	cu.set(ctx);
	check(cu.stream(&s, 1), "cuStreamCreate");
	while (!atomic_load(&LG.stop)) {
		int p = atomic_load(&LG.phase);
		double t0, t1, t2;
		char *m;

		atomic_store(&LG.in, p);
		t0 = now_ms();
		check(cu.h2d(d, src, sizeof(src), s), "cuMemcpyHtoDAsync");
		check(cu.sync(s), "cuStreamSynchronize");
		t1 = now_ms();
		m = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			for (size_t o = 0; o < 4 * MIB; o += 4096)
				m[o] = 1;
			munmap(m, 4 * MIB);
		}
		t2 = now_ms();
		if (p >= 0) {
			struct lg_stat *x = &LG.st[p];

			x->n++;
			x->drv_sum += t1 - t0;
			x->host_sum += t2 - t1;
			x->drv_max = t1 - t0 > x->drv_max ? t1 - t0 : x->drv_max;
			x->host_max = t2 - t1 > x->host_max ? t2 - t1 : x->host_max;
		}
		atomic_store(&LG.in, LG_IDLE);
	}
	return NULL;
}

static void lg_phase(int p)
{
	struct timespec w = { 0, 100000 };

	atomic_store(&LG.phase, p);
	if (p == LG_IDLE)
		while (atomic_load(&LG.in) != LG_IDLE)
			nanosleep(&w, NULL);
}

/* A fresh copy of bytes, faulted and pinned by 256 MiB chunks (light.c's way), not timed. */
static char *lg_copy(size_t bytes)
{
	struct ready r = { .host = fresh(bytes), .bytes = bytes, .chunk = 256 * MIB,
			   .fault = true, .pin = true };
	pthread_t t[MAX_TH];

	ready_start(&r, t, threads);
	ready_join(&r, t, threads);
	return r.host;
}

static void lg_row(const char *what, int p, double ms)
{
	struct lg_stat *x = &LG.st[p], *b = &LG.st[0];
	double rate = x->n / (ms > 0 ? ms : 1), brate = b->n / 300.0;

	printf("| %-40s | %7.1f | %5u | %5.2fx | %6.3f | %6.1f | %6.3f | %6.1f |\n", what, ms, x->n,
	       brate > 0 ? rate / brate : 0, x->n ? x->drv_sum / x->n : 0, x->drv_max,
	       x->n ? x->host_sum / x->n : 0, x->host_max);
}

static int let_go(size_t bytes)
{
	CUdeviceptr d;
	pthread_t app;
	double t, ms[LG_PHASES] = { 300 };
	const size_t chunk = 256 * MIB;
	struct timespec pause = { 0, 1000000 }, base = { 0, 300000000 };
	char *h;

	check(cu.alloc(&d, 64 << 10), "cuMemAlloc");
	atomic_store(&LG.phase, LG_IDLE);
	atomic_store(&LG.in, LG_IDLE);
	pthread_create(&app, NULL, lg_app, &d);
	h = lg_copy(bytes);
	lg_phase(0);
	nanosleep(&base, NULL);
	lg_phase(1);
	t = now_ms();
	unpin(h, bytes, chunk);
	ms[1] = now_ms() - t;
	lg_phase(2);
	t = now_ms();
	munmap(h, bytes);
	ms[2] = now_ms() - t;
	lg_phase(LG_IDLE);
	for (int p = 3; p < 5; p++) {
		h = lg_copy(bytes);
		lg_phase(p);
		t = now_ms();
		for (size_t o = 0; o < bytes; o += chunk) {
			size_t n = bytes - o < chunk ? bytes - o : chunk;

			cu.unreg(h + o);
			munmap(h + o, n);
			if (p == 4)
				nanosleep(&pause, NULL);
		}
		ms[p] = now_ms() - t;
		lg_phase(LG_IDLE);
	}
	atomic_store(&LG.stop, true);
	pthread_join(app, NULL);
	printf("%.0f GiB pinned by 256 MiB chunks, let go beside an app thread (driver call: 64 KiB "
	       "pageable to the GPU + sync; host step: 4 MiB mapped, written, unmapped)\n\n"
	       "| beside the app | ms | app steps | x rate alone | call mean ms | call max ms | host "
	       "mean ms | host max ms |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
	       (double)bytes / (1ull << 30));
	lg_row("nothing (300 ms)", 0, ms[0]);
	lg_row("unpin every chunk (hostbuf.c's way)", 1, ms[1]);
	lg_row("then unmap the whole (hostbuf.c's way)", 2, ms[2]);
	lg_row("each chunk unpinned and unmapped", 3, ms[3]);
	lg_row("the same, 1 ms pause after each", 4, ms[4]);
	cu.free(d);
	return 0;
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char thp[64] = "?", steps[128];
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	double floor_out, floor_in, a, b, ms;
	void *pinned;

	threads = cpus > 1 ? (unsigned)(cpus - 1 > 8 ? 8 : cpus - 1) : 1;
	if (f && fgets(thp, sizeof(thp), f))
		thp[strcspn(thp, "\n")] = '\0';
	if (f)
		fclose(f);
	load();
	check(cu.init(0), "cuInit");
	check(cu.retain(&ctx, 0), "cuDevicePrimaryCtxRetain");
	check(cu.set(ctx), "cuCtxSetCurrent");
	check(cu.stream(&st, 1), "cuStreamCreate");
	if (argc > 2 && strcmp(argv[1], "--floor") == 0) /* the floors alone, for bench-light */
		return floor_only((size_t)(atof(argv[2]) * 1024) * MIB);
	if (argc > 2 && strcmp(argv[1], "--both") == 0)
		return both_ways((size_t)(atof(argv[2]) * 1024) * MIB);
	if (argc > 2 && strcmp(argv[1], "--let-go") == 0)
		return let_go((size_t)(atof(argv[2]) * 1024) * MIB);
	printf("cudanap-hostpin: %ld CPUs, %u threads (light.c's count), THP %s\n", cpus, threads,
	       thp);
	for (int i = 1; i < argc; i++) {
		size_t bytes = (size_t)(atof(argv[i]) * 1024) * MIB;
		struct ready r = { .bytes = bytes, .chunk = bytes };
		pthread_t t[MAX_TH];
		char *host;

		check(cu.alloc(&dev, bytes), "cuMemAlloc");
		check(cu.memset(dev, 0x5a, bytes), "cuMemsetD8");
		/* the host floors: the first fault of this much, a second, the pin of faulted
		 * memory */
		for (int k = 0; k < 2; k++) {
			struct ready q = { .host = fresh(bytes),
					   .bytes = bytes,
					   .chunk = 256 * MIB,
					   .fault = true };

			a = now_ms();
			ready_start(&q, t, threads);
			ready_join(&q, t, threads);
			a = now_ms() - a;
			if (k == 1) {
				b = now_ms();
				check(cu.reg(q.host, bytes, 1), "cuMemHostRegister");
				b = now_ms() - b;
				cu.unreg(q.host);
			}
			printf("%.0f GiB: fault %s %.1f ms (%.1f GB/s, %u threads)%s",
			       atof(argv[i]), k ? "again" : "first", a, bytes / a / 1e6, threads,
			       k ? "" : "; ");
			if (k)
				printf("; pin of faulted memory in one call %.1f ms (%.1f GB/s)\n",
				       b, bytes / b / 1e6);
			munmap(q.host, bytes);
		}
		check(cu.host_alloc(&pinned, bytes, 1), "cuMemHostAlloc (floor)");
		r.host = pinned;
		copy_out_following(&r); /* a warm-up */
		a = now_ms();
		copy_out_following(&r);
		floor_out = now_ms() - a;
		a = now_ms();
		for (size_t o = 0; o < bytes; o += PIECE)
			check(cu.h2d(dev + o, (char *)pinned + o,
				     bytes - o < PIECE ? bytes - o : PIECE, st),
			      "h2d");
		check(cu.sync(st), "sync");
		floor_in = now_ms() - a;
		printf("\n| way (%.0f GiB, out: GPU to host) | GiB | ms | x floor | steps |\n| --- "
		       "| --- | --- | --- | --- |\n",
		       atof(argv[i]));
		row("floor: into memory pinned before", bytes, floor_out, floor_out, "");
		row("fault+pin 256 MiB chunks, copies follow", bytes,
		    way_chunks(bytes, 256 * MIB, threads, true), floor_out, "light.c's way");
		row("fault+pin 1 GiB chunks, copies follow", bytes,
		    way_chunks(bytes, 1024 * MIB, threads, true), floor_out, "");
		row("pin (faulting) 256 MiB chunks, copies follow", bytes,
		    way_chunks(bytes, 256 * MIB, threads, false), floor_out, "");
		if ((unsigned)cpus - 1 > threads)
			row("fault+pin 256 MiB chunks, all CPUs", bytes,
			    way_chunks(bytes, 256 * MIB,
				       (unsigned)(cpus - 1 > MAX_TH ? MAX_TH : cpus - 1), true),
			    floor_out, "");
		ms = way_fault_then_pin(bytes, threads, &a, &b);
		snprintf(steps, sizeof(steps), "fault %.0f, pin %.0f, copy %.0f", a, b, ms - a - b);
		row("fault all, pin in one call, copy", bytes, ms, floor_out, steps);
		ms = way_host_alloc(bytes, &a);
		snprintf(steps, sizeof(steps), "alloc %.0f, copy %.0f", a, ms - a);
		row("cuMemHostAlloc, copy", bytes, ms, floor_out, steps);
		host = fresh(bytes);
		row("bounce: no pinning, fresh pages", bytes,
		    way_bounce(bytes, threads, true, host), floor_out, "");
		row("bounce again: no pinning, faulted pages", bytes,
		    way_bounce(bytes, threads, true, host), floor_out, "");
		printf("| %-44s | %6.0f | %7.1f | %5.2fx | %s |\n",
		       "in, floor: from memory pinned before", atof(argv[i]), floor_in, 1.0, "");
		ms = way_bounce(bytes, threads, false, host);
		printf("| %-44s | %6.0f | %7.1f | %5.2fx | %s |\n\n",
		       "in, bounce: from faulted pages", atof(argv[i]), ms, ms / floor_in, "");
		munmap(host, bytes);
		cu.host_free(pinned);
		check(cu.free(dev), "cuMemFree");
	}
	return 0;
}
