/* config: INI loading and validation for struct cn_config (see cn_config.h for the rules). */
#define _GNU_SOURCE
#include "cn_config.h"
#include "cn_dirs.h"
#include "cn_gpumap.h"
#include "cn_safe.h"
#include "cn_signame.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#define CN_TIMEOUT_MAX_MS (24u * 3600u * 1000u)

/* A decimal number of at most max, digits only. */
int cn_config_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* CUDANAP_NAP_S (cudanap run --nap N): [nap] idle_s for this program, over its INI's; and
 * CUDANAP_MAKE_ROOM=1 (cudanap run --make-room): [nap] make_room. */
static void nap_from_env(struct cn_config *c)
{
	const char *v = secure_getenv("CUDANAP_NAP_S"), *room = secure_getenv("CUDANAP_MAKE_ROOM");
	char *end;
	unsigned long n;

	if (room && strcmp(room, "1") == 0)
		c->nap_make_room = true;
	if (!v || !*v)
		return;
	n = strtoul(v, &end, 10);
	if (!*end && n <= 24ul * 3600)
		c->nap_idle_s = (unsigned)n;
}

void cn_config_defaults(struct cn_config *c)
{
	const char *xdg = secure_getenv("XDG_RUNTIME_DIR");

	memset(c, 0, sizeof(*c));
	c->suspend_signal = SIGUSR1;
	c->resume_signal = SIGUSR2;
	c->lock_timeout_ms = 10000;
	c->log_level = CN_LOG_INFO;
	c->hook_timeout_ms = 30000;
	c->hugepages = true;
	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		c->prefault_threads = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
		c->copy_threads = c->prefault_threads;
	}
	c->keep_host_buffer = false;
	c->prepare_s = 60;
	c->margin_mib = 256;
	c->reserve = true;
	c->take_turns = true;
	c->chain = true;
	c->host_check = true;
	c->host_margin_mib = 1024;
	c->watchdog_ms = 60000;
	c->nap_min_idle_s = 30;
	c->nap_full_after_s = 600;
	nap_from_env(c);
	cn_dirs_status_default(secure_getenv("CUDANAP_STATUS_DIR"), xdg, getuid(), c->status_dir,
			       sizeof(c->status_dir));
}

/* ---- the INI file ---- */

struct load_ctx {
	struct cn_config *c;
	const char *path;
	FILE *f;
	int line;		 /* line inih is handling now */
	int long_line;		 /* first line longer than inih's buffer, or 0 */
	unsigned long long seen; /* bit per key_table entry */
	char msg[CN_ERR_LEN];	 /* first handler error, without the FILE:LINE prefix */
	int msg_line;
	int prepare_line; /* where [signals] prepare was set, for the check after the file */
	int mode_line;	  /* where [nccl] mode was set, likewise */
	int nap_to_line;  /* where [nap] to was set, likewise */
};

