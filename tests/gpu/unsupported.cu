// unsupported: programs the driver cannot checkpoint, for the gpu suite. The process must run on
// unharmed after cudanap's suspend fails or is refused.
//   unsupported managed            256 MiB of cudaMallocManaged memory
//   unsupported ipc-export         256 MiB exported with cudaIpcGetMemHandle
//   unsupported ipc-import HANDLE  opens another process's exported memory
// It prints "ready PID HANDLE" (HANDLE in hex for ipc-export, else "-"), then takes commands on
// stdin: verify -> "verify ok" | "verify bad N"; close -> "close ok" (an importer gives the memory
// back and goes on with a buffer of its own, filled the same); quit. Built twice: with the static
// runtime (nvcc's default) and with the shared one.
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			printf("error %s at line %d\n", cudaGetErrorName(e_), __LINE__);           \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

static const size_t N = 64 << 20; // words: 256 MiB

__global__ void fill(uint32_t *p, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = (uint32_t)i * 3u + 1u;
}

__global__ void count_bad(const uint32_t *p, size_t n, unsigned long long *bad)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (p[i] != (uint32_t)i * 3u + 1u)
			atomicAdd(bad, 1ull);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "managed";
	unsigned long long *bad, nbad;
	uint32_t *p = NULL;
	char line[64], hex[2 * sizeof(cudaIpcMemHandle_t) + 1] = "-";

	setvbuf(stdout, NULL, _IOLBF, 0);
	CK(cudaMalloc(&bad, sizeof(*bad)));
	if (!strcmp(mode, "managed")) {
		CK(cudaMallocManaged(&p, N * 4));
	} else if (!strcmp(mode, "ipc-export")) {
		cudaIpcMemHandle_t h;

		CK(cudaMalloc(&p, N * 4));
		CK(cudaIpcGetMemHandle(&h, p));
		for (size_t i = 0; i < sizeof(h); i++)
			sprintf(hex + 2 * i, "%02x", (unsigned char)h.reserved[i]);
	} else if (!strcmp(mode, "ipc-import") && argc > 2) {
		cudaIpcMemHandle_t h;

		for (size_t i = 0; i < sizeof(h); i++) {
			unsigned v;

			sscanf(argv[2] + 2 * i, "%2x", &v);
			h.reserved[i] = (char)v;
		}
		CK(cudaIpcOpenMemHandle((void **)&p, h, cudaIpcMemLazyEnablePeerAccess));
	} else {
		return 2;
	}
	if (strcmp(mode, "ipc-import") != 0)
		fill<<<256, 256>>>(p, N);
	CK(cudaDeviceSynchronize());
	printf("ready %d %s\n", (int)getpid(), hex);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "verify", 6)) {
			CK(cudaMemset(bad, 0, sizeof(*bad)));
			count_bad<<<256, 256>>>(p, N, bad);
			CK(cudaMemcpy(&nbad, bad, sizeof(nbad), cudaMemcpyDeviceToHost));
			if (nbad)
				printf("verify bad %llu\n", nbad);
			else
				printf("verify ok\n");
		} else if (!strncmp(line, "close", 5) && !strcmp(mode, "ipc-import")) {
			CK(cudaIpcCloseMemHandle(p));
			CK(cudaMalloc(&p, N * 4));
			fill<<<256, 256>>>(p, N);
			CK(cudaDeviceSynchronize());
			mode = "ipc-closed";
			printf("close ok\n");
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}
