/* rates: how long suspends and resumes take on this machine. See rates.c. */
#ifndef CN_RATES_H
#define CN_RATES_H

#include <stddef.h>

enum cn_rate_kind { CN_RATE_SUSPEND, CN_RATE_RESUME, CN_RATE_SUSPEND_DISK, CN_RATE_RESUME_DISK };

/* A suspend or resume of gib GiB took seconds on a GPU of model: kept for the estimates. */
void cn_rates_record(const char *model, enum cn_rate_kind kind, double gib, double seconds);

/* The time a suspend or resume of gib GiB will take on a GPU of model, in seconds, and where the
 * figure comes from ("this machine: 12 suspends on NVIDIA H100 80GB HBM3", or the defaults). */
double cn_rates_estimate(const char *model, enum cn_rate_kind kind, double gib, char *source,
			 size_t len);

#endif