/* inih hands out no line numbers here, so count them as we feed it. */
static char *counting_reader(char *str, int num, void *stream)
{
	struct load_ctx *x = stream;
	char *r = fgets(str, num, x->f);
	size_t len;

	if (!r)
		return NULL;
	len = strlen(str);
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

typedef int (*key_parser)(struct cn_config *c, const char *v, char *why, size_t len);

static int set_signal(int *dst, const char *v, char *why, size_t len)
{
	if (cn_signame_parse(v, dst) == 0)
		return 0;
	snprintf(
		why, len,
		"'%s' is not a signal that can be used (try SIGUSR1, USR2, SIGRTMIN+3 or a number)",
		v);
	return -EINVAL;
}

static int set_timeout(unsigned *dst, const char *v, char *why, size_t len)
{
	unsigned long n;

	if (cn_config_uint(v, CN_TIMEOUT_MAX_MS, &n) == 0) {
		*dst = (unsigned)n;
		return 0;
	}
	snprintf(why, len, "'%s' is not a number of milliseconds from 0 to %u", v,
		 CN_TIMEOUT_MAX_MS);
	return -EINVAL;
}

static int set_abs_path(char *dst, size_t dstlen, const char *v, char *why, size_t len)
{
	if (v[0] != '/' || strlen(v) >= dstlen) {
		snprintf(why, len, "'%s' must be an absolute path", v);
		return -EINVAL;
	}
	strcpy(dst, v);
	return 0;
}

static int set_hook(char *dst, const char *v, char *why, size_t len)
{
	if (strlen(v) >= CN_HOOK_LEN) {
		snprintf(why, len, "command longer than %d characters", CN_HOOK_LEN - 1);
		return -EINVAL;
	}
	strcpy(dst, v);
	return 0;
}

static int k_suspend(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_signal(&c->suspend_signal, v, why, len);
}

static int k_resume(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_signal(&c->resume_signal, v, why, len);
}

static int k_prepare(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_signal(&c->prepare_signal, v, why, len);
}

static int k_lock_timeout(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_timeout(&c->lock_timeout_ms, v, why, len);
}

static int k_gpu_map(struct cn_config *c, const char *v, char *why, size_t len)
{
	return cn_gpumap_parse(v, c->pairs, &c->n_pairs, why, len);
}

static int k_status_dir(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_abs_path(c->status_dir, sizeof(c->status_dir), v, why, len);
}

/* Empty: off. */
static int k_hibernate_dir(struct cn_config *c, const char *v, char *why, size_t len)
{
	if (!*v) {
		c->hibernate_dir[0] = '\0';
		return 0;
	}
	return set_abs_path(c->hibernate_dir, sizeof(c->hibernate_dir), v, why, len);
}

static int k_if_unusable(struct cn_config *c, const char *v, char *why, size_t len)
{
	if (strcasecmp(v, "run") == 0 || strcasecmp(v, "refuse") == 0) {
		c->status_refuse = strcasecmp(v, "refuse") == 0;
		return 0;
	}
	snprintf(why, len, "'%s' is not one of run, refuse", v);
	return -EINVAL;
}

static int k_nccl_mode(struct cn_config *c, const char *v, char *why, size_t len)
{
	static const char *const modes[] = { "auto", "suspend-api", "sockets", "off" };

	for (int i = 0; i < 4; i++)
		if (strcasecmp(v, modes[i]) == 0) {
			c->nccl_mode = i;
			return 0;
		}
	snprintf(why, len, "'%s' is not one of auto, suspend-api, sockets, off", v);
	return -EINVAL;
}

static int k_log_level(struct cn_config *c, const char *v, char *why, size_t len)
{
	static const char *const levels[] = { "error", "info", "debug" };

	for (int i = 0; i < 3; i++)
		if (strcasecmp(v, levels[i]) == 0) {
			c->log_level = i;
			return 0;
		}
	snprintf(why, len, "'%s' is not one of error, info, debug", v);
	return -EINVAL;
}

static int k_log_target(struct cn_config *c, const char *v, char *why, size_t len)
{
	if (strcmp(v, "stderr") == 0) {
		c->log_target[0] = '\0';
		return 0;
	}
	return set_abs_path(c->log_target, sizeof(c->log_target), v, why, len);
}

static int k_on_suspended(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_hook(c->on_suspended, v, why, len);
}

static int k_on_resumed(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_hook(c->on_resumed, v, why, len);
}

static int k_on_failure(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_hook(c->on_failure, v, why, len);
}

static int k_hook_timeout(struct cn_config *c, const char *v, char *why, size_t len)
{
	int r = set_timeout(&c->hook_timeout_ms, v, why, len);

	if (r == 0 && c->hook_timeout_ms == 0) {
		snprintf(why, len, "must be at least 1 ms: hooks always run under a timeout");
		return -EINVAL;
	}
	return r;
}

static int set_bool(bool *dst, const char *v, char *why, size_t len)
{
	static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false",
										       "no", "off",
										       "0" };

	for (int i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0 || strcasecmp(v, no[i]) == 0) {
			*dst = strcasecmp(v, yes[i]) == 0;
			return 0;
		}
	}
	snprintf(why, len, "'%s' is not true or false", v);
	return -EINVAL;
}

