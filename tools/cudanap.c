/* cudanap: the command line. It starts jobs under the preload, sends them the signals their INI
 * names, and reads the outcome from their status files. It never talks to the driver. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cn_nccl.h"

const char *prog = "cudanap";

static const char usage_main[] =
	"usage: cudanap COMMAND [OPTIONS] [ARGS]\n"
	"\n"
	"Put a running CUDA program to sleep and wake it up: its GPU memory moves to host memory,\n"
	"the GPU is freed, and on resume every byte goes back.\n"
	"\n"
	"Commands:\n"
	"  run [-c FILE] -- CMD [ARG...]     start CMD under cudanap\n"
	"  suspend [OPTIONS] PID...          checkpoint the processes' CUDA state and free the "
	"GPU\n"
	"  resume [OPTIONS] PID...           restore it and let the processes run on\n"
	"  prepare [OPTIONS] PID...          notice of a suspend: fault its host copy in ahead\n"
	"  status [-c FILE] [--json] [PID...] show every cudanap process of this user\n"
	"  check-config FILE                 validate a job INI file\n"
	"\n"
	"Run 'cudanap COMMAND --help' for the details of each. cudanap " CN_VERSION "\n";

static const char usage_run[] =
	"usage: cudanap run [-c FILE] [--] CMD [ARG...]\n"
	"\n"
	"Run CMD with libcudanap.so preloaded: LD_PRELOAD gets the library appended (an existing\n"
	"LD_PRELOAD is kept) and CUDANAP_CONFIG is set to FILE's absolute path. CMD then answers\n"
	"the suspend and resume signals of FILE (SIGUSR1 and SIGUSR2 by default). FILE is checked\n"
	"before CMD starts.\n"
	"\n"
	"  -c, --config FILE   the job's INI file (default: $CUDANAP_CONFIG, else built-in "
	"defaults)\n"
	"\n"
	"The library is looked for in $CUDANAP_PRELOAD, beside this program in a build tree, then\n"
	"in the installed library directory.\n"
	"\n"
	"Exit status: that of CMD; 78 if FILE is broken; 127 if CMD cannot be run.\n"
	"Example: cudanap run -c job.ini -- python train.py --epochs 10\n";

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

const char usage_status[] =
	"usage: cudanap status [-c FILE] [--json] [PID... | --slurm JOBID]\n"
	"\n"
	"Show the state of every cudanap process of this user (or of the PIDs given): running,\n"
	"locked, checkpointed, failed or no-cuda ('+prep' when a prepared host copy waits, '*'\n"
	"while an action is under way), the last action and its result and time, the GPU memory\n"
	"it held at its last suspend, and the host memory and disk space its host copy holds now.\n"
	"Status files of processes that are gone are removed.\n"
	"\n"
	"  -c, --config FILE   where to find the status files (default: $CUDANAP_CONFIG, else the\n"
	"                      built-in default directory)\n"
	"  -j, --json          print a JSON array of the status objects\n"
	"  -S, --slurm JOBID   the processes of Slurm job JOBID on this node, with the node's "
	"name\n"
	"\n"
	"Exit status: 0, or 1 if a PID given (or the job) has no status.\n";

static const char usage_check[] =
	"usage: cudanap check-config FILE\n"
	"\n"
	"Parse and validate FILE as a job INI. Prints 'FILE: ok' and exits 0, or prints\n"
	"'FILE:LINE: section.key: reason' and exits 78.\n";

void die_usage(const char *text)
{
	fputs(text, stderr);
	exit(2);
}

static bool want_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

void load_config_or_die(const char *path, struct cn_config *c)
{
	char err[CN_ERR_LEN];

	if (cn_config_load(c, path, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		exit(78);
	}
}

void fmt_ms(double ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms < 1000)
		snprintf(buf, len, "%.1f ms", ms);
	else
		snprintf(buf, len, "%.2f s", ms / 1000);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && !*end && v > 0 && v < INT_MAX) ? (int)v : -1;
}

int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (int)n;
}

/* ---- status ---- */

static void mib(double v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.0f", v);
}

