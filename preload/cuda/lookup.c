/* lookup: every path by which an app gets a driver function leads to the gate's entry point for
 * it; this file hands them out and keeps the table (docs/FILES.md). */
#define _GNU_SOURCE
#include "cuda/fns.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PASS ((void *)1) /* route: libc's dlsym answers */
/* A sanitizer's runtime looks its real functions up with dlsym(RTLD_NEXT) before it is set up:
 * what the preload's dlsym runs on the way to libc's must not call into it. */
#define UNSANITIZED __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))

#define CN_FN(n, w) { .name = #n, .words = ((w) + 1) & ~1 },
struct cn_fn cn_fns[CN_FNS] = {
#include "cuda/names.h"
};
#undef CN_FN

__attribute__((visibility("hidden"))) void *(*cn_lookup_real_dlsym)(void *, const char *);
_Atomic(uintptr_t) cn_lookup_drv_lo, cn_lookup_drv_len;
bool cn_lookup_counting;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static unsigned n_spare;		   /* spare entry points handed out */
static unsigned long unwrapped;		   /* driver functions handed out bare: no spare left */
static char spare_names[CN_FNS_SPARE][64]; /* a spare's name, when it is not libcuda's own */
static uint32_t by_addr[8192];		   /* 1 + index, by the driver function's address */
static const void *drv_base;		   /* libcuda's load address, once seen */
static unsigned long export_tables;
static unsigned char export_ids[16][16];
static unsigned n_export_ids;

static const struct {
	const char *prefix;
	uint8_t kind;
} kinds[] = {
	{ "cuGetProcAddress", CN_KIND_LOOKUP },
	{ "cuGetExportTable", CN_KIND_EXPORT },
	{ "cuIpcOpenMemHandle", CN_KIND_IPC_OPEN },
	{ "cuIpcCloseMemHandle", CN_KIND_IPC_CLOSE },
	{ "cuMemImportFromShareableHandle", CN_KIND_IPC_IMPORT },
	{ "cuMemAllocManaged", CN_KIND_MANAGED },
	{ "cuMemAllocHost", CN_KIND_PLAIN }, /* host memory, before the prefix below */
	{ "cuMemAlloc", CN_KIND_ALLOC },
	{ "cuMemFreeHost", CN_KIND_PLAIN }, /* host memory, before the prefix below */
	{ "cuMemFree", CN_KIND_FREE },
	{ "cuStreamBeginCapture", CN_KIND_CAPTURE },
	{ "cuStreamEndCapture", CN_KIND_CAPTURED },
	{ "cuCtxEnablePeerAccess", CN_KIND_PEER_ON },
	{ "cuCtxDisablePeerAccess", CN_KIND_PEER_OFF },
	{ "cuDeviceCanAccessPeer", CN_KIND_PEER_CAN },
	{ "cuMemSetAccess", CN_KIND_MAP_ACCESS },
	{ "cuMemPoolSetAccess", CN_KIND_POOL_ACCESS },
	{ "cuMemCreate", CN_KIND_ROOM },
	{ "cuCtxCreate", CN_KIND_ROOM },
	{ "cuDevicePrimaryCtxRetain", CN_KIND_ROOM },
	{ "cuEventQuery", CN_KIND_QUERY },
	{ "cuStreamQuery", CN_KIND_QUERY },
	{ "cuMemMap", CN_KIND_OWNED },
	{ "cuMemUnmap", CN_KIND_OWNED },
	{ "cuMemRelease", CN_KIND_OWNED },
	{ "cuMemGetAllocationPropertiesFromHandle", CN_KIND_OWNED },
	{ "cuMemExportToShareableHandle", CN_KIND_OWNED },
	{ "cuMemGetAddressRange", CN_KIND_OWNED },
	{ "cuPointerGetAttribute", CN_KIND_OWNED },
	{ "cuIpcGetMemHandle", CN_KIND_OWNED },
	{ "cuMemRetainAllocationHandle", CN_KIND_OWNED },
	{ "cuMulticastBindMem", CN_KIND_OWNED },
	{ "cuCtxDestroy", CN_KIND_OWNED },
	{ "cuDevicePrimaryCtxReset", CN_KIND_OWNED },
};

