/* vmmcmds: the test target's calls on memory that cudanap may own (owned.sh), through the names
 * the program links (the preload's entry points), as target.c hands them here ("drv vmm ..."):
 *   vmm use DEV          GPU DEV's primary context made current: "vmm use RC"
 *   vmm make MIB         cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemRelease and
 *                        cuMemSetAccess for the current device: a range as XLA makes its pool's
 *   vmm share DEV        that range's access given to device DEV too
 *   vmm drop             that range unmapped and freed
 *   vmm create MIB       a handle of cuMemCreate's, kept; vmm map: mapped to a new range (the
 *                        current device's access); vmm props: its device; vmm release
 *   vmm word A|V OFF [VALUE]   a word OFF MiB into the last allocation (A) or range (V) written,
 *                        or read: "vmm word RC VALUE"
 *   vmm touch A|V DEV OFF      device DEV's "kernel" reading there: "vmm touch RC"
 *   vmm range A|V OFF    cuMemGetAddressRange there: "vmm range RC START SIZE" (MiB, the start
 *                        from the allocation's); vmm attr A|V OFF the same by cuPointerGetAttribute
 *   vmm freeat OFF       cuMemFree of the last allocation OFF MiB in: "vmm freeat RC"
 *   vmm ipc              cuIpcGetMemHandle of the last allocation: "vmm ipc RC"
 *   vmm export           cuMemExportToShareableHandle of the kept handle: "vmm export RC"
 *   vmm ncclfree         the last range freed as NCCL frees its memory of cuMemCreate's: the handle
 *                        retained at its address and released, its size asked, unmapped, the
 *                        handle released, the range freed: "vmm ncclfree RC SIZE" (MiB)
 *   vmm pool DEV on|off  cuMemPoolSetAccess for DEV: "vmm pool RC"
 *   vmm pitch WIDTH ROWS cuMemAllocPitch_v2, as the last allocation: "vmm pitch RC PITCH" */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fakecuda.h"

CUdeviceptr *paths_allocated(void);
unsigned paths_slot(void);
bool vmm_command(const char *line);

/* The range of each slot (paths.c's slot command), the one vmm map made and its handle */
static CUdeviceptr ranges_va[16], map_va;
static size_t ranges_bytes[16], map_bytes;
static CUmemGenericAllocationHandle kept;
#define range_va    ranges_va[paths_slot()]
#define range_bytes ranges_bytes[paths_slot()]

#define FN(name) ((__typeof__(&name))dlsym(RTLD_DEFAULT, #name))

static int device(void)
{
	CUdevice d = 0;

	FN(cuCtxGetDevice)(&d);
	return d;
}

static CUmemAllocationProp prop_here(void)
{
	CUmemAllocationProp p = { .type = CU_MEM_ALLOCATION_TYPE_PINNED };

	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = device();
	return p;
}

static CUresult give(CUdeviceptr va, size_t bytes, int dev, int flags)
{
	CUmemAccessDesc d = { { CU_MEM_LOCATION_TYPE_DEVICE, dev }, flags };

	return FN(cuMemSetAccess)(va, bytes, &d, 1);
}

/* A new range of bytes with handle h mapped whole, the current device's access. */
static CUresult map_new(CUmemGenericAllocationHandle h, size_t bytes, CUdeviceptr *va)
{
	CUresult r = FN(cuMemAddressReserve)(va, bytes, 0, 0, 0);

	if (r == CUDA_SUCCESS)
		r = FN(cuMemMap)(*va, bytes, 0, h, 0);
	if (r == CUDA_SUCCESS)
		r = give(*va, bytes, device(), 3);
	return r;
}

static CUdeviceptr at(char which, unsigned off)
{
	return (which == 'A' ? *paths_allocated() : range_va) + ((CUdeviceptr)off << 20);
}

static void make(unsigned mib)
{
	CUmemAllocationProp p = prop_here();
	CUmemGenericAllocationHandle h;
	CUresult r = FN(cuMemCreate)(&h, (size_t)mib << 20, &p, 0);

	range_bytes = (size_t)mib << 20;
	if (r == CUDA_SUCCESS) {
		r = map_new(h, range_bytes, &range_va);
		FN(cuMemRelease)(h);
	}
	printf("vmm make %d\n", r);
}

static void look(const char *what, char which, unsigned off)
{
	CUdeviceptr p = at(which, off), base = 0,
		    start = which == 'A' ? *paths_allocated() : range_va;
	size_t bytes = 0;
	CUresult r;

	if (strcmp(what, "range") == 0) {
		r = FN(cuMemGetAddressRange_v2)(&base, &bytes, p);
	} else {
		r = FN(cuPointerGetAttribute)(&base, 11, p);
		if (r == CUDA_SUCCESS)
			r = FN(cuPointerGetAttribute)(&bytes, 12, p);
	}
	printf("vmm %s %d %lld %zu\n", what, r, ((long long)base - (long long)start) >> 20,
	       bytes >> 20);
}

/* "vmm ncclfree": the range freed as NCCL frees its buffers, through a handle retained from an
 * address: "vmm ncclfree RC MIB". */
