/* fakevmm: the driver's virtual memory management, as the test target's process sees it, and its
 * rule for a checkpoint (docs/DRIVER.md, One process on several GPUs): address ranges reserved and
 * freed, physical handles made (cuMemCreate, counted against the GPU's size like cuMemAlloc_v2's)
 * and released, mapped into ranges and unmapped, access set per device; a handle over 256 MiB
 * mapped where another GPU may access it makes the process's restore fail with INVALID_VALUE, and
 * every later one with OPERATING_SYSTEM. What a mapping holds is kept per handle (a few words
 * written by the target, read back through any mapping of it), and a device reading a mapping it
 * has no access to gets ILLEGAL_ADDRESS: what an owner of memory must keep right across a suspend.
 * Part of libfakecuda; the handles and mappings live in the process, the rule in a file the
 * controller's side reads:
 *   <pid>.vmmlarge   a line per mapping over 256 MiB that another GPU may access */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define EXPORT	  __attribute__((visibility("default")))
#define MAX	  4096
#define WORDS	  16
#define LINE	  (256ull << 20)
#define GRANULE	  (2ull << 20)
#define ILLEGAL	  700 /* CUDA_ERROR_ILLEGAL_ADDRESS */
#define NOT_FOUND 500 /* CUDA_ERROR_NOT_FOUND */

struct handle {
	CUmemGenericAllocationHandle id;
	size_t bytes;
	int dev, maps;
	bool released, used;
	struct {
		size_t off;
		unsigned value;
	} word[WORDS];
};

struct mapping {
	CUdeviceptr va;
	size_t bytes, offset;
	CUmemGenericAllocationHandle h;
	unsigned access; /* a bit per device */
	bool used;
	struct handle *of; /* h's, found once: a process of thousands of pieces maps each */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct handle handles[MAX];
static struct mapping maps[MAX];
static struct {
	CUdeviceptr base;
	size_t bytes;
} reserved[MAX];
static CUdeviceptr next_va = 0x600000000000ull;
static unsigned long long next_id = 1;

static struct handle *handle(CUmemGenericAllocationHandle id)
{
	for (int i = 0; i < MAX; i++)
		if (handles[i].used && handles[i].id == id)
			return &handles[i];
	return NULL;
}

static struct mapping *mapping_at(CUdeviceptr p)
{
	for (int i = 0; i < MAX; i++)
		if (maps[i].used && p >= maps[i].va && p < maps[i].va + maps[i].bytes)
			return &maps[i];
	return NULL;
}

static bool in_reservation(CUdeviceptr va, size_t bytes)
{
	for (int i = 0; i < MAX; i++)
		if (reserved[i].bytes && va >= reserved[i].base &&
		    va + bytes <= reserved[i].base + reserved[i].bytes)
			return true;
	return false;
}

/* Whether mapping m is over the line and another GPU may access it. */
static bool large_shared(const struct mapping *m)
{
	return m->used && m->of->bytes > LINE && (m->access & ~(1u << m->of->dev));
}

/* <pid>.WHAT beside the fake's files, this process's. */
static void pid_file(char *path, size_t len, const char *what)
{
	const char *dir = getenv("CUDANAP_FAKE_DIR");

	snprintf(path, len, "%s/%d.%s", dir ? dir : "/tmp", (int)getpid(), what);
}

/* Whether the file is there, and in *n the number in it (0 when none). */
static bool number_in(const char *path, int *n)
{
	FILE *f = fopen(path, "re");

	*n = 0;
	if (!f)
		return false;
	if (fscanf(f, "%d", n) != 1)
		*n = 0;
	fclose(f);
	return true;
}

/* The mappings over the line another GPU may access, written out for the checkpoint (mu held). */
static void write_large(void)
{
	char path[4200];
	FILE *f = NULL;
	int n = 0;

	for (int i = 0; i < MAX; i++)
		n += large_shared(&maps[i]);
	pid_file(path, sizeof(path), "vmmlarge");
	if (n)
		f = fopen(path, "we");
	else
		unlink(path);
	for (int i = 0; f && i < MAX; i++)
		if (large_shared(&maps[i]))
			fprintf(f, "%llx %zu\n", (unsigned long long)maps[i].va, maps[i].of->bytes);
	if (f)
		fclose(f);
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *p, size_t bytes, size_t align, CUdeviceptr addr,
				    unsigned long long flags)
{
	(void)addr, (void)flags;
	fake_entered("cuMemAddressReserve");
	if (!p || !bytes || bytes % GRANULE || (align && align % GRANULE))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (!reserved[i].bytes) {
			reserved[i].base = *p = next_va;
			reserved[i].bytes = bytes;
			next_va +=
				(bytes + (1ull << 30)) & ~((1ull << 30) - 1); /* a gap after each */
			pthread_mutex_unlock(&mu);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&mu);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr p, size_t bytes)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	fake_entered("cuMemAddressFree");
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (reserved[i].bytes && reserved[i].base == p && reserved[i].bytes == bytes) {
			reserved[i].bytes = 0;
			r = CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&mu);
	return r;
}

