/* nap: an idle process's GPU freed by itself, and given back at its next driver call that needs it.
 * Runs in the agent thread, but for the wake's byte (docs/NAPS.md). */
#define _GNU_SOURCE
#include "agent/nap.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "cn_hostmem.h"
#include "cn_words.h"
#include "cn_gpumap.h"
#include "cuda/gate.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/light.h"
#include "cuda/owned.h"
#include "cuda/hostbuf.h"
#include "agent/cache.h"
#include "agent/depth.h"
#include "agent/log.h"
#include "agent/reload.h"
#include "agent/report.h"
#include "agent/requests.h"
#include "agent/room.h"
#include "agent/state.h"
#include "wake.h"

#define NAP_LOCK_MS   200 /* a nap's lock: the work it waits for is a kernel older than idle_s */
#define BACKOFF_MAX   64
#define ROOM_WAIT_MS  1000 /* a wake waiting for room: one try's wait at home */
#define TURN_WAIT_MS  100  /* a wake whose room another process is making: its next try */
#define IDLE_SLACK_MS 50   /* a try when another becomes idle long enough: this much after */
#define IDLE_GAP_MS   250  /* ... and this long after the last try at least (others' ticks) */
/* how a wake waiting for room made by napping others is tried again, as its log says */
#define AGAIN_MADE                                                                                 \
	"tried again once a second, and sooner when another process of this user has been idle "   \
	"[nap] min_idle_s or the one making room is done"

/* When the call that woke the process asked (monotonic ms): file-scope, since the gate calls
 * wake_asked in the app's thread, with no argument. */
static _Atomic(double) asked_ms;

static void wake_asked(void)
{
	atomic_store(&asked_ms, cn_clock_ms());
	cn_wake_send(CN_WAKE_CALL);
}

static void say_nap(struct cn_agent *ag, enum cn_nap state, const char *why)
{
	cn_report_nap(ag, state, why);
}

/* A failed wake is tried again ROOM_WAIT_MS after the last began (at once after one that waited
 * that long for room), TURN_WAIT_MS when another process was making room: its turn ends as soon
 * as the process it naps answers; sooner when another will have been idle [nap] min_idle_s. */
static int retry_in(struct cn_naps *nap)
{
	double at = nap->try_ms + ROOM_WAIT_MS, peek = nap->peek_ms + TURN_WAIT_MS, left;

	if (nap->idle_at_ms && nap->idle_at_ms < at)
		at = nap->idle_at_ms > nap->try_ms + IDLE_GAP_MS ? nap->idle_at_ms
								 : nap->try_ms + IDLE_GAP_MS;
	left = (nap->turn_busy && peek < at ? peek : at) - cn_clock_ms();

	return left > 0 ? (int)left : 0;
}

/* Its idleness is followed: for its own naps, or for the processes that make room (pager.c). */
static bool watched(struct cn_agent *ag)
{
	return ag->cfg.nap_idle_s || ag->cfg.nap_make_room;
}

/* [nap] depth = auto: a light nap that has lasted full_after_s is deepened to the driver's
 * checkpoint (its context given back too). */
static bool deepen_due(struct cn_agent *ag, struct cn_naps *nap, double now)
{
	return cn_light_holding() && ag->status.state == CN_STATE_RUNNING &&
	       ag->cfg.nap_depth == CN_DEPTH_AUTO && ag->cfg.nap_full_after_s &&
	       now - nap->asleep_ms >= ag->cfg.nap_full_after_s * 1000.0;
}

