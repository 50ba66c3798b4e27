/* config: INI loading and validation for struct cn_config (see cn_config.h for the rules). */
#define _GNU_SOURCE
#include "cn_config.h"
#include "cn_dirs.h"
#include "cn_gpumap.h"
#include "cn_ini.h"
#include "cn_near.h"
#include "cn_pagerwire.h"
#include "cn_safe.h"
#include "cn_signame.h"
#include "cn_spanwire.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#define CN_TIMEOUT_MAX_MS (24u * 3600u * 1000u)

CN_NAMES_DEFINE(cn_config_log_level, enum cn_log_level, CN_LOG_ERROR, -1, "error", "info", "debug")
CN_NAMES_DEFINE(cn_config_nccl_mode, enum cn_nccl_mode, CN_NCCL_AUTO, -1, "auto", "suspend-api",
		"sockets", "off")
CN_NAMES_DEFINE(cn_config_depth, enum cn_depth, CN_DEPTH_FULL, CN_DEPTH_NONE, "full", "light",
		"auto")
CN_NAMES_DEFINE(cn_config_own, enum cn_own, CN_OWN_AUTO, -1, "auto", "always", "never")
CN_NAMES_DEFINE(cn_config_nap_to, enum cn_nap_to, CN_NAP_TO_RAM, -1, "ram", "disk", "auto")
CN_NAMES_DEFINE(cn_config_make_room, enum cn_make_room, CN_MAKE_ROOM_OFF, -1, "false", "true",
		"user", "node", "auto")

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

	if (room && strcmp(room, "1") == 0 && c->nap_room != CN_MAKE_ROOM_USER &&
	    c->nap_room != CN_MAKE_ROOM_NODE)
		c->nap_room = CN_MAKE_ROOM_ON;
	if (!v || !*v)
		return;
	n = strtoul(v, &end, 10);
	if (!*end && n <= 24ul * 3600)
		c->nap_idle_s = (unsigned)n;
}

void cn_config_room(struct cn_config *c)
{
	struct stat st;
	bool pager = stat(c->pager_socket, &st) == 0 && S_ISSOCK(st.st_mode);

	c->nap_make_room = c->nap_room == CN_MAKE_ROOM_ON || c->nap_room == CN_MAKE_ROOM_USER ||
			   c->nap_room == CN_MAKE_ROOM_NODE ||
			   (c->nap_room == CN_MAKE_ROOM_AUTO && pager);
	c->nap_room_node =
		c->nap_room == CN_MAKE_ROOM_NODE ||
		((c->nap_room == CN_MAKE_ROOM_ON || c->nap_room == CN_MAKE_ROOM_AUTO) && pager);
}

bool cn_config_keeps_host(const struct cn_config *c)
{
	return c->nap_keep_host && c->host_cache_pct && c->nap_depth != CN_DEPTH_FULL;
}

bool cn_config_light_naps(const struct cn_config *c)
{
	return c->nap_to != CN_NAP_TO_DISK &&
	       (c->nap_depth == CN_DEPTH_LIGHT ||
		(c->nap_depth == CN_DEPTH_AUTO && (c->nap_idle_s || c->nap_make_room)));
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
	c->nap_depth = CN_DEPTH_AUTO;
	c->nap_keep_host = true;
	c->nap_copy_ahead = true;
	c->host_cache_pct = 50;
	c->nccl_cut_port = 28640;
	c->nap_room = CN_MAKE_ROOM_AUTO;
	snprintf(c->pager_socket, sizeof(c->pager_socket), "%s", CN_PAGER_SOCKET);
	nap_from_env(c);
	cn_config_room(c);
	cn_dirs_status_default(secure_getenv("CUDANAP_STATUS_DIR"), xdg, getuid(), c->status_dir,
			       sizeof(c->status_dir));
}

/* ---- the INI file ---- */

struct load_ctx {
	struct cn_config *c;
	unsigned long long seen; /* bit per key_table entry */
	int prepare_line;	 /* where [signals] prepare was set, for the check after the file */
	int mode_line;		 /* where [nccl] mode was set, likewise */
	int nap_to_line;	 /* where [nap] to was set, likewise */
};

