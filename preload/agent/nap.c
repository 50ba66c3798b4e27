/* nap: an idle process's GPU freed by itself, and given back at its next driver call that needs it.
 * Runs in the agent thread, but for the wake's byte (docs/NAPS.md). */
#define _GNU_SOURCE
#include "agent/nap.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
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
#include "agent/resume.h"
#include "agent/room.h"
#include "agent/state.h"
#include "agent/suspend.h"
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

static struct {
	unsigned long work; /* the gate's count at the last look */
	double active_ms;   /* the last look that saw work, or a thread inside (monotonic) */
	double not_before;  /* no idle nap before this (a failure's back-off) */
	unsigned backoff;   /* the back-off's multiple of idle_s: 1, 2, 4, ... */
	bool idle;	    /* idle_since was written */
	bool napping;	    /* asleep by a nap: a call that needs the GPU wakes it */
	double try_ms;	/* when the last wake began: a failed one is tried again ROOM_WAIT_MS on */
	bool retry;	/* a wake that failed: tried again */
	bool turn_busy; /* another process was making room: its turn looked at TURN_WAIT_MS on */
	double peek_ms; /* when the turn was last looked at */
	double idle_at_ms; /* a process idle too briefly to nap will be idle enough: tried then */
	bool stuck;	   /* the driver failed a wake's restore: tried again only when asked */
	bool refusal_said; /* the reason it is not napped was logged */
	bool room_said;	   /* make_room's failure for this wake was logged */
	double asleep_ms;  /* when it fell asleep: [nap] full_after_s counts from there */
	double awake_ms;   /* when a wake that made room let the calls go on (0: at its end) */
} nap = { .backoff = 1 };

/* When the call that woke the process asked (monotonic ns, from an app thread). */
static _Atomic(double) asked_ms;

static void wake_asked(void)
{
	atomic_store(&asked_ms, cn_clock_ms());
	cn_wake_send(CN_WAKE_CALL);
}

static void say_nap(enum cn_nap state, const char *why)
{
	cn_report_nap(state, why);
}

/* A failed wake is tried again ROOM_WAIT_MS after the last began (at once after one that waited
 * that long for room), TURN_WAIT_MS when another process was making room: its turn ends as soon
 * as the process it naps answers; sooner when another will have been idle [nap] min_idle_s. */
static int retry_in(void)
{
	double at = nap.try_ms + ROOM_WAIT_MS, peek = nap.peek_ms + TURN_WAIT_MS, left;

	if (nap.idle_at_ms && nap.idle_at_ms < at)
		at = nap.idle_at_ms > nap.try_ms + IDLE_GAP_MS ? nap.idle_at_ms
							       : nap.try_ms + IDLE_GAP_MS;
	left = (nap.turn_busy && peek < at ? peek : at) - cn_clock_ms();

	return left > 0 ? (int)left : 0;
}

/* Its idleness is followed: for its own naps, or for the processes that make room (pager.c). */
static bool watched(void)
{
	return cn_ag.cfg.nap_idle_s || cn_ag.cfg.nap_make_room;
}

/* [nap] depth = auto: a light nap that has lasted full_after_s is deepened to the driver's
 * checkpoint (its context given back too). */
static bool deepen_due(double now)
{
	return cn_light_holding() && cn_report_status()->state == CN_STATE_RUNNING &&
	       cn_ag.cfg.nap_depth == CN_DEPTH_AUTO && cn_ag.cfg.nap_full_after_s &&
	       now - nap.asleep_ms >= cn_ag.cfg.nap_full_after_s * 1000.0;
}

static void deepen(void)
{
	struct cn_outcome o = cn_suspend_as(true, NAP_LOCK_MS);

	cn_gate_nap(CN_GATE_NAP_ASLEEP, wake_asked);
	if (o.state == CN_STATE_CHECKPOINTED) {
		say_nap(CN_NAP_NAPPING, "");
		cn_report_depth_why(CN_DEPTH_WHY_DEEPENED);
		cn_report_write();
		cn_log(&cn_ag.cfg, CN_LOG_INFO,
		       "its light nap deepened after %u s ([nap] full_after_s): the rest of its "
		       "GPU "
		       "memory freed in %.1f ms",
		       cn_ag.cfg.nap_full_after_s, cn_report_status()->total_ms);
		return;
	}
	nap.asleep_ms = cn_clock_ms(); /* tried again after as long */
	say_nap(CN_NAP_NAPPING, "");
	cn_report_write();
	cn_log(&cn_ag.cfg, CN_LOG_INFO, "its light nap was not deepened: %s",
	       cn_report_status()->message);
}

