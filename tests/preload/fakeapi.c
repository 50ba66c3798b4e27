/* fakeapi: the fake driver's entry points as an application reaches them (part of libfakecuda.so,
 * beside fakecuda.c): by exported name, by dlsym, by cuGetProcAddress and cuGetProcAddress_v2.
 *
 * Each one, when entered, checks that the process is RUNNING, and otherwise writes
 * "entered NAME PID STATE" to the events file; entered while CHECKPOINTED it then aborts, as
 * JAX's poller died inside libcuda (docs/DRIVER.md, The lock). So a test sees any call the gate let
 * through while the process was suspended. fake_raw() hands out the functions bare, to show that
 * the check catches such a call.
 *
 * cuGetProcAddress(_v2) answers as the real driver does: the _ptsz variant for the per-thread
 * default stream flag (2), cuMemAlloc_v2 from version 3020, cuGetProcAddress_v2 from 12000, for
 * cuLaunchKernel from version 13000 a variant libfakecuda does not export, cuMemAllocManaged (a
 * new pointer each call) and cuMemFree_v2, cuMemcpyHtoD_v2 and cuMemcpyDtoH_v2 (the target's
 * memory, at FAKE_MEM_VA), the context calls (a current context per thread, the
 * primary contexts),
 * stream captures (cuStreamIsCapturing says whether any is open), event records (nothing to
 * record: an event's query is the stream's), and "cuFakeNext", a
 * function no cudanap table knows, also unexported. Anything else: CUDA_ERROR_NOT_FOUND.
 *
 * cuLaunchKernel takes a "kernel" of gridDimX ms and checks that its other ten arguments are
 * 2, 3, ... 10 (five of them passed on the stack); cuTexRefSetMipmapLevelBias that its float
 * is 0.75 (passed in a vector register): both fail with CUDA_ERROR_INVALID_VALUE otherwise. The
 * synchronisations wait for the last "kernel" to end. libfakecuda is linked -Bsymbolic, so that the
 * functions it hands out are its own and not the preload's exports of the same names. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define EXPORT __attribute__((visibility("default")))

int fake_state_now(long long *busy_until);
CUresult fake_busy(unsigned ms);
void fake_event(const char *what);

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The check at the door of every entry point. */
static void entered(const char *fn)
{
	long long busy;
	int st = fake_state_now(&busy);
	char line[160];

	if (st <= 0)
		return;
	snprintf(line, sizeof(line), "entered %s %d %s", fn, (int)getpid(),
		 st == 2   ? "checkpointed"
		 : st == 1 ? "locked"
			   : "other");
	fake_event(line);
	if (st == 2) {
		fprintf(stderr, "fakecuda: %s entered while checkpointed\n", fn);
		abort();
	}
}

/* A query: not done while a "kernel" runs, or while an operation of the fake NCCL's waits for a
 * rank that has not issued it (its kernel would wait on the GPU). */
