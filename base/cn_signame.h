/* signame: signals by name, as the INI and the command line write them. */
#ifndef CN_SIGNAME_H
#define CN_SIGNAME_H

#include <stdbool.h>
#include <stddef.h>

/* "SIGUSR1", "USR1", "SIGRTMIN+3", "RTMAX-1" or a number, of a signal cudanap may use
 * (cn_signame_usable); any other is refused with -EINVAL. */
int cn_signame_parse(const char *s, int *sig);
/* Whether cudanap may take sig for an action, and so send it: not one that cannot be caught, that
 * reports a fault (SEGV, BUS, ILL, FPE, ABRT, TRAP, SYS), or that asks a program to end or is the
 * kernel's or the terminal's to send (TERM, INT, HUP, QUIT, PIPE, ALRM, CHLD, XFSZ, STKFLT): USR1,
 * USR2, TSTP, CONT, TTIN, TTOU, URG, WINCH, IO, PWR, VTALRM, PROF, XCPU and the real-time
 * signals. The CLI sends no other number, whatever a status file says. */
bool cn_signame_usable(int sig);
/* "SIGUSR1", "SIGRTMIN+3" or "signal N" into buf; returns buf. */
const char *cn_signame_format(int sig, char *buf, size_t len);

#endif
