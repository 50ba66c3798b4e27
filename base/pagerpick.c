/* pagerpick: which idle programs the node pager naps for a need (see cn_pagerpick.h). */
#define _GNU_SOURCE
#include "cn_pagerpick.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum reason { OK, SKIP, RECENT, NEVER, HOST, PRIORITY, SHARE, N_REASONS };

/* What was passed over for each reason, and whose. */
struct passed {
	uint64_t bytes[N_REASONS];
	char names[N_REASONS][100];
};

static bool group_rule(const struct cn_pagerconf *pc, int rule)
{
	return rule >= 0 && cn_pagerconf_rule(pc, rule)->group;
}

/* The same share: one group's members, or one user outside the groups. */
static bool same(const struct cn_pagerconf *pc, uid_t u1, int r1, uid_t u2, int r2)
{
	if (group_rule(pc, r1) || group_rule(pc, r2))
		return r1 == r2;
	return u1 == u2;
}

uint64_t cn_pagerpick_share(const struct cn_pagerconf *pc, int rule, uint64_t total)
{
	return total / 100 * cn_pagerconf_rule(pc, rule)->share_pct;
}

uint64_t cn_pagerpick_used(const struct cn_pagerconf *pc, uid_t uid, int rule,
			   const struct cn_pagerpick_proc *p, int n)
{
	uint64_t used = 0;

	for (int i = 0; i < n; i++)
		if (same(pc, uid, rule, p[i].uid, p[i].rule))
			used += p[i].bytes;
	return used;
}

/* The choice under way: what each principal holds once the picks so far nap. */
struct choice {
	const struct cn_pagerconf *pc;
	const struct cn_pagerpick_ask *a;
	const struct cn_pagerpick_gpu *g;
	const struct cn_pagerpick_proc *p;
	int n;
	bool taken[CN_PAGERPICK_MAX];
};

static uint64_t used_now(const struct choice *c, uid_t uid, int rule)
{
	uint64_t used = cn_pagerpick_used(c->pc, uid, rule, c->p, c->n), back = 0;

	for (int i = 0; i < c->n; i++)
		if (c->taken[i] && same(c->pc, uid, rule, c->p[i].uid, c->p[i].rule))
			back += c->p[i].gives;
	return back < used ? used - back : 0;
}

static bool over(const struct choice *c, uid_t uid, int rule, uint64_t more)
{
	return used_now(c, uid, rule) + more > cn_pagerpick_share(c->pc, rule, c->g->total);
}

static enum reason eligible(const struct choice *c, int i)
{
	const struct cn_pagerpick_proc *p = &c->p[i];
	const struct cn_pagerpick_ask *a = c->a;
	bool own = same(c->pc, p->uid, p->rule, a->uid, a->rule);

	if (c->taken[i] || p->pid == a->pid || p->kind == CN_PP_NOT || !p->gives ||
	    (p->kind == CN_PP_LIGHT && !a->context))
		return SKIP;
	if (p->never || (!own && cn_pagerconf_rule(c->pc, p->rule)->never))
		return NEVER;
	if (p->kind == CN_PP_AWAKE && (p->idle_s < 0 || p->idle_s < c->pc->min_idle_s))
		return RECENT;
	if (p->no_host)
		return HOST;
	if (own)
		return OK;
	if (cn_pagerconf_rule(c->pc, p->rule)->priority >
	    cn_pagerconf_rule(c->pc, a->rule)->priority)
		return PRIORITY;
	if (over(c, a->uid, a->rule, a->bytes) && !over(c, p->uid, p->rule, 0))
		return SHARE;
	return OK;
}

/* Whether i is napped before j. */
static bool before(const struct choice *c, int i, int j)
{
	const struct cn_pagerpick_proc *x = &c->p[i], *y = &c->p[j];
	bool ox = over(c, x->uid, x->rule, 0), oy = over(c, y->uid, y->rule, 0);
	int px = cn_pagerconf_rule(c->pc, x->rule)->priority;
	int py = cn_pagerconf_rule(c->pc, y->rule)->priority;

	if (ox != oy)
		return ox;
	if (px != py)
		return px < py;
	if (x->kind != y->kind)
		return x->kind == CN_PP_AWAKE;
	return x->idle_s > y->idle_s;
}