int cn_nap_timeout_ms(void)
{
	unsigned s = cn_ag.cfg.nap_idle_s;
	int tick = s ? (int)(s * 1000 / 4) : watched() ? 250 : -1;

	if (nap.napping && !nap.retry && cn_light_holding() &&
	    cn_ag.cfg.nap_depth == CN_DEPTH_AUTO && cn_ag.cfg.nap_full_after_s)
		return 1000;
	if (nap.napping)
		return nap.retry && !nap.stuck ? retry_in() : -1;
	if (cn_hostbuf_bytes() && tick < 0)
		return 1000; /* the ready copy's room looked at (cache.c) */
	if (tick < 0)
		return -1;
	return tick < 100 ? 100 : tick > 1000 ? 1000 : tick;
}

/* A light nap ([nap] depth light, or auto's choice: depth.c), or a full one with why said. */
static bool light(char *why, size_t len)
{
	enum cn_depth_why w;
	bool l = cn_depth_light(&w, why, len);

	cn_report_depth_why(w);
	if (!l && !why[0])
		snprintf(why, len, "%s", cn_outcome_depth_why_to_string(w));
	return l;
}

/* Its reason counted and said in why: for another process (for_whom: its note, "PID MIB GPU
 * MIN_IDLE_S"), asked, or idle. */
static void count_nap_reason(bool asked, const char *for_whom, double idle_ms, char *why,
			     size_t len)
{
	int pid = 0, gpu = -1;
	unsigned long long mib = 0;

	if (for_whom && sscanf(for_whom, "%d %llu %d", &pid, &mib, &gpu) >= 2) {
		cn_report_count(CN_REPORT_NAPS_ROOM);
		cn_report_nap_for(pid, (double)mib);
		snprintf(why, len, "for %d, which needs %llu MiB on GPU %d", pid, mib, gpu);
	} else if (asked) {
		cn_report_nap_for(0, -1);
		cn_report_count(CN_REPORT_NAPS_ASKED);
		snprintf(why, len, "cudanap nap");
	} else {
		cn_report_nap_for(0, -1);
		cn_report_count(CN_REPORT_NAPS_IDLE);
		snprintf(why, len, "after %.0f s idle", idle_ms / 1000);
	}
}

/* A nap that took: the status written, then one log line of what it moved or freed, and how
 * fast, and why it was full where auto chose so (depth_why). */
static void log_napped(const char *why, const char *depth_why)
{
	char steps[200];

	say_nap(CN_NAP_NAPPING, "");
	cn_report_write();
	cn_status_steps(cn_report_status(), steps, sizeof(steps));
	if (cn_light_holding())
		cn_log(&cn_ag.cfg, CN_LOG_INFO,
		       "napped lightly (%s): %.0f MiB it owns moved to the host in %.1f ms, its "
		       "context kept; it wakes at its next CUDA call that needs the GPU",
		       why, cn_report_status()->light_mib, cn_report_status()->total_ms);
	else
		cn_log(&cn_ag.cfg, CN_LOG_INFO,
		       "napped (%s): %.0f MiB of GPU memory freed in %.1f ms (%s); it wakes at "
		       "its next CUDA call that needs the GPU%s%s",
		       why, cn_report_status()->footprint_mib, cn_report_status()->total_ms, steps,
		       cn_report_status()->depth_why >= CN_DEPTH_WHY_HOST_CACHE ? "; full: " : "",
		       cn_report_status()->depth_why >= CN_DEPTH_WHY_HOST_CACHE ? depth_why : "");
}

/* A nap that did not take: the next idle try backs off, twice as long each time; an asked nap's
 * failure is an error, an idle one's said once until a nap takes. */
static void say_not_napped(bool asked, const struct cn_outcome *o)
{
	char why[360];

	cn_gate_nap(CN_GATE_NAP_NONE, NULL);
	if (nap.backoff < BACKOFF_MAX)
		nap.backoff *= 2;
	nap.not_before = cn_clock_ms() + (double)nap.backoff * cn_ag.cfg.nap_idle_s * 1000;
	snprintf(why, sizeof(why), "%s: %s", cn_status_result(cn_report_status()),
		 cn_report_status()->message);
	say_nap(o->result == CN_RES_REFUSED ? CN_NAP_REFUSED : CN_NAP_AWAKE, why);
	cn_report_write();
	if (asked)
		cn_log(&cn_ag.cfg, CN_LOG_ERROR, "nap failed: %s; state %s", why,
		       cn_outcome_state_to_string(o->state));
	else if (!nap.refusal_said)
		cn_log(&cn_ag.cfg, CN_LOG_INFO, "not napped: %s; next try after %u s idle", why,
		       nap.backoff * cn_ag.cfg.nap_idle_s);
	nap.refusal_said |= !asked;
}

