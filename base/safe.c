/* safe: see cn_safe.h. A path is opened with O_NOFOLLOW (its last component may not be a link)
 * and O_NONBLOCK (a FIFO opens at once and a device is refused by the fstat that follows); what
 * is opened is then judged by fstat, never by the name: its type, its owner, its size. */
#define _GNU_SOURCE
#include "cn_safe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

static bool owned(const struct stat *st, struct cn_owner o)
{
	return o.uid == CN_ANYONE || st->st_uid == o.uid || (o.root_ok && st->st_uid == 0);
}

static const char *kind(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISREG(m)  ? "a regular file"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISLNK(m)  ? "a symbolic link"
	       : S_ISSOCK(m) ? "a socket"
			     : "a device";
}

int cn_safe_owner_of(int pid, bool root_ok, struct cn_owner *o)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (pid <= 0 || stat(path, &st) < 0)
		return -ESRCH;
	o->uid = st.st_uid;
	o->root_ok = root_ok;
	return 0;
}

/* Opened: now judge what it is. The fd, or -errno with why (fd closed). */
static int judge(int fd, const char *path, bool dir, struct cn_owner o, bool writable, char *why,
		 size_t len, struct stat *st)
{
	int e;

	if (fstat(fd, st) < 0) {
		e = errno;
		snprintf(why, len, "%s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
		snprintf(why, len, "%s: is %s, not %s; not used", path, kind(st->st_mode),
			 dir ? "a directory" : "a regular file");
		close(fd);
		return dir ? -ENOTDIR : -EINVAL;
	}
	if (!owned(st, o)) {
		snprintf(why, len, "%s: owned by uid %u, not uid %u; not used", path,
			 (unsigned)st->st_uid, (unsigned)o.uid);
		close(fd);
		return -EPERM;
	}
	if (dir && !writable && (st->st_mode & 022)) {
		snprintf(why, len, "%s: mode %03o lets others write in it; not used", path,
			 (unsigned)(st->st_mode & 0777));
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* At most len - 1 bytes of fd, NUL-terminated; fd closed. The length. */
static ssize_t read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* The open failed: why, in words. O_NOFOLLOW with O_DIRECTORY fails a link with ENOTDIR. */
static int open_failed(int at, const char *path, char *why, size_t len)
{
	int e = errno;
	struct stat st;

	if (e == ELOOP || (e == ENOTDIR && fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			   S_ISLNK(st.st_mode)))
		snprintf(why, len, "%s: is a symbolic link; not followed", path);
	else if (e == ENOTDIR)
		snprintf(why, len, "%s: not a directory; not used", path);
	else
		snprintf(why, len, "%s: %s", path, strerror(e));
	return -e;
}

int cn_safe_dir(int at, const char *path, struct cn_owner o, bool writable, char *why, size_t len)
{
	int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return open_failed(at, path, why, len);
	return judge(fd, path, true, o, writable, why, len, &st);
}

int cn_safe_mkdir(int at, const char *name, mode_t mode, uid_t uid, gid_t gid, char *why,
		  size_t len)
{
	if (mkdirat(at, name, mode) == 0) {
		/* Made here, in a directory only we may write to: nobody can swap it before the
		 * chmod (the umask is not ours to trust) and the chown. */
		if (fchmodat(at, name, mode, 0) < 0 ||
		    (uid != geteuid() && fchownat(at, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)) {
			int e = errno;

			snprintf(why, len, "%s: cannot set its mode and give it to uid %u: %s",
				 name, (unsigned)uid, strerror(e));
			unlinkat(at, name, AT_REMOVEDIR);
			return -e;
		}
	} else if (errno != EEXIST) {
		return open_failed(at, name, why, len);
	}
	return cn_safe_dir(at, name, (struct cn_owner){ uid, false }, false, why, len);
}

ssize_t cn_safe_read(int at, const char *path, struct cn_owner o, char *buf, size_t len, char *why,
		     size_t wlen)
{
	struct stat st;

	return cn_safe_read_st(at, path, o, buf, len, &st, why, wlen);
}

ssize_t cn_safe_read_st(int at, const char *path, struct cn_owner o, char *buf, size_t len,
			struct stat *st, char *why, size_t wlen)
{
	int fd = openat(at, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return open_failed(at, path, why, wlen);
	fd = judge(fd, path, false, o, false, why, wlen, st);
	if (fd < 0)
		return fd;
	return read_all(fd, buf, len);
}

int cn_safe_unlink_same(int at, const char *name, const struct stat *was)
{
	struct stat st;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (st.st_dev != was->st_dev || st.st_ino != was->st_ino)
		return -ESTALE;
	return unlinkat(at, name, 0) < 0 ? -errno : 0;
}

ssize_t cn_safe_read_as(const char *path, uid_t uid, gid_t gid, char *buf, size_t len, char *why,
			size_t wlen)
{
	bool as = geteuid() == 0 && uid != 0;
	gid_t groups[256];
	int n_groups = as ? getgroups(256, groups) : 0, fd, e = 0;
	struct stat st;

	/* The ids the kernel checks an open against: the user's, without root's groups. */
	if (as && (n_groups < 0 || setgroups(0, NULL) < 0)) {
		snprintf(why, wlen, "%s: cannot drop root's groups to open it as uid %u", path,
			 (unsigned)uid);
		return -EPERM;
	}
	if (as) {
		setfsgid(gid);
		setfsuid(uid);
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	e = errno;
	if (as) {
		setfsuid(0);
		setfsgid(getegid());
		if (setgroups((size_t)n_groups, groups) < 0)
			abort(); /* root's groups could not be given back: stop here */
	}
	if (fd < 0) {
		snprintf(why, wlen, "%s: %s (opened as uid %u)", path, strerror(e), (unsigned)uid);
		return -e;
	}
	/* Any owner: the user could read it anyway (a team's shared INI), and what it names is
	 * checked in turn; only a regular file. */
	fd = judge(fd, path, false, CN_OWNER_ANY, false, why, wlen, &st);
	if (fd < 0)
		return fd;
	return read_all(fd, buf, len);
}

/* The directory of pid's status files, trusted only when pid's user (or root) owns it and nobody
 * else may write to it, whoever asks: another user could have made it first (/tmp/cudanap-UID,
 * for a user without XDG_RUNTIME_DIR) and put there a FIFO to hang on, a status file to fool the
 * reader into sending a signal of its choice, or a link to make it write elsewhere. Never through
 * a link. Its fd, or -errno with why. */
int cn_safe_dir_of(const char *dir, int pid, struct cn_owner *o, char *why, size_t len)
{
	if (cn_safe_owner_of(pid, true, o) < 0) {
		snprintf(why, len, "process %d: gone", pid);
		return -ESRCH;
	}
	/* The directory is the process's user's, root's only for a process of root's: a directory
	 * root owns is no user's to name, nor to have root write notes in, however the path is
	 * turned meanwhile. Files in it may be root's too (the notes root's command line writes).
	 */
	return cn_safe_dir(AT_FDCWD, dir, (struct cn_owner){ o->uid, o->uid == 0 }, false, why,
			   len);
}

/* name in the directory at replaced atomically by buf, written first to a temporary name made
 * here (0600, O_EXCL: never a link, a FIFO or a file someone left there, which is removed first;
 * one that comes back at once fails the write). */
int cn_safe_replace(int at, const char *name, const char *buf, size_t n)
{
	return cn_safe_replace_mode(at, name, buf, n, 0600);
}

int cn_safe_replace_mode(int at, const char *name, const char *buf, size_t n, mode_t mode)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	char tmp[300];
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(at, tmp, flags, mode);
	if (fd < 0 && errno == EEXIST && unlinkat(at, tmp, 0) == 0)
		fd = openat(at, tmp, flags, mode);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != (ssize_t)n)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(at, tmp, at, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(at, tmp, 0);
	return r;
}

int cn_safe_lock_file(int at, const char *name)
{
	int fd = openat(at, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Owned by root or by us, and writable by nobody else; a sticky directory (as /tmp) when sticky
 * is allowed: nobody else may rename what is in it. */
static bool ours_alone(const struct stat *st, bool sticky)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) &&
	       (!(st->st_mode & 022) ||
		(sticky && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)));
}

int cn_safe_trusted(const char *path, bool exec, char *real, size_t len, char *why, size_t wlen)
{
	char buf[PATH_MAX], *slash;
	struct stat st;

	if (!realpath(path, buf)) {
		int e = errno;

		snprintf(why, wlen, "%s: %s", path, strerror(e));
		return -e;
	}
	snprintf(real, len, "%s", buf);
	if (stat(buf, &st) < 0 || !S_ISREG(st.st_mode) || (exec && !(st.st_mode & 0111))) {
		snprintf(why, wlen, "%s: not %s", buf,
			 exec ? "an executable file" : "a regular file");
		return -EINVAL;
	}
	if (!ours_alone(&st, false)) {
		snprintf(why, wlen,
			 "%s: owned by uid %u, mode %03o: another user could change it; "
			 "not run",
			 buf, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	/* Not sticky for the file's directory and the one above it: an interpreter looks there for
	 * files of its own (Python's pyvenv.cfg and lib/), which anyone could make in /tmp. */
	for (int up = 0; (slash = strrchr(buf, '/')); up++) {
		slash[slash == buf] = '\0'; /* the parent; "/" last */
		if (stat(buf, &st) < 0 || !ours_alone(&st, up >= 2)) {
			snprintf(why, wlen, "%s: in %s, which another user may write to; not run",
				 real, buf);
			return -EPERM;
		}
		if (slash == buf)
			break;
	}
	return 0;
}

int cn_safe_find_exec(const char *name, char *real, size_t len, char *why, size_t wlen)
{
	const char *path = getenv("PATH");
	char file[PATH_MAX];

	if (strchr(name, '/'))
		return cn_safe_trusted(name, true, real, len, why, wlen);
	for (const char *d = path ? path : ""; *d; d += strcspn(d, ":"), d += *d == ':') {
		int n = (int)strcspn(d, ":");

		if (d[0] != '/')
			continue;
		snprintf(file, sizeof(file), "%.*s/%s", n, d, name);
		if (access(file, X_OK) == 0)
			return cn_safe_trusted(file, true, real, len, why, wlen);
	}
	snprintf(why, wlen, "%s: not found in PATH's absolute directories", name);
	return -ENOENT;
}
