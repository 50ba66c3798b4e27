/* query: what a suspend would do now, asked. See query.c. */
#ifndef CN_QUERY_H
#define CN_QUERY_H

/* Answer in the status file's query fields, without acting. */
void cn_query(void);

#endif
