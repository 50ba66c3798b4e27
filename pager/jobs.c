/* jobs: the needs programs send, served one GPU's turn at a time: the GPU looked at, the policy's
 * choice asked to nap, their answers awaited, the room looked at again, the turn held until the
 * program is done. Nothing here wakes a process. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cn_proc.h"
#include "pager.h"

#define JOBS	  256
#define ROUNDS	  4	/* choices made again after naps that did not give enough */
#define ANSWER_MS 70000 /* one asked process's answer: its lock's timeout and its nap */
#define START_MS  5000	/* ... its first word (busy): one that says nothing is passed over */
#define ROOM_MS	  500	/* the GPU looked at while answers are awaited */
#define GAVE_MS	  3000	/* ... what those napped gave, as NVML says it after their answers */
#define HOLD_MS	  30000 /* a program that holds a GPU's turn longer without a word loses it */
#define POLL_MS	  50

enum phase { QUEUED, ASKED, HELD };

struct job {
	struct client *c; /* NULL once its program is gone */
	int pid;	  /* the asker, for the log once c is gone */
	uid_t uid;
	char user[33];
	struct cn_pagerwire_need need;
	enum phase phase;
	double t0_ms, until_ms, next_ms, held_ms, wait_ms;
	int rounds;
	bool coming_said;
	bool used; /* its program said done while the naps asked were under way: none asked more */
	int gpu;   /* nvidia-smi's index, once looked at */
	int n_asked;
	struct scan_proc asked[CN_PAGERPICK_MAX];
	enum ask_answer answer[CN_PAGERPICK_MAX];
	double answer_until[CN_PAGERPICK_MAX];
	bool started[CN_PAGERPICK_MAX];	 /* it said it acts (busy): its answer comes */
	double room_ms;			 /* the GPU last looked at while the answers come */
	struct cn_pagerwire_answer made; /* the processes napped so far */
	uint64_t free_then;		 /* the GPU's free memory when the first were asked */
	double gave_ms, gave_since_ms;	 /* NVML looked at for what they gave: last, first */
	int n_gave, n_passed;
	struct {
		int pid;
		unsigned long long starttime;
		uint64_t before;			    /* what NVML said it held when asked */
	} gave[CN_PAGERPICK_MAX], passed[CN_PAGERPICK_MAX]; /* napped; asked and did not nap */
	char napped_words[600];				    /* the log's list of them */
};

static struct job *jobs[JOBS];

static bool same_gpu(const struct job *a, const struct job *b)
{
	return cn_uuid_eq(&a->need.gpu, &b->need.gpu);
}

/* Whether another job holds j's GPU's turn, or has waited for it longer and may go now. */
static bool turn_taken(const struct job *j, double now)
{
	for (int i = 0; i < JOBS; i++) {
		const struct job *o = jobs[i];

		if (!o || o == j || !same_gpu(o, j))
			continue;
		if (o->phase != QUEUED || (o->next_ms <= now && o->t0_ms < j->t0_ms))
			return true;
	}
	return false;
}

/* The job's line for the log and the state file: "for PID (USER, WHAT, N MiB on GPU G): ..." */
static void say(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct job *j, const char *fmt, ...)
{
	char line[1400], gpu[16];
	va_list ap;
	size_t o;

	snprintf(gpu, sizeof(gpu), j->gpu >= 0 ? "GPU %d" : "a GPU", j->gpu);
	o = (size_t)snprintf(line, sizeof(line), "for %d (%s, %s, %llu MiB on %s): ", j->pid,
			     j->user, j->need.what[0] ? j->need.what : "?",
			     (unsigned long long)j->need.mib, gpu);
	va_start(ap, fmt);
	vsnprintf(line + o, sizeof(line) - o, fmt, ap);
	va_end(ap);
	log_info("%s", line);
	ledger_choice(line);
}

static void answer(struct job *j, struct cn_pagerwire_answer *a)
{
	if (j->c)
		clients_send(j->c, a);
}

/* The job ends: its turn free, its program free to ask again; the notes of those asked that
 * never answered taken back. */
static void end(struct job *j)
{
	for (int i = 0; i < j->n_asked; i++)
		if (j->answer[i] == ASK_WAIT)
			ask_take_back(&j->asked[i]);
	for (int i = 0; i < JOBS; i++)
		if (jobs[i] == j) {
			if (j->c)
				j->c->busy = false;
			if (j->wait_ms)
				ledger_waited(j->uid, j->user, (cn_clock_ms() - j->wait_ms) / 1000);
			free(j);
			jobs[i] = NULL;
		}
}

