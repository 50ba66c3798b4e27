/* log: see log.h; one write() a line, the target opened for each line without blocking or
 * following a link (docs/FILES.md). The agent thread. */
#define _GNU_SOURCE
#include "agent/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The target opened for one line: its fd, or -1 with why. */
static int open_target(const char *path, char *why, size_t len)
{
	int fd =
		open(path,
		     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
		     0600);
	struct stat st = { 0 };

	if (fd < 0) {
		snprintf(why, len, "%s",
			 errno == ENXIO	  ? "a FIFO nobody reads"
			 : errno == ELOOP ? "a symbolic link"
					  : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == 0 &&
	    (S_ISCHR(st.st_mode) ||
	     ((S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) && st.st_uid == geteuid())))
		return fd;
	snprintf(why, len, "%s owned by uid %u, not yours",
		 S_ISFIFO(st.st_mode)  ? "a FIFO"
		 : S_ISREG(st.st_mode) ? "a file"
				       : "not a file,",
		 (unsigned)st.st_uid);
	close(fd);
	return -1;
}

void cn_log(const struct cn_config *c, int level, const char *fmt, ...)
{
	static bool said; /* that the target is refused: once */
	char line[1024], why[160];
	int saved = errno, n, fd = STDERR_FILENO;
	va_list ap;

	if (level > c->log_level)
		return;
	n = snprintf(line, sizeof(line), "cudanap[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (c->log_target[0]) {
		fd = open_target(c->log_target, why, sizeof(why));
		if (fd < 0 && !said) {
			said = true;
			dprintf(STDERR_FILENO,
				"cudanap[%d]: [log] target %s: %s; logging to stderr instead\n",
				(int)getpid(), c->log_target, why);
		}
		if (fd < 0)
			fd = STDERR_FILENO;
	}
	if (write(fd, line, (size_t)n) < 0) {
		/* Nowhere left to say it. */
	}
	if (fd != STDERR_FILENO)
		close(fd);
	errno = saved;
}
