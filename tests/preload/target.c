/* target: a test program for the preload suite. Its "GPU" is the fake driver; it answers one line
 * per command read from stdin, so a test script can drive it:
 *   verify | write | kernel MS | sync | gpu | fork [cuda FILE] | map FILE | thread NAME
 *   | handler MODE | count | query | ping | quit
 *   | nccl init NAME RANK NRANKS [local] | nccl split COLOR | nccl loop MS | nccl steps | nccl stop
 *   | nccl torch start COMM MS TIMEOUT_MS | nccl torch stat (a PyTorch-shaped loop: torch.c)
 *   | drv ... (driver calls by each path a program takes: paths.c)
 * "fork cuda FILE": the child initialises the fake driver itself, fills its memory, and checks it
 * every 50 ms, writing "ok N" or "bad N" to FILE. "handler MODE" sets the app's own handler for
 * SIGUSR1 and SIGUSR2 as MODE says (sigaction, siginfo, signal, sysv, resethand, ign, dfl, reraise
 * as faulthandler's chain=True does); "count"
 * says how often it ran per signal; "query" whether sigaction() reports it back.
 * With --no-cuda it never initialises the fake driver, like a shell script or a data loader.
 * verify, write, kernel and sync call the fake driver's own functions, which cudanap's gate does
 * not see (a test decides when the process calls the driver: drv ...); with $CUDANAP_FAKE_AS_APP
 * set (the playground's), they and the first fill are driver calls by name, as a program's are:
 * the gate sees them, so the process idles, naps and wakes at its next call as a real one does.
 * "nccl init" loads the fake NCCL ($CUDANAP_FAKE_NCCL; "local": RTLD_LOCAL, as a framework's
 * private copy) and makes a communicator NAME of NRANKS ranks; "nccl loop MS" all-reduces on every
 * communicator every MS ms in a thread of its own (every other step in a group), each step waiting
 * for the other ranks' as a training loop's synchronisation does; "nccl steps" says how many steps
 * and how many failed operations so far.
 * With $TARGET_TEARDOWN set, an exit handler registered before the first driver call (as a
 * program's own is) waits $TARGET_TEARDOWN_MS (0) ms, then runs the drv command
 * $TARGET_TEARDOWN_CALL ("free export": its allocation freed, "free RC") with its answer written
 * into that file: a library's teardown at exit, or a destructor saving results. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "fakecuda.h"

void paths_command(const char *line);
void torch_command(const char *line, void *const *comms, int n);

#define SIZE (1u << 20)

static bool as_app; /* $CUDANAP_FAKE_AS_APP */

static unsigned char pattern(size_t i)
{
	return (unsigned char)(((i * 2654435761u) >> 13) ^ 0x5a);
}

/* The memory's copies and the synchronisation: the fake's own, or as an app's (as_app). */
static CUresult copy_in(const void *buf)
{
	return as_app ? cuMemcpyHtoD_v2(FAKE_MEM_VA, buf, SIZE) : fake_memcpy_htod(0, buf, SIZE);
}

static CUresult copy_out(void *buf)
{
	return as_app ? cuMemcpyDtoH_v2(buf, FAKE_MEM_VA, SIZE) : fake_memcpy_dtoh(buf, 0, SIZE);
}

static CUresult sync_all(void)
{
	return as_app ? cuCtxSynchronize() : fake_sync();
}

static int fill(void)
{
	static unsigned char buf[SIZE];

	for (size_t i = 0; i < SIZE; i++)
		buf[i] = pattern(i);
	return copy_in(buf) == CUDA_SUCCESS ? 0 : -1;
}

static int verify(void)
{
	static unsigned char buf[SIZE];

	if (copy_out(buf) != CUDA_SUCCESS)
		return -1;
	for (size_t i = 0; i < SIZE; i++)
		if (buf[i] != pattern(i))
			return -1;
	return 0;
}

/* A "kernel" of ms: by cuLaunchKernel with the arguments the fake checks (fakeapi.c), as an app. */
static CUresult launch(unsigned ms)
{
	if (!as_app)
		return fake_launch(ms);
	return cuLaunchKernel(NULL, ms, 2, 3, 4, 5, 6, 7, (CUstream)8, (void **)9, (void **)10);
}

static volatile sig_atomic_t runs[2];
static struct sigaction wanted_sa;

static void app_handler(int sig)
{
	runs[sig == SIGUSR2]++;
}

static void app_siginfo(int sig, siginfo_t *info, void *uc)
{
	(void)info;
	(void)uc;
	runs[sig == SIGUSR2]++;
}

