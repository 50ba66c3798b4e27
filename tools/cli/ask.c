/* ask: what a suspend would do now, asked of each process without doing it, for cudanap status,
 * suspend --dry-run and pick (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cn_proc.h"
#include "cn_words.h"

void ask_all(struct job *jobs, int n, const char *cfg, double timeout)
{
	union sigval q = { .sival_int = CN_SIGVAL_QUERY };
	double deadline = cli_now_s() + timeout;
	bool pending = false;
	int asked = 0;

	for (int i = 0; i < n; i++) {
		struct job *j = &jobs[i];

		procs_status_dir(j->pid, cfg, j->dir, sizeof(j->dir));
		j->have_st = cn_status_read(j->dir, j->pid, &j->st) == 0 && procs_alive(&j->st);
		j->done = true;
		if (!j->have_st)
			j->outcome = "gone";
		else if (j->st.busy)
			j->outcome = "busy"; /* it would answer after the action: not now */
		else if (procs_stopped(j->pid))
			j->outcome = "stopped";
		else if (cn_proc_signal(j->pid, j->st.starttime, j->st.suspend_signal, &q) < 0)
			j->outcome = "error";
		else {
			j->done = false;
			j->seq0 = j->st.query_seq;
			pending = true;
			asked++;
		}
	}
	progress_start(timeout, "asking %d process%s what a suspend would do", asked,
		       asked == 1 ? "" : "es");
	while (pending && cli_now_s() < deadline) {
		int waiting = 0;

		for (int i = 0; i < n; i++) {
			struct job *j = &jobs[i];
			struct cn_status s;

			if (j->done)
				continue;
			if (cn_status_read(j->dir, j->pid, &s) == 0 && s.query_seq > j->seq0) {
				j->st = s;
				j->done = j->ok = true;
				j->outcome = "answered";
			} else {
				waiting++;
			}
		}
		pending = waiting > 0;
		if (!pending)
			break;
		progress_done(asked - waiting, "answered", "");
		usleep(5000);
	}
	progress_end();
	for (int i = 0; i < n; i++)
		if (!jobs[i].done) {
			/* Busy with an action that has not ended: what it is doing says why. */
			cn_status_read(jobs[i].dir, jobs[i].pid, &jobs[i].st);
			jobs[i].outcome = "no-answer";
		}
}

/* "8712 MiB on GPU 0, 512 on GPU 1" from "0:8712,1:512". */
static void where(const char *now, char *out, size_t len)
{
	size_t o = 0;
	int k;
	double mib;

	out[0] = '\0';
	for (const char *p = now; *p && sscanf(p, "%d:%lf", &k, &mib) == 2;
	     p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%.0f MiB on GPU %d",
				      o ? ", " : "", mib, k);
	if (!out[0])
		snprintf(out, len, "nothing on its GPUs");
}

bool ask_line(const struct job *j, char *out, size_t len)
{
	const struct cn_status *s = &j->st;
	char on[200], host[200] = "", est[240] = "";

	if (strcmp(j->outcome, "gone") == 0) {
		snprintf(out, len, "%d: not a running cudanap process", j->pid);
		return false;
	}
	if (strcmp(j->outcome, "stopped") == 0) {
		snprintf(out, len, "%d: would refuse: %s", j->pid, procs_stopped(j->pid));
		return false;
	}
	if (strcmp(j->outcome, "error") == 0) {
		snprintf(out, len, "%d: cannot ask: %s", j->pid, strerror(errno));
		return false;
	}
	if (strcmp(j->outcome, "busy") == 0 || (strcmp(j->outcome, "no-answer") == 0 && s->busy)) {
		snprintf(out, len, "%d: would refuse: an action is under way (%s, since %s)",
			 j->pid, cn_outcome_action_to_string(s->action), s->timestamp);
		return false;
	}
	if (strcmp(j->outcome, "no-answer") == 0) {
		snprintf(out, len,
			 "%d: would refuse: no answer (its agent is stuck, or it ignores %s)",
			 j->pid, strsignal(s->suspend_signal));
		return false;
	}
	if (s->suspendable == CN_ASK_NO_CUDA || s->suspendable == CN_ASK_ASLEEP) {
		snprintf(out, len, "%d: %s", j->pid, s->why_not);
		return true;
	}
	where(s->gpu_now, on, sizeof(on));
	if (s->host_need_mib >= 0 && s->host_room_mib >= 0)
		snprintf(host, sizeof(host), "; host copy %.0f MiB of %.0f MiB free (%s)",
			 s->host_need_mib, s->host_room_mib, s->host_bound);
	if (s->est_suspend_s >= 0)
		snprintf(est, sizeof(est), "; about %.1f s, resume %.1f s (%s)", s->est_suspend_s,
			 s->est_resume_s, s->est_source);
	if (s->suspendable == CN_ASK_YES) {
		/* Peer access a suspend turns off ([peer] mode = off), or that stays off. */
		snprintf(out, len, "%d: would suspend: %s%s%s%s%s", j->pid, on, host, est,
			 s->peer[0] ? "; peer access " : "", s->peer);
		return true;
	}
	snprintf(out, len, "%d: would refuse: %s", j->pid, s->why_not);
	return false;
}
