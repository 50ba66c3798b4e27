/* hibernate: see hibernate.c. Only the agent calls it (staging.c gets the fd through its arm). */
#ifndef CN_HIBERNATE_H
#define CN_HIBERNATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cn_hibernate_stats {
	double write_ms;   /* sync of what the writer thread had not written yet */
	double pageout_ms; /* dropping the pages */
};

/* An unnamed file in dir (checked like the status dir, never created): its fd, or -1 with err. */
int cn_hibernate_open(const char *dir, char *err, size_t len);
int cn_hibernate_fd(void); /* -1 when none is open */
const char *cn_hibernate_dir(void);
uint64_t cn_hibernate_free_bytes(const char *dir); /* statvfs's f_bavail; UINT64_MAX if unknown */

/* Write-back while the driver copies: started before the checkpoint, stopped by settle. */
void cn_hibernate_writer_start(void);
void cn_hibernate_writer_stop(void);

/* After the checkpoint: everything on disk, then out of RAM. On a write error the copy moves into
 * anonymous memory at the same address and the file is closed; -1 with err saying so. */
int cn_hibernate_settle(void *addr, size_t len, struct cn_hibernate_stats *s, char *err,
			size_t errlen);

/* Before the restore: the copy read back by threads; -1 with err on a read error (keep the job
 * suspended: the file stays open). */
int cn_hibernate_readback(void *addr, size_t len, unsigned threads, double *ms, char *err,
			  size_t errlen);

size_t cn_hibernate_resident(const void *addr, size_t len); /* bytes of it in RAM (mincore) */
uint64_t cn_hibernate_disk_bytes(void);			    /* the file's blocks on disk */
void cn_hibernate_close(void);
void cn_hibernate_after_fork(void);

#endif