/* The last refusals: a program asks again for the same GPU while its wake waits (every second, or
 * when one will be idle enough); one need, however many asks, in the log and the figures. */
#define RECENT	 64
#define AGAIN_MS 10000
static struct {
	int pid;
	unsigned long long starttime;
	struct cn_uuid gpu;
	double at_ms;
	char why[200];
} refusals[RECENT];

static int recent_refusal(const struct job *j)
{
	for (int i = 0; i < RECENT; i++)
		if (refusals[i].pid == j->pid && cn_uuid_eq(&refusals[i].gpu, &j->need.gpu) &&
		    j->c && refusals[i].starttime == j->c->starttime &&
		    cn_clock_ms() - refusals[i].at_ms < AGAIN_MS)
			return i;
	return -1;
}

static void refuse_soon(struct job *j, const char *why, double soon_s)
{
	struct cn_pagerwire_answer a = { .kind = CN_PW_REFUSED, .soon_s = soon_s };
	int r = recent_refusal(j), oldest = 0;

	snprintf(a.why, sizeof(a.why), "%s", why);
	if (r >= 0 && strncmp(refusals[r].why, why, sizeof(refusals[r].why) - 1) == 0) {
		log_debug("for %d: no room made again, as before", j->pid);
	} else {
		say(j, "no room made: %s", why);
		if (r < 0)
			ledger_refused(j->uid, j->user);
	}
	for (int i = 0; r < 0 && i < RECENT; i++)
		if (refusals[i].at_ms < refusals[oldest].at_ms)
			oldest = i;
	r = r >= 0 ? r : oldest;
	refusals[r].pid = j->pid;
	refusals[r].starttime = j->c ? j->c->starttime : 0;
	refusals[r].gpu = j->need.gpu;
	refusals[r].at_ms = cn_clock_ms();
	snprintf(refusals[r].why, sizeof(refusals[r].why), "%s", why);
	answer(j, &a);
	end(j);
}

static void refuse(struct job *j, const char *why)
{
	refuse_soon(j, why, 0);
}

static struct cn_pagerwire_napped napped_of(const struct scan_proc *p)
{
	struct cn_pagerwire_napped w = { .pid = p->pick.pid,
					 .mib = p->pick.gives >> 20,
					 .idle_s = p->pick.idle_s < 0 ? 0 : p->pick.idle_s,
					 .light = p->pick.light && p->pick.kind == CN_PP_AWAKE };

	snprintf(w.user, sizeof(w.user), "%s", p->pick.user);
	return w;
}

/* "PID (USER, MIB MiB, idle S s[, lightly])" of p, after what words holds already. */
static void add_words(char *words, size_t len, const struct scan_proc *p)
{
	size_t o = strlen(words);

	snprintf(words + o, len - o, "%s%d (%s, %llu MiB, idle %.0f s%s)", o ? ", " : "",
		 p->pick.pid, p->pick.user, (unsigned long long)(p->pick.gives >> 20),
		 p->pick.idle_s < 0 ? 0 : p->pick.idle_s,
		 p->pick.kind == CN_PP_LIGHT ? ", its light nap deepened"
		 : p->pick.light	     ? ", lightly"
					     : "");
}

static void made(struct job *j)
{
	double s = (cn_clock_ms() - j->t0_ms) / 1000;
	struct cn_pagerwire_answer a;
	int still = 0;

	j->made.kind = CN_PW_MADE;
	j->made.seconds = s;
	j->made.gpu = j->gpu;
	a = j->made;
	/* those asked that gave their memory but have not said so yet are named too, to the program
	 * and in the log's one line; the figures count each when it answers (the log says so only
	 * of one that then did not nap) */
	for (int i = 0; i < j->n_asked; i++)
		if (j->answer[i] == ASK_WAIT) {
			add_words(j->napped_words, sizeof(j->napped_words), &j->asked[i]);
			still++;
			if (a.n < CN_PAGERWIRE_NAPPED)
				a.napped[a.n++] = napped_of(&j->asked[i]);
		}
	if (j->made.n || still)
		say(j, "napped %s in %.2f s", j->napped_words, s);
	ledger_made(j->uid, j->user, s);
	answer(j, &a);
	j->phase = HELD;
	j->held_ms = cn_clock_ms();
	if (!j->c || j->used)
		end(j);
}

