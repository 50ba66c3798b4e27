/* proc: what /proc says of another process (see cn_proc.h). */
#define _GNU_SOURCE
#include "cn_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

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

static int send_now(int pidfd, int pid, int sig, const union sigval *val)
{
	siginfo_t si;

	if (pidfd < 0)
		return (val ? sigqueue(pid, sig, *val) : kill(pid, sig)) < 0 ? -errno : 0;
	if (!val)
		return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
	/* What sigqueue() sends: the kernel takes SI_QUEUE from another process as it is. */
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value = *val;
	return syscall(SYS_pidfd_send_signal, pidfd, sig, &si, 0) < 0 ? -errno : 0;
}

int cn_proc_signal(int pid, unsigned long long starttime, int sig, const union sigval *val)
{
	int pidfd, r;

	if (pid <= 0 || !starttime)
		return -ESRCH;
	/* The pidfd first, then the start time: if it still matches, the pidfd is that process. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	if (pidfd < 0 && errno != ENOSYS)
		return -errno;
	if (cn_proc_starttime(pid) != starttime) {
		if (pidfd >= 0)
			close(pidfd);
		return -ESRCH;
	}
	r = send_now(pidfd, pid, sig, val);
	if (pidfd >= 0)
		close(pidfd);
	return r;
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
