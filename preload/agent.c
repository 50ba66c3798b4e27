/* agent: the helper thread inside the target, and the state machine of cudanap.
 *
 * It waits on the wake pipe that the signal handler writes to, works out which state the signals
 * asked for, asks the controller for the driver calls that get there, and reports the outcome:
 * status file first, then one log line, then the hook. It is the only writer of the status file and
 * the only thread of ours in the target; it never calls libcuda itself. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_status.h"
#include "copy.h"
#include "cuda_abi.h"
#include "gate.h"
#include "hooks.h"
#include "log.h"
#include "preflight.h"
#include "proto.h"
#include "hibernate.h"
#include "launch.h"
#include "staging.h"

static struct {
	struct cn_config cfg; /* reloaded at each resume */
	int wake_fd, sock;
	struct cn_status st;
	pthread_mutex_t publishing; /* a status write and the removal at exit exclude each other */
	bool exiting;
	char status_path[4200]; /* for the removal at _exit, which must be async-signal-safe */
	/* What the process held per GPU at its last checkpoint, for the check before restore. */
	uint32_t n_use;
	struct cn_gpu_use use[CN_MAX_GPUS];
	bool thp;      /* transparent huge pages not [never] on this host */
	bool thp_said; /* the fallback was logged once */
	/* Hibernate: asked for at this suspend (the file is open), the disk space it found, and
	 * where the copy is once it went to disk (NULL while it is in RAM). */
	bool hib;
	uint64_t hib_free;
	void *hib_addr;
	size_t hib_len;
	char hib_note[320]; /* why this suspend's copy stayed in RAM after all, "" if it did not */
	/* cudanap prepare: a host copy faulted in ahead is held until this CLOCK_MONOTONIC time
	 * (ms), or until the suspend that uses it; 0 when none is. */
	double prepared_until;
	size_t prepared_bytes;
	/* The host copy the last checkpoint filled (0: the driver's own, not seen): what the
	 * restore copies back, which tells the gate when the copy is done. */
	size_t copy_bytes;
	/* The restore's wait for a place to copy in (gate.c; -1: it did not get that far), and
	 * whether it had one; whether it went through the gate at all. */
	double copy_wait_ms;
	bool copy_place, gated;
	/* CLOCK_MONOTONIC ms of the driver's first large copy of a restore and of its copy being
	 * done (copy.c's cues; 0: not seen), for the debug line on the restore's phases. */
	double t_first_copy, t_copied;
} ag;

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

static void publish(void)
{
	struct timespec ts;
	struct tm tm;
	char when[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ag.st.timestamp, sizeof(ag.st.timestamp), "%s.%03dZ", when,
		 (int)(ts.tv_nsec / 1000000));
	pthread_mutex_lock(&ag.publishing);
	if (!ag.exiting && cn_status_write(ag.cfg.status_dir, &ag.st) < 0)
		cn_log(&ag.cfg, CN_LOG_DEBUG, "cannot write status in %s", ag.cfg.status_dir);
	pthread_mutex_unlock(&ag.publishing);
}

static const char *op_name(uint32_t op)
{
	static const char *const names[] = { "",	"state",  "lock",   "checkpoint",
					     "restore", "unlock", "prepare" };

	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "request";
}

/* The controller is started at the first request, and again after it died: an exec'd program
 * (launch.c) can be started at any moment. */
static int ensure_controller(struct cn_resp *resp)
{
	int r;

	if (ag.sock >= 0)
		return 0;
	r = cn_controller_spawn(&ag.sock);
	if (r == 0)
		return 0;
	resp->result = CN_RES_IO;
	resp->state = CN_STATE_UNKNOWN;
	snprintf(resp->name, sizeof(resp->name), "NO_CONTROLLER");
	snprintf(resp->message, sizeof(resp->message), "cannot start %s: %s", cn_controller_path(),
		 strerror(-r));
	return -1;
}

static void controller_lost(void)
{
	if (ag.sock >= 0)
		close(ag.sock);
	ag.sock = -1;
}

/* Wait for the answer; a call that runs past the watchdog is said, in the log and the status
 * file, at every interval, and waited for: a driver call in flight cannot be taken back. */
static ssize_t wait_answer(uint32_t op, struct cn_resp *resp)
{
	struct pollfd p = { .fd = ag.sock, .events = POLLIN };
	unsigned waited = 0;
	ssize_t n;

	for (;;) {
		int r = poll(&p, 1, (int)ag.cfg.watchdog_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			waited += ag.cfg.watchdog_ms;
			cn_log(&ag.cfg, CN_LOG_ERROR,
			       "the driver's %s has not answered after %u s; still waiting",
			       op_name(op), waited / 1000);
			snprintf(ag.st.message, sizeof(ag.st.message),
				 "waiting for the driver's %s since %u s", op_name(op),
				 waited / 1000);
			publish();
			continue;
		}
		break;
	}
	do
		n = recv(ag.sock, resp, sizeof(*resp), 0);
	while (n < 0 && errno == EINTR);
	return n;
}

