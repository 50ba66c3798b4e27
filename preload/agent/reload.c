/* reload: the INI read again at each action. Runs in the agent thread. */
#define _GNU_SOURCE
#include "agent/reload.h"

#include <stdio.h>
#include <string.h>

#include "agent/report.h"
#include "cuda/owned.h"
#include "cuda/gate.h"
#include "agent/state.h"

/* Re-read at each action, so that a scheduler can change gpu_map while the job sleeps, or the
 * hibernate directory and the timeouts before a suspend. The signals and the status dir stay as
 * they were at start. A file broken since ends the action with its error: a suspend leaves the
 * job running, a resume leaves it suspended. */
bool cn_reload_quietly(struct cn_agent *ag, char *err, size_t len)
{
	static struct cn_config fresh; /* only the agent thread reloads */

	if (!ag->cfg.path[0])
		return true;
	if (cn_config_load(&fresh, ag->cfg.path, err, len) < 0)
		return false;
	fresh.suspend_signal = ag->cfg.suspend_signal;
	fresh.resume_signal = ag->cfg.resume_signal;
	memcpy(fresh.status_dir, ag->cfg.status_dir, sizeof(fresh.status_dir));
	ag->cfg = fresh;
	cn_wrap_oom_on(fresh.nap_make_room);
	cn_owned_config(fresh.own, cn_config_light_naps(&fresh));
	return true;
}

/* Where a broken INI leaves the process, by the action it stopped: an action that would have
 * suspended it leaves it running, one that would have resumed it leaves it asleep. */
static const char *left(int action)
{
	return action == CN_ACTION_RESUME ? "still suspended"
	       : action == CN_ACTION_WAKE ? "still napping"
					  : "the process keeps running";
}

bool cn_reload(struct cn_agent *ag)
{
	char err[CN_ERR_LEN];

	if (cn_reload_quietly(ag, err, sizeof(err)))
		return true;
	snprintf(err + strlen(err), sizeof(err) - strlen(err), "; %s", left(ag->status.action));
	cn_report_fail(ag, CN_RES_CONFIG, err);
	return false;
}
