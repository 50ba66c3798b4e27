/* status: cudanap status, a table or JSON of the cudanap processes of this user, or of a Slurm
 * job on this node, read from their status files, each running one first asked what a suspend
 * would do now (ask.c). It removes the files of processes gone. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "view.h"
#include "cn_notes.h"

const char cli_usage_status[] =
	"usage: cudanap status [-c FILE] [--json] [--no-query] [PID... | --slurm JOBID]\n"
	"\n"
	"Show every cudanap process of this user (root: of every user), or the PIDs given: its\n"
	"STATE, one of running, locked, checkpointed (suspended: cudanap suspend, a signal),\n"
	"napping (checkpointed by a nap: it wakes at its next CUDA call that needs the GPU),\n"
	"failed or no-cuda, or stopped (SIGSTOP, a debugger) or frozen (its cgroup) in its place\n"
	"while it runs and after it while it sleeps ('checkpointed+stopped'); '+prep' when a\n"
	"prepared host copy waits, '*' while an action is under way; the last ACTION, its\n"
	"RESULT and TIME; the GPUS it is on by nvidia-smi's index ('0>1': asleep, and a resume\n"
	"puts it on GPU 1; '-' before it was first asked or suspended); the GPU memory it held\n"
	"at its last suspend (GPU_MIB), and what its host copy holds now in host memory and on\n"
	"disk (HOST_MIB, DISK_MIB: asleep, napping lightly or prepared); its NAP (off, awake or\n"
	"'idle 42s' since its last GPU work or its last action, napping, waking, waiting for\n"
	"room, not napped, waiting for an NCCL job to sleep) and NAPS (naps/wakes, the last\n"
	"wake's delay); how its NCCL communicators are handled at a suspend (api: NCCL's\n"
	"suspend API; suspended: they are; sockets; refused: its NCCL has no such API and its\n"
	"transports share memory; '-': none). Each column is as wide as its widest word.\n"
	"\n"
	"Each process not busy with an action is first asked what a suspend would do now, as\n"
	"'cudanap suspend --dry-run' asks (nothing changes; 5 s at most for all): NOW_MIB is its\n"
	"GPU memory now, on all its GPUs; SUSPEND says yes, no, asleep, no-cuda or busy, with\n"
	"the estimated suspend and resume times in seconds (from this machine's past suspends\n"
	"of its GPU model, else defaults); one that cannot be asked (stopped, frozen, not\n"
	"answering) is 'no'. Lines after the table say why for each 'no', its peer access, the\n"
	"memory cudanap owns of it ('owned memory: ...'), and the processes of another job on a\n"
	"restored NCCL rank's GPUs. A '?' marks NOW_MIB and SUSPEND answered before the\n"
	"process's last action (or not answered now): they say what was, not what is, and a\n"
	"line after the table says so when one is there. --json adds the GPUs' UUIDs (gpus,\n"
	"home_gpus, restore_gpus), the NCCL version, the answer's fields (suspendable, why_not,\n"
	"gpu_now, gpu_now_mib, host_need_mib, host_room_mib, host_bound, est_suspend_s,\n"
	"est_resume_s, est_source, inside, beside, query_time), query_stale (true where the\n"
	"answer is not of now), halted (stopped, frozen or \"\") and every other field.\n"
	"Status files of processes that are gone are removed, with the files beside them.\n"
	"\n"
	"  -c, --config FILE   where to find the status files (default: $CUDANAP_CONFIG, else the\n"
	"                      built-in default directory)\n"
	"  -j, --json          print a JSON array of the status objects\n"
	"  -S, --slurm JOBID   the processes of Slurm job JOBID on every node of it, with each\n"
	"                      node's name (from any host: through srun --jobid=JOBID --overlap)\n"
	"  -H, --this-node     with --slurm: the job's processes on this node only\n"
	"  -n, --no-query      read the status files only: NOW_MIB and SUSPEND as last asked\n"
	"\n"
	"Options go anywhere, before or after the PIDs; --slurm followed by an option takes the\n"
	"job id from the rest of the line.\n"
	"Exit status: 0, or 1 if a PID given (or the job) has no status.\n";

/* A process once, however many directories hold a file of it. */
static void add(struct rows *r, const struct cn_status *s)
{
	for (int i = 0; i < r->n; i++)
		if (r->s[i].pid == s->pid)
			return;
	if (r->n == r->cap) {
		int cap = r->cap ? 2 * r->cap : 16;
		struct cn_status *m = realloc(r->s, (size_t)cap * sizeof(*m));

		if (!m)
			return;
		r->s = m;
		r->cap = cap;
	}
	r->s[r->n++] = *s;
}