static ssize_t exchange(const struct cn_req *req, struct cn_resp *resp)
{
	ssize_t n;

	if (ensure_controller(resp) < 0)
		return -1;
	memset(resp, 0, sizeof(*resp));
	n = send(ag.sock, req, sizeof(*req), MSG_NOSIGNAL);
	if (n == (ssize_t)sizeof(*req))
		n = wait_answer(req->op, resp);
	return n;
}

/* One request, one answer. A controller that died is replaced, and the new one asked where the
 * process stands, so that what is reported is the truth; only a state query is asked again. */
static int call(uint32_t op, struct cn_resp *resp)
{
	struct cn_req req;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.timeout_ms = ag.cfg.lock_timeout_ms;
	if (op == CN_OP_LOCK || op == CN_OP_PREPARE) {
		req.host_check = ag.cfg.host_check;
		req.host_margin_bytes = (uint64_t)ag.cfg.host_margin_mib << 20;
		req.to_disk = ag.hib;
		req.disk_free_bytes = ag.hib_free;
		req.prepared_bytes = ag.prepared_bytes;
	}
	if (op == CN_OP_RESTORE) {
		req.n_pairs = ag.cfg.n_pairs;
		memcpy(req.pairs, ag.cfg.pairs, sizeof(req.pairs));
		req.n_use = ag.n_use;
		memcpy(req.use, ag.use, sizeof(req.use));
		req.margin_bytes = (uint64_t)ag.cfg.margin_mib << 20;
		req.reserve = ag.cfg.reserve;
	}
	n = exchange(&req, resp);
	if (n < 0 && resp->result == CN_RES_IO)
		return -1; /* no controller could be started */
	if (n != (ssize_t)sizeof(*resp)) {
		struct cn_resp now;

		controller_lost();
		cn_log(&ag.cfg, CN_LOG_ERROR,
		       "the cudanap controller died during the %s request; starting another",
		       op_name(op));
		req.op = CN_OP_STATE;
		n = exchange(&req, &now);
		if (n != (ssize_t)sizeof(now))
			controller_lost();
		if (n == (ssize_t)sizeof(now) && op == CN_OP_STATE) {
			*resp = now;
		} else {
			memset(resp, 0, sizeof(*resp));
			resp->result = CN_RES_IO;
			resp->state = n == (ssize_t)sizeof(now) ? now.state : CN_STATE_UNKNOWN;
			snprintf(resp->name, sizeof(resp->name), "CONTROLLER_GONE");
			snprintf(resp->message, sizeof(resp->message),
				 "the cudanap controller died during the %s%s", op_name(op),
				 n == (ssize_t)sizeof(now)
					 ? ""
					 : ", and no new one answers; the process's CUDA state "
					   "is unknown");
		}
	}
	if (n == (ssize_t)sizeof(*resp) && !ag.st.call_ns)
		ag.st.call_ns = resp->call_ns;
	return resp->result == CUDA_SUCCESS ? 0 : -1;
}

/* The status file says "busy" only after the first driver call: writing it first would put file
 * I/O between the signal and the driver. */
static double footprint_mib(void)
{
	double mib = 0;

	for (uint32_t i = 0; i < ag.n_use; i++)
		mib += (double)ag.use[i].bytes / (1 << 20);
	return ag.n_use ? mib : -1;
}

static void begin(const char *action)
{
	cn_status_new_action(&ag.st, action);
	ag.st.footprint_mib = footprint_mib();
	ag.st.prepared = ag.prepared_bytes > 0;
	if (ag.st.prepared)
		ag.st.host_mib = (double)ag.prepared_bytes / (1 << 20);
}

/* A prepared host copy is given back: used by a checkpoint, or not used in time. */
static void unprepare(void)
{
	cn_staging_release();
	ag.prepared_bytes = 0;
	ag.prepared_until = 0;
	ag.st.prepared = false;
	ag.st.host_mib = -1;
}

static void fmt_secs(double ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%.1f ms", ms);
	else
		snprintf(buf, len, "%.2f s", ms / 1000);
}

