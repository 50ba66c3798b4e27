/* paths: the test target's driver calls, by each path a program takes to libcuda (the commands
 * target.c hands here):
 *   fn PATH NAME      where the function PATH gives for NAME lies: "fn OBJECT SYMBOL" (dladdr;
 *                     "?" where no symbol starts there), or "fn none"
 *   call PATH NAME    one call with the arguments the fake driver checks (fakeapi.c): "call RC"
 *   launch PATH MS    a "kernel" of MS ms: "launch RC"
 *   poll PATH MS      a thread calling cuStreamQuery by PATH every MS ms, as XLA's poller does
 *   polled            "polled CALLS LONGEST_MS": the calls so far and the longest one's time
 *   xlapoll PATH MS   a thread making a context current, querying a stream and asking whether
 *                     it captures, every MS ms, as XLA's poller does in an idle JAX process
 *   xlapolled         "xlapolled ROUNDS FAILED LONGEST_MS"
 *   bgsync PATH       a thread inside cuStreamSynchronize by PATH until the kernel ends
 *   synced            "synced running", or "synced RC MS" once it returned
 *   storm N PATH MS   N threads calling cuStreamQuery by PATH without pause for MS ms
 *   stormed           "stormed running", or "stormed CALLS FAILED" once all are done
 *   busy PATH MS      a thread launching 1 ms "kernels" by PATH without pause for MS ms, as
 *                     an app's cell does
 *   busied            "busied running", or "busied CALLS FAILED" once it is done
 *   forkpoll PATH F   a child forked now calls cuStreamQuery by PATH every 5 ms for 30 s,
 *                     writing its count of successful calls to F: "forkpoll PID"
 *   nexter            with nexter.c preloaded: "nexter OBJECT OBJECT SYMBOL RC PPID": where its
 *                     next getppid lies, where the driver function its constructor took lies,
 *                     that function's answer, and getppid()
 *   peer PATH on|off A B   GPU A's primary context current, peer access to GPU B's turned on or
 *                     off: "peer RC"
 *   peer PATH can A B whether GPU A can access GPU B's memory: "peer RC CAN"
 *   peer PATH on|off|can all N   the same for every ordered pair of GPUs 0..N-1 (N (N-1)
 *                     directions), tallied: "peer all RC:COUNT ..." (for can, CAN:COUNT), each
 *                     answer once, in the order first met
 *   alloc PATH MIB    cuMemAlloc of MIB MiB: "alloc RC"; free PATH frees it: "free RC"
 *   slot K            the allocation alloc, free and vmm's A name from now on, and the range vmm
 *                     makes and names V, are slot K's (0-15; 0 at the start): one process holding
 *                     an allocation and a range per GPU: "slot K"
 * PATH: export (the name the program links), dlsym (on libfakecuda's handle), default (dlsym on
 * RTLD_DEFAULT), gpa (cuGetProcAddress, version 11080), gpa2 (cuGetProcAddress_v2, 12000), ptds
 * (the same with the per-thread default stream), v13 (version 13000), raw (bare: past cudanap). */
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