/* No room to make now: refused, or, with when_full = wait, tried again later. */
static void no_room(struct job *j, int r, const struct cn_pagerpick *pk, const char *why)
{
	double now = cn_clock_ms();
	struct cn_pagerwire_answer a = { .kind = CN_PW_WAIT };

	if (!pg_policy.wait || now >= j->until_ms) {
		refuse_soon(j, why, r == -EAGAIN ? pk->soon_s : 0);
		return;
	}
	j->phase = QUEUED;
	/* the soonest that will be idle enough, 50 ms after, else in a second */
	j->next_ms = now + (r == -EAGAIN && pk->soon_s < 1 ? pk->soon_s * 1000 + 50 : 1000);
	if (j->wait_ms)
		return;
	j->wait_ms = now;
	a.seconds = (j->until_ms - now) / 1000;
	snprintf(a.why, sizeof(a.why), "%s", why);
	say(j, "no room now, it waits %.0f s at most for some: %s", a.seconds, why);
	answer(j, &a);
}

/* p, napped for the job: in its answer's list and the log's. */
static void add_napped(struct job *j, const struct scan_proc *p)
{
	struct cn_pagerwire_napped *w = &j->made.napped[j->made.n];

	ledger_napped(p, j->uid);
	if (j->n_gave < CN_PAGERPICK_MAX)
		j->gave[j->n_gave++] =
			(typeof(j->gave[0])){ p->pick.pid, p->starttime, p->pick.bytes };
	if (j->phase == HELD) /* named already, when the room was there before its answer */
		return;
	add_words(j->napped_words, sizeof(j->napped_words), p);
	if (j->made.n == CN_PAGERWIRE_NAPPED)
		return;
	*w = napped_of(p);
	j->made.n++;
}

/* The picks asked to nap; COMING said when they all nap lightly for a light wake. */
static void ask_picks(struct job *j, const struct scan *s, const struct cn_pagerpick *pk)
{
	struct cn_pagerwire_answer coming = { .kind = CN_PW_COMING, .gpu = s->gpu.index };
	int k = 0, asked;

	for (int i = 0; i < j->n_asked; i++) /* those still to answer stay watched */
		if (j->answer[i] == ASK_WAIT) {
			j->asked[k] = j->asked[i];
			j->answer_until[k] = j->answer_until[i];
			j->started[k] = j->started[i];
			j->answer[k++] = ASK_WAIT;
		}
	j->n_asked = asked = k;
	for (int i = 0; i < pk->n && j->n_asked < CN_PAGERPICK_MAX; i++) {
		const struct scan_proc *p = &s->p[pk->idx[i]];

		log_debug("for %d: asking %d (%s, %llu MiB, idle %.0f s) to nap", j->pid,
			  p->pick.pid, p->pick.user, (unsigned long long)(p->pick.gives >> 20),
			  p->pick.idle_s);
		if (ask_nap(p, j->pid, j->user, j->need.mib << 20, s->gpu.index) < 0)
			continue;
		j->asked[j->n_asked] = *p;
		j->started[j->n_asked] = false;
		j->answer[j->n_asked] = ASK_WAIT;
		j->answer_until[j->n_asked++] = cn_clock_ms() + ANSWER_MS;
	}
	if (j->n_asked == asked)
		return;
	j->phase = ASKED;
	j->gave_since_ms = 0; /* NVML's grace starts again once these answer */
	if (!pk->all_light || !j->need.light || j->coming_said)
		return;
	for (int i = 0; i < j->n_asked && coming.n < CN_PAGERWIRE_NAPPED; i++)
		coming.napped[coming.n++] =
			(struct cn_pagerwire_napped){ .pid = j->asked[i].pick.pid,
						      .mib = j->asked[i].pick.gives >> 20,
						      .idle_s = j->asked[i].pick.idle_s,
						      .light = true };
	for (int i = 0; i < coming.n; i++)
		snprintf(coming.napped[i].user, sizeof(coming.napped[i].user), "%s",
			 j->asked[i].pick.user);
	answer(j, &coming);
	j->coming_said = true;
}

