/* prepare: a suspend's host copy faulted in ahead. See prepare.c. */
#ifndef CN_PREPARE_H
#define CN_PREPARE_H

#include "cn_outcome.h"
#include "agent/state.h"

/* cudanap prepare: fault the next checkpoint's host copy in, and hold it a while. */
struct cn_outcome cn_prepare(struct cn_agent *ag);
/* The prepared copy was not used in time: give it back, and say so. */
void cn_prepare_expired(struct cn_agent *ag);

#endif
