/* hostbuf: the pinned host buffer a light nap copies into when it is ready before the nap: kept
 * since the last wake, or made ahead while the process idles. See hostbuf.c. */
#ifndef CN_HOSTBUF_H
#define CN_HOSTBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Host copies are faulted in and pinned by chunks of this. */
#define CN_HOSTBUF_CHUNK (256ull << 20)

/* len bytes at p faulted in (written), by steps of CN_HOSTBUF_STEP: the memory map's lock, which
 * faulting holds, is held no longer at a time, for the app's and the driver's calls beside it. */
#define CN_HOSTBUF_STEP (16ull << 20)
void cn_hostbuf_fault(char *p, size_t len);

/* A host buffer: its mapping of bytes, its chunks and which are pinned, and the context they were
 * pinned through (the pinning is portable: any of the process's contexts). */
struct cn_hostbuf {
	char *host;
	size_t bytes, chunks;
	bool *pinned;
	void *ctx;
};

/* The pinned chunks of b unpinned through the current context (one the driver says is not pinned
 * counts as unpinned): whether any stays pinned. */
bool cn_hostbuf_unpin(struct cn_hostbuf *b);

/* The ready buffer moved into *b for a copy of total bytes through ctx: true when there was one
 * that holds them. One of another context, too small, or more than twice as large is let go. A
 * making under way is stopped first; the chunks it did not reach are not pinned. */
bool cn_hostbuf_take(size_t total, void *ctx, struct cn_hostbuf *b);

/* b, whose copy is all back on the GPU, made the ready buffer: kept for the next nap (keep), or
 * until cn_hostbuf_let_go_unkept; b is emptied. */
void cn_hostbuf_keep(struct cn_hostbuf *b, bool keep);

/* A ready buffer of bytes made ahead through ctx: mapped now, its chunks faulted in and pinned by
 * up to threads threads of low priority, which end by themselves. 0, -EEXIST when a buffer is
 * ready or being made already, -ENOMEM. */
int cn_hostbuf_ahead(size_t bytes, void *ctx, unsigned threads);

/* The ready buffer: its bytes (0: none), and whether threads still make it. */
unsigned long long cn_hostbuf_bytes(void);
bool cn_hostbuf_making(void);

/* How a buffer is let go: NOW, by the calling thread (the app's calls wait at the gate, or it is
 * the app's own thread); IN_PAUSES, by a thread of its own for an app whose calls go on: an unpin
 * holds the driver's lock they need, so each chunk is unpinned once the app's GPU work has paused
 * (20 ms at most a chunk), and the calls inside at its end go first (100 ms at most); ASIDE, by
 * that thread without giving way (another process waits for the memory). Anything else that
 * changes the buffers (a let-go of another buffer, a take, a keep, the end of the context it was
 * pinned through) waits for one still going, hurried; the exit stops it after its chunk. */
enum cn_hostbuf_how { CN_HOSTBUF_NOW, CN_HOSTBUF_IN_PAUSES, CN_HOSTBUF_ASIDE };

/* The ready buffer let go (unpinned, unmapped): true when there was one. Never after the process
 * began to exit; NOW also waits for one still going. */
bool cn_hostbuf_let_go(enum cn_hostbuf_how how);
/* ... only when its wake did not keep it. */
bool cn_hostbuf_let_go_unkept(enum cn_hostbuf_how how);

/* A let-go by a thread of its own that ended since the last call: true, and what it let go, its
 * time, how long it waited for the app's pauses, what the driver would not unpin (left mapped). */
struct cn_hostbuf_gone {
	unsigned long long mib, left_mib;
	size_t chunks;
	double ms, waited_ms;
};
bool cn_hostbuf_gone(struct cn_hostbuf_gone *st);
/* Whether a let-go by a thread of its own is under way (or ended, its figures not yet taken). */
bool cn_hostbuf_going(void);
/* The host memory this process's copies hold: the ready buffer's and what a going one still has
 * mapped (its next nap waits for that to be let go, so it is room for that nap's copy too). */
unsigned long long cn_hostbuf_held_bytes(void);
/* One going hurried: it gives way to the app's calls no more (another process waits for its
 * memory). */
void cn_hostbuf_hurry(void);

/* In a forked child: the parent's buffer is not its own (MADV_DONTFORK: never mapped there). */
void cn_hostbuf_after_fork(void);

#endif
