/* staging: see staging.c. The agent arms it around the checkpoint request only. */
#ifndef CN_STAGING_H
#define CN_STAGING_H

#include <stdbool.h>
#include <stddef.h>

struct cn_staging_stats {
	size_t bytes;	    /* size of the host copy we staged; 0 if the driver made none */
	bool huge;	    /* MADV_HUGEPAGE accepted */
	bool reused;	    /* a kept or prepared buffer was handed out */
	unsigned threads;   /* prefault threads */
	double prefault_ms; /* map + advise + prefault */
	double unmap_ms;    /* the driver's munmap after restore: the hand-over only, see below */
	void *addr;	    /* where the host copy is */
	bool file;	    /* backed by the hibernate file */
	int file_err;	    /* why it could not be (errno of posix_fallocate or mmap), 0 if none */
};

void cn_staging_init(void);
bool cn_staging_thp_available(void);
/* file: the hibernate file to back the host copy with (hibernate.c), or -1 for RAM. */
void cn_staging_arm(bool hugepages, unsigned threads, bool keep, int file);
void cn_staging_disarm(struct cn_staging_stats *out);

/* Fault in a buffer of len bytes (rounded up to 2 MiB) now, for the next checkpoint's host copy
 * (cudanap prepare): it serves a copy that fits in it and fills at least half of it. A prepared
 * buffer of that size already there is kept. 0, or -errno when it cannot be mapped. */
int cn_staging_prepare(size_t len, bool hugepages, unsigned threads, struct cn_staging_stats *out);
/* Unmap a kept or prepared buffer; returns its size (0: there was none). */
size_t cn_staging_release(void);

/* In a forked child: a window the parent had open is not the child's, nor a buffer it kept. */
void cn_staging_after_fork(void);
void cn_staging_unmap_stats(struct cn_staging_stats *out);
/* Unmap the host copy the driver gave back at the end of a restore, if any: now, or in a thread
 * of its own (the agent, once the resume is reported). */
void cn_staging_free_retired(void);
void cn_staging_free_retired_soon(void);
/* Around fork: a child gets the copy either whole, and unmaps it, or not at all. */
void cn_staging_before_fork(void);
void cn_staging_after_fork_parent(void);

#endif
