/* copy: the driver's own memcpy, made parallel while a checkpoint or restore is in flight.
 *
 * With the host copy in huge pages, what is left of a checkpoint is the driver copying GPU memory
 * into it at ~6 GB/s (an H200 with driver 580: 8.7 GB in 1.5 s once no page faults remain).
 * libcuda imports memcpy and memmove from glibc, so while the agent has armed us we point
 * libcuda's own GOT slots for them at a copy that splits large blocks over a few threads, and put
 * the slots back afterwards. Nothing else in the process is touched and outside the window nothing
 * runs at all: no exported memcpy, no cost on any other call.
 * Everything here runs in the agent (arm, disarm) or in the driver's threads (the copy). */
#define _GNU_SOURCE
#include "copy.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define PAR_MIN	    (2ul << 20) /* smaller copies are not worth a handoff */
#define MAX_SLOTS   16

typedef void *(*copy_fn)(void *, const void *, size_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);

static struct {
	void **addr;
	void *old;
	bool relro;
} slots[MAX_SLOTS];
static int n_slots;
static copy_fn real_memcpy, real_memmove;
/* What libcuda's mapping slots pointed at before us: libc, or the staging room's interposers. */
static mmap_fn next_mmap, next_mmap64;
static munmap_fn next_munmap;
static mremap_fn next_mremap;

/* The pool: one job at a time; a caller that finds it busy copies alone. The driver copies in
 * blocks of a few MiB, each a part of 50-100 us per thread: a condition variable's wake-up costs
 * as much, so between blocks the helpers spin (SPIN_NS at most, then they sleep on go) and the
 * caller spins for the parts to be done. They exist only while a driver call is armed. */
#define SPIN_NS	      500000
#define SPIN_PAUSE_NS 20000
static struct {
	pthread_t t[MAX_THREADS];
	unsigned n;
	pthread_mutex_t busy, mu;
	pthread_cond_t go;
	atomic_ulong gen;     /* a new job */
	atomic_uint pending;  /* helpers still copying it */
	atomic_uint sleepers; /* helpers waiting on go */
	atomic_bool quit;     /* set at disarm */
	char *dst;	      /* the job, written before gen moves */
	const char *src;
	size_t len, part;
} pool = { .busy = PTHREAD_MUTEX_INITIALIZER,
	   .mu = PTHREAD_MUTEX_INITIALIZER,
	   .go = PTHREAD_COND_INITIALIZER };

static struct {
	atomic_ulong calls, big_calls, bytes, big_bytes, largest, ns;
} st;

/* Copy-ahead, under pool.busy. */
#define AHEAD_TURNS 4		 /* calls in a row taking turns before a copy ahead */
#define AHEAD_MIN   (64ul << 10) /* smaller blocks are not worth it */
static struct {
	const char *lo, *hi; /* the host copy a restore reads; NULL: no copying ahead */
	bool canary;	     /* scribble over the idle buffer instead ($CUDANAP_COPY_CANARY) */
	char *prev[2];	  /* destinations of the last two calls from the host copy, older first */
	size_t took[2];	  /* the most each of them has taken in one call */
	const char *next; /* where the last call's source ended */
	unsigned turns;	  /* calls in a row into prev[0] then prev[1], sources contiguous */
	char *dst;	  /* the copy ahead, in flight or made; len 0: none */
	const char *src;
	size_t len;
	unsigned long bypassed; /* calls that went past the pool when it was made */
	unsigned long served, missed;
	size_t served_bytes;
} ahead;
static atomic_ulong bypassed; /* calls that copied alone, finding the pool busy */

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void copy_part(unsigned i)
{
	size_t off = (size_t)i * pool.part;

	if (off < pool.len)
		real_memcpy(pool.dst + off, pool.src + off,
			    pool.len - off < pool.part ? pool.len - off : pool.part);
}

/* One turn of a spin that waited since t0: a pause at first, then the CPU handed to whoever
 * else is runnable (several processes restoring at once have more helpers than CPUs). */
static void spin(unsigned long long t0)
{
	if (now_ns() - t0 < SPIN_PAUSE_NS) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else {
		sched_yield();
	}
}

/* The next generation after seen, or 0 at quit: spin first, then sleep. A helper counts itself
 * a sleeper before it looks at gen under the lock, and the caller moves gen before it looks at
 * the sleepers (both sequentially consistent): one of the two always sees the other. */
