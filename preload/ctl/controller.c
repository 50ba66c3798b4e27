/* cudanap-ctl: the helper process that drives the CUDA checkpoint API on the target.
 *
 * A program of its own, started by the target's agent (launch.c) with its socket on fd 3 and the
 * target's pid as its argument: an exec'd image shares nothing with the app, so it can be started
 * at any moment, after the app has initialised CUDA too, and started again if it dies. It forks
 * once so that init adopts it. It is the only code in cudanap that loads libcuda; it serves one
 * request at a time over a SOCK_SEQPACKET socket and exits when the target's end closes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cuda_abi.h"
#include "hostmem.h"
#include "nvml.h"
#include "ctl_proto.h"

/* The driver entry points, looked up once by name. */
static struct {
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
} cu;

static const struct {
	const char *name;
	size_t offset;
} cu_symbols[] = {
#define SYM(field, name)                                                                           \
	{                                                                                          \
		name, offsetof(__typeof__(cu), field)                                              \
	}
	SYM(init, "cuInit"),
	SYM(get_error_name, "cuGetErrorName"),
	SYM(get_error_string, "cuGetErrorString"),
	SYM(device_get_count, "cuDeviceGetCount"),
	SYM(device_get, "cuDeviceGet"),
	SYM(device_get_uuid, "cuDeviceGetUuid_v2"),
	SYM(device_get_attribute, "cuDeviceGetAttribute"),
	SYM(get_state, "cuCheckpointProcessGetState"),
	SYM(lock, "cuCheckpointProcessLock"),
	SYM(checkpoint, "cuCheckpointProcessCheckpoint"),
	SYM(restore, "cuCheckpointProcessRestore"),
	SYM(unlock, "cuCheckpointProcessUnlock"),
	SYM(mem_granularity, "cuMemGetAllocationGranularity"),
	SYM(mem_create, "cuMemCreate"),
	SYM(mem_release, "cuMemRelease"),
#undef SYM
};

static pid_t target;
static int loaded; /* 1 loaded, -1 failed for good */
static int inited; /* cuInit called */
static char load_error[200];

static int load_driver(void)
{
	/* secure_getenv is glibc's own: a host program may define getenv (bash does). */
	const char *path = secure_getenv("CUDANAP_LIBCUDA");
	void *h;

	if (loaded)
		return loaded > 0 ? 0 : -1;
	loaded = -1;
	if (!path || !*path)
		path = "libcuda.so.1";
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_error, sizeof(load_error),
			 "cannot load the CUDA driver (%s): %s; is the NVIDIA driver installed?",
			 path, dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(cu_symbols) / sizeof(cu_symbols[0]); i++) {
		void *f = dlsym(h, cu_symbols[i].name);

		if (!f) {
			snprintf(load_error, sizeof(load_error),
				 "the CUDA driver %s has no %s: it is too old for the checkpoint "
				 "API; "
				 "update the NVIDIA driver",
				 path, cu_symbols[i].name);
			return -1;
		}
		memcpy((char *)&cu + cu_symbols[i].offset, &f, sizeof(f));
	}
	loaded = 1;
	return 0;
}

/* Restore needs cuInit (or persistence mode), and device enumeration needs it. The rest of the
 * checkpoint API works without it (measured, DESIGN.md), so the first suspend does not pay it. */
static void ensure_init(void)
{
	if (!inited) {
		inited = 1;
		cu.init(0);
	}
}

static void describe(struct cn_resp *resp, CUresult r)
{
	const char *name = NULL, *text = NULL;

	resp->result = r;
	if (cu.get_error_name(r, &name) != CUDA_SUCCESS || !name)
		name = "CUDA_ERROR_UNKNOWN";
	if (cu.get_error_string(r, &text) != CUDA_SUCCESS || !text)
		text = "unknown error";
	snprintf(resp->name, sizeof(resp->name), "%s", name);
	snprintf(resp->message, sizeof(resp->message), "%s", text);
}

