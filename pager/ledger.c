/* ledger: what the pager did, per user, each GPU's usage against the shares and its last choices,
 * written to the state file at most every second. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "cn_pagerstate.h"
#include "cn_safe.h"
#include "cn_status.h"
#include "pager.h"

#define TRACKED 256

static struct cn_pagerstate st;
static bool changed;
static double written_ms;

/* The naps made, kept until each process wakes or ends: their time napped. */
static struct {
	int pid;
	unsigned long long starttime;
	uid_t uid;
	char dir[4096];
	double t0_ms;
} naps[TRACKED];
static int n_naps;

static struct cn_pagerstate_user *user(uid_t uid, const char *name)
{
	int i;

	for (i = 0; i < st.n_users; i++)
		if (st.users[i].uid == uid)
			return &st.users[i];
	if (st.n_users == CN_PAGERSTATE_USERS)
		i = CN_PAGERSTATE_USERS - 1; /* the last one's figures are everyone else's */
	else
		st.n_users++;
	memset(&st.users[i], 0, sizeof(st.users[i]));
	st.users[i].uid = uid;
	snprintf(st.users[i].name, sizeof(st.users[i].name), "%s", name);
	return &st.users[i];
}

void ledger_ask(uid_t uid, const char *name)
{
	user(uid, name)->asks++;
	changed = true;
}

void ledger_made(uid_t uid, const char *name, double s)
{
	(void)s;
	user(uid, name)->made++;
	changed = true;
}

void ledger_refused(uid_t uid, const char *name)
{
	user(uid, name)->refused++;
	changed = true;
}

void ledger_waited(uid_t uid, const char *name, double s)
{
	struct cn_pagerstate_user *u = user(uid, name);

	u->waits++;
	u->wait_s += s;
	changed = true;
}

void ledger_napped(const struct scan_proc *p, uid_t for_uid)
{
	struct cn_pagerstate_user *u = user(p->pick.uid, p->pick.user);

	if (p->pick.uid == for_uid)
		u->naps_for_self++;
	else
		u->naps_for_others++;
	changed = true;
	if (n_naps == TRACKED)
		return;
	naps[n_naps].pid = p->pick.pid;
	naps[n_naps].starttime = p->starttime;
	naps[n_naps].uid = p->pick.uid;
	snprintf(naps[n_naps].dir, sizeof(naps[n_naps].dir), "%s", p->dir);
	naps[n_naps++].t0_ms = cn_clock_ms();
}

void ledger_choice(const char *line)
{
	if (st.n_choices == CN_PAGERSTATE_CHOICES) {
		memmove(st.choices[0], st.choices[1], sizeof(st.choices[0]) * (st.n_choices - 1));
		st.n_choices--;
	}
	snprintf(st.choices[st.n_choices++], sizeof(st.choices[0]), "%s", line);
	changed = true;
}

/* The use line of a principal on GPU g, made if new. */
static struct cn_pagerstate_use *use_of(int g, const char *name)
{
	for (int i = 0; i < st.n_uses; i++)
		if (st.uses[i].gpu == g && strcmp(st.uses[i].name, name) == 0)
			return &st.uses[i];
	if (st.n_uses == CN_PAGERSTATE_USES)
		return NULL;
	memset(&st.uses[st.n_uses], 0, sizeof(st.uses[0]));
	st.uses[st.n_uses].gpu = g;
	snprintf(st.uses[st.n_uses].name, sizeof(st.uses[0].name), "%s", name);
	return &st.uses[st.n_uses++];
}

