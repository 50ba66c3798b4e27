/* metrics: cudanap metrics, the status files of this user's processes (root: everyone's) in
 * Prometheus' text format, printed, in a textfile or served (serve.c) (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cn_counts.h"
#include "cn_outcome.h"
#include "cn_proc.h"
#include "cn_pagerstate.h"
#include "cn_pagerwire.h"
#include "cn_safe.h"

const char cli_usage_metrics[] =
	"usage: cudanap metrics [-c FILE] [--textfile DIR | --listen ADDR:PORT] [--command-line]\n"
	"                       [--pager-state FILE]\n"
	"\n"
	"Print the cudanap processes of this user (root: of every user) in Prometheus' text\n"
	"format, from their status files (no process is asked anything). Every series but\n"
	"cudanap_build_info has the labels pid, user, slurm_job (Slurm's job id from the "
	"process's\n"
	"cgroup, \"\" outside Slurm) and command (the program's name: python3, not its "
	"arguments):\n"
	"  cudanap_process_state{state}      1, for its state: running, locked, checkpointed,\n"
	"                                    napping, failed or no-cuda\n"
	"  cudanap_gpu_memory_bytes{gpu,UUID,state=held|released}\n"
	"                                    GPU memory it holds on each GPU (as last asked), or\n"
	"                                    gave back while it sleeps\n"
	"  cudanap_copy_bytes{where=host|disk}\n"
	"                                    what its host copy holds now, in host memory and on\n"
	"                                    disk (asleep, napping lightly or prepared; 0 "
	"otherwise)\n"
	"  cudanap_light_host_bytes          what a light nap holds in host memory, its context\n"
	"                                    kept on the GPU ([nap] depth); 0 otherwise\n"
	"  cudanap_host_kept_bytes           pinned host memory it keeps for its next light nap\n"
	"                                    ([nap] keep_host_copy)\n"
	"  cudanap_idle_seconds              how long its GPU has had no work, where its naps\n"
	"                                    follow it ([nap] idle_s, make_room): 0 while it "
	"works\n"
	"  cudanap_gpu_model_info{model}     1, with the model of its GPU as last asked\n"
	"  cudanap_naps_full_total{why}      naps [nap] depth = auto made full\n"
	"  cudanap_released_byte_seconds_total\n"
	"                                    GPU memory given back times the seconds it stayed\n"
	"                                    given back, since the process started\n"
	"  cudanap_actions_total{action,result}\n"
	"                                    its suspends, resumes, naps, wakes and prepares that\n"
	"                                    ended, by result (ok, or the failure's name)\n"
	"  cudanap_suspend_seconds           histogram: its suspends and naps that succeeded\n"
	"  cudanap_resume_seconds            histogram: its resumes and wakes that succeeded\n"
	"  cudanap_wake_seconds              histogram: what the calls that woke it waited\n"
	"  cudanap_build_info{version}       1, with this cudanap's version\n"
	"gpu and UUID are the labels dcgm-exporter gives a GPU: nvidia-smi's index and its UUID.\n"
	"Where the node pager runs (its state file), its figures per user (label user):\n"
	"  cudanap_pager_asks_total, _rooms_made_total, _refused_total, _waits_total,\n"
	"  cudanap_pager_wait_seconds_total   the user's needs, and how they were answered\n"
	"  cudanap_pager_naps_for_others_total, _naps_for_self_total\n"
	"                                    its programs napped for others', for its own\n"
	"  cudanap_pager_napped_seconds_total their time napped by the pager\n"
	"  cudanap_pager_gpu_used_bytes{gpu}, cudanap_pager_gpu_share_bytes{gpu}\n"
	"                                    its GPU memory as the pager last looked, its share\n"
	"\n"
	"  -c, --config FILE     where to find the status files (default: each process's own)\n"
	"  -t, --textfile DIR    write DIR/cudanap.prom instead, replaced atomically (mode 0644),\n"
	"                        for node_exporter's --collector.textfile.directory\n"
	"  -l, --listen ADDR:PORT\n"
	"                        serve the text over HTTP at http://ADDR:PORT/metrics, made anew\n"
	"                        for each request, one at a time (127.0.0.1:9877, [::1]:9877,\n"
	"                        :9877 for every address; port 0: any free one, said on stderr)\n"
	"      --command-line    the command label holds the whole command line instead: it\n"
	"                        exposes every argument (a token or password passed on a command\n"
	"                        line too) to whoever reads the metrics, and makes a series per\n"
	"                        command line\n"
	"      --pager-state FILE\n"
	"                        the node pager's state file (default " CN_PAGER_STATE ")\n"
	"\n"
	"Exit status: 0, 1 if DIR cannot be written or ADDR:PORT listened on, 2 on usage errors.\n";

/* A process's labels: pid, user, slurm_job, command, each value escaped. The job's label is not
 * "job": Prometheus gives every series of a scrape its own job label, and renames a clashing one
 * to exported_job. */
