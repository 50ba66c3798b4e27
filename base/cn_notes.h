/* notes: what the command line and a process leave each other beside the status file (the names
 * are in cn_words.h). */
#ifndef CN_NOTES_H
#define CN_NOTES_H

#include <stddef.h>

/* Notes: files beside a status file, <dir>/<pid>.<what>, that the command line and a process leave
 * each other (a one-shot --gpu-map or --to-disk, the messages of an NCCL job's cut). A note is
 * replaced atomically (0 or -errno); taking one reads it whole (at most len - 1 bytes, NUL added)
 * and removes it, and returns its length, or -errno (-ENOENT: none). cn_notes_path names one. */
int cn_notes_put(const char *dir, int pid, const char *what, const char *text);
int cn_notes_take(const char *dir, int pid, const char *what, char *buf, size_t len);
/* A note read and left there, if it may be believed: pid's user's (or root's), a regular file in
 * a directory nobody else may write to, never blocking. Its length, or -errno (-ENOENT: none). */
int cn_notes_read(const char *dir, int pid, const char *what, char *buf, size_t len);
void cn_notes_path(const char *dir, int pid, const char *what, char *out, size_t len);
/* Every note's name (cn_words.h), then NULL: what a process's exit removes, and the command line
 * of a process that is gone. */
extern const char *const cn_notes_names[];
/* Every note of pid in the directory dirfd (its caller judged it), and the temporary file of each
 * and of its status file left by a write cut short, removed where it is a regular file of the
 * directory's owner or root's, by cn_safe_unlink_same: for a process that is gone. How many. */
int cn_notes_remove_in(int dirfd, int pid);

#endif
