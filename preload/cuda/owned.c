/* owned: large device memory served by cudanap in pieces the driver can restore (docs/FILES.md).
 * The app's threads, at their allocation calls, inside the gate. */
#define _GNU_SOURCE
#include "cuda/owned.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_abi.h"
#include "cuda/fns.h"

#define MAX_PEERS 256		    /* every direction between 16 GPUs */
#define SPLIT_TAG (0xc0daull << 48) /* our handles: never one of the driver's */
#define LIGHT_MIN (2ull << 20)	    /* owned for light naps: the granularity and up */

enum {
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
	CU_MEM_ACCESS_FLAGS_PROT_READ = 1,
	CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
	CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
};

/* An allocation of cuMemAlloc's (or pitched) served from pieces. */
struct alloc {
	CUdeviceptr base;
	size_t bytes, span; /* what the app asked for, and what is mapped (whole pieces) */
	int dev;
	void *ctx; /* current at the allocation: synchronized before the free */
};

/* A handle of cuMemCreate's made of pieces, alive while the app holds a reference to it (refs:
 * its creation and each cuMemRetainAllocationHandle) or a mapping of it (maps), as the driver keeps
 * a handle's memory. */
struct split {
	CUmemGenericAllocationHandle id;
	size_t bytes;
	void *ctx; /* current at its creation: the light nap copies through it */
	CUmemAllocationProp prop;
	unsigned refs, maps, n;
	CUmemGenericAllocationHandle piece[];
};

/* A mapping of a split handle, whole or a part: what the driver would answer for one handle. */
struct smap {
	CUdeviceptr va;
	size_t bytes, off;
	struct split *s;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs; /* sorted by base */
static size_t n_allocs, cap_allocs;
static struct split **splits;
static size_t n_splits, cap_splits;
static struct smap *smaps;
static size_t n_smaps, cap_smaps;
static int peers[MAX_PEERS][2]; /* {from, to}: from may access to's memory */
static int n_peers;
static atomic_int mode = CN_OWN_AUTO;
static atomic_bool light;	  /* light naps allowed: owned from LIGHT_MIN, on one GPU too */
static atomic_int many_gpus = -1; /* whether the process sees more than one GPU; -1: not known */
static atomic_bool any;		  /* something owned: the calls that ask about memory are routed */
static atomic_ulong ipc_refused;

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			      unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			   unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*addr_free_fn)(CUdeviceptr, size_t);
typedef CUresult (*gran_fn)(size_t *, const CUmemAllocationProp *, int);
typedef CUresult (*ctx_fn)(void *);

static void *drv(unsigned idx)
{
	return cn_lookup_resolve(idx);
}

void cn_owned_config(enum cn_own m, bool light_naps)
{
	atomic_store(&mode, m);
	atomic_store(&light, light_naps && m != CN_OWN_NEVER);
}

/* Owned when larger than this: the driver's line, or for light naps all but the smallest. */
static size_t line(void)
{
	return atomic_load(&light) ? LIGHT_MIN - 1 : CN_OWNED_LINE;
}

static bool owning(void)
{
	int m = atomic_load(&mode), many = atomic_load(&many_gpus);

	if (m != CN_OWN_AUTO)
		return m == CN_OWN_ALWAYS;
	if (atomic_load(&light))
		return true;
	if (many < 0) {
		CUresult (*count)(int *) = drv(CN_FN_IDX_cuDeviceGetCount);
		int n = 0;

		if (!count || count(&n) != CUDA_SUCCESS)
			return false; /* asked again at the next */
		many = n > 1;
		atomic_store(&many_gpus, many);
	}
	return many;
}

/* ---- the registry ---- */

/* The allocation ptr lies in, under mu; NULL when none. */
static struct alloc *find(CUdeviceptr ptr)
{
	size_t lo = 0, hi = n_allocs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ptr < allocs[mid].base)
			hi = mid;
		else if (ptr >= allocs[mid].base + allocs[mid].bytes)
			lo = mid + 1;
		else
			return &allocs[mid];
	}
	return NULL;
}

/* Room for one more in the array *v of n items of size bytes (its capacity *cap, twice as much
 * each time, first at first); false when there is none. Under mu. */
static bool grow(void **v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t c = *cap ? 2 * *cap : first;
	void *m;

	if (n < *cap)
		return true;
	m = realloc(*v, c * size);
	if (!m)
		return false;
	*v = m;
	*cap = c;
	return true;
}

static bool add(const struct alloc *a)
{
	size_t i = 0;

	pthread_mutex_lock(&mu);
	if (!grow((void **)&allocs, &cap_allocs, n_allocs, sizeof(*allocs), 64)) {
		pthread_mutex_unlock(&mu);
		return false;
	}
	while (i < n_allocs && allocs[i].base < a->base)
		i++;
	memmove(&allocs[i + 1], &allocs[i], (n_allocs - i) * sizeof(*allocs));
	allocs[i] = *a;
	n_allocs++;
	atomic_store(&any, true);
	pthread_mutex_unlock(&mu);
	cn_lookup_watch_owned(CN_WATCH_OWNED, true);
	return true;
}

/* The split handle id, under mu; NULL when it is not ours. */
static struct split *split_of(CUmemGenericAllocationHandle id)
{
	if ((id & SPLIT_TAG) != SPLIT_TAG)
		return NULL;
	for (size_t i = 0; i < n_splits; i++)
		if (splits[i]->id == id)
			return splits[i];
	return NULL;
}

