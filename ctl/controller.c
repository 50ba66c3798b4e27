/* cudanap-ctl: the helper process that drives the driver's checkpoint API for one process, one
 * request at a time over its socket; the only code that loads libcuda (docs/FILES.md). */
#define _GNU_SOURCE
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
#include "ctl_proto.h"
#include "cuda_abi.h"
#include "driver.h"
#include "cn_hostmem.h"
#include "nvml.h"
#include "placement.h"

static pid_t target;

static CUresult do_restore(const struct cn_req *req, struct cn_resp *resp)
{
	CUcheckpointGpuPair list[CN_MAX_GPUS];
	CUcheckpointRestoreArgs args;
	CUmemGenericAllocationHandle held[CN_MAX_GPUS];
	int n_list, n_held;
	double t0;

	cn_driver_init();
	if (cn_placement_place(req, resp, list, &n_list, held, &n_held) < 0)
		return resp->result == CN_RES_BAD_MAP ? CUDA_ERROR_INVALID_VALUE
						      : CUDA_ERROR_OUT_OF_MEMORY;
	memset(&args, 0, sizeof(args));
	if (n_list > 0) {
		args.gpuPairs = list;
		args.gpuPairsCount = (unsigned)n_list;
	}
	/* The window in which another process could take the memory back from under the restore is
	 * the time between these two calls. */
	t0 = cn_clock_ms();
	cn_placement_release(held, n_held);
	resp->hold_ms += cn_clock_ms() - t0;
	return cn_cu.restore(target, &args);
}

/* The host copy of a checkpoint is as large as what the process holds on its GPUs; refuse before
 * the lock when the host or the process's cgroup cannot take it, or, hibernating, the disk. The
 * copy then streams through the page cache and needs no more RAM than the kernel can write back.
 * No NVML: no check. */
static int host_check(const struct cn_req *req, struct cn_resp *resp)
{
	struct cn_gpu_use use[CN_MAX_GPUS];
	uint64_t need = 0, avail;
	char why[200], which[160];
	int n = cn_nvml_footprint(target, use, CN_MAX_GPUS, why, sizeof(why));

	for (int i = 0; i < n; i++)
		need += use[i].bytes;
	if (n > 0 && req->to_disk) {
		uint64_t copy = cn_hostmem_checkpoint_bytes(need);

		if (req->disk_free_bytes >= copy + req->host_margin_bytes)
			return 0;
		snprintf(resp->message, sizeof(resp->message),
			 "the process holds %llu MiB on its GPUs; its copy (%llu MiB) and the %llu "
			 "MiB margin do not fit in the %llu MiB free in the hibernate dir",
			 (unsigned long long)(need >> 20), (unsigned long long)(copy >> 20),
			 (unsigned long long)(req->host_margin_bytes >> 20),
			 (unsigned long long)(req->disk_free_bytes >> 20));
		resp->result = CN_RES_NO_DISK;
		return -1;
	}
	if (req->copy_bytes && !req->to_disk)
		need = req->copy_bytes; /* a light nap's copy: the context stays on the GPU */
	if ((n <= 0 && !req->copy_bytes) || cn_hostmem_available(target, "/proc", "/sys/fs/cgroup",
								 &avail, which, sizeof(which)) < 0)
		return 0;
	if (avail + req->prepared_bytes >= need + req->host_margin_bytes)
		return 0;
	snprintf(resp->message, sizeof(resp->message),
		 "%s %llu MiB%s, but the host copy can have only %llu MiB (%s) less the %llu MiB "
		 "margin ([preflight] host_margin_mib)",
		 req->copy_bytes ? "its light nap copies" : "the process holds",
		 (unsigned long long)(need >> 20), req->copy_bytes ? "" : " on its GPUs",
		 (unsigned long long)((avail + req->prepared_bytes) >> 20), which,
		 (unsigned long long)(req->host_margin_bytes >> 20));
	resp->result = CN_RES_NO_HOST;
	return -1;
}

/* CN_OP_USERS: what each process asked about holds on one GPU and the host memory its nap's copy
 * could take, and what is free on the GPU, for a process making room (preload/agent/room.c). NVML
 * and /proc alone: no driver call. */
