/* proc: what /proc says of a process. */
#ifndef CN_PROC_H
#define CN_PROC_H

#include <signal.h>
#include <stdbool.h>

/* /proc/PID/stat's start time, or 0 when the process is gone. */
unsigned long long cn_proc_starttime(int pid);

/* Send sig to pid only if it is still the process that started at starttime (as its status file
 * says): a pid read a while ago may since have been reused by another process. With a pidfd the
 * check and the signal concern one process for certain; on a kernel without pidfds, the start time
 * is checked just before the signal. With val, the signal is queued with that value (sigqueue's
 * SI_QUEUE). 0, -ESRCH when the process is gone or is another one now, or -errno. */
int cn_proc_signal(int pid, unsigned long long starttime, int sig, const union sigval *val);

/* Whether pid is a process of Slurm job job, as Slurm made it, not as its environment says (any
 * process may set SLURM_JOB_ID): in the job's cgroup (".../job_<J>/..." in /proc/PID/cgroup, a
 * directory root owns: Slurm's cgroup plugins), or a descendant of the job's step daemon
 * (slurmstepd, root's, titled "slurmstepd: [<J>.<step>]", which proctrack/linuxproc follows). */
bool cn_proc_in_job(int pid, unsigned long job);

#endif
