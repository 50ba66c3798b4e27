/* answers: the calls of a napping process answered at the gate without waking it, and a leaving
 * process's teardown (docs/FILES.md). The app's threads. */
#define _GNU_SOURCE
#include "cuda/answers.h"

#include <stdatomic.h>
#include <string.h>

#include "cuda_abi.h"
#include "cuda/fns.h"

static atomic_long captures; /* begun and not yet ended, as the app's calls said */

static CUresult done(void)
{
	return CUDA_SUCCESS;
}

static CUresult not_capturing(void *stream, int *status)
{
	(void)stream;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	*status = 0; /* CU_STREAM_CAPTURE_STATUS_NONE */
	return CUDA_SUCCESS;
}

/* A context the thread made current during the nap, made so for real at its next call that enters
 * the driver (the gate takes that call through its slow path while one is kept). */
static __thread struct {
	bool pending;
	void *ctx;
} kept __attribute__((tls_model("initial-exec")));

static CUresult set_later(void *ctx)
{
	kept.ctx = ctx;
	kept.pending = true;
	return CUDA_SUCCESS;
}

static CUresult kept_current(void **ctx)
{
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	*ctx = kept.ctx;
	return CUDA_SUCCESS;
}

bool cn_answers_can(unsigned idx)
{
	const char *name = cn_fns[idx].name;

	if (!name)
		return false;
	return cn_fns_is(name, "cuStreamQuery") || cn_fns_is(name, "cuEventQuery") ||
	       (cn_fns_is(name, "cuStreamIsCapturing") && atomic_load(&captures) <= 0) ||
	       strcmp(name, "cuCtxSetCurrent") == 0 ||
	       (strcmp(name, "cuCtxGetCurrent") == 0 && kept.pending);
}

void *cn_answers_fn(unsigned idx)
{
	const char *name = cn_fns[idx].name;

	if (!cn_answers_can(idx))
		return NULL;
	if (cn_fns_is(name, "cuStreamIsCapturing"))
		return (void *)not_capturing;
	if (strcmp(name, "cuCtxSetCurrent") == 0)
		return (void *)set_later;
	if (strcmp(name, "cuCtxGetCurrent") == 0)
		return (void *)kept_current;
	return (void *)done;
}

static CUresult deinitialized(void)
{
	return CUDA_ERROR_DEINITIALIZED;
}

/* A call of a library's teardown: what it frees or ends goes with the process anyway. */
static bool teardown(const char *name)
{
	static const char *const ends[] = {
		"cuMemFree",
		"cuMemFreeAsync",
		"cuMemFreeHost",
		"cuArrayDestroy",
		"cuMipmappedArrayDestroy",
		"cuMemRelease",
		"cuMemUnmap",
		"cuMemAddressFree",
		"cuMemHostUnregister",
		"cuMemPoolDestroy",
		"cuModuleUnload",
		"cuLibraryUnload",
		"cuLinkDestroy",
		"cuCtxDestroy",
		"cuDevicePrimaryCtxRelease",
		"cuDevicePrimaryCtxReset",
		"cuStreamDestroy",
		"cuEventDestroy",
		"cuGraphDestroy",
		"cuGraphExecDestroy",
		"cuTexObjectDestroy",
		"cuSurfObjectDestroy",
		"cuCtxSynchronize",
		"cuStreamSynchronize",
		"cuEventSynchronize",
	};

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		if (cn_fns_is(name, ends[i]))
			return true;
	return false;
}

void *cn_answers_leaving_fn(unsigned idx)
{
	void *fn = cn_answers_fn(idx);

	if (fn || !cn_fns[idx].name)
		return fn;
	return teardown(cn_fns[idx].name) ? (void *)deinitialized : NULL;
}

void cn_answers_capture(int d)
{
	atomic_fetch_add(&captures, d);
}

void cn_answers_replay(void)
{
	CUresult (*set)(void *) = (CUresult(*)(void *))cn_lookup_resolve(CN_FN_IDX_cuCtxSetCurrent);

	kept.pending = false;
	if (set)
		set(kept.ctx);
}

bool cn_answers_pending(void)
{
	return kept.pending;
}

void cn_answers_forget(void)
{
	kept.pending = false;
}

void cn_answers_after_fork(void)
{
	atomic_store(&captures, 0);
}