/* A count of threads, MiB, ...: unit names it in the error. */
static int set_count(unsigned *dst, unsigned long max, const char *unit, const char *v, char *why,
		     size_t len)
{
	unsigned long n;

	if (cn_config_uint(v, max, &n) == 0) {
		*dst = (unsigned)n;
		return 0;
	}
	snprintf(why, len, "'%s' is not a number of %s from 0 to %lu", v, unit, max);
	return -EINVAL;
}

static int k_prefault_threads(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->prefault_threads, 256, "threads", v, why, len);
}

static int k_copy_threads(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->copy_threads, 64, "threads", v, why, len);
}

static int k_prepare_s(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->prepare_s, 86400, "seconds", v, why, len);
}

static int k_margin(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->margin_mib, 1ul << 20, "MiB", v, why, len);
}

static int k_room_wait(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->room_wait_s, 3600, "seconds", v, why, len);
}

static int k_host_margin(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->host_margin_mib, 1ul << 24, "MiB", v, why, len);
}

static int k_watchdog(struct cn_config *c, const char *v, char *why, size_t len)
{
	int r = set_timeout(&c->watchdog_ms, v, why, len);

	if (r == 0 && c->watchdog_ms < 1000) {
		snprintf(why, len, "must be at least 1000 ms");
		return -EINVAL;
	}
	return r;
}

static int k_nap_idle(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->nap_idle_s, 24 * 3600, "seconds", v, why, len);
}

static int k_nap_min_idle(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->nap_min_idle_s, 24 * 3600, "seconds", v, why, len);
}

static int k_nap_to(struct cn_config *c, const char *v, char *why, size_t len)
{
	if (strcasecmp(v, "ram") == 0 || strcasecmp(v, "disk") == 0) {
		c->nap_to_disk = strcasecmp(v, "disk") == 0;
		return 0;
	}
	snprintf(why, len, "'%s' is not ram or disk", v);
	return -EINVAL;
}

static int k_nap_wake_on(struct cn_config *c, const char *v, char *why, size_t len)
{
	if (strcasecmp(v, "home") == 0 || strcasecmp(v, "any") == 0) {
		c->nap_wake_any = strcasecmp(v, "any") == 0;
		return 0;
	}
	snprintf(why, len, "'%s' is not home or any", v);
	return -EINVAL;
}

static int k_nap_depth(struct cn_config *c, const char *v, char *why, size_t len)
{
	static const char *const words[] = { "full", "light", "auto" };

	for (int i = 0; i < 3; i++)
		if (strcasecmp(v, words[i]) == 0) {
			c->nap_depth = (enum cn_depth)i;
			return 0;
		}
	snprintf(why, len, "'%s' is not full, light or auto", v);
	return -EINVAL;
}

static int k_nap_full_after(struct cn_config *c, const char *v, char *why, size_t len)
{
	return set_count(&c->nap_full_after_s, 24 * 3600, "seconds", v, why, len);
}

static int k_peer_mode(struct cn_config *c, const char *v, char *why, size_t len)
{
	if (strcasecmp(v, "refuse") == 0 || strcasecmp(v, "off") == 0) {
		c->peer_off = strcasecmp(v, "off") == 0;
		return 0;
	}
	snprintf(why, len, "'%s' is not refuse or off", v);
	return -EINVAL;
}

static int k_memory_own(struct cn_config *c, const char *v, char *why, size_t len)
{
	static const char *const words[] = { "auto", "always", "never" };

	for (int i = 0; i < 3; i++)
		if (strcasecmp(v, words[i]) == 0) {
			c->own = (enum cn_own)i;
			return 0;
		}
	snprintf(why, len, "'%s' is not auto, always or never", v);
	return -EINVAL;
}

