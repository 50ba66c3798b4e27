/* slowkill: a test shim preloaded into the cudanap command. A signal (not 0) that kill() or
 * pidfd_send_signal (through syscall(), as the command sends its signals) sends to
 * a pid named in CN_SLOW_KILL ("PID:MS,PID:MS") leaves MS milliseconds later from a thread of its
 * own, and kill() returns at once: one rank of a job whose signal arrives late, as from a node that
 * answers late. With CN_HOLD_KILL=FILE the first signal kill() sends is held: it writes the pid to
 * FILE.held, waits until FILE exists (30 s at most), then goes: the command stopped between two
 * processes of a group, for a test to change the world there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct late {
	pid_t pid;
	int pidfd; /* a dup of the command's pidfd, or -1: kill() */
	int sig;
	siginfo_t si;
	bool has_si;
	unsigned ms;
};

static int (*real_kill)(pid_t, int);
static long (*real_syscall)(long, ...);

static long send_pidfd(int pidfd, int sig, siginfo_t *si)
{
	if (!real_syscall)
		real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real_syscall(SYS_pidfd_send_signal, pidfd, sig, si, 0);
}

static unsigned delay_for(pid_t pid)
{
	const char *s = getenv("CN_SLOW_KILL");

	while (s && *s) {
		char *end;
		long p = strtol(s, &end, 10);

		if (*end != ':')
			return 0;
		if (p == pid)
			return (unsigned)strtoul(end + 1, NULL, 10);
		s = strchr(end, ',');
		s = s ? s + 1 : NULL;
	}
	return 0;
}

static void *send_late(void *arg)
{
	struct late *l = arg;
	struct timespec ts = { l->ms / 1000, (long)(l->ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
	if (l->pidfd >= 0) {
		send_pidfd(l->pidfd, l->sig, l->has_si ? &l->si : NULL);
		close(l->pidfd);
	} else {
		real_kill(l->pid, l->sig);
	}
	free(l);
	return NULL;
}

/* CN_HOLD_KILL: the first signal waits for the test's word. */
static void hold(pid_t pid)
{
	static atomic_bool held;
	const char *go = getenv("CN_HOLD_KILL");
	char path[4096];
	FILE *f;

	if (!go || atomic_exchange(&held, true))
		return;
	snprintf(path, sizeof(path), "%s.held", go);
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
	for (int i = 0; i < 3000 && access(go, F_OK) != 0; i++)
		usleep(10000);
}

/* Held or delayed, as the test asks; false when the signal is to go now. */
static bool later(struct late *l)
{
	pthread_t t;

	hold(l->pid);
	if (!l->ms)
		return false;
	if (pthread_create(&t, NULL, send_late, l) != 0)
		return false;
	pthread_detach(t);
	return true;
}

__attribute__((visibility("default"))) int kill(pid_t pid, int sig)
{
	struct late *l;

	if (!real_kill)
		real_kill = (int (*)(pid_t, int))dlsym(RTLD_NEXT, "kill");
	if (!sig || !(l = calloc(1, sizeof(*l))))
		return real_kill(pid, sig);
	*l = (struct late){ .pid = pid, .pidfd = -1, .sig = sig, .ms = delay_for(pid) };
	if (later(l))
		return 0;
	free(l);
	return real_kill(pid, sig);
}

/* The pid a pidfd stands for, from its fdinfo. */
static pid_t pid_of(int pidfd)
{
	char path[64], line[256];
	pid_t pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	if (f)
		fclose(f);
	return pid;
}

__attribute__((visibility("default"))) long syscall(long n, ...)
{
	long a[6];
	va_list ap;
	struct late *l;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (n != SYS_pidfd_send_signal || !a[1] || !(l = calloc(1, sizeof(*l))))
		return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	*l = (struct late){ .pid = pid_of((int)a[0]), .sig = (int)a[1] };
	l->ms = delay_for(l->pid);
	if (a[2]) {
		l->si = *(siginfo_t *)a[2];
		l->has_si = true;
	}
	l->pidfd = l->ms ? fcntl((int)a[0], F_DUPFD_CLOEXEC, 3) : -1;
	if ((!l->ms || l->pidfd >= 0) && later(l))
		return 0;
	if (l->pidfd >= 0)
		close(l->pidfd);
	free(l);
	return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