static void ncclfree(void)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr base;
	size_t bytes = 0;
	CUresult r = FN(cuMemRetainAllocationHandle)(&h, (void *)range_va);

	if (r == CUDA_SUCCESS)
		r = FN(cuMemRelease)(h);
	if (r == CUDA_SUCCESS)
		r = FN(cuMemGetAddressRange_v2)(&base, &bytes, range_va);
	if (r == CUDA_SUCCESS)
		r = FN(cuMemUnmap)(range_va, bytes);
	if (r == CUDA_SUCCESS)
		r = FN(cuMemRelease)(h);
	if (r == CUDA_SUCCESS)
		r = FN(cuMemAddressFree)(range_va, bytes);
	printf("vmm ncclfree %d %zu\n", r, bytes >> 20);
}

/* The range and the handle kept: made, shared, mapped, looked at, let go. False when line is
 * none of these. */
static bool range_command(const char *line)
{
	unsigned a;
	CUmemAllocationProp p;

	if (sscanf(line, "vmm use %u", &a) == 1) {
		void *ctx = NULL;
		CUresult r = FN(cuDevicePrimaryCtxRetain)(&ctx, (CUdevice)a);

		printf("vmm use %d\n", r ? r : FN(cuCtxSetCurrent)(ctx));
	} else if (sscanf(line, "vmm make %u", &a) == 1) {
		make(a);
	} else if (sscanf(line, "vmm share %u", &a) == 1) {
		printf("vmm share %d\n", give(range_va, range_bytes, (int)a, 3));
	} else if (strcmp(line, "vmm drop") == 0) {
		CUresult r = FN(cuMemUnmap)(range_va, range_bytes);

		printf("vmm drop %d\n", r ? r : FN(cuMemAddressFree)(range_va, range_bytes));
	} else if (sscanf(line, "vmm create %u", &a) == 1) {
		p = prop_here();
		map_bytes = (size_t)a << 20;
		printf("vmm create %d\n", FN(cuMemCreate)(&kept, map_bytes, &p, 0));
	} else if (strcmp(line, "vmm map") == 0) {
		printf("vmm map %d\n", map_new(kept, map_bytes, &map_va));
		range_va = map_va;
		range_bytes = map_bytes;
	} else if (strcmp(line, "vmm props") == 0) {
		CUresult r = FN(cuMemGetAllocationPropertiesFromHandle)(&p, kept);

		printf("vmm props %d %d\n", r, r ? -1 : p.location.id);
	} else if (strcmp(line, "vmm release") == 0) {
		printf("vmm release %d\n", FN(cuMemRelease)(kept));
	} else if (strcmp(line, "vmm export") == 0) {
		int fd = -1;

		printf("vmm export %d\n", FN(cuMemExportToShareableHandle)(&fd, kept, 1, 0));
	} else if (strcmp(line, "vmm ncclfree") == 0) {
		ncclfree();
	} else {
		return false;
	}
	return true;
}

/* Calls on an address of the range's or the allocation's: its words, its range and attributes,
 * a free, an IPC handle, a pool's access, a pitched allocation. False when line is none of
 * these. */
static bool address_command(const char *line)
{
	char which, what[16], onoff[8];
	unsigned a, b, v;
	CUipcMemHandle ih;

	if (sscanf(line, "vmm word %c %u %u", &which, &a, &v) == 3) {
		printf("vmm word %d %u\n", fake_vmm_word(at(which, a), true, &v), v);
	} else if (sscanf(line, "vmm word %c %u", &which, &a) == 2) {
		CUresult r = fake_vmm_word(at(which, a), false, &v);

		printf("vmm word %d %u\n", r, r ? 0 : v);
	} else if (sscanf(line, "vmm touch %c %u %u", &which, &a, &b) == 3) {
		printf("vmm touch %d\n", fake_vmm_touch((int)a, at(which, b)));
	} else if (sscanf(line, "vmm %15s %c %u", what, &which, &a) == 3 &&
		   (strcmp(what, "range") == 0 || strcmp(what, "attr") == 0)) {
		look(what, which, a);
	} else if (sscanf(line, "vmm freeat %u", &a) == 1) {
		printf("vmm freeat %d\n", FN(cuMemFree_v2)(at('A', a)));
	} else if (strcmp(line, "vmm ipc") == 0) {
		printf("vmm ipc %d\n", FN(cuIpcGetMemHandle)(&ih, at('A', 0)));
	} else if (sscanf(line, "vmm pool %u %7s", &a, onoff) == 2) {
		CUmemAccessDesc d = { { CU_MEM_LOCATION_TYPE_DEVICE, (int)a },
				      strcmp(onoff, "on") == 0 ? 3 : 0 };

		printf("vmm pool %d\n", FN(cuMemPoolSetAccess)(NULL, &d, 1));
	} else if (sscanf(line, "vmm pitch %u %u", &a, &b) == 2) {
		size_t pitch = 0;
		CUresult r = FN(cuMemAllocPitch_v2)(paths_allocated(), &pitch, a, b, 4);

		printf("vmm pitch %d %zu\n", r, pitch);
	} else {
		return false;
	}
	return true;
}

bool vmm_command(const char *line)
{
	return range_command(line) || address_command(line);
}
