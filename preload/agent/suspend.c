/* suspend: the suspend, top to bottom: the checks, the gate closed, the lock, the checkpoint into a
 * fast host copy or the hibernate file (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/suspend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "nccl/comms.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/gate.h"
#include "hostcopy/hibernate.h"
#include "cuda/light.h"
#include "cuda/owned.h"
#include "agent/log.h"
#include "agent/nccl.h"
#include "agent/preflight.h"
#include "cuda/peers.h"
#include "agent/rates.h"
#include "agent/reload.h"
#include "agent/report.h"
#include "agent/route.h"
#include "agent/requests.h"
#include "hostcopy/staging.h"
#include "agent/state.h"

/* After the checkpoint, with the host copy in the hibernate file: synced, then out of RAM. The
 * hibernate step is all of it, from the checkpoint's end until the RAM is free: the writer's last
 * write-back (which can wait on a busy disk), the sync, the page-out and the counting. */
static void hibernate_after(struct cn_agent *ag, int rc, const struct cn_staging_stats *ss)
{
	struct cn_hibernate_stats hs;
	double t0 = cn_clock_ms(), stop_ms;
	char err[300];

	cn_hibernate_writer_stop();
	stop_ms = cn_clock_ms() - t0;
	if (rc < 0 || !ss->file) {
		if (rc == 0 && ss->bytes)
			snprintf(ag->held.hib_note, sizeof(ag->held.hib_note),
				 "no room for the %.0f MiB copy in %s (%s): it stays in RAM",
				 (double)ss->bytes / (1 << 20), cn_hibernate_dir(),
				 strerror(ss->file_err ? ss->file_err : EIO));
		cn_hibernate_close();
		return;
	}
	if (cn_hibernate_settle(ss->addr, ss->bytes, &hs, err, sizeof(err)) < 0) {
		snprintf(ag->held.hib_note, sizeof(ag->held.hib_note), "%s", err);
		if (cn_hibernate_fd() < 0) {
			cn_report_step_ms(ag, CN_STEP_HIBERNATE, cn_clock_ms() - t0);
			return; /* moved into RAM */
		}
	}
	/* what the status says of it, host_mib and disk_mib, the outcome measures (report.c) */
	ag->held.hib_addr = ss->addr;
	ag->held.hib_len = ss->bytes;
	cn_report_step_ms(ag, CN_STEP_HIBERNATE, cn_clock_ms() - t0);
	cn_log(&ag->cfg, CN_LOG_DEBUG,
	       "hibernate: %.0f MiB in %s, %.1f ms for the write-back under way, %.1f ms to sync, "
	       "%.1f ms to page out; %.1f MiB left in RAM",
	       (double)ss->bytes / (1 << 20), cn_hibernate_dir(), stop_ms, hs.write_ms,
	       hs.pageout_ms, (double)cn_hibernate_resident(ss->addr, ss->bytes) / (1 << 20));
}

/* The checkpoint call, with the host copy staged in huge pages when the INI asks for it, or in
 * the hibernate file. */
static int checkpoint(struct cn_agent *ag, struct cn_resp *r)
{
	struct cn_staging_stats ss;
	int rc;

	if (!ag->cfg.hugepages && !ag->held.hib) {
		ag->held.copy_bytes = 0; /* the driver's own mapping, not seen */
		return cn_requests_checkpoint(ag, r);
	}
	if (ag->cfg.hugepages && !ag->held.thp && !ag->held.thp_said) {
		ag->held.thp_said = true;
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "transparent huge pages are off on this host ([never]): staging the host "
		       "copy in 4 KiB pages");
	}
	cn_staging_arm(ag->held.thp && ag->cfg.hugepages,
		       ag->cfg.hugepages ? ag->cfg.prefault_threads : 0, ag->cfg.keep_host_buffer,
		       ag->held.hib ? cn_hibernate_fd() : -1);
	if (ag->held.hib)
		cn_hibernate_writer_start();
	rc = cn_requests_checkpoint(ag, r);
	cn_staging_disarm(&ss);
	ag->held.copy_bytes = ss.bytes;
	if (ag->held.hib)
		hibernate_after(ag, rc, &ss);
	if (ss.bytes) {
		cn_report_figure(ag, CN_REPORT_STAGED_MIB, (double)ss.bytes / (1 << 20));
		cn_report_figure(ag, CN_REPORT_PREFAULT_MS, ss.prefault_ms);
		cn_log(&ag->cfg, CN_LOG_DEBUG,
		       "host copy: %.0f MiB%s%s%s, %u prefault threads, %.1f ms",
		       ag->status.staged_mib, ss.file ? ", in the hibernate file" : "",
		       ss.huge ? ", huge pages" : "",
		       ss.reused ? ", in a kept or prepared buffer" : "", ss.threads,
		       ss.prefault_ms);
	}
	return rc;
}

