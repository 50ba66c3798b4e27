/* owned: large device memory served by cudanap in pieces the driver can restore, in the app's
 * threads at their allocation calls ([memory] own). */
#ifndef CN_OWNED_H
#define CN_OWNED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_config.h"

/* The driver restores a physical allocation that another GPU may access only up to this size: one
 * of cuMemAlloc's with peer access on, or a handle of cuMemCreate's mapped to another GPU, over it
 * is lost at the restore (docs/DRIVER.md, One process on several GPUs). */
#define CN_OWNED_LINE (256ull << 20)

/* [memory] own, as the agent read it last: auto owns in a process that sees more than one GPU. */
void cn_owned_config(enum cn_own mode);

/* The function that serves a call of the driver's function real in the driver's place, for
 * memory cudanap owns or is to own; NULL when the driver's own is to be called. App threads,
 * inside the gate. */
void *cn_owned_route(void *real);

/* Whether ptr lies in an allocation cudanap owns. */
bool cn_owned_has(uint64_t ptr);

/* GPU from (a CUDA ordinal) was given access to GPU to's memory (cuCtxEnablePeerAccess), or it
 * was taken back (off): the allocations cudanap owns on to are mapped to from as well, those made
 * from now on too, as the driver's peer access lets from reach memory of cuMemAlloc's; taken back,
 * what is mapped stays. Called inside the app's call (peers.c). */
void cn_owned_peer(int from, int to, bool on);

/* For the status: what is owned now ("33608 MiB in 132 pieces of 256 MiB at most, 2
 * allocations"), and the CUDA IPC exports of owned memory refused; the length written. */
size_t cn_owned_describe(char *out, size_t len);

/* In a forked child: its parent's memory is not its own (the registry emptied, its lock made
 * anew). */
void cn_owned_after_fork(void);

#endif
