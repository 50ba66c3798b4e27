/* proc: what /proc says of another process (see cn_proc.h). */
#define _GNU_SOURCE
#include "cn_proc.h"
#include "cn_config.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

unsigned long long cn_proc_starttime(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and parens: count fields after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

static int send_now(int pidfd, int pid, int sig, const union sigval *val)
{
	siginfo_t si;

	if (pidfd < 0)
		return (val ? sigqueue(pid, sig, *val) : kill(pid, sig)) < 0 ? -errno : 0;
	if (!val)
		return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
	/* What sigqueue() sends: the kernel takes SI_QUEUE from another process as it is. */
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value = *val;
	return syscall(SYS_pidfd_send_signal, pidfd, sig, &si, 0) < 0 ? -errno : 0;
}

int cn_proc_signal(int pid, unsigned long long starttime, int sig, const union sigval *val)
{
	int pidfd, r;

	if (pid <= 0 || !starttime)
		return -ESRCH;
	/* The pidfd first, then the start time: if it still matches, the pidfd is that process. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	if (pidfd < 0 && errno != ENOSYS)
		return -errno;
	if (cn_proc_starttime(pid) != starttime) {
		if (pidfd >= 0)
			close(pidfd);
		return -ESRCH;
	}
	r = send_now(pidfd, pid, sig, val);
	if (pidfd >= 0)
		close(pidfd);
	return r;
}

/* At most len - 1 bytes of a file under /proc, NUL-terminated: the length, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* pid's parent, from /proc/PID/stat; 0 when gone. */
static int parent_of(int pid)
{
	char path[64], buf[1024], *p;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_proc(path, buf, sizeof(buf)) > 0 && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %d", &ppid);
	return ppid;
}

/* Where the hierarchy of ctl is mounted (ctl "": cgroup v2; else a v1 controller or "name=X"),
 * from /proc/self/mountinfo: "... MOUNT_POINT ... - cgroup2 SOURCE OPTIONS". */
static bool cgroup_root(const char *ctl, size_t n, char *out, size_t len)
{
	char line[1024];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	bool hit = false;

	while (f && !hit && fgets(line, sizeof(line), f)) {
		char mnt[512], type[32], opts[512];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1 ||
		    sscanf(dash + 3, "%31s %*s %511s", type, opts) != 2)
			continue;
		if (!n) {
			hit = strcmp(type, "cgroup2") == 0;
		} else if (strcmp(type, "cgroup") == 0) {
			for (char *save, *o = strtok_r(opts, ",", &save); o && !hit;
			     o = strtok_r(NULL, ",", &save))
				hit = strlen(o) == n && strncmp(o, ctl, n) == 0;
		}
		if (hit)
			snprintf(out, len, "%s", mnt);
	}
	if (f)
		fclose(f);
	return hit;
}

/* In line, one of /proc/PID/cgroup's ("ID:CONTROLLERS:PATH"), the first cgroup directory
 * job_<J> of the path (of job J, or of any job when job is 0) that root owns: Slurm's cgroup
 * plugins make one per job; a directory a user made in a subtree delegated to them (systemd's
 * user@.service) is theirs, whatever its name. Its J, or 0. */
static unsigned long job_in_line(const char *line, unsigned long job)
{
	const char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL, *p;
	char root[512] = "", dir[PATH_MAX + 600];

	if (!path)
		return 0;
	for (p = path + 1; (p = strstr(p, "/job_")); p += 5) {
		size_t n = strspn(p + 5, "0123456789");
		unsigned long j = strtoul(p + 5, NULL, 10);
		struct stat st;

		if (!n || n >= 20 || (p[5 + n] != '/' && p[5 + n] != '\0') || !j ||
		    (job && j != job))
			continue;
		/* The first controller names a v1 hierarchy ("cpu,cpuacct" is mounted once). */
		if (!root[0] && !cgroup_root(ctl + 1, strcspn(ctl + 1, ",:"), root, sizeof(root)))
			return 0;
		snprintf(dir, sizeof(dir), "%s%.*s", root, (int)(p + 5 + n - path - 1), path + 1);
		if (stat(dir, &st) == 0 && st.st_uid == 0)
			return j;
	}
	return 0;
}

char *cn_proc_file(int pid, const char *name, size_t *len)
{
	char path[64];
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	ssize_t r = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	while (buf && fd >= 0 && (r = read(fd, buf + n, cap - n - 1)) > 0) {
		char *more;

		n += (size_t)r;
		if (cap - n > 1)
			continue;
		more = realloc(buf, cap *= 2);
		if (!more)
			free(buf);
		buf = more;
	}
	if (fd >= 0)
		close(fd);
	if (buf && (fd < 0 || r < 0)) {
		free(buf);
		buf = NULL;
	}
	if (buf) {
		buf[n] = '\0';
		if (len)
			*len = n;
	}
	return buf;
}

/* k bytes at p appended to the value *v of *len bytes, NUL-terminated. 0 or -ENOMEM. */
static int append(char **v, size_t *len, const char *p, size_t k)
{
	char *more = realloc(*v, *len + k + 1);

	if (!more)
		return -ENOMEM;
	memcpy(more + *len, p, k);
	*len += k;
	more[*len] = '\0';
	*v = more;
	return 0;
}

/* The environment's state between two reads: the name of the entry read so far (head, h bytes;
 * names[] are shorter than head), the variable whose value is being read (cur), or an entry of no
 * interest being passed over (skip). */
struct env_scan {
	const char *const *names;
	char **values, head[64];
	size_t h, vlen;
	int n, cur;
	bool skip;
};

/* One block of the environment through the scan: the wanted values kept. 0 or -ENOMEM. */
static int env_block(struct env_scan *e, const char *buf, size_t got)
{
	for (size_t i = 0; i < got;) {
		if (e->cur >= 0 || e->skip) { /* to the entry's end, in one step */
			const char *end = memchr(buf + i, '\0', got - i);
			size_t k = end ? (size_t)(end - (buf + i)) : got - i;

			if (e->cur >= 0 && append(&e->values[e->cur], &e->vlen, buf + i, k) < 0)
				return -ENOMEM;
			i += k + (end != NULL);
			if (end)
				e->cur = -1, e->skip = false, e->h = 0;
			continue;
		}
		if (buf[i] == '\0') {
			e->h = 0;
		} else if (buf[i] == '=') {
			e->head[e->h] = '\0';
			/* the first of a name counts, as getenv's */
			for (int k = 0; k < e->n && e->cur < 0; k++)
				if (!e->values[k] && strcmp(e->head, e->names[k]) == 0)
					e->cur = k;
			e->vlen = 0;
			if (e->cur >= 0 && append(&e->values[e->cur], &e->vlen, "", 0) < 0)
				return -ENOMEM;
			e->skip = e->cur < 0;
		} else if (e->h == sizeof(e->head) - 1) {
			e->skip = true; /* a name longer than any wanted */
		} else {
			e->head[e->h++] = buf[i];
		}
		i++;
	}
	return 0;
}

int cn_proc_env(int pid, const char *const *names, int n, char **values)
{
	struct env_scan e = { .names = names, .values = values, .n = n, .cur = -1 };
	char path[64], buf[16384];
	size_t total = 0;
	ssize_t got = 0;
	int fd, r = 0;

	for (int i = 0; i < n; i++)
		values[i] = NULL;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (!r && (got = read(fd, buf, sizeof(buf))) > 0)
		r = (total += (size_t)got) > CN_PROC_ENV_MAX ? -E2BIG
							     : env_block(&e, buf, (size_t)got);
	if (!r && got < 0)
		r = -errno;
	close(fd);
	for (int i = 0; r && i < n; i++) {
		free(values[i]);
		values[i] = NULL;
	}
	return r;
}

/* The first line of pid's cgroups below a job's directory root owns (of job, or of any when job
 * is 0): its job, or 0. */
static unsigned long job_cgroup(int pid, unsigned long job)
{
	char *buf = cn_proc_file(pid, "cgroup", NULL), *save, *line;
	unsigned long j = 0;

	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line && !j;
	     line = strtok_r(NULL, "\n", &save))
		j = job_in_line(line, job);
	free(buf);
	return j;
}