static void users(const struct cn_req *req, struct cn_resp *resp)
{
	struct cn_gpu_use use[CN_MAX_GPUS];
	char why[200];
	uint32_t n = req->n_pids < CN_USERS_MAX ? req->n_pids : CN_USERS_MAX;
	int k;

	for (uint32_t i = 0; i < n; i++) {
		k = cn_nvml_footprint(req->pids[i], use, CN_MAX_GPUS, why, sizeof(why));
		for (int j = 0; j < k; j++)
			if (cn_uuid_eq(&use[j].uuid, &req->use[0].uuid))
				resp->pid_bytes[i] = use[j].bytes;
		if (cn_hostmem_available(req->pids[i], "/proc", "/sys/fs/cgroup",
					 &resp->pid_host[i], why, sizeof(why)) < 0)
			resp->pid_host[i] = 0;
	}
	k = cn_nvml_gpus(resp->gpus, CN_MAX_GPUS, why, sizeof(why));
	resp->n_gpus = k > 0 ? (uint32_t)k : 0;
	if (cn_nvml_free(&req->use[0].uuid, &resp->free_bytes, why, sizeof(why)) < 0) {
		resp->result = CN_RES_NO_ROOM;
		snprintf(resp->message, sizeof(resp->message), "%s", why);
	}
}

/* CN_OP_GPU: every process on one GPU, what each holds and the host memory its nap could take, and
 * the GPU's memory, for the node pager (pager/), whose own controller this is. No driver call. */
static void gpu_users(const struct cn_req *req, struct cn_resp *resp)
{
	char why[200], name[CN_UUID_STR_LEN];
	bool more = false;
	int k = cn_nvml_gpus(resp->gpus, CN_MAX_GPUS, why, sizeof(why)), n;

	resp->n_gpus = k > 0 ? (uint32_t)k : 0;
	cn_uuid_fmt(&req->use[0].uuid, name);
	n = k > 0 && cn_uuid_index(resp->gpus, k, &req->use[0].uuid) < 0
		    ? (snprintf(why, sizeof(why), "no GPU %s on this machine", name), -1)
		    : cn_nvml_usage(&req->use[0].uuid, resp->procs, resp->pid_bytes, CN_USERS_MAX,
				    &resp->total_bytes, &resp->free_bytes, &more, why, sizeof(why));
	if (n < 0) {
		resp->result = CN_RES_NO_ROOM;
		snprintf(resp->message, sizeof(resp->message), "%s", why);
		return;
	}
	resp->n_procs = (uint32_t)n;
	resp->more_procs = more;
	for (int i = 0; i < n; i++)
		if (cn_hostmem_available(resp->procs[i], "/proc", "/sys/fs/cgroup",
					 &resp->pid_host[i], why, sizeof(why)) < 0)
			resp->pid_host[i] = 0;
}

/* What the locked process holds, and the machine's GPUs (by index, for the status: NVML's list
 * needs no cuInit); for a query, which GPUs are of its model, their free memory and who a restore
 * there would be refused beside. Not part of the checkpoint's time. */
static void facts(const struct cn_req *req, struct cn_resp *resp)
{
	int n = cn_nvml_footprint(target, resp->use, CN_MAX_GPUS, resp->note, sizeof(resp->note));
	bool query = req->op == CN_OP_QUERY;
	char why[200];
	int k;

	resp->n_use = n > 0 ? (uint32_t)n : 0;
	if (n > 0)
		resp->note[0] = '\0';
	k = cn_nvml_gpus(resp->gpus, CN_MAX_GPUS, why, sizeof(why));
	resp->n_gpus = k > 0 ? (uint32_t)k : 0;
	if (n > 0)
		cn_nvml_name(&resp->use[0].uuid, resp->model, sizeof(resp->model));
	else if (query && req->n_use)
		cn_nvml_name(&req->use[0].uuid, resp->model, sizeof(resp->model));
	for (int i = 0; query && resp->model[0] && i < k; i++) {
		char m[sizeof(resp->model)];

		resp->same_model[i] = cn_nvml_name(&resp->gpus[i], m, sizeof(m)) == 0 &&
				      strcmp(m, resp->model) == 0;
		if (cn_nvml_free(&resp->gpus[i], &resp->gpu_free[i], why, sizeof(why)) < 0)
			resp->gpu_free[i] = 0;
		resp->gpu_beside[i] = cn_placement_beside(req, &resp->gpus[i]);
	}
	if (query && cn_hostmem_available(target, "/proc", "/sys/fs/cgroup", &resp->host_available,
					  resp->host_which, sizeof(resp->host_which)) < 0)
		resp->host_available = 0;
}

