/* resume: the resume, top to bottom. See resume.c. */
#ifndef CN_RESUME_H
#define CN_RESUME_H

#include <stdbool.h>

#include "cn_config.h"
#include "cn_outcome.h"
#include "agent/state.h"

/* A resume asked by a signal; what it ended with. */
struct cn_outcome cn_resume(struct cn_agent *ag);
/* The same for a nap's wake (nap.c): onto the GPUs of map (NULL: the INI's), waiting up to
 * wake_wait_ms for room there (a resume waits [restore] room_wait_s, as the INI says at that
 * moment). */
struct cn_outcome cn_resume_as(struct cn_agent *ag, bool wake, const struct cn_gpumap *map,
			       unsigned wake_wait_ms);

#endif
