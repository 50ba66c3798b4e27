/* requests: what the agent asks of the controller and the command line. See requests.c. */
#ifndef CN_REQUESTS_H
#define CN_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"
#include "agent/state.h"

/* The driver calls through the controller. Each request carries its arguments and, where its op
 * needs them, the INI's checks and margins and what the agent knows of its process (state.h: what
 * it held per GPU, where its GPUs are now, the host copy it holds). Each returns 0 on
 * CUDA_SUCCESS, else -1 with resp saying why. */

/* A call that takes nothing but its op: CN_OP_STATE, CN_OP_UNLOCK. */
int cn_requests_call(struct cn_agent *ag, uint32_t op, struct cn_resp *resp);

/* Where the host copy of a lock or a prepare goes, for the controller's check before it: into the
 * hibernate file, beside free_bytes of free space there (to_disk), else into host memory. */
struct cn_requests_disk {
	bool to_disk;
	uint64_t free_bytes;
};

/* The lock (CN_OP_LOCK), waiting at most timeout_ms for the process's GPU work (0: for ever), its
 * host check made for a copy going where disk says, of copy_bytes (a light nap's, what cudanap
 * owns) rather than of the footprint (0). */
int cn_requests_lock(struct cn_agent *ag, unsigned timeout_ms, const struct cn_requests_disk *disk,
		     uint64_t copy_bytes, struct cn_resp *resp);

/* The footprint (CN_OP_PREPARE), once the host check passed for a copy going where disk says. */
int cn_requests_prepare(struct cn_agent *ag, const struct cn_requests_disk *disk,
			struct cn_resp *resp);

/* What the process holds and the machine's GPUs (CN_OP_QUERY). */
int cn_requests_query(struct cn_agent *ag, struct cn_resp *resp);
/* The machine's GPUs, asked when not known yet: what names them by the machine's numbers, as
 * everything else of cudanap does (the preflight's refusals). */
void cn_requests_know_gpus(struct cn_agent *ag);

/* The calls that move the process's memory: libcuda's large copies run in parallel and a restore
 * takes turns on its GPUs (turns.c). The checkpoint (CN_OP_CHECKPOINT); the restore
 * (CN_OP_RESTORE) under map, the INI's or a one-shot, unresolved. */
int cn_requests_checkpoint(struct cn_agent *ag, struct cn_resp *resp);
int cn_requests_restore(struct cn_agent *ag, const struct cn_gpumap *map, struct cn_resp *resp);

/* What the CLI asks of this action beyond the INI, in <status dir>/<pid>.<what>, taken (read and
 * removed): its first line into buf; its length, or -1 when there is none. */
int cn_requests_take(struct cn_agent *ag, const char *what, char *buf, size_t len);

/* The same, read and left in place: the asker sees it there until the answer is written. */
int cn_requests_read(struct cn_agent *ag, const char *what, char *buf, size_t len);

/* The first driver call of an action: where the process stands. False when that ended the action
 * (no CUDA, no driver, no controller), and reported. */
bool cn_requests_state(struct cn_agent *ag, struct cn_resp *resp);

#endif
