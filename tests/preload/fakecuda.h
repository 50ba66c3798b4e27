/* fakecuda: the fake driver's exports (see fakecuda.c). */
#ifndef CN_FAKECUDA_H
#define CN_FAKECUDA_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_abi.h"

CUresult cuInit(unsigned flags);
CUresult cuGetErrorName(CUresult r, const char **s);
CUresult cuGetErrorString(CUresult r, const char **s);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGet(CUdevice *d, int ordinal);
CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d);
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d);
CUresult cuCheckpointProcessGetState(int pid, int *state);
CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args);
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args);
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args);
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args);
CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, int opt);
CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t bytes, const CUmemAllocationProp *prop,
		     unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle h);
int cudaIpcOpenMemHandle(void **p, CUipcMemHandle h, unsigned flags);
int cudaIpcCloseMemHandle(void *p);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr p);
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os, int type);

nvmlReturn_t nvmlInit_v2(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *s, unsigned len);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *s, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *s, unsigned len);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *n,
						     nvmlProcessInfo_t *p);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned *n,
						      nvmlProcessInfo_t *p);

/* The entry points an application reaches (fakeapi.c). */
typedef void *CUstream;
CUresult cuStreamQuery(CUstream s);
CUresult cuStreamQuery_ptsz(CUstream s);
CUresult cuEventQuery(void *e);
CUresult cuEventRecord(void *e, CUstream s);
CUresult cuStreamSynchronize(CUstream s);
CUresult cuStreamSynchronize_ptsz(CUstream s);
CUresult cuCtxSynchronize(void);
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			     unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
			     void **extra);
CUresult cuMemAlloc(unsigned *p, unsigned bytes);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned flags);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuCtxSetCurrent(void *ctx);
CUresult cuCtxGetCurrent(void **ctx);
CUresult cuCtxGetDevice(CUdevice *d);
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice d);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d);
CUresult cuStreamIsCapturing(CUstream s, int *status);
CUresult cuStreamBeginCapture_v2(CUstream s, int mode);
CUresult cuStreamEndCapture(CUstream s, void **graph);
CUresult cuTexRefSetMipmapLevelBias(void *tex, float bias);
CUresult cuDriverGetVersion(int *v);
CUresult cuGetExportTable(const void **table, const CUuuid *id);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
			     int *status);
void *fake_raw(const char *name);
CUresult cuCtxPushCurrent_v2(void *ctx);
/* The target's memory (fake_memcpy_htod's) as a program sees it: at FAKE_MEM_VA, copied by
 * cuMemcpyHtoD_v2 and cuMemcpyDtoH_v2. */
#define FAKE_MEM_VA 0x7d0000000000ull
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
CUresult cuCtxPopCurrent_v2(void **ctx);
/* Within libfakecuda: a primary context's device (-1: not one), the thread's current context, the
 * check at an entry point's door. */
int fake_ctx_device(void *ctx);
void *fake_ctx_current(void);
void fake_entered(const char *fn);
/* The driver's lock, as far as the tests need it: a slowed unpin (FAKE_UNPIN_MS) holds it, and a
 * launch passes it on its way in, after an unpinning thread that comes back for it within 2 ms
 * (the driver's is not fair: on an H200 one call waited for 28 GiB of unpins one after another);
 * with FAKE_UNPIN_MS set, each unpin and each launch is a line of <pid>.trace when that file is
 * there ("unpinned", "launched"). fakevmm.c. */
void fake_driver_enter(void);
void fake_trace(const char *what, CUdeviceptr va);

/* Peer access (fakepeer.c). */
CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags);
CUresult cuCtxDisablePeerAccess(void *peer);
CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer);
/* An allocation of bytes at p (0: freed): one over 256 MiB is kept. */
void fake_large(CUdeviceptr p, size_t bytes);
/* For the checkpoint API: what was on at the checkpoint is kept; a restore fails while it is; a
 * restored process cannot turn it on any more. */
void fake_peers_checkpoint(int pid);
int fake_peers_unrestorable(int pid);
void fake_peers_restored(int pid);

/* A process's state, in <pid>.state (fakecuda.c): its slots are the GPUs it started on, in order,
 * each where it is now (slot 0 is gpu, the others also's bits). */
#define FAKE_SLOTS     16
#define FAKE_STATE_LEN 192
struct pstate {
	int state;
	long long busy_until;
	int gpu;
	int wedged;    /* a restore ran out of memory: it can never be restored */
	unsigned also; /* the other GPUs it holds memory on: bit k for GPU k */
	int n_slots, slot[FAKE_SLOTS];
};
int fake_state_parse(const char *buf, struct pstate *st);
/* pid's state, read without its lock (a holder of one lock reads every other process's, and
 * another user's is read-only to this one): the writer truncates then writes, so an empty read is
 * tried again (fakemem.c). */
bool fake_peek(int pid, struct pstate *st);
int fake_gpus(void);

/* GPU memory (fakemem.c): the sizes set, what a process holds in one of its slots and on GPU k,
 * what GPU k has free, and an allocation of mib made (a negative one given back) through CUDA
 * device dev (-1: the current context's), or CUDA_ERROR_OUT_OF_MEMORY. */
long long fake_footprint_mib(void);
long long fake_sized_mib(void);
long long fake_slot_mib(int pid, int slot);
long long fake_used_on(int pid, const struct pstate *st, int k);
long long fake_free_mib(int k);
CUresult fake_account(int dev, long long mib);

CUresult fake_register(void);
CUresult fake_memcpy_htod(size_t off, const void *src, size_t len);
CUresult fake_memcpy_dtoh(void *dst, size_t off, size_t len);
CUresult fake_launch(unsigned ms);
CUresult fake_sync(void);
int fake_current_gpu(void);
void *fake_copy(void *dst, const void *src, size_t n);
void *fake_move(void *dst, const void *src, size_t n);

CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
			    unsigned elem);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *bytes, CUdeviceptr p);
CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p);
CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p);
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t bytes, size_t align, CUdeviceptr addr,
			     unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr p, size_t bytes);
CUresult cuMemMap(CUdeviceptr va, size_t bytes, size_t offset, CUmemGenericAllocationHandle id,
		  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr va, size_t bytes);
CUresult cuMemSetAccess(CUdeviceptr va, size_t bytes, const CUmemAccessDesc *d, size_t n);
CUresult cuMemPoolSetAccess(void *pool, const CUmemAccessDesc *d, size_t n);
/* What a light nap calls (fakevmm.c). */
CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *loc, CUdeviceptr p);
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream);
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuStreamCreate(void **s, unsigned flags);
CUresult cuStreamDestroy_v2(void *s);
CUresult cuEventCreate(void **e, unsigned flags);
CUresult cuEventSynchronize(void *e);
CUresult cuEventDestroy_v2(void *e);
CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						CUmemGenericAllocationHandle id);
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *out, void *addr);
CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle id, int type,
				      unsigned long long flags);
/* fakevmm.c: the target's handles (0, or -1 for one not the target's), a mapping's range, a word
 * of a mapping written or read, a device's read of one. */
CUresult fake_vmm_create(CUmemGenericAllocationHandle *out, size_t bytes, int dev);
int fake_vmm_release(CUmemGenericAllocationHandle id);
int fake_vmm_range(CUdeviceptr p, CUdeviceptr *base, size_t *bytes);
CUresult fake_vmm_word(CUdeviceptr p, bool w, unsigned *value);
CUresult fake_vmm_touch(int dev, CUdeviceptr p);
bool fake_is_target(void);

#endif
