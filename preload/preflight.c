/* preflight: what the agent checks before it asks for a lock, from inside the process and without
 * the driver: runtimes known to crash or hang while checkpointed. It reads /proc/self only. */
#define _GNU_SOURCE
#include "preflight.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* JAX's XLA GPU runtime segfaults inside libcuda 1.5-3 s after a successful checkpoint (H200,
 * driver 580.159.04, jax 0.11.2; also with cudanap's fast path off, i.e. with the driver calls
 * alone). Losing the job is worse than refusing the suspend. */
static const char *const jax_markers[] = { "xla_cuda_plugin", "xla_extension", "/jaxlib/" };

static const char *mapped(const char *const *markers, size_t n)
{
	static char line[4096];
	const char *hit = NULL;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && !hit && fgets(line, sizeof(line), f))
		for (size_t i = 0; i < n && !hit; i++)
			if (strstr(line, markers[i]))
				hit = markers[i];
	if (f)
		fclose(f);
	return hit;
}

/* NCCL communicators: NCCL names its threads "NCCL ..." (service, progress, proxy) and maps its
 * shared-memory segments from /dev/shm/nccl-*. Loading libnccl alone (every PyTorch process does)
 * is not enough to refuse. */
static const char *const nccl_markers[] = { "/dev/shm/nccl-" };

static bool nccl_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool hit = false;

	while (d && !hit && (e = readdir(d))) {
		char path[64], comm[32] = "";
		FILE *f;

		if (atoi(e->d_name) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f) {
			hit = fgets(comm, sizeof(comm), f) && strncmp(comm, "NCCL", 4) == 0;
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return hit;
}

int cn_preflight_suspend(const struct cn_config *c, char *why, size_t len)
{
	if (!c->allow_jax && mapped(jax_markers, sizeof(jax_markers) / sizeof(jax_markers[0]))) {
		snprintf(why, len,
			 "refusing to suspend a JAX process: JAX crashes inside libcuda while "
			 "checkpointed (driver 580); set [preflight] allow_jax = true to try "
			 "anyway");
		return -1;
	}
	if (!c->allow_nccl && (nccl_thread() || mapped(nccl_markers, 1))) {
		snprintf(why, len,
			 "refusing to suspend a process with NCCL communicators: the driver cannot "
			 "checkpoint one rank of a collective job on its own; stop the job at a "
			 "checkpoint instead, or set [preflight] allow_nccl = true to try");
		return -1;
	}
	return 0;
}
