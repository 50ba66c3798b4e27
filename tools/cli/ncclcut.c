/* ncclcut: the command line's side of the cut at which the ranks of an NCCL job suspend and
 * resume their communicators (preload/agent/nccl.c has the ranks' side and preload/nccl/comms.c
 * why). Files beside each process's status file: at a suspend every rank says how many operations
 * it has issued on each communicator (nccl-cut), this command answers each with the most any rank
 * has issued (nccl-go), the ranks say when they are there (nccl-ready), and this command lets them
 * all suspend at once (nccl-commit); at a resume every rank says it is restored (nccl-ready) and
 * all resume at once. A communicator some of whose ranks are not in the group, or a rank that
 * fails, makes this command tell the others to give up (nccl-abort): none of them then waits in a
 * collective its peers never make. The ranks know this command leads from its note (nccl-led,
 * group.c); signalled from elsewhere they lead themselves (preload/agent/lead.c), with the same
 * arithmetic (base/cut.c). */
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

		said = 0;
		for (int i = 0; i < n; i++) {
			char text[8192];

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

static void cut_suspend(struct job *jobs, int n, int *state, bool *part, struct cn_cut_line *lines,
			double deadline)
{
	int n_lines = 0, said = gather(jobs, n, CN_NOTE_NCCL_CUT, state, lines, &n_lines, deadline);
	char why[400];

	if (said <= 0) {
		if (said < 0)
			abort_all(jobs, n, state,
				  "the job's other ranks did not all say their counts");
		return;
	}
	/* A process that finished now (no CUDA, refused, failed) is a rank only if a communicator
	 * misses it; the one that failed is named first. */
	if (!cn_cut_whole(lines, n_lines, why, sizeof(why))) {
		any_failed(jobs, n, state, NULL, why, sizeof(why));
		abort_all(jobs, n, state, why);
		return;
	}
	for (int i = 0; i < n; i++)
		part[i] = state[i] == SAID;
	/* Each rank's target on each of its communicators: the most any rank has issued. */
	for (int i = 0; i < n; i++) {
		char text[8192];

		if (state[i] != SAID)
			continue;
		cn_cut_targets(lines, n_lines, i, text, sizeof(text));
		say(&jobs[i], CN_NOTE_NCCL_GO, text);
		state[i] = WAITING;
	}
	n_lines = 0;
	said = gather(jobs, n, CN_NOTE_NCCL_READY, state, lines, &n_lines, deadline);
	if (said < 0 || any_failed(jobs, n, state, part, why, sizeof(why)))
		abort_all(jobs, n, state,
			  said < 0 ? "the job's other ranks did not all reach the cut" : why);
	else if (said > 0)
		commit(jobs, n, state);
}

static void cut_resume(struct job *jobs, int n, int *state, struct cn_cut_line *lines,
		       double deadline)
{
	int n_lines = 0,
	    said = gather(jobs, n, CN_NOTE_NCCL_READY, state, lines, &n_lines, deadline);
	char why[400];

	if (said <= 0) {
		if (said < 0)
			abort_all(jobs, n, state, "the job's other ranks were not all restored");
		return;
	}
	if (!cn_cut_whole(lines, n_lines, why, sizeof(why))) {
		any_failed(jobs, n, state, NULL, why, sizeof(why));
		abort_all(jobs, n, state, why);
	} else {
		commit(jobs, n, state);
	}
}

void ncclcut_run(struct job *jobs, int n, enum verb v, double deadline)
{
	static struct cn_cut_line lines[MAX_LINES]; /* who: the index in jobs */
	bool *part;
	int *state;

	if (v == VERB_PREPARE || v == VERB_NAP || !(state = calloc((size_t)n, sizeof(*state))))
		return;
	if (!(part = calloc((size_t)n, sizeof(*part)))) {
		free(state);
		return;
	}
	for (int i = 0; i < n; i++)
		state[i] = jobs[i].sent ? WAITING : FINISHED;
	if (v == VERB_SUSPEND)
		cut_suspend(jobs, n, state, part, lines, deadline);
	else
		cut_resume(jobs, n, state, lines, deadline);
	free(part);
	free(state);
}
