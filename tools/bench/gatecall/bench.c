/* bench-gatecall: what the gate (preload/cuda/) adds to each driver call an app makes, on each
 * path the app can take to the function: its exported name (the preload's, ahead of libcuda's),
 * dlsym on the driver's handle, cuGetProcAddress_v2 with the default and the per-thread default
 * stream. "bare" calls the driver's function itself (taken with libc's own dlsym, past the
 * preload's) and "again" does it once more: the difference between the two is this machine's noise.
 * Blocks of calls take turns, in an order that rotates each block; it prints the median ns of a
 * call each way and what the gate added to bare. A query of one argument (cuDriverGetVersion) and
 * a launch of eleven, five on the stack (cuLaunchKernel, which with no context fails at once on a
 * real driver). Run it under cudanap: `ninja -C build bench-gatecall` (a driver that does nothing),
 * or `cudanap run -- cudanap-bench-gatecall --driver libcuda.so.1` on a GPU machine. */
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

#define PATHS 6

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

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		double (*run)(void *, long);
	} cases[] = { { "cuDriverGetVersion", version_ns }, { "cuLaunchKernel", launch_ns } };
	const char *driver = getenv("CUDANAP_LIBCUDA");
	void *(*libc_dlsym)(void *, const char *);
	long calls = 1 << 20;
	int blocks = 15;
	void *h;

	for (int i = 1; i < argc; i += 2) {
		if (i + 1 < argc && strcmp(argv[i], "--calls") == 0)
			calls = atol(argv[i + 1]);
		else if (i + 1 < argc && strcmp(argv[i], "--blocks") == 0)
			blocks = atoi(argv[i + 1]);
		else if (i + 1 < argc && strcmp(argv[i], "--driver") == 0)
			driver = argv[i + 1];
		else
			blocks = 0;
	}
	if (calls < 1 || blocks < 1 || blocks > 1000) {
		fprintf(stderr, "usage: %s [--driver LIB] [--calls N] [--blocks B (1 to 1000)]\n",
			argv[0]);
		return 2;
	}
	if (!driver)
		driver = "libcuda.so.1";
	libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
	if (!libc_dlsym)
		libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym",
								     "GLIBC_2.2.5");
	h = dlopen(driver, RTLD_NOW);
	if (!h || !libc_dlsym) {
		fprintf(stderr, "bench-gatecall: cannot load %s: %s\n", driver, dlerror());
		return 1;
	}
	printf("driver calls to %s, bare and through cudanap's gate: median of %d blocks of %ld "
	       "calls, the paths taking turns; membarrier %s\n",
	       driver, blocks, calls,
	       syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) > 0 &&
			       (syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) &
				MEMBARRIER_CMD_PRIVATE_EXPEDITED)
		       ? "here (a call's mark needs no fence)"
		       : "missing (each call's mark is a full barrier)");
	printf("%-20s %-22s %9s %9s\n", "call", "path", "ns", "added ns");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		static double t[PATHS][1000];
		void *f[PATHS];

		if (resolve(h, libc_dlsym, cases[k].name, f) < 0) {
			fprintf(stderr, "bench-gatecall: %s lacks %s\n", driver, cases[k].name);
			return 1;
		}
		if (ours(f[0]) || !ours(f[2]) || !ours(f[3]) || !ours(f[4])) {
			fprintf(stderr,
				"bench-gatecall: the driver's functions are not behind cudanap's "
				"gate: run it under cudanap (cudanap run -- %s)\n",
				argv[0]);
			return 1;
		}
		for (int b = 0; b < blocks; b++)
			for (int i = 0; i < PATHS; i++) {
				int p = (i + b) % PATHS;

				t[p][b] = cases[k].run(f[p], calls);
			}
		{
			double bare = cn_median(t[0], blocks);

			for (int p = 0; p < PATHS; p++) {
				double m = p ? cn_median(t[p], blocks) : bare;

				printf("%-20s %-22s %9.1f %9.1f\n", p ? "" : cases[k].name,
				       paths[p], m, m - bare);
			}
		}
	}
	return 0;
}
