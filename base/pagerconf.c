/* pagerconf: the node pager's policy read and checked (see cn_pagerconf.h). */
#define _GNU_SOURCE
#include "cn_pagerconf.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cn_config.h"
#include "cn_ini.h"
#include "cn_near.h"
#include "cn_pagerwire.h"

#define PRIORITY_MAX 1000

struct load {
	struct cn_pagerconf *p;
	char section[80]; /* the section of the last key */
	int rule;	  /* its rule: -1 [pager], else an index */
	unsigned seen;	  /* bit per key of the current section */
	int pager_line;	  /* where [pager] began, 0 before */
};

void cn_pagerconf_defaults(struct cn_pagerconf *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->socket, sizeof(p->socket), "%s", CN_PAGER_SOCKET);
	snprintf(p->state, sizeof(p->state), "%s", CN_PAGER_STATE);
	p->min_idle_s = 60;
	p->wait_s = 60;
	p->margin_mib = 256;
	p->dflt.share_pct = 100;
	snprintf(p->dflt.name, sizeof(p->dflt.name), "*");
}

static int uint_of(const char *v, unsigned long max, unsigned *out, const char *unit, char *why,
		   size_t len)
{
	unsigned long n;

	if (cn_config_uint(v, max, &n) < 0) {
		snprintf(why, len, "'%s' is not a number of %s from 0 to %lu", v, unit, max);
		return -EINVAL;
	}
	*out = (unsigned)n;
	return 0;
}

static int share_of(const char *v, unsigned *out, char *why, size_t len)
{
	char d[16];
	size_t l = strlen(v);

	if (l && l < sizeof(d) && v[l - 1] == '%') {
		memcpy(d, v, l - 1);
		d[l - 1] = '\0';
		v = d;
	}
	return uint_of(v, 100, out, "percent", why, len);
}

static int priority_of(const char *v, int *out, char *why, size_t len)
{
	unsigned n;
	bool neg = v[0] == '-';

	if (uint_of(v + neg, PRIORITY_MAX, &n, "", why, len) < 0) {
		snprintf(why, len, "'%s' is not a priority from -%d to %d", v, PRIORITY_MAX,
			 PRIORITY_MAX);
		return -EINVAL;
	}
	*out = neg ? -(int)n : (int)n;
	return 0;
}

static int bool_of(const char *v, bool *out, char *why, size_t len)
{
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") ||
	    !strcmp(v, "1"))
		return *out = true, 0;
	if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off") ||
	    !strcmp(v, "0"))
		return *out = false, 0;
	snprintf(why, len, "'%s' is not true or false", v);
	return -EINVAL;
}

static int path_of(const char *v, char *out, size_t size, char *why, size_t len)
{
	if (v[0] != '/' || strlen(v) >= size) {
		snprintf(why, len, "'%s' must be an absolute path", v);
		return -EINVAL;
	}
	snprintf(out, size, "%s", v);
	return 0;
}

