/* check: cudanap check-config, which validates an INI without running anything and says every
 * error in it: a job's INI, or the node pager's policy (pager.ini: [pager], [user NAME],
 * [group NAME]). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cn_dirs.h"
#include "cn_pagerconf.h"

const char cli_usage_check[] =
	"usage: cudanap check-config [--json] FILE\n"
	"\n"
	"Parse and validate FILE as a job INI, and the status directory it names as a\n"
	"program's start would; or as the node pager's policy when its first section is\n"
	"[pager], [user NAME] or [group NAME] (/etc/cudanap/pager.ini). Prints 'FILE: ok'\n"
	"and exits 0, or one line per error, 'FILE:LINE: section.key: reason', with the key\n"
	"or section meant where a name is misspelt ('did you mean idle_s?'), and exits 78.\n"
	"\n"
	"  -j, --json   one JSON object on stdout instead: {\"file\", \"kind\" (job or policy),\n"
	"               \"ok\", \"errors\": [{\"line\", \"section\", \"key\", \"message\", "
	"\"hint\"},\n"
	"               ...], \"more\"} (line null: the file as a whole; more: errors beyond\n"
	"               those listed)\n";

/* Whether the file's first section is one of the node pager's policy. */
static bool a_policy(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "re");
	bool policy = false;

	while (f && fgets(line, sizeof(line), f)) {
		const char *s = line + strspn(line, " \t");

		if (*s != '[')
			continue;
		policy = strncmp(s, "[pager]", 7) == 0 || strncmp(s, "[user ", 6) == 0 ||
			 strncmp(s, "[group ", 7) == 0;
		break;
	}
	if (f)
		fclose(f);
	return policy;
}

/* One error as a JSON object; line 0 is the file as a whole. */
static void print_error_json(const struct cn_ini_error *e, bool first)
{
	printf("%s{\"line\":", first ? "" : ",");
	if (e->line)
		printf("%d", e->line);
	else
		printf("null");
	printf(",\"section\":");
	cli_print_json_str(stdout, e->section);
	printf(",\"key\":");
	cli_print_json_str(stdout, e->key);
	printf(",\"message\":");
	cli_print_json_str(stdout, e->msg);
	printf(",\"hint\":");
	cli_print_json_str(stdout, e->hint);
	printf("}");
}

static void print_json(const char *path, bool policy, const struct cn_ini_errors *e)
{
	printf("{\"file\":");
	cli_print_json_str(stdout, path);
	printf(",\"kind\":\"%s\",\"ok\":%s,\"errors\":[", policy ? "policy" : "job",
	       e->n ? "false" : "true");
	for (unsigned i = 0; i < e->n; i++)
		print_error_json(&e->at[i], i == 0);
	printf("],\"more\":%u}\n", e->more);
}

static const char *parse_args(int argc, char **argv, bool *json)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, ":jh", opts, NULL)) != -1) {
		if (c == 'j')
			*json = true;
		else
			cli_die_option("check-config", argv, c);
	}
	if (optind != argc - 1) {
		fprintf(stderr,
			"%s check-config: give one INI file; see '%s check-config --help'\n",
			cli_prog, cli_prog);
		exit(2);
	}
	return argv[optind];
}

/* The job INI's errors into e, its status directory's too: the preload checks it at each start,
 * so check-config says now what a start will. */
static void check_job(const char *path, struct cn_ini_errors *e)
{
	struct cn_config c;
	char why[CN_ERR_LEN];

	if (cn_config_check(&c, path, e) == 0 &&
	    cn_dirs_status_check(c.status_dir, why, sizeof(why)) < 0) {
		e->at[0] = (struct cn_ini_error){ .section = "status", .key = "dir" };
		snprintf(e->at[0].msg, sizeof(e->at[0].msg), "%s", why);
		e->n = 1;
	}
}

/* The policy's line when it is good: what it comes to. */
static void say_policy(const char *path, const struct cn_pagerconf *p)
{
	int users = 0, groups = 0;

	for (int i = 0; i < p->n_rules; i++)
		groups += p->rules[i].group, users += !p->rules[i].group;
	printf("%s: ok (the node pager's policy: every other user's share %u %%, %d user and %d "
	       "group sections, min_idle_s %u, when_full %s",
	       path, p->dflt.share_pct, users, groups, p->min_idle_s, p->wait ? "wait" : "fail");
	if (p->wait)
		printf(" %u s", p->wait_s);
	printf(")\n");
}

int check_main(int argc, char **argv)
{
	static struct cn_ini_errors e;
	static struct cn_pagerconf p;
	bool json = false;
	const char *path = parse_args(argc, argv, &json);
	bool policy = a_policy(path);

	if (policy)
		cn_pagerconf_check(&p, path, &e);
	else
		check_job(path, &e);
	if (json)
		print_json(path, policy, &e);
	else if (e.n)
		cli_say_config_errors(path, &e);
	else if (policy)
		say_policy(path, &p);
	else
		printf("%s: ok\n", path);
	return e.n ? 78 : 0;
}
