/* median: the median of a sample, for the benchmarks (sorts it in place). */
#ifndef CN_MEDIAN_H
#define CN_MEDIAN_H

#include <stdlib.h>

static inline int cn_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double cn_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cn_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
