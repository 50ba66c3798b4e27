/* driver: libcuda in the controller, the only process of cudanap that loads it. Loaded with
 * dlopen at the first request, through a table of symbol names, so that a machine without the
 * driver (or with one too old for the checkpoint API) gets a one-line error, not a failed start. */
#define _GNU_SOURCE
#include "driver.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cn_cu cn_cu;

static const struct {
	const char *name;
	size_t offset;
} cu_symbols[] = {
#define SYM(field, name)                                                                           \
	{                                                                                          \
		name, offsetof(struct cn_cu, field)                                                \
	}
	SYM(init, "cuInit"),
	SYM(get_error_name, "cuGetErrorName"),
	SYM(get_error_string, "cuGetErrorString"),
	SYM(device_get_count, "cuDeviceGetCount"),
	SYM(device_get, "cuDeviceGet"),
	SYM(device_get_uuid, "cuDeviceGetUuid_v2"),
	SYM(device_get_attribute, "cuDeviceGetAttribute"),
	SYM(get_state, "cuCheckpointProcessGetState"),
	SYM(lock, "cuCheckpointProcessLock"),
	SYM(checkpoint, "cuCheckpointProcessCheckpoint"),
	SYM(restore, "cuCheckpointProcessRestore"),
	SYM(unlock, "cuCheckpointProcessUnlock"),
	SYM(mem_granularity, "cuMemGetAllocationGranularity"),
	SYM(mem_create, "cuMemCreate"),
	SYM(mem_release, "cuMemRelease"),
#undef SYM
};

static int loaded; /* 1 loaded, -1 failed for good */
static int inited; /* cuInit called */
static char load_error[200];

static int load(void)
{
	/* secure_getenv is glibc's own: a host program may define getenv (bash does). */
	const char *path = secure_getenv("CUDANAP_LIBCUDA");
	void *h;

	if (loaded)
		return loaded > 0 ? 0 : -1;
	loaded = -1;
	if (!path || !*path)
		path = "libcuda.so.1";
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_error, sizeof(load_error),
			 "cannot load the CUDA driver (%s): %s; is the NVIDIA driver installed?",
			 path, dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(cu_symbols) / sizeof(cu_symbols[0]); i++) {
		void *f = dlsym(h, cu_symbols[i].name);

		if (!f) {
			snprintf(load_error, sizeof(load_error),
				 "the CUDA driver %s has no %s: it is too old for the checkpoint "
				 "API; "
				 "update the NVIDIA driver",
				 path, cu_symbols[i].name);
			return -1;
		}
		memcpy((char *)&cn_cu + cu_symbols[i].offset, &f, sizeof(f));
	}
	loaded = 1;
	return 0;
}

int cn_driver_load(struct cn_resp *resp)
{
	if (load() == 0)
		return 0;
	cn_driver_fail(resp, CN_RES_NO_DRIVER, load_error);
	return -1;
}

void cn_driver_init(void)
{
	if (!inited) {
		inited = 1;
		cn_cu.init(0);
	}
}

void cn_driver_describe(struct cn_resp *resp, CUresult r)
{
	const char *name = NULL, *text = NULL;

	resp->result = r;
	if (cn_cu.get_error_name(r, &name) != CUDA_SUCCESS || !name)
		name = "CUDA_ERROR_UNKNOWN";
	if (cn_cu.get_error_string(r, &text) != CUDA_SUCCESS || !text)
		text = "unknown error";
	snprintf(resp->name, sizeof(resp->name), "%s", name);
	snprintf(resp->message, sizeof(resp->message), "%s", text);
}

void cn_driver_fail(struct cn_resp *resp, int code, const char *msg)
{
	resp->result = code;
	resp->name[0] = '\0'; /* a result of ours is named where it is said */
	snprintf(resp->message, sizeof(resp->message), "%s", msg);
}