/* How a key's value is read, and where it goes (struct key below). */
enum key_kind {
	K_BOOL,	   /* true/false, yes/no, on/off, 1/0: a bool */
	K_SIGNAL,  /* a signal's name or number: an int */
	K_MS,	   /* milliseconds, 0 to CN_TIMEOUT_MAX_MS, at least min: an unsigned */
	K_COUNT,   /* a number of unit, 0 to max: an unsigned */
	K_WORD,	   /* one of words, by its index: an int (or an enum of int's size) */
	K_FLAG,	   /* one of two words: a bool, true for the second */
	K_PATH,	   /* an absolute path, or the word off for none ("") */
	K_HOOK,	   /* a command of fewer than CN_HOOK_LEN characters */
	K_GPU_MAP, /* [restore] gpu_map: a struct cn_gpumap */
	K_ROOM	   /* [nap] make_room: a bool, or user, node, auto: an enum cn_make_room */
};

/* One key of the INI: its kind, where it goes in struct cn_config (size: a string's size), and
 * its bounds. */
struct key {
	const char *section, *key;
	enum key_kind kind;
	size_t offset, size;
	unsigned long min, max;	  /* K_MS: min (why says it when under); K_COUNT: max */
	const char *unit;	  /* K_COUNT: what is counted */
	const char *const *words; /* K_WORD (n_words), K_FLAG (2); K_PATH: the word for none */
	unsigned n_words;
	const char *why; /* K_WORD, K_FLAG: what a value must be; K_MS: why at least min */
};

#define AT(field)                                                                                  \
	.offset = offsetof(struct cn_config, field), .size = sizeof(((struct cn_config *)0)->field)
#define WORDS(...)                                                                                 \
	.words = (const char *const[]){ __VA_ARGS__ },                                             \
	.n_words = sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *)
#define KEY(s, k, how, field) .section = s, .key = k, .kind = how, AT(field)
/* A K_WORD key's words: its enum's table (CN_NAMES_DEFINE above), a value its word's index. */
#define ENUM(name) .words = name##_words, .n_words = sizeof(name##_words) / sizeof(name##_words[0])

_Static_assert(sizeof(enum cn_depth) == sizeof(int) && sizeof(enum cn_own) == sizeof(int) &&
		       sizeof(enum cn_make_room) == sizeof(int) &&
		       sizeof(enum cn_nccl_mode) == sizeof(int) && sizeof(enum cn_nap_to) == sizeof(int),
	       "K_WORD stores an int");
_Static_assert(sizeof(((struct cn_config *)0)->on_suspended) == CN_HOOK_LEN, "a hook's size");