/* Record the outcome, then tell: status file, log line, hook, in that order. */
static void finish(const struct cn_resp *r, const char *what, const char *message)
{
	const char *hook = NULL, *event;
	const char *st = state_name(r->state);
	bool ok = r->result == CUDA_SUCCESS;
	char total[32], steps[200];
	size_t o;

	if (r->result == CUDA_ERROR_NOT_INITIALIZED || r->result == CN_RES_NO_DRIVER)
		st = "no-cuda";
	if (st)
		snprintf(ag.st.state, sizeof(ag.st.state), "%s", st);
	ag.st.busy = false;
	ag.st.seq++;
	snprintf(ag.st.result, sizeof(ag.st.result), "%s", ok ? "ok" : r->name);
	snprintf(ag.st.message, sizeof(ag.st.message), "%s", message);
	ag.st.total_ms = 0;
	for (int i = 0; i < CN_STEPS; i++)
		if (ag.st.step_ms[i] >= 0)
			ag.st.total_ms += ag.st.step_ms[i];
	o = cn_status_steps(&ag.st, steps, sizeof(steps));
	publish();

	fmt_secs(ag.st.total_ms, total, sizeof(total));
	if (ok && o)
		cn_log(&ag.cfg, CN_LOG_INFO, "%s in %s (%s)", what, total, steps);
	else if (ok || r->result == CUDA_ERROR_NOT_INITIALIZED)
		cn_log(&ag.cfg, CN_LOG_INFO, "%s", message);
	else
		cn_log(&ag.cfg, CN_LOG_ERROR, "%s failed: %s: %s; state %s", ag.st.action, r->name,
		       message, ag.st.state);
	/* The host copy a restore gave back is unmapped now that the outcome is out. */
	cn_staging_free_retired_soon();

	event = ag.st.action;
	if (!ok && r->result != CUDA_ERROR_NOT_INITIALIZED)
		hook = ag.cfg.on_failure, event = "failure";
	else if (ok && strcmp(what, "suspended") == 0)
		hook = ag.cfg.on_suspended, event = "suspended";
	else if (ok && strcmp(what, "resumed") == 0)
		hook = ag.cfg.on_resumed, event = "resumed";
	if (hook && hook[0]) {
		int rc = cn_hook_run(&ag.cfg, hook, event, ag.st.state, ag.st.result);

		if (rc == -ETIMEDOUT)
			cn_log(&ag.cfg, CN_LOG_ERROR, "%s hook killed after %u ms", event,
			       ag.cfg.hook_timeout_ms);
		else if (rc != 0)
			cn_log(&ag.cfg, CN_LOG_ERROR, "%s hook exited with %d", event, rc);
	}
}

/* A signal that asks for the state the process is already in, as recorded: an app's handler that
 * re-raises our signal (faulthandler.register(..., chain=True) does) makes one right after the real
 * action. It is counted, so that a waiter sees it handled, but the last real outcome stays in the
 * status file for whoever reads it. A recorded state the driver contradicts is news, and reported.
 */
static bool redundant(const struct cn_status *before, const struct cn_resp *r, const char *msg)
{
	const char *now = state_name(r->state);

	if (!now || strcmp(now, before->state) != 0 || before->busy)
		return false;
	ag.st = *before;
	ag.st.seq++;
	publish();
	cn_log(&ag.cfg, CN_LOG_INFO, "%s", msg);
	return true;
}

static void step(enum cn_step s, const struct cn_resp *r)
{
	ag.st.step_ms[s] = r->elapsed_ms;
}

/* The first step of either action: where the process stands. False when that ended the action
 * (no CUDA, no driver, no controller). */
static bool current_state(const char *verb, struct cn_resp *r)
{
	char msg[96];

	if (call(CN_OP_STATE, r) == 0)
		return true;
	snprintf(msg, sizeof(msg), "this process has not initialised CUDA: nothing to %s", verb);
	finish(r, verb, r->result == CUDA_ERROR_NOT_INITIALIZED ? msg : r->message);
	return false;
}

/* Re-read the INI at each action, so that a scheduler can change gpu_map while the job sleeps,
 * or the hibernate directory and the timeouts before a suspend. The signals and the status dir
 * stay as they were at start. A file broken since ends the action with its error: a suspend
 * leaves the job running, a resume leaves it suspended. */
static bool reload(const char *verb)
{
	static struct cn_config fresh; /* only the agent thread reloads */
	char err[CN_ERR_LEN];
	struct cn_resp r;

	if (!ag.cfg.path[0])
		return true;
	if (cn_config_load(&fresh, ag.cfg.path, err, sizeof(err)) < 0) {
		memset(&r, 0, sizeof(r));
		r.result = CN_RES_CONFIG;
		r.state = CN_STATE_UNKNOWN;
		snprintf(r.name, sizeof(r.name), "CONFIG_ERROR");
		snprintf(err + strlen(err), sizeof(err) - strlen(err), "; %s",
			 strcmp(verb, "suspend") == 0 ? "the process keeps running"
						      : "still suspended");
		finish(&r, verb, err);
		return false;
	}
	fresh.suspend_signal = ag.cfg.suspend_signal;
	fresh.resume_signal = ag.cfg.resume_signal;
	memcpy(fresh.status_dir, ag.cfg.status_dir, sizeof(fresh.status_dir));
	ag.cfg = fresh;
	return true;
}

/* How long a restore waits for its turn, and then for a place to copy in, at most: the last of
 * eight 4 GiB processes on one GPU waits about 0.5 s for its turn. */
