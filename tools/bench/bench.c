/* cudanap-bench: suspend and resume timings of cudanap against the driver alone, in one run, each
 * beside its baseline (docs/FILES.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cn_config.h"
#include "cn_status.h"
#include "cn_words.h"
#include "cuda_abi.h"
#include "floors.h"
#include "median.h"

#define MAX_REPS 16

static struct {
	const char *preload, *holdmem, *dir;
	int reps, cycles;
	bool experiments, floors_only, no_overhead;
	double floors_mib;
} opt = { .reps = 3, .cycles = 100, .floors_mib = 1024 };

static struct {
	CUresult (*init)(unsigned);
	CUresult (*lock)(int, CUcheckpointLockArgs *);
	CUresult (*checkpoint)(int, CUcheckpointCheckpointArgs *);
	CUresult (*restore)(int, CUcheckpointRestoreArgs *);
	CUresult (*unlock)(int, CUcheckpointUnlockArgs *);
	/* for the pinned copy floors */
	CUresult (*ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_release)(CUdevice);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*host_alloc)(void **, size_t);
	CUresult (*host_free)(void *);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
} cu;

/* The floors of this run: the host's (floors.c) and the GPU's pinned copies, GiB/s: one large copy
 * each way, and the driver's own pattern, 2 MiB blocks one at a time, each waited for. */
static struct cn_floors host;
static double pinned_d2h, pinned_h2d, block_d2h, block_h2d;
#define DRIVER_BLOCK (2u << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "cudanap-bench: %s\n", what);
	exit(1);
}

/* ---- holdmem as a child answering one line per command ---- */

struct child {
	pid_t pid;
	int in, out;
};

static bool child_line(struct child *c, char *buf, size_t len, int timeout_ms)
{
	size_t o = 0;

	while (o + 1 < len) {
		struct pollfd p = { .fd = c->out, .events = POLLIN };
		char ch;

		if (poll(&p, 1, timeout_ms) <= 0 || read(c->out, &ch, 1) != 1)
			return false;
		if (ch == '\n')
			break;
		buf[o++] = ch;
	}
	buf[o] = '\0';
	return true;
}

static bool child_ask(struct child *c, const char *cmd, char *buf, size_t len, int timeout_ms)
{
	if (dprintf(c->in, "%s\n", cmd) < 0)
		return false;
	return child_line(c, buf, len, timeout_ms);
}

