/* view: the table cudanap status prints, a row per process in columns that hold every word, and
 * the lines under it (docs/FILES.md). */
#define _GNU_SOURCE
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cn_outcome.h"

static void mib(double v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.0f", v);
}

/* A command line fit for one row of a table: control characters (a script's newlines) made
 * spaces. */
static void one_line(const char *in, char *out, size_t len)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < len; i++)
		out[i] = (unsigned char)in[i] < 0x20 || in[i] == 0x7f ? ' ' : in[i];
	out[i] = '\0';
}

/* The GPUS column: where the process is; asleep, "0>1" when a resume puts it elsewhere. */
static void gpus_col(const struct cn_status *s, char *out, size_t len)
{
	char now[64], to[64];

	cli_gpu_indices(s->gpus, now, sizeof(now));
	cli_gpu_indices(s->restore_gpus, to, sizeof(to));
	if (!now[0])
		snprintf(out, len, "-");
	else if (to[0] && strcmp(to, now) != 0)
		snprintf(out, len, "%s>%s", now, to);
	else
		snprintf(out, len, "%s", now);
}

/* The NCCL column: how the process's communicators are handled at a suspend. */
static const char *nccl_col(const struct cn_status *s)
{
	static const struct {
		const char *prefix, *word;
	} words[] = { { "suspended", "suspended" },
		      { "suspend-api", "api" },
		      { "sockets", "sockets" },
		      { "no suspend API", "refused" } };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strncmp(s->nccl, words[i].prefix, strlen(words[i].prefix)) == 0)
			return words[i].word;
	return "-";
}

/* The SUSPEND column: what a suspend would do, as last asked: "yes 0.9/0.5" with the estimated
 * suspend and resume seconds; no, asleep, no-cuda; busy while an action is under way. */
static void suspend_col(const struct cn_status *s, unsigned char mark, char *out, size_t len)
{
	const char *stale = mark & STALE_ASK ? "?" : "";

	if (s->busy)
		snprintf(out, len, "busy");
	else if (s->suspendable == CN_ASK_UNASKED)
		snprintf(out, len, "-");
	else if (s->suspendable == CN_ASK_YES && s->est_suspend_s >= 0)
		snprintf(out, len, "yes %.1f/%.1f%s", s->est_suspend_s, s->est_resume_s, stale);
	else
		snprintf(out, len, "%s%s", cn_outcome_ask_to_string(s->suspendable), stale);
}

/* The NAP column: where its naps stand. */
static void nap_col(const struct cn_status *s, char *out, size_t len)
{
	double idle = cn_status_since_s(s->idle_since);

	/* The nap's own words, as --json and the lines after the table say them. */
	if (s->nap == CN_NAP_AWAKE && idle >= 0)
		snprintf(out, len, "idle %.0fs", idle);
	else if (s->nap != CN_NAP_UNSAID)
		snprintf(out, len, "%s", cn_outcome_nap_to_string(s->nap));
	else
		snprintf(out, len, "-");
}

/* The NAPS column: naps/wakes and the last wake's delay. */
static void naps_col(const struct cn_status *s, char *out, size_t len)
{
	if (!s->naps && !s->wakes)
		snprintf(out, len, "-");
	else if (s->last_wake_ms >= 0)
		snprintf(out, len, "%lu/%lu %.2fs", s->naps, s->wakes, s->last_wake_ms / 1000);
	else
		snprintf(out, len, "%lu/%lu", s->naps, s->wakes);
}

/* The STATE column: the state's word, '+prep' when a prepared copy waits, '*' while an action is
 * under way; a process stopped (SIGSTOP, a debugger) or frozen says so, for its CUDA runs on
 * only once it is continued: in its word's place while it runs, after it while it sleeps. */
static void state_col(const struct cn_status *s, char *out, size_t len)
{
	const char *halt = procs_halt_word(s->pid);
	bool runs = cn_status_state_of(s) == CN_STATE_RUNNING;

	snprintf(out, len, "%s%s%s%s%s", halt && runs ? halt : cn_status_state(s),
		 halt && !runs ? "+" : "", halt && !runs ? halt : "", s->prepared ? "+prep" : "",
		 s->busy ? "*" : "");
}

enum { COLS = 15 };
static const char *const heads[COLS + 1] = { "NODE",	 "PID",	     "STATE",	"ACTION",
					     "RESULT",	 "TIME",     "GPUS",	"GPU_MIB",
					     "HOST_MIB", "DISK_MIB", "NOW_MIB", "SUSPEND",
					     "NAP",	 "NAPS",     "NCCL",	"COMMAND" };
static const char align[COLS + 2] = "lllllllrrrrlllll";