/* The GPU looked at and the choice made: room there, naps asked, or none to make. */
static void try(struct job *j)
{
	static struct scan s;
	struct cn_pagerpick_ask a = {
		.pid = j->pid, .uid = j->uid, .bytes = j->need.mib << 20, .context = j->need.context
	};
	struct cn_pagerpick pk;
	char why[1000];
	int r;

	j->phase = QUEUED; /* until it asks or answers */
	if (j->c && cn_proc_starttime(j->pid) != j->c->starttime) {
		refuse(j, "the asking process is gone"); /* its pid may be another's now */
		return;
	}
	if (scan_gpu(&j->need.gpu, &s, why, sizeof(why)) < 0) {
		refuse(j, why);
		return;
	}
	j->gpu = s.gpu.index;
	ledger_gpu(&s);
	if (a.bytes > s.gpu.total) {
		snprintf(why, sizeof(why), "%llu MiB is more than GPU %d has (%llu MiB)",
			 (unsigned long long)j->need.mib, s.gpu.index,
			 (unsigned long long)(s.gpu.total >> 20));
		refuse(j, why);
		return;
	}
	/* one asked for it that did not nap (refused, silent, gone) is not asked again */
	for (int k = 0; k < s.n; k++)
		for (int i = 0; i < j->n_passed; i++)
			if (s.p[k].pick.pid == j->passed[i].pid &&
			    s.p[k].starttime == j->passed[i].starttime)
				s.pick[k].kind = CN_PP_NOT;
	if (j->rounds == 0)
		j->free_then = s.gpu.free;
	snprintf(a.user, sizeof(a.user), "%s", j->user);
	a.rule = scan_rule_of(j->uid, j->c ? j->c->gid : 0, a.user, sizeof(a.user));
	r = cn_pagerpick_choose(&pg_policy, &a, &s.gpu, s.pick, s.n, &pk, why, sizeof(why));
	if (r == 0 && pk.n == 0) {
		made(j);
		return;
	}
	if (r == 0)
		ask_picks(j, &s, &pk);
	if (r == 0 && j->phase == ASKED)
		return;
	if (r == 0)
		snprintf(why, sizeof(why),
			 "GPU %d: none of the idle processes chosen could be asked "
			 "to nap",
			 s.gpu.index);
	no_room(j, r, &pk, why);
}

/* Whether the room is there already, those asked that napped so far having given it: then the
 * program need not wait for one slow to answer (nor for a process that keeps its note and never
 * answers). */
static bool room_now(struct job *j)
{
	static struct scan s;
	char why[300];

	return scan_gpu(&j->need.gpu, &s, why, sizeof(why)) == 0 &&
	       s.gpu.free >= (j->need.mib << 20) + ((uint64_t)pg_policy.margin_mib << 20);
}

/* The answers come in: each one's note taken back once it answered (or its time ran out). True
 * when one napped since the last look; *waiting when some have not answered. */
static bool answers(struct job *j, double now, bool *waiting)
{
	bool news = false;

	*waiting = false;
	for (int i = 0; i < j->n_asked; i++) {
		enum ask_answer a;
		bool mute;

		if (j->answer[i] != ASK_WAIT)
			continue;
		a = now < j->answer_until[i] ? ask_answer(&j->asked[i]) : ASK_NOT;
		j->started[i] |= a == ASK_BUSY;
		/* one that never says it acts (its agent stuck, its status unwritable) holds no
		 * one's room for long */
		mute = a == ASK_WAIT && !j->started[i] &&
		       now > j->answer_until[i] - ANSWER_MS + START_MS;
		j->answer[i] = a == ASK_BUSY || (a == ASK_WAIT && !mute) ? ASK_WAIT : a;
		if (mute) {
			j->answer[i] = ASK_NOT;
			log_info("for %d: %d (%s) said nothing in %d s: passed over", j->pid,
				 j->asked[i].pick.pid, j->asked[i].pick.user, START_MS / 1000);
		}
		if (j->answer[i] == ASK_WAIT) {
			*waiting = true;
			continue;
		}
		ask_take_back(&j->asked[i]);
		if (j->answer[i] == ASK_NAPPED) {
			add_napped(j, &j->asked[i]);
			news = true;
		} else {
			log_info("for %d: %d (%s) did not nap", j->pid, j->asked[i].pick.pid,
				 j->asked[i].pick.user);
			if (j->n_passed < CN_PAGERPICK_MAX)
				j->passed[j->n_passed++] =
					(typeof(j->passed[0])){ j->asked[i].pick.pid,
								j->asked[i].starttime, 0 };
		}
	}
	return news;
}

/* Whether those napped for j gave the room, as NVML says what each holds now (never what their
 * status says): the free memory when the first were asked and what each gave since. What a light
 * wake took meanwhile is its own, so what is free now does not say it. */
static bool gave_enough(struct job *j)
{
	static struct scan s;
	uint64_t got = j->free_then;
	char why[300];

	if (scan_gpu(&j->need.gpu, &s, why, sizeof(why)) < 0)
		return false;
	for (int i = 0; i < j->n_gave; i++) {
		uint64_t now = 0;

		for (int k = 0; k < s.n; k++)
			if (s.p[k].pick.pid == j->gave[i].pid)
				now = s.p[k].pick.bytes;
		got += j->gave[i].before > now ? j->gave[i].before - now : 0;
	}
	return got >= (j->need.mib << 20) + ((uint64_t)pg_policy.margin_mib << 20);
}