/* holdmem GIB, with the preload and ini when ini is set. */
static void child_start(struct child *c, double gib, const char *ini)
{
	int to[2], from[2];
	char arg[32], line[128];

	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
		die("pipe");
	snprintf(arg, sizeof(arg), "%g", gib);
	c->pid = fork();
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		if (ini) {
			setenv("LD_PRELOAD", opt.preload, 1);
			setenv("CUDANAP_CONFIG", ini, 1);
		}
		execl(opt.holdmem, opt.holdmem, arg, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = to[1];
	c->out = from[0];
	if (!child_line(c, line, sizeof(line), 300000) || strncmp(line, "ready", 5) != 0)
		die("holdmem did not start");
}

static void child_stop(struct child *c)
{
	char buf[64];

	child_ask(c, "quit", buf, sizeof(buf), 1000);
	close(c->in);
	close(c->out);
	waitpid(c->pid, NULL, 0);
}

static void verify(struct child *c)
{
	char buf[64];

	if (!child_ask(c, "verify", buf, sizeof(buf), 600000) || strcmp(buf, "verify ok") != 0) {
		fprintf(stderr, "cudanap-bench: data check after resume: %s\n", buf);
		exit(1);
	}
}

/* ---- one suspend/resume cycle each way ---- */

struct sample {
	double suspend, resume, staged_mib, prefault_ms, unmap_ms, copy_mib, copy_ms,
		copy_ms_resume;
	double signal_ms, prepare_ms; /* signal -> first driver call; the prepare before it */
	struct cn_status sus, res;    /* the status files after the suspend and the resume */
};

static void driver_cycle(struct child *c, struct sample *s)
{
	CUcheckpointLockArgs la = { 0 };
	CUcheckpointCheckpointArgs ca = { { 0 } };
	CUcheckpointRestoreArgs ra;
	CUcheckpointUnlockArgs ua = { { 0 } };
	double t0 = now_s();

	memset(&ra, 0, sizeof(ra));
	if (cu.lock(c->pid, &la) || cu.checkpoint(c->pid, &ca))
		die("driver: lock/checkpoint failed");
	s->suspend = now_s() - t0;
	t0 = now_s();
	if (cu.restore(c->pid, &ra) || cu.unlock(c->pid, &ua))
		die("driver: restore/unlock failed");
	s->resume = now_s() - t0;
	s->staged_mib = s->prefault_ms = s->unmap_ms = s->copy_mib = s->copy_ms = -1;
	s->copy_ms_resume = -1;
}

static double kill_s; /* when signal_wait sent its signal */

/* Signal, then wait for the status file to show the action done. */
static double signal_wait(struct child *c, int sig, struct cn_status *st)
{
	unsigned long seq;
	double t0;

	if (cn_status_read(opt.dir, c->pid, st) < 0)
		die("no status file");
	seq = st->seq;
	t0 = kill_s = now_s();
	kill(c->pid, sig);
	do {
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	} while (cn_status_read(opt.dir, c->pid, st) < 0 || st->seq <= seq || st->busy);
	if (st->result != CN_RES_OK) {
		fprintf(stderr, "cudanap-bench: %s: %s\n", cn_status_result(st), st->message);
		exit(1);
	}
	return now_s() - t0;
}

/* cudanap prepare, as the CLI sends it: the suspend signal queued with cudanap's value. */
static void queue_wait(struct child *c, unsigned long seq)
{
	union sigval v = { .sival_int = CN_SIGVAL_PREPARE };
	struct cn_status st;

	if (sigqueue(c->pid, SIGUSR1, v) < 0)
		die("sigqueue");
	do {
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	} while (cn_status_read(opt.dir, c->pid, &st) < 0 || st.seq <= seq || st.busy);
	if (st.result != CN_RES_OK) {
		fprintf(stderr, "cudanap-bench: prepare: %s: %s\n", cn_status_result(&st),
			st.message);
		exit(1);
	}
}

static void cudanap_cycle(struct child *c, struct sample *s, bool prepared)
{
	struct cn_status st;

	s->prepare_ms = -1;
	if (prepared) {
		if (cn_status_read(opt.dir, c->pid, &st) < 0)
			die("no status file");
		queue_wait(c, st.seq);
		if (cn_status_read(opt.dir, c->pid, &st) < 0 || !st.prepared)
			die("the prepare did not leave a prepared copy");
		s->prepare_ms = st.step_ms[CN_STEP_PREPARE];
	}
	s->suspend = signal_wait(c, SIGUSR1, &st);
	s->signal_ms = (double)st.call_ns / 1e6 - kill_s * 1e3;
	s->sus = st;
	s->staged_mib = st.staged_mib;
	s->prefault_ms = st.prefault_ms;
	s->copy_mib = st.copy_mib;
	s->copy_ms = st.copy_ms;
	s->resume = signal_wait(c, SIGUSR2, &st);
	s->unmap_ms = st.unmap_ms;
	s->copy_ms_resume = st.copy_ms;
	s->res = st;
}

/* ---- modes, medians, the table ---- */

struct mode {
	const char *name, *perf; /* perf: the [performance] section; NULL: the driver alone */
	bool prepared;		 /* each suspend after a cudanap prepare */
	bool phases;		 /* print where its time goes */
};

static const char *write_ini(const char *name, const char *perf)
{
	static char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.log", opt.dir, name);
	unlink(path); /* one log per process: phases() reads it */
	snprintf(path, sizeof(path), "%s/%s.ini", opt.dir, name);
	f = fopen(path, "w");
	if (!f)
		die("cannot write an INI");
	fprintf(f,
		"[status]\ndir = %s\n[log]\nlevel = debug\ntarget = %s/%s.log\n[lock]\ntimeout_ms "
		"= 0\n"
		"[performance]\n%s\n",
		opt.dir, opt.dir, name, perf);
	fclose(f);
	return path;
}

/* The median over the repetitions of one figure of each sample. */
#define MEDIAN_OF(samples, n, expr)                                                                \
	({                                                                                         \
		double v_[MAX_REPS];                                                               \
		for (int i_ = 0; i_ < (n); i_++) {                                                 \
			const struct sample *x = &(samples)[i_];                                   \
			v_[i_] = (expr);                                                           \
		}                                                                                  \
		cn_median(v_, (n));                                                                \
	})

/* The restore's reservation in parts, from the agent's debug lines in the mode's log: medians. */
static void reserve_parts(const char *name, double *check, double *hold)
{
	double v[2][MAX_REPS];
	char path[4200], line[512];
	int n = 0;
	FILE *f;

	*check = *hold = -1;
	snprintf(path, sizeof(path), "%s/%s.log", opt.dir, name);
	f = fopen(path, "r");
	if (!f)
		return;
	while (n < MAX_REPS && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "restore: ");

		if (p && sscanf(p, "restore: %lf ms checking room, %lf ms holding", &v[0][n],
				&v[1][n]) == 2)
			n++;
	}
	fclose(f);
	if (n) {
		*check = cn_median(v[0], n);
		*hold = cn_median(v[1], n);
	}
}

