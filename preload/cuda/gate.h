/* gate: the driver calls of the app's threads, held while its process is suspended. See gate.c.
 * The agent closes and opens it; wrap.c passes every call through it. */
#ifndef CN_GATE_H
#define CN_GATE_H

#include <stdatomic.h>
#include <stdbool.h>
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
int cn_gate_close(unsigned timeout_ms, double *waited_ms, char *why, size_t len);

/* Close it without waiting for anyone: for a process the driver holds locked already, whose
 * threads inside a call wait there for the unlock. */
void cn_gate_shut(void);

/* Open the gate: the calls waiting at it go on into libcuda. */
void cn_gate_open(void);
bool cn_gate_is_closed(void);

/* What the gate held since it last closed: the calls that waited (a thread waiting again after a
 * spurious wake counts once) and the longest wait so far, in ms. */
void cn_gate_held(unsigned long *calls, double *longest_ms);

/* In a forked child: the parent's other threads are gone, the gate is open. */
void cn_gate_after_fork(void);

/* ---- for wrap.c: the calling thread's side ---- */

/* One per app thread that has called the driver: read by the agent. */
struct cn_thr {
	atomic_uint in; /* 1 + the table index of the call this thread is inside; 0: none */
	pid_t tid;
	bool used;
} __attribute__((aligned(64)));

/* Per thread, static TLS: cheap to reach from the preloaded library. */
struct cn_tl {
	unsigned depth;	    /* our entry points nested on this thread's stack */
	bool ours;	    /* cudanap's thread (cn_gate_self) */
	bool checked_in;    /* rec was looked for */
	bool counted;	    /* without a record, inside a call: in the shared count */
	struct cn_thr *rec; /* NULL: none (every record in use): the thread is counted globally */
};
extern __thread struct cn_tl cn_tl __attribute__((tls_model("initial-exec")));

/* The gate's word: 0 open, 1 closed. */
extern atomic_int cn_gate_word;
/* Whether the app's side must fence: no membarrier(2) to do it from the agent's side (or a
 * ThreadSanitizer build, which cannot see membarrier). */
extern bool cn_gate_fence;

/* The slow half of passing: records the thread if it has no record yet, then marks it inside
 * call idx, waiting first while the gate is closed. */
void cn_gate_pass(unsigned idx);
/* The slow half of leaving: the thread is outside again (one without a record too). */
void cn_gate_leave(void);

/* The fast half: mark the thread inside call idx; false when the gate is closed (or the thread
 * has no record), and then cn_gate_pass does it all. Must not touch a vector register: the
 * trampoline has not saved the app's floating-point arguments when it runs. */
static inline __attribute__((always_inline)) bool cn_gate_try(unsigned idx)
{
	struct cn_thr *r = cn_tl.rec;

	if (!r)
		return false;
	/* Paired with the agent's membarrier in cn_gate_shut: either the agent sees this thread
	 * inside, or this thread sees the gate closed. Without membarrier the store itself is the
	 * full barrier (an exchange). */
	if (__builtin_expect(cn_gate_fence, 0)) {
		atomic_exchange_explicit(&r->in, idx + 1, memory_order_seq_cst);
	} else {
		atomic_store_explicit(&r->in, idx + 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
	}
	return !atomic_load_explicit(&cn_gate_word, memory_order_seq_cst);
}

/* The fast half of leaving, for a thread with a record. */
static inline __attribute__((always_inline)) void cn_gate_out(void)
{
	atomic_store_explicit(&cn_tl.rec->in, 0, memory_order_release);
}

#endif
