/* beside: the processes beside which a restore must not put this one. On two H100s, two PyTorch
 * jobs whose ranks cudanap had suspended and restored, running on the same GPUs, died together
 * ("unspecified launch failure" in every rank's watchdog, the driver's log saying "CTX SWITCH
 * TIMEOUT" on both GPUs): over sockets in 4 of 9 runs where both were resumed where they slept
 * and in every run where they were moved onto each other's GPUs, over NVLink once in ten moves.
 * One job restored beside programs without communicators, or beside a job never restored, ran on
 * (docs/DISTRIBUTED.md). The cause is not known, so such a restore is refused unless [restore]
 * beside_restored: the process stays suspended and can be resumed once the other job is asleep or
 * gone, or onto other GPUs. Who counts, when this process has communicators: the user's
 * processes of this status directory with communicators, a restore behind them (their status's
 * restores) or under way, and no communicator shared with this one (a rank of the same job is not
 * another job). Which of them are on a target GPU is NVML's to say, in the controller
 * (ctl/placement.c): a process asleep holds nothing there. */
#define _GNU_SOURCE
#include "beside.h"

#include <string.h>

#include "comms.h"
#include "others.h"
#include "state.h"

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

/* Another job's process with a restore behind it, or under way: restores of one status directory
 * take turns through the driver's setup ([restore] take_turns), so one whose first restore has
 * its memory on the GPU already while this one checks is counted too. */
static bool restored(const struct cn_status *s, void *arg)
{
	struct found *f = arg;
	bool restoring =
		s->busy && (s->action == CN_ACTION_RESUME || s->action == CN_ACTION_WAKE);

	if ((s->restores || restoring) && (s->nccl[0] || s->nccl_keys[0]) &&
	    !share(f->keys, s->nccl_keys))
		f->pids[f->n++] = s->pid;
	return f->n < f->max;
}

int cn_beside_list(int32_t *pids, int max)
{
	struct found f = { pids, 0, max, "" };

	if (cn_ag.cfg.beside_restored || max <= 0 || cn_comms_count() == 0)
		return 0;
	cn_comms_keys(f.keys, sizeof(f.keys));
	cn_others_each(restored, &f);
	return f.n;
}
