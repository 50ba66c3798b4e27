/* staging: the host copy of a checkpoint, made fast: huge pages, prefault, buffers faulted in ahead
 * (docs/FILES.md). Exports mmap, mmap64 and munmap, the preload's only symbols; it never logs. */
/* Meson sets _FILE_OFFSET_BITS=64, under which glibc's headers name our mmap "mmap64"; on 64-bit
 * targets off_t is 64 bits anyway, and we define both names ourselves. */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include "hostcopy/staging.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fanout.h"

#define PUBLIC	    __attribute__((visibility("default")))
#define HUGE_SZ	    (2ul << 20)
#define MIN_STAGED  (64ul << 20) /* smaller mappings are not the host copy */
#define MAX_THREADS CN_FANOUT_MAX

static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);

static atomic_bool armed;
static struct {
	bool hugepages, keep;
	unsigned threads;
	int file;
} want = { .file = -1 };

/* The mapping we handed the driver (staged_len as the driver asked, staged_map the whole of it),
 * and a kept or prepared one waiting for the next suspend. */
static void *staged;
static size_t staged_len, staged_map;
static void *spare;
static size_t spare_len;
/* The host copy the driver unmapped at the end of a restore, freed once the resume is reported,
 * by a thread of its own: unmapping 8.5 GiB of huge pages took 29 ms of the restore on an H100,
 * and done by the agent it held up a signal sent right after the resume (64 MiB on an H100:
 * 1.8 ms from signal to the first driver call instead of 0.14). The unmap and the pointer's
 * clearing happen under a lock that fork waits for, so that a child never holds the copy, nor
 * unmaps an address the parent has reused. */
static _Atomic(void *) retired;
static size_t retired_len;
static pthread_mutex_t retiring = PTHREAD_MUTEX_INITIALIZER;
static struct cn_staging_stats stats;

static void *sys_mmap(void *a, size_t l, int prot, int flags, int fd, off_t off)
{
	if (real_mmap)
		return real_mmap(a, l, prot, flags, fd, off);
	return (void *)syscall(SYS_mmap, a, l, prot, flags, fd, off);
}

static int sys_munmap(void *a, size_t l)
{
	if (real_munmap)
		return real_munmap(a, l);
	return (int)syscall(SYS_munmap, a, l);
}

/* Prefault threads take the buffer in CHUNK pieces, in address order, from one counter (on an
 * H100 VM this faulted 8.5 GiB in 0.35 s where one contiguous part per thread took 0.9 s). */
#define CHUNK (32ul << 20)
struct prefault_job {
	char *p;
	size_t len;
	atomic_size_t next; /* the next chunk to take */
};

static void prefault(void *arg, unsigned part)
{
	struct prefault_job *job = arg;
	size_t o;

	(void)part;
	while ((o = atomic_fetch_add(&job->next, CHUNK)) < job->len) {
		char *q = job->p + o;
		size_t l = job->len - o < CHUNK ? job->len - o : CHUNK;

		/* One write per 4 KiB page if the kernel predates MADV_POPULATE_WRITE (5.14). */
		if (madvise(q, l, MADV_POPULATE_WRITE) < 0)
			for (size_t i = 0; i < l; i += 4096)
				((volatile char *)q)[i] = 0;
	}
}

/* Fault p in with n threads, this one among them. */
static void prefault_parallel(char *p, size_t len, unsigned n)
{
	struct prefault_job job = { .p = p, .len = len };

	atomic_init(&job.next, 0);
	cn_fanout(n, prefault, &job);
}

/* The host copy in the hibernate file: its blocks reserved first, so that a full disk shows now
 * (the copy then goes to RAM) and not as a SIGBUS in the driver's copy. No prefault: the pages
 * are to leave RAM. */
static void *stage_file(size_t len, int prot)
{
	int e = posix_fallocate(want.file, 0, (off_t)len);
	void *p;

	if (e == 0) {
		p = sys_mmap(NULL, len, prot, MAP_SHARED, want.file, 0);
		if (p != MAP_FAILED) {
			stats.file = true;
			return p;
		}
		e = errno;
	}
	stats.file_err = e;
	if (ftruncate(want.file, 0) < 0) /* give back what a partial fallocate took */
		stats.file_err = e;
	return MAP_FAILED;
}

static void drop_spare(void)
{
	if (spare)
		sys_munmap(spare, spare_len);
	spare = NULL;
	spare_len = 0;
}

/* len bytes of private anonymous memory, 2 MiB-aligned so that huge pages can back all of it,
 * advised to huge pages when asked and prefaulted by threads (none: not at all). */
static void *fresh(size_t len, bool hugepages, unsigned threads, bool *huge)
{
	size_t big = len + HUGE_SZ;
	char *raw, *p;

	raw = sys_mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return MAP_FAILED;
	p = (char *)(((uintptr_t)raw + HUGE_SZ - 1) & ~(HUGE_SZ - 1));
	if (p > raw)
		sys_munmap(raw, (size_t)(p - raw));
	if (raw + big > p + len)
		sys_munmap(p + len, (size_t)(raw + big - (p + len)));
	*huge = hugepages && madvise(p, len, MADV_HUGEPAGE) == 0;
	if (threads)
		prefault_parallel(p, len, threads);
	return p;
}

/* A kept or prepared buffer serves a copy that fits in it and fills at least half of it. */
static bool spare_fits(size_t len)
{
	return spare && len <= spare_len && len >= spare_len / 2;
}

