/* interpose: the app's NCCL calls, forwarded to the real library. See interpose.c. */
#ifndef CN_INTERPOSE_H
#define CN_INTERPOSE_H

#include <stdbool.h>

/* At start: a libnccl loaded before this library (earlier in LD_PRELOAD), whose definitions the
 * app's calls then reach first: its communicators cannot be seen. */
bool cn_interpose_shadowed(void);

#endif
