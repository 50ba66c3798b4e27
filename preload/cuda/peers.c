/* peers: the access the app's GPUs have to each other's memory, seen at the gate, and what the
 * agent does with it around a suspend. The app's threads record; the agent drops, raises and
 * describes (docs/DRIVER.md, One process on several GPUs). */
#define _GNU_SOURCE
#include "cuda/peers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cuda/allocargs.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/owned.h"
#include "cuda/peerlist.h"

#define MAX_PAIRS  256 /* every direction between 16 GPUs */
#define MAX_GRANTS 512 /* ... by a mapping's access and by a pool's */
#define MAX_LARGE  1024
/* A physical allocation larger than this that another GPU may reach makes the restore fail
 * (docs/DRIVER.md, One process on several GPUs). */
#define LARGE (256ull << 20)

/* One direction of peer access: the context that may access, the context whose memory it may. */
struct pair {
	void *from, *to;
	int dev[2];		/* their CUDA ordinals in this process */
	struct cn_uuid uuid[2]; /* ... and UUIDs (zero when not known) */
	char who[120];		/* "cuCtxEnablePeerAccess in libc10_cuda.so" */
	bool dropped;		/* turned off by a suspend, to be asked for again */
};

/* A GPU (dev[0]) that may access memory of another's (dev[1], -1: not known), mapped to it or by
 * a pool. */
