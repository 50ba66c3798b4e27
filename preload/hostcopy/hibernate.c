/* hibernate: the host copy of a checkpoint in an unnamed file, so that a sleeping job holds no RAM
 * for it (docs/FILES.md). The agent thread; its writer thread only calls sync_file_range. */
#define _GNU_SOURCE
#include "hostcopy/hibernate.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_config.h"
#include "cn_dirs.h"
#include "fanout.h"

#define MAX_THREADS 64

static struct {
	int fd;
	char dir[PATH_MAX];
	pthread_t writer;
	bool writing;
	atomic_bool stop;
} h = { .fd = -1 };

int cn_hibernate_open(const char *dir, char *err, size_t len)
{
	int fd;

	cn_hibernate_close();
	if (cn_dirs_private(dir, "hibernate dir", false, err, len) < 0)
		return -1;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* A filesystem without O_TMPFILE: a name for a moment, unlinked at once. */
		char path[PATH_MAX + 32];

		snprintf(path, sizeof(path), "%s/cudanap-%d-XXXXXX", dir, (int)getpid());
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
	}
	if (fd < 0) {
		snprintf(err, len, "hibernate dir %s: cannot create a file: %s", dir,
			 strerror(errno));
		return -1;
	}
	h.fd = fd;
	snprintf(h.dir, sizeof(h.dir), "%s", dir);
	return fd;
}

int cn_hibernate_fd(void)
{
	return h.fd;
}

const char *cn_hibernate_dir(void)
{
	return h.dir;
}

uint64_t cn_hibernate_free_bytes(const char *dir)
{
	struct statvfs v;

	if (statvfs(dir, &v) < 0)
		return UINT64_MAX;
	return (uint64_t)v.f_bavail * v.f_frsize;
}

static void *writer(void *arg)
{
	(void)arg;
	while (!atomic_load(&h.stop)) {
		sync_file_range(h.fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		usleep(20000);
	}
	return NULL;
}

void cn_hibernate_writer_start(void)
{
	atomic_store(&h.stop, false);
	h.writing = h.fd >= 0 && pthread_create(&h.writer, NULL, writer, NULL) == 0;
}

void cn_hibernate_writer_stop(void)
{
	if (!h.writing)
		return;
	atomic_store(&h.stop, true);
	pthread_join(h.writer, NULL);
	h.writing = false;
}

/* The copy into anonymous memory at the same address: mapped, filled, moved over the file's. */
static int to_ram(void *addr, size_t len)
{
	void *anon = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (anon == MAP_FAILED)
		return -errno;
	memcpy(anon, addr, len);
	if (mremap(anon, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED) {
		int e = errno;

		munmap(anon, len);
		return -e;
	}
	return 0;
}

size_t cn_hibernate_resident(const void *addr, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, in = 0;
	unsigned char *v = malloc(n);

	if (!v || mincore((void *)addr, len, v) < 0) {
		free(v);
		return len;
	}
	for (size_t i = 0; i < n; i++)
		in += v[i] & 1;
	free(v);
	return in * page;
}

uint64_t cn_hibernate_disk_bytes(void)
{
	struct stat st;

	return h.fd >= 0 && fstat(h.fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

int cn_hibernate_settle(void *addr, size_t len, struct cn_hibernate_stats *s, char *err,
			size_t errlen)
{
	double t0 = cn_clock_ms();
	int e = 0;

	memset(s, 0, sizeof(*s));
	cn_hibernate_writer_stop();
	if (sync_file_range(h.fd, 0, 0,
			    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
				    SYNC_FILE_RANGE_WAIT_AFTER) < 0 ||
	    fdatasync(h.fd) < 0)
		e = errno;
	s->write_ms = cn_clock_ms() - t0;
	if (e) {
		int r = to_ram(addr, len);

		snprintf(err, errlen, "hibernate: writing to %s failed: %s; the copy %s", h.dir,
			 strerror(e),
			 r == 0 ? "stays in RAM"
				: "stays in the file's page cache (no RAM for it)");
		if (r == 0)
			cn_hibernate_close();
		return -1;
	}
	t0 = cn_clock_ms();
	madvise(addr, len, MADV_PAGEOUT);
	posix_fadvise(h.fd, 0, 0, POSIX_FADV_DONTNEED);
	s->pageout_ms = cn_clock_ms() - t0;
	return 0;
}

struct readback {
	char *addr;
	size_t len, per;
	int err[MAX_THREADS];
};

static void read_part(void *arg, unsigned i)
{
	struct readback *rb = arg;
	size_t o = (size_t)i * rb->per;
	char *p = rb->addr + o;
	size_t len = o >= rb->len ? 0 : rb->len - o < rb->per ? rb->len - o : rb->per;

	if (len && madvise(p, len, MADV_POPULATE_READ) < 0) {
		rb->err[i] = errno;
		/* Before 5.14: touch a byte per page; a read error then kills with SIGBUS, so the
		 * populate path is the only one that can report it. */
		if (rb->err[i] == EINVAL) {
			rb->err[i] = 0;
			for (size_t k = 0; k < len; k += 4096)
				(void)((volatile char *)p)[k];
		}
	}
}

int cn_hibernate_readback(void *addr, size_t len, unsigned threads, double *ms, char *err,
			  size_t errlen)
{
	struct readback rb = { .addr = addr, .len = len };
	size_t chunk = 64ul << 20;
	unsigned n = threads ? (threads > MAX_THREADS ? MAX_THREADS : threads) : 1, k;
	double t0 = cn_clock_ms();
	int e = 0;

	/* n parts of whole 64 MiB chunks; fewer when the copy is small. */
	rb.per = ((len + n - 1) / n + chunk - 1) / chunk * chunk;
	k = rb.per ? (unsigned)((len + rb.per - 1) / rb.per) : 0;
	cn_fanout(k, read_part, &rb);
	for (unsigned i = 0; i < k && !e; i++)
		e = rb.err[i];
	*ms = cn_clock_ms() - t0;
	if (e) {
		snprintf(err, errlen, "hibernate: reading back from %s failed: %s", h.dir,
			 strerror(e));
		return -1;
	}
	return 0;
}

void cn_hibernate_close(void)
{
	cn_hibernate_writer_stop();
	if (h.fd >= 0)
		close(h.fd);
	h.fd = -1;
}

void cn_hibernate_after_fork(void)
{
	/* The child shares the file; its own suspend opens another. */
	if (h.fd >= 0)
		close(h.fd);
	h.fd = -1;
	h.writing = false;
}
