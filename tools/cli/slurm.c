/* slurm: a Slurm job's processes on this node, as Slurm knows them. It asks `scontrol listpids`
 * (the job's step daemons answer it, even while slurmd is down) and falls back to the environment
 * every process of a job inherits. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cn_proc.h"

/* A job id as Slurm writes one: 1234, 1234_7 (array task) or 1234+1 (heterogeneous part). */
static bool job_id_ok(const char *s)
{
	size_t i = 0, sep = 0;

	for (; s[i]; i++)
		if (!isdigit((unsigned char)s[i]) && !((s[i] == '_' || s[i] == '+') && i && !sep++))
			return false;
	return i > 0 && isdigit((unsigned char)s[i - 1]);
}

/* `scontrol listpids JOBID`: "PID JOBID STEPID LOCALID GLOBALID" under a header line. */
static int listpids(const char *jobid, int **out, char *err, size_t len)
{
	char cmd[128], line[512];
	int n = 0, cap = 64, rc;
	int *v = malloc((size_t)cap * sizeof(int));
	FILE *f;

	err[0] = '\0';
	snprintf(cmd, sizeof(cmd), "scontrol listpids %s 2>&1", jobid);
	f = v ? popen(cmd, "re") : NULL;
	if (!f) {
		free(v);
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
	rc = pclose(f);
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
	n = procs_with_env("SLURM_JOB_ID", jobid, out);
	if (n > 0 && strspn(jobid, "0123456789") == strlen(jobid)) {
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