struct grant {
	int dev[2];
	struct cn_uuid uuid[2];
	bool pool;
	char who[120];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pair pairs[MAX_PAIRS];
static int n_pairs;
static struct grant grants[MAX_GRANTS];
static int n_grants;
static atomic_bool restored;
/* The large allocations held: their addresses, sizes, and who made the first. */
static struct {
	uint64_t ptr, bytes;
} large[MAX_LARGE];
static int n_large, n_large_lost; /* lost: more than MAX_LARGE, never forgotten */
static char large_who[160];
/* The mappings over the line another GPU may access: the first GPU (dev[0]) may access the
 * other's (dev[1]) memory there. */
struct mapping {
	uint64_t base, bytes;
	int dev[2];
	struct cn_uuid uuid[2];
	char who[120];
};
static struct mapping mapped[MAX_LARGE];
static int n_mapped, n_mapped_lost; /* lost: more than MAX_LARGE, never forgotten */

typedef CUresult (*fn_ptr)(void *);
typedef CUresult (*enable_fn)(void *, unsigned);

/* The driver's function behind entry idx, called past the gate. */
static void *drv(unsigned idx)
{
	return cn_lookup_resolve(idx);
}

/* The calling thread's current context and its device (-1 when none). */
static void *current(int *dev)
{
	CUresult (*get)(void **) = drv(CN_FN_IDX_cuCtxGetCurrent);
	CUresult (*device)(int *) = drv(CN_FN_IDX_cuCtxGetDevice);
	void *ctx = NULL;

	*dev = -1;
	if (!get || get(&ctx) != CUDA_SUCCESS || !ctx || !device || device(dev) != CUDA_SUCCESS)
		*dev = -1;
	return ctx;
}

/* Make ctx current on this thread for a while (pushed; popped by leave): 0, or a CUresult. */
static CUresult enter(void *ctx)
{
	fn_ptr push = drv(CN_FN_IDX_cuCtxPushCurrent_v2);

	return push ? push(ctx) : CUDA_ERROR_NOT_INITIALIZED;
}

static void leave(void)
{
	CUresult (*pop)(void **) = drv(CN_FN_IDX_cuCtxPopCurrent_v2);
	void *was;

	if (pop)
		pop(&was);
}

/* The device of context ctx (-1 when not known). */
static int device_of(void *ctx)
{
	int dev = -1;

	if (enter(ctx) == CUDA_SUCCESS) {
		current(&dev);
		leave();
	}
	return dev;
}

static void uuid_of(int dev, struct cn_uuid *out)
{
	CUresult (*get)(CUuuid *, int) = drv(CN_FN_IDX_cuDeviceGetUuid_v2);
	CUuuid u;

	*out = (struct cn_uuid){ { 0 } };
	if (!get)
		get = drv(CN_FN_IDX_cuDeviceGetUuid);
	if (dev >= 0 && get && get(&u, dev) == CUDA_SUCCESS)
		*out = cn_uuid_of_cu(&u);
}

static int find(void *from, void *to)
{
	for (int i = 0; i < n_pairs; i++)
		if (pairs[i].from == from && pairs[i].to == to)
			return i;
	return -1;
}

static bool note_enable(void *peer, const void *caller, CUresult *result, int dev[2])
{
	struct pair p = { .to = peer };
	char obj[96];
	int i;

	if (atomic_load(&restored) && *result == CUDA_ERROR_INVALID_HANDLE) {
		*result = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
		return false;
	}
	if (*result != CUDA_SUCCESS && *result != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
		return false;
	p.from = current(&p.dev[0]);
	p.dev[1] = device_of(peer);
	uuid_of(p.dev[0], &p.uuid[0]);
	uuid_of(p.dev[1], &p.uuid[1]);
	cn_lookup_object(caller, obj, sizeof(obj));
	snprintf(p.who, sizeof(p.who), "cuCtxEnablePeerAccess in %s", obj);
	pthread_mutex_lock(&lock);
	i = find(p.from, p.to);
	if (i >= 0)
		pairs[i].dropped = false;
	else if (n_pairs < MAX_PAIRS)
		pairs[n_pairs++] = p;
	pthread_mutex_unlock(&lock);
	dev[0] = p.dev[0];
	dev[1] = p.dev[1];
	return true;
}

static bool note_disable(void *peer, CUresult *result, int dev[2])
{
	int i;
	void *from;

	if (*result != CUDA_SUCCESS && *result != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
		return false;
	from = current(&dev[0]);
	dev[1] = device_of(peer);
	pthread_mutex_lock(&lock);
	i = find(from, peer);
	if (i >= 0)
		pairs[i] = pairs[--n_pairs];
	pthread_mutex_unlock(&lock);
	return true;
}

void cn_peers_can(int *can, int dev, int peer, uint64_t *result)
{
	bool live = false;

	if (!atomic_load(&restored) || *result != CUDA_SUCCESS || !can)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_pairs; i++)
		live |= !pairs[i].dropped && pairs[i].dev[0] == dev && pairs[i].dev[1] == peer;
	pthread_mutex_unlock(&lock);
	if (!live) /* one it kept through the restore is on, and says so */
		*can = 0;
}

void cn_peers_alloc(const char *name, const struct cn_alloc_args *a, const void *caller)
{
	uint64_t ptr = a->ptr, bytes = a->bytes;
	char obj[96];

	/* A pool's memory is reached by the access the pool grants, not by peer access: a pool's
	 * allocation over the line restores (docs/DRIVER.md); its grants are looked at instead. */
	if (strstr(name, "Async") || bytes <= LARGE)
		return;
	cn_lookup_object(caller, obj, sizeof(obj));
	pthread_mutex_lock(&lock);
	if (n_large < MAX_LARGE) {
		large[n_large].ptr = ptr;
		large[n_large++].bytes = bytes;
	} else {
		n_large_lost++;
	}
	if (n_large + n_large_lost == 1)
		snprintf(large_who, sizeof(large_who), "%llu MiB by %s in %s",
			 (unsigned long long)(bytes >> 20), name, obj);
	pthread_mutex_unlock(&lock);
	cn_lookup_watch_frees(CN_WATCH_LARGE, true);
}

void cn_peers_free(uint64_t ptr)
{
	bool none;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_large; i++)
		if (large[i].ptr == ptr) {
			large[i] = large[--n_large];
			break;
		}
	none = !n_large && !n_large_lost;
	pthread_mutex_unlock(&lock);
	if (none)
		cn_lookup_watch_frees(CN_WATCH_LARGE, false);
}

/* A grant of memory of owner's to each device of descs that is not owner. */
static void grant(int owner, const void *descs, size_t n, bool pool, const void *caller)
{
	const CUmemAccessDesc *d = descs;
	char obj[96];

	cn_lookup_object(caller, obj, sizeof(obj));
	pthread_mutex_lock(&lock);
	for (size_t k = 0; d && k < n; k++) {
		bool seen = false;

		if (d[k].location.type != CU_MEM_LOCATION_TYPE_DEVICE || d[k].location.id == owner)
			continue;
		if (!d[k].flags) { /* taken back */
			for (int i = 0; i < n_grants; i++)
				if (grants[i].dev[1] == owner &&
				    grants[i].dev[0] == d[k].location.id && grants[i].pool == pool)
					grants[i--] = grants[--n_grants];
			continue;
		}
		for (int i = 0; i < n_grants; i++)
			seen |= grants[i].dev[1] == owner && grants[i].dev[0] == d[k].location.id &&
				grants[i].pool == pool;
		if (seen || n_grants == MAX_GRANTS)
			continue;
		grants[n_grants] =
			(struct grant){ .dev = { d[k].location.id, owner }, .pool = pool };
		uuid_of(d[k].location.id, &grants[n_grants].uuid[0]);
		uuid_of(owner, &grants[n_grants].uuid[1]);
		snprintf(grants[n_grants++].who, sizeof(grants[0].who), "%s in %s",
			 pool ? "cuMemPoolSetAccess" : "cuMemSetAccess", obj);
	}
	pthread_mutex_unlock(&lock);
}

/* The device whose memory is mapped at ptr, -1 when not known. */
static int owner_of(uint64_t ptr)
{
	CUresult (*retain)(CUmemGenericAllocationHandle *, void *) =
		drv(CN_FN_IDX_cuMemRetainAllocationHandle);
	CUresult (*props)(CUmemAllocationProp *, CUmemGenericAllocationHandle) =
		drv(CN_FN_IDX_cuMemGetAllocationPropertiesFromHandle);
	CUresult (*release)(CUmemGenericAllocationHandle) = drv(CN_FN_IDX_cuMemRelease);
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp p;
	int owner = -1;

	if (!retain || !props || !release || retain(&h, (void *)ptr) != CUDA_SUCCESS)
		return -1;
	memset(&p, 0, sizeof(p));
	if (props(&p, h) == CUDA_SUCCESS && p.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
		owner = p.location.id;
	release(h);
	return owner;
}

/* Whether descs give a device other than owner access. */
static int other_device(int owner, const void *descs, size_t n)
{
	const CUmemAccessDesc *d = descs;

	for (size_t k = 0; d && k < n; k++)
		if (d[k].location.type == CU_MEM_LOCATION_TYPE_DEVICE && d[k].flags &&
		    d[k].location.id != owner)
			return d[k].location.id;
	return -1;
}

/* Each mapping in [ptr, ptr + size) over the line that descs give another GPU access to is
 * noted: the driver cannot restore it (docs/DRIVER.md, One process on several GPUs). */
static void note_mapped(uint64_t ptr, uint64_t size, const void *descs, size_t n,
			const void *caller)
{
	CUresult (*range)(uint64_t *, size_t *, uint64_t) = drv(CN_FN_IDX_cuMemGetAddressRange_v2);
	uint64_t at = ptr;

	while (range && at < ptr + size) {
		uint64_t base = 0;
		size_t bytes = 0;
		int owner, to;

		if (range(&base, &bytes, at) != CUDA_SUCCESS || !bytes || base + bytes <= at)
			break;
		owner = owner_of(base);
		to = other_device(owner, descs, n);
		if (bytes > LARGE && owner >= 0 && to >= 0) {
			char obj[96];
			int i;

			cn_lookup_object(caller, obj, sizeof(obj));
			pthread_mutex_lock(&lock);
			for (i = 0; i < n_mapped && mapped[i].base != base; i++)
				;
			if (i == n_mapped && n_mapped == MAX_LARGE)
				n_mapped_lost++;
			else if (i == n_mapped) {
				mapped[n_mapped] = (struct mapping){ .base = base,
								     .bytes = bytes,
								     .dev = { to, owner } };
				uuid_of(to, &mapped[n_mapped].uuid[0]);
				uuid_of(owner, &mapped[n_mapped].uuid[1]);
				snprintf(mapped[n_mapped++].who, sizeof(mapped[0].who),
					 "%llu MiB of cuMemCreate's in %s",
					 (unsigned long long)(bytes >> 20), obj);
			}
			pthread_mutex_unlock(&lock);
			cn_lookup_watch_owned(CN_WATCH_LARGE, true);
		}
		at = base + bytes;
	}
}

/* Access taken back from a device (flags 0): the large mappings in the range it reached are no
 * longer another GPU's. */
static void note_revoked(uint64_t ptr, uint64_t size, const void *descs, size_t n)
{
	const CUmemAccessDesc *d = descs;

	pthread_mutex_lock(&lock);
	for (size_t k = 0; d && k < n; k++)
		for (int i = 0; !d[k].flags && i < n_mapped;)
			if (mapped[i].base >= ptr && mapped[i].base < ptr + size &&
			    mapped[i].dev[0] == d[k].location.id)
				mapped[i] = mapped[--n_mapped];
			else
				i++;
	pthread_mutex_unlock(&lock);
}

/* ---- the calls that change access, made here: what they change is noted inside the call, while
 * the gate counts the thread in it (a suspend waits for it before its lock) ---- */

typedef CUresult (*set_access_fn)(uint64_t, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*pool_access_fn)(void *, const CUmemAccessDesc *, size_t);

static CUresult peer_on(void *peer, unsigned flags)
{
	CUresult r = ((enable_fn)drv(CN_FN_IDX_cuCtxEnablePeerAccess))(peer, flags);
	int dev[2];

	if (note_enable(peer, cn_wrap_caller, &r, dev))
		cn_owned_peer(dev[0], dev[1], true);
	return r;
}

static CUresult peer_off(void *peer)
{
	CUresult r = ((fn_ptr)drv(CN_FN_IDX_cuCtxDisablePeerAccess))(peer);
	int dev[2];

	if (note_disable(peer, &r, dev))
		cn_owned_peer(dev[0], dev[1], false);
	return r;
}

static CUresult set_access(uint64_t ptr, size_t size, const CUmemAccessDesc *descs, size_t n)
{
	CUresult r = ((set_access_fn)drv(CN_FN_IDX_cuMemSetAccess))(ptr, size, descs, n);

	if (r == CUDA_SUCCESS) {
		grant(owner_of(ptr), descs, n, false, cn_wrap_caller);
		note_revoked(ptr, size, descs, n);
		note_mapped(ptr, size, descs, n, cn_wrap_caller);
	}
	return r;
}

static CUresult pool_access(void *pool, const CUmemAccessDesc *descs, size_t n)
{
	CUresult r = ((pool_access_fn)drv(CN_FN_IDX_cuMemPoolSetAccess))(pool, descs, n);
	int dev;

	/* A pool's device is not asked for: the caller's is the likely owner. */
	current(&dev);
	if (r == CUDA_SUCCESS)
		grant(dev, descs, n, true, cn_wrap_caller);
	return r;
}

void *cn_peers_route(void *real)
{
	static const struct {
		unsigned idx;
		void *fn;
	} routes[] = {
		{ CN_FN_IDX_cuCtxEnablePeerAccess, (void *)peer_on },
		{ CN_FN_IDX_cuCtxDisablePeerAccess, (void *)peer_off },
		{ CN_FN_IDX_cuMemSetAccess, (void *)set_access },
		{ CN_FN_IDX_cuMemPoolSetAccess, (void *)pool_access },
	};

	for (size_t i = 0; real && i < sizeof(routes) / sizeof(routes[0]); i++)
		if (drv(routes[i].idx) == real)
			return routes[i].fn;
	return NULL;
}

void cn_peers_unmap(uint64_t ptr, uint64_t size)
{
	bool none;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_mapped;)
		if (mapped[i].base >= ptr && mapped[i].base < ptr + size)
			mapped[i] = mapped[--n_mapped];
		else
			i++;
	none = !n_mapped;
	pthread_mutex_unlock(&lock);
	if (none)
		cn_lookup_watch_owned(CN_WATCH_LARGE, false);
}

/* ---- the agent ---- */

int cn_peers_dropped(void)
{
	int n = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_pairs; i++)
		n += pairs[i].dropped;
	pthread_mutex_unlock(&lock);
	return n;
}

