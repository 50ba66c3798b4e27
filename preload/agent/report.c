/* report: what the agent tells, in this order: the status file (<status dir>/<pid>.json), one log
 * line, then the INI's hook. The agent thread is the only writer of the status file; the process's
 * exit removes it, under a lock, so that no write comes after. */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "state.h"
#include "clock.h"
#include "cn_gpumap.h"
#include "cuda_abi.h"
#include "hooks.h"
#include "nccl.h"
#include "log.h"
#include "staging.h"
#include "cn_notes.h"
#include "cn_proc.h"

static pthread_mutex_t publishing; /* a status write and the removal at exit exclude each other */
static double t_begin;		   /* CLOCK_MONOTONIC ms when the action began */
static bool exiting;
static char status_path[4200]; /* for the removal at _exit, which must be async-signal-safe */
static char calls_path[4200];  /* CUDANAP_DEBUG=calls: the counts beside it */

static const char *state_name(int s)
{
	switch (s) {
	case CN_STATE_RUNNING:
		return "running";
	case CN_STATE_LOCKED:
		return "locked";
	case CN_STATE_CHECKPOINTED:
		return "checkpointed";
	case CN_STATE_FAILED:
		return "failed";
	}
	return NULL;
}

void cn_report_time(char *out, size_t len, double ago_ms)
{
	struct timespec ts;
	struct tm tm;
	char when[24];
	long long ns;
	time_t sec;

	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - (long long)(ago_ms * 1e6);
	sec = (time_t)(ns / 1000000000LL);
	gmtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, len, "%s.%03dZ", when, (int)(ns % 1000000000LL / 1000000));
}

void cn_report_publish(void)
{
	cn_report_time(cn_ag.st.timestamp, sizeof(cn_ag.st.timestamp), 0);
	cn_report_write();
}

void cn_report_write(void)
{
	struct cn_status *st = &cn_ag.st;

	pthread_mutex_lock(&publishing);
	if (!exiting && cn_status_write(cn_ag.cfg.status_dir, st) < 0)
		cn_log(&cn_ag.cfg, CN_LOG_DEBUG, "cannot write status in %s", cn_ag.cfg.status_dir);
	pthread_mutex_unlock(&publishing);
}

/* The command line, its NULs made spaces. */
static void read_command(char *out, size_t len)
{
	char buf[256] = "";
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;

	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; i + 1 < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	snprintf(out, len, "%s", buf);
}

void cn_report_start(void)
{
	struct cn_status *st = &cn_ag.st;

	pthread_mutex_init(&publishing, NULL); /* in a child: the parent's agent may have held it */
	exiting = false;
	cn_status_init(st, (int)getpid());
	cn_status_path(cn_ag.cfg.status_dir, st->pid, status_path, sizeof(status_path));
	cn_notes_path(cn_ag.cfg.status_dir, st->pid, "calls", calls_path, sizeof(calls_path));
	st->starttime = cn_proc_starttime(st->pid);
	st->suspend_signal = cn_ag.cfg.suspend_signal;
	st->resume_signal = cn_ag.cfg.resume_signal;
	read_command(st->command, sizeof(st->command));
	snprintf(st->state, sizeof(st->state), "running");
	snprintf(st->action, sizeof(st->action), "start");
	snprintf(st->result, sizeof(st->result), "ok");
	snprintf(st->nap, sizeof(st->nap), "%s", cn_ag.cfg.nap_idle_s ? "awake" : "off");
	cn_report_publish();
}

void cn_report_gpus(bool asleep)
{
	const unsigned char(*all)[16] = (const unsigned char(*)[16])cn_ag.gpus;
	unsigned char now[CN_MAX_GPUS][16], home[CN_MAX_GPUS][16], to[CN_MAX_GPUS][16];
	struct cn_status *st = &cn_ag.st;
	int k = (int)cn_ag.n_use, n = (int)cn_ag.n_gpus, want[CN_MAX_GPUS];
	char why[200];

	for (int u = 0; u < k; u++) {
		memcpy(now[u], cn_ag.use[u].uuid, 16);
		cn_gpumap_home_of(cn_ag.moves, cn_ag.n_moves, now[u], home[u]);
	}
	cn_gpumap_list((const unsigned char(*)[16])now, k, all, n, st->gpus, sizeof(st->gpus));
	cn_gpumap_list((const unsigned char(*)[16])home, k, all, n, st->home_gpus,
		       sizeof(st->home_gpus));
	st->restore_gpus[0] = '\0';
	if (!asleep || !n ||
	    cn_gpumap_want(cn_ag.cfg.pairs, cn_ag.cfg.n_pairs, all, n, want, why, sizeof(why)) < 0)
		return;
	for (int u = 0; u < k; u++) {
		int h = cn_gpumap_index(all, n, home[u]);

		memcpy(to[u], h >= 0 ? cn_ag.gpus[want[h]] : home[u], 16);
	}
	cn_gpumap_list((const unsigned char(*)[16])to, k, all, n, st->restore_gpus,
		       sizeof(st->restore_gpus));
}

