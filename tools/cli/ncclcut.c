/* ncclcut: the command line's side of the cut at which an NCCL job's ranks suspend and resume their
 * communicators (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cn_cut.h"
#include "cn_notes.h"
#include "cn_words.h"

#define MAX_LINES 1024

enum { WAITING, SAID, FINISHED };

static int say(const struct job *j, const char *what, const char *text)
{
	return cn_notes_put(j->dir, j->pid, what, text) < 0 ? -1 : 0;
}

/* The process finished its action (its outcome is in its status file), or is gone. */
static bool finished(const struct job *j)
{
	struct cn_status s;

	return cn_status_read(j->dir, j->pid, &s) < 0 || !procs_alive(&s) ||
	       (s.seq > j->seq0 && !s.busy);
}

/* Wait until every process sent its signal has said what (its lines into lines) or finished.
 * Returns how many said it; -1 at the deadline. */
static int gather(struct job *jobs, int n, const char *what, int *state, struct cn_cut_line *lines,
		  int *n_lines, double deadline)
{
	int said;

	for (;;) {
		bool pending = false;
		int finished_n = 0;
		char more[64] = "";

		said = 0;
		for (int i = 0; i < n; i++) {
			char text[8192];

			finished_n += jobs[i].sent && state[i] == FINISHED;
			if (!jobs[i].sent || state[i] == FINISHED)
				continue;
			if (state[i] == WAITING) {
				/* The rank's, in its user's directory: never a FIFO to hang on. */
				if (cn_notes_read(jobs[i].dir, jobs[i].pid, what, text,
						  sizeof(text)) >= 0) {
					*n_lines =
						cn_cut_parse(text, i, lines, *n_lines, MAX_LINES);
					state[i] = SAID;
				} else if (finished(&jobs[i])) {
					state[i] = FINISHED;
				} else {
					pending = true;
				}
			}
			said += state[i] == SAID;
		}
		if (!pending)
			return said;
		if (cli_now_s() >= deadline)
			return -1;
		if (said)
			snprintf(more, sizeof(more), "; %d NCCL rank%s at the cut", said,
				 said == 1 ? "" : "s");
		progress_done(finished_n, "done", more);
		usleep(2000);
	}
}

static void abort_all(struct job *jobs, int n, const int *state, const char *why)
{
	char text[400];

	snprintf(text, sizeof(text), "%s\n", why);
	for (int i = 0; i < n; i++)
		if (state[i] == SAID)
			say(&jobs[i], CN_NOTE_NCCL_ABORT, text);
}

/* A process of part (those that said their counts; all of them when part is NULL) that finished
 * without success, into why. A process without CUDA, such as a launcher, is no rank: it finishes
 * at once with nothing to do. */
static bool any_failed(struct job *jobs, int n, const int *state, const bool *part, char *why,
		       size_t len)
{
	for (int i = 0; i < n; i++) {
		struct cn_status s;

		if (state[i] != FINISHED || !jobs[i].sent || (part && !part[i]))
			continue;
		int r = cn_status_read(jobs[i].dir, jobs[i].pid, &s);

		if (r < 0 || (s.result != CN_RES_OK && s.state != CN_STATE_NO_CUDA)) {
			snprintf(why, len, "rank %d of the job failed: %s", jobs[i].pid,
				 r < 0 ? "gone" : cn_status_result(&s));
			return true;
		}
	}
	return false;
}

static void commit(struct job *jobs, int n, const int *state)
{
	for (int i = 0; i < n; i++)
		if (state[i] == SAID)
			say(&jobs[i], CN_NOTE_NCCL_COMMIT, CN_NCCL_GO);
}

/* One cut: the processes, where each stands, and who decides. */
struct cut {
	struct job *jobs;
	int n, *state;
	bool *part; /* those that said their counts */
	struct cn_cut_line *lines;
	int n_lines;
	double deadline;
	struct relay *relay; /* a job led from another host: the leader decides (relay.c) */
};

/* The verdict on a phase (the lines said, n_lines, by said processes; -1: not all in time):
 * 0 to go on, 1 when there is no cut (no rank anywhere), -1 given up with why. Decided here, or,
 * for a job led from another host, by its leader, which has every node's lines. */