#define GATE_MAX_MS 10000

/* In the driver's thread, at its first large copy of a restore: the end of its setup; out of the
 * setup's turn, into a place to copy in (gate.c). */
static void copy_turn(void)
{
	ag.t_first_copy = cn_now_ms();
	if (ag.gated)
		ag.copy_place = cn_gate_next(GATE_MAX_MS, &ag.copy_wait_ms) == 0;
}

/* In the driver's thread, when the restore's large copies are done: the place goes to the next. */
static void copy_done(void)
{
	ag.t_copied = cn_now_ms();
	cn_gate_copied();
}

/* A driver call that moves the process's memory, with libcuda's large copies run in parallel.
 * A restore takes its turn at its GPUs' gates first ([restore] take_turns), moves on to a place to
 * copy in when the driver starts copying and gives that up when the copy is done: the copies are
 * what tell, so with copy_threads = 0 there is no gate. */
static int moving_call(uint32_t op, struct cn_resp *r)
{
	struct cn_copy_stats cs;
	bool restore = op == CN_OP_RESTORE;
	double waited, t0;
	int rc;

	if (!ag.cfg.copy_threads)
		return call(op, r);
	ag.gated = false;
	if (restore && ag.cfg.take_turns) {
		unsigned char gpus[CN_MAX_GPUS][16];
		int n = 0;

		for (uint32_t i = 0; i < ag.n_use && n < CN_MAX_GPUS; i++)
			memcpy(gpus[n++], ag.use[i].uuid, 16);
		ag.gated = cn_gate_enter(ag.cfg.status_dir, (const unsigned char(*)[16])gpus, n,
					 GATE_MAX_MS, &waited) == 0;
		if (waited >= 0.1)
			ag.st.step_ms[CN_STEP_WAIT] = waited;
		if (!ag.gated)
			cn_log(&ag.cfg, CN_LOG_DEBUG,
			       "restore gate in %s not had after %.0f ms: restoring without it",
			       ag.cfg.status_dir, waited);
	}
	ag.copy_wait_ms = -1;
	ag.t_first_copy = ag.t_copied = 0;
	cn_copy_arm(ag.cfg.copy_threads, restore ? copy_turn : NULL, restore ? copy_done : NULL,
		    restore ? ag.copy_bytes : 0);
	t0 = cn_now_ms();
	rc = call(op, r);
	cn_copy_disarm(&cs);
	cn_gate_leave();
	cn_log(&ag.cfg, CN_LOG_DEBUG,
	       "libcuda copies: %d slots hooked, %lu calls, %.0f MiB; %lu of 2 MiB or more "
	       "(%.0f MiB, largest %zu KiB) in %.1f ms on %u threads",
	       cs.hooked, cs.calls, (double)cs.bytes / (1 << 20), cs.big_calls,
	       (double)cs.big_bytes / (1 << 20), cs.largest >> 10, cs.big_ms, cs.threads);
	if (ag.t_first_copy > 0) {
		double wait = ag.copy_wait_ms > 0 ? ag.copy_wait_ms : 0, end = cn_now_ms();
		char rest[96];

		/* The copy's end is seen only when the host copy's size is known. */
		if (ag.t_copied >= ag.t_first_copy)
			snprintf(rest, sizeof(rest), "%.1f ms copying, %.1f ms after",
				 ag.t_copied - ag.t_first_copy - wait, end - ag.t_copied);
		else
			snprintf(rest, sizeof(rest), "%.1f ms copying and after",
				 end - ag.t_first_copy - wait);
		cn_log(&ag.cfg, CN_LOG_DEBUG,
		       "restore: %.1f ms to the first copy (room check and driver's setup), "
		       "%.1f ms waiting for a place to copy in%s, %s",
		       ag.t_first_copy - t0, wait,
		       ag.gated && !ag.copy_place ? " (not had: copied without it)" : "", rest);
	}
	if (cs.hooked && cs.big_calls) {
		ag.st.copy_mib = (double)cs.big_bytes / (1 << 20);
		ag.st.copy_ms = cs.big_ms;
	}
	return rc;
}

