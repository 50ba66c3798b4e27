/* copy: the driver's own memcpy, made parallel (non-temporal stores) while a checkpoint or restore
 * is in flight (docs/FILES.md). The agent arms it; the driver's threads copy. */
#define _GNU_SOURCE
#include "hostcopy/copy.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "clock.h"

#define MAX_THREADS 64
#define PAR_MIN	    (2ul << 20) /* smaller copies are not worth a handoff */
#define MAX_SLOTS   8

typedef void *(*copy_fn)(void *, const void *, size_t);

static struct {
	void **addr;
	void *old;
	bool relro;
} slots[MAX_SLOTS];
static int n_slots;
static copy_fn real_memcpy, real_memmove;
static void (*first_large)(void);
static atomic_bool large_seen;
static void (*copied)(void);
static atomic_bool copied_seen;
static size_t copied_at; /* large bytes after which `copied` is called */

/* The pool: one job at a time; a caller that finds it busy copies alone. The driver copies in
 * blocks of a few MiB, 50-100 us of work per thread: a condition variable's wake-up costs as much,
 * so between blocks the helpers spin (SPIN_NS at most, then they sleep on go) and the caller spins
 * for the block to be done. They exist only while a driver call is armed.
 *
 * A block is cut into chunks of CHUNK bytes that the caller and the helpers take one at a time,
 * whoever is running: a helper the scheduler has set aside does not hold the block up. Fixed
 * parts, one per thread, waited for the last helper to run; with eight processes resuming onto one
 * GPU (more copy threads than CPUs) that took 8 x 4 GiB 1.39-1.47 s against 1.32-1.35 s with
 * chunks (H100, same VM, three runs each way alternating; one process of 32 GiB 1.37-1.52 s
 * against 1.41-1.45 s). */
#define SPIN_NS	      500000
#define SPIN_PAUSE_NS 20000
#define CHUNK	      (256ul << 10)
#define MAX_CHUNKS    0xffffu /* a larger copy is made alone */
static struct {
	pthread_t t[MAX_THREADS];
	unsigned n;
	pthread_mutex_t busy, mu;
	pthread_cond_t go;
	atomic_ulong gen;     /* a new job */
	atomic_ullong next;   /* the job's gen (low 32 bits), chunks (16), the next to take (16) */
	atomic_uint done;     /* chunks copied */
	atomic_uint sleepers; /* helpers waiting on go */
	atomic_bool quit;     /* set at disarm */
	char *dst;	      /* the job, written before gen moves */
	const char *src;
	size_t len;
} pool = { .busy = PTHREAD_MUTEX_INITIALIZER,
	   .mu = PTHREAD_MUTEX_INITIALIZER,
	   .go = PTHREAD_COND_INITIALIZER };

static struct {
	atomic_ulong calls, big_calls, bytes, big_bytes, largest, ns;
} st;

