/* safe: see cn_safe.h. A path is opened with O_NOFOLLOW (its last component may not be a link)
 * and O_NONBLOCK (a FIFO opens at once and a device is refused by the fstat that follows); what
 * is opened is then judged by fstat, never by the name: its type, its owner, its size. */
#define _GNU_SOURCE
#include "cn_safe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
	int fd = openat(at, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return open_failed(at, path, why, wlen);
	fd = judge(fd, path, false, o, false, why, wlen, &st);
	if (fd < 0)
		return fd;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* The directory of pid's status files, as far as the caller may trust it: root takes it only
 * when pid's user owns it and nobody else may write to it, since another user could have named
 * or made it (a FIFO in it to hang on, a file to fool it, a link to make root write elsewhere);
 * anyone else opens whatever the kernel lets it. Never through a link. Its fd, or -errno. */
int cn_safe_dir_of(const char *dir, int pid, struct cn_owner *o)
{
	char why[300];
	bool root = geteuid() == 0;

	*o = CN_OWNER_ANY;
	if (root && cn_safe_owner_of(pid, true, o) < 0)
		return -ESRCH;
	return cn_safe_dir(AT_FDCWD, dir, *o, !root, why, sizeof(why));
}

/* name in the directory at replaced atomically by buf, written first to a temporary name (0600,
 * never through a link). */
int cn_safe_replace(int at, const char *name, const char *buf, size_t n)
{
	char tmp[300];
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(at, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
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
