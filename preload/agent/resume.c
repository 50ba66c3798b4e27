/* resume: the resume, top to bottom: the INI read again, the host copy read back, the restore onto
 * the map's GPUs, the unlock, the gate open (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/resume.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cn_gpumap.h"
#include "cn_words.h"
#include "nccl/comms.h"
#include "cuda_abi.h"
#include "cuda/gate.h"
#include "hostcopy/hibernate.h"
#include "cuda/hostbuf.h"
#include "cuda/light.h"
#include "agent/cache.h"
#include "agent/log.h"
#include "agent/nccl.h"
#include "cuda/peers.h"
#include "agent/rates.h"
#include "agent/reload.h"
#include "agent/report.h"
#include "agent/requests.h"
#include "agent/room.h"
#include "hostcopy/staging.h"
#include "agent/state.h"

/* The map of this resume, into map: the one given (a nap's wake), a one-shot `cudanap resume
 * --gpu-map` left, else the INI's. False when the one-shot is broken (checked by the CLI, but the
 * file is the process's to trust or not): the resume is over, and reported. */
static bool this_map(struct cn_agent *ag, const struct cn_gpumap *given, struct cn_gpumap *map)
{
	char text[CN_ERR_LEN], err[CN_ERR_LEN], msg[CN_ERR_LEN + 64];

	*map = given ? *given : ag->cfg.gpu_map;
	if (given || cn_requests_take(ag, CN_NOTE_GPU_MAP, text, sizeof(text)) < 0 ||
	    cn_gpumap_parse(text, map, err, sizeof(err)) == 0)
		return true;
	snprintf(msg, sizeof(msg), "--gpu-map: %s; still suspended", err);
	cn_report_fail(ag, CN_RES_BAD_MAP, msg);
	return false;
}

/* The restore, tried again every 100 ms while the target GPUs lack room or run a process that a
 * restored NCCL job must not share them with (beside.c), for wait_ms ([restore] room_wait_s: a
 * scheduler resuming one job as it suspends another on the same GPUs; a wake waiting for room,
 * nap.c): the controller refuses before the driver's call, so trying again is safe. The wait step
 * is then all that came before the last try's call. */
static int restore(struct cn_agent *ag, const struct cn_gpumap *map, struct cn_resp *r,
		   unsigned wait_ms)
{
	double t0 = cn_clock_ms(), until = t0 + wait_ms;
	int rc, tries = 0;

	while ((rc = cn_requests_restore(ag, map, r)) < 0 &&
	       (r->result == CN_RES_NO_ROOM || r->result == CN_RES_BESIDE) &&
	       cn_clock_ms() < until) {
		struct timespec tick = { 0, 100 * 1000 * 1000 };

		tries++;
		nanosleep(&tick, NULL);
	}
	if (tries)
		cn_report_step_ms(ag, CN_STEP_WAIT, cn_clock_ms() - t0 - r->elapsed_ms);
	return rc;
}

/* The app's driver calls that waited while the process slept go on now that it runs. */
static void gate_open(struct cn_agent *ag)
{
	unsigned long held;
	double longest;

	cn_gate_held(&held, &longest);
	if (!cn_nccl_hold_app())
		cn_gate_open();
	if (held)
		cn_log(&ag->cfg, CN_LOG_DEBUG,
		       "%lu driver call%s of the app's waited while it slept (the longest %.2f s)",
		       held, held == 1 ? "" : "s", longest / 1000);
}

/* The last step: the NCCL communicators resumed with the job's other ranks, if suspended. */
static struct cn_outcome comms_resume(struct cn_agent *ag, struct cn_resp *r, bool wake)
{
	char msg[420];

	if (cn_nccl_resume(&ag->cfg, r, msg, sizeof(msg)) < 0)
		return cn_report_finish(ag, r, msg);
	return cn_report_finish(ag, r, wake ? "woke" : "resumed");
}

/* A hibernated copy read back into RAM. -1 when it could not be: the process stays asleep. */
static int read_back(struct cn_agent *ag, struct cn_resp *r)
{
	char msg[360];
	double ms;

	if (cn_hibernate_readback(ag->held.hib_addr, ag->held.hib_len, ag->cfg.prefault_threads,
				  &ms, msg, sizeof(msg)) == 0) {
		cn_report_step_ms(ag, CN_STEP_READBACK, ms);
		return 0;
	}
	r->result = CN_RES_READBACK;
	snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
		 "; still suspended, the file kept while the process lives");
	cn_report_finish(ag, r, msg);
	return -1;
}

