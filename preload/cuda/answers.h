/* answers: calls of a napping process answered at the gate, without the GPU. See answers.c. */
#ifndef CN_ANSWERS_H
#define CN_ANSWERS_H

#include <stdbool.h>

/* Whether call idx can be answered without the GPU now, and the function that answers it in the
 * driver's place (NULL: it needs the GPU, and wakes the process). Run in the calling thread. */
bool cn_answers_can(unsigned idx);
void *cn_answers_fn(unsigned idx);

/* The same for a process leaving (exit's handlers run): its teardown's calls (frees, destroys,
 * unloads, releases, synchronizations) answered CUDA_ERROR_DEINITIALIZED, as the driver answers
 * while it shuts down; NULL for a call that needs the GPU still (it wakes the process). */
void *cn_answers_leaving_fn(unsigned idx);

/* A stream capture the app began (+1) or ended (-1). */
void cn_answers_capture(int d);

/* The calling thread kept a context made current during a nap: made current now, for real, in
 * the driver (its next call that enters it is about to). */
void cn_answers_replay(void);

/* The calling thread keeps such a context. */
bool cn_answers_pending(void);
/* ... and forgets it: in a forked child, the parent's nap's. */
void cn_answers_forget(void);

/* In a forked child: the parent's captures are not its own. */
void cn_answers_after_fork(void);

#endif
