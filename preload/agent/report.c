/* report: what the agent tells, in this order: the status file (<status dir>/<pid>.json), one log
 * line, then the INI's hook. The agent thread is the only writer of the status file; the process's
 * exit removes it, under a lock, so that no write comes after. */
#define _GNU_SOURCE
#include "agent/report.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_dirs.h"
#include "cn_gpumap.h"
#include "cn_notes.h"
#include "cn_proc.h"
#include "cn_words.h"
#include "cuda_abi.h"
#include "agent/launch.h"
#include "cuda/hostbuf.h"
#include "cuda/light.h"
#include "agent/depth.h"
#include "agent/log.h"
#include "agent/route.h"
#include "cuda/owned.h"
#include "cuda/peers.h"
#include "hostcopy/hibernate.h"
#include "hostcopy/staging.h"
#include "agent/state.h"

/* The status's nccl and nccl_keys: route.c says them. */
static void describe_nccl(struct cn_agent *ag, struct cn_status *st)
{
	cn_route_describe(&ag->cfg, st->nccl, sizeof(st->nccl), st->nccl_keys,
			  sizeof(st->nccl_keys));
}

/* What a light nap would give back now; -1 when it would nap fully. */
static void light_able(struct cn_agent *ag)
{
	enum cn_depth_why why;

	ag->status.light_able_mib =
		cn_depth_light(&ag->cfg, &why, NULL, 0) ? (double)cn_owned_bytes() / (1 << 20) : -1;
	ag->status.host_kept_mib = (double)cn_hostbuf_held_bytes() / (1 << 20);
}

void cn_report_shared(struct cn_agent *ag)
{
	struct cn_status *st = &ag->status;
	char owned[sizeof(st->peer) / 2];
	size_t o, w;

	light_able(ag);

	/* What cudanap owns is said whole, the access between the GPUs in the room left (a long
	 * list of it is cut, peerlist.c). */
	w = cn_owned_describe(owned, sizeof(owned));
	cn_peers_describe(ag->where.gpus, (int)ag->where.n_gpus, st->peer,
			  sizeof(st->peer) - (w ? w + 2 : 0));
	o = strlen(st->peer);
	if (w)
		snprintf(st->peer + o, sizeof(st->peer) - o, "%s%s", o ? "; " : "", owned);
}

/* What the process's exit needs: file-scope, since exit() and _exit() come in an app thread, or
 * anywhere (_exit is async-signal-safe), with no context to hand them. */
static struct {
	pthread_mutex_t publishing; /* a status write and the removal at exit exclude each other */
	bool exiting;		    /* the status file is gone: never written again */
	char status_path[4200];	    /* for the removal at _exit: unlink only */
	char notes_at[4200];	    /* "<status dir>/<pid>.", which the notes' names complete */
	size_t notes_len;
} at_exit;

/* Every note of this process's removed (cn_notes_names): what the command line left for it and
 * what it said, none of which means anything once it is gone. At _exit too: memcpy and unlink
 * only. */
