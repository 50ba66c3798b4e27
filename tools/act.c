/* act: cudanap suspend, resume and prepare. It sends each process the signal its INI names (a
 * prepare: the suspend signal queued with a value of ours), reads each outcome from the process's
 * status file, and keeps a job whole: a suspend of several processes
 * (the ranks of a distributed job) ends with all of them suspended or all of them running. It
 * never talks to the driver.
 *
 * Why all or nothing: a rank locked while a peer's collective waits for it leaves the peer's
 * kernel spinning, so the peer's lock times out, and a job half asleep holds its GPUs and makes no
 * progress. The signals go out together; if any rank fails, the ranks this attempt suspended are
 * resumed (which lets the spinning collective finish) and, when every failure was a lock that
 * timed out, the whole job is tried again after a pause. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char usage_suspend[] =
	"usage: cudanap suspend|resume [-c FILE] [--wait|--no-wait] [--timeout S] PID...\n"
	"       cudanap suspend|resume [OPTIONS] --all\n"
	"       cudanap suspend|resume [OPTIONS] --tree PID\n"
	"       cudanap suspend|resume [OPTIONS] --slurm JOBID\n"
	"\n"
	"Send each PID the signal its job's INI names for suspend (or resume), all at once, then\n"
	"wait for each outcome in its status file and print one line per PID, then a total.\n"
	"\n"
	"Suspend locks the process's CUDA (waiting at most [lock] timeout_ms for running GPU "
	"work),\n"
	"copies its GPU memory into host memory and releases the GPU; the process's CPU threads "
	"run\n"
	"on and its CUDA calls wait. Resume re-reads the INI, restores the memory (onto the GPUs\n"
	"that [restore] gpu_map names) and lets the CUDA calls go on.\n"
	"\n"
	"A suspend of several processes (the ranks of a distributed job) is all or nothing: if\n"
	"one fails, those it did suspend are resumed, the line 'rollback: ...' says so, and the\n"
	"exit status is 1. When every failure was a lock that timed out (a rank waiting in a\n"
	"collective), the whole job is tried again, after 0.5 s, then 1 s, ...\n"
	"\n"
	"  -c, --config FILE   where to find the status files (default: read from each PID's own\n"
	"                      environment, else the built-in default directory)\n"
	"  -w, --wait          wait for the outcome (the default)\n"
	"  -n, --no-wait       return once the signals are sent (no rollback)\n"
	"  -t, --timeout S     give up waiting after S seconds (default 600)\n"
	"  -a, --all           every process of this user running under cudanap\n"
	"  -T, --tree PID      PID and all its descendants that run under cudanap (repeatable;\n"
	"                      other processes in the tree, such as a launcher shell, are "
	"skipped)\n"
	"  -S, --slurm JOBID   the processes of Slurm job JOBID on this node (scontrol listpids)\n"
	"  -e, --each          act on each process on its own: no rollback, no retries\n"
	"  -r, --retries N     attempts after the first for an all-or-nothing suspend (default 2)\n"
	"  -D, --to-disk[=DIR] suspend: put the host copy in a file in DIR (default: the INI's\n"
	"                      [hibernate] dir) and give its RAM back while the job sleeps\n"
	"\n"
	"--all, --tree and --slurm leave out the processes that started this command (a job's\n"
	"shell running it from a trap). A PID already in the asked-for state is reported as\n"
	"such and counts as success.\n"
	"Exit status: 0 if every PID succeeded, 1 if any failed or timed out, 2 on usage errors.\n"
	"Examples: cudanap suspend 4711 && sleep 60 && cudanap resume 4711\n"
	"          cudanap suspend --tree $SLURM_TASK_PID\n"
	"          srun --jobid=$J --overlap --ntasks-per-node=1 cudanap suspend --slurm $J\n";

const char usage_prepare[] =
	"usage: cudanap prepare [-c FILE] [--wait|--no-wait] [--timeout S] PID...\n"
	"       cudanap prepare [OPTIONS] --all | --tree PID | --slurm JOBID\n"
	"\n"
	"Notice that a suspend is coming (a scheduler's warning before a preemption): each "
	"process\n"
	"maps and faults in the host memory its next checkpoint will copy into, after the same "
	"host\n"
	"memory check as a suspend, and holds it for [performance] prepare_s seconds (default 60)\n"
	"or until that suspend, which then only copies. Unused, it is given back. The process "
	"runs\n"
	"on meanwhile; 'cudanap status' shows it as running+prep with the memory it holds.\n"
	"\n"
	"The signal is the suspend signal queued with a value of cudanap's (sigqueue), which the\n"
	"preload tells from a suspend; [signals] prepare names a plain signal that does the same,\n"
	"for schedulers that can only send one.\n"
	"\n"
	"Options as for suspend: -c, -w, -n, -t, -a, -T, -S. Exit status: 0 if every PID is\n"
	"prepared (or already suspended), 1 otherwise, 2 on usage errors.\n"
	"Example: cudanap prepare --tree $SLURM_TASK_PID; sleep 50; cudanap suspend --tree ...\n";

struct job {
	int pid;
	char dir[PATH_MAX];
	unsigned long seq0;
	bool sent, done, ok;
	bool no_cuda;	 /* answered that it has no CUDA state */
	char state[16];	 /* its state after the outcome */
	char result[48]; /* ... and the result */
	char line[600];
};

