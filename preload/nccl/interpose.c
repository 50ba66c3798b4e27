/* interpose: NCCL's entry points as the app calls them, forwarded to NCCL, the communicators
 * registered and the operations counted (docs/FILES.md). The app's threads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "nccl/interpose.h"

#include "cn_spanwire.h"
#include "nccl/comms.h"
#include "nccl_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* Thread-local: the depth of ncclGroupStart calls not yet ended. Initial-exec: the preload is
 * loaded at the program's start, where static TLS is there for it. */
static __thread int depth __attribute__((tls_model("initial-exec")));

/* real(NAME): the real NAME, looked up at its first call. None (NCCL not loaded, which cannot be
 * where the app calls it) answers ncclInternalError: a function of no arguments, called with
 * some, which the x86-64 and AArch64 calling conventions allow. */
#define real(name)                                                                                 \
	({                                                                                         \
		static _Atomic(__typeof__(&name)) f_;                                              \
		__typeof__(&name) g_ = atomic_load_explicit(&f_, memory_order_relaxed);            \
		if (!g_) {                                                                         \
			g_ = (__typeof__(&name))cn_comms_sym(#name);                               \
			atomic_store_explicit(&f_, g_, memory_order_relaxed);                      \
		}                                                                                  \
		g_ ? g_ : (__typeof__(&name))(void *)missing;                                      \
	})

static ncclResult_t missing(void)
{
	return NCCL_INTERNAL_ERROR;
}

#define FNV0 0xcbf29ce484222325ull
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h ? h : 1; /* 0 means unknown */
}

/* A created communicator counts when NCCL returned it: ncclSuccess, or ncclInProgress (7) for a
 * non-blocking one still being set up. */
static void created(ncclResult_t r, ncclComm_t c, uint64_t key, int rank, int nranks,
		    const uint8_t *secret)
{
	if ((r == NCCL_SUCCESS || r == 7) && c)
		cn_comms_add(c, key, secret, rank, nranks);
}

/* A communicator's secret, into buf: from its unique id. */
static const uint8_t *of_id(const void *id, size_t len, uint8_t buf[CN_SHA256_LEN])
{
	cn_spanwire_secret(id, len, buf);
	return buf;
}

/* From its parent's and how it was made; NULL when the parent has none. */
static const uint8_t *of_parent(ncclComm_t parent, const char *how, const void *arg, size_t len,
				uint8_t buf[CN_SHA256_LEN])
{
	const uint8_t *from = cn_comms_secret(parent);

	if (!from)
		return NULL;
	cn_spanwire_derive(from, how, arg, len, buf);
	return buf;
}

struct order {
	const char *self;
	bool seen_self, shadowed;
};

static int look(struct dl_phdr_info *info, size_t size, void *data)
{
	struct order *o = data;

	(void)size;
	if (info->dlpi_name && strcmp(info->dlpi_name, o->self) == 0)
		o->seen_self = true;
	else if (!o->seen_self && info->dlpi_name && strstr(info->dlpi_name, "libnccl"))
		o->shadowed = true;
	return 0;
}

bool cn_interpose_shadowed(void)
{
	struct order o = { NULL, false, false };
	Dl_info self;

	if (!dladdr((void *)cn_interpose_shadowed, &self) || !self.dli_fname)
		return false;
	o.self = self.dli_fname;
	dl_iterate_phdr(look, &o);
	return o.shadowed;
}

/* ---- communicators created and destroyed ---- */

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	uint8_t secret[CN_SHA256_LEN];
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	r = real(ncclCommInitRank)(comm, nranks, id, rank);
	cn_comms_leave();
	created(r, *comm, fnv(FNV0, &id, sizeof(id)), rank, nranks, of_id(&id, sizeof(id), secret));
	return r;
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
					   ncclConfig_t *config)
{
	uint8_t secret[CN_SHA256_LEN];
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	r = real(ncclCommInitRankConfig)(comm, nranks, id, rank, config);
	cn_comms_leave();
	created(r, *comm, fnv(FNV0, &id, sizeof(id)), rank, nranks, of_id(&id, sizeof(id), secret));
	return r;
}

EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int n_ids,
					     ncclUniqueId *ids, ncclConfig_t *config)
{
	size_t len = sizeof(*ids) * (size_t)(n_ids > 0 ? n_ids : 0);
	uint8_t secret[CN_SHA256_LEN];
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	r = real(ncclCommInitRankScalable)(comm, nranks, rank, n_ids, ids, config);
	cn_comms_leave();
	created(r, *comm, fnv(FNV0, ids, len), rank, nranks,
		n_ids > 0 ? of_id(ids, len, secret) : NULL);
	return r;
}

/* One process, one rank per GPU: the ranks share a key made of the devices. */
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	uint64_t key = fnv(FNV0, "all", 3);
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	r = real(ncclCommInitAll)(comms, ndev, devlist);
	cn_comms_leave();
	key = devlist ? fnv(key, devlist, sizeof(*devlist) * (size_t)ndev)
		      : fnv(key, &ndev, sizeof(ndev));
	/* All of its ranks are this process: none of them proves anything to a peer. */
	for (int i = 0; i < ndev; i++)
		created(r, comms[i], key, i, ndev, NULL);
	return r;
}

/* A split is a collective of the parent's: an operation on it, counted. Its ranks and size are
 * asked of NCCL at the suspend. */
EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	uint64_t k = fnv(cn_comms_key(comm), &color, sizeof(color));
	uint8_t secret[CN_SHA256_LEN];
	ncclResult_t r;

	cn_comms_enter(comm, CN_COMMS_OP);
	cn_comms_issued(comm);
	r = real(ncclCommSplit)(comm, color, key, newcomm, config);
	cn_comms_leave();
	created(r, newcomm ? *newcomm : NULL, k, 0, 0,
		of_parent(comm, "split", &color, sizeof(color), secret));
	return r;
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int n_exclude,
				   ncclComm_t *newcomm, ncclConfig_t *config, int flags)
{
	size_t len = sizeof(*exclude) * (size_t)(n_exclude > 0 ? n_exclude : 0);
	uint64_t k = fnv(fnv(cn_comms_key(comm), "shrink", 6), exclude, len);
	uint8_t secret[CN_SHA256_LEN];
	ncclResult_t r;

	cn_comms_enter(comm, CN_COMMS_OP);
	cn_comms_issued(comm);
	r = real(ncclCommShrink)(comm, exclude, n_exclude, newcomm, config, flags);
	cn_comms_leave();
	created(r, newcomm ? *newcomm : NULL, k, 0, 0,
		of_parent(comm, "shrink", exclude, len, secret));
	return r;
}

EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nranks, const ncclUniqueId *id, int rank,
				 ncclComm_t *newcomm, ncclConfig_t *config)
{
	uint64_t k = id ? fnv(FNV0, id, sizeof(*id)) : fnv(cn_comms_key(comm), "grow", 4);
	uint8_t secret[CN_SHA256_LEN];
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	r = real(ncclCommGrow)(comm, nranks, id, rank, newcomm, config);
	cn_comms_leave();
	created(r, newcomm ? *newcomm : NULL, k, rank, nranks,
		id ? of_id(id, sizeof(*id), secret) : of_parent(comm, "grow", NULL, 0, secret));
	return r;
}

/* Finalize flushes the communicator's operations with its peers: an operation of its own. */
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	ncclResult_t r;

	cn_comms_enter(comm, CN_COMMS_OP);
	cn_comms_issued(comm);
	r = real(ncclCommFinalize)(comm);
	cn_comms_leave();
	return r;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	cn_comms_remove(comm);
	r = real(ncclCommDestroy)(comm);
	cn_comms_leave();
	return r;
}

/* Abort is the app's way out of an error: never held back. */
EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	cn_comms_remove(comm);
	return real(ncclCommAbort)(comm);
}

/* ---- memory registered with a communicator ---- */

EXPORT ncclResult_t ncclCommRegister(ncclComm_t comm, void *buff, size_t size, void **handle)
{
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	r = real(ncclCommRegister)(comm, buff, size, handle);
	cn_comms_leave();
	return r;
}

EXPORT ncclResult_t ncclCommDeregister(ncclComm_t comm, void *handle)
{
	ncclResult_t r;

	cn_comms_enter(NULL, CN_COMMS_OTHER);
	r = real(ncclCommDeregister)(comm, handle);
	cn_comms_leave();
	return r;
}

/* ---- groups and operations ---- */

EXPORT ncclResult_t ncclGroupStart(void)
{
	if (depth++ == 0)
		cn_comms_enter(NULL, CN_COMMS_GROUP);
	return real(ncclGroupStart)();
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t r = real(ncclGroupEnd)();

	if (depth > 0 && --depth == 0)
		cn_comms_leave();
	return r;
}

/* OP(NAME, PARAMS, ARGS): an operation on comm; inside a group it is counted and goes
 * straight through, the group having passed the gate. */
#define OP(name, params, args)                                                                     \
	EXPORT ncclResult_t name params                                                            \
	{                                                                                          \
		ncclResult_t r;                                                                    \
                                                                                                   \
		if (depth > 0) {                                                                   \
			cn_comms_issued(comm);                                                     \
			return real(name) args;                                                    \
		}                                                                                  \
		cn_comms_enter(comm, CN_COMMS_OP);                                                 \
		cn_comms_issued(comm);                                                             \
		r = real(name) args;                                                               \
		cn_comms_leave();                                                                  \
		return r;                                                                          \
	}

OP(ncclAllReduce,
   (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
    cudaStream_t st),
   (s, d, n, t, op, comm, st))
OP(ncclReduceScatter,
   (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
    cudaStream_t st),
   (s, d, n, t, op, comm, st))
OP(ncclReduce,
   (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm,
    cudaStream_t st),
   (s, d, n, t, op, root, comm, st))
OP(ncclBcast, (void *b, size_t n, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t st),
   (b, n, t, root, comm, st))
OP(ncclBroadcast,
   (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t st),
   (s, d, n, t, root, comm, st))
OP(ncclAllGather,
   (const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t st),
   (s, d, n, t, comm, st))
OP(ncclAlltoAll,
   (const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm, cudaStream_t st),
   (s, d, n, t, comm, st))
OP(ncclGather,
   (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t st),
   (s, d, n, t, root, comm, st))
OP(ncclScatter,
   (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t st),
   (s, d, n, t, root, comm, st))
OP(ncclSend,
   (const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t st),
   (s, n, t, peer, comm, st))
OP(ncclRecv, (void *d, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t st),
   (d, n, t, peer, comm, st))