/* The nap, asked or idle, or asked to make room for another process (for_whom: its note, "PID
 * MIB GPU MIN_IDLE_S"): true when the process naps now. */
static bool nap_go(bool asked, const char *for_whom)
{
	double idle_ms = cn_clock_ms() - nap.active_ms, mib;
	char why[360], depth_why[300] = "", err[CN_ERR_LEN];
	struct cn_outcome o;
	void *ctx;
	bool l;

	cn_gate_nap(CN_GATE_NAP_CLOSING, wake_asked);
	/* Its depth as the INI says now; the nap reads it again and says a failure. */
	cn_reload_quietly(err, sizeof(err));
	l = light(depth_why, sizeof(depth_why));
	/* the host memory its copy takes, the others' ready copies given back for it (cache.c) */
	mib = cn_report_status()->gpu_now_mib;
	cn_cache_room_for(l	    ? cn_depth_light_bytes(&ctx)
			  : mib > 0 ? (unsigned long long)(mib * (1 << 20))
				    : cn_owned_bytes());
	o = l ? cn_suspend_light(asked ? 0 : NAP_LOCK_MS)
	      : cn_suspend_as(true, asked ? 0 : NAP_LOCK_MS);
	if (o.state == CN_STATE_CHECKPOINTED && !cn_light_holding())
		cn_report_nap_depth(CN_DEPTH_FULL);
	if (o.state != CN_STATE_CHECKPOINTED && !cn_light_holding()) {
		say_not_napped(asked, &o);
		return false;
	}
	nap.asleep_ms = cn_clock_ms();
	cn_gate_nap(CN_GATE_NAP_ASLEEP, wake_asked);
	nap.napping = true;
	nap.backoff = 1;
	nap.refusal_said = false;
	cn_report_count(CN_REPORT_NAPS);
	if (cn_report_status()->depth_why == CN_DEPTH_WHY_HOST_CACHE)
		cn_report_count(CN_REPORT_NAPS_FULL_HOST);
	else if (cn_report_status()->depth_why == CN_DEPTH_WHY_EXCLUSIVE)
		cn_report_count(CN_REPORT_NAPS_FULL_EXCLUSIVE);
	count_nap_reason(asked, for_whom, idle_ms, why, sizeof(why));
	log_napped(why, depth_why);
	return true;
}

/* A look at the gate: work since the last look, or a thread inside a call, is activity now. */
static void look_at_gate(double now)
{
	struct cn_inside in[1];
	unsigned long work = cn_gate_work();

	if (work != nap.work || cn_gate_inside(in, 1) > 0 || !work) {
		nap.work = work;
		nap.active_ms = now;
	}
}

/* A nap to make room for another process, which read this one idle from its status file: a
 * look of its own first, since the file says what the last tick saw. Worked less than the
 * other's [nap] min_idle_s ago: refused, in one line, and the other tries the next. */
static bool room_refused(const char *for_whom)
{
	double now = cn_clock_ms(), ago;
	unsigned long long mib = 0;
	unsigned min_idle = 0;
	char why[200];
	int pid = 0, gpu = -1;

	if (sscanf(for_whom, "%d %llu %d %u", &pid, &mib, &gpu, &min_idle) < 4 || nap.napping)
		return false;
	look_at_gate(now);
	ago = (now - nap.active_ms) / 1000;
	if (ago >= min_idle)
		return false;
	snprintf(why, sizeof(why),
		 "not napped for %d: it worked its GPU %.1f s ago, less than that process's [nap] "
		 "min_idle_s (%u s)",
		 pid, ago, min_idle);
	/* its idle_since was older than this look: cleared, and written anew at the next tick */
	nap.idle = false;
	cn_report_active();
	cn_report_begin(CN_ACTION_NAP);
	cn_report_fail(CN_RES_REFUSED, why);
	cn_log(&cn_ag.cfg, CN_LOG_INFO, "%s", why);
	return true;
}

/* A nap asked, for the process named in for_whom (NULL: by the command line), answered in the
 * status. */