static const char *const verb_name[] = { "suspend", "resume", "prepare" };

/* The state a verb leads to (a prepared process runs on). */
static const char *goal(enum verb v)
{
	return v == VERB_SUSPEND ? "checkpointed" : "running";
}

static void outcome(struct job *j, const struct cn_status *s, enum verb v)
{
	char total[32], steps[200];
	size_t o = cn_status_steps(s, steps, sizeof(steps));

	j->done = true;
	j->no_cuda = strcmp(s->state, "no-cuda") == 0;
	snprintf(j->state, sizeof(j->state), "%s", s->state);
	snprintf(j->result, sizeof(j->result), "%s", s->result);
	j->ok = strcmp(s->result, "ok") == 0 && strcmp(s->state, goal(v)) == 0;
	fmt_ms(s->total_ms, total, sizeof(total));
	if (j->ok && v == VERB_PREPARE && s->prepared)
		snprintf(j->line, sizeof(j->line), "%d: %s in %s", j->pid, s->message, total);
	else if (j->ok && o)
		snprintf(j->line, sizeof(j->line), "%d: %s in %s (%s)", j->pid,
			 v == VERB_SUSPEND ? "suspended" : "resumed", total, steps);
	else if (j->ok)
		snprintf(j->line, sizeof(j->line), "%d: %s", j->pid, s->message);
	else
		snprintf(j->line, sizeof(j->line), "%d: %s failed: %s: %s (state %s)", j->pid,
			 verb_name[v], s->result, s->message, s->state);
}

static const char *to_disk; /* --to-disk[=DIR]: NULL when not asked, "" for the INI's dir */

/* The hibernate request the process's agent reads at its next suspend (agent.c). */
static int ask_to_disk(const struct job *j)
{
	char path[PATH_MAX + 32];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%d.hibernate", j->dir, j->pid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ok = write(fd, to_disk, strlen(to_disk)) == (ssize_t)strlen(to_disk);
	return close(fd) == 0 && ok ? 0 : -1;
}

/* Send one process its signal. In a whole job, a process that never loaded the driver (a shell,
 * srun, a data loader) is nothing to do and gets no signal: srun, for one, takes SIGUSR1 for its
 * own and forwards it to its tasks, so its answer would never come. */