static void phase_row(const char *what, double ms, double floor_s, const char *floor_is)
{
	printf("| %s | %.3f |", what, ms / 1000);
	if (floor_s > 0)
		printf(" %.3f | %.2fx | %s |\n", floor_s, ms / 1000 / floor_s, floor_is);
	else
		printf(" - | - | %s |\n", floor_is);
}

/* Where a mode's time goes, phase by phase, beside the floor for that many bytes on this machine:
 * medians over the repetitions. The floors: populating huge pages and memcpy at the thread count
 * cudanap uses, pinned DMA each way; a pipelined copy's floor is the slower of DMA and memcpy.
 * Device to host the driver waits for each 2 MiB block's DMA before the next, so its DMA floor is
 * that pattern's rate; host to device it does not wait, so its floor is one large copy's. */
static void phases(double gib, const struct mode *m, const struct sample *s, int n,
		   const double reserve[2])
{
	double staged = MEDIAN_OF(s, n, x->sus.staged_mib) / 1024,
	       copy_s = MEDIAN_OF(s, n, x->sus.copy_mib) / 1024,
	       copy_r = MEDIAN_OF(s, n, x->res.copy_mib) / 1024,
	       pf = MEDIAN_OF(s, n, x->sus.prefault_ms > 0 ? x->sus.prefault_ms : 0),
	       cs = MEDIAN_OF(s, n, x->sus.copy_ms > 0 ? x->sus.copy_ms : 0),
	       cr = MEDIAN_OF(s, n, x->res.copy_ms > 0 ? x->res.copy_ms : 0),
	       lock = MEDIAN_OF(s, n, x->sus.step_ms[CN_STEP_LOCK]),
	       ckpt = MEDIAN_OF(s, n, x->sus.step_ms[CN_STEP_CHECKPOINT]),
	       rest = MEDIAN_OF(s, n, x->res.step_ms[CN_STEP_RESTORE]),
	       unlock = MEDIAN_OF(s, n, x->res.step_ms[CN_STEP_UNLOCK]),
	       resv = MEDIAN_OF(s, n, x->res.reserve_ms > 0 ? x->res.reserve_ms : 0),
	       unmap = MEDIAN_OF(s, n, x->res.unmap_ms > 0 ? x->res.unmap_ms : 0),
	       sus = MEDIAN_OF(s, n, x->suspend) * 1000, res = MEDIAN_OF(s, n, x->resume) * 1000,
	       sig = MEDIAN_OF(s, n, x->signal_ms), thp = host.populate_thp[1], mc = host.memcpy[1];
	double f_pop = thp > 0 ? staged / thp : 0, f_cs = mc > 0 ? copy_s / mc : 0,
	       f_cr = mc > 0 ? copy_r / mc : 0, f_d2h = block_d2h > 0 ? staged / block_d2h : 0,
	       f_h2d = pinned_h2d > 0 ? staged / pinned_h2d : 0;
	char what[64];

	if (m->prepared)
		f_pop = 0;
	printf("\n%g GiB, cudanap %s: where the time goes (medians of %d; host copy %.2f GiB; "
	       "floors at %u threads)\n\n| phase | s | floor s | x floor | floor |\n"
	       "| --- | --- | --- | --- | --- |\n",
	       gib, m->name, n, staged, host.threads);
	if (m->prepared)
		phase_row("prepare, before the notice ran out (not in the suspend)",
			  MEDIAN_OF(s, n, x->prepare_ms), thp > 0 ? staged / thp : 0,
			  "huge-page population");
	phase_row("signal to the first driver call", sig, 0, "");
	phase_row("lock", lock, 0, "idle GPU: nothing to wait for");
	phase_row(m->prepared ? "host pages (prepared: none)" : "host pages (prefault)", pf, f_pop,
		  "huge-page population");
	phase_row("device to host: libcuda's copies on threads", cs, f_cs, "memcpy");
	phase_row("device to host: the rest of the driver's call (DMA, bookkeeping)",
		  ckpt - pf - cs, 0, "");
	phase_row("device to host, the driver's call without host pages", ckpt - pf,
		  f_d2h > f_cs ? f_d2h : f_cs, "max(2 MiB D2H blocks one at a time, memcpy)");
	phase_row("suspend: status, round trips", sus - lock - ckpt - sig, 0, "");
	phase_row("**suspend, signal to status**", sus, f_pop + (f_d2h > f_cs ? f_d2h : f_cs),
		  m->prepared ? "max(D2H blocks, memcpy)" : "population + max(D2H blocks, memcpy)");
	snprintf(what, sizeof(what), "reservation (room check %.1f, hold %.1f ms)", reserve[0],
		 reserve[1]);
	phase_row(what, resv, 0, "");
	phase_row("host to device: libcuda's copies on threads", cr, f_cr, "memcpy");
	phase_row("host to device: the rest of the driver's call (DMA, bookkeeping)",
		  rest - resv - cr - unmap, f_h2d, "pinned H2D");
	phase_row("the driver's unmap of the host copy (freed after the status)", unmap, 0, "");
	phase_row("unlock", unlock, 0, "");
	phase_row("resume: status, round trips", res - rest - unlock, 0, "");
	phase_row("**resume, signal to status**", res, f_h2d > f_cr ? f_h2d : f_cr,
		  "max(H2D, memcpy)");
	fflush(stdout);
}

