/* proc: what /proc says of a process. */
#ifndef CN_PROC_H
#define CN_PROC_H

/* /proc/PID/stat's start time, or 0 when the process is gone. */
unsigned long long cn_proc_starttime(int pid);

#endif
