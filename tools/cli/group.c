/* group: processes acted on at once, all or nothing: the signals sent together, the outcomes read,
 * a job kept whole (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cn_gpumap.h"
#include "cn_notes.h"
#include "cn_proc.h"
#include "cn_words.h"
#include "cuda_abi.h"

const char *const cli_verb_name[] = { "suspend", "resume", "prepare", "nap" };
const char *const cli_verb_done[] = { "suspended", "resumed", "prepared", "napping" };
/* What the progress line says while the outcomes are awaited. */
static const char *const verb_ing[] = { "suspending", "resuming", "preparing", "napping" };

static bool comms_suspended(const struct cn_status *s)
{
	return strncmp(s->nccl, "suspended", 9) == 0;
}

/* The state a verb leads to (a prepared process runs on). */
static int goal(enum verb v)
{
	return v == VERB_SUSPEND || v == VERB_NAP ? CN_STATE_CHECKPOINTED : CN_STATE_RUNNING;
}

/* The job's line and its outcome in one word. */
static void say(struct job *j, const char *outcome, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct job *j, const char *outcome, const char *fmt, ...)
{
	char raw[sizeof(j->line)];
	va_list ap;
	int o = snprintf(raw, sizeof(raw), "%d: ", j->pid);

	j->outcome = outcome;
	va_start(ap, fmt);
	vsnprintf(raw + o, sizeof(raw) - (size_t)o, fmt, ap);
	va_end(ap);
	/* A line may name what another user's environment named (its status directory): its
	 * control characters and bytes that are not UTF-8 are not passed on to a terminal or JSON.
	 */
	cn_status_text(j->line, sizeof(j->line), raw);
}

/* Where a resumed process went, when that is news: " on GPU 1 (it started on GPU 0)" when it is
 * not on the GPUs it started on, or the command gave a map; "" otherwise. */
static void went(const struct cn_status *s, const struct plan *p, char *out, size_t len)
{
	char now[140], home[140];

	cli_gpu_indices(s->gpus, now, sizeof(now));
	cli_gpu_indices(s->home_gpus, home, sizeof(home));
	out[0] = '\0';
	if (p->verb != VERB_RESUME || !now[0] || (!p->gpu_map && strcmp(now, home) == 0))
		return;
	snprintf(out, len, " on GPU%s %s (it started on GPU%s %s)", strchr(now, ',') ? "s" : "",
		 now, strchr(home, ',') ? "s" : "", home);
}

static void outcome(struct job *j, const struct cn_status *s, const struct plan *p)
{
	enum verb v = p->verb;
	char total[32], steps[200], where[300];
	size_t o = cn_status_steps(s, steps, sizeof(steps));

	j->done = true;
	j->st = *s;
	j->have_st = true;
	j->no_cuda = s->state == CN_STATE_NO_CUDA;
	j->ok = s->result == CN_RES_OK && s->state == goal(v) &&
		!(v == VERB_RESUME && comms_suspended(s));
	cli_fmt_ms(s->total_ms, total, sizeof(total));
	went(s, p, where, sizeof(where));
	if (j->ok && v == VERB_PREPARE && s->prepared)
		say(j, "prepared", "%s in %s", s->message, total);
	else if (j->ok && o)
		say(j,
		    v == VERB_RESUME ? "resumed"
		    : v == VERB_NAP  ? "napped"
				     : "suspended",
		    "%s in %s (%s)%s",
		    v == VERB_RESUME ? "resumed"
		    : v == VERB_NAP  ? "napping: woken by its next CUDA call; napped"
				     : "suspended",
		    total, steps, where);
	else if (j->ok)
		say(j, "already", "%s", s->message);
	else
		say(j, j->no_cuda ? "no-cuda" : "failed", "%s failed: %s: %s (state %s)",
		    cli_verb_name[v], cn_status_result(s), s->message, cn_status_state(s));
}

/* What an action asks for beyond the INI, in a note <status dir>/<pid>.<what> read once (and
 * removed) by the process's agent at that action: the directory of suspend --to-disk, the map of
 * resume --gpu-map (cn_words.h). */
