/* floors: the best this machine's host side can do (page population, memcpy), measured for the
 * benchmark's ratios (docs/FILES.md). */
#define _GNU_SOURCE
#include "floors.h"
#include "fanout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_THREADS 64
#define RUNS	    3

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct work {
	char *dst;
	const char *src; /* NULL: populate dst */
	size_t len, per; /* per: each part's share, 2 MiB-aligned */
};

static void run_part(void *arg, unsigned i)
{
	const struct work *w = arg;
	size_t o = (size_t)i * w->per, len;

	if (o >= w->len)
		return;
	len = w->len - o < w->per ? w->len - o : w->per;
	if (w->src)
		memcpy(w->dst + o, w->src + o, len);
	else if (madvise(w->dst + o, len, MADV_POPULATE_WRITE) < 0)
		for (size_t k = 0; k < len; k += 4096)
			w->dst[o + k] = 1;
}

/* dst (and src) split in n 2 MiB-aligned parts, one per thread. */
static void run_parallel(char *dst, const char *src, size_t len, unsigned n)
{
	struct work w = { dst, src, len,
			  ((len + n - 1) / n + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1) };

	cn_fanout(w.per ? (unsigned)((len + w.per - 1) / w.per) : 0, run_part, &w);
}

/* A 2 MiB-aligned anonymous mapping of len bytes, advised as asked; NULL on failure. */
static char *map(size_t len, bool huge)
{
	size_t big = len + (2u << 20);
	char *raw = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *p;

	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (raw + big > p + len)
		munmap(p + len, (size_t)(raw + big - (p + len)));
	madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return p;
}

static double median3(double *v)
{
	for (int i = 0; i < RUNS; i++)
		for (int j = i + 1; j < RUNS; j++)
			if (v[j] < v[i]) {
				double x = v[i];

				v[i] = v[j];
				v[j] = x;
			}
	return v[RUNS / 2];
}

/* GiB/s of populating fresh memory; 0 if it could not be mapped. */
static double populate_rate(size_t len, bool huge, unsigned threads)
{
	double r[RUNS];

	for (int i = 0; i < RUNS; i++) {
		char *p = map(len, huge);
		double t0;

		if (!p)
			return 0;
		t0 = now_s();
		run_parallel(p, NULL, len, threads);
		r[i] = (double)len / (1u << 30) / (now_s() - t0);
		munmap(p, len);
	}
	return median3(r);
}

/* GiB/s of memcpy between two populated buffers; 0 if they could not be mapped. */
static double memcpy_rate(size_t len, unsigned threads)
{
	char *a = map(len, true), *b = map(len, true);
	double r[RUNS];

	if (!a || !b) {
		if (a)
			munmap(a, len);
		if (b)
			munmap(b, len);
		return 0;
	}
	run_parallel(a, NULL, len, threads);
	run_parallel(b, NULL, len, threads);
	for (int i = 0; i < RUNS; i++) {
		double t0 = now_s();

		run_parallel(b, a, len, threads);
		r[i] = (double)len / (1u << 30) / (now_s() - t0);
	}
	munmap(a, len);
	munmap(b, len);
	return median3(r);
}

static unsigned clamp(unsigned n)
{
	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

void cn_floors_measure(size_t bytes, unsigned threads, unsigned cpus, struct cn_floors *f)
{
	unsigned n[3] = { 1, clamp(threads), clamp(cpus) };

	memset(f, 0, sizeof(*f));
	f->bytes = bytes;
	f->threads = n[1];
	f->cpus = n[2];
	for (int i = 0; i < 3; i++) {
		if (i == 2 && n[2] == n[1]) {
			f->populate_4k[2] = f->populate_4k[1];
			f->populate_thp[2] = f->populate_thp[1];
			f->memcpy[2] = f->memcpy[1];
			break;
		}
		f->populate_4k[i] = populate_rate(bytes, false, n[i]);
		f->populate_thp[i] = populate_rate(bytes, true, n[i]);
		f->memcpy[i] = memcpy_rate(bytes, n[i]);
	}
}

static void row(const char *what, const double r[3], const double *gib, int n)
{
	printf("| %s | %.2f | %.2f | %.2f |", what, r[0], r[1], r[2]);
	for (int i = 0; i < n; i++)
		printf(" %.2f |", r[1] > 0 ? gib[i] / r[1] : 0);
	printf("\n");
}

void cn_floors_print(const struct cn_floors *f, const double *gib, int n)
{
	printf("\nhost floors (%.0f MiB buffers, median of %d; the last columns: seconds for that "
	       "many GiB at the %u-thread rate)\n\n| floor | GiB/s, 1 thread | GiB/s, %u threads "
	       "| GiB/s, %u threads (all CPUs) |",
	       (double)f->bytes / (1u << 20), RUNS, f->threads, f->threads, f->cpus);
	for (int i = 0; i < n; i++)
		printf(" %g GiB s |", gib[i]);
	printf("\n| --- | --- | --- | --- |");
	for (int i = 0; i < n; i++)
		printf(" --- |");
	printf("\n");
	row("populate, 4 KiB pages", f->populate_4k, gib, n);
	row("populate, huge pages", f->populate_thp, gib, n);
	row("memcpy", f->memcpy, gib, n);
}
