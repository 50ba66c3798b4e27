/* fakecuda: a stand-in for libcuda.so.1 (and NVML) that models the checkpoint API, for tests
 * without a GPU.
 *
 * The controller loads it through CUDANAP_LIBCUDA and CUDANAP_LIBNVML; the test target links it,
 * calls fake_register (its "CUDA initialisation") and then the fake_* "CUDA calls". Both sides
 * share each process's state through files in $CUDANAP_FAKE_DIR, under flock:
 *   <pid>.state   "STATE BUSY_UNTIL_MS GPU WEDGED ALSO SLOTS": CUprocessState, end of the last
 *                 "kernel", the GPU it is on, whether a restore without room wedged it, the
 *                 other GPUs it holds memory on (a mask), and where each GPU it started on is now
 *                 ("3,0,7": its slots, in the order it started on them)
 *   <pid>.gpu     the process's "device memory"; renamed to <pid>.host while checkpointed
 *   <pid>.peer    memory the process imported from another (the fake NCCL's P2P, or CUDA IPC
 *                 opened here): its restore fails with NOT_SUPPORTED and wedges it, as the real
 *                 driver's does
 *   <pid>.peers   peer access between its GPUs (fakepeer.c): on at the checkpoint, the restore
 *                 fails with INVALID_VALUE and wedges it, as driver 580's does
 *   <pid>.vmmlarge  memory of cuMemCreate's over 256 MiB that another GPU may access (fakevmm.c):
 *                 the same
 *   fail_checkpoint, fail_restore   if present, that call fails with the CUresult written inside
 *   delay_checkpoint, delay_restore if present, that call first sleeps the milliseconds written
 *                                   inside, with nothing changed yet: a slow driver to kill (the
 *                                   event "delay_<call> PID" marks its start)
 *
 * Error codes follow what was measured (docs/DRIVER.md): NOT_INITIALIZED for a pid without CUDA,
 * OPERATING_SYSTEM for a pid that does not exist, ILLEGAL_STATE for a wrong transition, NOT_READY
 * when a lock times out (the process stays RUNNING), and the target's calls block while it is not
 * RUNNING.
 *
 * GPUs: $CUDANAP_FAKE_GPUS of them (default 1); GPU k (nvidia-smi order) has UUID byte 15 = k and
 * PCI bus 0x10+k, and CUDA ordinal N-1-k, so that code which forgets to sort by PCI bus gets the
 * wrong GPU.
 *
 * GPU memory, sized: with $CUDANAP_FAKE_GPU_MIB each GPU has that many MiB, and what is free is
 * what the processes whose memory is on it leave (their footprint, and the MiB of their
 * cuMemAlloc_v2 and cuMemCreate calls on that GPU, kept in <pid>.allocs and summed in <pid>.alloc:
 * fakemem.c); such an allocation beyond it fails with OUT_OF_MEMORY, and NVML counts each
 * process's footprint on a GPU with its allocations there. One GPU across users: in a
 * CUDANAP_FAKE_DIR every user may write to (1777), <pid>.state, <pid>.alloc and <pid>.allocs are
 * 0644, so that each user's fake driver and NVML count every user's memory, as a real GPU does;
 * each process locks and writes only its own.
 *
 * GPU memory: every process holds $CUDANAP_FAKE_FOOTPRINT_MIB (default 1000) on its GPU while its
 * memory is there, and as much on each further GPU of $CUDANAP_FAKE_START_GPU ("0,1": a process on
 * two GPUs, which a restore moves each by the driver's pairs); GPU k has the MiB in the file
 * free.<k> free (default 80000). A restore onto a GPU without room fails with OUT_OF_MEMORY and
 * wedges the process, as on a real driver. The fake NVML reports both, and names every GPU
 * $CUDANAP_FAKE_MODEL (default "Fake GPU 80GB"); a cuMemCreate in the controller is checked against
 * the same numbers; the file graphics.<k>, when there, lists the pids NVML gives as graphics
 * processes on GPU k (a display server). Reservations and restores are appended to the file
 * "events", one line each, so that tests can see their order.
 *
 * Host copy: with $CUDANAP_FAKE_COPY_MIB set, the checkpoint also makes the host copy inside the
 * target the way the real driver does: a thread of the target's (the "driver thread", started at
 * fake_register) maps 1.0625 x that many MiB with one mmap(MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE)
 * through the PLT, where the preload's staging sees it, and fills it by memcpy; the restore checks
 * every byte of it, copying it out by memcpy in blocks of 2 MiB as the real driver does (in and
 * out), and unmaps it. With $CUDANAP_FAKE_SETUP_MS the restore first spends that long in its
 * "setup" (the real driver's ioctls before it copies), with $CUDANAP_FAKE_BLOCK_MS each block
 * of its copy takes that long (the DMA), and with $CUDANAP_FAKE_CLOSE_MS it closes for that long
 * after the copy (the driver's closing ioctls), logged as "setup|copy|close PID begin|end NS"
 * events (the copy begins once its first block is through, ends when its last one is; the last
 * block's DMA follows). The
 * controller's side asks over the fifo <pid>.drv and waits for the answer on <pid>.ack ("ok", or
 * "bad WHY", which fails the call). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define EXPORT __attribute__((visibility("default")))

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *fake_dir(void)
{
	const char *dir = getenv("CUDANAP_FAKE_DIR");

	return dir ? dir : "/tmp";
}

static void event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void event(const char *fmt, ...)
{
	char p[4200];
	va_list ap;
	FILE *f;

	snprintf(p, sizeof(p), "%s/events", fake_dir());
	f = fopen(p, "ae");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static void path_of(char *buf, size_t len, int pid, const char *ext)
{
	snprintf(buf, len, "%s/%d.%s", fake_dir(), pid, ext);
}

int fake_gpus(void)
{
	const char *s = getenv("CUDANAP_FAKE_GPUS");
	int n = s ? atoi(s) : 1;

	return n > 0 && n <= FAKE_SLOTS ? n : 1;
}

static int n_gpus(void)
{
	return fake_gpus();
}

/* "STATE BUSY_UNTIL GPU WEDGED ALSO SLOTS" (SLOTS: "G0,G1,..."; a state without it has its slots
 * in the order of GPU and ALSO's bits): 0, or -1 when buf is no state. */