static int ask(const struct job *j, const char *what, const char *text)
{
	int r = cn_notes_put(j->dir, j->pid, what, text);

	errno = -r;
	return r < 0 ? -1 : 0;
}

/* Whether one process can be sent its signal, before any is sent: false when it is done with
 * (its line says why, j->ok whether that is a success). In a whole job, a process that never
 * loaded the driver (a shell, srun, a data loader) is nothing to do and gets no signal: srun, for
 * one, takes SIGUSR1 for its own and forwards it to its tasks, so its answer would never come. */
static bool check_one(struct job *j, const struct plan *p)
{
	enum verb v = p->verb;
	const char *why;
	char untrusted[300];
	struct cn_status s;
	int r;

	if (procs_status_dir(j->pid, p->cfg, j->dir, sizeof(j->dir)) < 0) {
		j->done = true;
		say(j, "not-cudanap", "%s; nothing sent", PROCS_ENV_LONG);
		return false;
	}
	r = cn_status_read_why(j->dir, j->pid, &s, untrusted, sizeof(untrusted));
	if (r < 0 || !procs_alive(&s)) {
		bool exited = kill(j->pid, 0) < 0 && errno == ESRCH;

		j->done = true;
		/* A whole job's processes were picked a moment ago, and its members come and go (a
		 * data loader's workers, a rank at its end): one that exited since holds no GPU and
		 * is left out, not failing the others' suspend. A PID named is a failure. */
		if (exited && p->group) {
			j->ok = j->gone = true;
			say(j, "gone", "exited before its signal: left out");
		} else if (exited)
			say(j, "gone", "no such process");
		else if (r < 0 && r != -ENOENT)
			say(j, "not-cudanap", "its status is not believed: %s; nothing sent",
			    untrusted);
		else
			say(j, "not-cudanap",
			    "not running under cudanap (no status file); start it with 'cudanap "
			    "run' or give its INI with -c");
		return false;
	}
	j->st = s;
	j->have_st = true;
	if (p->group && !procs_cuda_loaded(j->pid)) {
		j->done = j->ok = j->no_cuda = true;
		say(j, "no-cuda", "no CUDA state, nothing to do");
		return false;
	}
	if ((why = procs_stopped(j->pid))) {
		j->done = true;
		say(j, "stopped", "cannot %s: %s; nothing sent", cli_verb_name[v], why);
		return false;
	}
	return true;
}

/* Of a whole job, a process gone since its check holds no GPU: left out, as one gone before it. */
static bool left_out(struct job *j, const struct plan *p)
{
	if (!p->group || kill(j->pid, 0) == 0 || errno != ESRCH)
		return false;
	j->done = j->ok = j->gone = true;
	say(j, "gone", "exited before its signal: left out");
	return true;
}

