/* act: cudanap suspend, resume and prepare: the options, which processes (PIDs, --all, --tree,
 * --slurm), and what is printed (a line per process and a total, or one JSON object). The acting
 * itself, all or nothing, is group.c's. */
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
#include "cn_gpumap.h"
#include "cn_json.h"

const char cli_usage_suspend[] =
	"usage: cudanap suspend|resume [-c FILE] [--wait|--no-wait] [--timeout S] [--json] PID...\n"
	"       cudanap suspend|resume [OPTIONS] --all\n"
	"       cudanap suspend|resume [OPTIONS] --tree PID\n"
	"       cudanap suspend|resume [OPTIONS] --slurm JOBID\n"
	"       cudanap suspend --dry-run [OPTIONS] PID... | --all | --tree PID | --slurm JOBID\n"
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
	"A suspend of several processes (the ranks of a distributed job) is all or nothing. Every\n"
	"process is checked before any is signalled: one that is not a running cudanap process\n"
	"(a mistyped PID, one that exited) or is stopped refuses the whole command, nothing sent\n"
	"(the line 'refused: ...'), for resume too. If one fails once signalled, those it did\n"
	"suspend are resumed, the line 'rollback: ...' says so, and the exit status is 1. When\n"
	"every failure was a lock that timed out (a rank waiting in a collective), the whole job\n"
	"is tried again, after 0.5 s, then 1 s, ... A resume's line names the GPUs a process went\n"
	"to when they are not those it started on, or --gpu-map was given.\n"
	"\n"
	"  -c, --config FILE   where to find the status files (default: read from each PID's own\n"
	"                      environment, else the built-in default directory)\n"
	"  -w, --wait          wait for the outcome (the default)\n"
	"  -n, --no-wait       return once the signals are sent (no rollback)\n"
	"  -t, --timeout S     give up waiting after S seconds (default 600; a dry run's 5)\n"
	"  -a, --all           every process of this user running under cudanap (root: of every\n"
	"                      user)\n"
	"  -T, --tree PID      PID and all its descendants that run under cudanap (repeatable;\n"
	"                      other processes in the tree, such as a launcher shell, are "
	"skipped)\n"
	"  -S, --slurm JOBID   the processes of Slurm job JOBID on every node of it, from any\n"
	"                      host: a job on several nodes, or on another, is reached through\n"
	"                      one step of it (srun --jobid=JOBID --overlap, one task a node),\n"
	"                      kept whole across them; a line per node in the outcome\n"
	"  -H, --this-node     with --slurm: the job's processes on this node only\n"
	"  -e, --each          act on each process on its own: no rollback, no retries\n"
	"  -r, --retries N     attempts after the first for an all-or-nothing suspend (default 2)\n"
	"  -D, --to-disk[=DIR] suspend: put the host copy in a file in DIR (default: the INI's\n"
	"                      [hibernate] dir) and give its RAM back while the job sleeps\n"
	"  -g, --gpu-map MAP   resume: put the GPUs each process started on where MAP says, for\n"
	"                      this resume only (the syntax of [restore] gpu_map: 0=1, 1=0)\n"
	"  -j, --json          print one JSON object: each process's outcome, line and status\n"
	"                      file, the rollback and retries, and the total\n"
	"  -d, --dry-run       suspend: change nothing; ask each process what a suspend would do\n"
	"                      now (every check a suspend makes, no lock) and print one line for\n"
	"                      each: would suspend (its GPU memory, the host copy and the room "
	"for\n"
	"                      it, the estimated times) or would refuse (why); exit 0 only if\n"
	"                      every one would suspend (the answers awaited 5 s at most, as\n"
	"                      status does)\n"
	"\n"
	"--all, --tree and --slurm leave out the processes that started this command (a job's\n"
	"shell running it from a trap), and one that exits between their pick and its signal\n"
	"(said; not counted). A PID already in the asked-for state is reported as such and\n"
	"counts as success. Options go anywhere, before or after the PIDs; --tree and\n"
	"--slurm take the value next to them (or after '=') unless an option follows, and are\n"
	"then flags whose values are the other arguments: --tree --gpu-map 0=1,1=0 4711.\n"
	"Exit status: 0 if every PID succeeded, 1 if any failed or timed out, 2 on usage errors.\n"
	"Examples: cudanap suspend 4711 && sleep 60 && cudanap resume 4711\n"
	"          cudanap suspend --tree $SLURM_TASK_PID\n"
	"          cudanap suspend --slurm $J     (every node of job J, from any host)\n";

