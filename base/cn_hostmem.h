/* hostmem: the host memory a process can still take, for the checks before a suspend or a light
 * nap and for a light nap's kept copy. */
#ifndef CN_HOSTMEM_H
#define CN_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

/* The least of MemAvailable and, for every cgroup level of pid with a memory limit, that limit
 * less what cannot be reclaimed (usage less inactive file pages). proc and sys_cgroup are the
 * roots ("/proc", "/sys/fs/cgroup"). which names the bound that won, e.g. "MemAvailable" or
 * "cgroup /job memory.max". Returns 0, or -1 when not even MemAvailable can be read. */
int cn_hostmem_available(int pid, const char *proc, const char *sys_cgroup, uint64_t *avail,
			 char *which, size_t len);

/* The same, with the size of the bound that won in *total (MemTotal for MemAvailable, the
 * cgroup's limit for a cgroup's). */
int cn_hostmem_bound(int pid, const char *proc, const char *sys_cgroup, uint64_t *avail,
		     uint64_t *total, char *which, size_t len);

/* The host copy the driver's checkpoint makes of a process holding footprint bytes on its GPUs:
 * about 1.06 times that (docs/DRIVER.md, The checkpoint). */
static inline uint64_t cn_hostmem_checkpoint_bytes(uint64_t footprint)
{
	return footprint + footprint / 16;
}

/* The host's memory pressure: PSI's "some avg10" of <proc>/pressure/memory, the share (percent)
 * of the last ten seconds in which some task waited for memory. 0, or -1 without PSI. */
int cn_hostmem_pressure(const char *proc, double *avg10);

#endif
