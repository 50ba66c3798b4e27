/* query: what a suspend would do now, without doing it, in the status file's query fields
 * (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/query.h"

#include <stdio.h>
#include <string.h>

#include "agent/beside.h"
#include "clock.h"
#include "cn_gpumap.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/gate.h"
#include "hostcopy/hibernate.h"
#include "cuda/hostbuf.h"
#include "cuda/light.h"
#include "cuda/peers.h"
#include "agent/preflight.h"
#include "agent/rates.h"
#include "agent/reload.h"
#include "agent/report.h"
#include "agent/route.h"
#include "agent/requests.h"
#include "agent/state.h"

static void no(struct cn_agent *ag, const char *why)
{
	cn_report_ask(ag, CN_ASK_NO, why);
}

/* Since when the thread t has been inside its call, as far as the looks tell (ms, monotonic). */
static double since(struct cn_look *look, const struct cn_inside *t, const struct cn_inside *first,
		    int n_first, double first_ms)
{
	for (int i = 0; i < look->n; i++)
		if (look->t[i].tid == t->tid && look->t[i].calls == t->calls &&
		    look->t[i].idx == t->idx)
			return look->at_ms;
	for (int i = 0; i < n_first; i++)
		if (first[i].tid == t->tid && first[i].calls == t->calls && first[i].idx == t->idx)
			return first_ms;
	return cn_clock_ms();
}

/* The threads inside a call: the longest-standing one said, and too long for the lock. */
static void threads_inside(struct cn_agent *ag, struct cn_look *look, const struct cn_inside *first,
			   int n_first, double first_ms)
{
	struct cn_inside now[CN_LOOK_MAX];
	double t = cn_clock_ms(), oldest = t;
	int n = cn_gate_inside(now, CN_LOOK_MAX), who = -1;
	char why[300], inside[sizeof(ag->status.inside)] = "";

	for (int i = 0; i < n; i++) {
		double s = since(look, &now[i], first, n_first, first_ms);

		if (s <= oldest) {
			oldest = s;
			who = i;
		}
	}
	if (who >= 0)
		snprintf(inside, sizeof(inside), "thread %d inside %s for at least %.1f s",
			 (int)now[who].tid, cn_lookup_name(now[who].idx), (t - oldest) / 1000);
	cn_report_inside(ag, inside);
	if (who >= 0 && ag->cfg.lock_timeout_ms && t - oldest >= ag->cfg.lock_timeout_ms &&
	    !ag->status.why_not[0]) {
		snprintf(why, sizeof(why),
			 "%s, longer than [lock] timeout_ms (%u ms): a suspend would wait for it "
			 "and fail",
			 inside, ag->cfg.lock_timeout_ms);
		no(ag, why);
	}
	memcpy(look->t, now, sizeof(now[0]) * (size_t)n);
	look->n = n;
	look->at_ms = t;
}

/* Where its memory is now, and how much: "0:8712,1:0". */
static double memory_now(struct cn_agent *ag, const struct cn_resp *r)
{
	char now[sizeof(ag->status.gpu_now)] = "";
	double total = 0;
	size_t o = 0;

	for (uint32_t i = 0; i < r->n_use; i++) {
		int k = cn_uuid_index(r->gpus, (int)r->n_gpus, &r->use[i].uuid);
		double mib = (double)r->use[i].bytes / (1 << 20);

		total += mib;
		o += (size_t)snprintf(now + o, o < sizeof(now) ? sizeof(now) - o : 0, "%s%d:%.0f",
				      o ? "," : "", k, mib);
	}
	cn_report_gpu_now(ag, now, r->n_use ? total : -1, r->model);
	return total;
}

/* Where the host copy would go and how much it has: RAM (or the cgroup), or the disk when it
 * hibernates. */
static void host_space(struct cn_agent *ag, const struct cn_resp *r, double gpu_mib)
{
	const struct cn_config *c = &ag->cfg;
	double need = gpu_mib + gpu_mib / 16 + c->host_margin_mib, have;
	char why[300], bound[sizeof(ag->status.host_bound)];

	if (c->hibernate_dir[0]) {
		uint64_t free_b = cn_hibernate_free_bytes(c->hibernate_dir);

		have = free_b == UINT64_MAX ? -1 : (double)free_b / (1 << 20);
		snprintf(bound, sizeof(bound), "free space in %s", c->hibernate_dir);
	} else {
		/* a host copy kept for a light nap is space for it, as for the lock */
		have = r->host_which[0]
			       ? (double)(r->host_available + ag->held.prepared_bytes +
					  (c->nap_depth != CN_DEPTH_FULL ? cn_hostbuf_held_bytes()
									 : 0)) /
					 (1 << 20)
			       : -1;
		snprintf(bound, sizeof(bound), "%s", r->host_which);
	}
	cn_report_host_room(ag, gpu_mib > 0 ? need : -1, have, bound);
	if (c->host_check && gpu_mib > 0 && have >= 0 && have < need && !ag->status.why_not[0]) {
		snprintf(why, sizeof(why),
			 "its host copy needs %.0f MiB with the margin, and %s has %.0f MiB", need,
			 bound, have);
		no(ag, why);
	}
}

