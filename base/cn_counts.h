/* counts: what a process's actions add up to in its status file, by action and result, and how
 * long they took, for cudanap metrics (docs/FILES.md). */
#ifndef CN_COUNTS_H
#define CN_COUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "cn_outcome.h"

/* (action, result) pairs kept: the actions' successes and a dozen kinds of failure; a result
 * that does not fit is counted as its action's "OTHER" (cn_counts_add). */
#define CN_COUNTS_MAX 16
/* A histogram's buckets: one for each bound of cn_counts_bounds (seconds, ascending), and the last
 * for what is above them all. */
#define CN_COUNTS_BUCKETS 12
extern const double cn_counts_bounds[CN_COUNTS_BUCKETS - 1];

struct cn_count {
	enum cn_action action;
	char result[48];
	unsigned long long n;
};

/* Not cumulative: n[k] counts what fell in bucket k alone. */
struct cn_hist {
	unsigned long long n[CN_COUNTS_BUCKETS];
	double sum_s;
};

struct cn_counts {
	struct cn_count by[CN_COUNTS_MAX];
	int n_by;
	struct cn_hist suspend; /* suspends and naps that succeeded: the agent's whole action */
	struct cn_hist resume;	/* resumes and wakes that succeeded */
	struct cn_hist wake;	/* what the call that woke a nap waited, from its arrival */
};

/* One more action ended with result (its name: "ok", "NO_GPU_MEMORY", a CUDA error's). */
void cn_counts_add(struct cn_counts *c, int action, const char *result);
/* One more duration. */
void cn_counts_observe(struct cn_hist *h, double seconds);

/* The status file's fields, each after a comma: "actions" ("suspend ok 3,suspend
 * CUDA_ERROR_NOT_READY 1"), then each histogram's buckets ("0,1,3,0,...") and sum of seconds
 * (suspend_buckets, suspend_sum_s, resume_..., wake_...). The length written, or -ENOSPC. */
int cn_counts_json(const struct cn_counts *c, char *buf, size_t len);
/* One such field read back, if key is one (true): what is not well formed is left out (an
 * unknown action, a result that is not a name, a count that is not a number below 2^53, a sum
 * that is not finite and 0 or more). */
bool cn_counts_field(struct cn_counts *c, const char *key, const char *value);

#endif
