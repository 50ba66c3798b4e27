/* ipc: the GPU memory this process imports from other processes outside NCCL, counted as the app
 * opens and closes it, so that a suspend is refused before the lock: the driver checkpoints an
 * importer and then cannot restore it (CUDA_ERROR_INVALID_VALUE; docs/COMPATIBILITY.md).
 *
 * Seen: the calls that reach the CUDA runtime's or libcuda's exported names, i.e. the shared
 * runtime (PyTorch, CuPy, vLLM, `nvcc -cudart=shared`) and programs linked with -lcuda. Not seen:
 * a program with the static runtime (nvcc's default) or one that takes the driver's functions
 * from cuGetProcAddress (cuda-python): their calls never pass through an exported name.
 * A call from libnccl is not counted: NCCL's imports are released by its own suspend (nccl/), and
 * a rank whose NCCL cannot release them is refused by the preflight's NCCL check.
 *
 * Runs in the app's threads; the agent reads the count (cn_ipc_imports). */
#define _GNU_SOURCE
#include "ipc.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cuda_abi.h"

#define EXPORT __attribute__((visibility("default")))

typedef int cudaError_t;

/* What a missing function answers: the runtime's cudaErrorSymbolNotFound and the driver's
 * CUDA_ERROR_NOT_FOUND are both 500. */
#define NOT_FOUND 500

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int held;	/* buffers opened and not closed, handles imported */
static char first[160]; /* the first of them, while held > 0 */

/* Set while a wrapped call runs: the runtime's own call into the driver is not a second import. */
static __thread int inside __attribute__((tls_model("initial-exec")));

struct call {
	const char *fn;
	char obj[96];
	bool counted;
};

/* The real NAME as CALLER would have bound it without cudanap: first in the caller's own scope
 * (a Python extension's libcudart, loaded with RTLD_LOCAL, is there and not in the global scope),
 * else the next definition after ours. Also names the caller's object in c->obj. */
static void *begin(struct call *c, const void *caller, const char *name, const void *self)
{
	struct link_map *lm = NULL;
	const char *slash;
	void *f = NULL, *h;
	Dl_info info;

	c->fn = name;
	snprintf(c->obj, sizeof(c->obj), "an unknown object");
	if (dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
		h = dlopen(lm->l_name[0] ? lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			f = dlsym(h, name);
			dlclose(h);
		}
		if (info.dli_fname && info.dli_fname[0]) {
			slash = strrchr(info.dli_fname, '/');
			snprintf(c->obj, sizeof(c->obj), "%s", slash ? slash + 1 : info.dli_fname);
		}
	}
	if (!f || f == self)
		f = dlsym(RTLD_NEXT, name);
	c->counted = !inside && !strstr(c->obj, "libnccl");
	inside++;
	return f == self ? NULL : f;
}

static void end(const struct call *c, int delta)
{
	inside--;
	if (!c->counted || !delta)
		return;
	pthread_mutex_lock(&lock);
	held += delta;
	if (held <= 0) {
		held = 0;
		first[0] = '\0';
	} else if (!first[0]) {
		snprintf(first, sizeof(first), "%s in %s", c->fn, c->obj);
	}
	pthread_mutex_unlock(&lock);
}

int cn_ipc_imports(char *who, size_t len)
{
	int n;

	pthread_mutex_lock(&lock);
	n = held;
	snprintf(who, len, "%s", first);
	pthread_mutex_unlock(&lock);
	return n;
}

void cn_ipc_after_fork(void)
{
	pthread_mutex_init(&lock, NULL);
	held = 0;
	first[0] = '\0';
}

/* WRAP(RET, NAME, DELTA, PARAMS, ARGS): NAME calls the real one and counts DELTA when it
 * succeeded. */
#define WRAP(ret, name, delta, params, args)                                                       \
	EXPORT ret name params;                                                                    \
	EXPORT ret name params                                                                     \
	{                                                                                          \
		struct call c;                                                                     \
		ret(*f) params = (ret(*) params)begin(&c, __builtin_return_address(0), #name,      \
						      (const void *)name);                         \
		ret r = f ? f args : NOT_FOUND;                                                    \
                                                                                                   \
		end(&c, r == 0 ? (delta) : 0);                                                     \
		return r;                                                                          \
	}

/* The runtime's legacy IPC (cudaIpcMemHandle_t has CUipcMemHandle's layout). */
WRAP(cudaError_t, cudaIpcOpenMemHandle, 1, (void **p, CUipcMemHandle h, unsigned flags),
     (p, h, flags))
WRAP(cudaError_t, cudaIpcCloseMemHandle, -1, (void *p), (p))
/* The driver's: cuda.h names cuIpcOpenMemHandle_v2 since CUDA 11; libcuda exports both. */
WRAP(CUresult, cuIpcOpenMemHandle, 1, (CUdeviceptr * p, CUipcMemHandle h, unsigned flags),
     (p, h, flags))
WRAP(CUresult, cuIpcOpenMemHandle_v2, 1, (CUdeviceptr * p, CUipcMemHandle h, unsigned flags),
     (p, h, flags))
WRAP(CUresult, cuIpcCloseMemHandle, -1, (CUdeviceptr p), (p))
/* A handle imported from another process's shareable handle. Counted for good: its memory lives
 * on in mappings after cuMemRelease, and cudanap does not follow mappings. */
WRAP(CUresult, cuMemImportFromShareableHandle, 1,
     (CUmemGenericAllocationHandle * h, void *os_handle, int type), (h, os_handle, type))
