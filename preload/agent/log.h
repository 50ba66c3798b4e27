/* log: one line per event, "cudanap[PID]: ...", to stderr or the INI's [log] target. Called from
 * the agent and the constructor only, never from a signal handler. */
#ifndef CN_LOG_H
#define CN_LOG_H

#include "cn_config.h"

void cn_log(const struct cn_config *c, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