static void send_one(struct job *j, const char *cfg, enum verb v, bool group, double deadline)
{
	union sigval prep = { .sival_int = CN_SIGVAL_PREPARE };
	const char *why;
	struct cn_status s;
	int r;

	status_dir_of(j->pid, cfg, j->dir, sizeof(j->dir));
	r = cn_status_read(j->dir, j->pid, &s);
	if (r < 0 || !alive(&s)) {
		j->done = true;
		snprintf(j->line, sizeof(j->line), "%d: %s", j->pid,
			 kill(j->pid, 0) < 0 && errno == ESRCH
				 ? "no such process"
				 : "not running under cudanap (no status file); start it with "
				   "'cudanap run' or give its INI with -c");
		return;
	}
	if (group && !cuda_loaded(j->pid)) {
		j->done = j->ok = j->no_cuda = true;
		snprintf(j->line, sizeof(j->line), "%d: no CUDA state, nothing to do", j->pid);
		return;
	}
	if ((why = stopped(j->pid))) {
		j->done = true;
		snprintf(j->line, sizeof(j->line), "%d: cannot %s: %s; nothing sent", j->pid,
			 verb_name[v], why);
		return;
	}
	/* Let an action under way finish, so that its outcome is not taken for ours. */
	while (s.busy && now_s() < deadline && cn_status_read(j->dir, j->pid, &s) == 0)
		usleep(5000);
	snprintf(j->state, sizeof(j->state), "%s", s.state);
	if ((v == VERB_PREPARE ? strcmp(s.state, "checkpointed") : strcmp(s.state, goal(v))) == 0 &&
	    !s.busy) {
		j->done = j->ok = true;
		snprintf(j->line, sizeof(j->line), "%d: already %s%s", j->pid,
			 v == VERB_RESUME ? "running" : "suspended",
			 v == VERB_PREPARE ? ": nothing to prepare" : "");
		return;
	}
	j->seq0 = s.seq;
	if (v == VERB_SUSPEND && to_disk && ask_to_disk(j) < 0) {
		j->done = true;
		snprintf(j->line, sizeof(j->line),
			 "%d: --to-disk: cannot write in %s: %s; nothing sent", j->pid, j->dir,
			 strerror(errno));
		return;
	}
	if ((v == VERB_PREPARE
		     ? sigqueue(j->pid, s.suspend_signal, prep)
		     : kill(j->pid, v == VERB_SUSPEND ? s.suspend_signal : s.resume_signal)) < 0) {
		j->done = true;
		snprintf(j->line, sizeof(j->line), "%d: cannot signal: %s", j->pid,
			 strerror(errno));
		return;
	}
	j->sent = true;
}

/* Send every job its signal, all at once, then wait for each outcome until the deadline. */
static void act(struct job *jobs, int n, const char *cfg, enum verb v, bool wait, bool group,
		double deadline)
{
	for (int i = 0; i < n; i++) {
		int pid = jobs[i].pid;

		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].pid = pid;
		send_one(&jobs[i], cfg, v, group, deadline);
	}
	for (bool pending = wait; pending;) {
		pending = false;
		for (int i = 0; i < n; i++) {
			struct job *j = &jobs[i];
			struct cn_status s;
			const char *why;

			if (j->done)
				continue;
			if (cn_status_read(j->dir, j->pid, &s) < 0 || !alive(&s)) {
				j->done = true;
				snprintf(j->line, sizeof(j->line), "%d: process exited", j->pid);
			} else if (s.seq > j->seq0 && !s.busy) {
				outcome(j, &s, v);
			} else if ((why = stopped(j->pid))) {
				/* Stopped after the signal: it acts once let go. */
				j->done = true;
				snprintf(j->line, sizeof(j->line),
					 "%d: no outcome: %s; the %s happens when it runs again",
					 j->pid, why, verb_name[v]);
			} else {
				pending = true;
			}
		}
		if (pending && now_s() >= deadline)
			break;
		if (pending)
			usleep(2000);
	}
	for (int i = 0; i < n; i++) {
		struct job *j = &jobs[i];

		if (j->sent && !j->done) {
			if (wait)
				snprintf(j->line, sizeof(j->line),
					 "%d: no outcome yet: timed out waiting (it may still "
					 "finish)",
					 j->pid);
			else
				snprintf(j->line, sizeof(j->line), "%d: %s requested", j->pid,
					 verb_name[v]);
			j->ok = !wait;
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
		*all_timeouts &= strcmp(jobs[i].result, "CUDA_ERROR_NOT_READY") == 0;
	}
	return first;
}

/* After a failed suspend of a group: resume every process this attempt suspended, and every one
 * whose outcome is not known yet (its resume waits behind the suspend still under way), with a
 * time of its own: the suspend may have used all of the deadline. Says what happened in line;
 * returns how many are still not running. */