/* A suspend's parameters, made once at its start and passed to its steps: a nap (nap.c) or not,
 * a light one or not, and how long its lock may wait in all (0: [lock] timeout_ms); and what its
 * steps did that a failure must undo. */
struct how {
	bool nap, light;
	bool disk; /* a nap's copy to [hibernate] dir: [nap] to = disk, or auto without host room */
	unsigned lock_limit_ms;
	/* the lock's wait: what the gate's wait left of lock_budget (0: for ever) */
	unsigned lock_ms;
	bool peers_off; /* peer access it turned off ([peer] mode = off), on again if it runs on */
};

/* What the gate's wait and the lock may take in all: [lock] timeout_ms, or a nap's less. */
static unsigned lock_budget(struct cn_agent *ag, const struct how *h)
{
	unsigned t = ag->cfg.lock_timeout_ms;

	return h->lock_limit_ms && (!t || h->lock_limit_ms < t) ? h->lock_limit_ms : t;
}

/* Where this suspend's copy goes: the directory `cudanap suspend --to-disk[=DIR]` left in
 * <pid>.hibernate beside the status file (read once, removed), else the INI's [hibernate] dir;
 * for a nap, [hibernate] dir when it goes to disk (h->disk), else RAM. Its file opened now. -1 with msg
 * when asked for and impossible: the suspend is refused. */
static int hibernate_setup(struct cn_agent *ag, const struct how *h, char *msg, size_t len)
{
	char dir[PATH_MAX];
	int n;

	ag->held.hib = false;
	ag->held.hib_note[0] = '\0';
	snprintf(dir, sizeof(dir), "%s",
		 !h->nap || h->disk ? ag->cfg.hibernate_dir : "");
	n = h->nap ? -1 : cn_requests_take(ag, "hibernate", dir, sizeof(dir));
	if (n == 0)
		snprintf(dir, sizeof(dir), "%s", ag->cfg.hibernate_dir);
	if (n >= 0 && !dir[0]) {
		snprintf(msg, len,
			 "--to-disk: no directory given and none in [hibernate] dir; the process "
			 "keeps running");
		return -1;
	}
	if (!dir[0]) {
		cn_hibernate_close();
		return 0;
	}
	if (cn_hibernate_open(dir, msg, len) < 0) {
		snprintf(msg + strlen(msg), len - strlen(msg), "; the process keeps running");
		return -1;
	}
	ag->held.hib = true;
	ag->held.hib_free = cn_hibernate_free_bytes(dir);
	return 0;
}

/* After a failed step of a suspend: let the process run on. */
static void unlock_after(struct cn_agent *ag, struct cn_resp *r, char *msg, size_t len)
{
	struct cn_resp u;

	cn_requests_call(ag, CN_OP_UNLOCK, &u);
	cn_report_step(ag, CN_STEP_UNLOCK, &u);
	if (u.result != CUDA_SUCCESS)
		snprintf(msg + strlen(msg), len - strlen(msg), "; unlock after it failed too: %s",
			 u.name);
	r->state = u.state;
}

/* The gate closes: from now on no call of the app's enters libcuda, and those inside return
 * within [lock] timeout_ms, whose rest is left to the lock. -1 with msg when one stays inside:
 * the gate is open again. */
