/* reload: the INI read again at each action. See reload.c. */
#ifndef CN_RELOAD_H
#define CN_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include "agent/state.h"

/* Re-read the INI at the start of the action begun (report.c). False when it is broken: the action
 * is over, and reported with where it leaves the process. */
bool cn_reload(struct cn_agent *ag);
/* The same, reporting nothing: false with err when it is broken. */
bool cn_reload_quietly(struct cn_agent *ag, char *err, size_t len);

#endif
