/* fns: the driver functions the gate has handed out, one entry point each (stubs.S), shared by the
 * files of preload/cuda/: lookup.c fills the table, wrap.c reads it at every call. */
#ifndef CN_FNS_H
#define CN_FNS_H

/* Entry points handed out by address, after those of names.h; every entry point is 16 bytes of
 * code, in table order from cn_stubs (stubs.S includes these two). */
#define CN_FNS_SPARE 2048
#define CN_STUB_SIZE 16
/* struct cn_fn as the trampoline reads it: 32 bytes, these fields at these offsets. */
#define CN_FN_SHIFT 5
#define CN_FN_REAL  0
#define CN_FN_WORDS 16
#define CN_FN_SLOW  19
#define CN_FN_AFTER 20
#define CN_FN_WORK  23

#ifndef __ASSEMBLER__
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The names names.h lists come first, each exported under its own name; the spare entry points
 * after them are handed out for functions found by address (a variant libcuda does not export,
 * a name a newer driver added). */
#define CN_FN(name, words) CN_FN_IDX_##name,
enum {
#include "cuda/names.h"
	CN_FNS_KNOWN
};
#undef CN_FN
#define CN_FNS (CN_FNS_KNOWN + CN_FNS_SPARE)

/* Whether a driver function's name is base or one of its variants (base_v2, base_ptsz,
 * base_v2_ptsz, ...). */
static inline bool cn_fns_is(const char *name, const char *base)
{
	size_t n = __builtin_strlen(base);

	return __builtin_strncmp(name, base, n) == 0 && (name[n] == '\0' || name[n] == '_');
}

/* What a call is to the gate and its hooks: most are plain; the rest need a look at their
 * arguments or results (wrap.c), or matter to whoever asks what the app does. */
enum cn_kind {
	CN_KIND_PLAIN,
	CN_KIND_LOOKUP,	    /* cuGetProcAddress(_v2): the function it hands out is wrapped too */
	CN_KIND_EXPORT,	    /* cuGetExportTable: noted; calls through the table are not seen */
	CN_KIND_IPC_OPEN,   /* memory imported from another process: counted for the preflight */
	CN_KIND_IPC_CLOSE,  /* ... and given back */
	CN_KIND_IPC_IMPORT, /* a shareable handle imported: counted for good */
	CN_KIND_MANAGED,    /* managed memory allocated: counted for the preflight */
	CN_KIND_FREE,	  /* device memory freed: looked at while managed or large memory is held */
	CN_KIND_ALLOC,	  /* device memory allocated (cuMemAlloc, pitch, async): the large noted */
	CN_KIND_CAPTURE,  /* a stream capture begun: counted, for the answers during a nap */
	CN_KIND_CAPTURED, /* ... and ended */
	CN_KIND_PEER_ON,  /* peer access turned on (cuCtxEnablePeerAccess): kept, peers.c */
	CN_KIND_PEER_OFF, /* ... and off */
	CN_KIND_PEER_CAN, /* whether a GPU may access another's memory: 0 once restored */
	CN_KIND_MAP_ACCESS,  /* memory mapped to other GPUs (cuMemSetAccess): noted */
	CN_KIND_POOL_ACCESS, /* a pool's memory to other GPUs (cuMemPoolSetAccess): noted */
	CN_KIND_ROOM,	     /* a context or cuMemCreate: out of memory, room is made (as ALLOC) */
	CN_KIND_QUERY,	     /* an event's or a stream's query: when its work was not done, noted */
	CN_KIND_OWNED,	     /* asks about memory (a range, a handle): answered for owned memory */
};

/* How the app first got a function: the debug line of a suspend says which paths it used. */
enum { CN_PATH_EXPORT = 1, CN_PATH_DLSYM = 2, CN_PATH_PROC = 4 };

struct cn_fn {
	_Atomic(void *) real; /* the driver's function; NULL until known */
	const char *name;
	uint8_t words; /* 8-byte argument words on the stack, rounded up to even: the copy */
	uint8_t kind;
	bool known;	    /* a name of names.h (a variant of one for a spare) */
	bool slow;	    /* every call takes the slow path in: counted, or after */
	bool after;	    /* its kind looks at the call's arguments and result, after it */
	uint8_t how;	    /* CN_PATH_* */
	bool counted;	    /* CUDANAP_DEBUG=calls, or a name the table does not know */
	bool work;	    /* a call that works the GPU: not a query, getter or context switch */
	atomic_ulong calls; /* counted on the slow path */
};

