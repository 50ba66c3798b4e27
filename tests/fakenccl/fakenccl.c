/* fakenccl: a stand-in for libnccl.so.2, for the preload suite's tests of NCCL jobs.
 *
 * Built twice: as NCCL 2.30.7, with ncclCommSuspend and ncclCommResume, and as 2.28.9 without
 * them (-DFAKE_OLD). The ranks are the test's processes; they share each communicator's state
 * through files in $CUDANAP_FAKE_DIR/nccl (or $CUDANAP_FAKE_NCCL_DIR: ranks on several "nodes",
 * each with a fake driver of its own, share the communicators' state there, as the network between
 * them):
 *   KEY.op.SEQ.RANK   rank RANK issued its SEQth operation on communicator KEY. An operation is
 *                     "on the GPU" until every rank has issued it: ncclCommSuspend first waits for
 *                     that, as NCCL's cudaDeviceSynchronize does, and fails after 10 s ("a rank
 *                     never issued it": the hang a bad cut would cause) instead of hanging.
 *   KEY.suspend.N.RANK, KEY.resume.N.RANK   the barriers of the Nth suspend and resume (10 s).
 * A rank with a communicator on the default transports holds peer imports, as NCCL's P2P does:
 * the file $CUDANAP_FAKE_DIR/<pid>.peer, which the fake driver's restore refuses to restore
 * (CUDA_ERROR_NOT_SUPPORTED, and the process is lost, as on driver 580). ncclCommSuspend removes
 * it, ncclCommResume puts it back; with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 (sockets) it is
 * never made. An operation on a suspended communicator fails and is logged in
 * $CUDANAP_FAKE_DIR/nccl/misuse: the app's calls must have been held back. While the file
 * hold.<pid> is there, that process's ncclAllReduce waits inside the call (20 s at most) before it
 * issues: an app thread under way in NCCL, which holds its rank back at the cut for a test.
 * A communicator's device is its rank's, modulo CUDANAP_FAKE_GPUS (1). ncclCommSuspend and
 * ncclCommResume save the caller's device and set it back, as NCCL's do (cudaGetDevice: the current
 * context's device, 0 without one): setting back another device than the communicator's would
 * give it a context of its own on a real GPU, so the file stray.<pid>.<device> says so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT	__attribute__((visibility("default")))
#define WAIT_MS 10000

typedef struct {
	char internal[128];
} ncclUniqueId;

struct ncclComm {
	uint64_t key;
	int rank, nranks;
	unsigned long seq;     /* operations issued */
	int suspends, resumes; /* barriers so far */
	int suspended;
	int dev; /* its device */
};
typedef struct ncclComm *ncclComm_t;
typedef int ncclResult_t;
enum { ok = 0, system_error = 2, internal_error = 3, invalid_usage = 5 };

ncclResult_t ncclGetVersion(int *v);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config);
ncclResult_t ncclCommCount(ncclComm_t comm, int *n);
ncclResult_t ncclCommUserRank(ncclComm_t comm, int *r);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void *s, void *d, size_t n, int t, int op, ncclComm_t comm,
			   void *stream);
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommCuDevice(ncclComm_t comm, int *dev);

static atomic_int live; /* communicators not suspended, holding peer imports */

/* The directory, written per thread: the fake driver's queries ask fakeNcclPending from the app's
 * other threads while one issues an operation. */
static const char *dir(void)
{
	static __thread char d[4096];
	const char *f = getenv("CUDANAP_FAKE_DIR"), *own = getenv("CUDANAP_FAKE_NCCL_DIR");

	if (own && *own)
		snprintf(d, sizeof(d), "%s", own);
	else
		snprintf(d, sizeof(d), "%s/nccl", f ? f : "/tmp");
	mkdir(d, 0700);
	return d;
}