#define WHO_LEN 1200

/* The GPU indices a status file's lists may name: more than a machine has. */
#define MAX_GPU 1024

/* One sample line: name{labels[,more]} value. */
static void sample(FILE *f, const char *name, const char *who, const char *more, double v)
{
	fprintf(f, "%s{%s%s%s} %.10g\n", name, who, more[0] ? "," : "", more, v);
}

static void help(FILE *f, const char *name, const char *type, const char *text)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* A label's value as the text format wants it: backslash, quote and newline escaped. */
static void escaped(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 3 < len; in++) {
		if (*in == '\\' || *in == '"' || *in == '\n')
			out[o++] = '\\';
		out[o++] = *in == '\n' ? 'n' : *in;
	}
	out[o] = '\0';
}

/* The Slurm job pid runs in, as Slurm made it: a job_<J> cgroup directory root owns
 * (cn_proc_job); "" when none. Neither the process's environment (anyone may set SLURM_JOB_ID) nor
 * a job_<J> directory a user made in a cgroup delegated to them is believed. */
static void job_of(int pid, char *out, size_t len)
{
	unsigned long job = cn_proc_job(pid);

	snprintf(out, len, job ? "%lu" : "", job);
}

/* The user pid runs as (the owner of /proc/PID): its name, else its number. */
static void user_of(int pid, char *out, size_t len)
{
	char path[64];
	struct stat st;
	struct passwd *pw;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) < 0) {
		snprintf(out, len, "%s", "");
		return;
	}
	pw = getpwuid(st.st_uid);
	if (pw)
		snprintf(out, len, "%s", pw->pw_name);
	else
		snprintf(out, len, "%u", (unsigned)st.st_uid);
}

/* The program's name: the first word of its command line, past its last '/' (python3, not
 * /usr/bin/python3 train.py --token=...), at most PROGRAM_LEN bytes: a label whose values are
 * few, and no argument's secret in them. */
#define PROGRAM_LEN 64
static void program_of(const char *command, char *out, size_t len)
{
	size_t n = strcspn(command, " ");
	const char *p = command, *slash;

	while ((slash = memchr(p, '/', n - (size_t)(p - command))))
		p = slash + 1;
	n -= (size_t)(p - command);
	snprintf(out, len, "%.*s", (int)(n < PROGRAM_LEN ? n : PROGRAM_LEN), p);
}

/* The labels of s: its command the program's name, or with argv the whole command line. */
static void who_of(const struct cn_status *s, bool argv, char *out, size_t len)
{
	char user[128], job[24], prog[PROGRAM_LEN + 1], cmd[sizeof(s->command) * 2],
		e[sizeof(user) * 2];

	user_of(s->pid, user, sizeof(user));
	job_of(s->pid, job, sizeof(job));
	program_of(s->command, prog, sizeof(prog));
	escaped(argv ? s->command : prog, cmd, sizeof(cmd));
	escaped(user, e, sizeof(e));
	snprintf(out, len, "pid=\"%d\",user=\"%s\",slurm_job=\"%s\",command=\"%s\"", s->pid, e, job,
		 cmd);
}