int fake_state_parse(const char *buf, struct pstate *st)
{
	char slots[FAKE_STATE_LEN] = "";
	int n;

	st->also = 0;
	n = sscanf(buf, "%d %lld %d %d %u %s", &st->state, &st->busy_until, &st->gpu, &st->wedged,
		   &st->also, slots);
	if (n < 4)
		return -1;
	st->n_slots = 0;
	if (n == 6) {
		for (char *c = slots; c && st->n_slots < FAKE_SLOTS; c = strchr(c, ','))
			st->slot[st->n_slots++] = atoi(c += *c == ',');
		return 0;
	}
	st->slot[st->n_slots++] = st->gpu;
	for (int k = 0; k < FAKE_SLOTS; k++)
		if (st->also >> k & 1 && k != st->gpu)
			st->slot[st->n_slots++] = k;
	return 0;
}

/* st's slots set to where they are now: its GPU and the mask of the others follow. */
static void set_slots(struct pstate *st)
{
	st->gpu = st->slot[0];
	st->also = 0;
	for (int i = 1; i < st->n_slots; i++)
		st->also |= 1u << st->slot[i];
}

/* Opens and locks pid's state file; returns the fd or a CUresult as a negative number. */
static int open_locked(int pid, struct pstate *st)
{
	char p[4200], buf[FAKE_STATE_LEN] = "";
	int fd;
	ssize_t n;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return -CUDA_ERROR_OPERATING_SYSTEM;
	path_of(p, sizeof(p), pid, "state");
	fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -CUDA_ERROR_NOT_INITIALIZED;
	flock(fd, LOCK_EX);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	if (fake_state_parse(buf, st) < 0) {
		close(fd);
		return -CUDA_ERROR_UNKNOWN;
	}
	return fd;
}

