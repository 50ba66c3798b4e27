/* nccl: the NCCL steps of an action: the app's work held and settled, the cut agreed with the job's
 * other ranks, the communicators suspended and resumed (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/nccl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_notes.h"
#include "cn_words.h"
#include "nccl/comms.h"
#include "cuda_abi.h"
#include "cuda/gate.h"
#include "nccl/hold.h"
#include "agent/lead.h"
#include "agent/log.h"
#include "agent/route.h"
#include "agent/span.h"

/* Waits for the cut's answers, when [lock] timeout_ms is 0 (forever). */
#define DEFAULT_WAIT_MS 10000
/* At a resume the slowest rank's restore comes first. */
#define RESUME_WAIT_MS 120000
/* The watchdog has dropped the app's works once no query of the app's found work not done for
 * this long: PyTorch's looks at its list every 100 ms. */
#define QUIET_MS 250
/* How long a thread already on its way to an NCCL call gets to reach it: after the hold begins,
 * before the gate closes, and after the drain, before the rank says it is at the cut. */
#define SETTLE_MS 20

static void failed(struct cn_resp *r, int result)
{
	r->result = result;
	r->name[0] = '\0';
}

static unsigned wait_ms(const struct cn_config *c)
{
	return c->lock_timeout_ms ? c->lock_timeout_ms : DEFAULT_WAIT_MS;
}

/* ---- the cut ---- */

/* Who answers this rank at one action's cut: the command line or a rank of this node (lead.c),
 * or, when the job's Slurm step runs on several nodes and no command line leads, the ranks'
 * leader over TCP (span.c: each node's notes are its own). */
struct leader {
	struct cn_lead here;
	bool span;
};

static void leader_begin(const struct cn_config *c, struct leader *l)
{
	cn_span_end(); /* a meeting an action before left open */
	cn_lead_begin(&l->here, c->status_dir);
	l->span = !l->here.by_cli && cn_span_wanted(c->nccl_cut_port);
}

/* Over TCP: this rank's note said sent to the job's leader (span.c), its answer what heard; the
 * go after the ranks said they are there waited for three bounds, as from a rank that leads. */
static int across(const struct cn_config *c, const char *said, const char *what, char *buf,
		  size_t len, unsigned timeout_ms, char *why, size_t wlen)
{
	static char text[8192];
	bool last = strcmp(what, CN_NOTE_NCCL_COMMIT) == 0;

	if (cn_notes_read(c->status_dir, (int)getpid(), said, text, sizeof(text)) < 0)
		text[0] = '\0';
	return cn_span_answer(c->nccl_cut_port, said, text, timeout_ms,
			      last ? 3 * timeout_ms : timeout_ms + 1000, last, buf, len, why, wlen);
}

/* After this rank said its lines in the note said: the answer what into buf (cn_lead_answer). */
static int answer(const struct cn_config *c, struct leader *l, const char *said, const char *what,
		  char *buf, size_t len, unsigned timeout_ms, char *why, size_t wlen)
{
	if (l->span)
		return across(c, said, what, buf, len, timeout_ms, why, wlen);
	return cn_lead_answer(&l->here, said, what, buf, len, timeout_ms, why, wlen);
}

static void give_up(struct leader *l, const char *why)
{
	if (l->span)
		cn_span_give_up(why);
	else
		cn_lead_give_up(&l->here, why);
}

static const char *const notes[] = { CN_NOTE_NCCL_CUT, CN_NOTE_NCCL_GO, CN_NOTE_NCCL_READY,
				     CN_NOTE_NCCL_COMMIT, CN_NOTE_NCCL_ABORT };

/* Write <status dir>/<pid>.<what> (atomically: a reader sees all of it or nothing). */
static int say(const struct cn_config *c, const char *what, const char *text)
{
	return cn_notes_put(c->status_dir, (int)getpid(), what, text) < 0 ? -EIO : 0;
}

/* Remove what this process said and what was said to it. */
static void clear(const struct cn_config *c)
{
	char path[4300];

	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		cn_notes_path(c->status_dir, (int)getpid(), notes[i], path, sizeof(path));
		unlink(path);
	}
}

/* ---- the steps ---- */

/* The work the app started has ended and the watchdog has dropped it. -1 with r and msg when it
 * did not within the bound: a collective waits for a rank that stopped before it (over sockets,
 * where the ranks stop each at its own point), to be tried again. */
static int settle(const struct cn_config *c, struct cn_resp *r, char *msg, size_t len)
{
	double ms = cn_hold_settle(QUIET_MS, wait_ms(c));

	if (ms >= 0) {
		cn_log(c, CN_LOG_DEBUG, "nccl: the app's GPU work settled in %.0f ms", ms);
		return 0;
	}
	snprintf(msg, len,
		 "NCCL: the app's GPU work was still running after %u ms (a collective waiting for "
		 "a rank that stopped before it)",
		 wait_ms(c));
	failed(r, CUDA_ERROR_NOT_READY);
	return -1;
}

/* No app thread may wait at the NCCL gate while the process sleeps with a collective begun: its
 * clock would run. One that went from an operation straight into the next while the app was held
 * (nothing between them started GPU work) and came to the gate after the cut was counted: the
 * suspend is given up, to be tried again. A thread that began nothing under the hold (its NCCL
 * calls come with no CUDA call between them) waits there through the sleep, as before. */
