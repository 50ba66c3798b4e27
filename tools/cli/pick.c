/* pick: cudanap pick, which processes to suspend to free GPU memory at the least cost, for a
 * scheduler choosing its victims (docs/FILES.md). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

#define MAX_EXACT 20 /* candidates tried in every combination; more are taken greedily */

const char cli_usage_pick[] =
	"usage: cudanap pick --free SIZE [--gpu N] [-c FILE] [--slurm JOBID] [--timeout S] "
	"[--json]\n"
	"\n"
	"Which processes to suspend to free at least SIZE of GPU memory on GPU N (nvidia-smi's\n"
	"index; default: the GPU where it costs least), at the least estimated suspend time in\n"
	"all. The candidates are the cudanap processes of this user (of every user, run as root;\n"
	"of Slurm job JOBID on this node with --slurm), each asked what a suspend would do now,\n"
	"as 'cudanap suspend --dry-run' does (all at once, waiting 5 s at most for the answers,\n"
	"as status does: one that has not answered is said so); only those that would suspend\n"
	"count. Prints the\n"
	"processes chosen, what each frees and its estimated time, the total, and the command\n"
	"that suspends them.\n"
	"\n"
	"  -f, --free SIZE     MiB, or with a unit: 512M, 8G (GiB), 1T\n"
	"  -g, --gpu N         the GPU, by nvidia-smi's index\n"
	"  -c, --config FILE   where to find the status files (as for suspend)\n"
	"  -S, --slurm JOBID   the processes of Slurm job JOBID on this node\n"
	"  -t, --timeout S     wait S seconds at most for the answers (default 5)\n"
	"  -j, --json          one JSON object: the GPU, the processes chosen, the totals, the "
	"command\n"
	"\n"
	"Exit status: 0 when SIZE can be freed, 1 when it cannot, 2 on usage errors.\n";

struct cand {
	int pid;
	double mib, est_s;
};

/* MiB on GPU k from "0:8712,1:0". */
static double on_gpu(const char *now, int k)
{
	int g;
	double mib;

	for (const char *p = now; *p && sscanf(p, "%d:%lf", &g, &mib) == 2;
	     p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
		if (g == k)
			return mib;
	return 0;
}

/* The cheapest set of c freeing need: a bit mask over c (exact up to MAX_EXACT, then greedy by
 * time per MiB); *cost its time; -1 when they cannot free it all. */
static long long cheapest(const struct cand *c, int n, double need, double *cost)
{
	long long best = -1;

	*cost = 0;
	if (n <= MAX_EXACT) {
		for (long long m = 1; m < (1ll << n); m++) {
			double mib = 0, t = 0;

			for (int i = 0; i < n; i++)
				if (m >> i & 1)
					mib += c[i].mib, t += c[i].est_s;
			if (mib >= need && (best < 0 || t < *cost))
				best = m, *cost = t;
		}
		return best;
	}
	{
		bool used[64] = { false };
		double mib = 0;

		best = 0;
		while (mib < need) {
			int k = -1;

			for (int i = 0; i < n && i < 64; i++)
				if (!used[i] &&
				    (k < 0 || c[i].est_s / c[i].mib < c[k].est_s / c[k].mib))
					k = i;
			if (k < 0)
				return -1;
			used[k] = true;
			best |= 1ll << k;
			mib += c[k].mib;
			*cost += c[k].est_s;
		}
	}
	return best;
}

/* SIZE in MiB: a number with an optional M, G or T (binary). -1 when it is not one. */
static double parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return -1;
	if (!strcasecmp(end, "") || !strcasecmp(end, "m") || !strcasecmp(end, "mib"))
		return v;
	if (!strcasecmp(end, "g") || !strcasecmp(end, "gib"))
		return v * 1024;
	if (!strcasecmp(end, "t") || !strcasecmp(end, "tib"))
		return v * 1024 * 1024;
	return -1;
}

static void print(const struct cand *c, int n, long long set, int gpu, double need, double cost,
		  bool json)
{
	char cmd[4096];
	size_t o = (size_t)snprintf(cmd, sizeof(cmd), "cudanap suspend");
	double mib = 0;
	bool first = true;

	if (json)
		printf("{\"gpu\":%d,\"free_mib\":%.0f,\"possible\":%s,\"processes\":[", gpu, need,
		       set >= 0 ? "true" : "false");
	for (int i = 0; set >= 0 && i < n; i++) {
		if (!(set >> i & 1))
			continue;
		mib += c[i].mib;
		o += (size_t)snprintf(cmd + o, o < sizeof(cmd) ? sizeof(cmd) - o : 0, " %d",
				      c[i].pid);
		if (json)
			printf("%s{\"pid\":%d,\"mib\":%.0f,\"est_s\":%.3f}", first ? "" : ",",
			       c[i].pid, c[i].mib, c[i].est_s);
		else
			printf("%d: frees %.0f MiB on GPU %d, about %.1f s\n", c[i].pid, c[i].mib,
			       gpu, c[i].est_s);
		first = false;
	}
	if (json) {
		printf("],\"total_mib\":%.0f,\"total_s\":%.3f,\"command\":\"%s\"}\n", mib, cost,
		       set >= 0 ? cmd : "");
		return;
	}
	if (set < 0) {
		printf("cannot free %.0f MiB on GPU %d: the processes that would suspend hold "
		       "less\n",
		       need, gpu);
		return;
	}
	printf("total: %.0f MiB freed on GPU %d in about %.1f s\n%s\n", mib, gpu, cost, cmd);
}

