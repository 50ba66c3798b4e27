/* hostmem: see cn_hostmem.h. A checkpoint's host copy is ordinary memory of the target process:
 * it counts against the host and against the target's cgroup, so both bound it. */
#define _GNU_SOURCE
#include "cn_hostmem.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first line of path as a number; "max" (cgroup v2 for none) and absent files are -1. */
static int read_u64(const char *path, uint64_t *v)
{
	char buf[64];
	FILE *f = fopen(path, "re");
	int r = -1;

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9') {
		*v = strtoull(buf, NULL, 10);
		r = 0;
	}
	fclose(f);
	return r;
}

/* "key value" from a file of such lines (memory.stat, meminfo with its "kB" ignored). */
static int read_key(const char *path, const char *key, uint64_t *v)
{
	char line[256];
	size_t k = strlen(key);
	FILE *f = fopen(path, "re");
	int r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, k) == 0 && (line[k] == ' ' || line[k] == ':')) {
			*v = strtoull(line + k + 1 + strspn(line + k + 1, " \t"), NULL, 10);
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

/* A bound's available memory cand, of its size total, taken when it is the least so far. */
static void bound(uint64_t *avail, uint64_t *total, uint64_t cand, uint64_t size, char *which,
		  size_t len, const char *what, const char *cg)
{
	if (cand < *avail) {
		*avail = cand;
		*total = size;
		snprintf(which, len, "%s%s%s", cg ? "cgroup " : "", cg ? cg : "", what);
	}
}

/* One cgroup directory: limit less usage that cannot be reclaimed. */
static void cgroup_level(const char *dir, const char *name, const char *limit_file,
			 const char *usage_file, uint64_t *avail, uint64_t *total, char *which,
			 size_t len)
{
	char p[PATH_MAX + 32], what[64];
	uint64_t limit, usage, inactive = 0;

	snprintf(p, sizeof(p), "%s/%s", dir, limit_file);
	/* cgroup v1 writes "no limit" as a page-rounded LONG_MAX. */
	if (read_u64(p, &limit) < 0 || limit >= (uint64_t)LLONG_MAX / 2)
		return;
	snprintf(p, sizeof(p), "%s/%s", dir, usage_file);
	if (read_u64(p, &usage) < 0)
		return;
	snprintf(p, sizeof(p), "%s/memory.stat", dir);
	if (read_key(p, "inactive_file", &inactive) < 0)
		read_key(p, "total_inactive_file", &inactive);
	usage = inactive < usage ? usage - inactive : 0;
	snprintf(what, sizeof(what), " %s", limit_file);
	bound(avail, total, limit > usage ? limit - usage : 0, limit, which, len, what, name);
}

int cn_hostmem_available(int pid, const char *proc, const char *sys_cgroup, uint64_t *avail,
			 char *which, size_t len)
{
	uint64_t total;

	return cn_hostmem_bound(pid, proc, sys_cgroup, avail, &total, which, len);
}

int cn_hostmem_bound(int pid, const char *proc, const char *sys_cgroup, uint64_t *avail,
		     uint64_t *total, char *which, size_t len)
{
	char p[PATH_MAX], line[PATH_MAX];
	uint64_t kb, mem = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/meminfo", proc);
	if (read_key(p, "MemAvailable", &kb) < 0)
		return -1;
	*avail = kb << 10;
	read_key(p, "MemTotal", &mem);
	*total = mem << 10;
	snprintf(which, len, "MemAvailable");

	snprintf(p, sizeof(p), "%s/%d/cgroup", proc, pid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *path = strrchr(line, ':'), dir[PATH_MAX + 16];
		bool v2 = strncmp(line, "0::", 3) == 0;

		if (!path || (!v2 && !strstr(line, ":memory:")))
			continue;
		path[strcspn(path, "\n")] = '\0';
		path++;
		/* Every level up to the root: a parent's limit binds its children too. */
		for (;;) {
			snprintf(dir, sizeof(dir), "%s%s%s", sys_cgroup, v2 ? "" : "/memory",
				 strcmp(path, "/") == 0 ? "" : path);
			if (v2)
				cgroup_level(dir, *path ? path : "/", "memory.max",
					     "memory.current", avail, total, which, len);
			else
				cgroup_level(dir, *path ? path : "/", "memory.limit_in_bytes",
					     "memory.usage_in_bytes", avail, total, which, len);
			{
				char *up = strrchr(path, '/');

				if (!up || strcmp(path, "/") == 0)
					break;
				if (up == path)
					up[1] = '\0';
				else
					*up = '\0';
			}
		}
	}
	fclose(f);
	return 0;
}

int cn_hostmem_pressure(const char *proc, double *avg10)
{
	char path[PATH_MAX], line[256];
	FILE *f;
	int r = -1;

	snprintf(path, sizeof(path), "%s/pressure/memory", proc);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (r < 0 && fgets(line, sizeof(line), f)) {
		char *v = strstr(line, "avg10=");

		if (strncmp(line, "some ", 5) == 0 && v) {
			*avg10 = strtod(v + 6, NULL);
			r = *avg10 >= 0 && *avg10 <= 100 ? 0 : -1;
		}
	}
	fclose(f);
	return r;
}