static void deepen(struct cn_agent *ag, struct cn_naps *nap)
{
	struct cn_outcome o = nap->deeds->sleep(ag, false, NAP_LOCK_MS);

	cn_gate_nap(CN_GATE_NAP_ASLEEP, wake_asked);
	if (o.state == CN_STATE_CHECKPOINTED) {
		say_nap(ag, CN_NAP_NAPPING, "");
		cn_report_depth_why(ag, CN_DEPTH_WHY_DEEPENED);
		cn_report_write(ag);
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "its light nap deepened after %u s ([nap] full_after_s): the rest of its "
		       "GPU "
		       "memory freed in %.1f ms",
		       ag->cfg.nap_full_after_s, ag->status.total_ms);
		return;
	}
	nap->asleep_ms = cn_clock_ms(); /* tried again after as long */
	say_nap(ag, CN_NAP_NAPPING, "");
	cn_report_write(ag);
	cn_log(&ag->cfg, CN_LOG_INFO, "its light nap was not deepened: %s", ag->status.message);
}

int cn_nap_timeout_ms(struct cn_agent *ag, struct cn_naps *nap)
{
	unsigned s = ag->cfg.nap_idle_s;
	int tick = s ? (int)(s * 1000 / 4) : watched(ag) ? 250 : -1;

	if (nap->napping && !nap->retry && cn_light_holding() &&
	    ag->cfg.nap_depth == CN_DEPTH_AUTO && ag->cfg.nap_full_after_s)
		return 1000;
	if (nap->napping)
		return nap->retry && !nap->stuck ? retry_in(nap) : -1;
	if (cn_hostbuf_going() && (tick < 0 || tick > 250))
		return 250; /* a copy let go beside the app's calls: its end said (cache.c) */
	if (cn_hostbuf_bytes() && tick < 0)
		return 1000; /* the ready copy's room looked at (cache.c) */
	if (tick < 0)
		return -1;
	return tick < 100 ? 100 : tick > 1000 ? 1000 : tick;
}

/* A light nap ([nap] depth light, or auto's choice: depth.c), or a full one with why said. */
static bool light(struct cn_agent *ag, char *why, size_t len)
{
	enum cn_depth_why w;
	bool l = cn_depth_light(&ag->cfg, &w, why, len);

	cn_report_depth_why(ag, w);
	if (!l && !why[0])
		snprintf(why, len, "%s", cn_outcome_depth_why_to_string(w));
	return l;
}

/* Its reason counted and said in why: for another process (for_whom: its note, "PID MIB GPU
 * MIN_IDLE_S", and its user's name when the node pager wrote it), asked, or idle. */
static void count_nap_reason(struct cn_agent *ag, bool asked, const char *for_whom, double idle_ms,
			     char *why, size_t len)
{
	int pid = 0, gpu = -1;
	unsigned long long mib = 0;
	char user[33] = "", of[48] = "";

	if (for_whom &&
	    sscanf(for_whom, "%d %llu %d %*u %32[A-Za-z0-9._-]", &pid, &mib, &gpu, user) >= 2) {
		cn_report_count(ag, CN_REPORT_NAPS_ROOM);
		cn_report_nap_for(ag, pid, (double)mib, user);
		if (user[0])
			snprintf(of, sizeof(of), " of %s, by the node pager", user);
		snprintf(why, len, "for %d%s, which needs %llu MiB on GPU %d", pid, of, mib, gpu);
	} else if (asked) {
		cn_report_nap_for(ag, 0, -1, NULL);
		cn_report_count(ag, CN_REPORT_NAPS_ASKED);
		snprintf(why, len, "cudanap nap");
	} else {
		cn_report_nap_for(ag, 0, -1, NULL);
		cn_report_count(ag, CN_REPORT_NAPS_IDLE);
		snprintf(why, len, "after %.0f s idle", idle_ms / 1000);
	}
}

/* A nap that took: the status written, then one log line of what it moved or freed, and how
 * fast, and why it was full where auto chose so (depth_why). */
