/* preflight: what the agent checks before it asks for a lock, from inside the process and without
 * the driver. Today: runtimes known to crash while checkpointed. It reads /proc/self/maps only. */
#define _GNU_SOURCE
#include "preflight.h"

#include <stdio.h>
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

int cn_preflight_suspend(const struct cn_config *c, char *why, size_t len)
{
	if (!c->allow_jax && mapped(jax_markers, sizeof(jax_markers) / sizeof(jax_markers[0]))) {
		snprintf(why, len,
			 "refusing to suspend a JAX process: JAX crashes inside libcuda while "
			 "checkpointed (driver 580); set [preflight] allow_jax = true to try "
			 "anyway");
		return -1;
	}
	return 0;
}
