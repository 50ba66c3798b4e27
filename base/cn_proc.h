/* proc: what /proc says of a process. */
#ifndef CN_PROC_H
#define CN_PROC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* The whole of /proc/PID/NAME (a process's environment, its cgroups: no size of ours decides
 * what is seen), NUL-terminated, its length in *len (when len is not NULL); NULL when it cannot be
 * read. The caller frees it. */
char *cn_proc_file(int pid, const char *name, size_t *len);

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

/* The Slurm job pid runs in, by its cgroup alone: the first directory job_<J> in
 * /proc/PID/cgroup that root owns (what cn_proc_in_job believes); 0 when none. A label another user
 * could set (a job_<J> directory of their own, SLURM_JOB_ID) is never taken. */
unsigned long cn_proc_job(int pid);

/* Whether pid has cudanap's library mapped: what it runs, not what its environment says (any
 * process may put "libcudanap" there, and a decoy must cost its maker a process of its own). Every
 * line of its maps read whole, whatever its length. */
bool cn_proc_preloaded(int pid);

/* The value of name in env (a process's environment as cn_proc_file reads it, NUL-separated, n
 * bytes; NULL: none), or NULL. */
const char *cn_proc_env_value(const char *env, size_t n, const char *name);

/* The status dir pid uses, worked out from its own environment (read whole) and its user, as its
 * preload did (an INI its environment names read as that user would: cn_config_status_dir). */
void cn_proc_status_dir(int pid, char *dir, size_t len);

#endif
