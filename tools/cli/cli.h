/* cli: what the files of the cudanap command share (cli.c, procs.c, slurm.c) and what each command
 * file offers the dispatch in cudanap.c. Only the command includes it. */
#ifndef CN_CLI_H
#define CN_CLI_H

#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "cn_config.h"
#include "cn_status.h"

/* ---- cli.c ---- */
extern const char *cli_prog;

_Noreturn void cli_die_usage(const char *text);
/* getopt_long's '?' or ':' for `cudanap VERB` (the optstring starts with ':', or "+:"): one line
 * naming the option and the help to read, exit 2. */
_Noreturn void cli_die_option(const char *verb, char **argv, int c);
/* The value of an option that is a flag or takes one (--tree, --slurm; optional_argument in
 * getopt_long's table): attached (--tree=PID), or the next argument when it is not an option; NULL
 * when it is a flag, and the command's other arguments are its values. */
const char *cli_flag_value(int argc, char **argv);
/* The INI at path into c, or every error of it said (cli_say_config_errors) and exit 78. */
void cli_load_config(const char *path, struct cn_config *c);
/* Each error of the INI at path on a line of its own on stderr: "cudanap: FILE:LINE: ...". */
void cli_say_config_errors(const char *path, const struct cn_ini_errors *e);
/* s as a JSON string into f, its control characters and bytes that are not UTF-8 replaced. */
void cli_print_json_str(FILE *f, const char *s);
double cli_now_s(void);
void cli_fmt_ms(double ms, char *buf, size_t len);
/* "0,1" from a status's "0=GPU-...,1=GPU-..." (gpus, home_gpus, restore_gpus); "" from "". */
void cli_gpu_indices(const char *list, char *out, size_t len);
int cli_parse_pid(const char *s);			    /* a positive pid, or -1 */
int cli_read_file(const char *path, char *buf, size_t len); /* bytes read (NUL added), or -1 */
/* A file cudanap ships, into out: in_build relative to this program's directory (a build tree),
 * else name in rel_dir relative to it (an installed tree that can move), else abs. 0 when it is
 * readable there; -1, with out the last path tried, when not. */
int cli_find_file(const char *in_build, const char *rel_dir, const char *name, const char *abs,
		  char *out, size_t len);

/* ---- procs.c: which processes, and where their status files are ---- */

/* The status dir the process pid uses (from its own environment, as its preload saw it), or the
 * one cfg_path names: 0; -E2BIG, dir "", when pid's environment is longer than any a program is
 * started with (PROCS_ENV_LONG says it): not taken for a process of cudanap's. */
int procs_status_dir(int pid, const char *cfg_path, char *dir, size_t len);
#define PROCS_ENV_LONG                                                                             \
	"its environment is longer than 8 MiB, more than a program is started with: "              \
	"not taken for a process of cudanap's"

/* The status file is its process's (the pid was not reused since). */
bool procs_alive(const struct cn_status *s);

/* Why pid cannot act on a signal now (stopped, or its cgroup frozen), or NULL. */
const char *procs_stopped(int pid);
/* "stopped" or "frozen" for such a process, NULL for one that can act. */
const char *procs_halt_word(int pid);

/* Has pid mapped the driver (libcuda.so, or the file $CUDANAP_LIBCUDA names in its environment)?
 * One that has not holds no CUDA state. True when its maps cannot be read. */
bool procs_cuda_loaded(int pid);

/* The cudanap processes of this user (all of them, those in the trees of roots, or those among
 * pids), preloaded and with a live status file. *out is allocated; returns the count or -1. */
int procs_select(const char *cfg, const int *roots, int n_roots, const int *pids, int n_pids,
		 int **out);

/* Look at every user's processes, not only this user's (root's cudanap pick). */
void procs_all_users(bool on);

/* This user's processes whose environment has name=value. *out is allocated; the count or -1. */
int procs_with_env(const char *name, const char *value, int **out);

/* A status dir in use, and the user whose processes use it. */
struct procs_dir {
	char path[4096];
	uid_t uid;
	/* one of the processes that use it is in another pid namespace (a container): the pids
	 * its files name are not ours, and a file is not stale because no process of ours has its
	 * pid */
	bool foreign;
};
/* Every status dir in use by this user's preloaded processes (root's: every user's), each once
 * per user, however many: *out is allocated; returns the count. */