static void *hand_out(void *p, size_t len, size_t map)
{
	stats.bytes = len;
	stats.addr = staged = p;
	staged_len = len;
	staged_map = map;
	return p;
}

/* The host copy: in the hibernate file, in a kept or prepared buffer, or fresh. */
static void *stage(size_t len, int prot)
{
	double t0 = cn_clock_ms();
	void *p;

	if (want.file >= 0 && (p = stage_file(len, prot)) != MAP_FAILED) {
		drop_spare(); /* its RAM is what hibernating is for */
		stats.prefault_ms = cn_clock_ms() - t0;
		return hand_out(p, len, len);
	}
	if (spare_fits(len)) {
		p = spare;
		spare = NULL;
		stats.reused = true;
		return hand_out(p, len, spare_len);
	}
	drop_spare();
	p = fresh(len, want.hugepages, want.threads, &stats.huge);
	if (p == MAP_FAILED)
		return MAP_FAILED;
	stats.threads = want.threads;
	stats.prefault_ms = cn_clock_ms() - t0;
	return hand_out(p, len, len);
}

static bool is_host_copy(void *addr, size_t len, int prot, int flags, int fd)
{
	return !addr && fd == -1 && len >= MIN_STAGED && prot == (PROT_READ | PROT_WRITE) &&
	       (flags & (MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE)) ==
		       (MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE) &&
	       !(flags & (MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_HUGETLB | MAP_SHARED));
}

PUBLIC void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (atomic_load_explicit(&armed, memory_order_relaxed) &&
	    is_host_copy(addr, len, prot, flags, fd)) {
		int saved = errno;
		void *p = stage(len, prot);

		if (p != MAP_FAILED) {
			errno = saved;
			return p;
		}
		errno = saved; /* fall through: the driver's own request, unchanged */
	}
	return sys_mmap(addr, len, prot, flags, fd, off);
}

PUBLIC void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

PUBLIC int munmap(void *addr, size_t len)
{
	if (addr && addr == staged && len == staged_len) {
		double t0 = cn_clock_ms();

		staged = NULL;
		if (want.keep && !stats.file) {
			spare = addr;
			spare_len = staged_map;
		} else {
			cn_staging_free_retired();
			retired_len = staged_map;
			atomic_store(&retired, addr);
		}
		stats.unmap_ms = cn_clock_ms() - t0;
		return 0;
	}
	return sys_munmap(addr, len);
}

void cn_staging_init(void)
{
	real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	real_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
}

bool cn_staging_thp_available(void)
{
	char buf[128] = "";
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n <= 0 || !strstr(buf, "[never]");
}

void cn_staging_arm(bool hugepages, unsigned threads, bool keep, int file)
{
	memset(&stats, 0, sizeof(stats));
	want.hugepages = hugepages;
	want.threads = threads > MAX_THREADS ? MAX_THREADS : threads;
	want.keep = keep && file < 0;
	want.file = file;
	atomic_store(&armed, true);
}

void cn_staging_disarm(struct cn_staging_stats *out)
{
	atomic_store(&armed, false);
	*out = stats;
}

void cn_staging_before_fork(void)
{
	pthread_mutex_lock(&retiring);
}

void cn_staging_after_fork_parent(void)
{
	pthread_mutex_unlock(&retiring);
}

void cn_staging_after_fork(void)
{
	pthread_mutex_init(&retiring, NULL);
	atomic_store(&armed, false);
	drop_spare(); /* the parent's, shared copy-on-write: not a buffer the child asked for */
	cn_staging_free_retired();
}

void cn_staging_free_retired(void)
{
	void *p;

	if (!atomic_load(&retired))
		return;
	pthread_mutex_lock(&retiring);
	if ((p = atomic_load(&retired)) != NULL) {
		sys_munmap(p, retired_len);
		atomic_store(&retired, NULL);
	}
	pthread_mutex_unlock(&retiring);
}

static void *reaper(void *arg)
{
	(void)arg;
	cn_staging_free_retired();
	return NULL;
}

void cn_staging_free_retired_soon(void)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	bool started = false;

	if (!atomic_load(&retired))
		return;
	/* No signal handler may run on it: one that forked would wait for the lock it holds. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_attr_init(&a) == 0) {
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&t, &a, reaper, NULL) == 0;
		pthread_attr_destroy(&a);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!started)
		cn_staging_free_retired();
}

int cn_staging_prepare(size_t len, bool hugepages, unsigned threads, struct cn_staging_stats *out)
{
	double t0 = cn_clock_ms();
	void *p;

	memset(out, 0, sizeof(*out));
	len = (len + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
	if (spare_fits(len)) {
		out->reused = true;
	} else {
		drop_spare();
		p = fresh(len, hugepages, threads ? threads : 1, &out->huge);
		if (p == MAP_FAILED)
			return -errno;
		spare = p;
		spare_len = len;
		out->threads = threads ? threads : 1;
	}
	out->bytes = spare_len;
	out->addr = spare;
	out->prefault_ms = cn_clock_ms() - t0;
	return 0;
}

size_t cn_staging_release(void)
{
	size_t n = spare ? spare_len : 0;

	drop_spare();
	return n;
}

void cn_staging_unmap_stats(struct cn_staging_stats *out)
{
	*out = stats;
}