/* Send one process that passed check_one its signal. */
static void send_one(struct job *j, const struct plan *p)
{
	enum verb v = p->verb;
	union sigval prep = { .sival_int = v == VERB_NAP ? CN_SIGVAL_NAP : CN_SIGVAL_PREPARE };
	struct cn_status s = j->st;
	char led[32], map[CN_MAX_GPUS * 96];
	int r;

	snprintf(led, sizeof(led), "%d\n", (int)getpid());
	/* Let an action under way finish, so that its outcome is not taken for ours. */
	while (s.busy && cli_now_s() < p->deadline && cn_status_read(j->dir, j->pid, &s) == 0)
		usleep(5000);
	j->st = s;
	if (left_out(j, p))
		return;
	/* Running with its NCCL communicators suspended (a resume that did not meet all the job's
	 * ranks, a suspend that failed after them) is not yet resumed. */
	/* A light nap keeps its context: a suspend takes the rest (light.c). */
	if (s.state == (v == VERB_PREPARE ? CN_STATE_CHECKPOINTED : goal(v)) && !s.busy &&
	    !(v == VERB_RESUME && comms_suspended(&s)) &&
	    !(v == VERB_SUSPEND && s.nap_depth == CN_DEPTH_LIGHT)) {
		j->done = j->ok = true;
		say(j, "already", "already %s%s",
		    v == VERB_RESUME				 ? "running"
		    : cn_status_state_of(&s) == CN_STATE_NAPPING ? "napping"
								 : "suspended",
		    v == VERB_PREPARE ? ": nothing to prepare" : "");
		return;
	}
	j->seq0 = s.seq;
	if (p->gpu_map)
		cn_gpumap_write(p->gpu_map, map, sizeof(map));
	if ((v == VERB_SUSPEND && p->to_disk && ask(j, CN_NOTE_HIBERNATE, p->to_disk) < 0) ||
	    (v == VERB_RESUME && p->gpu_map && ask(j, CN_NOTE_GPU_MAP, map) < 0)) {
		j->done = true;
		say(j, "error", "%s: cannot write in %s: %s; nothing sent",
		    v == VERB_SUSPEND ? "--to-disk" : "--gpu-map", j->dir, strerror(errno));
		return;
	}
	/* The cut of an NCCL job's ranks is led from here when this command waits (ncclcut.c). */
	if (p->wait && (v == VERB_SUSPEND || v == VERB_RESUME) &&
	    ask(j, CN_NOTE_NCCL_LED, led) < 0) {
		j->done = true;
		say(j, "error", "cannot write in %s: %s; nothing sent", j->dir, strerror(errno));
		return;
	}
	/* Only to the process the status file is of: its pid may have been reused since. */
	r = cn_proc_signal(j->pid, s.starttime,
			   v == VERB_RESUME ? s.resume_signal : s.suspend_signal,
			   v == VERB_PREPARE || v == VERB_NAP ? &prep : NULL);
	if (r == -ESRCH && p->group) {
		j->done = j->ok = j->gone = true;
		say(j, "gone", "exited before its signal: left out");
		return;
	}
	if (r < 0) {
		j->done = true;
		say(j, r == -ESRCH ? "gone" : "error", "cannot signal: %s",
		    r == -ESRCH ? "no such process (exited)" : strerror(-r));
		return;
	}
	j->sent = true;
}

/* A whole job with a process that cannot be signalled is refused before any is: its line says
 * why, the others' that nothing was sent, and the refusal line which to leave out. True when it
 * was refused. */
static bool refuse(struct job *jobs, int n, const struct plan *p, char *line, size_t len)
{
	char bad[200] = "";
	int k = 0;
	size_t o = 0;

	for (int i = 0; i < n; i++)
		if (jobs[i].done && !jobs[i].ok && ++k <= 8)
			o += (size_t)snprintf(bad + o, o < sizeof(bad) ? sizeof(bad) - o : 0,
					      "%s%d", o ? ", " : "", jobs[i].pid);
	if (!k)
		return false;
	for (int i = 0; i < n; i++)
		if (!jobs[i].done) {
			jobs[i].done = true;
			say(&jobs[i], "refused", "nothing sent: the job is refused (%s)", bad);
		}
	snprintf(line, len,
		 "refused: %d of %d processes cannot %s (%s%s); nothing was signalled: leave %s "
		 "out, or act on each with --each",
		 k, n, cli_verb_name[p->verb], bad, k > 8 ? ", ..." : "", k > 1 ? "them" : "it");
	return true;
}

/* Whether the signals may go out, after this node's check refused the job (here: refused says
 * why) or not. Of a job led from another host, every node must agree: one refused elsewhere
 * refuses this node's processes, and refused says why. */
static bool agreed(struct job *jobs, int n, const struct plan *p, bool here, char *refused,
		   size_t len)
{
	char why[1200];

	if (!p->relay)
		return !here;
	if (relay_may_send(p->relay, here ? refused : NULL, p->deadline, why, sizeof(why)) && !here)
		return true;
	if (here)
		return false;
	for (int i = 0; i < n; i++)
		if (!jobs[i].done) {
			jobs[i].done = true;
			say(&jobs[i], "refused", "nothing sent: the job is refused (%s)", why);
		}
	snprintf(refused, len, "refused: %s; nothing was signalled", why);
	return false;
}

/* Send every job its signal, all at once, then wait for each outcome until the deadline. A whole
 * job (p->whole) is checked first, and refused as a whole (refused says why). */
