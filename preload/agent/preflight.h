/* preflight: checks before a suspend that need no driver call. */
#ifndef CN_PREFLIGHT_H
#define CN_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/route.h"
#include "agent/state.h"
#include "cn_config.h"

/* By the INI c: 0 when the suspend may go ahead; otherwise -1 and why holds the one-line reason.
 * The GPUs are named by the machine's numbers, as w last listed them (cn_requests_know_gpus). */
int cn_preflight_suspend(const struct cn_config *c, const struct cn_where *w,
			 const struct cn_route *nccl, char *why, size_t len);

/* Peer access between the process's GPUs, which [peer] mode = refuse refuses: 0, or -1 with why
 * naming the GPUs and who turned it on. Part of cn_preflight_suspend; asked again once the gate
 * is closed, when no call can turn it on any more. */
int cn_preflight_peers(const struct cn_config *c, const struct cn_where *w, char *why, size_t len);

/* A nap, on top: 0, or -1 with why (an NCCL rank, whatever its transports). */
int cn_preflight_nap(const struct cn_route *nccl, char *why, size_t len);

#endif