static void fail(struct cn_resp *resp, int code, const char *name, const char *msg)
{
	resp->result = code;
	snprintf(resp->name, sizeof(resp->name), "%s", name);
	snprintf(resp->message, sizeof(resp->message), "%s", msg);
}

/* ---- gpu_map: indices and UUIDs to a complete list of UUID pairs ---- */

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

	ensure_init();
	if (cu.device_get_count(&count) != CUDA_SUCCESS || count <= 0) {
		snprintf(why, len, "the driver reports no GPUs");
		return -1;
	}
	if (count > CN_MAX_GPUS)
		count = CN_MAX_GPUS;
	for (int i = 0; i < count; i++) {
		CUdevice d;

		if (cu.device_get(&d, i) || cu.device_get_uuid(&g[i].uuid, d) ||
		    (g[i].dev = d, 0) ||
		    cu.device_get_attribute(&g[i].pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
					    d) ||
		    cu.device_get_attribute(&g[i].pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d) ||
		    cu.device_get_attribute(&g[i].pci_dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d)) {
			snprintf(why, len, "cannot query GPU %d", i);
			return -1;
		}
	}
	qsort(g, (size_t)count, sizeof(g[0]), gpu_cmp);
	*n = count;
	return 0;
}

static int resolve_ref(const struct cn_gpu_ref *r, const struct gpu *g, int n, char *why,
		       size_t len)
{
	char s[CN_UUID_STR_LEN];

	if (r->index >= 0) {
		if (r->index < n)
			return r->index;
		snprintf(why, len, "gpu_map names GPU %d, but this machine has GPUs 0-%d", r->index,
			 n - 1);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (memcmp(g[i].uuid.bytes, r->uuid, 16) == 0)
			return i;
	cn_uuid_format(r->uuid, s);
	snprintf(why, len, "gpu_map names %s, which this machine does not have", s);
	return -1;
}

/* The driver wants every GPU in the list: complete it with identity pairs where that is
 * unambiguous, i.e. for GPUs that are neither moved nor a destination. */
static int resolve_map(const struct cn_gpu_pair *pairs, unsigned n_pairs, const struct gpu *g,
		       int n, CUcheckpointGpuPair *out, char *why, size_t len)
{
	int dest[CN_MAX_GPUS], src_of[CN_MAX_GPUS];

	for (int i = 0; i < n; i++)
		src_of[i] = dest[i] = -1;
	for (unsigned p = 0; p < n_pairs; p++) {
		int a = resolve_ref(&pairs[p].from, g, n, why, len);
		int b = a < 0 ? -1 : resolve_ref(&pairs[p].to, g, n, why, len);

		if (b < 0)
			return -1;
		if (dest[a] >= 0 || src_of[b] >= 0) {
			snprintf(why, len,
				 "gpu_map moves GPU %d twice or puts two GPUs onto GPU %d", a, b);
			return -1;
		}
		dest[a] = b;
		src_of[b] = a;
	}
	for (int i = 0; i < n; i++) {
		if (dest[i] >= 0)
			continue;
		if (src_of[i] >= 0) {
			snprintf(
				why, len,
				"gpu_map moves GPU %d onto GPU %d but says nothing of where GPU %d "
				"goes; add %d=N",
				src_of[i], i, i, i);
			return -1;
		}
		dest[i] = i;
	}
	for (int i = 0; i < n; i++) {
		out[i].oldUuid = g[i].uuid;
		out[i].newUuid = g[dest[i]].uuid;
	}
	return n;
}

/* ---- room on the target GPUs ---- */

/* Memory held in the controller on the target GPUs from the check until the restore: physical
 * allocations (cuMemCreate), which need no context (measured on driver 580: 8 GiB held in 0.1 ms,
 * where a context alone took 50-100 ms, and longer with several controllers creating theirs at
 * once). */
static void free_holds(CUmemGenericAllocationHandle *h, int n)
{
	for (int i = 0; i < n; i++)
		cu.mem_release(h[i]);
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
	r = cu.mem_granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r != CUDA_SUCCESS)
		return r;
	if (gran)
		bytes = (bytes + gran - 1) / gran * gran;
	return cu.mem_create(h, bytes, &prop, 0);
}

