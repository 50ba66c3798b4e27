/* handover: a task waits for the GPUs of the jobs Slurm has suspended on its node. See handover.c.
 */
#ifndef CN_HANDOVER_H
#define CN_HANDOVER_H

#include <stdint.h>

/* Wait, at most max_s seconds, until every cudanap process of the jobs Slurm has suspended on
 * node (other than job self) has let its GPUs go: checkpointed, without CUDA, or gone. A process
 * Slurm stopped before its checkpoint ended is not waited for: it keeps its GPU memory until it is
 * resumed. Says what it waited for, and what it did not get, in slurmd's log. */
void cn_handover_wait(const char *statusbase, const char *node, uint32_t self, double max_s);

#endif
