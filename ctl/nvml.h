/* nvml: GPU memory as NVML counts it, for the controller's checks around a restore. */
#ifndef CN_NVML_H
#define CN_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"

/* What pid holds on each GPU now. Returns the number of GPUs it holds memory on (0 when NVML shows
 * none), or -1 with why filled when NVML cannot be asked. */
int cn_nvml_footprint(int pid, struct cn_gpu_use *use, int max, char *why, size_t len);

/* The processes with a context on the GPU with this UUID, compute or graphics (host pids, as NVML
 * gives them; each once), max at most: their count, or -1 with why filled when NVML cannot be
 * asked. */
int cn_nvml_procs(const struct cn_uuid *uuid, int32_t *pids, int max, char *why, size_t len);

/* The machine's GPUs, in NVML's order (nvidia-smi's): their count, or -1 with why filled. */
int cn_nvml_gpus(struct cn_uuid *gpus, int max, char *why, size_t len);

/* The model of the GPU with this UUID ("NVIDIA H100 80GB HBM3"): 0, or -1 ("" in name). */
int cn_nvml_name(const struct cn_uuid *uuid, char *name, size_t len);

/* The compute processes on the GPU with this UUID and what each holds, max at most, with the
 * GPU's total and free memory: their count (*more true when there were more), or -1 with why. */
int cn_nvml_usage(const struct cn_uuid *uuid, int32_t *pids, uint64_t *bytes, int max,
		  uint64_t *total, uint64_t *free_bytes, bool *more, char *why, size_t len);

/* Free memory on the GPU with this UUID, in bytes; -1 with why filled when it cannot be read. */
int cn_nvml_free(const struct cn_uuid *uuid, uint64_t *free_bytes, char *why, size_t len);

#endif
