/* signame: signals by name, as the INI and the command line write them. */
#ifndef CN_SIGNAME_H
#define CN_SIGNAME_H

#include <stddef.h>

/* "SIGUSR1", "USR1", "SIGRTMIN+3", "RTMAX-1" or a number. Signals that cannot be caught or that
 * report faults (KILL, STOP, SEGV, BUS, ILL, FPE, ABRT, TRAP, SYS) are refused with -EINVAL. */
int cn_signame_parse(const char *s, int *sig);
/* "SIGUSR1", "SIGRTMIN+3" or "signal N" into buf; returns buf. */
const char *cn_signame_format(int sig, char *buf, size_t len);

#endif
