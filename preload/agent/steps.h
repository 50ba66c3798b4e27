/* steps: what the agent's actions share. See steps.c. */
#ifndef CN_STEPS_H
#define CN_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"

/* One driver call through the controller, with what the agent knows filled into the request. 0 on
 * CUDA_SUCCESS, else -1 with resp saying why. */
int cn_call(uint32_t op, struct cn_resp *resp);

/* A call that moves the process's memory (checkpoint, restore): libcuda's large copies run in
 * parallel and, for a restore, turns are taken on the GPUs (turns.c). */
int cn_moving_call(uint32_t op, struct cn_resp *resp);

/* What the CLI asks of this action beyond the INI, in <status dir>/<pid>.<what>, taken (read and
 * removed): its first line into buf; its length, or -1 when there is none. */
int cn_take_request(const char *what, char *buf, size_t len);

/* Re-read the INI at the start of an action. False when it is broken: the action is over, and
 * reported. */
bool cn_reload(const char *verb);
/* The same, reporting nothing: false with err when it is broken. */
bool cn_reload_quietly(char *err, size_t len);

/* The first driver call of an action: where the process stands. False when that ended the action
 * (no CUDA, no driver, no controller), and reported. */
bool cn_current_state(const char *verb, struct cn_resp *resp);

#endif