static unsigned long next_job(unsigned long seen)
{
	unsigned long long t0 = now_ns();
	unsigned long g;

	while ((g = atomic_load(&pool.gen)) == seen && !atomic_load(&pool.quit)) {
		if (now_ns() - t0 < SPIN_NS) {
			spin(t0);
			continue;
		}
		pthread_mutex_lock(&pool.mu);
		atomic_fetch_add(&pool.sleepers, 1);
		while (atomic_load(&pool.gen) == seen && !atomic_load(&pool.quit))
			pthread_cond_wait(&pool.go, &pool.mu);
		atomic_fetch_sub(&pool.sleepers, 1);
		pthread_mutex_unlock(&pool.mu);
		t0 = now_ns();
	}
	return atomic_load(&pool.quit) ? 0 : g;
}

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	unsigned long seen = 0;

	while ((seen = next_job(seen)) != 0) {
		copy_part(me);
		atomic_fetch_sub(&pool.pending, 1);
	}
	return NULL;
}

/* Hand d, s, n to the helpers in parts; parts is pool.n, or pool.n + 1 when the caller takes the
 * last one itself. */
static void start_job(void *d, const void *s, size_t n, unsigned parts)
{
	pool.dst = d;
	pool.src = s;
	pool.len = n;
	pool.part = ((n + parts - 1) / parts + 63) & ~(size_t)63;
	atomic_store(&pool.pending, pool.n);
	atomic_fetch_add(&pool.gen, 1);
	if (atomic_load(&pool.sleepers)) {
		pthread_mutex_lock(&pool.mu);
		pthread_cond_broadcast(&pool.go);
		pthread_mutex_unlock(&pool.mu);
	}
}

static void wait_job(void)
{
	for (unsigned long long t0 = now_ns(); atomic_load(&pool.pending);)
		spin(t0);
}

static void parallel_copy(void *d, const void *s, size_t n)
{
	start_job(d, s, n, pool.n + 1);
	copy_part(pool.n); /* the caller takes the last part */
	wait_job();
}

/* ---- copy-ahead (all under pool.busy) ---- */

/* Would a call d, s, n take its turn in the pattern? */
static bool takes_turn(const char *d, const char *s)
{
	return d == ahead.prev[0] && d != ahead.prev[1] && s == ahead.next;
}

/* Wait for the copy ahead, if there is one; true when it made this very call's copy. */
static bool served_ahead(const void *d, const void *s, size_t n)
{
	bool hit;

	if (!ahead.len)
		return false;
	wait_job();
	hit = d == ahead.dst && s == ahead.src && n <= ahead.len &&
	      atomic_load(&bypassed) == ahead.bypassed;
	ahead.len = 0;
	if (hit) {
		ahead.served++;
		ahead.served_bytes += n;
	} else {
		ahead.missed++;
	}
	return hit;
}

/* The canary: in the pattern, the buffer the last call filled is idle once the driver calls to
 * fill the other; garbage written into it now would reach the GPU if it were not. */
static void scribble(const void *d, const void *s)
{
	if (ahead.canary && ahead.turns + 1 >= AHEAD_TURNS && takes_turn(d, s))
		memset(ahead.prev[1], 0xa5, ahead.took[1]);
}

/* Follow the calls from the host copy and, in the pattern, start the next block's copy into the
 * idle buffer. */
static void look_ahead(void *d, const void *s, size_t n)
{
	const char *src = s;
	size_t len, took = n;
	bool turn;

	if (!ahead.hi || src < ahead.lo || src > ahead.hi || n > (size_t)(ahead.hi - src))
		return;
	turn = takes_turn(d, s);
	ahead.turns = turn ? ahead.turns + 1 : 0;
	if (turn && ahead.took[0] > took)
		took = ahead.took[0];
	ahead.prev[0] = ahead.prev[1];
	ahead.took[0] = ahead.took[1];
	ahead.prev[1] = d;
	ahead.took[1] = took;
	ahead.next = src + n;
	if (ahead.canary || ahead.turns < AHEAD_TURNS || !pool.n)
		return;
	/* As much as the idle buffer has taken before, and no further than the host copy goes. */
	len = ahead.took[0];
	if (len > (size_t)(ahead.hi - ahead.next))
		len = (size_t)(ahead.hi - ahead.next);
	if (len < AHEAD_MIN)
		return;
	ahead.dst = ahead.prev[0];
	ahead.src = ahead.next;
	ahead.len = len;
	ahead.bypassed = atomic_load(&bypassed);
	start_job(ahead.dst, ahead.src, len, pool.n);
}

/* libcuda maps or unmaps: whatever the copy ahead writes or reads must still be there. */
static void mapping_changes(void)
{
	pthread_mutex_lock(&pool.busy);
	served_ahead(NULL, NULL, 0);
	ahead.prev[0] = ahead.prev[1] = NULL;
	ahead.turns = 0;
}

static void account(size_t n, unsigned long long ns)
{
	unsigned long prev = atomic_load(&st.largest);

	atomic_fetch_add(&st.calls, 1);
	atomic_fetch_add(&st.bytes, n);
	if (n >= PAR_MIN) {
		atomic_fetch_add(&st.big_calls, 1);
		atomic_fetch_add(&st.big_bytes, n);
		atomic_fetch_add(&st.ns, ns);
	}
	while (n > prev && !atomic_compare_exchange_weak(&st.largest, &prev, n))
		;
}

