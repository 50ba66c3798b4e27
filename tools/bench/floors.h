/* floors: see floors.c. Used by the benchmark only. */
#ifndef CN_FLOORS_H
#define CN_FLOORS_H

#include <stdbool.h>
#include <stddef.h>

struct cn_floors {
	size_t bytes;	  /* buffer size measured */
	unsigned threads; /* the "N threads" of every [1] below: as many as cudanap uses */
	unsigned cpus;	  /* ... and of every [2]: every online CPU */
	/* GiB/s with one thread [0], `threads` [1] and `cpus` [2]; 0 where not measured */
	double populate_4k[3], populate_thp[3], memcpy[3];
};

void cn_floors_measure(size_t bytes, unsigned threads, unsigned cpus, struct cn_floors *f);
/* A table of the rates and, for each of the n sizes in GiB, the seconds they take at N threads. */
void cn_floors_print(const struct cn_floors *f, const double *gib, int n);

#endif