typedef CUresult (*query_fn)(CUstream);
typedef CUresult (*gpa_fn)(const char *, void **, int, uint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, uint64_t, int *);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *fake_handle(void)
{
	Dl_info info;

	if (!dladdr((void *)fake_register, &info) || !info.dli_fname)
		return NULL;
	return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

static void *exported(const char *name)
{
	static const struct {
		const char *name;
		void *fn;
	} linked[] = {
		{ "cuStreamQuery", (void *)cuStreamQuery },
		{ "cuEventQuery", (void *)cuEventQuery },
		{ "cuStreamSynchronize", (void *)cuStreamSynchronize },
		{ "cuLaunchKernel", (void *)cuLaunchKernel },
		{ "cuMemAlloc", (void *)cuMemAlloc_v2 },
		{ "cuMemAllocManaged", (void *)cuMemAllocManaged },
		{ "cuMemFree", (void *)cuMemFree_v2 },
		{ "cuCtxSetCurrent", (void *)cuCtxSetCurrent },
		{ "cuCtxGetCurrent", (void *)cuCtxGetCurrent },
		{ "cuStreamIsCapturing", (void *)cuStreamIsCapturing },
		{ "cuStreamBeginCapture", (void *)cuStreamBeginCapture_v2 },
		{ "cuStreamEndCapture", (void *)cuStreamEndCapture },
		{ "cuTexRefSetMipmapLevelBias", (void *)cuTexRefSetMipmapLevelBias },
		{ "cuDriverGetVersion", (void *)cuDriverGetVersion },
		{ "cuGetExportTable", (void *)cuGetExportTable },
		{ "cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain },
		{ "cuDevicePrimaryCtxReset", (void *)cuDevicePrimaryCtxReset_v2 },
		{ "cuDeviceCanAccessPeer", (void *)cuDeviceCanAccessPeer },
		{ "cuCtxEnablePeerAccess", (void *)cuCtxEnablePeerAccess },
		{ "cuCtxDisablePeerAccess", (void *)cuCtxDisablePeerAccess },
	};

	for (size_t i = 0; i < sizeof(linked) / sizeof(linked[0]); i++)
		if (strcmp(name, linked[i].name) == 0)
			return linked[i].fn;
	return NULL;
}

static void *get(const char *path, const char *name)
{
	void *h = fake_handle(), *f = NULL;
	int st, version = strcmp(path, "v13") == 0 ? 13000 : 12000;

	if (strcmp(path, "export") == 0)
		f = exported(name);
	else if (strcmp(path, "dlsym") == 0)
		f = h ? dlsym(h, name) : NULL;
	else if (strcmp(path, "default") == 0)
		f = dlsym(RTLD_DEFAULT, name);
	else if (strcmp(path, "raw") == 0)
		f = fake_raw(name);
	else if (strcmp(path, "gpa") == 0) {
		gpa_fn g = h ? (gpa_fn)dlsym(h, "cuGetProcAddress") : NULL;

		if (!g || g(name, &f, 11080, 0) != CUDA_SUCCESS)
			f = NULL;
	} else {
		gpa2_fn g = h ? (gpa2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;

		if (!g || g(name, &f, version, strcmp(path, "ptds") == 0 ? 2 : 0, &st) != 0)
			f = NULL;
	}
	if (h)
		dlclose(h);
	return f;
}

static CUdeviceptr managed; /* the last managed allocation, which cuMemFree frees */
/* The last of the alloc command's, one per slot */
static CUdeviceptr allocated[16];
static unsigned slot;

CUdeviceptr *paths_allocated(void);
CUdeviceptr *paths_allocated(void)
{
	return &allocated[slot];
}

unsigned paths_slot(void);
unsigned paths_slot(void)
{
	return slot;
}

bool vmm_command(const char *line); /* vmmcmds.c */
#define CTX 0x1234 /* the context cuCtxSetCurrent makes current, and cuCtxGetCurrent expects */

/* One call of name with the arguments fakeapi.c checks. */
static int call(void *f, const char *name, unsigned ms)
{
	if (strcmp(name, "cuCtxSetCurrent") == 0)
		return ((CUresult(*)(void *))f)((void *)CTX);
	if (strcmp(name, "cuCtxGetCurrent") == 0) {
		void *c = NULL;
		int rc = ((CUresult(*)(void **))f)(&c);

		return rc ? rc : c == (void *)CTX ? 0 : -1;
	}
	if (strcmp(name, "cuStreamIsCapturing") == 0) {
		int st = -1, rc = ((CUresult(*)(CUstream, int *))f)(NULL, &st);

		return rc ? rc : st; /* 0: not capturing */
	}
	if (strcmp(name, "cuStreamBeginCapture") == 0)
		return ((CUresult(*)(CUstream, int))f)(NULL, 0);
	if (strcmp(name, "cuStreamEndCapture") == 0)
		return ((CUresult(*)(CUstream, void **))f)(NULL, NULL);
	if (strcmp(name, "cuMemAllocManaged") == 0)
		return ((CUresult(*)(CUdeviceptr *, size_t, unsigned))f)(&managed, 1 << 20, 1);
	if (strcmp(name, "cuMemFree") == 0)
		return ((CUresult(*)(CUdeviceptr))f)(managed);
	if (strcmp(name, "cuLaunchKernel") == 0)
		return ((CUresult(*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
				     unsigned, unsigned, CUstream, void **, void **))f)(
			NULL, ms, 2, 3, 4, 5, 6, 7, (void *)8, (void **)9, (void **)10);
	if (strcmp(name, "cuTexRefSetMipmapLevelBias") == 0)
		return ((CUresult(*)(void *, float))f)(NULL, 0.75f);
	if (strcmp(name, "cuDevicePrimaryCtxRetain") == 0) {
		void *ctx = NULL;

		return ((CUresult(*)(void **, int))f)(&ctx, 0);
	}
	if (strcmp(name, "cuDevicePrimaryCtxReset") == 0) /* GPU 0's */
		return ((CUresult(*)(int))f)(0);
	if (strcmp(name, "cuMemAlloc") == 0) {
		CUdeviceptr p = 0;
		int rc = ((CUresult(*)(CUdeviceptr *, size_t))f)(&p, 1 << 20);

		return rc ? rc : p ? 0 : -1;
	}
	if (strcmp(name, "cuFakeNext") == 0) {
		int out = 0, rc = ((CUresult(*)(int *))f)(&out);

		return rc ? rc : out == 42 ? 0 : -1;
	}
	if (strcmp(name, "cuDriverGetVersion") == 0) {
		int v = 0, rc = ((CUresult(*)(int *))f)(&v);

		return rc ? rc : v == 13000 ? 0 : -1;
	}
	if (strcmp(name, "cuGetExportTable") == 0) {
		const void *t = NULL;
		CUuuid id = { { 1 } };

		return ((CUresult(*)(const void **, const CUuuid *))f)(&t, &id);
	}
	return ((query_fn)f)(NULL);
}

static struct {
	query_fn f;
	unsigned ms;
	atomic_ulong calls;
	_Atomic double longest;
} poller;

static void *poll_loop(void *arg)
{
	(void)arg;
	for (;;) {
		double t0 = now_ms(), dt;

		poller.f(NULL);
		dt = now_ms() - t0;
		atomic_fetch_add(&poller.calls, 1);
		if (dt > atomic_load(&poller.longest))
			atomic_store(&poller.longest, dt);
		usleep(poller.ms * 1000);
	}
	return NULL;
}

static struct {
	query_fn f;
	atomic_bool done;
	int rc;
	double ms;
} syncer;

/* XLA's poller, as measured idle on an H100: the context made current, a stream queried, and
 * asked whether it captures, over and over. */
static struct {
	void *set, *query, *capturing;
	unsigned ms;
	atomic_ulong calls, failed;
	_Atomic double longest;
} xla;

static void *xla_loop(void *arg)
{
	(void)arg;
	for (;;) {
		double t0 = now_ms(), dt;
		int bad = call(xla.set, "cuCtxSetCurrent", 0) != 0;

		bad |= call(xla.query, "cuStreamQuery", 0) != 0;
		bad |= call(xla.capturing, "cuStreamIsCapturing", 0) != 0;
		dt = now_ms() - t0;
		atomic_fetch_add(&xla.calls, 1);
		if (bad)
			atomic_fetch_add(&xla.failed, 1);
		if (dt > atomic_load(&xla.longest))
			atomic_store(&xla.longest, dt);
		usleep(xla.ms * 1000);
	}
	return NULL;
}

static void *sync_once(void *arg)
{
	double t0 = now_ms();

	(void)arg;
	syncer.rc = syncer.f(NULL);
	syncer.ms = now_ms() - t0;
	atomic_store(&syncer.done, true);
	return NULL;
}

static struct {
	query_fn f;
	double until;
	atomic_ulong calls, failed;
	atomic_int running;
} storm;

static void *storm_loop(void *arg)
{
	(void)arg;
	while (now_ms() < storm.until) {
		if (storm.f(NULL) != CUDA_SUCCESS)
			atomic_fetch_add(&storm.failed, 1);
		atomic_fetch_add(&storm.calls, 1);
	}
	atomic_fetch_sub(&storm.running, 1);
	return NULL;
}

static struct {
	void *f;
	double until;
	atomic_ulong calls, failed;
	atomic_bool running;
} busy;

static void *busy_loop(void *arg)
{
	(void)arg;
	while (now_ms() < busy.until) {
		if (call(busy.f, "cuLaunchKernel", 1) != CUDA_SUCCESS)
			atomic_fetch_add(&busy.failed, 1);
		atomic_fetch_add(&busy.calls, 1);
	}
	atomic_store(&busy.running, false);
	return NULL;
}

static int start(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL) != 0)
		return -1;
	pthread_detach(t);
	return 0;
}

/* One direction by PATH's functions: GPU a's primary context made current, then peer access to GPU
 * b's turned on or off, or asked whether a can access b (*can). */
struct peer_fns {
	CUresult (*set)(void *);
	CUresult (*retain)(void **, int);
	CUresult (*can)(int *, int, int);
	CUresult (*on)(void *, unsigned);
	CUresult (*off)(void *);
};

static int one_peer(const struct peer_fns *f, const char *what, int a, int b, int *can)
{
	void *ca = NULL, *cb = NULL;
	int rc;

	if (strcmp(what, "can") == 0)
		return f->can ? f->can(can, a, b) : -2;
	if (!f->set || !f->retain || !f->on || !f->off)
		return -2;
	rc = f->retain(&ca, a);
	if (!rc)
		rc = f->retain(&cb, b);
	if (!rc)
		rc = f->set(ca);
	if (!rc)
		rc = strcmp(what, "on") == 0 ? f->on(cb, 0) : f->off(cb);
	return rc;
}

/* "peer PATH WHAT all N": every ordered pair of GPUs 0..N-1, the answers tallied. */
static void all_peers(const struct peer_fns *f, const char *what, int n)
{
	int answer[16], count[16], kinds = 0;

	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++) {
			int can = -1, rc, k;

			if (a == b)
				continue;
			rc = one_peer(f, what, a, b, &can);
			if (strcmp(what, "can") == 0 && rc == 0)
				rc = can;
			for (k = 0; k < kinds && answer[k] != rc; k++)
				;
			if (k == kinds && kinds == 16)
				continue; /* more kinds than a line shows: n is at most 16 */
			if (k == kinds) {
				answer[kinds] = rc;
				count[kinds++] = 0;
			}
			count[k]++;
		}
	printf("peer all");
	for (int k = 0; k < kinds; k++)
		printf(" %d:%d", answer[k], count[k]);
	printf("\n");
}