static void store_unlock(int fd, const struct pstate *st)
{
	char buf[FAKE_STATE_LEN];
	int n = snprintf(buf, sizeof(buf), "%d %lld %d %d %u ", st->state, st->busy_until, st->gpu,
			 st->wedged, st->also);

	for (int i = 0; i < st->n_slots; i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%d%c", st->slot[i],
			      i + 1 < st->n_slots ? ',' : '\n');
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		abort();
	close(fd);
}

static int injected(const char *name)
{
	const char *dir = getenv("CUDANAP_FAKE_DIR");
	char p[4200];
	int code = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir ? dir : "/tmp", name);
	f = fopen(p, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &code) != 1)
		code = CUDA_ERROR_UNKNOWN;
	fclose(f);
	return code;
}

static int move_memory(int pid, const char *from, const char *to)
{
	char a[4200], b[4200];

	path_of(a, sizeof(a), pid, from);
	path_of(b, sizeof(b), pid, to);
	return rename(a, b);
}

/* Opens pid's state for a transition out of state `from`. A failure injected under the file name
 * `inject` is returned as the driver would, state unchanged. Returns the locked fd or -CUresult. */
static int transition(int pid, int from, const char *inject, struct pstate *st)
{
	int fd = open_locked(pid, st), fail;

	if (fd < 0)
		return fd;
	if (st->state != from) {
		close(fd);
		return -CUDA_ERROR_ILLEGAL_STATE;
	}
	fail = inject ? injected(inject) : 0;
	if (fail) {
		close(fd);
		return -fail;
	}
	return fd;
}

/* The end of a checkpoint or restore: the memory file moves, then the new state is stored. */
static CUresult move_and_store(int fd, int pid, const char *from, const char *to, struct pstate *st,
			       int state)
{
	if (move_memory(pid, from, to) < 0) {
		close(fd);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	st->state = state;
	store_unlock(fd, st);
	return CUDA_SUCCESS;
}

/* ---- driver entry points ---- */

EXPORT CUresult cuInit(unsigned flags)
{
	(void)flags;
	return CUDA_SUCCESS;
}

/* The target's "CUDA initialisation": from now on the driver knows this process. */
/* ---- the host copy (see the opening comment) ---- */

static size_t copy_bytes(void)
{
	const char *s = getenv("CUDANAP_FAKE_COPY_MIB");
	size_t mib = s ? strtoul(s, NULL, 10) : 0;

	return (mib << 20) + (mib << 20) / 16;
}

static uint64_t word_at(size_t i)
{
	return (uint64_t)i * 0x9e3779b97f4a7c15ull ^ 0x5a5a5a5a5a5a5a5aull;
}

static char *copy;

static void answer_ack(int ack, const char *text)
{
	if (write(ack, text, strlen(text)) < 0)
		return;
}

static long env_ms(const char *name)
{
	const char *s = getenv(name);

	return s ? atol(s) : 0;
}

static void sleep_ms(long ms)
{
	struct timespec d = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&d, NULL);
}

/* "setup|copy PID begin|end NS" */
static void restore_event(const char *what, const char *edge)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	event("%s %d %s %lld", what, (int)getpid(), edge, ts.tv_sec * 1000000000ll + ts.tv_nsec);
}

static void restore_setup(void)
{
	long ms = env_ms("CUDANAP_FAKE_SETUP_MS");

	if (ms <= 0)
		return;
	restore_event("setup", "begin");
	sleep_ms(ms);
	restore_event("setup", "end");
}

/* The driver's thread at a checkpoint: the host copy mapped as the driver maps it, and filled
 * with memcpy from a staging block, as the driver's copy from pinned memory. */