/* The phase tables wait for the end of the size table. */
#define MAX_TABLES 16
static struct table {
	double gib;
	const struct mode *m;
	struct sample s[MAX_REPS];
	double reserve[2]; /* the reservation's parts: room check, hold */
} tables[MAX_TABLES];
static int n_tables;

static void run_size(double gib, const struct mode *modes, int nmodes)
{
	double base_s = 0, base_r = 0;

	for (int m = 0; m < nmodes; m++) {
		struct sample s[MAX_REPS];
		double sus[MAX_REPS], res[MAX_REPS], pf = 0, um = 0, mib = 0, cm = 0, cs = 0,
						     cr = 0;
		struct child c;

		child_start(&c, gib,
			    modes[m].perf ? write_ini(modes[m].name, modes[m].perf) : NULL);
		for (int r = 0; r < opt.reps; r++) {
			if (modes[m].perf)
				cudanap_cycle(&c, &s[r], modes[m].prepared);
			else
				driver_cycle(&c, &s[r]);
			verify(&c);
			sus[r] = s[r].suspend;
			res[r] = s[r].resume;
			mib += s[r].staged_mib > 0 ? s[r].staged_mib / opt.reps : 0;
			pf += s[r].prefault_ms > 0 ? s[r].prefault_ms / opt.reps : 0;
			um += s[r].unmap_ms > 0 ? s[r].unmap_ms / opt.reps : 0;
			cm += s[r].copy_mib > 0 ? s[r].copy_mib / opt.reps : 0;
			cs += s[r].copy_ms > 0 ? s[r].copy_ms / opt.reps : 0;
			cr += s[r].copy_ms_resume > 0 ? s[r].copy_ms_resume / opt.reps : 0;
		}
		child_stop(&c);
		double ms = cn_median(sus, opt.reps), mr = cn_median(res, opt.reps);

		if (m == 0)
			base_s = ms, base_r = mr;
		printf("| %5g | %-9s | %7.2f | %7.2f | %5.2fx | %5.2fx | %s |", gib, modes[m].name,
		       ms, mr, base_s / ms, base_r / mr, "verified");
		if (mib > 0)
			printf(" host copy %.0f MiB, prefault %.2f s, unmap %.3f s;", mib,
			       pf / 1000, um / 1000);
		if (cm > 0)
			printf(" libcuda copies %.0f MiB in %.2f s (suspend) %.2f s (resume)", cm,
			       cs / 1000, cr / 1000);
		printf("\n");
		fflush(stdout);
		if (modes[m].phases && n_tables < MAX_TABLES) {
			struct table *t = &tables[n_tables++];

			t->gib = gib;
			t->m = &modes[m];
			memcpy(t->s, s, sizeof(t->s));
			reserve_parts(modes[m].name, &t->reserve[0], &t->reserve[1]);
		}
	}
}

