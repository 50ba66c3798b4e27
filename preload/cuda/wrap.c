/* wrap: what happens at each driver call the app makes, around the driver's own function.
 *
 * Every entry point of the gate (stubs.S) runs one trampoline: it saves the call's argument
 * registers in a frame, asks cn_fn_enter for the driver's function, calls it with the same
 * registers and stack arguments, and tells cn_fn_leave, which may look at the result. The fast
 * halves below know nothing of a signature and must not touch a vector register (the trampoline
 * saves those only for the slow halves); whatever they cannot do at once they hand to the slow
 * halves: a thread's first call, a function not yet resolved, a closed gate, a counted call, and
 * the kinds whose arguments or results matter: cuGetProcAddress, whose answer is wrapped in turn
 * (lookup.c), cuGetExportTable, noted, and the CUDA IPC imports, counted for the preflight
 * (ipc.c). Runs in the app's threads. */
#define _GNU_SOURCE
/* No vector register anywhere in this file: the fast halves run before the trampoline has saved
 * the app's floating-point arguments, and the slow ones use none. */
#pragma GCC target("general-regs-only")
#include <stdint.h>

#include "cuda_abi.h"
#include "fns.h"
#include "gate.h"
#include "ipc.h"

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

/* The function to call and the stack words to copy for it; fn NULL: take the slow half. */
struct cn_call {
	void *fn;
	uint64_t words;
};

#define FAST __attribute__((visibility("hidden")))

/* Called by a thread inside libcuda's own code, or by cudanap's: no look at the gate. */
static inline __attribute__((always_inline)) bool passes(const struct cn_frame *f)
{
	return cn_tl.ours ||
	       (uintptr_t)f->caller - atomic_load_explicit(&cn_drv_lo, memory_order_relaxed) <
		       atomic_load_explicit(&cn_drv_len, memory_order_relaxed);
}

FAST struct cn_call cn_fn_enter(unsigned idx, const struct cn_frame *f);
FAST struct cn_call cn_fn_enter(unsigned idx, const struct cn_frame *f)
{
	const struct cn_fn *e = &cn_fns[idx];
	void *real = atomic_load_explicit(&e->real, memory_order_acquire);

	if (!real || e->slow || !cn_tl.rec)
		return (struct cn_call){ NULL, 0 };
	if (cn_tl.depth++ || passes(f) || cn_gate_try(idx))
		return (struct cn_call){ real, e->words };
	cn_tl.depth--;
	return (struct cn_call){ NULL, 0 };
}

FAST int cn_fn_leave(unsigned idx, const struct cn_frame *f);
FAST int cn_fn_leave(unsigned idx, const struct cn_frame *f)
{
	(void)f;
	if (!cn_tl.rec || cn_fns[idx].after)
		return 1;
	if (--cn_tl.depth == 0)
		cn_gate_out();
	return 0;
}

/* What a function that is not there answers: cuda.h's CUDA_ERROR_NOT_FOUND. */
static CUresult missing(void)
{
	return 500;
}

__attribute__((visibility("hidden"))) struct cn_call cn_fn_enter_slow(unsigned idx,
								      const struct cn_frame *f);
struct cn_call cn_fn_enter_slow(unsigned idx, const struct cn_frame *f)
{
	struct cn_fn *e = &cn_fns[idx];
	void *real = cn_fn_resolve(idx);

	if (e->slow)
		atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
	if (cn_tl.depth++ == 0 && !passes(f))
		cn_gate_pass(idx);
	if (!real)
		return (struct cn_call){ (void *)missing, 0 };
	return (struct cn_call){ real, e->words };
}

/* cuGetProcAddress(symbol, pfn, cudaVersion, flags[, status]): the function handed out is the
 * driver's; the app gets ours for it. */
static void lookup_after(const struct cn_frame *f)
{
	const char *symbol = (const char *)f->gp[0];
	void **pfn = (void **)f->gp[1];

	if ((CUresult)f->ret[0] == CUDA_SUCCESS && pfn && *pfn && symbol)
		*pfn = cn_fn_wrap(*pfn, symbol, CN_PATH_PROC);
}

__attribute__((visibility("hidden"))) void cn_fn_leave_slow(unsigned idx, const struct cn_frame *f);
void cn_fn_leave_slow(unsigned idx, const struct cn_frame *f)
{
	const struct cn_fn *e = &cn_fns[idx];
	bool ok = (CUresult)f->ret[0] == CUDA_SUCCESS;

	switch (e->kind) {
	case CN_KIND_LOOKUP:
		lookup_after(f);
		break;
	case CN_KIND_EXPORT:
		if (ok)
			cn_fn_note_export((const void *)f->gp[1]);
		break;
	case CN_KIND_IPC_OPEN:
	case CN_KIND_IPC_IMPORT:
		if (ok)
			cn_ipc_count(e->name, f->caller, 1);
		break;
	case CN_KIND_IPC_CLOSE:
		if (ok)
			cn_ipc_count(e->name, f->caller, -1);
		break;
	}
	if (--cn_tl.depth == 0)
		cn_gate_leave();
}
