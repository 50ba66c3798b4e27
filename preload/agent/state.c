/* state: what the agent knows of its process between actions (see state.h), and the changes to
 * where its memory is that the controller's answers bring. Agent thread only. */
#include "agent/state.h"

#include <stdio.h>
#include <string.h>

#include "cn_gpumap.h"
#include "hostcopy/staging.h"

struct cn_agent cn_ag;

void cn_state_gpus(const struct cn_resp *r)
{
	if (r->n_gpus) {
		cn_ag.n_gpus = r->n_gpus;
		memcpy(cn_ag.gpus, r->gpus, sizeof(cn_ag.gpus));
	}
}

/* What the process holds on which GPU, and the machine's GPUs, from the controller's answer. */
void cn_state_remember(const struct cn_resp *r)
{
	cn_ag.n_use = r->n_use;
	memcpy(cn_ag.use, r->use, sizeof(cn_ag.use));
	if (r->model[0])
		snprintf(cn_ag.model, sizeof(cn_ag.model), "%s", r->model);
	cn_state_gpus(r);
}

void cn_state_follow(const struct cn_resp *r, const struct cn_uuid *was, struct cn_uuid *now)
{
	struct cn_uuid home;

	cn_gpumap_home_of(cn_ag.moves, cn_ag.n_moves, was, &home);
	*now = home;
	for (uint32_t m = 0; m < r->n_moves; m++)
		if (cn_uuid_eq(&r->moves[m].home, &home))
			*now = r->moves[m].now;
}

/* After a restore: the GPUs the process started on are where the controller put them. The
 * process's own GPUs move with them. */
void cn_state_moved(const struct cn_resp *r)
{
	for (uint32_t u = 0; u < cn_ag.n_use; u++) {
		struct cn_uuid now;

		cn_state_follow(r, &cn_ag.use[u].uuid, &now);
		cn_ag.use[u].uuid = now;
	}
	cn_ag.n_moves = r->n_moves;
	memcpy(cn_ag.moves, r->moves, sizeof(cn_ag.moves));
	cn_state_gpus(r);
}

int cn_state_targets(const struct cn_gpumap *map, struct cn_uuid *to)
{
	struct cn_gpumap_plan p;
	char why[200];

	if (!cn_ag.n_gpus ||
	    cn_gpumap_resolve(map, cn_ag.moves, cn_ag.n_moves, cn_ag.gpus, (int)cn_ag.n_gpus,
			      cn_ag.use, cn_ag.n_use, &p, why, sizeof(why)) < 0)
		return -1;
	for (uint32_t u = 0; u < cn_ag.n_use; u++)
		to[u] = p.to[u] >= 0 ? cn_ag.gpus[p.to[u]] : cn_ag.use[u].uuid;
	return 0;
}

double cn_state_footprint_mib(void)
{
	double mib = 0;

	for (uint32_t i = 0; i < cn_ag.n_use; i++)
		mib += (double)cn_ag.use[i].bytes / (1 << 20);
	return cn_ag.n_use ? mib : -1;
}

void cn_state_unprepare(void)
{
	cn_staging_release();
	cn_ag.prepared_bytes = 0;
	cn_ag.prepared_until = 0;
}
