/* slurm: a Slurm job as Slurm knows it: its processes on this node, its state and nodes, and
 * Slurm's programs found where root may start them (docs/FILES.md). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cn_hostlist.h"
#include "cn_proc.h"
#include "cn_safe.h"

extern char **environ;

/* A job id as Slurm writes one: 1234, 1234_7 (array task) or 1234+1 (heterogeneous part). */
static bool job_id_ok(const char *s)
{
	size_t i = 0, sep = 0;

	for (; s[i]; i++)
		if (!isdigit((unsigned char)s[i]) && !((s[i] == '_' || s[i] == '+') && i && !sep++))
			return false;
	return i > 0 && isdigit((unsigned char)s[i - 1]);
}

int slurm_spawn(char *const argv[], char *const envp[], int *to, int *from, int *errs, pid_t *pid,
		char *err, size_t len)
{
	char exe[PATH_MAX], why[PATH_MAX + 100];
	int p[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } }, r = -1;
	int *ends[3] = { to, from, errs };
	posix_spawn_file_actions_t fa;

	if (cn_safe_find_exec(argv[0], exe, sizeof(exe), why, sizeof(why)) < 0) {
		snprintf(err, len, "%s", why);
		return -1;
	}
	for (int i = 0; i < 3; i++)
		if (ends[i] && pipe2(p[i], O_CLOEXEC) < 0) {
			snprintf(err, len, "cannot run %s: %s", argv[0], strerror(errno));
			goto out;
		}
	posix_spawn_file_actions_init(&fa);
	if (to)
		posix_spawn_file_actions_adddup2(&fa, p[0][0], STDIN_FILENO);
	else
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1][1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, errs ? p[2][1] : p[1][1], STDERR_FILENO);
	posix_spawn_file_actions_addchdir_np(&fa, "/");
	r = posix_spawn(pid, exe, &fa, NULL, argv, envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		snprintf(err, len, "cannot run %s: %s", exe, strerror(r));
out:
	/* The child's ends closed here; ours handed out, or closed on a failure. */
	for (int i = 0; i < 3; i++) {
		int mine = i == 0 ? p[i][1] : p[i][0], theirs = i == 0 ? p[i][0] : p[i][1];

		if (theirs >= 0)
			close(theirs);
		if (r == 0 && ends[i])
			*ends[i] = mine;
		else if (mine >= 0)
			close(mine);
	}
	return r == 0 ? 0 : -1;
}

/* A program's output and errors, read through *f; its pid in *pid. */
static int run_reading(char *const argv[], FILE **f, pid_t *pid, char *err, size_t len)
{
	int fd;

	if (slurm_spawn(argv, NULL, NULL, &fd, NULL, pid, err, len) < 0)
		return -1;
	if (!(*f = fdopen(fd, "re"))) {
		snprintf(err, len, "cannot read %s: %s", argv[0], strerror(errno));
		close(fd);
		waitpid(*pid, NULL, 0);
		return -1;
	}
	return 0;
}

/* `scontrol listpids JOBID`: "PID JOBID STEPID LOCALID GLOBALID" under a header line. */
static int listpids(const char *jobid, int **out, char *err, size_t len)
{
	char line[512], *argv[] = { "scontrol", "listpids", (char *)jobid, NULL };
	int n = 0, cap = 64, rc = 0;
	int *v = malloc((size_t)cap * sizeof(int));
	FILE *f = NULL;
	pid_t child;

	err[0] = '\0';
	if (!v || run_reading(argv, &f, &child, err, len) < 0) {
		free(v);
		if (!err[0])
			snprintf(err, len, "cannot run scontrol");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		int pid;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%d", &pid) != 1) {
			if (strncmp(line, "PID", 3) != 0 && !err[0])
				snprintf(err, len, "%s", line);
			continue;
		}
		if (n == cap) {
			int *nv = realloc(v, (size_t)(cap *= 2) * sizeof(int));

			if (!nv)
				break;
			v = nv;
		}
		v[n++] = pid;
	}
	fclose(f);
	while (waitpid(child, &rc, 0) < 0 && errno == EINTR)
		;
	if (rc != 0 && n == 0) {
		if (!err[0])
			snprintf(err, len, "scontrol exited with status %d", WEXITSTATUS(rc));
		free(v);
		return -1;
	}
	*out = v;
	return n;
}

int slurm_job_pids(const char *jobid, int **out, char *note, size_t len)
{
	char err[300];
	int n;

	note[0] = '\0';
	if (!job_id_ok(jobid)) {
		snprintf(note, len, "'%s' is not a Slurm job id", jobid);
		return -1;
	}
	n = listpids(jobid, out, err, sizeof(err));
	if (n >= 0)
		return n;
	/* Slurm's tools missing or not answering: every process of a job inherits its id, but any
	 * process may set it; those Slurm did not make (its cgroup, or its step daemon above it)
	 * are left out. */
	/* A job's processes have its own numeric id there; an array task's or a part's name
	 * ("1234_7", "1234+1") is no process's to claim. */
	*out = NULL;
	n = strspn(jobid, "0123456789") == strlen(jobid)
		    ? procs_with_env("SLURM_JOB_ID", jobid, out)
		    : 0;
	if (n > 0) {
		int k = 0;

		for (int i = 0; i < n; i++)
			if (cn_proc_in_job((*out)[i], strtoul(jobid, NULL, 10)))
				(*out)[k++] = (*out)[i];
		n = k;
	}
	if (n > 0)
		snprintf(note, len,
			 "scontrol listpids %s: %s; found the job's processes by SLURM_JOB_ID in "
			 "their environment instead",
			 jobid, err);
	else
		snprintf(note, len,
			 "scontrol listpids %s: %s; and no process of this user has "
			 "SLURM_JOB_ID=%s",
			 jobid, err, jobid);
	return n > 0 ? n : -1;
}

int slurm_job_nodes(const char *jobid, char *state, size_t slen, char *nodes, size_t nlen,
		    char *err, size_t elen)
{
	char line[4096] = "",
	     *argv[] = { "squeue", "-h", "-j", (char *)jobid, "-o", "%T %N", NULL };
	int rc = -1, n;
	FILE *f;
	pid_t child;

	if (!job_id_ok(jobid)) {
		snprintf(err, elen, "'%s' is not a Slurm job id", jobid);
		return -1;
	}
	if (run_reading(argv, &f, &child, err, elen) < 0)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	while (waitpid(child, &rc, 0) < 0 && errno == EINTR)
		;
	line[strcspn(line, "\n")] = '\0';
	if (rc != 0 || !strchr(line, ' ')) {
		snprintf(err, elen, "squeue -j %s: %s", jobid,
			 line[0] ? line
			 : rc	 ? "failed"
				 : "no such job");
		return -1;
	}
	*strchr(line, ' ') = '\0';
	snprintf(state, slen, "%s", line);
	snprintf(nodes, nlen, "%s", line + strlen(line) + 1);
	n = cn_hostlist_count(nodes);
	if (n < 0)
		snprintf(err, elen, "squeue -j %s: cannot read the node list '%s'", jobid, nodes);
	return n;
}

void slurm_node_name(char *out, size_t len)
{
	const char *env = getenv("SLURMD_NODENAME");

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return;
	}
	if (gethostname(out, len) < 0)
		snprintf(out, len, "?");
	out[strcspn(out, ".")] = '\0';
}