static int close_gate(struct cn_agent *ag, struct how *h, struct cn_resp *r, char *msg, size_t len)
{
	unsigned t = lock_budget(ag, h);
	char why[160], paths[400];
	double ms;

	cn_lookup_summary(paths, sizeof(paths));
	cn_log(&ag->cfg, CN_LOG_DEBUG, "%s", paths);
	if (cn_gate_close_drained(t, &ms, why, sizeof(why)) < 0) {
		if (cn_light_holding())
			cn_gate_close_now(); /* a light nap's: closed while its memory is on the
						host */
		r->result = CUDA_ERROR_NOT_READY;
		r->state = CN_STATE_RUNNING;
		r->name[0] = '\0';
		snprintf(msg, len,
			 "%s for %u ms (%s): GPU work still running; the process keeps running",
			 why, t, h->lock_limit_ms ? "a nap's lock" : "[lock] timeout_ms");
		return -1;
	}
	h->lock_ms = !t ? 0 : ms + 1 >= t ? 1 : t - (unsigned)ms;
	if (ms >= 1)
		cn_log(&ag->cfg, CN_LOG_DEBUG, "the app's driver calls returned in %.1f ms", ms);
	return 0;
}

/* With the gate closed no call of the app's turns peer access on any more: a process that holds
 * it is refused now ([peer] mode = refuse), or has it turned off ([peer] mode = off), for the
 * resume to ask for it again. -1 with msg: the process runs on. */
static int peers(struct cn_agent *ag, struct how *h, struct cn_resp *r, char *msg, size_t len)
{
	char why[200], which[300];

	h->peers_off = false;
	if (cn_preflight_peers(&ag->cfg, &ag->where, msg, len) < 0) {
		r->result = CN_RES_REFUSED;
		return -1;
	}
	if (!cn_peers_large(why, sizeof(why)))
		return 0;
	cn_peers_describe(ag->where.gpus, (int)ag->where.n_gpus, which, sizeof(which));
	if (cn_peers_drop(why, sizeof(why)) < 0) {
		r->result = CN_RES_REFUSED;
		snprintf(msg, len,
			 "peer access between its GPUs (%s) could not be turned off: %s; the "
			 "process keeps running",
			 which, why);
		return -1;
	}
	h->peers_off = true;
	cn_log(&ag->cfg, CN_LOG_DEBUG, "peer access turned off for the suspend: %s", which);
	return 0;
}

/* The process runs on without a checkpoint: the peer access this suspend turned off is on again
 * (the driver gives it back to a process it did not restore). */
static void peers_back(struct cn_agent *ag, struct how *h)
{
	if (h->peers_off && cn_peers_raise(NULL, 0) > 0)
		cn_log(&ag->cfg, CN_LOG_ERROR,
		       "peer access between its GPUs could not be turned on again after the failed "
		       "suspend");
	h->peers_off = false;
}

/* After a failed step that came after the communicators' suspend. */
static void comms_stay(char *msg, size_t len)
{
	if (cn_comms_suspended())
		snprintf(msg + strlen(msg), len - strlen(msg),
			 "; its NCCL communicators stay suspended until the job is resumed");
}

struct cn_outcome cn_suspend(struct cn_agent *ag)
{
	return cn_suspend_as(ag, false, 0);
}

/* The checks before anything is done, for a running process: the preflight (a nap's too), the
 * space for the host copy on disk. -1 with msg when the suspend is refused. */
static int refused(struct cn_agent *ag, const struct how *h, char *msg, size_t len)
{
	struct cn_route nf;

	cn_requests_know_gpus(ag);
	return (h->nap && cn_preflight_nap(cn_route_facts(&ag->cfg, &nf), msg, len) < 0) ||
			       cn_preflight_suspend(&ag->cfg, &ag->where,
						    cn_route_facts(&ag->cfg, &nf), msg, len) < 0 ||
			       hibernate_setup(ag, h, msg, len) < 0
		       ? -1
		       : 0;
}