int cn_peers_large(char *why, size_t len)
{
	int n;

	pthread_mutex_lock(&lock);
	n = n_large + n_large_lost;
	if (n)
		snprintf(why, len, "%s%s", large_who, n > 1 ? ", and more" : "");
	pthread_mutex_unlock(&lock);
	return n && cn_peers_held() ? n : 0;
}

int cn_peers_held(void)
{
	int n = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_pairs; i++)
		n += !pairs[i].dropped;
	pthread_mutex_unlock(&lock);
	return n;
}

/* A GPU's index among the machine's (gpus, n of them), -1 when not among them. */
static int index_of(const struct cn_uuid *uuid, const struct cn_uuid *gpus, int n)
{
	static const struct cn_uuid zero;

	return cn_uuid_eq(uuid, &zero) ? -1 : cn_uuid_index(gpus, n, uuid);
}

/* A direction's GPUs: by their index among the machine's (gpus, n of them) where known, and by
 * the process's numbers. */
static struct cn_peerlist_dir dir_of(const struct cn_uuid *uuid, const int *dev,
				     const struct cn_uuid *gpus, int n)
{
	return (struct cn_peerlist_dir){ index_of(&uuid[0], gpus, n),
					 index_of(&uuid[1], gpus, n),
					 { dev[0], dev[1] } };
}