/* "peer PATH on|off A B": GPU A's primary context made current, then peer access to GPU B's
 * turned on or off, each call by PATH: "peer RC"; "peer PATH can A B": "peer RC CAN"; with "all N"
 * for A and B, every ordered pair of N GPUs. */
static void peer(const char *path, const char *what, const char *args)
{
	struct peer_fns f = { get(path, "cuCtxSetCurrent"), get(path, "cuDevicePrimaryCtxRetain"),
			      get(path, "cuDeviceCanAccessPeer"),
			      get(path, "cuCtxEnablePeerAccess"),
			      get(path, "cuCtxDisablePeerAccess") };
	int a, b, can = -1, rc;

	if (sscanf(args, "all %d", &a) == 1 && a > 0 && a <= 16) {
		all_peers(&f, what, a);
		return;
	}
	if (sscanf(args, "%d %d", &a, &b) != 2) {
		printf("peer -2\n");
		return;
	}
	rc = one_peer(&f, what, a, b, &can);
	if (strcmp(what, "can") == 0)
		printf("peer %d %d\n", rc, can);
	else
		printf("peer %d\n", rc);
}

/* "forkpoll PATH FILE": a child that polls cuStreamQuery by PATH for 30 s, writing how many
 * calls succeeded to FILE as it goes. */
