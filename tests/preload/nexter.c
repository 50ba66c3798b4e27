/* nexter: a library preloaded after libcudanap.so, as another interposer would be. Its getppid()
 * calls the next definition, found by dlsym(RTLD_NEXT) in its constructor, which runs before the
 * preload's; there it also takes a driver function by dlsym on the fake driver's handle
 * ($NEXTER_DRIVER). Were RTLD_NEXT taken from the preload's place instead of this library's, the
 * next getppid would be this one, and the first call would never return. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static pid_t (*next_getppid)(void);
static void *early;

__attribute__((constructor)) static void init(void)
{
	const char *drv = getenv("NEXTER_DRIVER");
	void *h = drv ? dlopen(drv, RTLD_NOW | RTLD_NOLOAD) : NULL;

	next_getppid = (pid_t(*)(void))dlsym(RTLD_NEXT, "getppid");
	early = h ? dlsym(h, "cuStreamQuery") : NULL;
}

EXPORT pid_t getppid(void)
{
	return next_getppid ? next_getppid() : -1;
}

/* A name of the driver's form that is not the driver's (as cuFile's are): dlsym returns it bare. */
EXPORT int cuNexterProbe(void);
EXPORT int cuNexterProbe(void)
{
	return 7;
}

EXPORT void *nexter_next(void);
EXPORT void *nexter_next(void)
{
	return (void *)next_getppid;
}

EXPORT void *nexter_early(void);
EXPORT void *nexter_early(void)
{
	return early;
}