/* memcpy with stores that bypass the cache, visible to the DMA that follows once it returns. */
static void stream_copy(char *d, const char *s, size_t n)
{
#if defined(__x86_64__)
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;

	if (head > n)
		head = n;
	real_memcpy(d, s, head);
	d += head, s += head, n -= head;
	for (; n >= 64; d += 64, s += 64, n -= 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	_mm_sfence();
#endif
	real_memcpy(d, s, n);
}

static unsigned long long job_word(unsigned long gen, unsigned long long chunks)
{
	return (unsigned long long)(gen & 0xffffffffu) << 32 | chunks << 16;
}

/* Take chunks of job gen until none is left. The job's generation and size are in the same word
 * as the next chunk, so a helper that comes late takes nothing, neither of its job, all taken,
 * nor of the next one. The job's fields are written again only once every chunk is done. */
static void take_chunks(unsigned long gen)
{
	unsigned long long v = atomic_load(&pool.next);

	while ((v >> 32) == (gen & 0xffffffffu) && (v & 0xffff) < ((v >> 16) & 0xffff)) {
		if (atomic_compare_exchange_weak(&pool.next, &v, v + 1)) {
			size_t off = (size_t)(v & 0xffff) * CHUNK;

			stream_copy(pool.dst + off, pool.src + off,
				    pool.len - off < CHUNK ? pool.len - off : CHUNK);
			atomic_fetch_add(&pool.done, 1);
			v = atomic_load(&pool.next);
		}
	}
}

/* One turn of a spin that waited since t0: a pause at first, then the CPU handed to whoever
 * else is runnable (several processes restoring at once have more helpers than CPUs). */
static void spin(unsigned long long t0)
{
	if (cn_clock_ns() - t0 < SPIN_PAUSE_NS) {
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
	unsigned long long t0 = cn_clock_ns();
	unsigned long g;

	while ((g = atomic_load(&pool.gen)) == seen && !atomic_load(&pool.quit)) {
		if (cn_clock_ns() - t0 < SPIN_NS) {
			spin(t0);
			continue;
		}
		pthread_mutex_lock(&pool.mu);
		atomic_fetch_add(&pool.sleepers, 1);
		while (atomic_load(&pool.gen) == seen && !atomic_load(&pool.quit))
			pthread_cond_wait(&pool.go, &pool.mu);
		atomic_fetch_sub(&pool.sleepers, 1);
		pthread_mutex_unlock(&pool.mu);
		t0 = cn_clock_ns();
	}
	return atomic_load(&pool.quit) ? 0 : g;
}

static void *worker(void *arg)
{
	unsigned long seen = 0;

	(void)arg;
	while ((seen = next_job(seen)) != 0)
		take_chunks(seen);
	return NULL;
}

static void parallel_copy(void *d, const void *s, size_t n)
{
	unsigned long gen = atomic_load(&pool.gen) + 1;
	unsigned chunks = (unsigned)((n + CHUNK - 1) / CHUNK);

	pool.dst = d;
	pool.src = s;
	pool.len = n;
	atomic_store(&pool.done, 0);
	atomic_store(&pool.next, job_word(gen, chunks));
	atomic_store(&pool.gen, gen);
	if (atomic_load(&pool.sleepers)) {
		pthread_mutex_lock(&pool.mu);
		pthread_cond_broadcast(&pool.go);
		pthread_mutex_unlock(&pool.mu);
	}
	take_chunks(gen);
	for (unsigned long long t0 = cn_clock_ns(); atomic_load(&pool.done) < chunks;)
		spin(t0);
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
	unsigned long long t0 = n >= PAR_MIN ? cn_clock_ns() : 0;

	if (n >= PAR_MIN && first_large &&
	    !atomic_load_explicit(&large_seen, memory_order_relaxed) &&
	    !atomic_exchange(&large_seen, true))
		first_large();
	if (n >= PAR_MIN && n <= MAX_CHUNKS * CHUNK && pool.n &&
	    pthread_mutex_trylock(&pool.busy) == 0) {
		parallel_copy(d, s, n);
		pthread_mutex_unlock(&pool.busy);
	} else {
		real_memcpy(d, s, n);
	}
	account(n, t0 ? cn_clock_ns() - t0 : 0);
	if (n >= PAR_MIN && copied && atomic_load(&st.big_bytes) >= copied_at &&
	    !atomic_exchange(&copied_seen, true))
		copied();
	return d;
}

static void *hooked_memmove(void *d, const void *s, size_t n)
{
	uintptr_t a = (uintptr_t)d, b = (uintptr_t)s;

	if (a + n <= b || b + n <= a)
		return hooked_memcpy(d, s, n);
	real_memmove(d, s, n);
	account(n, 0);
	return d;
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

static void patch(const struct dl_phdr_info *info, void **slot, void *fn)
{
	bool relro = in_relro(info, (uintptr_t)slot);
	void *old;

	if (n_slots == MAX_SLOTS || !(old = swap_slot(slot, fn, relro)))
		return;
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
				patch(info, slot, (void *)hooked_memcpy);
			else if (strcmp(name, "memmove") == 0)
				patch(info, slot, (void *)hooked_memmove);
		}
	}
	f->found = 1;
	return 1;
}

int cn_copy_arm(unsigned threads, void (*on_first_large)(void), void (*on_copied)(void),
		size_t expect)
{
	/* The driver library: the one the controller loads too. */
	const char *lib = secure_getenv("CUDANAP_LIBCUDA");
	struct find f = { "libcuda.so", 0 };

	if (lib && *lib)
		f.lib = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
	memset(&st, 0, sizeof(st));
	first_large = on_first_large;
	atomic_store(&large_seen, false);
	/* The driver moves all but a few small pieces of the host copy in large copies. */
	copied = expect ? on_copied : NULL;
	copied_at = expect - expect / 64;
	atomic_store(&copied_seen, false);
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
	atomic_store(&pool.next, 0);
	atomic_store(&pool.done, 0);
	atomic_store(&pool.sleepers, 0);
	for (unsigned i = 0; i + 1 < threads; i++)
		if (pthread_create(&pool.t[i], NULL, worker, NULL) == 0)
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
}
