/* agent: the helper thread inside the target: its loop, its start, and a forked child's own.
 *
 * It waits on the wake pipe that the signal handler writes to, folds the bytes into the state the
 * signals asked for and runs the action that gets there (suspend.c, resume.c). Its rooms: the
 * line to the controller (channel.c), the steps the actions share (requests.c) and what it tells
 * (report.c). It is the only thread of ours in the target that acts; it never calls libcuda. */
#define _GNU_SOURCE
#include "agent/agent.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "agent/cache.h"
#include "agent/channel.h"
#include "clock.h"
#include "cn_notes.h"
#include "cn_words.h"
#include "cuda/fns.h"
#include "cuda/gate.h"
#include "cuda/light.h"
#include "agent/log.h"
#include "agent/nap.h"
#include "agent/nccl.h"
#include "cuda/owned.h"
#include "agent/pager.h"
#include "agent/prepare.h"
#include "agent/query.h"
#include "agent/report.h"
#include "agent/resume.h"
#include "hostcopy/staging.h"
#include "agent/state.h"
#include "agent/suspend.h"
#include "wake.h"

/* Drain every pending byte and fold them into one wish: the last signal wins, toggles flip. A
 * prepare counts only when nothing else was asked for (*prepare_only); the rest is in *x; *act:
 * some action was asked for at all. */
struct extra {
	bool query; /* answered after whatever else runs */
	bool nap;   /* cudanap nap */
	bool call;  /* a napping process's call needs the GPU */
	bool room;  /* an allocation refused: make room */
	bool trim;  /* another process needs the host memory of the copy kept ready */
};

