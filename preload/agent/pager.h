/* pager: an allocation refused as out of memory (or a context as unavailable), room made for it
 * ([nap] make_room). See pager.c. */
#ifndef CN_PAGER_H
#define CN_PAGER_H

#include <stdbool.h>
#include <stdint.h>

/* At the agent's start, and in a forked child: no request, no turn (the parent's is its own). */
void cn_pager_reset(void);

/* App thread, from the gate: the driver refused call idx (its argument registers gp) as out of
 * memory, or a context as unavailable (unavailable). True when room was made: the caller tries the
 * call once more, then cn_pager_done. */
bool cn_pager_oom(unsigned idx, const uint64_t *gp, bool unavailable);
void cn_pager_done(void);

/* Agent thread: an app thread asked (its byte on the pipe); and the ticks that try again while
 * another process holds the turn. */
void cn_pager_asked(void);
int cn_pager_timeout_ms(void);
void cn_pager_tick(void);

#endif
