/* nvml: GPU memory as NVML counts it, loaded lazily, for the controller's checks around a restore
 * (docs/FILES.md). */
#define _GNU_SOURCE
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cn_config.h"
#include "cuda_abi.h"

static struct {
	nvmlReturn_t (*init)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*procs)(nvmlDevice_t, unsigned *, nvmlProcessInfo_t *);
	nvmlReturn_t (*graphics)(nvmlDevice_t, unsigned *, nvmlProcessInfo_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
} nv;

static const struct {
	const char *name;
	size_t offset;
} nv_symbols[] = {
	{ "nvmlInit_v2", offsetof(__typeof__(nv), init) },
	{ "nvmlErrorString", offsetof(__typeof__(nv), error_string) },
	{ "nvmlDeviceGetCount_v2", offsetof(__typeof__(nv), count) },
	{ "nvmlDeviceGetHandleByIndex_v2", offsetof(__typeof__(nv), by_index) },
	{ "nvmlDeviceGetHandleByUUID", offsetof(__typeof__(nv), by_uuid) },
	{ "nvmlDeviceGetUUID", offsetof(__typeof__(nv), uuid) },
	{ "nvmlDeviceGetMemoryInfo", offsetof(__typeof__(nv), memory) },
	{ "nvmlDeviceGetComputeRunningProcesses_v3", offsetof(__typeof__(nv), procs) },
	{ "nvmlDeviceGetGraphicsRunningProcesses_v3", offsetof(__typeof__(nv), graphics) },
	{ "nvmlDeviceGetName", offsetof(__typeof__(nv), name) },
};

static int loaded; /* 1 loaded and initialised, -1 failed for good */
static char load_error[200];

static int load(char *why, size_t len)
{
	const char *path = secure_getenv("CUDANAP_LIBNVML");
	nvmlReturn_t r;
	void *h;

	if (!loaded) {
		loaded = -1;
		if (!path || !*path)
			path = "libnvidia-ml.so.1";
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		for (size_t i = 0; h && i < sizeof(nv_symbols) / sizeof(nv_symbols[0]); i++) {
			void *f = dlsym(h, nv_symbols[i].name);

			if (!f) {
				h = NULL;
				break;
			}
			memcpy((char *)&nv + nv_symbols[i].offset, &f, sizeof(f));
		}
		if (!h)
			snprintf(load_error, sizeof(load_error),
				 "NVML (%s) cannot be loaded or is too old", path);
		else if ((r = nv.init()) != NVML_SUCCESS)
			snprintf(load_error, sizeof(load_error), "NVML: %s", nv.error_string(r));
		else
			loaded = 1;
	}
	if (loaded < 0)
		snprintf(why, len, "%s", load_error);
	return loaded > 0 ? 0 : -1;
}

int cn_nvml_footprint(int pid, struct cn_gpu_use *use, int max, char *why, size_t len)
{
	static nvmlProcessInfo_t p[1024];
	unsigned count = 0;
	int n = 0;

	if (load(why, len) < 0)
		return -1;
	if (nv.count(&count) != NVML_SUCCESS) {
		snprintf(why, len, "NVML cannot count the GPUs");
		return -1;
	}
	for (unsigned i = 0; i < count && n < max; i++) {
		unsigned np = sizeof(p) / sizeof(p[0]);
		char s[NVML_DEVICE_UUID_BUFFER_SIZE];
		uint64_t bytes = 0;
		nvmlDevice_t d;

		if (nv.by_index(i, &d) != NVML_SUCCESS ||
		    nv.uuid(d, s, sizeof(s)) != NVML_SUCCESS ||
		    nv.procs(d, &np, p) != NVML_SUCCESS) {
			snprintf(why, len, "NVML cannot list the processes on GPU %u", i);
			return -1;
		}
		for (unsigned k = 0; k < np; k++) {
			if (p[k].pid != (unsigned)pid)
				continue;
			if (p[k].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE) {
				snprintf(why, len, "NVML does not tell the memory of processes");
				return -1;
			}
			bytes += p[k].usedGpuMemory;
		}
		if (bytes && cn_uuid_parse(s, &use[n].uuid) == 0)
			use[n++].bytes = bytes;
	}
	if (n == 0)
		snprintf(why, len,
			 "NVML shows no GPU memory for pid %d (in a container without the host's "
			 "process ids?)",
			 pid);
	return n;
}