/* Signal sent -> the controller's first driver call, over many small cycles. Each suspend is sent
 * 20 ms after the resume before it reported: the resume's host copy is unmapped after its status,
 * and a signal in that time waits for the unmap (1.8 ms instead of 0.14 at 64 MiB on an H100). */
static void latency(void)
{
	double v[1000], cold = 0;
	struct child c;
	struct cn_status st;
	int n = opt.cycles > 1000 ? 1000 : opt.cycles;

	child_start(&c, 0.0625, write_ini("latency", "hugepages = true"));
	for (int i = -1; i < n; i++) {
		double ms;

		signal_wait(&c, SIGUSR1, &st);
		ms = (double)st.call_ns / 1e6 - kill_s * 1e3;
		if (i < 0)
			cold = ms;
		else
			v[i] = ms;
		signal_wait(&c, SIGUSR2, &st);
		usleep(20000);
	}
	verify(&c);
	child_stop(&c);
	qsort(v, (size_t)n, sizeof(v[0]), cn_cmp_double);
	printf("\nsignal -> first driver call, %d cycles of 64 MiB, each 20 ms after the last "
	       "resume: "
	       "p50 %.3f ms, p99 %.3f ms, "
	       "max %.3f ms (the very first, which loads libcuda in the controller: %.1f ms)\n",
	       n, v[n / 2], v[(n * 99 + 99) / 100 - 1], v[n - 1], cold);
}

/* Median microseconds per launch of 500000 empty kernels, over 8 processes in ABBA order (so
 * that drifting clocks favour neither side); side 1 runs with ini_b (NULL: without cudanap). */
static void launch_loop(const char *ini_a, const char *ini_b, double *a, double *b)
{
	double v[2][8];

	for (int r = 0; r < 8; r++) {
		for (int k = 0; k < 2; k++) {
			int side = (r % 2) ^ k;
			struct child c;
			char buf[64];

			child_start(&c, 0.0625, side ? ini_b : ini_a);
			child_ask(&c, "launch 20000", buf, sizeof(buf), 60000); /* warm up */
			if (!child_ask(&c, "launch 500000", buf, sizeof(buf), 600000))
				die("launch loop");
			v[side][r / 2 + (r % 2) * 4] = atof(buf + 7) / 500000;
			child_stop(&c);
		}
	}
	*a = cn_median(v[0], 8);
	*b = cn_median(v[1], 8);
}

/* The steady-state cost of the preload, next to the same comparison with no preload on either
 * side: the difference two identical sides show is the noise floor of this measurement. */
static void overhead(void)
{
	const char *ini = write_ini("overhead", "hugepages = true");
	double w, wo, a1, a2;

	launch_loop(NULL, ini, &wo, &w);
	launch_loop(NULL, NULL, &a1, &a2);
	printf("steady state, 500000 empty kernel launches, median of 8 processes each: %.3f "
	       "us/launch with cudanap, %.3f without: ratio %.4f; control without/without: "
	       "%.3f vs %.3f, ratio %.4f\n",
	       w, wo, w / wo, a2, a1, a2 / a1);
}

