/* preflight: what the agent refuses before it asks for a lock, seen from inside the process without
 * the driver (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/preflight.h"

#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cn_ncclenv.h"
#include "cuda/ipc.h"
#include "cuda/managed.h"
#include "cuda/owned.h"
#include "cuda/peers.h"
#include "agent/state.h"

/* NCCL's shared-memory segments: see nccl_thread below. */
#define NCCL_SEGMENT "/dev/shm/nccl-"

/* One of NCCL's shared-memory segments among our mappings: a large process has thousands. */
static bool nccl_segment(void)
{
	static char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	bool hit = false;

	while (f && !hit && fgets(line, sizeof(line), f))
		hit = strstr(line, NCCL_SEGMENT) != NULL;
	if (f)
		fclose(f);
	return hit;
}

/* NCCL communicators. Loading libnccl is not enough to refuse: every PyTorch process does. What a
 * process with a communicator has: PyTorch's ProcessGroupNCCL threads (named pt_nccl_*), NCCL's
 * own threads when NCCL_SET_THREAD_NAME=1 ("NCCL ..."), NCCL's shared-memory segments
 * (/dev/shm/nccl-*) and its fd-passing sockets (abstract "@/tmp/nccl-socket-*"). A DDP job on
 * two H200s showed none of the last two and no named NCCL threads, checkpointed both ranks and
 * then failed both restores with CUDA_ERROR_OPERATING_SYSTEM: lost. */
static const char *const nccl_threads[] = { "NCCL", "pt_nccl" };

static bool nccl_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool hit = false;

	while (d && !hit && (e = readdir(d))) {
		char path[64], comm[32] = "";
		FILE *f;

		if (atoi(e->d_name) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				for (size_t i = 0; i < 2; i++)
					hit |= strncmp(comm, nccl_threads[i],
						       strlen(nccl_threads[i])) == 0;
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return hit;
}

/* An NCCL fd-passing socket among our own: a Unix socket of ours bound to an abstract name
 * "/tmp/nccl-socket-...", each of our descriptors asked by getsockname(). Not the host's table of
 * sockets (/proc/net/unix): every user's are in it, and any of them could bury ours there. */
static bool nccl_socket(void)
{
	static const char name[] = "/tmp/nccl-socket-";
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	bool hit = false;

	while (d && !hit && (e = readdir(d))) {
		struct sockaddr_un a;
		socklen_t len = sizeof(a);
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d) ||
		    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
			continue;
		/* abstract: a NUL, then the name */
		hit = a.sun_family == AF_UNIX &&
		      len >= offsetof(struct sockaddr_un, sun_path) + sizeof(name) &&
		      a.sun_path[0] == '\0' && memcmp(a.sun_path + 1, name, sizeof(name) - 1) == 0;
	}
	if (d)
		closedir(d);
	return hit;
}

int cn_preflight_suspend(const struct cn_config *c, const struct cn_where *w,
			 const struct cn_route *nccl, char *why, size_t len)
{
	char env[200], who[160];
	int n;

	n = cn_ipc_imports(who, sizeof(who));
	if (n > 0) {
		snprintf(
			why, len,
			"refusing to suspend a process that holds GPU memory imported from another "
			"process (%d import%s, the first by %s): the driver checkpoints an "
			"importer "
			"but cannot restore it; release the imports first",
			n, n == 1 ? "" : "s", who);
		return -1;
	}
	if (cn_preflight_peers(c, w, why, len) < 0)
		return -1;
	n = cn_managed_held(who, sizeof(who));
	if (n > 0) {
		snprintf(
			why, len,
			"refusing to suspend a process that holds managed memory (%d allocation%s, "
			"the first by %s): the driver cannot checkpoint it; free it first",
			n, n == 1 ? "" : "s", who);
		return -1;
	}
	/* Its transports are told by the environment NCCL read at its start (cn_nccl.h). */
	if (!c->allow_nccl && c->nccl_mode != CN_NCCL_OFF && !nccl->handled &&
	    (nccl->comms > 0 || nccl_thread() || nccl_segment() || nccl_socket()) &&
	    cn_ncclenv_check("/sys/class/infiniband", env, sizeof(env)) < 0) {
		if (nccl->hint[0])
			snprintf(why, len,
				 "refusing to suspend NCCL ranks that share memory (%s): %s", env,
				 nccl->hint);
		else
			snprintf(
				why, len,
				"refusing to suspend a process with NCCL communicators whose "
				"transports the driver cannot restore: %s; start the job with "
				"[nccl] suspendable = true in its INI (or [preflight] allow_nccl = "
				"true to try anyway)",
				env);
		return -1;
	}
	return 0;
}

int cn_preflight_peers(const struct cn_config *c, const struct cn_where *w, char *why, size_t len)
{
	char what[600];
	int kind;

	kind = cn_peers_unrestorable(w->gpus, (int)w->n_gpus, c->peer_off, what, sizeof(what));
	if (!kind)
		return 0;
	snprintf(why, len, "refusing to suspend a process with %s; %s", what,
		 kind == CN_PEERS_POOL	  ? "free its memory or take the access back first"
		 : c->own == CN_OWN_NEVER ? kind == CN_PEERS_LARGE
						    ? "[memory] own = auto owns such memory, "
						      "[peer] mode = off turns the access off"
						    : "[memory] own = auto owns such memory"
		 : kind == CN_PEERS_LARGE ? "[peer] mode = off suspends it with that access "
					    "turned off"
					  : "cudanap did not own it when it was made");
	return -1;
}

int cn_preflight_nap(const struct cn_route *nccl, char *why, size_t len)
{
	if (nccl->comms > 0 || nccl_thread() || nccl_segment() || nccl_socket()) {
		snprintf(why, len,
			 "an NCCL rank: not napped alone, its peers would stall waiting for it "
			 "(suspend the whole job with cudanap suspend)");
		return -1;
	}
	return 0;
}