const char cli_usage_prepare[] =
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
	"Options as for suspend: -c, -w, -n, -t, -a, -T, -S, -j. Exit status: 0 if every PID is\n"
	"prepared (or already suspended), 1 otherwise, 2 on usage errors.\n"
	"Example: cudanap prepare --tree $SLURM_TASK_PID; sleep 50; cudanap suspend --tree ...\n";

const char cli_usage_nap[] =
	"usage: cudanap nap [-c FILE] [--wait|--no-wait] [--timeout S] [--json] PID...\n"
	"       cudanap nap [OPTIONS] --all | --tree PID | --slurm JOBID\n"
	"\n"
	"Nap each process now: a suspend (its GPU memory moved to host memory, or to [hibernate]\n"
	"dir with [nap] to = disk, and its GPU freed) after which the process wakes by itself at\n"
	"its next CUDA call that needs the GPU, as [nap] idle_s does for an idle process. Calls\n"
	"that need no GPU (stream and event queries, making a context current) are answered\n"
	"without waking it. 'cudanap resume' wakes it too. Refused, as a nap, for an NCCL rank\n"
	"(its peers would stall) and as a suspend is refused.\n"
	"\n"
	"The signal is the suspend signal queued with a value of cudanap's (sigqueue). Options as\n"
	"for suspend: -c, -w, -n, -t, -a, -T, -S, -j; each process naps on its own. Exit status:\n"
	"0 if every PID naps (or was asleep already), 1 otherwise, 2 on usage errors.\n"
	"Example: cudanap nap 4711; cudanap status 4711\n";

/* The JSON of one job: its outcome, its line, and its status file as last read (null if none). */
static void print_job_json(const struct job *j, bool first)
{
	static char obj[CN_STATUS_MAX + sizeof(j->line) * 6 + 256];

	if (cli_job_json(j, obj, sizeof(obj)) == 0)
		printf("%s\n  %s", first ? "" : ",", obj);
}

/* One JSON object for scripts: every process, the rollback and the failed attempts, the total. */
static void print_json(const struct job *jobs, int n, const struct plan *p,
		       const struct group_result *r)
{
	char line[sizeof(r->rollback) * 6 + 3];
	int counted = n - r->n_gone; /* processes gone before their signals are not counted */

	printf("{\"action\":\"%s\",\"processes\":[", cli_verb_name[p->verb]);
	for (int i = 0; i < n; i++)
		print_job_json(&jobs[i], i == 0);
	printf("],\n \"attempts\":[");
	for (int i = 0; i < r->n_attempts; i++)
		if (cn_json_str(line, sizeof(line), r->attempts[i]) > 0)
			printf("%s%s", i ? "," : "", line);
	printf("],\n \"refused\":");
	if (r->refused[0] && cn_json_str(line, sizeof(line), r->refused) > 0)
		printf("%s", line);
	else
		printf("null");
	printf(",\n \"rollback\":");
	if (r->rolled_back && cn_json_str(line, sizeof(line), r->rollback) > 0)
		printf("{\"processes\":%d,\"line\":%s}", r->rolled_back, line);
	else
		printf("null");
	printf(",\n \"total\":{\"processes\":%d,\"ok\":%d,\"without_cuda\":%d,\"failed\":%d,"
	       "\"rolled_back\":%s,\"seconds\":%.3f}}\n",
	       counted, r->n_ok, r->n_none, counted - r->n_ok - r->n_none,
	       r->rolled_back ? "true" : "false", r->seconds);
}

static void print_text(const struct job *jobs, int n, const struct plan *p,
		       const struct group_result *r)
{
	int counted = n - r->n_gone;

	for (int i = 0; i < n; i++)
		printf("%s\n", jobs[i].line);
	if (r->refused[0])
		printf("%s\n", r->refused);
	if (r->rolled_back)
		printf("%s\n", r->rollback);
	if (n > 1 || p->group)
		printf("total: %d process%s, %d %s, %d without CUDA, %d failed%s, %.2f s\n",
		       counted, counted == 1 ? "" : "es", r->n_ok,
		       !p->wait			 ? "signalled"
		       : p->verb == VERB_SUSPEND ? "suspended"
		       : p->verb == VERB_RESUME	 ? "resumed"
		       : p->verb == VERB_NAP	 ? "napping"
						 : "prepared",
		       r->n_none, counted - r->n_ok - r->n_none,
		       r->rolled_back ? " (rolled back)" : "", r->seconds);
}

