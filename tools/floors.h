/* floors: see floors.c. Used by the benchmark only. */
#ifndef CN_FLOORS_H
#define CN_FLOORS_H

#include <stdbool.h>
#include <stddef.h>

struct cn_floors {
	size_t bytes;	  /* buffer size measured */
	unsigned threads; /* the "N threads" of every [1] below */
	/* GiB/s with one thread [0] and with `threads` [1]; 0 where it could not be measured */
	double populate_4k[2], populate_thp[2], memcpy[2];
};

void cn_floors_measure(size_t bytes, unsigned threads, struct cn_floors *f);
/* A table of the rates and, for each of the n sizes in GiB, the seconds they take at N threads. */
void cn_floors_print(const struct cn_floors *f, const double *gib, int n);

#endif
