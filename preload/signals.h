/* signals: cudanap's handler for its signals, and the app's calls for them. See signals.c. */
#ifndef CN_SIGNALS_H
#define CN_SIGNALS_H

#include <signal.h>

#include "cn_config.h"

/* At the constructor's start: what must not be looked up in a handler. */
void cn_signals_init(void);
/* Install the handler for cfg's signals; from now on the app's calls for them are recorded. */
void cn_signals_arm(const struct cn_config *cfg);
/* Block our signals in the calling thread (none before they are armed); *old: the mask before. */
void cn_signals_block(sigset_t *old);

#endif