static void log_napped(struct cn_agent *ag, const char *why, const char *depth_why)
{
	char steps[200];

	say_nap(ag, CN_NAP_NAPPING, "");
	cn_report_write(ag);
	cn_status_steps(&ag->status, steps, sizeof(steps));
	if (cn_light_holding())
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "napped lightly (%s): %.0f MiB it owns moved to the host in %.1f ms, its "
		       "context kept; it wakes at its next CUDA call that needs the GPU",
		       why, ag->status.light_mib, ag->status.total_ms);
	else
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "napped (%s): %.0f MiB of GPU memory freed in %.1f ms (%s); it wakes at "
		       "its next CUDA call that needs the GPU%s%s",
		       why, ag->status.footprint_mib, ag->status.total_ms, steps,
		       ag->status.depth_why >= CN_DEPTH_WHY_HOST_CACHE ? "; full: " : "",
		       ag->status.depth_why >= CN_DEPTH_WHY_HOST_CACHE ? depth_why : "");
}

/* A nap that did not take: the next idle try backs off, twice as long each time; an asked nap's
 * failure is an error, an idle one's said once until a nap takes. */
static void say_not_napped(struct cn_agent *ag, struct cn_naps *nap, bool asked,
			   const struct cn_outcome *o)
{
	char why[sizeof(ag->status.nap_why)];

	cn_gate_nap(CN_GATE_NAP_NONE, NULL);
	if (nap->backoff < BACKOFF_MAX)
		nap->backoff *= 2;
	nap->not_before = cn_clock_ms() + (double)nap->backoff * ag->cfg.nap_idle_s * 1000;
	snprintf(why, sizeof(why), "%s: %s", cn_status_result(&ag->status), ag->status.message);
	say_nap(ag, o->result == CN_RES_REFUSED ? CN_NAP_REFUSED : CN_NAP_AWAKE, why);
	cn_report_write(ag);
	if (asked)
		cn_log(&ag->cfg, CN_LOG_ERROR, "nap failed: %s; state %s", why,
		       cn_outcome_state_to_string(o->state));
	else if (!nap->refusal_said)
		cn_log(&ag->cfg, CN_LOG_INFO, "not napped: %s; next try after %u s idle", why,
		       nap->backoff * ag->cfg.nap_idle_s);
	nap->refusal_said |= !asked;
}

/* The nap, asked or idle, or asked to make room for another process (for_whom: its note, "PID
 * MIB GPU MIN_IDLE_S"): true when the process naps now. */
static bool nap_go(struct cn_agent *ag, struct cn_naps *nap, bool asked, const char *for_whom)
{
	double idle_ms = cn_clock_ms() - nap->active_ms, mib;
	char why[360], depth_why[300] = "", err[CN_ERR_LEN];
	unsigned long long bytes, held, full, reuse;
	struct cn_outcome o;
	void *ctx;
	bool l, disk;

	cn_gate_nap(CN_GATE_NAP_CLOSING, wake_asked);
	/* Its depth as the INI says now; the nap reads it again and says a failure. */
	cn_reload_quietly(ag, err, sizeof(err));
	l = light(ag, depth_why, sizeof(depth_why));
	/* the host memory its copy takes, the others' ready copies given back for it (cache.c) */
	mib = ag->status.gpu_now_mib;
	bytes = l ? cn_depth_light_bytes(&ctx)
	    : mib > 0 ? (unsigned long long)(mib * (1 << 20))
		      : cn_owned_bytes();
	held = cn_hostbuf_held_bytes(); /* its own copy: a light nap copies into it, or into what a
					   * going one leaves */
	cn_cache_free_for(ag, bytes);
	/* [nap] to = auto: full, to disk, where the host has no room for what its copy needs more
	 * even so: its own ready copy is the light nap's destination, or let go before a full
	 * nap's checkpoint, and a prepared copy is host memory held for that checkpoint */
	full = cn_hostmem_checkpoint_bytes(bytes);
	reuse = held + (l ? 0 : ag->held.prepared_bytes);
	disk = cn_depth_to_disk(&ag->cfg, l ? (held < bytes ? bytes - held : 0)
					    : (reuse < full ? full - reuse : 0),
				depth_why, sizeof(depth_why));
	if (disk)
		cn_report_depth_why(ag, CN_DEPTH_WHY_HOST_FULL);
	o = disk ? nap->deeds->sleep_disk(ag, asked ? 0 : NAP_LOCK_MS)
		 : nap->deeds->sleep(ag, l, asked ? 0 : NAP_LOCK_MS);
	if (o.state == CN_STATE_CHECKPOINTED && !cn_light_holding())
		cn_report_nap_depth(ag, CN_DEPTH_FULL);
	if (o.state != CN_STATE_CHECKPOINTED && !cn_light_holding()) {
		say_not_napped(ag, nap, asked, &o);
		return false;
	}
	nap->asleep_ms = cn_clock_ms();
	cn_gate_nap(CN_GATE_NAP_ASLEEP, wake_asked);
	nap->napping = true;
	nap->backoff = 1;
	nap->refusal_said = false;
	cn_report_count(ag, CN_REPORT_NAPS);
	if (ag->status.depth_why == CN_DEPTH_WHY_HOST_CACHE)
		cn_report_count(ag, CN_REPORT_NAPS_FULL_HOST);
	else if (ag->status.depth_why == CN_DEPTH_WHY_EXCLUSIVE)
		cn_report_count(ag, CN_REPORT_NAPS_FULL_EXCLUSIVE);
	else if (ag->status.depth_why == CN_DEPTH_WHY_HOST_FULL)
		cn_report_count(ag, CN_REPORT_NAPS_FULL_DISK);
	count_nap_reason(ag, asked, for_whom, idle_ms, why, sizeof(why));
	log_napped(ag, why, depth_why);
	return true;
}