static void print_attempt(const char *line)
{
	printf("%s\n", line);
	fflush(stdout);
}

/* A PID given twice is acted on once: a second signal would be taken for another action. */
static int dedupe(struct job *jobs, int n)
{
	int m = 0;

	for (int i = 0; i < n; i++) {
		bool seen = false;

		for (int k = 0; k < m && !seen; k++)
			seen = jobs[k].pid == jobs[i].pid;
		if (!seen)
			jobs[m++] = jobs[i];
	}
	return m;
}

/* --to-disk DIR PID: getopt takes an optional value only after '='. */
static void not_a_pid(const char *arg, const char *to_disk)
{
	fprintf(stderr, "%s: '%s' is not a process id%s%s%s\n", cli_prog, arg,
		to_disk && !to_disk[0] && strchr(arg, '/')
			? " (a directory for --to-disk is given as --to-disk="
			: "",
		to_disk && !to_disk[0] && strchr(arg, '/') ? arg : "",
		to_disk && !to_disk[0] && strchr(arg, '/') ? ")" : "");
	exit(2);
}

/* The processes --slurm, --all or --tree name; -1 when there are none, why saying so. */
static int select_group(const struct plan *p, const char *slurm, bool all, const int *roots,
			int n_roots, int **pids, char *why, size_t len)
{
	int n;

	/* Root acts for every user: a Slurm job's processes, a tree, all of them are anyone's. */
	procs_all_users(geteuid() == 0);
	why[0] = '\0';
	if (slurm) {
		char note[300];
		int *job_pids, k = slurm_job_pids(slurm, &job_pids, note, sizeof(note));

		if (note[0] && k >= 0)
			fprintf(stderr, "%s: %s\n", cli_prog, note);
		if (k < 0) {
			snprintf(why, len, "%s", note);
			return -1;
		}
		n = procs_select(p->cfg, NULL, 0, job_pids, k, pids);
		free(job_pids);
		if (n <= 0)
			snprintf(why, len,
				 "no process of Slurm job %s on this node runs under cudanap",
				 slurm);
		return n > 0 ? n : -1;
	}
	for (int r = 0; r < n_roots; r++)
		if (kill(roots[r], 0) < 0 && errno == ESRCH) {
			snprintf(why, len, "%d: no such process", roots[r]);
			return -1;
		}
	n = procs_select(p->cfg, roots, n_roots, NULL, 0, pids);
	if (n <= 0)
		snprintf(why, len, "no process %s runs under cudanap",
			 all ? "of this user" : "in that tree");
	return n > 0 ? n : -1;
}

/* suspend --dry-run: what each would do, asked, printed; 0 only if every one would suspend. */
static int dry_run(struct job *jobs, int n, const struct plan *p, bool json, double timeout)
{
	int ok = 0;

	ask_all(jobs, n, p->cfg, timeout);
	if (json)
		printf("{\"action\":\"dry-run\",\"processes\":[");
	for (int i = 0; i < n; i++) {
		jobs[i].ok = ask_line(&jobs[i], jobs[i].line, sizeof(jobs[i].line));
		ok += jobs[i].ok;
		if (json)
			print_job_json(&jobs[i], i == 0);
		else
			printf("%s\n", jobs[i].line);
	}
	if (json)
		printf("],\n \"total\":{\"processes\":%d,\"would_suspend\":%d}}\n", n, ok);
	else if (n > 1 || p->group)
		printf("total: %d process%s, %d would suspend, %d would refuse\n", n,
		       n == 1 ? "" : "es", ok, n - ok);
	return ok == n ? 0 : 1;
}

/* --to-disk=DIR made absolute: the process's agent has a working directory of its own. */
static const char *absolute(const char *dir)
{
	static char abs[PATH_MAX];

	if (!dir || !dir[0] || dir[0] == '/')
		return dir ? dir : "";
	if (!getcwd(abs, sizeof(abs) - strlen(dir) - 2))
		cli_die_usage("cudanap: --to-disk: cannot make the path absolute\n");
	return strcat(strcat(abs, "/"), dir);
}