/* never_nap_programs: absolute paths or globs of them, separated by spaces. */
static int programs_of(struct cn_pagerconf *p, const char *v, char *why, size_t len)
{
	char list[512], *save = NULL;

	snprintf(list, sizeof(list), "%s", v);
	for (char *w = strtok_r(list, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		if (p->n_programs == CN_PAGERCONF_PROGRAMS) {
			snprintf(why, len, "more than %d programs", CN_PAGERCONF_PROGRAMS);
			return -EINVAL;
		}
		if (path_of(w, p->programs[p->n_programs], sizeof(p->programs[0]), why, len) < 0)
			return -EINVAL;
		p->n_programs++;
	}
	return 0;
}

/* A user or group this machine knows, by name or number: its id, or -ENOENT with why. */
static int id_of(bool group, const char *name, unsigned *id, char *why, size_t len)
{
	char buf[4096];
	unsigned long n;

	if (group) {
		struct group g, *gp = NULL;

		if (getgrnam_r(name, &g, buf, sizeof(buf), &gp) == 0 && gp)
			return *id = (unsigned)gp->gr_gid, 0;
	} else {
		struct passwd pw, *pp = NULL;

		if (getpwnam_r(name, &pw, buf, sizeof(buf), &pp) == 0 && pp)
			return *id = (unsigned)pp->pw_uid, 0;
	}
	if (cn_config_uint(name, 0x7fffffff, &n) == 0)
		return *id = (unsigned)n, 0;
	snprintf(why, len, "%s %s: no such %s on this machine", group ? "group" : "user", name,
		 group ? "group" : "user");
	return -ENOENT;
}

/* A new section: [pager], [user NAME] or [group NAME]; its rule made. */
static int enter(struct load *x, const char *section, int line, char *why, size_t len)
{
	struct cn_pagerconf *p = x->p;
	struct cn_pagerconf_rule *r;
	bool group = strncmp(section, "group ", 6) == 0;
	const char *name = section + (group ? 6 : 5);

	snprintf(x->section, sizeof(x->section), "%s", section);
	x->seen = 0;
	if (strcmp(section, "pager") == 0) {
		if (x->pager_line) {
			snprintf(why, len, "[pager]: given twice (first at line %d)",
				 x->pager_line);
			return -EINVAL;
		}
		x->pager_line = line;
		x->rule = -1;
		return 0;
	}
	if (!group && strncmp(section, "user ", 5) != 0) {
		snprintf(why, len, "[%s]: unknown section (pager, user NAME, group NAME)", section);
		return -EINVAL;
	}
	while (*name == ' ')
		name++;
	for (int i = 0; i < p->n_rules; i++)
		if (p->rules[i].group == group && strcmp(p->rules[i].name, name) == 0) {
			snprintf(why, len, "[%s]: given twice (first at line %d)", section,
				 p->rules[i].line);
			return -EINVAL;
		}
	if (p->n_rules == CN_PAGERCONF_RULES || !*name || strlen(name) >= sizeof(r->name)) {
		snprintf(why, len, "[%s]: %s", section,
			 *name ? "too many sections, or a name over 32 characters" : "no name");
		return -EINVAL;
	}
	r = &p->rules[p->n_rules];
	*r = (struct cn_pagerconf_rule){ .group = group, .line = line };
	snprintf(r->name, sizeof(r->name), "%s", name);
	if (id_of(group, name, &r->id, why, len) < 0)
		return -ENOENT;
	x->rule = p->n_rules++;
	return 0;
}

/* A key every section has: 1 when it was not one. */
static int rule_key(struct cn_pagerconf_rule *r, const char *key, const char *v, char *why,
		    size_t len)
{
	if (strcmp(key, "share") == 0)
		return r->set |= 1, share_of(v, &r->share_pct, why, len);
	if (strcmp(key, "priority") == 0)
		return r->set |= 2, priority_of(v, &r->priority, why, len);
	if (strcmp(key, "never_nap") == 0)
		return r->set |= 4, bool_of(v, &r->never, why, len);
	return 1;
}

/* One of two words: *on true for the second. */
static int flag_of(const char *v, const char *off, const char *on_word, bool *on, char *why,
		   size_t len)
{
	if (strcmp(v, off) && strcmp(v, on_word)) {
		snprintf(why, len, "'%s' is not %s or %s", v, off, on_word);
		return -EINVAL;
	}
	*on = strcmp(v, on_word) == 0;
	return 0;
}

/* A key of [pager] only: 1 when it was not one. */
static int pager_key(struct cn_pagerconf *p, const char *key, const char *v, char *why, size_t len)
{
	if (strcmp(key, "socket") == 0)
		return path_of(v, p->socket, sizeof(p->socket), why, len);
	if (strcmp(key, "state") == 0)
		return path_of(v, p->state, sizeof(p->state), why, len);
	if (strcmp(key, "min_idle_s") == 0)
		return uint_of(v, 24 * 3600, &p->min_idle_s, "seconds", why, len);
	if (strcmp(key, "wait_s") == 0)
		return uint_of(v, 600, &p->wait_s, "seconds", why, len);
	if (strcmp(key, "margin_mib") == 0)
		return uint_of(v, 1u << 20, &p->margin_mib, "MiB", why, len);
	if (strcmp(key, "never_nap_programs") == 0)
		return programs_of(p, v, why, len);
	if (strcmp(key, "when_full") == 0)
		return flag_of(v, "fail", "wait", &p->wait, why, len);
	if (strcmp(key, "log") == 0)
		return flag_of(v, "info", "debug", &p->debug, why, len);
	return 1;
}

static const char *const pager_keys[] = { "share",
					  "priority",
					  "never_nap",
					  "socket",
					  "state",
					  "min_idle_s",
					  "wait_s",
					  "margin_mib",
					  "when_full",
					  "log",
					  "never_nap_programs" };

static int on_key(void *user, const char *section, const char *key, const char *value, int line,
		  char *msg, size_t msglen)
{
	struct load *x = user;
	char why[CN_ERR_LEN - 128];
	unsigned bit = 0;
	int r;

	if (!section[0]) {
		snprintf(msg, msglen, "%s: a key before any [section]", key);
		return -EINVAL;
	}
	if (strcmp(section, x->section) != 0 && enter(x, section, line, msg, msglen) < 0)
		return -EINVAL;
	for (unsigned i = 0; i < sizeof(pager_keys) / sizeof(pager_keys[0]); i++)
		if (strcmp(key, pager_keys[i]) == 0)
			bit = 1u << i;
	if (x->seen & bit) {
		snprintf(msg, msglen, "%s.%s: given more than once", section, key);
		return -EINVAL;
	}
	x->seen |= bit;
	r = rule_key(x->rule < 0 ? &x->p->dflt : &x->p->rules[x->rule], key, value, why,
		     sizeof(why));
	if (r == 1 && x->rule < 0)
		r = pager_key(x->p, key, value, why, sizeof(why));
	if (r == 1) {
		/* the keys of this section: the first three are every section's */
		int near =
			cn_near_best(key, pager_keys,
				     x->rule < 0 ? sizeof(pager_keys) / sizeof(pager_keys[0]) : 3);

		snprintf(why, sizeof(why), "unknown key%s%s%s%s",
			 x->rule < 0 ? "" : " (a user's or group's: share, priority, never_nap)",
			 near >= 0 ? CN_INI_MEANT : "", near >= 0 ? pager_keys[near] : "",
			 near >= 0 ? "?" : "");
	}
	if (r == 0)
		return 0;
	snprintf(msg, msglen, "%s.%s: %s", section, key, why);
	return -EINVAL;
}

/* Defaults, then the file at path, its errors kept in errs: 0 when there is none. */
static int load(struct cn_pagerconf *p, const char *path, struct cn_ini_sink *errs)
{
	struct load x = { .p = p, .rule = -1 };
	int r;

	cn_pagerconf_defaults(p);
	if (strlen(path) >= sizeof(p->path)) {
		cn_ini_error(errs, 0, "", "", "", "path too long");
		return -ENAMETOOLONG;
	}
	snprintf(p->path, sizeof(p->path), "%s", path);
	r = cn_ini_read(path, NULL, 0, on_key, &x, errs);
	/* what a section does not say is the [pager] section's, wherever that is in the file */
	for (int i = 0; r == 0 && i < p->n_rules; i++) {
		struct cn_pagerconf_rule *u = &p->rules[i];

		u->share_pct = u->set & 1 ? u->share_pct : p->dflt.share_pct;
		u->priority = u->set & 2 ? u->priority : p->dflt.priority;
		u->never = u->set & 4 ? u->never : p->dflt.never;
	}
	return r;
}

int cn_pagerconf_load(struct cn_pagerconf *p, const char *path, char *err, size_t errlen)
{
	struct cn_ini_error first;
	struct cn_ini_sink one = { .at = &first, .cap = 1 };
	int r = load(p, path, &one);

	if (r < 0)
		cn_ini_first(path, &one, err, errlen);
	return r;
}

int cn_pagerconf_check(struct cn_pagerconf *p, const char *path, struct cn_ini_errors *errs)
{
	struct cn_ini_sink sink = { .at = errs->at, .cap = CN_INI_MAX_ERRORS };
	int r = load(p, path, &sink);

	errs->n = sink.n;
	errs->more = sink.more;
	return r;
}

int cn_pagerconf_rule_of(const struct cn_pagerconf *p, uid_t uid, const gid_t *groups, int n_groups)
{
	for (int i = 0; i < p->n_rules; i++)
		if (!p->rules[i].group && p->rules[i].id == (unsigned)uid)
			return i;
	for (int i = 0; i < p->n_rules; i++)
		for (int g = 0; p->rules[i].group && g < n_groups; g++)
			if (p->rules[i].id == (unsigned)groups[g])
				return i;
	return -1;
}

const struct cn_pagerconf_rule *cn_pagerconf_rule(const struct cn_pagerconf *p, int r)
{
	return r >= 0 && r < p->n_rules ? &p->rules[r] : &p->dflt;
}

bool cn_pagerconf_never_program(const struct cn_pagerconf *p, const char *exe)
{
	for (int i = 0; i < p->n_programs; i++)
		if (fnmatch(p->programs[i], exe, FNM_PATHNAME) == 0)
			return true;
	return false;
}
