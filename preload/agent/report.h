/* report: what the agent tells of its actions. See report.c. */
#ifndef CN_REPORT_H
#define CN_REPORT_H

#include <stdbool.h>

#include "agent/state.h"
#include "cn_status.h"
#include "ctl_proto.h"

/* A fresh process's status (at start, and in a forked child): its first status file. */
void cn_report_start(struct cn_agent *ag);

/* Start an action (enum cn_action) in the status; not written yet: the first driver call says
 * where the process stands first. */
void cn_report_begin(struct cn_agent *ag, int action);

/* Write the status file as it stands. */
void cn_report_publish(struct cn_agent *ag);
/* The UTC time ago_ms before now, as the status file writes its times: 2026-11-25T17:49:41.123Z. */
void cn_report_time(char *out, size_t len, double ago_ms);
/* The status file written as it stands, its timestamp unchanged (a query is no action). */
void cn_report_write(struct cn_agent *ag);

/* The time a driver call took, as a step of the action. */
void cn_report_step(struct cn_agent *ag, enum cn_step s, const struct cn_resp *r);

/* The end of an action, in this order: the status file, one log line, then the INI's hook. A
 * success is called by its action (suspended, resumed, napped, woke, prepared). What it ended
 * with comes back. */
struct cn_outcome cn_report_finish(struct cn_agent *ag, const struct cn_resp *r,
				   const char *message);
/* The same for an action that found nothing to do (the process was where it was asked to be):
 * no hook. */
struct cn_outcome cn_report_already(struct cn_agent *ag, const struct cn_resp *r,
				    const char *message);
/* The same for an action that ended before any driver call, with one of cudanap's results. */
struct cn_outcome cn_report_fail(struct cn_agent *ag, int result, const char *message);
/* What the last action ended with, as the status says. */
struct cn_outcome cn_report_outcome(struct cn_agent *ag);

/* A signal that asks for the state the process is already in, as recorded: counted, the last real
 * outcome kept. False when it is news after all (the driver contradicts the record). */
bool cn_report_redundant(struct cn_agent *ag, const struct cn_status *before,
			 const struct cn_resp *r, const char *msg);

/* A driver call that has not answered after s seconds. */
void cn_report_waiting(struct cn_agent *ag, const char *op, unsigned s);

/* Where the process's memory is, into the status (not written yet): the GPUs it is on, those it
 * started on and, asleep, those a resume puts it on by the INI as read now. */
void cn_report_gpus(struct cn_agent *ag, bool asleep);
/* The same for a running process, from a question's answer: the n GPUs use it holds memory on. */
void cn_report_gpus_using(struct cn_agent *ag, const struct cn_gpu_use *use, uint32_t n);

/* At process exit: remove the status file, and never write it again. */
void cn_report_exit(struct cn_agent *ag);
/* The same from _exit(), which may be called anywhere, a signal handler included: unlink only. */
void cn_report_exit_now(void);

/* Into the status, not written yet: the action's message (printf-like), a step's time. */
void cn_report_message(struct cn_agent *ag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void cn_report_step_ms(struct cn_agent *ag, enum cn_step s, double ms);
/* When the action's first driver call began (CLOCK_MONOTONIC ns). */
void cn_report_call_ns(struct cn_agent *ag, unsigned long long ns);
/* The action's figures, by cn_report_figure: the host copy staged and its prefault, its unmap,
 * libcuda's big copies, the restore's reserve, the footprint at the checkpoint, what a light nap
 * moved and in how long. What the host copy holds in RAM and on disk is measured at every
 * outcome (cn_report_finish). */
enum cn_report_figure {
	CN_REPORT_STAGED_MIB,
	CN_REPORT_PREFAULT_MS,
	CN_REPORT_UNMAP_MS,
	CN_REPORT_COPY_MIB,
	CN_REPORT_COPY_MS,
	CN_REPORT_RESERVE_MS,
	CN_REPORT_FOOTPRINT_MIB,
	CN_REPORT_LIGHT_MIB,
	CN_REPORT_LIGHT_MS,
};
void cn_report_figure(struct cn_agent *ag, enum cn_report_figure f, double v);
/* The status's counters, each one more by cn_report_count. */
enum cn_report_counter {
	CN_REPORT_NAPS = CN_REPORT_LIGHT_MS + 1, /* numbered on: one table of both */
	CN_REPORT_NAPS_IDLE,
	CN_REPORT_NAPS_ASKED,
	CN_REPORT_NAPS_ROOM,
	CN_REPORT_NAPS_FULL_HOST,
	CN_REPORT_NAPS_FULL_EXCLUSIVE,
	CN_REPORT_NAPS_FULL_DISK,
	CN_REPORT_WAKES,
	CN_REPORT_RESTORES,
	CN_REPORT_ROOMS_MADE,
};
void cn_report_count(struct cn_agent *ag, enum cn_report_counter c);
/* The room a nap of it may take on disk where the host has none ([nap] to = auto), in MiB. */
void cn_report_disk_room(struct cn_agent *ag, double mib);
/* A prepared host copy held (host_mib), or not (-1). */
void cn_report_prepared(struct cn_agent *ag, bool prepared, double host_mib);

/* The naps' fields: its nap state and why, for which process it napped (0 and < 0: not for
 * one), how deep (light, full), since how long ago its CUDA has been idle (cn_report_active:
 * it works), the delay its last waking call saw. */
void cn_report_nap(struct cn_agent *ag, enum cn_nap state, const char *why);
void cn_report_nap_for(struct cn_agent *ag, int pid, double mib, const char *user);
/* The node pager's last word on this process's needs (room_last). */
void cn_report_room(struct cn_agent *ag, const char *line);
void cn_report_nap_depth(struct cn_agent *ag, enum cn_depth depth);
/* Why its nap is full: auto's choice or the INI's (CN_DEPTH_WHY_NONE for a light one). */
void cn_report_depth_why(struct cn_agent *ag, enum cn_depth_why why);
void cn_report_idle_since(struct cn_agent *ag, double ago_ms);
void cn_report_active(struct cn_agent *ag);
void cn_report_wake_ms(struct cn_agent *ag, double ms);

/* A restored NCCL rank's neighbours of another job (beside.c), "" when none. */
void cn_report_beside(struct cn_agent *ag, const char *beside);

/* The status's peer field: the access the process's GPUs have to each other's memory, then what
 * cudanap owns of it (cuda/peers.c, cuda/owned.c); more said after it. */
void cn_report_shared(struct cn_agent *ag);
void cn_report_peer_more(struct cn_agent *ag, const char *more);

/* A query's fields (query.c): whether a suspend would go, and why not; a thread inside a call;
 * where its memory is now (the list, in all, the first GPU's model); the room for its host copy
 * (what it needs, what there is, which bound); the estimates and their source. */
void cn_report_ask(struct cn_agent *ag, enum cn_ask ask, const char *why_not);
void cn_report_inside(struct cn_agent *ag, const char *inside);
void cn_report_gpu_now(struct cn_agent *ag, const char *gpu_now, double mib, const char *model);
void cn_report_host_room(struct cn_agent *ag, double need_mib, double room_mib, const char *bound);
void cn_report_estimate(struct cn_agent *ag, double suspend_s, double resume_s, const char *source);
/* The query answered: its time and count, the communicators made since the last action, the
 * file written, its timestamp left the last action's. */
void cn_report_queried(struct cn_agent *ag);

#endif
