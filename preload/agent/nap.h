/* nap: an idle process napped by itself, woken by its next call that needs the GPU. See nap.c. */
#ifndef CN_NAP_H
#define CN_NAP_H

#include <stdbool.h>

#include "cn_outcome.h"

/* How long the agent may wait before the next tick (-1: no tick needed). */
int cn_nap_timeout_ms(void);
/* A look at the gate: idle for [nap] idle_s, the process naps; napping and waiting for room, its
 * wake is tried again. */
void cn_nap_tick(void);
/* Asked to nap (cudanap nap, or a process making room, whose note names it): nap now, unless
 * acted (an action of the same wake answered already); the note taken once the answer is written.
 */
void cn_nap_now(bool acted);
/* A call at the gate needs the GPU: wake the process. */
void cn_nap_wake(void);
/* The process runs again; asked: when the call that woke it asked (ms, monotonic; 0: a signal). */
void cn_nap_woken(double asked);
/* After an action asked by a signal, which ended with o: a resume woke a napping process. */
void cn_nap_after_action(struct cn_outcome o);
/* Napping now. */
bool cn_nap_asleep(void);
/* At the agent's start, and in a forked child (none of the parent's naps). */
void cn_nap_reset(void);

#endif