static const struct {
	const char *section, *key;
	key_parser parse; /* NULL: a true/false key, stored at offset */
	size_t offset;
} key_table[] = {
	{ "signals", "suspend", k_suspend, 0 },
	{ "signals", "resume", k_resume, 0 },
	{ "signals", "prepare", k_prepare, 0 },
	{ "signals", "chain", NULL, offsetof(struct cn_config, chain) },
	{ "lock", "timeout_ms", k_lock_timeout, 0 },
	{ "restore", "gpu_map", k_gpu_map, 0 },
	{ "restore", "margin_mib", k_margin, 0 },
	{ "restore", "reserve", NULL, offsetof(struct cn_config, reserve) },
	{ "restore", "take_turns", NULL, offsetof(struct cn_config, take_turns) },
	{ "restore", "beside_restored", NULL, offsetof(struct cn_config, beside_restored) },
	{ "restore", "room_wait_s", k_room_wait, 0 },
	{ "status", "dir", k_status_dir, 0 },
	{ "status", "if_unusable", k_if_unusable, 0 },
	{ "hibernate", "dir", k_hibernate_dir, 0 },
	{ "log", "level", k_log_level, 0 },
	{ "log", "target", k_log_target, 0 },
	{ "hooks", "on_suspended", k_on_suspended, 0 },
	{ "hooks", "on_resumed", k_on_resumed, 0 },
	{ "hooks", "on_failure", k_on_failure, 0 },
	{ "hooks", "timeout_ms", k_hook_timeout, 0 },
	{ "performance", "hugepages", NULL, offsetof(struct cn_config, hugepages) },
	{ "performance", "prefault_threads", k_prefault_threads, 0 },
	{ "performance", "keep_host_buffer", NULL, offsetof(struct cn_config, keep_host_buffer) },
	{ "performance", "copy_threads", k_copy_threads, 0 },
	{ "performance", "prepare_s", k_prepare_s, 0 },
	{ "preflight", "allow_jax", NULL, offsetof(struct cn_config, allow_jax) },
	{ "preflight", "allow_nccl", NULL, offsetof(struct cn_config, allow_nccl) },
	{ "preflight", "host_memory", NULL, offsetof(struct cn_config, host_check) },
	{ "preflight", "host_margin_mib", k_host_margin, 0 },
	{ "controller", "watchdog_ms", k_watchdog, 0 },
	{ "nccl", "suspendable", NULL, offsetof(struct cn_config, nccl_suspendable) },
	{ "nccl", "mode", k_nccl_mode, 0 },
	{ "nap", "idle_s", k_nap_idle, 0 },
	{ "nap", "to", k_nap_to, 0 },
	{ "nap", "wake_on", k_nap_wake_on, 0 },
	{ "nap", "make_room", NULL, offsetof(struct cn_config, nap_make_room) },
	{ "nap", "min_idle_s", k_nap_min_idle, 0 },
	{ "nap", "depth", k_nap_depth, 0 },
	{ "nap", "full_after_s", k_nap_full_after, 0 },
	{ "peer", "mode", k_peer_mode, 0 },
	{ "memory", "own", k_memory_own, 0 },
};
#define N_KEYS (sizeof(key_table) / sizeof(key_table[0]))
_Static_assert(N_KEYS <= 64, "one bit per key in load_ctx.seen");

static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *x = user;
	bool section_known = false;
	char why[CN_ERR_LEN - 64];

	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(section, key_table[i].section) != 0)
			continue;
		section_known = true;
		if (strcmp(name, key_table[i].key) != 0)
			continue;
		if (x->seen & (1ull << i)) {
			snprintf(why, sizeof(why),
				 "given more than once (an indented line continues the key above)");
		} else {
			x->seen |= 1ull << i;
			if (key_table[i].parse == k_prepare)
				x->prepare_line = x->line;
			if (key_table[i].parse == k_nccl_mode)
				x->mode_line = x->line;
			if (key_table[i].parse == k_nap_to)
				x->nap_to_line = x->line;
			if ((key_table[i].parse
				     ? key_table[i].parse(x->c, value, why, sizeof(why))
				     : set_bool((bool *)((char *)x->c + key_table[i].offset), value,
						why, sizeof(why))) == 0)
				return 1;
		}
		snprintf(x->msg, sizeof(x->msg), "%s.%s: %s", section, name, why);
		x->msg_line = x->line;
		return 0;
	}
	if (!section[0])
		snprintf(x->msg, sizeof(x->msg), "%s: a key before any [section]", name);
	else
		snprintf(x->msg, sizeof(x->msg), "%s.%s: unknown %s", section, name,
			 section_known ? "key" : "section");
	x->msg_line = x->line;
	return 0;
}

