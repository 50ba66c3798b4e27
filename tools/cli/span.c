/* span: a whole Slurm job over its nodes, led from here: one srun step with a task on every node,
 * and the words with it (docs/FILES.md: the lines). */
#define _GNU_SOURCE
#include "spanstep.h"
#include "view.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cn_cut.h"
#include "cn_hostlist.h"
#include "cn_json.h"

#define SILENCE_S 10.0
#define HELLO_S	  60.0 /* for srun to start the step on every node */

void span_tell(struct span *s, const char *fmt, ...)
{
	char line[8192];
	va_list ap;
	int o = snprintf(line, sizeof(line), SPAN_MARK);

	va_start(ap, fmt);
	vsnprintf(line + o, sizeof(line) - (size_t)o - 1, fmt, ap);
	va_end(ap);
	o = (int)strlen(line); /* what fit, one byte kept for the newline */
	line[o++] = '\n';
	/* A node's next report answers this: what came before is spent. */
	for (int i = 0; i < s->n; i++)
		s->nodes[i].got = false;
	for (size_t w = 0; w < (size_t)o;) {
		ssize_t k = write(s->to, line + w, (size_t)o - w);

		if (k <= 0 && errno != EINTR)
			return; /* srun gone: its end is seen on its stdout */
		w += k > 0 ? (size_t)k : 0;
	}
}

static struct node *node_named(struct span *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->nodes[i].name, name) == 0)
			return &s->nodes[i];
	return NULL;
}

/* Room in *v (of *cap items of size) for one more after n: false without memory. */
static bool room(void **v, int *cap, int n, size_t size)
{
	void *w;

	if (n < *cap)
		return true;
	if (!(w = realloc(*v, (size_t)(*cap ? 2 * *cap : 64) * size)))
		return false;
	*v = w;
	*cap = *cap ? 2 * *cap : 64;
	return true;
}

/* text added at the end of *v (a string, or NULL for none yet). */
static void append(char **v, const char *text)
{
	size_t had = *v ? strlen(*v) : 0;
	char *w = realloc(*v, had + strlen(text) + 1);

	if (w) {
		strcpy(w + had, text);
		*v = w;
	}
}

static void add_proc(struct span *s, int node, const char *args)
{
	struct proc *p;
	int ok, used = 0;

	if (!room((void **)&s->procs, &s->cap_procs, s->n_procs, sizeof(*s->procs)))
		return;
	p = &s->procs[s->n_procs];
	memset(p, 0, sizeof(*p));
	if (sscanf(args, "%d %31s %d %n", &ok, p->outcome, &p->pid, &used) < 3)
		return;
	p->node = node;
	p->order = s->n_procs;
	p->ok = ok;
	snprintf(p->line, sizeof(p->line), "%s", args + used);
	s->n_procs++;
}

static void add_line(struct span *s, int node, const char *args)
{
	char phase[16];
	int idx, used = 0;

	if (sscanf(args, "%15s %d %n", phase, &idx, &used) < 2 || idx < 0 || idx >= PER_NODE ||
	    !room((void **)&s->lines, &s->cap_lines, s->n_lines, sizeof(*s->lines)))
		return;
	s->n_lines = cn_cut_parse(args + used, node * PER_NODE + idx, s->lines, s->n_lines,
				  s->n_lines + 1);
}