/* What Python's faulthandler.register(sig, chain=True) does: write the tracebacks (here: take a
 * few milliseconds), put the previous disposition back, raise the signal again, re-install. */
static struct sigaction before_reraise[2];

static void app_reraise(int sig)
{
	struct sigaction mine;

	struct timespec ts = { 0, 20 * 1000 * 1000 };

	runs[sig == SIGUSR2]++;
	nanosleep(&ts, NULL);
	sigaction(sig, &before_reraise[sig == SIGUSR2], &mine);
	raise(sig);
	sigaction(sig, &mine, NULL);
}

static int set_handlers(const char *mode)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (strcmp(mode, "reraise") == 0) {
		sa.sa_handler = app_reraise;
		sa.sa_flags = SA_NODEFER;
		if (sigaction(SIGUSR1, &sa, &before_reraise[0]) < 0 ||
		    sigaction(SIGUSR2, &sa, &before_reraise[1]) < 0)
			return -1;
	} else if (strcmp(mode, "signal") == 0 || strcmp(mode, "sysv") == 0) {
		sighandler_t (*set)(int, sighandler_t) =
			strcmp(mode, "signal") == 0 ? signal : sysv_signal;

		if (set(SIGUSR1, app_handler) == SIG_ERR || set(SIGUSR2, app_handler) == SIG_ERR)
			return -1;
		sa.sa_handler = app_handler;
	} else {
		if (strcmp(mode, "siginfo") == 0) {
			sa.sa_sigaction = app_siginfo;
			sa.sa_flags = SA_SIGINFO;
		} else if (strcmp(mode, "ign") == 0) {
			sa.sa_handler = SIG_IGN;
		} else if (strcmp(mode, "dfl") == 0) {
			sa.sa_handler = SIG_DFL;
		} else {
			sa.sa_handler = app_handler;
			sa.sa_flags = strcmp(mode, "resethand") == 0 ? SA_RESETHAND : 0;
		}
		if (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0)
			return -1;
	}
	wanted_sa = sa;
	return 0;
}

/* Does sigaction() give back what the app set (after SA_RESETHAND ran: SIG_DFL)? */
static const char *query(void)
{
	struct sigaction a;

	if (sigaction(SIGUSR1, NULL, &a) < 0)
		return "error";
	if (a.sa_handler == wanted_sa.sa_handler)
		return "same";
	return a.sa_handler == SIG_DFL ? "dfl" : "other";
}

/* A forked child that uses CUDA on its own: initialise, fill, and keep checking. */
static _Noreturn void cuda_child(const char *file)
{
	char tmp[4200];
	int ok = fake_register() == CUDA_SUCCESS && fill() == 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	for (unsigned n = 1;; n++) {
		FILE *f = fopen(tmp, "w");

		ok = ok && verify() == 0;
		if (f) {
			fprintf(f, "%s %u\n", ok ? "ok" : "bad", n);
			fclose(f);
			rename(tmp, file);
		}
		usleep(50000);
	}
}

static void *idle(void *arg)
{
	for (;;)
		pause();
	return arg;
}

/* ---- NCCL, the fake one, called the way a framework calls it: through the global scope ---- */

struct nccl_id {
	char internal[128];
};
typedef int (*init_fn)(void **, int, struct nccl_id, int);
static struct {
	void *comms[4];
	int n;
	unsigned ms;
	atomic_ulong steps, errors;
	atomic_bool stop;
	pthread_t loop;
	bool looping;
} nc;