/* The INI at path, opened without blocking (a FIFO opens at once) and judged by what it is: a
 * regular file, read again at every action, not a directory, a device or a pipe. Links are
 * followed: a Kubernetes ConfigMap's files are links. NULL with err and *rc. */
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
	f = fdopen(fd, "re");
	if (!f) {
		*rc = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

int cn_config_load(struct cn_config *c, const char *path, char *err, size_t errlen)
{
	struct load_ctx x = { .c = c, .path = path };
	int r;

	cn_config_defaults(c);
	if (strlen(path) >= sizeof(c->path)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(c->path, path);
	x.f = open_ini(path, err, errlen, &r);
	if (!x.f)
		return r;
	r = ini_parse_stream(counting_reader, &x, on_ini_key, &x);
	fclose(x.f);
	if (x.long_line && (r == 0 || x.long_line <= r)) {
		snprintf(err, errlen, "%s:%d: line longer than %d characters", path, x.long_line,
			 INI_MAX_LINE - 2);
		return -EINVAL;
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
	if (c->prepare_signal &&
	    (c->prepare_signal == c->suspend_signal || c->prepare_signal == c->resume_signal)) {
		snprintf(err, errlen,
			 "%s:%d: signals.prepare: is the suspend or resume signal too; prepare "
			 "needs "
			 "a signal of its own",
			 path, x.prepare_line);
		return -EINVAL;
	}
	/* suspendable = true is what mode = sockets means, and says the same. */
	if (c->nccl_suspendable && x.mode_line && c->nccl_mode != CN_NCCL_SOCKETS) {
		snprintf(err, errlen,
			 "%s:%d: nccl.mode: suspendable = true makes it sockets; give one of the "
			 "two",
			 path, x.mode_line);
		return -EINVAL;
	}
	if (c->nccl_suspendable)
		c->nccl_mode = CN_NCCL_SOCKETS;
	c->nccl_suspendable = c->nccl_mode == CN_NCCL_SOCKETS;
	if (c->nap_to_disk && !c->hibernate_dir[0]) {
		snprintf(err, errlen, "%s:%d: nap.to: disk needs a directory in [hibernate] dir",
			 path, x.nap_to_line);
		return -EINVAL;
	}
	nap_from_env(c);
	return 0;
}

struct dir_only {
	char *dir;
	size_t len;
};

static int status_dir_only(void *user, const char *section, const char *name, const char *value)
{
	struct dir_only *d = user;

	if (strcmp(section, "status") == 0 && strcmp(name, "dir") == 0 && value[0] == '/')
		snprintf(d->dir, d->len, "%s", value);
	return 1;
}

void cn_config_status_dir(const char *path, const char *status_env, const char *xdg, uid_t uid,
			  gid_t gid, char *dir, size_t len)
{
	static const size_t most = 1 << 20;
	struct dir_only d = { dir, len };
	char err[CN_ERR_LEN], *text;

	cn_dirs_status_default(status_env, xdg, uid, dir, len);
	if (!path || !*path || !(text = malloc(most)))
		return;
	/* Named by a process's environment, maybe another user's and read by root: opened as that
	 * user would, never blocking, a regular file of that user's or root's, no more of it than
	 * an INI file has. */
	if (cn_safe_read_as(path, uid, gid, text, most, err, sizeof(err)) >= 0)
		ini_parse_string(text, status_dir_only, &d);
	free(text);
}

int cn_config_load_env(struct cn_config *c, char *err, size_t errlen)
{
	const char *p = secure_getenv("CUDANAP_CONFIG");

	if (!p || !*p) {
		cn_config_defaults(c);
		return 0;
	}
	return cn_config_load(c, p, err, errlen);
}
