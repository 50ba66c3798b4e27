/* hold: which of the app's driver calls go on while an NCCL job is being suspended, and when the
 * GPU work it started before has settled.
 *
 * PyTorch starts a collective's clock when it creates the collective's work, before it calls NCCL,
 * and its watchdog thread kills the process when a work still on its list is older than the
 * process group's timeout, whether the work has finished or not (it looks at the clock first).
 * So a suspend must leave no work with a running clock: none created and waiting to be issued,
 * none finished and still listed. From the start of the suspend the gate holds every app thread
 * at its next call that starts GPU work (a launch, a copy, a memset, a stream wait, a graph
 * launch) or begins a collective (PyTorch's first driver call in one asks whether the stream is
 * capturing); a thread that has left an NCCL operation and has not been held since may still ask
 * that, as PyTorch's send and receive do before they hand the work to the watchdog. Everything else
 * goes on: the calls NCCL makes (from its own code, or from inside an NCCL call of the app's),
 * event records (an operation's end), the queries and context calls of the watchdog, allocations
 * and frees. A rank that the job's cut finds behind runs freely until it has issued its share
 * (cn_comms_behind). Then the watchdog sees every work end and drops it: the suspend waits until
 * no query of the app's has found work not done for a while (cn_hold_settle), after which the
 * watchdog's list is empty and stays so, asleep or not, and its heartbeat goes on. The facts are
 * in docs/DISTRIBUTED.md (Long sleeps). */
#define _GNU_SOURCE
#include "nccl/hold.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "nccl/comms.h"
#include "cuda/fns.h"
#include "cuda/gate.h"

/* What a driver function is to the hold; 0: not looked at yet. */
enum { UNKNOWN, GOES, STARTS, CAPTURING };

static _Atomic uint8_t kinds[CN_FNS];
/* libnccl's code: calls from there are NCCL's own. */
static _Atomic uintptr_t nccl_lo, nccl_len;

static int kind_of(unsigned idx)
{
	static const char *const starts[] = { "cuLaunch",	    "cuMemcpy",
					      "cuMemset",	    "cuStreamWaitEvent",
					      "cuStreamWaitValue",  "cuStreamWriteValue",
					      "cuStreamBatchMemOp", "cuGraphLaunch" };
	int k = atomic_load_explicit(&kinds[idx], memory_order_relaxed);
	const char *name;

	if (k != UNKNOWN)
		return k;
	name = cn_lookup_name(idx);
	k = GOES;
	for (size_t i = 0; name && i < sizeof(starts) / sizeof(starts[0]); i++)
		if (strncmp(name, starts[i], strlen(starts[i])) == 0)
			k = STARTS;
	if (name && strcmp(name, "cuStreamIsCapturing") == 0)
		k = CAPTURING;
	atomic_store_explicit(&kinds[idx], (uint8_t)k, memory_order_relaxed);
	return k;
}

/* The gate's filter while it holds (cn_gate_hold). */
static bool lets(unsigned idx, const void *caller)
{
	if ((uintptr_t)caller - atomic_load_explicit(&nccl_lo, memory_order_relaxed) <
		    atomic_load_explicit(&nccl_len, memory_order_relaxed) ||
	    cn_comms_thread_inside() || cn_comms_behind())
		return true;
	switch (kind_of(idx)) {
	case STARTS:
		cn_comms_thread_held();
		return false;
	case CAPTURING:
		if (!cn_comms_thread_finishing())
			return false;
		cn_comms_thread_began();
		return true;
	default:
		return true;
	}
}

/* Where the loaded libnccl's code lies (once: a library is not unloaded while it has
 * communicators). */
static void find_nccl(void)
{
	void *f = cn_comms_sym("ncclGetVersion");
	uintptr_t lo, len;

	if (!atomic_load(&nccl_len) && f && cn_lookup_code_of(f, &lo, &len)) {
		atomic_store(&nccl_lo, lo);
		atomic_store(&nccl_len, len);
	}
}

void cn_hold_begin(void)
{
	find_nccl();
	cn_gate_hold(lets);
}

double cn_hold_settle(unsigned quiet_ms, unsigned bound_ms)
{
	double t0 = cn_clock_ms();
	struct timespec tick = { 0, 5 * 1000 * 1000 };

	for (;;) {
		double now = cn_clock_ms(), busy = cn_wrap_busy_ms();

		if (now - (busy > t0 ? busy : t0) >= quiet_ms)
			return now - t0;
		if (now - t0 >= bound_ms)
			return -1;
		nanosleep(&tick, NULL);
	}
}