int cn_nvml_procs(const struct cn_uuid *uuid, int32_t *pids, int max, char *why, size_t len)
{
	static nvmlProcessInfo_t p[1024];
	unsigned nc = sizeof(p) / sizeof(p[0]) / 2, ng = nc;
	char s[CN_UUID_STR_LEN];
	nvmlDevice_t d;
	int n = 0;

	if (load(why, len) < 0)
		return -1;
	cn_uuid_fmt(uuid, s);
	/* Compute contexts and graphics ones (a display server, a desktop's compositor): the GPU
	 * time-slices both kinds (inferred; the missing preemption was measured with compute). */
	if (nv.by_uuid(s, &d) != NVML_SUCCESS || nv.procs(d, &nc, p) != NVML_SUCCESS ||
	    nv.graphics(d, &ng, p + nc) != NVML_SUCCESS) {
		snprintf(why, len, "NVML cannot list the processes on %s", s);
		return -1;
	}
	for (unsigned k = 0; k < nc + ng && n < max; k++) {
		int j = 0;

		while (j < n && pids[j] != (int32_t)p[k].pid) /* in both lists: once */
			j++;
		if (j == n)
			pids[n++] = (int32_t)p[k].pid;
	}
	return n;
}

int cn_nvml_gpus(struct cn_uuid *gpus, int max, char *why, size_t len)
{
	unsigned count = 0;
	int n = 0;

	if (load(why, len) < 0)
		return -1;
	if (nv.count(&count) != NVML_SUCCESS) {
		snprintf(why, len, "NVML cannot count the GPUs");
		return -1;
	}
	for (unsigned i = 0; i < count && n < max; i++, n++) {
		char s[NVML_DEVICE_UUID_BUFFER_SIZE];
		nvmlDevice_t d;

		if (nv.by_index(i, &d) != NVML_SUCCESS ||
		    nv.uuid(d, s, sizeof(s)) != NVML_SUCCESS || cn_uuid_parse(s, &gpus[n]) < 0) {
			snprintf(why, len, "NVML cannot read the UUID of GPU %u", i);
			return -1;
		}
	}
	return n;
}

int cn_nvml_name(const struct cn_uuid *uuid, char *name, size_t len)
{
	char s[CN_UUID_STR_LEN], why[200];
	nvmlDevice_t d;

	name[0] = '\0';
	if (load(why, sizeof(why)) < 0)
		return -1;
	cn_uuid_fmt(uuid, s);
	if (nv.by_uuid(s, &d) != NVML_SUCCESS || nv.name(d, name, (unsigned)len) != NVML_SUCCESS) {
		name[0] = '\0';
		return -1;
	}
	return 0;
}

int cn_nvml_free(const struct cn_uuid *uuid, uint64_t *free_bytes, char *why, size_t len)
{
	char s[CN_UUID_STR_LEN];
	nvmlMemory_t m;
	nvmlDevice_t d;

	if (load(why, len) < 0)
		return -1;
	cn_uuid_fmt(uuid, s);
	if (nv.by_uuid(s, &d) != NVML_SUCCESS || nv.memory(d, &m) != NVML_SUCCESS) {
		snprintf(why, len, "NVML cannot read the free memory of %s", s);
		return -1;
	}
	*free_bytes = m.free;
	return 0;
}

int cn_nvml_usage(const struct cn_uuid *uuid, int32_t *pids, uint64_t *bytes, int max,
		  uint64_t *total, uint64_t *free_bytes, bool *more, char *why, size_t len)
{
	static nvmlProcessInfo_t p[1024];
	unsigned np = sizeof(p) / sizeof(p[0]);
	char s[CN_UUID_STR_LEN];
	nvmlMemory_t m;
	nvmlDevice_t d;
	int n = 0;

	if (load(why, len) < 0)
		return -1;
	cn_uuid_fmt(uuid, s);
	if (nv.by_uuid(s, &d) != NVML_SUCCESS || nv.memory(d, &m) != NVML_SUCCESS ||
	    nv.procs(d, &np, p) != NVML_SUCCESS) {
		snprintf(why, len, "NVML cannot list the processes and memory of %s", s);
		return -1;
	}
	*total = m.total;
	*free_bytes = m.free;
	*more = false;
	for (unsigned k = 0; k < np; k++) {
		int j = 0;

		while (j < n && pids[j] != (int32_t)p[k].pid) /* a context on it twice: once */
			j++;
		if (j == n && n == max) {
			*more = true;
			break;
		}
		if (j == n) {
			pids[n] = (int32_t)p[k].pid;
			bytes[n++] = 0;
		}
		if (p[k].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE)
			bytes[j] += p[k].usedGpuMemory;
	}
	return n;
}
