/* proc: what /proc says of another process (see cn_proc.h). */
#include "cn_proc.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

unsigned long long cn_proc_starttime(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and parens: count fields after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

/* At most len - 1 bytes of a file under /proc, NUL-terminated: the length, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* pid's parent, from /proc/PID/stat; 0 when gone. */
static int parent_of(int pid)
{
	char path[64], buf[1024], *p;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_proc(path, buf, sizeof(buf)) > 0 && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %d", &ppid);
	return ppid;
}

bool cn_proc_in_job(int pid, unsigned long job)
{
	char path[64], buf[4096], want[48];
	size_t k;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	k = (size_t)snprintf(want, sizeof(want), "/job_%lu", job);
	if (read_proc(path, buf, sizeof(buf)) > 0)
		for (char *p = buf; (p = strstr(p, want)); p += k)
			if (p[k] == '/' || p[k] == '\n' || p[k] == '\0')
				return true;
	k = (size_t)snprintf(want, sizeof(want), "slurmstepd: [%lu.", job);
	for (int depth = 0; pid > 1 && depth < 64; depth++, pid = parent_of(pid)) {
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d", pid);
		if (stat(path, &st) < 0 || st.st_uid != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
		if (read_proc(path, buf, sizeof(buf)) >= (ssize_t)k && memcmp(buf, want, k) == 0)
			return true;
	}
	return false;
}
