/* metrics: cudanap metrics, the status files of this user's processes (root: everyone's) in
 * Prometheus' text format (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
	"usage: cudanap metrics [-c FILE] [--textfile DIR] [--pager-state FILE]\n"
	"\n"
	"Print the cudanap processes of this user (root: of every user) in Prometheus' text\n"
	"format, from their status files (no process is asked anything). Every series has the\n"
	"labels pid, user, slurm_job (Slurm's job id from the process's cgroup, \"\" outside\n"
	"Slurm) and command:\n"
	"  cudanap_process_state{state}      1, for its state: running, locked, checkpointed,\n"
	"                                    napping, failed or no-cuda\n"
	"  cudanap_gpu_memory_bytes{gpu,UUID,state=held|released}\n"
	"                                    GPU memory it holds on each GPU (as last asked), or\n"
	"                                    gave back while it sleeps\n"
	"  cudanap_light_host_bytes          what a light nap holds in host memory, its context\n"
	"                                    kept on the GPU ([nap] depth); 0 otherwise\n"
	"  cudanap_host_kept_bytes           pinned host memory it keeps for its next light nap\n"
	"                                    ([nap] keep_host_copy)\n"
	"  cudanap_released_byte_seconds_total\n"
	"                                    GPU memory given back times the seconds it stayed\n"
	"                                    given back, since the process started\n"
	"  cudanap_actions_total{action,result}\n"
	"                                    its suspends, resumes, naps, wakes and prepares that\n"
	"                                    ended, by result (ok, or the failure's name)\n"
	"  cudanap_suspend_seconds           histogram: its suspends and naps that succeeded\n"
	"  cudanap_resume_seconds            histogram: its resumes and wakes that succeeded\n"
	"  cudanap_wake_seconds              histogram: what the calls that woke it waited\n"
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
	"  --pager-state FILE    the node pager's state file (default " CN_PAGER_STATE ")\n"
	"\n"
	"Exit status: 0, 1 if DIR cannot be written, 2 on usage errors.\n";

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

static void who_of(const struct cn_status *s, char *out, size_t len)
{
	char user[128], job[24], cmd[sizeof(s->command) * 2], e[sizeof(user) * 2];

	user_of(s->pid, user, sizeof(user));
	job_of(s->pid, job, sizeof(job));
	escaped(s->command, cmd, sizeof(cmd));
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

/* The node pager's state, when it runs (and its state file is root's). */
static const char *pager_state = CN_PAGER_STATE;

