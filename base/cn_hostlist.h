/* hostlist: Slurm's compressed lists of host names ("gpu[01-04,07],login2", as SLURM_JOB_NODELIST
 * and squeue write them), read without Slurm's library: how many hosts, and the one at an index. */
#ifndef CN_HOSTLIST_H
#define CN_HOSTLIST_H

#include <stdbool.h>
#include <stddef.h>

/* The number of hosts the list names (a host named twice counts twice), or -1 when it does not
 * parse (an unclosed bracket, a range that runs backwards, more than a million hosts). */
int cn_hostlist_count(const char *list);
/* The host at index i (0 first, in Slurm's order: the last bracket varies fastest) into out.
 * 0, or -1 when i is out of range, the list does not parse or the name does not fit. */
int cn_hostlist_nth(const char *list, int i, char *out, size_t len);
/* Whether host is in the list. */
bool cn_hostlist_has(const char *list, const char *host);

#endif