static int roll_back(const struct job *jobs, int n, const char *cfg, double timeout, char *line,
		     size_t len)
{
	struct job *back = calloc((size_t)n, sizeof(*back));
	double t0 = now_s();
	int m = 0, bad = 0;
	size_t o;

	if (!back) {
		snprintf(line, len, "rollback: out of memory; resume the job by hand");
		return n;
	}
	for (int i = 0; i < n; i++) {
		const struct job *j = &jobs[i];

		if (j->sent && !j->no_cuda && !(j->done && strcmp(j->state, "running") == 0))
			back[m++].pid = j->pid;
	}
	act(back, m, cfg, VERB_RESUME, true, true, t0 + timeout);
	o = (size_t)snprintf(line, len, "rollback: %d process%s resumed in %.2f s", m,
			     m == 1 ? "" : "es", now_s() - t0);
	for (int i = 0; i < m; i++) {
		if (back[i].ok)
			continue;
		bad++;
		o += (size_t)snprintf(line + o, o < len ? len - o : 0, "; %s", back[i].line);
	}
	snprintf(line + o, o < len ? len - o : 0, "%s",
		 bad ? ": the job is split; resume it with cudanap resume"
		     : ": every process runs again");
	free(back);
	return bad;
}

struct plan {
	const char *cfg;
	enum verb verb;
	bool wait, group, atomic;
	unsigned retries;
	double timeout, deadline;
};

/* Act on the jobs; for an atomic suspend, roll back and try again as act.c's opening says. Prints
 * every line; returns the exit status. */
static int run_plan(struct job *jobs, int n, const struct plan *p)
{
	double t0 = now_s(), pause = 0.5;
	char rollback[2048] = "";
	int n_ok = 0, n_none = 0, rest = 0;
	bool all_ok = true;

	for (unsigned attempt = 1;; attempt++) {
		const struct job *f;
		bool transient;

		act(jobs, n, p->cfg, p->verb, p->wait, p->group, p->deadline);
		f = p->atomic ? first_failure(jobs, n, &transient) : NULL;
		if (!f)
			break;
		rest = roll_back(jobs, n, p->cfg, p->timeout, rollback, sizeof(rollback));
		if (rest || !transient || attempt > p->retries || now_s() + pause >= p->deadline)
			break;
		printf("attempt %u: %s; %s; trying again in %.1f s\n", attempt, f->line, rollback,
		       pause);
		fflush(stdout);
		usleep((useconds_t)(pause * 1e6));
		pause *= 2;
		rollback[0] = '\0';
	}
	for (int i = 0; i < n; i++) {
		struct job *j = &jobs[i];

		/* In a whole job, launcher shells and workers without CUDA are nothing to do. */
		if (j->no_cuda && p->group) {
			snprintf(j->line, sizeof(j->line), "%d: no CUDA state, nothing to do",
				 j->pid);
			j->ok = true;
			n_none++;
		} else {
			n_ok += j->ok && !rollback[0];
		}
		all_ok &= j->ok && !rollback[0];
		printf("%s\n", j->line);
	}
	/* Rolled back: what is still suspended is what could not be resumed. */
	if (rollback[0]) {
		printf("%s\n", rollback);
		n_ok = rest;
	}
	if (n > 1 || p->group)
		printf("total: %d process%s, %d %s, %d without CUDA, %d failed%s, %.2f s\n", n,
		       n == 1 ? "" : "es", n_ok,
		       !p->wait			 ? "signalled"
		       : p->verb == VERB_SUSPEND ? "suspended"
		       : p->verb == VERB_RESUME	 ? "resumed"
						 : "prepared",
		       n_none, n - n_ok - n_none, rollback[0] ? " (rolled back)" : "",
		       now_s() - t0);
	return all_ok ? 0 : 1;
}

