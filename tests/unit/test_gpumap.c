/* Unit tests of gpu_map's meaning (config/gpumap.c): where the GPUs a job started on go, by index
 * and by UUID, from wherever they are now; the same map twice, the empty map, the refusals. */
#include <string.h>

#include "cn_gpumap.h"
#include "tap.h"

#define N 3
static struct cn_uuid gpus[N];

static void map(const char *text, struct cn_gpumap *m)
{
	char err[CN_ERR_LEN];

	if (cn_gpumap_parse(text, m, err, sizeof(err)) < 0)
		printf("# cannot parse '%s': %s\n", text, err);
}

/* Where each home GPU goes, as "a b c", from the map and the moves so far (cn_gpumap_resolve);
 * "" on a refusal, with why filled. */
static const char *plan(const char *text, const struct cn_gpu_move *moves, unsigned n_moves,
			char *why)
{
	static char out[32];
	struct cn_gpumap_plan p;
	struct cn_gpumap m;

	map(text, &m);
	why[0] = out[0] = '\0';
	if (cn_gpumap_resolve(&m, moves, n_moves, gpus, N, NULL, 0, &p, why, 200) < 0)
		return out;
	snprintf(out, sizeof(out), "%d %d %d", p.want[0], p.want[1], p.want[2]);
	return out;
}

/* Where wake_on = any sends a process on four GPUs whose parts are on at[] and need 10 each, with
 * these free bytes: the map's text, or "none". */
static const char *elsewhere(const int *cur, const int *at, int k, unsigned long long f0,
			     unsigned long long f1, unsigned long long f2, unsigned long long f3,
			     const unsigned char *fits)
{
	static char out[64];
	const unsigned long long need[4] = { 10, 10, 10, 10 }, free_bytes[4] = { f0, f1, f2, f3 };
	int want[4];

	struct cn_gpumap m;

	if (!cn_gpumap_elsewhere(cur, 4, at, need, k, free_bytes, fits, want))
		return "none";
	cn_gpumap_of_want(want, 4, &m);
	cn_gpumap_write(&m, out, sizeof(out));
	return out;
}

static void test_elsewhere(void)
{
	const int home[4] = { 0, 1, 2, 3 }, swapped[4] = { 1, 0, 2, 3 }, on01[2] = { 0, 1 };
	const unsigned char all[4] = { 1, 1, 1, 1 }, not2[4] = { 1, 1, 0, 1 };

	is_str(elsewhere(home, on01, 1, 5, 20, 20, 20, all), "0=1, 1=0",
	       "one GPU, no room: the first other GPU with room, the two swapped");
	is_str(elsewhere(home, on01, 2, 5, 20, 20, 20, all), "0=2, 2=0",
	       "two GPUs, no room on GPU 0: its part goes to GPU 2, the part on GPU 1 stays");
	is_str(elsewhere(home, on01, 2, 5, 5, 20, 20, all), "0=2, 1=3, 2=0, 3=1",
	       "no room on either: 0,1 -> 2,3");
	is_str(elsewhere(home, on01, 2, 5, 20, 20, 20, not2), "0=3, 3=0",
	       "a GPU of another model is passed over");
	is_str(elsewhere(home, on01, 2, 5, 20, 5, 5, all), "none", "no room anywhere: none");
	is_str(elsewhere(home, on01, 2, 20, 20, 5, 5, all), "none",
	       "room where it is: nothing moves");
	is_str(elsewhere(swapped, on01, 2, 5, 20, 20, 20, all), "0=1, 1=2, 2=0",
	       "moved before (homes 0,1 on GPUs 1,0): the part on GPU 0 (home 1's) goes to GPU 2");
	{
		const unsigned long long need[2] = { 10, 30 }, f[4] = { 5, 5, 20, 40 };
		struct cn_gpumap m;
		int want[4];
		char out[64];

		ok(cn_gpumap_elsewhere(home, 4, on01, need, 2, f, all, want) == 1,
		   "two sizes: placed");
		cn_gpumap_of_want(want, 4, &m);
		cn_gpumap_write(&m, out, sizeof(out));
		is_str(out, "0=2, 1=3, 2=1, 3=0",
		       "the largest part first: 30 onto GPU 3, 10 onto GPU 2");
	}
}

/* A job moved by 0=1, 1=0: its moves, where each home GPU is now, the same map again, the empty
 * map, the GPU it is on now and its home. */
