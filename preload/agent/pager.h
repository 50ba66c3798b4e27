/* pager: an allocation refused as out of memory (or a context as unavailable), room made for it
 * ([nap] make_room). See pager.c. */
#ifndef CN_PAGER_H
#define CN_PAGER_H

#include <stdbool.h>
#include <stdint.h>
#include "agent/state.h"

/* The agent's side of the app's requests: pager.c alone. */
struct cn_pager {
	bool pending;	   /* an app thread waits for an answer */
	bool failure_said; /* the last allocation's failure was logged */
	bool wait_said;	   /* this allocation's wait for the turn was logged */
};

/* At the agent's start, and in a forked child: no request, no turn (the parent's is its own). */
void cn_pager_reset(struct cn_pager *pg);

/* App thread, from the gate: the driver refused call idx (its argument registers gp) as out of
 * memory, or a context as unavailable (unavailable). True when room was made: the caller tries the
 * call once more, then cn_pager_done. */
bool cn_pager_oom(unsigned idx, const uint64_t *gp, bool unavailable);
void cn_pager_done(void);

/* Agent thread: an app thread asked (its byte on the pipe); and the ticks that try again while
 * another process holds the turn. */
void cn_pager_asked(struct cn_agent *ag, struct cn_pager *pg);
int cn_pager_timeout_ms(const struct cn_pager *pg);
void cn_pager_tick(struct cn_agent *ag, struct cn_pager *pg);

#endif
