// holdmem: a CUDA program for the gpu suite and the demo. It holds GIB GiB of GPU memory filled
// with a pattern that can be verified bit for bit, and answers one line per command on stdin:
//   verify    compare every word with the pattern        -> "verify ok" | "verify bad N"
//   work      a fresh allocation, kernel and copy back   -> "work ok" | "work bad"
//   spin MS   launch a kernel that runs MS milliseconds   -> "spin launched"
//   sync      wait for the GPU                            -> "sync ok"
//   launch N  N empty kernel launches, then a sync        -> "launch US" (microseconds)
//   quit
// With $HOLDMEM_TICKS set, a CPU thread rewrites a counter in that file every 20 ms: the proof that
// the process's CPU threads run on while its CUDA is checkpointed.
// With --driver it allocates and checks through the driver API only (cuMemAlloc, cuMemcpy), the
// way programs that never link cudart look to cudanap. With --all-gpus it holds GIB GiB on every
// GPU it can see, and verify checks them all.
#include <cuda.h>
#include <cuda_runtime.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vector>

static __host__ __device__ uint64_t pattern(uint64_t i)
{
	uint64_t z = i + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

__global__ void fill(uint64_t *p, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = pattern(i);
}

__global__ void check(const uint64_t *p, size_t n, unsigned long long *bad)
{
	unsigned long long mine = 0;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		mine += p[i] != pattern(i);
	if (mine)
		atomicAdd(bad, mine);
}

__global__ void empty(void)
{
}

__global__ void spin(unsigned long long ns)
{
	unsigned long long t0, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			printf("error %s at line %d\n", cudaGetErrorName(e_), __LINE__);           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define DK(x)                                                                                      \
	do {                                                                                       \
		CUresult e_ = (x);                                                                 \
		if (e_ != CUDA_SUCCESS) {                                                          \
			const char *s_ = "?";                                                      \
			cuGetErrorName(e_, &s_);                                                   \
			printf("error %s at line %d\n", s_, __LINE__);                             \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void *ticker(void *path)
{
	char tmp[4096];

	snprintf(tmp, sizeof(tmp), "%s.tmp", (const char *)path);
	for (unsigned long n = 1;; n++) {
		FILE *f = fopen(tmp, "w");

		if (f) {
			fprintf(f, "%lu\n", n);
			fclose(f);
			rename(tmp, (const char *)path); // a reader never sees a half-written file
		}
		usleep(20000);
	}
	return NULL;
}

static const size_t CHUNK = 64ull << 20; // bytes per host copy in driver mode

static void driver_io(CUdeviceptr d, size_t bytes, bool write, unsigned long long *bad)
{
	std::vector<uint64_t> h(CHUNK / 8);

	for (size_t off = 0; off < bytes; off += CHUNK) {
		size_t n = (bytes - off < CHUNK ? bytes - off : CHUNK) / 8, base = off / 8;

		if (write) {
			for (size_t i = 0; i < n; i++)
				h[i] = pattern(base + i);
			DK(cuMemcpyHtoD(d + off, h.data(), n * 8));
		} else {
			DK(cuMemcpyDtoH(h.data(), d + off, n * 8));
			for (size_t i = 0; i < n; i++)
				*bad += h[i] != pattern(base + i);
		}
	}
}

int main(int argc, char **argv)
{
	bool driver = argc > 1 && strcmp(argv[1], "--driver") == 0;
	bool all = argc > 1 && strcmp(argv[1], "--all-gpus") == 0;
	double gib = argc > 1 + (driver || all) ? atof(argv[1 + (driver || all)]) : 1.0;
	size_t bytes = (size_t)(gib * (1ull << 30)) & ~(size_t)7, words = bytes / 8;
	unsigned long long *bad_d[16] = { NULL }, bad = 0;
	uint64_t *rt[16] = { NULL };
	int ndev = 1;
	CUdeviceptr dp = 0;
	char line[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("HOLDMEM_TICKS")) {
		pthread_t t;

		pthread_create(&t, NULL, ticker, getenv("HOLDMEM_TICKS"));
	}
	if (driver) {
		CUdevice dev;
		CUcontext ctx;

		DK(cuInit(0));
		DK(cuDeviceGet(&dev, 0));
		DK(cuDevicePrimaryCtxRetain(&ctx, dev));
		DK(cuCtxSetCurrent(ctx));
		DK(cuMemAlloc(&dp, bytes));
		driver_io(dp, bytes, true, NULL);
	} else {
		if (all)
			CK(cudaGetDeviceCount(&ndev));
		ndev = ndev > 16 ? 16 : ndev;
		for (int d = ndev - 1; d >= 0; d--) { // ends on device 0
			CK(cudaSetDevice(d));
			CK(cudaMalloc(&rt[d], bytes));
			CK(cudaMalloc(&bad_d[d], sizeof(*bad_d[d])));
			fill<<<1024, 256>>>(rt[d], words);
			CK(cudaDeviceSynchronize());
		}
	}
	printf("ready %d %zu\n", (int)getpid(), bytes);
	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "verify", 6) == 0) {
			bad = 0;
			if (driver) {
				driver_io(dp, bytes, false, &bad);
			} else {
				for (int d = ndev - 1; d >= 0; d--) {
					unsigned long long b = 0;

					CK(cudaSetDevice(d));
					CK(cudaMemset(bad_d[d], 0, sizeof(*bad_d[d])));
					check<<<1024, 256>>>(rt[d], words, bad_d[d]);
					CK(cudaMemcpy(&b, bad_d[d], sizeof(b),
						      cudaMemcpyDeviceToHost));
					bad += b;
				}
			}
			if (bad)
				printf("verify bad %llu\n", bad);
			else
				printf("verify ok\n");
		} else if (strncmp(line, "work", 4) == 0) {
			std::vector<uint64_t> h(1 << 20);
			uint64_t *w;
			bool good = true;

			CK(cudaMalloc(&w, h.size() * 8));
			fill<<<256, 256>>>(w, h.size());
			CK(cudaMemcpy(h.data(), w, h.size() * 8, cudaMemcpyDeviceToHost));
			CK(cudaFree(w));
			for (size_t i = 0; i < h.size(); i++)
				good &= h[i] == pattern(i);
			printf("work %s\n", good ? "ok" : "bad");
		} else if (strncmp(line, "spin ", 5) == 0) {
			spin<<<1, 1>>>(strtoull(line + 5, NULL, 10) * 1000000ull);
			CK(cudaGetLastError());
			printf("spin launched\n");
		} else if (strncmp(line, "launch ", 7) == 0) {
			long n = atol(line + 7);
			struct timespec a, b;

			CK(cudaDeviceSynchronize());
			clock_gettime(CLOCK_MONOTONIC, &a);
			for (long i = 0; i < n; i++)
				empty<<<1, 32>>>();
			CK(cudaDeviceSynchronize());
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("launch %.0f\n",
			       (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
		} else if (strncmp(line, "sync", 4) == 0) {
			CK(cudaDeviceSynchronize());
			printf("sync ok\n");
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		} else {
			printf("unknown\n");
		}
	}
	return 0;
}
