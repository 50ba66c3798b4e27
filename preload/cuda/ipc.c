/* ipc: the GPU memory this process imports from other processes outside NCCL, counted so that a
 * suspend is refused before the lock (docs/FILES.md). The app's threads. */
#define _GNU_SOURCE
#include "cuda/ipc.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cuda_abi.h"
#include "cuda/fns.h"

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

void cn_ipc_count(const char *fn, const void *caller, int delta)
{
	char obj[96];

	if (inside)
		return;
	cn_lookup_object(caller, obj, sizeof(obj));
	if (strstr(obj, "libnccl"))
		return;
	pthread_mutex_lock(&lock);
	held += delta;
	if (held <= 0) {
		held = 0;
		first[0] = '\0';
	} else if (!first[0]) {
		snprintf(first, sizeof(first), "%s in %s", fn, obj);
	}
	pthread_mutex_unlock(&lock);
}

/* The real runtime function NAME as CALLER would have bound it without cudanap: first in the
 * caller's own scope (a Python extension's libcudart, loaded with RTLD_LOCAL, is there and not in
 * the global scope), else the next definition after ours. */
static void *runtime_fn(const void *caller, const char *name, const void *self)
{
	struct link_map *lm = NULL;
	void *f = NULL, *h;
	Dl_info info;

	if (dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
		h = dlopen(lm->l_name[0] ? lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			f = dlsym(h, name);
			dlclose(h);
		}
	}
	if (!f || f == self)
		f = dlsym(RTLD_NEXT, name);
	return f == self ? NULL : f;
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

/* WRAP(NAME, DELTA, PARAMS, ARGS): the runtime's NAME, counted DELTA when it succeeded; the
 * driver call it makes inside is not counted again. */
#define WRAP(name, delta, params, args)                                                            \
	EXPORT cudaError_t name params;                                                            \
	EXPORT cudaError_t name params                                                             \
	{                                                                                          \
		const void *caller = __builtin_return_address(0);                                  \
		cudaError_t(*f) params =                                                           \
			(cudaError_t(*) params)runtime_fn(caller, #name, (const void *)name);      \
		cudaError_t r;                                                                     \
                                                                                                   \
		inside++;                                                                          \
		r = f ? f args : NOT_FOUND;                                                        \
		inside--;                                                                          \
		if (r == 0)                                                                        \
			cn_ipc_count(#name, caller, delta);                                        \
		return r;                                                                          \
	}

/* The runtime's legacy IPC (cudaIpcMemHandle_t has CUipcMemHandle's layout). */
WRAP(cudaIpcOpenMemHandle, 1, (void **p, CUipcMemHandle h, unsigned flags), (p, h, flags))
WRAP(cudaIpcCloseMemHandle, -1, (void *p), (p))