void cn_report_begin(const char *action)
{
	struct cn_status *st = &cn_ag.st;

	t_begin = cn_clock_ms();
	cn_status_new_action(st, action);
	cn_nccl_describe(st->nccl, sizeof(st->nccl));
	st->footprint_mib = cn_state_footprint_mib();
	st->prepared = cn_ag.prepared_bytes > 0;
	if (st->prepared)
		st->host_mib = (double)cn_ag.prepared_bytes / (1 << 20);
}

void cn_report_step(enum cn_step s, const struct cn_resp *r)
{
	cn_ag.st.step_ms[s] = r->elapsed_ms;
}

void cn_report_waiting(const char *op, unsigned s)
{
	cn_log(&cn_ag.cfg, CN_LOG_ERROR,
	       "the driver's %s has not answered after %u s; still waiting", op, s);
	snprintf(cn_ag.st.message, sizeof(cn_ag.st.message),
		 "waiting for the driver's %s since %u s", op, s);
	cn_report_publish();
}

static void fmt_secs(double ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%.1f ms", ms);
	else
		snprintf(buf, len, "%.2f s", ms / 1000);
}

static void run_hook(const struct cn_resp *r, const char *what)
{
	const struct cn_config *cfg = &cn_ag.cfg;
	const char *hook = NULL, *event = cn_ag.st.action;
	bool ok = r->result == CUDA_SUCCESS;
	int rc;

	bool napping = strcmp(event, "nap") == 0 || strcmp(event, "wake") == 0;

	if (!ok && r->result != CUDA_ERROR_NOT_INITIALIZED && !napping)
		hook = cfg->on_failure, event = "failure"; /* a nap's are tried again: nap.c says */
	else if (ok && (strcmp(what, "suspended") == 0 || strcmp(what, "napped") == 0))
		hook = cfg->on_suspended, event = what;
	else if (ok && (strcmp(what, "resumed") == 0 || strcmp(what, "woke") == 0))
		hook = cfg->on_resumed, event = what;
	if (!hook || !hook[0])
		return;
	rc = cn_hooks_run(cfg, hook, event, cn_ag.st.state, cn_ag.st.result);
	if (rc == -ETIMEDOUT)
		cn_log(cfg, CN_LOG_ERROR, "%s hook killed after %u ms", event,
		       cfg->hook_timeout_ms);
	else if (rc != 0)
		cn_log(cfg, CN_LOG_ERROR, "%s hook exited with %d", event, rc);
}

void cn_report_finish(const struct cn_resp *r, const char *what, const char *message)
{
	struct cn_status *st = &cn_ag.st;
	const char *state = state_name(r->state);
	bool ok = r->result == CUDA_SUCCESS;
	char total[32], steps[200];
	size_t o;

	if (r->result == CUDA_ERROR_NOT_INITIALIZED || r->result == CN_RES_NO_DRIVER)
		state = "no-cuda";
	if (state)
		snprintf(st->state, sizeof(st->state), "%s", state);
	st->busy = false;
	st->seq++;
	cn_nccl_describe(st->nccl, sizeof(st->nccl));
	snprintf(st->result, sizeof(st->result), "%s", ok ? "ok" : r->name);
	snprintf(st->message, sizeof(st->message), "%s", message);
	/* From the agent's wake to now: what the user waited for, the steps and the rest. */
	st->total_ms = cn_clock_ms() - t_begin;
	o = cn_status_steps(st, steps, sizeof(steps));
	cn_report_publish();

	fmt_secs(st->total_ms, total, sizeof(total));
	if (strcmp(st->action, "nap") == 0 || strcmp(st->action, "wake") == 0)
		; /* nap.c says it, with the nap's own figures, and a failure once */
	else if (ok && o)
		cn_log(&cn_ag.cfg, CN_LOG_INFO, "%s in %s (%s)", what, total, steps);
	else if (ok || r->result == CUDA_ERROR_NOT_INITIALIZED)
		cn_log(&cn_ag.cfg, CN_LOG_INFO, "%s", message);
	else
		cn_log(&cn_ag.cfg, CN_LOG_ERROR, "%s failed: %s: %s; state %s", st->action, r->name,
		       message, st->state);
	/* The host copy a restore gave back is unmapped now that the outcome is out. */
	cn_staging_free_retired_soon();
	run_hook(r, what);
}

/* An app's handler that re-raises our signal (faulthandler.register(..., chain=True) does) makes
 * one right after the real action. It is counted, so that a waiter sees it handled, but the last
 * real outcome stays in the status file for whoever reads it. A recorded state the driver
 * contradicts is news, and reported. */
bool cn_report_redundant(const struct cn_status *before, const struct cn_resp *r, const char *msg)
{
	const char *now = state_name(r->state);

	if (!now || strcmp(now, before->state) != 0 || before->busy)
		return false;
	cn_ag.st = *before;
	cn_ag.st.seq++;
	cn_nccl_describe(cn_ag.st.nccl, sizeof(cn_ag.st.nccl));
	cn_report_publish();
	cn_log(&cn_ag.cfg, CN_LOG_INFO, "%s", msg);
	return true;
}

void cn_report_exit(void)
{
	pthread_mutex_lock(&publishing);
	exiting = true;
	cn_status_remove(cn_ag.cfg.status_dir, cn_ag.st.pid);
	unlink(calls_path);
	pthread_mutex_unlock(&publishing);
}

void cn_report_exit_now(void)
{
	unlink(status_path);
	unlink(calls_path);
}