static void estimate(struct cn_agent *ag, double gpu_mib)
{
	const char *model = ag->status.gpu_model;
	bool disk = ag->cfg.hibernate_dir[0] != '\0';
	char src[160], source[sizeof(ag->status.est_source)];
	double gib = gpu_mib / 1024, suspend_s, resume_s;

	if (gpu_mib <= 0) {
		cn_report_estimate(ag, -1, -1, "");
		return;
	}
	suspend_s = cn_rates_estimate(model, disk ? CN_RATE_SUSPEND_DISK : CN_RATE_SUSPEND, gib,
				      source, sizeof(source));
	resume_s = cn_rates_estimate(model, disk ? CN_RATE_RESUME_DISK : CN_RATE_RESUME, gib, src,
				     sizeof(src));
	cn_report_estimate(ag, suspend_s, resume_s, source);
}

static void stamp(struct cn_agent *ag)
{
	cn_report_queried(ag);
}

void cn_query(struct cn_agent *ag, struct cn_look *look)
{
	struct cn_inside first[CN_LOOK_MAX];
	struct cn_route nf;
	unsigned long long call_ns = ag->status.call_ns;
	double t0 = cn_clock_ms(), gpu_mib;
	int n_first = cn_gate_inside(first, CN_LOOK_MAX);
	char why[420], beside[sizeof(ag->status.beside)];
	struct cn_resp r;

	cn_report_ask(ag, CN_ASK_YES, "");
	cn_report_inside(ag, "");
	cn_report_beside(ag, "");
	if (!cn_reload_quietly(ag, why, sizeof(why))) {
		no(ag, why);
		stamp(ag);
		return;
	}
	cn_requests_query(ag, &r);
	cn_report_call_ns(ag, call_ns); /* the last action's, not this */
	if (r.result == CUDA_ERROR_NOT_INITIALIZED) {
		cn_report_ask(ag, CN_ASK_NO_CUDA, "no CUDA state: nothing to suspend");
		stamp(ag);
		return;
	}
	if (r.result != CUDA_SUCCESS) {
		/* the driver's name of its result, or cudanap's own (a driver not loaded) */
		const char *name = r.name[0] ? r.name : cn_outcome_result_name(r.result);

		snprintf(why, sizeof(why), "%s: %s", name ? name : "CUDA_ERROR_UNKNOWN", r.message);
		no(ag, why);
		stamp(ag);
		return;
	}
	cn_state_gpus(&ag->where, &r);
	cn_report_shared(ag);
	if (ag->cfg.peer_off && cn_peers_large(why, sizeof(why)) > 0)
		cn_report_peer_more(ag, " (a suspend turns it off, and it stays off after the "
					"resume: [peer] mode = off)");
	gpu_mib = memory_now(ag, &r);
	if (r.state == CN_STATE_RUNNING)
		cn_report_gpus_using(ag, r.use, r.n_use);
	cn_beside_describe(&ag->cfg, &r, ag->status.restores, beside, sizeof(beside));
	cn_report_beside(ag, beside);
	cn_requests_know_gpus(ag);
	if (r.state == CN_STATE_CHECKPOINTED) {
		cn_report_ask(ag, CN_ASK_ASLEEP, "suspended already");
	} else if (r.state != CN_STATE_RUNNING) {
		no(ag, r.state == CN_STATE_LOCKED ? "its CUDA is locked" : "its CUDA has failed");
	} else if (cn_preflight_suspend(&ag->cfg, &ag->where, cn_route_facts(&ag->cfg, &nf), why,
					sizeof(why)) < 0) {
		no(ag, why);
	}
	host_space(ag, &r, gpu_mib);
	threads_inside(ag, look, first, n_first, t0);
	estimate(ag, gpu_mib);
	stamp(ag);
}
