/* safe: opening what another user may have planted: no link followed, nothing blocking, only the
 * owner and size expected (docs/FILES.md). */
#ifndef CN_SAFE_H
#define CN_SAFE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Who may own it: uid (CN_ANYONE: whoever), and root as well when root_ok. */
struct cn_owner {
	uid_t uid;
	bool root_ok;
};
#define CN_ANYONE    ((uid_t)-1)
#define CN_OWNER_ANY ((struct cn_owner){ CN_ANYONE, true })

/* The owner of process pid (root's too when root_ok), from /proc; -ESRCH when it is gone. */
int cn_safe_owner_of(int pid, bool root_ok, struct cn_owner *o);

/* A directory at path (relative to the directory fd at, or AT_FDCWD), its last component not a
 * link, owned as o says, that nobody else may write to unless writable is true. Its fd
 * (O_DIRECTORY, close-on-exec), or -errno with why in one line. */
int cn_safe_dir(int at, const char *path, struct cn_owner o, bool writable, char *why, size_t len);

/* Create the directory name in at (mode, then owner uid:gid when uid is not ours), or find it
 * there; then cn_safe_dir(at, name, {uid}, false). Its fd, or -errno with why. */
int cn_safe_mkdir(int at, const char *name, mode_t mode, uid_t uid, gid_t gid, char *why,
		  size_t len);

/* The regular file at path (relative to at), its last component not a link, owned as o says,
 * read into buf without blocking, at most len - 1 bytes of it (NUL-terminated): the length
 * read, or -errno with why. */
ssize_t cn_safe_read(int at, const char *path, struct cn_owner o, char *buf, size_t len, char *why,
		     size_t wlen);

/* cn_safe_read, with what fstat said of the file read in *st. */
ssize_t cn_safe_read_st(int at, const char *path, struct cn_owner o, char *buf, size_t len,
			struct stat *st, char *why, size_t wlen);

/* name in the directory at removed only if it is still the file was describes (device and inode):
 * the directory is used by its fd, never by a path resolved again, so no link swapped in since
 * the check can send the removal elsewhere. 0, -ESTALE when it is another file now, or -errno. */
int cn_safe_unlink_same(int at, const char *name, const struct stat *was);

/* The regular file at path, opened with the rights of uid and gid (this process's filesystem ids
 * and groups switched for the open when it is root and they are another user's), never blocking,
 * read as cn_safe_read: what another user's environment names is opened as that user would open
 * it, so root opens no device or file that user could not (links are followed, as that user: a
 * Kubernetes ConfigMap's files are links; whoever owns it, as the user could read it anyway). */
ssize_t cn_safe_read_as(const char *path, uid_t uid, gid_t gid, char *buf, size_t len, char *why,
			size_t wlen);

/* The directory of pid's status files, as far as anyone may trust it: owned by pid's user (root
 * only for a process of root's) and nobody else may write to it, whoever asks: the preload's own
 * check at its start. Never through a link. Its fd, with *o the owner its files must have (pid's
 * user, or root), or -errno with why in one line. */
int cn_safe_dir_of(const char *dir, int pid, struct cn_owner *o, char *why, size_t len);

/* name in the directory at, opened for reading and writing, made (0600) if missing: a regular
 * file only, never through a link, never blocking on a FIFO; for a flock. Its fd, or -1. */
int cn_safe_lock_file(int at, const char *name);

/* name in the directory at, replaced atomically by n bytes of buf (written first to a temporary
 * name made anew, 0600, O_EXCL: never through a link or into a FIFO). 0 or -errno. */
int cn_safe_replace(int at, const char *name, const char *buf, size_t n);
/* The same, the file made with mode (before the umask) instead of 0600. */
int cn_safe_replace_mode(int at, const char *name, const char *buf, size_t n, mode_t mode);

/* A program or script that root (or anyone) may run without running another user's code: path
 * resolved (real, len), a regular file (executable when exec), owned by root or by this process's
 * user and writable by no one else, in directories of the same owners that no one else may write
 * to (a sticky one, as /tmp, excepted above the file's directory and its parent, where an
 * interpreter looks for files of its own). 0, or -errno with why in one line. */
int cn_safe_trusted(const char *path, bool exec, char *real, size_t len, char *why, size_t wlen);

/* name found as a shell would run it, but only in PATH's absolute directories (an empty or
 * relative entry is the working directory, which may be anyone's), then cn_safe_trusted: the first
 * found decides. A name with a '/' is taken as it is. 0, or -errno with why in one line. */
int cn_safe_find_exec(const char *name, char *real, size_t len, char *why, size_t wlen);

#endif