static void act(struct job *jobs, int n, const struct plan *p, char *refused, size_t len)
{
	int sent = 0;

	for (int i = 0; i < n; i++) {
		int pid = jobs[i].pid;

		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].pid = pid;
		check_one(&jobs[i], p);
	}
	if (p->whole && !agreed(jobs, n, p, refuse(jobs, n, p, refused, len), refused, len))
		return;
	for (int i = 0; i < n; i++)
		if (!jobs[i].done)
			send_one(&jobs[i], p);
	for (int i = 0; i < n; i++)
		sent += jobs[i].sent && !jobs[i].done;
	progress_start(p->timeout, "%s %d process%s", verb_ing[p->verb], sent,
		       sent == 1 ? "" : "es");
	/* The ranks of an NCCL job meet at a cut before their communicators go (ncclcut.c). */
	if (p->wait)
		ncclcut_run(jobs, n, p->verb, p->deadline, p->relay);
	for (bool pending = p->wait; pending;) {
		int waiting = 0;

		pending = false;
		for (int i = 0; i < n; i++) {
			struct job *j = &jobs[i];
			struct cn_status s;
			const char *why;

			if (j->done)
				continue;
			if (cn_status_read(j->dir, j->pid, &s) < 0 || !procs_alive(&s)) {
				j->done = true;
				say(j, "gone", "process exited");
			} else if (s.seq > j->seq0 && !s.busy) {
				outcome(j, &s, p);
			} else if ((why = procs_stopped(j->pid))) {
				/* Stopped after the signal: it acts once let go. */
				j->done = true;
				say(j, "stopped",
				    "no outcome: %s; the %s happens when it runs again", why,
				    cli_verb_name[p->verb]);
			} else {
				pending = true;
				waiting++;
			}
		}
		if (pending && cli_now_s() >= p->deadline)
			break;
		if (!pending)
			break;
		progress_done(sent - waiting, "done", "");
		usleep(2000);
	}
	progress_end();
	for (int i = 0; i < n; i++) {
		struct job *j = &jobs[i];

		if (j->sent && !j->done) {
			if (p->wait)
				say(j, "timeout",
				    "no outcome yet: timed out waiting (it may still finish)");
			else
				say(j, "requested", "%s requested", cli_verb_name[p->verb]);
			j->ok = !p->wait;
		}
	}
}

/* The first job of the group whose suspend failed (processes without CUDA are nothing to do). */
static const struct job *first_failure(const struct job *jobs, int n, bool *all_timeouts)
{
	const struct job *first = NULL;

	*all_timeouts = true;
	for (int i = 0; i < n; i++) {
		if (jobs[i].ok || jobs[i].no_cuda)
			continue;
		first = first ? first : &jobs[i];
		*all_timeouts &= jobs[i].st.result == CUDA_ERROR_NOT_READY;
	}
	return first;
}

/* After a failed suspend of a group: resume every process this attempt suspended, and every one
 * whose outcome is not known yet (its resume waits behind the suspend still under way), with a
 * time of its own: the suspend may have used all of the deadline. Says what happened in r; returns
 * how many are still not running. Nothing was suspended: nothing to say. */
static int roll_back(const struct job *jobs, int n, const struct plan *p, struct group_result *r)
{
	struct plan back_plan = {
		.cfg = p->cfg, .verb = VERB_RESUME, .wait = true, .group = true, .relay = p->relay
	};
	struct job *back = calloc((size_t)(n ? n : 1), sizeof(*back));
	double t0 = cli_now_s();
	int m = 0, bad = 0;
	size_t o, len = sizeof(r->rollback);

	r->rolled_back = 0;
	r->rollback[0] = '\0';
	if (!back) {
		snprintf(r->rollback, len, "rollback: out of memory; resume the job by hand");
		return n;
	}
	for (int i = 0; i < n; i++) {
		const struct job *j = &jobs[i];

		if (j->sent && !j->no_cuda &&
		    (!(j->done && j->st.state == CN_STATE_RUNNING) || comms_suspended(&j->st)))
			back[m++].pid = j->pid;
	}
	/* A node of a job led from elsewhere meets the others' ranks at the rollback's cut even
	 * with nothing of its own to resume. */
	if (m == 0 && !p->relay) {
		free(back);
		return 0;
	}
	back_plan.timeout = p->timeout;
	back_plan.deadline = t0 + p->timeout;
	act(back, m, &back_plan, NULL, 0);
	if (m == 0) {
		free(back);
		return 0;
	}
	r->rolled_back = m;
	o = (size_t)snprintf(r->rollback, len, "rollback: %d process%s resumed in %.2f s", m,
			     m == 1 ? "" : "es", cli_now_s() - t0);
	for (int i = 0; i < m; i++) {
		if (back[i].ok)
			continue;
		bad++;
		o += (size_t)snprintf(r->rollback + o, o < len ? len - o : 0, "; %s", back[i].line);
	}
	snprintf(r->rollback + o, o < len ? len - o : 0, "%s",
		 bad ? ": the job is split; resume it with cudanap resume"
		     : ": every process runs again");
	free(back);
	return bad;
}

