/* beside: the processes beside which a restore must not put this one. See beside.c. */
#ifndef CN_BESIDE_H
#define CN_BESIDE_H

#include <stdint.h>

/* Agent thread: their pids, max at most, for the restore's request (the controller's placement
 * refuses a restore onto a GPU where one of them holds memory); their count, 0 with [restore]
 * beside_restored on or without communicators. */
int cn_beside_list(int32_t *pids, int max);

#endif
