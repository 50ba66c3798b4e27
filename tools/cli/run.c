/* run: cudanap run, which starts a command with the preload and the job's INI in its
 * environment. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cn_ncclenv.h"

const char cli_usage_run[] =
	"usage: cudanap run [-c FILE] [--nap N] [--make-room] [--] CMD [ARG...]\n"
	"\n"
	"Run CMD with libcudanap.so preloaded: LD_PRELOAD gets the library appended (an existing\n"
	"LD_PRELOAD is kept; a libnccl in it goes after the library, whose NCCL calls must come\n"
	"first) and CUDANAP_CONFIG is set to FILE's absolute path. CMD then answers\n"
	"the suspend and resume signals of FILE (SIGUSR1 and SIGUSR2 by default). FILE is checked\n"
	"before CMD starts.\n"
	"\n"
	"  -c, --config FILE   the job's INI file (default: $CUDANAP_CONFIG, else built-in "
	"defaults)\n"
	"  -N, --nap N         nap after N seconds without GPU work, and wake at the next CUDA\n"
	"                      call that needs the GPU ([nap] idle_s for CMD, over FILE's; 0: "
	"never)\n"
	"  -M, --make-room     when CMD needs GPU memory that is not free, nap this user's idle\n"
	"                      programs on that GPU to make room ([nap] make_room for CMD)\n"
	"\n"
	"The library is looked for in $CUDANAP_PRELOAD, beside this program in a build tree, then\n"
	"in the installed library directory.\n"
	"\n"
	"Exit status: that of CMD; 78 if FILE is broken; 127 if CMD cannot be run.\n"
	"Example: cudanap run -c job.ini -- python train.py --epochs 10\n";

static int find_preload(char *out, size_t len)
{
	const char *env = getenv("CUDANAP_PRELOAD");

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	return cli_find_file("../../preload/libcudanap.so", CN_PRELOAD_REL, "libcudanap.so",
			     CN_PRELOAD_ABS, out, len);
}

/* [nccl] suspendable: the preload sets the same in CMD before its main; here it is said once for
 * the whole job, with a value the user set that keeps its ranks from being suspendable. */
static void report_nccl(void)
{
	char kept[200], set[600] = "";
	size_t o = 0;

	for (size_t i = 0; i < cn_ncclenv_n_vars; i++)
		o += (size_t)snprintf(set + o, sizeof(set) - o, " %s=%s", cn_ncclenv_vars[i].name,
				      cn_ncclenv_vars[i].value);
	cn_ncclenv_apply(kept, sizeof(kept));
	if (kept[0])
		fprintf(stderr,
			"%s: [nccl] suspendable: keeping %s, set in the environment: NCCL ranks of "
			"this job will be refused at suspend (unset it to let cudanap set%s)\n",
			cli_prog, kept, set);
	else
		fprintf(stderr, "%s: [nccl] suspendable: NCCL uses sockets between ranks:%s\n",
			cli_prog, set);
}

/* LD_PRELOAD with the library appended, so that a preload of the job's own (a sanitizer's
 * runtime) keeps its place; but before a libnccl, whose definitions would otherwise come first
 * and hide its communicators from the library. NULL when out of memory. */
static char *with_preload(const char *old, const char *lib)
{
	const char *nccl;
	char *out = NULL;

	if (!old || !*old)
		return strdup(lib);
	if (strstr(old, lib))
		return strdup(old);
	nccl = strstr(old, "libnccl");
	if (nccl) {
		/* the start of that entry */
		while (nccl > old && nccl[-1] != ':' && nccl[-1] != ' ')
			nccl--;
		if (asprintf(&out, "%.*s%s:%s", (int)(nccl - old), old, lib, nccl) < 0)
			out = NULL;
	} else if (asprintf(&out, "%s:%s", old, lib) < 0) {
		out = NULL;
	}
	return out;
}

/* The options before the command, --nap and --make-room put in the environment; -c FILE. */
static const char *parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "nap", required_argument, NULL, 'N' },
		{ "make-room", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cfg = NULL;
	unsigned long nap;
	int c;

	while ((c = getopt_long(argc, argv, "+:c:N:Mh", opts, NULL)) != -1) {
		if (c == 'c') {
			cfg = optarg;
		} else if (c == 'N') {
			if (cn_config_uint(optarg, 24 * 3600, &nap) < 0)
				cli_die_usage("cudanap: --nap wants seconds, from 0 to 86400\n");
			setenv("CUDANAP_NAP_S", optarg, 1);
		} else if (c == 'M') {
			setenv("CUDANAP_MAKE_ROOM", "1", 1);
		} else {
			cli_die_option("run", argv, c);
		}
	}
	return cfg;
}

/* The INI (-c, else CUDANAP_CONFIG) checked and named by its absolute path for the command; 0,
 * or 78 said. */
static int use_config(const char *cfg)
{
	char abs[PATH_MAX];
	struct cn_config conf;

	if (!cfg)
		cfg = getenv("CUDANAP_CONFIG");
	if (cfg && *cfg) {
		cli_load_config(cfg, &conf);
		if (!realpath(cfg, abs)) {
			fprintf(stderr, "%s: %s: %s\n", cli_prog, cfg, strerror(errno));
			return 78;
		}
		setenv("CUDANAP_CONFIG", abs, 1);
		if (conf.nccl_suspendable)
			report_nccl();
	}
	return 0;
}

int run_main(int argc, char **argv)
{
	char lib[PATH_MAX], abs[PATH_MAX], *preload;
	const char *cfg = parse_args(argc, argv);

	if (optind >= argc) {
		fprintf(stderr, "%s run: no command to run; see '%s run --help'\n", cli_prog,
			cli_prog);
		return 2;
	}
	if (use_config(cfg))
		return 78;
	if (find_preload(lib, sizeof(lib)) < 0) {
		fprintf(stderr, "%s: cannot find libcudanap.so (tried %s); set CUDANAP_PRELOAD\n",
			cli_prog, lib);
		return 127;
	}
	if (!realpath(lib, abs))
		snprintf(abs, sizeof(abs), "%s", lib);
	preload = with_preload(getenv("LD_PRELOAD"), abs);
	if (!preload)
		return 127;
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "%s: cannot run %s: %s\n", cli_prog, argv[optind], strerror(errno));
	return 127;
}
