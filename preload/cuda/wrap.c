/* wrap: the slow halves of each driver call the app makes, around the driver's own function
 * (docs/FILES.md). The app's threads. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cuda/allocargs.h"
#include "cuda/answers.h"
#include "clock.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/gate.h"
#include "cuda/ipc.h"
#include "cuda/managed.h"
#include "cuda/owned.h"
#include "cuda/peers.h"

__thread const void *cn_wrap_caller __attribute__((tls_model("initial-exec")));

/* What the trampoline keeps on its stack during a call (stubs.S knows these offsets). */
struct cn_frame {
	uint64_t gp[6]; /* rdi, rsi, rdx, rcx, r8, r9: the first six integer arguments */
	uint64_t rax;
	uint64_t idx;
	unsigned char xmm[8][16]; /* saved only around a slow half */
	uint64_t ret[2];	  /* rax, rdx: the driver's answer */
	unsigned char xret[2][16];
	const void *caller; /* the app's return address */
	uint64_t pad;
};
_Static_assert(sizeof(struct cn_frame) == 256, "stubs.S lays the frame out so");

/* The function to call and the stack words to copy for it. */
struct cn_wrap_call {
	void *fn;
	uint64_t words;
};

/* Called by libcuda's own code, or by cudanap's thread: no look at the gate. */
static bool passes(const struct cn_frame *f)
{
	return cn_gate_tl.ours || (uintptr_t)f->caller - atomic_load(&cn_lookup_drv_lo) <
					  atomic_load(&cn_lookup_drv_len);
}

/* The outermost call of a thread: its depth before the call. */
static bool outermost(void)
{
	return cn_gate_tl.depth == 0 || cn_gate_tl.depth == CN_TL_FRESH;
}

/* What a function that is not there answers: cuda.h's CUDA_ERROR_NOT_FOUND. */
static CUresult missing(void)
{
	return 500;
}

/* The kinds whose calls owned.c may serve. */
static bool routed(const struct cn_fn *e)
{
	return e->kind == CN_KIND_ALLOC || e->kind == CN_KIND_FREE || e->kind == CN_KIND_ROOM ||
	       e->kind == CN_KIND_OWNED || e->kind == CN_KIND_PEER_ON ||
	       e->kind == CN_KIND_PEER_OFF || e->kind == CN_KIND_MAP_ACCESS ||
	       e->kind == CN_KIND_POOL_ACCESS;
}

__attribute__((visibility("hidden"))) struct cn_wrap_call
cn_wrap_enter_slow(unsigned idx, const struct cn_frame *f);
struct cn_wrap_call cn_wrap_enter_slow(unsigned idx, const struct cn_frame *f)
{
	struct cn_fn *e = &cn_fns[idx];
	void *real = cn_lookup_resolve(idx), *answer = NULL;
	bool outer;

	if (e->counted)
		atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
	if (cn_gate_tl.lifted) { /* back to its own depth: answers.c raised it */
		cn_gate_tl.lifted = false;
		cn_gate_tl.depth -= CN_TL_FRESH;
	}
	cn_gate_check_in();
	outer = outermost();
	cn_gate_tl.depth++;
	if (outer && !passes(f)) {
		answer = cn_gate_pass(idx, f->caller);
		if (answer) {
			/* Answered at the gate during a nap. A context kept for later takes the
			 * thread's next call through here, whatever the gate by then. */
			if (cn_answers_pending() && cn_gate_tl.depth < CN_TL_FRESH) {
				cn_gate_tl.depth += CN_TL_FRESH;
				cn_gate_tl.lifted = true;
			}
			return (struct cn_wrap_call){ answer, e->words };
		}
		if (cn_answers_pending())
			cn_answers_replay();
	}
	if (!real)
		return (struct cn_wrap_call){ (void *)missing, 0 };
	/* Memory cudanap owns, or is to own, is served in the driver's place (owned.c), and the
	 * calls that change the GPUs' access are made with what they change noted (peers.c). */
	if (routed(e) && !passes(f)) {
		cn_wrap_caller = f->caller;
		if ((answer = cn_owned_route(real)) || (answer = cn_peers_route(real)))
			return (struct cn_wrap_call){ answer, e->words };
	}
	return (struct cn_wrap_call){ real, e->words };
}

/* When a query of the app's last found work not done, in microseconds of cn_clock_ms. */
static atomic_llong busy_us;

double cn_wrap_busy_ms(void)
{
	return (double)atomic_load(&busy_us) / 1000;
}

/* [nap] make_room (cn_wrap_on_oom), and whether the INI as the agent last read it has it on. */
static bool (*_Atomic oom_ask)(unsigned, const uint64_t *, bool);
static void (*_Atomic oom_done)(void);
static atomic_bool oom_on;

void cn_wrap_on_oom(bool (*ask)(unsigned, const uint64_t *, bool), void (*done)(void))
{
	atomic_store(&oom_done, done);
	atomic_store(&oom_ask, ask);
}

void cn_wrap_oom_on(bool on)
{
	atomic_store(&oom_on, on);
}

/* An allocation or a context the driver refused as out of memory (a context as unavailable
 * too): once room is made, the same
 * call again, through its entry point (so through the gate), with the same argument registers
 * (these functions take no stack arguments and no vectors). True when it was tried again: its
 * own after looked at it. */
