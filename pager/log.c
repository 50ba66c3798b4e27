/* log: the pager's lines, one each, on stderr: the journal's under systemd (which adds the time),
 * with the time in front elsewhere. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "pager.h"

void log_utc(char *out, size_t len)
{
	struct timeval tv;
	struct tm tm;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
}

static void say(const char *fmt, va_list ap)
{
	char line[2048], when[32] = "";

	vsnprintf(line, sizeof(line), fmt, ap);
	for (char *c = line; *c; c++) /* what a user's program named stays on its line */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (!getenv("JOURNAL_STREAM"))
		log_utc(when, sizeof(when));
	fprintf(stderr, "%s%scudanap-pager: %s\n", when, when[0] ? " " : "", line);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!pg_policy.debug)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}
