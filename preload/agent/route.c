/* route: which way a process's NCCL communicators go at a suspend ([nccl] mode, the NCCL loaded),
 * as the preflight and the status say it. Agent thread. */
#define _GNU_SOURCE
#include "agent/route.h"

#include <stdio.h>

#include "nccl/comms.h"

static void version(char *out, size_t len)
{
	int v = cn_comms_nccl_version();

	if (v >= 10000)
		snprintf(out, len, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else if (v)
		snprintf(out, len, "NCCL %d.%d.%d", v / 1000, v / 100 % 10, v % 100);
	else
		snprintf(out, len, "NCCL");
}

bool cn_route_uses_api(const struct cn_config *c)
{
	int mode = c->nccl_mode;

	return cn_comms_count() > 0 && (mode == CN_NCCL_AUTO || mode == CN_NCCL_API) &&
	       cn_comms_have_api();
}

void cn_route_describe(const struct cn_config *c, char *out, size_t len, char *keys,
		       size_t keys_len)
{
	int n = cn_comms_count(), mode = c->nccl_mode;
	const char *many = n == 1 ? "" : "s";
	char v[32];

	version(v, sizeof(v));
	cn_comms_keys(keys, keys_len);
	if (cn_comms_suspended())
		snprintf(out, len, "suspended: %d communicator%s (%s)", n, many, v);
	else if (!n || mode == CN_NCCL_OFF)
		out[0] = '\0';
	else if (mode == CN_NCCL_SOCKETS)
		snprintf(out, len, "sockets: %d communicator%s (%s)", n, many, v);
	else if (cn_comms_have_api())
		snprintf(out, len, "suspend-api: %d communicator%s (%s)", n, many, v);
	else
		snprintf(out, len, "no suspend API: %d communicator%s (%s)", n, many, v);
}

void cn_route_hint(const struct cn_config *c, char *out, size_t len)
{
	char v[32];

	out[0] = '\0';
	if (!cn_comms_count() || cn_comms_have_api())
		return;
	version(v, sizeof(v));
	if (c->nccl_mode == CN_NCCL_API)
		snprintf(out, len,
			 "[nccl] mode = suspend-api, but %s has no ncclCommSuspend: load NCCL "
			 "2.29.7 or later, or set mode = sockets",
			 v);
	else
		snprintf(out, len,
			 "%s has no ncclCommSuspend: load NCCL 2.29.7 or later to keep NVLink, or "
			 "set [nccl] suspendable = true for sockets",
			 v);
}

const struct cn_route *cn_route_facts(const struct cn_config *c, struct cn_route *f)
{
	cn_route_hint(c, f->hint, sizeof(f->hint));
	f->comms = cn_comms_count();
	f->handled = cn_route_uses_api(c);
	return f;
}