/* "GPU 0->1" by the machine's indices, else "cuda:0->cuda:1" by the process's numbers. */
static size_t direction(const struct cn_uuid *uuid, const int *dev, const struct cn_uuid *gpus,
			int n, char *out, size_t len)
{
	struct cn_peerlist_dir d = dir_of(uuid, dev, gpus, n);

	return cn_peerlist_say(&d, 1, NULL, out, len, 0);
}

/* s at o, cut at len - 1: the new end. */
static size_t append(char *out, size_t len, size_t o, const char *s)
{
	size_t w = strlen(s);

	if (o + 1 >= len)
		return len ? len - 1 : 0;
	if (w > len - 1 - o)
		w = len - 1 - o;
	memcpy(out + o, s, w);
	out[o + w] = '\0';
	return o + w;
}

/* The directions being said (under lock): room for every pair's, or every grant's. */
#define LISTING (MAX_PAIRS > MAX_GRANTS ? MAX_PAIRS : MAX_GRANTS)
static struct cn_peerlist_dir listing[LISTING];

/* The directions turned off or not, "GPU 0->1, GPU 1->0 by WHO" (peerlist.h: every pair of eight
 * GPUs in a few words, a long list cut), after "head" when there is any; appended at o. */
static size_t directions(bool dropped, const char *head, const struct cn_uuid *gpus, int n,
			 char *out, size_t len, size_t o)
{
	const char *who = NULL;
	int k = 0;

	for (int i = 0; i < n_pairs && k < LISTING; i++) {
		if (pairs[i].dropped != dropped)
			continue;
		listing[k++] = dir_of(pairs[i].uuid, pairs[i].dev, gpus, n);
		if (!who)
			who = pairs[i].who;
	}
	if (!k)
		return o;
	return cn_peerlist_say(listing, k, who, out, len, append(out, len, o, head));
}