int cmd_act(int argc, char **argv, enum verb verb)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "wait", no_argument, NULL, 'w' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "tree", required_argument, NULL, 'T' },
		{ "slurm", required_argument, NULL, 'S' },
		{ "each", no_argument, NULL, 'e' },
		{ "retries", required_argument, NULL, 'r' },
		{ "to-disk", optional_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct plan p = { .verb = verb, .wait = true, .retries = 2 };
	const char *slurm = NULL;
	double timeout = 600;
	bool all = false, each = false;
	int c, n, roots[64], n_roots = 0, *pids = NULL, rc;
	struct job *jobs;
	char *end;

	while ((c = getopt_long(argc, argv, "+c:wnt:aT:S:er:D::h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			p.cfg = optarg;
			break;
		case 'w':
			p.wait = true;
			break;
		case 'n':
			p.wait = false;
			break;
		case 't':
			timeout = strtod(optarg, NULL);
			if (timeout <= 0)
				die_usage("cudanap: --timeout wants a number of seconds above 0\n");
			break;
		case 'a':
			all = true;
			break;
		case 'T':
			if (n_roots == 64)
				die_usage("cudanap: at most 64 --tree options\n");
			if ((roots[n_roots++] = parse_pid(optarg)) < 0) {
				fprintf(stderr, "%s: '%s' is not a process id\n", prog, optarg);
				return 2;
			}
			break;
		case 'S':
			slurm = optarg;
			break;
		case 'e':
			if (verb == VERB_PREPARE)
				die_usage("cudanap: --each is for suspend and resume\n");
			each = true;
			break;
		case 'D':
			if (verb != VERB_SUSPEND)
				die_usage("cudanap: --to-disk is for suspend\n");
			if (optarg && optarg[0] && optarg[0] != '/') {
				static char abs[PATH_MAX];

				if (!getcwd(abs, sizeof(abs) - strlen(optarg) - 2))
					die_usage("cudanap: --to-disk: cannot make the path "
						  "absolute\n");
				strcat(strcat(abs, "/"), optarg);
				to_disk = abs;
			} else {
				to_disk = optarg ? optarg : "";
			}
			break;
		case 'r':
			p.retries = (unsigned)strtoul(optarg, &end, 10);
			if (!*optarg || *end || p.retries > 100)
				die_usage("cudanap: --retries wants a number from 0 to 100\n");
			break;
		default:
			die_usage(verb == VERB_PREPARE ? usage_prepare : usage_suspend);
		}
	}
	n = argc - optind;
	if ((all + (n_roots > 0) + (slurm != NULL) + (n > 0)) > 1)
		die_usage("cudanap: give PIDs, --all, --tree or --slurm, not several of them\n");
	p.group = all || n_roots || slurm;
	if (slurm) {
		char note[300];
		int *job_pids, k = slurm_job_pids(slurm, &job_pids, note, sizeof(note));

		if (note[0])
			fprintf(stderr, "%s: %s\n", prog, note);
		if (k < 0)
			return 1;
		n = select_jobs(p.cfg, NULL, 0, job_pids, k, &pids);
		free(job_pids);
		if (n <= 0) {
			fprintf(stderr,
				"%s: no process of Slurm job %s on this node runs under "
				"cudanap\n",
				prog, slurm);
			free(pids);
			return 1;
		}
	} else if (all || n_roots) {
		for (int r = 0; r < n_roots; r++)
			if (kill(roots[r], 0) < 0 && errno == ESRCH) {
				fprintf(stderr, "%s: %d: no such process\n", prog, roots[r]);
				return 1;
			}
		n = select_jobs(p.cfg, roots, n_roots, NULL, 0, &pids);
		if (n <= 0) {
			fprintf(stderr, "%s: no process %s runs under cudanap\n", prog,
				all ? "of this user" : "in that tree");
			free(pids);
			return 1;
		}
	} else if (n <= 0) {
		die_usage(verb == VERB_PREPARE ? usage_prepare : usage_suspend);
	}
	jobs = calloc((size_t)n, sizeof(*jobs));
	if (!jobs)
		return 1;
	for (int i = 0; i < n; i++) {
		jobs[i].pid = pids ? pids[i] : parse_pid(argv[optind + i]);
		if (jobs[i].pid < 0) {
			fprintf(stderr, "%s: '%s' is not a process id\n", prog, argv[optind + i]);
			free(jobs);
			free(pids);
			return 2;
		}
	}
	free(pids);
	p.timeout = timeout;
	p.deadline = now_s() + timeout;
	p.atomic = verb == VERB_SUSPEND && p.wait && !each && n > 1;
	rc = run_plan(jobs, n, &p);
	free(jobs);
	return rc;
}
