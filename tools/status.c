/* status: cudanap status, a table or JSON of the cudanap processes of this user, or of a Slurm
 * job on this node, read from their status files. It removes the files of processes gone. */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

int cmd_status(int argc, char **argv)
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
