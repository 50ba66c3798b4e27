/* beside: which processes a restore may share its GPUs with. See beside.c. */
#ifndef CN_BESIDE_H
#define CN_BESIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"

/* Agent thread, by the INI c: pids for the restore's request, max at most, and their meaning (the
 * controller's placement refuses a restore onto a GPU accordingly): with *only, the only processes
 * allowed on the target GPUs (this process has communicators: itself and its job's other ranks);
 * without, the processes it must not go beside (the ranks of NCCL jobs that cudanap restored).
 * Their count; 0 without *only when nothing is to be checked ([restore] beside_restored, or none).
 */
int cn_beside_list(const struct cn_config *c, int32_t *pids, int max, bool *only);

/* Whether this process, restored that many times, is a restored NCCL rank that the rule protects:
 * its query asks who else is on its GPUs, for the warning below. */
bool cn_beside_watched(const struct cn_config *c, unsigned long restores);

/* Agent thread, after a query's answer r: for the status's beside field, into out, the processes
 * of another job on this restored rank's GPUs now (a process that started there after the
 * restore, which nothing of cudanap was asked about); "" when none, or not such a rank. */
void cn_beside_describe(const struct cn_config *c, const struct cn_resp *r, unsigned long restores,
			char *out, size_t len);

#endif
