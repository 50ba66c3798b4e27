/* Unit tests of gpu_map's meaning (config/gpumap.c): where the GPUs a job started on go, by index
 * and by UUID, from wherever they are now; the same map twice, the empty map, the refusals. */
#include <string.h>

#include "cn_gpumap.h"
#include "tap.h"

#define N 3
static unsigned char gpus[N][16];

static void map(const char *text, struct cn_gpu_pair *pairs, unsigned *n)
{
	char err[CN_ERR_LEN];

	if (cn_gpumap_parse(text, pairs, n, err, sizeof(err)) < 0)
		printf("# cannot parse '%s': %s\n", text, err);
}

/* Where each home GPU goes, as "a b c", from the map and the moves so far; "" on a refusal, with
 * why filled. */
static const char *plan(const char *text, const struct cn_gpu_move *moves, unsigned n_moves,
			char *why)
{
	static char out[32];
	struct cn_gpu_pair pairs[CN_MAX_GPUS];
	int want[N], cur[N];
	unsigned n;

	map(text, pairs, &n);
	why[0] = out[0] = '\0';
	if (cn_gpumap_want(pairs, n, (const unsigned char(*)[16])gpus, N, want, why, 200) < 0 ||
	    cn_gpumap_now(moves, n_moves, (const unsigned char(*)[16])gpus, N, cur, why, 200) < 0)
		return out;
	snprintf(out, sizeof(out), "%d %d %d", want[0], want[1], want[2]);
	return out;
}

int main(void)
{
	struct cn_gpu_move moves[CN_MAX_GPUS], none[1] = { 0 };
	char why[200], list[CN_GPU_LIST_LEN];
	int want[N] = { 1, 0, 2 }, cur[N];
	unsigned k;

	for (int i = 0; i < N; i++) {
		memset(gpus[i], 0xfa, 16);
		gpus[i][15] = (unsigned char)i;
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

	k = cn_gpumap_moves(want, (const unsigned char(*)[16])gpus, N, moves);
	ok(k == 2 && moves[0].now[15] == 1 && moves[1].now[15] == 0,
	   "after 0=1, 1=0: two GPUs away from home");
	ok(cn_gpumap_now(moves, k, (const unsigned char(*)[16])gpus, N, cur, why, sizeof(why)) ==
			   0 &&
		   cur[0] == 1 && cur[1] == 0 && cur[2] == 2,
	   "and where each home GPU is now");
	is_str(plan("0=1, 1=0", moves, k, why), "1 0 2",
	       "the same map again wants what is already so: the job stays");
	{
		unsigned char home[16];

		cn_gpumap_home_of(moves, k, gpus[1], home);
		ok(home[15] == 0, "the GPU the job is on now (1) is home GPU 0's place");
		cn_gpumap_home_of(moves, k, gpus[2], home);
		ok(home[15] == 2, "a GPU that never moved is its own home");
	}
	cn_gpumap_list((const unsigned char(*)[16])gpus, 2, (const unsigned char(*)[16])gpus, N,
		       list, sizeof(list));
	is_str(list,
	       "0=GPU-fafafafa-fafa-fafa-fafa-fafafafafa00,1=GPU-fafafafa-fafa-fafa-fafa-"
	       "fafafafafa01",
	       "the status's list: index=UUID");
	cn_gpumap_list((const unsigned char(*)[16])gpus, 1, (const unsigned char(*)[16])gpus, 0,
		       list, sizeof(list));
	is_str(list, "?=GPU-fafafafa-fafa-fafa-fafa-fafafafafa00", "an index not known is '?'");
	moves[0].now[15] = 9;
	ok(cn_gpumap_now(moves, k, (const unsigned char(*)[16])gpus, N, cur, why, sizeof(why)) < 0,
	   "a job that was on a GPU this machine does not have cannot be placed");
	return tap_done();
}
