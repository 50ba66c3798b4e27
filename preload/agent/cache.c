/* cache: the pinned host copies kept ready for light naps, one budget ([memory] host_cache) for the
 * user's processes of the status directory (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/cache.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_hostmem.h"
#include "cn_proc.h"
#include "cn_words.h"
#include "cuda/hostbuf.h"
#include "cuda/light.h"
#include "agent/depth.h"
#include "agent/log.h"
#include "agent/others.h"
#include "agent/report.h"
#include "agent/state.h"

#define TICK_MS	       1000
#define PSI_PRESSURE   10.0 /* PSI some avg10, percent: the host is short of memory */
#define ROOM_WAIT_MS   2000 /* a nap waits this long at most for the copies it asked back */
#define MAKERS	       4    /* threads that make a copy ahead */
#define BACKOFF_MIN_MS 10000
#define BACKOFF_MAX_MS 300000
#define MAX_HOLDERS    256

struct holder {
	int pid, sig;
	unsigned long long starttime;
	double idle_s; /* 0 while it works */
	unsigned long long bytes;
	bool me;
};

void cn_cache_reset(struct cn_agent *ag)
{
	memset(&ag->held.ready, 0, sizeof(ag->held.ready));
	ag->held.ready.backoff_ms = BACKOFF_MIN_MS;
}

static double idle_of(const char *since)
{
	double s = cn_status_since_s(since);

	return s > 0 ? s : 0;
}

struct holders {
	struct holder h[MAX_HOLDERS];
	int n;
};

static bool take_holder(const struct cn_status *s, void *arg)
{
	struct holders *hs = arg;

	if (s->host_kept_mib > 0 && hs->n < MAX_HOLDERS)
		hs->h[hs->n++] = (struct holder){ .pid = s->pid,
						  .sig = s->suspend_signal,
						  .starttime = s->starttime,
						  .idle_s = idle_of(s->idle_since),
						  .bytes = (unsigned long long)(s->host_kept_mib *
										(1 << 20)) };
	return hs->n < MAX_HOLDERS;
}

