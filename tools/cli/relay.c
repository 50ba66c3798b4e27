/* relay: this node's part in a whole Slurm job led by the command line on another host, the task
 * of one srun step on each node of the job (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cn_cut.h"

#define MAX_TARGETS 1024

struct relay {
	char node[256];
	pthread_mutex_t out;
	pthread_t beat;
	atomic_bool stop;
	bool beating, eof;
	char in[1 << 16]; /* what stdin gave and no line took yet */
	size_t used;
	char *targets[MAX_TARGETS]; /* the last "count" phase's, by index in the jobs */
};

/* One line to the leader, in one write: the beat's thread writes too. */
static void say(struct relay *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct relay *r, const char *fmt, ...)
{
	char line[SPAN_LINE_MAX + 1];
	va_list ap;
	int o = snprintf(line, sizeof(line), SPAN_MARK "%s ", r->node);

	va_start(ap, fmt);
	vsnprintf(line + o, sizeof(line) - (size_t)o - 1, fmt, ap);
	va_end(ap);
	o = (int)strlen(line); /* what fit, one byte kept for the newline */
	/* A line of ours is one line whatever it quotes. */
	for (char *p = line; p < line + o; p++)
		if (*p == '\n')
			*p = ' ';
	line[o++] = '\n';
	pthread_mutex_lock(&r->out);
	for (size_t w = 0; w < (size_t)o;) {
		ssize_t k = write(STDOUT_FILENO, line + w, (size_t)o - w);

		if (k <= 0 && errno != EINTR)
			break;
		w += k > 0 ? (size_t)k : 0;
	}
	pthread_mutex_unlock(&r->out);
}

/* A text longer than a line, in lines of its pieces: "KIND+ PIECE"..., then "KIND PIECE". */
static void say_long(struct relay *r, const char *kind, const char *text)
{
	size_t n = strlen(text), piece = SPAN_LINE_MAX / 2;

	for (; n > piece; text += piece, n -= piece)
		say(r, "%s+ %.*s", kind, (int)piece, text);
	say(r, "%s %s", kind, text);
}

static void *beat(void *arg)
{
	struct relay *r = arg;

	while (!atomic_load(&r->stop)) {
		say(r, "beat");
		for (int i = 0; i < 10 && !atomic_load(&r->stop); i++)
			usleep(100000);
	}
	return NULL;
}

/* The next line of the leader's of one of the kinds (NULL-terminated) into line, its kind's index
 * returned; lines meant for another node and other kinds are passed over. -1 at stdin's end (the
 * leader is gone) or the deadline. */
static int hear(struct relay *r, const char *const kinds[], char *line, size_t len, double deadline)
{
	for (;;) {
		char *nl;

		while ((nl = memchr(r->in, '\n', r->used))) {
			size_t n = (size_t)(nl - r->in), m = strlen(SPAN_MARK);
			int found = -1;

			*nl = '\0';
			for (int k = 0; kinds[k] && found < 0 && strncmp(r->in, SPAN_MARK, m) == 0;
			     k++) {
				size_t kl = strlen(kinds[k]);

				if (strncmp(r->in + m, kinds[k], kl) == 0 &&
				    (!r->in[m + kl] || r->in[m + kl] == ' '))
					found = k;
			}
			if (found >= 0)
				snprintf(line, len, "%s", r->in + m);
			memmove(r->in, nl + 1, r->used - n - 1);
			r->used -= n + 1;
			if (found >= 0)
				return found;
		}
		if (r->eof || r->used == sizeof(r->in))
			return -1;
		struct pollfd pf = { STDIN_FILENO, POLLIN, 0 };
		double left = deadline - cli_now_s();
		ssize_t k;

		if (left <= 0)
			return -1;
		if (poll(&pf, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) <= 0)
			continue;
		k = read(STDIN_FILENO, r->in + r->used, sizeof(r->in) - r->used);
		if (k > 0)
			r->used += (size_t)k;
		else if (k == 0 || errno != EINTR)
			r->eof = true;
	}
}

/* What follows a kind's word in a line heard ("" when nothing). */
static const char *rest(const char *line)
{
	const char *sp = strchr(line, ' ');

	return sp ? sp + 1 : "";
}

