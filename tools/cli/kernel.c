/* kernel: cudanap kernel install|list|remove, Jupyter kernelspecs that start a kernel under cudanap
 * run --nap N (docs/FILES.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cn_safe.h"

const char cli_usage_kernel[] =
	"usage: cudanap kernel install [--from NAME] [--name NAME] [--nap N] [-c FILE]\n"
	"                              [--user | --sys-prefix | --prefix DIR]\n"
	"       cudanap kernel list [--json]\n"
	"       cudanap kernel remove NAME...\n"
	"\n"
	"Jupyter kernels that nap. install writes a kernelspec that starts an existing\n"
	"kernel (its command, environment and interrupt mode kept) behind 'cudanap run\n"
	"--nap N --': the kernel gives its GPU memory back after N idle seconds and takes\n"
	"it again at its next cell that uses the GPU. Jupyter lists it beside the kernel\n"
	"it wraps, as \"DISPLAY NAME (cudanap)\"; the settings are kept under\n"
	"metadata.cudanap in its kernel.json.\n"
	"\n"
	"  --from NAME         the kernel to wrap (default: python3)\n"
	"  --name NAME         the new kernel's name (default: the wrapped one's, with\n"
	"                      -cudanap)\n"
	"  -N, --nap N         nap after N seconds without GPU work (default 600; 0: only\n"
	"                      when told, by 'cudanap nap' or a suspend)\n"
	"  -c, --config FILE   the job INI the kernel runs with (its absolute path is\n"
	"                      written)\n"
	"  --user              install for this user (the default)\n"
	"  --sys-prefix        install into the Python environment that runs Jupyter\n"
	"  --prefix DIR        install under DIR/share/jupyter/kernels\n"
	"\n"
	"list prints every kernel Jupyter finds, with what cudanap's wrap and their naps;\n"
	"--json, one object: {\"kernels\": [{\"name\", \"directory\", \"cudanap\", \"nap_s\",\n"
	"\"wraps\", \"broken\"}, ...]} (nap_s 0: off; broken: why, or null).\n"
	"remove removes cudanap's kernels only; the kernels they wrap stay.\n"
	"\n"
	"Jupyter is asked through the Python that runs it: $CUDANAP_PYTHON, else the\n"
	"first of the interpreter of 'jupyter' on PATH, python3 and /usr/bin/python3 that\n"
	"imports jupyter_client. It runs isolated (python -I -S, from /), and only a Python\n"
	"and site directories that root or you alone could have written are used.\n"
	"\n"
	"Exit status: 0; 1 when an action failed; 2 for bad usage; 69 when no Python\n"
	"imports jupyter_client; 78 if FILE is broken.\n"
	"Example: cudanap kernel install --from python3 --nap 900\n";

/* Every Python this command starts runs isolated and without site (-I -S: no working directory,
 * no PYTHON* variables, no site directory or .pth file on its own) from "/", and is a file only
 * root or this user could have written, as is the helper it runs (cn_safe_trusted), which adds
 * the site directories that pass the same check: root running `cudanap kernel` in a directory
 * another user can write imports nothing of theirs. In a child: never returns. */
static void exec_python(const char *py, const char *helper, const char *const *args)
{
	const char *full[24] = { py, "-I", "-S", helper };
	int n = 4;

	for (; *args && n < 23; args++)
		full[n++] = *args;
	full[n] = NULL;
	if (chdir("/") == 0)
		execv(py, (char **)full);
}