static void write_all(FILE *f, const struct cn_status *v, int n, char (*who)[WHO_LEN])
{
	static struct cn_pagerstate ps;
	char why[600];
	struct timespec ts;
	double now;
	char more[64];

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	help(f, "cudanap_process_state", "gauge",
	     "1 for the state the process is in under cudanap.");
	for (int i = 0; i < n; i++) {
		snprintf(more, sizeof(more), "state=\"%s\"", cn_status_state(&v[i]));
		sample(f, "cudanap_process_state", who[i], more, 1);
	}
	help(f, "cudanap_gpu_memory_bytes", "gauge",
	     "GPU memory of the process on each GPU: held there (as last asked), or released "
	     "into host memory while it sleeps.");
	for (int i = 0; i < n; i++)
		if (v[i].state == CN_STATE_CHECKPOINTED)
			memory(f, &v[i], who[i], v[i].released_gpus, "released");
		else
			memory(f, &v[i], who[i], v[i].gpu_now, "held");
	help(f, "cudanap_light_host_bytes", "gauge",
	     "GPU memory a light nap of the process holds in host memory, its context kept on the "
	     "GPU; 0 when it is awake or napped fully.");
	for (int i = 0; i < n; i++)
		sample(f, "cudanap_light_host_bytes", who[i], "",
		       cn_status_state_of(&v[i]) == CN_STATE_NAPPING && v[i].light_mib > 0 &&
				       v[i].nap_depth == CN_DEPTH_LIGHT
			       ? v[i].light_mib * 1048576
			       : 0);
	help(f, "cudanap_host_kept_bytes", "gauge",
	     "Pinned host memory the process keeps for its next light nap ([nap] keep_host_copy).");
	for (int i = 0; i < n; i++)
		sample(f, "cudanap_host_kept_bytes", who[i], "",
		       v[i].host_kept_mib > 0 ? v[i].host_kept_mib * 1048576 : 0);
	help(f, "cudanap_naps_full_total", "counter",
	     "Naps made full by [nap] depth = auto: its light copy over [memory] host_cache, or a "
	     "GPU "
	     "in an exclusive compute mode.");
	for (int i = 0; i < n; i++) {
		sample(f, "cudanap_naps_full_total", who[i], "why=\"host cache\"",
		       (double)v[i].naps_full_host);
		sample(f, "cudanap_naps_full_total", who[i], "why=\"exclusive\"",
		       (double)v[i].naps_full_exclusive);
	}
	help(f, "cudanap_released_byte_seconds_total", "counter",
	     "GPU memory the process gave back times the seconds it stayed given back.");
	for (int i = 0; i < n; i++)
		sample(f, "cudanap_released_byte_seconds_total", who[i], "",
		       released_byte_s(&v[i], now));
	help(f, "cudanap_actions_total", "counter",
	     "Suspends, resumes, naps, wakes and prepares of the process that ended, by result.");
	for (int i = 0; i < n; i++)
		actions(f, &v[i], who[i]);
	help(f, "cudanap_suspend_seconds", "histogram",
	     "How long the process's suspends and naps that succeeded took.");
	for (int i = 0; i < n; i++)
		histogram(f, "cudanap_suspend_seconds", &v[i].counts.suspend, who[i]);
	help(f, "cudanap_resume_seconds", "histogram",
	     "How long the process's resumes and wakes that succeeded took.");
	for (int i = 0; i < n; i++)
		histogram(f, "cudanap_resume_seconds", &v[i].counts.resume, who[i]);
	help(f, "cudanap_wake_seconds", "histogram",
	     "How long the calls that woke the process from a nap waited.");
	for (int i = 0; i < n; i++)
		histogram(f, "cudanap_wake_seconds", &v[i].counts.wake, who[i]);
	if (pager_read_state(pager_state, &ps, why, sizeof(why)) == 0)
		pager_metrics(f, &ps);
}

/* -c FILE and --textfile DIR, each left NULL when not given. */
static void parse_args(int argc, char **argv, const char **cfg, const char **dir)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "textfile", required_argument, NULL, 't' },
		{ "pager-state", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, ":c:t:p:h", opts, NULL)) != -1) {
		if (c == 'c')
			*cfg = optarg;
		else if (c == 'p')
			pager_state = optarg;
		else if (c == 't')
			*dir = optarg;
		else
			cli_die_option("metrics", argv, c);
	}
	if (optind < argc)
		cli_die_usage(
			"usage: cudanap metrics [-c FILE] [--textfile DIR] [--pager-state FILE]\n");
}

/* DIR/cudanap.prom replaced whole; 0, or 1 said. The rows are freed. */
static int write_textfile(const char *dir, struct cn_status *v, int n, char (*who)[WHO_LEN])
{
	char *text = NULL;
	size_t len = 0;
	int fd, r;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f) {
		free(v);
		free(who);
		return 1;
	}
	write_all(f, v, n, who);
	free(v);
	free(who);
	fclose(f);
	/* A temporary name node_exporter skips (it reads *.prom), renamed over the file. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd < 0 ? -errno : cn_safe_replace_mode(fd, "cudanap.prom", text, len, 0644);
	if (fd >= 0)
		close(fd);
	free(text);
	if (r < 0) {
		fprintf(stderr, "%s: --textfile %s: cannot write cudanap.prom: %s\n", cli_prog, dir,
			strerror(-r));
		return 1;
	}
	return 0;
}

int metrics_main(int argc, char **argv)
{
	const char *cfg = NULL, *dir = NULL;
	struct cn_status *v;
	char(*who)[WHO_LEN];
	int n;

	parse_args(argc, argv, &cfg, &dir);
	n = status_gather(cfg, &v);
	who = calloc((size_t)(n ? n : 1), sizeof(*who));
	if (!who) {
		free(v);
		return 1;
	}
	for (int i = 0; i < n; i++)
		who_of(&v[i], who[i], sizeof(who[i]));
	if (dir)
		return write_textfile(dir, v, n, who);
	write_all(stdout, v, n, who);
	free(v);
	free(who);
	return fflush(stdout) == 0 ? 0 : 1;
}
