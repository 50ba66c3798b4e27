/* query: what a suspend would do now, without doing it: the answer to `cudanap status` and
 * `cudanap suspend --dry-run`, asked by a queued signal. It runs the suspend's checks (the INI,
 * the preflight, the room for the host copy), asks the controller what the process holds on which
 * GPU (and, of a restored NCCL rank, which other job's process shares them: beside.c), looks at
 * the app's threads inside a driver call (cuda/gate.c), estimates the suspend's and the resume's
 * times from this machine's past (rates.c), and writes it all in the status file's
 * query fields. It locks nothing, and leaves the state and the last action's outcome as they
 * were. A thread seen inside the same call at the query's start and end, or at the last query,
 * has been inside it at least that long; longer than [lock] timeout_ms, a suspend would fail. */
#define _GNU_SOURCE
#include "query.h"

#include <stdio.h>
#include <string.h>

#include "beside.h"
#include "clock.h"
#include "cn_gpumap.h"
#include "cuda_abi.h"
#include "fns.h"
#include "gate.h"
#include "hibernate.h"
#include "nccl.h"
#include "peers.h"
#include "preflight.h"
#include "rates.h"
#include "reload.h"
#include "report.h"
#include "requests.h"
#include "state.h"

#define MAX_INSIDE 64

/* The threads inside a call at the last look, and when it was. */
static struct {
	struct cn_inside t[MAX_INSIDE];
	int n;
	double at_ms;
} last;

static void no(const char *why)
{
	cn_ag.st.suspendable = CN_ASK_NO;
	snprintf(cn_ag.st.why_not, sizeof(cn_ag.st.why_not), "%s", why);
}

/* Since when the thread t has been inside its call, as far as the looks tell (ms, monotonic). */
static double since(const struct cn_inside *t, const struct cn_inside *first, int n_first,
		    double first_ms)
{
	for (int i = 0; i < last.n; i++)
		if (last.t[i].tid == t->tid && last.t[i].calls == t->calls &&
		    last.t[i].idx == t->idx)
			return last.at_ms;
	for (int i = 0; i < n_first; i++)
		if (first[i].tid == t->tid && first[i].calls == t->calls && first[i].idx == t->idx)
			return first_ms;
	return cn_clock_ms();
}

/* The threads inside a call: the longest-standing one said, and too long for the lock. */
static void threads_inside(const struct cn_inside *first, int n_first, double first_ms)
{
	struct cn_inside now[MAX_INSIDE];
	double t = cn_clock_ms(), oldest = t;
	int n = cn_gate_inside(now, MAX_INSIDE), who = -1;
	char why[300];

	cn_ag.st.inside[0] = '\0';
	for (int i = 0; i < n; i++) {
		double s = since(&now[i], first, n_first, first_ms);

		if (s <= oldest) {
			oldest = s;
			who = i;
		}
	}
	if (who >= 0)
		snprintf(cn_ag.st.inside, sizeof(cn_ag.st.inside),
			 "thread %d inside %s for at least %.1f s", (int)now[who].tid,
			 cn_lookup_name(now[who].idx), (t - oldest) / 1000);
	if (who >= 0 && cn_ag.cfg.lock_timeout_ms && t - oldest >= cn_ag.cfg.lock_timeout_ms &&
	    !cn_ag.st.why_not[0]) {
		snprintf(why, sizeof(why),
			 "%s, longer than [lock] timeout_ms (%u ms): a suspend would wait for it "
			 "and fail",
			 cn_ag.st.inside, cn_ag.cfg.lock_timeout_ms);
		no(why);
	}
	memcpy(last.t, now, sizeof(now[0]) * (size_t)n);
	last.n = n;
	last.at_ms = t;
}

/* Where its memory is now, and how much: "0:8712,1:0". */
static double memory_now(const struct cn_resp *r)
{
	struct cn_status *st = &cn_ag.st;
	double total = 0;
	size_t o = 0;

	st->gpu_now[0] = '\0';
	for (uint32_t i = 0; i < r->n_use; i++) {
		int k = cn_uuid_index(r->gpus, (int)r->n_gpus, &r->use[i].uuid);
		double mib = (double)r->use[i].bytes / (1 << 20);

		total += mib;
		o += (size_t)snprintf(st->gpu_now + o,
				      o < sizeof(st->gpu_now) ? sizeof(st->gpu_now) - o : 0,
				      "%s%d:%.0f", o ? "," : "", k, mib);
	}
	st->gpu_now_mib = r->n_use ? total : -1;
	snprintf(st->gpu_model, sizeof(st->gpu_model), "%s", r->model);
	return total;
}

