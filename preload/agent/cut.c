/* cut: how the ranks of a job agree, through the command line that suspends or resumes them all
 * (tools/ncclcut.c), on the point where their communicators are suspended or resumed. Files beside
 * the status file: the rank says (nccl-cut: its counts; nccl-ready: it is at the cut), the command
 * line answers (nccl-go: the counts to reach; nccl-commit: every rank is ready; nccl-abort: give
 * up). A rank waits with a bound: a plain signal, with no command line behind it, is refused. Runs
 * in the agent thread. */
#define _GNU_SOURCE
#include "cut.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_state.h"
#include "clock.h"
#include "cn_status.h"

static const char *const names[] = { "nccl-cut", "nccl-go", "nccl-ready", "nccl-commit",
				     "nccl-abort" };

int cn_cut_say(const char *what, const char *text)
{
	return cn_note_put(cn_ag.cfg.status_dir, (int)getpid(), what, text) < 0 ? -EIO : 0;
}

/* The whole file, not only its first line. */
static int take(const char *what, char *buf, size_t len)
{
	return cn_note_take(cn_ag.cfg.status_dir, (int)getpid(), what, buf, len);
}

int cn_cut_wait(const char *what, char *buf, size_t len, unsigned timeout_ms, char *why,
		size_t wlen)
{
	double until = cn_now_ms() + timeout_ms;
	struct timespec tick = { 0, 2 * 1000 * 1000 };

	for (;;) {
		if (take("nccl-abort", why, wlen) >= 0) {
			why[strcspn(why, "\n")] = '\0';
			if (!why[0])
				snprintf(why, wlen, "the command line gave up");
			return -1;
		}
		if (take(what, buf, len) >= 0)
			return 0;
		if (cn_now_ms() >= until)
			break;
		nanosleep(&tick, NULL);
	}
	snprintf(why, wlen,
		 "no word from the command line within %u ms: the ranks of an NCCL job are "
		 "suspended and resumed together, by cudanap suspend|resume --tree, --slurm or "
		 "--all",
		 timeout_ms);
	return -1;
}

void cn_cut_clear(void)
{
	char path[4300];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cn_note_path(cn_ag.cfg.status_dir, (int)getpid(), names[i], path, sizeof(path));
		unlink(path);
	}
}