/* A look at the gate: work since the last look, or a thread inside a call, is activity now. */
static void look_at_gate(struct cn_naps *nap, double now)
{
	struct cn_inside in[1];
	unsigned long work = cn_gate_work();

	if (work != nap->work || cn_gate_inside(in, 1) > 0 || !work) {
		nap->work = work;
		nap->active_ms = now;
	}
}

/* A nap to make room for another process, which read this one idle from its status file: a
 * look of its own first, since the file says what the last tick saw. Worked less than the
 * other's [nap] min_idle_s ago: refused, in one line, and the other tries the next. */
static bool room_refused(struct cn_agent *ag, struct cn_naps *nap, const char *for_whom)
{
	double now = cn_clock_ms(), ago;
	unsigned long long mib = 0;
	unsigned min_idle = 0;
	char why[200];
	int pid = 0, gpu = -1;

	if (sscanf(for_whom, "%d %llu %d %u", &pid, &mib, &gpu, &min_idle) < 4 || nap->napping)
		return false;
	look_at_gate(nap, now);
	ago = (now - nap->active_ms) / 1000;
	if (ago >= min_idle)
		return false;
	snprintf(why, sizeof(why),
		 "not napped for %d: it worked its GPU %.1f s ago, less than that process's [nap] "
		 "min_idle_s (%u s)",
		 pid, ago, min_idle);
	/* its idle_since was older than this look: cleared, and written anew at the next tick */
	nap->idle = false;
	cn_report_active(ag);
	cn_report_begin(ag, CN_ACTION_NAP);
	cn_report_fail(ag, CN_RES_REFUSED, why);
	cn_log(&ag->cfg, CN_LOG_INFO, "%s", why);
	return true;
}

/* A nap asked, for the process named in for_whom (NULL: by the command line), answered in the
 * status. */
static void nap_asked(struct cn_agent *ag, struct cn_naps *nap, const char *for_whom)
{
	if (cn_gate_leaving() && !nap->napping) {
		/* exit() runs its handlers: what a nap would move is freed in a moment anyway */
		cn_report_begin(ag, CN_ACTION_NAP);
		cn_report_fail(ag, CN_RES_REFUSED, "not napped: it is exiting");
		return;
	}
	if (for_whom && room_refused(ag, nap, for_whom))
		return;
	nap->active_ms = cn_clock_ms();
	if (nap->napping) {
		nap->deeds->sleep(ag, cn_light_holding(), 0); /* says it naps already */
		return;
	}
	nap_go(ag, nap, true, for_whom);
}