/* After the checkpoint, with the host copy in the hibernate file: synced, then out of RAM. */
static void hibernate_after(int rc, const struct cn_staging_stats *ss)
{
	struct cn_hib_stats hs;
	char err[300];

	cn_hib_writer_stop();
	if (rc < 0 || !ss->file) {
		if (rc == 0 && ss->bytes)
			snprintf(ag.hib_note, sizeof(ag.hib_note),
				 "no room for the %.0f MiB copy in %s (%s): it stays in RAM",
				 (double)ss->bytes / (1 << 20), cn_hib_dir(),
				 strerror(ss->file_err ? ss->file_err : EIO));
		cn_hib_close();
		return;
	}
	if (cn_hib_settle(ss->addr, ss->bytes, &hs, err, sizeof(err)) < 0) {
		snprintf(ag.hib_note, sizeof(ag.hib_note), "%s", err);
		if (cn_hib_fd() < 0)
			return; /* moved into RAM */
	} else {
		ag.st.step_ms[CN_STEP_HIBERNATE] = hs.write_ms + hs.pageout_ms;
	}
	ag.hib_addr = ss->addr;
	ag.hib_len = ss->bytes;
	ag.st.host_mib = (double)cn_hib_resident(ss->addr, ss->bytes) / (1 << 20);
	ag.st.disk_mib = (double)cn_hib_disk_bytes() / (1 << 20);
	cn_log(&ag.cfg, CN_LOG_DEBUG,
	       "hibernate: %.0f MiB in %s, %.1f ms to sync, %.1f ms to page out; %.1f MiB left in "
	       "RAM",
	       (double)ss->bytes / (1 << 20), cn_hib_dir(), hs.write_ms, hs.pageout_ms,
	       ag.st.host_mib);
}

/* The checkpoint call, with the host copy staged in huge pages when the INI asks for it, or in
 * the hibernate file. */
static int checkpoint(struct cn_resp *r)
{
	struct cn_staging_stats ss;
	int rc;

	if (!ag.cfg.hugepages && !ag.hib)
		return moving_call(CN_OP_CHECKPOINT, r);
	if (ag.cfg.hugepages && !ag.thp && !ag.thp_said) {
		ag.thp_said = true;
		cn_log(&ag.cfg, CN_LOG_INFO,
		       "transparent huge pages are off on this host ([never]): staging the host "
		       "copy in 4 KiB pages");
	}
	cn_staging_arm(ag.thp && ag.cfg.hugepages, ag.cfg.hugepages ? ag.cfg.prefault_threads : 0,
		       ag.cfg.keep_host_buffer, ag.hib ? cn_hib_fd() : -1);
	if (ag.hib)
		cn_hib_writer_start();
	rc = moving_call(CN_OP_CHECKPOINT, r);
	cn_staging_disarm(&ss);
	ag.copy_bytes = ss.bytes;
	if (ag.hib)
		hibernate_after(rc, &ss);
	if (ss.bytes) {
		ag.st.staged_mib = (double)ss.bytes / (1 << 20);
		ag.st.prefault_ms = ss.prefault_ms;
		cn_log(&ag.cfg, CN_LOG_DEBUG,
		       "host copy: %.0f MiB%s%s%s, %u prefault threads, %.1f ms", ag.st.staged_mib,
		       ss.file ? ", in the hibernate file" : "", ss.huge ? ", huge pages" : "",
		       ss.reused ? ", in a kept or prepared buffer" : "", ss.threads,
		       ss.prefault_ms);
	}
	return rc;
}

/* Where this suspend's copy goes: the directory `cudanap suspend --to-disk[=DIR]` left in
 * <pid>.hibernate beside the status file (read once, removed), else the INI's [hibernate] dir;
 * its file opened now. -1 with msg when asked for and impossible: the suspend is refused. */
static int hibernate_setup(char *msg, size_t len)
{
	char req[4300], dir[PATH_MAX];
	ssize_t n = -1;
	int fd;

	ag.hib = false;
	ag.hib_note[0] = '\0';
	snprintf(dir, sizeof(dir), "%s", ag.cfg.hibernate_dir);
	snprintf(req, sizeof(req), "%s/%d.hibernate", ag.cfg.status_dir, (int)getpid());
	fd = open(req, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, dir, sizeof(dir) - 1);
		close(fd);
		unlink(req);
		if (n > 0) {
			dir[n] = '\0';
			dir[strcspn(dir, "\n")] = '\0';
		} else {
			snprintf(dir, sizeof(dir), "%s", ag.cfg.hibernate_dir);
		}
		if (!dir[0]) {
			snprintf(msg, len,
				 "--to-disk: no directory given and none in [hibernate] dir; the "
				 "process keeps running");
			return -1;
		}
	}
	if (!dir[0]) {
		cn_hib_close();
		return 0;
	}
	if (cn_hib_open(dir, msg, len) < 0) {
		snprintf(msg + strlen(msg), len - strlen(msg), "; the process keeps running");
		return -1;
	}
	ag.hib = true;
	ag.hib_free = cn_hib_free_bytes(dir);
	return 0;
}

/* After a failed step of a suspend: let the process run on. */
static void unlock_after(struct cn_resp *r, char *msg, size_t len)
{
	struct cn_resp u;

	call(CN_OP_UNLOCK, &u);
	step(CN_STEP_UNLOCK, &u);
	if (u.result != CUDA_SUCCESS)
		snprintf(msg + strlen(msg), len - strlen(msg), "; unlock after it failed too: %s",
			 u.name);
	r->state = u.state;
}