int procs_job_dirs(struct procs_dir **out);

/* ---- status.c ---- */

/* The status of every live cudanap process of this user (root: of every user), from the status
 * dir cfg names, else the default one and those of the user's preloaded processes. *out is
 * allocated; returns the count. */
int status_gather(const char *cfg, struct cn_status **out);

/* ---- table.c: rows of cells in columns as wide as their widest cell, heads included ---- */
struct table {
	const char *const *heads;
	const char *align; /* a letter per column: 'l', or 'r' for a number */
	int cols;
	char ***rows; /* each row's cells, copied */
	int n, cap;
};
void table_init(struct table *t, const char *const *heads, const char *align, int cols);
/* A row of cols cells (NULL: empty); 0, or -1 when out of memory. */
int table_add(struct table *t, const char *const *cells);
/* The heads and the rows, the last column not padded. */
void table_print(const struct table *t, FILE *f);
void table_free(struct table *t);

/* ---- metrics.c ---- */
extern const char cli_usage_metrics[];
int metrics_main(int argc, char **argv);

/* ---- pager.c: the node pager's state file ---- */
struct cn_pagerstate;
extern const char cli_usage_pager[];
int pager_main(int argc, char **argv);
/* The state file at path, believed only if root or this user wrote it: 0, or -errno with why. */
int pager_read_state(const char *path, struct cn_pagerstate *s, char *why, size_t len);
/* Its figures per user, in Prometheus' text format. */
void pager_metrics(FILE *f, const struct cn_pagerstate *s);

/* ---- serve.c: cudanap metrics --listen ---- */
/* Listen at addr (ADDR:PORT, [ADDR]:PORT, :PORT) and answer GET /metrics with the text render
 * makes for each request (0, or -1), one request at a time, for ever; 1 when it cannot listen
 * (said in one line). */
int serve_listen(const char *addr, int (*render)(void *arg, char **text, size_t *len), void *arg);

/* ---- kernel.c: Jupyter kernelspecs that run a kernel under cudanap ---- */
extern const char cli_usage_kernel[];
int kernel_main(int argc, char **argv);

/* ---- python.c: whether root may run a Python, its standard library included ---- */
/* The Python at real (a path cn_safe_trusted passed): the standard library it would load, found
 * from where it is as Python finds it, written by root or this user alone, every directory on the
 * way too; a script ("#!", a wrapper) is taken as the trusted program it is. 0, or -errno with
 * why in one line. */
int python_trusted(const char *real, char *why, size_t len);

/* ---- slurm.c: a Slurm job's processes on this node ---- */

/* The pids of job jobid on this node, from `scontrol listpids`, else from the environment of this
 * user's processes (SLURM_JOB_ID), saying so in note. *out is allocated; returns the count, or -1
 * with note holding why. */
int slurm_job_pids(const char *jobid, int **out, char *note, size_t len);

/* This node's name as Slurm knows it (SLURMD_NODENAME, else the host name). */
void slurm_node_name(char *out, size_t len);

/* Job jobid's state (RUNNING, SUSPENDED, ...) and nodes (a Slurm host list), from squeue; the
 * number of nodes, or -1 with err holding why. */
int slurm_job_nodes(const char *jobid, char *state, size_t slen, char *nodes, size_t nlen,
		    char *err, size_t elen);

/* argv[0] started from "/" without a shell, if it is in PATH's trusted directories (cn_safe.h),
 * with envp (NULL: this environment): our ends of pipes to its stdin (to; NULL: /dev/null), from
 * its stdout (from) and from its stderr (errs; NULL: with stdout). 0, or -1 with err holding why.
 */
int slurm_spawn(char *const argv[], char *const envp[], int *to, int *from, int *errs, pid_t *pid,
		char *err, size_t len);

