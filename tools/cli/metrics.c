/* metrics: cudanap metrics, the status files of this user's processes (root: everyone's) in
 * Prometheus' text format, on stdout or, with --textfile DIR, replaced atomically in
 * DIR/cudanap.prom for node_exporter's textfile collector. It reads status files only: it sends
 * no signal. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cn_outcome.h"
#include "cn_safe.h"

const char usage_metrics[] =
	"usage: cudanap metrics [-c FILE] [--textfile DIR]\n"
	"\n"
	"Print the cudanap processes of this user (root: of every user) in Prometheus' text\n"
	"format, from their status files (no process is asked anything):\n"
	"  cudanap_process_state{pid,state}         1, for the state it is in\n"
	"  cudanap_gpu_memory_bytes{pid,gpu,UUID,state=held|released}\n"
	"                                            GPU memory it holds on each GPU (as last\n"
	"                                            asked), or gave back while it sleeps\n"
	"  cudanap_released_byte_seconds_total{pid}  GPU memory given back times the seconds it\n"
	"                                            stayed given back, since the process started\n"
	"  cudanap_naps_total{pid}, cudanap_wakes_total{pid}\n"
	"  cudanap_wake_seconds{pid}                 the delay the last waking call saw\n"
	"gpu and UUID are the labels dcgm-exporter gives a GPU: nvidia-smi's index and its UUID.\n"
	"\n"
	"  -c, --config FILE     where to find the status files (default: each process's own)\n"
	"  -t, --textfile DIR    write DIR/cudanap.prom instead, replaced atomically (mode 0644),\n"
	"                        for node_exporter's --collector.textfile.directory\n"
	"\n"
	"Exit status: 0, 1 if DIR cannot be written, 2 on usage errors.\n";

/* One sample line: name{labels} value. */
static void sample(FILE *f, const char *name, const char *labels, double v)
{
	fprintf(f, "%s{%s} %.10g\n", name, labels, v);
}

static void help(FILE *f, const char *name, const char *type, const char *text)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
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
 * NULL). The bytes. */
static double memory(FILE *f, const struct cn_status *s, const char *list, const char *state)
{
	double total = 0;

	for (const char *p = list; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL) {
		int k;
		double mib;
		char uuid[64], labels[160];

		if (sscanf(p, "%d:%lf", &k, &mib) != 2 || k < 0)
			continue;
		uuid_of(s->gpus, k, uuid, sizeof(uuid));
		snprintf(labels, sizeof(labels), "pid=\"%d\",gpu=\"%d\",UUID=\"%s\",state=\"%s\"",
			 s->pid, k, uuid, state);
		if (f)
			sample(f, "cudanap_gpu_memory_bytes", labels, mib * 1048576);
		total += mib * 1048576;
	}
	return total;
}

static void write_all(FILE *f, const struct cn_status *v, int n)
{
	struct timespec ts;
	double now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	help(f, "cudanap_process_state", "gauge",
	     "1 for the state the process is in under cudanap.");
	for (int i = 0; i < n; i++) {
		char labels[96];

		snprintf(labels, sizeof(labels), "pid=\"%d\",state=\"%s\"", v[i].pid,
			 cn_status_state(&v[i]));
		sample(f, "cudanap_process_state", labels, 1);
	}
	help(f, "cudanap_gpu_memory_bytes", "gauge",
	     "GPU memory of the process on each GPU: held there (as last asked), or released "
	     "into host memory while it sleeps.");
	for (int i = 0; i < n; i++)
		if (v[i].state == CN_STATE_CHECKPOINTED)
			memory(f, &v[i], v[i].released_gpus, "released");
		else
			memory(f, &v[i], v[i].gpu_now, "held");
	help(f, "cudanap_released_byte_seconds_total", "counter",
	     "GPU memory the process gave back times the seconds it stayed given back.");
	for (int i = 0; i < n; i++) {
		char labels[32];
		double total = v[i].released_byte_s > 0 ? v[i].released_byte_s : 0;

		/* Asleep now: the release under way counts up to now. */
		if (v[i].released_since >= 0 && now > v[i].released_since)
			total += memory(NULL, &v[i], v[i].released_gpus, "released") *
				 (now - v[i].released_since);
		snprintf(labels, sizeof(labels), "pid=\"%d\"", v[i].pid);
		sample(f, "cudanap_released_byte_seconds_total", labels, total);
	}
	help(f, "cudanap_naps_total", "counter", "Naps the process took.");
	for (int i = 0; i < n; i++) {
		char labels[32];

		snprintf(labels, sizeof(labels), "pid=\"%d\"", v[i].pid);
		sample(f, "cudanap_naps_total", labels, (double)v[i].naps);
	}
	help(f, "cudanap_wakes_total", "counter", "Wakes of the process from its naps.");
	for (int i = 0; i < n; i++) {
		char labels[32];

		snprintf(labels, sizeof(labels), "pid=\"%d\"", v[i].pid);
		sample(f, "cudanap_wakes_total", labels, (double)v[i].wakes);
	}
	help(f, "cudanap_wake_seconds", "gauge",
	     "The delay the last call that woke the process from a nap saw.");
	for (int i = 0; i < n; i++) {
		char labels[32];

		if (v[i].last_wake_ms < 0)
			continue;
		snprintf(labels, sizeof(labels), "pid=\"%d\"", v[i].pid);
		sample(f, "cudanap_wake_seconds", labels, v[i].last_wake_ms / 1000);
	}
}

int metrics_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "textfile", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cfg = NULL, *dir = NULL;
	struct cn_status *v;
	char *text = NULL;
	size_t len = 0;
	int c, n, fd, r;
	FILE *f;

	while ((c = getopt_long(argc, argv, ":c:t:h", opts, NULL)) != -1) {
		if (c == 'c')
			cfg = optarg;
		else if (c == 't')
			dir = optarg;
		else
			cli_die_option("metrics", argv, c);
	}
	if (optind < argc)
		cli_die_usage("usage: cudanap metrics [-c FILE] [--textfile DIR]\n");
	n = status_gather(cfg, &v);
	if (!dir) {
		write_all(stdout, v, n);
		free(v);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		free(v);
		return 1;
	}
	write_all(f, v, n);
	free(v);
	fclose(f);
	/* A temporary name node_exporter skips (it reads *.prom), renamed over the file. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd < 0 ? -errno : cn_safe_replace_mode(fd, "cudanap.prom", text, len, 0644);
	if (fd >= 0)
		close(fd);
	free(text);
	if (r < 0) {
		fprintf(stderr, "%s: --textfile %s: cannot write cudanap.prom: %s\n", prog, dir,
			strerror(-r));
		return 1;
	}
	return 0;
}
