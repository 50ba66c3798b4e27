/* owned: large device memory served by cudanap in pieces the driver can restore, in the app's
 * threads at their allocation calls ([memory] own). */
#ifndef CN_OWNED_H
#define CN_OWNED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_config.h"
#include "cuda_abi.h"

/* The driver restores a physical allocation that another GPU may access only up to this size: one
 * of cuMemAlloc's with peer access on, or a handle of cuMemCreate's mapped to another GPU, over it
 * is lost at the restore (docs/DRIVER.md, One process on several GPUs). */
#define CN_OWNED_LINE (256ull << 20)

/* [memory] own, as the agent read it last: auto owns in a process that sees more than one GPU,
 * or where light naps are allowed ([nap] depth), which owns every allocation of 2 MiB or more. */
void cn_owned_config(enum cn_own mode, bool light_naps);

/* The function that serves a call of the driver's function real in the driver's place, for
 * memory cudanap owns or is to own; NULL when the driver's own is to be called. App threads,
 * inside the gate. */
void *cn_owned_route(void *real);

/* Whether ptr lies in an allocation cudanap owns; whether it owns anything. */
bool cn_owned_has(uint64_t ptr);
bool cn_owned_some(void);
/* The bytes it owns now. */
unsigned long long cn_owned_bytes(void);

/* GPU from (a CUDA ordinal) was given access to GPU to's memory (cuCtxEnablePeerAccess), or it
 * was taken back (off): the allocations cudanap owns on to are mapped to from as well, those made
 * from now on too, as the driver's peer access lets from reach memory of cuMemAlloc's; taken back,
 * what is mapped stays. Called inside the app's call (peers.c). */
void cn_owned_peer(int from, int to, bool on);

/* gone(ctx, -1) is called in the app's thread before the driver destroys a context, gone(NULL,
 * dev) before it resets a device's primary context: what is kept through it is let go then
 * (light.c's kept host copy). */
void cn_owned_watch_ctx(void (*gone)(void *ctx, int dev));

/* For the status: what is owned now ("33608 MiB in 132 pieces of 256 MiB at most, 2
 * allocations"), and the CUDA IPC exports of owned memory refused; the length written. */
size_t cn_owned_describe(char *out, size_t len);

/* A piece of owned memory as a light nap moves it (light.c): its range, its device and a context
 * of the app's on it, the devices with access to it (read by cn_owned_give), and which split
 * handle's piece it is (0: an allocation's). */
struct cn_owned_span {
	uint64_t va;
	size_t bytes;
	int dev;
	void *ctx;
	uint64_t rw, ro; /* the devices with read-write access, and with read-only access */
	uint64_t split;
	unsigned piece;
};

/* What a light nap moves, in address order within each allocation: every owned allocation's
 * pieces, and each split handle's mapped once whole (the rest, *kept bytes, stays on the GPU).
 * Malloc'd, *count of them; NULL when out of memory. The agent thread, the gate closed. */
struct cn_owned_span *cn_owned_spans(size_t *count, unsigned long long *kept);

/* The span's memory given back to the driver (unmapped, released), its access remembered in
 * sp->rw and sp->ro; and new memory made (a split handle's piece with the handle's properties),
 * mapped at the same address and given that access again. The driver's answer (take:
 * CUDA_ERROR_OUT_OF_MEMORY while the GPU has no room). */
CUresult cn_owned_give(struct cn_owned_span *sp);
CUresult cn_owned_take(const struct cn_owned_span *sp);

/* In a forked child: its parent's memory is not its own (the registry emptied, its lock made
 * anew). */
void cn_owned_after_fork(void);

#endif
