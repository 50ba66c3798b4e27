/* hold: which of the app's driver calls go on while an NCCL job is being suspended, and when its
 * GPU work has settled (docs/FILES.md). */
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