/* The one needed last first: the least idle, then the lower pid (every process sorts alike). */
static int needed_last_first(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;

	if (x->idle_s != y->idle_s)
		return x->idle_s < y->idle_s ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The ready copies of this directory's processes, this one's with them when it holds one, in the
 * order they are given back; their bytes in *total. */
static void holders(struct cn_agent *ag, struct holders *hs, bool with_me,
		    unsigned long long *total)
{
	unsigned long long mine = cn_hostbuf_bytes();

	hs->n = 0;
	cn_others_each(ag->cfg.status_dir, take_holder, hs);
	if (with_me && mine && hs->n < MAX_HOLDERS)
		hs->h[hs->n++] = (struct holder){ .pid = (int)getpid(),
						  .idle_s = idle_of(ag->status.idle_since),
						  .bytes = mine,
						  .me = true };
	qsort(hs->h, (size_t)hs->n, sizeof(hs->h[0]), needed_last_first);
	*total = 0;
	for (int i = 0; i < hs->n; i++)
		*total += hs->h[i].bytes;
}

/* What the process can still take of the host's memory, the bound's size in *size; false when not
 * known. */
static bool host_available(unsigned long long *avail, unsigned long long *size)
{
	uint64_t r, t;
	char which[64];

	if (cn_hostmem_bound((int)getpid(), "/proc", "/sys/fs/cgroup", &r, &t, which,
			     sizeof(which)) < 0)
		return false;
	*avail = r;
	*size = t;
	return true;
}

static unsigned long long margin(const struct cn_agent *ag)
{
	return (unsigned long long)ag->cfg.host_margin_mib << 20;
}

/* The ready copy given back, said with why: by a thread of its own, in the pauses of the app's GPU
 * work, or at once where another process waits for the memory (asked). */
static void let_go(struct cn_agent *ag, const char *why, bool asked)
{
	unsigned long long mine = cn_hostbuf_bytes();

	if (!cn_hostbuf_let_go(asked ? CN_HOSTBUF_ASIDE : CN_HOSTBUF_IN_PAUSES))
		return;
	ag->held.ready.making = false;
	ag->held.ready.not_before_ms = cn_clock_ms() + ag->held.ready.backoff_ms;
	ag->held.ready.backoff_ms = ag->held.ready.backoff_ms * 2 > BACKOFF_MAX_MS
					    ? BACKOFF_MAX_MS
					    : ag->held.ready.backoff_ms * 2;
	cn_log(&ag->cfg, CN_LOG_INFO, "let go of its ready host copy (%llu MiB): %s", mine >> 20,
	       why);
}

/* Over the share, or the host short: whether this process's copy is one to give back, and why. */
static bool to_give_back(struct cn_agent *ag, char *why, size_t len)
{
	static struct holders hs;
	unsigned long long total, budget, avail, size, over;
	char which[128] = "";
	double psi = 0;
	int first = -1;

	holders(ag, &hs, true, &total);
	budget = cn_depth_cache_budget(&ag->cfg, which, sizeof(which));
	over = total > budget ? total - budget : 0;
	for (int i = 0; i < hs.n; i++) {
		if (over && hs.h[i].me) {
			snprintf(why, len,
				 "the ready copies of this user's processes hold %llu MiB, over "
				 "[memory] host_cache (%u %% of %s: %llu MiB)",
				 total >> 20, ag->cfg.host_cache_pct, which, budget >> 20);
			return true;
		}
		if (over) {
			over = over > hs.h[i].bytes ? over - hs.h[i].bytes : 0;
			continue;
		}
		first = first < 0 ? i : first;
	}
	if (!host_available(&avail, &size))
		return false;
	if (avail < margin(ag)) {
		snprintf(why, len,
			 "the host has less than [preflight] host_margin_mib (%u MiB) free",
			 ag->cfg.host_margin_mib);
		return true;
	}
	if (first < 0 || !hs.h[first].me)
		return false;
	if (avail < margin(ag) + size / 4) {
		snprintf(
			why, len,
			"the host has less than [preflight] host_margin_mib (%u MiB) and a quarter "
			"of its memory free",
			ag->cfg.host_margin_mib);
		return true;
	}
	if (cn_hostmem_pressure("/proc", &psi) == 0 && psi >= PSI_PRESSURE) {
		snprintf(why, len, "the host is short of memory (PSI some avg10 %.1f %%)", psi);
		return true;
	}
	return false;
}

/* When a nap may come soon enough to make its copy ahead: half the shortest of [nap] idle_s and,
 * for make_room, [nap] min_idle_s; 1 s at least. */
static double ahead_after_s(struct cn_agent *ag)
{
	const struct cn_config *c = &ag->cfg;
	double s = c->nap_idle_s ? c->nap_idle_s : 24 * 3600;

	if (c->nap_make_room && c->nap_min_idle_s < s)
		s = c->nap_min_idle_s;
	return s / 2 < 1 ? 1 : s / 2;
}

/* A copy made ahead, where the share and the host's free memory allow it: true when one is begun.
 */
static bool make_ahead(struct cn_agent *ag, double now)
{
	const struct cn_config *c = &ag->cfg;
	unsigned long long bytes, others, budget, avail, size;
	enum cn_depth_why why;
	char which[128];
	void *ctx;

	if (!c->nap_copy_ahead || !cn_config_light_naps(c) || now < ag->held.ready.not_before_ms ||
	    idle_of(ag->status.idle_since) < ahead_after_s(ag) ||
	    !cn_depth_light(&ag->cfg, &why, NULL, 0))
		return false;
	bytes = cn_depth_light_bytes(&ctx);
	budget = cn_depth_cache_budget(&ag->cfg, which, sizeof(which));
	others = cn_others_kept_bytes(ag->cfg.status_dir);
	if (!bytes || !ctx || others + bytes > budget || !host_available(&avail, &size) ||
	    avail < margin(ag) + size / 4 + bytes)
		return false;
	if (cn_hostbuf_ahead(bytes, ctx, MAKERS) < 0)
		return false;
	ag->held.ready.making = true;
	cn_log(&ag->cfg, CN_LOG_DEBUG,
	       "making its host copy ahead (%llu MiB), idle %.0f s: its next light nap copies into "
	       "it",
	       bytes >> 20, idle_of(ag->status.idle_since));
	return true;
}

/* A copy let go by a thread of its own, gone now: said (the status's host_kept_mib is less). */
static bool say_gone(struct cn_agent *ag)
{
	struct cn_hostbuf_gone g;

	if (!cn_hostbuf_gone(&g))
		return false;
	cn_log(&ag->cfg, CN_LOG_INFO,
	       "let go of its host copy (%llu MiB) in %.0f ms beside the app's calls (%.0f ms of it "
	       "giving way to them)",
	       g.mib, g.ms, g.waited_ms);
	if (g.left_mib)
		cn_log(&ag->cfg, CN_LOG_ERROR,
		       "the driver would not unpin %llu MiB of its host copy: left mapped",
		       g.left_mib);
	return true;
}

bool cn_cache_tick(struct cn_agent *ag, double now)
{
	unsigned long long mine;
	bool gone = say_gone(ag);
	char why[300];

	if (now - ag->held.ready.last_ms < TICK_MS || ag->status.state != CN_STATE_RUNNING)
		return gone;
	ag->held.ready.last_ms = now;
	mine = cn_hostbuf_bytes();
	if (ag->held.ready.making && !cn_hostbuf_making()) {
		ag->held.ready.making = false;
		ag->held.ready.backoff_ms = BACKOFF_MIN_MS;
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "made its host copy ahead (%llu MiB): its next light nap copies at the "
		       "bus's "
		       "speed",
		       mine >> 20);
	}
	if (mine && !cn_config_keeps_host(&ag->cfg)) {
		let_go(ag,
		       ag->cfg.host_cache_pct ? "[nap] keep_host_copy is off"
					      : "[memory] host_cache is 0",
		       false);
		return true;
	}
	if (mine && to_give_back(ag, why, sizeof(why))) {
		let_go(ag, why, false);
		return true;
	}
	return (!mine && cn_config_keeps_host(&ag->cfg) && make_ahead(ag, now)) || gone;
}

