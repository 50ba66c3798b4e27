/* slowkill: a test shim preloaded into the cudanap command. A signal (not 0) that kill() sends to
 * a pid named in CN_SLOW_KILL ("PID:MS,PID:MS") leaves MS milliseconds later from a thread of its
 * own, and kill() returns at once: one rank of a job whose signal arrives late, as from a node that
 * answers late. With CN_HOLD_KILL=FILE the first signal kill() sends is held: it writes the pid to
 * FILE.held, waits until FILE exists (30 s at most), then goes: the command stopped between two
 * processes of a group, for a test to change the world there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct late {
	pid_t pid;
	int sig;
	unsigned ms;
};

static int (*real_kill)(pid_t, int);

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
	real_kill(l->pid, l->sig);
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

__attribute__((visibility("default"))) int kill(pid_t pid, int sig)
{
	unsigned ms = sig ? delay_for(pid) : 0;
	struct late *l;
	pthread_t t;

	if (!real_kill)
		real_kill = (int (*)(pid_t, int))dlsym(RTLD_NEXT, "kill");
	if (sig)
		hold(pid);
	if (!ms || !(l = malloc(sizeof(*l))))
		return real_kill(pid, sig);
	*l = (struct late){ pid, sig, ms };
	if (pthread_create(&t, NULL, send_late, l) != 0) {
		free(l);
		return real_kill(pid, sig);
	}
	pthread_detach(t);
	return 0;
}
