/* ask: one process asked to nap for another program (root's note and a pidfd signal), and its
 * answer, read from its status. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cn_notes.h"
#include "cn_proc.h"
#include "cn_status.h"
#include "cn_words.h"
#include "pager.h"

int ask_nap(const struct scan_proc *p, int for_pid, const char *for_user, uint64_t mib, int gpu)
{
	union sigval v = { .sival_int = CN_SIGVAL_NAP };
	char note[128], back[128];

	if (p->pick.kind == CN_PP_LIGHT)
		return cn_proc_signal(p->pick.pid, p->starttime, p->sig, NULL) == 0 ? 0 : -1;
	snprintf(note, sizeof(note), "%d %llu %d %u %s\n", for_pid, (unsigned long long)(mib >> 20),
		 gpu, pg_policy.min_idle_s, for_user);
	if (cn_notes_put(p->dir, p->pick.pid, CN_NOTE_NAP_FOR, note) < 0)
		return -1;
	if (cn_proc_signal(p->pick.pid, p->starttime, p->sig, &v) == 0)
		return 0;
	cn_notes_take(p->dir, p->pick.pid, CN_NOTE_NAP_FOR, back, sizeof(back));
	return -1;
}

enum ask_answer ask_answer(const struct scan_proc *p)
{
	struct cn_status s;
	char note[128];

	if (cn_status_read(p->dir, p->pick.pid, &s) < 0 || s.starttime != p->starttime)
		return ASK_NOT; /* gone, or its status no longer believed */
	if (s.busy)
		return ASK_BUSY;
	if (s.seq <= p->seq)
		return ASK_WAIT;
	if (p->pick.kind == CN_PP_LIGHT)
		return s.state == CN_STATE_CHECKPOINTED ? ASK_NAPPED : ASK_NOT;
	/* it takes the note once its answer is written: before, what its status says may be the
	 * end of another action of its own */
	if (cn_notes_read(p->dir, p->pick.pid, CN_NOTE_NAP_FOR, note, sizeof(note)) >= 0)
		return ASK_BUSY;
	return s.state == CN_STATE_CHECKPOINTED || cn_status_light_held(&s) ? ASK_NAPPED : ASK_NOT;
}

void ask_take_back(const struct scan_proc *p)
{
	char back[128];

	if (p->pick.kind != CN_PP_LIGHT)
		cn_notes_take(p->dir, p->pick.pid, CN_NOTE_NAP_FOR, back, sizeof(back));
}
