/* preflight: checks before a suspend that need no driver call. */
#ifndef CN_PREFLIGHT_H
#define CN_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "cn_config.h"

/* What the agent knows of the process's NCCL: communicators it saw created, whether they go
 * through NCCL's suspend API (then the transports do not matter), and what to add to a refusal
 * over the transports ("" for nothing). */
struct cn_nccl_facts {
	int comms;
	bool handled;
	const char *hint;
};

/* 0 when the suspend may go ahead; otherwise -1 and why holds the one-line reason. */
int cn_preflight_suspend(const struct cn_config *c, const struct cn_nccl_facts *nccl, char *why,
			 size_t len);

/* Peer access between the process's GPUs, which [peer] mode = refuse refuses: 0, or -1 with why
 * naming the GPUs and who turned it on. Part of cn_preflight_suspend; asked again once the gate
 * is closed, when no call can turn it on any more. */
int cn_preflight_peers(const struct cn_config *c, char *why, size_t len);

/* A nap, on top: 0, or -1 with why (an NCCL rank, whatever its transports). */
int cn_preflight_nap(const struct cn_nccl_facts *nccl, char *why, size_t len);

#endif
