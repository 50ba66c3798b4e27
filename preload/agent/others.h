/* others: the other living processes of this user that share this process's status directory, as
 * their status files say. Agent thread. */
#ifndef CN_OTHERS_H
#define CN_OTHERS_H

#include <stdbool.h>

#include "cn_status.h"

/* fn called with the status of each one of the status directory dir (a pid that was reused, and
 * files that cannot be believed or belong to another user, left out) until it returns false. */
void cn_others_each(const char *dir, bool (*fn)(const struct cn_status *s, void *arg), void *arg);

/* What their ready host copies hold ([memory] host_cache, cache.c), in bytes: host memory a nap
 * may have back. */
unsigned long long cn_others_kept_bytes(const char *dir);

#endif