/* What the command line of suspend, resume, prepare or nap asks for. */
struct act_args {
	struct plan p;
	const char *slurm;
	double timeout;
	bool timeout_set; /* --timeout given: else a dry run's is ASK_WAIT_S */
	bool all, each, json, dry;
	bool tree_flag, slurm_flag; /* --tree, --slurm given without a value of their own */
	bool this_node;		    /* --this-node: a Slurm job's processes here only */
	bool relay;		    /* this node's part in a job led from another host (span.c) */
	int roots[64], n_roots;
	int n;		      /* the PIDs given, from argv[optind] */
	struct cn_gpumap map; /* --gpu-map's, once parsed (p.gpu_map points here) */
};

/* --tree with a value: one more root; without: the PIDs given are the trees' roots. */
static void parse_tree(struct act_args *a, int argc, char **argv)
{
	const char *v = cli_flag_value(argc, argv);

	if (!v) {
		a->tree_flag = true;
		return;
	}
	if (a->n_roots == 64)
		cli_die_usage("cudanap: at most 64 --tree options\n");
	if ((a->roots[a->n_roots++] = cli_parse_pid(v)) < 0)
		not_a_pid(v, NULL);
}

/* --gpu-map MAP, parsed now into a->map; 2 when it does not parse, said. */
static int parse_gpu_map(struct act_args *a, const char *text)
{
	char err[CN_ERR_LEN];

	if (a->p.verb != VERB_RESUME)
		cli_die_usage("cudanap: --gpu-map is for resume\n");
	if (cn_gpumap_parse(text, &a->map, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: --gpu-map: %s\n", cli_prog, err);
		return 2;
	}
	a->p.gpu_map = &a->map;
	return 0;
}

/* One option getopt returned; 2 on a --gpu-map that does not parse, said. */
static int parse_option(struct act_args *a, int c, int argc, char **argv)
{
	enum verb verb = a->p.verb;
	unsigned long n;
	char *end;

	switch (c) {
	case 'd':
		if (verb != VERB_SUSPEND)
			cli_die_usage("cudanap: --dry-run is for suspend\n");
		a->dry = true;
		break;
	case 'c':
		a->p.cfg = optarg;
		break;
	case 'w':
	case 'n':
		a->p.wait = c == 'w';
		break;
	case 't':
		a->timeout = strtod(optarg, &end);
		if (!(a->timeout > 0) || *end)
			cli_die_usage("cudanap: --timeout wants a number of seconds above 0\n");
		a->timeout_set = true;
		break;
	case 'a':
		a->all = true;
		break;
	case 'T':
		parse_tree(a, argc, argv);
		break;
	case 'S':
		a->slurm = cli_flag_value(argc, argv);
		a->slurm_flag = !a->slurm;
		break;
	case 'H':
		a->this_node = true;
		break;
	case 'R':
		a->this_node = a->relay = true;
		break;
	case 'e':
		if (verb == VERB_PREPARE || verb == VERB_NAP)
			cli_die_usage("cudanap: --each is for suspend and resume\n");
		a->each = true;
		break;
	case 'D':
		if (verb != VERB_SUSPEND)
			cli_die_usage("cudanap: --to-disk is for suspend\n");
		a->p.to_disk = absolute(optarg);
		break;
	case 'g':
		return parse_gpu_map(a, optarg);
	case 'j':
		a->json = true;
		a->p.on_attempt = NULL;
		break;
	case 'r':
		if (cn_config_uint(optarg, 100, &n) < 0) /* digits only: "-1" would wrap */
			cli_die_usage("cudanap: --retries wants a number from 0 to 100\n");
		a->p.retries = (unsigned)n;
		break;
	default:
		cli_die_option(cli_verb_name[verb], argv, c);
	}
	return 0;
}

/* The options, anywhere, before or after the PIDs (getopt's permutation), then the other
 * arguments: a flag's values (--tree's roots, --slurm's job) or the PIDs; 0, or 2 said. */
static int parse_args(struct act_args *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "wait", no_argument, NULL, 'w' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "tree", optional_argument, NULL, 'T' },
		{ "slurm", optional_argument, NULL, 'S' },
		{ "each", no_argument, NULL, 'e' },
		{ "retries", required_argument, NULL, 'r' },
		{ "to-disk", optional_argument, NULL, 'D' },
		{ "gpu-map", required_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		{ "dry-run", no_argument, NULL, 'd' },
		{ "this-node", no_argument, NULL, 'H' },
		{ "relay", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, ":c:wnt:aT::S::er:D::g:jdHh", opts, NULL)) != -1)
		if (parse_option(a, c, argc, argv))
			return 2;
	a->n = argc - optind;
	if (a->tree_flag && !a->slurm_flag) {
		for (; a->n > 0 && a->n_roots < 64; a->n--)
			if ((a->roots[a->n_roots++] = cli_parse_pid(argv[optind++])) < 0)
				not_a_pid(argv[optind - 1], NULL);
		if (!a->n_roots)
			cli_die_usage("cudanap: --tree: which process? give its PID\n");
	}
	if (a->slurm_flag && !a->tree_flag) {
		if (a->n != 1)
			cli_die_usage("cudanap: --slurm: give one job id\n");
		a->slurm = argv[optind++];
		a->n = 0;
	}
	return 0;
}

