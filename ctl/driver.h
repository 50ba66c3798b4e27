/* driver: libcuda, loaded by name in the controller. See driver.c. */
#ifndef CN_DRIVER_H
#define CN_DRIVER_H

#include "ctl_proto.h"
#include "cuda_abi.h"

/* The driver entry points, looked up once by name. */
struct cn_cu {
	CUresult (*init)(unsigned);
	CUresult (*get_error_name)(CUresult, const char **);
	CUresult (*get_error_string)(CUresult, const char **);
	CUresult (*device_get_count)(int *);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*device_get_uuid)(CUuuid *, CUdevice);
	CUresult (*device_get_attribute)(int *, int, CUdevice);
	CUresult (*get_state)(int, int *);
	CUresult (*lock)(int, CUcheckpointLockArgs *);
	CUresult (*checkpoint)(int, CUcheckpointCheckpointArgs *);
	CUresult (*restore)(int, CUcheckpointRestoreArgs *);
	CUresult (*unlock)(int, CUcheckpointUnlockArgs *);
	CUresult (*mem_granularity)(size_t *, const CUmemAllocationProp *, int);
	CUresult (*mem_create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			       unsigned long long);
	CUresult (*mem_release)(CUmemGenericAllocationHandle);
};
extern struct cn_cu cn_cu;

/* Load libcuda (or $CUDANAP_LIBCUDA) and every entry point, once. 0, or -1 with resp filled
 * (NO_DRIVER), now and at every later call. */
int cn_driver_load(struct cn_resp *resp);

/* cuInit, once: restore and device enumeration need it, the rest of the checkpoint API does not
 * (docs/DRIVER.md), so the first suspend does not pay it. */
void cn_driver_init(void);

/* resp's result, name and message for a CUresult. */
void cn_driver_describe(struct cn_resp *resp, CUresult r);
/* ... or for a result of cudanap's own (enum cn_result). */
void cn_driver_fail(struct cn_resp *resp, int code, const char *msg);

#endif
