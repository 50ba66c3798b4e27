/* spanjob: an action on a Slurm job over all its nodes, all or nothing as on one node, decided
 * here from every node's word (docs/FILES.md). */
#define _GNU_SOURCE
#include "spanstep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cn_json.h"

/* The answer to every node's check: one that cannot be signalled refuses the whole job. Its
 * line into refused ("" when sent). */
static void agree_send(struct span *s, char *refused, size_t len)
{
	refused[0] = '\0';
	span_collect(s);
	for (int i = 0; i < s->n && !refused[0]; i++) {
		struct node *n = &s->nodes[i];

		if (n->procs > 0 && (n->dead || !n->got))
			snprintf(refused, len, "node %s: %s", n->name,
				 n->dead ? n->note : "no answer in time");
		else if (span_active(n) && strcmp(n->state, "refused") == 0)
			snprintf(refused, len, "node %s: %s", n->name, n->note);
	}
	if (refused[0])
		span_tell(s, "refuse %s", refused);
	else
		span_tell(s, "send");
}

/* The outcome of one attempt: whether it failed (a node gone counts), all of it transient. */
static bool failed(struct span *s, bool *transient, char *first, size_t len)
{
	bool any = false;

	*transient = true;
	first[0] = '\0';
	span_collect(s);
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

	span_phase(s, "restored");
	span_collect(s);
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

static void print_json(const struct span *s, const struct span_req *q, const char *refused,
		       const char *rollback, const char *attempts, double seconds, int still)
{
	struct tally t = count(s, -1);
	char line[2048];

	printf("{\"action\":\"%s\",\"job\":", cli_verb_name[q->verb]);
	span_json_str(s->job);
	printf(",\"nodes\":[");
	for (int i = 0; i < s->n; i++) {
		struct tally n = count(s, i);

		node_line(s, i, q, rollback[0], line, sizeof(line));
		printf("%s\n  {\"node\":", i ? "," : "");
		span_json_str(s->nodes[i].name);
		printf(",\"answered\":%s,\"processes\":%d,\"ok\":%d,\"line\":",
		       s->nodes[i].dead ? "false" : "true", n.counted, n.ok);
		span_json_str(line);
		printf("}");
	}
	printf("],\n \"processes\":[");
	for (int i = 0; i < s->n_procs; i++) {
		const struct proc *p = &s->procs[i];

		printf("%s\n  {\"node\":", i ? "," : "");
		span_json_str(s->nodes[p->node].name);
		if (p->json && p->json[0] == '{')
			printf(",%s", p->json + 1);
		else
			printf(",\"pid\":%d,\"ok\":%s,\"outcome\":\"%s\",\"status\":null}", p->pid,
			       p->ok ? "true" : "false", p->outcome);
	}
	printf("],\n \"attempts\":[%s],\n \"refused\":", attempts);
	if (refused[0])
		span_json_str(refused);
	else
		printf("null");
	printf(",\n \"rollback\":");
	if (rollback[0])
		span_json_str(rollback);
	else
		printf("null");
	printf(",\n \"total\":{\"nodes\":%d,\"processes\":%d,\"ok\":%d,\"without_cuda\":%d,"
	       "\"failed\":%d,\"rolled_back\":%s,\"seconds\":%.3f}}\n",
	       s->n, t.counted, rollback[0] ? still : t.ok, t.none, t.failed,
	       rollback[0] ? "true" : "false", seconds);
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
	if (!refused[0] && q->cut &&
	    span_phase(s, q->verb == VERB_SUSPEND ? "count" : "restored") &&
	    q->verb == VERB_SUSPEND)
		span_phase(s, "there");
	if (!failed(s, transient, first, flen) || !q->atomic || refused[0]) {
		span_tell(s, "ok");
		return false;
	}
	span_tell(s, "rollback");
	return true;
}

int spanjob_act(const struct span_req *q, const char *nodes, int n)
{
	static char refused[1200], first[1200], rollback[4096], attempts[MAX_ATTEMPTS * 1400];
	double t0 = cli_now_s(), pause = 0.5;
	size_t ao = 0;
	int still = 0, rc;
	struct span s;
	bool transient;

	rollback[0] = attempts[0] = '\0';
	if (span_setup(&s, q->job, nodes, n) < 0 ||
	    span_start(&s, q->args, first, sizeof(first)) < 0) {
		fprintf(stderr, "%s: cannot reach the nodes of Slurm job %s: %s\n", cli_prog,
			q->job, s.n ? first : "cannot read its node list");
		span_teardown(&s);
		return 1;
	}
	s.deadline = t0 + q->timeout;
	if (span_hellos(&s) == 0) {
		fprintf(stderr,
			"%s: no process of Slurm job %s runs under cudanap on its nodes (%s)\n",
			cli_prog, q->job, nodes);
		span_finish(&s);
		span_teardown(&s);
		return 1;
	}
	for (unsigned a = 1;; a++) {
		char line[1400];

		if (!attempt(&s, q, refused, sizeof(refused), first, sizeof(first), &transient))
			break;
		still = roll_back(&s, rollback, sizeof(rollback));
		if (still || !transient || a > q->retries || cli_now_s() + pause >= s.deadline) {
			span_tell(&s, "stop");
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
		span_tell(&s, "retry");
	}
	span_finish(&s);
	qsort(s.procs, (size_t)s.n_procs, sizeof(*s.procs), by_node);
	if (q->json)
		print_json(&s, q, refused, rollback, attempts, cli_now_s() - t0, still);
	else
		print_text(&s, q, refused, rollback, cli_now_s() - t0, still);
	rc = refused[0] || rollback[0] || count(&s, -1).failed ||
	     span_lost(&s, first, sizeof(first));
	span_teardown(&s);
	return rc;
}
