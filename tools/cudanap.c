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

#include "cn_config.h"
#include "cn_status.h"

static const char *prog = "cudanap";

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

static const char usage_suspend[] =
	"usage: cudanap suspend|resume [-c FILE] [--wait|--no-wait] [--timeout S] PID...\n"
	"       cudanap suspend|resume [OPTIONS] --all\n"
	"       cudanap suspend|resume [OPTIONS] --tree PID\n"
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
	"  -c, --config FILE   where to find the status files (default: read from each PID's own\n"
	"                      CUDANAP_CONFIG, else the built-in default directory)\n"
	"  -w, --wait          wait for the outcome (the default)\n"
	"  -n, --no-wait       return once the signals are sent\n"
	"  -t, --timeout S     give up waiting after S seconds (default 600)\n"
	"  -a, --all           every process of this user running under cudanap\n"
	"  -T, --tree PID      PID and all its descendants that run under cudanap (repeatable;\n"
	"                      other processes in the tree, such as a launcher shell, are "
	"skipped)\n"
	"\n"
	"A PID already in the asked-for state is reported as such and counts as success.\n"
	"Exit status: 0 if every PID succeeded, 1 if any failed or timed out, 2 on usage errors.\n"
	"Examples: cudanap suspend 4711 && sleep 60 && cudanap resume 4711\n"
	"          cudanap suspend --tree $SLURM_TASK_PID\n";

static const char usage_status[] =
	"usage: cudanap status [-c FILE] [--json] [PID...]\n"
	"\n"
	"Show the state of every cudanap process of this user (or of the PIDs given): running,\n"
	"locked, checkpointed, failed or no-cuda, the last action and its result and timings.\n"
	"Status files of processes that are gone are removed.\n"
	"\n"
	"  -c, --config FILE   where to find the status files (default: $CUDANAP_CONFIG, else the\n"
	"                      built-in default directory)\n"
	"  -j, --json          print a JSON array of the status objects\n"
	"\n"
	"Exit status: 0, or 1 if a PID given has no status.\n";

static const char usage_check[] =
	"usage: cudanap check-config FILE\n"
	"\n"
	"Parse and validate FILE as a job INI. Prints 'FILE: ok' and exits 0, or prints\n"
	"'FILE:LINE: section.key: reason' and exits 78.\n";

static void die_usage(const char *text)
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

/* ---- locating status files ---- */

static int load_config_or_die(const char *path, struct cn_config *c)
{
	char err[CN_ERR_LEN];

	if (cn_config_load(c, path, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		exit(78);
	}
	return 0;
}

/* The status dir the process pid uses: from its own environment, as its preload saw it. */
static void status_dir_of(int pid, const char *cfg_path, char *dir, size_t len)
{
	static char env[65536];
	char path[64], *cfg = NULL, *xdg = NULL, *old_xdg;
	FILE *f;
	size_t n = 0;

	if (cfg_path) {
		cn_config_status_dir(cfg_path, dir, len);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	f = fopen(path, "re");
	if (f) {
		n = fread(env, 1, sizeof(env) - 1, f);
		fclose(f);
	}
	env[n] = '\0';
	for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
		if (strncmp(env + i, "CUDANAP_CONFIG=", 15) == 0)
			cfg = env + i + 15;
		if (strncmp(env + i, "XDG_RUNTIME_DIR=", 16) == 0)
			xdg = env + i + 16;
	}
	/* Its default dir follows its XDG_RUNTIME_DIR, which need not be ours. */
	old_xdg = getenv("XDG_RUNTIME_DIR");
	old_xdg = old_xdg ? strdup(old_xdg) : NULL;
	if (f) {
		if (xdg)
			setenv("XDG_RUNTIME_DIR", xdg, 1);
		else
			unsetenv("XDG_RUNTIME_DIR");
	}
	cn_config_status_dir(cfg, dir, len);
	if (old_xdg)
		setenv("XDG_RUNTIME_DIR", old_xdg, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	free(old_xdg);
}

static bool alive(const struct cn_status *s)
{
	return s->starttime && cn_proc_starttime(s->pid) == s->starttime;
}

static void fmt_ms(double ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms < 1000)
		snprintf(buf, len, "%.1f ms", ms);
	else
		snprintf(buf, len, "%.2f s", ms / 1000);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- this user's processes ---- */

static int parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && !*end && v > 0 && v < INT_MAX) ? (int)v : -1;
}

