/* check: cudanap check-config, which validates an INI without running anything: a job's INI, or
 * the node pager's policy (pager.ini: its sections are [pager], [user NAME], [group NAME]). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cn_dirs.h"
#include "cn_pagerconf.h"

const char cli_usage_check[] =
	"usage: cudanap check-config FILE\n"
	"\n"
	"Parse and validate FILE as a job INI, or as the node pager's policy when its first\n"
	"section is [pager], [user NAME] or [group NAME] (/etc/cudanap/pager.ini). Prints\n"
	"'FILE: ok' and exits 0, or prints 'FILE:LINE: section.key: reason' and exits 78.\n";

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

static int check_policy(const char *path)
{
	static struct cn_pagerconf p;
	char err[CN_ERR_LEN];
	int users = 0, groups = 0;

	if (cn_pagerconf_load(&p, path, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", cli_prog, err);
		return 78;
	}
	for (int i = 0; i < p.n_rules; i++)
		groups += p.rules[i].group, users += !p.rules[i].group;
	printf("%s: ok (the node pager's policy: every other user's share %u %%, %d user and %d "
	       "group sections, min_idle_s %u, when_full %s",
	       path, p.dflt.share_pct, users, groups, p.min_idle_s, p.wait ? "wait" : "fail");
	if (p.wait)
		printf(" %u s", p.wait_s);
	printf(")\n");
	return 0;
}

int check_main(int argc, char **argv)
{
	char err[CN_ERR_LEN];
	struct cn_config c;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr,
			"%s check-config: give one INI file; see '%s check-config --help'\n",
			cli_prog, cli_prog);
		return 2;
	}
	if (a_policy(argv[1]))
		return check_policy(argv[1]);
	cli_load_config(argv[1], &c);
	/* The status dir is checked by each process's preload at its start: say now what it will.
	 */
	if (cn_dirs_status_check(c.status_dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s: %s\n", cli_prog, argv[1], err);
		return 78;
	}
	printf("%s: ok\n", argv[1]);
	return 0;
}
