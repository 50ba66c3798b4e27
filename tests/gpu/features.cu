// features: CUDA features that must survive a suspend, for the gpu suite. Commands on stdin:
//   prepare  capture and replay a graph, allocate from a stream-ordered pool, fill pinned host
//            memory, record an event, then leave work in flight on 4 streams   -> "prepared"
//   check    finish the in-flight work, replay the graph, use the pool and the pinned memory,
//            time across the suspend with the events                          -> "check ok ..."
//   quit
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			printf("check fail %s at line %d\n", cudaGetErrorName(e_), __LINE__);      \
			fflush(stdout);                                                            \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

__global__ void add_one(int *p, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] += 1;
}

__global__ void fill(uint32_t *p, size_t n, uint32_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = (uint32_t)(i * 2654435761u) ^ seed;
}

__global__ void count_bad(const uint32_t *p, size_t n, uint32_t seed, unsigned long long *bad)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (p[i] != ((uint32_t)(i * 2654435761u) ^ seed))
			atomicAdd(bad, 1ull);
}

__global__ void spin_then_mark(int *marks, int slot, unsigned long long ns)
{
	unsigned long long t0, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
	marks[slot] = slot + 100;
}

static const size_t GN = 1 << 24, PN = 64 << 20; // graph buffer ints, pool bytes
static const size_t HN = 16 << 20;		 // pinned words (64 MiB)
static cudaStream_t s[4];
static cudaGraphExec_t exec;
static int *gbuf, *marks;
static uint32_t *pool_buf, *pin, *dpin;
static unsigned long long *bad;
static cudaEvent_t e0;

static int prepare(void)
{
	cudaGraph_t g;
	cudaMemPool_t mp;
	uint64_t keep = UINT64_MAX;

	for (int i = 0; i < 4; i++)
		CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
	CK(cudaMalloc(&gbuf, GN * sizeof(int)));
	CK(cudaMemset(gbuf, 0, GN * sizeof(int)));
	CK(cudaMalloc(&marks, 4 * sizeof(int)));
	CK(cudaMemset(marks, 0, 4 * sizeof(int)));
	CK(cudaMalloc(&bad, sizeof(*bad)));
	CK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
	for (int i = 0; i < 10; i++)
		add_one<<<256, 256, 0, s[0]>>>(gbuf, GN);
	CK(cudaStreamEndCapture(s[0], &g));
	CK(cudaGraphInstantiate(&exec, g, 0));
	CK(cudaGraphLaunch(exec, s[0]));
	// Stream-ordered pool that keeps its memory between frees.
	CK(cudaDeviceGetDefaultMemPool(&mp, 0));
	CK(cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &keep));
	CK(cudaMallocAsync(&pool_buf, PN, s[1]));
	fill<<<256, 256, 0, s[1]>>>(pool_buf, PN / 4, 7);
	CK(cudaHostAlloc(&pin, HN * 4, cudaHostAllocDefault));
	for (size_t i = 0; i < HN; i++)
		pin[i] = (uint32_t)(i * 2654435761u) ^ 9;
	CK(cudaMalloc(&dpin, HN * 4));
	CK(cudaMemcpyAsync(dpin, pin, HN * 4, cudaMemcpyHostToDevice, s[2]));
	CK(cudaEventCreate(&e0));
	CK(cudaDeviceSynchronize());
	CK(cudaEventRecord(e0, s[0]));
	for (int i = 0; i < 4; i++) // in flight when the suspend signal comes
		spin_then_mark<<<1, 1, 0, s[i]>>>(marks, i, 300000000ull);
	printf("prepared\n");
	fflush(stdout);
	return 0;
}

static int check(void)
{
	int m[4], h;
	unsigned long long nbad = 0;
	uint32_t *more;
	cudaEvent_t e1;
	float ms = 0;

	for (int i = 0; i < 4; i++)
		CK(cudaStreamSynchronize(s[i]));
	CK(cudaMemcpy(m, marks, sizeof(m), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 4; i++)
		if (m[i] != i + 100) {
			printf("check fail stream %d work lost\n", i);
			return 1;
		}
	for (int i = 0; i < 3; i++)
		CK(cudaGraphLaunch(exec, s[0]));
	CK(cudaStreamSynchronize(s[0]));
	CK(cudaMemcpy(&h, gbuf + GN - 1, sizeof(h), cudaMemcpyDeviceToHost));
	if (h != 40) {
		printf("check fail graph gave %d, not 40\n", h);
		return 1;
	}
	CK(cudaMemset(bad, 0, sizeof(*bad)));
	count_bad<<<256, 256>>>(pool_buf, PN / 4, 7, bad);
	CK(cudaMallocAsync(&more, PN, s[1]));
	fill<<<256, 256, 0, s[1]>>>(more, PN / 4, 8);
	CK(cudaFreeAsync(more, s[1]));
	CK(cudaFreeAsync(pool_buf, s[1]));
	count_bad<<<256, 256>>>(dpin, HN, 9, bad);
	memset(pin, 0, HN * 4);
	CK(cudaMemcpyAsync(pin, dpin, HN * 4, cudaMemcpyDeviceToHost, s[2]));
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(&nbad, bad, sizeof(nbad), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < HN; i++)
		nbad += pin[i] != ((uint32_t)(i * 2654435761u) ^ 9);
	if (nbad) {
		printf("check fail %llu words differ in pool or pinned memory\n", nbad);
		return 1;
	}
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e1, s[0]));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	printf("check ok graph pool pinned streams events %.0f ms\n", ms);
	fflush(stdout);
	return 0;
}

int main(void)
{
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	CK(cudaFree(0));
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "prepare", 7) && prepare())
			return 1;
		if (!strncmp(line, "check", 5) && check())
			return 1;
		if (!strncmp(line, "quit", 4))
			break;
	}
	return 0;
}
