/* gpumap: [restore] gpu_map resolved against a machine's GPUs (see cn_gpumap.h). */
#include "cn_gpumap.h"

#include <stdio.h>
#include <string.h>

int cn_gpumap_index(const unsigned char (*gpus)[16], int n, const unsigned char uuid[16])
{
	for (int i = 0; i < n; i++)
		if (memcmp(gpus[i], uuid, 16) == 0)
			return i;
	return -1;
}

static int resolve_ref(const struct cn_gpu_ref *r, const unsigned char (*gpus)[16], int n,
		       char *why, size_t len)
{
	char s[CN_UUID_STR_LEN];
	int i;

	if (r->index >= 0) {
		if (r->index < n)
			return r->index;
		snprintf(why, len, "gpu_map names GPU %d, but this machine has GPUs 0-%d", r->index,
			 n - 1);
		return -1;
	}
	if ((i = cn_gpumap_index(gpus, n, r->uuid)) >= 0)
		return i;
	cn_uuid_format(r->uuid, s);
	snprintf(why, len, "gpu_map names %s, which this machine does not have", s);
	return -1;
}

int cn_gpumap_want(const struct cn_gpu_pair *pairs, unsigned n_pairs,
		   const unsigned char (*gpus)[16], int n, int *want, char *why, size_t len)
{
	int src_of[CN_MAX_GPUS];

	for (int i = 0; i < n; i++)
		src_of[i] = want[i] = -1;
	for (unsigned p = 0; p < n_pairs; p++) {
		int a = resolve_ref(&pairs[p].from, gpus, n, why, len);
		int b = a < 0 ? -1 : resolve_ref(&pairs[p].to, gpus, n, why, len);

		if (b < 0)
			return -1;
		if (want[a] >= 0 || src_of[b] >= 0) {
			snprintf(why, len,
				 "gpu_map moves GPU %d twice or puts two GPUs onto GPU %d", a, b);
			return -1;
		}
		want[a] = b;
		src_of[b] = a;
	}
	/* The driver wants every GPU placed: the unnamed ones stay, where that is unambiguous. */
	for (int i = 0; i < n; i++) {
		if (want[i] >= 0)
			continue;
		if (src_of[i] >= 0) {
			snprintf(
				why, len,
				"gpu_map moves GPU %d onto GPU %d but says nothing of where GPU %d "
				"goes; add %d=N",
				src_of[i], i, i, i);
			return -1;
		}
		want[i] = i;
	}
	return 0;
}

int cn_gpumap_now(const struct cn_gpu_move *moves, unsigned n_moves,
		  const unsigned char (*gpus)[16], int n, int *cur, char *why, size_t len)
{
	for (int i = 0; i < n; i++)
		cur[i] = i;
	for (unsigned m = 0; m < n_moves; m++) {
		int h = cn_gpumap_index(gpus, n, moves[m].home);
		int w = cn_gpumap_index(gpus, n, moves[m].now);

		if (h < 0 || w < 0) {
			char s[CN_UUID_STR_LEN];

			cn_uuid_format(h < 0 ? moves[m].home : moves[m].now, s);
			snprintf(why, len, "the job was on %s, which this machine does not have",
				 s);
			return -1;
		}
		cur[h] = w;
	}
	return 0;
}

unsigned cn_gpumap_moves(const int *want, const unsigned char (*gpus)[16], int n,
			 struct cn_gpu_move *out)
{
	unsigned k = 0;

	for (int h = 0; h < n; h++)
		if (want[h] != h) {
			memcpy(out[k].home, gpus[h], 16);
			memcpy(out[k].now, gpus[want[h]], 16);
			k++;
		}
	return k;
}

void cn_gpumap_home_of(const struct cn_gpu_move *moves, unsigned n_moves,
		       const unsigned char now[16], unsigned char home[16])
{
	memcpy(home, now, 16);
	for (unsigned m = 0; m < n_moves; m++)
		if (memcmp(moves[m].now, now, 16) == 0)
			memcpy(home, moves[m].home, 16);
}

void cn_gpumap_list(const unsigned char (*uuids)[16], int k, const unsigned char (*gpus)[16], int n,
		    char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < k && i < CN_GPU_LIST_MAX && o < len; i++) {
		char s[CN_UUID_STR_LEN];

		int at = cn_gpumap_index(gpus, n, uuids[i]);
		char idx[8] = "?";

		if (at >= 0)
			snprintf(idx, sizeof(idx), "%d", at);
		cn_uuid_format(uuids[i], s);
		o += (size_t)snprintf(out + o, len - o, "%s%s=%s", i ? "," : "", idx, s);
	}
}