/* The grants, "mapped: GPU 1->0, GPU 2->0 by WHO, GPU 0->1 by WHO2", each WHO's together;
 * appended at o. */
static size_t granted(const struct cn_uuid *gpus, int n, char *out, size_t len, size_t o)
{
	bool done[MAX_GRANTS] = { false };
	bool first = true;

	for (int i = 0; i < n_grants; i++) {
		int k = 0;

		if (done[i])
			continue;
		for (int j = i; j < n_grants && k < LISTING; j++)
			if (!done[j] && grants[j].pool == grants[i].pool &&
			    strcmp(grants[j].who, grants[i].who) == 0) {
				listing[k++] = dir_of(grants[j].uuid, grants[j].dev, gpus, n);
				done[j] = true;
			}
		o = append(out, len, o, !first ? ", " : o ? "; mapped: " : "mapped: ");
		o = cn_peerlist_say(listing, k, grants[i].who, out, len, o);
		first = false;
	}
	return o;
}

int cn_peers_unrestorable(const struct cn_uuid *gpus, int n, bool peer_off, char *why, size_t len)
{
	char dirs[300], first[200];
	size_t o = 0;

	if (!peer_off && cn_peers_large(first, sizeof(first))) {
		cn_peers_describe(gpus, n, dirs, sizeof(dirs));
		snprintf(why, len,
			 "peer access between its GPUs (%s) and an allocation over 256 MiB (%s): "
			 "the driver cannot restore it",
			 dirs, first);
		return CN_PEERS_LARGE;
	}
	pthread_mutex_lock(&lock);
	if (n_mapped || n_mapped_lost) {
		o = (size_t)snprintf(why, len,
				     "an allocation over 256 MiB mapped to another GPU (");
		/* "GPU 1->0: 16804 MiB of cuMemCreate's in xla_cuda_plugin.so" */
		if (n_mapped) {
			o += direction(mapped[0].uuid, mapped[0].dev, gpus, n, why + o, len - o);
			o += (size_t)snprintf(why + o, len - o, ": %s", mapped[0].who);
		}
		snprintf(why + o, len - o, "%s): the driver cannot restore it",
			 n_mapped + n_mapped_lost > 1 ? ", and more" : "");
		pthread_mutex_unlock(&lock);
		return CN_PEERS_MAPPED;
	}
	for (int i = 0; i < n_grants; i++) {
		if (!grants[i].pool)
			continue;
		o = (size_t)snprintf(why, len, "a memory pool another GPU may access (");
		o += direction(grants[i].uuid, grants[i].dev, gpus, n, why + o, len - o);
		snprintf(why + o, len - o,
			 " by %s): the driver restores the pool without that access, and that "
			 "GPU's next use of it faults",
			 grants[i].who);
		pthread_mutex_unlock(&lock);
		return CN_PEERS_POOL;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

void cn_peers_describe(const struct cn_uuid *gpus, int n, char *out, size_t len)
{
	size_t o;

	if (!len)
		return;
	out[0] = '\0';
	pthread_mutex_lock(&lock);
	o = directions(false, "", gpus, n, out, len, 0);
	o = directions(true, o ? "; off since the resume: " : "off since the resume: ", gpus, n,
		       out, len, o);
	granted(gpus, n, out, len, o);
	pthread_mutex_unlock(&lock);
}

/* Turn direction i on or off from the agent's thread: its context pushed, then popped. */
static CUresult toggle(int i, bool on)
{
	fn_ptr f = drv(on ? CN_FN_IDX_cuCtxEnablePeerAccess : CN_FN_IDX_cuCtxDisablePeerAccess);
	CUresult r = enter(pairs[i].from);

	if (r != CUDA_SUCCESS)
		return r;
	r = !f	 ? CUDA_ERROR_NOT_INITIALIZED
	    : on ? ((enable_fn)(void *)f)(pairs[i].to, 0)
		 : f(pairs[i].to);
	leave();
	return r;
}

int cn_peers_drop(char *why, size_t len)
{
	int rc = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_pairs && !rc; i++) {
		CUresult r;

		if (pairs[i].dropped)
			continue;
		r = toggle(i, false);
		if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) {
			pairs[i].dropped = true;
			continue;
		}
		snprintf(why, len, "cuCtxDisablePeerAccess: CUDA error %d", r);
		rc = -1;
	}
	pthread_mutex_unlock(&lock);
	if (rc < 0)
		cn_peers_raise(NULL, 0);
	return rc;
}