/* One line a node wrote: what it says recorded in its entry. */
static void heard(struct span *s, char *line)
{
	char name[256], kind[16];
	int used = 0;
	struct node *n;
	const char *args;

	if (strncmp(line, SPAN_MARK, strlen(SPAN_MARK)) != 0 ||
	    sscanf(line + strlen(SPAN_MARK), "%255s %15s %n", name, kind, &used) < 2 ||
	    !(n = node_named(s, name)))
		return;
	args = line + strlen(SPAN_MARK) + used;
	n->heard = cli_now_s();
	if (strcmp(kind, "hello") == 0) {
		n->hello = true;
		n->procs = atoi(args);
		snprintf(n->note, sizeof(n->note), "%s",
			 strchr(args, ' ') ? strchr(args, ' ') + 1 : "");
	} else if (strcmp(kind, "checked") == 0) {
		n->got = true;
		snprintf(n->state, sizeof(n->state), "%.15s", args);
		snprintf(n->note, sizeof(n->note), "%s",
			 strchr(args, ' ') ? strchr(args, ' ') + 1 : "");
	} else if (strcmp(kind, "cut") == 0) {
		add_line(s, (int)(n - s->nodes), args);
	} else if (strcmp(kind, "said") == 0) {
		n->got = sscanf(args, "%15s %15s", n->said, n->state) == 2;
		snprintf(n->note, sizeof(n->note), "%s",
			 strchr(args, ' ') && strchr(strchr(args, ' ') + 1, ' ')
				 ? strchr(strchr(args, ' ') + 1, ' ') + 1
				 : "");
	} else if (strcmp(kind, "proc") == 0) {
		add_proc(s, (int)(n - s->nodes), args);
	} else if (strcmp(kind, "json") == 0 || strcmp(kind, "json+") == 0) {
		/* The node's last process's, in pieces: the nodes' lines come interleaved. */
		for (int i = s->n_procs - 1; i >= 0; i--)
			if (s->procs[i].node == (int)(n - s->nodes)) {
				append(&s->procs[i].json, args);
				break;
			}
	} else if (strcmp(kind, "result") == 0) {
		n->got = true;
		snprintf(n->result, sizeof(n->result), "%.15s", args);
		n->result[strcspn(n->result, " ")] = '\0';
		snprintf(n->note, sizeof(n->note), "%s",
			 strchr(args, ' ') ? strchr(args, ' ') + 1 : "");
	} else if (strcmp(kind, "rolledback") == 0) {
		n->got = sscanf(args, "%d %d %n", &n->rolled, &n->bad, &used) >= 2;
		snprintf(n->note, sizeof(n->note), "%s", args + used);
	} else if (strcmp(kind, "end") == 0) {
		n->ended = true;
	}
}

/* A task's line of `srun --label`, "N: TEXT": N, and TEXT at *text. -1 when not one. */
static int labelled(char *line, char **text)
{
	char *end;
	long t = strtol(line, &end, 10);

	if (end == line || end[0] != ':' || t < 0 || t >= MAX_NODES)
		return -1;
	*text = end + 1 + (end[1] == ' ');
	return (int)t;
}

