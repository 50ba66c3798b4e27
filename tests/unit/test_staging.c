/* Unit tests of preload/staging.c, compiled into this program: the host-copy mapping is staged only
 * while armed, only for the driver's kind of mapping, aligned, prefaulted, huge-page backed where
 * the host allows, and kept for reuse only when asked. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostcopy/staging.h"
#include "tap.h"

#define MIB	     (1ul << 20)
#define DRIVER_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE)

/* Pages of [p, p+len) resident now. */
static size_t resident(void *p, size_t len)
{
	size_t pages = len / 4096, n = 0;
	unsigned char *v = malloc(pages);

	if (!v)
		return 0;
	if (mincore(p, len, v) < 0) {
		free(v);
		return 0; /* unmapped */
	}
	for (size_t i = 0; i < pages; i++)
		n += v[i] & 1;
	free(v);
	return n * 4096;
}

/* kB of AnonHugePages in the smaps entry that starts at p. */
static long huge_kb(void *p)
{
	char line[256], start[32];
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	snprintf(start, sizeof(start), "%lx-", (unsigned long)(uintptr_t)p);
	while (f && fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' '))
			in = strncmp(line, start, strlen(start)) == 0;
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb;
}

/* The driver's host copy: passed through unless armed, then staged: aligned, prefaulted, unmapped
 * after the resume by the agent's free. */
static void test_staged(size_t len)
{
	struct cn_staging_stats st;
	char *p, *q;
	int zero = 1;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_unmap_stats(&st);
	ok(p != MAP_FAILED && st.bytes == 0, "not armed: the driver's mapping passes through");
	munmap(p, len);

	cn_staging_arm(true, 4, false, -1);
	q = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cn_staging_unmap_stats(&st);
	ok(st.bytes == 0, "armed: small mappings and mappings without MAP_POPULATE pass through");
	munmap(q, 8 * MIB);
	munmap(p, len);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	ok(p != MAP_FAILED && st.bytes == len, "armed: the host copy is staged");
	ok(((uintptr_t)p & (2 * MIB - 1)) == 0, "2 MiB aligned");
	ok(st.threads == 4 && st.prefault_ms >= 0, "prefaulted by 4 threads in %.1f ms",
	   st.prefault_ms);
	ok(resident(p, len) == len, "every page resident before the driver writes");
	for (size_t i = 0; i < len; i += 4096)
		zero &= p[i] == 0;
	ok(zero, "reads as zeros, like MAP_ANONYMOUS");
	memset(p, 0xab, len);
	ok((unsigned char)p[len - 1] == 0xab, "writable to the last byte");
	if (cn_staging_thp_available()) {
		long kb = huge_kb(p);

		ok(st.huge && kb > 0, "huge pages back it (%ld kB)", kb);
	} else {
		ok(1, "huge pages back it # SKIP transparent huge pages are [never] here");
	}
	ok(munmap(p, len) == 0, "the driver's munmap succeeds");
	cn_staging_unmap_stats(&st);
	ok(st.unmap_ms >= 0 && resident(p, len) == len,
	   "and returns at once, the copy still mapped (%.3f ms)", st.unmap_ms);
	cn_staging_free_retired_soon();
	for (int i = 0; i < 500 && resident(p, 4096); i++)
		usleep(2000);
	ok(resident(p, 4096) == 0,
	   "the agent's free after the resume really unmaps it, in a thread");
	cn_staging_free_retired();
	ok(1, "a second free has nothing to do");
}

/* keep_host_buffer: the next suspend of the same size gets the same, already faulted, buffer. */
static void test_kept(size_t len)
{
	struct cn_staging_stats st;
	char *p, *q;

	cn_staging_arm(true, 2, true, -1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	ok(munmap(p, len) == 0 && resident(p, len) == len, "kept: munmap leaves it mapped");
	cn_staging_arm(true, 2, true, -1);
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	ok(q == p && st.reused, "kept: the next suspend reuses it");
	munmap(q, len);
	cn_staging_arm(true, 2, false, -1);
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	ok(q == p && st.reused, "keep turned off: the kept buffer serves one last suspend");
	munmap(q, len);
	cn_staging_free_retired();
	ok(resident(p, 4096) == 0, "and the driver's munmap then frees it");
}

/* cudanap prepare: a buffer faulted in ahead serves a copy that fits in it. */
static void test_prepared(size_t len)
{
	struct cn_staging_stats st;
	char *p, *q;

	ok(cn_staging_prepare(len + len / 16, true, 2, &st) == 0 && st.bytes >= len + len / 16 &&
		   st.bytes % (2u << 20) == 0 && resident(st.addr, st.bytes) == st.bytes,
	   "prepared: %zu MiB faulted in ahead, 2 MiB-rounded", st.bytes >> 20);
	q = st.addr;
	ok(cn_staging_prepare(len, true, 2, &st) == 0 && st.addr == q && st.reused,
	   "prepared again for a size it covers: the same buffer");
	cn_staging_arm(false, 0, false, -1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	ok(p == q && st.reused && st.bytes == len, "the checkpoint's copy goes into it");
	ok(cn_staging_release() == 0, "handed out: nothing left to release");
	ok(munmap(p, len) == 0, "the driver's munmap of a prepared buffer");
	cn_staging_free_retired();
	ok(resident(p, 4096) == 0 && resident(p + len, 4096) == 0,
	   "the driver's munmap frees all of it, not only what it asked for");
	ok(cn_staging_prepare(len / 4, true, 1, &st) == 0, "prepared too small");
	q = st.addr;
	cn_staging_arm(false, 0, false, -1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	ok(p != q && !st.reused && resident(q, 4096) == 0,
	   "a copy larger than the prepared buffer gets a fresh one, and the buffer goes");
	munmap(p, len);
	ok(cn_staging_prepare(len * 4, true, 1, &st) == 0, "prepared far too large");
	cn_staging_arm(false, 0, false, -1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	/* Not by the address: the fresh copy may be placed where the buffer was (valgrind does). */
	ok(!st.reused && st.bytes == len && cn_staging_release() == 0,
	   "a copy under half of it does not pin all of it: a fresh copy, the buffer gone");
	munmap(p, len);
	ok(cn_staging_prepare(len, true, 1, &st) == 0 && cn_staging_release() == st.bytes &&
		   resident(st.addr, 4096) == 0,
	   "released unused: unmapped");
}

/* No huge pages, no threads: aligned but left to fault lazily. */
static void test_lazy(size_t len)
{
	struct cn_staging_stats st;
	char *p;

	cn_staging_arm(false, 0, false, -1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, DRIVER_FLAGS, -1, 0);
	cn_staging_disarm(&st);
	ok(st.bytes == len && !st.huge && st.threads == 0 && resident(p, len) == 0,
	   "no huge pages, no threads: aligned but left to fault lazily");
	munmap(p, len);
}

int main(void)
{
	size_t len = 200 * MIB + 4096; /* not a multiple of 2 MiB, like 1.06 x a footprint */

	cn_staging_init();
	test_staged(len);
	test_kept(len);
	test_prepared(len);
	test_lazy(len);
	return tap_done();
}
