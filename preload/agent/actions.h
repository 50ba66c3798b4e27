/* actions: what the agent does at a signal: suspend.c and resume.c. */
#ifndef CN_ACTIONS_H
#define CN_ACTIONS_H

#include <stdbool.h>

void cn_suspend(void);
void cn_resume(void);
/* The same for a nap (nap.c): action "nap", its own refusals and host copy ([nap] to), its
 * lock's wait at most lock_limit ms (0: [lock] timeout_ms); and its wake, onto the GPUs of map
 * (gpu_map syntax; NULL: the INI's), waiting up to wake_wait_ms for room there (a resume waits
 * [restore] room_wait_s, as the INI says at that moment). */
void cn_suspend_as(bool nap, unsigned lock_limit);
void cn_resume_as(bool wake, const char *map, unsigned wake_wait_ms);
/* cudanap prepare: fault the next checkpoint's host copy in ahead, and hold it a while. */
void cn_prepare(void);
/* The prepared copy was not used in time: give it back, and say so. */
void cn_prepare_expired(void);
/* What a suspend would do now, without doing it (query.c): in the status file's query fields. */
void cn_query(void);

#endif
