/* progress: one line on the terminal while a command waits for processes longer than a second,
 * rewritten in place and erased before anything else is printed (docs/FILES.md). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

/* Shown only after this long: what ends sooner needs no word while it runs. */
#define PROGRESS_AFTER_S 1.0
/* and rewritten at most this often. */
#define PROGRESS_EVERY_S 0.2

/* The wait under way: one at a time in a command, its loops the only callers. */
static struct {
	double t0, next, bound;
	bool on;
	size_t shown, cols;
	char topic[160];
} pg;

void progress_start(double bound, const char *fmt, ...)
{
	struct winsize ws;
	va_list ap;

	progress_end();
	pg.t0 = cli_now_s();
	pg.next = pg.t0 + PROGRESS_AFTER_S;
	pg.bound = bound;
	pg.on = isatty(STDERR_FILENO) == 1;
	pg.cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1u : 0;
	va_start(ap, fmt);
	vsnprintf(pg.topic, sizeof(pg.topic), fmt, ap);
	va_end(ap);
}

void progress_done(int done, const char *word, const char *more)
{
	char line[400];
	double now = cli_now_s();
	size_t n, was = pg.shown;

	if (!pg.on || now < pg.next)
		return;
	pg.next = now + PROGRESS_EVERY_S;
	snprintf(line, sizeof(line), "%s: %s: %d %s%s, %.1f s (%.0f s at most)", cli_prog, pg.topic,
		 done, word, more, now - pg.t0, pg.bound);
	n = strlen(line);
	/* a line that wraps cannot be taken back with a carriage return */
	if (pg.cols && n > pg.cols)
		line[n = pg.cols] = '\0';
	pg.shown = n;
	fprintf(stderr, "\r%s%*s", line, was > n ? (int)(was - n) : 0, "");
	if (was > n)
		fprintf(stderr, "\r%s", line);
	fflush(stderr);
}

void progress_end(void)
{
	if (pg.shown) {
		fprintf(stderr, "\r%*s\r", (int)pg.shown, "");
		fflush(stderr);
	}
	pg.shown = 0;
	pg.on = false;
}