static void nap_asked(const char *for_whom)
{
	if (cn_gate_leaving() && !nap.napping) {
		/* exit() runs its handlers: what a nap would move is freed in a moment anyway */
		cn_report_begin(CN_ACTION_NAP);
		cn_report_fail(CN_RES_REFUSED, "not napped: it is exiting");
		return;
	}
	if (for_whom && room_refused(for_whom))
		return;
	nap.active_ms = cn_clock_ms();
	if (nap.napping) {
		if (cn_light_holding()) /* says it naps already */
			cn_suspend_light(0);
		else
			cn_suspend_as(true, 0);
		return;
	}
	nap_go(true, for_whom);
}

void cn_nap_now(bool acted)
{
	char for_whom[64], now[64];
	bool room = cn_requests_read(CN_NOTE_NAP_FOR, for_whom, sizeof(for_whom)) > 0;

	if (!acted)
		nap_asked(room ? for_whom : NULL);
	/* taken once answered: an asker that finds it gone reads the answer in the status; a note
	 * another asker wrote since is its own, left for its signal */
	if (room && cn_requests_read(CN_NOTE_NAP_FOR, now, sizeof(now)) > 0 &&
	    strcmp(now, for_whom) == 0)
		cn_requests_take(CN_NOTE_NAP_FOR, now, sizeof(now));
}

/* After a wake, the app's calls going on: its host copy let go now, unless the wake kept it
 * ([nap] keep_host_copy and the host's room); the wake did not wait for it. */
static void let_go_copy(void)
{
	if (cn_hostbuf_let_go_unkept()) {
		cn_report_shared();
		cn_report_write();
	}
}

void cn_nap_tick(void)
{
	double now = cn_clock_ms();
	double was;

	if (!nap.napping && cn_cache_tick(now)) {
		cn_report_shared();
		cn_report_write();
	}
	if (nap.napping) {
		if (nap.retry && !nap.stuck && retry_in() == 0)
			cn_nap_wake();
		else if (!nap.retry && deepen_due(now))
			deepen();
		return;
	}
	if (!watched() || cn_report_status()->state != CN_STATE_RUNNING) {
		if (!watched() && cn_report_status()->nap != CN_NAP_UNSAID &&
		    cn_report_status()->nap != CN_NAP_OFF) {
			say_nap(CN_NAP_OFF, "");
			cn_report_write();
		}
		return;
	}
	if (cn_report_status()->nap == CN_NAP_UNSAID || cn_report_status()->nap == CN_NAP_OFF) {
		say_nap(CN_NAP_AWAKE, "");
		nap.active_ms = now;
		cn_report_write();
	}
	was = nap.active_ms;
	look_at_gate(now);
	if (nap.active_ms != was || nap.active_ms == now) {
		if (nap.idle) {
			nap.idle = false;
			cn_report_active();
			cn_report_write();
		}
		return;
	}
	if (!nap.idle) {
		nap.idle = true;
		cn_report_idle_since(now - nap.active_ms);
		cn_report_write();
	}
	if (cn_ag.cfg.nap_idle_s && now - nap.active_ms >= cn_ag.cfg.nap_idle_s * 1000.0 &&
	    now >= nap.not_before && !cn_gate_leaving())
		nap_go(false, NULL);
}

/* [nap] wake_on = any: a map that puts the parts of its memory without room where they are, or
 * where a restored NCCL rank runs (beside.c), onto other GPUs of its model with room and no such
 * rank (cn_gpumap_elsewhere); false when there is none. */
static bool elsewhere(struct cn_gpumap *map)
{
	unsigned long long need[CN_MAX_GPUS], free_bytes[CN_MAX_GPUS];
	int at[CN_MAX_GPUS], cur[CN_MAX_GPUS], want[CN_MAX_GPUS], n;
	char why[200], text[CN_MAX_GPUS * 8];
	struct cn_resp q;

	if (!cn_ag.cfg.nap_wake_any || !cn_ag.n_use || cn_requests_query(&q) < 0)
		return false;
	n = (int)q.n_gpus;
	if (cn_gpumap_now(cn_ag.moves, cn_ag.n_moves, q.gpus, n, cur, why, sizeof(why)) < 0)
		return false;
	for (uint32_t u = 0; u < cn_ag.n_use; u++) {
		at[u] = cn_uuid_index(q.gpus, n, &cn_ag.use[u].uuid);
		need[u] = cn_ag.use[u].bytes + ((unsigned long long)cn_ag.cfg.margin_mib << 20);
		if (at[u] < 0)
			return false;
	}
	for (int g = 0; g < n; g++)
		free_bytes[g] = q.gpu_beside[g] ? 0 : q.gpu_free[g];
	if (!cn_gpumap_elsewhere(cur, n, at, need, (int)cn_ag.n_use, free_bytes, q.same_model,
				 want)) {
		cn_log(&cn_ag.cfg, CN_LOG_DEBUG, "wake_on = any: no GPU of its model has room");
		return false;
	}
	cn_gpumap_of_want(want, n, map);
	cn_gpumap_write(map, text, sizeof(text));
	cn_log(&cn_ag.cfg, CN_LOG_DEBUG, "wake_on = any: no room where it was, trying gpu_map %s",
	       text);
	return true;
}