/* The mapping of a split handle ptr lies in, under mu; NULL when none. */
static struct smap *smap_at(CUdeviceptr ptr)
{
	for (size_t i = 0; i < n_smaps; i++)
		if (ptr >= smaps[i].va && ptr < smaps[i].va + smaps[i].bytes)
			return &smaps[i];
	return NULL;
}

/* The split's pieces released and its record freed once nothing holds it (under mu). */
static void drop_split(struct split *s)
{
	if (s->refs || s->maps)
		return;
	for (size_t i = 0; i < n_splits; i++)
		if (splits[i] == s) {
			splits[i] = splits[--n_splits];
			break;
		}
	for (unsigned k = 0; k < s->n; k++)
		((release_fn)drv(CN_FN_IDX_cuMemRelease))(s->piece[k]);
	free(s);
}

/* Whether anything is owned still, after a removal (under mu). */
static void settle(void)
{
	bool some = n_allocs || n_splits || n_smaps;

	atomic_store(&any, some);
	if (!some)
		cn_lookup_watch_owned(CN_WATCH_OWNED, false);
}

unsigned long long cn_owned_bytes(void)
{
	unsigned long long b = 0;

	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_allocs; i++)
		b += allocs[i].span;
	for (size_t i = 0; i < n_splits; i++)
		b += splits[i]->bytes;
	pthread_mutex_unlock(&mu);
	return b;
}

bool cn_owned_some(void)
{
	return atomic_load(&any);
}

bool cn_owned_has(uint64_t ptr)
{
	bool hit;

	if (!atomic_load(&any))
		return false;
	pthread_mutex_lock(&mu);
	hit = find(ptr) != NULL;
	pthread_mutex_unlock(&mu);
	return hit;
}

/* ---- pieces ---- */

