// spinprobe: how the GPU shares itself between two processes' contexts, for bench-preempt.
//   spinprobe spin MS      kernels that each spin MS ms on every SM, one after another, each one's
//                          time and result printed
//   spinprobe probe        tiny kernels, each waited for; once a second the longest wait printed
//   spinprobe restore PID  the driver's checkpoint calls on PID alone: lock, checkpoint, restore,
//   spinprobe lock PID     unlock (lock: lock and unlock only); 0, or 1 with the failing call said
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__device__ unsigned long long gpu_ns(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void spin(unsigned long long ns, int *out)
{
	unsigned long long t0 = gpu_ns();

	while (gpu_ns() - t0 < ns) {
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = 1;
}

__global__ void tiny(int *out)
{
	out[threadIdx.x] += 1;
}

static int driver(const char *what, int pid)
{
	bool full = strcmp(what, "restore") == 0;
	CUcheckpointLockArgs lock;
	const char *call = "cuInit", *name;
	CUresult r;

	memset(&lock, 0, sizeof(lock));
	lock.timeoutMs = 30000;
	r = cuInit(0);
	if (r == CUDA_SUCCESS) {
		call = "lock";
		r = cuCheckpointProcessLock(pid, &lock);
	}
	if (r == CUDA_SUCCESS && full) {
		call = "checkpoint";
		r = cuCheckpointProcessCheckpoint(pid, NULL);
	}
	if (r == CUDA_SUCCESS && full) {
		call = "restore";
		r = cuCheckpointProcessRestore(pid, NULL);
	}
	if (r == CUDA_SUCCESS) {
		call = "unlock";
		r = cuCheckpointProcessUnlock(pid, NULL);
	}
	if (r == CUDA_SUCCESS)
		return 0;
	cuGetErrorName(r, &name);
	fprintf(stderr, "spinprobe: %s of %d: %s\n", call, pid, name);
	return 1;
}

int main(int argc, char **argv)
{
	cudaDeviceProp p;
	int *d;

	if (argc == 3 && (strcmp(argv[1], "restore") == 0 || strcmp(argv[1], "lock") == 0))
		return driver(argv[1], atoi(argv[2]));
	if (!(argc == 3 && strcmp(argv[1], "spin") == 0) && !(argc == 2 && strcmp(argv[1], "probe") == 0)) {
		fprintf(stderr, "usage: spinprobe spin MS | probe | restore PID | lock PID\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cudaMalloc(&d, 64 << 20) != cudaSuccess || cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
		fprintf(stderr, "spinprobe: no GPU\n");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	if (argc == 3) {
		unsigned long long ns = (unsigned long long)(atof(argv[2]) * 1e6);

		for (int i = 0;; i++) {
			double t = now_ms();
			cudaError_t e;

			spin<<<p.multiProcessorCount, 32>>>(ns, d);
			e = cudaDeviceSynchronize();
			printf("spin %d %.1f ms %s\n", i, now_ms() - t, cudaGetErrorString(e));
			if (e != cudaSuccess)
				return 1;
		}
	}
	for (double worst = 0, last = now_ms();;) {
		double t = now_ms(), took;
		cudaError_t e;

		tiny<<<1, 32>>>(d);
		e = cudaDeviceSynchronize();
		took = now_ms() - t;
		if (e != cudaSuccess) {
			printf("probe error %s\n", cudaGetErrorString(e));
			return 1;
		}
		if (took > worst)
			worst = took;
		if (now_ms() - last >= 1000) {
			printf("probe %.1f ms\n", worst);
			worst = 0;
			last = now_ms();
		}
	}
}