static void *hooked_memcpy(void *d, const void *s, size_t n)
{
	unsigned long long t0 = n >= PAR_MIN ? now_ns() : 0;

	if (pthread_mutex_trylock(&pool.busy) == 0) {
		scribble(d, s);
		if (served_ahead(d, s, n))
			;
		else if (n >= PAR_MIN && pool.n)
			parallel_copy(d, s, n);
		else
			real_memcpy(d, s, n);
		look_ahead(d, s, n);
		pthread_mutex_unlock(&pool.busy);
	} else {
		atomic_fetch_add(&bypassed, 1);
		real_memcpy(d, s, n);
	}
	account(n, t0 ? now_ns() - t0 : 0);
	return d;
}

static void *hooked_memmove(void *d, const void *s, size_t n)
{
	uintptr_t a = (uintptr_t)d, b = (uintptr_t)s;

	if (a + n <= b || b + n <= a)
		return hooked_memcpy(d, s, n);
	atomic_fetch_add(&bypassed, 1); /* past the pool: no copy ahead may stand after it */
	real_memmove(d, s, n);
	account(n, 0);
	return d;
}

static void *hooked_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
	void *r;

	mapping_changes();
	r = next_mmap(a, n, prot, flags, fd, off);
	pthread_mutex_unlock(&pool.busy);
	return r;
}

static void *hooked_mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
	void *r;

	mapping_changes();
	r = next_mmap64(a, n, prot, flags, fd, off);
	pthread_mutex_unlock(&pool.busy);
	return r;
}

static int hooked_munmap(void *a, size_t n)
{
	uintptr_t lo = (uintptr_t)ahead.lo;
	int r;

	mapping_changes();
	if (ahead.hi && (uintptr_t)a < (uintptr_t)ahead.hi && (uintptr_t)a + n > lo)
		ahead.lo = ahead.hi = NULL; /* the host copy goes: the restore is over */
	r = next_munmap(a, n);
	pthread_mutex_unlock(&pool.busy);
	return r;
}

static void *hooked_mremap(void *a, size_t n, size_t m, int flags, ...)
{
	void *to = NULL, *r;
	va_list ap;

	va_start(ap, flags);
	if (flags & MREMAP_FIXED)
		to = va_arg(ap, void *);
	va_end(ap);
	mapping_changes();
	ahead.lo = ahead.hi = NULL; /* whatever moved, read ahead no more */
	r = next_mremap(a, n, m, flags, to);
	pthread_mutex_unlock(&pool.busy);
	return r;
}

/* ---- libcuda's GOT ---- */

struct find {
	const char *lib;
	int found;
};

static bool in_relro(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;

		if (p->p_type == PT_GNU_RELRO && addr >= lo && addr < lo + p->p_memsz)
			return true;
	}
	return false;
}

/* Write a GOT slot, making a RELRO page writable for the moment; returns the old value, or NULL
 * when the page could not be made writable. */
static void *swap_slot(void **slot, void *fn, bool relro)
{
	uintptr_t page = (uintptr_t)slot & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	void *old;

	if (relro && mprotect((void *)page, psz, PROT_READ | PROT_WRITE) < 0)
		return NULL;
	old = __atomic_exchange_n(slot, fn, __ATOMIC_SEQ_CST);
	if (relro)
		mprotect((void *)page, psz, PROT_READ);
	return old;
}

/* Point a slot at fn; *next gets what it pointed at, for fn to call on. */
static void patch(const struct dl_phdr_info *info, void **slot, void *fn, void **next)
{
	bool relro = in_relro(info, (uintptr_t)slot);
	void *old;

	if (n_slots == MAX_SLOTS || !(old = swap_slot(slot, fn, relro)))
		return;
	if (next)
		*next = old;
	slots[n_slots].addr = slot;
	slots[n_slots].old = old;
	slots[n_slots].relro = relro;
	n_slots++;
}

