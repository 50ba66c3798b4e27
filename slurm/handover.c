/* handover: a preemptor's task waits, before it starts, until the jobs Slurm suspended on its node
 * have let their GPUs go (docs/FILES.md). The task's process, as root. */
#define _GNU_SOURCE
#include "handover.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "cn_safe.h"
#include "jobdirs.h"

extern char **environ;

struct job {
	uint32_t id;
	uid_t uid;
	bool asked; /* scontrol was asked when Slurm suspended it */
	double at;  /* then (CLOCK_MONOTONIC seconds); NAN when scontrol could not say */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A Slurm command (found as cn_safe.h says, run from "/", with env) started, its output on *out;
 * 0, or -1 (said when it is not trusted). */
static int spawn_slurm(char *const argv[], char *const env[], int *out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	char exe[PATH_MAX], why[PATH_MAX + 100];
	int p[2];

	/* Root runs only a program that root alone could have written. */
	if (cn_safe_find_exec(argv[0], exe, sizeof(exe), why, sizeof(why)) < 0) {
		slurm_info("cudanap: handover: %s", why);
		return -1;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addchdir_np(&fa, "/");
	if (posix_spawn(pid, exe, &fa, NULL, argv, env) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	*out = p[0];
	return 0;
}

/* fd read whole until its end or the deadline; fd closed. A string to free, or NULL. */
static char *read_until(int fd, double deadline)
{
	size_t got = 0, cap = 4096;
	char *buf = malloc(cap);

	while (buf) {
		struct pollfd pf = { fd, POLLIN, 0 };
		double left = deadline - now_s();
		ssize_t r;

		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
			break;
		r = read(fd, buf + got, cap - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == cap - 1) {
			char *more = realloc(buf, cap *= 2);

			if (!more)
				free(buf);
			buf = more;
		}
	}
	close(fd);
	if (buf)
		buf[got] = '\0';
	return buf;
}

/* Its output ended with it, which may not have been reaped yet: reaped by the deadline (0, its
 * status), or killed (-1). */
static int reap_by(pid_t pid, double deadline, int *status)
{
	while (waitpid(pid, status, WNOHANG) == 0) {
		if (now_s() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return -1;
		}
		usleep(1000);
	}
	return 0;
}

/* The output of a Slurm command by the deadline, if it exited 0 then (it is killed at the
 * deadline): a string to free, or NULL. */
static char *run_slurm(char *const argv[], char *const env[], double deadline)
{
	int fd, status = -1;
	pid_t pid;
	char *out;

	if (spawn_slurm(argv, env, &fd, &pid) < 0)
		return NULL;
	out = read_until(fd, deadline);
	if (reap_by(pid, deadline, &status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* The jobs Slurm has suspended on node, and their users, from squeue's "%A %U" lines, into *jobs
 * (to free); their count, or -1 when squeue fails or has not answered by the deadline. */
static int suspended_jobs(const char *node, struct job **jobs, double deadline)
{
	char *argv[] = {
		"squeue", "-h", "-t", "SUSPENDED", "-w", (char *)node, "-o", "%A %U", NULL
	};
	char *out = run_slurm(argv, environ, deadline), *save, *line;
	int n = 0, cap = 0;

	*jobs = NULL;
	if (!out)
		return -1;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long id, uid;

		if (sscanf(line, "%lu %lu", &id, &uid) != 2 || id == 0)
			continue;
		if (n == cap) {
			struct job *more =
				realloc(*jobs, (size_t)(cap = cap ? 2 * cap : 8) * sizeof(**jobs));

			if (!more)
				break;
			*jobs = more;
		}
		(*jobs)[n++] = (struct job){ (uint32_t)id, (uid_t)uid, false, NAN };
	}
	free(out);
	return n;
}

/* The earliest " SuspendTime=SECONDS" in scontrol's line of a job, 0 when there is none. Slurm
 * writes one; a free-text field of the job's user (JobName, before it; WorkDir, Comment, after)
 * may hold more, but none can hide Slurm's, and an earlier time than Slurm's only makes that
 * user's own processes believed for less long. */
static unsigned long long earliest_suspend(const char *line)
{
	unsigned long long t = 0;

	for (const char *at = line; (at = strstr(at, " SuspendTime=")); at += 13) {
		size_t n = strspn(at + 13, "0123456789");
		unsigned long long v = strtoull(at + 13, NULL, 10);

		if (n && n < 20 && (!at[13 + n] || isspace((unsigned char)at[13 + n])) &&
		    (!t || v < t))
			t = v;
	}
	return t;
}

/* When Slurm suspended job (its SuspendTime, asked of scontrol in whole seconds since the epoch),
 * on CLOCK_MONOTONIC, no later than now (the controller's clock may be a little ahead); NAN when
 * scontrol cannot say by the deadline. */
static double suspended_at(uint32_t job, double deadline)
{
	char id[16], *argv[] = { "scontrol", "-o", "show", "job", id, NULL }, **env, *out;
	unsigned long long t;
	size_t n = 0;
	double at = NAN;

	snprintf(id, sizeof(id), "%u", (unsigned)job);
	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NAN;
	n = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "SLURM_TIME_FORMAT=", 18) != 0)
			env[n++] = *e;
	env[n] = "SLURM_TIME_FORMAT=%s"; /* strftime's seconds since the epoch */
	out = run_slurm(argv, env, deadline);
	free(env);
	t = out ? earliest_suspend(out) : 0;
	if (t) {
		struct timespec ts;
		double ago;

		clock_gettime(CLOCK_REALTIME, &ts);
		/* Slurm's second taken at its end: a suspend of this second is one of now */
		ago = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - (double)(t + 1);
		at = now_s() - (ago > 0 ? ago : 0);
	}
	free(out);
	return at;
}

/* One look at the jobs' processes: how many hold their GPU (*pid the first), how many were stopped
 * mid-checkpoint (*frozen), and how many of the jobs are left out as suspended more than max_s
 * ago (*late, their holders in *late_n). */
static int look(const char *statusbase, struct job *jobs, int n, uint32_t self, double max_s,
		double deadline, int *frozen, int *pid, int *late, int *late_n)
{
	int left = 0;

	*frozen = *late = *late_n = 0;
	for (int i = 0; i < n; i++) {
		int f = 0, h;

		if (jobs[i].id == self)
			continue;
		h = cn_jobdirs_holding(statusbase, jobs[i].id, jobs[i].uid, deadline + 0.5, &f,
				       pid);
		if (h && !jobs[i].asked) {
			jobs[i].at = suspended_at(jobs[i].id, deadline);
			jobs[i].asked = true;
		}
		if (h && !isnan(jobs[i].at) && now_s() >= jobs[i].at + max_s) {
			(*late)++;
			*late_n += h;
			h = 0;
		}
		left += h;
		*frozen += f;
	}
	return left;
}

void cn_handover_wait(const char *statusbase, const char *node, uint32_t self, double max_s)
{
	double t0 = now_s(), deadline = t0 + max_s;
	struct job *jobs;
	int n = suspended_jobs(node, &jobs, deadline), left = 0, frozen = 0, pid = 0, late = 0,
	    late_n = 0;

	if (n < 0) {
		slurm_info(
			"cudanap: handover: squeue failed on %s, or did not answer within %.0f s: "
			"not waiting for suspended jobs",
			node, max_s);
		return;
	}
	/* Each look is let past the deadline by half a second at most (a directory of many files
	 * on a slow disk), so that the last one is whole and its answer right. */
	for (;;) {
		left = look(statusbase, jobs, n, self, max_s, deadline, &frozen, &pid, &late,
			    &late_n);
		if (!left || now_s() + 0.05 >= deadline)
			break;
		usleep(50000);
	}
	free(jobs);
	if (left)
		slurm_info("cudanap: handover: job %u starts after %.1f s with %d process%s of "
			   "suspended jobs (pid %d) still holding GPU memory",
			   (unsigned)self, now_s() - t0, left, left == 1 ? "" : "es", pid);
	else if (n)
		slurm_info("cudanap: handover: job %u waited %.2f s for %d suspended job%s to let "
			   "their GPUs go",
			   (unsigned)self, now_s() - t0, n, n == 1 ? "" : "s");
	if (late)
		slurm_info("cudanap: handover: not waiting for %d process%s of %d job%s suspended "
			   "more than %g s ago: still running with GPU memory, continued by their "
			   "user",
			   late_n, late_n == 1 ? "" : "es", late, late == 1 ? "" : "s", max_s);
	if (frozen)
		slurm_info(
			"cudanap: handover: %d process%s of suspended jobs were stopped by Slurm "
			"before their checkpoint ended: their GPU memory stays until they resume "
			"(give Slurm's suspend more time than the checkpoint takes)",
			frozen, frozen == 1 ? "" : "es");
}