static const struct key key_table[] = {
	{ KEY("signals", "suspend", K_SIGNAL, suspend_signal) },
	{ KEY("signals", "resume", K_SIGNAL, resume_signal) },
	{ KEY("signals", "prepare", K_SIGNAL, prepare_signal) },
	{ KEY("signals", "chain", K_BOOL, chain) },
	{ KEY("lock", "timeout_ms", K_MS, lock_timeout_ms) },
	{ KEY("restore", "gpu_map", K_GPU_MAP, gpu_map) },
	{ KEY("restore", "margin_mib", K_COUNT, margin_mib), .max = 1ul << 20, .unit = "MiB" },
	{ KEY("restore", "reserve", K_BOOL, reserve) },
	{ KEY("restore", "take_turns", K_BOOL, take_turns) },
	{ KEY("restore", "beside_restored", K_BOOL, beside_restored) },
	{ KEY("restore", "room_wait_s", K_COUNT, room_wait_s), .max = 3600, .unit = "seconds" },
	{ KEY("status", "dir", K_PATH, status_dir) },
	{ KEY("status", "if_unusable", K_FLAG, status_refuse), WORDS("run", "refuse"),
	  .why = "one of run, refuse" },
	{ KEY("hibernate", "dir", K_PATH, hibernate_dir), WORDS("") },
	{ KEY("log", "level", K_WORD, log_level), ENUM(cn_config_log_level),
	  .why = "one of error, info, debug" },
	{ KEY("log", "target", K_PATH, log_target), WORDS("stderr") },
	{ KEY("hooks", "on_suspended", K_HOOK, on_suspended) },
	{ KEY("hooks", "on_resumed", K_HOOK, on_resumed) },
	{ KEY("hooks", "on_failure", K_HOOK, on_failure) },
	{ KEY("hooks", "timeout_ms", K_MS, hook_timeout_ms), .min = 1,
	  .why = "must be at least 1 ms: hooks always run under a timeout" },
	{ KEY("performance", "hugepages", K_BOOL, hugepages) },
	{ KEY("performance", "prefault_threads", K_COUNT, prefault_threads), .max = 256,
	  .unit = "threads" },
	{ KEY("performance", "keep_host_buffer", K_BOOL, keep_host_buffer) },
	{ KEY("performance", "copy_threads", K_COUNT, copy_threads), .max = 64, .unit = "threads" },
	{ KEY("performance", "prepare_s", K_COUNT, prepare_s), .max = 86400, .unit = "seconds" },
	{ KEY("preflight", "allow_jax", K_BOOL, allow_jax) },
	{ KEY("preflight", "allow_nccl", K_BOOL, allow_nccl) },
	{ KEY("preflight", "host_memory", K_BOOL, host_check) },
	{ KEY("preflight", "host_margin_mib", K_COUNT, host_margin_mib), .max = 1ul << 24,
	  .unit = "MiB" },
	{ KEY("controller", "watchdog_ms", K_MS, watchdog_ms), .min = 1000,
	  .why = "must be at least 1000 ms" },
	{ KEY("nccl", "suspendable", K_BOOL, nccl_suspendable) },
	{ KEY("nccl", "mode", K_WORD, nccl_mode), ENUM(cn_config_nccl_mode),
	  .why = "one of auto, suspend-api, sockets, off" },
	{ KEY("nccl", "cut_port", K_COUNT, nccl_cut_port), .max = 65536 - CN_SPANWIRE_PORTS,
	  .unit = "the first port" },
	{ KEY("nap", "idle_s", K_COUNT, nap_idle_s), .max = 24 * 3600, .unit = "seconds" },
	{ KEY("nap", "to", K_WORD, nap_to), ENUM(cn_config_nap_to), .why = "ram, disk or auto" },
	{ KEY("nap", "wake_on", K_FLAG, nap_wake_any), WORDS("home", "any"), .why = "home or any" },
	{ KEY("nap", "make_room", K_ROOM, nap_room) },
	{ KEY("nap", "pager_socket", K_PATH, pager_socket) },
	{ KEY("nap", "min_idle_s", K_COUNT, nap_min_idle_s), .max = 24 * 3600, .unit = "seconds" },
	{ KEY("nap", "depth", K_WORD, nap_depth), ENUM(cn_config_depth),
	  .why = "full, light or auto" },
	{ KEY("nap", "full_after_s", K_COUNT, nap_full_after_s), .max = 24 * 3600,
	  .unit = "seconds" },
	{ KEY("nap", "keep_host_copy", K_BOOL, nap_keep_host) },
	{ KEY("nap", "copy_ahead", K_BOOL, nap_copy_ahead) },
	{ KEY("memory", "host_cache", K_COUNT, host_cache_pct), .max = 90, .unit = "percent" },
	{ KEY("peer", "mode", K_FLAG, peer_off), WORDS("refuse", "off"), .why = "refuse or off" },
	{ KEY("memory", "own", K_WORD, own), ENUM(cn_config_own), .why = "auto, always or never" },
};
#define N_KEYS (sizeof(key_table) / sizeof(key_table[0]))
_Static_assert(N_KEYS <= 64, "one bit per key in load_ctx.seen");

