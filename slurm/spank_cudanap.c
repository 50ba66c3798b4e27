/* spank_cudanap: Slurm's SPANK plugin: --cudanap runs every task of a job under the preload, with
 * a per-job status directory; its plugstack.conf arguments are in docs/FILES.md. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "cn_config.h"
#include "cn_dirs.h"
#include "handover.h"
#include "jobdirs.h"

SPANK_PLUGIN(cudanap, 1);

enum { OPT_UNSET = -1, OPT_OFF = 0, OPT_ON = 1 };

static int opt = OPT_UNSET;
static char opt_ini[PATH_MAX]; /* --cudanap=INI as typed, "" for none */
static char def_ini[PATH_MAX]; /* default=: an INI, or "" with def_on for the built-ins */
static bool def_on;
static char partitions[512]; /* partitions=, "" for all */
static char preload[PATH_MAX] = CN_PRELOAD_ABS;
static char statusbase[PATH_MAX] = "/run";
/* Why root could not make this task's job directory ("" when it did): said at the task's start. */
static char dir_err[512];
static char handover[16] = "0"; /* seconds */

static int opt_cb(int val, const char *arg, int remote)
{
	if (arg && strcmp(arg, "off") == 0) {
		opt = OPT_OFF;
		return 0;
	}
	if (arg && strlen(arg) >= sizeof(opt_ini)) {
		slurm_error("cudanap: --cudanap: path too long");
		return -1;
	}
	opt = OPT_ON;
	snprintf(opt_ini, sizeof(opt_ini), "%s", arg ? arg : "");
	return 0;
}

static struct spank_option cudanap_opt = {
	"cudanap",
	"[INI|off]",
	"Run every task under cudanap (suspend on SIGUSR1, resume on SIGUSR2, or as INI says); "
	"off: not even when the site makes it the default",
	2,
	0,
	opt_cb,
};

static int set_arg(const char *a)
{
	static const struct {
		const char *key;
		char *dst;
		size_t len;
	} args[] = {
		{ "default=", def_ini, sizeof(def_ini) },
		{ "partitions=", partitions, sizeof(partitions) },
		{ "preload=", preload, sizeof(preload) },
		{ "statusbase=", statusbase, sizeof(statusbase) },
		{ "handover=", handover, sizeof(handover) },
	};

	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		size_t k = strlen(args[i].key);

		if (strncmp(a, args[i].key, k) != 0)
			continue;
		if (strlen(a + k) >= args[i].len) {
			slurm_error("cudanap: plugstack.conf: %s: too long", args[i].key);
			return -1;
		}
		snprintf(args[i].dst, args[i].len, "%s", a + k);
		if (args[i].dst == def_ini) {
			def_on = def_ini[0] != '\0';
			if (strcmp(def_ini, "on") == 0)
				def_ini[0] = '\0';
		}
		return 0;
	}
	slurm_error("cudanap: plugstack.conf: unknown argument '%s' (default=, partitions=, "
		    "preload=, statusbase=, handover=)",
		    a);
	return -1;
}

static int set_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++)
		if (set_arg(av[i]) < 0)
			return -1;
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (set_args(ac, av) < 0)
		return -1;
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE)
		return spank_option_register(sp, &cudanap_opt) == ESPANK_SUCCESS ? 0 : -1;
	return 0;
}

