/* lead: who answers a rank at its NCCL job's cut, the command line or the ranks themselves
 * (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/lead.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_cut.h"
#include "cn_notes.h"
#include "cn_safe.h"
#include "cn_words.h"

#define MAX_LINES 1024

static bool alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

void cn_lead_begin(struct cn_lead *l, const char *dir)
{
	char text[64];

	l->dir = dir;
	l->by_cli = cn_notes_take(dir, (int)getpid(), CN_NOTE_NCCL_LED, text, sizeof(text)) > 0 &&
		    atoi(text) > 0 && alive(atoi(text));
	l->leader = 0;
	l->n_peers = 0;
}

/* Wait, until the deadline, for this process's note what: 0 with its text in buf; -1 with why (the
 * reason the leader or a peer gave up); 1 when none came in time. */
static int hear(const struct cn_lead *l, const char *what, char *buf, size_t len, double until,
		char *why, size_t wlen)
{
	struct timespec tick = { 0, 2 * 1000 * 1000 };

	for (;;) {
		if (cn_notes_take(l->dir, (int)getpid(), CN_NOTE_NCCL_ABORT, why, wlen) >= 0) {
			why[strcspn(why, "\n")] = '\0';
			if (!why[0])
				snprintf(why, wlen, "the command line gave up");
			return -1;
		}
		if (cn_notes_take(l->dir, (int)getpid(), what, buf, len) >= 0)
			return 0;
		if (cn_clock_ms() >= until)
			return 1;
		nanosleep(&tick, NULL);
	}
}

/* The lines every live process in the status directory said in its note said. The directory is
 * listed only as far as it is trusted (base/safe.c), and each note read as its owner's. */
static int read_all(const struct cn_lead *l, const char *said, struct cn_cut_line *lines)
{
	char suffix[64], text[8192], why[200];
	struct cn_owner o;
	struct dirent *e;
	int n = 0, fd = cn_safe_dir_of(l->dir, (int)getpid(), &o, why, sizeof(why));
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(suffix, sizeof(suffix), ".%s", said);
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid <= 0 || strcmp(end, suffix) != 0 || !alive((int)pid) ||
		    cn_notes_read(l->dir, (int)pid, said, text, sizeof(text)) < 0)
			continue;
		n = cn_cut_parse(text, (int)pid, lines, n, MAX_LINES);
	}
	closedir(d);
	return n;
}

/* Of all the lines, those of the ranks whose communicators meet this one's, directly or through
 * another's, moved to the front; their pids into l's peers. Their count. */
static int meet(struct cn_lead *l, struct cn_cut_line *lines, int n)
{
	int k = 0;
	bool grew = true;

	l->n_peers = 0;
	l->peers[l->n_peers++] = (int)getpid();
	while (grew) {
		grew = false;
		for (int a = 0; a < n; a++) {
			bool in = false, meets = false;

			for (int p = 0; p < l->n_peers && !in; p++)
				in = lines[a].who == l->peers[p];
			for (int b = 0; b < n && !in && !meets; b++)
				for (int p = 0; p < l->n_peers && !meets; p++)
					meets = lines[b].who == l->peers[p] &&
						lines[b].key == lines[a].key;
			if (!in && meets && l->n_peers < CN_LEAD_MAX_PEERS) {
				l->peers[l->n_peers++] = lines[a].who;
				grew = true;
			}
		}
	}
	for (int a = 0; a < n; a++)
		for (int p = 0; p < l->n_peers; p++)
			if (lines[a].who == l->peers[p]) {
				struct cn_cut_line t = lines[k];

				lines[k++] = lines[a];
				lines[a] = t;
				break;
			}
	return k;
}

/* The leader's answers: to each rank met, its counts to reach (what is the go note of a suspend's
 * first step) or the go. -1 with why when one could not be written. */
