/* channel: the agent's line to the controller. See channel.c. */
#ifndef CN_CHANNEL_H
#define CN_CHANNEL_H

#include "agent/state.h"
#include "cn_names.h"
#include "ctl_proto.h"

/* What is told of a request op that has not been answered after s seconds. */
typedef void (*cn_channel_waiting)(struct cn_agent *ag, const char *op, unsigned s);

/* Send req and wait for its answer (the socket, the controller's program and the watchdog are
 * ag's), starting a controller first where none runs; waiting is told,
 * at every [controller] watchdog_ms, of a call that runs that long. 0 when resp is the
 * controller's answer (its result may be an error); -1 when none came: resp then says why
 * (CN_RES_NO_CONTROLLER, CN_RES_CONTROLLER_GONE), with the process's state as a new controller sees
 * it, if one could be asked. */
int cn_channel_call(struct cn_agent *ag, const struct cn_req *req, struct cn_resp *resp,
		    cn_channel_waiting waiting);

/* The socket to watch while idle (-1 when no controller runs): readable or hung up means the
 * controller died. */
int cn_channel_fd(const struct cn_agent *ag);

/* Close the line: the controller died, or, in a forked child, it is the parent's. */
void cn_channel_close(struct cn_agent *ag);

/* A request's word, for what the agent says ("checkpoint"). */
CN_NAMES_DECLARE(cn_channel_op, enum cn_op);

#endif