/* Room for the host copy: in RAM (or the cgroup), or on disk when it hibernates. */
static void room(const struct cn_resp *r, double gpu_mib)
{
	struct cn_status *st = &cn_ag.st;
	const struct cn_config *c = &cn_ag.cfg;
	double need = gpu_mib + gpu_mib / 16 + c->host_margin_mib, have;
	char why[300];

	st->host_need_mib = gpu_mib > 0 ? need : -1;
	if (c->hibernate_dir[0]) {
		uint64_t free_b = cn_hibernate_free_bytes(c->hibernate_dir);

		have = free_b == UINT64_MAX ? -1 : (double)free_b / (1 << 20);
		snprintf(st->host_bound, sizeof(st->host_bound), "free space in %s",
			 c->hibernate_dir);
	} else {
		have = r->host_which[0] ? (double)(r->host_room + cn_ag.prepared_bytes) / (1 << 20)
					: -1;
		snprintf(st->host_bound, sizeof(st->host_bound), "%s", r->host_which);
	}
	st->host_room_mib = have;
	if (c->host_check && gpu_mib > 0 && have >= 0 && have < need && !st->why_not[0]) {
		snprintf(why, sizeof(why),
			 "its host copy needs %.0f MiB with the margin, and %s has %.0f MiB", need,
			 st->host_bound, have);
		no(why);
	}
}

static void estimate(double gpu_mib)
{
	struct cn_status *st = &cn_ag.st;
	bool disk = cn_ag.cfg.hibernate_dir[0] != '\0';
	char src[160];
	double gib = gpu_mib / 1024;

	if (gpu_mib <= 0) {
		st->est_suspend_s = st->est_resume_s = -1;
		st->est_source[0] = '\0';
		return;
	}
	st->est_suspend_s =
		cn_rates_estimate(st->gpu_model, disk ? CN_RATE_SUSPEND_DISK : CN_RATE_SUSPEND, gib,
				  st->est_source, sizeof(st->est_source));
	st->est_resume_s = cn_rates_estimate(
		st->gpu_model, disk ? CN_RATE_RESUME_DISK : CN_RATE_RESUME, gib, src, sizeof(src));
}

static void stamp(void)
{
	struct cn_status *st = &cn_ag.st;

	cn_report_time(st->query_time, sizeof(st->query_time), 0);
	st->query_seq++;
	cn_nccl_describe(st); /* communicators made since the last action */
	cn_report_write();    /* its timestamp stays the last action's */
}

void cn_query(void)
{
	struct cn_status *st = &cn_ag.st;
	struct cn_inside first[MAX_INSIDE];
	struct cn_nccl_facts nf;
	unsigned long long call_ns = st->call_ns;
	double t0 = cn_clock_ms(), gpu_mib;
	int n_first = cn_gate_inside(first, MAX_INSIDE);
	struct cn_resp r;
	char why[420];

	st->why_not[0] = st->inside[0] = st->beside[0] = '\0';
	st->suspendable = CN_ASK_YES;
	if (!cn_reload_quietly(why, sizeof(why))) {
		no(why);
		stamp();
		return;
	}
	cn_requests_call(CN_OP_QUERY, &r);
	st->call_ns = call_ns; /* the last action's, not this */
	if (r.result == CUDA_ERROR_NOT_INITIALIZED) {
		st->suspendable = CN_ASK_NO_CUDA;
		snprintf(st->why_not, sizeof(st->why_not), "no CUDA state: nothing to suspend");
		stamp();
		return;
	}
	if (r.result != CUDA_SUCCESS) {
		snprintf(why, sizeof(why), "%s: %s", r.name, r.message);
		no(why);
		stamp();
		return;
	}
	cn_state_machine(&r);
	cn_report_shared(st);
	if (cn_ag.cfg.peer_off && cn_peers_large(why, sizeof(why)) > 0)
		snprintf(st->peer + strlen(st->peer), sizeof(st->peer) - strlen(st->peer),
			 " (a suspend turns it off, and it stays off after the resume: [peer] mode "
			 "= "
			 "off)");
	gpu_mib = memory_now(&r);
	cn_beside_describe(&r);
	if (r.state == CN_STATE_CHECKPOINTED) {
		st->suspendable = CN_ASK_ASLEEP;
		snprintf(st->why_not, sizeof(st->why_not), "suspended already");
	} else if (r.state != CN_STATE_RUNNING) {
		no(r.state == CN_STATE_LOCKED ? "its CUDA is locked" : "its CUDA has failed");
	} else if (cn_preflight_suspend(&cn_ag.cfg, cn_nccl_facts(&nf), why, sizeof(why)) < 0) {
		no(why);
	}
	room(&r, gpu_mib);
	threads_inside(first, n_first, t0);
	estimate(gpu_mib);
	stamp();
}
