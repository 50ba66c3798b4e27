/* channel: the agent's line to the controller, one request and one answer, the controller started
 * again after it died (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/channel.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/launch.h"
#include "agent/log.h"
#include "agent/state.h"
#include "cn_names.h"

CN_NAMES_DEFINE(cn_channel_op, enum cn_op, CN_OP_STATE, 0, "state", "lock", "checkpoint", "restore",
		"unlock", "prepare", "query", "users")

int cn_channel_fd(const struct cn_agent *ag)
{
	return ag->sock;
}

void cn_channel_close(struct cn_agent *ag)
{
	if (ag->sock >= 0)
		close(ag->sock);
	ag->sock = -1;
}

/* The controller is started at the first request, and again after it died: an exec'd program
 * (launch.c) can be started at any moment. */
static int ensure_controller(struct cn_agent *ag, struct cn_resp *resp)
{
	int r;

	if (ag->sock >= 0)
		return 0;
	r = cn_launch_ctl_spawn(ag->ctl_path, &ag->sock);
	if (r == 0)
		return 0;
	resp->result = CN_RES_NO_CONTROLLER;
	resp->state = CN_STATE_UNKNOWN;
	snprintf(resp->message, sizeof(resp->message), "cannot start %s: %s", ag->ctl_path,
		 strerror(-r));
	return -1;
}

/* Wait for the answer; a call that runs past the watchdog is said, in the log and the status
 * file, at every interval, and waited for. */
static ssize_t wait_answer(struct cn_agent *ag, uint32_t op, struct cn_resp *resp,
			   cn_channel_waiting waiting)
{
	struct pollfd p = { .fd = ag->sock, .events = POLLIN };
	unsigned waited = 0;
	ssize_t n;

	for (;;) {
		int r = poll(&p, 1, (int)ag->cfg.watchdog_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			waited += ag->cfg.watchdog_ms;
			waiting(ag, cn_channel_op_to_string((enum cn_op)op), waited / 1000);
			continue;
		}
		break;
	}
	do
		n = recv(ag->sock, resp, sizeof(*resp), 0);
	while (n < 0 && errno == EINTR);
	return n;
}

static ssize_t exchange(struct cn_agent *ag, const struct cn_req *req, struct cn_resp *resp,
			cn_channel_waiting waiting)
{
	ssize_t n;

	if (ensure_controller(ag, resp) < 0)
		return -1;
	memset(resp, 0, sizeof(*resp));
	n = send(ag->sock, req, sizeof(*req), MSG_NOSIGNAL);
	if (n == (ssize_t)sizeof(*req))
		n = wait_answer(ag, req->op, resp, waiting);
	return n;
}

/* A controller that died is replaced, and the new one asked where the process stands, so that
 * what is reported is the truth; only a state query is asked again. */
int cn_channel_call(struct cn_agent *ag, const struct cn_req *req, struct cn_resp *resp,
		    cn_channel_waiting waiting)
{
	struct cn_req ask;
	struct cn_resp now;
	ssize_t n = exchange(ag, req, resp, waiting);

	if (n == (ssize_t)sizeof(*resp))
		return 0;
	if (n < 0 && resp->result == CN_RES_NO_CONTROLLER)
		return -1; /* no controller could be started */
	cn_channel_close(ag);
	cn_log(&ag->cfg, CN_LOG_ERROR,
	       "the cudanap controller died during the %s request; starting another",
	       cn_channel_op_to_string((enum cn_op)req->op));
	ask = *req;
	ask.op = CN_OP_STATE;
	n = exchange(ag, &ask, &now, waiting);
	if (n != (ssize_t)sizeof(now))
		cn_channel_close(ag);
	if (n == (ssize_t)sizeof(now) && req->op == CN_OP_STATE) {
		*resp = now;
		return 0;
	}
	memset(resp, 0, sizeof(*resp));
	resp->result = CN_RES_CONTROLLER_GONE;
	resp->state = n == (ssize_t)sizeof(now) ? now.state : CN_STATE_UNKNOWN;
	snprintf(resp->message, sizeof(resp->message),
		 "the cudanap controller died during the %s%s",
		 cn_channel_op_to_string((enum cn_op)req->op),
		 n == (ssize_t)sizeof(now) ? ""
					   : ", and no new one answers; the process's CUDA state "
					     "is unknown");
	return -1;
}
