/* reload: the INI read again at each action. Runs in the agent thread. */
#define _GNU_SOURCE
#include "reload.h"

#include <stdio.h>
#include <string.h>

#include "report.h"
#include "state.h"

/* Re-read at each action, so that a scheduler can change gpu_map while the job sleeps, or the
 * hibernate directory and the timeouts before a suspend. The signals and the status dir stay as
 * they were at start. A file broken since ends the action with its error: a suspend leaves the
 * job running, a resume leaves it suspended. */
bool cn_reload_quietly(char *err, size_t len)
{
	static struct cn_config fresh; /* only the agent thread reloads */

	if (!cn_ag.cfg.path[0])
		return true;
	if (cn_config_load(&fresh, cn_ag.cfg.path, err, len) < 0)
		return false;
	fresh.suspend_signal = cn_ag.cfg.suspend_signal;
	fresh.resume_signal = cn_ag.cfg.resume_signal;
	memcpy(fresh.status_dir, cn_ag.cfg.status_dir, sizeof(fresh.status_dir));
	cn_ag.cfg = fresh;
	return true;
}

bool cn_reload(const char *verb)
{
	char err[CN_ERR_LEN];
	struct cn_resp r;

	if (!cn_reload_quietly(err, sizeof(err))) {
		memset(&r, 0, sizeof(r));
		r.result = CN_RES_CONFIG;
		r.state = CN_STATE_UNKNOWN;
		snprintf(r.name, sizeof(r.name), "CONFIG_ERROR");
		snprintf(err + strlen(err), sizeof(err) - strlen(err), "; %s",
			 strcmp(verb, "suspend") == 0 ? "the process keeps running"
						      : "still suspended");
		cn_report_finish(&r, verb, err);
		return false;
	}
	return true;
}