static void thread_checkpoint(int ack, size_t len)
{
	copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		    -1, 0);
	if (copy == MAP_FAILED) {
		copy = NULL;
		answer_ack(ack, "bad mmap\n");
		return;
	}
	for (size_t o = 0; o < len; o += 2u << 20) {
		static uint64_t page[(2u << 20) / 8];
		size_t n = len - o < (2u << 20) ? len - o : 2u << 20;

		for (size_t w = 0; w < n / 8; w++)
			page[w] = word_at(o / 8 + w);
		memcpy(copy + o, page, n);
	}
	answer_ack(ack, "ok\n");
}

/* The driver's thread at a restore: the host copy read back with memcpy to a staging block, as the
 * driver's copy to pinned memory (the copy begins when the first block is through: the preload may
 * hold that one), checked, then unmapped. */
static void thread_restore(int ack, size_t len)
{
	static uint64_t block[(2u << 20) / 8];
	long dma_ms = env_ms("CUDANAP_FAKE_BLOCK_MS");
	bool good = copy != NULL;

	restore_setup();
	for (size_t o = 0; good && o < len; o += sizeof(block)) {
		size_t n = len - o < sizeof(block) ? len - o : sizeof(block);

		memcpy(block, copy + o, n);
		if (o == 0 && dma_ms > 0)
			restore_event("copy", "begin");
		for (size_t w = 0; good && w < n / 8; w++)
			good = block[w] == word_at(o / 8 + w);
		if (o + n >= len && dma_ms > 0)
			restore_event("copy", "end");
		if (dma_ms > 0)
			sleep_ms(dma_ms);
	}
	if (env_ms("CUDANAP_FAKE_CLOSE_MS") > 0) {
		restore_event("close", "begin");
		sleep_ms(env_ms("CUDANAP_FAKE_CLOSE_MS"));
		restore_event("close", "end");
	}
	if (copy)
		munmap(copy, len);
	copy = NULL;
	answer_ack(ack, good ? "ok\n" : "bad the host copy changed\n");
}

static void *driver_thread(void *arg)
{
	char p[4200], c;
	size_t len = copy_bytes();
	int drv, ack;

	(void)arg;
	path_of(p, sizeof(p), getpid(), "drv");
	drv = open(p, O_RDWR | O_CLOEXEC);
	path_of(p, sizeof(p), getpid(), "ack");
	ack = open(p, O_RDWR | O_CLOEXEC);
	while (drv >= 0 && ack >= 0 && read(drv, &c, 1) == 1) {
		if (c == 'c')
			thread_checkpoint(ack, len);
		else if (c == 'r')
			thread_restore(ack, len);
	}
	return NULL;
}

/* The controller's side: ask the target's driver thread, wait for its answer (60 s at most). */
static CUresult ask_driver(int pid, char what)
{
	char p[4200], line[128] = "";
	int drv, ack;
	ssize_t n = 0;

	if (!copy_bytes())
		return CUDA_SUCCESS;
	path_of(p, sizeof(p), pid, "drv");
	drv = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (drv < 0)
		return CUDA_SUCCESS; /* a target started without the variable */
	path_of(p, sizeof(p), pid, "ack");
	ack = open(p, O_RDONLY | O_CLOEXEC);
	if (ack >= 0 && write(drv, &what, 1) == 1) {
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			ssize_t k = read(ack, line + n, sizeof(line) - 1 - (size_t)n);

			if (k > 0)
				n += k;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((n == 0 || line[n - 1] != '\n') && t.tv_sec - t0.tv_sec < 60);
	}
	line[n] = '\0';
	close(drv);
	if (ack >= 0)
		close(ack);
	if (strncmp(line, "ok", 2) == 0)
		return CUDA_SUCCESS;
	fprintf(stderr, "fakecuda: host copy of %d: %s", pid, n ? line : "no answer\n");
	return CUDA_ERROR_UNKNOWN;
}

/* This process is a test target (fake_register): its handles are its memory. */
static bool registered;

bool fake_is_target(void)
{
	return registered;
}