static void forkpoll(const char *path, const char *name)
{
	query_fn q = (query_fn)get(path, "cuStreamQuery");
	pid_t c = q ? fork() : -1;

	if (c == 0) {
		char tmp[300];
		unsigned long good = 0;

		snprintf(tmp, sizeof(tmp), "%s.tmp", name);
		for (double end = now_ms() + 30000; now_ms() < end;) {
			FILE *out = fopen(tmp, "w");

			good += q(NULL) == CUDA_SUCCESS;
			if (out) {
				fprintf(out, "%lu\n", good);
				fclose(out);
				rename(tmp, name);
			}
			usleep(5000);
		}
		_exit(0);
	}
	printf("forkpoll %d\n", (int)c);
}

/* "nexter": what nexter.c found by dlsym in its constructor, before the preload's: the next
 * getppid and a driver function, and that function's answer. */
static void nexter(void)
{
	void *(*next)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "nexter_next");
	void *(*early)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "nexter_early");
	Dl_info a, b;

	if (!next || !early || !dladdr(next(), &a) || !dladdr(early(), &b))
		printf("nexter none\n");
	else
		printf("nexter %s %s %s %d %d\n", strrchr(a.dli_fname, '/') + 1,
		       strrchr(b.dli_fname, '/') + 1, b.dli_sname ? b.dli_sname : "?",
		       ((query_fn)early())(NULL), (int)getppid());
}

