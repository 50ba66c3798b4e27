/* requests: what the agent's actions ask of the controller, one builder per request, and of the
 * command line (its notes); where the process stands, and the calls that move its memory
 * (libcuda's copies made parallel, copy.c; restores taking turns, turns.c). */
#define _GNU_SOURCE
#include "agent/requests.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/beside.h"
#include "agent/channel.h"
#include "clock.h"
#include "cn_notes.h"
#include "hostcopy/copy.h"
#include "cuda/hostbuf.h"
#include "cuda/light.h"
#include "cuda_abi.h"
#include "agent/log.h"
#include "agent/report.h"
#include "agent/state.h"
#include "hostcopy/turns.h"

/* The request for op, each builder below filling in what its op needs. */
static void start(uint32_t op, struct cn_req *req)
{
	memset(req, 0, sizeof(*req));
	req->op = op;
}

/* The host check of a lock or a prepare: the INI's, for the copy going where disk says, with the
 * host memory held for it already. */
static void host_check(struct cn_agent *ag, struct cn_req *req, const struct cn_requests_disk *disk,
		       uint64_t held)
{
	req->host_check = ag->cfg.host_check;
	req->host_margin_bytes = (uint64_t)ag->cfg.host_margin_mib << 20;
	req->to_disk = disk->to_disk;
	req->disk_free_bytes = disk->free_bytes;
	req->prepared_bytes = held;
}

/* The processes that the placement is to look at on the target GPUs (beside.c). */
static void beside(struct cn_agent *ag, struct cn_req *req)
{
	bool only = false;

	req->n_pids = (uint32_t)cn_beside_list(&ag->cfg, req->pids, CN_USERS_MAX, &only);
	req->pids_only = only;
}

static int send_req(struct cn_agent *ag, const struct cn_req *req, struct cn_resp *resp)
{
	if (cn_channel_call(ag, req, resp, cn_report_waiting) == 0 && !ag->status.call_ns)
		cn_report_call_ns(ag, resp->call_ns);
	return resp->result == CUDA_SUCCESS ? 0 : -1;
}

int cn_requests_call(struct cn_agent *ag, uint32_t op, struct cn_resp *resp)
{
	struct cn_req req;

	start(op, &req);
	return send_req(ag, &req, resp);
}

int cn_requests_lock(struct cn_agent *ag, unsigned timeout_ms, const struct cn_requests_disk *disk,
		     uint64_t copy_bytes, struct cn_resp *resp)
{
	struct cn_req req;

	start(CN_OP_LOCK, &req);
	req.timeout_ms = timeout_ms;
	/* a host copy kept for a light nap is room for this one (one being let go too: the nap waits
	 * for it) */
	host_check(ag, &req, disk, ag->held.prepared_bytes + cn_hostbuf_held_bytes());
	req.copy_bytes = copy_bytes;
	return send_req(ag, &req, resp);
}

int cn_requests_prepare(struct cn_agent *ag, const struct cn_requests_disk *disk,
			struct cn_resp *resp)
{
	struct cn_req req;

	start(CN_OP_PREPARE, &req);
	host_check(ag, &req, disk, ag->held.prepared_bytes);
	return send_req(ag, &req, resp);
}

int cn_requests_query(struct cn_agent *ag, struct cn_resp *resp)
{
	struct cn_req req;

	start(CN_OP_QUERY, &req);
	/* asleep, the GPUs it slept on tell its model */
	req.n_use = ag->where.n_use;
	memcpy(req.use, ag->where.use, sizeof(req.use));
	/* and, for a wake that may go elsewhere, where it may not (nap.c), or, a restored NCCL
	 * rank, who else is on its GPUs (beside.c) */
	if ((ag->where.n_use && ag->cfg.nap_wake_any) ||
	    cn_beside_watched(&ag->cfg, ag->status.restores))
		beside(ag, &req);
	return send_req(ag, &req, resp);
}

void cn_requests_know_gpus(struct cn_agent *ag)
{
	struct cn_resp r;

	if (!ag->where.n_gpus && cn_requests_query(ag, &r) == 0)
		cn_state_gpus(&ag->where, &r);
}

/* A note's first line, from what cn_notes_read or cn_notes_take gave (got < 0: none). */
static int first_line(int got, char *buf)
{
	if (got < 0)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return (int)strlen(buf);
}

int cn_requests_take(struct cn_agent *ag, const char *what, char *buf, size_t len)
{
	return first_line(cn_notes_take(ag->cfg.status_dir, (int)getpid(), what, buf, len), buf);
}

int cn_requests_read(struct cn_agent *ag, const char *what, char *buf, size_t len)
{
	return first_line(cn_notes_read(ag->cfg.status_dir, (int)getpid(), what, buf, len), buf);
}

bool cn_requests_state(struct cn_agent *ag, struct cn_resp *r)
{
	char msg[96];

	if (cn_requests_call(ag, CN_OP_STATE, r) == 0)
		return true;
	snprintf(msg, sizeof(msg), "this process has not initialised CUDA: nothing to %s",
		 cn_outcome_action_to_string(ag->status.action));
	cn_report_finish(ag, r, r->result == CUDA_ERROR_NOT_INITIALIZED ? msg : r->message);
	return false;
}

/* How long a restore waits for its turn, and then for a place to copy in, at most: the last of
 * eight 4 GiB processes on one GPU waits about 0.5 s for its turn. */
#define TURN_MAX_MS 10000

/* The restore in flight, as its cues see it (file-scope: copy.c calls them in the driver's threads,
 * with no argument): whether it took a turn at all; its wait for a place to copy in (-1: it did
 * not get that far) and whether it had one; CLOCK_MONOTONIC ms of the driver's first large copy and
 * of its copy being done (0: not seen), for the debug line on the restore's phases. */
