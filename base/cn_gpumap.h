/* gpumap: what [restore] gpu_map says and means on a machine's GPUs, as pure functions for the
 * controller's restore and the agent's status (docs/FILES.md). */
#ifndef CN_GPUMAP_H
#define CN_GPUMAP_H

#include <stddef.h>

#include "cn_config.h"

#include <stdbool.h>
#include <stdint.h>

/* A GPU the job started on (home), and the GPU it is on now. */
struct cn_gpu_move {
	struct cn_uuid home, now;
};

/* What the process held on one GPU when it was checkpointed, as NVML counts it. */
struct cn_gpu_use {
	struct cn_uuid uuid;
	uint64_t bytes;
};

/* want[h]: the index of the GPU that home GPU h goes to, for each of the n GPUs. Pairs name home
 * GPUs by index or UUID; an unnamed GPU stays home, unless another goes there: then the map is
 * ambiguous. 0, or -1 with why. */
int cn_gpumap_want(const struct cn_gpumap *map, const struct cn_uuid *gpus, int n, int *want,
		   char *why, size_t len);

/* cur[h]: the index where home GPU h is now, from the moves so far. 0, or -1 with why when a move
 * names a GPU this machine does not have. */
int cn_gpumap_now(const struct cn_gpu_move *moves, unsigned n_moves, const struct cn_uuid *gpus,
		  int n, int *cur, char *why, size_t len);

/* The moves once every home GPU h is on GPU want[h]: those not at home. Returns their count. */
unsigned cn_gpumap_moves(const int *want, const struct cn_uuid *gpus, int n,
			 struct cn_gpu_move *out);

/* [nap] wake_on = any: where a process goes whose memory did not fit back where it is. The k parts
 * of its memory are on GPUs at[u] (indices) and each needs need[u] bytes free; GPU g has free[g]
 * bytes free and can take a part if fits[g] (the same model). A part that fits where it is stays;
 * the others, the largest first, each go to the first GPU with room that holds no part. cur[h]:
 * where home GPU h is now, for each of the n GPUs. Fills want[h], where each home GPU goes (a
 * permutation: a GPU taken by a part sends whatever was there to a GPU a part left) and returns 1;
 * 0 when some part has no room anywhere, or none moves. */
int cn_gpumap_elsewhere(const int *cur, int n, const int *at, const unsigned long long *need, int k,
			const unsigned long long *free_bytes, const unsigned char *fits, int *want);

/* want as a map by index (the GPUs that leave home, "0=2, 2=0"): what a restore takes. */
void cn_gpumap_of_want(const int *want, int n, struct cn_gpumap *map);

/* The map resolved once, on a machine's n GPUs, for a process whose home GPUs moved as moves say
 * and which held use[u] on its GPUs: where each home GPU goes (want), where it is now (cur),
 * whether any moves, and the GPU the memory of each use[u] goes to (to[u], -1 when that GPU is
 * not on this machine). The controller restores by it, the agent says by it where a resume goes.
 * 0, or -1 with why. */
struct cn_gpumap_plan {
	int want[CN_MAX_GPUS], cur[CN_MAX_GPUS], to[CN_MAX_GPUS];
	bool moved;
};
int cn_gpumap_resolve(const struct cn_gpumap *map, const struct cn_gpu_move *moves,
		      unsigned n_moves, const struct cn_uuid *gpus, int n,
		      const struct cn_gpu_use *use, unsigned n_use, struct cn_gpumap_plan *p,
		      char *why, size_t len);

/* The home GPU of the GPU now (the identity when it never moved). */
void cn_gpumap_home_of(const struct cn_gpu_move *moves, unsigned n_moves, const struct cn_uuid *now,
		       struct cn_uuid *home);

/* "0=GPU-...,1=GPU-..." for k UUIDs, each with its index among the n GPUs ('?' when absent);
 * at most CN_GPU_LIST_MAX of them. */
#define CN_GPU_LIST_MAX 16
#define CN_GPU_LIST_LEN (CN_GPU_LIST_MAX * 45)
void cn_gpumap_list(const struct cn_uuid *uuids, int k, const struct cn_uuid *gpus, int n,
		    char *out, size_t len);

/* ---- the map's text ---- */

/* "old=new, old=new": each side an index or "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". Repeated
 * sources or targets written the same way are refused; the controller checks the rest. The one
 * parser: the INI's, the command line's, a one-shot's note. */
int cn_gpumap_parse(const char *s, struct cn_gpumap *map, char *err, size_t errlen);
/* The map as its text again ("0=2, GPU-...=1"), for a note and the log. */
void cn_gpumap_write(const struct cn_gpumap *map, char *out, size_t len);

#endif
