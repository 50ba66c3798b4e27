/* prepare: notice of a suspend to come (cudanap prepare): the next checkpoint's host copy faulted
 * in now and held a while, so that the suspend only copies; and given back when it is not used in
 * time. Runs in the agent thread. */
#define _GNU_SOURCE
#include "agent/prepare.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "cn_hostmem.h"
#include "agent/log.h"
#include "agent/preflight.h"
#include "agent/reload.h"
#include "agent/report.h"
#include "agent/route.h"
#include "agent/requests.h"
#include "hostcopy/staging.h"
#include "agent/state.h"

/* A prepared host copy is given back: before another is made, or not used in time. */
static void release(struct cn_agent *ag)
{
	cn_state_unprepare(&ag->held);
	cn_report_prepared(ag, false, -1);
}

/* Notice of a suspend to come (cudanap prepare): fault the host copy in now, within the host
 * memory check, and hold it for [performance] prepare_s, so that the suspend only copies. Asked
 * again, it starts over, sized to what the process holds then. It stages in RAM: the host's free
 * memory is what is checked, whatever the last suspend went to. */
struct cn_outcome cn_prepare(struct cn_agent *ag)
{
	struct cn_requests_disk disk = { .to_disk = false, .free_bytes = 0 };
	struct cn_staging_stats ss;
	struct cn_route nf;
	struct cn_resp r;
	char msg[320];
	uint64_t need = 0;
	int e;

	cn_report_begin(ag, CN_ACTION_PREPARE);
	if (!cn_reload(ag) || !cn_requests_state(ag, &r))
		return cn_report_outcome(ag);
	if (r.state != CN_STATE_RUNNING) {
		snprintf(msg, sizeof(msg), "%s: nothing to prepare",
			 r.state == CN_STATE_CHECKPOINTED ? "already suspended" : "not running");
		return cn_report_already(ag, &r, msg);
	}
	msg[0] = '\0';
	if (!ag->cfg.prepare_s)
		snprintf(msg, sizeof(msg), "prepare is off ([performance] prepare_s = 0)");
	else if (ag->cfg.hibernate_dir[0])
		snprintf(msg, sizeof(msg),
			 "the host copy goes to disk ([hibernate] dir): nothing to prepare in RAM");
	cn_requests_know_gpus(ag);
	if (msg[0] || cn_preflight_suspend(&ag->cfg, &ag->where, cn_route_facts(&ag->cfg, &nf), msg,
					   sizeof(msg)) < 0) {
		r.result = CN_RES_REFUSED;
		return cn_report_finish(ag, &r, msg);
	}
	release(ag); /* the host check must not count our own buffer as taken */
	cn_report_publish(ag);
	if (cn_requests_prepare(ag, &disk, &r) < 0 || r.n_use == 0) {
		bool unknown = r.result == CN_RES_OK;

		if (unknown)
			r.result = CN_RES_FOOTPRINT;
		snprintf(msg, sizeof(msg), "%s; nothing prepared", unknown ? r.note : r.message);
		return cn_report_finish(ag, &r, msg);
	}
	for (uint32_t i = 0; i < r.n_use; i++)
		need += r.use[i].bytes;
	cn_state_remember(&ag->where, &r);
	cn_report_gpus(ag, false);
	/* The driver's copy is about 1.06 x the footprint (docs/DRIVER.md, The checkpoint): room
	 * for 1/16 more. */
	e = cn_staging_prepare(cn_hostmem_checkpoint_bytes(need), ag->held.thp && ag->cfg.hugepages,
			       ag->cfg.prefault_threads, &ss);
	if (e < 0) {
		r.result = CN_RES_NO_HOST;
		snprintf(msg, sizeof(msg), "cannot map %llu MiB: %s; nothing prepared",
			 (unsigned long long)((cn_hostmem_checkpoint_bytes(need)) >> 20), strerror(-e));
		return cn_report_finish(ag, &r, msg);
	}
	ag->held.prepared_bytes = ss.bytes;
	ag->held.prepared_until = cn_clock_ms() + ag->cfg.prepare_s * 1000.0;
	cn_report_prepared(ag, true, (double)ss.bytes / (1 << 20));
	cn_report_figure(ag, CN_REPORT_STAGED_MIB, (double)ss.bytes / (1 << 20));
	cn_report_figure(ag, CN_REPORT_PREFAULT_MS, ss.prefault_ms);
	cn_report_step_ms(ag, CN_STEP_PREPARE, ss.prefault_ms);
	snprintf(msg, sizeof(msg), "prepared: %.0f MiB of host memory held for %u s",
		 ag->status.host_mib, ag->cfg.prepare_s);
	return cn_report_finish(ag, &r, msg);
}

/* The prepared copy was not used in time: give it back, and say so. */
void cn_prepare_expired(struct cn_agent *ag)
{
	double mib = (double)ag->held.prepared_bytes / (1 << 20);

	release(ag);
	cn_report_message(ag,
			  "prepared host copy (%.0f MiB) given back after %u s without a suspend",
			  mib, ag->cfg.prepare_s);
	cn_report_publish(ag);
	cn_log(&ag->cfg, CN_LOG_INFO, "%s", ag->status.message);
}