/* A JSON array of the status objects, each with "node" first under --slurm, and query_stale and
 * halted (stopped, frozen or "": state_col) last. */
static void print_json(const struct rows *r)
{
	char buf[CN_STATUS_MAX + 64];

	printf("[");
	for (int i = 0; i < r->n; i++) {
		int n = cn_status_format(&r->s[i], buf, CN_STATUS_MAX);
		const char *halt = procs_halt_word(r->s[i].pid);

		if (n <= 1)
			continue;
		snprintf(buf + strcspn(buf, "\n") - 1, 64, ",\"query_stale\":%s,\"halted\":\"%s\"}",
			 r->mark[i] & (STALE_NOW | STALE_ASK) ? "true" : "false", halt ? halt : "");
		if (r->node)
			printf("%s{\"node\":\"%s\",%s", i ? ",\n" : "", r->node, buf + 1);
		else
			printf("%s%s", i ? ",\n" : "", buf);
	}
	printf("]\n");
}

/* The file <pid>.json just read, in the directory dirfd (dir_uid's): a row when its process runs
 * and the file may be believed for it (the directory its user's, the file its user's or root's,
 * as cn_status_read asks); removed when its process is gone or the pid is another's now, and the
 * file is the directory owner's own (which that user could remove anyway), through the directory's
 * fd and only if it is still the file read (cn_status_remove_in): no path is resolved again. */
static void take_file(int dirfd, uid_t dir_uid, int pid, bool prune, struct rows *r)
{
	struct cn_status s;
	struct cn_owner o;
	struct stat st;
	char why[300];

	if (cn_status_read_in(dirfd, pid, CN_OWNER_ANY, &s, &st, why, sizeof(why)) < 0)
		return;
	if (procs_alive(&s)) {
		if (cn_safe_owner_of(pid, true, &o) == 0 && dir_uid == o.uid &&
		    (st.st_uid == o.uid || st.st_uid == 0))
			add(r, &s);
	} else if (prune && st.st_uid == dir_uid) {
		cn_status_remove_in(dirfd, pid, &st);
	}
}

/* The pid of a file beside the status files: a note, "<pid>.<what>", or a temporary file a write
 * cut short left, ".<pid>.<what>.tmp"; 0 for any other name. */
static int note_pid(const char *name)
{
	const char *p = name + (name[0] == '.');
	char *end;
	long pid = strtol(p, &end, 10);
	size_t n = strlen(name);

	if (p[0] < '1' || p[0] > '9' || pid <= 0 || pid > INT_MAX || *end != '.' || !end[1] ||
	    (name[0] != '.' && strcmp(end, ".json") == 0) ||
	    (name[0] == '.' && (n < 5 || strcmp(name + n - 4, ".tmp") != 0)))
		return 0;
	return (int)pid;
}

/* The notes of processes whose status file is not there (gone, or removed just now): removed,
 * as the process's exit removes them, for one that could not (killed). */
static void prune_notes(int fd, const int *pids, int n)
{
	struct stat st;
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%d.json", pids[i]);
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			cn_notes_remove_in(fd, pids[i]);
	}
}

/* The status files in dir, a directory of uid's that nobody else may write to: the check the
 * preload made at its start, made again and the directory used by its fd from there; with prune,
 * the files of processes gone removed. */
static void list_dir(const char *dir, uid_t uid, bool prune, struct rows *r)
{
	char why[300];
	int fd = cn_safe_dir(AT_FDCWD, dir, (struct cn_owner){ uid, uid == 0 }, false, why,
			     sizeof(why));
	int fd2 = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
	DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
	int *noted = NULL, n_noted = 0, cap = 0;
	struct dirent *e;
	struct stat st;

	if (fd2 >= 0 && !d)
		close(fd2);
	if (d && fstat(fd, &st) < 0)
		st.st_uid = uid;
	while (d && (e = readdir(d))) {
		int pid = atoi(e->d_name), other = note_pid(e->d_name);
		char name[64];

		snprintf(name, sizeof(name), "%d.json", pid);
		if (pid > 0 && strcmp(name, e->d_name) == 0)
			take_file(fd, st.st_uid, pid, prune, r);
		if (other && prune && n_noted == cap) {
			int *m = realloc(noted, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*m));

			if (!m)
				break;
			noted = m;
		}
		if (other && prune)
			noted[n_noted++] = other;
	}
	prune_notes(fd, noted, n_noted);
	free(noted);
	if (d)
		closedir(d);
	if (fd >= 0)
		close(fd);
}

