/* log: see log.h. Each line goes out in one write(); a log file is opened for each line, so the
 * app closing or reusing descriptors can never redirect our output into its files. */
#define _GNU_SOURCE
#include "agent/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void cn_log(const struct cn_config *c, int level, const char *fmt, ...)
{
	char line[1024];
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
		fd = open(c->log_target, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			  0600);
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
