/* peerlist: a set of directions between GPUs said in one bounded line. See peerlist.c. */
#ifndef CN_PEERLIST_H
#define CN_PEERLIST_H

#include <stddef.h>

/* One direction: GPU a may access GPU b's memory, by the machine's indices (-1: not known), and
 * by the process's CUDA numbers (dev[0] -> dev[1]). */
struct cn_peerlist_dir {
	int a, b;
	int dev[2];
};

/* The n directions of v written at o in out (len bytes, o < len), followed by " by WHO" when who
 * is not NULL: "GPU 0->1, GPU 1->0 by WHO", where a GPU is not known "cuda:0->cuda:1"; every
 * ordered pair of three GPUs or more (a process over 8 GPUs with peer access on between all 56)
 * as "all 56 directions between GPUs 0,1,2,3,4,5,6,7"; a list too long for what is left cut at
 * a whole direction, ", and N more", so that WHO stays whole when it fits at all. Repeated
 * directions count once. Returns the new end (at most len - 1; out stays terminated). */
size_t cn_peerlist_say(const struct cn_peerlist_dir *v, int n, const char *who, char *out,
		       size_t len, size_t o);

#endif
