/* managed: the managed memory the app holds, counted so that a suspend is refused before the lock
 * (docs/FILES.md). The app's threads; the agent reads the count. */
#define _GNU_SOURCE
#include "cuda/managed.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda/fns.h"

#define MAX_HELD 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t held[MAX_HELD];
static int n_held, n_lost; /* lost: more than MAX_HELD, never forgotten */
static char first[160];

void cn_managed_alloc(uint64_t ptr, const void *caller)
{
	char obj[96];

	cn_lookup_object(caller, obj, sizeof(obj));
	pthread_mutex_lock(&lock);
	if (n_held < MAX_HELD)
		held[n_held++] = ptr;
	else
		n_lost++;
	if (!first[0])
		snprintf(first, sizeof(first), "cuMemAllocManaged in %s", obj);
	pthread_mutex_unlock(&lock);
	cn_lookup_watch_frees(CN_WATCH_MANAGED, true);
}

void cn_managed_free(uint64_t ptr)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_held; i++)
		if (held[i] == ptr) {
			held[i] = held[--n_held];
			break;
		}
	if (!n_held && !n_lost)
		first[0] = '\0';
	pthread_mutex_unlock(&lock);
	if (!n_held && !n_lost)
		cn_lookup_watch_frees(CN_WATCH_MANAGED, false);
}

int cn_managed_held(char *who, size_t len)
{
	int n;

	pthread_mutex_lock(&lock);
	n = n_held + n_lost;
	snprintf(who, len, "%s", first);
	pthread_mutex_unlock(&lock);
	return n;
}

void cn_managed_after_fork(void)
{
	pthread_mutex_init(&lock, NULL);
	n_held = n_lost = 0;
	first[0] = '\0';
}
