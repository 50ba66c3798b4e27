/* report: what the agent tells of its actions. See report.c. */
#ifndef CN_REPORT_H
#define CN_REPORT_H

#include <stdbool.h>

#include "cn_status.h"
#include "ctl_proto.h"

/* A fresh process's status (at start, and in a forked child): its first status file. */
void cn_report_start(void);

/* Start an action (enum cn_action) in the status; not written yet: the first driver call says
 * where the process stands first. */
void cn_report_begin(int action);

/* Write the status file as it stands. */
void cn_report_publish(void);
/* The UTC time ago_ms before now, as the status file writes its times: 2026-11-25T17:49:41.123Z. */
void cn_report_time(char *out, size_t len, double ago_ms);
/* The status file written as it stands, its timestamp unchanged (a query is no action). */
void cn_report_write(void);

/* The time a driver call took, as a step of the action. */
void cn_report_step(enum cn_step s, const struct cn_resp *r);

/* The end of an action, in this order: the status file, one log line, then the INI's hook. A
 * success is called by its action (suspended, resumed, napped, woke, prepared). What it ended
 * with comes back. */
struct cn_outcome cn_report_finish(const struct cn_resp *r, const char *message);
/* The same for an action that found nothing to do (the process was where it was asked to be):
 * no hook. */
struct cn_outcome cn_report_already(const struct cn_resp *r, const char *message);
/* The same for an action that ended before any driver call, with one of cudanap's results. */
struct cn_outcome cn_report_fail(int result, const char *message);
/* What the last action ended with, as the status says. */
struct cn_outcome cn_report_outcome(void);

/* A signal that asks for the state the process is already in, as recorded: counted, the last real
 * outcome kept. False when it is news after all (the driver contradicts the record). */
bool cn_report_redundant(const struct cn_status *before, const struct cn_resp *r, const char *msg);

/* A driver call that has not answered after s seconds. */
void cn_report_waiting(const char *op, unsigned s);

/* Where the process's memory is, into the status (not written yet): the GPUs it is on, those it
 * started on and, asleep, those a resume puts it on by the INI as read now. */
void cn_report_gpus(bool asleep);

/* At process exit: remove the status file, and never write it again. */
void cn_report_exit(void);
/* The same from _exit(), which may be called anywhere, a signal handler included: unlink only. */
void cn_report_exit_now(void);

/* The status's peer field: the access the process's GPUs have to each other's memory, then what
 * cudanap owns of it (cuda/peers.c, cuda/owned.c). */
void cn_report_shared(struct cn_status *st);

#endif
