/* nap: an idle process napped by itself, woken by its next call that needs the GPU. See nap.c. */
#ifndef CN_NAP_H
#define CN_NAP_H

#include <stdbool.h>

#include "agent/state.h"
#include "cn_outcome.h"

/* What a nap does to the process, which the suspend and the resume do (the loop hands them in,
 * agent.c): the nap decides when and how deep, and says how it went. */
struct cn_nap_deeds {
	/* Asleep: lightly (what cudanap owns to the host, the context kept) or fully (the driver's
	 * checkpoint), its lock waiting at most lock_ms (0: [lock] timeout_ms). */
	struct cn_outcome (*sleep)(struct cn_agent *ag, bool light, unsigned lock_ms);
	/* Asleep fully, its copy in [hibernate] dir ([nap] to = auto, the host without room). */
	struct cn_outcome (*sleep_disk)(struct cn_agent *ag, unsigned lock_ms);
	/* Awake: onto the GPUs of map (NULL: the INI's), waiting up to wait_ms for room there. */
	struct cn_outcome (*wake)(struct cn_agent *ag, const struct cn_gpumap *map,
				  unsigned wait_ms);
};

/* A process's naps, from one action to the next: nap.c alone. */
struct cn_naps {
	const struct cn_nap_deeds *deeds;
	unsigned long work; /* the gate's count at the last look */
	double active_ms;   /* the last look that saw work, or a thread inside (monotonic) */
	double not_before;  /* no idle nap before this (a failure's back-off) */
	unsigned backoff;   /* the back-off's multiple of idle_s: 1, 2, 4, ... */
	bool idle;	    /* idle_since was written */
	bool napping;	    /* asleep by a nap: a call that needs the GPU wakes it */
	double try_ms;	    /* when the last wake began: a failed one is tried again a second on */
	bool retry;	    /* a wake that failed: tried again */
	bool turn_busy;	    /* another process was making room: its turn looked at again soon */
	double peek_ms;	    /* when the turn was last looked at */
	double idle_at_ms;  /* a process idle too briefly to nap will be idle enough: tried then */
	bool stuck;	    /* the driver failed a wake's restore: tried again only when asked */
	bool refusal_said;  /* the reason it is not napped was logged */
	bool room_said;	    /* make_room's failure for this wake was logged */
	double asleep_ms;   /* when it fell asleep: [nap] full_after_s counts from there */
	double awake_ms;    /* when a wake that made room let the calls go on (0: at its end) */
};

/* How long the agent may wait before the next tick (-1: no tick needed). */
int cn_nap_timeout_ms(struct cn_agent *ag, struct cn_naps *nap);
/* A look at the gate: idle for [nap] idle_s, the process naps; napping and waiting for room, its
 * wake is tried again. */
void cn_nap_tick(struct cn_agent *ag, struct cn_naps *nap);
/* Asked to nap (cudanap nap, or a process making room, whose note names it): nap now, unless
 * acted (an action of the same wake answered already); the note taken once the answer is written.
 */
void cn_nap_now(struct cn_agent *ag, struct cn_naps *nap, bool acted);
/* A call at the gate needs the GPU: wake the process. */
void cn_nap_wake(struct cn_agent *ag, struct cn_naps *nap);
/* The process runs again; asked: when the call that woke it asked (ms, monotonic; 0: a signal). */
void cn_nap_woken(struct cn_agent *ag, struct cn_naps *nap, double asked);
/* After an action asked by a signal, which ended with o: a resume woke a napping process. */
void cn_nap_after_action(struct cn_agent *ag, struct cn_naps *nap, struct cn_outcome o);
/* At the agent's start, and in a forked child (none of the parent's naps): its deeds. */
void cn_nap_reset(struct cn_agent *ag, struct cn_naps *nap, const struct cn_nap_deeds *deeds);

#endif