/* The UUID of GPU index k in a status's "INDEX=UUID,..." list; "" when absent. */
static void uuid_of(const char *gpus, int k, char *out, size_t len)
{
	char want[16];
	const char *p;

	out[0] = '\0';
	snprintf(want, sizeof(want), "%d=", k);
	for (p = gpus; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (strncmp(p, want, strlen(want)) == 0) {
			p += strlen(want);
			snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
			/* a UUID's characters only: a label value needs no escaping then */
			out[strspn(out, "GPU-0123456789abcdefABCDEF")] = '\0';
			return;
		}
}

/* For each "INDEX:MiB" of list, a cudanap_gpu_memory_bytes sample in state state (none when f is
 * NULL); a GPU named twice counts once, its first entry: two samples of one series would make
 * node_exporter refuse them. The bytes. */
static double memory(FILE *f, const struct cn_status *s, const char *who, const char *list,
		     const char *state)
{
	unsigned char seen[MAX_GPU / 8] = { 0 };
	double total = 0;

	for (const char *p = list; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL) {
		int k;
		double mib;
		char uuid[64], more[160];

		/* A list another user's file holds: only a GPU's index and a size it could be. */
		if (sscanf(p, "%d:%lf", &k, &mib) != 2 || k < 0 || k >= MAX_GPU || !(mib >= 0) ||
		    mib > 1e9 || (seen[k / 8] & (1u << (k % 8))))
			continue;
		seen[k / 8] |= (unsigned char)(1u << (k % 8));
		uuid_of(s->gpus, k, uuid, sizeof(uuid));
		snprintf(more, sizeof(more), "gpu=\"%d\",UUID=\"%s\",state=\"%s\"", k, uuid, state);
		if (f)
			sample(f, "cudanap_gpu_memory_bytes", who, more, mib * 1048576);
		total += mib * 1048576;
	}
	return total;
}

/* GPU memory given back times the seconds it stayed given back; asleep now, the release under
 * way counts up to now. */
static double released_byte_s(const struct cn_status *s, double now)
{
	double total = s->released_byte_s > 0 ? s->released_byte_s : 0;

	if (s->released_since >= 0 && now > s->released_since)
		total += memory(NULL, s, "", s->released_gpus, "released") *
			 (now - s->released_since);
	return total;
}

/* Its actions by result: a success of each of the four kinds always (0 before the first, so that
 * a rate sees the first), then what its status counts. */
static void actions(FILE *f, const struct cn_status *s, const char *who)
{
	static const int kinds[] = { CN_ACTION_SUSPEND, CN_ACTION_RESUME, CN_ACTION_NAP,
				     CN_ACTION_WAKE };
	const struct cn_counts *c = &s->counts;
	char more[120];

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		double n = 0;

		for (int i = 0; i < c->n_by; i++)
			if (c->by[i].action == kinds[k] && strcmp(c->by[i].result, "ok") == 0)
				n = (double)c->by[i].n;
		snprintf(more, sizeof(more), "action=\"%s\",result=\"ok\"",
			 cn_outcome_action_to_string(kinds[k]));
		sample(f, "cudanap_actions_total", who, more, n);
	}
	for (int i = 0; i < c->n_by; i++) {
		int a = c->by[i].action;

		if (strcmp(c->by[i].result, "ok") == 0 && a != CN_ACTION_PREPARE)
			continue; /* said above */
		snprintf(more, sizeof(more), "action=\"%s\",result=\"%s\"",
			 cn_outcome_action_to_string(a), c->by[i].result);
		sample(f, "cudanap_actions_total", who, more, (double)c->by[i].n);
	}
}

