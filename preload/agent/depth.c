/* depth: a nap's depth, light (what cudanap owns to pinned host memory, the context kept) or full
 * (the driver's checkpoint), chosen at each nap: [nap] depth = auto takes light unless its copy
 * would be over the host cache's share or its context would keep other programs off a GPU. */
#define _GNU_SOURCE
#include "agent/depth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cn_dirs.h"
#include "cn_hostmem.h"
#include "hostcopy/hibernate.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/owned.h"
#include "cuda/gate.h"

enum { CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20 };
enum { CU_COMPUTEMODE_EXCLUSIVE = 1, CU_COMPUTEMODE_EXCLUSIVE_PROCESS = 3 };

unsigned long long cn_depth_light_bytes(void **ctx)
{
	unsigned long long kept, total = 0;
	size_t n;
	struct cn_owned_span *sp = cn_owned_spans(&n, &kept);

	*ctx = sp && n ? sp[0].ctx : NULL;
	for (size_t i = 0; sp && i < n; i++)
		total += sp[i].bytes;
	free(sp);
	return total;
}

unsigned long long cn_depth_cache_budget(const struct cn_config *c, char *of, size_t len)
{
	uint64_t room, total;
	char which[64];

	if (!c->host_cache_pct || cn_hostmem_bound((int)getpid(), "/proc", "/sys/fs/cgroup", &room,
						   &total, which, sizeof(which)) < 0)
		return 0;
	/* MemAvailable's bound is the host's memory; a cgroup's, its limit */
	if (strcmp(which, "MemAvailable") == 0)
		snprintf(of, len, "the host's %llu MiB", (unsigned long long)(total >> 20));
	else
		snprintf(of, len, "%s's %llu MiB", which, (unsigned long long)(total >> 20));
	return total / 100 * c->host_cache_pct;
}

/* A GPU of the owned memory in an exclusive compute mode: its index, or -1. A context kept there
 * by a light nap would refuse every other program's. */
static int exclusive_gpu(void)
{
	CUresult (*attr)(int *, int, int) = cn_lookup_resolve(CN_FN_IDX_cuDeviceGetAttribute);
	unsigned long long kept, seen = 0;
	size_t n;
	struct cn_owned_span *sp = cn_owned_spans(&n, &kept);
	int gpu = -1;

	for (size_t i = 0; sp && attr && gpu < 0 && i < n; i++) {
		int mode = 0, d = sp[i].dev;

		if (d < 0 || d >= 64 || (seen >> d & 1))
			continue;
		seen |= 1ull << d;
		if (attr(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, d) == CUDA_SUCCESS &&
		    (mode == CU_COMPUTEMODE_EXCLUSIVE || mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS))
			gpu = d;
	}
	free(sp);
	return gpu;
}

static bool full(enum cn_depth_why *why, enum cn_depth_why w)
{
	*why = w;
	return false;
}

bool cn_depth_light(const struct cn_config *c, enum cn_depth_why *why, char *text, size_t len)
{
	unsigned long long bytes, budget;
	char of[128] = "", none[1];
	void *ctx;
	int gpu;

	if (!text) { /* no line wanted */
		text = none;
		len = sizeof(none);
	}
	text[0] = '\0';
	*why = CN_DEPTH_WHY_NONE;
	if (c->nap_depth == CN_DEPTH_FULL)
		return full(why, CN_DEPTH_WHY_ASKED);
	if (c->nap_to == CN_NAP_TO_DISK)
		return full(why, CN_DEPTH_WHY_DISK);
	if (!cn_config_light_naps(c)) /* what it owns it owns for another GPU's sake */
		return full(why, CN_DEPTH_WHY_NAPS_OFF);
	if (!cn_owned_some() || !(bytes = cn_depth_light_bytes(&ctx)))
		return full(why, CN_DEPTH_WHY_NOT_OWNED);
	if (c->nap_depth == CN_DEPTH_LIGHT)
		return true;
	budget = cn_depth_cache_budget(c, of, sizeof(of));
	if (budget && bytes > budget) {
		snprintf(
			text, len,
			"its light copy (%llu MiB) would be over [memory] host_cache (%u %% of %s: "
			"%llu MiB)",
			bytes >> 20, c->host_cache_pct, of, budget >> 20);
		return full(why, CN_DEPTH_WHY_HOST_CACHE);
	}
	/* the driver is asked only while the app's calls go on: never while the process is locked
	 * or checkpointed, which closes the gate */
	if (!cn_gate_stops_calls() && (gpu = exclusive_gpu()) >= 0) {
		snprintf(text, len,
			 "GPU %d is in an exclusive compute mode: the context a light nap keeps "
			 "would keep every other program off it",
			 gpu);
		return full(why, CN_DEPTH_WHY_EXCLUSIVE);
	}
	return true;
}

bool cn_depth_to_disk(const struct cn_config *c, unsigned long long need, char *text, size_t len)
{
	uint64_t avail, margin = (uint64_t)c->host_margin_mib << 20;
	char which[160];

	if (c->nap_to != CN_NAP_TO_AUTO || !c->hibernate_dir[0] || !need ||
	    cn_hostmem_available((int)getpid(), "/proc", "/sys/fs/cgroup", &avail, which,
				 sizeof(which)) < 0 ||
	    avail >= need + margin)
		return false;
	snprintf(text, len,
		 "to [hibernate] dir %s: the host had no room for its copy (%llu MiB and the %u "
		 "MiB of [preflight] host_margin_mib, where %s has %llu MiB)",
		 c->hibernate_dir, need >> 20, c->host_margin_mib, which,
		 (unsigned long long)(avail >> 20));
	return true;
}

double cn_depth_disk_room_mib(const struct cn_config *c)
{
	char err[300];
	uint64_t b;

	if (c->nap_to != CN_NAP_TO_AUTO || !c->hibernate_dir[0] ||
	    cn_dirs_private(c->hibernate_dir, "hibernate dir", false, err, sizeof(err)) < 0)
		return 0;
	b = cn_hibernate_free_bytes(c->hibernate_dir);
	return b == UINT64_MAX ? 0 : (double)b / (1 << 20);
}