int status_gather(const char *cfg, struct cn_status **out)
{
	char err[CN_ERR_LEN];
	struct rows rows = { 0 };
	struct cn_config conf;
	struct procs_dir *dirs = NULL;
	int n = 0;

	bool prune = true;

	if (cfg) {
		cli_load_config(cfg, &conf);
	} else if (cn_config_load_env(&conf, err, sizeof(err)) < 0) {
		cn_config_defaults(&conf);
	}
	/* Every directory in use (root's: by every user), for the directories to list without -c,
	 * and for whether a process of another pid namespace uses one: a file there is nobody's
	 * stale file for the pids of this one (root on a host removed its containers' files). */
	procs_all_users(geteuid() == 0);
	n = procs_job_dirs(&dirs);
	for (int i = 0; i < n; i++)
		if (dirs[i].foreign && dirs[i].uid == geteuid() &&
		    strcmp(dirs[i].path, conf.status_dir) == 0)
			prune = false;
	list_dir(conf.status_dir, geteuid(), prune, &rows);
	/* without -c, every one in use; the default dir, in use by processes too, read once */
	for (int i = 0; i < n && !cfg; i++)
		if (dirs[i].uid != geteuid() || strcmp(dirs[i].path, conf.status_dir) != 0)
			list_dir(dirs[i].path, dirs[i].uid, !dirs[i].foreign, &rows);
	free(dirs);
	*out = rows.s;
	return rows.n;
}

/* A row whose answer is older than its last action: both UTC to the millisecond, in the same
 * form, so that their order is the strings'. */
static bool older_than_action(const struct cn_status *s)
{
	return s->query_time[0] && strcmp(s->query_time, s->timestamp) < 0;
}

/* One that could not be asked now: SUSPEND is no, why as the dry run says it. */
static void told_no(struct cn_status *row, const struct job *j)
{
	char line[sizeof(j->line)];
	const char *why = line;

	ask_line(j, line, sizeof(line));
	why += strcspn(why, ":") + (why[strcspn(why, ":")] ? 2 : 0); /* past "PID: " */
	if (strncmp(why, "would refuse: ", 14) == 0)
		why += 14;
	row->suspendable = CN_ASK_NO;
	snprintf(row->why_not, sizeof(row->why_not), "%s", why);
}

/* Each row not busy with an action asked what a suspend would do now; its answer replaces it. */
static void ask_rows(struct rows *r, const char *cfg)
{
	struct job *jobs = calloc((size_t)(r->n ? r->n : 1), sizeof(*jobs));
	int n = 0;

	if (!jobs)
		return;
	for (int i = 0; i < r->n; i++)
		if (!r->s[i].busy)
			jobs[n++].pid = r->s[i].pid;
	ask_all(jobs, n, cfg, 5);
	for (int i = 0, k = 0; i < r->n && k < n; i++) {
		const struct job *j = &jobs[k];

		if (r->s[i].pid != j->pid)
			continue;
		k++;
		if (j->have_st)
			r->s[i] = j->st;
		if (strcmp(j->outcome, "answered") == 0 || strcmp(j->outcome, "gone") == 0)
			continue;
		r->mark[i] |= STALE_NOW;
		if (r->s[i].busy)
			continue; /* SUSPEND says busy */
		told_no(&r->s[i], j);
		r->mark[i] |= TOLD_NO;
	}
	free(jobs);
}

/* The cudanap processes of a Slurm job on this node, with the node's name. */
static int status_slurm(const char *cfg, const char *jobid, struct rows *r)
{
	static char node[256];
	char note[300], dir[PATH_MAX];
	int *pids = NULL, *sel = NULL, n = slurm_job_pids(jobid, &pids, note, sizeof(note));

	if (note[0])
		fprintf(stderr, "%s: %s\n", cli_prog, note);
	if (n < 0)
		return 1;
	n = procs_select(cfg, NULL, 0, pids, n, &sel);
	free(pids);
	slurm_node_name(node, sizeof(node));
	r->node = node;
	for (int i = 0; i < n; i++) {
		struct cn_status s;

		procs_status_dir(sel[i], cfg, dir, sizeof(dir));
		if (cn_status_read(dir, sel[i], &s) == 0 && procs_alive(&s))
			add(r, &s);
	}
	free(sel);
	if (n <= 0)
		fprintf(stderr, "%s: no process of Slurm job %s on %s runs under cudanap\n",
			cli_prog, jobid, node);
	return n > 0 ? 0 : 1;
}