static void load_driver(void)
{
	const char *path = getenv("CUDANAP_LIBCUDA");
	void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);

	if (!h)
		die("cannot load libcuda.so.1: this benchmark needs an NVIDIA GPU and driver");
	cu.init = (CUresult(*)(unsigned))dlsym(h, "cuInit");
	cu.lock = (CUresult(*)(int, CUcheckpointLockArgs *))dlsym(h, "cuCheckpointProcessLock");
	cu.checkpoint = (CUresult(*)(int, CUcheckpointCheckpointArgs *))dlsym(
		h, "cuCheckpointProcessCheckpoint");
	cu.restore =
		(CUresult(*)(int, CUcheckpointRestoreArgs *))dlsym(h, "cuCheckpointProcessRestore");
	cu.unlock =
		(CUresult(*)(int, CUcheckpointUnlockArgs *))dlsym(h, "cuCheckpointProcessUnlock");
	if (!cu.init || !cu.lock || !cu.checkpoint || !cu.restore || !cu.unlock)
		die("the driver has no checkpoint API");
	cu.ctx_retain = (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
	cu.ctx_release = (CUresult(*)(CUdevice))dlsym(h, "cuDevicePrimaryCtxRelease_v2");
	cu.ctx_set_current = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
	cu.mem_alloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
	cu.mem_free = (CUresult(*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
	cu.host_alloc = (CUresult(*)(void **, size_t))dlsym(h, "cuMemAllocHost_v2");
	cu.host_free = (CUresult(*)(void *))dlsym(h, "cuMemFreeHost");
	cu.dtoh = (CUresult(*)(void *, CUdeviceptr, size_t))dlsym(h, "cuMemcpyDtoH_v2");
	cu.htod = (CUresult(*)(CUdeviceptr, const void *, size_t))dlsym(h, "cuMemcpyHtoD_v2");
	cu.init(0);
}

/* Seconds to copy bytes between d and h in one synchronous call, or in blocks of `block` bytes
 * one after another; a negative value if a copy failed. */
static double timed_copy(bool to_host, CUdeviceptr d, char *h, size_t bytes, size_t block)
{
	double t0 = now_s();

	for (size_t o = 0; o < bytes; o += block) {
		size_t n = bytes - o < block ? bytes - o : block;

		if ((to_host ? cu.dtoh(h + o, d + o, n) : cu.htod(d + o, h + o, n)) != CUDA_SUCCESS)
			return -1;
	}
	return now_s() - t0;
}

/* GiB/s of synchronous copies between GPU 0 and pinned host memory, best of three each way, in one
 * call and in the driver's 2 MiB blocks; the context is released after, so that the GPU is as the
 * runs below want it. 0 where it failed. */
static void pinned_floors(size_t bytes)
{
	CUcontext ctx;
	CUdeviceptr d = 0;
	void *h = NULL;
	struct {
		bool to_host;
		size_t block;
		double *best;
	} way[4] = { { false, bytes, &pinned_h2d },
		     { true, bytes, &pinned_d2h },
		     { false, DRIVER_BLOCK, &block_h2d },
		     { true, DRIVER_BLOCK, &block_d2h } };

	if (!cu.ctx_retain || !cu.mem_alloc || !cu.host_alloc || !cu.dtoh || !cu.htod ||
	    cu.ctx_retain(&ctx, 0) != CUDA_SUCCESS)
		return;
	cu.ctx_set_current(ctx);
	if (cu.mem_alloc(&d, bytes) == CUDA_SUCCESS && cu.host_alloc(&h, bytes) == CUDA_SUCCESS) {
		memset(h, 1, bytes);
		for (int i = 0; i < 4; i++) /* the first of each way warms up */
			for (int w = 0; w < 4; w++) {
				double t = timed_copy(way[w].to_host, d, h, bytes, way[w].block),
				       r = t > 0 ? (double)bytes / (1u << 30) / t : 0;

				if (i && r > *way[w].best)
					*way[w].best = r;
			}
	}
	if (h)
		cu.host_free(h);
	if (d)
		cu.mem_free(d);
	cu.ctx_set_current(NULL);
	cu.ctx_release(0);
	printf("\npinned copies, GPU 0, %.0f MiB, best of 3: device to host %.2f GiB/s, host to "
	       "device %.2f GiB/s; in %u MiB blocks one at a time (the driver's pattern): %.2f and "
	       "%.2f GiB/s\n",
	       (double)bytes / (1u << 20), pinned_d2h, pinned_h2d, DRIVER_BLOCK >> 20, block_d2h,
	       block_h2d);
}

static void header(void)
{
	char buf[256] = "";
	FILE *f =
		popen("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1"
		      "; cat /sys/kernel/mm/transparent_hugepage/enabled "
		      "/sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null | tr '\\n' ' '",
		      "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	time_t t = time(NULL);
	char day[32];

	if (f)
		pclose(f);
	buf[n] = '\0';
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ';';
	strftime(day, sizeof(day), "%Y-%m-%d", gmtime(&t));
	printf("cudanap-bench %s: %s (THP enabled; defrag)\n%d repetitions, medians; ratio = "
	       "driver "
	       "alone / mode (higher is faster)\n\n",
	       day, buf, opt.reps);
	printf("| GiB | mode | suspend s | resume s | suspend x | resume x | data |\n"
	       "| --- | --- | --- | --- | --- | --- | --- |\n");
}

static const struct mode bench_modes[] = {
	{ "driver", NULL, false, false },
	{ "off", "hugepages = false\ncopy_threads = 0", false, false },
	{ "on", "hugepages = true", false, true },
	{ "prepared", "hugepages = true", true, true },
};
static const struct mode extra_modes[] = {
	{ "driver", NULL, false, false },
	{ "on", "hugepages = true", false, false },
	{ "nocopy", "copy_threads = 0", false, false },
	{ "0pf", "prefault_threads = 0", false, false },
	{ "16cp", "copy_threads = 16", false, false },
	{ "keep", "keep_host_buffer = true", false, false },
	{ "noreserve", "hugepages = true\n[restore]\nreserve = false", false, false },
};

/* The options into opt, --sizes into sizes. */
static void parse_args(int argc, char **argv, char *sizes, size_t len)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc)
			opt.preload = argv[++i];
		else if (strcmp(argv[i], "--holdmem") == 0 && i + 1 < argc)
			opt.holdmem = argv[++i];
		else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
			snprintf(sizes, len, "%s", argv[++i]);
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			opt.reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc)
			opt.cycles = atoi(argv[++i]);
		else if (strcmp(argv[i], "--experiments") == 0)
			opt.experiments = true;
		else if (strcmp(argv[i], "--no-overhead") == 0)
			opt.no_overhead = true;
		else if (strcmp(argv[i], "--floors-only") == 0)
			opt.floors_only = true;
		else if (strcmp(argv[i], "--floors-mib") == 0 && i + 1 < argc)
			opt.floors_mib = atof(argv[++i]);
		else
			die("usage: cudanap-bench --preload LIB --holdmem PROG [--sizes 1,8,32] "
			    "[--reps 3] [--cycles 100] [--experiments] [--no-overhead] "
			    "[--floors-mib "
			    "1024]\n"
			    "       cudanap-bench --floors-only [--sizes 1,8,32] [--floors-mib "
			    "1024]");
	}
}

