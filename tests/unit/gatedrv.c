/* gatedrv: a driver for test_gate, named by CUDANAP_LIBCUDA: cuStreamQuery counts the threads
 * inside it and, while the test says the gate is closed, counts a violation; cuCtxSynchronize
 * does too, counts its calls and stays inside for the milliseconds set by gatedrv_hold;
 * cuTexRefSetMipmapLevelBias checks its float argument. */
#include <stdatomic.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT atomic_int gatedrv_inside, gatedrv_violations, gatedrv_closed;
EXPORT atomic_long gatedrv_calls;
EXPORT atomic_int gatedrv_hold_ms;
EXPORT atomic_long gatedrv_syncs;

EXPORT int cuStreamQuery(void *stream);
EXPORT int cuStreamQuery(void *stream)
{
	(void)stream;
	atomic_fetch_add(&gatedrv_inside, 1);
	if (atomic_load(&gatedrv_closed))
		atomic_fetch_add(&gatedrv_violations, 1);
	atomic_fetch_add(&gatedrv_calls, 1);
	atomic_fetch_sub(&gatedrv_inside, 1);
	return 0;
}

EXPORT int cuCtxSynchronize(void);
EXPORT int cuCtxSynchronize(void)
{
	struct timespec ts = { 0, (long)atomic_load(&gatedrv_hold_ms) * 1000000 };

	if (atomic_load(&gatedrv_closed))
		atomic_fetch_add(&gatedrv_violations, 1);
	atomic_fetch_add(&gatedrv_syncs, 1);
	nanosleep(&ts, NULL);
	return 0;
}

EXPORT int cuTexRefSetMipmapLevelBias(void *tex, float bias);
EXPORT int cuTexRefSetMipmapLevelBias(void *tex, float bias)
{
	(void)tex;
	return bias == 0.75f ? 0 : 1;
}
