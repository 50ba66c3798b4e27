/* jobdirs: the per-job status directories of a node, which root makes, reads and removes. See
 * jobdirs.c. */
#ifndef CN_JOBDIRS_H
#define CN_JOBDIRS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where job's directory is: <statusbase>/cudanap/job<J>. */
void cn_jobdirs_path(const char *statusbase, uint32_t job, char *out, size_t len);

/* As root, for a task of job (user uid:gid): make <statusbase>/cudanap (root's, 0711) and the
 * job's directory in it (uid's, 0700), or find them there as they must be. 0, or -errno with why
 * in one line. */
int cn_jobdirs_make(const char *statusbase, uint32_t job, uid_t uid, gid_t gid, char *why,
		    size_t len);

/* As root, at the job's end: the job's directory and whatever is in it (files, links,
 * directories, whatever their modes), only if uid (or root) owns it; nothing is followed. 0 (also
 * when there is none), or -errno with why. */
int cn_jobdirs_remove(const char *statusbase, uint32_t job, uid_t uid, char *why, size_t len);

/* As root: how many processes of job (user uid) still hold GPU memory they may let go, by their
 * status files and /proc; *frozen: those Slurm stopped before their checkpoint ended; *first:
 * the first one holding. Only files uid owns, of uid's processes, are believed; looks no longer
 * than until deadline (CLOCK_MONOTONIC seconds). */
int cn_jobdirs_holding(const char *statusbase, uint32_t job, uid_t uid, double deadline,
		       int *frozen, int *first);

#endif
