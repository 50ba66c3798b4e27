/* proc: what /proc says of a process. */
#ifndef CN_PROC_H
#define CN_PROC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* The whole of /proc/PID/NAME (a process's cgroups, which the kernel writes: no size of ours
 * decides what is seen), NUL-terminated, its length in *len (when len is not NULL); NULL when it
 * cannot be read. The caller frees it. */
char *cn_proc_file(int pid, const char *name, size_t *len);

/* The most of a process's environment read. The kernel gives a program it starts at most 3/4 of
 * 8 MiB of arguments and environment together, whatever the stack limit; a longer environment is
 * one the process set itself (prctl's PR_SET_MM_MAP needs no privilege), maybe gigabytes of an
 * untouched mapping that would take minutes to read. */
#define CN_PROC_ENV_MAX (8u << 20)

/* The values of the n variables names[] in pid's environment (/proc/PID/environ: the one it
 * started with, or what it set there since), each into values[i], to free (NULL when it has none;
 * the first of a name counts, as getenv's). Read through a buffer of fixed size, only those values
 * kept. 0; -E2BIG when it is longer than CN_PROC_ENV_MAX (no environment a program is started with
 * is), every value NULL; -errno when it cannot be read. */
int cn_proc_env(int pid, const char *const *names, int n, char **values);

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

/* The status dir pid uses, worked out from its own environment (cn_proc_env) and its user, as its
 * preload did (an INI its environment names read as that user would: cn_config_status_dir): 0;
 * -E2BIG, dir "", when its environment is longer than any a program is started with: no process of
 * cudanap's (whoever asks takes it for none). */
int cn_proc_status_dir(int pid, char *dir, size_t len);

#endif