void ledger_gpu(const struct scan *s)
{
	struct cn_pagerstate_gpu *g = NULL;
	int k = 0;

	for (int i = 0; i < st.n_gpus && !g; i++)
		if (st.gpus[i].index == s->gpu.index)
			g = &st.gpus[i];
	if (!g && st.n_gpus < CN_PAGERSTATE_GPUS)
		g = &st.gpus[st.n_gpus++];
	if (!g)
		return;
	g->index = s->gpu.index;
	cn_uuid_fmt(&s->uuid, g->uuid);
	g->total_mib = s->gpu.total >> 20;
	g->free_mib = s->gpu.free >> 20;
	log_utc(g->at, sizeof(g->at));
	for (int i = 0; i < st.n_uses; i++) /* this GPU's lines anew */
		if (st.uses[i].gpu != s->gpu.index)
			st.uses[k++] = st.uses[i];
	st.n_uses = k;
	for (int i = 0; i < s->n; i++) {
		const struct cn_pagerpick_proc *p = &s->pick[i];
		const struct cn_pagerconf_rule *r = cn_pagerconf_rule(&pg_policy, p->rule);
		char name[40];
		struct cn_pagerstate_use *u;

		if (r->group)
			snprintf(name, sizeof(name), "@%s", r->name);
		else
			snprintf(name, sizeof(name), "%s", p->user);
		u = use_of(s->gpu.index, name);
		if (!u)
			continue;
		u->used_mib = cn_pagerpick_used(&pg_policy, p->uid, p->rule, s->pick, s->n) >> 20;
		u->share_mib = cn_pagerpick_share(&pg_policy, p->rule, s->gpu.total) >> 20;
	}
	changed = true;
}

/* The naps that ended since: their time added to their users'. */
static void naps_tick(double now_ms)
{
	int k = 0;

	for (int i = 0; i < n_naps; i++) {
		struct cn_status s;
		bool asleep = cn_status_read(naps[i].dir, naps[i].pid, &s) == 0 &&
			      s.starttime == naps[i].starttime &&
			      (s.state == CN_STATE_CHECKPOINTED || cn_status_light_held(&s));

		if (asleep) {
			naps[k++] = naps[i];
			continue;
		}
		user(naps[i].uid, "")->napped_s += (now_ms - naps[i].t0_ms) / 1000;
		changed = true;
	}
	n_naps = k;
}

/* The state file's directory, root's alone (made 0755 if missing): its fd, or -1. */
static int state_dir(char *name, size_t len)
{
	char dir[PATH_MAX], why[300];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", pg_policy.state);
	slash = strrchr(dir, '/');
	if (!slash || !slash[1])
		return -1;
	snprintf(name, len, "%s", slash + 1);
	*slash = '\0';
	fd = cn_safe_dir(AT_FDCWD, dir[0] ? dir : "/", (struct cn_owner){ 0, true }, false, why,
			 sizeof(why));
	if (fd == -ENOENT && mkdir(dir, 0755) == 0)
		fd = cn_safe_dir(AT_FDCWD, dir, (struct cn_owner){ 0, true }, false, why,
				 sizeof(why));
	if (fd < 0) {
		static bool said;

		if (!said)
			log_info("the state file cannot be written: %s", why);
		said = true;
		return -1;
	}
	return fd;
}

void ledger_tick(double now_ms, bool now)
{
	static char buf[CN_PAGERSTATE_MAX];
	struct cn_pagerstate out;
	char name[NAME_MAX + 1];
	int n, fd;

	naps_tick(now_ms);
	if (!st.pid) {
		st.pid = (int)getpid();
		log_utc(st.started, sizeof(st.started));
		snprintf(st.policy, sizeof(st.policy), "%s",
			 pg_policy.path[0] ? pg_policy.path : "-");
	}
	if (!now && (!changed || now_ms - written_ms < 1000) && now_ms - written_ms < 10000)
		return;
	out = st; /* with the naps still going on counted so far */
	for (int i = 0; i < n_naps; i++)
		for (int u = 0; u < out.n_users; u++)
			if (out.users[u].uid == naps[i].uid)
				out.users[u].napped_s += (now_ms - naps[i].t0_ms) / 1000;
	n = cn_pagerstate_format(&out, buf, sizeof(buf));
	fd = n > 0 ? state_dir(name, sizeof(name)) : -1;
	if (fd >= 0) {
		if (cn_safe_replace_mode(fd, name, buf, (size_t)n, 0644) < 0)
			log_info("the state file %s cannot be written: %s", pg_policy.state,
				 strerror(errno));
		close(fd);
	}
	written_ms = now_ms;
	changed = false;
}
