/* job: the NCCL steps of an action, in the agent thread. Which route a process's communicators
 * take ([nccl] mode and the NCCL loaded); with NCCL's suspend API, before the lock of a suspend:
 * the gate closed, the cut agreed with the job's other ranks through the command line, the
 * communicators suspended; after the unlock of a resume: the ranks agree again, the communicators
 * are resumed and the gate opens. A process whose communicators are suspended keeps the gate
 * closed until the job's resume, also when its own suspend failed after them (the command line's
 * rollback resumes it with the others). */
#define _GNU_SOURCE
#include "job.h"

#include <stdio.h>
#include <string.h>

#include "agent_state.h"
#include "comms.h"
#include "cut.h"
#include "log.h"

/* Waits for the command line's answers, when [lock] timeout_ms is 0 (forever). */
#define DEFAULT_WAIT_MS 10000
/* At a resume the slowest rank's restore comes first. */
#define RESUME_WAIT_MS 120000

static void version(char *out, size_t len)
{
	int v = cn_comms_nccl_version();

	if (v >= 10000)
		snprintf(out, len, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else if (v)
		snprintf(out, len, "NCCL %d.%d.%d", v / 1000, v / 100 % 10, v % 100);
	else
		snprintf(out, len, "NCCL");
}

bool cn_nccl_uses_api(void)
{
	int mode = cn_ag.cfg.nccl_mode;

	return cn_comms_count() > 0 && (mode == CN_NCCL_AUTO || mode == CN_NCCL_API) &&
	       cn_comms_have_api();
}

void cn_nccl_describe(char *out, size_t len)
{
	int n = cn_comms_count(), mode = cn_ag.cfg.nccl_mode;
	char v[32];

	version(v, sizeof(v));
	if (cn_comms_suspended())
		snprintf(out, len, "suspended: %d communicator%s (%s)", n, n == 1 ? "" : "s", v);
	else if (mode == CN_NCCL_SOCKETS)
		snprintf(out, len, "sockets");
	else if (!n || mode == CN_NCCL_OFF)
		out[0] = '\0';
	else if (cn_comms_have_api())
		snprintf(out, len, "suspend-api: %d communicator%s (%s)", n, n == 1 ? "" : "s", v);
	else
		snprintf(out, len, "no suspend API: %d communicator%s (%s)", n, n == 1 ? "" : "s",
			 v);
}

void cn_nccl_hint(char *out, size_t len)
{
	char v[32];

	out[0] = '\0';
	if (!cn_comms_count() || cn_comms_have_api())
		return;
	version(v, sizeof(v));
	if (cn_ag.cfg.nccl_mode == CN_NCCL_API)
		snprintf(out, len,
			 "[nccl] mode = suspend-api, but %s has no ncclCommSuspend: load NCCL "
			 "2.29.7 or later, or set mode = sockets",
			 v);
	else
		snprintf(out, len,
			 "%s has no ncclCommSuspend: load NCCL 2.29.7 or later to keep NVLink, or "
			 "set [nccl] suspendable = true for sockets",
			 v);
}

static void failed(struct cn_resp *r, const char *name)
{
	r->result = CN_RES_REFUSED;
	snprintf(r->name, sizeof(r->name), "%s", name);
}

static unsigned wait_ms(void)
{
	return cn_ag.cfg.lock_timeout_ms ? cn_ag.cfg.lock_timeout_ms : DEFAULT_WAIT_MS;
}

int cn_nccl_suspend(struct cn_resp *r, char *msg, size_t len)
{
	static char cut[8192], go[8192];
	char why[300];

	if (cn_ag.cfg.nccl_mode == CN_NCCL_API && cn_comms_count() && !cn_comms_have_api()) {
		cn_nccl_hint(msg, len);
		failed(r, "REFUSED");
		return -1;
	}
	if (!cn_nccl_uses_api())
		return 0;
	cn_cut_clear();
	if (cn_comms_quiesce(wait_ms(), cut, sizeof(cut), why, sizeof(why)) < 0)
		goto refused;
	if (cn_cut_say("nccl-cut", cut) < 0 ||
	    cn_cut_wait("nccl-go", go, sizeof(go), wait_ms(), why, sizeof(why)) < 0 ||
	    cn_comms_drain(go, wait_ms(), why, sizeof(why)) < 0)
		goto reopen;
	if (cn_cut_say("nccl-ready", cut) < 0 ||
	    cn_cut_wait("nccl-commit", go, sizeof(go), wait_ms(), why, sizeof(why)) < 0)
		goto reopen;
	/* Every rank of every communicator is at the same cut and makes these calls. */
	if (cn_comms_suspend(why, sizeof(why)) < 0) {
		snprintf(msg, len,
			 "%s; the NCCL communicators stay suspended until the job is resumed", why);
		failed(r, "NCCL_SUSPEND_FAILED");
		return -1;
	}
	cn_cut_clear();
	cn_log(&cn_ag.cfg, CN_LOG_DEBUG, "nccl: %d communicators suspended at the job's cut",
	       cn_comms_count());
	return 0;
reopen:
	cn_comms_open();
refused:
	cn_cut_clear();
	snprintf(msg, len, "NCCL: %s; the process keeps running", why);
	failed(r, "NCCL_NOT_AT_CUT");
	return -1;
}

int cn_nccl_resume(struct cn_resp *r, char *msg, size_t len)
{
	static char ready[8192], answer[64];
	char why[300];

	if (!cn_comms_suspended())
		return 0;
	cn_comms_list(ready, sizeof(ready));
	cn_cut_clear();
	if (cn_cut_say("nccl-ready", ready) < 0 ||
	    cn_cut_wait("nccl-commit", answer, sizeof(answer), RESUME_WAIT_MS, why, sizeof(why)) <
		    0) {
		cn_cut_clear();
		snprintf(msg, len,
			 "resumed, but its NCCL communicators wait for the job's other ranks (%s): "
			 "resume the whole job",
			 why);
		failed(r, "NCCL_WAITING");
		return -1;
	}
	cn_cut_clear();
	if (cn_comms_resume(why, sizeof(why)) < 0) {
		snprintf(msg, len, "resumed, but %s", why);
		failed(r, "NCCL_RESUME_FAILED");
		return -1;
	}
	return 0;
}

const struct cn_nccl_facts *cn_nccl_facts(struct cn_nccl_facts *f)
{
	static char hint[300];

	cn_nccl_hint(hint, sizeof(hint));
	f->comms = cn_comms_count();
	f->handled = cn_nccl_uses_api();
	f->hint = hint;
	return f;
}