int cn_peers_raise(char *why, size_t len)
{
	int off = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_pairs; i++) {
		CUresult r;

		if (!pairs[i].dropped)
			continue;
		r = toggle(i, true);
		if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
			pairs[i].dropped = false;
		} else if (!off++ && why) {
			const char *name = NULL;
			CUresult (*get_name)(CUresult, const char **) =
				drv(CN_FN_IDX_cuGetErrorName);

			if (!get_name || get_name(r, &name) != CUDA_SUCCESS || !name)
				name = "a CUDA error";
			snprintf(why, len, "cuCtxEnablePeerAccess: %s (%d)", name, r);
		}
	}
	pthread_mutex_unlock(&lock);
	return off;
}

void cn_peers_restored(void)
{
	atomic_store(&restored, true);
}

static void relocate(struct cn_uuid *uuid, const struct cn_uuid *was, const struct cn_uuid *now,
		     int n)
{
	int k = cn_uuid_index(was, n, uuid);

	if (k >= 0)
		*uuid = now[k];
}

void cn_peers_moved(const struct cn_uuid *was, const struct cn_uuid *now, int n)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_pairs; i++)
		for (int j = 0; j < 2; j++)
			relocate(&pairs[i].uuid[j], was, now, n);
	for (int i = 0; i < n_grants; i++)
		for (int j = 0; j < 2; j++)
			relocate(&grants[i].uuid[j], was, now, n);
	for (int i = 0; i < n_mapped; i++)
		for (int j = 0; j < 2; j++)
			relocate(&mapped[i].uuid[j], was, now, n);
	pthread_mutex_unlock(&lock);
}

void cn_peers_after_fork(void)
{
	pthread_mutex_init(&lock, NULL);
	n_pairs = n_grants = n_large = n_large_lost = n_mapped = n_mapped_lost = 0;
	atomic_store(&restored, false);
}