/* The GPUs a restore moved, each from where it was to where it is now, for the peer access the
 * app turned on between them (cuda/peers.c), before the agent forgets where they were. */
static void peers_follow(struct cn_agent *ag, const struct cn_resp *r)
{
	struct cn_uuid was[CN_MAX_GPUS], now[CN_MAX_GPUS];
	int n = 0;

	for (uint32_t g = 0; g < r->n_gpus && g < CN_MAX_GPUS; g++) {
		was[n] = r->gpus[g];
		cn_state_follow(&ag->where, r, &r->gpus[g], &now[n]);
		n += !cn_uuid_eq(&was[n], &now[n]);
	}
	if (n)
		cn_peers_moved(was, now, n);
}

/* The restore onto the map's GPUs. A controller that died mid-restore may have left the process
 * restored and locked: then the unlock that follows finishes the resume. -1 when it did not
 * restore: reported, the process still asleep. */
static int restore_step(struct cn_agent *ag, const struct cn_gpumap *map, struct cn_resp *r,
			unsigned wait_ms)
{
	char msg[320];

	if (restore(ag, map, r, wait_ms) < 0 &&
	    !(r->result == CN_RES_CONTROLLER_GONE && r->state == CN_STATE_LOCKED)) {
		snprintf(msg, sizeof(msg), "restore: %s%s", r->message,
			 r->result == CN_RES_NO_ROOM
				 ? "; still suspended: resume again when there is room"
			 : r->result == CN_RES_BESIDE
				 ? "; still suspended: resume it once that process sleeps or "
				   "has ended, or onto other GPUs"
				 : "");
		cn_report_finish(ag, r, msg);
		return -1;
	}
	cn_report_step(ag, CN_STEP_RESTORE, r);
	cn_report_count(ag, CN_REPORT_RESTORES);
	/* A controller that died mid-restore left no word of where: the last is kept. */
	if (r->result == CUDA_SUCCESS) {
		peers_follow(ag, r);
		cn_state_moved(&ag->where, r);
	}
	cn_report_figure(ag, CN_REPORT_RESERVE_MS, r->check_ms + r->hold_ms);
	cn_log(&ag->cfg, CN_LOG_DEBUG,
	       "restore: %.1f ms checking room, %.1f ms holding memory, %.1f ms in the driver",
	       r->check_ms, r->hold_ms, r->elapsed_ms - ag->status.reserve_ms);
	return 0;
}

/* After the unlock, before the app's calls go on: the peer access a suspend turned off is asked
 * for again. After a restore driver 580 refuses it (docs/DRIVER.md): it stays off, said in the log
 * (and in the status), and from then on the app is told that its GPUs cannot access each other,
 * unless every direction came back. */
static void peers_again(struct cn_agent *ag, bool restored)
{
	int dropped = cn_peers_dropped(), off = 0;
	char why[200], which[300];

	if (dropped)
		off = cn_peers_raise(why, sizeof(why));
	if (restored && (!dropped || off))
		cn_peers_restored();
	if (!off)
		return;
	cn_peers_describe(ag->where.gpus, (int)ag->where.n_gpus, which, sizeof(which));
	cn_log(&ag->cfg, CN_LOG_INFO,
	       "peer access between its GPUs stays off after the resume (%s): %s: the driver "
	       "cannot "
	       "give it back after a restore; copies between them go through the host",
	       which, why);
}

/* After the unlock: the app's calls go on, the host copy is given back. */
static void running_again(struct cn_agent *ag, bool restored)
{
	struct cn_staging_stats ss;

	peers_again(ag, restored);
	gate_open(ag);
	if (ag->held.hib_addr) {
		/* The driver unmapped its copy after the restore: the file goes with its fd. */
		cn_hibernate_close();
		ag->held.hib_addr = NULL;
		ag->held.hib = false;
	}
	cn_staging_unmap_stats(&ss);
	if (ss.bytes)
		cn_report_figure(ag, CN_REPORT_UNMAP_MS, ss.unmap_ms);
	cn_report_gpus(ag, false);
}

/* A light nap's host copy put back (after the restore of a deepened one too): the app's calls
 * go on once it is all back. Without room for all of it, the result says so and the gate stays
 * closed: what is back stays, the rest waits for the next try. */