static int wanted(bool suspended_now, bool *prepare_only, struct extra *x, bool *act)
{
	bool want = suspended_now, other = false, prep = false;
	char buf[256];
	ssize_t n;

	*x = (struct extra){ false, false, false, false, false };
	while ((n = cn_wake_read(buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == CN_WAKE_PREPARE) {
				prep = true;
				continue;
			}
			if (buf[i] == CN_WAKE_QUERY || buf[i] == CN_WAKE_NAP ||
			    buf[i] == CN_WAKE_CALL || buf[i] == CN_WAKE_ROOM ||
			    buf[i] == CN_WAKE_TRIM) {
				x->trim |= buf[i] == CN_WAKE_TRIM;
				x->room |= buf[i] == CN_WAKE_ROOM;
				x->query |= buf[i] == CN_WAKE_QUERY;
				x->nap |= buf[i] == CN_WAKE_NAP;
				x->call |= buf[i] == CN_WAKE_CALL;
				continue;
			}
			other = true;
			want = buf[i] == CN_WAKE_SUSPEND  ? true
			       : buf[i] == CN_WAKE_RESUME ? false
							  : !want;
		}
	*prepare_only = prep && !other;
	*act = other || prep;
	return want;
}

/* CUDANAP_DEBUG=calls: the app's driver calls, counted per function, in <status dir>/<pid>.calls,
 * rewritten every second while they change. */
#define CALLS_EVERY_MS 1000

static void publish_calls(void)
{
	static char text[64 * 1024], last[sizeof(text)];

	cn_lookup_counts(text, sizeof(text));
	if (strcmp(text, last) == 0)
		return;
	memcpy(last, text, sizeof(text));
	cn_notes_put(cn_ag.cfg.status_dir, (int)getpid(), CN_NOTE_CALLS, text);
}

/* The gate on the app's driver calls is open exactly while the process's CUDA runs (holding the
 * app's GPU work while its NCCL communicators are suspended): the suspend closes it before the
 * lock, the resume opens it after the unlock, and any other way an action ends (a suspend that
 * failed, a controller that died) is settled here. */
static void settle_gate(void)
{
	if (cn_report_status()->state != CN_STATE_LOCKED &&
	    cn_report_status()->state != CN_STATE_CHECKPOINTED && !cn_light_holding() &&
	    !cn_nccl_hold_app())
		cn_gate_open();
}

static void *agent_main(void *arg)
{
	(void)arg;
	cn_gate_self();
	for (;;) {
		/* The controller's socket is watched too: one that dies while idle is noticed and
		 * replaced at the next request, not found dead in the middle of one. */
		struct pollfd p[2] = { { .fd = cn_wake_fd(), .events = POLLIN },
				       { .fd = cn_channel_fd(), .events = POLLIN } };
		bool suspended_now = cn_report_status()->state == CN_STATE_CHECKPOINTED ||
				     cn_light_holding(),
		     prep, want, act;
		double left = cn_ag.prepared_until ? cn_ag.prepared_until - cn_clock_ms() : -1;
		int r, tick = cn_nap_timeout_ms(), room = cn_pager_timeout_ms();
		struct extra x;

		if (room >= 0 && (tick < 0 || room < tick))
			tick = room;
		if (cn_lookup_counting) {
			publish_calls();
			if (left < 0 || left > CALLS_EVERY_MS)
				left = CALLS_EVERY_MS;
		}
		if (tick >= 0 && (left < 0 || left > tick))
			left = tick;
		if (cn_ag.prepared_until && cn_ag.prepared_until <= cn_clock_ms()) {
			cn_prepare_expired();
			continue;
		}
		r = poll(p, cn_channel_fd() >= 0 ? 2 : 1, left < 0 ? -1 : (int)left + 1);
		if (r <= 0) {
			cn_pager_tick();
			cn_nap_tick();
			settle_gate(); /* a nap that failed runs on */
			continue;
		}
		if (cn_channel_fd() >= 0 && p[1].revents) {
			cn_channel_close();
			cn_log(&cn_ag.cfg, CN_LOG_ERROR,
			       "the cudanap controller died; another starts at the next request");
		}
		if (!(p[0].revents & POLLIN))
			continue;
		want = wanted(suspended_now, &prep, &x, &act);
		if (act)
			cn_nap_after_action(prep   ? cn_prepare()
					    : want ? cn_suspend()
						   : cn_resume());
		if (x.nap)
			cn_nap_now(act);
		if (x.call && !act)
			cn_nap_wake();
		if (x.room)
			cn_pager_asked();
		if (x.trim && cn_cache_trim_asked()) {
			cn_report_shared();
			cn_report_write();
		}
		settle_gate();
		if (x.query)
			cn_query();
		cn_nap_tick();
		settle_gate();
	}
	return NULL;
}

/* Everything but the configuration and the host facts: a fresh process's state. */
static void reset(void)
{
	cn_ag.n_use = 0;
	cn_ag.prepared_bytes = 0;
	cn_ag.prepared_until = 0;
	cn_report_start();
	cn_nap_reset();
	cn_pager_reset();
	cn_cache_reset();
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
int cn_agent_start(const struct cn_config *cfg)
{
	cn_ag.cfg = *cfg;
	cn_wrap_oom_on(cfg->nap_make_room);
	cn_owned_config(cfg->own, cn_config_light_naps(cfg));
	cn_wrap_on_oom(cn_pager_oom, cn_pager_done);
	cn_ag.thp = cn_staging_thp_available();
	reset();
	return start_thread();
}

int cn_agent_fork_child(bool start)
{
	/* The parent's socket: ours to close, never to use; its controller must see its own end
	 * close when the parent exits, whatever the child does. */
	cn_channel_close();
	if (!start) {
		/* no agent in this child: nobody to make room, and the parent's request is not its
		 */
		cn_wrap_on_oom(NULL, NULL);
		cn_pager_reset();
		return -EBADF;
	}
	reset();
	return start_thread() == 0 ? 0 : -EAGAIN;
}

void cn_agent_exit(void)
{
	cn_report_exit();
}

void cn_agent_exit_now(void)
{
	cn_report_exit_now();
}
