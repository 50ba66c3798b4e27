/* notes: the files beside a status file, <dir>/<pid>.<what>, that the command line and a process
 * leave each other (see cn_notes.h). */
#define _GNU_SOURCE
#include "cn_notes.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cn_safe.h"
#include "cn_words.h"

const char *const cn_notes_names[] = {
	CN_NOTE_HIBERNATE,
	CN_NOTE_GPU_MAP,
	CN_NOTE_NAP_FOR,
	CN_NOTE_CALLS,
	CN_NOTE_NCCL_CUT,
	CN_NOTE_NCCL_GO,
	CN_NOTE_NCCL_READY,
	CN_NOTE_NCCL_COMMIT,
	CN_NOTE_NCCL_ABORT,
	CN_NOTE_NCCL_LED,
	NULL,
};

void cn_notes_path(const char *dir, int pid, const char *what, char *out, size_t len)
{
	snprintf(out, len, "%s/%d.%s", dir, pid, what);
}

int cn_notes_put(const char *dir, int pid, const char *what, const char *text)
{
	char name[300];
	char why[300];
	struct cn_owner o;
	int fd = cn_safe_dir_of(dir, pid, &o, why, sizeof(why)), r;

	if (fd < 0)
		return fd;
	snprintf(name, sizeof(name), "%d.%s", pid, what);
	/* Root's note in another user's directory stays root's (that user's process believes root's
	 * or its own), so it must be readable by that user: made 0600, it was read as empty. */
	r = cn_safe_replace_mode(fd, name, text, strlen(text),
				 geteuid() == 0 && o.uid != 0 ? 0644 : 0600);
	close(fd);
	return r;
}

/* A note read, and removed when take: left by the command line (owner: this process's user, or
 * root) or by the process (owner o, the one its directory has). Its length or -errno; *dir_ok
 * false when the directory itself was refused (then nothing was read or removed). */
static int note_read(const char *dir, int pid, const char *what, bool take, char *buf, size_t len,
		     bool *dir_ok)
{
	char name[300], why[300];
	struct cn_owner o;
	int fd = cn_safe_dir_of(dir, pid, &o, why, sizeof(why));
	ssize_t n;

	*dir_ok = fd >= 0;
	if (fd < 0)
		return fd;
	snprintf(name, sizeof(name), "%d.%s", pid, what);
	if (take)
		o = (struct cn_owner){ geteuid(), true };
	n = cn_safe_read(fd, name, o, buf, len, why, sizeof(why));
	if (take && n != -ENOENT)
		unlinkat(fd, name, 0);
	close(fd);
	return (int)n;
}

int cn_notes_take(const char *dir, int pid, const char *what, char *buf, size_t len)
{
	bool dir_ok;
	int n = note_read(dir, pid, what, true, buf, len, &dir_ok);

	/* A note that was there but could not be read (a FIFO, another's) is gone, and empty. */
	if (n == -ENOENT || !dir_ok)
		return n < 0 ? n : -ENOENT;
	if (n < 0)
		buf[0] = '\0';
	return n > 0 ? n : 0;
}

int cn_notes_read(const char *dir, int pid, const char *what, char *buf, size_t len)
{
	bool dir_ok;

	return note_read(dir, pid, what, false, buf, len, &dir_ok);
}

/* name in dirfd removed if it is a regular file of the directory's owner or root's. */
static int remove_one(int dirfd, const char *name, uid_t owner)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != owner && st.st_uid != 0))
		return 0;
	return cn_safe_unlink_same(dirfd, name, &st) == 0;
}

int cn_notes_remove_in(int dirfd, int pid)
{
	char name[300];
	struct stat dir;
	int n = 0;

	if (fstat(dirfd, &dir) < 0)
		return 0;
	for (size_t i = 0; cn_notes_names[i]; i++) {
		snprintf(name, sizeof(name), "%d.%s", pid, cn_notes_names[i]);
		n += remove_one(dirfd, name, dir.st_uid);
		snprintf(name, sizeof(name), ".%d.%s.tmp", pid, cn_notes_names[i]);
		n += remove_one(dirfd, name, dir.st_uid);
	}
	snprintf(name, sizeof(name), ".%d.json.tmp", pid);
	return n + remove_one(dirfd, name, dir.st_uid);
}