/* Does py import jupyter_client? The helper's probe, quietly, its exit status the answer. */
static bool imports_jupyter(const char *py, const char *helper)
{
	static const char *const probe[] = { "probe", NULL };
	int st, null;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (pid == 0) {
		null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		exec_python(py, helper, probe);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A Python interpreter's name, as a shebang gives it. */
static bool pythonish(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	return strncmp(base, "python", 6) == 0;
}

/* The interpreter of the script `jupyter` on PATH ("#!/x/python3", or "#!/usr/bin/env
 * python3"), as a trusted absolute path into out; false when there is none. */
static bool jupyter_python(char *out, size_t len)
{
	char file[PATH_MAX], line[PATH_MAX], name[PATH_MAX], why[PATH_MAX + 100], *p, *end;
	FILE *f;

	if (cn_safe_find_exec("jupyter", file, sizeof(file), why, sizeof(why)) < 0 ||
	    !(f = fopen(file, "re")))
		return false;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	if (!p || strncmp(line, "#!", 2) != 0)
		return false;
	p = line + 2 + strspn(line + 2, " \t");
	end = p + strcspn(p, " \t\n");
	if (end - p >= 4 && strncmp(end - 4, "/env", 4) == 0 && *end && *end != '\n') {
		p = end + strspn(end, " \t");
		end = p + strcspn(p, " \t\n");
	}
	snprintf(name, sizeof(name), "%.*s", (int)(end - p), p);
	return name[0] && pythonish(name) &&
	       cn_safe_find_exec(name, out, len, why, sizeof(why)) == 0;
}

/* A candidate found as cn_safe.h says: whether its library may be run too; the first refusal's
 * why kept in refused. */
static bool candidate(int found, char *cand, char *why, size_t wlen, char *refused, size_t rlen)
{
	if (found < 0)
		return false;
	if (python_trusted(cand, why, wlen) == 0)
		return true;
	if (!refused[0])
		snprintf(refused, rlen, "; %s", why);
	return false;
}

/* The Python that runs Jupyter, into out (an absolute path); exits 69 when there is none. */
static void find_python(const char *helper, char *out, size_t len)
{
	const char *env = getenv("CUDANAP_PYTHON");
	char cand[3][PATH_MAX], tried[3 * PATH_MAX + 8] = "", why[2 * PATH_MAX + 300],
						     refused[sizeof(why) + 2] = "";
	int n = 0;

	if (env && *env) {
		if (cn_safe_find_exec(env, out, len, why, sizeof(why)) == 0 &&
		    python_trusted(out, why, sizeof(why)) == 0)
			return;
		fprintf(stderr, "%s kernel: CUDANAP_PYTHON: %s\n", cli_prog, why);
		exit(69);
	}
	/* Each candidate, its library too, before it runs at all (the probe imports). */
	n += candidate(jupyter_python(cand[n], sizeof(cand[n])) ? 0 : -1, cand[n], why, sizeof(why),
		       refused, sizeof(refused));
	n += candidate(cn_safe_find_exec("python3", cand[n], sizeof(cand[n]), why, sizeof(why)),
		       cand[n], why, sizeof(why), refused, sizeof(refused));
	n += candidate(cn_safe_trusted("/usr/bin/python3", true, cand[n], sizeof(cand[n]), why,
				       sizeof(why)),
		       cand[n], why, sizeof(why), refused, sizeof(refused));
	for (int i = 0; i < n; i++) {
		if (imports_jupyter(cand[i], helper)) {
			snprintf(out, len, "%s", cand[i]);
			return;
		}
		snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s",
			 i ? ", " : "", cand[i]);
	}
	fprintf(stderr,
		"%s kernel: no Python here imports jupyter_client (tried %s%s); install Jupyter, "
		"or "
		"set CUDANAP_PYTHON to the Python that runs it\n",
		cli_prog, n ? tried : "none: none found that only root or you could have written",
		refused);
	exit(69);
}

/* path made absolute against the working directory (the helper runs from "/"). */
static const char *absolute(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return path;
	snprintf(out, len, "%s/%s", cwd, path);
	return out;
}

/* Jupyter's rule for a kernel's name. */
static bool good_name(const char *s)
{
	return *s && strlen(s) <= 64 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		       strlen(s);
}

/* What the command line of cudanap kernel asks for, and the strings the helper's arguments point
 * into. */
struct kernel_args {
	const char *action, *from, *name, *nap, *cfg, *where, *prefix;
	bool install_opts; /* an option that only install takes */
	bool json;	   /* list --json */
	char abs_prefix[PATH_MAX], defname[128], config[PATH_MAX], self[PATH_MAX];
};

/* --user, --sys-prefix or --prefix DIR: where the kernelspec goes, one choice. */
static void parse_where(struct kernel_args *k, int c)
{
	const char *w = c == 'u' ? "user" : c == 's' ? "sys-prefix" : "prefix";

	if (k->where && strcmp(k->where, w) != 0)
		cli_die_usage("cudanap kernel: --user, --sys-prefix and --prefix are "
			      "one choice\n");
	k->where = w;
	if (c == 'p')
		k->prefix = absolute(optarg, k->abs_prefix, sizeof(k->abs_prefix));
}

/* The options after the action. */
static void parse_args(struct kernel_args *k, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "nap", required_argument, NULL, 'N' },
		{ "config", required_argument, NULL, 'c' },
		{ "user", no_argument, NULL, 'u' },
		{ "sys-prefix", no_argument, NULL, 's' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, ":f:n:N:c:h", opts, NULL)) != -1) {
		k->install_opts |= c != 'h' && c != 'j';
		if (c == 'j') {
			k->json = true;
		} else if (c == 'f') {
			k->from = optarg;
		} else if (c == 'n') {
			k->name = optarg;
		} else if (c == 'N') {
			unsigned long v;

			if (cn_config_uint(optarg, 24 * 3600, &v) < 0)
				cli_die_usage(
					"cudanap kernel: --nap wants seconds, from 0 to 86400\n");
			k->nap = optarg;
		} else if (c == 'c') {
			k->cfg = optarg;
		} else if (c == 'u' || c == 's' || c == 'p') {
			parse_where(k, c);
		} else {
			cli_die_option("kernel", argv, c);
		}
	}
}