static int answer_all(const struct cn_lead *l, const char *what, const struct cn_cut_line *lines,
		      int n, char *why, size_t wlen)
{
	char text[8192];

	for (int p = 0; p < l->n_peers; p++) {
		if (strcmp(what, CN_NOTE_NCCL_GO) == 0)
			cn_cut_targets(lines, n, l->peers[p], text, sizeof(text));
		else
			snprintf(text, sizeof(text), "%s", CN_NCCL_GO);
		if (cn_notes_put(l->dir, l->peers[p], what, text) < 0) {
			snprintf(why, wlen, "the rank that leads the cut cannot write to rank %d",
				 l->peers[p]);
			return -1;
		}
	}
	return 0;
}

/* Until the answer comes: the lines said by the ranks met, and once every communicator among them
 * has all its ranks there, the lowest pid answers them all. The others take the answer as soon as
 * it is there (the leader may have gone on and taken its own notes away). The go after the ranks
 * said they are there is the one that matters: every rank that gets it suspends (or resumes) its
 * communicators, collectively and with no timeout, so a rank must not give up while the leader may
 * still send it. The leader sends it within its own bound after the last rank said it is there,
 * and that rank was at most a drain's bound behind the first: a rank that is not the leader waits
 * three bounds for it. */
static int lead_self(struct cn_lead *l, const char *said, const char *what, char *buf, size_t len,
		     unsigned timeout_ms, char *why, size_t wlen)
{
	static struct cn_cut_line lines[MAX_LINES];
	struct timespec tick = { 0, 2 * 1000 * 1000 };
	double until = cn_clock_ms() + timeout_ms;
	char whole_why[300] = "";
	bool answered = false;
	int n, r;

	for (;;) {
		r = hear(l, what, buf, len, 0, why, wlen);
		if (r <= 0)
			return r;
		if (!answered && (n = meet(l, lines, read_all(l, said, lines))) &&
		    cn_cut_whole(lines, n, whole_why, sizeof(whole_why))) {
			l->leader = (int)getpid();
			for (int p = 0; p < l->n_peers; p++)
				if (l->peers[p] < l->leader)
					l->leader = l->peers[p];
			if (l->leader == (int)getpid() &&
			    answer_all(l, what, lines, n, why, wlen) < 0)
				return -1;
			if (l->leader != (int)getpid() && strcmp(what, CN_NOTE_NCCL_COMMIT) == 0)
				until += 2.0 * timeout_ms;
			answered = true;
			whole_why[0] = '\0';
			continue;
		}
		if (cn_clock_ms() >= until) {
			if (whole_why[0])
				snprintf(why, wlen, "%s", whole_why);
			else if (l->leader)
				snprintf(why, wlen,
					 "no word from rank %d, which leads the job's cut",
					 l->leader);
			else
				snprintf(why, wlen, "no rank of the job met");
			return -1;
		}
		nanosleep(&tick, NULL);
	}
}

int cn_lead_answer(struct cn_lead *l, const char *said, const char *what, char *buf, size_t len,
		   unsigned timeout_ms, char *why, size_t wlen)
{
	double until;
	int r;

	if (!l->by_cli)
		return lead_self(l, said, what, buf, len, timeout_ms, why, wlen);
	until = cn_clock_ms() + timeout_ms;
	/* The command line's last go too: it sends it once the last rank said it is there. */
	if (strcmp(what, CN_NOTE_NCCL_COMMIT) == 0)
		until += 2.0 * timeout_ms;
	r = hear(l, what, buf, len, until, why, wlen);
	if (r > 0)
		snprintf(why, wlen, "no word from the command line in time");
	return r ? -1 : 0;
}

void cn_lead_give_up(struct cn_lead *l, const char *why)
{
	char text[400];

	if (l->by_cli)
		return;
	snprintf(text, sizeof(text), "rank %d gave up: %s\n", (int)getpid(), why);
	for (int p = 0; p < l->n_peers; p++)
		if (l->peers[p] != (int)getpid())
			cn_notes_put(l->dir, l->peers[p], CN_NOTE_NCCL_ABORT, text);
	l->n_peers = 0;
}
