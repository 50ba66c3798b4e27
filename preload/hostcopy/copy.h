/* copy: see copy.c. The agent arms it around the checkpoint and restore requests only. */
#ifndef CN_COPY_H
#define CN_COPY_H

#include <stdbool.h>
#include <stddef.h>

struct cn_copy_stats {
	int hooked;		 /* libcuda GOT slots redirected (0: copies ran as usual) */
	unsigned threads;	 /* threads per large copy, the caller included */
	unsigned long calls;	 /* memcpy/memmove calls by libcuda in the window */
	size_t bytes;		 /* ... and their bytes */
	unsigned long big_calls; /* calls of 2 MiB or more, the ones split over threads */
	size_t big_bytes, largest;
	double big_ms; /* time spent in the large ones */
};

/* Redirect libcuda's memcpy/memmove and start threads-1 helpers; returns slots hooked.
 * first_large, if not NULL, is called once, in the driver's thread, when the driver starts its
 * first copy of 2 MiB or more: the end of its setup. copied, if not NULL and expect (the host
 * copy's size) is not 0, is called once in the driver's thread after the large copies have moved
 * all but 1/64 of expect: the end of the copy, before the driver's closing work. Both are the
 * restore turns' cues (turns.c). */
int cn_copy_arm(unsigned threads, void (*first_large)(void), void (*copied)(void), size_t expect);
void cn_copy_disarm(struct cn_copy_stats *out);

/* In a forked child: the parent's window, if one was open, is closed without its threads. */
void cn_copy_after_fork(void);

#endif
