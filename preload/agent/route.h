/* route: which way a process's NCCL communicators go at a suspend. See route.c. */
#ifndef CN_ROUTE_H
#define CN_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "cn_config.h"

/* What the preflight is to know of the process's NCCL: communicators it saw created, whether they
 * go through NCCL's suspend API (then the transports do not matter), and what to add to a refusal
 * over the transports ("" for nothing). */
struct cn_route {
	int comms;
	bool handled;
	char hint[300];
};

/* The suspend will go through NCCL's suspend API (the preflight then leaves the transports be). */
bool cn_route_uses_api(const struct cn_config *c);

/* For the status (report.c): how the process's communicators are handled ("" when it has none),
 * into out, and the keys of those its job's other processes share, into keys. */
void cn_route_describe(const struct cn_config *c, char *out, size_t len, char *keys,
		       size_t keys_len);

/* For a refusal over the transports: what the loaded NCCL lacks and the ways out ("" when
 * nothing to add). */
void cn_route_hint(const struct cn_config *c, char *out, size_t len);

/* What the preflight is to know, now, into f; [nccl] mode as c says. */
const struct cn_route *cn_route_facts(const struct cn_config *c, struct cn_route *f);

#endif
