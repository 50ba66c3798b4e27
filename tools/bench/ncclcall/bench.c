/* bench-ncclcall: what cudanap's NCCL interposition adds to each NCCL call an app makes. The same
 * calls go to an NCCL that does nothing (null.c), once straight to it and once through the
 * preload's definitions, in one process, in alternating blocks; it prints the median time of a
 * call each way and the difference. Run it under cudanap: `ninja -C build bench-ncclcall`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../median.h"
#include "nccl_abi.h"

#define COMMS 16

typedef ncclResult_t (*group_fn)(void);
typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
				     ncclComm_t, cudaStream_t);

struct calls {
	group_fn start, end;
	allreduce_fn allreduce;
};

static ncclComm_t comms[COMMS];

/* The calls as a DDP step makes them: one collective at a time, on its first communicator. */
static void op(const struct calls *c, long n)
{
	for (long i = 0; i < n; i++)
		c->allreduce(NULL, NULL, 0, 0, 0, comms[0], NULL);
}

/* As FSDP and coalesced collectives make them: one operation in a group. */
static void grouped(const struct calls *c, long n)
{
	for (long i = 0; i < n; i++) {
		c->start();
		c->allreduce(NULL, NULL, 0, 0, 0, comms[0], NULL);
		c->end();
	}
}

/* The registry's worst case here: the newest of many communicators. */
static void last(const struct calls *c, long n)
{
	for (long i = 0; i < n; i++)
		c->allreduce(NULL, NULL, 0, 0, 0, comms[COMMS - 1], NULL);
}

static double ns_per_call(void (*run)(const struct calls *, long), const struct calls *c, long n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	run(c, n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

static int resolve(struct calls *c, void *handle)
{
	c->start = (group_fn)dlsym(handle, "ncclGroupStart");
	c->end = (group_fn)dlsym(handle, "ncclGroupEnd");
	c->allreduce = (allreduce_fn)dlsym(handle, "ncclAllReduce");
	return c->start && c->end && c->allreduce ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(const struct calls *, long);
	} cases[] = { { "ncclAllReduce", op },
		      { "ncclGroupStart, ncclAllReduce, ncclGroupEnd", grouped },
		      { "ncclAllReduce on the 16th communicator", last } };
	long calls = 1 << 20;
	int blocks = 15;
	struct calls straight, through;
	void *nccl;
	Dl_info where;

	for (int i = 1; i < argc; i += 2) {
		if (i + 1 < argc && strcmp(argv[i], "--calls") == 0)
			calls = atol(argv[i + 1]);
		else if (i + 1 < argc && strcmp(argv[i], "--blocks") == 0)
			blocks = atoi(argv[i + 1]);
		else
			blocks = 0;
	}
	if (calls < 1 || blocks < 1 || blocks > 1000) {
		fprintf(stderr, "usage: %s [--calls N] [--blocks B (1 to 1000)]\n", argv[0]);
		return 2;
	}
	nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
	if (!nccl || resolve(&straight, nccl) < 0 || resolve(&through, RTLD_DEFAULT) < 0) {
		fprintf(stderr, "bench-ncclcall: cannot find the null NCCL's calls: %s\n",
			dlerror());
		return 1;
	}
	if (!dladdr((void *)through.allreduce, &where) || !where.dli_fname ||
	    !strstr(where.dli_fname, "libcudanap")) {
		fprintf(stderr,
			"bench-ncclcall: the app's ncclAllReduce is %s's, not cudanap's: run it "
			"under cudanap (cudanap run -- %s)\n",
			where.dli_fname ? where.dli_fname : "?", argv[0]);
		return 1;
	}
	/* Made through the preload, as an app makes them: its registry knows every one. */
	for (int i = 0; i < COMMS; i++) {
		ncclUniqueId id;

		memset(&id, 0, sizeof(id));
		id.internal[0] = (char)(i + 1);
		if (ncclCommInitRank(&comms[i], 1, id, 0) != NCCL_SUCCESS) {
			fprintf(stderr, "bench-ncclcall: the null NCCL made no communicator\n");
			return 1;
		}
	}

	printf("NCCL calls to an NCCL that does nothing, straight and through cudanap: median of "
	       "%d "
	       "blocks of %ld calls, alternating\n",
	       blocks, calls);
	printf("%-46s %12s %12s %10s\n", "call", "straight ns", "cudanap ns", "added ns");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		double a[1000], b[1000], ma, mb;

		for (int i = 0; i < blocks; i++) {
			/* The order alternates, so that neither way always runs second. */
			if (i % 2) {
				b[i] = ns_per_call(cases[k].run, &through, calls);
				a[i] = ns_per_call(cases[k].run, &straight, calls);
			} else {
				a[i] = ns_per_call(cases[k].run, &straight, calls);
				b[i] = ns_per_call(cases[k].run, &through, calls);
			}
		}
		ma = cn_median(a, blocks);
		mb = cn_median(b, blocks);
		printf("%-46s %12.1f %12.1f %10.1f\n", cases[k].name, ma, mb, mb - ma);
	}
	for (int i = 0; i < COMMS; i++)
		ncclCommDestroy(comms[i]);
	return 0;
}