static void suspend(void)
{
	struct cn_status before = ag.st;
	struct cn_resp r;
	char msg[320];
	int rc;

	begin("suspend");
	ag.hib = false; /* set again by hibernate_setup, for this suspend only */
	if (!reload("suspend") || !current_state("suspend", &r))
		return;
	if (r.state == CN_STATE_CHECKPOINTED) {
		if (!redundant(&before, &r, "already suspended"))
			finish(&r, "already", "already suspended");
		return;
	}
	if (r.state == CN_STATE_RUNNING && (cn_preflight_suspend(&ag.cfg, msg, sizeof(msg)) < 0 ||
					    hibernate_setup(msg, sizeof(msg)) < 0)) {
		r.result = CN_RES_REFUSED;
		snprintf(r.name, sizeof(r.name), "REFUSED");
		finish(&r, "suspend", msg);
		return;
	}
	publish();
	if (r.state == CN_STATE_RUNNING) {
		if (call(CN_OP_LOCK, &r) < 0) {
			if (r.result == CUDA_ERROR_NOT_READY)
				snprintf(msg, sizeof(msg),
					 "lock timed out after %u ms: GPU work still running "
					 "([lock] timeout_ms); the process keeps running",
					 ag.cfg.lock_timeout_ms);
			else if (r.result == CN_RES_NO_HOST || r.result == CN_RES_DISK)
				snprintf(msg, sizeof(msg), "%s; the process keeps running",
					 r.message);
			else
				snprintf(msg, sizeof(msg), "lock: %s", r.message);
			if (r.state == CN_STATE_LOCKED)
				unlock_after(&r, msg, sizeof(msg));
			finish(&r, "suspend", msg);
			return;
		}
		step(CN_STEP_LOCK, &r);
	}
	rc = checkpoint(&r);
	if (ag.prepared_bytes)
		unprepare(); /* used by this checkpoint, or never to be */
	if (rc < 0) {
		/* The driver leaves the process LOCKED after a failed checkpoint (measured with
		 * managed memory, DESIGN.md): unlock it so that it runs on. */
		snprintf(msg, sizeof(msg), "checkpoint: %s%s", r.message,
			 r.result == CUDA_ERROR_NOT_SUPPORTED ? " (the driver cannot checkpoint a "
								"process that uses managed memory, "
								"CUDA IPC, MIG or MPS)"
							      : "");
		/* A controller that died mid-checkpoint may have left it done: then it stays. */
		if (r.state != CN_STATE_CHECKPOINTED)
			unlock_after(&r, msg, sizeof(msg));
		finish(&r, "suspend", msg);
		return;
	}
	step(CN_STEP_CHECKPOINT, &r);
	ag.n_use = r.n_use;
	memcpy(ag.use, r.use, sizeof(ag.use));
	ag.st.footprint_mib = footprint_mib();
	if (r.note[0])
		cn_log(&ag.cfg, CN_LOG_INFO,
		       "free GPU memory will not be checked before the restore: %s", r.note);
	if (ag.hib_note[0]) {
		cn_log(&ag.cfg, CN_LOG_ERROR, "hibernate: %s", ag.hib_note);
		snprintf(msg, sizeof(msg), "suspended; hibernate: %s", ag.hib_note);
	} else {
		snprintf(msg, sizeof(msg), ag.hib_addr ? "suspended to %s" : "suspended",
			 cn_hib_dir());
	}
	finish(&r, "suspended", msg);
}

static void resume(void)
{
	struct cn_status before = ag.st;
	struct cn_resp r;

	begin("resume");
	if (!reload("resume"))
		return;
	if (!current_state("resume", &r))
		return;
	if (r.state == CN_STATE_RUNNING) {
		if (!redundant(&before, &r, "already running"))
			finish(&r, "already", "already running");
		return;
	}
	publish();
	if (r.state == CN_STATE_CHECKPOINTED && ag.hib_addr) {
		char msg[360];
		double ms;

		if (cn_hib_readback(ag.hib_addr, ag.hib_len, ag.cfg.prefault_threads, &ms, msg,
				    sizeof(msg)) < 0) {
			r.result = CN_RES_DISK;
			snprintf(r.name, sizeof(r.name), "HIBERNATE_READ_ERROR");
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
				 "; still suspended, the file kept while the process lives");
			finish(&r, "resume", msg);
			return;
		}
		ag.st.step_ms[CN_STEP_READBACK] = ms;
	}
	if (r.state == CN_STATE_CHECKPOINTED) {
		/* A controller that died mid-restore may have left it restored and locked: then
		 * the unlock below finishes the resume. */
		if (moving_call(CN_OP_RESTORE, &r) < 0 &&
		    !(r.result == CN_RES_IO && r.state == CN_STATE_LOCKED)) {
			char msg[320];

			snprintf(msg, sizeof(msg), "restore: %s%s", r.message,
				 r.result == CN_RES_NO_ROOM
					 ? "; still suspended: resume again when there is room"
					 : "");
			finish(&r, "resume", msg);
			return;
		}
		step(CN_STEP_RESTORE, &r);
		ag.st.reserve_ms = r.check_ms + r.hold_ms;
		cn_log(&ag.cfg, CN_LOG_DEBUG,
		       "restore: %.1f ms checking room, %.1f ms holding memory, %.1f ms in the "
		       "driver",
		       r.check_ms, r.hold_ms, r.elapsed_ms - ag.st.reserve_ms);
	}
	if (call(CN_OP_UNLOCK, &r) < 0) {
		char msg[320];

		snprintf(msg, sizeof(msg), "unlock: %s", r.message);
		finish(&r, "resume", msg);
		return;
	}
	step(CN_STEP_UNLOCK, &r);
	if (ag.hib_addr) {
		/* The driver unmapped its copy after the restore: the file goes with its fd. */
		cn_hib_close();
		ag.hib_addr = NULL;
	}
	{
		struct cn_staging_stats ss;

		cn_staging_unmap_stats(&ss);
		if (ss.bytes)
			ag.st.unmap_ms = ss.unmap_ms;
	}
	finish(&r, "resumed", "resumed");
}