/* The lock, for a running process whose gate is closed. -1 with msg when it failed: the process
 * is unlocked again if the lock was had. */
static int lock(struct cn_agent *ag, struct how *h, struct cn_resp *r, char *msg, size_t len)
{
	struct cn_requests_disk disk = { .to_disk = ag->held.hib, .free_bytes = ag->held.hib_free };

	if (cn_requests_lock(ag, h->lock_ms, &disk, h->light ? cn_owned_bytes() : 0, r) == 0) {
		cn_report_step(ag, CN_STEP_LOCK, r);
		return 0;
	}
	if (r->result == CUDA_ERROR_NOT_READY)
		snprintf(msg, len,
			 "lock timed out after %u ms: GPU work still running (%s); the process "
			 "keeps running",
			 lock_budget(ag, h), h->nap ? "a nap's lock" : "[lock] timeout_ms");
	else if (r->result == CN_RES_NO_HOST || r->result == CN_RES_NO_DISK)
		snprintf(msg, len, "%s; the process keeps running", r->message);
	else
		snprintf(msg, len, "lock: %s", r->message);
	if (r->state == CN_STATE_LOCKED)
		unlock_after(ag, r, msg, len);
	if (r->state == CN_STATE_RUNNING) /* the driver holds a locked process's calls */
		peers_back(ag, h);
	comms_stay(msg, len);
	return -1;
}

/* After a failed checkpoint. The driver leaves the process LOCKED after one (measured with
 * managed memory: docs/DRIVER.md): it is unlocked, so that it runs on; a controller that died
 * mid-checkpoint may have left it done, and then it stays. */
static struct cn_outcome checkpoint_failed(struct cn_agent *ag, struct how *h, struct cn_resp *r,
					   char *msg, size_t len)
{
	snprintf(msg, len, "checkpoint: %s%s", r->message,
		 r->result == CUDA_ERROR_NOT_SUPPORTED ? " (the driver cannot checkpoint a process "
							 "that uses managed memory, CUDA IPC, MIG "
							 "or MPS)"
						       : "");
	if (r->state != CN_STATE_CHECKPOINTED)
		unlock_after(ag, r, msg, len);
	if (r->state == CN_STATE_RUNNING)
		peers_back(ag, h);
	comms_stay(msg, len);
	return cn_report_finish(ag, r, msg);
}

/* After the checkpoint: where the memory was, the outcome, the estimates' sample. */
static struct cn_outcome suspended(struct cn_agent *ag, const struct how *h, bool was_prepared,
				   struct cn_resp *r)
{
	struct cn_outcome o;
	char msg[420];

	cn_report_step(ag, CN_STEP_CHECKPOINT, r);
	if (cn_light_holding())
		cn_report_nap_depth(ag, CN_DEPTH_FULL);
	cn_state_remember(&ag->where, r);
	cn_report_gpus(ag, true);
	cn_report_figure(ag, CN_REPORT_FOOTPRINT_MIB, cn_state_footprint_mib(&ag->where));
	if (r->note[0])
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "free GPU memory will not be checked before the restore: %s", r->note);
	if (ag->held.hib_note[0]) {
		cn_log(&ag->cfg, CN_LOG_ERROR, "hibernate: %s", ag->held.hib_note);
		snprintf(msg, sizeof(msg), "suspended; hibernate: %s", ag->held.hib_note);
	} else {
		snprintf(msg, sizeof(msg), ag->held.hib_addr ? "%s to %s" : "%s",
			 h->nap ? "napped" : "suspended", cn_hibernate_dir());
	}
	o = cn_report_finish(ag, r, msg);
	if (!was_prepared) /* a prepared one only copies: not what the estimates are for */
		cn_rates_record(ag->where.model,
				ag->held.hib_addr ? CN_RATE_SUSPEND_DISK : CN_RATE_SUSPEND,
				ag->status.footprint_mib / 1024, ag->status.total_ms / 1000);
	return o;
}