static void *nccl_fn(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static const char *nccl_init(const char *args)
{
	char name[64] = "";
	int rank, nranks, r;
	struct nccl_id id;
	init_fn init;
	const char *path = getenv("CUDANAP_FAKE_NCCL");

	if (sscanf(args, "%63s %d %d", name, &rank, &nranks) != 3 || nc.n == 4)
		return "bad";
	if (!dlopen(path ? path : "libnccl.so.2",
		    RTLD_NOW | (strstr(args, " local") ? RTLD_LOCAL : RTLD_GLOBAL)))
		return "noload";
	init = (init_fn)nccl_fn("ncclCommInitRank");
	if (!init)
		return "nosym";
	memset(&id, 0, sizeof(id));
	snprintf(id.internal, sizeof(id.internal), "%s", name);
	r = init(&nc.comms[nc.n], nranks, id, rank);
	if (r)
		return "failed";
	nc.n++;
	return "ok";
}

static const char *nccl_split(int color)
{
	int (*split)(void *, int, int, void **, void *) =
		(int (*)(void *, int, int, void **, void *))nccl_fn("ncclCommSplit");

	if (!split || !nc.n || nc.n == 4 || split(nc.comms[0], color, 0, &nc.comms[nc.n], NULL))
		return "failed";
	nc.n++;
	return "ok";
}

static void *nccl_loop(void *arg)
{
	int (*allreduce)(const void *, void *, size_t, int, int, void *, void *) = (int (*)(
		const void *, void *, size_t, int, int, void *, void *))nccl_fn("ncclAllReduce");
	int (*start)(void) = (int (*)(void))nccl_fn("ncclGroupStart");
	int (*end)(void) = (int (*)(void))nccl_fn("ncclGroupEnd");
	void (*wait)(void *) = (void (*)(void *))nccl_fn("fakeNcclWait");

	(void)arg;
	while (!atomic_load(&nc.stop)) {
		unsigned long s = atomic_load(&nc.steps);

		if (s % 2)
			start();
		for (int i = 0; i < nc.n; i++)
			if (allreduce(NULL, NULL, 1, 0, 0, nc.comms[i], NULL))
				atomic_fetch_add(&nc.errors, 1);
		if (s % 2)
			end();
		for (int i = 0; wait && i < nc.n; i++)
			wait(nc.comms[i]);
		atomic_fetch_add(&nc.steps, 1);
		usleep(nc.ms * 1000);
	}
	return NULL;
}

static void nccl_command(const char *line)
{
	if (strncmp(line, "nccl init ", 10) == 0) {
		printf("nccl %s\n", nccl_init(line + 10));
	} else if (strncmp(line, "nccl split ", 11) == 0) {
		printf("nccl %s\n", nccl_split(atoi(line + 11)));
	} else if (strncmp(line, "nccl loop ", 10) == 0) {
		nc.ms = (unsigned)atoi(line + 10);
		atomic_store(&nc.stop, false);
		nc.looping = pthread_create(&nc.loop, NULL, nccl_loop, NULL) == 0;
		printf("nccl %s\n", nc.looping ? "ok" : "failed");
	} else if (strncmp(line, "nccl steps", 10) == 0) {
		printf("nccl %lu %lu\n", (unsigned long)atomic_load(&nc.steps),
		       (unsigned long)atomic_load(&nc.errors));
	} else if (strncmp(line, "nccl torch", 10) == 0) {
		torch_command(line + 5, nc.comms, nc.n);
	} else if (strncmp(line, "nccl stop", 9) == 0) {
		atomic_store(&nc.stop, true);
		if (nc.looping)
			pthread_join(nc.loop, NULL);
		nc.looping = false;
		printf("nccl ok\n");
	} else {
		printf("unknown\n");
	}
}

/* Another process's GPU memory taken and given back, by the runtime's calls ("open", "close"),
 * the driver's ("dopen", "dclose", "import") or the fake NCCL's own ("nccl"). */
static int ipc_command(const char *what)
{
	static void *rt;
	static CUdeviceptr drv;
	CUipcMemHandle h;
	CUmemGenericAllocationHandle m;
	int (*nccl_open)(void);

	memset(&h, 0, sizeof(h));
	if (strcmp(what, "open") == 0)
		return cudaIpcOpenMemHandle(&rt, h, 1);
	if (strcmp(what, "close") == 0)
		return cudaIpcCloseMemHandle(rt);
	if (strcmp(what, "dopen") == 0)
		return cuIpcOpenMemHandle_v2(&drv, h, 1);
	if (strcmp(what, "dclose") == 0)
		return cuIpcCloseMemHandle(drv);
	if (strcmp(what, "import") == 0)
		return cuMemImportFromShareableHandle(&m, NULL, 1);
	if (strcmp(what, "nccl") == 0) {
		const char *path = getenv("CUDANAP_FAKE_NCCL");

		if (!dlopen(path ? path : "libnccl.so.2", RTLD_NOW | RTLD_GLOBAL))
			return -1;
		nccl_open = (int (*)(void))nccl_fn("fakeNcclIpcOpen");
		return nccl_open ? nccl_open() : -1;
	}
	return -1;
}

static void teardown(void)
{
	const char *ms = getenv("TARGET_TEARDOWN_MS");
	struct timespec ts = { 0, 0 };

	if (ms) {
		ts.tv_sec = atoi(ms) / 1000;
		ts.tv_nsec = (long)(atoi(ms) % 1000) * 1000000L;
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			; /* a signal, cudanap's too: the rest of the wait */
	}
	if (!freopen(getenv("TARGET_TEARDOWN"), "w", stdout))
		return;
	paths_command(getenv("TARGET_TEARDOWN_CALL") ? getenv("TARGET_TEARDOWN_CALL")
						     : "free export");
	fflush(stdout);
}

/* fork, fork cuda FILE: a child that idles 30 s, or uses CUDA itself (cuda_child). */
static void fork_command(char *line)
{
	pid_t c;

	line[strcspn(line, "\n")] = '\0';
	c = fork();
	if (c == 0 && strncmp(line, "fork cuda ", 10) == 0)
		cuda_child(line + 10);
	if (c == 0) {
		for (int i = 0; i < 300; i++)
			usleep(100000);
		_exit(0);
	}
	printf("child %d\n", (int)c);
}

/* map FILE: the file mapped, so that its path shows in /proc/self/maps like a loaded library. */
static void map_command(char *line)
{
	int fd;

	line[strcspn(line, "\n")] = '\0';
	fd = open(line + 4, O_RDONLY);
	printf("map %s\n", fd >= 0 && mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) != MAP_FAILED
				   ? "ok"
				   : "failed");
}

