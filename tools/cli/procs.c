/* procs: which processes the command acts on, and where their status files are. It reads /proc
 * and the status files; it sends nothing. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cn_proc.h"

int procs_status_dir(int pid, const char *cfg_path, char *dir, size_t len)
{
	if (!cfg_path) /* its default dir follows its own environment, which need not be ours */
		return cn_proc_status_dir(pid, dir, len);
	cn_config_status_dir(cfg_path, getenv("CUDANAP_STATUS_DIR"), getenv("XDG_RUNTIME_DIR"),
			     getuid(), getgid(), dir, len);
	return 0;
}

bool procs_alive(const struct cn_status *s)
{
	return s->starttime && cn_proc_starttime(s->pid) == s->starttime;
}

/* Why pid cannot act now, and the word for it (stopped, frozen); NULL when it can. */
static const char *halted(int pid, const char **word)
{
	char path[PATH_MAX], buf[4096], *all, *line, *save = NULL;
	const char *p, *why = NULL;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (cli_read_file(path, buf, sizeof(buf)) > 0 && (p = strrchr(buf, ')')) &&
	    (p[2] == 'T' || p[2] == 't')) {
		*word = "stopped";
		return "it is stopped (SIGSTOP or a debugger); continue it first (kill -CONT)";
	}
	if (!(all = cn_proc_file(pid, "cgroup", NULL)))
		return NULL;
	for (line = strtok_r(all, "\n", &save); line && !why; line = strtok_r(NULL, "\n", &save)) {
		char state[64];
		const char *cg = strrchr(line, ':');

		if (!cg)
			continue;
		if (strncmp(line, "0::", 3) == 0)
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cgroup.events", cg + 1);
		else if (strstr(line, ":freezer:"))
			snprintf(path, sizeof(path), "/sys/fs/cgroup/freezer%s/freezer.state",
				 cg + 1);
		else
			continue;
		if (cli_read_file(path, state, sizeof(state)) > 0 &&
		    (strstr(state, "frozen 1") || strstr(state, "FROZEN"))) {
			*word = "frozen";
			why = "its cgroup is frozen (cgroup freezer, or the scheduler's suspend); "
			      "thaw it first";
		}
	}
	free(all);
	return why;
}

const char *procs_stopped(int pid)
{
	const char *word;

	return halted(pid, &word);
}

const char *procs_halt_word(int pid)
{
	const char *word = NULL;

	return halted(pid, &word) ? word : NULL;
}

struct proc {
	int pid, ppid;
	uid_t uid;
	bool preloaded; /* libcudanap.so mapped */
};

static bool all_users;

void procs_all_users(bool on)
{
	all_users = on;
}

/* Every process of this user (every user's, after procs_all_users) but this one, with its parent,
 * its user and whether cudanap is preloaded. The caller frees the array. */
