/* span: a whole Slurm job over its nodes, led from here. When a job runs on several nodes, or on
 * one that is not this host (the controller, a login node), `cudanap suspend|resume|prepare|nap
 * --slurm J` starts itself on every node of the job through Slurm, as the tasks of one step (srun
 * --jobid=J --overlap, one task per node, never ssh), each acting on its node's processes
 * (relay.c). They act as one job: the same all-or-nothing rule and rollback as on one node, and
 * the cut of the job's NCCL ranks worked out here from every node's counts (base/cut.c).
 *
 * srun gives every task what is written to its stdin and brings back what each writes; every
 * line of ours starts with SPAN_MARK, and the nodes' name their node:
 *   node: "hello N [WHY]" (its processes of the job; none: why), then "beat" every second
 *   node: "checked ok" or "checked refused LINE"        here: "send" or "refuse WHY"
 *   node: "cut PHASE IDX KEY RANK NRANKS ISSUED"..., "said PHASE ok|hint|bad [WHY]"
 *         PHASE count (a suspend's counts), there (at the cut), restored (a resume's)
 *   here: "go NODE IDX KEY:COUNT,..."... "went", or "commit", "nocut", "abort WHY"
 *   node: "proc OK OUTCOME PID LINE"..., ["json OBJECT"...], "result ok|failed|transient [LINE]"
 *   here: "ok" or "rollback"; then node: "rolledback M BAD LINE", here: "retry" or "stop"
 *   node: "end"
 * A node that says nothing, not even its beat, for SILENCE_S is taken for gone: what it holds is
 * left as it was, the others are rolled back, and its line says so. The commands that only look
 * (status, suspend --dry-run) run there with --this-node, and their lines come back with the
 * node's name (passthrough). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cn_cut.h"
#include "cn_hostlist.h"
#include "cn_json.h"

#define SILENCE_S 10.0
#define HELLO_S	  60.0 /* for srun to start the step on every node */
#define MAX_NODES 4096
#define PER_NODE  65536 /* a cut line's who: node * PER_NODE + the process's index there */

struct node {
	char name[256];
	int procs;
	bool hello, dead, ended;
	double heard;
	char note[1024]; /* hello's why, the refusal, the cut's note, the result's line */
	char said[16], state[16], result[16];
	int rolled, bad; /* rolledback's */
	bool got;	 /* the report asked for is in */
};

struct proc {
	int node, pid, order;
	bool ok;
	char outcome[32], line[600];
	char *json;
};

struct span {
	const char *job;
	struct node *nodes;
	int n;
	int to, from, errs;
	pid_t srun;
	char in[1 << 16], err_line[512];
	size_t used;
	bool eof;
	struct proc *procs;
	int n_procs, cap_procs;
	struct cn_cut_line *lines;
	int n_lines, cap_lines;
	double deadline;
};