/* ---- group.c: processes acted on at once, all or nothing ---- */
enum verb { VERB_SUSPEND, VERB_RESUME, VERB_PREPARE, VERB_NAP };
extern const char *const cli_verb_name[]; /* "suspend", "resume", "prepare", "nap" */
extern const char *const cli_verb_done[]; /* "suspended", "resumed", "prepared", "napping" */

struct relay;

struct job {
	int pid;
	char dir[PATH_MAX];
	unsigned long seq0;
	bool sent, done, ok;
	bool no_cuda; /* answered that it has no CUDA state */
	bool gone;    /* of a whole job, exited before its signal: left out */
	bool have_st; /* st holds its status file: its outcome, or as it was when sent */
	struct cn_status st;
	const char *outcome; /* suspended, resumed, prepared, already, failed, no-cuda, gone, ... */
	char line[600];	     /* what to print for it */
};
/* One process's outcome as the JSON object of --json, on one line (cli.c). 0, or -1 when it does
 * not fit. */
int cli_job_json(const struct job *j, char *out, size_t len);

struct plan {
	const char *cfg; /* -c: where the status files are; NULL: each process's own */
	enum verb verb;
	bool wait, group, atomic;
	bool whole; /* check every process before any is signalled; one that fails refuses all */
	unsigned retries;
	double timeout, deadline;
	const char
		*to_disk; /* suspend --to-disk[=DIR]: NULL when not asked, "" for the INI's dir */
	const struct cn_gpumap *gpu_map;      /* resume --gpu-map MAP: NULL when not asked */
	void (*on_attempt)(const char *line); /* told of each failed attempt as it happens */
	bool json;			      /* relay: each process's JSON said too */
	struct relay
		*relay; /* this node's part in a job led from another host (relay.c), or NULL */
};

#define MAX_ATTEMPTS 101
struct group_result {
	int n_ok, n_none;
	int n_gone; /* of a whole job, exited before their signals: not counted in the totals */
	bool all_ok;
	char refused[400];   /* a whole job refused before any signal: its line ("" when not) */
	int rolled_back;     /* processes the last rollback resumed (0: none) */
	char rollback[2048]; /* its line, "" when there was none */
	int n_attempts;	     /* failed attempts that were tried again */
	char attempts[MAX_ATTEMPTS][700];
	double seconds;
};

void group_run(struct job *jobs, int n, const struct plan *p, struct group_result *r);

/* ---- span.c: a Slurm job over all its nodes, led from here ---- */

/* Every line between the leader and the nodes begins with it (span.c says the words). */
#define SPAN_MARK "@cn "
/* and is at most this long: srun's --label keeps the lines of its tasks apart only up to 1024
 * bytes, cutting longer ones into pieces that another task's may come between. */
#define SPAN_LINE_MAX 1000
/* The phases of an NCCL job's cut: a suspend's counts and its ranks at the cut, a resume's ranks
 * restored. */
#define SPAN_COUNT    "count"
#define SPAN_THERE    "there"
#define SPAN_RESTORED "restored"

/* Whether job reaches beyond this node: the number of its nodes when it runs on several, or on
 * one that is not this one (their host list into nodes); 0 when it is this node's alone, or
 * Slurm cannot say (note says so); -1 when it cannot be reached now (note says why). */
int span_nodes(const char *job, char *nodes, size_t len, char *note, size_t nlen);

/* What the command on each node of a job is to do, and what the leader needs to know of it. */
struct span_req {
	enum verb verb;
	const char *job;
	char *const *args; /* this program's arguments on each node, NULL-terminated */
	bool json, wait;
	bool whole, atomic,
		cut; /* as group.c's plan on each node: checked, rolled back, an NCCL cut */
	unsigned retries;
	double timeout;
	void (*on_attempt)(const char *line);
};

/* ---- spanjob.c: an action on a Slurm job over all its nodes ---- */
/* Suspend, resume, prepare or nap job over its n nodes: the outcome printed, one line per process
 * and per node, then a total. The exit status. */
int spanjob_act(const struct span_req *q, const char *nodes, int n);
/* A command that only looks (status, suspend --dry-run) run on every node with args: their output
 * printed together, marked with each node's name when marked. The exit status. */
int span_look(const char *job, const char *nodes, int n, char *const args[], bool json,
	      bool marked);

