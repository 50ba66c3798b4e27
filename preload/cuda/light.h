/* light: a light nap's memory: what cudanap owns copied to host memory and released, the context
 * kept, and put back at the wake (the agent thread, the gate closed). See light.c. */
#ifndef CN_LIGHT_H
#define CN_LIGHT_H

#include <stdbool.h>
#include <stddef.h>

/* What one move took: bytes moved, bytes owned that stay on the GPU (a split handle mapped twice
 * or in part), its pieces, the time; of a copy out, the threads that faulted the host copy in and
 * pinned it, the copy's waits for them (wait_ms), the pinning's time in all of them (pin_ms); its
 * steps: laying the copy out and starting the threads (lay_ms, of it take_ms taking the copy kept
 * or made ahead: its making stopped, or an unfit one let go), issuing the copies (issue_ms);
 * beside the issue, in the giver's thread, waiting for them (copy_ms) and giving the pieces back
 * (give_ms), which overlap issue_ms and do not add up to ms; the threads' and streams' end
 * (end_ms). */
struct cn_light_stats {
	unsigned long long bytes, kept;
	size_t spans;
	unsigned threads;
	bool reused; /* the copy out went to the host copy kept since the last wake */
	double ms, wait_ms, pin_ms, lay_ms, take_ms, issue_ms, copy_ms, give_ms, end_ms;
};

/* The memory cudanap owns copied into host memory (faulted in and pinned by chunks, by threads of
 * its own) and given back to the driver, piece by piece as each is copied; its work done first
 * by the caller, and the host's room for it checked (the lock's check). 0; -1 with why when it
 * could not be (nothing is owned, a copy failed: what was given back is put back, the process runs
 * on; when even that fails, cn_light_holding says so and the wake puts back the rest). */
int cn_light_out(struct cn_light_stats *st, char *why, size_t len);

/* The host copy put back: new memory at the same addresses, with the same access, copied in;
 * the copy then held pinned as the ready buffer (hostbuf.h), kept for the next light nap when
 * keep, else let go by cn_hostbuf_let_go_unkept once the app's calls go on (letting go of pinned memory takes as long as
 * a third of the copy). 0 (nothing was held counts); 1 with why when the GPU has no room, after
 * trying for wait_ms and while coming (NULL: never) says room is still being made (what was put
 * back stays, the rest waits for the next try); -1 with why on an error. */
int cn_light_in(bool keep, unsigned wait_ms, bool (*coming)(void), struct cn_light_stats *st,
		char *why, size_t len);

/* Whether a light nap's host copy is held; what of it is not back on device dev yet (-1: any). */
bool cn_light_holding(void);
unsigned long long cn_light_left(int dev);

/* The host copy unpinned, before the driver's checkpoint takes the rest of the process (the
 * wake pins it again); a kept one let go. */
void cn_light_unpin(void);

/* In a forked child: the parent's host copy is not its own. */
void cn_light_after_fork(void);

#endif