/* Notice of a suspend to come (cudanap prepare): fault the host copy in now, within the host
 * memory check, and hold it for [performance] prepare_s, so that the suspend only copies. Asked
 * again, it starts over, sized to what the process holds then. */
static void prepare(void)
{
	struct cn_staging_stats ss;
	struct cn_resp r;
	char msg[320];
	uint64_t need = 0;
	int e;

	begin("prepare");
	if (!reload("prepare") || !current_state("prepare", &r))
		return;
	if (r.state != CN_STATE_RUNNING) {
		snprintf(msg, sizeof(msg), "%s: nothing to prepare",
			 r.state == CN_STATE_CHECKPOINTED ? "already suspended" : "not running");
		finish(&r, "already", msg);
		return;
	}
	msg[0] = '\0';
	if (!ag.cfg.prepare_s)
		snprintf(msg, sizeof(msg), "prepare is off ([performance] prepare_s = 0)");
	else if (ag.cfg.hibernate_dir[0])
		snprintf(msg, sizeof(msg),
			 "the host copy goes to disk ([hibernate] dir): nothing to prepare in RAM");
	if (msg[0] || cn_preflight_suspend(&ag.cfg, msg, sizeof(msg)) < 0) {
		r.result = CN_RES_REFUSED;
		snprintf(r.name, sizeof(r.name), "REFUSED");
		finish(&r, "prepare", msg);
		return;
	}
	unprepare(); /* the host check must not count our own buffer as taken */
	publish();
	if (call(CN_OP_PREPARE, &r) < 0 || r.n_use == 0) {
		if (r.result == 0) {
			r.result = CN_RES_REFUSED;
			snprintf(r.name, sizeof(r.name), "FOOTPRINT_UNKNOWN");
		}
		snprintf(msg, sizeof(msg), "%s; nothing prepared",
			 r.result == CN_RES_REFUSED ? r.note : r.message);
		finish(&r, "prepare", msg);
		return;
	}
	for (uint32_t i = 0; i < r.n_use; i++)
		need += r.use[i].bytes;
	/* The driver's copy is about 1.06 x the footprint (DESIGN.md): room for 1/16 more. */
	e = cn_staging_prepare(need + need / 16, ag.thp && ag.cfg.hugepages,
			       ag.cfg.prefault_threads, &ss);
	if (e < 0) {
		r.result = CN_RES_NO_HOST;
		snprintf(r.name, sizeof(r.name), "NO_HOST_MEMORY");
		snprintf(msg, sizeof(msg), "cannot map %llu MiB: %s; nothing prepared",
			 (unsigned long long)((need + need / 16) >> 20), strerror(-e));
		finish(&r, "prepare", msg);
		return;
	}
	ag.prepared_bytes = ss.bytes;
	ag.prepared_until = cn_now_ms() + ag.cfg.prepare_s * 1000.0;
	ag.st.prepared = true;
	ag.st.host_mib = ag.st.staged_mib = (double)ss.bytes / (1 << 20);
	ag.st.prefault_ms = ag.st.step_ms[CN_STEP_PREPARE] = ss.prefault_ms;
	snprintf(msg, sizeof(msg), "prepared: %.0f MiB of host memory held for %u s",
		 ag.st.host_mib, ag.cfg.prepare_s);
	finish(&r, "prepared", msg);
}

/* The prepared copy was not used in time: give it back, and say so. */
static void prepare_expired(void)
{
	double mib = (double)ag.prepared_bytes / (1 << 20);

	unprepare();
	snprintf(ag.st.message, sizeof(ag.st.message),
		 "prepared host copy (%.0f MiB) given back after %u s without a suspend", mib,
		 ag.cfg.prepare_s);
	publish();
	cn_log(&ag.cfg, CN_LOG_INFO, "%s", ag.st.message);
}

