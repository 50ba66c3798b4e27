/* scan: the processes on one GPU as the choice needs them: NVML's, through ctl.c, with /proc, the
 * user database and each one's status file read through base/safe.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cn_hostmem.h"
#include "cn_outcome.h"
#include "cn_proc.h"
#include "cn_status.h"
#include "pager.h"

#define HOST_MARGIN (1024ull << 20) /* [preflight] host_margin_mib's default */

int scan_rule_of(uid_t uid, gid_t gid, char *user, size_t len)
{
	struct passwd pw, *pp = NULL;
	char buf[4096];
	gid_t groups[256];
	int n = 256;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pp) != 0 || !pp) {
		cn_pagerwire_user(NULL, uid, user, len);
		return cn_pagerconf_rule_of(&pg_policy, uid, &gid, 1);
	}
	cn_pagerwire_user(pp->pw_name, uid, user, len);
	if (getgrouplist(pp->pw_name, pp->pw_gid, groups, &n) < 0)
		n = 256;
	return cn_pagerconf_rule_of(&pg_policy, uid, groups, n);
}

/* What its status says: may it be napped now, or is it a light napper, and what it gives. */
static void judge(struct scan_proc *sp, const struct cn_status *st, uint64_t host)
{
	struct cn_pagerpick_proc *p = &sp->pick;
	uint64_t light = st->light_able_mib >= 0 ? (uint64_t)(st->light_able_mib * (1 << 20)) : 0;
	uint64_t copy;

	sp->starttime = st->starttime;
	sp->sig = st->suspend_signal;
	sp->seq = st->seq;
	if (st->busy) /* an action under way */
		return;
	if (cn_status_light_held(st) && cn_outcome_nap_asleep(st->nap)) {
		p->kind = CN_PP_LIGHT; /* what NVML shows of it is the context it keeps */
		p->gives = p->bytes;
		sp->light_held = st->light_mib;
		return;
	}
	if (st->state != CN_STATE_RUNNING || cn_outcome_nap_asleep(st->nap) ||
	    st->nap == CN_NAP_REFUSED || st->nap == CN_NAP_WAKING || st->nap == CN_NAP_WAITING)
		return;
	p->kind = CN_PP_AWAKE;
	p->idle_s = cn_status_since_s(st->idle_since);
	p->light = st->light_able_mib >= 0;
	p->gives = p->light && light < p->bytes ? light : p->bytes;
	/* a light nap into the copy it keeps takes no more host memory */
	copy = p->light && st->host_kept_mib * (1 << 20) >= (double)p->gives ? 0 : p->gives;
	p->no_host = host && copy && host < copy + HOST_MARGIN;
	/* one whose naps go to disk where the host has no room ([nap] to = auto) naps fully there,
	 * taking no host memory, where its status says the disk holds the driver's copy (about
	 * 1.06 times what it holds); its own nap checks the disk again */
	if (p->no_host &&
	    st->nap_disk_mib * (1 << 20) >= (double)(cn_hostmem_checkpoint_bytes(p->bytes) + HOST_MARGIN)) {
		p->no_host = false;
		p->light = false;
		p->gives = p->bytes;
	}
}

/* A stopped process (SIGSTOP, a debugger) cannot answer a nap: asked, it would hold the GPU's
 * turn until its answer's time ran out. */
static bool stopped(int pid)
{
	char path[64], buf[512];
	const char *p;
	FILE *f;
	bool t = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		t = p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
	if (f)
		fclose(f);
	return t;
}

/* Process pid, holding bytes there: its owner, rule and status. */
static void one(struct scan_proc *sp, int pid, uint64_t bytes, uint64_t host)
{
	struct cn_pagerpick_proc *p = &sp->pick;
	char path[64], exe[PATH_MAX];
	struct cn_status st;
	struct stat ps;
	ssize_t n;

	memset(sp, 0, sizeof(*sp));
	*p = (struct cn_pagerpick_proc){
		.pid = pid, .bytes = bytes, .idle_s = -1, .kind = CN_PP_NOT, .rule = -1
	};
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &ps) < 0)
		return; /* gone: nothing of it counts */
	p->uid = ps.st_uid;
	p->rule = scan_rule_of(ps.st_uid, ps.st_gid, p->user, sizeof(p->user));
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	p->never = n > 0 && cn_pagerconf_never_program(&pg_policy, exe);
	if (!cn_proc_preloaded(pid) || stopped(pid))
		return;
	cn_proc_status_dir(pid, sp->dir, sizeof(sp->dir));
	if (cn_status_read(sp->dir, pid, &st) < 0 || !st.starttime ||
	    st.starttime != cn_proc_starttime(pid))
		return;
	judge(sp, &st, host);
}

int scan_gpu(const struct cn_uuid *gpu, struct scan *s, char *why, size_t len)
{
	static struct cn_resp r;
	int n;

	memset(s, 0, sizeof(*s));
	s->uuid = *gpu;
	if (ctl_gpu(gpu, &r, why, len) < 0)
		return -1;
	s->gpu.index = cn_uuid_index(r.gpus, (int)r.n_gpus, gpu);
	if (s->gpu.index < 0) {
		snprintf(why, len, "no GPU %s on this machine", "with that UUID");
		return -1;
	}
	s->gpu.total = r.total_bytes;
	s->gpu.free = r.free_bytes;
	n = (int)(r.n_procs < CN_PAGERPICK_MAX ? r.n_procs : CN_PAGERPICK_MAX);
	for (int i = 0; i < n; i++) {
		one(&s->p[s->n], r.procs[i], r.pid_bytes[i], r.pid_host[i]);
		if (s->p[s->n].pick.uid || s->p[s->n].pick.user[0])
			s->n++;
	}
	for (int i = 0; i < s->n; i++)
		s->pick[i] = s->p[i].pick;
	return 0;
}