EXPORT CUresult fake_register(void)
{
	char p[4200];
	const char *g = getenv("CUDANAP_FAKE_START_GPU");
	struct pstate st = { .slot = { g ? atoi(g) : 0 }, .n_slots = 1 };
	int fd;

	for (const char *c = g ? strchr(g, ',') : NULL; c && st.n_slots < FAKE_SLOTS;
	     c = strchr(c + 1, ','))
		st.slot[st.n_slots++] = atoi(c + 1);
	set_slots(&st);

	registered = true;
	path_of(p, sizeof(p), getpid(), "gpu");
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	close(fd);
	path_of(p, sizeof(p), getpid(), "state");
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	/* readable by every user's fake driver: one GPU across users, whatever the umask */
	if (fd < 0 || fchmod(fd, 0644) < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	flock(fd, LOCK_EX);
	store_unlock(fd, &st);
	if (copy_bytes()) {
		pthread_t t;
		char q[4200];

		path_of(p, sizeof(p), getpid(), "drv");
		path_of(q, sizeof(q), getpid(), "ack");
		unlink(p);
		unlink(q);
		if (mkfifo(p, 0600) < 0 || mkfifo(q, 0600) < 0 ||
		    pthread_create(&t, NULL, driver_thread, NULL) != 0)
			return CUDA_ERROR_OPERATING_SYSTEM;
		pthread_detach(t);
	}
	return CUDA_SUCCESS;
}

static const struct {
	CUresult r;
	const char *name, *text;
} errors[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed" },
	{ CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "illegal state" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	  "peer access is not supported between these two devices" },
	{ CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	  "peer access is already enabled" },
	{ CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	  "peer access has not been enabled" },
};

EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].r == r) {
			*s = errors[i].name;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].r == r) {
			*s = errors[i].text;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	*n = n_gpus();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	if (ordinal < 0 || ordinal >= n_gpus())
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

static int gpu_of_ordinal(CUdevice d)
{
	return n_gpus() - 1 - d;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
	memset(u, 0, sizeof(*u));
	u->bytes[0] = (char)0xfa;
	u->bytes[1] = (char)0xce;
	u->bytes[15] = (char)gpu_of_ordinal(d);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	const char *mode = getenv("CUDANAP_FAKE_COMPUTE_MODE"); /* 3: exclusive-process */

	*v = attr == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID ? 0x10 + gpu_of_ordinal(d)
	     : attr == 102 /* CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */ ? 1
	     : attr == 20 /* CU_DEVICE_ATTRIBUTE_COMPUTE_MODE */ && mode ? atoi(mode)
									 : 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCheckpointProcessGetState(int pid, int *state)
{
	struct pstate st;
	int fd = open_locked(pid, &st);

	if (fd < 0)
		return -fd;
	close(fd);
	*state = st.state;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
	long long start = now_ms();
	unsigned timeout = args ? args->timeoutMs : 0;

	for (;;) {
		struct pstate st;
		int fd = open_locked(pid, &st);

		if (fd < 0)
			return -fd;
		if (st.state != 0) {
			close(fd);
			return CUDA_ERROR_ILLEGAL_STATE;
		}
		if (st.busy_until <= now_ms()) {
			st.state = 1;
			store_unlock(fd, &st);
			return CUDA_SUCCESS;
		}
		close(fd);
		if (timeout && now_ms() - start >= timeout)
			return CUDA_ERROR_NOT_READY;
		usleep(1000);
	}
}

/* A slow call: the event "delay_<call> PID" says it has begun, for a test to kill in the middle. */
static void delay(const char *name, int pid)
{
	int ms = injected(name);

	if (ms > 0) {
		event("%s %d", name, pid);
		usleep((useconds_t)ms * 1000);
	}
}

EXPORT CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
	struct pstate st;
	int fd;

	delay("delay_checkpoint", pid);
	/* An injected failure leaves it LOCKED, as managed memory does on a real driver. */
	CUresult r;

	fd = transition(pid, 1, "fail_checkpoint", &st);
	(void)args;
	if (fd < 0)
		return -fd;
	if ((r = ask_driver(pid, 'c')) != CUDA_SUCCESS) {
		close(fd);
		return r;
	}
	fake_peers_checkpoint(pid);
	return move_and_store(fd, pid, "gpu", "host", &st, 2);
}

EXPORT CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
	struct pstate st, to;
	int fd;

	delay("delay_restore", pid);
	fd = transition(pid, 2, "fail_restore", &st);

	if (fd < 0)
		return -fd;
	if (st.wedged) {
		close(fd);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	{
		/* Memory imported from another process (NCCL's P2P, the fake NCCL's <pid>.peer):
		 * checkpointed, but never restored, as on driver 580. */
		char peer[4200];

		path_of(peer, sizeof(peer), pid, "peer");
		if (access(peer, F_OK) == 0) {
			st.wedged = 1;
			store_unlock(fd, &st);
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	/* Peer access on at the checkpoint: the restore fails, and every later one (fakepeer.c). */
	if (fake_peers_unrestorable(pid)) {
		st.wedged = 1;
		store_unlock(fd, &st);
		return CUDA_ERROR_INVALID_VALUE;
	}
	to = st;
	if (args && args->gpuPairsCount) {
		/* The driver wants every GPU in the list; each of the process's moves by its pair.
		 */
		bool moved[FAKE_SLOTS] = { false };

		if (args->gpuPairsCount != (unsigned)n_gpus()) {
			close(fd);
			return CUDA_ERROR_INVALID_VALUE;
		}
		for (unsigned i = 0; i < args->gpuPairsCount; i++)
			for (int s = 0; s < st.n_slots; s++)
				if (st.slot[s] == args->gpuPairs[i].oldUuid.bytes[15] &&
				    !moved[s]) {
					to.slot[s] = args->gpuPairs[i].newUuid.bytes[15];
					moved[s] = true;
				}
		if (!moved[0]) {
			close(fd);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	event("restore %d", to.slot[0]);
	for (int s = 0; s < to.n_slots; s++)
		if (fake_free_mib(to.slot[s]) < fake_slot_mib(pid, s)) {
			st.wedged = 1;
			store_unlock(fd, &st);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	st = to;
	set_slots(&st);
	{
		CUresult r = ask_driver(pid, 'r');

		if (r != CUDA_SUCCESS) {
			close(fd);
			return r;
		}
	}
	fake_peers_restored(pid);
	return move_and_store(fd, pid, "host", "gpu", &st, 1);
}

EXPORT CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
	struct pstate st;
	int fd = transition(pid, 1, NULL, &st);

	(void)args;
	if (fd < 0)
		return -fd;
	st.state = 0;
	store_unlock(fd, &st);
	return CUDA_SUCCESS;
}

/* ---- a physical allocation, as the controller makes to hold memory on a GPU ---- */

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, int opt)
{
	(void)prop;
	(void)opt;
	*g = 2u << 20;
	return CUDA_SUCCESS;
}

/* Like the real driver's, it needs cuInit but no context; the handle is the nvidia-smi index
 * plus one, shifted. */
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t bytes,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	int k;

	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || flags || bytes % (2u << 20))
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.id < 0 || prop->location.id >= n_gpus())
		return CUDA_ERROR_INVALID_DEVICE;
	if (registered) /* the target's own memory (fakevmm.c), not a hold for a restore */
		return fake_vmm_create(h, bytes, prop->location.id);
	k = gpu_of_ordinal(prop->location.id);
	if (injected("fail_alloc"))
		return injected("fail_alloc");
	if ((long long)(bytes >> 20) > fake_free_mib(k))
		return CUDA_ERROR_OUT_OF_MEMORY;
	event("reserve %d %zu", k, bytes >> 20);
	*h = (CUmemGenericAllocationHandle)(k + 1) << 32;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	if (registered)
		return fake_vmm_release(h) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	event("release %d", (int)(h >> 32) - 1);
	return CUDA_SUCCESS;
}

/* ---- CUDA IPC, the runtime's names and the driver's: an open or an import takes memory of
 * another process (<pid>.peer while any is held; a process does not mix these with the fake
 * NCCL's imports), a close of something not open fails as the real ones do ---- */

static atomic_int ipc_held;

static int ipc_take(int delta)
{
	char p[4400];
	int n = atomic_fetch_add(&ipc_held, delta) + delta;

	if (n < 0) {
		atomic_fetch_sub(&ipc_held, delta);
		return CUDA_ERROR_INVALID_VALUE;
	}
	path_of(p, sizeof(p), (int)getpid(), "peer");
	if (n > 0)
		close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	else
		unlink(p);
	return CUDA_SUCCESS;
}

EXPORT int cudaIpcOpenMemHandle(void **p, CUipcMemHandle h, unsigned flags)
{
	(void)h, (void)flags;
	*p = (void *)(uintptr_t)0x7f0000000000ull;
	return ipc_take(1);
}

EXPORT int cudaIpcCloseMemHandle(void *p)
{
	return p ? ipc_take(-1) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned flags)
{
	(void)h, (void)flags;
	*p = 0x7f0000000000ull;
	return ipc_take(1);
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
	return p ? ipc_take(-1) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os, int type)
{
	(void)os, (void)type;
	*h = 1;
	return ipc_take(1);
}

/* ---- NVML: handles are the nvidia-smi index plus one ---- */

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	return r ? "fake NVML error" : "Success";
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
	*n = (unsigned)n_gpus();
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
	if (i >= (unsigned)n_gpus())
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	*d = (nvmlDevice_t)(intptr_t)(i + 1);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *s, unsigned len)
{
	snprintf(s, len, "GPU-face0000-0000-0000-0000-0000000000%02x", (int)(intptr_t)d - 1);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *s, unsigned len)
{
	const char *m = getenv("CUDANAP_FAKE_MODEL");

	(void)d;
	snprintf(s, len, "%s", m ? m : "Fake GPU 80GB");
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *s, nvmlDevice_t *d)
{
	unsigned k;

	if (sscanf(s, "GPU-face0000-0000-0000-0000-0000000000%02x", &k) != 1 ||
	    k >= (unsigned)n_gpus())
		return 6; /* NVML_ERROR_NOT_FOUND */
	*d = (nvmlDevice_t)(intptr_t)(k + 1);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	long long f = fake_free_mib((int)(intptr_t)d - 1);

	m->total = (unsigned long long)(fake_sized_mib() ? fake_sized_mib() : 81920) << 20;

	m->free = (unsigned long long)(f > 0 ? f : 0) << 20; /* more taken than there is: none */
	m->used = m->total - m->free;
	return NVML_SUCCESS;
}

