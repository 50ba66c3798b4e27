/* hostmem: MemAvailable and the cgroup limits that bound a checkpoint's host copy, on a made-up
 * /proc and /sys/fs/cgroup. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cn_hostmem.h"
#include "tap.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char p[256], d[256];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		snprintf(d, sizeof(d), "%.*s", (int)(s - p), p);
		mkdir(d, 0700);
	}
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
}

static char proc[128], sys[128];

/* MemAvailable alone, and its bound's size, MemTotal. */
static void test_meminfo(void)
{
	uint64_t avail = 0, total = 0;
	char which[160];

	ok(cn_hostmem_available(42, proc, sys, &avail, which, sizeof(which)) < 0, "no meminfo: -1");
	put("proc/meminfo", "MemTotal: 4000000 kB\nMemAvailable:    1000000 kB\n");
	ok(cn_hostmem_available(42, proc, sys, &avail, which, sizeof(which)) == 0 &&
		   avail == 1000000ull << 10,
	   "no cgroup file: MemAvailable alone");
	is_str(which, "MemAvailable", "named MemAvailable");
	ok(cn_hostmem_bound(42, proc, sys, &avail, &total, which, sizeof(which)) == 0 &&
		   total == 4000000ull << 10,
	   "its bound's size: MemTotal");
}

/* v2: the leaf has no limit, its parent does; inactive file pages can be reclaimed. */
static void test_v2(void)
{
	uint64_t avail = 0, total = 0;
	char which[160];

	put("proc/42/cgroup", "0::/a/b\n");
	put("sys/a/b/memory.max", "max\n");
	put("sys/a/b/memory.current", "100\n");
	put("sys/a/memory.max", "2147483648\n");
	put("sys/a/memory.current", "1073741824\n");
	put("sys/a/memory.stat", "anon 536870912\ninactive_file 536870912\nactive_file 0\n");
	cn_hostmem_available(42, proc, sys, &avail, which, sizeof(which));
	ok(avail == 1000000ull << 10, "MemAvailable below what the cgroup leaves wins");
	put("proc/meminfo", "MemAvailable: 100000000 kB\n");
	cn_hostmem_available(42, proc, sys, &avail, which, sizeof(which));
	ok(avail == 1536ull << 20, "a parent's limit less its unreclaimable usage: 1.5 GiB (%llu)",
	   (unsigned long long)avail);
	is_str(which, "cgroup /a memory.max", "named by cgroup and file");
	cn_hostmem_bound(42, proc, sys, &avail, &total, which, sizeof(which));
	ok(total == 2ull << 30, "its bound's size: the cgroup's limit, 2 GiB");
	put("sys/memory.max", "1073741824\n");
	put("sys/memory.current", "0\n");
	cn_hostmem_available(42, proc, sys, &avail, which, sizeof(which));
	ok(avail == 1ull << 30, "the root level counts too (a container's own cgroup)");
}

/* v1: the memory controller's hierarchy; its "no limit" is ignored; a limit already exceeded
 * leaves none, not a wrapped-around huge amount. */
static void test_v1(void)
{
	uint64_t avail = 0;
	char which[160];

	put("proc/43/cgroup", "5:cpu:/x\n4:memory:/job\n");
	put("sys/memory/job/memory.limit_in_bytes", "9223372036854771712\n");
	put("sys/memory/job/memory.usage_in_bytes", "5\n");
	cn_hostmem_available(43, proc, sys, &avail, which, sizeof(which));
	is_str(which, "MemAvailable", "v1 without a limit: MemAvailable");
	put("sys/memory/job/memory.limit_in_bytes", "3221225472\n");
	put("sys/memory/job/memory.usage_in_bytes", "1073741824\n");
	put("sys/memory/job/memory.stat", "total_inactive_file 0\n");
	cn_hostmem_available(43, proc, sys, &avail, which, sizeof(which));
	ok(avail == 2ull << 30, "v1 limit less usage");
	is_str(which, "cgroup /job memory.limit_in_bytes", "named");
	put("sys/memory/job/memory.usage_in_bytes", "4294967296\n");
	cn_hostmem_available(43, proc, sys, &avail, which, sizeof(which));
	ok(avail == 0, "usage above the limit: 0");
}

int main(void)
{
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/cn-hostmem.XXXXXX");
	if (!mkdtemp(root))
		return 1;
	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(sys, sizeof(sys), "%s/sys", root);
	test_meminfo();
	test_v2();
	test_v1();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	return tap_done();
}
