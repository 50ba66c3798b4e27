/* ini: an INI file read key by key, with line numbers (see cn_ini.h). */
#define _GNU_SOURCE
#include "cn_ini.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "cn_config.h"

struct reading {
	FILE *f;
	cn_ini_fn fn;
	void *user;
	int line;	      /* the line inih is handling now */
	size_t bytes;	      /* read so far: CN_CONFIG_MAX at most */
	int long_line;	      /* the first line longer than inih's buffer, or 0 */
	char msg[CN_ERR_LEN]; /* the first key's error, without the FILE:LINE prefix */
	int msg_line;
};

/* inih hands out no line numbers here, so count them as we feed it. */
static char *counting_reader(char *str, int num, void *stream)
{
	struct reading *x = stream;
	char *r = fgets(str, num, x->f);
	size_t len;

	if (!r)
		return NULL;
	len = strlen(str);
	if ((x->bytes += len) > CN_CONFIG_MAX)
		return NULL; /* grown past it since its size was checked */
	if (len == (size_t)num - 1 && str[len - 1] != '\n') {
		int ch;

		while ((ch = fgetc(x->f)) != EOF && ch != '\n')
			;
		if (!x->long_line)
			x->long_line = x->line + 1;
	}
	x->line++;
	return r;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct reading *x = user;
	char why[CN_ERR_LEN - 64];

	if (x->fn(x->user, section, name, value, x->line, why, sizeof(why)) == 0)
		return 1;
	snprintf(x->msg, sizeof(x->msg), "%s", why);
	x->msg_line = x->line;
	return 0;
}

/* The file at path, opened without blocking (a FIFO opens at once) and judged by what it is: a
 * regular file, not a directory, a device or a pipe, of CN_CONFIG_MAX bytes at most. NULL with err
 * and *rc. */
static FILE *open_ini(const char *path, char *err, size_t errlen, int *rc)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		*rc = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);

		snprintf(err, errlen, "%s: %s", path,
			 dir ? "a directory, not an INI file"
			     : "not a regular file; an INI file is read again at each suspend and "
			       "resume");
		*rc = dir ? -EISDIR : -EINVAL;
		close(fd);
		return NULL;
	}
	if (st.st_size > (off_t)CN_CONFIG_MAX) {
		snprintf(err, errlen, "%s: %lld bytes; an INI file is 1 MiB at most", path,
			 (long long)st.st_size);
		*rc = -EFBIG;
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "re");
	if (!f) {
		*rc = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

int cn_ini_parse(const char *path, cn_ini_fn fn, void *user, char *err, size_t errlen)
{
	struct reading x = { .fn = fn, .user = user };
	int r;

	x.f = open_ini(path, err, errlen, &r);
	if (!x.f)
		return r;
	r = ini_parse_stream(counting_reader, &x, on_key, &x);
	fclose(x.f);
	if (x.long_line && (r == 0 || x.long_line <= r)) {
		snprintf(err, errlen, "%s:%d: line longer than %d characters", path, x.long_line,
			 INI_MAX_LINE - 2);
		return -EINVAL;
	}
	if (x.bytes > CN_CONFIG_MAX) {
		snprintf(err, errlen, "%s: longer than 1 MiB; an INI file is 1 MiB at most", path);
		return -EFBIG;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot read", path);
		return -EIO;
	}
	if (r > 0) {
		if (x.msg[0] && x.msg_line == r)
			snprintf(err, errlen, "%s:%d: %s", path, r, x.msg);
		else
			snprintf(err, errlen,
				 "%s:%d: syntax error: expected [section] or key = value", path, r);
		return -EINVAL;
	}
	return 0;
}