/* Drain every pending byte and fold them into one wish: the last signal wins, toggles flip. A
 * prepare counts only when nothing else was asked for (*prepare_only). */
static int wanted(bool suspended_now, bool *prepare_only)
{
	bool want = suspended_now, other = false, prep = false;
	char buf[256];
	ssize_t n;

	while ((n = read(ag.wake_fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == CN_WAKE_PREPARE) {
				prep = true;
				continue;
			}
			other = true;
			want = buf[i] == CN_WAKE_SUSPEND  ? true
			       : buf[i] == CN_WAKE_RESUME ? false
							  : !want;
		}
	*prepare_only = prep && !other;
	return want;
}

static void *agent_main(void *arg)
{
	(void)arg;
	for (;;) {
		/* The controller's socket is watched too: one that dies while idle is noticed and
		 * replaced at the next request, not found dead in the middle of one. */
		struct pollfd p[2] = { { .fd = ag.wake_fd, .events = POLLIN },
				       { .fd = ag.sock, .events = POLLIN } };
		bool suspended_now = strcmp(ag.st.state, "checkpointed") == 0, prep, want;
		double left = ag.prepared_until ? ag.prepared_until - cn_now_ms() : -1;
		int r;

		if (ag.prepared_until && left <= 0) {
			prepare_expired();
			continue;
		}
		r = poll(p, ag.sock >= 0 ? 2 : 1, left < 0 ? -1 : (int)left + 1);
		if (r <= 0)
			continue;
		if (ag.sock >= 0 && p[1].revents) {
			controller_lost();
			cn_log(&ag.cfg, CN_LOG_ERROR,
			       "the cudanap controller died; another starts at the next request");
		}
		if (!(p[0].revents & POLLIN))
			continue;
		want = wanted(suspended_now, &prep);
		if (prep)
			prepare();
		else if (want)
			suspend();
		else
			resume();
	}
	return NULL;
}

/* Everything but the configuration and the host facts: a fresh process's state. */
static void reset(int wake_fd)
{
	ag.wake_fd = wake_fd;
	ag.sock = -1;
	ag.n_use = 0;
	ag.prepared_bytes = 0;
	ag.prepared_until = 0;
	cn_status_init(&ag.st, (int)getpid());
	cn_status_path(ag.cfg.status_dir, ag.st.pid, ag.status_path, sizeof(ag.status_path));
	ag.st.starttime = cn_proc_starttime(ag.st.pid);
	ag.st.suspend_signal = ag.cfg.suspend_signal;
	ag.st.resume_signal = ag.cfg.resume_signal;
	{
		char buf[256] = "";
		int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;

		if (fd >= 0)
			close(fd);
		for (ssize_t i = 0; i + 1 < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		snprintf(ag.st.command, sizeof(ag.st.command), "%s", buf);
	}
	snprintf(ag.st.state, sizeof(ag.st.state), "running");
	snprintf(ag.st.action, sizeof(ag.st.action), "start");
	snprintf(ag.st.result, sizeof(ag.st.result), "ok");
}

static int start_thread(void)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int r;

	/* The thread inherits a full mask so that the app's signals go to the app's threads; the
	 * caller's own mask is put back at once. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	r = pthread_create(&t, &at, agent_main, NULL);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		pthread_setname_np(t, "cudanap");
	return -r;
}

/* The first status file is written before the thread starts, by the caller: a process that
 * exits at once must not have its file written after its exit removed it. */
int cn_agent_start(const struct cn_config *cfg, int wake_fd)
{
	pthread_mutex_init(&ag.publishing, NULL);
	ag.cfg = *cfg;
	ag.thp = cn_staging_thp_available();
	reset(wake_fd);
	publish();
	return start_thread();
}

int cn_agent_fork_child(int wake_fd)
{
	/* The parent's descriptors: ours to close, never to use; its controller must see its own
	 * end close when the parent exits, whatever the child does. */
	if (ag.wake_fd >= 0)
		close(ag.wake_fd);
	if (ag.sock >= 0)
		close(ag.sock);
	ag.wake_fd = ag.sock = -1;
	if (wake_fd < 0)
		return -EBADF;
	pthread_mutex_init(&ag.publishing, NULL); /* the parent's agent may have held it */
	ag.exiting = false;
	reset(wake_fd);
	publish();
	if (start_thread() == 0)
		return 0;
	ag.wake_fd = -1;
	return -EAGAIN;
}

void cn_agent_exit(void)
{
	pthread_mutex_lock(&ag.publishing);
	ag.exiting = true;
	cn_status_remove(ag.cfg.status_dir, ag.st.pid);
	pthread_mutex_unlock(&ag.publishing);
}

void cn_agent_exit_now(void)
{
	unlink(ag.status_path);
}