/* Calls that do not work the GPU, for the naps' idleness: queries, getters, context switches. */
static bool quiet(const char *name)
{
	static const char *const switches[] = { "cuCtxSetCurrent", "cuCtxPushCurrent",
						"cuCtxPopCurrent", "cuInit", "cuEventElapsedTime" };

	if (strstr(name, "Get") || strstr(name, "Query") || strstr(name, "IsCapturing"))
		return true;
	for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
		if (strncmp(name, switches[i], strlen(switches[i])) == 0)
			return true;
	return false;
}

static uint8_t kind_of(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strncmp(name, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
			return kinds[i].kind;
	return CN_KIND_PLAIN;
}

static bool watching_frees, watching_owned;
static unsigned free_watchers; /* CN_WATCH_* */

/* The flags of an entry, set before its function is published (and for the frees, again when
 * watching them starts or stops). */
static void classify(struct cn_fn *e)
{
	e->kind = kind_of(e->name);
	e->work = !quiet(e->name);
	e->counted = cn_lookup_counting || !e->known;
	e->after = e->kind != CN_KIND_PLAIN && (e->kind != CN_KIND_FREE || watching_frees) &&
		   (e->kind != CN_KIND_OWNED || watching_owned);
	/* A query's after looks at its answer alone, which the fast path keeps too. */
	e->slow = e->counted || (e->after && e->kind != CN_KIND_QUERY);
}

/* libc's dlsym: the next after the preload, else libc's own (preloaded before it, as
 * LD_PRELOAD=libc.so.6:... does), else libdl's (glibc before 2.34). */
UNSANITIZED static void find_real_dlsym(void)
{
	static const char *const where[] = { NULL, "libc.so.6", "libdl.so.2" };
	static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5" };
	void *f = NULL;

	for (size_t i = 0; !f && i < sizeof(where) / sizeof(where[0]); i++) {
		void *h = where[i] ? dlopen(where[i], RTLD_LAZY | RTLD_NOLOAD) : RTLD_NEXT;

		for (size_t v = 0; h && !f && v < sizeof(versions) / sizeof(versions[0]); v++)
			f = dlvsym(h, "dlsym", versions[v]);
		if (h && h != RTLD_NEXT)
			dlclose(h);
	}
	if (!f) {
		static const char msg[] = "cudanap: libc's dlsym not found\n";

		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		}
		abort();
	}
	__atomic_store_n(&cn_lookup_real_dlsym, (void *(*)(void *, const char *))f,
			 __ATOMIC_RELEASE);
}

static void init(void)
{
	const char *dbg = secure_getenv("CUDANAP_DEBUG");

	if (!cn_lookup_real_dlsym)
		find_real_dlsym();
	cn_lookup_counting = dbg && strstr(dbg, "calls");
	for (unsigned i = 0; i < CN_FNS_KNOWN; i++) {
		cn_fns[i].known = true;
		classify(&cn_fns[i]);
	}
}

void cn_lookup_setup(void)
{
	pthread_once(&once, init);
}

/* The flags of every entry of kind flip while other threads read them (under mu): slow (the
 * arguments saved) goes on before after (they are looked at), and off after it. A free that passed
 * on the fast path just then is looked at with its arguments unsaved: a lookup of a pointer that
 * matches nothing; a question about owned memory then goes to the driver, while the first
 * allocation is being made. */
static void flip(uint8_t kind, bool on)
{
	for (unsigned i = 0; i < CN_FNS_KNOWN + n_spare; i++) {
		struct cn_fn *e = &cn_fns[i];

		if (e->kind != kind)
			continue;
		if (on) {
			__atomic_store_n(&e->slow, true, __ATOMIC_RELEASE);
			__atomic_store_n(&e->after, true, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&e->after, false, __ATOMIC_RELEASE);
			__atomic_store_n(&e->slow, e->counted, __ATOMIC_RELEASE);
		}
	}
}