void cn_nap_now(struct cn_agent *ag, struct cn_naps *nap, bool acted)
{
	char for_whom[64], now[64];
	bool room = cn_requests_read(ag, CN_NOTE_NAP_FOR, for_whom, sizeof(for_whom)) > 0;

	if (!acted)
		nap_asked(ag, nap, room ? for_whom : NULL);
	/* taken once answered: an asker that finds it gone reads the answer in the status; a note
	 * another asker wrote since is its own, left for its signal */
	if (room && cn_requests_read(ag, CN_NOTE_NAP_FOR, now, sizeof(now)) > 0 &&
	    strcmp(now, for_whom) == 0)
		cn_requests_take(ag, CN_NOTE_NAP_FOR, now, sizeof(now));
}

/* After a wake, the app's calls going on: its host copy let go now, in the pauses of the app's GPU
 * work (cache.c says when it is gone), unless the wake kept it ([nap] keep_host_copy and the host's
 * free memory); the wake did not wait for it. */
static void let_go_copy(struct cn_agent *ag)
{
	if (cn_hostbuf_let_go_unkept(CN_HOSTBUF_IN_PAUSES)) {
		cn_report_shared(ag);
		cn_report_write(ag);
	}
}

/* Its idleness ends now: a suspend, a resume or a prepare; idle_since says so at once, lest the
 * status show the idleness before it (idle 27s right after a resume). */
static void idle_ends(struct cn_agent *ag, struct cn_naps *nap)
{
	nap->active_ms = cn_clock_ms();
	if (!nap->idle && !ag->status.idle_since[0])
		return;
	nap->idle = false;
	cn_report_active(ag);
	cn_report_write(ag);
}

void cn_nap_tick(struct cn_agent *ag, struct cn_naps *nap)
{
	double now = cn_clock_ms();
	double was;

	if (!nap->napping && cn_cache_tick(ag, now)) {
		cn_report_shared(ag);
		cn_report_write(ag);
	}
	if (nap->napping) {
		if (nap->retry && !nap->stuck && retry_in(nap) == 0)
			cn_nap_wake(ag, nap);
		else if (!nap->retry && deepen_due(ag, nap, now))
			deepen(ag, nap);
		return;
	}
	if (!watched(ag) || ag->status.state != CN_STATE_RUNNING) {
		if (!watched(ag) && ag->status.nap != CN_NAP_UNSAID &&
		    ag->status.nap != CN_NAP_OFF) {
			say_nap(ag, CN_NAP_OFF, "");
			cn_report_write(ag);
		}
		return;
	}
	if (ag->status.nap == CN_NAP_UNSAID || ag->status.nap == CN_NAP_OFF) {
		say_nap(ag, CN_NAP_AWAKE, "");
		nap->active_ms = now;
		cn_report_write(ag);
	}
	was = nap->active_ms;
	look_at_gate(nap, now);
	if (nap->active_ms != was || nap->active_ms == now) {
		if (nap->idle) {
			nap->idle = false;
			cn_report_active(ag);
			cn_report_write(ag);
		}
		return;
	}
	if (!nap->idle) {
		nap->idle = true;
		cn_report_idle_since(ag, now - nap->active_ms);
		/* the room its nap may take on disk, for the processes that make room: once an
		 * idleness, here in the agent thread (a statvfs), never in a fork or at the start */
		cn_report_disk_room(ag, cn_depth_disk_room_mib(&ag->cfg));
		cn_report_write(ag);
	}
	if (ag->cfg.nap_idle_s && now - nap->active_ms >= ag->cfg.nap_idle_s * 1000.0 &&
	    now >= nap->not_before && !cn_gate_leaving())
		nap_go(ag, nap, false, NULL);
}