/* ---- the operations' driver calls ---- */

static CUresult no_call(const struct cn_req *req, struct cn_resp *resp)
{
	(void)req;
	(void)resp;
	return CUDA_SUCCESS;
}

static CUresult lock(const struct cn_req *req, struct cn_resp *resp)
{
	CUcheckpointLockArgs a = { .timeoutMs = req->timeout_ms };

	(void)resp;
	return cn_cu.lock(target, &a);
}

static CUresult checkpoint(const struct cn_req *req, struct cn_resp *resp)
{
	CUcheckpointCheckpointArgs a = { { 0 } };

	(void)req;
	(void)resp;
	return cn_cu.checkpoint(target, &a);
}

static CUresult unlock(const struct cn_req *req, struct cn_resp *resp)
{
	CUcheckpointUnlockArgs a = { { 0 } };

	(void)req;
	(void)resp;
	return cn_cu.unlock(target, &a);
}

/* Each operation: whether it gathers the facts first, whether it is refused without the host's
 * room for the copy (when the request asks), its driver call, and whether its answer is the
 * process's state (the operations that only look). CN_OP_USERS needs no driver: users(). */
static const struct op {
	bool facts, host_check, looks;
	CUresult (*call)(const struct cn_req *, struct cn_resp *);
} ops[] = {
	[CN_OP_STATE] = { false, false, true, no_call },
	[CN_OP_LOCK] = { false, true, false, lock },
	[CN_OP_CHECKPOINT] = { true, false, false, checkpoint },
	[CN_OP_RESTORE] = { false, false, false, do_restore },
	[CN_OP_UNLOCK] = { false, false, false, unlock },
	[CN_OP_PREPARE] = { true, true, true, no_call },
	[CN_OP_QUERY] = { true, false, true, no_call },
};

static void serve(const struct cn_req *req, struct cn_resp *resp)
{
	const struct op *op =
		(unsigned)req->op < sizeof(ops) / sizeof(ops[0]) ? &ops[req->op] : NULL;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	double t0;
	int st = -1;

	memset(resp, 0, sizeof(*resp));
	resp->state = CN_STATE_UNKNOWN;
	if (req->op == CN_OP_USERS) {
		users(req, resp);
		return;
	}
	if (req->op == CN_OP_GPU) {
		gpu_users(req, resp);
		return;
	}
	if (cn_driver_load(resp) < 0)
		return;
	if (op && op->facts)
		facts(req, resp);
	if (op && op->host_check && req->host_check && host_check(req, resp) < 0) {
		if (cn_cu.get_state(target, &st) == CUDA_SUCCESS)
			resp->state = st;
		return;
	}
	resp->call_ns = cn_clock_ns();
	t0 = cn_clock_ms();
	if (op && op->call)
		r = op->call(req, resp);
	resp->elapsed_ms = cn_clock_ms() - t0;
	if (op && op->call && op->looks)
		r = cn_cu.get_state(target, &st);
	else if (cn_cu.get_state(target, &st) != CUDA_SUCCESS)
		st = CN_STATE_UNKNOWN;
	resp->state = st;
	if (resp->result == 0)
		cn_driver_describe(resp, r);
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
			cn_driver_fail(&resp, CN_RES_BAD_REQUEST, "malformed request");
		} else {
			serve(&req, &resp);
		}
		if (send(3, &resp, sizeof(resp), MSG_NOSIGNAL) < 0)
			_exit(0);
		/* Pay cuInit now, after the answer and while the job sleeps, rather than on its way
		 * back: it was 0.6 s of the first 8 GiB resume on an H200. */
		if (req.op == CN_OP_CHECKPOINT && resp.result == CUDA_SUCCESS)
			cn_driver_init();
	}
}