/* Asleep already: a nap that wakes by itself, or a suspend. */
static struct cn_outcome already(struct cn_agent *ag, const struct cn_status *before,
				 const struct cn_resp *r)
{
	const char *why = cn_outcome_nap_asleep(ag->status.nap)
				  ? "napping already: it wakes at its next CUDA call that needs "
				    "the GPU (cudanap resume wakes it now)"
				  : "already suspended";

	if (cn_report_redundant(ag, before, r, why))
		return cn_report_outcome(ag);
	return cn_report_already(ag, r, why);
}

/* What every suspend does first: its action begun, the INI read again, the driver's state asked,
 * the checks before anything is done. 0 to go on; -1 with *o its outcome (asleep already,
 * refused, a failure). */
static int opening(struct cn_agent *ag, const struct how *h, struct cn_resp *r,
		   struct cn_outcome *o)
{
	struct cn_status before = ag->status;
	char msg[420];

	cn_report_begin(ag, h->nap ? CN_ACTION_NAP : CN_ACTION_SUSPEND);
	ag->held.hib = false; /* set again by hibernate_setup, for this suspend only */
	if (!cn_reload(ag) || !cn_requests_state(ag, r)) {
		*o = cn_report_outcome(ag);
		return -1;
	}
	/* A light nap's host copy held: asleep already for another light nap, deepened by the
	 * others */
	if (r->state == CN_STATE_CHECKPOINTED || (h->light && cn_light_holding())) {
		*o = already(ag, &before, r);
		return -1;
	}
	if (r->state == CN_STATE_RUNNING && refused(ag, h, msg, sizeof(msg)) < 0) {
		r->result = CN_RES_REFUSED;
		*o = cn_report_finish(ag, r, msg);
		return -1;
	}
	cn_report_publish(ag);
	return 0;
}

struct cn_outcome cn_suspend_light(struct cn_agent *ag, unsigned lock_limit)
{
	struct how h = { .nap = true, .light = true, .lock_limit_ms = lock_limit };
	struct cn_light_stats ls;
	struct cn_outcome o;
	struct cn_resp r, u;
	char msg[420], why[300];
	int rc;

	if (opening(ag, &h, &r, &o) < 0)
		return o;
	if (r.state != CN_STATE_RUNNING) {
		snprintf(msg, sizeof(msg), "its CUDA is not running: not napped");
		return cn_report_finish(ag, &r, msg);
	}
	/* The lock waits for its GPU work, as a nap's does; let go at once, the gate holds the
	 * app's calls. */
	if (close_gate(ag, &h, &r, msg, sizeof(msg)) < 0 || lock(ag, &h, &r, msg, sizeof(msg)) < 0)
		return cn_report_finish(ag, &r, msg);
	cn_requests_call(ag, CN_OP_UNLOCK, &u);
	cn_report_step(ag, CN_STEP_UNLOCK, &u);
	r.state = u.state;
	if (u.result != CUDA_SUCCESS) {
		snprintf(msg, sizeof(msg), "unlock after the lock: %s", u.message);
		return cn_report_finish(ag, &r, msg);
	}
	rc = cn_light_out(&ls, why, sizeof(why));
	if (rc < 0 && !cn_light_holding()) {
		r.result = CN_RES_REFUSED;
		snprintf(msg, sizeof(msg), "light nap: %s; the process keeps running", why);
		return cn_report_finish(ag, &r, msg);
	}
	if (rc < 0) {
		/* A copy failed and not all could be put back: it naps, its wake puts the rest
		 * back. */
		cn_report_nap_depth(ag, CN_DEPTH_LIGHT);
		cn_report_figure(ag, CN_REPORT_LIGHT_MIB, (double)cn_light_left(-1) / (1 << 20));
		snprintf(msg, sizeof(msg), "napped lightly after a failure: %s", why);
		cn_log(&ag->cfg, CN_LOG_ERROR, "light nap: %s", why);
		return cn_report_finish(ag, &r, msg);
	}
	cn_report_nap_depth(ag, CN_DEPTH_LIGHT);
	cn_log(&ag->cfg, CN_LOG_INFO,
	       "light nap: %.0f MiB in %zu pieces to the %s in %.1f ms: %.1f ms laying it out (%.1f "
	       "taking the ready copy), "
	       "%.1f ms waiting for %u thread%s that fault in and pin the host copy (%.1f ms of "
	       "their time pinning), %.1f ms issuing the copies; beside them %.1f ms waiting for "
	       "them and %.1f ms giving the pieces back; %.1f ms ending",
	       (double)ls.bytes / (1 << 20), ls.spans,
	       ls.reused ? "host copy made ready before it" : "host", ls.ms, ls.lay_ms, ls.take_ms,
	       ls.wait_ms,
	       ls.threads, ls.threads == 1 ? "" : "s", ls.pin_ms, ls.issue_ms, ls.copy_ms,
	       ls.give_ms, ls.end_ms);
	cn_report_figure(ag, CN_REPORT_LIGHT_MIB, (double)ls.bytes / (1 << 20));
	cn_report_figure(ag, CN_REPORT_LIGHT_MS, ls.ms);
	snprintf(msg, sizeof(msg),
		 "napped lightly: %.0f MiB it owns copied to the host in %.1f ms (%.1f GB/s)%s",
		 ag->status.light_mib, ls.ms, ls.ms > 0 ? (double)ls.bytes / ls.ms / 1e6 : 0.0,
		 ls.kept ? "; a handle it maps twice or in part stays on the GPU" : "");
	return cn_report_finish(ag, &r, msg);
}

