/* near: which known word a mistyped one was meant to be, for "did you mean ...?" hints. */
#ifndef CN_NEAR_H
#define CN_NEAR_H

#include <stddef.h>

/* The edits that turn a into b, letters compared without case: a letter put in, left out,
 * changed, or two neighbours swapped ("idel_s" is one from "idle_s"). Words over 63 bytes are
 * far from everything (a large number). */
unsigned cn_near_distance(const char *a, const char *b);

/* The index of the word of words[0..n) that typed is near enough to be a slip for (at most one
 * edit in a word of four letters or less, two up to eight, three beyond; the nearest, the first
 * of equals), or -1. A word equal to typed but for case is the nearest of all. */
int cn_near_best(const char *typed, const char *const *words, size_t n);

#endif
