/* state: the changes to where the process's memory is that the controller's answers bring, and
 * the host copy given back (see state.h). Agent thread. */
#include "agent/state.h"

#include <stdio.h>
#include <string.h>

#include "hostcopy/staging.h"

void cn_state_gpus(struct cn_where *w, const struct cn_resp *r)
{
	if (r->n_gpus) {
		w->n_gpus = r->n_gpus;
		memcpy(w->gpus, r->gpus, sizeof(w->gpus));
	}
}

void cn_state_remember(struct cn_where *w, const struct cn_resp *r)
{
	w->n_use = r->n_use;
	memcpy(w->use, r->use, sizeof(w->use));
	if (r->model[0])
		snprintf(w->model, sizeof(w->model), "%s", r->model);
	cn_state_gpus(w, r);
}

void cn_state_follow(const struct cn_where *w, const struct cn_resp *r, const struct cn_uuid *was,
		     struct cn_uuid *now)
{
	struct cn_uuid home;

	cn_gpumap_home_of(w->moves, w->n_moves, was, &home);
	*now = home;
	for (uint32_t m = 0; m < r->n_moves; m++)
		if (cn_uuid_eq(&r->moves[m].home, &home))
			*now = r->moves[m].now;
}

void cn_state_moved(struct cn_where *w, const struct cn_resp *r)
{
	for (uint32_t u = 0; u < w->n_use; u++) {
		struct cn_uuid now;

		cn_state_follow(w, r, &w->use[u].uuid, &now);
		w->use[u].uuid = now;
	}
	w->n_moves = r->n_moves;
	memcpy(w->moves, r->moves, sizeof(w->moves));
	cn_state_gpus(w, r);
}

int cn_state_targets(const struct cn_where *w, const struct cn_gpumap *map, struct cn_uuid *to)
{
	struct cn_gpumap_plan p;
	char why[200];

	if (!w->n_gpus || cn_gpumap_resolve(map, w->moves, w->n_moves, w->gpus, (int)w->n_gpus,
					    w->use, w->n_use, &p, why, sizeof(why)) < 0)
		return -1;
	for (uint32_t u = 0; u < w->n_use; u++)
		to[u] = p.to[u] >= 0 ? w->gpus[p.to[u]] : w->use[u].uuid;
	return 0;
}

double cn_state_footprint_mib(const struct cn_where *w)
{
	double mib = 0;

	for (uint32_t i = 0; i < w->n_use; i++)
		mib += (double)w->use[i].bytes / (1 << 20);
	return w->n_use ? mib : -1;
}

void cn_state_unprepare(struct cn_held *h)
{
	cn_staging_release();
	h->prepared_bytes = 0;
	h->prepared_until = 0;
}
