/* bench-ncclcall: what cudanap's NCCL interposition adds to each NCCL call, against an NCCL that
 * does nothing (docs/FILES.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../median.h"
#include "nccl_abi.h"

#define COMMS	   16
#define BLOCKS_MAX 1000

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

static const struct bench_case {
	const char *name;
	void (*run)(const struct calls *, long);
} cases[] = { { "ncclAllReduce", op },
	      { "ncclGroupStart, ncclAllReduce, ncclGroupEnd", grouped },
	      { "ncclAllReduce on the 16th communicator", last } };

/* What the command line asks for. */
struct bench_args {
	long calls;
	int blocks;
};

/* --calls and --blocks; anything else leaves blocks 0, which check_args refuses. */
static void parse_args(struct bench_args *a, int argc, char **argv)
{
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 < argc && strcmp(argv[i], "--calls") == 0)
			a->calls = atol(argv[i + 1]);
		else if (i + 1 < argc && strcmp(argv[i], "--blocks") == 0)
			a->blocks = atoi(argv[i + 1]);
		else
			a->blocks = 0;
	}
}

/* 0, or 2 with the usage said. */
static int check_args(const struct bench_args *a, const char *prog)
{
	if (a->calls < 1 || a->blocks < 1 || a->blocks > BLOCKS_MAX) {
		fprintf(stderr, "usage: %s [--calls N] [--blocks B (1 to 1000)]\n", prog);
		return 2;
	}
	return 0;
}

/* The null NCCL's calls, straight and as the app finds them, which must be cudanap's; 0, or 1
 * said. */
static int find_calls(struct calls *straight, struct calls *through, const char *prog)
{
	void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
	Dl_info where;

	if (!nccl || resolve(straight, nccl) < 0 || resolve(through, RTLD_DEFAULT) < 0) {
		fprintf(stderr, "bench-ncclcall: cannot find the null NCCL's calls: %s\n",
			dlerror());
		return 1;
	}
	if (!dladdr((void *)through->allreduce, &where) || !where.dli_fname ||
	    !strstr(where.dli_fname, "libcudanap")) {
		fprintf(stderr,
			"bench-ncclcall: the app's ncclAllReduce is %s's, not cudanap's: run it "
			"under cudanap (cudanap run -- %s)\n",
			where.dli_fname ? where.dli_fname : "?", prog);
		return 1;
	}
	return 0;
}

/* Made through the preload, as an app makes them: its registry knows every one. 0, or 1 said. */
static int make_comms(void)
{
	for (int i = 0; i < COMMS; i++) {
		ncclUniqueId id;

		memset(&id, 0, sizeof(id));
		id.internal[0] = (char)(i + 1);
		if (ncclCommInitRank(&comms[i], 1, id, 0) != NCCL_SUCCESS) {
			fprintf(stderr, "bench-ncclcall: the null NCCL made no communicator\n");
			return 1;
		}
	}
	return 0;
}

static void print_header(const struct bench_args *a)
{
	printf("NCCL calls to an NCCL that does nothing, straight and through cudanap: median of "
	       "%d blocks of %ld calls, alternating\n",
	       a->blocks, a->calls);
	printf("%-46s %12s %12s %10s\n", "call", "straight ns", "cudanap ns", "added ns");
}

/* One case timed both ways, its row printed. */
static void run_case(const struct bench_args *a, const struct bench_case *bc,
		     const struct calls *straight, const struct calls *through)
{
	double s[BLOCKS_MAX], c[BLOCKS_MAX], ms, mc;

	for (int i = 0; i < a->blocks; i++) {
		/* The order alternates, so that neither way always runs second. */
		if (i % 2) {
			c[i] = ns_per_call(bc->run, through, a->calls);
			s[i] = ns_per_call(bc->run, straight, a->calls);
		} else {
			s[i] = ns_per_call(bc->run, straight, a->calls);
			c[i] = ns_per_call(bc->run, through, a->calls);
		}
	}
	ms = cn_median(s, a->blocks);
	mc = cn_median(c, a->blocks);
	printf("%-46s %12.1f %12.1f %10.1f\n", bc->name, ms, mc, mc - ms);
}

int main(int argc, char **argv)
{
	struct bench_args a = { .calls = 1 << 20, .blocks = 15 };
	struct calls straight, through;
	int rc;

	parse_args(&a, argc, argv);
	if ((rc = check_args(&a, argv[0])) || (rc = find_calls(&straight, &through, argv[0])) ||
	    (rc = make_comms()))
		return rc;
	print_header(&a);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		run_case(&a, &cases[k], &straight, &through);
	for (int i = 0; i < COMMS; i++)
		ncclCommDestroy(comms[i]);
	return 0;
}