/* Never call restore onto GPUs without room for what the process held: a restore that runs out
 * of memory wedges it for good (DESIGN.md). Checks NVML's free memory against the footprint plus
 * the margin on each target GPU and, if asked, allocates the footprint there until the restore.
 * Returns the number of holds, or -1 with resp filled. A footprint that is not known is not
 * checked.
 *
 * The hold is let go just before the restore, and still protects it: beside a process that
 * grabbed all free memory but 1 GiB again and again (the migrate suite, two H200s, four runs
 * each), restores after a hold were lost 3 times in 36 attempts, restores that skipped the hold
 * where the GPU had room for the job twice over 4 times in 13. The memory let go seems to stay out
 * of others' reach until the driver has cleared it, which the restore's own allocations wait for
 * too: its setup takes longer after a hold (H100: 110-131 ms for 32 GiB against 48-58 ms without,
 * 44-53 against 38-48 for 4 GiB). That is the hold's price, paid at every size. */
static int make_room(const struct cn_req *req, const CUcheckpointGpuPair *list, int n_list,
		     const struct gpu *g, int n_gpus, CUmemGenericAllocationHandle *h,
		     struct cn_resp *resp)
{
	char why[200], s[CN_UUID_STR_LEN];
	int n = 0;

	for (uint32_t u = 0; u < req->n_use && u < CN_MAX_GPUS; u++) {
		const unsigned char *to = req->use[u].uuid;
		uint64_t need = req->use[u].bytes, free_b;
		CUresult r;
		double t0;
		int k, k_free;

		for (int i = 0; i < n_list; i++)
			if (memcmp(list[i].oldUuid.bytes, req->use[u].uuid, 16) == 0)
				to = (const unsigned char *)list[i].newUuid.bytes;
		for (k = 0; k < n_gpus && memcmp(g[k].uuid.bytes, to, 16) != 0; k++)
			;
		cn_uuid_format(to, s);
		if (k == n_gpus) {
			snprintf(why, sizeof(why),
				 "the GPU the job used, %s, is not on this machine", s);
			fail(resp, CN_RES_BAD_MAP, "BAD_GPU_MAP", why);
			goto undo;
		}
		t0 = cn_now_ms();
		k_free = cn_nvml_free(to, &free_b, why, sizeof(why));
		resp->check_ms += cn_now_ms() - t0;
		if (k_free == 0 && free_b < need + req->margin_bytes) {
			snprintf(why, sizeof(why),
				 "GPU %d (%s) has %llu MiB free; the job needs %llu MiB there plus "
				 "a %llu MiB margin ([restore] margin_mib)",
				 k, s, (unsigned long long)(free_b >> 20),
				 (unsigned long long)(need >> 20),
				 (unsigned long long)(req->margin_bytes >> 20));
			fail(resp, CN_RES_NO_ROOM, "NO_GPU_MEMORY", why);
			goto undo;
		}
		if (!req->reserve)
			continue;
		t0 = cn_now_ms();
		r = hold(&h[n], g[k].dev, need);
		resp->hold_ms += cn_now_ms() - t0;
		if (r != CUDA_SUCCESS) {
			const char *name = NULL;

			cu.get_error_name(r, &name);
			snprintf(why, sizeof(why),
				 "cannot hold %llu MiB on GPU %d (%s) until the restore: %s "
				 "([restore] reserve = false skips holding it)",
				 (unsigned long long)(need >> 20), k, s, name ? name : "error");
			fail(resp, CN_RES_NO_ROOM, "NO_GPU_MEMORY", why);
			goto undo;
		}
		n++;
	}
	return n;
undo:
	free_holds(h, n);
	return -1;
}