/* What the command line of cudanap status asks for. */
struct status_args {
	const char *cfg, *slurm;
	bool json, query, this_node;
};

/* Options anywhere, before or after the PIDs; --slurm's job may be the one other argument. */
static void parse_args(struct status_args *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "slurm", optional_argument, NULL, 'S' },
		{ "no-query", no_argument, NULL, 'n' },
		{ "this-node", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool slurm_flag = false;
	int c;

	while ((c = getopt_long(argc, argv, ":c:jS::nHh", opts, NULL)) != -1) {
		if (c == 'n')
			a->query = false;
		else if (c == 'H')
			a->this_node = true;
		else if (c == 'c')
			a->cfg = optarg;
		else if (c == 'j')
			a->json = true;
		else if (c == 'S')
			slurm_flag = !(a->slurm = cli_flag_value(argc, argv));
		else
			cli_die_option("status", argv, c);
	}
	if (slurm_flag && optind + 1 != argc)
		cli_die_usage("cudanap: --slurm: give one job id\n");
	if (slurm_flag)
		a->slurm = argv[optind++];
	if (a->slurm && optind < argc)
		cli_die_usage("cudanap: give PIDs or --slurm, not both\n");
}

/* The rows of the PIDs given from argv[optind]; 1 when one is not a running cudanap process
 * (said), else 0. */
static int rows_of_pids(const char *cfg, int argc, char **argv, struct rows *rows)
{
	int rc = 0;

	for (int i = optind; i < argc; i++) {
		int pid = cli_parse_pid(argv[i]), r = 0;
		char dir[PATH_MAX];
		struct cn_status s;

		if (pid > 0)
			r = procs_status_dir(pid, cfg, dir, sizeof(dir));
		if (pid < 0 || r < 0 || cn_status_read(dir, pid, &s) < 0 || !procs_alive(&s)) {
			fprintf(stderr, "%s: %s: not a running cudanap process%s\n", cli_prog,
				argv[i], r < 0 ? ": " PROCS_ENV_LONG : "");
			rc = 1;
			continue;
		}
		add(rows, &s);
	}
	return rc;
}

/* The job on several nodes, or on another host's: every node's rows, asked there (span.c). */
static int status_spanned(const struct status_args *a, const char *nodes, int n)
{
	char cfg[PATH_MAX], *v[10];
	int k = 0;

	v[k++] = "status";
	v[k++] = "--slurm";
	v[k++] = (char *)a->slurm;
	v[k++] = "--this-node";
	if (a->cfg && realpath(a->cfg, cfg)) {
		v[k++] = "-c";
		v[k++] = cfg;
	}
	if (a->json)
		v[k++] = "--json";
	if (!a->query)
		v[k++] = "--no-query";
	v[k] = NULL;
	return span_look(a->slurm, nodes, n, v, a->json, false);
}

int status_main(int argc, char **argv)
{
	struct status_args a = { .query = true };
	struct rows rows = { 0 };
	char nodes[4096], note[600];
	int rc = 0, n;

	parse_args(&a, argc, argv);
	if (a.slurm && !a.this_node) {
		n = span_nodes(a.slurm, nodes, sizeof(nodes), note, sizeof(note));
		if (note[0])
			fprintf(stderr, "%s: %s\n", cli_prog, note);
		if (n != 0)
			return n < 0 ? 1 : status_spanned(&a, nodes, n);
	}
	if (a.slurm) {
		rc = status_slurm(a.cfg, a.slurm, &rows);
	} else if (optind < argc) {
		rc = rows_of_pids(a.cfg, argc, argv, &rows);
	} else {
		free(rows.s);
		rows.n = status_gather(a.cfg, &rows.s);
		rows.cap = rows.n;
	}
	rows.mark = calloc((size_t)(rows.n ? rows.n : 1), 1); /* once every row is in */
	if (!rows.mark)
		return 1;
	if (a.query)
		ask_rows(&rows, a.cfg);
	for (int i = 0; i < rows.n; i++)
		if (older_than_action(&rows.s[i]))
			rows.mark[i] |= rows.mark[i] & TOLD_NO ? STALE_NOW : STALE_NOW | STALE_ASK;
	if (a.json)
		print_json(&rows);
	else if (rows.n || rc == 0) /* not a bare header under the errors */
		view_table(&rows);
	free(rows.s);
	free(rows.mark);
	return rc;
}