_Static_assert(sizeof(struct cn_fn) == 1 << CN_FN_SHIFT &&
		       offsetof(struct cn_fn, real) == CN_FN_REAL &&
		       offsetof(struct cn_fn, words) == CN_FN_WORDS &&
		       offsetof(struct cn_fn, slow) == CN_FN_SLOW &&
		       offsetof(struct cn_fn, after) == CN_FN_AFTER &&
		       offsetof(struct cn_fn, work) == CN_FN_WORK,
	       "stubs.S reads struct cn_fn at these offsets");

extern struct cn_fn cn_fns[CN_FNS];
extern const char cn_stubs[]; /* the first entry point (stubs.S) */

/* The entry point of table index idx, and the index of an entry point (-1: not one of ours). */
static inline void *cn_fns_stub(unsigned idx)
{
	return (void *)(cn_stubs + (size_t)idx * CN_STUB_SIZE);
}
static inline int cn_fns_index(const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)cn_stubs;

	return off < (uintptr_t)CN_FNS * CN_STUB_SIZE && off % CN_STUB_SIZE == 0
		       ? (int)(off / CN_STUB_SIZE)
		       : -1;
}

/* The app's return address of the call this thread is making on the slow path (wrap.c), for the
 * functions that serve a call in the driver's place and say who made it. */
extern __thread const void *cn_wrap_caller __attribute__((tls_model("initial-exec")));

const char *cn_lookup_name(unsigned idx);

/* The file name of the object that address lies in ("libc10_cuda.so"), for the line that says who
 * made a call; "an unknown object" when none is known. */
void cn_lookup_object(const void *addr, char *out, size_t len);

/* The driver's function behind entry idx, found now if it was not yet (an exported name called
 * first: the next definition after the preload, else libcuda's own). NULL when there is none. */
void *cn_lookup_resolve(unsigned idx);

/* The address range of the code (its executable segments) of the object that addr lies in; false
 * when addr is in none. */
bool cn_lookup_code_of(const void *addr, uintptr_t *lo, uintptr_t *len);

/* The address range of libcuda's code, once known (len 0 before): its own calls of its exported
 * names pass without a look. */
extern _Atomic(uintptr_t) cn_lookup_drv_lo, cn_lookup_drv_len;

/* CUDANAP_DEBUG=calls: every call is counted. */
extern bool cn_lookup_counting;

/* A function the driver handed out under name (how: CN_PATH_*), as the app gets it: our entry
 * point for it, or fn itself when it is not the driver's (or the table is full). */
void *cn_lookup_wrap(void *fn, const char *name, int how);

/* The frees (CN_KIND_FREE) take the slow path out while someone watches them (who: CN_WATCH_*),
 * and only then. */
enum { CN_WATCH_MANAGED = 1, CN_WATCH_LARGE = 2, CN_WATCH_OWNED = 4 };
void cn_lookup_watch_frees(unsigned who, bool want);

/* The calls of CN_KIND_OWNED take the slow path while someone watches them (who: CN_WATCH_OWNED,
 * memory cudanap owns; CN_WATCH_LARGE, a large mapping another GPU may access), only then. */
void cn_lookup_watch_owned(unsigned who, bool want);

/* cuGetExportTable handed out the table with this UUID (16 bytes): noted, for the debug line. */
void cn_lookup_note_export(const void *uuid);

/* At the preload's start: libc's dlsym found, CUDANAP_DEBUG read, the table's kinds set (each
 * is done at the first call otherwise). */
void cn_lookup_setup(void);

/* For the agent: the paths the app took (one line), and with CUDANAP_DEBUG=calls the calls
 * counted per function, most first ("COUNT NAME" lines; the length written). */
void cn_lookup_summary(char *out, size_t len);
size_t cn_lookup_counts(char *out, size_t len);

#endif /* __ASSEMBLER__ */
#endif