static void test_moves(void)
{
	struct cn_gpu_move moves[CN_MAX_GPUS];
	int want[N] = { 1, 0, 2 }, cur[N];
	char why[200];
	unsigned k;

	k = cn_gpumap_moves(want, gpus, N, moves);
	ok(k == 2 && moves[0].now.b[15] == 1 && moves[1].now.b[15] == 0,
	   "after 0=1, 1=0: two GPUs away from home");
	ok(cn_gpumap_now(moves, k, gpus, N, cur, why, sizeof(why)) == 0 && cur[0] == 1 &&
		   cur[1] == 0 && cur[2] == 2,
	   "and where each home GPU is now");
	is_str(plan("0=1, 1=0", moves, k, why), "1 0 2",
	       "the same map again wants what is already so: the job stays");
	{
		struct cn_gpu_use use[1] = { { .uuid = gpus[1], .bytes = 8 } };
		struct cn_gpumap_plan p;
		struct cn_gpumap m;

		map("", &m);
		ok(cn_gpumap_resolve(&m, moves, k, gpus, N, use, 1, &p, why, sizeof(why)) == 0 &&
			   p.moved && p.to[0] == 0,
		   "an empty map brings the memory home: what is on GPU 1 (home 0's) goes to GPU "
		   "0");
		map("0=1, 1=0", &m);
		ok(cn_gpumap_resolve(&m, moves, k, gpus, N, use, 1, &p, why, sizeof(why)) == 0 &&
			   !p.moved && p.to[0] == 1,
		   "the same map again: nothing moves, the memory stays on GPU 1");
	}
	{
		struct cn_uuid home;

		cn_gpumap_home_of(moves, k, &gpus[1], &home);
		ok(home.b[15] == 0, "the GPU the job is on now (1) is home GPU 0's place");
		cn_gpumap_home_of(moves, k, &gpus[2], &home);
		ok(home.b[15] == 2, "a GPU that never moved is its own home");
	}
	ok(cn_uuid_eq(&moves[0].now, &gpus[1]) && !cn_uuid_eq(&gpus[0], &gpus[1]),
	   "UUIDs equal by their bytes");
	moves[0].now.b[15] = 9;
	ok(cn_gpumap_now(moves, k, gpus, N, cur, why, sizeof(why)) < 0,
	   "a job that was on a GPU this machine does not have cannot be placed");
}

int main(void)
{
	struct cn_gpu_move none[1] = { 0 };
	char why[200], list[CN_GPU_LIST_LEN];

	for (int i = 0; i < N; i++) {
		memset(gpus[i].b, 0xfa, sizeof(gpus[i].b));
		gpus[i].b[15] = (unsigned char)i;
	}
	is_str(plan("", none, 0, why), "0 1 2", "an empty map: every GPU home");
	is_str(plan("0=1, 1=0", none, 0, why), "1 0 2", "0=1, 1=0 swaps the two, GPU 2 stays");
	is_str(plan("GPU-fafafafa-fafa-fafa-fafa-fafafafafa00=2, 2=0", none, 0, why), "2 1 0",
	       "a UUID names the same GPU as its index");
	is_str(plan("2=0", none, 0, why), "",
	       "a map that puts a GPU where another stays is refused");
	is_str(why, "gpu_map moves GPU 2 onto GPU 0 but says nothing of where GPU 0 goes; add 0=N",
	       "saying which pair to add");
	is_str(plan("0=3", none, 0, why), "", "an index beyond the machine is refused");
	is_str(why, "gpu_map names GPU 3, but this machine has GPUs 0-2", "saying so");

	test_moves();
	cn_gpumap_list(gpus, 2, gpus, N, list, sizeof(list));
	is_str(list,
	       "0=GPU-fafafafa-fafa-fafa-fafa-fafafafafa00,1=GPU-fafafafa-fafa-fafa-fafa-"
	       "fafafafafa01",
	       "the status's list: index=UUID");
	cn_gpumap_list(gpus, 1, gpus, 0, list, sizeof(list));
	is_str(list, "?=GPU-fafafafa-fafa-fafa-fafa-fafafafafa00", "an index not known is '?'");
	ok(cn_uuid_index(gpus, N, &gpus[2]) == 2 && cn_uuid_index(gpus, 2, &gpus[2]) == -1,
	   "a GPU's index among the machine's, -1 when absent");
	test_elsewhere();
	return tap_done();
}