/* A light nap's wake: the room it needs, what of its host copy is not back yet on each GPU; -1
 * when it is not one (the checkpoint's footprint is the need). */
static int light_needs(struct cn_room_need *need)
{
	CUresult (*uuid)(void *, int) = cn_lookup_resolve(CN_FN_IDX_cuDeviceGetUuid_v2);
	int n = 0;

	if (!cn_light_holding() || cn_report_status()->state != CN_STATE_RUNNING || !uuid)
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
static double idle_soon(void)
{
	int pid;
	double at = cn_room_idle_soon_ms(&pid), in;

	if (!at)
		return 0;
	in = at + IDLE_SLACK_MS - cn_clock_ms();
	cn_log(&cn_ag.cfg, CN_LOG_DEBUG,
	       "its wake tried again in %.2f s, when %d will have been idle [nap] min_idle_s",
	       in > 0 ? in / 1000 : 0.0, pid);
	return at + IDLE_SLACK_MS;
}

/* [nap] make_room: room made on the GPUs it napped from, by napping idle processes there (room.c),
 * and the wake tried again there; the turn held until it is done. */
static struct cn_outcome page_for_wake(struct cn_outcome o)
{
	struct cn_room_need need[CN_MAX_GPUS] = { 0 };
	char why[600];
	int r, n = light_needs(need);

	for (uint32_t u = 0; n < 0 && u < cn_ag.n_use; u++) {
		need[u].uuid = cn_ag.use[u].uuid;
		need[u].bytes = cn_ag.use[u].bytes;
	}
	r = cn_room_make(need, n < 0 ? (int)cn_ag.n_use : n, "its wake", n >= 0, why, sizeof(why));
	nap.turn_busy = r == -EAGAIN;
	nap.peek_ms = cn_clock_ms();
	nap.idle_at_ms = r == -1 ? idle_soon() : 0;
	if (r == 0) {
		o = cn_resume_as(true, NULL, 0); /* copying in while the room comes (room.h) */
		if (o.state == CN_STATE_RUNNING && !cn_light_holding()) {
			/* the calls go on while those napped answer; its copy goes first, the next
			 * waker's room counts the host memory it frees */
			nap.awake_ms = cn_clock_ms();
			let_go_copy();
		}
		cn_room_settle();
		cn_room_release();
		nap.room_said = false;
	} else if (!nap.room_said) {
		cn_log(&cn_ag.cfg, CN_LOG_INFO, "no room made for its wake: %s", why);
		nap.room_said = true;
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
static bool turn_still_busy(void)
{
	if (nap.turn_busy && cn_clock_ms() - nap.try_ms < ROOM_WAIT_MS && !cn_room_turn_free()) {
		nap.peek_ms = cn_clock_ms();
		return true;
	}
	nap.turn_busy = false;
	return false;
}

/* Still asleep after a try: waiting for room (or for a restored NCCL job to leave its GPUs,
 * beside.c), or after a failure; tried again ROOM_WAIT_MS after this try began, but the first
 * wait at once: its home try waits itself. */
static void still_asleep(struct cn_outcome o)
{
	char why[420];
	bool room = o.result == CN_RES_NO_ROOM || o.result == CN_RES_BESIDE, stuck;

	if (room && !nap.retry)
		nap.try_ms -= ROOM_WAIT_MS;
	cn_gate_nap(CN_GATE_NAP_ASLEEP, wake_asked);
	snprintf(why, sizeof(why), "%s: %s", cn_status_result(cn_report_status()),
		 cn_report_status()->message);
	if (!room)
		say_nap(CN_NAP_WAKING, why);
	else
		say_nap(o.result == CN_RES_BESIDE ? CN_NAP_BESIDE : CN_NAP_WAITING,
			cn_report_status()->message);
	cn_report_write();
	/* A restore the driver failed is not tried again on a clock: one it did not roll back fails
	 * every time after (docs/DRIVER.md). Said once; the next call that needs the GPU, or a
	 * resume, tries again. cudanap's own failures (a broken INI) are tried again as before. */
	stuck = !room && o.result > 0;
	if (stuck && !nap.stuck)
		cn_log(&cn_ag.cfg, CN_LOG_ERROR,
		       "its wake failed: %s; the calls that need the GPU wait, and it is tried "
		       "again only at the next one or at cudanap resume",
		       why);
	else if (!stuck && !nap.retry)
		cn_log(&cn_ag.cfg, CN_LOG_INFO, "a call waits for the GPU: %s; %s", why,
		       cn_ag.cfg.nap_make_room ? AGAIN_MADE : "room checked every 100 ms");
	nap.stuck = stuck;
	nap.retry = true;
}

void cn_nap_wake(void)
{
	double asked = atomic_load(&asked_ms);
	struct cn_gpumap map;
	struct cn_outcome o;

	if (!nap.napping || turn_still_busy())
		return;
	cn_gate_nap(CN_GATE_NAP_NONE, NULL); /* calls from now on wait for the wake */
	if (!nap.retry)
		say_nap(CN_NAP_WAKING, "");
	nap.try_ms = cn_clock_ms();
	nap.idle_at_ms = 0; /* set again by this try's page_for_wake, if any */
	o = cn_resume_as(true, NULL, nap.retry && !cn_ag.cfg.nap_make_room ? ROOM_WAIT_MS : 0);
	if (asleep(o) && o.result == CN_RES_NO_ROOM && cn_ag.cfg.nap_make_room &&
	    (cn_ag.n_use || cn_light_holding()))
		o = page_for_wake(o);
	if (o.state == CN_STATE_CHECKPOINTED &&
	    (o.result == CN_RES_NO_ROOM || o.result == CN_RES_BESIDE) && elsewhere(&map))
		o = cn_resume_as(true, &map, 0);
	if (asleep(o))
		still_asleep(o);
	else
		cn_nap_woken(asked);
}

void cn_nap_woken(double asked)
{
	double now = nap.awake_ms > 0 ? nap.awake_ms : cn_clock_ms();
	char steps[200];

	nap.awake_ms = 0;
	if (!nap.napping)
		return;
	nap.napping = nap.idle = nap.retry = nap.stuck = nap.turn_busy = false;
	nap.idle_at_ms = 0;
	nap.active_ms = now;
	cn_report_active();
	cn_report_count(CN_REPORT_WAKES);
	if (asked > 0)
		cn_report_wake_ms(now - asked);
	say_nap(watched() ? CN_NAP_AWAKE : CN_NAP_OFF, "");
	cn_report_write();
	cn_status_steps(cn_report_status(), steps, sizeof(steps));
	if (asked > 0 && cn_report_status()->nap_depth == CN_DEPTH_LIGHT)
		cn_log(&cn_ag.cfg, CN_LOG_INFO,
		       "woke for a driver call: %s; the call waited %.1f ms",
		       cn_report_status()->message +
			       (strncmp(cn_report_status()->message, "woken: ", 7) == 0 ? 7 : 0),
		       cn_report_status()->last_wake_ms);
	else if (asked > 0)
		cn_log(&cn_ag.cfg, CN_LOG_INFO,
		       "woke for a driver call: %.0f MiB back on the GPU in %.1f ms (%s); the call "
		       "waited %.1f ms",
		       cn_report_status()->footprint_mib, cn_report_status()->total_ms, steps,
		       cn_report_status()->last_wake_ms);
	atomic_store(&asked_ms, 0);
	let_go_copy();
}

void cn_nap_after_action(struct cn_outcome o)
{
	if (nap.napping && cn_light_holding())
		return; /* still asleep: its host copy is not back (a resume without room) */
	if (nap.napping && o.state == CN_STATE_RUNNING)
		cn_nap_woken(0); /* resumed by a signal */
	else if (nap.napping && o.state != CN_STATE_CHECKPOINTED)
		nap.napping = false;
	else if (!nap.napping)
		nap.active_ms = cn_clock_ms(); /* an action is no idleness */
}

bool cn_nap_asleep(void)
{
	return nap.napping;
}

void cn_nap_reset(void)
{
	memset(&nap, 0, sizeof(nap));
	nap.backoff = 1;
	atomic_store(&asked_ms, 0);
	say_nap(watched() ? CN_NAP_AWAKE : CN_NAP_OFF, "");
}
