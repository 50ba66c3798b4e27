/* peers: the access the app's GPUs have to each other's memory. See peers.c. */
#ifndef CN_PEERS_H
#define CN_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/allocargs.h"
#include "cn_uuid.h"

/* ---- at the gate, in the app's threads, after the call (wrap.c); result is the call's, which
 * may be changed ---- */

/* The function that makes a call changing access in the driver's place (cuCtxEnablePeerAccess,
 * cuCtxDisablePeerAccess, cuMemSetAccess, cuMemPoolSetAccess): it calls the driver, then notes
 * what changed (and tells owned.c), inside the call; NULL for any other function. */
void *cn_peers_route(void *real);
/* Device memory allocated by name (cuMemAlloc*, cuMemAllocPitch*; a pool's allocations are
 * not looked at), its arguments and what it gave decoded (allocargs.h), and any freed
 * (cuMemFree*). */
void cn_peers_alloc(const char *name, const struct cn_alloc_args *a, const void *caller);
void cn_peers_free(uint64_t ptr);
/* cuDeviceCanAccessPeer(can, dev, peer). */
void cn_peers_can(int *can, int dev, int peer, uint64_t *result);
/* cuMemUnmap(ptr, size), done: the large mappings in it are forgotten. */
void cn_peers_unmap(uint64_t ptr, uint64_t size);

/* ---- for the agent ---- */

/* Peer access turned on with cuCtxEnablePeerAccess and not off (dropped by a suspend counts as
 * off): how many directions. */
int cn_peers_held(void);

/* The directions a suspend turned off, not on again yet. */
int cn_peers_dropped(void);

/* Peer access on and an allocation of cuMemAlloc's over the line held (its count; 0: none, or no
 * access on). why: the first such allocation ("512 MiB by cuMemAlloc_v2 in libc10_cuda.so"). */
int cn_peers_large(char *why, size_t len);

/* What the driver could not restore now, of the memory the process's GPUs share (docs/DRIVER.md,
 * One process on several GPUs): CN_PEERS_LARGE (the above; not counted with peer_off: a suspend
 * turns the access off), CN_PEERS_MAPPED (a mapping of cuMemCreate's over the line another GPU
 * may access), CN_PEERS_POOL (a pool another GPU may access, restored without that access); 0
 * when none. why: the first, in words, its GPUs by their index among gpus as
 * cn_peers_describe names them. */
enum { CN_PEERS_LARGE = 1, CN_PEERS_MAPPED, CN_PEERS_POOL };
int cn_peers_unrestorable(const struct cn_uuid *gpus, int n, bool peer_off, char *why, size_t len);

/* "GPU 0->1, GPU 1->0 by cuCtxEnablePeerAccess in libc10_cuda.so" for the live directions (0->1:
 * GPU 0 may access GPU 1's memory), then "; off since the resume: ..." for those a suspend turned
 * off, then "; mapped: GPU 1->0 by cuMemSetAccess in libnccl.so.2" for the grants seen, by who
 * made them; "" when there is none. GPUs by their index among gpus (the machine's, nvidia-smi
 * order; n 0: not known), else "cuda:0->cuda:1", the process's numbers; every pair of three GPUs
 * or more as "all 56 directions between GPUs 0,1,2,3,4,5,6,7", a list too long for len cut
 * (peerlist.h). */
void cn_peers_describe(const struct cn_uuid *gpus, int n, char *out, size_t len);

/* Turn off every live direction (the agent's thread, the gate closed): 0, or -1 with why when one
 * would not (those already off are turned on again first). */
int cn_peers_drop(char *why, size_t len);
/* Ask again for the directions a suspend turned off: how many stay off (0: all back), why with the
 * driver's answer for the first. */
int cn_peers_raise(char *why, size_t len);
/* The process was restored: from now on the driver refuses peer access to the memory it holds
 * (docs/DRIVER.md), and the app is told its GPUs cannot access each other. */
void cn_peers_restored(void);

/* The process was restored onto other GPUs: the GPU with UUID was[k] is now[k], for k < n. The
 * directions and grants follow their GPUs (the driver answers a device's new UUID after the move).
 */
void cn_peers_moved(const struct cn_uuid *was, const struct cn_uuid *now, int n);

/* In a forked child: the parent's contexts are not its own. */
void cn_peers_after_fork(void);

#endif