/* One process: a table row, or a JSON object ("node" first when node is given). */
static void print_status(const struct cn_status *s, const char *node, bool json, bool first)
{
	char buf[CN_STATUS_MAX], total[32], state[24], gpu[24], host[24], disk[24];

	if (json) {
		if (cn_status_format(s, buf, sizeof(buf)) > 0)
			printf("%s%s%s%s%.*s", first ? "" : ",\n", node ? "{\"node\":\"" : "",
			       node ? node : "", node ? "\"," : "",
			       (int)strcspn(buf, "\n") - !!node, buf + !!node);
		return;
	}
	fmt_ms(s->total_ms, total, sizeof(total));
	snprintf(state, sizeof(state), "%s%s%s", s->state, s->prepared ? "+prep" : "",
		 s->busy ? "*" : "");
	mib(s->footprint_mib, gpu, sizeof(gpu));
	mib(s->host_mib, host, sizeof(host));
	mib(s->disk_mib, disk, sizeof(disk));
	if (node)
		printf("%-12s ", node);
	printf("%-8d %-14s %-8s %-24s %-9s %8s %8s %8s  %s\n", s->pid, state, s->action, s->result,
	       total, gpu, host, disk, s->command);
}

static void print_header(bool slurm)
{
	if (slurm)
		printf("%-12s ", "NODE");
	printf("%-8s %-14s %-8s %-24s %-9s %8s %8s %8s  %s\n", "PID", "STATE", "ACTION", "RESULT",
	       "TIME", "GPU_MIB", "HOST_MIB", "DISK_MIB", "COMMAND");
}

static void list_dir(const char *dir, bool json, bool *first)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		struct cn_status s;
		int pid = atoi(e->d_name);
		char name[64];

		snprintf(name, sizeof(name), "%d.json", pid);
		if (pid <= 0 || strcmp(name, e->d_name) != 0)
			continue;
		if (cn_status_read(dir, pid, &s) < 0)
			continue;
		if (!alive(&s)) {
			cn_status_remove(dir, pid);
			continue;
		}
		print_status(&s, NULL, json, *first);
		*first = false;
	}
	if (d)
		closedir(d);
}

/* The cudanap processes of a Slurm job on this node, a line each with the node's name. */
static int status_slurm(const char *cfg, const char *jobid, bool json, bool *first)
{
	char note[300], node[256], dir[PATH_MAX];
	int *pids = NULL, *sel = NULL, n = slurm_job_pids(jobid, &pids, note, sizeof(note));

	if (note[0])
		fprintf(stderr, "%s: %s\n", prog, note);
	if (n < 0)
		return 1;
	n = select_jobs(cfg, NULL, 0, pids, n, &sel);
	free(pids);
	slurm_node_name(node, sizeof(node));
	for (int i = 0; i < n; i++) {
		struct cn_status s;

		status_dir_of(sel[i], cfg, dir, sizeof(dir));
		if (cn_status_read(dir, sel[i], &s) == 0 && alive(&s)) {
			print_status(&s, node, json, *first);
			*first = false;
		}
	}
	free(sel);
	if (n <= 0)
		fprintf(stderr, "%s: no process of Slurm job %s on %s runs under cudanap\n", prog,
			jobid, node);
	return n > 0 ? 0 : 1;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "slurm", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cfg = NULL, *slurm = NULL;
	bool json = false, first = true;
	struct cn_config conf;
	char err[CN_ERR_LEN];
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "+c:jS:h", opts, NULL)) != -1) {
		if (c == 'c')
			cfg = optarg;
		else if (c == 'j')
			json = true;
		else if (c == 'S')
			slurm = optarg;
		else
			die_usage(usage_status);
	}
	if (slurm && optind < argc)
		die_usage("cudanap: give PIDs or --slurm, not both\n");
	if (json)
		printf("[");
	else
		print_header(slurm);
	if (slurm) {
		rc = status_slurm(cfg, slurm, json, &first);
	} else if (optind < argc) {
		for (int i = optind; i < argc; i++) {
			int pid = parse_pid(argv[i]);
			char dir[PATH_MAX];
			struct cn_status s;

			if (pid > 0)
				status_dir_of(pid, cfg, dir, sizeof(dir));
			if (pid < 0 || cn_status_read(dir, pid, &s) < 0 || !alive(&s)) {
				fprintf(stderr, "%s: %s: not a running cudanap process\n", prog,
					argv[i]);
				rc = 1;
				continue;
			}
			print_status(&s, NULL, json, first);
			first = false;
		}
	} else {
		char dirs[16][PATH_MAX];
		int n = 0;

		if (cfg) {
			load_config_or_die(cfg, &conf);
			snprintf(dirs[n++], PATH_MAX, "%s", conf.status_dir);
		} else {
			if (cn_config_load_env(&conf, err, sizeof(err)) < 0)
				cn_config_defaults(&conf);
			snprintf(dirs[n++], PATH_MAX, "%s", conf.status_dir);
			n = add_job_dirs(dirs, n, 16);
		}
		for (int i = 0; i < n; i++)
			list_dir(dirs[i], json, &first);
	}
	if (json)
		printf("]\n");
	return rc;
}