struct proc {
	int pid, ppid;
	bool preloaded; /* libcudanap in its environment */
};

static int read_file(const char *path, char *buf, size_t len)
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

/* Every process of this user but this one, with its parent and whether cudanap is preloaded.
 * The caller frees the array. */
static int scan_procs(struct proc **out)
{
	DIR *d = opendir("/proc");
	struct proc *v = NULL;
	struct dirent *e;
	int n = 0, cap = 0;

	while (d && (e = readdir(d))) {
		static char env[65536];
		char path[300], line[1024], *rp;
		int pid = parse_pid(e->d_name), len;
		struct stat st;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d", pid);
		if (stat(path, &st) < 0 || st.st_uid != getuid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		/* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
		if (read_file(path, line, sizeof(line)) < 0 || !(rp = strrchr(line, ')')))
			continue;
		if (n == cap) {
			struct proc *nv =
				realloc(v, (size_t)(cap = cap ? 2 * cap : 256) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		v[n].pid = pid;
		v[n].ppid = 0;
		sscanf(rp + 1, " %*c %d", &v[n].ppid);
		snprintf(path, sizeof(path), "/proc/%d/environ", pid);
		len = read_file(path, env, sizeof(env));
		v[n].preloaded = len > 0 && memmem(env, (size_t)len, "libcudanap", 10);
		n++;
	}
	if (d)
		closedir(d);
	*out = v;
	return n;
}

/* Is pid root or one of its descendants? Walks up the parent chain. */
static bool in_tree(const struct proc *v, int n, int pid, int root)
{
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		int i;

		if (pid == root)
			return true;
		for (i = 0; i < n && v[i].pid != pid; i++)
			;
		if (i == n)
			return false;
		pid = v[i].ppid;
	}
	return pid == root;
}

/* Every status dir in use by this user's preloaded processes, so that jobs started with other
 * INI files show up too. */
static int add_job_dirs(char (*dirs)[PATH_MAX], int n, int max)
{
	struct proc *v;
	int np = scan_procs(&v);

	for (int p = 0; p < np && n < max; p++) {
		char dir[PATH_MAX];
		int dup = 0;

		if (!v[p].preloaded)
			continue;
		status_dir_of(v[p].pid, NULL, dir, sizeof(dir));
		for (int i = 0; i < n; i++)
			dup |= strcmp(dirs[i], dir) == 0;
		if (!dup)
			snprintf(dirs[n++], PATH_MAX, "%s", dir);
	}
	free(v);
	return n;
}

/* The cudanap processes of this user (all, or those in the trees of roots): preloaded and with a
 * live status file. Forked children that never exec'd share the environment but have no status
 * file of their own, and are left out. */
static int select_jobs(const char *cfg, const int *roots, int n_roots, int **out)
{
	struct proc *v;
	int np = scan_procs(&v), n = 0;
	int *pids = calloc((size_t)np + 1, sizeof(int));

	for (int p = 0; pids && p < np; p++) {
		char dir[PATH_MAX];
		struct cn_status s;
		bool want = n_roots == 0;

		for (int r = 0; r < n_roots && !want; r++)
			want = in_tree(v, np, v[p].pid, roots[r]);
		if (!want || !v[p].preloaded)
			continue;
		status_dir_of(v[p].pid, cfg, dir, sizeof(dir));
		if (cn_status_read(dir, v[p].pid, &s) == 0 && alive(&s))
			pids[n++] = v[p].pid;
	}
	free(v);
	*out = pids;
	return pids ? n : -1;
}

/* ---- suspend / resume ---- */

struct job {
	int pid;
	char dir[PATH_MAX];
	unsigned long seq0;
	bool sent, done, ok;
	bool no_cuda; /* answered that it has no CUDA state */
	char line[600];
};

static void outcome(struct job *j, const struct cn_status *s, bool suspend)
{
	char total[32], steps[200] = "";
	size_t o = 0;

	j->done = true;
	j->no_cuda = strcmp(s->state, "no-cuda") == 0;
	j->ok = strcmp(s->result, "ok") == 0 &&
		strcmp(s->state, suspend ? "checkpointed" : "running") == 0;
	for (int i = 0; i < CN_STEPS; i++) {
		char t[32];

		if (s->step_ms[i] < 0)
			continue;
		fmt_ms(s->step_ms[i], t, sizeof(t));
		o += (size_t)snprintf(steps + o, sizeof(steps) - o, "%s%.*s %s", o ? ", " : "",
				      (int)strcspn(cn_step_names[i], "_"), cn_step_names[i], t);
	}
	fmt_ms(s->total_ms, total, sizeof(total));
	if (j->ok && o)
		snprintf(j->line, sizeof(j->line), "%d: %s in %s (%s)", j->pid,
			 suspend ? "suspended" : "resumed", total, steps);
	else if (j->ok)
		snprintf(j->line, sizeof(j->line), "%d: %s", j->pid, s->message);
	else
		snprintf(j->line, sizeof(j->line), "%d: %s failed: %s: %s (state %s)", j->pid,
			 suspend ? "suspend" : "resume", s->result, s->message, s->state);
}

/* Why pid cannot act on a signal now: stopped (SIGSTOP, a debugger, SLURM's suspend) or in a
 * frozen cgroup. NULL when it can. A signal sent to it would wait, and act when it is let go. */
static const char *stopped(int pid)
{
	char path[PATH_MAX], buf[4096], *line, *save = NULL;
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)) > 0 && (p = strrchr(buf, ')')) &&
	    (p[2] == 'T' || p[2] == 't'))
		return "it is stopped (SIGSTOP or a debugger); continue it first (kill -CONT)";
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return NULL;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char state[64];
		const char *cg = strrchr(line, ':');

		if (!cg)
			continue;
		if (strncmp(line, "0::", 3) == 0)
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cgroup.events", cg + 1);
		else if (strstr(line, ":freezer:"))
			snprintf(path, sizeof(path), "/sys/fs/cgroup/freezer%s/freezer.state",
				 cg + 1);
		else
			continue;
		if (read_file(path, state, sizeof(state)) > 0 &&
		    (strstr(state, "frozen 1") || strstr(state, "FROZEN")))
			return "its cgroup is frozen (cgroup freezer, or the scheduler's suspend); "
			       "thaw it first";
	}
	return NULL;
}

