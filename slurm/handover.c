/* handover: Slurm's preemption hands a GPU on only if the job it suspends lets the GPU go before
 * the preemptor uses it. With PreemptMode=SUSPEND,GANG slurmctld marks the preempted job suspended
 * and then launches the preemptor, while the preempted job's tasks get SIGTSTP: the two race. A
 * task of the preemptor (of any job, under cudanap or not) waits here, before it starts, for the
 * cudanap processes of the jobs suspended on its node to be checkpointed. Which jobs those are,
 * squeue says, with their users; where their processes stand, their status files in the job
 * directories of the plugin's statusbase (jobdirs.c, which believes only what the job's own user
 * could have written there). Runs in the task's process, as root, before its exec: max_s bounds
 * the whole wait, squeue included. */
#define _GNU_SOURCE
#include "handover.h"

#include <fcntl.h>
#include <limits.h>
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

#define MAX_JOBS 64

extern char **environ;

struct job {
	uint32_t id;
	uid_t uid;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* squeue started for the jobs suspended on node, its output on *out; 0, or -1 (said when no
 * squeue is trusted). */
static int spawn_squeue(const char *node, int *out, pid_t *pid)
{
	char *argv[] = {
		"squeue", "-h", "-t", "SUSPENDED", "-w", (char *)node, "-o", "%A %U", NULL
	};
	posix_spawn_file_actions_t fa;
	char exe[PATH_MAX], why[PATH_MAX + 100];
	int p[2];

	/* Root runs only a squeue that root alone could have written, from "/" (cn_safe.h). */
	if (cn_safe_find_exec("squeue", exe, sizeof(exe), why, sizeof(why)) < 0) {
		slurm_info("cudanap: handover: %s", why);
		return -1;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addchdir_np(&fa, "/");
	if (posix_spawn(pid, exe, &fa, NULL, argv, environ) != 0) {
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

/* fd read into buf until its end, buf full or the deadline; fd closed, buf a string. */
static void read_until(int fd, char *buf, size_t len, double deadline)
{
	size_t got = 0;

	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		double left = deadline - now_s();
		ssize_t r;

		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
			break;
		r = read(fd, buf + got, len - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == len - 1)
			break;
	}
	close(fd);
	buf[got] = '\0';
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

/* The jobs of squeue's "%A %U" lines, max at most; their count. */
static int parse_jobs(char *out, struct job *jobs, int max)
{
	int n = 0;

	for (char *save, *line = strtok_r(out, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long id, uid;

		if (sscanf(line, "%lu %lu", &id, &uid) == 2 && id > 0)
			jobs[n++] = (struct job){ (uint32_t)id, (uid_t)uid };
	}
	return n;
}

/* The jobs Slurm has suspended on node, and their users, from squeue; their count, or -1 when
 * squeue fails or has not answered by the deadline (it is killed then). */
static int suspended_jobs(const char *node, struct job *jobs, int max, double deadline)
{
	char buf[4096];
	int fd, n, status = -1;
	pid_t pid;

	if (spawn_squeue(node, &fd, &pid) < 0)
		return -1;
	read_until(fd, buf, sizeof(buf), deadline);
	if (reap_by(pid, deadline, &status) < 0)
		return -1;
	n = parse_jobs(buf, jobs, max);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? n : -1;
}

void cn_handover_wait(const char *statusbase, const char *node, uint32_t self, double max_s)
{
	struct job jobs[MAX_JOBS];
	double t0 = now_s(), deadline = t0 + max_s;
	int n = suspended_jobs(node, jobs, MAX_JOBS, deadline), left = 0, frozen = 0, pid = 0;

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
		left = frozen = 0;
		for (int i = 0; i < n; i++) {
			int f = 0;

			if (jobs[i].id != self)
				left += cn_jobdirs_holding(statusbase, jobs[i].id, jobs[i].uid,
							   deadline + 0.5, &f, &pid);
			frozen += f;
		}
		if (!left || now_s() + 0.05 >= deadline)
			break;
		usleep(50000);
	}
	if (left)
		slurm_info("cudanap: handover: job %u starts after %.1f s with %d process%s of "
			   "suspended jobs (pid %d) still holding GPU memory",
			   (unsigned)self, now_s() - t0, left, left == 1 ? "" : "es", pid);
	else if (n)
		slurm_info("cudanap: handover: job %u waited %.2f s for %d suspended job%s to let "
			   "their GPUs go",
			   (unsigned)self, now_s() - t0, n, n == 1 ? "" : "s");
	if (frozen)
		slurm_info(
			"cudanap: handover: %d process%s of suspended jobs were stopped by Slurm "
			"before their checkpoint ended: their GPU memory stays until they resume "
			"(give Slurm's suspend more time than the checkpoint takes)",
			frozen, frozen == 1 ? "" : "es");
}