/* Row i of the table; true when a '?' in it marks a column as answered before, not now. */
static bool add_row(struct table *t, const struct rows *r, int i)
{
	char c[COLS][160], cmd[sizeof(r->s->command)];
	const char *cells[COLS + 1] = { r->node };
	const struct cn_status *s = &r->s[i];
	const char *res = cn_status_result(s); /* "" while its action runs */

	snprintf(c[0], sizeof(c[0]), "%d", s->pid);
	state_col(s, c[1], sizeof(c[1]));
	snprintf(c[2], sizeof(c[2]), "%s", cn_outcome_action_to_string(s->action));
	snprintf(c[3], sizeof(c[3]), "%s", res[0] ? res : "-");
	cli_fmt_ms(s->total_ms, c[4], sizeof(c[4]));
	gpus_col(s, c[5], sizeof(c[5]));
	mib(s->footprint_mib, c[6], sizeof(c[6]));
	mib(s->host_mib, c[7], sizeof(c[7]));
	mib(s->disk_mib, c[8], sizeof(c[8]));
	mib(s->gpu_now_mib, c[9], sizeof(c[9]));
	if (r->mark[i] & STALE_NOW && s->gpu_now_mib >= 0)
		strcat(c[9], "?");
	suspend_col(s, r->mark[i], c[10], sizeof(c[10]));
	nap_col(s, c[11], sizeof(c[11]));
	naps_col(s, c[12], sizeof(c[12]));
	snprintf(c[13], sizeof(c[13]), "%s", nccl_col(s));
	for (int k = 0; k < COLS - 1; k++)
		cells[k + 1] = c[k];
	one_line(s->command, cmd, sizeof(cmd));
	cells[COLS] = cmd;
	table_add(t, r->node ? cells : cells + 1);
	return strchr(c[9], '?') || strchr(c[10], '?');
}

/* Of the status's peer field, what is peer access (its length) and what cudanap owns (NULL when
 * it owns nothing): two things, each said by its name. */
static const char *owned_part(const char *peer, size_t *peer_len)
{
	const char *o = strstr(peer, CN_STATUS_OWNED);

	while (o && o != peer && !(o - peer >= 2 && strncmp(o - 2, "; ", 2) == 0))
		o = strstr(o + 1, CN_STATUS_OWNED);
	*peer_len = !o ? strlen(peer) : o == peer ? 0 : (size_t)(o - peer - 2);
	return o ? o + strlen(CN_STATUS_OWNED) : NULL;
}

/* The lines under the table: why a process would refuse, its peer access and the memory cudanap
 * owns of it, whom it shares its GPUs with, for whom it napped, why a nap did not happen. */
static void print_notes(const struct rows *r)
{
	for (int i = 0; i < r->n; i++) {
		const struct cn_status *s = &r->s[i];
		size_t peer_len;
		const char *owned = owned_part(s->peer, &peer_len);

		if (s->suspendable == CN_ASK_NO)
			printf("%d: would refuse%s: %s\n", s->pid,
			       r->mark[i] & STALE_ASK ? " (as last asked)" : "", s->why_not);
		if (s->suspendable != CN_ASK_NO && peer_len)
			printf("%d: peer access %.*s\n", s->pid, (int)peer_len, s->peer);
		if (owned)
			printf("%d: owned memory: %s\n", s->pid, owned);
		if (s->state == CN_STATE_RUNNING && s->beside[0])
			printf("%d: beside another job: %s, not of its NCCL job: a restored rank's "
			       "collective waiting there beside that work is stopped by the driver "
			       "after ~5 s\n",
			       s->pid, s->beside);
		if ((s->state == CN_STATE_CHECKPOINTED || cn_status_light_held(s)) &&
		    s->nap == CN_NAP_NAPPING && s->nap_for_pid > 0 && s->nap_for_mib >= 0)
			printf("%d: napped for %d%s%s%s: %.1f GiB\n", s->pid, s->nap_for_pid,
			       s->nap_for_user[0] ? " (" : "", s->nap_for_user,
			       s->nap_for_user[0] ? "'s, by the node pager)" : "",
			       s->nap_for_mib / 1024);
		if (s->room_last[0])
			printf("%d: %s\n", s->pid, s->room_last);
		if ((s->nap == CN_NAP_REFUSED || s->nap == CN_NAP_WAITING ||
		     s->nap == CN_NAP_BESIDE) &&
		    s->nap_why[0])
			printf("%d: %s: %s\n", s->pid, cn_outcome_nap_to_string(s->nap),
			       s->nap_why);
	}
}

