/* cache: the host copies ready for light naps, kept since a wake or made ahead, under [memory]
 * host_cache across this user's processes of the status directory. Agent thread. See cache.c. */
#ifndef CN_CACHE_H
#define CN_CACHE_H

#include <stdbool.h>
#include "agent/state.h"

/* At most once a second while the process runs awake: its ready copy let go when the share or the
 * host's pressure needs it (or keep_host_copy is off); else, when it has idled long enough for a
 * nap to come, one made ahead where the share and the host have room. At every call, a copy let go
 * beside the app's calls said once it is gone. true when the status changed (written by the
 * caller). */
bool cn_cache_tick(struct cn_agent *ag, double now_ms);

/* Whether a wake that put bytes back keeps its host copy: keep_host_copy, the share with the
 * others' ready copies, and the host's free memory beside what is pinned now. */
bool cn_cache_may_keep(struct cn_agent *ag, unsigned long long bytes);

/* Before a nap whose host copy takes bytes: the other processes' ready copies asked back, the one
 * needed last first, until the host has the memory for it and [preflight] host_margin_mib, waiting
 * for that 2 s at most. */
void cn_cache_free_for(struct cn_agent *ag, unsigned long long bytes);

/* Another process of this user asked for the host memory (CN_WAKE_TRIM): the ready copy let go
 * now, when the process runs awake; true when it was. */
bool cn_cache_trim_asked(struct cn_agent *ag);

/* In a fresh process or a forked child. */
void cn_cache_reset(struct cn_agent *ag);

#endif
