/* fakectl: call one checkpoint function of a driver library on a pid and print the result name,
 * e.g. `fakectl libfakecuda.so unlock 4711` -> CUDA_ERROR_ILLEGAL_STATE. Lets the tests check the
 * fake driver's model against the real driver's measured behaviour. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_abi.h"

int main(int argc, char **argv)
{
	static const char *const fns[][2] = {
		{ "state", "cuCheckpointProcessGetState" },
		{ "lock", "cuCheckpointProcessLock" },
		{ "checkpoint", "cuCheckpointProcessCheckpoint" },
		{ "restore", "cuCheckpointProcessRestore" },
		{ "unlock", "cuCheckpointProcessUnlock" },
	};
	CUresult (*name)(CUresult, const char **);
	CUresult (*fn)(int, void *);
	uint64_t args[8] = { 0 };
	const char *s = "?";
	void *h;
	int pid, st = -1;
	CUresult r;

	if (argc != 4)
		return 2;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h)
		return 2;
	name = (CUresult(*)(CUresult, const char **))dlsym(h, "cuGetErrorName");
	pid = atoi(argv[3]);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (strcmp(argv[2], fns[i][0]) != 0)
			continue;
		fn = (CUresult(*)(int, void *))dlsym(h, fns[i][1]);
		r = fn(pid, i == 0 ? (void *)&st : (void *)args);
		name(r, &s);
		if (i == 0 && r == CUDA_SUCCESS)
			printf("%s %d\n", s, st);
		else
			printf("%s\n", s);
		return 0;
	}
	return 2;
}