struct relay *relay_open(int n_procs, const char *why_none)
{
	struct relay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	slurm_node_name(r->node, sizeof(r->node));
	pthread_mutex_init(&r->out, NULL);
	r->beating = pthread_create(&r->beat, NULL, beat, r) == 0;
	say(r, "hello %d %s", n_procs, why_none ? why_none : "");
	return r;
}

void relay_close(struct relay *r)
{
	if (!r)
		return;
	say(r, "end");
	atomic_store(&r->stop, true);
	if (r->beating)
		pthread_join(r->beat, NULL);
	for (int i = 0; i < MAX_TARGETS; i++)
		free(r->targets[i]);
	free(r);
}

bool relay_may_send(struct relay *r, const char *refused_here, double deadline, char *why,
		    size_t len)
{
	static const char *const kinds[] = { "send", "refuse", NULL };
	char line[4096];
	int k;

	if (refused_here)
		say(r, "checked refused %s", refused_here);
	else
		say(r, "checked ok");
	k = hear(r, kinds, line, sizeof(line), deadline);
	if (k != 0)
		snprintf(why, len, "%s",
			 k < 0 ? "no word from the command line that leads the job" : rest(line));
	return k == 0;
}

/* A go line's "KEY:COUNT,KEY:COUNT" made the rank's note, "KEY COUNT" lines. */
static char *targets_text(const char *list)
{
	size_t n = strlen(list);
	char *t = malloc(n + 2), *o = t;

	if (!t)
		return NULL;
	for (const char *p = list; *p; p++)
		*o++ = *p == ':' ? ' ' : *p == ',' ? '\n' : *p;
	if (o > t)
		*o++ = '\n';
	*o = '\0';
	return t;
}

int relay_phase(struct relay *r, const char *phase, const struct cn_cut_line *lines, int n,
		const char *state, const char *note, double deadline, char *why, size_t len)
{
	static const char *const kinds[] = { "go", "went", "commit", "nocut", "abort", NULL };
	char line[8192];
	int k;

	for (int i = 0; i < MAX_TARGETS; i++) {
		free(r->targets[i]);
		r->targets[i] = NULL;
	}
	for (int i = 0; i < n; i++)
		say(r, "cut %s %d %016llx %d %d %lu", phase, lines[i].who,
		    (unsigned long long)lines[i].key, lines[i].rank, lines[i].nranks,
		    lines[i].issued);
	say(r, "said %s %s %s", phase, state, note ? note : "");
	for (;;) {
		char node[256], list[8000];
		int idx;

		k = hear(r, kinds, line, sizeof(line), deadline);
		if (k == 0 && sscanf(line, "go %255s %d %7999s", node, &idx, list) == 3) {
			if (strcmp(node, r->node) == 0 && idx >= 0 && idx < MAX_TARGETS) {
				free(r->targets[idx]);
				r->targets[idx] = targets_text(list);
			}
			continue;
		}
		if (k == 0)
			continue;
		break;
	}
	if (k == 1 || k == 2)
		return 0;
	if (k == 3)
		return 1;
	snprintf(why, len, "%s",
		 k < 0 ? "no word from the command line that leads the job" : rest(line));
	return -1;
}

const char *relay_target(const struct relay *r, int idx)
{
	return idx >= 0 && idx < MAX_TARGETS && r->targets[idx] ? r->targets[idx] : "";
}

bool relay_outcome(struct relay *r, const struct job *jobs, int n, const struct job *failed,
		   bool transient, bool json, double deadline)
{
	static const char *const kinds[] = { "ok", "rollback", NULL };
	char line[256], obj[CN_STATUS_MAX + 8192];

	for (int i = 0; i < n; i++) {
		say(r, "proc %d %s %d %s", jobs[i].ok, jobs[i].outcome ? jobs[i].outcome : "-",
		    jobs[i].pid, jobs[i].line);
		if (json && cli_job_json(&jobs[i], obj, sizeof(obj)) == 0)
			say_long(r, "json", obj);
	}
	if (failed)
		say(r, "result %s %s", transient ? "transient" : "failed", failed->line);
	else
		say(r, "result ok");
	return hear(r, kinds, line, sizeof(line), deadline) != 0;
}

bool relay_rolled_back(struct relay *r, int m, int bad, const char *line, double deadline)
{
	static const char *const kinds[] = { "retry", "stop", NULL };
	char word[256];

	say(r, "rolledback %d %d %s", m, bad, line && line[0] ? line : "-");
	return hear(r, kinds, word, sizeof(word), deadline) == 0;
}