/* A histogram's samples: cumulative buckets, +Inf, the sum and the count. */
static void histogram(FILE *f, const char *name, const struct cn_hist *h, const char *who)
{
	char bucket[96], le[32];
	double cum = 0;

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	for (int k = 0; k < CN_COUNTS_BUCKETS; k++) {
		cum += (double)h->n[k];
		if (k < CN_COUNTS_BUCKETS - 1)
			snprintf(le, sizeof(le), "le=\"%g\"", cn_counts_bounds[k]);
		else
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		sample(f, bucket, who, le, cum);
	}
	fprintf(f, "%s_sum{%s} %.10g\n%s_count{%s} %.10g\n", name, who, h->sum_s, name, who, cum);
}

/* The processes' rows and their labels, and when the text is written (UTC seconds). */
struct scrape {
	const struct cn_status *v;
	char (*who)[WHO_LEN];
	int n;
	double now;
};

/* One gauge of a number per process, under its HELP and TYPE lines. */
static void per_process(FILE *f, const struct scrape *sc, const char *name, const char *text,
			double (*value)(const struct cn_status *s, double now))
{
	help(f, name, "gauge", text);
	for (int i = 0; i < sc->n; i++)
		sample(f, name, sc->who[i], "", value(&sc->v[i], sc->now));
}

static double light_bytes(const struct cn_status *s, double now)
{
	(void)now;
	return cn_status_state_of(s) == CN_STATE_NAPPING && s->light_mib > 0 &&
			       s->nap_depth == CN_DEPTH_LIGHT
		       ? s->light_mib * 1048576
		       : 0;
}

static double kept_bytes(const struct cn_status *s, double now)
{
	(void)now;
	return s->host_kept_mib > 0 ? s->host_kept_mib * 1048576 : 0;
}

/* What it holds, and what it gave back while it sleeps, on each GPU. */
static void gpu_memory(FILE *f, const struct scrape *sc)
{
	help(f, "cudanap_gpu_memory_bytes", "gauge",
	     "GPU memory of the process on each GPU: held there (as last asked), or released "
	     "into host memory while it sleeps.");
	for (int i = 0; i < sc->n; i++)
		if (sc->v[i].state == CN_STATE_CHECKPOINTED)
			memory(f, &sc->v[i], sc->who[i], sc->v[i].released_gpus, "released");
		else
			memory(f, &sc->v[i], sc->who[i], sc->v[i].gpu_now, "held");
}

/* Its host copy, in host memory and on disk: 0 where there is none, so that a sum sees it. */
static void copy_bytes(FILE *f, const struct scrape *sc)
{
	help(f, "cudanap_copy_bytes", "gauge",
	     "What the process's host copy holds now, in host memory and on disk: asleep, napping "
	     "lightly or prepared; 0 otherwise.");
	for (int i = 0; i < sc->n; i++) {
		const struct cn_status *s = &sc->v[i];

		sample(f, "cudanap_copy_bytes", sc->who[i], "where=\"host\"",
		       s->host_mib > 0 ? s->host_mib * 1048576 : 0);
		sample(f, "cudanap_copy_bytes", sc->who[i], "where=\"disk\"",
		       s->disk_mib > 0 ? s->disk_mib * 1048576 : 0);
	}
}

/* Its idleness, where its naps follow it (its nap word is not off): awake or napping, the seconds
 * since its last GPU work, 0 while it works; no sample where nothing follows it, or while it is
 * suspended (no work to wait for). */
static void idle_seconds(FILE *f, const struct scrape *sc)
{
	help(f, "cudanap_idle_seconds", "gauge",
	     "How long the process's GPU has had no work, where its naps follow it ([nap] idle_s, "
	     "make_room): 0 while it works.");
	for (int i = 0; i < sc->n; i++) {
		const struct cn_status *s = &sc->v[i];
		enum cn_state st = cn_status_state_of(s);
		double idle = cn_status_since_s(s->idle_since);

		if (s->nap == CN_NAP_UNSAID || s->nap == CN_NAP_OFF ||
		    (st != CN_STATE_RUNNING && st != CN_STATE_NAPPING))
			continue;
		sample(f, "cudanap_idle_seconds", sc->who[i], "", idle > 0 ? idle : 0);
	}
}