static void remove_notes(void)
{
	char path[sizeof(at_exit.notes_at) + 32];

	memcpy(path, at_exit.notes_at, at_exit.notes_len);
	for (size_t i = 0; at_exit.notes_len && cn_notes_names[i]; i++) {
		size_t n = strlen(cn_notes_names[i]) + 1;

		if (at_exit.notes_len + n > sizeof(path))
			continue;
		memcpy(path + at_exit.notes_len, cn_notes_names[i], n);
		unlink(path);
	}
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

void cn_report_publish(struct cn_agent *ag)
{
	cn_report_time(ag->status.timestamp, sizeof(ag->status.timestamp), 0);
	cn_report_write(ag);
}

void cn_report_write(struct cn_agent *ag)
{
	struct cn_status *st = &ag->status;
	char why[300];
	int r;

	pthread_mutex_lock(&at_exit.publishing);
	r = at_exit.exiting ? 0 : cn_status_write(ag->cfg.status_dir, st);
	/* A dir removed since the start (a tmp cleaner) and made again by another user is not ours:
	 * nothing is written there, said once. */
	if (r < 0 && !ag->unwritten_said) {
		if (cn_dirs_status_check(ag->cfg.status_dir, why, sizeof(why)) == 0)
			snprintf(why, sizeof(why), "status dir %s: %s", ag->cfg.status_dir,
				 strerror(-r));
		cn_log(&ag->cfg, CN_LOG_ERROR,
		       "%s; status not written: the command line cannot see this process until it "
		       "is",
		       why);
	}
	ag->unwritten_said = r < 0;
	pthread_mutex_unlock(&at_exit.publishing);
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

void cn_report_start(struct cn_agent *ag)
{
	struct cn_status *st = &ag->status;

	pthread_mutex_init(&at_exit.publishing,
			   NULL); /* in a child: the parent's agent may have held it */
	at_exit.exiting = false;
	cn_status_init(st, (int)getpid());
	cn_status_path(ag->cfg.status_dir, st->pid, at_exit.status_path,
		       sizeof(at_exit.status_path));
	cn_notes_path(ag->cfg.status_dir, st->pid, "", at_exit.notes_at, sizeof(at_exit.notes_at));
	at_exit.notes_len = strlen(at_exit.notes_at);
	st->starttime = cn_proc_starttime(st->pid);
	st->suspend_signal = ag->cfg.suspend_signal;
	st->resume_signal = ag->cfg.resume_signal;
	read_command(st->command, sizeof(st->command));
	st->state = CN_STATE_RUNNING;
	st->action = CN_ACTION_START;
	st->result = CN_RES_OK;
	st->nap = ag->cfg.nap_idle_s ? CN_NAP_AWAKE : CN_NAP_OFF;
	cn_report_publish(ag);
}

/* The GPUs of use, where the process's memory is, and those they came from (its home). */
static void gpus_of(struct cn_agent *ag, const struct cn_gpu_use *use, uint32_t k)
{
	const struct cn_uuid *all = ag->where.gpus;
	struct cn_uuid now[CN_MAX_GPUS], home[CN_MAX_GPUS];
	struct cn_status *st = &ag->status;
	int n = (int)ag->where.n_gpus;

	for (uint32_t u = 0; u < k && u < CN_MAX_GPUS; u++) {
		now[u] = use[u].uuid;
		cn_gpumap_home_of(ag->where.moves, ag->where.n_moves, &now[u], &home[u]);
	}
	cn_gpumap_list(now, (int)k, all, n, st->gpus, sizeof(st->gpus));
	cn_gpumap_list(home, (int)k, all, n, st->home_gpus, sizeof(st->home_gpus));
	st->restore_gpus[0] = '\0';
}

void cn_report_gpus(struct cn_agent *ag, bool asleep)
{
	struct cn_uuid to[CN_MAX_GPUS];
	struct cn_status *st = &ag->status;
	int k = (int)ag->where.n_use;

	gpus_of(ag, ag->where.use, ag->where.n_use);
	if (!asleep || cn_state_targets(&ag->where, &ag->cfg.gpu_map, to) < 0)
		return;
	cn_gpumap_list(to, k, ag->where.gpus, (int)ag->where.n_gpus, st->restore_gpus,
		       sizeof(st->restore_gpus));
}

void cn_report_gpus_using(struct cn_agent *ag, const struct cn_gpu_use *use, uint32_t n)
{
	if (n)
		gpus_of(ag, use, n > CN_MAX_GPUS ? CN_MAX_GPUS : n);
}

void cn_report_begin(struct cn_agent *ag, int action)
{
	struct cn_status *st = &ag->status;

	ag->began_ms = cn_clock_ms();
	cn_status_new_action(st, action);
	describe_nccl(ag, st);
	st->footprint_mib = cn_state_footprint_mib(&ag->where);
	st->prepared = ag->held.prepared_bytes > 0;
	if (st->prepared)
		st->host_mib = (double)ag->held.prepared_bytes / (1 << 20);
}

void cn_report_step(struct cn_agent *ag, enum cn_step s, const struct cn_resp *r)
{
	ag->status.step_ms[s] = r->elapsed_ms;
}

void cn_report_message(struct cn_agent *ag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ag->status.message, sizeof(ag->status.message), fmt, ap);
	va_end(ap);
}

void cn_report_step_ms(struct cn_agent *ag, enum cn_step s, double ms)
{
	ag->status.step_ms[s] = ms;
}

void cn_report_call_ns(struct cn_agent *ag, unsigned long long ns)
{
	ag->status.call_ns = ns;
}

/* Where each figure and counter is in the ag->status. */
static const size_t field_at[] = {
	[CN_REPORT_STAGED_MIB] = offsetof(struct cn_status, staged_mib),
	[CN_REPORT_PREFAULT_MS] = offsetof(struct cn_status, prefault_ms),
	[CN_REPORT_UNMAP_MS] = offsetof(struct cn_status, unmap_ms),
	[CN_REPORT_COPY_MIB] = offsetof(struct cn_status, copy_mib),
	[CN_REPORT_COPY_MS] = offsetof(struct cn_status, copy_ms),
	[CN_REPORT_RESERVE_MS] = offsetof(struct cn_status, reserve_ms),
	[CN_REPORT_FOOTPRINT_MIB] = offsetof(struct cn_status, footprint_mib),
	[CN_REPORT_LIGHT_MIB] = offsetof(struct cn_status, light_mib),
	[CN_REPORT_LIGHT_MS] = offsetof(struct cn_status, light_ms),
	[CN_REPORT_NAPS] = offsetof(struct cn_status, naps),
	[CN_REPORT_NAPS_IDLE] = offsetof(struct cn_status, naps_idle),
	[CN_REPORT_NAPS_ASKED] = offsetof(struct cn_status, naps_asked),
	[CN_REPORT_NAPS_ROOM] = offsetof(struct cn_status, naps_room),
	[CN_REPORT_NAPS_FULL_HOST] = offsetof(struct cn_status, naps_full_host),
	[CN_REPORT_NAPS_FULL_EXCLUSIVE] = offsetof(struct cn_status, naps_full_exclusive),
	[CN_REPORT_NAPS_FULL_DISK] = offsetof(struct cn_status, naps_full_disk),
	[CN_REPORT_WAKES] = offsetof(struct cn_status, wakes),
	[CN_REPORT_RESTORES] = offsetof(struct cn_status, restores),
	[CN_REPORT_ROOMS_MADE] = offsetof(struct cn_status, rooms_made),
};

static void *field(struct cn_agent *ag, unsigned f)
{
	return (char *)&ag->status + field_at[f];
}

void cn_report_figure(struct cn_agent *ag, enum cn_report_figure f, double v)
{
	*(double *)field(ag, f) = v;
}

void cn_report_disk_room(struct cn_agent *ag, double mib)
{
	ag->status.nap_disk_mib = mib;
}

void cn_report_count(struct cn_agent *ag, enum cn_report_counter c)
{
	(*(unsigned long *)field(ag, c))++;
}

void cn_report_prepared(struct cn_agent *ag, bool prepared, double host_mib)
{
	ag->status.prepared = prepared;
	ag->status.host_mib = host_mib;
}

void cn_report_nap(struct cn_agent *ag, enum cn_nap state, const char *why)
{
	ag->status.nap = state;
	snprintf(ag->status.nap_why, sizeof(ag->status.nap_why), "%s", why);
}

void cn_report_nap_for(struct cn_agent *ag, int pid, double mib, const char *user)
{
	ag->status.nap_for_pid = pid;
	ag->status.nap_for_mib = mib;
	snprintf(ag->status.nap_for_user, sizeof(ag->status.nap_for_user), "%s", user ? user : "");
}

void cn_report_room(struct cn_agent *ag, const char *line)
{
	snprintf(ag->status.room_last, sizeof(ag->status.room_last), "%s", line);
}

void cn_report_depth_why(struct cn_agent *ag, enum cn_depth_why why)
{
	ag->status.depth_why = why;
}

void cn_report_nap_depth(struct cn_agent *ag, enum cn_depth depth)
{
	ag->status.nap_depth = depth;
}

void cn_report_idle_since(struct cn_agent *ag, double ago_ms)
{
	cn_report_time(ag->status.idle_since, sizeof(ag->status.idle_since), ago_ms);
	light_able(ag); /* what making room would take from it, as of the idleness it says */
}

void cn_report_active(struct cn_agent *ag)
{
	ag->status.idle_since[0] = '\0';
}

void cn_report_wake_ms(struct cn_agent *ag, double ms)
{
	ag->status.last_wake_ms = ms;
	cn_counts_observe(&ag->status.counts.wake, ms / 1000);
}

void cn_report_beside(struct cn_agent *ag, const char *beside)
{
	snprintf(ag->status.beside, sizeof(ag->status.beside), "%s", beside);
}

void cn_report_peer_more(struct cn_agent *ag, const char *more)
{
	struct cn_status *st = &ag->status;

	snprintf(st->peer + strlen(st->peer), sizeof(st->peer) - strlen(st->peer), "%s", more);
}

void cn_report_ask(struct cn_agent *ag, enum cn_ask ask, const char *why_not)
{
	ag->status.suspendable = ask;
	snprintf(ag->status.why_not, sizeof(ag->status.why_not), "%s", why_not);
}

void cn_report_inside(struct cn_agent *ag, const char *inside)
{
	snprintf(ag->status.inside, sizeof(ag->status.inside), "%s", inside);
}

void cn_report_gpu_now(struct cn_agent *ag, const char *gpu_now, double mib, const char *model)
{
	struct cn_status *st = &ag->status;

	snprintf(st->gpu_now, sizeof(st->gpu_now), "%s", gpu_now);
	st->gpu_now_mib = mib;
	snprintf(st->gpu_model, sizeof(st->gpu_model), "%s", model);
}

void cn_report_host_room(struct cn_agent *ag, double need_mib, double room_mib, const char *bound)
{
	struct cn_status *st = &ag->status;

	st->host_need_mib = need_mib;
	st->host_room_mib = room_mib;
	snprintf(st->host_bound, sizeof(st->host_bound), "%s", bound);
}

void cn_report_estimate(struct cn_agent *ag, double suspend_s, double resume_s, const char *source)
{
	struct cn_status *st = &ag->status;

	st->est_suspend_s = suspend_s;
	st->est_resume_s = resume_s;
	snprintf(st->est_source, sizeof(st->est_source), "%s", source);
}

void cn_report_queried(struct cn_agent *ag)
{
	struct cn_status *st = &ag->status;

	cn_report_time(st->query_time, sizeof(st->query_time), 0);
	st->query_seq++;
	describe_nccl(ag, st); /* communicators made since the last action */
	cn_report_write(ag);   /* its timestamp stays the last action's */
}

void cn_report_waiting(struct cn_agent *ag, const char *op, unsigned s)
{
	cn_log(&ag->cfg, CN_LOG_ERROR, "the driver's %s has not answered after %u s; still waiting",
	       op, s);
	snprintf(ag->status.message, sizeof(ag->status.message),
		 "waiting for the driver's %s since %u s", op, s);
	cn_report_publish(ag);
}

static void fmt_secs(double ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%.1f ms", ms);
	else
		snprintf(buf, len, "%.2f s", ms / 1000);
}

/* What a success is called, by its action: the log line's first word and the hook's event. */
static const char *done_word(int action)
{
	switch (action) {
	case CN_ACTION_SUSPEND:
		return "suspended";
	case CN_ACTION_NAP:
		return "napped";
	case CN_ACTION_RESUME:
		return "resumed";
	case CN_ACTION_WAKE:
		return "woke";
	case CN_ACTION_PREPARE:
		return "prepared";
	}
	return "done";
}

/* A nap's and a wake's failures are tried again (nap.c says them): no failure hook for them. */
static bool napping(int action)
{
	return action == CN_ACTION_NAP || action == CN_ACTION_WAKE;
}

static void run_hook(struct cn_agent *ag, const struct cn_outcome *o)
{
	const struct cn_config *cfg = &ag->cfg;
	int action = ag->status.action;
	const char *hook = NULL, *event = NULL;
	int rc;

	if (o->result != CN_RES_OK && o->state != CN_STATE_NO_CUDA && !napping(action))
		hook = cfg->on_failure, event = "failure";
	else if (o->result == CN_RES_OK && (action == CN_ACTION_SUSPEND || action == CN_ACTION_NAP))
		hook = cfg->on_suspended, event = done_word(action);
	else if (o->result == CN_RES_OK && (action == CN_ACTION_RESUME || action == CN_ACTION_WAKE))
		hook = cfg->on_resumed, event = done_word(action);
	if (!hook || !hook[0])
		return;
	rc = cn_launch_hook(cfg, hook, event, cn_status_state(&ag->status),
			    cn_status_result(&ag->status));
	if (rc == -ETIMEDOUT)
		cn_log(cfg, CN_LOG_ERROR, "%s hook killed after %u ms", event,
		       cfg->hook_timeout_ms);
	else if (rc != 0)
		cn_log(cfg, CN_LOG_ERROR, "%s hook exited with %d", event, rc);
}

/* The outcome of r: its result, and the state it leaves (no CUDA for a process without it or a
 * machine without a driver; the state recorded when the driver's is not known). */
static struct cn_outcome outcome_of(struct cn_agent *ag, const struct cn_resp *r)
{
	struct cn_outcome o = { r->state, r->result };

	if (r->result == CUDA_ERROR_NOT_INITIALIZED || r->result == CN_RES_NO_DRIVER)
		o.state = CN_STATE_NO_CUDA;
	else if (o.state < CN_STATE_RUNNING || o.state > CN_STATE_FAILED)
		o.state = ag->status.state;
	return o;
}

/* GPU memory given back, and for how long (cudanap metrics): a release begins when an action
 * leaves the process checkpointed and ends when one leaves it otherwise; what it gave back is
 * what it held on each GPU at the checkpoint (the controller's count). */
static void count_release(struct cn_agent *ag, struct cn_status *st)
{
	struct timespec ts;
	double now, bytes = 0;
	size_t o = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	for (uint32_t u = 0; u < ag->where.n_use; u++)
		bytes += (double)ag->where.use[u].bytes;
	if (st->state == CN_STATE_CHECKPOINTED && st->released_since < 0) {
		st->released_since = now;
		st->released_gpus[0] = '\0';
		for (uint32_t u = 0; u < ag->where.n_use && o < sizeof(st->released_gpus); u++)
			o += (size_t)snprintf(st->released_gpus + o, sizeof(st->released_gpus) - o,
					      "%s%d:%.0f", o ? "," : "",
					      cn_uuid_index(ag->where.gpus, (int)ag->where.n_gpus,
							    &ag->where.use[u].uuid),
					      (double)ag->where.use[u].bytes / (1 << 20));
	} else if (st->state != CN_STATE_CHECKPOINTED && st->released_since >= 0) {
		st->released_byte_s =
			(st->released_byte_s < 0 ? 0 : st->released_byte_s) +
			bytes * (now > st->released_since ? now - st->released_since : 0);
		st->released_since = -1;
		st->released_gpus[0] = '\0';
	}
}

/* The action counted by its result, and a success's time in its histogram (cudanap metrics). Not
 * counted: what found nothing to do (already there, no CUDA), and a wake's try that waits for
 * room or for a restored NCCL job to leave (the wake goes on: it counts when it ends). */
static void count_action(struct cn_status *st, const struct cn_outcome *o, bool already)
{
	int a = st->action;
	bool waits =
		a == CN_ACTION_WAKE && (o->result == CN_RES_NO_ROOM || o->result == CN_RES_BESIDE);

	if (already || o->state == CN_STATE_NO_CUDA || waits || a == CN_ACTION_START)
		return;
	cn_counts_add(&st->counts, a, cn_status_result(st));
	if (o->result != CN_RES_OK)
		return;
	if (a == CN_ACTION_SUSPEND || a == CN_ACTION_NAP)
		cn_counts_observe(&st->counts.suspend, st->total_ms / 1000);
	else if (a == CN_ACTION_RESUME || a == CN_ACTION_WAKE)
		cn_counts_observe(&st->counts.resume, st->total_ms / 1000);
}

/* What its host copy holds as the action ends, whichever action it was (a resume refused for
 * room leaves it asleep, its copy where it was): asleep, the copy the checkpoint mapped, or,
 * where cudanap did not see it map one ([performance] hugepages = false), the GPU memory the
 * driver copied; on disk, what of it is still in RAM and the file's blocks; a light nap's, what
 * it has not put back; a prepared one's. */
static void held_copy(struct cn_agent *ag, struct cn_status *st)
{
	const struct cn_held *h = &ag->held;
	const double mib = 1 << 20;

	st->host_mib = st->disk_mib = -1;
	if (st->state == CN_STATE_CHECKPOINTED && h->hib_addr) {
		st->host_mib = (double)cn_hibernate_resident(h->hib_addr, h->hib_len) / mib;
		st->disk_mib = (double)cn_hibernate_disk_bytes() / mib;
	} else if (st->state == CN_STATE_CHECKPOINTED) {
		st->host_mib = h->copy_bytes ? (double)h->copy_bytes / mib
					     : cn_state_footprint_mib(&ag->where);
	} else if (cn_light_holding()) {
		st->host_mib = (double)cn_light_left(-1) / mib;
	} else if (h->prepared_bytes) {
		st->host_mib = (double)h->prepared_bytes / mib;
	}
}

/* The status file, then the log line; the hook when asked. */
static struct cn_outcome finish(struct cn_agent *ag, const struct cn_resp *r, const char *message,
				bool already)
{
	struct cn_status *st = &ag->status;
	struct cn_outcome o = outcome_of(ag, r);
	bool ok = o.result == CN_RES_OK;
	char total[32], steps[200];
	size_t n;

	st->state = o.state;
	st->busy = false;
	st->seq++;
	held_copy(ag, st);
	count_release(ag, st);
	describe_nccl(ag, st);
	cn_report_shared(ag);
	st->result = o.result;
	snprintf(st->result_name, sizeof(st->result_name), "%s", o.result > 0 ? r->name : "");
	snprintf(st->message, sizeof(st->message), "%s", message);
	/* From the agent's wake to now: what the user waited for, the steps and the rest. */
	st->total_ms = cn_clock_ms() - ag->began_ms;
	n = cn_status_steps(st, steps, sizeof(steps));
	count_action(st, &o, already);
	cn_report_publish(ag);

	fmt_secs(st->total_ms, total, sizeof(total));
	if (napping(st->action))
		; /* nap.c says it, with the nap's own figures, and a failure once */
	else if (ok && n && !already)
		cn_log(&ag->cfg, CN_LOG_INFO, "%s in %s (%s)", done_word(st->action), total, steps);
	else if (ok || o.state == CN_STATE_NO_CUDA)
		cn_log(&ag->cfg, CN_LOG_INFO, "%s", message);
	else
		cn_log(&ag->cfg, CN_LOG_ERROR, "%s failed: %s: %s; state %s",
		       cn_outcome_action_to_string(st->action), cn_status_result(st), message,
		       cn_status_state(st));
	/* The host copy a restore gave back is unmapped now that the outcome is out. */
	cn_staging_free_retired_soon();
	if (!already)
		run_hook(ag, &o);
	return o;
}

struct cn_outcome cn_report_finish(struct cn_agent *ag, const struct cn_resp *r,
				   const char *message)
{
	return finish(ag, r, message, false);
}

struct cn_outcome cn_report_already(struct cn_agent *ag, const struct cn_resp *r,
				    const char *message)
{
	return finish(ag, r, message, true);
}

struct cn_outcome cn_report_fail(struct cn_agent *ag, int result, const char *message)
{
	struct cn_resp r;

	memset(&r, 0, sizeof(r));
	r.result = result;
	r.state = CN_STATE_UNKNOWN;
	return finish(ag, &r, message, false);
}

struct cn_outcome cn_report_outcome(struct cn_agent *ag)
{
	return (struct cn_outcome){ ag->status.state, ag->status.result };
}

/* An app's handler that re-raises our signal (faulthandler.register(..., chain=True) does) makes
 * one right after the real action. It is counted, so that a waiter sees it handled, but the last
 * real outcome stays in the status file for whoever reads it. A recorded state the driver
 * contradicts is news, and reported. */
bool cn_report_redundant(struct cn_agent *ag, const struct cn_status *before,
			 const struct cn_resp *r, const char *msg)
{
	if (r->state < CN_STATE_RUNNING || r->state != before->state || before->busy)
		return false;
	ag->status = *before;
	ag->status.seq++;
	describe_nccl(ag, &ag->status);
	cn_report_publish(ag);
	cn_log(&ag->cfg, CN_LOG_INFO, "%s", msg);
	return true;
}

void cn_report_exit(struct cn_agent *ag)
{
	pthread_mutex_lock(&at_exit.publishing);
	at_exit.exiting = true;
	cn_status_remove(ag->cfg.status_dir, ag->status.pid);
	remove_notes();
	pthread_mutex_unlock(&at_exit.publishing);
}

void cn_report_exit_now(void)
{
	unlink(at_exit.status_path);
	remove_notes();
}