/* NVML's answer for a list of k processes given room for *n: *n becomes k. */
static nvmlReturn_t listed(unsigned k, unsigned *n)
{
	nvmlReturn_t r = k > *n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;

	*n = k;
	return r;
}

/* Every fake process whose memory is on this GPU now. */
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *n,
							    nvmlProcessInfo_t *p)
{
	DIR *dir = opendir(fake_dir());
	struct dirent *e;
	unsigned k = 0;

	while (dir && (e = readdir(dir))) {
		struct pstate st;
		char mem[4200], name[64];
		int pid = atoi(e->d_name);

		snprintf(name, sizeof(name), "%d.state", pid);
		/* read, not locked: another user's state is read-only to this one */
		if (strcmp(name, e->d_name) != 0 || (kill(pid, 0) < 0 && errno == ESRCH) ||
		    !fake_peek(pid, &st))
			continue;
		path_of(mem, sizeof(mem), pid, "gpu");
		if ((st.gpu != (int)(intptr_t)d - 1 && !(st.also >> ((intptr_t)d - 1) & 1)) ||
		    access(mem, F_OK) != 0)
			continue;
		if (k < *n) {
			p[k].pid = (unsigned)pid;
			p[k].usedGpuMemory =
				(unsigned long long)fake_used_on(pid, &st, (int)(intptr_t)d - 1)
				<< 20;
		}
		k++;
	}
	if (dir)
		closedir(dir);
	return listed(k, n);
}

