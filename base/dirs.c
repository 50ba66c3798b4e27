/* dirs: the directories cudanap writes in: the status dir (where it is by default, and whether it
 * is ours to use) and any directory only its user may write to (see cn_dirs.h). */
#define _GNU_SOURCE
#include "cn_dirs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cn_dirs_status_default(const char *status_env, const char *xdg, uid_t uid, char *out,
			    size_t len)
{
	if (status_env && status_env[0] == '/')
		snprintf(out, len, "%s", status_env);
	else if (xdg && xdg[0] == '/')
		snprintf(out, len, "%s/cudanap", xdg);
	else
		snprintf(out, len, "/tmp/cudanap-%u", (unsigned)uid);
}

int cn_dirs_status_check(const char *dir, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	struct stat st;
	char *slash;

	if (lstat(dir, &st) == 0 || errno != ENOENT)
		return cn_dirs_private(dir, "status dir", false, err, errlen);
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash)
		*(slash == parent ? slash + 1 : slash) = '\0';
	if (!slash || stat(parent, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    access(parent, W_OK | X_OK) < 0) {
		snprintf(err, errlen, "status dir %s: cannot be created: %s is %s", dir,
			 slash ? parent : ".",
			 slash && stat(parent, &st) == 0 && S_ISDIR(st.st_mode)
				 ? "not writable"
				 : "not a directory");
		return -ENOENT;
	}
	return 0;
}

int cn_dirs_private(const char *dir, const char *what, bool create, char *err, size_t errlen)
{
	struct stat st;

	if (create && mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int e = errno;

		snprintf(err, errlen, "%s %s: cannot create: %s", what, dir, strerror(e));
		return -e;
	}
	if (lstat(dir, &st) < 0) {
		int e = errno;

		snprintf(err, errlen, "%s %s: %s", what, dir, strerror(e));
		return -e;
	}
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s %s: is a symlink or not a directory; refusing", what,
			 dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "%s %s: owned by uid %u, not by you (uid %u): another user made it; name "
			 "another ([status] dir, CUDANAP_STATUS_DIR or XDG_RUNTIME_DIR) or have it "
			 "removed",
			 what, dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 022) {
		snprintf(err, errlen, "%s %s: mode %03o lets others write; chmod 700 it", what, dir,
			 (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

int cn_dirs_status_prepare(const char *dir, char *err, size_t errlen)
{
	return cn_dirs_private(dir, "status dir", true, err, errlen);
}