/* The processes on the GPU that would not suspend, and why: one line each. */
static void refusals(struct job *jobs, int n, int gpu)
{
	for (int i = 0; i < n; i++) {
		char line[700];

		if (on_gpu(jobs[i].st.gpu_now, gpu) > 0 && !ask_line(&jobs[i], line, sizeof(line)))
			printf("%s\n", line);
	}
}

/* What the command line of cudanap pick asks for. */
struct pick_args {
	const char *cfg, *slurm;
	double need; /* MiB to free */
	int gpu;     /* -1: any */
	bool json;
	double timeout; /* for the answers */
};

/* The cheapest set found: on which GPU, of which candidates, at what cost; set -1 when none frees
 * enough. */
struct pick_best {
	int gpu, m;
	long long set;
	double cost;
	struct cand cs[64];
};

static void parse_args(struct pick_args *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "free", required_argument, NULL, 'f' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "config", required_argument, NULL, 'c' },
		{ "slurm", optional_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, ":f:g:c:S::jt:h", opts, NULL)) != -1) {
		if (c == 'f') {
			if ((a->need = parse_size(optarg)) < 0)
				cli_die_usage("cudanap: --free wants a size: 512M, 8G, or MiB\n");
		} else if (c == 'g') {
			if ((a->gpu = cli_parse_pid(optarg)) < 0 && strcmp(optarg, "0") != 0)
				cli_die_usage("cudanap: --gpu wants an nvidia-smi index\n");
			a->gpu = atoi(optarg);
		} else if (c == 'c') {
			a->cfg = optarg;
		} else if (c == 'S') {
			if (!(a->slurm = cli_flag_value(argc, argv)))
				cli_die_usage("cudanap: --slurm wants a job id\n");
		} else if (c == 'j') {
			a->json = true;
		} else if (c == 't') {
			a->timeout = strtod(optarg, &end);
			if (!(a->timeout > 0) || *end)
				cli_die_usage(
					"cudanap: --timeout wants a number of seconds above 0\n");
		} else {
			cli_die_option("pick", argv, c);
		}
	}
	if (a->need < 0 || optind < argc)
		cli_die_usage("usage: cudanap pick --free SIZE [--gpu N] [-c FILE] [--slurm JOBID] "
			      "[--timeout S] [--json]\n");
}

/* The candidates (the Slurm job's processes, or every one), 64 at most, each asked what a suspend
 * would do; their number, or -1 (said when Slurm did not answer). */
static int ask_candidates(const struct pick_args *a, struct job **out)
{
	int n, *pids = NULL;
	struct job *jobs;

	procs_all_users(geteuid() == 0);
	if (a->slurm) {
		char note[300];
		int *job_pids, k = slurm_job_pids(a->slurm, &job_pids, note, sizeof(note));

		if (k < 0) {
			fprintf(stderr, "%s: %s\n", cli_prog, note);
			return -1;
		}
		n = procs_select(a->cfg, NULL, 0, job_pids, k, &pids);
		free(job_pids);
	} else {
		n = procs_select(a->cfg, NULL, 0, NULL, 0, &pids);
	}
	if (n > 64)
		n = 64;
	jobs = calloc((size_t)(n > 0 ? n : 1), sizeof(*jobs));
	if (!jobs || n < 0)
		return -1;
	for (int i = 0; i < n; i++)
		jobs[i].pid = pids[i];
	free(pids);
	ask_all(jobs, n, a->cfg, a->timeout);
	*out = jobs;
	return n;
}

/* The processes that would suspend and hold memory on GPU k; their number. */
static int candidates_on(struct job *jobs, int n, int k, struct cand *cs)
{
	int m = 0;

	for (int i = 0; i < n; i++) {
		char line[700];
		double mib = on_gpu(jobs[i].st.gpu_now, k);

		if (ask_line(&jobs[i], line, sizeof(line)) &&
		    jobs[i].st.suspendable == CN_ASK_YES && mib > 0)
			cs[m++] = (struct cand){ jobs[i].pid, mib, jobs[i].st.est_suspend_s };
	}
	return m;
}

/* Each GPU asked for (or every one), its cheapest set; the cheapest of those. */
static void cheapest_of_gpus(const struct pick_args *a, struct job *jobs, int n,
			     struct pick_best *b)
{
	int gpu = a->gpu;
	struct cand cs[64];

	*b = (struct pick_best){ .gpu = -1, .set = -1 };
	for (int k = gpu >= 0 ? gpu : 0; k < (gpu >= 0 ? gpu + 1 : CN_MAX_GPUS); k++) {
		int m = candidates_on(jobs, n, k, cs);
		double cost;
		long long set;

		if (!m && gpu < 0)
			continue;
		set = cheapest(cs, m, a->need, &cost);
		if (b->gpu < 0 || (set >= 0 && (b->set < 0 || cost < b->cost))) {
			b->gpu = k;
			b->set = set;
			b->cost = cost;
			b->m = m;
			memcpy(b->cs, cs, sizeof(cs[0]) * (size_t)m);
		}
	}
	b->gpu = b->gpu >= 0 ? b->gpu : gpu >= 0 ? gpu : 0;
}

int pick_main(int argc, char **argv)
{
	struct pick_args a = { .need = -1, .gpu = -1, .timeout = ASK_WAIT_S };
	struct pick_best b;
	struct job *jobs;
	int n;

	parse_args(&a, argc, argv);
	if ((n = ask_candidates(&a, &jobs)) < 0)
		return 1;
	cheapest_of_gpus(&a, jobs, n, &b);
	if (!a.json) /* first: the last line stays the command */
		refusals(jobs, n, b.gpu);
	print(b.cs, b.m, b.set, b.gpu, a.need, b.cost, a.json);
	free(jobs);
	return b.set >= 0 ? 0 : 1;
}
