/* dirs: the status dir, and directories only their user may write to. */
#ifndef CN_DIRS_H
#define CN_DIRS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The status dir when the INI names none: $CUDANAP_STATUS_DIR (set per job by the Slurm plugin),
 * else $XDG_RUNTIME_DIR/cudanap, else /tmp/cudanap-UID, UID the process's user; the values are
 * passed in, so that the CLI can work out another process's from its environment and owner. */
void cn_dirs_status_default(const char *status_env, const char *xdg, uid_t uid, char *out,
			    size_t len);

/* A directory only we may write to: refuse a symlink, a non-directory, another owner, or one that
 * others may write to; create it 0700 first when asked. what names it in err ("status dir"). */
int cn_dirs_private(const char *dir, const char *what, bool create, char *err, size_t errlen);

/* cn_dirs_private(dir, "status dir", create): */
int cn_dirs_status_prepare(const char *dir, char *err, size_t errlen);
/* What cn_dirs_status_prepare(dir) would say, without creating anything: an existing dir checked
 * as it would be, a missing one creatable. */
int cn_dirs_status_check(const char *dir, char *err, size_t errlen);

#endif