/* [nap] wake_on = any: a map that puts the parts of its memory without room where they are, or
 * where a restored NCCL rank runs (beside.c), onto other GPUs of its model with room and no such
 * rank (cn_gpumap_elsewhere); false when there is none. */
static bool elsewhere(struct cn_agent *ag, struct cn_gpumap *map)
{
	unsigned long long need[CN_MAX_GPUS], free_bytes[CN_MAX_GPUS];
	int at[CN_MAX_GPUS], cur[CN_MAX_GPUS], want[CN_MAX_GPUS], n;
	char why[200], text[CN_MAX_GPUS * 8];
	struct cn_resp q;

	if (!ag->cfg.nap_wake_any || !ag->where.n_use || cn_requests_query(ag, &q) < 0)
		return false;
	n = (int)q.n_gpus;
	if (cn_gpumap_now(ag->where.moves, ag->where.n_moves, q.gpus, n, cur, why, sizeof(why)) < 0)
		return false;
	for (uint32_t u = 0; u < ag->where.n_use; u++) {
		at[u] = cn_uuid_index(q.gpus, n, &ag->where.use[u].uuid);
		need[u] = ag->where.use[u].bytes + ((unsigned long long)ag->cfg.margin_mib << 20);
		if (at[u] < 0)
			return false;
	}
	for (int g = 0; g < n; g++)
		free_bytes[g] = q.gpu_beside[g] ? 0 : q.gpu_free[g];
	if (!cn_gpumap_elsewhere(cur, n, at, need, (int)ag->where.n_use, free_bytes, q.same_model,
				 want)) {
		cn_log(&ag->cfg, CN_LOG_DEBUG, "wake_on = any: no GPU of its model has room");
		return false;
	}
	cn_gpumap_of_want(want, n, map);
	cn_gpumap_write(map, text, sizeof(text));
	cn_log(&ag->cfg, CN_LOG_DEBUG, "wake_on = any: no room where it was, trying gpu_map %s",
	       text);
	return true;
}

/* A light nap's wake: the room it needs, what of its host copy is not back yet on each GPU; -1
 * when it is not one (the checkpoint's footprint is the need). */
static int light_needs(struct cn_agent *ag, struct cn_room_need *need)
{
	CUresult (*uuid)(void *, int) = cn_lookup_resolve(CN_FN_IDX_cuDeviceGetUuid_v2);
	int n = 0;

	if (!cn_light_holding() || ag->status.state != CN_STATE_RUNNING || !uuid)
		return -1;
	for (int dev = 0; dev < 64 && n < CN_MAX_GPUS; dev++) {
		unsigned long long b = cn_light_left(dev);

		if (b && uuid(need[n].uuid.b, dev) == CUDA_SUCCESS)
			need[n++].bytes = b;
	}
	return n;
}

/* After a make_room that found no process idle long enough: when the first idle too briefly will
 * be (said in the debug log); 0: none. */
static double idle_soon(struct cn_agent *ag, const struct cn_room_soon *soon)
{
	double in;

	if (!soon->at_ms)
		return 0;
	in = soon->at_ms + IDLE_SLACK_MS - cn_clock_ms();
	cn_log(&ag->cfg, CN_LOG_DEBUG,
	       "its wake tried again in %.2f s, when %d will have been idle [nap] min_idle_s",
	       in > 0 ? in / 1000 : 0.0, soon->pid);
	return soon->at_ms + IDLE_SLACK_MS;
}

/* [nap] make_room: room made on the GPUs it napped from, by napping idle processes there (room.c),
 * and the wake tried again there; the turn held until it is done. */
static struct cn_outcome page_for_wake(struct cn_agent *ag, struct cn_naps *nap,
				       struct cn_outcome o)
{
	struct cn_room_need need[CN_MAX_GPUS] = { 0 };
	struct cn_room_soon soon;
	char why[600];
	int r, n = light_needs(ag, need);