static int none_waiting(struct cn_resp *r, char *msg, size_t len)
{
	int n = cn_comms_began_waiting();

	if (!n)
		return 0;
	snprintf(msg, len, "NCCL: %d thread%s of the app began a collective after the job's cut", n,
		 n == 1 ? "" : "s");
	failed(r, CUDA_ERROR_NOT_READY);
	return -1;
}

/* The job's cut, the gate closed: this rank's counts said, the leader's answer reached, and its
 * word had that every rank is there. 0; -1 with r and msg when the cut was given up (the gate
 * open again: the process runs on). */
static int reach_cut(const struct cn_config *c, struct leader *lead, struct cn_resp *r, char *msg,
		     size_t len)
{
	static char cut[8192], go[8192];
	struct timespec pause = { 0, SETTLE_MS * 1000 * 1000 };
	char why[300];

	/* A thread that began a collective just before the hold issues it now, the gate open. */
	nanosleep(&pause, NULL);
	clear(c);
	if (cn_comms_quiesce(wait_ms(c), cut, sizeof(cut), why, sizeof(why)) < 0)
		goto refused;
	if (say(c, CN_NOTE_NCCL_CUT, cut) < 0 ||
	    answer(c, lead, CN_NOTE_NCCL_CUT, CN_NOTE_NCCL_GO, go, sizeof(go), wait_ms(c), why,
		   sizeof(why)) < 0 ||
	    cn_comms_drain(go, wait_ms(c), why, sizeof(why)) < 0)
		goto reopen;
	nanosleep(&pause, NULL);
	if (none_waiting(r, msg, len) < 0) {
		give_up(lead, msg);
		cn_comms_open();
		clear(c);
		return -1;
	}
	if (say(c, CN_NOTE_NCCL_READY, cut) < 0 ||
	    answer(c, lead, CN_NOTE_NCCL_READY, CN_NOTE_NCCL_COMMIT, go, sizeof(go), wait_ms(c),
		   why, sizeof(why)) < 0)
		goto reopen;
	/* What was said for this cut is spent either way: a note left would read, to the ranks
	 * meeting at the resume, as this rank's word that it is restored. */
	clear(c);
	return 0;
reopen:
	give_up(lead, why);
	cn_comms_open();
refused:
	clear(c);
	snprintf(msg, len, "NCCL: %s; the process keeps running", why);
	failed(r, CN_RES_NCCL_CUT);
	return -1;
}

/* At the cut, where every rank of every communicator makes these calls: the communicators
 * suspended and the app's GPU work settled. -1 with r and msg: the communicators stay suspended
 * until the job's resume. */
static int suspend_comms(const struct cn_config *c, struct cn_resp *r, char *msg, size_t len)
{
	char why[300];

	if (cn_comms_suspend(why, sizeof(why)) < 0) {
		snprintf(msg, len, "%s", why);
		failed(r, CN_RES_NCCL_SUSPEND);
	} else {
		cn_log(c, CN_LOG_DEBUG, "nccl: %d communicators suspended at the job's cut",
		       cn_comms_count());
		if (settle(c, r, msg, len) == 0 && none_waiting(r, msg, len) == 0)
			return 0;
	}
	snprintf(msg + strlen(msg), len - strlen(msg),
		 "; the NCCL communicators stay suspended until the job is resumed");
	return -1;
}

int cn_nccl_suspend(const struct cn_config *c, struct cn_resp *r, char *msg, size_t len)
{
	struct leader lead;

	leader_begin(c, &lead);
	if (c->nccl_mode == CN_NCCL_API && cn_comms_count() && !cn_comms_have_api()) {
		cn_route_hint(c, msg, len);
		failed(r, CN_RES_REFUSED);
		return -1;
	}
	if (!cn_comms_count() || c->nccl_mode == CN_NCCL_OFF)
		return 0;
	cn_hold_begin();
	if (!cn_route_uses_api(c))
		return settle(c, r, msg, len);
	if (reach_cut(c, &lead, r, msg, len) < 0)
		return -1;
	return suspend_comms(c, r, msg, len);
}

bool cn_nccl_hold_app(void)
{
	if (!cn_comms_suspended())
		return false;
	if (!cn_gate_is_holding())
		cn_hold_begin();
	return true;
}

int cn_nccl_resume(const struct cn_config *c, struct cn_resp *r, char *msg, size_t len)
{
	static char ready[8192], go[64];
	struct leader lead;
	char why[300];

	leader_begin(c, &lead);
	if (!cn_comms_suspended())
		return 0;
	cn_comms_list(ready, sizeof(ready));
	clear(c);
	if (say(c, CN_NOTE_NCCL_READY, ready) < 0 ||
	    answer(c, &lead, CN_NOTE_NCCL_READY, CN_NOTE_NCCL_COMMIT, go, sizeof(go),
		   RESUME_WAIT_MS, why, sizeof(why)) < 0) {
		give_up(&lead, why);
		clear(c);
		snprintf(msg, len,
			 "resumed, but its NCCL communicators wait for the job's other ranks (%s): "
			 "resume the whole job",
			 why);
		failed(r, CN_RES_NCCL_WAITING);
		return -1;
	}
	clear(c);
	if (cn_comms_resume(why, sizeof(why)) < 0) {
		snprintf(msg, len, "resumed, but %s", why);
		failed(r, CN_RES_NCCL_RESUME);
		return -1;
	}
	cn_gate_open(); /* the app's GPU work goes on with its collectives */
	return 0;
}
