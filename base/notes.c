/* notes: the files beside a status file, <dir>/<pid>.<what>, that the command line and a process
 * leave each other (see cn_notes.h). */
#define _GNU_SOURCE
#include "cn_notes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cn_safe.h"

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
	r = cn_safe_replace(fd, name, text, strlen(text));
	close(fd);
	return r;
}

int cn_notes_take(const char *dir, int pid, const char *what, char *buf, size_t len)
{
	char name[300], why[300];
	struct cn_owner o;
	int fd = cn_safe_dir_of(dir, pid, &o, why, sizeof(why));
	ssize_t n;

	if (fd < 0)
		return fd;
	snprintf(name, sizeof(name), "%d.%s", pid, what);
	/* Left by the command line: the process's user's, or root's. */
	n = cn_safe_read(fd, name, (struct cn_owner){ geteuid(), true }, buf, len, why,
			 sizeof(why));
	if (n != -ENOENT)
		unlinkat(fd, name, 0);
	close(fd);
	if (n == -ENOENT)
		return -ENOENT;
	if (n < 0)
		buf[0] = '\0';
	return n > 0 ? (int)n : 0;
}

int cn_notes_read(const char *dir, int pid, const char *what, char *buf, size_t len)
{
	char name[300], why[300];
	struct cn_owner o;
	int fd = cn_safe_dir_of(dir, pid, &o, why, sizeof(why));
	ssize_t n;

	if (fd < 0)
		return fd;
	snprintf(name, sizeof(name), "%d.%s", pid, what);
	n = cn_safe_read(fd, name, o, buf, len, why, sizeof(why));
	close(fd);
	return (int)n;
}