static bool retry_oom(unsigned idx, struct cn_frame *f, bool unavailable)
{
	typedef CUresult (*fn6)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
	bool (*ask)(unsigned, const uint64_t *, bool) = atomic_load(&oom_ask);
	const uint64_t *g = f->gp;

	if (!ask || !atomic_load(&oom_on) || cn_gate_tl.retrying || !outermost() || passes(f) ||
	    cn_fns[idx].words || !ask(idx, g, unavailable))
		return false;
	cn_gate_tl.retrying = true;
	f->ret[0] = (uint64_t)((fn6)cn_fns_stub(idx))(g[0], g[1], g[2], g[3], g[4], g[5]);
	cn_gate_tl.retrying = false;
	atomic_load (&oom_done)();
	return true;
}

/* cuGetProcAddress(symbol, pfn, cudaVersion, flags[, status]): the function handed out is the
 * driver's; the app gets ours for it. */
static void lookup_after(const struct cn_frame *f)
{
	const char *symbol = (const char *)f->gp[0];
	void **pfn = (void **)f->gp[1];

	if ((CUresult)f->ret[0] == CUDA_SUCCESS && pfn && *pfn && symbol)
		*pfn = cn_lookup_wrap(*pfn, symbol, CN_PATH_PROC);
}

/* An allocation the driver made, noted for peers.c unless cudanap owns the memory; a call before
 * CUDA 3.2 writes a 32-bit pointer: never owned. */
static void alloc_after(const struct cn_fn *e, const struct cn_frame *f)
{
	struct cn_alloc_args a;

	if (cn_allocargs_read(e->name, f->gp, true, &a) && a.ptr &&
	    (a.narrow || !cn_owned_has(a.ptr)))
		cn_peers_alloc(e->name, &a, f->caller);
}

/* After the call, for the kinds that look at it (the thread's depth settled already); a kind may
 * change the answer the app gets (ret[0]). */
__attribute__((visibility("hidden"))) void cn_wrap_after(unsigned idx, struct cn_frame *f);
void cn_wrap_after(unsigned idx, struct cn_frame *f)
{
	const struct cn_fn *e = &cn_fns[idx];
	bool ok = (CUresult)f->ret[0] == CUDA_SUCCESS;

	/* a context refused as unavailable: an exclusive compute mode, another context there */
	if ((e->kind == CN_KIND_ALLOC || e->kind == CN_KIND_ROOM) &&
	    (CUresult)f->ret[0] == CUDA_ERROR_OUT_OF_MEMORY && retry_oom(idx, f, false))
		return;
	if (e->kind == CN_KIND_ROOM && (CUresult)f->ret[0] == CUDA_ERROR_DEVICE_UNAVAILABLE &&
	    retry_oom(idx, f, true))
		return;
	switch (e->kind) {
	case CN_KIND_LOOKUP:
		lookup_after(f);
		break;
	case CN_KIND_EXPORT:
		if (ok)
			cn_lookup_note_export((const void *)f->gp[1]);
		break;
	case CN_KIND_IPC_OPEN:
	case CN_KIND_IPC_IMPORT:
	case CN_KIND_IPC_CLOSE:
		if (ok)
			cn_ipc_count(e->name, f->caller, e->kind == CN_KIND_IPC_CLOSE ? -1 : 1);
		break;
	case CN_KIND_MANAGED:
		if (ok && f->gp[0])
			cn_managed_alloc(*(const uint64_t *)f->gp[0], f->caller);
		break;
	case CN_KIND_FREE:
		if (ok) {
			cn_managed_free(f->gp[0]);
			cn_peers_free(f->gp[0]);
		}
		break;
	case CN_KIND_ALLOC:
		if (ok)
			alloc_after(e, f);
		break;
	case CN_KIND_CAPTURE:
	case CN_KIND_CAPTURED:
		if (ok)
			cn_answers_capture(e->kind == CN_KIND_CAPTURE ? 1 : -1);
		break;
	case CN_KIND_PEER_ON: /* noted inside the call (peers.c) */
	case CN_KIND_PEER_OFF:
	case CN_KIND_MAP_ACCESS:
	case CN_KIND_POOL_ACCESS:
	case CN_KIND_ROOM: /* only its failure (above) */
		break;
	case CN_KIND_PEER_CAN:
		cn_peers_can((int *)f->gp[0], (int)f->gp[1], (int)f->gp[2], &f->ret[0]);
		break;
	case CN_KIND_QUERY:
		if ((CUresult)f->ret[0] == CUDA_ERROR_NOT_READY)
			atomic_store(&busy_us, (long long)(cn_clock_ms() * 1000));
		break;
	case CN_KIND_OWNED: /* only served (cn_owned_route), or a large mapping noted */
		if (e->name && strncmp(e->name, "cuMemUnmap", 10) == 0 && ok)
			cn_peers_unmap(f->gp[0], f->gp[1]);
		break;
	}
}

/* After the call of a thread on the slow path (cudanap's, or one without a record). */
__attribute__((visibility("hidden"))) void cn_wrap_leave_slow(unsigned idx, struct cn_frame *f);
void cn_wrap_leave_slow(unsigned idx, struct cn_frame *f)
{
	cn_gate_tl.depth--;
	if (outermost())
		cn_gate_leave();
	cn_wrap_after(idx, f);
}
