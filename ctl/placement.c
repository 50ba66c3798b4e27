/* placement: where a restore puts the process's memory, and whether there is room for it there;
 * runs in the controller (docs/FILES.md). */
#define _GNU_SOURCE
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cn_config.h"
#include "cn_gpumap.h"
#include "driver.h"
#include "nvml.h"

/* ---- gpu_map: where each GPU the process started on goes (cn_gpumap.h), as the driver's pairs
 * ---- */

struct gpu {
	int pci_domain, pci_bus, pci_dev;
	CUdevice dev;
	CUuuid uuid;
};

static int gpu_cmp(const void *a, const void *b)
{
	const struct gpu *x = a, *y = b;

	if (x->pci_domain != y->pci_domain)
		return x->pci_domain - y->pci_domain;
	if (x->pci_bus != y->pci_bus)
		return x->pci_bus - y->pci_bus;
	return x->pci_dev - y->pci_dev;
}

/* Every GPU the driver sees, in PCI bus order: the order nvidia-smi numbers them in. */
static int list_gpus(struct gpu *g, int *n, char *why, size_t len)
{
	int count = 0;

	cn_driver_init();
	if (cn_cu.device_get_count(&count) != CUDA_SUCCESS || count <= 0) {
		snprintf(why, len, "the driver reports no GPUs");
		return -1;
	}
	if (count > CN_MAX_GPUS)
		count = CN_MAX_GPUS;
	for (int i = 0; i < count; i++) {
		CUdevice d;

		if (cn_cu.device_get(&d, i) || cn_cu.device_get_uuid(&g[i].uuid, d) ||
		    (g[i].dev = d, 0) ||
		    cn_cu.device_get_attribute(&g[i].pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
					       d) ||
		    cn_cu.device_get_attribute(&g[i].pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d) ||
		    cn_cu.device_get_attribute(&g[i].pci_dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
					       d)) {
			snprintf(why, len, "cannot query GPU %d", i);
			return -1;
		}
	}
	qsort(g, (size_t)count, sizeof(g[0]), gpu_cmp);
	*n = count;
	return 0;
}

/* A restore's plan: the machine's GPUs, and the map resolved on them (cn_gpumap_resolve): where
 * each GPU the process started on goes, and where the memory it held on each GPU (req->use[u],
 * where it slept) goes. */
struct plan {
	struct gpu g[CN_MAX_GPUS];
	int n;
	const struct cn_uuid *uuids; /* g's UUIDs, in g's order (the response's gpus) */
	struct cn_gpumap_plan map;
};

/* The pairs the driver wants, one for every GPU: each GPU the process started on, from where it is
 * now to where the map puts it. *n_list 0 when nothing moves. Fills p's map. */
static int pairs_for(const struct cn_req *req, struct plan *p, CUcheckpointGpuPair *out,
		     int *n_list, char *why, size_t len)
{
	if (cn_gpumap_resolve(&req->map, req->moves, req->n_moves, p->uuids, p->n, req->use,
			      req->n_use, &p->map, why, len) < 0)
		return -1;
	for (int h = 0; h < p->n; h++) {
		out[h].oldUuid = p->g[p->map.cur[h]].uuid;
		out[h].newUuid = p->g[p->map.want[h]].uuid;
	}
	*n_list = p->map.moved ? p->n : 0;
	return 0;
}

/* The GPU the memory of req->use[u] goes to. */
static const struct cn_uuid *target(const struct cn_req *req, const struct plan *p, uint32_t u)
{
	return p->map.to[u] >= 0 ? &p->uuids[p->map.to[u]] : &req->use[u].uuid;
}

/* ---- beside other processes ---- */

/* The end of each refusal's reason: what the driver does (preload/agent/beside.c). */
#define STOPPED " is stopped by the driver after ~5 s ([restore] beside_restored)"

static bool listed(const struct cn_req *req, int32_t pid)
{
	for (uint32_t i = 0; i < req->n_pids && i < CN_USERS_MAX; i++)
		if (req->pids[i] == pid)
			return true;
	return false;
}

int32_t cn_placement_beside(const struct cn_req *req, const struct cn_uuid *uuid)
{
	static int32_t on[1024];
	char why[200];
	int k;

	if (!req->pids_only && req->n_pids == 0)
		return 0;
	k = cn_nvml_procs(uuid, on, 1024, why, sizeof(why));
	for (int j = 0; j < k; j++)
		if (req->pids_only ? !listed(req, on[j]) : listed(req, on[j]))
			return on[j];
	return 0;
}

/* A restore onto a GPU that cn_placement_beside refuses is refused before anything is held. 0,
 * or -1 with resp filled. */
static int beside(const struct cn_req *req, const struct plan *p, struct cn_resp *resp)
{
	for (uint32_t u = 0; u < req->n_use && u < CN_MAX_GPUS; u++) {
		const struct cn_uuid *to = target(req, p, u);
		int32_t pid = cn_placement_beside(req, to);
		char why[240], s[CN_UUID_STR_LEN];
		int at = p->map.to[u] >= 0 ? p->map.to[u] : p->n;

		if (!pid)
			continue;
		cn_uuid_fmt(to, s);
		if (req->pids_only)
			snprintf(why, sizeof(why), "GPU %d (%s) runs pid %d, %s%s", at, s, (int)pid,
				 "not of this NCCL job: restored, a rank's ",
				 "collective waiting there beside another's work" STOPPED);
		else
			snprintf(why, sizeof(why), "GPU %d (%s) runs pid %d of %s%s", at, s,
				 (int)pid, "an NCCL job that cudanap restored, whose ",
				 "collective waiting there beside this work" STOPPED);
		cn_driver_fail(resp, CN_RES_BESIDE, why);
		return -1;
	}
	return 0;
}

