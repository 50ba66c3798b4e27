/* beside: which processes a restore may share its GPUs with. A context that the driver has
 * restored is no longer preempted: measured on H100s, driver 580, through the driver's own
 * checkpoint API with no cudanap in the process, its kernels run to their end before another
 * process's context gets the GPU, and one that runs past about 5 s while another context has
 * work there is stopped by the driver (Xid 109, CTX SWITCH TIMEOUT: "unspecified launch failure").
 * An NCCL kernel runs until its peer ranks arrive, so a restored rank that waits a few seconds in
 * a collective (a peer saving a checkpoint, loading data) beside any other process's work loses
 * its job; two restored NCCL jobs on the same GPUs wait on each other and both die
 * (docs/DISTRIBUTED.md). So, unless [restore] beside_restored: a process with communicators is
 * restored only onto GPUs where no process but its own job's runs (itself and the processes of
 * this status directory that share a communicator with it: a rank's stray context on another
 * rank's GPU is of its job), and any other process is not restored onto GPUs where a rank of an
 * NCCL job runs that cudanap restored (a restore behind it, or under way). Refused, a process
 * stays suspended, to be resumed once the GPU is free of the other, or onto other GPUs. Who is on
 * a target GPU is NVML's to say, in the controller (ctl/placement.c): a process asleep holds
 * nothing there, and a graphics process (a display server) counts as much as a compute one. A
 * process that starts on a restored rank's GPU asks cudanap nothing; the rank's status says it,
 * the next time it is asked (cn_beside_describe). */
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