/* One way of naming the processes, and one at least; 0, or 2 said. */
static int check_args(const struct act_args *a)
{
	const char *name = cli_verb_name[a->p.verb];

	if ((a->all + (a->n_roots > 0) + (a->slurm != NULL) + (a->n > 0) +
	     (a->tree_flag && a->slurm_flag)) > 1)
		cli_die_usage(
			"cudanap: give PIDs, --all, --tree or --slurm, not several of them\n");
	if (!a->all && !a->n_roots && !a->slurm && a->n <= 0) {
		fprintf(stderr,
			"%s %s: which processes? give PIDs, --all, --tree PID or --slurm JOBID; "
			"see '%s %s --help'\n",
			cli_prog, name, cli_prog, name);
		return 2;
	}
	return 0;
}

/* The jobs: the group's processes, or the PIDs given from argv[optind], each once; their number,
 * or -1 when there are none (why says so) or no memory. */
static int make_jobs(struct act_args *a, char **argv, struct job **out, char *why, size_t len)
{
	int n = a->n, *pids = NULL;
	struct job *jobs;

	why[0] = '\0';
	a->p.group = a->all || a->n_roots || a->slurm;
	if (a->p.group && (n = select_group(&a->p, a->slurm, a->all, a->roots, a->n_roots, &pids,
					    why, len)) < 0) {
		free(pids);
		return -1;
	}
	jobs = calloc((size_t)(n ? n : 1), sizeof(*jobs));
	if (!jobs)
		return -1;
	for (int i = 0; i < n; i++) {
		jobs[i].pid = pids ? pids[i] : cli_parse_pid(argv[optind + i]);
		if (jobs[i].pid < 0)
			not_a_pid(argv[optind + i], a->p.to_disk);
	}
	free(pids);
	*out = jobs;
	return dedupe(jobs, n);
}

/* Act on the jobs, all or nothing unless --each, and print the outcome; the exit status. A node's
 * part in a job led from another host prints nothing: its leader does (span.c). */
static int run_and_print(struct act_args *a, struct job *jobs, int n)
{
	static struct group_result r;
	struct plan *p = &a->p;
	bool many = n > 1 || p->relay;

	p->timeout = a->timeout;
	p->deadline = cli_now_s() + a->timeout;
	p->atomic = p->verb == VERB_SUSPEND && p->wait && !a->each && many;
	p->whole = (p->verb == VERB_SUSPEND || p->verb == VERB_RESUME) && !a->each && many;
	group_run(jobs, n, p, &r);
	if (p->relay)
		return r.all_ok ? 0 : 1;
	if (a->json)
		print_json(jobs, n, p, &r);
	else
		print_text(jobs, n, p, &r);
	return r.all_ok ? 0 : 1;
}

/* What each node of a job is given to run (span.c): this command, for that node's processes. */
static char **node_args(const struct act_args *a)
{
	static char timeout[48], retries[32], cfg[PATH_MAX], disk[PATH_MAX + 16], map[4096];
	static char *v[24];
	int k = 0;

	v[k++] = (char *)cli_verb_name[a->p.verb];
	v[k++] = "--slurm";
	v[k++] = (char *)a->slurm;
	v[k++] = a->dry ? "--this-node" : "--relay";
	snprintf(timeout, sizeof(timeout), "--timeout=%.3f", a->timeout);
	v[k++] = timeout;
	snprintf(retries, sizeof(retries), "--retries=%u", a->p.retries);
	v[k++] = retries;
	if (a->p.cfg && realpath(a->p.cfg, cfg)) {
		v[k++] = "-c";
		v[k++] = cfg;
	}
	if (a->dry)
		v[k++] = "--dry-run";
	if (a->each)
		v[k++] = "--each";
	if (!a->p.wait)
		v[k++] = "--no-wait";
	if (a->json)
		v[k++] = "--json";
	if (a->p.to_disk) {
		snprintf(disk, sizeof(disk), "--to-disk=%s", a->p.to_disk);
		v[k++] = disk;
	}
	if (a->p.gpu_map) {
		snprintf(map, sizeof(map), "--gpu-map=");
		cn_gpumap_write(a->p.gpu_map, map + strlen(map), sizeof(map) - strlen(map));
		v[k++] = map;
	}
	v[k] = NULL;
	return v;
}