static void send_one(struct job *j, const char *cfg, bool suspend, double deadline)
{
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
	if ((why = stopped(j->pid))) {
		j->done = true;
		snprintf(j->line, sizeof(j->line), "%d: cannot %s: %s; nothing sent", j->pid,
			 suspend ? "suspend" : "resume", why);
		return;
	}
	/* Let an action under way finish, so that its outcome is not taken for ours. */
	while (s.busy && now_s() < deadline && cn_status_read(j->dir, j->pid, &s) == 0)
		usleep(5000);
	if (strcmp(s.state, suspend ? "checkpointed" : "running") == 0 && !s.busy) {
		j->done = j->ok = true;
		snprintf(j->line, sizeof(j->line), "%d: already %s", j->pid,
			 suspend ? "suspended" : "running");
		return;
	}
	j->seq0 = s.seq;
	if (kill(j->pid, suspend ? s.suspend_signal : s.resume_signal) < 0) {
		j->done = true;
		snprintf(j->line, sizeof(j->line), "%d: cannot signal: %s", j->pid,
			 strerror(errno));
		return;
	}
	j->sent = true;
}

static int cmd_suspend_resume(int argc, char **argv, bool suspend)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "wait", no_argument, NULL, 'w' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "tree", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cfg = NULL;
	double timeout = 600, t0 = now_s(), deadline;
	bool wait = true, all = false, all_ok = true;
	int c, n, n_ok = 0, n_none = 0, roots[64], n_roots = 0, *pids = NULL;
	struct job *jobs;

	while ((c = getopt_long(argc, argv, "+c:wnt:aT:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cfg = optarg;
			break;
		case 'w':
			wait = true;
			break;
		case 'n':
			wait = false;
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
		default:
			die_usage(usage_suspend);
		}
	}
	n = argc - optind;
	if ((all || n_roots) && (n > 0 || (all && n_roots)))
		die_usage("cudanap: give PIDs, --all or --tree, not several of them\n");
	if (all || n_roots) {
		for (int r = 0; r < n_roots; r++)
			if (kill(roots[r], 0) < 0 && errno == ESRCH) {
				fprintf(stderr, "%s: %d: no such process\n", prog, roots[r]);
				return 1;
			}
		n = select_jobs(cfg, roots, n_roots, &pids);
		if (n <= 0) {
			fprintf(stderr, "%s: no process %s runs under cudanap\n", prog,
				all ? "of this user" : "in that tree");
			free(pids);
			return 1;
		}
	} else if (n <= 0) {
		die_usage(usage_suspend);
	}
	jobs = calloc((size_t)n, sizeof(*jobs));
	if (!jobs)
		return 1;
	deadline = now_s() + timeout;
	for (int i = 0; i < n; i++) {
		jobs[i].pid = pids ? pids[i] : parse_pid(argv[optind + i]);
		if (jobs[i].pid < 0) {
			fprintf(stderr, "%s: '%s' is not a process id\n", prog, argv[optind + i]);
			return 2;
		}
	}
	free(pids);
	for (int i = 0; i < n; i++)
		send_one(&jobs[i], cfg, suspend, deadline);
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
				outcome(j, &s, suspend);
			} else if ((why = stopped(j->pid))) {
				/* Stopped after the signal: it acts once let go. */
				j->done = true;
				snprintf(j->line, sizeof(j->line),
					 "%d: no outcome: %s; the %s happens when it runs again",
					 j->pid, why, suspend ? "suspend" : "resume");
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
			snprintf(j->line, sizeof(j->line), "%d: %s", j->pid,
				 wait ? "no outcome yet: timed out waiting (it may still finish)"
				      : (suspend ? "suspend requested" : "resume requested"));
			j->ok = !wait;
		}
		/* In a whole job, launcher shells and workers without CUDA are nothing to do. */
		if (j->no_cuda && (all || n_roots)) {
			snprintf(j->line, sizeof(j->line), "%d: no CUDA state, nothing to do",
				 j->pid);
			j->ok = true;
			n_none++;
		} else {
			n_ok += j->ok;
		}
		all_ok &= j->ok;
		printf("%s\n", j->line);
	}
	if (n > 1 || all || n_roots)
		printf("total: %d process%s, %d %s, %d without CUDA, %d failed, %.2f s\n", n,
		       n == 1 ? "" : "es", n_ok,
		       !wait	 ? "signalled"
		       : suspend ? "suspended"
				 : "resumed",
		       n_none, n - n_ok - n_none, now_s() - t0);
	free(jobs);
	return all_ok ? 0 : 1;
}