/* ---- run ---- */

static int find_preload(char *out, size_t len)
{
	const char *env = getenv("CUDANAP_PRELOAD");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		*slash = '\0';
		snprintf(out, len, "%s/../preload/libcudanap.so", exe);
		if (access(out, R_OK) == 0)
			return 0;
		if (CN_PRELOAD_REL[0]) {
			snprintf(out, len, "%s/%s/libcudanap.so", exe, CN_PRELOAD_REL);
			if (access(out, R_OK) == 0)
				return 0;
		}
	}
	snprintf(out, len, "%s", CN_PRELOAD_ABS);
	return access(out, R_OK);
}

/* [nccl] suspendable: the preload sets the same in CMD before its main; here it is said once for
 * the whole job, with a value the user set that keeps its ranks from being suspendable. */
static void report_nccl(void)
{
	char kept[200], set[600] = "";
	size_t o = 0;

	for (size_t i = 0; i < cn_nccl_n_vars; i++)
		o += (size_t)snprintf(set + o, sizeof(set) - o, " %s=%s", cn_nccl_vars[i].name,
				      cn_nccl_vars[i].value);
	cn_nccl_apply(kept, sizeof(kept));
	if (kept[0])
		fprintf(stderr,
			"%s: [nccl] suspendable: keeping %s, set in the environment: NCCL ranks of "
			"this job will be refused at suspend (unset it to let cudanap set%s)\n",
			prog, kept, set);
	else
		fprintf(stderr, "%s: [nccl] suspendable: NCCL uses sockets between ranks:%s\n",
			prog, set);
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char lib[PATH_MAX], abs[PATH_MAX], *preload;
	const char *cfg = NULL, *old;
	struct cn_config conf;
	int c;

	while ((c = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
		if (c == 'c')
			cfg = optarg;
		else
			die_usage(usage_run);
	}
	if (optind >= argc)
		die_usage(usage_run);
	if (!cfg)
		cfg = getenv("CUDANAP_CONFIG");
	if (cfg && *cfg) {
		load_config_or_die(cfg, &conf);
		if (!realpath(cfg, abs)) {
			fprintf(stderr, "%s: %s: %s\n", prog, cfg, strerror(errno));
			return 78;
		}
		setenv("CUDANAP_CONFIG", abs, 1);
		if (conf.nccl_suspendable)
			report_nccl();
	}
	if (find_preload(lib, sizeof(lib)) < 0) {
		fprintf(stderr, "%s: cannot find libcudanap.so (tried %s); set CUDANAP_PRELOAD\n",
			prog, lib);
		return 127;
	}
	if (!realpath(lib, abs))
		snprintf(abs, sizeof(abs), "%s", lib);
	old = getenv("LD_PRELOAD");
	if (old && *old && strstr(old, abs))
		preload = strdup(old);
	else if (old && *old && asprintf(&preload, "%s:%s", old, abs) < 0)
		preload = NULL;
	else if (!(old && *old))
		preload = strdup(abs);
	if (!preload)
		return 127;
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "%s: cannot run %s: %s\n", prog, argv[optind], strerror(errno));
	return 127;
}

static int cmd_check(int argc, char **argv)
{
	struct cn_config c;

	if (argc != 2 || argv[1][0] == '-')
		die_usage(usage_check);
	load_config_or_die(argv[1], &c);
	printf("%s: ok\n", argv[1]);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name, *usage;
		int (*fn)(int, char **);
		enum verb verb; /* when fn is NULL */
	} cmds[] = {
		{ "run", usage_run, cmd_run, 0 },
		{ "suspend", usage_suspend, NULL, VERB_SUSPEND },
		{ "resume", usage_suspend, NULL, VERB_RESUME },
		{ "prepare", usage_prepare, NULL, VERB_PREPARE },
		{ "status", usage_status, cmd_status, 0 },
		{ "check-config", usage_check, cmd_check, 0 },
	};

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage_main, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("cudanap %s\n", CN_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		if (want_help(argc - 1, argv + 1)) {
			fputs(cmds[i].usage, stdout);
			return 0;
		}
		if (!cmds[i].fn)
			return cmd_act(argc - 1, argv + 1, cmds[i].verb);
		return cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "%s: unknown command '%s'; see 'cudanap --help'\n", prog, argv[1]);
	return 2;
}
