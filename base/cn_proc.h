/* proc: what /proc says of a process. */
#ifndef CN_PROC_H
#define CN_PROC_H

#include <stdbool.h>

/* /proc/PID/stat's start time, or 0 when the process is gone. */
unsigned long long cn_proc_starttime(int pid);

/* Whether pid is a process of Slurm job job, as Slurm made it, not as its environment says (any
 * process may set SLURM_JOB_ID): in the job's cgroup (".../job_<J>/..." in /proc/PID/cgroup, Slurm's
 * cgroup plugins), or a descendant of the job's step daemon (a process of root's whose title is
 * "slurmstepd: [<J>.<step>]", which proctrack/linuxproc follows). */
bool cn_proc_in_job(int pid, unsigned long job);

#endif