/* One call by a path, answered at once: false when line is none of these. */
static bool call_command(const char *line)
{
	char path[16], name[256];
	unsigned ms = 0, n = 0;
	void *f;

	if (sscanf(line, "alloc %15s %u", path, &n) == 2) {
		CUresult (*alloc)(CUdeviceptr *, size_t) = get(path, "cuMemAlloc");

		printf("alloc %d\n", alloc ? alloc(paths_allocated(), (size_t)n << 20) : -2);
	} else if (sscanf(line, "free %15s", path) == 1) {
		CUresult (*release)(CUdeviceptr) = get(path, "cuMemFree");

		printf("free %d\n", release ? release(*paths_allocated()) : -2);
	} else if (sscanf(line, "slot %u", &n) == 1 && n < 16) {
		slot = n;
		printf("slot %u\n", n);
	} else if (sscanf(line, "fn %15s %255s", path, name) == 2) {
		Dl_info info;

		f = get(path, name);
		if (!f || !dladdr(f, &info) || !info.dli_fname)
			printf("fn none\n");
		else
			printf("fn %s %s\n", strrchr(info.dli_fname, '/') + 1,
			       info.dli_saddr == f && info.dli_sname ? info.dli_sname : "?");
	} else if (sscanf(line, "call %15s %255s", path, name) == 2) {
		f = get(path, name);
		printf("call %d\n", f ? call(f, name, 0) : -2);
	} else if (sscanf(line, "launch %15s %u", path, &ms) == 2) {
		f = get(path, "cuLaunchKernel");
		printf("launch %d\n", f ? call(f, "cuLaunchKernel", ms) : -2);
	} else {
		return false;
	}
	return true;
}

/* Threads that call by a path while the test acts ("poll", "xlapoll", "bgsync", "storm"), and
 * what they saw ("polled", "xlapolled", "synced", "stormed"): false when line is none of these. */