/* ---- relay.c: this node's part in a job led from another host (span.c) ---- */
struct cn_cut_line;

/* Hello said: this node has n_procs of the job (none: why_none). NULL without memory. */
struct relay *relay_open(int n_procs, const char *why_none);
void relay_close(struct relay *r); /* "end" said */
/* Whether the signals may go out: this node's refusal (NULL: none) said, the leader's word heard;
 * false with why (another node's refusal, or the leader gone). */
bool relay_may_send(struct relay *r, const char *refused_here, double deadline, char *why,
		    size_t len);
/* A phase of the NCCL cut: this node's lines (who: the index in its jobs) and state (ok, hint:
 * note names a failure, bad: note says why the cut is off here) said; 0 when the ranks go on (a
 * count phase's targets by relay_target), 1 when there is no cut, -1 with why when it is given
 * up. */
int relay_phase(struct relay *r, const char *phase, const struct cn_cut_line *lines, int n,
		const char *state, const char *note, double deadline, char *why, size_t len);
const char *relay_target(const struct relay *r, int idx);
/* An attempt's outcome said (each process's line, the first failure); true when the leader says
 * to roll back, or is gone: a job half asleep across its nodes is the worst state to leave. */
bool relay_outcome(struct relay *r, const struct job *jobs, int n, const struct job *failed,
		   bool transient, bool json, double deadline);
/* The rollback's outcome said; true when the leader says to try again. */
bool relay_rolled_back(struct relay *r, int m, int bad, const char *line, double deadline);

/* ---- progress.c: a line on the terminal while a command waits ---- */

/* A wait begins, on what topic says ("suspending 3 processes"), for bound seconds at most: its
 * line is shown on stderr when that is a terminal, once the wait has lasted a second, and
 * rewritten by each progress_done (five times a second at most): "cudanap: TOPIC: DONE WORD MORE,
 * 2.4 s (600 s at most)". progress_end erases it, and must come before anything else the command
 * prints. */
void progress_start(double bound, const char *topic, ...) __attribute__((format(printf, 2, 3)));
void progress_done(int done, const char *word, const char *more);
void progress_end(void);

/* How long status, suspend --dry-run and pick wait for the processes' answers, asked all at once:
 * an agent answers in milliseconds, so one that has not in this time is busy or stuck, and its
 * line says so. */
#define ASK_WAIT_S 5.0

/* ---- ask.c: what a suspend would do now, without doing it ---- */

/* Ask each job what a suspend would do now, all at once, and wait at most timeout seconds for the
 * answers. Each job's st is its status file as answered (outcome "answered"), or as it stood
 * ("gone", "stopped", "error", "no-answer": busy with an action that has not ended). */
void ask_all(struct job *jobs, int n, const char *cfg, double timeout);
/* One line on the answer ("PID: would suspend: ..." or "PID: would refuse: WHY"); true when a
 * suspend would succeed, or has nothing to do (no CUDA, asleep already). */
bool ask_line(const struct job *j, char *out, size_t len);

/* ---- ncclcut.c: the cut at which an NCCL job's ranks suspend or resume their communicators ----
 */

/* After the signals went out: the ranks that say their NCCL counts are answered, together, until
 * all of them are at the same cut (or told to give up); nothing when none does. */
void ncclcut_run(struct job *jobs, int n, enum verb v, double deadline, struct relay *relay);

/* ---- the commands: each file's usage text and entry point ---- */
/* act.c: suspend, resume and prepare */
extern const char cli_usage_suspend[], cli_usage_prepare[], cli_usage_nap[];
int act_main(int argc, char **argv, enum verb verb);
/* status.c */
extern const char cli_usage_status[];
int status_main(int argc, char **argv);
/* pick.c */
extern const char cli_usage_pick[];
int pick_main(int argc, char **argv);
/* promjson.c: metrics, and metrics --json (metrics.c's text as JSON) */
extern const char cli_usage_metrics_json[];
int promjson_main(int argc, char **argv);
/* run.c: run and check-config */
extern const char cli_usage_run[];
extern const char cli_usage_check[];
int run_main(int argc, char **argv);
int check_main(int argc, char **argv);

#endif
