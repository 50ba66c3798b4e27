/* preflight: checks before a suspend that need no driver call. */
#ifndef CN_PREFLIGHT_H
#define CN_PREFLIGHT_H

#include <stddef.h>

#include "cn_config.h"

/* 0 when the suspend may go ahead; otherwise -1 and why holds the one-line reason. */
int cn_preflight_suspend(const struct cn_config *c, char *why, size_t len);

#endif