/* The model of its GPU (as the status's last question found it), where it is known. */
static void gpu_model(FILE *f, const struct scrape *sc)
{
	char model[sizeof(sc->v->gpu_model) * 2], more[sizeof(model) + 16];

	help(f, "cudanap_gpu_model_info", "gauge",
	     "1, with the model of the process's GPU (its first), as last asked.");
	for (int i = 0; i < sc->n; i++) {
		if (!sc->v[i].gpu_model[0])
			continue;
		escaped(sc->v[i].gpu_model, model, sizeof(model));
		snprintf(more, sizeof(more), "model=\"%s\"", model);
		sample(f, "cudanap_gpu_model_info", sc->who[i], more, 1);
	}
}

/* Its naps by cause, its byte-seconds given back, its actions, the histograms. */
static void counters(FILE *f, const struct scrape *sc)
{
	help(f, "cudanap_naps_full_total", "counter",
	     "Naps made full by [nap] depth = auto: its light copy over [memory] host_cache, a GPU "
	     "in an exclusive compute mode, or, with [nap] to = auto, a host without room for its "
	     "copy (to disk).");
	for (int i = 0; i < sc->n; i++) {
		sample(f, "cudanap_naps_full_total", sc->who[i], "why=\"host cache\"",
		       (double)sc->v[i].naps_full_host);
		sample(f, "cudanap_naps_full_total", sc->who[i], "why=\"exclusive\"",
		       (double)sc->v[i].naps_full_exclusive);
		sample(f, "cudanap_naps_full_total", sc->who[i], "why=\"host full\"",
		       (double)sc->v[i].naps_full_disk);
	}
	help(f, "cudanap_released_byte_seconds_total", "counter",
	     "GPU memory the process gave back times the seconds it stayed given back.");
	for (int i = 0; i < sc->n; i++)
		sample(f, "cudanap_released_byte_seconds_total", sc->who[i], "",
		       released_byte_s(&sc->v[i], sc->now));
	help(f, "cudanap_actions_total", "counter",
	     "Suspends, resumes, naps, wakes and prepares of the process that ended, by result.");
	for (int i = 0; i < sc->n; i++)
		actions(f, &sc->v[i], sc->who[i]);
}

static void histograms(FILE *f, const struct scrape *sc)
{
	help(f, "cudanap_suspend_seconds", "histogram",
	     "How long the process's suspends and naps that succeeded took.");
	for (int i = 0; i < sc->n; i++)
		histogram(f, "cudanap_suspend_seconds", &sc->v[i].counts.suspend, sc->who[i]);
	help(f, "cudanap_resume_seconds", "histogram",
	     "How long the process's resumes and wakes that succeeded took.");
	for (int i = 0; i < sc->n; i++)
		histogram(f, "cudanap_resume_seconds", &sc->v[i].counts.resume, sc->who[i]);
	help(f, "cudanap_wake_seconds", "histogram",
	     "How long the calls that woke the process from a nap waited.");
	for (int i = 0; i < sc->n; i++)
		histogram(f, "cudanap_wake_seconds", &sc->v[i].counts.wake, sc->who[i]);
}

/* The node pager's state, when it runs (and its state file is root's). */
static const char *pager_state = CN_PAGER_STATE;