bool cn_cache_may_keep(struct cn_agent *ag, unsigned long long bytes)
{
	unsigned long long budget, avail, size;
	bool asked = ag->held.ready.trim;
	char which[128];

	ag->held.ready.trim = false;
	if (asked || !cn_config_keeps_host(&ag->cfg) || !host_available(&avail, &size))
		return false;
	budget = cn_depth_cache_budget(&ag->cfg, which, sizeof(which));
	return cn_others_kept_bytes(ag->cfg.status_dir) + bytes <= budget &&
	       avail >= margin(ag) + size / 4;
}

void cn_cache_free_for(struct cn_agent *ag, unsigned long long bytes)
{
	static struct holders hs;
	unsigned long long total, avail, size, want = bytes + margin(ag), asked = 0;
	union sigval v = { .sival_int = CN_SIGVAL_TRIM };
	char pids[200] = "";
	double until;

	/* its own ready copy is memory for it already: taken by its light nap, or let go before a
	 * full one (one still going too: its nap waits for it) */
	if (!host_available(&avail, &size) || avail + cn_hostbuf_held_bytes() >= want)
		return;
	holders(ag, &hs, false, &total);
	for (int i = 0; i < hs.n && avail + cn_hostbuf_held_bytes() + asked < want; i++) {
		size_t o = strlen(pids);

		if (cn_proc_signal(hs.h[i].pid, hs.h[i].starttime, hs.h[i].sig, &v) < 0)
			continue;
		asked += hs.h[i].bytes;
		snprintf(pids + o, sizeof(pids) - o, "%s%d", o ? ", " : "", hs.h[i].pid);
	}
	if (!asked)
		return;
	cn_log(&ag->cfg, CN_LOG_INFO,
	       "asked %s to give back their ready host copies (%llu MiB) for its nap's %llu MiB",
	       pids, asked >> 20, bytes >> 20);
	until = cn_clock_ms() + ROOM_WAIT_MS;
	while (cn_clock_ms() < until && host_available(&avail, &size) &&
	       avail + cn_hostbuf_held_bytes() < want)
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
}

bool cn_cache_trim_asked(struct cn_agent *ag)
{
	/* napping: its copy is the nap's, and not kept by its wake */
	ag->held.ready.trim = cn_light_holding() || ag->status.state == CN_STATE_CHECKPOINTED;
	cn_hostbuf_hurry(); /* one going gives way to the app's calls no more */
	if (ag->status.state != CN_STATE_RUNNING || !cn_hostbuf_bytes())
		return false;
	let_go(ag, "another process of this user needs the host memory for its nap", true);
	return true;
}