static int word_index(const struct key *k, const char *v)
{
	for (unsigned i = 0; i < k->n_words; i++)
		if (strcasecmp(v, k->words[i]) == 0)
			return (int)i;
	return -1;
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

static int set_room(enum cn_make_room *dst, const char *v, char *why, size_t len)
{
	int w = cn_config_make_room_from_string(v);
	bool on;

	if (w >= 0)
		*dst = (enum cn_make_room)w;
	else if (set_bool(&on, v, why, len) == 0) /* yes, on, 1 and the others */
		*dst = on ? CN_MAKE_ROOM_ON : CN_MAKE_ROOM_OFF;
	else {
		snprintf(why, len, "'%s' is not true, false, user, node or auto", v);
		return -EINVAL;
	}
	return 0;
}

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

static int set_number(const struct key *k, unsigned *dst, const char *v, char *why, size_t len)
{
	unsigned long n, max = k->kind == K_MS ? CN_TIMEOUT_MAX_MS : k->max;
	char digits[32];
	size_t l = strlen(v);

	/* a share may be written 50 or 50% */
	if (k->unit && strcmp(k->unit, "percent") == 0 && l && l < sizeof(digits) &&
	    v[l - 1] == '%') {
		memcpy(digits, v, l - 1);
		digits[l - 1] = '\0';
		v = digits;
	}
	if (cn_config_uint(v, max, &n) < 0) {
		if (k->kind == K_MS)
			snprintf(why, len, "'%s' is not a number of milliseconds from 0 to %u", v,
				 CN_TIMEOUT_MAX_MS);
		else
			snprintf(why, len, "'%s' is not a number of %s from 0 to %lu", v, k->unit,
				 max);
		return -EINVAL;
	}
	*dst = (unsigned)n;
	if (n < k->min) {
		snprintf(why, len, "%s", k->why);
		return -EINVAL;
	}
	return 0;
}

static int set_string(const struct key *k, char *dst, const char *v, char *why, size_t len)
{
	if (k->kind == K_PATH && k->words && strcmp(v, k->words[0]) == 0) {
		dst[0] = '\0';
		return 0;
	}
	if (k->kind == K_HOOK && strlen(v) >= k->size) {
		snprintf(why, len, "command longer than %zu characters", k->size - 1);
		return -EINVAL;
	}
	if (k->kind == K_PATH && (v[0] != '/' || strlen(v) >= k->size)) {
		snprintf(why, len, "'%s' must be an absolute path", v);
		return -EINVAL;
	}
	strcpy(dst, v);
	return 0;
}

/* The value v of key k, into c: 0, or -EINVAL with why. */
static int set_key(const struct key *k, struct cn_config *c, const char *v, char *why, size_t len)
{
	void *dst = (char *)c + k->offset;
	int i;

	switch (k->kind) {
	case K_BOOL:
		return set_bool(dst, v, why, len);
	case K_SIGNAL:
		return set_signal(dst, v, why, len);
	case K_MS:
	case K_COUNT:
		return set_number(k, dst, v, why, len);
	case K_WORD:
	case K_FLAG:
		if ((i = word_index(k, v)) < 0) {
			snprintf(why, len, "'%s' is not %s", v, k->why);
			return -EINVAL;
		}
		if (k->kind == K_FLAG)
			*(bool *)dst = i == 1;
		else
			*(int *)dst = i;
		return 0;
	case K_PATH:
	case K_HOOK:
		return set_string(k, dst, v, why, len);
	case K_GPU_MAP:
		return cn_gpumap_parse(v, dst, why, len);
	case K_ROOM:
		return set_room(dst, v, why, len);
	}
	return -EINVAL;
}

/* The sections of key_table, each once, into out (N_KEYS at most); their number. */
static size_t sections(const char **out)
{
	size_t n = 0;

	for (size_t i = 0; i < N_KEYS; i++) {
		size_t j = 0;

		while (j < n && strcmp(out[j], key_table[i].section) != 0)
			j++;
		if (j == n)
			out[n++] = key_table[i].section;
	}
	return n;
}

/* A key that is not one of its section's: the key of that section it is nearest, else the
 * sections it is a key of ("[memory] host_cache", "[lock] timeout_ms or [hooks] timeout_ms"); ""
 * when there is neither. */
static void key_hint(const char *section, const char *name, char *hint, size_t len)
{
	const char *keys[N_KEYS];
	size_t n = 0, o = 0;
	int near;

	hint[0] = '\0';
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(section, key_table[i].section) == 0)
			keys[n++] = key_table[i].key;
	if ((near = cn_near_best(name, keys, n)) >= 0) {
		snprintf(hint, len, "%s", keys[near]);
		return;
	}
	for (size_t i = 0; i < N_KEYS && o < len; i++)
		if (strcasecmp(name, key_table[i].key) == 0)
			o += (size_t)snprintf(hint + o, len - o, "%s[%s] %s", o ? " or " : "",
					      key_table[i].section, key_table[i].key);
}

/* A key of no section's of ours (a key of an unknown section is not handed here: cn_ini_read
 * said the section), with the key meant. */
static int unknown_key(const char *section, const char *name, char *msg, size_t msglen)
{
	char hint[80];

	key_hint(section, name, hint, sizeof(hint));
	if (!section[0])
		snprintf(msg, msglen, "%s: a key before any [section]%s%s%s", name,
			 hint[0] ? CN_INI_MEANT : "", hint, hint[0] ? "?" : "");
	else
		snprintf(msg, msglen, "%s.%s: unknown key%s%s%s", section, name,
			 hint[0] ? CN_INI_MEANT : "", hint, hint[0] ? "?" : "");
	return -EINVAL;
}