static struct cn_outcome light_back(struct cn_agent *ag, struct cn_resp *r, unsigned wait_ms,
				    bool restored)
{
	struct cn_light_stats ls;
	char why[300], msg[420];
	/* kept for the next nap ([nap] keep_host_copy, the cache's share, the host's free memory),
	 * not when leaving */
	bool keep = !cn_gate_leaving() && cn_cache_may_keep(ag, cn_light_left(-1));
	int rc = cn_light_in(keep, wait_ms, cn_room_coming, &ls, why, sizeof(why));

	r->state = CN_STATE_RUNNING;
	ag->held.light_restored |= restored;
	if (rc != 0) {
		r->result = rc > 0 ? CN_RES_NO_ROOM : CN_RES_REFUSED;
		snprintf(msg, sizeof(msg), "%s", why);
		return cn_report_finish(ag, r, msg);
	}
	cn_report_figure(ag, CN_REPORT_LIGHT_MIB, -1);
	r->result = CUDA_SUCCESS;
	/* woken in an exit handler: the copy let go before the exit goes on (else after the wake,
	 * the app's calls going on: nap.c) */
	if (cn_gate_leaving())
		cn_hostbuf_let_go_unkept(CN_HOSTBUF_NOW);
	running_again(ag, ag->held.light_restored);
	ag->held.light_restored = false;
	snprintf(msg, sizeof(msg), "woken: %.0f MiB back from the host in %.1f ms (%.1f GB/s)%s",
		 (double)ls.bytes / (1 << 20), ls.ms,
		 ls.ms > 0 ? (double)ls.bytes / ls.ms / 1e6 : 0.0,
		 keep ? "; its host copy kept for the next nap" : "");
	return cn_report_finish(ag, r, msg);
}

struct cn_outcome cn_resume(struct cn_agent *ag)
{
	return cn_resume_as(ag, false, NULL, 0);
}

struct cn_outcome cn_resume_as(struct cn_agent *ag, bool wake, const struct cn_gpumap *given,
			       unsigned wake_wait_ms)
{
	struct cn_status before = ag->status;
	bool from_disk = ag->held.hib_addr != NULL, restored;
	struct cn_gpumap map;
	struct cn_outcome o;
	struct cn_resp r;
	char msg[320];

	cn_report_begin(ag, wake ? CN_ACTION_WAKE : CN_ACTION_RESUME);
	if (!cn_reload(ag) || !this_map(ag, given, &map) || !cn_requests_state(ag, &r))
		return cn_report_outcome(ag);
	if (r.state == CN_STATE_RUNNING && cn_comms_suspended()) {
		/* Running, its communicators waiting for the job: a resume that failed to meet the
		 * other ranks, or a suspend that failed after them. */
		cn_report_publish(ag);
		return comms_resume(ag, &r, wake);
	}
	if (r.state == CN_STATE_RUNNING && cn_light_holding()) {
		cn_report_publish(ag);
		return light_back(ag, &r, wake ? wake_wait_ms : ag->cfg.room_wait_s * 1000, false);
	}
	if (r.state == CN_STATE_RUNNING) {
		if (cn_report_redundant(ag, &before, &r, "already running"))
			return cn_report_outcome(ag);
		return cn_report_already(ag, &r, "already running");
	}
	cn_report_publish(ag);
	restored = r.state == CN_STATE_CHECKPOINTED;
	if (r.state == CN_STATE_CHECKPOINTED && ag->held.hib_addr && read_back(ag, &r) < 0)
		return cn_report_outcome(ag);
	if (r.state == CN_STATE_CHECKPOINTED &&
	    restore_step(ag, &map, &r, wake ? wake_wait_ms : ag->cfg.room_wait_s * 1000) < 0)
		return cn_report_outcome(ag);
	if (cn_requests_call(ag, CN_OP_UNLOCK, &r) < 0) {
		snprintf(msg, sizeof(msg), "unlock: %s", r.message);
		return cn_report_finish(ag, &r, msg);
	}
	cn_report_step(ag, CN_STEP_UNLOCK, &r);
	if (cn_light_holding()) /* a deepened light nap: its host copy goes back too */
		return light_back(ag, &r, wake ? wake_wait_ms : ag->cfg.room_wait_s * 1000, true);
	running_again(ag, restored);
	o = comms_resume(ag, &r, wake);
	if (o.result == CN_RES_OK)
		cn_rates_record(ag->where.model, from_disk ? CN_RATE_RESUME_DISK : CN_RATE_RESUME,
				ag->status.footprint_mib / 1024, ag->status.total_ms / 1000);
	return o;
}
