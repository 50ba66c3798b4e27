/* fakepeer: peer access between the fake GPUs, as driver 580 has it (docs/DRIVER.md, One process on
 * several GPUs): turned on and off per direction between primary contexts; a process checkpointed
 * with any on and an allocation of cuMemAlloc's over 256 MiB fails its restore with INVALID_VALUE,
 * then with OPERATING_SYSTEM for good (the checkpoint API in fakecuda.c asks here); a process once
 * restored cannot turn it on any more (INVALID_HANDLE: every context of a fake process holds memory
 * the restore brought back). Part of libfakecuda. The state is in files beside the process's, so
 * that the controller's side sees it:
 *   <pid>.peers       "FROM TO" per direction on (CUDA ordinals)
 *   <pid>.large       "ADDRESS" per allocation over 256 MiB held
 *   <pid>.peers_ckpt  the directions on at the checkpoint, when one was on with a large allocation
 *   <pid>.restored    the process has been restored */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fakecuda.h"

#define EXPORT __attribute__((visibility("default")))

static void path_of(char *buf, size_t len, int pid, const char *ext)
{
	const char *dir = getenv("CUDANAP_FAKE_DIR");

	snprintf(buf, len, "%s/%d.%s", dir ? dir : "/tmp", pid, ext);
}

static int gpus(void)
{
	const char *s = getenv("CUDANAP_FAKE_GPUS");
	int n = s ? atoi(s) : 1;

	return n > 0 && n <= 16 ? n : 1;
}

static int exists(int pid, const char *ext)
{
	char p[4200];

	path_of(p, sizeof(p), pid, ext);
	return access(p, F_OK) == 0;
}

/* Put line in the list of this process's file ext (on) or take it out: 0, 1 when it already was as
 * asked, -1 when the list cannot be written. */
static int listed(const char *ext, const char *want, int on)
{
	char p[4200], line[64], out[4096] = "";
	int was = 0, fd;
	FILE *f;

	path_of(p, sizeof(p), (int)getpid(), ext);
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	flock(fd, LOCK_EX);
	f = fdopen(dup(fd), "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strcmp(line, want) == 0)
			was = 1;
		else if (strlen(out) + strlen(line) < sizeof(out))
			strcat(out, line);
	}
	if (f)
		fclose(f);
	if (on && strlen(out) + strlen(want) < sizeof(out))
		strcat(out, want);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, out, strlen(out), 0) != (ssize_t)strlen(out)) {
		close(fd);
		return -1;
	}
	close(fd);
	return on ? was : !was;
}

/* Whether line is in the list of this process's file ext. */
static int present(const char *ext, const char *want)
{
	char p[4200], line[64];
	int was = 0;
	FILE *f;

	path_of(p, sizeof(p), (int)getpid(), ext);
	f = fopen(p, "re");
	while (f && !was && fgets(line, sizeof(line), f))
		was = strcmp(line, want) == 0;
	if (f)
		fclose(f);
	return was;
}

/* Turn the direction from -> to on (on) or off. */
static int set(int from, int to, int on)
{
	char want[32];

	snprintf(want, sizeof(want), "%d %d\n", from, to);
	return listed("peers", want, on);
}

void fake_large(CUdeviceptr p, size_t bytes)
{
	char line[32];

	snprintf(line, sizeof(line), "%llx\n", (unsigned long long)p);
	if (!bytes || bytes > (256u << 20))
		listed("large", line, bytes != 0);
}

/* The devices of the current context and of peer; INVALID_* when they are not two GPUs. */
static CUresult pair_of(void *peer, int *from, int *to)
{
	*from = fake_ctx_device(fake_ctx_current());
	*to = fake_ctx_device(peer);
	if (*from < 0 || *to < 0)
		return CUDA_ERROR_INVALID_HANDLE;
	return *from == *to || *to >= gpus() || *from >= gpus() ? CUDA_ERROR_INVALID_DEVICE
								: CUDA_SUCCESS;
}

EXPORT CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags)
{
	char line[32];
	int from, to, r;
	CUresult e;

	fake_entered("cuCtxEnablePeerAccess");
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((e = pair_of(peer, &from, &to)) != CUDA_SUCCESS)
		return e;
	snprintf(line, sizeof(line), "%d %d\n", from, to);
	if (exists((int)getpid(), "restored") && !present("peers", line))
		return CUDA_ERROR_INVALID_HANDLE;
	r = set(from, to, 1);
	return r < 0 ? CUDA_ERROR_OPERATING_SYSTEM
	       : r   ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
		     : CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDisablePeerAccess(void *peer)
{
	int from, to, r;
	CUresult e;

	fake_entered("cuCtxDisablePeerAccess");
	if ((e = pair_of(peer, &from, &to)) != CUDA_SUCCESS)
		return e;
	r = set(from, to, 0);
	return r < 0 ? CUDA_ERROR_OPERATING_SYSTEM
	       : r   ? CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
		     : CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	fake_entered("cuDeviceCanAccessPeer");
	if (!can || dev < 0 || peer < 0 || dev >= gpus() || peer >= gpus())
		return CUDA_ERROR_INVALID_DEVICE;
	*can = dev != peer;
	return CUDA_SUCCESS;
}

/* ---- for the checkpoint API, in the controller ---- */

void fake_peers_checkpoint(int pid)
{
	char a[4200], b[4200], text[4096];
	size_t n = 0;
	FILE *f;

	path_of(a, sizeof(a), pid, "vmmlarge");
	path_of(b, sizeof(b), pid, "peers_ckpt");
	unlink(b);
	if (access(a, F_OK) == 0) { /* a mapping over the line another GPU may access */
		f = fopen(b, "we");
		if (f) {
			fputs("vmm\n", f);
			fclose(f);
		}
		return;
	}
	path_of(a, sizeof(a), pid, "large");
	f = fopen(a, "re");
	n = f && fgetc(f) != EOF; /* a large allocation held */
	if (f)
		fclose(f);
	path_of(a, sizeof(a), pid, "peers");
	f = n ? fopen(a, "re") : NULL;
	n = 0;
	if (f) {
		n = fread(text, 1, sizeof(text), f);
		fclose(f);
	}
	f = n ? fopen(b, "we") : NULL;
	if (f) {
		fwrite(text, 1, n, f);
		fclose(f);
	}
}

int fake_peers_unrestorable(int pid)
{
	return exists(pid, "peers_ckpt");
}

void fake_peers_restored(int pid)
{
	char p[4200];
	FILE *f;

	path_of(p, sizeof(p), pid, "restored");
	f = fopen(p, "we");
	if (f)
		fclose(f);
}