/* Is part in the comma-separated list? */
static bool in_list(const char *list, const char *part)
{
	size_t n = strlen(part);

	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");

		if (k == n && strncmp(p, part, n) == 0)
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

/* The INI a task runs with: 1 and path ("" for built-in defaults) when under cudanap, else 0. */
static int chosen(const char *partition, const char **path)
{
	if (opt == OPT_OFF)
		return 0;
	if (opt == OPT_ON) {
		*path = opt_ini[0] ? opt_ini : def_ini;
		return 1;
	}
	if (!def_on || (partitions[0] && !in_list(partitions, partition)))
		return 0;
	*path = def_ini;
	return 1;
}

/* path made absolute against dir; -1 if it does not fit. */
static int absolute(const char *path, const char *dir, char *out, size_t len)
{
	int n = path[0] == '/' || !path[0] ? snprintf(out, len, "%s", path)
					   : snprintf(out, len, "%s/%s", dir, path);

	return n >= 0 && (size_t)n < len ? 0 : -1;
}

/* The INI at path loads (nothing to load for "": the defaults); *refuse: its [status]
 * if_unusable. */
static int check_ini(const char *path, bool task, bool *refuse)
{
	struct cn_config c;
	char err[512];

	*refuse = false;
	if (!path[0])
		return 0;
	if (cn_config_load(&c, path, err, sizeof(err)) < 0) {
		slurm_error("cudanap: %s", err);
		if (task)
			fprintf(stderr, "cudanap: %s\n", err);
		return -1;
	}
	*refuse = c.status_refuse;
	return 0;
}

/* srun, sbatch, salloc: a broken INI fails the submission, before the job waits in the queue. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	char cwd[PATH_MAX], abs[PATH_MAX];

	bool refuse;

	if ((ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR) || opt != OPT_ON || !opt_ini[0])
		return 0;
	if (!getcwd(cwd, sizeof(cwd)) || absolute(opt_ini, cwd, abs, sizeof(abs)) < 0) {
		slurm_error("cudanap: --cudanap=%s: cannot make the path absolute", opt_ini);
		return -1;
	}
	return check_ini(abs, false, &refuse);
}

/* Each task, in the task's own process (forked by slurmstepd, the job's user) just before its
 * exec: the environment it runs with. Here and not in user_init: a step that fails there makes
 * Slurm drain the node for a user's typo; a task that fails here exits 1 and only its job fails.
 * The error goes to the task's stderr (the job's output) as well as to slurmd's log. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char part[256] = "", dir[PATH_MAX] = "", abs[PATH_MAX], status[PATH_MAX], err[512];
	char old[4096] = "", neu[sizeof(old) + PATH_MAX + 1];
	const char *path = "";
	bool refuse;
	uid_t uid;
	uint32_t job;

	if (!spank_remote(sp))
		return 0;
	spank_getenv(sp, "SLURM_JOB_PARTITION", part, sizeof(part));
	if (!chosen(part, &path))
		return 0;
	spank_getenv(sp, "SLURM_SUBMIT_DIR", dir, sizeof(dir));
	if (absolute(path, dir[0] ? dir : "/", abs, sizeof(abs)) < 0) {
		slurm_error("cudanap: %s: path too long", path);
		return -1;
	}
	if (check_ini(abs, true, &refuse) < 0)
		return -1;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
		slurm_error("cudanap: cannot read the job's id and user");
		return -1;
	}
	cn_jobdirs_path(statusbase, job, status, sizeof(status));
	if (dir_err[0] || cn_dirs_status_prepare(status, err, sizeof(err)) < 0) {
		/* Not the user's doing: by default the task runs, without cudanap, and says why
		 * ([status] if_unusable). */
		if (dir_err[0])
			snprintf(err, sizeof(err), "%s", dir_err);
		slurm_error("cudanap: job %u: %s", (unsigned)job, err);
		fprintf(stderr, "cudanap: %s; %s\n", err,
			refuse ? "not starting ([status] if_unusable = refuse)"
			       : "running without cudanap ([status] if_unusable = run)");
		return refuse ? -1 : 0;
	}
	/* Appended, so that a preload the job already has keeps its place. */
	if (spank_getenv(sp, "LD_PRELOAD", old, sizeof(old)) == ESPANK_NOSPACE) {
		slurm_error("cudanap: the job's LD_PRELOAD is longer than %zu bytes",
			    sizeof(old) - 1);
		fprintf(stderr, "cudanap: the job's LD_PRELOAD is longer than %zu bytes\n",
			sizeof(old) - 1);
		return -1;
	}
	if (strstr(old, preload))
		snprintf(neu, sizeof(neu), "%s", old);
	else
		snprintf(neu, sizeof(neu), "%s%s%s", old, old[0] ? ":" : "", preload);
	if (spank_setenv(sp, "LD_PRELOAD", neu, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "CUDANAP_STATUS_DIR", status, 1) != ESPANK_SUCCESS ||
	    (abs[0] && spank_setenv(sp, "CUDANAP_CONFIG", abs, 1) != ESPANK_SUCCESS)) {
		slurm_error("cudanap: cannot set the job's environment");
		return -1;
	}
	return 0;
}

/* Each task, as root, before the one above: the job's status directory, if the task runs under
 * cudanap (a failure is said there); with handover=, wait for the GPUs that the jobs Slurm has
 * suspended on this node still hold. Never fails the task. */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	char node[256] = "", part[256] = "", *end;
	double max_s = strtod(handover, &end);
	const char *path;
	uint32_t job = 0;
	uid_t uid;
	gid_t gid;

	if (!spank_remote(sp))
		return 0;
	spank_getenv(sp, "SLURM_JOB_PARTITION", part, sizeof(part));
	dir_err[0] = '\0';
	if (chosen(part, &path) &&
	    (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	     spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	     spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	     cn_jobdirs_make(statusbase, job, uid, gid, dir_err, sizeof(dir_err)) < 0) &&
	    !dir_err[0])
		snprintf(dir_err, sizeof(dir_err), "cannot read the job's id and user");
	if (*end || max_s <= 0)
		return 0;
	if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) != ESPANK_SUCCESS)
		gethostname(node, sizeof(node));
	spank_get_item(sp, S_JOB_ID, &job);
	cn_handover_wait(statusbase, node, job, max_s);
	return 0;
}

/* The job's end on this node (slurmd, as root): its status directory and the files in it. Only a
 * directory of the job's user is touched, and nothing below it is followed. Slurm calls no init
 * before this one: the arguments are read here. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char why[512];
	uid_t uid;
	uint32_t job;

	if (set_args(ac, av) < 0 || spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return 0;
	if (cn_jobdirs_remove(statusbase, job, uid, why, sizeof(why)) < 0)
		slurm_info("cudanap: job %u: %s", (unsigned)job, why);
	return 0;
}
