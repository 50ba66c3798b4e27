/* allocargs: each allocation's and context's arguments decoded from registers as the driver's
 * functions take them, before and after the call. */
#include <stdint.h>

#include "cuda/allocargs.h"
#include "tap.h"

static uint64_t ptr = 0x7f0000200000ull;

/* The pitched and the 32-bit allocations of CUDA before 3.2. */
static void test_pitched_and_narrow(void)
{
	struct cn_alloc_args a;
	uint64_t pitch = 20480;
	uint32_t ptr32 = 0x200000;

	{ /* cuMemAllocPitch_v2(dptr *, pitch *, width, height, element size) */
		uint64_t gp[6] = { (uint64_t)&ptr, (uint64_t)&pitch, 20000, 20000, 4, 0 };

		ok(cn_allocargs_read("cuMemAllocPitch_v2", gp, false, &a) &&
			   a.asked == 20000ull * 20000 && a.bytes == 0 && a.dev == -1 && !a.context,
		   "pitched, before: width x height asked, on the context's device");
		ok(cn_allocargs_read("cuMemAllocPitch_v2", gp, true, &a) && a.ptr == ptr &&
			   a.bytes == 20480ull * 20000,
		   "pitched, after: the address, pitch x height given");
	}
	{ /* cuMemAllocPitch before CUDA 3.2: 32-bit address, pitch, width and height */
		uint32_t p32 = 0x300000, pitch32 = 4096;
		uint64_t gp[6] = { (uint64_t)&p32,
				   (uint64_t)&pitch32,
				   0xdead000000000000ull | 4000,
				   0xdead000000000000ull | 1000,
				   4,
				   0 };

		ok(cn_allocargs_read("cuMemAllocPitch", gp, true, &a) && a.narrow &&
			   a.asked == 4000ull * 1000 && a.ptr == p32 && a.bytes == 4096ull * 1000,
		   "cuMemAllocPitch: 32 bits of each");
	}
	{ /* cuMemAlloc before CUDA 3.2: 32-bit address and size, the rest of the registers not */
		uint64_t gp[6] = {
			(uint64_t)&ptr32, 0xdead000000000000ull | (64u << 20), 0, 0, 0, 0
		};

		ok(cn_allocargs_read("cuMemAlloc", gp, true, &a) && a.narrow &&
			   a.asked == 64u << 20 && a.ptr == ptr32 && a.bytes == 64u << 20,
		   "cuMemAlloc: 32 bits of address and size");
	}
}

/* The plain and pool allocations, cuMemCreate's on a device or the host. */
static void test_plain_and_created(void)
{
	int prop[6] = { 1, 0, 1, 3, 0, 0 }; /* pinned, no handle types, on device 3 */
	struct cn_alloc_args a;

	{
		uint64_t gp[6] = { (uint64_t)&ptr, 3ull << 30, 0, 0, 0, 0 };
		const char *names[] = { "cuMemAlloc_v2", "cuMemAllocAsync", "cuMemAllocAsync_ptsz",
					"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz" };

		for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			ok(cn_allocargs_read(names[i], gp, true, &a) && a.asked == 3ull << 30 &&
				   a.ptr == ptr && a.bytes == 3ull << 30,
			   "%s: the bytes in the second register", names[i]);
	}
	{ /* cuMemCreate(handle *, bytes, prop, flags) */
		uint64_t h, gp[6] = { (uint64_t)&h, 1ull << 30, (uint64_t)prop, 0, 0, 0 };

		ok(cn_allocargs_read("cuMemCreate", gp, false, &a) && a.asked == 1ull << 30 &&
			   a.dev == 3,
		   "cuMemCreate: its bytes, on the device its properties name");
		prop[2] = 2; /* CU_MEM_LOCATION_TYPE_HOST */
		ok(!cn_allocargs_read("cuMemCreate", gp, false, &a),
		   "cuMemCreate of host memory: none");
	}
}

/* Contexts, by every version of the call; and the calls that are no allocation of device memory. */
static void test_contexts_and_others(void)
{
	struct cn_alloc_args a;

	{
		uint64_t c, gp[6] = { (uint64_t)&c, 2, 0, 0, 0, 0 };

		ok(cn_allocargs_read("cuDevicePrimaryCtxRetain", gp, false, &a) && a.context &&
			   a.dev == 2 && a.asked == 0,
		   "cuDevicePrimaryCtxRetain: a context on device 2");
		gp[1] = 0; /* flags */
		gp[2] = 2;
		ok(cn_allocargs_read("cuCtxCreate_v2", gp, false, &a) && a.context && a.dev == 2,
		   "cuCtxCreate_v2(ctx *, flags, dev)");
		gp[2] = 0;
		gp[3] = 5;
		ok(cn_allocargs_read("cuCtxCreate_v4", gp, false, &a) && a.dev == 5,
		   "cuCtxCreate_v4(ctx *, params, flags, dev)");
		gp[3] = 0;
		gp[4] = 6;
		ok(cn_allocargs_read("cuCtxCreate_v3", gp, false, &a) && a.dev == 6,
		   "cuCtxCreate_v3(ctx *, params, n, flags, dev)");
	}
	{
		uint64_t gp[6] = { (uint64_t)&ptr, 1 << 20, 0, 0, 0, 0 };

		ok(!cn_allocargs_read("cuMemAllocHost_v2", gp, true, &a) &&
			   !cn_allocargs_read("cuMemAllocManaged", gp, true, &a) &&
			   !cn_allocargs_read("cuMemFree_v2", gp, true, &a),
		   "host and managed memory, and other calls: none");
	}
}

int main(void)
{
	test_pitched_and_narrow();
	test_plain_and_created();
	test_contexts_and_others();
	return tap_done();
}