static bool loop_command(const char *line)
{
	char path[16];
	unsigned ms = 0, n = 0;

	if (sscanf(line, "poll %15s %u", path, &ms) == 2) {
		poller.f = (query_fn)get(path, "cuStreamQuery");
		poller.ms = ms;
		printf("poll %s\n", poller.f && start(poll_loop) == 0 ? "ok" : "failed");
	} else if (sscanf(line, "xlapoll %15s %u", path, &ms) == 2) {
		xla.set = get(path, "cuCtxSetCurrent");
		xla.query = get(path, "cuStreamQuery");
		xla.capturing = get(path, "cuStreamIsCapturing");
		xla.ms = ms;
		printf("xlapoll %s\n", xla.set && xla.query && xla.capturing && start(xla_loop) == 0
					       ? "ok"
					       : "failed");
	} else if (strcmp(line, "xlapolled") == 0) {
		printf("xlapolled %lu %lu %.0f\n", atomic_load(&xla.calls),
		       atomic_load(&xla.failed), atomic_load(&xla.longest));
	} else if (strcmp(line, "polled") == 0) {
		printf("polled %lu %.0f\n", atomic_load(&poller.calls),
		       atomic_load(&poller.longest));
	} else if (sscanf(line, "bgsync %15s", path) == 1) {
		syncer.f = (query_fn)get(path, "cuStreamSynchronize");
		atomic_store(&syncer.done, false);
		printf("bgsync %s\n", syncer.f && start(sync_once) == 0 ? "ok" : "failed");
	} else if (strcmp(line, "synced") == 0) {
		if (atomic_load(&syncer.done))
			printf("synced %d %.0f\n", syncer.rc, syncer.ms);
		else
			printf("synced running\n");
	} else if (sscanf(line, "storm %u %15s %u", &n, path, &ms) == 3) {
		storm.f = (query_fn)get(path, "cuStreamQuery");
		storm.until = now_ms() + ms;
		atomic_store(&storm.calls, 0);
		atomic_store(&storm.failed, 0);
		atomic_store(&storm.running, (int)n);
		for (unsigned i = 0; storm.f && i < n; i++)
			if (start(storm_loop) < 0)
				atomic_fetch_sub(&storm.running, 1);
		printf("storm %s\n", storm.f ? "ok" : "failed");
	} else if (sscanf(line, "busy %15s %u", path, &ms) == 2) {
		busy.f = get(path, "cuLaunchKernel");
		busy.until = now_ms() + ms;
		atomic_store(&busy.calls, 0);
		atomic_store(&busy.failed, 0);
		atomic_store(&busy.running, true);
		if (!busy.f || start(busy_loop) < 0)
			atomic_store(&busy.running, false);
		printf("busy %s\n", busy.f && atomic_load(&busy.running) ? "ok" : "failed");
	} else if (strcmp(line, "busied") == 0) {
		if (atomic_load(&busy.running))
			printf("busied running\n");
		else
			printf("busied %lu %lu\n", atomic_load(&busy.calls),
			       atomic_load(&busy.failed));
	} else if (strcmp(line, "stormed") == 0) {
		if (atomic_load(&storm.running) > 0)
			printf("stormed running\n");
		else
			printf("stormed %lu %lu\n", atomic_load(&storm.calls),
			       atomic_load(&storm.failed));
	} else {
		return false;
	}
	return true;
}

void paths_command(const char *line);
void paths_command(const char *line)
{
	char path[16], name[256];
	int args;

	if (sscanf(line, "peer %15s %255s %n", path, name, &args) == 2 && line[args])
		peer(path, name, line + args);
	else if (sscanf(line, "forkpoll %15s %255s", path, name) == 2)
		forkpoll(path, name);
	else if (strcmp(line, "nexter") == 0)
		nexter();
	else if (!call_command(line) && !loop_command(line) && !vmm_command(line))
		printf("unknown\n");
}
