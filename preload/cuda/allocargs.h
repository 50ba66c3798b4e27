/* allocargs: what an allocation's or a context's arguments ask, decoded once for every watcher
 * (peers.c after the call, the agent's pager.c when the driver refused it). See allocargs.c. */
#ifndef CN_ALLOCARGS_H
#define CN_ALLOCARGS_H

#include <stdbool.h>
#include <stdint.h>

struct cn_alloc_args {
	uint64_t asked; /* the bytes asked for (a pitched one: width x height); a context's 0 */
	bool context;	/* cuCtxCreate*, cuDevicePrimaryCtxRetain */
	int dev;	/* the device asked for; -1: the calling thread's context's */
	bool narrow;	/* a call before CUDA 3.2: 32-bit addresses and sizes (never owned) */
	uint64_t ptr;	/* after the call: the address given (cuMemAlloc*) */
	uint64_t bytes; /* after the call: the bytes given (a pitched one: pitch x height) */
};

/* The call name's arguments (its argument registers gp), and, once it succeeded (done), what it
 * gave back. False for a call that is none of these (host or managed memory among them, and a
 * cuMemCreate of host memory). */
bool cn_allocargs_read(const char *name, const uint64_t *gp, bool done, struct cn_alloc_args *a);

#endif
