/* beside: which processes a restore may share its GPUs with. See beside.c. */
#ifndef CN_BESIDE_H
#define CN_BESIDE_H

#include <stdbool.h>
#include <stdint.h>

/* Agent thread: pids for the restore's request, max at most, and their meaning (the controller's
 * placement refuses a restore onto a GPU accordingly): with *only, the only processes allowed on
 * the target GPUs (this process has communicators: itself and its job's other ranks); without,
 * the processes it must not go beside (the ranks of NCCL jobs that cudanap restored). Their
 * count; 0 without *only when nothing is to be checked ([restore] beside_restored, or none). */
int cn_beside_list(int32_t *pids, int max, bool *only);

#endif