/* A handle of the target's; the controller's holds for a restore go to fake_hold instead. */
CUresult fake_vmm_create(CUmemGenericAllocationHandle *out, size_t bytes, int dev)
{
	long long mib = (long long)(bytes >> 20);

	if (fake_account(dev, mib) != CUDA_SUCCESS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (!handles[i].used) {
			handles[i] = (struct handle){ .id = (next_id++ << 8) | 0x5,
						      .bytes = bytes,
						      .dev = dev,
						      .used = true };
			*out = handles[i].id;
			pthread_mutex_unlock(&mu);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&mu);
	fake_account(dev, -mib);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Released and unmapped: the memory goes (mu held). */
static void settle(struct handle *h)
{
	if (h->released && !h->maps) {
		fake_account(h->dev, -(long long)(h->bytes >> 20));
		h->used = false;
	}
}

/* 0 when id is one of the target's handles (released: 1 more if it was), -1 when not. */
int fake_vmm_release(CUmemGenericAllocationHandle id)
{
	struct handle *h;

	pthread_mutex_lock(&mu);
	h = handle(id);
	if (h && !h->released) {
		h->released = true;
		settle(h);
	}
	pthread_mutex_unlock(&mu);
	return h ? 0 : -1;
}

EXPORT CUresult cuMemMap(CUdeviceptr va, size_t bytes, size_t offset,
			 CUmemGenericAllocationHandle id, unsigned long long flags)
{
	struct handle *h;
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	fake_entered("cuMemMap");
	pthread_mutex_lock(&mu);
	h = handle(id);
	if (h && !h->released && !flags && bytes && !(bytes % GRANULE) && !(offset % GRANULE) &&
	    offset + bytes <= h->bytes && in_reservation(va, bytes) && !mapping_at(va) &&
	    !mapping_at(va + bytes - 1))
		for (int i = 0; i < MAX; i++)
			if (!maps[i].used) {
				maps[i] = (struct mapping){ va, bytes, offset, id, 0, true, h };
				h->maps++;
				r = CUDA_SUCCESS;
				break;
			}
	pthread_mutex_unlock(&mu);
	return r;
}

static atomic_int unmaps; /* every cuMemUnmap that unmapped something */

/* What a test asks to see of the copies out and the releases beside them: with <pid>.slowunmap
 * beside the fake's files (a number of ms) each cuMemUnmap takes that long; with <pid>.trace, each
 * copy out as it is issued and each unmap as it ends is a line there, in the order they came (and
 * with FAKE_UNPIN_MS each slowed unpin and each launch: fakecuda.h). */
static int knob_ms(const char *what)
{
	char path[4200];
	int ms;

	pid_file(path, sizeof(path), what);
	number_in(path, &ms);
	return ms;
}

void fake_trace(const char *what, CUdeviceptr va)
{
	static pthread_mutex_t tmu = PTHREAD_MUTEX_INITIALIZER;
	char path[4200];
	FILE *f;

	pid_file(path, sizeof(path), "trace");
	pthread_mutex_lock(&tmu);
	if (access(path, F_OK) == 0 && (f = fopen(path, "ae"))) {
		fprintf(f, "%s %llx\n", what, (unsigned long long)va);
		fclose(f);
	}
	pthread_mutex_unlock(&tmu);
}

/* Every mapping inside [va, va + bytes) is undone, as the driver's does for a range of several. */
EXPORT CUresult cuMemUnmap(CUdeviceptr va, size_t bytes)
{
	int n = 0, slow = knob_ms("slowunmap");

	fake_entered("cuMemUnmap");
	if (slow > 0)
		usleep((useconds_t)slow * 1000);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (maps[i].used && maps[i].va >= va && maps[i].va + maps[i].bytes <= va + bytes) {
			struct handle *h = maps[i].of;

			maps[i].used = false;
			h->maps--;
			settle(h);
			n++;
		}
	write_large();
	pthread_mutex_unlock(&mu);
	if (n)
		atomic_fetch_add(&unmaps, 1);
	fake_trace("unmapped", va);
	return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr va, size_t bytes, const CUmemAccessDesc *d, size_t n)
{
	CUresult r = CUDA_SUCCESS;
	size_t done = 0;

	fake_entered("cuMemSetAccess");
	pthread_mutex_lock(&mu);
	while (r == CUDA_SUCCESS && done < bytes) {
		struct mapping *m = mapping_at(va + done);

		if (!m || m->va != va + done) {
			r = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		for (size_t k = 0; k < n; k++)
			if (d[k].flags)
				m->access |= 1u << d[k].location.id;
			else
				m->access &= ~(1u << d[k].location.id);
		done += m->bytes;
	}
	write_large();
	pthread_mutex_unlock(&mu);
	return r;
}

/* For memory of cuMemCreate's: the mapping's range, as the driver answers for its own. */
int fake_vmm_range(CUdeviceptr p, CUdeviceptr *base, size_t *bytes)
{
	struct mapping *m;

	pthread_mutex_lock(&mu);
	m = mapping_at(p);
	if (m) {
		*base = m->va;
		*bytes = m->bytes;
	}
	pthread_mutex_unlock(&mu);
	return m ? 0 : -1;
}

EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						       CUmemGenericAllocationHandle id)
{
	struct handle *h;

	fake_entered("cuMemGetAllocationPropertiesFromHandle");
	pthread_mutex_lock(&mu);
	h = handle(id);
	if (h && prop) {
		memset(prop, 0, sizeof(*prop));
		prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop->location.id = h->dev;
	}
	pthread_mutex_unlock(&mu);
	return h && prop ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *out, void *addr)
{
	struct mapping *m;

	fake_entered("cuMemRetainAllocationHandle");
	pthread_mutex_lock(&mu);
	m = mapping_at((CUdeviceptr)addr);
	if (m && out)
		*out = m->h;
	pthread_mutex_unlock(&mu);
	return m && out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A handle made without a type to export cannot be exported. */
EXPORT CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle id, int type,
					     unsigned long long flags)
{
	(void)out, (void)type, (void)flags;
	fake_entered("cuMemExportToShareableHandle");
	return handle(id) ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemPoolSetAccess(void *pool, const CUmemAccessDesc *d, size_t n)
{
	(void)pool, (void)d, (void)n;
	fake_entered("cuMemPoolSetAccess");
	return CUDA_SUCCESS;
}

/* ---- the target's look at its memory (target.c's commands) ---- */

/* A word at p, through its mapping, into the handle's store: written (w) or read. */
EXPORT CUresult fake_vmm_word(CUdeviceptr p, bool w, unsigned *value)
{
	struct mapping *m;
	struct handle *h;
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&mu);
	m = mapping_at(p);
	h = m ? m->of : NULL;
	if (h) {
		size_t off = m->offset + (p - m->va);
		int free_slot = -1, i;

		for (i = 0; i < WORDS && !(h->word[i].off == off + 1); i++)
			if (free_slot < 0 && !h->word[i].off)
				free_slot = i;
		if (w && (i < WORDS || free_slot >= 0)) {
			i = i < WORDS ? i : free_slot;
			h->word[i].off = off + 1;
			h->word[i].value = *value;
			r = CUDA_SUCCESS;
		} else if (!w) {
			*value = i < WORDS ? h->word[i].value : 0;
			r = CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* A "kernel" of device dev reading p: 0, ILLEGAL_ADDRESS where dev has no access to its
 * mapping; memory not of cuMemCreate's is the driver's peer access's (fakepeer.c). */
EXPORT CUresult fake_vmm_touch(int dev, CUdeviceptr p)
{
	struct mapping *m;
	CUresult r;

	pthread_mutex_lock(&mu);
	m = mapping_at(p);
	r = !m ? NOT_FOUND : (m->access >> dev & 1) ? CUDA_SUCCESS : ILLEGAL;
	pthread_mutex_unlock(&mu);
	return r;
}

/* ---- what a light nap calls (cuda/light.c): copies, pinning, streams and events ---- */

/* The host bytes a copy to the host wrote a word into, for the copy back to read them (the
 * words live in the handles; the host copy holds each at its place). */
#define CARRIED MAX
static uintptr_t carried[CARRIED];

EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *loc, CUdeviceptr p)
{
	struct mapping *m;

	fake_entered("cuMemGetAccess");
	pthread_mutex_lock(&mu);
	m = mapping_at(p);
	if (m && flags && loc)
		*flags = (m->access >> loc->id & 1) ? 3 : 0;
	pthread_mutex_unlock(&mu);
	return m && flags && loc ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Whether [va, va + n) is all mapped (mu held). */
static bool all_mapped(CUdeviceptr va, size_t n)
{
	for (size_t done = 0; done < n;) {
		struct mapping *m = mapping_at(va + done);

		if (!m)
			return false;
		done = m->va + m->bytes - va;
	}
	return true;
}

/* A copy that fails once, as a test asks: <pid>.failcopy (to the GPU) or <pid>.failcopyout (to
 * the host) beside the fake's files, removed by the failure. A number N in it: N copies succeed
 * first (counted down in the file), and the failing one waits (3 s at most) until N ranges were
 * unmapped since the count began, as many as a copy out that gives each piece back once its copy
 * ends gives back by then. */
static bool fail_once(const char *what)
{
	static pthread_mutex_t fmu = PTHREAD_MUTEX_INITIALIZER;
	static int base = -1, want;
	char path[4200];
	FILE *f;
	int skip, from = -1, n = 0;
	bool there, fail;

	pid_file(path, sizeof(path), what);
	pthread_mutex_lock(&fmu);
	there = number_in(path, &skip);
	if (skip > 0 && base < 0) {
		base = atomic_load(&unmaps);
		want = skip;
	}
	if (skip > 0 && (f = fopen(path, "we"))) {
		fprintf(f, "%d\n", skip - 1);
		fclose(f);
	}
	fail = there && skip <= 0 && unlink(path) == 0;
	if (fail) {
		from = base;
		n = want;
		base = -1;
	}
	pthread_mutex_unlock(&fmu);
	for (int i = 0; from >= 0 && i < 300 && atomic_load(&unmaps) - from < n; i++)
		usleep(10000);
	return fail;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	(void)stream;
	fake_entered("cuMemcpyDtoHAsync_v2");
	if (fail_once("failcopyout"))
		return 999; /* CUDA_ERROR_UNKNOWN */
	fake_trace("copyout", src);
	pthread_mutex_lock(&mu);
	if (all_mapped(src, n)) {
		r = CUDA_SUCCESS;
		for (int i = 0; i < MAX; i++) {
			struct handle *h = maps[i].used ? maps[i].of : NULL;

			for (int w = 0; h && w < WORDS; w++) {
				size_t off = h->word[w].off - 1;
				CUdeviceptr va = maps[i].va + (off - maps[i].offset);

				if (!h->word[w].off || off < maps[i].offset ||
				    off >= maps[i].offset + maps[i].bytes || va < src ||
				    va >= src + n)
					continue;
				memcpy((char *)dst + (va - src), &h->word[w].value,
				       sizeof(unsigned));
				for (int k = 0; k < CARRIED; k++)
					if (!carried[k] ||
					    carried[k] == (uintptr_t)dst + (va - src)) {
						carried[k] = (uintptr_t)dst + (va - src);
						break;
					}
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* Each word the host copy carries in [src, src + n), read from the host memory itself. */
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	(void)stream;
	fake_entered("cuMemcpyHtoDAsync_v2");
	if (fail_once("failcopy"))
		return 999; /* CUDA_ERROR_UNKNOWN */
	pthread_mutex_lock(&mu);
	if (all_mapped(dst, n)) {
		r = CUDA_SUCCESS;
		for (int k = 0; k < CARRIED; k++) {
			uintptr_t p = carried[k];
			unsigned value;

			if (!p || p < (uintptr_t)src || p >= (uintptr_t)src + n)
				continue;
			memcpy(&value, (const void *)p, sizeof(value));
			carried[k] = 0;
			pthread_mutex_unlock(&mu);
			fake_vmm_word(dst + (p - (uintptr_t)src), true, &value);
			pthread_mutex_lock(&mu);
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* Pinned host memory: counted, for the tests' look (<pid>.pinned beside the status files, and
 * the most ever pinned at once in <pid>.pinnedpeak). */
static long long pinned_bytes, pinned_peak;

/* Written beside and renamed over, so that a test never reads it half written. */
static void write_number(const char *what, long long n)
{
	char path[4200], tmp[4300];
	FILE *f;

	pid_file(path, sizeof(path), what);
	snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)syscall(SYS_gettid));
	f = fopen(tmp, "we");
	if (f) {
		fprintf(f, "%lld\n", n);
		if (fclose(f) == 0)
			rename(tmp, path);
		else
			unlink(tmp);
	}
}

static void write_pinned(void)
{
	if (pinned_bytes > pinned_peak)
		pinned_peak = pinned_bytes;
	write_number("pinned", pinned_bytes);
	write_number("pinnedpeak", pinned_peak);
}

static struct {
	void *p;
	size_t n;
} regs[MAX];

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

	(void)flags;
	fake_entered("cuMemHostRegister_v2");
	if (getenv("FAKE_PIN_MS")) /* pinning takes time too */
		usleep((useconds_t)atoi(getenv("FAKE_PIN_MS")) * 1000);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (!regs[i].p) {
			regs[i].p = p;
			regs[i].n = n;
			pinned_bytes += (long long)n;
			r = CUDA_SUCCESS;
			break;
		}
	write_pinned();
	pthread_mutex_unlock(&mu);
	return r;
}

/* The driver's lock as a slowed unpin holds it: not fair. A thread that let it go less than
 * BARGE_MS ago takes it again before a launch waiting for it (fakecuda.h). */
#define BARGE_MS 2.0
static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic double released_ms;

static double mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void fake_driver_enter(void)
{
	for (;;) {
		pthread_mutex_lock(&driver_lock);
		if (mono_ms() - atomic_load(&released_ms) >= BARGE_MS)
			break;
		pthread_mutex_unlock(&driver_lock);
		usleep(200);
	}
	pthread_mutex_unlock(&driver_lock);
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	const char *slow = getenv("FAKE_UNPIN_MS");

	if (slow) /* letting go of pinned memory takes time, under the driver's lock */
		pthread_mutex_lock(&driver_lock);
	fake_entered("cuMemHostUnregister");
	if (slow) {
		usleep((useconds_t)atoi(slow) * 1000);
		fake_trace("unpinned", (CUdeviceptr)p);
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (regs[i].p == p) {
			pinned_bytes -= (long long)regs[i].n;
			regs[i].p = NULL;
			r = CUDA_SUCCESS;
			break;
		}
	write_pinned();
	pthread_mutex_unlock(&mu);
	if (slow) {
		atomic_store(&released_ms, mono_ms());
		pthread_mutex_unlock(&driver_lock);
	}
	return r;
}

/* Streams and events: the fake's work is synchronous, so they only need to exist. */
static char objects[MAX];

EXPORT CUresult cuStreamCreate(void **s, unsigned flags)
{
	static int next;

	(void)flags;
	fake_entered("cuStreamCreate");
	*s = &objects[__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % MAX];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(void *s)
{
	(void)s;
	fake_entered("cuStreamDestroy_v2");
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventCreate(void **e, unsigned flags)
{
	return cuStreamCreate(e, flags);
}

EXPORT CUresult cuEventSynchronize(void *e)
{
	(void)e;
	fake_entered("cuEventSynchronize");
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(void *e)
{
	(void)e;
	fake_entered("cuEventDestroy_v2");
	return CUDA_SUCCESS;
}
