/* signame: signal names as the INI and the command line write them ("SIGUSR1", "USR1",
 * "SIGRTMIN+3", "RTMAX-1" or a number), parsed and formatted (see cn_signame.h). */
#define _GNU_SOURCE
#include "cn_signame.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	int sig;
} signal_names[] = {
	{ "HUP", SIGHUP },	 { "INT", SIGINT },	  { "QUIT", SIGQUIT },
	{ "USR1", SIGUSR1 },	 { "USR2", SIGUSR2 },	  { "PIPE", SIGPIPE },
	{ "ALRM", SIGALRM },	 { "TERM", SIGTERM },	  { "CHLD", SIGCHLD },
	{ "CONT", SIGCONT },	 { "TSTP", SIGTSTP },	  { "TTIN", SIGTTIN },
	{ "TTOU", SIGTTOU },	 { "URG", SIGURG },	  { "XCPU", SIGXCPU },
	{ "XFSZ", SIGXFSZ },	 { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },
	{ "WINCH", SIGWINCH },	 { "IO", SIGIO },	  { "PWR", SIGPWR },
	{ "STKFLT", SIGSTKFLT }, { "KILL", SIGKILL },	  { "STOP", SIGSTOP },
	{ "SEGV", SIGSEGV },	 { "BUS", SIGBUS },	  { "ILL", SIGILL },
	{ "FPE", SIGFPE },	 { "ABRT", SIGABRT },	  { "TRAP", SIGTRAP },
	{ "SYS", SIGSYS },
};

/* A count of digits alone, at most max; -1 otherwise. */
static long number(const char *s, long max)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || v > max ? -1 : v;
}

/* Uncatchable, raised by faults (handling them on the app's behalf would hide crashes), or asking
 * the program to end (a status file naming one would make the CLI kill what it meant to suspend).
 */
bool cn_signame_usable(int sig)
{
	switch (sig) {
	case SIGUSR1:
	case SIGUSR2:
	case SIGTSTP:
	case SIGCONT:
	case SIGTTIN:
	case SIGTTOU:
	case SIGURG:
	case SIGWINCH:
	case SIGIO:
	case SIGPWR:
	case SIGVTALRM:
	case SIGPROF:
	case SIGXCPU:
		return true;
	}
	return sig >= SIGRTMIN && sig <= SIGRTMAX;
}

int cn_signame_parse(const char *s, int *sig)
{
	long n = number(s, 1000);
	int v = -1;

	if (n >= 0) {
		v = (int)n;
	} else {
		const char *p = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;

		if (strncasecmp(p, "RTMIN", 5) == 0 || strncasecmp(p, "RTMAX", 5) == 0) {
			bool min = strncasecmp(p, "RTMIN", 5) == 0;
			const char *q = p + 5;

			v = min ? SIGRTMIN : SIGRTMAX;
			if (*q == '+' && min && (n = number(q + 1, 64)) >= 0)
				v += (int)n;
			else if (*q == '-' && !min && (n = number(q + 1, 64)) >= 0)
				v -= (int)n;
			else if (*q)
				return -EINVAL;
		} else {
			for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
				if (strcasecmp(p, signal_names[i].name) == 0)
					v = signal_names[i].sig;
		}
	}
	if (!cn_signame_usable(v))
		return -EINVAL;
	*sig = v;
	return 0;
}

const char *cn_signame_format(int sig, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
		if (signal_names[i].sig == sig) {
			snprintf(buf, len, "SIG%s", signal_names[i].name);
			return buf;
		}
	if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}
