/* beside: which processes a restore that moves this one must not land beside. On two H100s, a rank
 * of a PyTorch job moved at a resume onto a GPU where a rank of another job ran, one that cudanap
 * had itself suspended and restored, died with that rank (both with "unspecified launch failure"):
 * over sockets in every such run, over NVLink once in ten moves; moved beside programs that were
 * never restored it ran on (docs/DISTRIBUTED.md). The cause is not known, so such moves are
 * refused unless [restore] beside_restored: the process stays suspended and can be resumed where
 * it slept, or elsewhere. Who counts: the user's processes of this status directory with a
 * restore behind them (their status's restores) or under way, when this process or that one has
 * NCCL communicators, the only kind seen to die. Which of them are on a target GPU is NVML's to
 * say, in the controller (ctl/placement.c): a process asleep holds nothing there. A resume onto
 * the GPUs it slept on is not a move, and is never refused for this. */
#define _GNU_SOURCE
#include "beside.h"

#include "comms.h"
#include "others.h"
#include "state.h"

struct found {
	int32_t *pids;
	int n, max;
	bool comms; /* this process has communicators */
};

/* One with a restore behind it, or under way: restores of one status directory take turns through
 * the driver's setup ([restore] take_turns), so one whose first restore has its memory on the GPU
 * already while this one checks is counted too. */
static bool restored(const struct cn_status *s, void *arg)
{
	struct found *f = arg;
	bool restoring =
		s->busy && (s->action == CN_ACTION_RESUME || s->action == CN_ACTION_WAKE);

	if ((s->restores || restoring) && (f->comms || s->nccl[0]))
		f->pids[f->n++] = s->pid;
	return f->n < f->max;
}

int cn_beside_list(int32_t *pids, int max)
{
	struct found f = { pids, 0, max, cn_comms_count() > 0 };

	/* No map and nowhere moved from: the restore puts it where it slept, not a move. */
	if (cn_ag.cfg.beside_restored || max <= 0 || (!cn_ag.n_pairs && !cn_ag.n_moves))
		return 0;
	cn_others_each(restored, &f);
	return f.n;
}