	for (uint32_t u = 0; n < 0 && u < ag->where.n_use; u++) {
		need[u].uuid = ag->where.use[u].uuid;
		need[u].bytes = ag->where.use[u].bytes;
	}
	r = cn_room_make(ag, need, n < 0 ? (int)ag->where.n_use : n, "its wake", n >= 0, &soon, why,
			 sizeof(why));
	nap->turn_busy = r == -EAGAIN;
	nap->peek_ms = cn_clock_ms();
	nap->idle_at_ms = r == -1 ? idle_soon(ag, &soon) : 0;
	if (r == 0) {
		o = nap->deeds->wake(ag, NULL, 0); /* copying in while the room comes (room.h) */
		if (o.state == CN_STATE_RUNNING && !cn_light_holding()) {
			/* the calls go on while those napped answer; its copy is let go beside them,
			 * held in its status until gone, which the next waker can ask back at once */
			nap->awake_ms = cn_clock_ms();
			let_go_copy(ag);
		}
		cn_room_settle(ag);
		cn_room_release();
		nap->room_said = false;
	} else if (!nap->room_said && r == -1) { /* -EAGAIN: room is being made */
		cn_log(&ag->cfg, CN_LOG_INFO, "no room made for its wake: %s", why);
		nap->room_said = true;
	}
	return o;
}

/* Still asleep after a wake's try: checkpointed, or running with its light nap's copy held. */
static bool asleep(struct cn_outcome o)
{
	return o.state == CN_STATE_CHECKPOINTED ||
	       (o.state == CN_STATE_RUNNING && cn_light_holding());
}

/* Another process making room: only its turn looked at until it is free, or for a full try
 * once a second (each try maps what fits, taking memory freed for that process's need): true
 * while the wake waits for it. */
static bool turn_still_busy(struct cn_agent *ag, struct cn_naps *nap)
{
	if (nap->turn_busy && cn_clock_ms() - nap->try_ms < ROOM_WAIT_MS &&
	    !cn_room_turn_free(ag)) {
		nap->peek_ms = cn_clock_ms();
		return true;
	}
	nap->turn_busy = false;
	return false;
}

/* Still asleep after a try: waiting for room (or for a restored NCCL job to leave its GPUs,
 * beside.c), or after a failure; tried again ROOM_WAIT_MS after this try began, but the first
 * wait at once: its home try waits itself. */
static void still_asleep(struct cn_agent *ag, struct cn_naps *nap, struct cn_outcome o)
{
	char why[sizeof(ag->status.nap_why)];
	bool room = o.result == CN_RES_NO_ROOM || o.result == CN_RES_BESIDE, stuck;

	if (room && !nap->retry)
		nap->try_ms -= ROOM_WAIT_MS;
	cn_gate_nap(CN_GATE_NAP_ASLEEP, wake_asked);
	snprintf(why, sizeof(why), "%s: %s", cn_status_result(&ag->status), ag->status.message);
	if (!room)
		say_nap(ag, CN_NAP_WAKING, why);
	else
		say_nap(ag, o.result == CN_RES_BESIDE ? CN_NAP_BESIDE : CN_NAP_WAITING,
			ag->status.message);
	cn_report_write(ag);
	/* A restore the driver failed is not tried again on a clock: one it did not roll back fails
	 * every time after (docs/DRIVER.md). Said once; the next call that needs the GPU, or a
	 * resume, tries again. cudanap's own failures (a broken INI) are tried again as before. */
	stuck = !room && o.result > 0;
	if (stuck && !nap->stuck)
		cn_log(&ag->cfg, CN_LOG_ERROR,
		       "its wake failed: %s; the calls that need the GPU wait, and it is tried "
		       "again only at the next one or at cudanap resume",
		       why);
	else if (!stuck && !nap->retry)
		cn_log(&ag->cfg, CN_LOG_INFO, "a call waits for the GPU: %s; %s", why,
		       ag->cfg.nap_make_room ? AGAIN_MADE : "room checked every 100 ms");
	nap->stuck = stuck;
	nap->retry = true;
}