void view_table(const struct rows *r)
{
	struct table t;
	bool stale = false;

	table_init(&t, r->node ? heads : heads + 1, r->node ? align : align + 1,
		   r->node ? COLS + 1 : COLS);
	for (int i = 0; i < r->n; i++)
		stale |= add_row(&t, r, i);
	table_print(&t, stdout);
	table_free(&t);
	print_notes(r);
	if (stale)
		printf("?: as answered before the process's last action, or not answered now: what "
		       "was, not what is (cudanap status asks again)\n");
}

/* ---- a table printed by each node of a Slurm job, laid out again as one (span.c) ---- */

/* Where each head of a heads line starts and ends; the number of heads, or -1 when they are not
 * this table's (NODE first). */
static int heads_at(const char *line, int *start, int *end)
{
	int n = 0;

	for (int i = 0; line[i] && n <= COLS; i++) {
		if (line[i] == ' ' || (i && line[i - 1] != ' '))
			continue;
		start[n] = i;
		end[n] = i + (int)strcspn(line + i, " ");
		if ((size_t)(end[n] - i) != strlen(heads[n]) ||
		    strncmp(line + i, heads[n], (size_t)(end[n] - i)))
			return -1;
		n++;
	}
	return n == COLS + 1 ? n : -1;
}

/* text[from, to) trimmed of its spaces into out; first or last: one word of it, that one. */
static void cell(const char *text, int from, int to, int word, char *out, size_t len)
{
	int n = (int)strlen(text);

	from = from < n ? from : n;
	to = to < n ? to : n;
	while (from < to && text[from] == ' ')
		from++;
	while (to > from && text[to - 1] == ' ')
		to--;
	if (word > 0) /* the first word */
		to = from + (int)strcspn(text + from, " ") < to
			     ? from + (int)strcspn(text + from, " ")
			     : to;
	for (int i = to - 1; word < 0 && i >= from; i--)
		if (text[i] == ' ') {
			from = i + 1;
			break;
		}
	snprintf(out, len, "%.*s", to - from, text + from);
}

/* The cells of a row of a node's table, read back by where its heads are: a number's cell ends
 * where its head ends, any other starts where its head starts and runs to where the next one's
 * begins; a cell before a number (GPUS) and a number hold one word. */
static void row_cells(const char *row, const int *start, const int *end, char c[][300])
{
	for (int k = 0; k <= COLS; k++) {
		bool right = align[k] == 'r', next_right = k < COLS && align[k + 1] == 'r';
		int from = right ? (align[k - 1] == 'r' ? end[k - 1] : start[k - 1]) : start[k];
		int to = right || k == COLS ? (right ? end[k] : (int)strlen(row))
			 : next_right	    ? end[k + 1]
					    : start[k + 1];

		cell(row, from, to, right ? -1 : next_right ? 1 : 0, c[k], sizeof(c[k]));
	}
}

/* Node i's rows into t, by its heads line; false when it has none that is this table's (a node
 * of another cudanap's version). */
static bool relay_rows(struct table *t, const char *text, const char *name)
{
	int start[COLS + 1], end[COLS + 1], got = -1;
	size_t k = strlen(name);

	for (const char *l = text, *e; *l; l = e + (*e != '\0')) {
		char line[4096], c[COLS + 1][300];
		const char *cells[COLS + 1];

		e = l + strcspn(l, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)(e - l), l);
		if (strncmp(line, "NODE ", 5) == 0 && (got = heads_at(line, start, end)) < 0)
			return false;
		if (got < 0 || strncmp(line, name, k) != 0 || line[k] != ' ')
			continue;
		row_cells(line, start, end, c);
		for (int m = 0; m <= COLS; m++)
			cells[m] = c[m];
		table_add(t, cells);
	}
	return true;
}

void view_relay(char *const *texts, const char *const *names, int n)
{
	struct table t;
	bool *raw = calloc((size_t)(n ? n : 1), sizeof(*raw));

	table_init(&t, heads, align, COLS + 1);
	for (int i = 0; i < n; i++)
		if (raw)
			raw[i] = !relay_rows(&t, texts[i] ? texts[i] : "", names[i]);
	table_print(&t, stdout);
	table_free(&t);
	/* a table this one cannot read: its heads and rows as they came */
	for (int i = 0; i < n && raw; i++) {
		size_t k = strlen(names[i]);

		for (const char *l = texts[i] && raw[i] ? texts[i] : "", *e; *l;
		     l = e + (*e != '\0')) {
			e = l + strcspn(l, "\n");
			if (strncmp(l, "NODE ", 5) == 0 ||
			    (strncmp(l, names[i], k) == 0 && l[k] == ' '))
				printf("%.*s\n", (int)(e - l), l);
		}
	}
	free(raw);
}