/* The driver's checkpoint, for a suspend or a full nap, as h says. */
static struct cn_outcome suspend_full(struct cn_agent *ag, struct how h)
{
	struct cn_outcome o;
	struct cn_resp r;
	char msg[420];
	bool was_prepared;
	int rc;

	if (opening(ag, &h, &r, &o) < 0)
		return o;
	if (r.state == CN_STATE_RUNNING && cn_nccl_suspend(&ag->cfg, &r, msg, sizeof(msg)) < 0)
		return cn_report_finish(ag, &r, msg);
	if (r.state == CN_STATE_LOCKED) {
		cn_gate_close_now(); /* a failed unlock's: its callers wait inside the driver */
	} else if (r.state == CN_STATE_RUNNING && (close_gate(ag, &h, &r, msg, sizeof(msg)) < 0 ||
						   peers(ag, &h, &r, msg, sizeof(msg)) < 0)) {
		comms_stay(msg, sizeof(msg));
		return cn_report_finish(ag, &r, msg);
	}
	/* A light nap deepened: its host copy is plain memory to the driver's checkpoint, unpinned
	 * before the lock (a locked process's calls wait for the unlock); its wake pins it again.
	 * A copy kept for the next light nap is let go.
	 */
	if (r.state == CN_STATE_RUNNING)
		cn_light_unpin();
	if (r.state == CN_STATE_RUNNING && lock(ag, &h, &r, msg, sizeof(msg)) < 0)
		return cn_report_finish(ag, &r, msg);
	was_prepared = ag->held.prepared_bytes != 0;
	rc = checkpoint(ag, &r);
	if (ag->held.prepared_bytes) { /* used by this checkpoint, or never to be */
		cn_state_unprepare(&ag->held);
		cn_report_prepared(ag, false, -1);
	}
	if (rc < 0)
		return checkpoint_failed(ag, &h, &r, msg, sizeof(msg));
	return suspended(ag, &h, was_prepared, &r);
}

struct cn_outcome cn_suspend_as(struct cn_agent *ag, bool nap, unsigned lock_limit)
{
	return suspend_full(ag, (struct how){ .nap = nap,
					      .disk = nap && ag->cfg.nap_to == CN_NAP_TO_DISK,
					      .lock_limit_ms = lock_limit });
}

struct cn_outcome cn_suspend_nap_disk(struct cn_agent *ag, unsigned lock_limit)
{
	return suspend_full(ag, (struct how){ .nap = true, .disk = true, .lock_limit_ms = lock_limit });
}