void cn_nap_wake(struct cn_agent *ag, struct cn_naps *nap)
{
	double asked = atomic_load(&asked_ms);
	struct cn_gpumap map;
	struct cn_outcome o;

	if (!nap->napping || turn_still_busy(ag, nap))
		return;
	cn_gate_nap(CN_GATE_NAP_NONE, NULL); /* calls from now on wait for the wake */
	if (!nap->retry)
		say_nap(ag, CN_NAP_WAKING, "");
	nap->try_ms = cn_clock_ms();
	nap->idle_at_ms = 0; /* set again by this try's page_for_wake, if any */
	o = nap->deeds->wake(ag, NULL, nap->retry && !ag->cfg.nap_make_room ? ROOM_WAIT_MS : 0);
	if (asleep(o) && o.result == CN_RES_NO_ROOM && ag->cfg.nap_make_room &&
	    (ag->where.n_use || cn_light_holding()))
		o = page_for_wake(ag, nap, o);
	if (o.state == CN_STATE_CHECKPOINTED &&
	    (o.result == CN_RES_NO_ROOM || o.result == CN_RES_BESIDE) && elsewhere(ag, &map))
		o = nap->deeds->wake(ag, &map, 0);
	if (asleep(o))
		still_asleep(ag, nap, o);
	else
		cn_nap_woken(ag, nap, asked);
}

void cn_nap_woken(struct cn_agent *ag, struct cn_naps *nap, double asked)
{
	double now = nap->awake_ms > 0 ? nap->awake_ms : cn_clock_ms();
	char steps[200];

	nap->awake_ms = 0;
	if (!nap->napping)
		return;
	cn_room_release(); /* a turn the node pager gave it, whether its room was used or not */
	nap->napping = nap->idle = nap->retry = nap->stuck = nap->turn_busy = false;
	nap->idle_at_ms = 0;
	nap->active_ms = now;
	cn_report_active(ag);
	cn_report_count(ag, CN_REPORT_WAKES);
	if (asked > 0)
		cn_report_wake_ms(ag, now - asked);
	say_nap(ag, watched(ag) ? CN_NAP_AWAKE : CN_NAP_OFF, "");
	cn_report_write(ag);
	cn_status_steps(&ag->status, steps, sizeof(steps));
	if (asked > 0 && ag->status.nap_depth == CN_DEPTH_LIGHT)
		cn_log(&ag->cfg, CN_LOG_INFO, "woke for a driver call: %s; the call waited %.1f ms",
		       ag->status.message +
			       (strncmp(ag->status.message, "woken: ", 7) == 0 ? 7 : 0),
		       ag->status.last_wake_ms);
	else if (asked > 0)
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "woke for a driver call: %.0f MiB back on the GPU in %.1f ms (%s); the call "
		       "waited %.1f ms",
		       ag->status.footprint_mib, ag->status.total_ms, steps,
		       ag->status.last_wake_ms);
	atomic_store(&asked_ms, 0);
	let_go_copy(ag);
}

void cn_nap_after_action(struct cn_agent *ag, struct cn_naps *nap, struct cn_outcome o)
{
	if (nap->napping && cn_light_holding())
		return; /* still asleep: its host copy is not back (a resume without room) */
	if (nap->napping && o.state == CN_STATE_RUNNING)
		cn_nap_woken(ag, nap, 0); /* resumed by a signal */
	else if (nap->napping && o.state != CN_STATE_CHECKPOINTED)
		nap->napping = false;
	else if (!nap->napping)
		idle_ends(ag, nap); /* an action is no idleness */
}

void cn_nap_reset(struct cn_agent *ag, struct cn_naps *nap, const struct cn_nap_deeds *deeds)
{
	memset(nap, 0, sizeof(*nap));
	nap->deeds = deeds;
	nap->backoff = 1;
	atomic_store(&asked_ms, 0);
	say_nap(ag, watched(ag) ? CN_NAP_AWAKE : CN_NAP_OFF, "");
}
