/* beside: the processes onto whose GPUs a restore must not move this one. See beside.c. */
#ifndef CN_BESIDE_H
#define CN_BESIDE_H

#include <stdint.h>

/* Agent thread: their pids, max at most, for the restore's request (the controller's placement
 * refuses a move onto a GPU where one of them holds memory); their count, 0 with [restore]
 * beside_restored on. */
int cn_beside_list(int32_t *pids, int max);

#endif