/* thread NAME: a thread with this name, as runtimes name their helpers. */
static void thread_command(char *line)
{
	pthread_t t;

	line[strcspn(line, "\n")] = '\0';
	line[7 + 15] = '\0';
	printf("thread %s\n",
	       pthread_create(&t, NULL, idle, NULL) == 0 && pthread_setname_np(t, line + 7) == 0
		       ? "ok"
		       : "failed");
}

/* One line of the test's: answered on stdout. False for quit. */
static bool command(char *line)
{
	if (strncmp(line, "verify", 6) == 0) {
		printf("verify %s\n", verify() == 0 ? "ok" : "bad");
	} else if (strncmp(line, "write", 5) == 0) {
		printf("write %s\n", fill() == 0 ? "ok" : "bad");
	} else if (strncmp(line, "kernel ", 7) == 0) {
		printf("kernel %s\n",
		       launch((unsigned)atoi(line + 7)) == CUDA_SUCCESS ? "ok" : "failed");
	} else if (strncmp(line, "sync", 4) == 0) {
		printf("sync %s\n", sync_all() == CUDA_SUCCESS ? "ok" : "failed");
	} else if (strncmp(line, "gpu", 3) == 0) {
		printf("gpu %d\n", fake_current_gpu());
	} else if (strncmp(line, "fork", 4) == 0) {
		fork_command(line);
	} else if (strncmp(line, "map ", 4) == 0) {
		map_command(line);
	} else if (strncmp(line, "thread ", 7) == 0) {
		thread_command(line);
	} else if (strncmp(line, "handler ", 8) == 0) {
		line[strcspn(line, "\n")] = '\0';
		printf("handler %s\n", set_handlers(line + 8) == 0 ? "ok" : "failed");
	} else if (strncmp(line, "count", 5) == 0) {
		printf("count %d %d\n", (int)runs[0], (int)runs[1]);
	} else if (strncmp(line, "query", 5) == 0) {
		printf("query %s\n", query());
	} else if (strncmp(line, "nccl ", 5) == 0) {
		line[strcspn(line, "\n")] = '\0';
		nccl_command(line);
	} else if (strncmp(line, "ipc ", 4) == 0) {
		line[strcspn(line, "\n")] = '\0';
		printf("ipc %s\n", ipc_command(line + 4) == 0 ? "ok" : "failed");
	} else if (strncmp(line, "drv ", 4) == 0) {
		line[strcspn(line, "\n")] = '\0';
		paths_command(line + 4);
	} else if (strncmp(line, "ping", 4) == 0) {
		printf("pong\n");
	} else if (strncmp(line, "quit", 4) == 0) {
		return false;
	} else {
		printf("unknown\n");
	}
	return true;
}

int main(int argc, char **argv)
{
	int cuda = !(argc > 1 && strcmp(argv[1], "--no-cuda") == 0);
	char line[512];

	setvbuf(stdout, NULL, _IOLBF, 0);
	as_app = getenv("CUDANAP_FAKE_AS_APP") && *getenv("CUDANAP_FAKE_AS_APP");
	if (getenv("TARGET_TEARDOWN"))
		atexit(teardown);
	if (cuda && (fake_register() != CUDA_SUCCESS || (as_app && cuInit(0) != CUDA_SUCCESS) ||
		     fill() < 0)) {
		printf("init failed\n");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin) && command(line))
		;
	return 0;
}