static int hook_lib(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find *f = data;
	uintptr_t base = info->dlpi_addr;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) * rel[2] = { NULL, NULL };
	size_t relsz[2] = { 0, 0 };

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, f->lib))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		/* ld.so has made most pointers absolute; be safe either way. */
		uintptr_t v = dyn->d_un.d_ptr < base ? base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;

		switch (dyn->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)v;
			break;
		case DT_STRTAB:
			strtab = (const char *)v;
			break;
		case DT_JMPREL:
			rel[0] = (const ElfW(Rela) *)v;
			break;
		case DT_PLTRELSZ:
			relsz[0] = dyn->d_un.d_val;
			break;
		case DT_RELA:
			rel[1] = (const ElfW(Rela) *)v;
			break;
		case DT_RELASZ:
			relsz[1] = dyn->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab)
		return 1;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; rel[k] && i < relsz[k] / sizeof(ElfW(Rela)); i++) {
			unsigned type = ELF64_R_TYPE(rel[k][i].r_info);
			const char *name = strtab + symtab[ELF64_R_SYM(rel[k][i].r_info)].st_name;
			void **slot = (void **)(base + rel[k][i].r_offset);

			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			if (strcmp(name, "memcpy") == 0)
				patch(info, slot, (void *)hooked_memcpy, NULL);
			else if (strcmp(name, "memmove") == 0)
				patch(info, slot, (void *)hooked_memmove, NULL);
			else if (strcmp(name, "mmap") == 0)
				patch(info, slot, (void *)hooked_mmap, (void **)&next_mmap);
			else if (strcmp(name, "mmap64") == 0)
				patch(info, slot, (void *)hooked_mmap64, (void **)&next_mmap64);
			else if (strcmp(name, "munmap") == 0)
				patch(info, slot, (void *)hooked_munmap, (void **)&next_munmap);
			else if (strcmp(name, "mremap") == 0)
				patch(info, slot, (void *)hooked_mremap, (void **)&next_mremap);
		}
	}
	f->found = 1;
	return 1;
}

int cn_copy_arm(unsigned threads, const void *from, size_t len)
{
	/* The driver library: the one the controller loads too. */
	const char *lib = secure_getenv("CUDANAP_LIBCUDA");
	struct find f = { "libcuda.so", 0 };

	if (lib && *lib)
		f.lib = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
	memset(&st, 0, sizeof(st));
	memset(&ahead, 0, sizeof(ahead));
	if (from && len) {
		const char *c = secure_getenv("CUDANAP_COPY_CANARY");

		ahead.lo = from;
		ahead.hi = (const char *)from + len;
		ahead.canary = c && *c == '1';
	}
	if (!real_memcpy) {
		real_memcpy = (copy_fn)dlsym(RTLD_DEFAULT, "memcpy");
		real_memmove = (copy_fn)dlsym(RTLD_DEFAULT, "memmove");
	}
	if (!real_memcpy || !real_memmove || threads == 0)
		return 0;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	/* The last window's helpers are joined: start the count afresh, or new helpers would take
	 * the old generation for a new job and replay a copy into buffers that may be gone. */
	atomic_store(&pool.quit, false);
	pool.n = 0;
	atomic_store(&pool.gen, 0);
	atomic_store(&pool.pending, 0);
	atomic_store(&pool.sleepers, 0);
	for (unsigned i = 0; i + 1 < threads; i++)
		if (pthread_create(&pool.t[i], NULL, worker, (void *)(uintptr_t)i) == 0)
			pool.n++;
		else
			break;
	dl_iterate_phdr(hook_lib, &f);
	return n_slots;
}

static void put_back_slots(void)
{
	for (int i = 0; i < n_slots; i++)
		swap_slot(slots[i].addr, slots[i].old, slots[i].relro);
	n_slots = 0;
}

void cn_copy_after_fork(void)
{
	/* The helpers were the parent's threads; the locks may have been held by them. */
	put_back_slots();
	pool.n = 0;
	pthread_mutex_init(&pool.busy, NULL);
	pthread_mutex_init(&pool.mu, NULL);
	pthread_cond_init(&pool.go, NULL);
}

void cn_copy_disarm(struct cn_copy_stats *out)
{
	out->hooked = n_slots;
	put_back_slots();
	/* A driver thread may still be inside a hooked call: take the pool before stopping it. */
	pthread_mutex_lock(&pool.busy);
	served_ahead(NULL, NULL, 0);
	pthread_mutex_lock(&pool.mu);
	atomic_store(&pool.quit, true);
	pthread_cond_broadcast(&pool.go);
	pthread_mutex_unlock(&pool.mu);
	for (unsigned i = 0; i < pool.n; i++)
		pthread_join(pool.t[i], NULL);
	out->threads = pool.n ? pool.n + 1 : 0;
	pool.n = 0;
	pthread_mutex_unlock(&pool.busy);
	out->calls = atomic_load(&st.calls);
	out->bytes = atomic_load(&st.bytes);
	out->big_calls = atomic_load(&st.big_calls);
	out->big_bytes = atomic_load(&st.big_bytes);
	out->largest = atomic_load(&st.largest);
	out->big_ms = (double)atomic_load(&st.ns) / 1e6;
	out->ahead_served = ahead.served;
	out->ahead_missed = ahead.missed;
	out->ahead_bytes = ahead.served_bytes;
	out->canary = ahead.canary && ahead.hi;
	ahead.lo = ahead.hi = NULL;
}