static void pass(struct passed *ps, enum reason r, const struct cn_pagerpick_proc *p)
{
	size_t o = strlen(ps->names[r]);

	ps->bytes[r] += p->gives;
	if (!strstr(ps->names[r], p->user) && o + strlen(p->user) + 3 < sizeof(ps->names[r]))
		snprintf(ps->names[r] + o, sizeof(ps->names[r]) - o, "%s%s", o ? ", " : "",
			 p->user);
}

static const char *const reason_words[N_REASONS] = {
	[NEVER] = "never napped",
	[HOST] = "whose nap's copy the host has no memory for",
	[PRIORITY] = "of a higher priority",
	[SHARE] = "of users under their share",
};

/* The refusal's line: what is free and wanted, then what was passed over and why. */
static void say_refusal(const struct choice *c, const struct passed *ps, uint64_t free_bytes,
			uint64_t want, char *why, size_t len)
{
	const struct cn_pagerpick_ask *a = c->a;
	bool said = false;
	size_t o;

	snprintf(why, len,
		 "GPU %d has %llu MiB free, %llu MiB wanted ([pager] margin_mib included)",
		 c->g->index, (unsigned long long)(free_bytes >> 20),
		 (unsigned long long)(want >> 20));
	for (int r = RECENT; r < N_REASONS; r++) {
		if (!ps->bytes[r])
			continue;
		said = true;
		o = strlen(why);
		if (r == RECENT)
			snprintf(why + o, len - o,
				 "; %llu MiB that worked less than [pager] min_idle_s (%u s) ago "
				 "(%s)",
				 (unsigned long long)(ps->bytes[r] >> 20), c->pc->min_idle_s,
				 ps->names[r]);
		else
			snprintf(why + o, len - o, "; %llu MiB %s (%s)",
				 (unsigned long long)(ps->bytes[r] >> 20), reason_words[r],
				 ps->names[r]);
		if (r == SHARE) {
			o = strlen(why);
			snprintf(why + o, len - o,
				 ", %s holding %llu MiB and asking %llu over its share of %u %% "
				 "(%llu MiB)",
				 a->user, (unsigned long long)(used_now(c, a->uid, a->rule) >> 20),
				 (unsigned long long)(a->bytes >> 20),
				 cn_pagerconf_rule(c->pc, a->rule)->share_pct,
				 (unsigned long long)(cn_pagerpick_share(c->pc, a->rule,
									 c->g->total) >>
						      20));
		}
	}
	o = strlen(why);
	snprintf(why + o, len - o, "%s",
		 said ? "" : "; no idle program under cudanap there to nap for it");
}

int cn_pagerpick_choose(const struct cn_pagerconf *pc, const struct cn_pagerpick_ask *a,
			const struct cn_pagerpick_gpu *g, const struct cn_pagerpick_proc *p, int n,
			struct cn_pagerpick *out, char *why, size_t len)
{
	struct choice c = { pc, a, g, p, n < CN_PAGERPICK_MAX ? n : CN_PAGERPICK_MAX, { false } };
	uint64_t free_bytes = g->free, recent = 0;
	struct passed ps;

	memset(out, 0, sizeof(*out));
	memset(&ps, 0, sizeof(ps));
	why[0] = '\0';
	out->want = a->bytes + ((uint64_t)pc->margin_mib << 20);
	out->all_light = true;
	while (free_bytes < out->want && out->n < CN_PAGERPICK_MAX) {
		int best = -1;

		for (int i = 0; i < c.n; i++)
			if (eligible(&c, i) == OK && (best < 0 || before(&c, i, best)))
				best = i;
		if (best < 0)
			break;
		c.taken[best] = true;
		out->idx[out->n++] = best;
		out->all_light &= p[best].kind == CN_PP_AWAKE && p[best].light;
		free_bytes += p[best].gives;
	}
	if (free_bytes >= out->want)
		return 0;
	for (int i = 0; i < c.n; i++) {
		enum reason r = eligible(&c, i);
		double wait;

		if (r == SKIP || r == OK)
			continue;
		pass(&ps, r, &p[i]);
		if (r != RECENT)
			continue;
		recent += p[i].gives;
		wait = pc->min_idle_s - (p[i].idle_s < 0 ? 0 : p[i].idle_s);
		if (p[i].idle_s >= 0 && (!out->soon_pid || wait < out->soon_s)) {
			out->soon_s = wait;
			out->soon_pid = p[i].pid;
		}
	}
	say_refusal(&c, &ps, g->free, out->want, why, len);
	out->n = 0;
	return free_bytes + recent >= out->want && out->soon_pid ? -EAGAIN : -ENOSPC;
}