/* The host's own floors first: no GPU needed, and the map for the table below. With
 * --floors-only, the exit status (non-zero when a floor could not be measured); else -1. */
static int host_floors(const char *sizes)
{
	struct cn_floors *f = &host;
	double gib[16];
	int n = 0;
	char copy[64];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	snprintf(copy, sizeof(copy), "%s", sizes);
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n < 16;
	     t = strtok_r(NULL, ",", &save))
		if (atof(t) > 0)
			gib[n++] = atof(t);
	if (opt.floors_mib < 64)
		die("--floors-mib is at least 64");
	cn_floors_measure((size_t)(opt.floors_mib * (1 << 20)),
			  cpus > 8 ? 8 : (unsigned)(cpus > 0 ? cpus : 1),
			  (unsigned)(cpus > 0 ? cpus : 1), f);
	cn_floors_print(f, gib, n);
	if (opt.floors_only)
		return !(f->populate_4k[1] > 0 && f->populate_thp[1] > 0 && f->memcpy[1] > 0);
	return -1;
}

/* The phases of each size's runs, one table each, printed after them all. */
static void print_phases(void)
{
	for (int i = 0; i < n_tables; i++)
		phases(tables[i].gib, tables[i].m, tables[i].s, opt.reps, tables[i].reserve);
	n_tables = 0;
}

/* Each size in every mode, then the experiments, the latency and the overhead. */
static void run_all(char *sizes)
{
	for (char *save = NULL, *t = strtok_r(sizes, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (atof(t) > 0)
			run_size(atof(t), bench_modes,
				 sizeof(bench_modes) / sizeof(bench_modes[0]));
	print_phases();
	if (opt.experiments) {
		run_size(8, extra_modes, sizeof(extra_modes) / sizeof(extra_modes[0]));
		print_phases();
	}
	if (opt.cycles > 0)
		latency();
	if (!opt.no_overhead)
		overhead();
}

int main(int argc, char **argv)
{
	char sizes[64] = "1,8,32", dir[] = "/tmp/cudanap-bench-XXXXXX";
	int rc;

	parse_args(argc, argv, sizes, sizeof(sizes));
	if ((rc = host_floors(sizes)) >= 0)
		return rc;
	if (!opt.preload || !opt.holdmem || opt.reps < 1 || opt.reps > MAX_REPS)
		die("--preload and --holdmem are needed; --reps is 1 to 16");
	if (!mkdtemp(dir))
		die("mkdtemp");
	chmod(dir, 0700);
	opt.dir = dir;
	load_driver();
	pinned_floors((size_t)(opt.floors_mib * (1 << 20)));
	header();
	run_all(sizes);
	return 0;
}