/* who wants (or no longer wants) the calls of kind looked at; *watching says whether anyone does.
 */
static void watch(uint8_t kind, unsigned *watchers, bool *watching, unsigned who, bool want)
{
	bool on;

	pthread_once(&once, init);
	pthread_mutex_lock(&mu);
	*watchers = want ? *watchers | who : *watchers & ~who;
	on = *watchers != 0;
	if (*watching != on) {
		*watching = on;
		flip(kind, on);
	}
	pthread_mutex_unlock(&mu);
}

void cn_lookup_watch_frees(unsigned who, bool want)
{
	watch(CN_KIND_FREE, &free_watchers, &watching_frees, who, want);
}

void cn_lookup_watch_owned(unsigned who, bool want)
{
	static unsigned watchers;

	if (who == CN_WATCH_OWNED) /* owned memory is freed by the driver's names too */
		cn_lookup_watch_frees(CN_WATCH_OWNED, want);
	watch(CN_KIND_OWNED, &watchers, &watching_owned, who, want);
}

void cn_lookup_object(const void *addr, char *out, size_t len)
{
	Dl_info info;
	const char *slash;

	snprintf(out, len, "an unknown object");
	if (dladdr(addr, &info) && info.dli_fname && info.dli_fname[0]) {
		slash = strrchr(info.dli_fname, '/');
		snprintf(out, len, "%s", slash ? slash + 1 : info.dli_fname);
	}
}

const char *cn_lookup_name(unsigned idx)
{
	return idx < CN_FNS && cn_fns[idx].name ? cn_fns[idx].name : "a driver function";
}

static int known_index(const char *name)
{
	int lo = 0, hi = CN_FNS_KNOWN - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(name, cn_fns[mid].name);

		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Under mu: the map from a driver function to its entry. */
static uint32_t *slot_for(const void *fn)
{
	size_t n = sizeof(by_addr) / sizeof(by_addr[0]), h = ((uintptr_t)fn >> 4) * 0x9e3779b1u;

	for (size_t i = 0; i < n; i++) {
		uint32_t *s = &by_addr[(h + i) & (n - 1)];

		if (!*s || atomic_load(&cn_fns[*s - 1].real) == fn)
			return s;
	}
	return NULL;
}

/* Under mu: entry idx calls fn from now on. */
static void publish(unsigned idx, void *fn)
{
	uint32_t *s = slot_for(fn);

	atomic_store_explicit(&cn_fns[idx].real, fn, memory_order_release);
	if (s && !*s)
		*s = idx + 1;
}

/* The name of the driver's library: CUDANAP_LIBCUDA's (a test's stand-in), else libcuda's. */
static const char *driver_name(void)
{
	const char *lib = secure_getenv("CUDANAP_LIBCUDA");

	if (lib && *lib)
		return strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
	return "libcuda.so";
}

struct range {
	uintptr_t base, lo, hi;
};

static int text_of(struct dl_phdr_info *info, size_t size, void *data)
{
	struct range *r = data;

	(void)size;
	if (info->dlpi_addr != r->base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			uintptr_t a = info->dlpi_addr + ph->p_vaddr;

			if (!r->lo || a < r->lo)
				r->lo = a;
			if (a + ph->p_memsz > r->hi)
				r->hi = a + ph->p_memsz;
		}
	}
	return 1;
}

bool cn_lookup_code_of(const void *addr, uintptr_t *lo, uintptr_t *len)
{
	struct link_map *lm = NULL;
	struct range r = { 0, 0, 0 };
	Dl_info info;

	if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return false;
	r.base = (uintptr_t)lm->l_addr;
	dl_iterate_phdr(text_of, &r);
	if (r.hi <= r.lo)
		return false;
	*lo = r.lo;
	*len = r.hi - r.lo;
	return true;
}