static CUresult do_restore(const struct cn_req *req, struct cn_resp *resp)
{
	CUcheckpointGpuPair list[CN_MAX_GPUS];
	CUcheckpointRestoreArgs args;
	CUmemGenericAllocationHandle held[CN_MAX_GPUS];
	struct gpu g[CN_MAX_GPUS];
	char why[200];
	int n = 0, n_list = 0, n_held;

	ensure_init();
	memset(&args, 0, sizeof(args));
	if (req->n_pairs > CN_MAX_GPUS) {
		fail(resp, CN_RES_BAD_MAP, "BAD_GPU_MAP", "too many pairs");
		return CUDA_ERROR_INVALID_VALUE;
	}
	if ((req->n_pairs > 0 || req->n_use > 0) && list_gpus(g, &n, why, sizeof(why)) < 0) {
		fail(resp, req->n_pairs ? CN_RES_BAD_MAP : CN_RES_NO_ROOM,
		     req->n_pairs ? "BAD_GPU_MAP" : "NO_GPU_MEMORY", why);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (req->n_pairs > 0) {
		n_list = resolve_map(req->pairs, req->n_pairs, g, n, list, why, sizeof(why));
		if (n_list < 0) {
			fail(resp, CN_RES_BAD_MAP, "BAD_GPU_MAP", why);
			return CUDA_ERROR_INVALID_VALUE;
		}
		args.gpuPairs = list;
		args.gpuPairsCount = (unsigned)n_list;
	}
	n_held = make_room(req, list, n_list, g, n, held, resp);
	if (n_held < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* The window in which another process could take the memory back from under the restore is
	 * the time between these two calls. */
	{
		double t0 = cn_now_ms();

		free_holds(held, n_held);
		resp->hold_ms += cn_now_ms() - t0;
	}
	return cu.restore(target, &args);
}

/* The host copy of a checkpoint is as large as what the process holds on its GPUs; refuse before
 * the lock when the host or the process's cgroup cannot take it, or, hibernating, the disk. The
 * copy then streams through the page cache and needs no more RAM than the kernel can write back.
 * No NVML: no check. */
static int host_room(const struct cn_req *req, struct cn_resp *resp)
{
	struct cn_gpu_use use[CN_MAX_GPUS];
	uint64_t need = 0, room;
	char why[200], which[160];
	int n = cn_nvml_footprint(target, use, CN_MAX_GPUS, why, sizeof(why));

	for (int i = 0; i < n; i++)
		need += use[i].bytes;
	if (n > 0 && req->to_disk) {
		/* The driver's copy is about 1.06 x the footprint (DESIGN.md). */
		uint64_t copy = need + need / 16;

		if (req->disk_free_bytes >= copy + req->host_margin_bytes)
			return 0;
		snprintf(resp->message, sizeof(resp->message),
			 "the process holds %llu MiB on its GPUs; its copy (%llu MiB) and the %llu "
			 "MiB margin do not fit in the %llu MiB free in the hibernate dir",
			 (unsigned long long)(need >> 20), (unsigned long long)(copy >> 20),
			 (unsigned long long)(req->host_margin_bytes >> 20),
			 (unsigned long long)(req->disk_free_bytes >> 20));
		resp->result = CN_RES_DISK;
		snprintf(resp->name, sizeof(resp->name), "NO_DISK_SPACE");
		return -1;
	}
	if (n <= 0 ||
	    cn_host_room(target, "/proc", "/sys/fs/cgroup", &room, which, sizeof(which)) < 0)
		return 0;
	if (room + req->prepared_bytes >= need + req->host_margin_bytes)
		return 0;
	snprintf(resp->message, sizeof(resp->message),
		 "the process holds %llu MiB on its GPUs, but the host copy can have only %llu "
		 "MiB (%s) less the %llu MiB margin ([preflight] host_margin_mib)",
		 (unsigned long long)(need >> 20),
		 (unsigned long long)((room + req->prepared_bytes) >> 20), which,
		 (unsigned long long)(req->host_margin_bytes >> 20));
	resp->result = CN_RES_NO_HOST;
	snprintf(resp->name, sizeof(resp->name), "NO_HOST_MEMORY");
	return -1;
}

static void serve(const struct cn_req *req, struct cn_resp *resp)
{
	CUresult r = CUDA_SUCCESS;
	double t0;
	int st = -1;

	memset(resp, 0, sizeof(*resp));
	resp->state = CN_STATE_UNKNOWN;
	if (load_driver() < 0) {
		fail(resp, CN_RES_NO_DRIVER, "NO_DRIVER", load_error);
		return;
	}
	/* What the locked process holds, for the check before its restore; not part of the
	 * checkpoint's time. */
	if (req->op == CN_OP_CHECKPOINT || req->op == CN_OP_PREPARE) {
		int n = cn_nvml_footprint(target, resp->use, CN_MAX_GPUS, resp->note,
					  sizeof(resp->note));

		resp->n_use = n > 0 ? (uint32_t)n : 0;
		if (n > 0)
			resp->note[0] = '\0';
	}
	if ((req->op == CN_OP_LOCK || req->op == CN_OP_PREPARE) && req->host_check &&
	    host_room(req, resp) < 0) {
		if (cu.get_state(target, &st) == CUDA_SUCCESS)
			resp->state = st;
		return;
	}
	resp->call_ns = cn_now_ns();
	t0 = cn_now_ms();
	switch (req->op) {
	case CN_OP_STATE:
	case CN_OP_PREPARE:
		break;
	case CN_OP_LOCK: {
		CUcheckpointLockArgs a = { .timeoutMs = req->timeout_ms };

		r = cu.lock(target, &a);
		break;
	}
	case CN_OP_CHECKPOINT: {
		CUcheckpointCheckpointArgs a = { { 0 } };

		r = cu.checkpoint(target, &a);
		break;
	}
	case CN_OP_RESTORE:
		r = do_restore(req, resp);
		break;
	case CN_OP_UNLOCK: {
		CUcheckpointUnlockArgs a = { { 0 } };

		r = cu.unlock(target, &a);
		break;
	}
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
	resp->elapsed_ms = cn_now_ms() - t0;
	if (req->op == CN_OP_STATE || req->op == CN_OP_PREPARE)
		r = cu.get_state(target, &st);
	else if (cu.get_state(target, &st) != CUDA_SUCCESS)
		st = CN_STATE_UNKNOWN;
	resp->state = st;
	if (resp->result == 0)
		describe(resp, r);
}

/* Keep only stdio (the agent points it at /dev/null) and fd 3, our socket. */
static void isolate(void)
{
	if (close_range(4, ~0U, 0) < 0)
		for (int fd = 4; fd < 65536; fd++)
			close(fd);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	prctl(PR_SET_NAME, "cudanap-ctl", 0, 0, 0);
}

int main(int argc, char **argv)
{
	struct cn_req req;
	struct cn_resp resp;
	char *end;
	long pid;
	pid_t child;

	if (argc != 2 || (pid = strtol(argv[1], &end, 10)) <= 0 || *end || fcntl(3, F_GETFD) < 0) {
		fprintf(stderr, "cudanap-ctl: started by libcudanap.so, not by hand\n");
		return 2;
	}
	/* The agent waits for this first process; init adopts the second. */
	child = fork();
	if (child < 0)
		_exit(1);
	if (child > 0)
		_exit(0);
	target = (pid_t)pid;
	isolate();
	for (;;) {
		ssize_t n = recv(3, &req, sizeof(req), 0);

		if (n == 0)
			_exit(0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if ((size_t)n != sizeof(req)) {
			memset(&resp, 0, sizeof(resp));
			fail(&resp, CN_RES_IO, "BAD_REQUEST", "malformed request");
		} else {
			serve(&req, &resp);
		}
		if (send(3, &resp, sizeof(resp), MSG_NOSIGNAL) < 0)
			_exit(0);
		/* Pay cuInit now, after the answer and while the job sleeps, rather than on its way
		 * back: it was 0.6 s of the first 8 GiB resume on an H200. */
		if (req.op == CN_OP_CHECKPOINT && resp.result == CUDA_SUCCESS)
			ensure_init();
	}
}