/* The job on several nodes, or on one that is not this host: led from here on all of them. */
static int spanned(struct act_args *a, const char *nodes, int n)
{
	struct span_req q = {
		.verb = a->p.verb,
		.job = a->slurm,
		.args = node_args(a),
		.json = a->json,
		.wait = a->p.wait,
		.whole = (a->p.verb == VERB_SUSPEND || a->p.verb == VERB_RESUME) && !a->each,
		.atomic = a->p.verb == VERB_SUSPEND && a->p.wait && !a->each,
		.cut = a->p.wait && (a->p.verb == VERB_SUSPEND || a->p.verb == VERB_RESUME),
		.retries = a->p.retries,
		.timeout = a->timeout,
		.on_attempt = a->json ? NULL : print_attempt,
	};

	if (a->dry)
		return span_look(a->slurm, nodes, n, q.args, a->json, true);
	return spanjob_act(&q, nodes, n);
}

/* This node's part in a job led from another host: its processes acted on, every step said to
 * the leader, whose word decides (relay.c). */
static int relayed(struct act_args *a, char **argv)
{
	char why[600];
	struct job *jobs = NULL;
	int n = make_jobs(a, argv, &jobs, why, sizeof(why)), rc = 0;

	a->p.relay = relay_open(n > 0 ? n : 0, n > 0 ? NULL : why[0] ? why : "out of memory");
	if (!a->p.relay) {
		free(jobs);
		return 1;
	}
	a->p.json = a->json;
	a->p.on_attempt = NULL;
	if (n > 0)
		rc = run_and_print(a, jobs, n);
	relay_close(a->p.relay);
	free(jobs);
	return rc;
}

/* cudanap suspend --slurm J run in each task of a step of job J with several tasks (the recipe
 * before a command reached every node): once is enough now. */
static bool in_each_task(const char *job)
{
	const char *id = getenv("SLURM_JOB_ID"), *tasks = getenv("SLURM_STEP_NUM_TASKS");

	return id && tasks && strcmp(id, job) == 0 && atoi(tasks) > 1;
}

int act_main(int argc, char **argv, enum verb verb)
{
	struct act_args a = {
		.p = { .verb = verb, .wait = true, .retries = 2, .on_attempt = print_attempt },
		.timeout = 600,
	};
	char why[600], nodes[4096];
	struct job *jobs;
	int n, rc;

	if (parse_args(&a, argc, argv) || check_args(&a))
		return 2;
	/* a dry run asks, as status does: its answers come in milliseconds, or not at all */
	if (a.dry && !a.timeout_set)
		a.timeout = ASK_WAIT_S;
	if (a.slurm && !a.this_node) {
		if (in_each_task(a.slurm)) {
			fprintf(stderr,
				"%s: %s --slurm %s reaches every node of the job by itself: run it "
				"once, not in each task of a step (or give --this-node)\n",
				cli_prog, cli_verb_name[verb], a.slurm);
			return 2;
		}
		n = span_nodes(a.slurm, nodes, sizeof(nodes), why, sizeof(why));
		if (why[0])
			fprintf(stderr, "%s: %s\n", cli_prog, why);
		if (n != 0)
			return n < 0 ? 1 : spanned(&a, nodes, n);
	}
	if (a.relay)
		return relayed(&a, argv);
	if ((n = make_jobs(&a, argv, &jobs, why, sizeof(why))) < 0) {
		if (why[0])
			fprintf(stderr, "%s: %s\n", cli_prog, why);
		return 1;
	}
	if (a.dry)
		rc = dry_run(jobs, n, &a.p, a.json, a.timeout);
	else
		rc = run_and_print(&a, jobs, n);
	free(jobs);
	return rc;
}
