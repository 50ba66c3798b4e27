/* hub: the leader of an NCCL job's cut across nodes, a thread for one cut. See hub.c. */
#ifndef CN_AGENT_HUB_H
#define CN_AGENT_HUB_H

#include <stdint.h>

#include "cn_spanwire.h"

struct cn_hub;

/* Listen on port for the ranks of job (a Slurm step, "JOBID.STEPID", on the host list nodes),
 * proving them with this rank's secrets, and serve them in a thread of its own (signals blocked,
 * as the agent's). The hub, or NULL with errno (EADDRINUSE: the port is taken). */
struct cn_hub *cn_hub_start(unsigned port, const char *job, const char *nodes,
			    uint8_t (*secrets)[CN_SHA256_LEN], int n_secrets);
/* Its end: once the cut is made or given up it is over; before, the ranks still waiting are told
 * to give up. The thread joined, everything freed. */
void cn_hub_stop(struct cn_hub *h);
/* In a forked child, where the thread is not: its descriptors closed, its memory freed. */
void cn_hub_forget(struct cn_hub *h);

#endif
