/* nodepager: [nap] make_room through the node pager (cudanap-pager, root's), for room.c. See
 * nodepager.c. */
#ifndef CN_NODEPAGER_H
#define CN_NODEPAGER_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/room.h"

/* As cn_room_make, through the node pager: 0 (the room there, or coming for an overlapped
 * light wake: cn_nodepager_coming), -EAGAIN (asked, no answer yet: ask again), -1 (refused: why),
 * -ENOTCONN (no node pager to ask, said once: make room among the user's own). */
int cn_nodepager_make(struct cn_agent *ag, const struct cn_room_need *need, int n, const char *what,
		      bool overlap, char *why, size_t len);
bool cn_nodepager_coming(struct cn_agent *ag);
void cn_nodepager_settle(struct cn_agent *ag);
/* The GPUs' turns given back (done): after the room was used, or when it is not wanted. */
void cn_nodepager_release(void);
/* Whether every need asked has its answer (none asked: true). */
bool cn_nodepager_answered(struct cn_agent *ag);
/* After a refusal: when (monotonic ms) a process passed over for working will be idle enough. */
double cn_nodepager_soon_ms(void);
/* The agent's ticks while a connection is open: one nobody asked about for a while is closed. */
int cn_nodepager_timeout_ms(void);
void cn_nodepager_tick(struct cn_agent *ag);
/* At the agent's start and in a forked child: no connection (the parent's stay its own). */
void cn_nodepager_reset(void);

#endif