/* The pids in graphics.<k>, one a line: a display server or a compositor on GPU k. */
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned *n,
							     nvmlProcessInfo_t *p)
{
	char path[4200];
	unsigned k = 0;
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/graphics.%d", fake_dir(), (int)(intptr_t)d - 1);
	f = fopen(path, "re");
	while (f && fscanf(f, "%d", &pid) == 1) {
		if (k < *n) {
			p[k].pid = (unsigned)pid;
			p[k].usedGpuMemory = 64ull << 20;
		}
		k++;
	}
	if (f)
		fclose(f);
	return listed(k, n);
}

/* ---- the target's "CUDA calls": each blocks while the process is not RUNNING ---- */

static int wait_running(struct pstate *st)
{
	for (;;) {
		int fd = open_locked(getpid(), st);

		if (fd < 0)
			return fd;
		if (st->state == 0)
			return fd;
		close(fd);
		usleep(2000);
	}
}

static CUresult memio(size_t off, void *buf, size_t len, int write)
{
	struct pstate st;
	char p[4200];
	int fd = wait_running(&st), mem;
	ssize_t n;

	if (fd < 0)
		return -fd;
	path_of(p, sizeof(p), getpid(), "gpu");
	mem = open(p, O_RDWR | O_CLOEXEC);
	n = mem < 0 ? -1
	    : write ? pwrite(mem, buf, len, (off_t)off)
		    : pread(mem, buf, len, (off_t)off);
	if (mem >= 0)
		close(mem);
	close(fd);
	return n == (ssize_t)len ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}

