/* suspend: the suspend, top to bottom. See suspend.c. */
#ifndef CN_SUSPEND_H
#define CN_SUSPEND_H

#include <stdbool.h>

#include "cn_outcome.h"
#include "agent/state.h"

/* A suspend asked by a signal; what it ended with. */
struct cn_outcome cn_suspend(struct cn_agent *ag);
/* The same for a nap (nap.c): action "nap", its own refusals and host copy ([nap] to), its
 * lock's wait at most lock_limit ms (0: [lock] timeout_ms). */
struct cn_outcome cn_suspend_as(struct cn_agent *ag, bool nap, unsigned lock_limit);
/* A full nap whose copy goes to [hibernate] dir whatever [nap] to says: auto's, where the host
 * had no room for the copy. */
struct cn_outcome cn_suspend_nap_disk(struct cn_agent *ag, unsigned lock_limit);
/* A light nap ([nap] depth): the nap's checks and lock, the lock let go, then the memory cudanap
 * owns moved to the host (cuda/light.c); the context stays. Its outcome's state is running: the
 * nap is said by the status's nap_depth (light) and the host copy held. */
struct cn_outcome cn_suspend_light(struct cn_agent *ag, unsigned lock_limit);

#endif
