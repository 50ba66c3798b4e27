/* What root's code makes of what a user can plant: the Slurm plugin's job directories (jobdirs.c:
 * made, read by the handover wait, removed by the epilog), the status reader and the INI reader
 * the CLI uses as root, and the helper under them all (config/safe.c). Two users that need not
 * exist, by uid: the job's (OWNER) and another (OTHER). Every hostile input (a FIFO, links to a
 * file and to a directory, a directory of the wrong user, an oversized and a garbage status file,
 * a status naming a live process of another user or of none of the job) must be refused without
 * blocking, and the handover's look must end by its deadline, a SuspendTime forged in a job's
 * name believed no more than Slurm's, a process's environment read to its end. Runs as root (CI
 * is); also under valgrind and AddressSanitizer in the default run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cn_config.h"
#include "cn_notes.h"
#include "cn_proc.h"
#include "cn_safe.h"
#include "cn_status.h"
#include "jobdirs.h"
#include "tap.h"
#ifdef CN_HANDOVER
#include <stdarg.h>

#include "handover.h"
#endif

#define OWNER	60101
#define OTHER	60102
#define OTHER_S "60102"
#define JOB	4242

static char base[256], job[300];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put(const char *path, const char *text, uid_t uid)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	if (chown(path, uid, uid) < 0)
		perror(path);
}

/* A process of uid, sleeping, with env as its whole environment. */
static pid_t sleeper(uid_t uid, const char *env)
{
	pid_t p = fork();

	if (p == 0) {
		char *envp[] = { (char *)env, NULL }, *argv[] = { "sleep", "30", NULL };

		if (setgid(uid) < 0 || setuid(uid) < 0)
			_exit(1);
		execve("/bin/sleep", argv, envp);
		_exit(1);
	}
	return p;
}

/* A process of job 4242 as Slurm makes one: uid's sleep under a process of root's that is the
 * job's step daemon (a copy of sleep named slurmstepd, titled "slurmstepd: [4242.0]"); its pid.
 * The step's pid in *stepd. */
static pid_t job_sleeper_as(uid_t uid, pid_t *stepd, bool real);
static pid_t job_sleeper(uid_t uid, pid_t *stepd)
{
	return job_sleeper_as(uid, stepd, true);
}

/* The same under a process of root's that only takes the step daemon's title (real false): a
 * set-user-ID program started with that argv[0]. */
static pid_t job_sleeper_as(uid_t uid, pid_t *stepd, bool real)
{
	int fds[2];
	pid_t p = -1;

	if (pipe(fds) < 0)
		return -1;
	*stepd = fork();
	if (*stepd == 0) {
		char *argv[] = { "slurmstepd: [4242.0]", "30", NULL }, *envp[] = { NULL };
		char exe[300], cmd[700];

		snprintf(exe, sizeof(exe), "%s/slurmstepd", base);
		snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s", exe);
		p = sleeper(uid, "PATH=/bin");
		if (write(fds[1], &p, sizeof(p)) != sizeof(p) || (access(exe, X_OK) && system(cmd)))
			_exit(1);
		execve(real ? exe : "/bin/sleep", argv, envp);
		_exit(1);
	}
	close(fds[1]);
	if (read(fds[0], &p, sizeof(p)) != sizeof(p))
		p = -1;
	close(fds[0]);
	return p;
}

/* A status file of pid in the job's directory, owned by uid, saying it holds its GPU. */
static void status_of(pid_t pid, uid_t uid)
{
	struct cn_status s;
	char buf[CN_STATUS_MAX], path[400];

	cn_status_init(&s, (int)pid);
	s.starttime = cn_proc_starttime((int)pid);
	s.state = CN_STATE_RUNNING;
	cn_status_format(&s, buf, sizeof(buf));
	snprintf(path, sizeof(path), "%s/%d.json", job, (int)pid);
	put(path, buf, uid);
}

static int holding(double *took)
{
	int frozen, first = 0, n;
	double t0 = now_s();

	n = cn_jobdirs_holding(base, JOB, OWNER, t0 + 2, &frozen, &first);
	*took = now_s() - t0;
	return n;
}