unsigned long cn_proc_job(int pid)
{
	return job_cgroup(pid, 0);
}

/* Whether pid is a step daemon of job's: root's, slurmstepd itself (its executable, not a title
 * any program could take), titled "slurmstepd: [<J>.<step>]". */
static bool step_daemon(int pid, const char *want, size_t k)
{
	char path[64], buf[4096], exe[4096];
	struct stat st;
	ssize_t n;
	const char *base;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) < 0 || st.st_uid != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	if (strncmp(base, "slurmstepd", 10) != 0) /* Debian's is slurmstepd-wlm */
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	return read_proc(path, buf, sizeof(buf)) >= (ssize_t)k && memcmp(buf, want, k) == 0;
}

bool cn_proc_in_job(int pid, unsigned long job)
{
	char want[48];
	size_t k;

	if (job && job_cgroup(pid, job) == job)
		return true;
	k = (size_t)snprintf(want, sizeof(want), "slurmstepd: [%lu.", job);
	/* Up the parents to init; the bound only stops a loop a reused pid could make. */
	for (int depth = 0; pid > 1 && depth < (1 << 22); depth++, pid = parent_of(pid))
		if (step_daemon(pid, want, k))
			return true;
	return false;
}

/* Whether a line of /proc/PID/maps maps cudanap's library: ".../libcudanap.so" and its versions
 * (".so.1"), also once the file was replaced on disk (" (deleted)", after an upgrade). */
static bool maps_lib(const char *line, const char *name)
{
	size_t k = strlen(name);

	for (const char *lib = line; (lib = strstr(lib, name)); lib += k)
		if (lib[k] == '\n' || lib[k] == '\0' || lib[k] == '.' ||
		    strncmp(lib + k, " (deleted)", 10) == 0)
			return true;
	return false;
}

bool cn_proc_preloaded(int pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool hit = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && !hit && getline(&line, &cap, f) > 0)
		hit = maps_lib(line, "/libcudanap.so");
	if (f)
		fclose(f);
	free(line);
	return hit;
}

int cn_proc_status_dir(int pid, char *dir, size_t len)
{
	static const char *const names[] = { "CUDANAP_CONFIG", "CUDANAP_STATUS_DIR",
					     "XDG_RUNTIME_DIR" };
	char path[32], *v[3];
	struct stat st;

	/* Its user's: the default dir is /tmp/cudanap-UID of its UID, and an INI its environment
	 * names is read as that user would (root opens no device another user names). Its
	 * environment to its end (environment modules put tens of kilobytes before cudanap's
	 * variables), if it is no longer than any a program is started with. */
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) < 0)
		st.st_uid = getuid(), st.st_gid = getgid();
	if (cn_proc_env(pid, names, 3, v) == -E2BIG) {
		dir[0] = '\0';
		return -E2BIG;
	}
	cn_config_status_dir(v[0], v[1], v[2], st.st_uid, st.st_gid, dir, len);
	for (int i = 0; i < 3; i++)
		free(v[i]);
	return 0;
}
