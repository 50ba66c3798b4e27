/* staging: see staging.c. The agent arms it around the checkpoint request only. */
#ifndef CN_STAGING_H
#define CN_STAGING_H

#include <stdbool.h>
#include <stddef.h>

struct cn_staging_stats {
	size_t bytes;	    /* size of the host copy we staged; 0 if the driver made none */
	bool huge;	    /* MADV_HUGEPAGE accepted */
	bool reused;	    /* a kept buffer from the last suspend was handed out */
	unsigned threads;   /* prefault threads */
	double prefault_ms; /* map + advise + prefault */
	double unmap_ms;    /* the driver's munmap after restore (0 when kept) */
	void *addr;	    /* where the host copy is */
	bool file;	    /* backed by the hibernate file */
	int file_err;	    /* why it could not be (errno of posix_fallocate or mmap), 0 if none */
};

void cn_staging_init(void);
bool cn_staging_thp_available(void);
/* file: the hibernate file to back the host copy with (hibernate.c), or -1 for RAM. */
void cn_staging_arm(bool hugepages, unsigned threads, bool keep, int file);
void cn_staging_disarm(struct cn_staging_stats *out);

/* In a forked child: a window the parent had open is not the child's. */
void cn_staging_after_fork(void);
void cn_staging_unmap_stats(struct cn_staging_stats *out);

#endif