/* ---- status ---- */

static void print_status(const struct cn_status *s, bool json, bool first)
{
	char buf[CN_STATUS_MAX], total[32], state[24];

	if (json) {
		if (cn_status_format(s, buf, sizeof(buf)) > 0)
			printf("%s%.*s", first ? "" : ",\n", (int)strcspn(buf, "\n"), buf);
		return;
	}
	fmt_ms(s->total_ms, total, sizeof(total));
	snprintf(state, sizeof(state), "%s%s", s->state, s->busy ? "*" : "");
	printf("%-8d %-14s %-8s %-28s %-10s %s\n", s->pid, state, s->action, s->result, total,
	       s->command);
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
		print_status(&s, json, *first);
		*first = false;
	}
	if (d)
		closedir(d);
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cfg = NULL;
	bool json = false, first = true;
	struct cn_config conf;
	char err[CN_ERR_LEN];
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "+c:jh", opts, NULL)) != -1) {
		if (c == 'c')
			cfg = optarg;
		else if (c == 'j')
			json = true;
		else
			die_usage(usage_status);
	}
	if (json)
		printf("[");
	else
		printf("%-8s %-14s %-8s %-28s %-10s %s\n", "PID", "STATE", "ACTION", "RESULT",
		       "TIME", "COMMAND");
	if (optind < argc) {
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
			print_status(&s, json, first);
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
	} cmds[] = {
		{ "run", usage_run, cmd_run },
		{ "suspend", usage_suspend, NULL },
		{ "resume", usage_suspend, NULL },
		{ "status", usage_status, cmd_status },
		{ "check-config", usage_check, cmd_check },
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
			return cmd_suspend_resume(argc - 1, argv + 1, i == 1);
		return cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "%s: unknown command '%s'; see 'cudanap --help'\n", prog, argv[1]);
	return 2;
}