static void tell(struct span *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(struct span *s, const char *fmt, ...)
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
	} else if (strcmp(kind, "json") == 0) {
		/* The node's last process: the nodes' lines come interleaved. */
		for (int i = s->n_procs - 1; i >= 0; i--)
			if (s->procs[i].node == (int)(n - s->nodes)) {
				free(s->procs[i].json);
				s->procs[i].json = strdup(args);
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

		*nl = '\0';
		heard(s, s->in);
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

static bool active(const struct node *n)
{
	return n->hello && n->procs > 0 && !n->dead;
}

/* Until every active node has given its report on what was last told (its got), or the
 * deadline. */
static void collect(struct span *s)
{
	for (;;) {
		bool all = true;

		for (int i = 0; i < s->n; i++)
			all &= !active(&s->nodes[i]) || s->nodes[i].got;
		if (all || cli_now_s() >= s->deadline)
			return;
		pump(s);
	}
}

/* The first node that died since the action began, into why; false when none did. */
static bool lost(const struct span *s, char *why, size_t len)
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
static bool phase(struct span *s, const char *name)
{
	char why[1200] = "", text[8192], list[8192];
	bool whole;

	s->n_lines = 0;
	collect(s);
	for (int i = 0; i < s->n && !why[0]; i++) {
		struct node *n = &s->nodes[i];

		if (active(n) && !n->got)
			snprintf(why, sizeof(why), "node %s: no word at the cut in time", n->name);
		else if (active(n) && strcmp(n->state, "bad") == 0)
			snprintf(why, sizeof(why), "node %s: %s", n->name, n->note);
	}
	if (!why[0])
		lost(s, why, sizeof(why));
	if (why[0]) {
		tell(s, "abort %s", why);
		return false;
	}
	if (s->n_lines == 0) {
		tell(s, "nocut");
		return false;
	}
	whole = cn_cut_whole(s->lines, s->n_lines, text, sizeof(text));
	for (int i = 0; i < s->n && !whole; i++) /* a process that failed is named first */
		if (active(&s->nodes[i]) && strcmp(s->nodes[i].state, "hint") == 0) {
			snprintf(text, sizeof(text), "node %s: %s", s->nodes[i].name,
				 s->nodes[i].note);
			break;
		}
	if (!whole) {
		tell(s, "abort %s", text);
		return false;
	}
	if (strcmp(name, "count") != 0) {
		tell(s, "commit");
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
		tell(s, "go %s %d %s", s->nodes[who / PER_NODE].name, who % PER_NODE, list);
	}
	tell(s, "went");
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
static int start(struct span *s, bool label, char *const args[], char *why, size_t len)
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
	if (label)
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
static void finish(struct span *s)
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
static int hellos(struct span *s)
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

/* The answer to every node's check: one that cannot be signalled refuses the whole job. Its
 * line into refused ("" when sent). */
static void agree_send(struct span *s, char *refused, size_t len)
{
	refused[0] = '\0';
	collect(s);
	for (int i = 0; i < s->n && !refused[0]; i++) {
		struct node *n = &s->nodes[i];

		if (n->procs > 0 && (n->dead || !n->got))
			snprintf(refused, len, "node %s: %s", n->name,
				 n->dead ? n->note : "no answer in time");
		else if (active(n) && strcmp(n->state, "refused") == 0)
			snprintf(refused, len, "node %s: %s", n->name, n->note);
	}
	if (refused[0])
		tell(s, "refuse %s", refused);
	else
		tell(s, "send");
}

/* The outcome of one attempt: whether it failed (a node gone counts), all of it transient. */
static bool failed(struct span *s, bool *transient, char *first, size_t len)
{
	bool any = false;

	*transient = true;
	first[0] = '\0';
	collect(s);
	for (int i = 0; i < s->n; i++) {
		struct node *n = &s->nodes[i];

		if (n->procs <= 0 || (!n->dead && n->got && strcmp(n->result, "ok") == 0))
			continue;
		any = true;
		*transient &= !n->dead && n->got && strcmp(n->result, "transient") == 0;
		if (!first[0])
			snprintf(first, len, "node %s: %s", n->name,
				 n->dead  ? n->note
				 : n->got ? n->note
					  : "no outcome in time");
	}
	return any;
}

/* The rollback on every node: the job's NCCL ranks resumed together, then each node's line. How
 * many processes are still not running. */
static int roll_back(struct span *s, char *line, size_t len)
{
	int bad = 0;
	size_t o;

	phase(s, "restored");
	collect(s);
	o = (size_t)snprintf(line, len, "rollback:");
	for (int i = 0; i < s->n; i++) {
		struct node *n = &s->nodes[i];

		if (n->procs <= 0)
			continue;
		if (n->dead || !n->got) {
			bad += n->procs;
			o += (size_t)snprintf(line + o, o < len ? len - o : 0, " node %s: %s;",
					      n->name, n->dead ? n->note : "no answer in time");
			continue;
		}
		bad += n->bad;
		if (strcmp(n->note, "-") != 0)
			o += (size_t)snprintf(
				line + o, o < len ? len - o : 0, " node %s: %s;", n->name,
				strncmp(n->note, "rollback: ", 10) == 0 ? n->note + 10 : n->note);
	}
	if (o < len && line[o - 1] == ';')
		line[o - 1] = '\0';
	return bad;
}

/* ---- what is printed ---- */

static int by_node(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return x->node != y->node ? x->node - y->node : x->order - y->order;
}

struct tally {
	int counted, ok, none, failed;
};

static struct tally count(const struct span *s, int node)
{
	struct tally t = { 0 };

	for (int i = 0; i < s->n_procs; i++) {
		const struct proc *p = &s->procs[i];

		if ((node >= 0 && p->node != node) || strcmp(p->outcome, "gone") == 0)
			continue;
		t.counted++;
		t.none += strcmp(p->outcome, "no-cuda") == 0;
		t.ok += p->ok && strcmp(p->outcome, "no-cuda") != 0;
	}
	t.failed = t.counted - t.ok - t.none;
	return t;
}

/* A node's line: what its processes came to, or why there is nothing to say of them. */
static void node_line(const struct span *s, int i, const struct span_req *q, bool rolled, char *out,
		      size_t len)
{
	const struct node *n = &s->nodes[i];
	struct tally t = count(s, i);

	if (n->dead)
		snprintf(out, len,
			 "node %s: %s: its processes are as they were then; see "
			 "'cudanap status --slurm %s'",
			 n->name, n->note, s->job);
	else if (n->procs <= 0)
		snprintf(out, len, "node %s: %s", n->name,
			 n->note[0] ? n->note : "no process of the job runs under cudanap");
	else /* rolled back: what is still suspended is what could not be resumed */
		snprintf(out, len, "node %s: %d process%s, %d %s, %d without CUDA, %d failed%s",
			 n->name, t.counted, t.counted == 1 ? "" : "es", rolled ? n->bad : t.ok,
			 !q->wait ? "signalled" : cli_verb_done[q->verb], t.none, t.failed,
			 rolled ? " (rolled back)" : "");
}

static void print_text(const struct span *s, const struct span_req *q, const char *refused,
		       const char *rollback, double seconds, int still)
{
	struct tally t = count(s, -1);
	char line[2048];

	for (int i = 0; i < s->n_procs; i++)
		printf("%s: %s\n", s->nodes[s->procs[i].node].name, s->procs[i].line);
	for (int i = 0; i < s->n; i++) {
		node_line(s, i, q, rollback[0], line, sizeof(line));
		printf("%s\n", line);
	}
	if (refused[0])
		printf("refused: %s; nothing was signalled on any node\n", refused);
	if (rollback[0])
		printf("%s\n", rollback);
	printf("total: %d node%s, %d process%s, %d %s, %d without CUDA, %d failed%s, %.2f s\n",
	       s->n, s->n == 1 ? "" : "s", t.counted, t.counted == 1 ? "" : "es",
	       rollback[0] ? still : t.ok, !q->wait ? "signalled" : cli_verb_done[q->verb], t.none,
	       t.failed, rollback[0] ? " (rolled back)" : "", seconds);
}

static void json_str(const char *text)
{
	static char buf[8192 * 6 + 3];

	printf("%s", cn_json_str(buf, sizeof(buf), text) > 0 ? buf : "\"\"");
}

static void print_json(const struct span *s, const struct span_req *q, const char *refused,
		       const char *rollback, const char *attempts, double seconds, int still)
{
	struct tally t = count(s, -1);
	char line[2048];

	printf("{\"action\":\"%s\",\"job\":", cli_verb_name[q->verb]);
	json_str(s->job);
	printf(",\"nodes\":[");
	for (int i = 0; i < s->n; i++) {
		struct tally n = count(s, i);

		node_line(s, i, q, rollback[0], line, sizeof(line));
		printf("%s\n  {\"node\":", i ? "," : "");
		json_str(s->nodes[i].name);
		printf(",\"answered\":%s,\"processes\":%d,\"ok\":%d,\"line\":",
		       s->nodes[i].dead ? "false" : "true", n.counted, n.ok);
		json_str(line);
		printf("}");
	}
	printf("],\n \"processes\":[");
	for (int i = 0; i < s->n_procs; i++) {
		const struct proc *p = &s->procs[i];

		printf("%s\n  {\"node\":", i ? "," : "");
		json_str(s->nodes[p->node].name);
		if (p->json && p->json[0] == '{')
			printf(",%s", p->json + 1);
		else
			printf(",\"pid\":%d,\"ok\":%s,\"outcome\":\"%s\",\"status\":null}", p->pid,
			       p->ok ? "true" : "false", p->outcome);
	}
	printf("],\n \"attempts\":[%s],\n \"refused\":", attempts);
	if (refused[0])
		json_str(refused);
	else
		printf("null");
	printf(",\n \"rollback\":");
	if (rollback[0])
		json_str(rollback);
	else
		printf("null");
	printf(",\n \"total\":{\"nodes\":%d,\"processes\":%d,\"ok\":%d,\"without_cuda\":%d,"
	       "\"failed\":%d,\"rolled_back\":%s,\"seconds\":%.3f}}\n",
	       s->n, t.counted, rollback[0] ? still : t.ok, t.none, t.failed,
	       rollback[0] ? "true" : "false", seconds);
}

/* ---- the action ---- */

static int setup(struct span *s, const char *job, const char *nodes, int n)
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

static void teardown(struct span *s)
{
	for (int i = 0; i < s->n_procs; i++)
		free(s->procs[i].json);
	free(s->procs);
	free(s->lines);
	free(s->nodes);
}

/* One attempt, as group.c's act() on each node, and its verdict: true when it is rolled back. */
static bool attempt(struct span *s, const struct span_req *q, char *refused, size_t rlen,
		    char *first, size_t flen, bool *transient)
{
	for (int i = 0; i < s->n_procs; i++)
		free(s->procs[i].json);
	s->n_procs = 0;
	refused[0] = '\0';
	if (q->whole)
		agree_send(s, refused, rlen);
	if (!refused[0] && q->cut && phase(s, q->verb == VERB_SUSPEND ? "count" : "restored") &&
	    q->verb == VERB_SUSPEND)
		phase(s, "there");
	if (!failed(s, transient, first, flen) || !q->atomic || refused[0]) {
		tell(s, "ok");
		return false;
	}
	tell(s, "rollback");
	return true;
}

int span_act(const struct span_req *q, const char *nodes, int n)
{
	static char refused[1200], first[1200], rollback[4096], attempts[MAX_ATTEMPTS * 1400];
	double t0 = cli_now_s(), pause = 0.5;
	size_t ao = 0;
	int still = 0, rc;
	struct span s;
	bool transient;

	rollback[0] = attempts[0] = '\0';
	if (setup(&s, q->job, nodes, n) < 0 ||
	    start(&s, false, q->args, first, sizeof(first)) < 0) {
		fprintf(stderr, "%s: cannot reach the nodes of Slurm job %s: %s\n", cli_prog,
			q->job, s.n ? first : "cannot read its node list");
		teardown(&s);
		return 1;
	}
	s.deadline = t0 + q->timeout;
	if (hellos(&s) == 0) {
		fprintf(stderr,
			"%s: no process of Slurm job %s runs under cudanap on its nodes (%s)\n",
			cli_prog, q->job, nodes);
		finish(&s);
		teardown(&s);
		return 1;
	}
	for (unsigned a = 1;; a++) {
		char line[1400];

		if (!attempt(&s, q, refused, sizeof(refused), first, sizeof(first), &transient))
			break;
		still = roll_back(&s, rollback, sizeof(rollback));
		if (still || !transient || a > q->retries || cli_now_s() + pause >= s.deadline) {
			tell(&s, "stop");
			break;
		}
		snprintf(line, sizeof(line), "attempt %u: %s; %s; trying again in %.1f s", a, first,
			 rollback, pause);
		if (q->on_attempt)
			q->on_attempt(line);
		if (ao < sizeof(attempts) - 1) {
			char js[sizeof(line) * 6 + 3];

			if (cn_json_str(js, sizeof(js), line) > 0)
				ao += (size_t)snprintf(attempts + ao, sizeof(attempts) - ao, "%s%s",
						       ao ? "," : "", js);
		}
		usleep((useconds_t)(pause * 1e6));
		pause *= 2;
		rollback[0] = '\0';
		tell(&s, "retry");
	}
	finish(&s);
	qsort(s.procs, (size_t)s.n_procs, sizeof(*s.procs), by_node);
	if (q->json)
		print_json(&s, q, refused, rollback, attempts, cli_now_s() - t0, still);
	else
		print_text(&s, q, refused, rollback, cli_now_s() - t0, still);
	rc = refused[0] || rollback[0] || count(&s, -1).failed || lost(&s, first, sizeof(first));
	teardown(&s);
	return rc;
}

/* ---- the commands that only look ---- */

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

/* A node's lines of text: how 2, every line marked with its node; 1, a table's header (the
 * first only) and rows (those that start with the node's name); 0, the rest, marked. */
static void print_lines(const char *node, const char *text, int how, bool *first)
{
	size_t k = strlen(node);

	for (const char *l = text, *e; *l; l = e + (*e != '\0')) {
		bool header = strncmp(l, "NODE ", 5) == 0,
		     row = strncmp(l, node, k) == 0 && l[k] == ' ';

		e = l + strcspn(l, "\n");
		if (how == 2 || (how == 0 && !header && !row))
			printf("%s: %.*s\n", node, (int)(e - l), l);
		else if (how == 1 && (row || (header && *first)))
			printf("%.*s\n", (int)(e - l), l);
		*first &= !(how == 1 && header);
	}
}

/* What each node printed, in node order: a table's header once (status), lines marked with their
 * node (a dry run), or one JSON array of every node's (status --json) or an object per node. */
static void print_looks(const struct span *s, char **out, bool json, bool marked)
{
	bool first = true;

	if (json && !marked)
		printf("[");
	else if (json)
		printf("{\"action\":\"dry-run\",\"nodes\":[");
	for (int i = 0; i < s->n; i++) {
		char *t = out[i] ? out[i] : "", *a, *b;

		if (json && !marked && (a = strchr(t, '[')) && (b = strrchr(t, ']')) && b > a) {
			*b = '\0';
			if (strspn(a + 1, " \n\t") < strlen(a + 1))
				printf("%s%s", first ? "" : ",", a + 1);
			first &= strspn(a + 1, " \n\t") == strlen(a + 1);
		} else if (json) {
			printf("%s\n  {\"node\":", i ? "," : "");
			json_str(s->nodes[i].name);
			printf(",\"result\":%s}", t[strspn(t, " \n")] ? t : "null");
		} else {
			print_lines(s->nodes[i].name, t, marked ? 2 : 1, &first);
		}
	}
	/* A table's notes after all of its rows, each saying its node. */
	for (int i = 0; i < s->n && !json && !marked; i++)
		print_lines(s->nodes[i].name, out[i] ? out[i] : "", 0, &first);
	if (json)
		printf(marked ? "]}\n" : "]\n");
}

int span_look(const char *job, const char *nodes, int n, char *const args[], bool json, bool marked)
{
	struct span s;
	char why[600], **out, *text, err[4096];
	int status = 1;

	if (setup(&s, job, nodes, n) < 0 || !(out = calloc((size_t)n, sizeof(*out))) ||
	    start(&s, true, args, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: cannot reach the nodes of Slurm job %s\n", cli_prog, job);
		teardown(&s);
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
	teardown(&s);
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
			 "Slurm job %s is %s%s%s: Slurm starts no step in it to reach its nodes%s",
			 job, state, n ? " on " : "", n ? nodes : "",
			 strcmp(state, "SUSPENDED") == 0 ? " (scontrol resume it first)" : "");
		return -1;
	}
	return n;
}