static int on_ini_key(void *user, const char *section, const char *name, const char *value,
		      int line, char *msg, size_t msglen)
{
	struct load_ctx *x = user;
	char why[CN_ERR_LEN - 128];
	size_t i;

	for (i = 0; i < N_KEYS; i++)
		if (strcmp(section, key_table[i].section) == 0 &&
		    strcmp(name, key_table[i].key) == 0)
			break;
	if (i == N_KEYS)
		return unknown_key(section, name, msg, msglen);
	if (x->seen & (1ull << i)) {
		snprintf(why, sizeof(why),
			 "given more than once (an indented line continues the key above)");
	} else {
		x->seen |= 1ull << i;
		if (key_table[i].offset == offsetof(struct cn_config, prepare_signal))
			x->prepare_line = line;
		if (key_table[i].offset == offsetof(struct cn_config, nccl_mode))
			x->mode_line = line;
		if (key_table[i].offset == offsetof(struct cn_config, nap_to))
			x->nap_to_line = line;
		if (set_key(&key_table[i], x->c, value, why, sizeof(why)) == 0)
			return 0;
	}
	snprintf(msg, msglen, "%s.%s: %s", section, name, why);
	return -EINVAL;
}

/* What one key asks of another, once the whole file is read: each broken rule kept at its key's
 * line. */
static void check_keys(struct load_ctx *x, struct cn_ini_sink *errs)
{
	struct cn_config *c = x->c;

	if (c->prepare_signal &&
	    (c->prepare_signal == c->suspend_signal || c->prepare_signal == c->resume_signal))
		cn_ini_error(
			errs, x->prepare_line, "signals", "prepare", "",
			"signals.prepare: is the suspend or resume signal too; prepare needs a "
			"signal of its own");
	/* suspendable = true is what mode = sockets means, and says the same. */
	if (c->nccl_suspendable && x->mode_line && c->nccl_mode != CN_NCCL_SOCKETS)
		cn_ini_error(errs, x->mode_line, "nccl", "mode", "",
			     "nccl.mode: suspendable = true makes it sockets; give one of the two");
	if (c->nccl_suspendable)
		c->nccl_mode = CN_NCCL_SOCKETS;
	c->nccl_suspendable = c->nccl_mode == CN_NCCL_SOCKETS;
	if (c->nap_to != CN_NAP_TO_RAM && !c->hibernate_dir[0])
		cn_ini_error(errs, x->nap_to_line, "nap", "to", "",
			     c->nap_to == CN_NAP_TO_DISK
				     ? "nap.to: disk needs a directory in [hibernate] dir"
				     : "nap.to: auto needs a directory in [hibernate] dir");
}

/* Defaults, then the file at path, its errors kept in errs: 0 when there is none. */
static int load(struct cn_config *c, const char *path, struct cn_ini_sink *errs)
{
	const char *names[N_KEYS];
	struct load_ctx x = { .c = c };
	int r;

	cn_config_defaults(c);
	if (strlen(path) >= sizeof(c->path)) {
		cn_ini_error(errs, 0, "", "", "", "path too long");
		return -ENAMETOOLONG;
	}
	strcpy(c->path, path);
	r = cn_ini_read(path, names, sections(names), on_ini_key, &x, errs);
	if (r < 0 && r != -EINVAL)
		return r;
	check_keys(&x, errs);
	if (errs->n || errs->more)
		return -EINVAL;
	nap_from_env(c);
	cn_config_room(c);
	return 0;
}

int cn_config_check(struct cn_config *c, const char *path, struct cn_ini_errors *errs)
{
	struct cn_ini_sink sink = { .at = errs->at, .cap = CN_INI_MAX_ERRORS };
	int r = load(c, path, &sink);

	errs->n = sink.n;
	errs->more = sink.more;
	return r;
}

int cn_config_load(struct cn_config *c, const char *path, char *err, size_t errlen)
{
	struct cn_ini_error first;
	struct cn_ini_sink one = { .at = &first, .cap = 1 };
	int r = load(c, path, &one);

	if (r < 0)
		cn_ini_first(path, &one, err, errlen);
	return r;
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
	static const size_t most = CN_CONFIG_MAX + 2;
	struct dir_only d = { dir, len };
	char err[CN_ERR_LEN], *text;
	ssize_t n;

	cn_dirs_status_default(status_env, xdg, uid, dir, len);
	if (!path || !*path || !(text = malloc(most)))
		return;
	/* Named by a process's environment, maybe another user's and read by root: opened as that
	 * user would, never blocking, a regular file of that user's or root's, no more of it than
	 * an INI file has; a longer one is none the process could have started with. */
	n = cn_safe_read_as(path, uid, gid, text, most, err, sizeof(err));
	if (n >= 0 && (size_t)n <= CN_CONFIG_MAX)
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