/* ---- room on the target GPUs ---- */

/* Memory held in the controller on the target GPUs from the check until the restore: physical
 * allocations (cuMemCreate), which need no context (measured on driver 580: 8 GiB held in 0.1 ms,
 * where a context alone took 50-100 ms, and longer with several controllers creating theirs at
 * once). */
void cn_placement_release(CUmemGenericAllocationHandle *h, int n)
{
	for (int i = 0; i < n; i++)
		cn_cu.mem_release(h[i]);
}

/* bytes on dev, rounded up to what cuMemCreate takes; the driver's result. */
static CUresult hold(CUmemGenericAllocationHandle *h, CUdevice dev, uint64_t bytes)
{
	CUmemAllocationProp prop;
	size_t gran = 0;
	CUresult r;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	r = cn_cu.mem_granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r != CUDA_SUCCESS)
		return r;
	if (gran)
		bytes = (bytes + gran - 1) / gran * gran;
	return cn_cu.mem_create(h, bytes, &prop, 0);
}

/* Never call restore onto GPUs without room for what the process held: a restore that runs out
 * of memory wedges it for good (docs/DRIVER.md). Checks NVML's free memory against the footprint
 * plus the margin on each target GPU and, if asked, allocates the footprint there until the
 * restore. Returns the number of holds, or -1 with resp filled. A footprint that is not known is
 * not checked.
 *
 * The hold is let go just before the restore, and still protects it: fewer restores are lost
 * beside a process grabbing memory, for a longer setup at every size (docs/COMPATIBILITY.md,
 * Restore needs room). */
static int check_and_hold(const struct cn_req *req, const struct plan *p,
			  CUmemGenericAllocationHandle *h, struct cn_resp *resp)
{
	char why[200], s[CN_UUID_STR_LEN];
	int n = 0;

	for (uint32_t u = 0; u < req->n_use && u < CN_MAX_GPUS; u++) {
		const struct cn_uuid *to = target(req, p, u);
		uint64_t need = req->use[u].bytes, free_b;
		CUresult r;
		double t0;
		int k = p->map.to[u], k_free;

		cn_uuid_fmt(to, s);
		if (k < 0) {
			snprintf(why, sizeof(why),
				 "the GPU the job used, %s, is not on this machine", s);
			cn_driver_fail(resp, CN_RES_BAD_MAP, why);
			goto undo;
		}
		t0 = cn_clock_ms();
		k_free = cn_nvml_free(to, &free_b, why, sizeof(why));
		resp->check_ms += cn_clock_ms() - t0;
		if (k_free == 0 && free_b < need + req->margin_bytes) {
			snprintf(why, sizeof(why),
				 "GPU %d (%s) has %llu MiB free; the job needs %llu MiB there plus "
				 "a %llu MiB margin ([restore] margin_mib)",
				 k, s, (unsigned long long)(free_b >> 20),
				 (unsigned long long)(need >> 20),
				 (unsigned long long)(req->margin_bytes >> 20));
			cn_driver_fail(resp, CN_RES_NO_ROOM, why);
			goto undo;
		}
		if (!req->reserve)
			continue;
		t0 = cn_clock_ms();
		r = hold(&h[n], p->g[k].dev, need);
		resp->hold_ms += cn_clock_ms() - t0;
		if (r != CUDA_SUCCESS) {
			const char *name = NULL;

			cn_cu.get_error_name(r, &name);
			snprintf(why, sizeof(why),
				 "cannot hold %llu MiB on GPU %d (%s) until the restore: %s "
				 "([restore] reserve = false skips holding it)",
				 (unsigned long long)(need >> 20), k, s, name ? name : "error");
			cn_driver_fail(resp, CN_RES_NO_ROOM, why);
			goto undo;
		}
		n++;
	}
	return n;
undo:
	cn_placement_release(h, n);
	return -1;
}

int cn_placement_place(const struct cn_req *req, struct cn_resp *resp, CUcheckpointGpuPair *list,
		       int *n_list, CUmemGenericAllocationHandle *held, int *n_held)
{
	struct plan p = { .n = 0, .uuids = resp->gpus };
	char why[200];

	*n_list = *n_held = 0;
	if (req->map.n > CN_MAX_GPUS || req->n_moves > CN_MAX_GPUS) {
		cn_driver_fail(resp, CN_RES_BAD_MAP, "too many pairs");
		return -1;
	}
	if (!req->map.n && !req->n_moves && !req->n_use)
		return 0;
	if (list_gpus(p.g, &p.n, why, sizeof(why)) < 0) {
		cn_driver_fail(resp, req->map.n ? CN_RES_BAD_MAP : CN_RES_NO_ROOM, why);
		return -1;
	}
	resp->n_gpus = (uint32_t)p.n;
	for (int i = 0; i < p.n; i++)
		resp->gpus[i] = cn_uuid_of_cu(&p.g[i].uuid);
	if (pairs_for(req, &p, list, n_list, why, sizeof(why)) < 0) {
		cn_driver_fail(resp, CN_RES_BAD_MAP, why);
		return -1;
	}
	if (beside(req, &p, resp) < 0)
		return -1;
	*n_held = check_and_hold(req, &p, held, resp);
	if (*n_held < 0) {
		*n_held = 0;
		return -1;
	}
	/* Where the GPUs the process started on will be, once restored. */
	resp->n_moves = cn_gpumap_moves(p.map.want, resp->gpus, p.n, resp->moves);
	return 0;
}
