/* actions: what the agent does at a signal: suspend.c and resume.c. */
#ifndef CN_ACTIONS_H
#define CN_ACTIONS_H

void cn_suspend(void);
void cn_resume(void);
/* cudanap prepare: fault the next checkpoint's host copy in ahead, and hold it a while. */
void cn_prepare(void);
/* The prepared copy was not used in time: give it back, and say so. */
void cn_prepare_expired(void);
/* What a suspend would do now, without doing it (query.c): in the status file's query fields. */
void cn_query(void);

#endif