/* The asked processes' answers; once all are in, or those in made the room, the room looked at
 * again. Those that have not answered then are seen through while the program holds its turn. */
static void watch(struct job *j, double now)
{
	bool waiting, news = answers(j, now, &waiting), look = news || now - j->room_ms > ROOM_MS;

	if (waiting && look)
		j->room_ms = now;
	if (waiting && (j->used || !(look && j->c && room_now(j))))
		return;
	if (!waiting)
		j->n_asked = 0;
	if (!j->c) {
		end(j);
		return;
	}
	/* the program used the room already (done), or a light wake copies in as the light naps
	 * asked give their memory back (coming): what they gave may be taken already, so what is
	 * free now is not the room made, and nobody more is asked for it */
	if (j->used) {
		made(j);
		return;
	}
	/* NVML may say a process's memory given back a moment after its status says it napped:
	 * looked at again for GAVE_MS before the choice is made again (with COMING said, what those
	 * napped gave; else what is free) */
	if (!waiting && j->made.n) {
		bool there;

		if (now - j->gave_ms < ROOM_MS / 2)
			return;
		j->gave_ms = now;
		j->gave_since_ms = j->gave_since_ms ? j->gave_since_ms : now;
		there = j->coming_said ? gave_enough(j) : room_now(j);
		if (there && j->coming_said) {
			made(j);
			return;
		}
		if (!there && now - j->gave_since_ms < GAVE_MS)
			return;
	}
	if (++j->rounds > ROUNDS) {
		refuse(j, "the processes asked to nap did not give the room back");
		return;
	}
	try(j); /* the room there now, or the next ones asked */
}

void jobs_need(struct client *c, const struct cn_pagerwire_need *n)
{
	struct job *j;
	int slot = -1;

	for (int i = 0; i < JOBS && slot < 0; i++)
		if (!jobs[i])
			slot = i;
	if (slot < 0 || !(j = calloc(1, sizeof(*j)))) {
		struct cn_pagerwire_answer a = { .kind = CN_PW_REFUSED };

		snprintf(a.why, sizeof(a.why), "the node pager has too many needs queued");
		clients_send(c, &a);
		return;
	}
	*j = (struct job){
		.c = c, .pid = c->pid, .uid = c->uid, .need = *n, .phase = QUEUED, .gpu = -1
	};
	snprintf(j->user, sizeof(j->user), "%s", c->user);
	j->t0_ms = j->next_ms = cn_clock_ms();
	j->until_ms = j->t0_ms + pg_policy.wait_s * 1000.0;
	c->busy = true;
	jobs[slot] = j;
	if (recent_refusal(j) < 0) /* asked again after a refusal: the same need */
		ledger_ask(c->uid, c->user);
	log_debug("for %d (%s): %llu MiB wanted (%s)", c->pid, c->user, (unsigned long long)n->mib,
		  n->what);
}

void jobs_done(struct client *c, bool gone)
{
	for (int i = 0; i < JOBS; i++) {
		struct job *j = jobs[i];

		if (!j || j->c != c)
			continue;
		/* the naps asked are seen through, then it ends: the program that used the room
		 * already hears what was napped for it (its last word), none more are asked */
		if (j->phase == ASKED && !gone) {
			j->used = true;
			continue;
		}
		c->busy = false;
		if (j->phase == ASKED || (j->phase == HELD && j->n_asked)) {
			j->c = NULL;
			continue;
		}
		if (gone && j->phase == QUEUED)
			log_debug("for %d: gone before its turn", j->pid);
		end(j);
	}
}

int jobs_tick(double now)
{
	int next = 1000;

	for (int i = 0; i < JOBS; i++) {
		struct job *j = jobs[i];

		if (!j)
			continue;
		if (j->phase == HELD && j->c && now - j->held_ms > HOLD_MS) {
			say(j, "its turn on the GPU ended: it did not say it used the room in %d s",
			    HOLD_MS / 1000);
			end(j);
		} else if (j->phase == ASKED) {
			watch(j, now);
		} else if (j->phase == HELD && j->n_asked) {
			bool waiting;

			answers(j, now, &waiting);
			j->n_asked = waiting ? j->n_asked : 0;
			if (!j->n_asked && !j->c) /* its program gone or done: it ends */
				end(j);
		} else if (j->phase == QUEUED && now >= j->next_ms && !turn_taken(j, now)) {
			try(j);
		}
		j = jobs[i];
		if (j && (j->phase == ASKED || j->n_asked))
			next = POLL_MS;
		else if (j && j->phase == QUEUED)
			next = (int)(j->next_ms - now) < next ? (int)(j->next_ms - now) : next;
	}
	return next < 10 ? 10 : next;
}
