/* hold: the app's GPU work held back while an NCCL job is suspended. See hold.c. */
#ifndef CN_HOLD_H
#define CN_HOLD_H

#include <stdbool.h>

/* From now on the app starts no GPU work: its launches, copies and stream waits, and its
 * collectives' first look (cuStreamIsCapturing), wait at the driver gate; NCCL's own calls, the
 * app's calls inside NCCL, its queries and the rest go on. A rank that drains to the job's cut
 * runs freely until it is there. */
void cn_hold_begin(void);

/* Wait until, for quiet_ms, no query of the app's found GPU work not done (the work it started has
 * ended, and PyTorch's watchdog, which queries each of its works every 100 ms, has dropped them),
 * at most bound_ms. The ms waited; -1 at the bound. */
double cn_hold_settle(unsigned quiet_ms, unsigned bound_ms);

#endif
