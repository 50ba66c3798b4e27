/* query: what a suspend would do now, asked. See query.c. */
#ifndef CN_QUERY_H
#define CN_QUERY_H

#include "agent/state.h"
#include "cuda/gate.h"

/* The threads inside a call at the last query's look, and when it was: query.c alone. */
#define CN_LOOK_MAX 64
struct cn_look {
	struct cn_inside t[CN_LOOK_MAX];
	int n;
	double at_ms;
};

/* Answer in the status file's query fields, without acting. */
void cn_query(struct cn_agent *ag, struct cn_look *look);

#endif