static int scan_procs(struct proc **out)
{
	DIR *d = opendir("/proc");
	struct proc *v = NULL;
	struct dirent *e;
	int n = 0, cap = 0;

	while (d && (e = readdir(d))) {
		char path[300], line[1024], *rp;
		int pid = cli_parse_pid(e->d_name);
		struct stat st;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d", pid);
		if (stat(path, &st) < 0 || (st.st_uid != getuid() && !all_users))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		/* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
		if (cli_read_file(path, line, sizeof(line)) < 0 || !(rp = strrchr(line, ')')))
			continue;
		if (n == cap) {
			struct proc *nv =
				realloc(v, (size_t)(cap = cap ? 2 * cap : 256) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		v[n].pid = pid;
		v[n].ppid = 0;
		v[n].uid = st.st_uid;
		sscanf(rp + 1, " %*c %d", &v[n].ppid);
		v[n].preloaded = cn_proc_preloaded(pid);
		n++;
	}
	if (d)
		closedir(d);
	*out = v;
	return n;
}

/* Is pid root or one of its descendants? Walks up the parent chain. */
static bool in_tree(const struct proc *v, int n, int pid, int root)
{
	/* A chain of parents is no longer than the processes seen (a pid reused meanwhile could
	 * make a loop): the bound decides nothing else. */
	for (int depth = 0; pid > 1 && depth <= n; depth++) {
		int i;

		if (pid == root)
			return true;
		for (i = 0; i < n && v[i].pid != pid; i++)
			;
		if (i == n)
			return false;
		pid = v[i].ppid;
	}
	return pid == root;
}

/* Whether pid is in another pid namespace than this command (a container's process seen from
 * the host): its status files name pids of that namespace. */
static bool foreign_ns(int pid)
{
	char path[64], ns[64] = "", self[64] = "";
	ssize_t n, m = readlink("/proc/self/ns/pid", self, sizeof(self) - 1);

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
	n = readlink(path, ns, sizeof(ns) - 1);
	if (m <= 0) /* a kernel without namespaces: every process is in ours */
		return false;
	return n <= 0 || n != m || memcmp(ns, self, (size_t)n) != 0;
}

int procs_job_dirs(struct procs_dir **out)
{
	struct proc *v;
	struct procs_dir *d = NULL;
	int np = scan_procs(&v), n = 0;

	for (int p = 0; p < np; p++) {
		char dir[PATH_MAX];
		bool dup = false, foreign;

		if (!v[p].preloaded)
			continue;
		if (procs_status_dir(v[p].pid, NULL, dir, sizeof(dir)) < 0)
			continue; /* not taken for one of ours */
		foreign = foreign_ns(v[p].pid);
		for (int i = 0; i < n && !dup; i++)
			if (d[i].uid == v[p].uid && strcmp(d[i].path, dir) == 0) {
				dup = true;
				d[i].foreign |= foreign;
			}
		if (dup)
			continue;
		if (!(n & (n - 1))) { /* 0, 1, 2, 4, ...: room for twice as many */
			struct procs_dir *nd = realloc(d, (size_t)(n ? 2 * n : 1) * sizeof(*d));

			if (!nd)
				break;
			d = nd;
		}
		snprintf(d[n].path, sizeof(d[n].path), "%s", dir);
		d[n].foreign = foreign;
		d[n++].uid = v[p].uid;
	}
	free(v);
	*out = d;
	return n;
}

bool procs_cuda_loaded(int pid)
{
	static const char *const names[] = { "CUDANAP_LIBCUDA" };
	char path[64], fake[PATH_MAX] = "", *line = NULL, *lib;
	size_t cap = 0;
	bool hit = false;
	FILE *f;

	/* A driver given by path (a test's fake one) is looked for by its file name. */
	if (cn_proc_env(pid, names, 1, &lib) == 0 && lib && *lib)
		snprintf(fake, sizeof(fake), "/%s",
			 strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib);
	free(lib);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	while (!hit && getline(&line, &cap, f) > 0)
		hit = strstr(line, "/libcuda.so") || (fake[0] && strstr(line, fake));
	fclose(f);
	free(line);
	return hit;
}

/* Is pid this command's parent, grandparent, ...? */
static bool ancestor(const struct proc *v, int n, int pid)
{
	return in_tree(v, n, getppid(), pid);
}

/* Forked children that never exec'd share the environment but have no status file of their own,
 * and are left out; so are this command's ancestors: a job's shell that runs it from a trap
 * (`trap 'cudanap suspend --slurm $SLURM_JOB_ID' USR1`) would get the signal again and again. */
int procs_select(const char *cfg, const int *roots, int n_roots, const int *pids, int n_pids,
		 int **out)
{
	struct proc *v;
	int np = scan_procs(&v), n = 0;
	int *sel = calloc((size_t)np + 1, sizeof(int));

	for (int p = 0; sel && p < np; p++) {
		char dir[PATH_MAX];
		struct cn_status s;
		bool want = n_roots == 0 && !pids;

		for (int r = 0; r < n_roots && !want; r++)
			want = in_tree(v, np, v[p].pid, roots[r]);
		for (int i = 0; i < n_pids && !want; i++)
			want = pids[i] == v[p].pid;
		if (!want || !v[p].preloaded || ancestor(v, np, v[p].pid))
			continue;
		procs_status_dir(v[p].pid, cfg, dir, sizeof(dir));
		if (cn_status_read(dir, v[p].pid, &s) == 0 && procs_alive(&s))
			sel[n++] = v[p].pid;
	}
	free(v);
	*out = sel;
	return sel ? n : -1;
}

int procs_with_env(const char *name, const char *value, int **out)
{
	struct proc *v;
	int np = scan_procs(&v), n = 0;
	int *sel = calloc((size_t)np + 1, sizeof(int));

	for (int p = 0; sel && p < np; p++) {
		char *got;

		if (cn_proc_env(v[p].pid, &name, 1, &got) == 0 && got && strcmp(got, value) == 0)
			sel[n++] = v[p].pid;
		free(got);
	}
	free(v);
	*out = sel;
	return sel ? n : -1;
}
