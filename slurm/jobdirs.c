/* jobdirs: the per-job status directories of a node, made by root for each job's user, read as
 * only that user could have written them (docs/FILES.md). */
#define _GNU_SOURCE
#include "jobdirs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cn_proc.h"
#include "cn_safe.h"
#include "cn_status.h"

#define BASE "cudanap"

void cn_jobdirs_path(const char *statusbase, uint32_t job, char *out, size_t len)
{
	snprintf(out, len, "%s/" BASE "/job%u", statusbase, (unsigned)job);
}

/* <statusbase>/cudanap, root's and written by nobody else: its fd, or -errno with why. */
static int base_fd(const char *statusbase, bool create, char *why, size_t len)
{
	int at = open(statusbase, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	if (at < 0) {
		int e = errno;

		snprintf(why, len, "statusbase %s: %s", statusbase, strerror(e));
		return -e;
	}
	fd = create ? cn_safe_mkdir(at, BASE, 0711, geteuid(), getegid(), why, len)
		    : cn_safe_dir(at, BASE, (struct cn_owner){ geteuid(), false }, false, why, len);
	close(at);
	return fd;
}

int cn_jobdirs_make(const char *statusbase, uint32_t job, uid_t uid, gid_t gid, char *why,
		    size_t len)
{
	char name[32];
	int b = base_fd(statusbase, true, why, len), j;

	if (b < 0)
		return b;
	snprintf(name, sizeof(name), "job%u", (unsigned)job);
	j = cn_safe_mkdir(b, name, 0700, uid, gid, why, len);
	close(b);
	if (j < 0)
		return j;
	close(j);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How long an epilog removes a job's directory at most: its user can no longer add to it once root
 * has it (freeze), so only a tree of millions of entries takes that long; what is left then
 * stays, root's, and is said. */
#define REMOVE_S 60

/* A directory of the job's being removed, root's from now on and only root's to write in: its
 * user, or another process of that user's with a descriptor or a working directory in it, can
 * make nothing more there (4 writers kept an epilog busy 127 s). */
static void freeze(int fd)
{
	if (fchown(fd, 0, 0) == 0)
		fchmod(fd, 0700); /* what it cannot fix, the removals after it say */
}

/* The deadline passed: why says so, once. */
static bool late(double deadline, int *err, char *why, size_t len, const char *path)
{
	if (now_s() < deadline)
		return false;
	if (!*err) {
		*err = -ETIMEDOUT;
		snprintf(why, len, "%s: not emptied in %d s; what is left stays", path, REMOVE_S);
	}
	return true;
}

/* The first failure of a removal: its -errno in *err and why, in one line; the later ones not. */
static void failed(int *err, char *why, size_t len, const char *path, const char *a, const char *b)
{
	if (*err)
		return;
	*err = -errno;
	snprintf(why, len, "%s%s%s%s%s: %s", path, a[0] ? "/" : "", a, b[0] ? "/" : "", b,
		 strerror(errno));
}

/* The directory name in top emptied and removed: its files and links removed, its directories
 * moved up into top (under a name of ours) to be drained in their turn, it frozen first (so that
 * a 0000 or 0777 directory can be emptied, and nothing more made in it). Whether anything was
 * removed or moved. */
static bool drain(int top, const char *name, const char *path, double deadline, unsigned long *seq,
		  int *err, char *why, size_t len)
{
	int fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool done = false;
	struct dirent *e;
	DIR *d;

	if (fd >= 0)
		freeze(fd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		failed(err, why, len, path, name, "");
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!late(deadline, err, why, len, path) && (e = readdir(d))) {
		struct stat st;
		char to[32];
		int s;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
			/* Moved, not entered: no depth to keep, no ".." to trust. A name taken
			 * (one its user made, a directory in it) takes the next. */
			do
				snprintf(to, sizeof(to), ".cn-rm-%lu", (*seq)++);
			while ((s = renameat(fd, e->d_name, top, to)) < 0 &&
			       (errno == EEXIST || errno == ENOTEMPTY || errno == ENOTDIR ||
				errno == EISDIR));
		} else {
			s = unlinkat(fd, e->d_name, 0);
		}
		if (s < 0)
			failed(err, why, len, path, name, e->d_name);
		done |= s == 0;
	}
	closedir(d);
	if (unlinkat(top, name, AT_REMOVEDIR) == 0)
		return true;
	if (errno != ENOTEMPTY)
		failed(err, why, len, path, name, "");
	return done;
}

/* Everything in the directory fd (frozen), through fds, whatever its depth: each directory in it
 * drained into it (drain), pass after pass while one removes or moves anything, until the
 * deadline; no link followed (a link is removed, not what it names), no ".." ever taken (a
 * directory its user moves elsewhere meanwhile takes the removal nowhere), no recursion. 0, or
 * -errno of the last pass's first failure with why (-ETIMEDOUT at the deadline). */
static int empty_tree(int fd, const char *path, double deadline, char *why, size_t len)
{
	unsigned long seq = 0;
	bool more = true;
	int err = 0;

	while (more) {
		int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
		struct dirent *e;

		err = 0;
		more = false;
		if (!d) {
			failed(&err, why, len, path, "", "");
			if (dup >= 0)
				close(dup);
			return err;
		}
		rewinddir(d); /* the duplicate shares the offset the last pass left at the end */
		while (!late(deadline, &err, why, len, path) && (e = readdir(d))) {
			struct stat st;

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode))
				more |= drain(fd, e->d_name, path, deadline, &seq, &err, why, len);
			else if (unlinkat(fd, e->d_name, 0) == 0)
				more = true;
			else
				failed(&err, why, len, path, e->d_name, "");
		}
		closedir(d);
		more &= err != -ETIMEDOUT;
	}
	return err;
}

