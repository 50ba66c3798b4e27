/* agent: the helper thread inside the target, the loop on top of the actions (a wish read from the
 * wake pipe, the action that answers it); its start, and a forked child's own. */
#define _GNU_SOURCE
#include "agent/agent.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
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

#define CALLS_LEN (64 * 1024)

/* The agent's life: its context, and what each action keeps of its own from one wake to the next.
 * One per process, and the one file-scope anchor of agent/: the constructor, a forked child's
 * atfork handler and the exits (app threads, with no argument to take it) reach it here; the
 * agent thread is handed it. */
static struct life {
	struct cn_agent ag;
	struct cn_naps nap;
	struct cn_pager pager;
	struct cn_look look;
	char calls[CALLS_LEN]; /* CUDANAP_DEBUG=calls: the counts last written */
} life;

static void publish_calls(struct life *l)
{
	static char text[CALLS_LEN];

	cn_lookup_counts(text, sizeof(text));
	if (strcmp(text, l->calls) == 0)
		return;
	memcpy(l->calls, text, sizeof(text));
	cn_notes_put(l->ag.cfg.status_dir, (int)getpid(), CN_NOTE_CALLS, text);
}

/* The gate on the app's driver calls is open exactly while the process's CUDA runs (holding the
 * app's GPU work while its NCCL communicators are suspended): the suspend closes it before the
 * lock, the resume opens it after the unlock, and any other way an action ends (a suspend that
 * failed, a controller that died) is settled here. */
static void settle_gate(const struct cn_agent *ag)
{
	if (ag->status.state != CN_STATE_LOCKED && ag->status.state != CN_STATE_CHECKPOINTED &&
	    !cn_light_holding() && !cn_nccl_hold_app())
		cn_gate_open();
}

/* A nap's deeds are the suspend's and the resume's (nap.h). */
static struct cn_outcome nap_sleep(struct cn_agent *ag, bool light, unsigned lock_ms)
{
	return light ? cn_suspend_light(ag, lock_ms) : cn_suspend_as(ag, true, lock_ms);
}

static struct cn_outcome nap_wake(struct cn_agent *ag, const struct cn_gpumap *map,
				  unsigned wait_ms)
{
	return cn_resume_as(ag, true, map, wait_ms);
}

static struct cn_outcome nap_sleep_disk(struct cn_agent *ag, unsigned lock_ms)
{
	return cn_suspend_nap_disk(ag, lock_ms);
}

static const struct cn_nap_deeds deeds = { nap_sleep, nap_sleep_disk, nap_wake };

/* How long the loop may sleep: until a prepared copy expires, the naps' or the pager's next tick,
 * the next count of the app's calls; -1 for ever. */
static double wait_ms(struct life *l)
{
	struct cn_agent *ag = &l->ag;
	double left = ag->held.prepared_until ? ag->held.prepared_until - cn_clock_ms() : -1;
	int tick = cn_nap_timeout_ms(ag, &l->nap), room = cn_pager_timeout_ms(&l->pager);

	if (room >= 0 && (tick < 0 || room < tick))
		tick = room;
	if (cn_lookup_counting) {
		publish_calls(l);
		if (left < 0 || left > CALLS_EVERY_MS)
			left = CALLS_EVERY_MS;
	}
	if (tick >= 0 && (left < 0 || left > tick))
		left = tick;
	return left;
}

/* What the bytes asked for: the action, then the nap's, the wake's and the pager's answers, then
 * the query's. */