/* srun's errors: the last line kept, for a node that never started. */
static void read_errs(struct span *s)
{
	char buf[4096];
	ssize_t k = read(s->errs, buf, sizeof(buf) - 1);

	if (k <= 0) {
		close(s->errs);
		s->errs = -1;
		return;
	}
	buf[k] = '\0';
	for (char *save, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		snprintf(s->err_line, sizeof(s->err_line), "%s", l);
}

/* What srun brought back in the next 100 ms; nodes silent too long marked gone. */
static void pump(struct span *s)
{
	struct pollfd pf[2] = { { s->eof ? -1 : s->from, POLLIN, 0 }, { s->errs, POLLIN, 0 } };
	char *nl;

	if (poll(pf, 2, 100) > 0) {
		if (pf[1].revents)
			read_errs(s);
		if (pf[0].revents) {
			ssize_t k = read(s->from, s->in + s->used, sizeof(s->in) - s->used - 1);

			if (k > 0)
				s->used += (size_t)k;
			else if (k == 0 || errno != EINTR)
				s->eof = true;
		}
	}
	while ((nl = memchr(s->in, '\n', s->used))) {
		size_t n = (size_t)(nl - s->in);
		char *text;

		*nl = '\0';
		if (labelled(s->in, &text) >= 0)
			heard(s, text);
		memmove(s->in, nl + 1, s->used - n - 1);
		s->used -= n + 1;
	}
	if (s->used == sizeof(s->in) - 1)
		s->used = 0; /* a line longer than any of ours: not ours */
	for (int i = 0; i < s->n; i++) {
		struct node *n = &s->nodes[i];

		if (n->hello && !n->ended && !n->dead &&
		    (s->eof || cli_now_s() - n->heard > SILENCE_S)) {
			n->dead = true;
			snprintf(n->note, sizeof(n->note), "no answer for %.0f s%s%s", SILENCE_S,
				 s->err_line[0] ? " (" : "", s->err_line);
			if (s->err_line[0])
				strcat(n->note, ")");
		}
	}
}

bool span_active(const struct node *n)
{
	return n->hello && n->procs > 0 && !n->dead;
}

/* Until every active node has given its report on what was last told (its got), or the
 * deadline. */
void span_collect(struct span *s)
{
	progress_start(s->deadline - cli_now_s(), "waiting for the job's nodes");
	for (;;) {
		int active = 0, waiting = 0;

		for (int i = 0; i < s->n; i++) {
			active += span_active(&s->nodes[i]);
			waiting += span_active(&s->nodes[i]) && !s->nodes[i].got;
		}
		if (!waiting || cli_now_s() >= s->deadline)
			break;
		progress_done(active - waiting, "answered", "");
		pump(s);
	}
	progress_end();
}

/* The first node that died since the action began, into why; false when none did. */
bool span_lost(const struct span *s, char *why, size_t len)
{
	for (int i = 0; i < s->n; i++)
		if (s->nodes[i].dead && s->nodes[i].procs > 0) {
			snprintf(why, len, "node %s: %s", s->nodes[i].name, s->nodes[i].note);
			return true;
		}
	return false;
}

/* One phase of the NCCL ranks' cut: every node's lines and word, then the answer to all. True
 * when the ranks go on (the counts to reach, or the go); false when there was no cut to make or
 * it was given up. */
bool span_phase(struct span *s, const char *name)
{
	char why[1200] = "", text[8192], list[8192];
	bool whole;

	s->n_lines = 0;
	span_collect(s);
	for (int i = 0; i < s->n && !why[0]; i++) {
		struct node *n = &s->nodes[i];

		if (span_active(n) && !n->got)
			snprintf(why, sizeof(why), "node %s: no word at the cut in time", n->name);
		else if (span_active(n) && strcmp(n->state, "bad") == 0)
			snprintf(why, sizeof(why), "node %s: %s", n->name, n->note);
	}
	if (!why[0])
		span_lost(s, why, sizeof(why));
	if (why[0]) {
		span_tell(s, "abort %s", why);
		return false;
	}
	if (s->n_lines == 0) {
		span_tell(s, "nocut");
		return false;
	}
	whole = cn_cut_whole(s->lines, s->n_lines, text, sizeof(text));
	for (int i = 0; i < s->n && !whole; i++) /* a process that failed is named first */
		if (span_active(&s->nodes[i]) && strcmp(s->nodes[i].state, "hint") == 0) {
			snprintf(text, sizeof(text), "node %s: %s", s->nodes[i].name,
				 s->nodes[i].note);
			break;
		}
	if (!whole) {
		span_tell(s, "abort %s", text);
		return false;
	}
	if (strcmp(name, "count") != 0) {
		span_tell(s, "commit");
		return true;
	}
	for (int a = 0; a < s->n_lines; a++) {
		int who = s->lines[a].who;
		bool first = true;
		size_t o = 0;

		for (int b = 0; b < a && first; b++)
			first = s->lines[b].who != who;
		if (!first)
			continue;
		cn_cut_targets(s->lines, s->n_lines, who, text, sizeof(text));
		for (const char *p = text; *p && o + 1 < sizeof(list); p++)
			list[o++] = *p == ' ' ? ':' : *p == '\n' ? ',' : *p;
		list[o > 0 ? o - 1 : 0] = '\0';
		span_tell(s, "go %s %d %s", s->nodes[who / PER_NODE].name, who % PER_NODE, list);
	}
	span_tell(s, "went");
	return true;
}

extern char **environ;

/* This environment without what describes the job or step this command may run in: srun takes
 * it for the allocation to start in (a step's one node, say), whatever --jobid says. Slurm's own
 * configuration stays. NULL without memory. */
static char **clean_env(void)
{
	size_t n = 0, k = 0;
	char **v;

	while (environ[n])
		n++;
	if (!(v = calloc(n + 1, sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "SLURM_", 6) != 0 ||
		    strncmp(environ[i], "SLURM_CONF=", 11) == 0 ||
		    strncmp(environ[i], "SLURM_CLUSTERS=", 15) == 0)
			v[k++] = environ[i];
	return v;
}

/* srun started with one task per node of the job, each running this program with args. */
int span_start(struct span *s, char *const args[], char *why, size_t len)
{
	char exe[PATH_MAX] = "", job[64], nodes[32], tasks[32];
	char *fixed[] = { "srun",
			  job,
			  "--overlap",
			  nodes,
			  tasks,
			  "--ntasks-per-node=1",
			  "--kill-on-bad-exit=0",
			  "--input=all",
			  "--quiet" };
	char *argv[96], **env;
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int a = 0;

	if (k <= 0) {
		snprintf(why, len, "cannot find this program: %s", strerror(errno));
		return -1;
	}
	exe[k] = '\0';
	snprintf(job, sizeof(job), "--jobid=%s", s->job);
	snprintf(nodes, sizeof(nodes), "--nodes=%d", s->n);
	snprintf(tasks, sizeof(tasks), "--ntasks=%d", s->n);
	/* One task a node; --overlap: the job's own steps hold its CPUs; --input=all: what is
	 * written here reaches every task; a task that fails does not end the others. */
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		argv[a++] = fixed[i];
	/* Each line whole, under its task's number (SPAN_LINE_MAX). */
	argv[a++] = "--label";
	argv[a++] = exe;
	for (int i = 0; args[i] && a < 95; i++)
		argv[a++] = args[i];
	argv[a] = NULL;
	if (!(env = clean_env())) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	a = slurm_spawn(argv, env, &s->to, &s->from, &s->errs, &s->srun, why, len);
	free(env);
	return a;
}

/* srun's end: its stdin closed (every task reads its end), reaped within a few seconds or
 * killed. */
void span_finish(struct span *s)
{
	double until = cli_now_s() + 5;
	int status;

	for (bool all = false; !all && !s->eof && cli_now_s() < until;) {
		all = true;
		for (int i = 0; i < s->n; i++)
			all &= !s->nodes[i].hello || s->nodes[i].ended || s->nodes[i].dead;
		if (!all)
			pump(s);
	}
	close(s->to);
	until = cli_now_s() + 10;
	while (waitpid(s->srun, &status, WNOHANG) == 0) {
		if (cli_now_s() >= until) {
			kill(s->srun, SIGKILL);
			waitpid(s->srun, &status, 0);
			break;
		}
		if (!s->eof)
			pump(s);
		else
			usleep(20000);
	}
	close(s->from);
	if (s->errs >= 0)
		close(s->errs);
}

/* Every node's hello within HELLO_S; one that did not start the command is gone. The number of
 * processes of the job on all of them. */
int span_hellos(struct span *s)
{
	double until = cli_now_s() + HELLO_S;
	int total = 0;

	for (bool all = false; !all && !s->eof && cli_now_s() < until;) {
		all = true;
		for (int i = 0; i < s->n; i++)
			all &= s->nodes[i].hello;
		if (!all)
			pump(s);
	}
	for (int i = 0; i < s->n; i++) {
		struct node *n = &s->nodes[i];

		if (!n->hello) {
			n->dead = true;
			n->procs = 1; /* unknown: the job is not whole without it */
			snprintf(n->note, sizeof(n->note), "did not start the command%s%s%s",
				 s->err_line[0] ? " (" : "", s->err_line,
				 s->err_line[0] ? ")" : "");
		}
		total += n->procs;
	}
	return total;
}

/* ---- the action ---- */

int span_setup(struct span *s, const char *job, const char *nodes, int n)
{
	memset(s, 0, sizeof(*s));
	s->job = job;
	s->to = s->from = s->errs = -1;
	if (n <= 0 || n > MAX_NODES || !(s->nodes = calloc((size_t)n, sizeof(*s->nodes))))
		return -1;
	s->n = n;
	for (int i = 0; i < n; i++)
		if (cn_hostlist_nth(nodes, i, s->nodes[i].name, sizeof(s->nodes[i].name)) < 0)
			return -1;
	/* A node gone closes its end of srun's stdin for good: no SIGPIPE for it here. */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void span_teardown(struct span *s)
{
	for (int i = 0; i < s->n_procs; i++)
		free(s->procs[i].json);
	free(s->procs);
	free(s->lines);
	free(s->nodes);
}

void span_json_str(const char *text)
{
	static char buf[8192 * 6 + 3];

	printf("%s", cn_json_str(buf, sizeof(buf), text) > 0 ? buf : "\"\"");
}

/* ---- the commands that only look ---- */

/* A node's lines of text, each marked with its node: every one (all), or those that are not a
 * table's heads or rows (those that start with the node's name). */
static void print_lines(const char *node, const char *text, bool all)
{
	size_t k = strlen(node);

	for (const char *l = text, *e; *l; l = e + (*e != '\0')) {
		bool header = strncmp(l, "NODE ", 5) == 0,
		     row = strncmp(l, node, k) == 0 && l[k] == ' ';

		e = l + strcspn(l, "\n");
		if (all || (!header && !row))
			printf("%s: %.*s\n", node, (int)(e - l), l);
	}
}

/* Every node's table laid out again as one, its columns as wide as any node's words (view.c),
 * then each table's notes, each saying its node. */
static void print_table(const struct span *s, char **out)
{
	const char **names = calloc((size_t)(s->n ? s->n : 1), sizeof(*names));

	for (int i = 0; names && i < s->n; i++)
		names[i] = s->nodes[i].name;
	if (names)
		view_relay(out, names, s->n);
	free(names);
	for (int i = 0; i < s->n; i++)
		print_lines(s->nodes[i].name, out[i] ? out[i] : "", false);
}

/* What each node printed, in node order: one table (status), lines marked with their node (a dry
 * run), or one JSON array of every node's (status --json) or an object per node. */
static void print_looks(const struct span *s, char **out, bool json, bool marked)
{
	bool first = true;

	if (!json && !marked) {
		print_table(s, out);
		return;
	}
	if (json)
		printf(marked ? "{\"action\":\"dry-run\",\"nodes\":[" : "[");
	for (int i = 0; i < s->n; i++) {
		char *t = out[i] ? out[i] : "", *a, *b;

		if (json && !marked && (a = strchr(t, '[')) && (b = strrchr(t, ']')) && b > a) {
			*b = '\0';
			if (strspn(a + 1, " \n\t") < strlen(a + 1))
				printf("%s%s", first ? "" : ",", a + 1);
			first &= strspn(a + 1, " \n\t") == strlen(a + 1);
		} else if (json) {
			printf("%s\n  {\"node\":", i ? "," : "");
			span_json_str(s->nodes[i].name);
			printf(",\"result\":%s}", t[strspn(t, " \n")] ? t : "null");
		} else {
			print_lines(s->nodes[i].name, t, true);
		}
	}
	if (json)
		printf(marked ? "]}\n" : "]\n");
}

int span_look(const char *job, const char *nodes, int n, char *const args[], bool json, bool marked)
{
	struct span s;
	char why[600], **out, *text, err[4096];
	int status = 1;

	if (span_setup(&s, job, nodes, n) < 0 || !(out = calloc((size_t)n, sizeof(*out))) ||
	    span_start(&s, args, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: cannot reach the nodes of Slurm job %s\n", cli_prog, job);
		span_teardown(&s);
		return 1;
	}
	close(s.to);
	for (FILE *f = fdopen(s.from, "re"); f;) {
		char line[65536];
		int t;

		if (!fgets(line, sizeof(line), f)) {
			fclose(f);
			break;
		}
		line[strcspn(line, "\n")] = '\0';
		if ((t = labelled(line, &text)) < 0 || t >= n)
			continue;
		size_t had = out[t] ? strlen(out[t]) : 0;
		char *v = realloc(out[t], had + strlen(text) + 2);

		if (v) {
			out[t] = v;
			sprintf(v + had, "%s\n", text);
		}
	}
	for (ssize_t k; (k = read(s.errs, err, sizeof(err) - 1)) > 0;) {
		err[k] = '\0';
		for (char *save, *l = strtok_r(err, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			int t = labelled(l, &text);

			fprintf(stderr, "%s%s%s\n", t >= 0 && t < n ? s.nodes[t].name : "",
				t >= 0 && t < n ? ": " : "", t >= 0 && t < n ? text : l);
		}
	}
	close(s.errs);
	waitpid(s.srun, &status, 0);
	print_looks(&s, out, json, marked);
	for (int i = 0; i < n; i++)
		free(out[i]);
	free(out);
	span_teardown(&s);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int span_nodes(const char *job, char *nodes, size_t len, char *note, size_t nlen)
{
	char state[64], here[256], err[600];
	int n = slurm_job_nodes(job, state, sizeof(state), nodes, len, err, sizeof(err));

	note[0] = '\0';
	if (n < 0) {
		snprintf(note, nlen, "%s; acting on this node's processes of the job only", err);
		return 0;
	}
	slurm_node_name(here, sizeof(here));
	if (n == 1 && cn_hostlist_has(nodes, here))
		return 0;
	if (strcmp(state, "RUNNING") != 0) {
		snprintf(note, nlen,
			 "Slurm job %s is %s%s%s: Slurm starts no step in it to reach its nodes; "
			 "run "
			 "this on each of them with --this-node%s",
			 job, state, n ? " on " : "", n ? nodes : "",
			 strcmp(state, "SUSPENDED") == 0 ? ", or after scontrol resume" : "");
		return -1;
	}
	return n;
}