int cn_jobdirs_remove(const char *statusbase, uint32_t job, uid_t uid, char *why, size_t len)
{
	char name[32], path[4200];
	int b = base_fd(statusbase, false, why, len), j, r;

	if (b < 0)
		return b == -ENOENT ? 0 : b;
	snprintf(name, sizeof(name), "job%u", (unsigned)job);
	/* Whatever mode its user gave it: the base is root's, so only root made job<J>. */
	j = cn_safe_dir(b, name, (struct cn_owner){ uid, true }, true, why, len);
	if (j < 0) {
		close(b);
		return j == -ENOENT ? 0 : j;
	}
	snprintf(path, sizeof(path), "%s/" BASE "/%s", statusbase, name);
	freeze(j); /* the job's directory first: nothing new in it from here */
	r = empty_tree(j, path, now_s() + REMOVE_S, why, len);
	close(j);
	if (unlinkat(b, name, AT_REMOVEDIR) < 0 && !r) {
		r = -errno;
		snprintf(why, len, "%s: %s", path, strerror(errno));
	}
	close(b);
	return r;
}

/* Stopped by SIGSTOP (Slurm's, 2 s after its SIGTSTP), or traced. */
static bool stopped(int pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	bool t = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (f && fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')))
		t = rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
	if (f)
		fclose(f);
	return t;
}

/* The status file name (<pid>.json) of one of uid's processes of job, still holding its GPU
 * memory: 1, 0 when not, -1 when stopped mid-checkpoint. */
static int holds(int dir, const char *name, uid_t uid, uint32_t job)
{
	char buf[CN_STATUS_MAX], why[300];
	struct cn_owner o;
	struct cn_status s;
	char *end;
	long pid = strtol(name, &end, 10);

	if (pid <= 0 || strcmp(end, ".json") != 0 || cn_safe_owner_of((int)pid, false, &o) < 0 ||
	    o.uid != uid || !cn_proc_in_job((int)pid, job) ||
	    cn_safe_read(dir, name, (struct cn_owner){ uid, false }, buf, sizeof(buf), why,
			 sizeof(why)) < 0 ||
	    cn_status_parse(buf, &s) < 0 || s.pid != pid ||
	    cn_proc_starttime((int)pid) != s.starttime || s.state == CN_STATE_CHECKPOINTED ||
	    s.state == CN_STATE_NO_CUDA || (!s.busy && s.state == CN_STATE_FAILED))
		return 0;
	return stopped((int)pid) ? -1 : 1;
}

int cn_jobdirs_holding(const char *statusbase, uint32_t job, uid_t uid, double deadline,
		       int *frozen, int *first)
{
	char name[32], why[300];
	struct dirent *e;
	int b = base_fd(statusbase, false, why, sizeof(why)), j, n = 0;
	DIR *d;

	*frozen = 0;
	if (b < 0)
		return 0;
	snprintf(name, sizeof(name), "job%u", (unsigned)job);
	j = cn_safe_dir(b, name, (struct cn_owner){ uid, false }, false, why, sizeof(why));
	close(b);
	if (j < 0)
		return 0;
	d = fdopendir(j);
	while (d && now_s() < deadline && (e = readdir(d))) {
		int h = holds(j, e->d_name, uid, job);

		if (h < 0)
			(*frozen)++;
		else if (h > 0 && !n++)
			*first = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	else
		close(j);
	return n;
}