/* Under mu: whether fn lies in libcuda; the first time, its code's range is noted. */
static bool in_driver(const void *fn)
{
	struct link_map *lm = NULL;
	uintptr_t lo, len;
	const char *base;
	Dl_info info;

	if (!dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return false;
	if (drv_base)
		return info.dli_fbase == drv_base;
	base = strrchr(lm->l_name, '/') ? strrchr(lm->l_name, '/') + 1 : lm->l_name;
	if (!strstr(base, driver_name()))
		return false;
	drv_base = info.dli_fbase;
	if (cn_lookup_code_of(fn, &lo, &len)) {
		atomic_store(&cn_lookup_drv_lo, lo);
		atomic_store(&cn_lookup_drv_len, len);
	}
	return true;
}

/* The definition an exported name would have had without the preload. */
static void *next_definition(const char *name)
{
	const char *lib = secure_getenv("CUDANAP_LIBCUDA");
	void *f = cn_lookup_real_dlsym(RTLD_NEXT, name), *h;

	if (f)
		return f;
	/* cudart loads libcuda with RTLD_LOCAL: out of RTLD_NEXT's reach. */
	h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return NULL;
	f = cn_lookup_real_dlsym(h, name);
	dlclose(h);
	return f;
}

void *cn_lookup_resolve(unsigned idx)
{
	void *f = atomic_load_explicit(&cn_fns[idx].real, memory_order_acquire);

	pthread_once(&once, init);
	if (f || idx >= CN_FNS_KNOWN)
		return f;
	pthread_mutex_lock(&mu);
	f = atomic_load(&cn_fns[idx].real);
	if (!f && (f = next_definition(cn_fns[idx].name))) {
		in_driver(f);
		cn_fns[idx].how |= CN_PATH_EXPORT;
		publish(idx, f);
	}
	pthread_mutex_unlock(&mu);
	return f;
}

/* Under mu: a spare entry point for fn, exported by libcuda as exact (NULL: not exported), asked
 * for as name. -1 when none is left. */
static int spare(void *fn, const char *exact, const char *name)
{
	struct cn_fn *e;
	const char *base = exact ? exact : name;
	char stem[64];
	int k;

	if (n_spare >= CN_FNS_SPARE)
		return -1;
	e = &cn_fns[CN_FNS_KNOWN + n_spare];
	snprintf(spare_names[n_spare], sizeof(spare_names[0]), "%s", base);
	e->name = spare_names[n_spare];
	/* A variant the table has no entry of its own for: known by its stem (cuLaunchKernel for an
	 * unexported cuLaunchKernel variant), its stack arguments not. */
	snprintf(stem, sizeof(stem), "%s", base);
	k = known_index(stem);
	while (k < 0 && strrchr(stem, '_')) {
		*strrchr(stem, '_') = '\0';
		k = known_index(stem);
	}
	e->known = k >= 0;
	e->words = exact && k >= 0 && strcmp(exact, cn_fns[k].name) == 0 ? cn_fns[k].words : 16;
	classify(e);
	publish(CN_FNS_KNOWN + n_spare, fn);
	return (int)(CN_FNS_KNOWN + n_spare++);
}

void *cn_lookup_wrap(void *fn, const char *name, int how)
{
	int idx = cn_fns_index(fn);
	const char *exact = NULL;
	uint32_t *s;
	Dl_info info;

	pthread_once(&once, init);
	if (idx >= 0) {
		/* One of ours (dlsym found the preload's export first): there only if libcuda has
		 * it. */
		if (!cn_lookup_resolve((unsigned)idx))
			return NULL;
		pthread_mutex_lock(&mu);
		cn_fns[idx].how |= how;
		pthread_mutex_unlock(&mu);
		return fn;
	}
	pthread_mutex_lock(&mu);
	if (!in_driver(fn)) {
		pthread_mutex_unlock(&mu);
		return fn;
	}
	s = slot_for(fn);
	idx = s && *s ? (int)*s - 1 : -1;
	if (idx < 0 && dladdr(fn, &info) && info.dli_saddr == fn && info.dli_sname)
		exact = info.dli_sname;
	if (idx < 0 && exact && (idx = known_index(exact)) >= 0 && atomic_load(&cn_fns[idx].real))
		idx = -1; /* its name's entry calls another function: a second libcuda */
	if (idx >= 0 && !atomic_load(&cn_fns[idx].real))
		publish((unsigned)idx, fn);
	else if (idx < 0)
		idx = spare(fn, exact, name);
	if (idx >= 0)
		cn_fns[idx].how |= how;
	else
		unwrapped++;
	pthread_mutex_unlock(&mu);
	return idx >= 0 ? cn_fns_stub((unsigned)idx) : fn;
}

void cn_lookup_note_export(const void *uuid)
{
	pthread_mutex_lock(&mu);
	export_tables++;
	for (unsigned i = 0; uuid && i <= n_export_ids && i < 16; i++) {
		if (i == n_export_ids) {
			memcpy(export_ids[n_export_ids++], uuid, 16);
			break;
		}
		if (memcmp(export_ids[i], uuid, 16) == 0)
			break;
	}
	pthread_mutex_unlock(&mu);
}

/* The preload's dlsym (stubs.S) asks first: PASS for libc's answer. */
__attribute__((visibility("hidden"))) void *cn_lookup_dlsym_route(void *handle, const char *name);
UNSANITIZED void *cn_lookup_dlsym_route(void *handle, const char *name)
{
	void *f;

	if (!__atomic_load_n(&cn_lookup_real_dlsym, __ATOMIC_ACQUIRE))
		find_real_dlsym();
	if (!name || name[0] != 'c' || name[1] != 'u' || name[2] < 'A' || name[2] > 'Z' ||
	    handle == RTLD_NEXT)
		return PASS;
	f = cn_lookup_real_dlsym(handle, name);
	return f ? cn_lookup_wrap(f, name, CN_PATH_DLSYM) : NULL;
}

void cn_lookup_summary(char *out, size_t len)
{
	unsigned n = 0, by[3] = { 0, 0, 0 }, unknown = 0;

	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < CN_FNS_KNOWN + n_spare; i++) {
		if (!cn_fns[i].how)
			continue;
		n++;
		for (int p = 0; p < 3; p++)
			by[p] += (cn_fns[i].how >> p) & 1;
		unknown += !cn_fns[i].known;
	}
	snprintf(out, len,
		 "driver functions the app took: %u (%u by exported name, %u by dlsym, %u by "
		 "cuGetProcAddress; %u unknown to cudanap, %lu passed bare for want of an entry "
		 "point); export tables taken: %lu (%u kinds), their calls not seen",
		 n, by[0], by[1], by[2], unknown, unwrapped, export_tables, n_export_ids);
	pthread_mutex_unlock(&mu);
}

static int by_calls(const void *a, const void *b)
{
	unsigned long x = atomic_load(&cn_fns[*(const unsigned *)a].calls),
		      y = atomic_load(&cn_fns[*(const unsigned *)b].calls);

	return x < y ? 1 : x > y ? -1 : 0;
}

size_t cn_lookup_counts(char *out, size_t len)
{
	static unsigned order[CN_FNS];
	unsigned n = 0;
	size_t o = 0;

	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < CN_FNS_KNOWN + n_spare; i++)
		if (atomic_load(&cn_fns[i].calls))
			order[n++] = i;
	qsort(order, n, sizeof(order[0]), by_calls);
	out[0] = '\0';
	for (unsigned i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%lu %s%s\n",
				      atomic_load(&cn_fns[order[i]].calls), cn_fns[order[i]].name,
				      cn_fns[order[i]].known ? "" : " (unknown)");
	pthread_mutex_unlock(&mu);
	return o < len ? o : len - 1;
}
