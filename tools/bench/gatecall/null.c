/* null: a CUDA driver that does nothing, for bench-gatecall on a machine without a GPU
 * (docs/FILES.md). */
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuDriverGetVersion(int *v);
EXPORT int cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			  unsigned bz, unsigned shmem, void *s, void **params, void **extra);
EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			  unsigned bz, unsigned shmem, void *s, void **params, void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)s;
	return params != extra;
}

EXPORT int cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shmem, void *s, void **params,
			       void **extra);
EXPORT int cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shmem, void *s, void **params,
			       void **extra)
{
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
			       int *status);
EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
			       int *status)
{
	(void)version;
	*pfn = strcmp(symbol, "cuDriverGetVersion") == 0 ? (void *)cuDriverGetVersion
	       : strcmp(symbol, "cuLaunchKernel") == 0
		       ? ((flags & 2) ? (void *)cuLaunchKernel_ptsz : (void *)cuLaunchKernel)
		       : NULL;
	if (status)
		*status = *pfn ? 0 : 1;
	return *pfn ? 0 : 500;
}