static void answer(struct life *l)
{
	struct cn_agent *ag = &l->ag;
	bool suspended_now = ag->status.state == CN_STATE_CHECKPOINTED || cn_light_holding(), prep,
	     want, act;
	struct extra x;

	want = wanted(suspended_now, &prep, &x, &act);
	if (act)
		cn_nap_after_action(ag, &l->nap,
				    prep   ? cn_prepare(ag)
				    : want ? cn_suspend(ag)
					   : cn_resume(ag));
	if (x.nap)
		cn_nap_now(ag, &l->nap, act);
	if (x.call && !act)
		cn_nap_wake(ag, &l->nap);
	if (x.room)
		cn_pager_asked(ag, &l->pager);
	if (x.trim && cn_cache_trim_asked(ag)) {
		cn_report_shared(ag);
		cn_report_write(ag);
	}
	settle_gate(ag);
	if (x.query)
		cn_query(ag, &l->look);
	cn_nap_tick(ag, &l->nap);
	settle_gate(ag);
}

static void *agent_main(void *arg)
{
	struct life *l = arg;
	struct cn_agent *ag = &l->ag;

	cn_gate_self();
	for (;;) {
		/* The controller's socket is watched too: one that dies while idle is noticed and
		 * replaced at the next request, not found dead in the middle of one. */
		struct pollfd p[2] = { { .fd = cn_wake_fd(), .events = POLLIN },
				       { .fd = cn_channel_fd(ag), .events = POLLIN } };
		double left = wait_ms(l);
		int r;

		if (ag->held.prepared_until && ag->held.prepared_until <= cn_clock_ms()) {
			cn_prepare_expired(ag);
			continue;
		}
		r = poll(p, cn_channel_fd(ag) >= 0 ? 2 : 1, left < 0 ? -1 : (int)left + 1);
		if (r <= 0) {
			cn_pager_tick(ag, &l->pager);
			cn_nap_tick(ag, &l->nap);
			settle_gate(ag); /* a nap that failed runs on */
			continue;
		}
		if (cn_channel_fd(ag) >= 0 && p[1].revents) {
			cn_channel_close(ag);
			cn_log(&ag->cfg, CN_LOG_ERROR,
			       "the cudanap controller died; another starts at the next request");
		}
		if (p[0].revents & POLLIN)
			answer(l);
	}
	return NULL;
}

/* Everything but the configuration and the host facts: a fresh process's state. */
static void reset(struct life *l)
{
	l->ag.where.n_use = 0;
	l->ag.held.prepared_bytes = 0;
	l->ag.held.prepared_until = 0;
	cn_report_start(&l->ag);
	cn_nap_reset(&l->ag, &l->nap, &deeds);
	cn_pager_reset(&l->pager);
	cn_cache_reset(&l->ag);
}

static int start_thread(struct life *l)
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
	r = pthread_create(&t, &at, agent_main, l);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		pthread_setname_np(t, "cudanap");
	return -r;
}

/* The first status file is written before the thread starts, by the caller: a process that
 * exits at once must not have its file written after its exit removed it. */
int cn_agent_start(const struct cn_config *cfg, const char *ctl_path)
{
	struct cn_agent *ag = &life.ag;

	ag->cfg = *cfg;
	ag->sock = -1;
	snprintf(ag->ctl_path, sizeof(ag->ctl_path), "%s", ctl_path);
	cn_wrap_oom_on(cfg->nap_make_room);
	cn_owned_config(cfg->own, cn_config_light_naps(cfg));
	cn_wrap_on_oom(cn_pager_oom, cn_pager_done);
	ag->held.thp = cn_staging_thp_available();
	reset(&life);
	return start_thread(&life);
}

int cn_agent_fork_child(bool start)
{
	/* The parent's socket: ours to close, never to use; its controller must see its own end
	 * close when the parent exits, whatever the child does. */
	cn_channel_close(&life.ag);
	if (!start) {
		/* no agent in this child: nobody to make room, and the parent's request is not its
		 */
		cn_wrap_on_oom(NULL, NULL);
		cn_pager_reset(&life.pager);
		return -EBADF;
	}
	reset(&life);
	return start_thread(&life) == 0 ? 0 : -EAGAIN;
}

void cn_agent_exit(void)
{
	cn_report_exit(&life.ag);
}

void cn_agent_exit_now(void)
{
	cn_report_exit_now();
}