static struct {
	bool turn, place;
	double place_wait_ms, t_first_copy, t_copied;
} mv;

/* In the driver's thread, at its first large copy of a restore: the end of its setup; out of the
 * setup's turn, into a place to copy in (turns.c). */
static void copy_turn(void)
{
	mv.t_first_copy = cn_clock_ms();
	if (mv.turn)
		mv.place = cn_turns_next(TURN_MAX_MS, &mv.place_wait_ms) == 0;
}

/* In the driver's thread, when the restore's large copies are done: the place goes to the next. */
static void copy_done(void)
{
	mv.t_copied = cn_clock_ms();
	cn_turns_copied();
}

/* A restore takes its turn on the GPUs it goes to first ([restore] take_turns): those its map puts
 * it on, else those it slept on. */
static void take_turn(struct cn_agent *ag, const struct cn_req *req)
{
	struct cn_uuid gpus[CN_MAX_GPUS];
	double waited;
	int n = (int)(req->n_use < CN_MAX_GPUS ? req->n_use : CN_MAX_GPUS);

	if (cn_state_targets(&ag->where, &req->map, gpus) < 0)
		for (int i = 0; i < n; i++)
			gpus[i] = req->use[i].uuid;
	mv.turn = cn_turns_enter(ag->cfg.status_dir, gpus, n, TURN_MAX_MS, &waited) == 0;
	if (waited >= 0.1)
		cn_report_step_ms(ag, CN_STEP_WAIT, waited);
	if (!mv.turn)
		cn_log(&ag->cfg, CN_LOG_DEBUG,
		       "restore turn in %s not had after %.0f ms: restoring without it",
		       ag->cfg.status_dir, waited);
}

/* The restore's phases, from the copy's cues. */
static void log_phases(struct cn_agent *ag, double t0)
{
	double wait = mv.place_wait_ms > 0 ? mv.place_wait_ms : 0, end = cn_clock_ms();
	char rest[96];

	/* The copy's end is seen only when the host copy's size is known. */
	if (mv.t_copied >= mv.t_first_copy)
		snprintf(rest, sizeof(rest), "%.1f ms copying, %.1f ms after",
			 mv.t_copied - mv.t_first_copy - wait, end - mv.t_copied);
	else
		snprintf(rest, sizeof(rest), "%.1f ms copying and after",
			 end - mv.t_first_copy - wait);
	cn_log(&ag->cfg, CN_LOG_DEBUG,
	       "restore: %.1f ms to the first copy (room check and driver's setup), "
	       "%.1f ms waiting for a place to copy in%s, %s",
	       mv.t_first_copy - t0, wait,
	       mv.turn && !mv.place ? " (not had: copied without it)" : "", rest);
}

/* The call that moves the process's memory, req. A restore moves on to a place to copy in when the
 * driver starts copying and gives that up when the copy is done: the copies are what tell, so with
 * copy_threads = 0 no turns are taken. A restore's processes to stay apart from are listed once
 * its turn is had, just before it is sent: one restored while it waited is among them. */
static int moving(struct cn_agent *ag, struct cn_req *req, struct cn_resp *r)
{
	struct cn_copy_stats cs;
	bool restore = req->op == CN_OP_RESTORE;
	double t0;
	int rc;

	if (!ag->cfg.copy_threads) {
		if (restore)
			beside(ag, req);
		return send_req(ag, req, r);
	}
	mv.turn = false;
	if (restore && ag->cfg.take_turns)
		take_turn(ag, req);
	if (restore)
		beside(ag, req);
	mv.place_wait_ms = -1;
	mv.t_first_copy = mv.t_copied = 0;
	cn_copy_arm(ag->cfg.copy_threads, restore ? copy_turn : NULL, restore ? copy_done : NULL,
		    restore ? ag->held.copy_bytes : 0);
	t0 = cn_clock_ms();
	rc = send_req(ag, req, r);
	cn_copy_disarm(&cs);
	cn_turns_leave();
	cn_log(&ag->cfg, CN_LOG_DEBUG,
	       "libcuda copies: %d slots hooked, %lu calls, %.0f MiB; %lu of 2 MiB or more "
	       "(%.0f MiB, largest %zu KiB) in %.1f ms on %u threads",
	       cs.hooked, cs.calls, (double)cs.bytes / (1 << 20), cs.big_calls,
	       (double)cs.big_bytes / (1 << 20), cs.largest >> 10, cs.big_ms, cs.threads);
	if (mv.t_first_copy > 0)
		log_phases(ag, t0);
	if (cs.hooked && cs.big_calls) {
		cn_report_figure(ag, CN_REPORT_COPY_MIB, (double)cs.big_bytes / (1 << 20));
		cn_report_figure(ag, CN_REPORT_COPY_MS, cs.big_ms);
	}
	return rc;
}

int cn_requests_checkpoint(struct cn_agent *ag, struct cn_resp *r)
{
	struct cn_req req;

	start(CN_OP_CHECKPOINT, &req);
	return moving(ag, &req, r);
}

int cn_requests_restore(struct cn_agent *ag, const struct cn_gpumap *map, struct cn_resp *r)
{
	struct cn_req req;

	start(CN_OP_RESTORE, &req);
	req.map = *map;
	req.n_moves = ag->where.n_moves;
	memcpy(req.moves, ag->where.moves, sizeof(req.moves));
	req.n_use = ag->where.n_use;
	memcpy(req.use, ag->where.use, sizeof(req.use));
	req.margin_bytes = (uint64_t)ag->cfg.margin_mib << 20;
	req.reserve = ag->cfg.reserve;
	return moving(ag, &req, r);
}
