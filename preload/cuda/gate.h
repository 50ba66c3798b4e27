/* gate: the driver calls of the app's threads, held while its process is suspended. See gate.c.
 * The agent closes and opens it; every call passes it on its way into libcuda (stubs.S, wrap.c). */
#ifndef CN_GATE_H
#define CN_GATE_H

/* A thread's depth before it has a record (or when it is cudanap's own): its calls take the slow
 * path. stubs.S reads the thread's state at these offsets. */
#define CN_TL_FRESH (1u << 30)
#define CN_TL_DEPTH 0
#define CN_TL_IN    4
#define CN_TL_CALLS 8
#define CN_TL_WORK  12

#ifndef __ASSEMBLER__
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- for the agent ---- */

/* The calling thread is cudanap's own: its driver calls (NCCL's suspend and resume, made by the
 * agent) pass a closed gate, and a suspend never waits for them. */
void cn_gate_self(void);

/* Close the gate: from now on an app thread that calls the driver waits before it enters libcuda.
 * Then wait, at most timeout_ms (0: for ever), for the app's threads already inside a driver call
 * to return. 0 once none is inside; -1 with why naming a thread still inside and its function,
 * the gate open again. *waited_ms: how long it took. */
int cn_gate_close_drained(unsigned timeout_ms, double *waited_ms, char *why, size_t len);

/* Close it without waiting for anyone: for a process the driver holds locked already, whose
 * threads inside a call wait there for the unlock. */
void cn_gate_close_now(void);

/* Open the gate: the calls waiting at it go on into libcuda. */
void cn_gate_open(void);
/* Whether the app's calls wait at the gate now: closed, or holding. */
bool cn_gate_stops_calls(void);

/* Hold it: from now on an app thread's outermost driver call waits unless lets(idx, caller) says
 * it may go (the NCCL cut's filter, nccl/hold.c: the app may not start GPU work, NCCL and the
 * watchdog's queries go on). Threads inside a call stay inside. From a closed gate too (the
 * unlock of a job whose communicators are still suspended). cn_gate_close_drained closes it from
 * here, cn_gate_open opens it. lets runs in the app's threads, with nothing locked, and must be
 * cheap. */
void cn_gate_hold(bool (*lets)(unsigned idx, const void *caller));
/* The filter's answer may have changed (a drain lets the app run): the waiting calls look again. */
void cn_gate_recheck(void);
bool cn_gate_is_holding(void);

/* What the gate held since it last closed: the calls that waited (a thread waiting again after a
 * spurious wake counts once) and the longest wait so far, in ms. */
void cn_gate_held(unsigned long *calls, double *longest_ms);

/* The app's threads inside a driver call now: each one's tid, call (table index) and count of
 * calls so far (the same thread with the same count later is still inside the same call). Their
 * number, at most max. */
struct cn_inside {
	pid_t tid;
	unsigned idx, calls;
};
int cn_gate_inside(struct cn_inside *out, int max);

/* In a forked child: the parent's other threads are gone, the gate is open. */
void cn_gate_after_fork(void);

/* ---- for the naps (nap.c) ---- */

/* The calls the app's threads have made that work the GPU (not queries, getters or context
 * switches: fns.h's work flag): the sum changes while the app works. */
unsigned long cn_gate_work(void);

/* The gate closed for a nap: NONE (not a nap: every call waits), CLOSING (the nap under way:
 * every call waits, those that need the GPU ask for a wake), ASLEEP (calls that need no GPU are
 * answered at the gate, cuda/answers.c; the rest ask for a wake and wait). A wake is asked for
 * once per nap, by calling wake (in an app thread: it must only write to the agent's pipe). */
enum cn_gate_nap { CN_GATE_NAP_NONE, CN_GATE_NAP_CLOSING, CN_GATE_NAP_ASLEEP };
void cn_gate_nap(enum cn_gate_nap phase, void (*wake)(void));

/* Whether the process is leaving: exit() runs its handlers (an atexit handler of the gate's,
 * registered at the app's first driver call, after the libraries' own, so run before theirs).
 * A napping process's teardown calls are then answered without a wake (cuda/answers.c; a call
 * that needs the GPU still wakes it), and it is not napped. */
bool cn_gate_leaving(void);

/* When (cn_clock_ms) a query of the app's (cuEventQuery, cuStreamQuery) last found its work not
 * done; 0: never. wrap.c. */
double cn_wrap_busy_ms(void);

/* [nap] make_room: ask, in the app's thread, when the driver refused an outermost allocation or
 * context of the app's as out of memory, or a context as unavailable (idx, its argument
 * registers gp); when it says room was made the call is tried once more, through the gate, and
 * done is called after. wrap.c. */
void cn_wrap_on_oom(bool (*ask)(unsigned idx, const uint64_t *gp, bool unavailable),
		    void (*done)(void));
/* [nap] make_room as the INI says now (read again at each action): off, no call asks. wrap.c. */
void cn_wrap_oom_on(bool on);

/* ---- for the calls' side (stubs.S, wrap.c) ---- */

/* Each thread's own, in static TLS (cheap to reach from a preloaded library). The fast path in
 * stubs.S reads depth and writes in; the rest is the slow path's. */
struct cn_gate_tl {
	unsigned depth;	   /* our entry points nested on this thread's stack; CN_TL_FRESH and up:
			      no record (yet), or cudanap's thread */
	atomic_uint in;	   /* 1 + the table index of the call the thread is inside; 0: none */
	atomic_uint calls; /* outermost calls the thread has made (the agent reads it) */
	atomic_uint work;  /* those of them that work the GPU (the naps' idleness) */
	bool ours;	   /* cudanap's thread (cn_gate_self) */
	bool checked_in;   /* a record was looked for */
	bool counted;	   /* without a record, inside a call: in the shared count */
	bool lifted;	   /* its depth raised to FRESH for its next call's slow path (answers.c) */
	bool retrying;	   /* trying a call again after room was made for it (wrap.c) */
};
extern __thread struct cn_gate_tl cn_gate_tl __attribute__((tls_model("initial-exec")));
_Static_assert(offsetof(struct cn_gate_tl, depth) == CN_TL_DEPTH &&
		       offsetof(struct cn_gate_tl, in) == CN_TL_IN &&
		       offsetof(struct cn_gate_tl, calls) == CN_TL_CALLS &&
		       offsetof(struct cn_gate_tl, work) == CN_TL_WORK,
	       "stubs.S reads struct cn_gate_tl at these offsets");

/* The gate's word: 0 open, 1 closed, 2 holding (cn_gate_hold); and whether a thread's mark must
 * fence (no membarrier(2) to do it from the agent's side, or a ThreadSanitizer build, which cannot
 * see membarrier). */
extern atomic_int cn_gate_word;
extern bool cn_gate_fence;

/* A thread's first call: a record for it, so that the agent sees when it is inside a call (its
 * depth 0 from then on: the fast path); without one (every record taken) it stays on the slow
 * path, counted in one shared counter. */
void cn_gate_check_in(void);
/* The slow half of passing, for the outermost call of a thread (made from caller): mark it inside
 * call idx, waiting first while the gate is closed, or holding and its filter says no. NULL then;
 * or, while the process naps, the function that answers the call in the driver's place
 * (answers.c), the thread left outside. */
void *cn_gate_pass(unsigned idx, const void *caller);
/* The slow half of leaving it. */
void cn_gate_leave(void);
#endif /* __ASSEMBLER__ */

#endif