static void write_all(FILE *f, const struct scrape *sc)
{
	static struct cn_pagerstate ps;
	char more[64], why[600];

	help(f, "cudanap_build_info", "gauge", "1, with the version of cudanap that wrote this.");
	fprintf(f, "cudanap_build_info{version=\"%s\"} 1\n", CN_VERSION);
	help(f, "cudanap_process_state", "gauge",
	     "1 for the state the process is in under cudanap.");
	for (int i = 0; i < sc->n; i++) {
		snprintf(more, sizeof(more), "state=\"%s\"", cn_status_state(&sc->v[i]));
		sample(f, "cudanap_process_state", sc->who[i], more, 1);
	}
	gpu_memory(f, sc);
	copy_bytes(f, sc);
	per_process(
		f, sc, "cudanap_light_host_bytes",
		"GPU memory a light nap of the process holds in host memory, its context kept on "
		"the GPU; 0 when it is awake or napped fully.",
		light_bytes);
	per_process(f, sc, "cudanap_host_kept_bytes",
		    "Pinned host memory the process keeps for its next light nap ([nap] "
		    "keep_host_copy).",
		    kept_bytes);
	idle_seconds(f, sc);
	gpu_model(f, sc);
	counters(f, sc);
	histograms(f, sc);
	if (pager_read_state(pager_state, &ps, why, sizeof(why)) == 0)
		pager_metrics(f, &ps);
}

/* What the command line asks for. */
struct metrics_args {
	const char *cfg, *dir, *listen;
	bool argv; /* --command-line */
};

static void parse_args(int argc, char **argv, struct metrics_args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "textfile", required_argument, NULL, 't' },
		{ "listen", required_argument, NULL, 'l' },
		{ "command-line", no_argument, NULL, 'C' },
		{ "pager-state", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, ":c:t:l:p:h", opts, NULL)) != -1) {
		if (c == 'c')
			a->cfg = optarg;
		else if (c == 'p')
			pager_state = optarg;
		else if (c == 't')
			a->dir = optarg;
		else if (c == 'l')
			a->listen = optarg;
		else if (c == 'C')
			a->argv = true;
		else
			cli_die_option("metrics", argv, c);
	}
	if (optind < argc)
		cli_die_usage(
			"usage: cudanap metrics [-c FILE] [--textfile DIR | --listen ADDR:PORT] "
			"[--command-line] [--pager-state FILE]\n");
	if (a->dir && a->listen)
		cli_die_usage("cudanap: metrics: --textfile or --listen, not both\n");
}

/* The text of every process now, in *text (allocated, *len bytes); 0, or -1 out of memory. */
static int render(void *arg, char **text, size_t *len)
{
	const struct metrics_args *a = arg;
	struct scrape sc = { 0 };
	struct cn_status *v;
	struct timespec ts;
	FILE *f;

	sc.n = status_gather(a->cfg, &v);
	sc.v = v;
	sc.who = calloc((size_t)(sc.n ? sc.n : 1), sizeof(*sc.who));
	f = sc.who ? open_memstream(text, len) : NULL;
	if (!f) {
		free(v);
		free(sc.who);
		return -1;
	}
	for (int i = 0; i < sc.n; i++)
		who_of(&v[i], a->argv, sc.who[i], sizeof(sc.who[i]));
	clock_gettime(CLOCK_REALTIME, &ts);
	sc.now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	write_all(f, &sc);
	free(v);
	free(sc.who);
	return fclose(f) == 0 ? 0 : -1;
}

/* DIR/cudanap.prom replaced whole, with a temporary name node_exporter skips (it reads *.prom),
 * renamed over the file; 0, or 1 said. */
static int write_textfile(const char *dir, const char *text, size_t len)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd < 0 ? -errno : cn_safe_replace_mode(fd, "cudanap.prom", text, len, 0644);

	if (fd >= 0)
		close(fd);
	if (r < 0) {
		fprintf(stderr, "%s: --textfile %s: cannot write cudanap.prom: %s\n", cli_prog, dir,
			strerror(-r));
		return 1;
	}
	return 0;
}

int metrics_main(int argc, char **argv)
{
	struct metrics_args a = { 0 };
	char *text = NULL;
	size_t len = 0;
	int rc;

	parse_args(argc, argv, &a);
	if (a.listen)
		return serve_listen(a.listen, render, &a);
	if (render(&a, &text, &len) < 0) {
		fprintf(stderr, "%s: metrics: out of memory\n", cli_prog);
		return 1;
	}
	if (a.dir)
		rc = write_textfile(a.dir, text, len);
	else
		rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 1;
	free(text);
	return rc;
}
