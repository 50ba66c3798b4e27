/* handover: Slurm's preemption hands a GPU on only if the job it suspends lets the GPU go before
 * the preemptor uses it. With PreemptMode=SUSPEND,GANG slurmctld marks the preempted job suspended
 * and then launches the preemptor, while the preempted job's tasks get SIGTSTP: the two race. A
 * task of the preemptor (of any job, under cudanap or not) waits here, before it starts, for the
 * cudanap processes of the jobs suspended on its node to be checkpointed. Which jobs those are,
 * squeue says; where their processes stand, their status files in the plugin's statusbase. Runs
 * in the task's process, as root, before its exec. */
#define _GNU_SOURCE
#include "handover.h"

#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "cn_status.h"

#define MAX_JOBS 64

extern char **environ;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The jobs Slurm has suspended on node, from squeue; their count, or -1 when squeue fails. */
static int suspended_jobs(const char *node, uint32_t *jobs, int max)
{
	char *argv[] = { "squeue", "-h", "-t", "SUSPENDED", "-w", (char *)node, "-o", "%A", NULL };
	posix_spawn_file_actions_t fa;
	char line[64];
	int p[2], n = 0, status;
	pid_t pid;
	FILE *f;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, "squeue", &fa, NULL, argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	f = fdopen(p[0], "r");
	while (f && fgets(line, sizeof(line), f))
		if (n < max && atoi(line) > 0)
			jobs[n++] = (uint32_t)atoi(line);
	if (f)
		fclose(f);
	else
		close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? n : -1;
}

static bool stopped(int pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	bool t = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (f && fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')))
		t = rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
	if (f)
		fclose(f);
	return t;
}

/* How many processes of job still hold their GPUs and may let them go; *frozen counts those
 * Slurm stopped before their checkpoint ended. */
static int holding(const char *statusbase, uint32_t job, int *frozen, int *first_pid)
{
	char pattern[PATH_MAX];
	glob_t g;
	int n = 0;

	*frozen = 0;
	snprintf(pattern, sizeof(pattern), "%s/cudanap-*-job%u/*.json", statusbase, (unsigned)job);
	if (glob(pattern, 0, NULL, &g) != 0)
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char dir[PATH_MAX], *slash;
		struct cn_status s;
		int pid;

		snprintf(dir, sizeof(dir), "%s", g.gl_pathv[i]);
		slash = strrchr(dir, '/');
		*slash = '\0';
		pid = atoi(slash + 1);
		if (pid <= 0 || cn_status_read(dir, pid, &s) < 0 ||
		    cn_proc_starttime(pid) != s.starttime || strcmp(s.state, "checkpointed") == 0 ||
		    strcmp(s.state, "no-cuda") == 0 || (!s.busy && strcmp(s.state, "failed") == 0))
			continue;
		if (stopped(pid)) {
			(*frozen)++;
			continue;
		}
		if (!n++)
			*first_pid = pid;
	}
	globfree(&g);
	return n;
}

void cn_handover_wait(const char *statusbase, const char *node, uint32_t self, double max_s)
{
	uint32_t jobs[MAX_JOBS];
	double t0 = now_s();
	int n = suspended_jobs(node, jobs, MAX_JOBS), left = 0, frozen = 0, pid = 0;

	if (n < 0) {
		slurm_info("cudanap: handover: squeue failed on %s: not waiting for suspended jobs",
			   node);
		return;
	}
	for (;;) {
		left = frozen = 0;
		for (int i = 0; i < n; i++) {
			int f = 0;

			if (jobs[i] != self)
				left += holding(statusbase, jobs[i], &f, &pid);
			frozen += f;
		}
		if (!left || now_s() - t0 >= max_s)
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
