/* nccl: the NCCL steps of a suspend and a resume. See nccl.c. */
#ifndef CN_AGENT_NCCL_H
#define CN_AGENT_NCCL_H

#include <stdbool.h>
#include <stddef.h>

#include "cn_config.h"
#include "ctl_proto.h"

/* By the INI c (the status directory the ranks share, [lock] timeout_ms, [nccl] mode). Before the
 * lock of a suspend: the app's GPU work held back and settled, and with NCCL's
 * suspend API the communicators suspended at the job's cut. 0 to go on (or nothing to do); -1
 * with r and msg when the suspend is over (the process runs on, or, if its communicators were
 * suspended, waits for the job's resume). */
int cn_nccl_suspend(const struct cn_config *c, struct cn_resp *r, char *msg, size_t len);

/* While the process runs with its communicators suspended (after an unlock, or a suspend that
 * failed after them), the app starts no GPU work: its collectives' clocks would run until the job
 * is resumed. True when so (the gate holds); false: the gate is to open. */
bool cn_nccl_hold_app(void);

/* After the unlock of a resume, or at a resume of a process that runs with its communicators
 * suspended: resumed with the job's other ranks. 0, or -1 with r and msg (NCCL_WAITING: the
 * other ranks did not all come; resume the whole job again). */
int cn_nccl_resume(const struct cn_config *c, struct cn_resp *r, char *msg, size_t len);

#endif