/* This node's part in a job led from another host: each attempt's outcome said, and rolled back
 * and tried again as the leader says, which sees every node's. */
static int run_relayed(struct job *jobs, int n, const struct plan *p, struct group_result *r)
{
	int rest = 0;

	for (;;) {
		const struct job *f;
		bool transient = false;

		act(jobs, n, p, r->refused, sizeof(r->refused));
		f = p->atomic && !r->refused[0] ? first_failure(jobs, n, &transient) : NULL;
		if (!relay_outcome(p->relay, jobs, n, f, transient, p->json, p->deadline))
			return rest;
		rest = roll_back(jobs, n, p, r);
		if (!relay_rolled_back(p->relay, r->rolled_back, rest, r->rollback, p->deadline))
			return rest;
		r->rollback[0] = '\0';
		r->rolled_back = 0;
	}
}

/* Act on the jobs; for an atomic suspend, roll back and try again as this file's opening says.
 * How many are still not running after the last rollback. */
static int run_here(struct job *jobs, int n, const struct plan *p, struct group_result *r)
{
	double pause = 0.5;
	int rest = 0;

	for (unsigned attempt = 1;; attempt++) {
		const struct job *f;
		bool transient;

		act(jobs, n, p, r->refused, sizeof(r->refused));
		f = p->atomic && !r->refused[0] ? first_failure(jobs, n, &transient) : NULL;
		if (!f)
			return rest;
		rest = roll_back(jobs, n, p, r);
		if (rest || !transient || attempt > p->retries ||
		    cli_now_s() + pause >= p->deadline)
			return rest;
		if (r->n_attempts < MAX_ATTEMPTS)
			snprintf(r->attempts[r->n_attempts++], sizeof(r->attempts[0]),
				 "attempt %u: %s; %s; trying again in %.1f s", attempt, f->line,
				 r->rollback[0] ? r->rollback : "nothing to roll back", pause);
		if (p->on_attempt)
			p->on_attempt(r->attempts[r->n_attempts - 1]);
		usleep((useconds_t)(pause * 1e6));
		pause *= 2;
		r->rollback[0] = '\0';
		r->rolled_back = 0;
	}
}

void group_run(struct job *jobs, int n, const struct plan *p, struct group_result *r)
{
	double t0 = cli_now_s();
	int rest;

	memset(r, 0, sizeof(*r));
	r->all_ok = true;
	rest = p->relay ? run_relayed(jobs, n, p, r) : run_here(jobs, n, p, r);
	for (int i = 0; i < n; i++) {
		struct job *j = &jobs[i];

		if (j->gone) {
			r->n_gone++;
			continue;
		}
		/* In a whole job, launcher shells and workers without CUDA are nothing to do. */
		if (j->no_cuda && p->group) {
			say(j, "no-cuda", "no CUDA state, nothing to do");
			j->ok = true;
			r->n_none++;
		} else {
			r->n_ok += j->ok && !r->rolled_back;
		}
		r->all_ok &= j->ok && !r->rolled_back;
	}
	/* Rolled back: what is still suspended is what could not be resumed. */
	if (r->rolled_back)
		r->n_ok = rest;
	r->seconds = cli_now_s() - t0;
}