/* The devices that may access dev's memory, dev first, as access descriptors; their count. */
static size_t accessors(int dev, CUmemAccessDesc *d, size_t max)
{
	size_t n = 0;

	d[n++] = (CUmemAccessDesc){ { CU_MEM_LOCATION_TYPE_DEVICE, dev },
				    CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	pthread_mutex_lock(&mu);
	for (int i = 0; i < n_peers && n < max; i++)
		if (peers[i][1] == dev && peers[i][0] != dev)
			d[n++] = (CUmemAccessDesc){ { CU_MEM_LOCATION_TYPE_DEVICE, peers[i][0] },
						    CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	pthread_mutex_unlock(&mu);
	return n;
}

/* Piece k of bytes cut at the line: its length. */
static size_t piece_len(size_t bytes, size_t k)
{
	size_t off = k * CN_OWNED_LINE;

	return bytes - off < CN_OWNED_LINE ? bytes - off : CN_OWNED_LINE;
}

/* Handles of at most the line for bytes (a multiple of the granularity) of prop, into h[]; 0, or
 * the driver's answer with none left made. */
static CUresult make_pieces(size_t bytes, const CUmemAllocationProp *prop,
			    CUmemGenericAllocationHandle *h, unsigned n)
{
	create_fn create = drv(CN_FN_IDX_cuMemCreate);
	release_fn release = drv(CN_FN_IDX_cuMemRelease);
	CUresult r = CUDA_SUCCESS;
	unsigned k;

	for (k = 0; k < n && r == CUDA_SUCCESS; k++)
		r = create(&h[k], piece_len(bytes, k), prop, 0);
	if (r != CUDA_SUCCESS)
		for (unsigned j = 0; j + 1 < k; j++)
			release(h[j]);
	return r;
}

static unsigned pieces_for(size_t bytes)
{
	return (unsigned)((bytes + CN_OWNED_LINE - 1) / CN_OWNED_LINE);
}

/* bytes of pieces at va, made, mapped and released (the mappings keep them), the access given. */
static CUresult map_new(CUdeviceptr va, size_t bytes, const CUmemAllocationProp *prop, int dev)
{
	map_fn map = drv(CN_FN_IDX_cuMemMap);
	unmap_fn unmap = drv(CN_FN_IDX_cuMemUnmap);
	release_fn release = drv(CN_FN_IDX_cuMemRelease);
	access_fn access = drv(CN_FN_IDX_cuMemSetAccess);
	unsigned n = pieces_for(bytes);
	CUmemGenericAllocationHandle *h = calloc(n, sizeof(*h));
	CUmemAccessDesc d[MAX_PEERS + 1];
	CUresult r;
	unsigned k = 0;

	size_t mapped = 0;
	bool made;

	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = make_pieces(bytes, prop, h, n);
	made = r == CUDA_SUCCESS;
	for (; r == CUDA_SUCCESS && k < n; k++) {
		size_t len = piece_len(bytes, k);

		r = map(va + mapped, len, 0, h[k], 0);
		if (r == CUDA_SUCCESS)
			mapped += len;
	}
	if (r == CUDA_SUCCESS)
		r = access(va, bytes, d, accessors(dev, d, MAX_PEERS + 1));
	if (r != CUDA_SUCCESS && mapped)
		unmap(va, mapped);
	for (unsigned j = 0; made && j < n; j++)
		release(h[j]);
	free(h);
	return r;
}

/* ---- cuMemAlloc's, served ---- */

/* The current context's device, and whether it may have memory of cuMemCreate's. */
static bool vmm_device(int *dev, void **ctx)
{
	CUresult (*get_dev)(int *) = drv(CN_FN_IDX_cuCtxGetDevice);
	CUresult (*get_ctx)(void **) = drv(CN_FN_IDX_cuCtxGetCurrent);
	CUresult (*attr)(int *, int, int) = drv(CN_FN_IDX_cuDeviceGetAttribute);
	int vmm = 0;

	return get_dev && get_ctx && attr && get_ctx(ctx) == CUDA_SUCCESS && *ctx &&
	       get_dev(dev) == CUDA_SUCCESS &&
	       attr(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, *dev) ==
		       CUDA_SUCCESS &&
	       vmm;
}

/* bytes served from pieces at a new range into *dptr: 0, the driver's answer for pieces it would
 * not make (out of memory, as its own allocation would), or -1: not served here, the driver's
 * own function is to be called. */
static int serve(CUdeviceptr *dptr, size_t bytes, CUresult *r)
{
	reserve_fn reserve = drv(CN_FN_IDX_cuMemAddressReserve);
	addr_free_fn addr_free = drv(CN_FN_IDX_cuMemAddressFree);
	gran_fn gran = drv(CN_FN_IDX_cuMemGetAllocationGranularity);
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED };
	struct alloc a = { .bytes = bytes };
	size_t g = 0;

	if (!dptr || !vmm_device(&a.dev, &a.ctx))
		return -1;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = a.dev;
	if (!reserve || !addr_free || !gran ||
	    gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || !g ||
	    CN_OWNED_LINE % g)
		return -1;
	a.span = (bytes + g - 1) / g * g;
	if (reserve(&a.base, a.span, g, 0, 0) != CUDA_SUCCESS)
		return -1;
	*r = map_new(a.base, a.span, &prop, a.dev);
	if (*r == CUDA_SUCCESS && !add(&a)) {
		((unmap_fn)drv(CN_FN_IDX_cuMemUnmap))(a.base, a.span);
		*r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (*r == CUDA_SUCCESS) {
		/* Access turned on by another thread between the mapping and the registry: given
		 * now (from here on, cn_owned_peer finds the allocation itself). */
		CUmemAccessDesc d[MAX_PEERS + 1];

		((access_fn)drv(CN_FN_IDX_cuMemSetAccess))(a.base, a.span, d,
							   accessors(a.dev, d, MAX_PEERS + 1));
	}
	if (*r != CUDA_SUCCESS) {
		addr_free(a.base, a.span);
		return 0;
	}
	*dptr = a.base;
	return 0;
}

static CUresult own_alloc(CUdeviceptr *dptr, size_t bytes)
{
	CUresult r;

	if (bytes > line() && owning() && serve(dptr, bytes, &r) == 0)
		return r;
	return ((alloc_fn)drv(CN_FN_IDX_cuMemAlloc_v2))(dptr, bytes);
}

/* The pitch is the driver's for that width (asked of it with one row), the rows served here. */
static CUresult own_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
			  unsigned elem)
{
	pitch_fn real = drv(CN_FN_IDX_cuMemAllocPitch_v2);
	CUdeviceptr probe;
	size_t p = 0;
	CUresult r;

	/* The pitch first: the rows, padded to it, are what crosses the line or not. */
	if (!owning() || !pitch || height < 2 || real(&probe, &p, width, 1, elem) != CUDA_SUCCESS)
		return real(dptr, pitch, width, height, elem);
	((free_fn)drv(CN_FN_IDX_cuMemFree_v2))(probe);
	if (p * height > line() && serve(dptr, p * height, &r) == 0) {
		if (r == CUDA_SUCCESS)
			*pitch = p;
		return r;
	}
	return real(dptr, pitch, width, height, elem);
}

/* The owned allocation at base taken out of the registry into *out: 1, 0 when ptr is not owned,
 * -1 when it lies inside one but not at its start (the driver refuses such a free). */
static int take(CUdeviceptr ptr, struct alloc *out)
{
	struct alloc *a;
	int r = 0;

	pthread_mutex_lock(&mu);
	a = find(ptr);
	if (a && a->base != ptr) {
		r = -1;
	} else if (a) {
		*out = *a;
		memmove(a, a + 1, (size_t)(allocs + n_allocs - a - 1) * sizeof(*a));
		n_allocs--;
		settle();
		r = 1;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* Its work done first, as the driver's free waits for it. */
static CUresult unmake(const struct alloc *a)
{
	ctx_fn push = drv(CN_FN_IDX_cuCtxPushCurrent_v2);
	CUresult (*pop)(void **) = drv(CN_FN_IDX_cuCtxPopCurrent_v2);
	CUresult (*sync)(void) = drv(CN_FN_IDX_cuCtxSynchronize);
	void *was;
	CUresult r;

	if (push && pop && sync && push(a->ctx) == CUDA_SUCCESS) {
		sync();
		pop(&was);
	}
	r = ((unmap_fn)drv(CN_FN_IDX_cuMemUnmap))(a->base, a->span);
	if (r == CUDA_SUCCESS)
		r = ((addr_free_fn)drv(CN_FN_IDX_cuMemAddressFree))(a->base, a->span);
	return r;
}

static CUresult own_free(CUdeviceptr ptr)
{
	struct alloc a;
	int t = take(ptr, &a);

	if (t < 0)
		return CUDA_ERROR_INVALID_VALUE;
	return t ? unmake(&a) : ((free_fn)drv(CN_FN_IDX_cuMemFree_v2))(ptr);
}

/* A stream-ordered free of owned memory: the stream's work done, then freed. */
static CUresult free_async(unsigned idx, CUdeviceptr ptr, void *stream)
{
	CUresult (*real)(CUdeviceptr, void *) = drv(idx);
	CUresult (*sync)(void *) = drv(CN_FN_IDX_cuStreamSynchronize);
	struct alloc a;
	int t = take(ptr, &a);

	if (t < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!t)
		return real(ptr, stream);
	if (sync)
		sync(stream);
	return unmake(&a);
}

static CUresult own_free_async(CUdeviceptr ptr, void *stream)
{
	return free_async(CN_FN_IDX_cuMemFreeAsync, ptr, stream);
}

static CUresult own_free_async_ptsz(CUdeviceptr ptr, void *stream)
{
	return free_async(CN_FN_IDX_cuMemFreeAsync_ptsz, ptr, stream);
}

/* ---- what the app asks of its memory ---- */

/* The range the driver would answer for ptr in memory cudanap owns: an allocation's, or a split
 * handle's mapping's; false when ptr is not in one. */
static bool range_of(CUdeviceptr ptr, CUdeviceptr *base, size_t *bytes)
{
	struct alloc *a;
	struct smap *m = NULL;

	pthread_mutex_lock(&mu);
	a = find(ptr);
	if (a) {
		*base = a->base;
		*bytes = a->bytes;
	} else if ((m = smap_at(ptr))) {
		*base = m->va;
		*bytes = m->bytes;
	}
	pthread_mutex_unlock(&mu);
	return a || m;
}

static CUresult own_range(CUdeviceptr *base, size_t *size, CUdeviceptr ptr)
{

	CUdeviceptr b = 0;
	size_t n = 0;
	bool hit = range_of(ptr, &b, &n);

	if (hit) {
		if (base)
			*base = b;
		if (size)
			*size = n;
		return CUDA_SUCCESS;
	}
	return ((CUresult(*)(CUdeviceptr *, size_t *, CUdeviceptr))drv(
		CN_FN_IDX_cuMemGetAddressRange_v2))(base, size, ptr);
}

/* A range attribute of an owned pointer into data: true when answered here. */
static bool range_attr(int attr, void *data, CUdeviceptr ptr)
{
	CUdeviceptr base;
	size_t bytes;

	if ((attr != CU_POINTER_ATTRIBUTE_RANGE_START_ADDR &&
	     attr != CU_POINTER_ATTRIBUTE_RANGE_SIZE) ||
	    !data || !range_of(ptr, &base, &bytes))
		return false;
	if (attr == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
		*(CUdeviceptr *)data = base;
	else
		*(size_t *)data = bytes;
	return true;
}

static CUresult own_attr(void *data, int attr, CUdeviceptr ptr)
{
	if (range_attr(attr, data, ptr))
		return CUDA_SUCCESS;
	return ((CUresult(*)(void *, int, CUdeviceptr))drv(CN_FN_IDX_cuPointerGetAttribute))(
		data, attr, ptr);
}

static CUresult own_attrs(unsigned n, int *attrs, void **data, CUdeviceptr ptr)
{
	CUresult r = ((CUresult(*)(unsigned, int *, void **, CUdeviceptr))drv(
		CN_FN_IDX_cuPointerGetAttributes))(n, attrs, data, ptr);

	for (unsigned i = 0; r == CUDA_SUCCESS && attrs && data && i < n; i++)
		range_attr(attrs[i], data[i], ptr);
	return r;
}

/* The driver cannot export memory of cuMemCreate's through CUDA IPC: counted, for the status. */
static CUresult own_ipc_get(CUipcMemHandle *h, CUdeviceptr ptr)
{
	CUresult r = ((CUresult(*)(CUipcMemHandle *, CUdeviceptr))drv(CN_FN_IDX_cuIpcGetMemHandle))(
		h, ptr);

	if (r != CUDA_SUCCESS && cn_owned_has(ptr))
		atomic_fetch_add(&ipc_refused, 1);
	return r;
}

/* ---- handles of cuMemCreate's over the line, split ---- */

static CUresult own_create(CUmemGenericAllocationHandle *h, size_t bytes,
			   const CUmemAllocationProp *prop, unsigned long long flags)
{
	static atomic_ullong next_id;
	create_fn real = drv(CN_FN_IDX_cuMemCreate);
	struct split *s;
	unsigned n = pieces_for(bytes);
	CUresult r;

	/* One made to be exported is split too: allocators ask for a type to export by habit (a
	 * process on several GPUs shares its memory within itself); an export of it is refused
	 * (own_export), and counted for the status. */
	/* For light naps only (under the driver's line), one made to be exported stays the
	 * driver's: NCCL exports its buffers to its peers. */
	if (bytes <= line() || !h || !prop || flags ||
	    (bytes <= CN_OWNED_LINE && prop->requestedHandleTypes) ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !owning())
		return real(h, bytes, prop, flags);
	s = calloc(1, sizeof(*s) + n * sizeof(s->piece[0]));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = make_pieces(bytes, prop, s->piece, n);
	if (r != CUDA_SUCCESS) {
		free(s);
		return r;
	}
	((CUresult(*)(void **))drv(CN_FN_IDX_cuCtxGetCurrent))(&s->ctx);
	s->id = SPLIT_TAG | (atomic_fetch_add(&next_id, 1) + 1);
	s->bytes = bytes;
	s->prop = *prop;
	s->refs = 1;
	s->n = n;
	pthread_mutex_lock(&mu);
	if (grow((void **)&splits, &cap_splits, n_splits, sizeof(*splits), 16))
		splits[n_splits++] = s;
	else
		r = CUDA_ERROR_OUT_OF_MEMORY;
	settle();
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS) {
		for (unsigned k = 0; k < n; k++)
			((release_fn)drv(CN_FN_IDX_cuMemRelease))(s->piece[k]);
		free(s);
		return r;
	}
	cn_lookup_watch_owned(CN_WATCH_OWNED, true);
	*h = s->id;
	return CUDA_SUCCESS;
}

/* The piece of split s that byte at lies in (*k) and where in it (*in): how many of the left bytes
 * from there lie in that piece. */
static size_t piece_part(const struct split *s, size_t at, size_t left, size_t *k, size_t *in)
{
	size_t n;

	*k = at / CN_OWNED_LINE;
	*in = at % CN_OWNED_LINE;
	n = piece_len(s->bytes, *k) - *in;
	return n < left ? n : left;
}

/* The part [offset, offset + size) of a split handle mapped at va, piece by piece. */
static CUresult map_split(const struct split *s, CUdeviceptr va, size_t size, size_t offset,
			  unsigned long long flags)
{
	map_fn map = drv(CN_FN_IDX_cuMemMap);
	unmap_fn unmap = drv(CN_FN_IDX_cuMemUnmap);
	size_t done = 0;
	CUresult r = CUDA_SUCCESS;

	if (offset > s->bytes || size > s->bytes - offset)
		return CUDA_ERROR_INVALID_VALUE;
	while (r == CUDA_SUCCESS && done < size) {
		size_t k, in, len = piece_part(s, offset + done, size - done, &k, &in);

		r = map(va + done, len, in, s->piece[k], flags);
		if (r == CUDA_SUCCESS)
			done += len;
	}
	if (r != CUDA_SUCCESS && done)
		unmap(va, done);
	return r;
}

/* A mapping of split s kept (under mu): false when there is no room for it. */
static bool keep_smap(CUdeviceptr va, size_t bytes, size_t off, struct split *s)
{
	if (!grow((void **)&smaps, &cap_smaps, n_smaps, sizeof(*smaps), 16))
		return false;
	smaps[n_smaps++] = (struct smap){ va, bytes, off, s };
	s->maps++;
	return true;
}

/* The driver unmaps a range of several mappings at once; the split ones in it are forgotten, and
 * a split nothing holds any more released. */
static CUresult own_unmap(CUdeviceptr va, size_t size)
{
	CUresult r = ((unmap_fn)drv(CN_FN_IDX_cuMemUnmap))(va, size);

	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_smaps;) {
		struct split *sp = smaps[i].s;

		if (smaps[i].va < va || smaps[i].va >= va + size) {
			i++;
			continue;
		}
		smaps[i] = smaps[--n_smaps];
		sp->maps--;
		drop_split(sp);
	}
	settle();
	pthread_mutex_unlock(&mu);
	return r;
}

/* Retained at an address of a split mapping: the split handle, one more reference to it (NCCL's
 * free takes the handle this way, then the range, unmaps it and releases twice). */
static CUresult own_retain(CUmemGenericAllocationHandle *h, void *addr)
{
	struct smap *m;

	pthread_mutex_lock(&mu);
	m = smap_at((CUdeviceptr)addr);
	if (m && h) {
		m->s->refs++;
		*h = m->s->id;
	}
	pthread_mutex_unlock(&mu);
	if (m)
		return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	return ((CUresult(*)(CUmemGenericAllocationHandle *, void *))drv(
		CN_FN_IDX_cuMemRetainAllocationHandle))(h, addr);
}

static CUresult own_map(CUdeviceptr va, size_t size, size_t offset, CUmemGenericAllocationHandle h,
			unsigned long long flags)
{
	struct split *s;
	CUresult r;

	pthread_mutex_lock(&mu);
	s = split_of(h);
	r = s ? map_split(s, va, size, offset, flags) : CUDA_SUCCESS;
	if (s && r == CUDA_SUCCESS && !keep_smap(va, size, offset, s)) {
		((unmap_fn)drv(CN_FN_IDX_cuMemUnmap))(va, size);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&mu);
	if (s)
		return r;
	return ((map_fn)drv(CN_FN_IDX_cuMemMap))(va, size, offset, h, flags);
}

static CUresult own_release(CUmemGenericAllocationHandle h)
{
	struct split *sp;

	pthread_mutex_lock(&mu);
	sp = split_of(h);
	if (sp && sp->refs) {
		/* Mapped, its pieces stay until they are unmapped, as the driver keeps a released
		 * handle's memory. */
		sp->refs--;
		drop_split(sp);
		settle();
	}
	pthread_mutex_unlock(&mu);
	return sp ? CUDA_SUCCESS : ((release_fn)drv(CN_FN_IDX_cuMemRelease))(h);
}

static CUresult own_props(CUmemAllocationProp *prop, CUmemGenericAllocationHandle h)
{
	struct split *s;

	pthread_mutex_lock(&mu);
	s = split_of(h);
	if (s && prop)
		*prop = s->prop;
	pthread_mutex_unlock(&mu);
	if (s)
		return prop ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	return ((CUresult(*)(CUmemAllocationProp *, CUmemGenericAllocationHandle))drv(
		CN_FN_IDX_cuMemGetAllocationPropertiesFromHandle))(prop, h);
}

/* A split handle is no one handle to export: refused, and counted for the status. */
static CUresult own_export(void *out, CUmemGenericAllocationHandle h, int type,
			   unsigned long long flags)
{
	bool split;

	pthread_mutex_lock(&mu);
	split = split_of(h) != NULL;
	pthread_mutex_unlock(&mu);
	if (!split)
		return ((CUresult(*)(void *, CUmemGenericAllocationHandle, int, unsigned long long))
				drv(CN_FN_IDX_cuMemExportToShareableHandle))(out, h, type, flags);
	atomic_fetch_add(&ipc_refused, 1);
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- peer access, mirrored ---- */

void cn_owned_peer(int from, int to, bool on)
{
	access_fn access = drv(CN_FN_IDX_cuMemSetAccess);
	CUmemAccessDesc d = { { CU_MEM_LOCATION_TYPE_DEVICE, from },
			      CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	int i;

	if (from < 0 || to < 0 || from == to)
		return;
	pthread_mutex_lock(&mu);
	for (i = 0; i < n_peers && !(peers[i][0] == from && peers[i][1] == to); i++)
		;
	if (on && i == n_peers && n_peers < MAX_PEERS) {
		peers[n_peers][0] = from;
		peers[n_peers++][1] = to;
	} else if (!on && i < n_peers) {
		/* Memory owned from now on is not mapped to it; what is mapped stays. */
		peers[i][0] = peers[--n_peers][0];
		peers[i][1] = peers[n_peers][1];
	}
	for (size_t k = 0; on && access && k < n_allocs; k++)
		if (allocs[k].dev == to)
			access(allocs[k].base, allocs[k].span, &d, 1);
	pthread_mutex_unlock(&mu);
}

/* The part [off, off + size) of split s bound to a multicast object at mc_off, piece by piece. */
static CUresult own_bind(CUmemGenericAllocationHandle mc, size_t mc_off,
			 CUmemGenericAllocationHandle h, size_t off, size_t size,
			 unsigned long long flags)
{
	CUresult (*real)(CUmemGenericAllocationHandle, size_t, CUmemGenericAllocationHandle, size_t,
			 size_t, unsigned long long) = drv(CN_FN_IDX_cuMulticastBindMem);
	struct split *sp;
	size_t done = 0;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&mu);
	sp = split_of(h);
	if (sp && (off > sp->bytes || size > sp->bytes - off))
		r = CUDA_ERROR_INVALID_VALUE;
	while (sp && r == CUDA_SUCCESS && done < size) {
		size_t k, in, len = piece_part(sp, off + done, size - done, &k, &in);

		r = real(mc, mc_off + done, sp->piece[k], in, len, flags);
		done += len;
	}
	pthread_mutex_unlock(&mu);
	return sp ? r : real(mc, mc_off, h, off, size, flags);
}

/* The owned allocations of a context going away (ctx) or of a device's primary context reset
 * (dev >= 0, ctx NULL): freed with it, as the driver frees its own memory of that context. */
static void free_with(void *ctx, int dev)
{
	struct alloc gone[64];
	size_t n = 0;

	do {
		n = 0;
		pthread_mutex_lock(&mu);
		for (size_t i = 0; i < n_allocs && n < 64;)
			if (ctx ? allocs[i].ctx == ctx : allocs[i].dev == dev) {
				gone[n++] = allocs[i];
				memmove(&allocs[i], &allocs[i + 1],
					(n_allocs - i - 1) * sizeof(*allocs));
				n_allocs--;
			} else {
				i++;
			}
		settle();
		pthread_mutex_unlock(&mu);
		for (size_t i = 0; i < n; i++)
			unmake(&gone[i]);
	} while (n == 64);
}

static _Atomic(void (*)(void *, int)) ctx_watch;

void cn_owned_watch_ctx(void (*gone)(void *ctx, int dev))
{
	atomic_store(&ctx_watch, gone);
}

static CUresult own_ctx_destroy(void *ctx)
{
	void (*gone)(void *, int) = atomic_load(&ctx_watch);

	if (gone)
		gone(ctx, -1);
	free_with(ctx, -1);
	return ((ctx_fn)drv(CN_FN_IDX_cuCtxDestroy_v2))(ctx);
}

static CUresult own_ctx_reset(int dev)
{
	void (*gone)(void *, int) = atomic_load(&ctx_watch);

	if (gone)
		gone(NULL, dev);
	free_with(NULL, dev);
	return ((CUresult(*)(int))drv(CN_FN_IDX_cuDevicePrimaryCtxReset_v2))(dev);
}

/* ---- the routes ---- */

void *cn_owned_route(void *real)
{
	static const struct {
		unsigned idx;
		void *fn;
		bool always; /* taken whenever memory is to be owned, not only once some is */
	} routes[] = {
		{ CN_FN_IDX_cuMemAlloc_v2, (void *)own_alloc, true },
		{ CN_FN_IDX_cuMemAllocPitch_v2, (void *)own_pitch, true },
		{ CN_FN_IDX_cuMemCreate, (void *)own_create, true },
		{ CN_FN_IDX_cuMemFree_v2, (void *)own_free, false },
		{ CN_FN_IDX_cuMemFreeAsync, (void *)own_free_async, false },
		{ CN_FN_IDX_cuMemFreeAsync_ptsz, (void *)own_free_async_ptsz, false },
		{ CN_FN_IDX_cuMemMap, (void *)own_map, false },
		{ CN_FN_IDX_cuMemUnmap, (void *)own_unmap, false },
		{ CN_FN_IDX_cuMemRetainAllocationHandle, (void *)own_retain, false },
		{ CN_FN_IDX_cuMulticastBindMem, (void *)own_bind, false },
		{ CN_FN_IDX_cuCtxDestroy_v2, (void *)own_ctx_destroy, false },
		{ CN_FN_IDX_cuDevicePrimaryCtxReset_v2, (void *)own_ctx_reset, false },
		{ CN_FN_IDX_cuMemRelease, (void *)own_release, false },
		{ CN_FN_IDX_cuMemGetAllocationPropertiesFromHandle, (void *)own_props, false },
		{ CN_FN_IDX_cuMemExportToShareableHandle, (void *)own_export, false },
		{ CN_FN_IDX_cuMemGetAddressRange_v2, (void *)own_range, false },
		{ CN_FN_IDX_cuPointerGetAttribute, (void *)own_attr, false },
		{ CN_FN_IDX_cuPointerGetAttributes, (void *)own_attrs, false },
		{ CN_FN_IDX_cuIpcGetMemHandle, (void *)own_ipc_get, false },
	};
	bool some = atomic_load(&any);

	/* a context's end is watched while something is kept through it (cn_owned_watch_ctx) */
	if (real && atomic_load(&ctx_watch) &&
	    (drv(CN_FN_IDX_cuCtxDestroy_v2) == real ||
	     drv(CN_FN_IDX_cuDevicePrimaryCtxReset_v2) == real))
		return drv(CN_FN_IDX_cuCtxDestroy_v2) == real ? (void *)own_ctx_destroy
							      : (void *)own_ctx_reset;
	if (!real || (!some && atomic_load(&mode) == CN_OWN_NEVER))
		return NULL;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if ((routes[i].always || some) && drv(routes[i].idx) == real)
			return routes[i].fn;
	return NULL;
}

/* ---- what a light nap moves (light.c), in the agent thread, the gate closed ---- */

/* Split s's pieces as spans of its one whole mapping m, into out from n; the new count. */
static size_t split_spans(const struct split *s, const struct smap *m, struct cn_owned_span *out,
			  size_t n)
{
	for (unsigned k = 0; k < s->n; k++)
		out[n++] = (struct cn_owned_span){ .va = m->va + (CUdeviceptr)k * CN_OWNED_LINE,
						   .bytes = piece_len(s->bytes, k),
						   .dev = s->prop.location.id,
						   .ctx = s->ctx,
						   .split = s->id,
						   .piece = k };
	return n;
}

struct cn_owned_span *cn_owned_spans(size_t *count, unsigned long long *kept)
{
	struct cn_owned_span *out;
	size_t n = 0, max = 0;

	*count = 0;
	*kept = 0;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_allocs; i++)
		max += pieces_for(allocs[i].span);
	for (size_t i = 0; i < n_splits; i++)
		max += splits[i]->n;
	out = calloc(max ? max : 1, sizeof(*out));
	for (size_t i = 0; out && i < n_allocs; i++)
		for (unsigned k = 0; k < pieces_for(allocs[i].span); k++)
			out[n++] = (struct cn_owned_span){
				.va = allocs[i].base + (CUdeviceptr)k * CN_OWNED_LINE,
				.bytes = piece_len(allocs[i].span, k),
				.dev = allocs[i].dev,
				.ctx = allocs[i].ctx,
			};
	/* A split handle's memory is moved through its one mapping of the whole, and the context
	 * that was current at its creation; mapped twice, in part or not at all, or made without a
	 * context, it stays on the GPU. */
	for (size_t i = 0; out && i < n_splits; i++) {
		struct split *sp = splits[i];
		struct smap *m = NULL;

		for (size_t j = 0; sp->maps == 1 && j < n_smaps; j++)
			if (smaps[j].s == sp)
				m = &smaps[j];
		if (m && m->off == 0 && m->bytes == sp->bytes && sp->ctx)
			n = split_spans(sp, m, out, n);
		else
			*kept += sp->bytes;
	}
	pthread_mutex_unlock(&mu);
	*count = n;
	return out;
}

/* The devices with access to the span, read-write (*rw) and read-only (*ro), as the driver
 * answers at its first byte (cuMemGetAccess). */
static void access_of(CUdeviceptr va, uint64_t *rw, uint64_t *ro)
{
	CUresult (*get)(unsigned long long *, const CUmemLocation *, CUdeviceptr) =
		drv(CN_FN_IDX_cuMemGetAccess);
	CUresult (*count)(int *) = drv(CN_FN_IDX_cuDeviceGetCount);
	int n = 0;

	*rw = *ro = 0;
	if (!get || !count || count(&n) != CUDA_SUCCESS)
		return;
	for (int d = 0; d < n && d < 64; d++) {
		CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, d };
		unsigned long long flags = 0;

		if (get(&flags, &loc, va) != CUDA_SUCCESS)
			continue;
		if (flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			*rw |= 1ull << d;
		else if (flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
			*ro |= 1ull << d;
	}
}

CUresult cn_owned_give(struct cn_owned_span *sp)
{
	CUresult r;

	access_of(sp->va, &sp->rw, &sp->ro);
	if (!sp->rw && !sp->ro)
		sp->rw = 1ull << sp->dev; /* not known: its own GPU's, as it was made */
	r = ((unmap_fn)drv(CN_FN_IDX_cuMemUnmap))(sp->va, sp->bytes);
	if (r != CUDA_SUCCESS || !sp->split)
		return r;
	pthread_mutex_lock(&mu);
	{
		struct split *s = split_of(sp->split);

		if (s) {
			((release_fn)drv(CN_FN_IDX_cuMemRelease))(s->piece[sp->piece]);
			s->piece[sp->piece] = 0;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* The access sp had, given again. */
static CUresult access_again(const struct cn_owned_span *sp)
{
	CUmemAccessDesc d[64];
	size_t n = 0;

	for (int dev = 0; dev < 64; dev++)
		if ((sp->rw | sp->ro) >> dev & 1)
			d[n++] = (CUmemAccessDesc){ { CU_MEM_LOCATION_TYPE_DEVICE, dev },
						    sp->rw >> dev & 1
							    ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
							    : CU_MEM_ACCESS_FLAGS_PROT_READ };
	return n ? ((access_fn)drv(CN_FN_IDX_cuMemSetAccess))(sp->va, sp->bytes, d, n)
		 : CUDA_SUCCESS;
}

CUresult cn_owned_take(const struct cn_owned_span *sp)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED };
	CUmemGenericAllocationHandle h;
	struct split *s = NULL;
	CUresult r;

	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = sp->dev;
	if (sp->split) {
		pthread_mutex_lock(&mu);
		s = split_of(sp->split);
		if (s)
			prop = s->prop;
		pthread_mutex_unlock(&mu);
	}
	r = ((create_fn)drv(CN_FN_IDX_cuMemCreate))(&h, sp->bytes, &prop, 0);
	if (r != CUDA_SUCCESS)
		return r;
	r = ((map_fn)drv(CN_FN_IDX_cuMemMap))(sp->va, sp->bytes, 0, h, 0);
	if (r == CUDA_SUCCESS) {
		r = access_again(sp);
		if (r != CUDA_SUCCESS) /* left as it was: given back, for the next try */
			((unmap_fn)drv(CN_FN_IDX_cuMemUnmap))(sp->va, sp->bytes);
	}
	if (r != CUDA_SUCCESS || !s) {
		((release_fn)drv(CN_FN_IDX_cuMemRelease))(h); /* or the mapping keeps it */
		return r;
	}
	pthread_mutex_lock(&mu);
	s = split_of(sp->split);
	if (s)
		s->piece[sp->piece] = h;
	pthread_mutex_unlock(&mu);
	if (!s)
		((release_fn)drv(CN_FN_IDX_cuMemRelease))(h);
	return r;
}

size_t cn_owned_describe(char *out, size_t len)
{
	unsigned long long bytes = 0, pieces = 0;
	size_t n, m;
	int w;

	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_allocs; i++) {
		bytes += allocs[i].span;
		pieces += pieces_for(allocs[i].span);
	}
	for (size_t i = 0; i < n_splits; i++) {
		bytes += splits[i]->bytes;
		pieces += splits[i]->n;
	}
	n = n_allocs;
	m = n_splits;
	pthread_mutex_unlock(&mu);
	out[0] = '\0';
	if (!n && !m && !atomic_load(&ipc_refused))
		return 0;
	w = snprintf(out, len,
		     "owned: %llu MiB in %llu pieces of %llu MiB at most (%zu allocation%s, %zu "
		     "handle%s)",
		     bytes >> 20, pieces, CN_OWNED_LINE >> 20, n, n == 1 ? "" : "s", m,
		     m == 1 ? "" : "s");
	if (w > 0 && (size_t)w < len && atomic_load(&ipc_refused))
		w += snprintf(out + w, len - (size_t)w,
			      "; %lu export%s of owned memory refused ([memory] own = never keeps "
			      "allocations the driver's own)",
			      atomic_load(&ipc_refused), atomic_load(&ipc_refused) == 1 ? "" : "s");
	return w > 0 ? ((size_t)w < len ? (size_t)w : len - 1) : 0;
}

void cn_owned_after_fork(void)
{
	/* The parent's GPU memory is not the child's to answer for, nor to free. */
	pthread_mutex_init(&mu, NULL);
	n_allocs = n_splits = n_smaps = 0;
	n_peers = 0;
	atomic_store(&any, false);
}
