/* cli: the helpers every command of the cudanap CLI shares: the program's name, usage errors,
 * loading an INI or dying of it, times, pids and small files. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cn_json.h"

const char *cli_prog = "cudanap";

void cli_die_usage(const char *text)
{
	fputs(text, stderr);
	exit(2);
}

void cli_die_option(const char *verb, char **argv, int c)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		fprintf(stderr, "%s %s: %s needs a value; see '%s %s --help'\n", cli_prog, verb,
			arg, cli_prog, verb);
	else if (optopt && strncmp(arg, "--", 2) != 0)
		fprintf(stderr, "%s %s: unknown option '-%c'; see '%s %s --help'\n", cli_prog, verb,
			optopt, cli_prog, verb);
	else
		fprintf(stderr, "%s %s: unknown option '%s'; see '%s %s --help'\n", cli_prog, verb,
			arg, cli_prog, verb);
	exit(2);
}

const char *cli_flag_value(int argc, char **argv)
{
	if (optarg)
		return optarg;
	if (optind < argc && argv[optind][0] != '-')
		return argv[optind++];
	return NULL;
}

void cli_say_config_errors(const char *path, const struct cn_ini_errors *e)
{
	for (unsigned i = 0; i < e->n; i++)
		if (e->at[i].line)
			fprintf(stderr, "%s: %s:%d: %s\n", cli_prog, path, e->at[i].line,
				e->at[i].msg);
		else
			fprintf(stderr, "%s: %s: %s\n", cli_prog, path, e->at[i].msg);
	if (e->more)
		fprintf(stderr, "%s: %s: %u more error%s after these, not shown\n", cli_prog, path,
			e->more, e->more == 1 ? "" : "s");
}

void cli_load_config(const char *path, struct cn_config *c)
{
	static struct cn_ini_errors e;

	if (cn_config_check(c, path, &e) < 0) {
		cli_say_config_errors(path, &e);
		exit(78);
	}
}

void cli_print_json_str(FILE *f, const char *s)
{
	char clean[4096], json[6 * sizeof(clean) + 3];

	/* what the file said, as a terminal or a JSON parser may take it */
	cn_status_text(clean, sizeof(clean), s);
	fputs(cn_json_str(json, sizeof(json), clean) > 0 ? json : "\"\"", f);
}

void cli_fmt_ms(double ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms < 1000)
		snprintf(buf, len, "%.1f ms", ms);
	else
		snprintf(buf, len, "%.2f s", ms / 1000);
}

void cli_gpu_indices(const char *list, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (const char *p = list; *p && o + 1 < len; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
		o += (size_t)snprintf(out + o, len - o, "%s%.*s", o ? "," : "",
				      (int)strcspn(p, "="), p);
}

double cli_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cli_parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && !*end && v > 0 && v < INT_MAX) ? (int)v : -1;
}

int cli_read_file(const char *path, char *buf, size_t len)
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

int cli_find_file(const char *in_build, const char *rel_dir, const char *name, const char *abs,
		  char *out, size_t len)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		*slash = '\0';
		snprintf(out, len, "%s/%s", exe, in_build);
		if (access(out, R_OK) == 0)
			return 0;
		if (rel_dir[0]) {
			snprintf(out, len, "%s/%s/%s", exe, rel_dir, name);
			if (access(out, R_OK) == 0)
				return 0;
		}
	}
	snprintf(out, len, "%s", abs);
	return access(out, R_OK);
}

int cli_job_json(const struct job *j, char *out, size_t len)
{
	char line[sizeof(j->line) * 6 + 3], st[CN_STATUS_MAX];
	int n;

	if (cn_json_str(line, sizeof(line), j->line) < 0)
		snprintf(line, sizeof(line), "\"\"");
	if (!j->have_st || cn_status_format(&j->st, st, sizeof(st)) < 0)
		snprintf(st, sizeof(st), "null");
	st[strcspn(st, "\n")] = '\0';
	n = snprintf(out, len,
		     "{\"pid\":%d,\"ok\":%s,\"outcome\":\"%s\",\"line\":%s,\"status\":%s}", j->pid,
		     j->ok ? "true" : "false", j->outcome ? j->outcome : "", line, st);
	return n >= 0 && (size_t)n < len ? 0 : -1;
}
