/* requests: what the agent asks of the controller and the command line. See requests.c. */
#ifndef CN_REQUESTS_H
#define CN_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"

/* One driver call through the controller, with what the agent knows filled into the request. 0 on
 * CUDA_SUCCESS, else -1 with resp saying why. */
int cn_requests_call(uint32_t op, struct cn_resp *resp);

/* The lock (CN_OP_LOCK), its host check made for a copy of copy_bytes (a light nap's, what
 * cudanap owns) rather than for the footprint (0). */
int cn_requests_lock(uint64_t copy_bytes, struct cn_resp *resp);

/* A call that moves the process's memory (checkpoint, restore): libcuda's large copies run in
 * parallel and, for a restore, turns are taken on the GPUs (turns.c). */
int cn_requests_moving(uint32_t op, struct cn_resp *resp);

/* What the CLI asks of this action beyond the INI, in <status dir>/<pid>.<what>, taken (read and
 * removed): its first line into buf; its length, or -1 when there is none. */
int cn_requests_take(const char *what, char *buf, size_t len);

/* The same, read and left in place: the asker sees it there until the answer is written. */
int cn_requests_read(const char *what, char *buf, size_t len);

/* The first driver call of an action: where the process stands. False when that ended the action
 * (no CUDA, no driver, no controller), and reported. */
bool cn_requests_state(struct cn_resp *resp);

#endif