static CUresult query(const char *fn)
{
	static int (*pending)(void);
	long long busy = 0;

	if (!pending && getenv("CUDANAP_FAKE_NCCL")) /* found once the fake NCCL is loaded */
		pending = (int (*)(void))dlsym(RTLD_DEFAULT, "fakeNcclPending");
	entered(fn);
	fake_state_now(&busy);
	return busy > now_ms() || (pending && pending()) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

static CUresult synchronize(const char *fn)
{
	long long busy = 0;

	entered(fn);
	while (fake_state_now(&busy) >= 0 && busy > now_ms())
		usleep(5000);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamQuery(CUstream s)
{
	(void)s;
	return query("cuStreamQuery");
}

EXPORT CUresult cuStreamQuery_ptsz(CUstream s)
{
	(void)s;
	return query("cuStreamQuery_ptsz");
}

EXPORT CUresult cuEventQuery(void *e)
{
	(void)e;
	return query("cuEventQuery");
}

EXPORT CUresult cuEventRecord(void *e, CUstream s)
{
	(void)e, (void)s;
	entered("cuEventRecord");
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return synchronize("cuStreamSynchronize");
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s)
{
	(void)s;
	return synchronize("cuStreamSynchronize_ptsz");
}

EXPORT CUresult cuCtxSynchronize(void)
{
	return synchronize("cuCtxSynchronize");
}

static CUresult launch(const char *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
		       void **extra)
{
	entered(fn);
	if (gy != 2 || gz != 3 || bx != 4 || by != 5 || bz != 6 || shmem != 7 || s != (void *)8 ||
	    params != (void **)9 || extra != (void **)10)
		return CUDA_ERROR_INVALID_VALUE;
	fake_driver_enter();
	if (getenv("FAKE_UNPIN_MS"))
		fake_trace("launched", gx);
	return fake_busy(gx);
}

EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
			       void **extra)
{
	(void)f;
	return launch("cuLaunchKernel", gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

EXPORT CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
				    unsigned by, unsigned bz, unsigned shmem, CUstream s,
				    void **params, void **extra)
{
	(void)f;
	return launch("cuLaunchKernel_ptsz", gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

/* Not exported: what version 13000 of cuLaunchKernel is here. */
static CUresult launch_v13(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			   unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
	(void)f;
	return launch("cuLaunchKernel(13000)", gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

/* The target's memory, at FAKE_MEM_VA: what fake_memcpy_htod and fake_memcpy_dtoh copy, by the
 * driver's names (a program's copies, which the gate sees). */
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	entered("cuMemcpyHtoD_v2");
	if (dst < FAKE_MEM_VA)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_memcpy_htod((size_t)(dst - FAKE_MEM_VA), src, n);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	entered("cuMemcpyDtoH_v2");
	if (src < FAKE_MEM_VA)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_memcpy_dtoh(dst, (size_t)(src - FAKE_MEM_VA), n);
}

EXPORT CUresult cuMemAlloc(unsigned *p, unsigned bytes)
{
	entered("cuMemAlloc");
	*p = bytes ? 0x1000 : 0;
	return CUDA_SUCCESS;
}

/* The sizes of the allocations made and the devices they were made through (for the GPU's size,
 * $CUDANAP_FAKE_GPU_MIB). */
static struct {
	CUdeviceptr p;
	long long mib;
	int dev;
} sizes[256];
static pthread_mutex_t sizes_mu = PTHREAD_MUTEX_INITIALIZER;

/* An allocation of mib at p kept, or (mib 0) forgotten: its MiB, and its device in *dev. */
static long long sized(CUdeviceptr p, long long mib, int *dev)
{
	long long was = 0;

	pthread_mutex_lock(&sizes_mu);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (mib && !sizes[i].p) {
			sizes[i].p = p;
			sizes[i].mib = mib;
			sizes[i].dev = *dev;
			break;
		} else if (!mib && sizes[i].p == p) {
			was = sizes[i].mib;
			*dev = sizes[i].dev;
			sizes[i].p = 0;
			break;
		}
	pthread_mutex_unlock(&sizes_mu);
	return was;
}

/* A new address each time; the large allocations are kept (fakepeer.c). With the GPU's size set,
 * one beyond what is free fails as out of memory. */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	static CUdeviceptr next = 0x7e0000000000ull;
	long long mib = (long long)(bytes >> 20);
	int dev = fake_ctx_device(fake_ctx_current());

	entered("cuMemAlloc_v2");
	if (fake_account(dev, mib) != CUDA_SUCCESS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = bytes ? __atomic_add_fetch(&next, 1ull << 32, __ATOMIC_RELAXED) : 0;
	if (mib)
		sized(*p, mib, &dev);
	if (bytes)
		fake_large(*p, bytes);
	return CUDA_SUCCESS;
}

/* Managed memory: a new pointer each time, freed by cuMemFree_v2. */
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned flags)
{
	static CUdeviceptr next = 0x7f0000000000ull;

	(void)flags;
	entered("cuMemAllocManaged");
	*p = bytes ? __atomic_add_fetch(&next, 1 << 20, __ATOMIC_RELAXED) : 0;
	return CUDA_SUCCESS;
}

/* The allocation of cuMemAlloc_v2's that p lies in: its start and MiB; 0 when none. */
static CUdeviceptr holder(CUdeviceptr p, long long *mib)
{
	CUdeviceptr base = 0;

	pthread_mutex_lock(&sizes_mu);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (sizes[i].p && p >= sizes[i].p &&
		    p < sizes[i].p + ((CUdeviceptr)sizes[i].mib << 20)) {
			base = sizes[i].p;
			*mib = sizes[i].mib;
		}
	pthread_mutex_unlock(&sizes_mu);
	return base;
}

/* As driver 580 answers (measured): an interior pointer, one freed already, or memory of
 * cuMemCreate's is INVALID_VALUE. */
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	CUdeviceptr base;
	size_t bytes;
	long long mib = 0;
	int dev = -1;

	entered("cuMemFree_v2");
	if (!p || fake_vmm_range(p, &base, &bytes) == 0)
		return CUDA_ERROR_INVALID_VALUE;
	base = holder(p, &mib);
	if (base && base != p)
		return CUDA_ERROR_INVALID_VALUE;
	fake_large(p, 0);
	mib = sized(p, 0, &dev);
	if (mib)
		fake_account(dev, -mib);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
				   unsigned elem)
{
	(void)elem;
	entered("cuMemAllocPitch_v2");
	if (!p || !pitch || !width || !height)
		return CUDA_ERROR_INVALID_VALUE;
	*pitch = (width + 511) / 512 * 512;
	return cuMemAlloc_v2(p, *pitch * height);
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *bytes, CUdeviceptr p)
{
	long long mib = 0;
	CUdeviceptr b;
	size_t n;

	entered("cuMemGetAddressRange_v2");
	if (fake_vmm_range(p, &b, &n) != 0) {
		b = holder(p, &mib);
		n = (size_t)mib << 20;
	}
	if (!b)
		return CUDA_ERROR_INVALID_VALUE;
	if (base)
		*base = b;
	if (bytes)
		*bytes = n;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	CUdeviceptr base;
	size_t bytes;
	CUresult r;

	entered("cuPointerGetAttribute");
	if (attr != 11 && attr != 12) /* RANGE_START_ADDR, RANGE_SIZE */
		return CUDA_ERROR_INVALID_VALUE;
	r = cuMemGetAddressRange_v2(&base, &bytes, p);
	if (r == CUDA_SUCCESS && attr == 11)
		*(CUdeviceptr *)data = base;
	else if (r == CUDA_SUCCESS)
		*(size_t *)data = bytes;
	return r;
}

/* Memory of cuMemCreate's cannot be exported by CUDA IPC; cuMemAlloc_v2's can. */
EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
	CUdeviceptr base;
	size_t bytes;
	long long mib;

	entered("cuIpcGetMemHandle");
	if (!h || fake_vmm_range(p, &base, &bytes) == 0 || !holder(p, &mib))
		return CUDA_ERROR_INVALID_VALUE;
	memset(h, 0, sizeof(*h));
	return CUDA_SUCCESS;
}

/* The calling thread's current context, and stream captures begun and not ended. */
static __thread void *current;
static int capturing;

EXPORT CUresult cuCtxSetCurrent(void *ctx)
{
	entered("cuCtxSetCurrent");
	current = ctx;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(void **ctx)
{
	entered("cuCtxGetCurrent");
	*ctx = current;
	return CUDA_SUCCESS;
}

/* Primary contexts: device d's is the address primary + d; a thread with none current is on
 * device 0, as the runtime's cudaGetDevice says. */
static char primary[16];

/* With the GPU's size set and $CUDANAP_FAKE_CTX_MIB, a device's first retain takes that much of
 * its memory, or fails as out of memory. */
EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d)
{
	static bool made[sizeof(primary)];
	const char *mib = getenv("CUDANAP_FAKE_CTX_MIB");

	entered("cuDevicePrimaryCtxRetain");
	if (d < 0 || d >= (CUdevice)sizeof(primary))
		return CUDA_ERROR_INVALID_DEVICE;
	if (mib && !made[d]) {
		if (fake_account(d, atoll(mib)) != CUDA_SUCCESS)
			return CUDA_ERROR_OUT_OF_MEMORY;
		made[d] = true;
	}
	*ctx = primary + d;
	return CUDA_SUCCESS;
}

/* A primary context reset: only said (<pid>.trace, with FAKE_UNPIN_MS: fakecuda.h). */
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
	entered("cuDevicePrimaryCtxReset_v2");
	if (getenv("FAKE_UNPIN_MS"))
		fake_trace("reset", (CUdeviceptr)d);
	return d >= 0 && d < (CUdevice)sizeof(primary) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	entered("cuDevicePrimaryCtxRelease_v2");
	return d >= 0 && d < (CUdevice)sizeof(primary) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

int fake_ctx_device(void *ctx)
{
	char *c = ctx;

	return c >= primary && c < primary + sizeof(primary) ? (int)(c - primary) : -1;
}

void *fake_ctx_current(void)
{
	return current;
}

void fake_entered(const char *fn)
{
	entered(fn);
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	int dev = fake_ctx_device(fake_ctx_current());

	entered("cuCtxGetDevice");
	*d = dev >= 0 ? dev : 0;
	return CUDA_SUCCESS;
}

/* The context stack: a push keeps the current one, a pop brings it back. */
static __thread void *pushed[8];
static __thread int n_pushed;

EXPORT CUresult cuCtxPushCurrent_v2(void *ctx)
{
	entered("cuCtxPushCurrent_v2");
	if (n_pushed == 8)
		return CUDA_ERROR_INVALID_VALUE;
	pushed[n_pushed++] = current;
	current = ctx;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(void **ctx)
{
	entered("cuCtxPopCurrent_v2");
	if (!n_pushed)
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx)
		*ctx = current;
	current = pushed[--n_pushed];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status)
{
	(void)s;
	entered("cuStreamIsCapturing");
	*status = __atomic_load_n(&capturing, __ATOMIC_RELAXED) ? 1 : 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
	(void)s, (void)mode;
	entered("cuStreamBeginCapture_v2");
	__atomic_add_fetch(&capturing, 1, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, void **graph)
{
	(void)s;
	entered("cuStreamEndCapture");
	__atomic_sub_fetch(&capturing, 1, __ATOMIC_RELAXED);
	if (graph)
		*graph = NULL;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuTexRefSetMipmapLevelBias(void *tex, float bias)
{
	(void)tex;
	entered("cuTexRefSetMipmapLevelBias");
	return bias == 0.75f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	entered("cuDriverGetVersion");
	*v = 13000;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
	static const void *const tables[2] = { NULL, NULL };

	entered("cuGetExportTable");
	if (!table || !id)
		return CUDA_ERROR_INVALID_VALUE;
	*table = tables;
	return CUDA_SUCCESS;
}

/* Not exported, and unknown to cudanap's table: a newer driver's function. */
static CUresult fake_next(int *out)
{
	entered("cuFakeNext");
	*out = 42;
	return CUDA_SUCCESS;
}

static void *pick(const char *s, int version, uint64_t flags)
{
	/* The functions of one version and no per-thread variant. */
	static const struct {
		const char *name;
		void *fn;
	} plain[] = {
		{ "cuCtxSetCurrent", (void *)cuCtxSetCurrent },
		{ "cuCtxGetCurrent", (void *)cuCtxGetCurrent },
		{ "cuCtxGetDevice", (void *)cuCtxGetDevice },
		{ "cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain },
		{ "cuStreamIsCapturing", (void *)cuStreamIsCapturing },
		{ "cuStreamBeginCapture", (void *)cuStreamBeginCapture_v2 },
		{ "cuStreamEndCapture", (void *)cuStreamEndCapture },
		{ "cuMemAllocManaged", (void *)cuMemAllocManaged },
		{ "cuFakeNext", (void *)fake_next },
		{ "cuEventQuery", (void *)cuEventQuery },
		{ "cuCtxSynchronize", (void *)cuCtxSynchronize },
		{ "cuTexRefSetMipmapLevelBias", (void *)cuTexRefSetMipmapLevelBias },
		{ "cuDriverGetVersion", (void *)cuDriverGetVersion },
		{ "cuGetExportTable", (void *)cuGetExportTable },
		{ "cuIpcOpenMemHandle", (void *)cuIpcOpenMemHandle_v2 },
		{ "cuCtxPushCurrent", (void *)cuCtxPushCurrent_v2 },
		{ "cuCtxPopCurrent", (void *)cuCtxPopCurrent_v2 },
		{ "cuCtxEnablePeerAccess", (void *)cuCtxEnablePeerAccess },
		{ "cuCtxDisablePeerAccess", (void *)cuCtxDisablePeerAccess },
		{ "cuDeviceCanAccessPeer", (void *)cuDeviceCanAccessPeer },
		{ "cuDeviceGetUuid", (void *)cuDeviceGetUuid_v2 },
		{ "cuGetErrorName", (void *)cuGetErrorName },
		{ "cuMemAllocPitch", (void *)cuMemAllocPitch_v2 },
		{ "cuMemGetAddressRange", (void *)cuMemGetAddressRange_v2 },
		{ "cuPointerGetAttribute", (void *)cuPointerGetAttribute },
		{ "cuIpcGetMemHandle", (void *)cuIpcGetMemHandle },
		{ "cuMemCreate", (void *)cuMemCreate },
		{ "cuMemRelease", (void *)cuMemRelease },
		{ "cuMemAddressReserve", (void *)cuMemAddressReserve },
		{ "cuMemAddressFree", (void *)cuMemAddressFree },
		{ "cuMemMap", (void *)cuMemMap },
		{ "cuMemUnmap", (void *)cuMemUnmap },
		{ "cuMemSetAccess", (void *)cuMemSetAccess },
		{ "cuMemPoolSetAccess", (void *)cuMemPoolSetAccess },
		{ "cuMemGetAllocationGranularity", (void *)cuMemGetAllocationGranularity },
		{ "cuMemGetAllocationPropertiesFromHandle",
		  (void *)cuMemGetAllocationPropertiesFromHandle },
		{ "cuMemRetainAllocationHandle", (void *)cuMemRetainAllocationHandle },
		{ "cuDeviceGetCount", (void *)cuDeviceGetCount },
		{ "cuDeviceGetAttribute", (void *)cuDeviceGetAttribute },
	};
	int ptds = (flags & 2) != 0;

	if (strcmp(s, "cuStreamQuery") == 0)
		return ptds ? (void *)cuStreamQuery_ptsz : (void *)cuStreamQuery;
	if (strcmp(s, "cuStreamSynchronize") == 0)
		return ptds ? (void *)cuStreamSynchronize_ptsz : (void *)cuStreamSynchronize;
	if (strcmp(s, "cuLaunchKernel") == 0)
		return version >= 13000 ? (void *)launch_v13
		       : ptds		? (void *)cuLaunchKernel_ptsz
					: (void *)cuLaunchKernel;
	if (strcmp(s, "cuMemAlloc") == 0)
		return version >= 3020 ? (void *)cuMemAlloc_v2 : (void *)cuMemAlloc;
	if (strcmp(s, "cuDevicePrimaryCtxRelease") == 0)
		return version >= 11000 ? (void *)cuDevicePrimaryCtxRelease_v2 : NULL;
	if (strcmp(s, "cuMemFree") == 0)
		return version >= 3020 ? (void *)cuMemFree_v2 : NULL;
	if (strcmp(s, "cuGetProcAddress") == 0)
		return version >= 12000 ? (void *)cuGetProcAddress_v2 : NULL;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (strcmp(s, plain[i].name) == 0)
			return plain[i].fn;
	return NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
				    int *status)
{
	entered("cuGetProcAddress_v2");
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = pick(symbol, version, flags);
	if (status)
		*status = *pfn ? 0 : 1; /* CU_GET_PROC_ADDRESS_SUCCESS, _SYMBOL_NOT_FOUND */
	return *pfn ? CUDA_SUCCESS : 500;
}

/* Before CUDA 12: four arguments. */
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	entered("cuGetProcAddress");
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = pick(symbol, version < 12000 ? version : 11080, flags);
	return *pfn ? CUDA_SUCCESS : 500;
}

/* The functions bare, past any interposer: what a call the gate never saw looks like. */
EXPORT void *fake_raw(const char *name)
{
	return pick(name, 12000, 0);
}
