/* cudanap-bench: suspend/resume timings of cudanap against the driver alone, in one run.
 *
 * For each size and mode it starts the test program holdmem (GPU memory filled with a verifiable
 * pattern), suspends and resumes it `reps` times, verifies every byte after each resume, and prints
 * the median seconds and the ratio to the baseline measured in the same run:
 *   driver     the driver alone, called from this process (a separate controller, as every tool
 *              built on the checkpoint API does); holdmem runs without cudanap
 *   off        cudanap end to end (signal sent -> status file says done), [performance] hugepages
 * off on         the same with the fast path on (the default) With --experiments, 8 GiB also runs
 * variations of "on": without the parallel libcuda copies, without prefault, with 16 copy threads,
 * with the host buffer kept between suspends. Then the latency from signal to the first driver call
 * (p50/p99) and the steady-state cost of the preload on a kernel-launch loop, beside an A/A control
 * that shows the noise of that measurement. --sizes 0 skips the size table. First of all, the
 * host's own floors (floors.c): page population and memcpy rates, and the seconds they give for
 * each size; --floors-only prints them alone, without a GPU. Prints figures only; it asserts
 * nothing about speed. */
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

#include "cn_status.h"
#include "cuda_abi.h"
#include "floors.h"

#define MAX_REPS 16

static struct {
	const char *preload, *holdmem, *dir;
	int reps, cycles;
	bool experiments, floors_only;
	double floors_mib;
} opt = { .reps = 3, .cycles = 100, .floors_mib = 1024 };

static struct {
	CUresult (*init)(unsigned);
	CUresult (*lock)(int, CUcheckpointLockArgs *);
	CUresult (*checkpoint)(int, CUcheckpointCheckpointArgs *);
	CUresult (*restore)(int, CUcheckpointRestoreArgs *);
	CUresult (*unlock)(int, CUcheckpointUnlockArgs *);
} cu;

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
	if (strcmp(st->result, "ok") != 0) {
		fprintf(stderr, "cudanap-bench: %s: %s\n", st->result, st->message);
		exit(1);
	}
	return now_s() - t0;
}

static void cudanap_cycle(struct child *c, struct sample *s)
{
	struct cn_status st;

	s->suspend = signal_wait(c, SIGUSR1, &st);
	s->staged_mib = st.staged_mib;
	s->prefault_ms = st.prefault_ms;
	s->copy_mib = st.copy_mib;
	s->copy_ms = st.copy_ms;
	s->resume = signal_wait(c, SIGUSR2, &st);
	s->unmap_ms = st.unmap_ms;
	s->copy_ms_resume = st.copy_ms;
}

/* ---- modes, medians, the table ---- */

struct mode {
	const char *name, *perf; /* perf: the [performance] section; NULL: the driver alone */
};

static const char *write_ini(const char *name, const char *perf)
{
	static char path[4200];
	FILE *f;

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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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
				cudanap_cycle(&c, &s[r]);
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
		double ms = median(sus, opt.reps), mr = median(res, opt.reps);

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
	}
}

/* Signal sent -> the controller's first driver call, over many small cycles. */
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
	}
	verify(&c);
	child_stop(&c);
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	printf("\nsignal -> first driver call, %d cycles of 64 MiB: p50 %.3f ms, p99 %.3f ms, "
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
	*a = median(v[0], 8);
	*b = median(v[1], 8);
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
	cu.init(0);
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

int main(int argc, char **argv)
{
	static const struct mode modes[] = {
		{ "driver", NULL },
		{ "off", "hugepages = false\ncopy_threads = 0" },
		{ "on", "hugepages = true" },
	};
	static const struct mode extra[] = {
		{ "driver", NULL },
		{ "nocopy", "copy_threads = 0" },
		{ "nocp+0pf", "copy_threads = 0\nprefault_threads = 0" },
		{ "0pf", "prefault_threads = 0" },
		{ "16cp+0pf", "copy_threads = 16\nprefault_threads = 0" },
		{ "keep", "keep_host_buffer = true" },
		{ "keep+16cp", "keep_host_buffer = true\ncopy_threads = 16" },
	};
	char sizes[64] = "1,8,32", dir[] = "/tmp/cudanap-bench-XXXXXX";

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc)
			opt.preload = argv[++i];
		else if (strcmp(argv[i], "--holdmem") == 0 && i + 1 < argc)
			opt.holdmem = argv[++i];
		else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
			snprintf(sizes, sizeof(sizes), "%s", argv[++i]);
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			opt.reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc)
			opt.cycles = atoi(argv[++i]);
		else if (strcmp(argv[i], "--experiments") == 0)
			opt.experiments = true;
		else if (strcmp(argv[i], "--floors-only") == 0)
			opt.floors_only = true;
		else if (strcmp(argv[i], "--floors-mib") == 0 && i + 1 < argc)
			opt.floors_mib = atof(argv[++i]);
		else
			die("usage: cudanap-bench --preload LIB --holdmem PROG [--sizes 1,8,32] "
			    "[--reps 3] [--cycles 100] [--experiments] [--floors-mib 1024]\n"
			    "       cudanap-bench --floors-only [--sizes 1,8,32] [--floors-mib "
			    "1024]");
	}
	{
		/* The host's own floors first: no GPU needed, and the map for the table below. */
		struct cn_floors f;
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
				  cpus > 8 ? 8 : (unsigned)(cpus > 0 ? cpus : 1), &f);
		cn_floors_print(&f, gib, n);
		/* --floors-only: non-zero when a floor could not be measured */
		if (opt.floors_only)
			return !(f.populate_4k[1] > 0 && f.populate_thp[1] > 0 && f.memcpy[1] > 0);
	}
	if (!opt.preload || !opt.holdmem || opt.reps < 1 || opt.reps > MAX_REPS)
		die("--preload and --holdmem are needed; --reps is 1 to 16");
	if (!mkdtemp(dir))
		die("mkdtemp");
	chmod(dir, 0700);
	opt.dir = dir;
	load_driver();
	header();
	for (char *save = NULL, *t = strtok_r(sizes, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (atof(t) > 0)
			run_size(atof(t), modes, 3);
	if (opt.experiments)
		run_size(8, extra, sizeof(extra) / sizeof(extra[0]));
	if (opt.cycles > 0)
		latency();
	overhead();
	return 0;
}
