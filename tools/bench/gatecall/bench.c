/* bench-gatecall: what the gate adds to each driver call, on each path an app takes to the
 * function, beside this machine's noise (docs/FILES.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/membarrier.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../median.h"

#define PATHS	   6
#define BLOCKS_MAX 1000

typedef int (*version_fn)(int *);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, void *, void **, void **);
typedef int (*gpa2_fn)(const char *, void **, int, uint64_t, int *);

static const char *const paths[PATHS] = {
	"bare", "again", "exported name", "dlsym", "cuGetProcAddress_v2", "... per-thread stream"
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double version_ns(void *f, long n)
{
	version_fn g = (version_fn)f;
	double t0 = now_ns();
	int v;

	for (long i = 0; i < n; i++)
		g(&v);
	return (now_ns() - t0) / (double)n;
}

static double launch_ns(void *f, long n)
{
	launch_fn g = (launch_fn)f;
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		g(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	return (now_ns() - t0) / (double)n;
}

/* name by each path; 0, or -1 when one is missing. */
static int resolve(void *h, void *(*libc_dlsym)(void *, const char *), const char *name, void **f)
{
	gpa2_fn gpa2 = (gpa2_fn)dlsym(h, "cuGetProcAddress_v2");
	int st;

	f[0] = f[1] = libc_dlsym(h, name);
	f[2] = dlsym(RTLD_DEFAULT, name);
	f[3] = dlsym(h, name);
	f[4] = f[5] = NULL;
	if (gpa2) {
		gpa2(name, &f[4], 12000, 0, &st);
		gpa2(name, &f[5], 12000, 2, &st);
	}
	for (int i = 0; i < PATHS; i++)
		if (!f[i])
			return -1;
	return 0;
}

static bool ours(const void *f)
{
	Dl_info where;

	return dladdr(f, &where) && where.dli_fname && strstr(where.dli_fname, "libcudanap");
}

static const struct {
	const char *name;
	double (*run)(void *, long);
} cases[] = { { "cuDriverGetVersion", version_ns }, { "cuLaunchKernel", launch_ns } };

/* What the command line asks for, and the driver it names once loaded. */
struct bench {
	const char *prog, *driver;
	long calls;
	int blocks;
	void *h;
	void *(*libc_dlsym)(void *, const char *); /* libc's own, past the preload's */
};

/* --driver, --calls and --blocks; anything else leaves blocks 0, which check_args refuses. */
static void parse_args(struct bench *b, int argc, char **argv)
{
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 < argc && strcmp(argv[i], "--calls") == 0)
			b->calls = atol(argv[i + 1]);
		else if (i + 1 < argc && strcmp(argv[i], "--blocks") == 0)
			b->blocks = atoi(argv[i + 1]);
		else if (i + 1 < argc && strcmp(argv[i], "--driver") == 0)
			b->driver = argv[i + 1];
		else
			b->blocks = 0;
	}
}

/* 0, or 2 with the usage said. */
static int check_args(const struct bench *b)
{
	if (b->calls < 1 || b->blocks < 1 || b->blocks > BLOCKS_MAX) {
		fprintf(stderr, "usage: %s [--driver LIB] [--calls N] [--blocks B (1 to 1000)]\n",
			b->prog);
		return 2;
	}
	return 0;
}

/* The driver opened, and libc's own dlsym found; 0, or 1 said. */
static int load_driver(struct bench *b)
{
	if (!b->driver)
		b->driver = "libcuda.so.1";
	b->libc_dlsym =
		(void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
	if (!b->libc_dlsym)
		b->libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym",
									"GLIBC_2.2.5");
	b->h = dlopen(b->driver, RTLD_NOW);
	if (!b->h || !b->libc_dlsym) {
		fprintf(stderr, "bench-gatecall: cannot load %s: %s\n", b->driver, dlerror());
		return 1;
	}
	return 0;
}

/* Whether the kernel's membarrier spares the gate a fence on each call's mark. */
static const char *membarrier_said(void)
{
	return syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) > 0 &&
			       (syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) &
				MEMBARRIER_CMD_PRIVATE_EXPEDITED)
		       ? "here (a call's mark needs no fence)"
		       : "missing (each call's mark is a full barrier)";
}

static void print_header(const struct bench *b)
{
	printf("driver calls to %s, bare and through cudanap's gate: median of %d blocks of %ld "
	       "calls, the paths taking turns; membarrier %s\n",
	       b->driver, b->blocks, b->calls, membarrier_said());
	printf("%-20s %-22s %9s %9s\n", "call", "path", "ns", "added ns");
}

/* name's function by each path, the bare ones past the gate and the others behind it; 0, or 1
 * said. */
static int find_paths(const struct bench *b, const char *name, void **f)
{
	if (resolve(b->h, b->libc_dlsym, name, f) < 0) {
		fprintf(stderr, "bench-gatecall: %s lacks %s\n", b->driver, name);
		return 1;
	}
	if (ours(f[0]) || !ours(f[2]) || !ours(f[3]) || !ours(f[4])) {
		fprintf(stderr,
			"bench-gatecall: the driver's functions are not behind cudanap's "
			"gate: run it under cudanap (cudanap run -- %s)\n",
			b->prog);
		return 1;
	}
	return 0;
}

/* t[path][block]: ns a call, the paths taking turns in each block, the first one rotating. */
static void time_paths(const struct bench *b, double (*run)(void *, long), void **f,
		       double (*t)[BLOCKS_MAX])
{
	for (int block = 0; block < b->blocks; block++)
		for (int i = 0; i < PATHS; i++) {
			int p = (i + block) % PATHS;

			t[p][block] = run(f[p], b->calls);
		}
}

/* Each path's median, and what the gate added to bare. */
static void print_case(const struct bench *b, const char *name, double (*t)[BLOCKS_MAX])
{
	double bare = cn_median(t[0], b->blocks);

	for (int p = 0; p < PATHS; p++) {
		double m = p ? cn_median(t[p], b->blocks) : bare;

		printf("%-20s %-22s %9.1f %9.1f\n", p ? "" : name, paths[p], m, m - bare);
	}
}

int main(int argc, char **argv)
{
	static double t[PATHS][BLOCKS_MAX];
	struct bench b = {
		.prog = argv[0], .driver = getenv("CUDANAP_LIBCUDA"), .calls = 1 << 20, .blocks = 15
	};
	int rc;

	parse_args(&b, argc, argv);
	if ((rc = check_args(&b)) || (rc = load_driver(&b)))
		return rc;
	print_header(&b);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		void *f[PATHS];

		if ((rc = find_paths(&b, cases[k].name, f)))
			return rc;
		time_paths(&b, cases[k].run, f, t);
		print_case(&b, cases[k].name, t);
	}
	return 0;
}