/* install: its names checked, its INI read, the helper's arguments; 0, or the exit status, said. */
static int install_args(struct kernel_args *k, int argc, const char **args, int *n)
{
	struct cn_config conf;

	if (optind < argc)
		cli_die_usage("cudanap kernel install: takes no arguments, only options; see "
			      "'cudanap kernel --help'\n");
	if (!k->name) {
		snprintf(k->defname, sizeof(k->defname), "%s-cudanap", k->from);
		k->name = k->defname;
	}
	if (!good_name(k->from) || !good_name(k->name)) {
		fprintf(stderr,
			"%s kernel: '%s' is not a kernel name (letters, digits, '.', '_' "
			"and "
			"'-', 64 at most)\n",
			cli_prog, good_name(k->from) ? k->name : k->from);
		return 2;
	}
	if (k->cfg) {
		cli_load_config(k->cfg, &conf);
		if (!realpath(k->cfg, k->config)) {
			fprintf(stderr, "%s: %s: %s\n", cli_prog, k->cfg, strerror(errno));
			return 78;
		}
	}
	if (!realpath("/proc/self/exe", k->self)) {
		fprintf(stderr, "%s kernel: cannot tell where cudanap is: %s\n", cli_prog,
			strerror(errno));
		return 1;
	}
	args[(*n)++] = "install";
	args[(*n)++] = k->self;
	args[(*n)++] = k->from;
	args[(*n)++] = k->name;
	args[(*n)++] = k->nap;
	args[(*n)++] = k->config;
	args[(*n)++] = k->where ? k->where : "user";
	args[(*n)++] = k->prefix;
	return 0;
}

/* list or remove: no options, the names to remove; the helper's arguments. */
static void list_remove_args(const struct kernel_args *k, int argc, char **argv, const char **args,
			     int *n)
{
	if (k->install_opts)
		cli_die_usage(
			"cudanap kernel: list and remove take no options but list's --json\n");
	if (strcmp(k->action, "list") == 0 && optind < argc)
		cli_die_usage("cudanap kernel list: takes no arguments\n");
	if (strcmp(k->action, "remove") == 0 && optind >= argc)
		cli_die_usage("cudanap kernel remove: which kernels? see 'cudanap kernel "
			      "--help'\n");
	args[(*n)++] = k->action;
	if (k->json)
		args[(*n)++] = "json";
	for (int i = optind; i < argc && *n < 15; i++)
		args[(*n)++] = argv[i];
	if (optind + 15 - 1 < argc)
		cli_die_usage("cudanap kernel remove: at most 14 names at once\n");
}

/* kernelspec.py, found and trusted, into helper; 0, or 1 said. */
static int find_helper(char *helper, size_t len)
{
	char found[PATH_MAX], why[PATH_MAX + 100];

	if (cli_find_file("../kernel/kernelspec.py", CN_DATA_REL, "kernelspec.py",
			  CN_KERNELSPEC_ABS, found, sizeof(found)) < 0) {
		fprintf(stderr,
			"%s kernel: cannot find kernelspec.py (tried %s): cudanap is not "
			"installed whole\n",
			cli_prog, found);
		return 1;
	}
	if (cn_safe_trusted(found, false, helper, len, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s kernel: %s\n", cli_prog, why);
		return 1;
	}
	return 0;
}

int kernel_main(int argc, char **argv)
{
	struct kernel_args k = { .from = "python3", .nap = "600", .prefix = "" };
	char py[PATH_MAX], helper[PATH_MAX];
	const char *args[16];
	int n = 0, rc;

	if (argc < 2 || argv[1][0] == '-') {
		fputs(cli_usage_kernel, stderr);
		return 2;
	}
	k.action = argv[1];
	argc--, argv++;
	parse_args(&k, argc, argv);
	if (k.json && strcmp(k.action, "list") != 0)
		cli_die_usage("cudanap kernel: --json is for list\n");
	if (strcmp(k.action, "install") == 0) {
		if ((rc = install_args(&k, argc, args, &n)))
			return rc;
	} else if (strcmp(k.action, "list") == 0 || strcmp(k.action, "remove") == 0) {
		list_remove_args(&k, argc, argv, args, &n);
	} else {
		fprintf(stderr,
			"%s kernel: no action '%s' (install, list, remove); see '%s kernel "
			"--help'\n",
			cli_prog, k.action, cli_prog);
		return 2;
	}
	args[n] = NULL;
	if (find_helper(helper, sizeof(helper)))
		return 1;
	find_python(helper, py, sizeof(py));
	exec_python(py, helper, args);
	fprintf(stderr, "%s kernel: cannot run %s: %s\n", cli_prog, py, strerror(errno));
	return 69;
}
