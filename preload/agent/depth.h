/* depth: the depth a nap takes now, light or full, and why full ([nap] depth and auto's choice).
 * Agent thread. */
#ifndef CN_DEPTH_H
#define CN_DEPTH_H

#include <stdbool.h>
#include <stddef.h>

#include "cn_config.h"
#include "cn_outcome.h"

/* What a light nap would copy now (the spans cudanap owns and moves), and a context of the app's
 * it copies through; 0 and NULL when it owns nothing. */
unsigned long long cn_depth_light_bytes(void **ctx);

/* Whether a nap now is light, by the INI c; when not, why (never CN_DEPTH_WHY_NONE), and the reason
 * in a line for the log (text, may be NULL). */
bool cn_depth_light(const struct cn_config *c, enum cn_depth_why *why, char *text, size_t len);

/* [nap] to = auto: whether a nap whose copy takes need bytes more of host memory goes, full, to
 * [hibernate] dir: the host (or the process's cgroup) has less than need and [preflight]
 * host_margin_mib; where, and why, in text. */
bool cn_depth_to_disk(const struct cn_config *c, unsigned long long need, char *text, size_t len);

/* [nap] to = auto: the free space of [hibernate] dir's file system, in MiB, that a nap of this
 * process may take where the host has no room; 0 where its naps do not go to disk so, or the
 * directory is not one a nap would use (checked like the status dir) or cannot be read. */
double cn_depth_disk_room_mib(const struct cn_config *c);

/* By the INI c: the share of the host's memory the ready host copies may pin ([memory] host_cache
 * of the bound that limits this process: MemTotal or its cgroup's limit), and that bound's name; 0
 * when it is not known or the share is 0. */
unsigned long long cn_depth_cache_budget(const struct cn_config *c, char *which, size_t len);

#endif