static int judge(struct cut *c, const char *phase, int said, int n_lines, const char *late,
		 char *why, size_t len)
{
	char failure[400];
	bool failed =
		any_failed(c->jobs, c->n, c->state, strcmp(phase, SPAN_THERE) == 0 ? c->part : NULL,
			   failure, sizeof(failure));

	if (c->relay)
		return relay_phase(c->relay, phase, c->lines, n_lines,
				   said < 0 || (failed && strcmp(phase, SPAN_THERE) == 0) ? "bad"
				   : failed						  ? "hint"
											  : "ok",
				   said < 0 ? late
				   : failed ? failure
					    : "",
				   c->deadline, why, len);
	if (said < 0 || (failed && strcmp(phase, SPAN_THERE) == 0)) {
		snprintf(why, len, "%s", said < 0 ? late : failure);
		return -1;
	}
	if (said == 0)
		return 1;
	if (strcmp(phase, SPAN_THERE) != 0 && !cn_cut_whole(c->lines, n_lines, why, len)) {
		/* A process that finished now (no CUDA, refused, failed) is a rank only if a
		 * communicator misses it; the one that failed is named first. */
		if (failed)
			snprintf(why, len, "%s", failure);
		return -1;
	}
	return 0;
}

/* What the ranks said in their notes what, gathered, and the verdict on it (judge). */
static int meet(struct cut *c, const char *what, const char *phase, const char *late, char *why,
		size_t len)
{
	int said = gather(c->jobs, c->n, what, c->state, c->lines, &c->n_lines, c->deadline);

	return judge(c, phase, said, c->n_lines, late, why, len);
}

static void cut_suspend(struct cut *c)
{
	char why[1200];

	switch (meet(c, CN_NOTE_NCCL_CUT, SPAN_COUNT,
		     "the job's other ranks did not all say their counts", why, sizeof(why))) {
	case 1:
		return;
	case -1:
		abort_all(c->jobs, c->n, c->state, why);
		return;
	}
	for (int i = 0; i < c->n; i++)
		c->part[i] = c->state[i] == SAID;
	/* Each rank's target on each of its communicators: the most any rank has issued. */
	for (int i = 0; i < c->n; i++) {
		char text[8192];

		if (c->state[i] != SAID)
			continue;
		if (c->relay)
			snprintf(text, sizeof(text), "%s", relay_target(c->relay, i));
		else
			cn_cut_targets(c->lines, c->n_lines, i, text, sizeof(text));
		say(&c->jobs[i], CN_NOTE_NCCL_GO, text);
		c->state[i] = WAITING;
	}
	c->n_lines = 0;
	if (meet(c, CN_NOTE_NCCL_READY, SPAN_THERE,
		 "the job's other ranks did not all reach the cut", why, sizeof(why)) < 0)
		abort_all(c->jobs, c->n, c->state, why);
	else
		commit(c->jobs, c->n, c->state);
}

static void cut_resume(struct cut *c)
{
	char why[1200];

	switch (meet(c, CN_NOTE_NCCL_READY, SPAN_RESTORED,
		     "the job's other ranks were not all restored", why, sizeof(why))) {
	case 0:
		commit(c->jobs, c->n, c->state);
		break;
	case -1:
		abort_all(c->jobs, c->n, c->state, why);
		break;
	}
}

void ncclcut_run(struct job *jobs, int n, enum verb v, double deadline, struct relay *relay)
{
	static struct cn_cut_line lines[MAX_LINES]; /* who: the index in jobs */
	struct cut c = { jobs, n, NULL, NULL, lines, 0, deadline, relay };

	if (v == VERB_PREPARE || v == VERB_NAP)
		return;
	c.state = calloc((size_t)(n ? n : 1), sizeof(*c.state));
	c.part = calloc((size_t)(n ? n : 1), sizeof(*c.part));
	if (c.state && c.part) {
		for (int i = 0; i < n; i++)
			c.state[i] = jobs[i].sent ? WAITING : FINISHED;
		if (v == VERB_SUSPEND)
			cut_suspend(&c);
		else
			cut_resume(&c);
	}
	free(c.part);
	free(c.state);
}