static int touch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int touch(const char *fmt, ...)
{
	char p[4400];
	va_list ap;
	int fd;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int exists(const char *fmt, ...)
{
	char p[4400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	return access(p, F_OK) == 0;
}

static void misuse(const char *what, ncclComm_t c)
{
	char p[4400];
	FILE *f;

	snprintf(p, sizeof(p), "%s/misuse", dir());
	f = fopen(p, "a");
	if (f) {
		if (c)
			fprintf(f, "%d %s on suspended communicator %016llx\n", (int)getpid(), what,
				(unsigned long long)c->key);
		else
			fprintf(f, "%d %s failed inside an operation\n", (int)getpid(), what);
		fclose(f);
	}
}

static int sockets_only(void)
{
	const char *p2p = getenv("NCCL_P2P_DISABLE"), *shm = getenv("NCCL_SHM_DISABLE");

	return p2p && strcmp(p2p, "1") == 0 && shm && strcmp(shm, "1") == 0;
}

/* The peer imports of this process, as the fake driver sees them. */
static void imports(int delta)
{
	const char *f = getenv("CUDANAP_FAKE_DIR");
	char p[4400];

	if (sockets_only())
		return;
	snprintf(p, sizeof(p), "%s/%d.peer", f ? f : "/tmp", (int)getpid());
	if (atomic_fetch_add(&live, delta) + delta > 0)
		touch("%s", p);
	else
		unlink(p);
}

static uint64_t hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* This process's communicators, for fakeNcclPending. */
static ncclComm_t mine[16];

static ncclComm_t make(uint64_t key, int rank, int nranks)
{
	ncclComm_t c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	for (int i = 0; i < 16; i++)
		if (!mine[i]) {
			mine[i] = c;
			break;
		}
	c->key = key;
	c->rank = rank;
	c->nranks = nranks;
	c->dev = rank % (getenv("CUDANAP_FAKE_GPUS") ? atoi(getenv("CUDANAP_FAKE_GPUS")) : 1);
	imports(1);
	return c;
}

EXPORT ncclResult_t ncclCommCuDevice(ncclComm_t comm, int *dev)
{
	*dev = comm->dev;
	return ok;
}

/* A peer import made by NCCL itself through the runtime's exported name, as an NCCL built with
 * the shared runtime makes them: cudanap must leave it to NCCL's own route. */
int fakeNcclIpcOpen(void);
EXPORT int fakeNcclIpcOpen(void)
{
	struct {
		char reserved[64];
	} h;
	void *p = NULL;
	int (*open_fn)(void **, __typeof__(h), unsigned) =
		(int (*)(void **, __typeof__(h), unsigned))dlsym(RTLD_DEFAULT,
								 "cudaIpcOpenMemHandle");

	memset(&h, 0, sizeof(h));
	return open_fn ? open_fn(&p, h, 1) : -1;
}

/* Not NCCL's: what a training loop's synchronisation (loss.item()) amounts to, waiting outside
 * NCCL's calls until every rank has issued this one's last operation, so that the ranks go in
 * lockstep as a real job's do. */
void fakeNcclWait(ncclComm_t comm);
EXPORT void fakeNcclWait(ncclComm_t c)
{
	for (int r = 0; r < c->nranks; r++)
		while (c->seq && !exists("%s/%016llx.op.%lu.%d", dir(), (unsigned long long)c->key,
					 c->seq, r))
			usleep(1000);
}

EXPORT ncclResult_t ncclGetVersion(int *v)
{
#ifdef FAKE_OLD
	*v = 22809;
#else
	*v = 23007;
#endif
	return ok;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	*comm = make(hash(0xcbf29ce484222325ull, &id, sizeof(id)), rank, nranks);
	return *comm ? ok : system_error;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  void *config)
{
	(void)key;
	(void)config;
	if (comm->suspended)
		return misuse("ncclCommSplit", comm), invalid_usage;
	comm->seq++;
	*newcomm = make(hash(comm->key, &color, sizeof(color)), comm->rank, comm->nranks);
	return *newcomm ? ok : system_error;
}

EXPORT ncclResult_t ncclCommCount(ncclComm_t comm, int *n)
{
	*n = comm->nranks;
	return ok;
}

EXPORT ncclResult_t ncclCommUserRank(ncclComm_t comm, int *r)
{
	*r = comm->rank;
	return ok;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	for (int i = 0; i < 16; i++)
		if (mine[i] == comm)
			mine[i] = NULL;
	if (!comm->suspended)
		imports(-1);
	free(comm);
	return ok;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return ncclCommDestroy(comm);
}

EXPORT ncclResult_t ncclGroupStart(void)
{
	return ok;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	return ok;
}

/* Not NCCL's: whether every rank has issued operation seq of the communicator (it has "run on
 * the GPU"), and how many this rank has issued: a PyTorch-like loop's works (target's torch.c). */
int fakeNcclDone(ncclComm_t comm, unsigned long seq);
unsigned long fakeNcclIssued(ncclComm_t comm);
EXPORT int fakeNcclDone(ncclComm_t c, unsigned long seq)
{
	for (int r = 0; r < c->nranks; r++)
		if (!exists("%s/%016llx.op.%lu.%d", dir(), (unsigned long long)c->key, seq, r))
			return 0;
	return 1;
}

EXPORT unsigned long fakeNcclIssued(ncclComm_t c)
{
	return c->seq;
}

/* Not NCCL's: an operation of this process's is still "on the GPU", waiting for a rank that has
 * not issued it: the fake driver's queries say its work is not done (fakeapi.c). */
int fakeNcclPending(void);
EXPORT int fakeNcclPending(void)
{
	for (int i = 0; i < 16; i++)
		if (mine[i] && mine[i]->seq && !fakeNcclDone(mine[i], mine[i]->seq))
			return 1;
	return 0;
}

/* With CUDANAP_FAKE_NCCL_KERNELS=1 an operation launches a kernel as NCCL's do, a driver call
 * from this library's code (through the preload, which must let it go while the app's own are
 * held). */
static void kernel(void)
{
	typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, void *, void **, void **);
	static launch_fn launch;
	const char *on = getenv("CUDANAP_FAKE_NCCL_KERNELS");

	if (!on || strcmp(on, "1") != 0)
		return;
	if (!launch)
		launch = (launch_fn)dlsym(RTLD_DEFAULT, "cuLaunchKernel");
	if (launch && launch(NULL, 0, 2, 3, 4, 5, 6, 7, (void *)8, (void **)9, (void **)10) != 0)
		misuse("cuLaunchKernel", NULL);
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *d, size_t n, int t, int op, ncclComm_t comm,
				  void *stream)
{
	(void)s, (void)d, (void)n, (void)t, (void)op, (void)stream;
	if (comm->suspended) {
		misuse("ncclAllReduce", comm);
		return invalid_usage;
	}
	for (int i = 0; i < 10000 && exists("%s/hold.%d", dir(), (int)getpid()); i++)
		usleep(2000);
	kernel();
	comm->seq++;
	return touch("%s/%016llx.op.%lu.%d", dir(), (unsigned long long)comm->key, comm->seq,
		     comm->rank) == 0
		       ? ok
		       : system_error;
}

#ifndef FAKE_OLD
/* The caller's device, as cudaGetDevice finds it (-1: no driver to ask). */
static int caller_device(void)
{
	int (*get)(void **) = (int (*)(void **))dlsym(RTLD_DEFAULT, "cuCtxGetCurrent");
	int (*dev_of)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cuCtxGetDevice");
	void *ctx = NULL;
	int d = 0;

	if (!get || !dev_of)
		return -1;
	if (get(&ctx) == 0 && ctx)
		dev_of(&d);
	return d;
}

/* The end of a suspend or resume: the caller's device set back. */
static void set_back(ncclComm_t comm, int saved)
{
	if (saved >= 0 && saved != comm->dev)
		touch("%s/stray.%d.%d", dir(), (int)getpid(), saved);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Every rank has issued every operation this one has: what NCCL's device synchronization waits
 * for. */
static int matched(ncclComm_t c)
{
	for (int r = 0; r < c->nranks; r++)
		if (c->seq &&
		    !exists("%s/%016llx.op.%lu.%d", dir(), (unsigned long long)c->key, c->seq, r))
			return 0;
	return 1;
}

/* The barrier NAME.N: every rank here, at most WAIT_MS. */
static int barrier(ncclComm_t c, const char *name, int n)
{
	double until = now_ms() + WAIT_MS;

	touch("%s/%016llx.%s.%d.%d", dir(), (unsigned long long)c->key, name, n, c->rank);
	for (;;) {
		int here = 0;

		for (int r = 0; r < c->nranks; r++)
			here += exists("%s/%016llx.%s.%d.%d", dir(), (unsigned long long)c->key,
				       name, n, r);
		if (here == c->nranks)
			return ok;
		if (now_ms() > until)
			return system_error;
		usleep(2000);
	}
}

static ncclResult_t suspend(ncclComm_t comm)
{
	double until = now_ms() + WAIT_MS;

	if (comm->suspended)
		return invalid_usage;
	while (!matched(comm)) {
		if (now_ms() > until) {
			touch("%s/unmatched.%016llx.%d", dir(), (unsigned long long)comm->key,
			      comm->rank);
			return system_error;
		}
		usleep(2000);
	}
	if (barrier(comm, "suspend", ++comm->suspends) != ok)
		return system_error;
	comm->suspended = 1;
	imports(-1);
	return ok;
}

EXPORT ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags)
{
	int saved = caller_device();
	ncclResult_t r = suspend(comm);

	(void)flags;
	set_back(comm, saved);
	return r;
}

EXPORT ncclResult_t ncclCommResume(ncclComm_t comm)
{
	int saved = caller_device();
	ncclResult_t r = invalid_usage;

	if (comm->suspended) {
		r = barrier(comm, "resume", ++comm->resumes);
		if (r == ok) {
			comm->suspended = 0;
			imports(1);
		}
	}
	set_back(comm, saved);
	return r == ok ? ok : r == invalid_usage ? invalid_usage : system_error;
}
#endif
