/* allocargs: an allocation's or a context's arguments, read from the registers of the call (the
 * app's thread, at the call). */
#include "cuda/allocargs.h"

#include <string.h>

#include "cuda/fns.h"

bool cn_allocargs_read(const char *name, const uint64_t *gp, bool done, struct cn_alloc_args *a)
{
	memset(a, 0, sizeof(*a));
	a->dev = -1;
	if (strcmp(name, "cuMemAllocPitch") == 0) {
		/* before CUDA 3.2: 32-bit address, pitch, width and height */
		a->narrow = true;
		a->asked = (uint64_t)(uint32_t)gp[2] * (uint32_t)gp[3];
		if (done && gp[0] && gp[1]) {
			a->ptr = *(const uint32_t *)gp[0];
			a->bytes = (uint64_t) * (const uint32_t *)gp[1] * (uint32_t)gp[3];
		}
	} else if (cn_fns_is(name, "cuMemAllocPitch")) {
		/* (dptr *, pitch *, width in bytes, height, element size) */
		a->asked = gp[2] * gp[3];
		if (done && gp[0] && gp[1]) {
			a->ptr = *(const uint64_t *)gp[0];
			a->bytes = *(const uint64_t *)gp[1] * gp[3];
		}
	} else if (strcmp(name, "cuMemAlloc") == 0) {
		/* before CUDA 3.2: a 32-bit address and size */
		a->narrow = true;
		a->asked = (uint32_t)gp[1];
		if (done && gp[0]) {
			a->ptr = *(const uint32_t *)gp[0];
			a->bytes = a->asked;
		}
	} else if (cn_fns_is(name, "cuMemAlloc") || cn_fns_is(name, "cuMemAllocAsync") ||
		   cn_fns_is(name, "cuMemAllocFromPoolAsync")) {
		/* (dptr *, bytes, ...) */
		a->asked = gp[1];
		if (done && gp[0]) {
			a->ptr = *(const uint64_t *)gp[0];
			a->bytes = a->asked;
		}
	} else if (cn_fns_is(name, "cuMemCreate")) {
		/* (handle *, bytes, prop: type, handle types, location {type, id}, ...) */
		const int *prop = (const int *)gp[2];

		if (prop && prop[2] != 1) /* not CU_MEM_LOCATION_TYPE_DEVICE: host memory */
			return false;
		a->asked = gp[1];
		if (prop)
			a->dev = prop[3];
	} else if (strcmp(name, "cuDevicePrimaryCtxRetain") == 0) {
		/* (ctx *, dev) */
		a->context = true;
		a->dev = (int)gp[1];
	} else if (cn_fns_is(name, "cuCtxCreate")) {
		/* (ctx *, flags, dev); _v3: (ctx *, params, n, flags, dev); _v4: (ctx *, params,
		 * flags, dev) */
		a->context = true;
		a->dev = (int)(strcmp(name, "cuCtxCreate_v3") == 0   ? gp[4]
			       : strcmp(name, "cuCtxCreate_v4") == 0 ? gp[3]
								     : gp[2]);
	} else {
		return false;
	}
	return true;
}