EXPORT CUresult fake_memcpy_htod(size_t off, const void *src, size_t len)
{
	return memio(off, (void *)src, len, 1);
}

EXPORT CUresult fake_memcpy_dtoh(void *dst, size_t off, size_t len)
{
	return memio(off, dst, len, 0);
}

/* An asynchronous "kernel" that keeps the GPU busy for ms milliseconds. */
EXPORT CUresult fake_launch(unsigned ms)
{
	struct pstate st;
	int fd = wait_running(&st);

	if (fd < 0)
		return -fd;
	st.busy_until = now_ms() + ms;
	store_unlock(fd, &st);
	return CUDA_SUCCESS;
}

/* Wait for the last "kernel" to end, as cudaDeviceSynchronize does. */
EXPORT CUresult fake_sync(void)
{
	for (;;) {
		struct pstate st;
		int fd = wait_running(&st);
		long long left;

		if (fd < 0)
			return -fd;
		close(fd);
		left = st.busy_until - now_ms();
		if (left <= 0)
			return CUDA_SUCCESS;
		usleep((useconds_t)(left > 50 ? 50 : left) * 1000);
	}
}

/* For fakeapi.c: this process's state and the end of its last "kernel", without waiting; -1
 * when it has not registered. */
__attribute__((visibility("hidden"))) int fake_state_now(long long *busy_until);
int fake_state_now(long long *busy_until)
{
	struct pstate st;
	int fd = open_locked(getpid(), &st);

	if (fd < 0)
		return -1;
	close(fd);
	*busy_until = st.busy_until;
	return st.state;
}

/* For fakeapi.c: a "kernel" of ms from now, once the process runs. */
__attribute__((visibility("hidden"))) CUresult fake_busy(unsigned ms);
CUresult fake_busy(unsigned ms)
{
	return fake_launch(ms);
}

__attribute__((visibility("hidden"))) void fake_event(const char *what);
void fake_event(const char *what)
{
	event("%s", what);
}

/* The GPU (nvidia-smi order) this process's memory is on now. */
EXPORT int fake_current_gpu(void)
{
	struct pstate st;
	int fd = wait_running(&st);

	if (fd < 0)
		return -1;
	close(fd);
	return st.gpu;
}

/* A large copy through the PLT, as libcuda makes when it fills the host copy of a checkpoint. */
EXPORT void *fake_copy(void *dst, const void *src, size_t n)
{
	return memcpy(dst, src, n);
}

EXPORT void *fake_move(void *dst, const void *src, size_t n)
{
	return memmove(dst, src, n);
}
