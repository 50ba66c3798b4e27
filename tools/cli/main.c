/* cudanap: the command line; this file parses the command and hands it to the file that does it
 * (docs/FILES.md). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cn_near.h"

#define N_COMMANDS 11

static const char cli_usage_main[] =
	"usage: cudanap COMMAND [OPTIONS] [ARGS]\n"
	"\n"
	"Put a running CUDA program to sleep and wake it up: its GPU memory moves to host memory,\n"
	"the GPU is freed, and on resume every byte goes back.\n"
	"\n"
	"Commands:\n"
	"  run [-c FILE] [--nap N] -- CMD ... start CMD under cudanap (napping when idle N s)\n"
	"  suspend [OPTIONS] PID...           checkpoint the processes' CUDA state, free the GPU\n"
	"  resume [OPTIONS] PID...            restore it and let the processes run on\n"
	"  prepare [OPTIONS] PID...           notice of a suspend: fault its host copy in ahead\n"
	"  nap [OPTIONS] PID...               suspend now, wake by itself at its next CUDA call\n"
	"  status [-c FILE] [--json] [PID...] show every cudanap process of this user\n"
	"  suspend --dry-run PID...           what a suspend would do now, changing nothing\n"
	"  pick --free SIZE [--gpu N]         which processes to suspend to free SIZE, cheapest\n"
	"  metrics [--json|--textfile DIR]    the processes\' figures for Prometheus\n"
	"  kernel install|list|remove         Jupyter kernels that nap when idle\n"
	"  pager status [--json]              what the node pager did, per user and GPU\n"
	"  check-config [--json] FILE         validate a job INI or the node pager's policy\n"
	"  help [COMMAND]                     this text, or the details of COMMAND\n"
	"  --version                          print cudanap's version\n"
	"\n"
	"Run 'cudanap help COMMAND' or 'cudanap COMMAND --help' for the details of each; 'man\n"
	"cudanap' and 'man cudanap.ini' for all of it. cudanap " CN_VERSION "\n";

static bool want_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

/* A command that is none of ours, with the one meant where it is near one. */
static void unknown(const char *cmd, const char *const *names)
{
	int near = cn_near_best(cmd, names, N_COMMANDS);

	if (near >= 0)
		fprintf(stderr, "%s: unknown command '%s'; did you mean '%s'? See 'cudanap help'\n",
			cli_prog, cmd, names[near]);
	else
		fprintf(stderr, "%s: unknown command '%s'; see 'cudanap help'\n", cli_prog, cmd);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name, *usage;
		int (*fn)(int, char **);
		enum verb verb;	  /* when fn is NULL */
		const char *more; /* said after usage */
	} cmds[] = {
		{ "run", cli_usage_run, run_main, 0, NULL },
		{ "suspend", cli_usage_suspend, NULL, VERB_SUSPEND, NULL },
		{ "resume", cli_usage_suspend, NULL, VERB_RESUME, NULL },
		{ "prepare", cli_usage_prepare, NULL, VERB_PREPARE, NULL },
		{ "nap", cli_usage_nap, NULL, VERB_NAP, NULL },
		{ "status", cli_usage_status, status_main, 0, NULL },
		{ "pick", cli_usage_pick, pick_main, 0, NULL },
		{ "check-config", cli_usage_check, check_main, 0, NULL },
		{ "metrics", cli_usage_metrics, promjson_main, 0, cli_usage_metrics_json },
		{ "kernel", cli_usage_kernel, kernel_main, 0, NULL },
		{ "pager", cli_usage_pager, pager_main, 0, NULL },
	};

	const char *names[N_COMMANDS];

	_Static_assert(sizeof(cmds) / sizeof(cmds[0]) == N_COMMANDS, "one name per command");

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		names[i] = cmds[i].name;
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    (strcmp(argv[1], "help") == 0 && argc == 2)) {
		fputs(cli_usage_main, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("cudanap %s\n", CN_VERSION);
		return 0;
	}
	/* cudanap help COMMAND */
	if (strcmp(argv[1], "help") == 0) {
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (strcmp(argv[2], cmds[i].name) == 0) {
				fputs(cmds[i].usage, stdout);
				fputs(cmds[i].more ? cmds[i].more : "", stdout);
				return 0;
			}
		unknown(argv[2], names);
		return 2;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		if (want_help(argc - 1, argv + 1)) {
			fputs(cmds[i].usage, stdout);
			fputs(cmds[i].more ? cmds[i].more : "", stdout);
			return 0;
		}
		if (!cmds[i].fn)
			return act_main(argc - 1, argv + 1, cmds[i].verb);
		return cmds[i].fn(argc - 1, argv + 1);
	}
	unknown(argv[1], names);
	return 2;
}
