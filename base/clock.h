/* clock: CLOCK_MONOTONIC in milliseconds and nanoseconds, for the timings of the preload and the
 * controller. */
#ifndef CN_CLOCK_H
#define CN_CLOCK_H

#include <time.h>

static inline double cn_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline unsigned long long cn_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

#endif