static void test_make(void)
{
	char why[512], p[400];
	struct stat st;

	ok(cn_jobdirs_make(base, JOB, OWNER, OWNER, why, sizeof(why)) == 0, "a job directory made");
	snprintf(p, sizeof(p), "%s/cudanap", base);
	ok(stat(p, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0711,
	   "in <statusbase>/cudanap, root's, 0711");
	ok(stat(job, &st) == 0 && st.st_uid == OWNER && (st.st_mode & 0777) == 0700,
	   "the job's own: its user's, 0700");
	ok(cn_jobdirs_make(base, JOB, OWNER, OWNER, why, sizeof(why)) == 0,
	   "found again by the job's next task");
	ok(cn_jobdirs_make(base, JOB, OTHER, OTHER, why, sizeof(why)) < 0 &&
		   strstr(why, "owned by uid 60101, not uid 60102"),
	   "refused to another user: %s", why);
}

static void test_squat(void)
{
	char b2[300], p[400], why[512];

	snprintf(b2, sizeof(b2), "%s/squatted", base);
	mkdir(b2, 0755);
	snprintf(p, sizeof(p), "%s/cudanap", b2);
	mkdir(p, 0777);
	if (chown(p, OTHER, OTHER) < 0)
		perror(p);
	ok(cn_jobdirs_make(b2, JOB, OWNER, OWNER, why, sizeof(why)) < 0 &&
		   strstr(why, "owned by uid 60102, not uid 0"),
	   "a <statusbase>/cudanap another user made first is not used: %s", why);
	rmdir(p);
	if (symlink("/etc", p) < 0)
		perror(p);
	ok(cn_jobdirs_make(b2, JOB, OWNER, OWNER, why, sizeof(why)) < 0 &&
		   strstr(why, "symbolic link"),
	   "nor a link to a directory: %s", why);
	unlink(p);
	mkdir(p, 0711);
	snprintf(p, sizeof(p), "%s/cudanap/job%d", b2, JOB);
	if (symlink("/etc", p) < 0)
		perror(p);
	ok(cn_jobdirs_make(b2, JOB, OWNER, OWNER, why, sizeof(why)) < 0 &&
		   strstr(why, "symbolic link"),
	   "nor a job directory that is a link: %s", why);
	ok(access("/etc/passwd", F_OK) == 0, "(and nothing was done through it)");
}

/* Every one of these the job's own user could plant in its directory: none held. */
static void test_planted(void)
{
	char p[400], big[1 << 16];
	double took;
	int n;

	snprintf(p, sizeof(p), "%s/1.json", job);
	mkfifo(p, 0600);
	if (chown(p, OWNER, OWNER) < 0)
		perror(p);
	snprintf(p, sizeof(p), "%s/2.json", job);
	if (symlink("/etc/passwd", p) < 0)
		perror(p);
	snprintf(p, sizeof(p), "%s/3.json", job);
	memset(big, '{', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(p, big, OWNER);
	snprintf(p, sizeof(p), "%s/4.json", job);
	put(p, "garbage, not JSON", OWNER);
	snprintf(p, sizeof(p), "%s/linkdir.json", job);
	if (symlink("/etc", p) < 0)
		perror(p);
	n = holding(&took);
	ok(n == 0 && took < 1,
	   "a FIFO, links, an oversized and a garbage file: nothing held, %.3f s", took);
}

/* Live processes: another user's, the job user's outside the job, and one of the job: only the
 * last, in a file of the job's user, is held. */
static void test_handover(void)
{
	pid_t mine, foreign, stray, forged, stepd;
	double took;
	int n;

	foreign = sleeper(OTHER, "SLURM_JOB_ID=4242");
	stray = sleeper(OWNER, "PATH=/bin");
	forged = sleeper(OWNER, "SLURM_JOB_ID=4242");
	mine = job_sleeper(OWNER, &stepd);
	usleep(200 * 1000);
	status_of(foreign, OWNER);
	status_of(stray, OWNER);
	n = holding(&took);
	ok(n == 0, "a status naming a live process of another user, or of no job: not believed");
	status_of(forged, OWNER);
	ok(holding(&took) == 0,
	   "nor one of the job's user with SLURM_JOB_ID=4242 in its environment, outside the job");
	status_of(mine, OTHER);
	ok(holding(&took) == 0,
	   "one of the job's processes, in a file another user owns: not believed");
	{
		pid_t titled_stepd, titled = job_sleeper_as(OWNER, &titled_stepd, false);

		usleep(200 * 1000);
		status_of(titled, OWNER);
		ok(holding(&took) == 0,
		   "nor one under a process of root's that only takes the step daemon's title");
		kill(titled, SIGKILL);
		kill(titled_stepd, SIGKILL);
	}
	status_of(mine, OWNER);
	n = holding(&took);
	ok(n == 1 && took < 1, "one of the job's, by its user: held (%d, %.3f s)", n, took);
	kill(foreign, SIGKILL);
	kill(stray, SIGKILL);
	kill(forged, SIGKILL);
	kill(mine, SIGKILL);
	kill(stepd, SIGKILL);
	while (wait(NULL) > 0)
		;
	ok(holding(&took) == 0, "gone once it exits");
}

#ifdef CN_HANDOVER
/* The handover wait itself, with a squeue of the test's (in PATH) and slurmd's log here. */
static char said[512];

void slurm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(said, sizeof(said), fmt, ap);
	va_end(ap);
}

/* A program of the test's, in PATH before the system's: squeue, or scontrol. */
static void fake(const char *name, const char *body)
{
	char p[400], path[600];

	snprintf(p, sizeof(p), "%s/bin", base);
	mkdir(p, 0755);
	snprintf(path, sizeof(path), "%s/bin:/usr/bin:/bin", base);
	setenv("PATH", path, 1);
	snprintf(p, sizeof(p), "%s/bin/%s", base, name);
	put(p, body, 0);
	chmod(p, 0755);
}

static void fake_squeue(const char *body)
{
	fake("squeue", body);
}

/* scontrol show job, saying the job named name was suspended ago seconds ago (in
 * SLURM_TIME_FORMAT's %s), in scontrol's order of fields, or that it cannot say (ago < 0). */
static void fake_scontrol_named(int ago, const char *name)
{
	char body[600];

	if (ago < 0)
		snprintf(body, sizeof(body), "#!/bin/sh\nexit 1\n");
	else
		snprintf(body, sizeof(body),
			 "#!/bin/sh\n[ \"$SLURM_TIME_FORMAT\" = %%s ] || exit 1\necho \"JobId=$4 "
			 "JobName=%s UserId=u(60101) JobState=SUSPENDED Reason=None "
			 "StartTime=1 SuspendTime=$(($(date +%%s) - %d)) SecsPreSuspend=9 "
			 "WorkDir=/w\"\n",
			 name, ago);
	fake("scontrol", body);
}

static void fake_scontrol(int ago)
{
	fake_scontrol_named(ago, "x");
}

static double wait_s(double max_s)
{
	double t0 = now_s();

	said[0] = '\0';
	cn_handover_wait(base, "node", 1, max_s);
	return now_s() - t0;
}

static void test_wait(void)
{
	pid_t stepd, mine = job_sleeper(OWNER, &stepd);
	double took;

	usleep(200 * 1000);
	fake_squeue("#!/bin/sh\necho 4242 60101\n");
	took = wait_s(1.5);
	ok(took < 0.5 && strstr(said, "waited"),
	   "with junk alone the wait ends at once (%.2f s): %s", took, said);
	status_of(mine, OWNER);
	fake_scontrol(-1);
	took = wait_s(1.5);
	ok(took >= 1.4 && took < 2.0 && strstr(said, "starts after 1.5 s with 1 process"),
	   "a process of the job claiming its GPU holds the wait to max_s, no longer (%.2f s): %s",
	   took, said);
	fake_scontrol(0);
	took = wait_s(1.5);
	ok(took >= 1.4 && took < 2.0 && strstr(said, "starts after 1.5 s with 1 process"),
	   "the same when Slurm suspended the job just now (%.2f s): %s", took, said);
	fake_scontrol(100);
	took = wait_s(1.5);
	ok(took < 0.5 &&
		   strstr(said, "not waiting for 1 process of 1 job suspended more than 1.5 s ago"),
	   "but not when it suspended the job longer ago than max_s: a process of it that runs was "
	   "continued by its user (%.2f s): %s",
	   took, said);
	/* sbatch -J "x SuspendTime=<a time to come>": the job's name, before Slurm's field */
	fake_scontrol_named(100, "x SuspendTime=$(($(date +%s) + 100000)) SecsPreSuspend=0");
	took = wait_s(1.5);
	ok(took < 0.5 &&
		   strstr(said, "not waiting for 1 process of 1 job suspended more than 1.5 s ago"),
	   "a SuspendTime its user wrote in the job's name (to come) hides not Slurm's (%.2f s): "
	   "%s",
	   took, said);
	fake_squeue("#!/bin/sh\nexec sleep 100\n");
	took = wait_s(1.5);
	ok(took >= 1.4 && took < 2.0 && strstr(said, "did not answer"),
	   "a squeue that hangs: max_s bounds it too (%.2f s): %s", took, said);
	kill(mine, SIGKILL);
	kill(stepd, SIGKILL);
	while (wait(NULL) > 0)
		;
}
#endif

static void test_remove(void)
{
	char why[512], p[400], other_job[400];
	struct stat st;

	snprintf(p, sizeof(p), "%s/target", base);
	put(p, "keep", 0);
	snprintf(other_job, sizeof(other_job), "%s/link-to-target.json", job);
	if (symlink(p, other_job) < 0)
		perror(other_job);
	/* What the job's user may leave: directories in directories, one it made 0000 and a link in
	 * it to a directory of root's, and its job directory made 0777. */
	snprintf(p, sizeof(p), "%s/sub/deeper/deepest", job);
	for (char *c = p + strlen(job) + 1; (c = strchr(c, '/')); c++) {
		*c = '\0';
		mkdir(p, 0755);
		*c = '/';
	}
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sub/deeper/etc", job);
	if (symlink("/etc", p) < 0)
		perror(p);
	snprintf(p, sizeof(p), "%s/sub/deeper", job);
	chmod(p, 0);
	chmod(job, 0777);
	snprintf(p, sizeof(p), "%s/target", base);
	ok(cn_jobdirs_remove(base, JOB, OTHER, why, sizeof(why)) < 0 && access(job, F_OK) == 0,
	   "the epilog of another user's job removes nothing here: %s", why);
	ok(cn_jobdirs_remove(base, JOB, OWNER, why, sizeof(why)) == 0 && access(job, F_OK) < 0,
	   "the job's epilog removes its directory, 0777, FIFO, links, a 0000 directory in a "
	   "directory and all (%s)",
	   why);
	ok(stat(p, &st) == 0 && access("/etc/passwd", F_OK) == 0, "and nothing a link pointed to");
	ok(cn_jobdirs_remove(base, JOB, OWNER, why, sizeof(why)) == 0,
	   "a second epilog: nothing to do");
}

/* What a job's user may leave that no fixed depth can hold: directories 5000 deep (made by fds:
 * their path is longer than PATH_MAX), a file at the bottom, directories of mode 0000 on the way,
 * and 2000 directories side by side, each with one of its own; the epilog removes it all. */
static void test_remove_deep(void)
{
	char why[512], name[32];
	int fd, top, n = 0, r;
	double t0;
	bool made = true;

	ok(cn_jobdirs_make(base, JOB, OWNER, OWNER, why, sizeof(why)) == 0,
	   "a job directory again");
	top = open(job, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = dup(top);
	for (int i = 0; made && i < 5000; i++) {
		int next;

		made = mkdirat(fd, "d", 0755) == 0 &&
		       (next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0;
		if (made && i % 1000 == 500)
			fchmod(fd, 0); /* its child is made: now nobody may enter it but root */
		close(fd);
		fd = made ? next : -1;
		n += made;
	}
	if (fd >= 0) {
		int f = openat(fd, "bottom.json", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		made = f >= 0 && write(f, "{}", 2) == 2;
		if (f >= 0)
			close(f);
		close(fd);
	}
	for (int i = 0; made && i < 2000; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		made = mkdirat(top, name, 0755) == 0;
		snprintf(name, sizeof(name), "w%d/x", i);
		made = made && mkdirat(top, name, 0700) == 0;
	}
	close(top);
	ok(made && n == 5000, "5000 directories deep, a file at the bottom, 2000 side by side");
	t0 = now_s();
	r = cn_jobdirs_remove(base, JOB, OWNER, why, sizeof(why));
	ok(r == 0 && access(job, F_OK) < 0,
	   "the epilog removes them all, whatever their depth (%.2f s)%s%s", now_s() - t0,
	   r ? ": " : "", r ? why : "");
}

/* A process of the job's user that keeps making entries in the job's directory for up to 20 s,
 * its working directory there: files, directories, and entries in those through a descriptor. */
static pid_t writer(void)
{
	pid_t p = fork();

	if (p == 0) {
		double end = now_s() + 20;
		char name[64];

		if (setgid(OWNER) < 0 || setuid(OWNER) < 0 || chdir(job) < 0)
			_exit(1);
		for (unsigned long i = 0; now_s() < end; i++) {
			int fd;

			snprintf(name, sizeof(name), "w%d-%lu", (int)getpid(), i);
			if (i % 2) {
				close(open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
				continue;
			}
			mkdir(name, 0755);
			fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0) {
				mkdirat(fd, "sub", 0755);
				close(openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
				close(fd);
			}
		}
		_exit(0);
	}
	return p;
}

/* The job's user keeps writing in its directory while the epilog removes it, from four processes
 * of its own (outside the job: another job, a login): the epilog takes the directory from its
 * user first, and ends while they still write (on main it went on as long as they did). */
static void test_remove_racing(void)
{
	char why[512];
	pid_t w[4];
	double t0, took;
	bool writing = true;
	int r;

	ok(cn_jobdirs_make(base, JOB, OWNER, OWNER, why, sizeof(why)) == 0,
	   "a job directory again");
	for (int i = 0; i < 4; i++)
		w[i] = writer();
	usleep(300 * 1000);
	t0 = now_s();
	r = cn_jobdirs_remove(base, JOB, OWNER, why, sizeof(why));
	took = now_s() - t0;
	for (int i = 0; i < 4; i++)
		writing &= waitpid(w[i], NULL, WNOHANG) == 0;
	ok(r == 0 && access(job, F_OK) < 0 && writing,
	   "the epilog removes the directory while 4 processes of its user write in it, and ends "
	   "before they do (%.2f s)%s%s",
	   took, r ? ": " : "", r ? why : "");
	for (int i = 0; i < 4; i++) {
		kill(w[i], SIGKILL);
		waitpid(w[i], NULL, 0);
	}
}

/* A process's environment as the CLI reads it (cn_proc_env): values longer than its buffer,
 * across its edges, a name that only begins like a wanted one, a name twice (the first counts),
 * an empty value (one longer than a program is started with, hostile/views.sh). */
static void test_env(void)
{
	static const char *const names[] = { "CUDANAP_STATUS_DIR", "XDG_RUNTIME_DIR", "NONE" };
	size_t big = 40000;
	char *pad = malloc(big + 8), *dir = malloc(big + 32), *v[3];
	char *envp[] = { pad,
			 "CUDANAP_STATUS_DIRX=not this",
			 dir,
			 "CUDANAP_STATUS_DIR=second",
			 "XDG_RUNTIME_DIR=",
			 NULL };
	char *argv[] = { "sleep", "30", NULL };
	pid_t p;
	int r;

	memset(pad, 'A', big);
	strcpy(pad + big, "=x");
	strcpy(dir, "CUDANAP_STATUS_DIR=");
	memset(dir + strlen(dir), 'd', big);
	dir[19 + big] = '\0';
	p = fork();
	if (p == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(1);
	}
	usleep(200 * 1000);
	r = cn_proc_env((int)p, names, 3, v);
	ok(r == 0 && v[0] && strlen(v[0]) == big && strspn(v[0], "d") == big && v[1] && !v[1][0] &&
		   !v[2],
	   "an environment read to its end: a value of 40000 bytes across the buffer's edges, the "
	   "first of a name, an empty value, one missing (%d)",
	   r);
	for (int i = 0; i < 3 && r == 0; i++)
		free(v[i]);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	free(pad);
	free(dir);
	ok(cn_proc_env(999999999, names, 3, v) < 0 && !v[0], "no process: an error, no values");
}

static void test_readers(void)
{
	char dir[300], p[400], buf[64], sdir[PATH_MAX];
	struct cn_status s;
	double t0;
	int me = (int)getpid();

	snprintf(dir, sizeof(dir), "%s/user", base);
	mkdir(dir, 0700);
	snprintf(p, sizeof(p), "%s/%d.json", dir, me);
	mkfifo(p, 0600);
	t0 = now_s();
	ok(cn_status_read(dir, me, &s) < 0 && now_s() - t0 < 1,
	   "a FIFO as a status file: refused at once");
	snprintf(sdir, sizeof(sdir), "%s/%d.nccl-cut", dir, me);
	mkfifo(sdir, 0600);
	t0 = now_s();
	ok(cn_notes_read(dir, me, "nccl-cut", buf, sizeof(buf)) < 0 && now_s() - t0 < 1,
	   "a FIFO as a note the command line reads (an NCCL rank's): refused at once");
	unlink(sdir);
	snprintf(sdir, sizeof(sdir), "%s/%d.hibernate", dir, me);
	put(sdir, "/somewhere", 0);
	if (chown(dir, OTHER, OTHER) < 0)
		perror(dir);
	ok(cn_notes_take(dir, me, "hibernate", buf, sizeof(buf)) == -EPERM &&
		   access(sdir, F_OK) == 0,
	   "a note in a directory that is not the process's user's: not taken, not removed");
	if (chown(dir, 0, 0) < 0)
		perror(dir);
	ok(cn_notes_take(dir, me, "hibernate", buf, sizeof(buf)) == 10 && access(sdir, F_OK) < 0,
	   "in its own, taken and removed");
	unlink(p);
	put(p, "{\"pid\":1}", OTHER);
	ok(cn_status_read(dir, me, &s) == -EPERM, "root believes no status file of another owner");
	unlink(p);
	if (chown(dir, OTHER, OTHER) < 0)
		perror(dir);
	put(p, "{\"pid\":1}", 0);
	ok(cn_status_read(dir, me, &s) == -EPERM, "nor one in a directory of another owner");
}

/* What root reads for another user: no device, no FIFO waited on, an INI read as that user would
 * (with that user's ids and groups, given back afterwards). */
static void test_read_as(void)
{
	char p[400], why[512], buf[64], sdir[PATH_MAX];
	double t0;

	ok(cn_safe_read(AT_FDCWD, "/dev/zero", CN_OWNER_ANY, buf, sizeof(buf), why, sizeof(why)) <
			   0 &&
		   strstr(why, "a device"),
	   "a device is not read: %s", why);
	snprintf(p, sizeof(p), "%s/ini.fifo", base);
	mkfifo(p, 0600);
	t0 = now_s();
	cn_config_status_dir(p, NULL, "/run/user/1", 0, 0, sdir, sizeof(sdir));
	ok(now_s() - t0 < 1 && strcmp(sdir, "/run/user/1/cudanap") == 0,
	   "an INI that is a FIFO, named by another process's environment: read at once, ignored");
	/* Read as the user whose environment named it: what that user cannot open, root does not.
	 */
	snprintf(p, sizeof(p), "%s/root.ini", base);
	put(p, "[status]\ndir = /x\n", 0);
	chmod(p, 0600);
	ok(cn_safe_read_as(p, OTHER, OTHER, buf, sizeof(buf), why, sizeof(why)) == -EACCES,
	   "a file only root may read, named by another user: not opened for it (%s)", why);
	cn_config_status_dir(p, NULL, NULL, OTHER, OTHER, sdir, sizeof(sdir));
	is_str(sdir, "/tmp/cudanap-" OTHER_S,
	       "nor its [status] dir believed: the user's default, by its uid");
	/* A device only root may open (/dev/null's numbers, mode 0600): never opened for the user.
	 */
	snprintf(sdir, sizeof(sdir), "%s/dev", base);
	if (mknod(sdir, S_IFCHR | 0600, makedev(1, 3)) == 0)
		ok(cn_safe_read_as(sdir, OTHER, OTHER, buf, sizeof(buf), why, sizeof(why)) ==
			   -EACCES,
		   "nor a device only root may open (%s)", why);
	else
		printf("ok %d - a device only root may open # SKIP cannot make one here\n",
		       ++tap_n);
	chown(p, OTHER, OTHER);
	ok(cn_safe_read_as(p, OTHER, OTHER, buf, sizeof(buf), why, sizeof(why)) > 0,
	   "the user's own INI is read");
	{
		gid_t g[64];

		ok(getgroups(64, g) >= 0 && geteuid() == 0 && setfsuid((uid_t)-1) == 0,
		   "and root's own ids and groups are back afterwards");
	}
}

int main(void)
{
	char cmd[400];

	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root: the code under test is root's\n");
		return 0;
	}
	snprintf(base, sizeof(base), "/tmp/cn-rootpaths-%d", (int)getpid());
	mkdir(base, 0755);
	snprintf(job, sizeof(job), "%s/cudanap/job%d", base, JOB);
	test_make();
	test_squat();
	test_planted();
	test_handover();
#ifdef CN_HANDOVER
	test_wait();
#endif
	test_remove();
	test_remove_deep();
	test_remove_racing();
	test_env();
	test_readers();
	test_read_as();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd) != 0)
		perror(cmd);
	return tap_done();
}
