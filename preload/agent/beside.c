/* beside: which processes a restore may share its GPUs with, since the driver no longer preempts
 * a restored context (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/beside.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cn_gpumap.h"
#include "nccl/comms.h"
#include "agent/others.h"

struct found {
	int32_t *pids;
	int n, max;
	char keys[sizeof(((struct cn_status *)0)->nccl_keys)]; /* this process's */
};

/* Whether two "KEY,KEY" lists name a communicator in common. */
static bool share(const char *a, const char *b)
{
	for (const char *p = a; *p;) {
		size_t n = strcspn(p, ",");

		for (const char *q = b; *q;) {
			size_t m = strcspn(q, ",");

			if (m == n && strncmp(p, q, n) == 0)
				return true;
			q += m + (q[m] == ',');
		}
		p += n + (p[n] == ',');
	}
	return false;
}

/* A rank of this process's job: a communicator in common. */
static bool same_job(const struct cn_status *s, void *arg)
{
	struct found *f = arg;

	if (share(f->keys, s->nccl_keys))
		f->pids[f->n++] = s->pid;
	return f->n < f->max;
}

/* A rank of an NCCL job with a restore behind it, or under way: restores of one status directory
 * take turns through the driver's setup ([restore] take_turns), so one whose first restore has
 * its memory on the GPU already while this one checks is counted too. */
static bool restored(const struct cn_status *s, void *arg)
{
	struct found *f = arg;
	bool restoring = s->busy && (s->action == CN_ACTION_RESUME || s->action == CN_ACTION_WAKE);

	if ((s->restores || restoring) && (s->nccl[0] || s->nccl_keys[0]))
		f->pids[f->n++] = s->pid;
	return f->n < f->max;
}

int cn_beside_list(const struct cn_config *c, int32_t *pids, int max, bool *only)
{
	struct found f = { pids, 0, max, "" };

	*only = false;
	if (c->beside_restored || max <= 0)
		return 0;
	if (cn_comms_count() == 0) {
		cn_others_each(c->status_dir, restored, &f);
		return f.n;
	}
	*only = true;
	f.pids[f.n++] = (int32_t)getpid();
	cn_comms_keys(f.keys, sizeof(f.keys));
	if (f.keys[0] && f.n < f.max)
		cn_others_each(c->status_dir, same_job, &f);
	return f.n;
}

bool cn_beside_watched(const struct cn_config *c, unsigned long restores)
{
	return !c->beside_restored && restores && cn_comms_count() > 0;
}

void cn_beside_describe(const struct cn_config *c, const struct cn_resp *r, unsigned long restores,
			char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	if (cn_beside_watched(c, restores) && r->state == CN_STATE_RUNNING)
		for (uint32_t i = 0; i < r->n_use && i < CN_MAX_GPUS; i++) {
			int k = cn_uuid_index(r->gpus, (int)r->n_gpus, &r->use[i].uuid);

			if (k >= 0 && k < CN_MAX_GPUS && r->gpu_beside[k] && o < len)
				o += (size_t)snprintf(out + o, len - o, "%sGPU %d runs pid %d",
						      o ? ", " : "", k, (int)r->gpu_beside[k]);
		}
}
