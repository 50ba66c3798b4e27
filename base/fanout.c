/* fanout: split a loop over a few threads, run part 0 here, join (the host copy's prefault and
 * read-back, the benchmark's floors; docs/FILES.md). */
#define _GNU_SOURCE
#include "fanout.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

struct part {
	void (*fn)(void *, unsigned);
	void *ctx;
	unsigned i;
};

static void *run_part(void *arg)
{
	struct part *p = arg;

	p->fn(p->ctx, p->i);
	return NULL;
}

void cn_fanout(unsigned n, void (*fn)(void *ctx, unsigned part), void *ctx)
{
	pthread_t t[CN_FANOUT_MAX];
	struct part parts[CN_FANOUT_MAX];
	bool started[CN_FANOUT_MAX] = { false };
	sigset_t all, old;

	if (n > CN_FANOUT_MAX)
		n = CN_FANOUT_MAX;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (unsigned i = 1; i < n; i++) {
		parts[i] = (struct part){ fn, ctx, i };
		started[i] = pthread_create(&t[i], NULL, run_part, &parts[i]) == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fn(ctx, 0);
	for (unsigned i = 1; i < n; i++) {
		if (started[i])
			pthread_join(t[i], NULL);
		else
			fn(ctx, i);
	}
}
