/* pagerwire: the node pager's messages written and read (see cn_pagerwire.h). */
#define _GNU_SOURCE
#include "cn_pagerwire.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB_MAX (1ull << 30) /* a PiB: more than any GPU has */

CN_NAMES_DEFINE(cn_pagerwire_word, enum cn_pagerwire_kind, CN_PW_NEED, -EINVAL, "need", "done",
		"coming", "wait", "made", "refused")

void cn_pagerwire_user(const char *name, uid_t uid, char *out, size_t len)
{
	size_t n = name ? strlen(name) : 0;
	bool fine = n > 0 && n <= 32 && name[0] != '-';

	for (size_t i = 0; fine && i < n; i++)
		fine = isalnum((unsigned char)name[i]) || strchr("._-", name[i]);
	if (fine)
		snprintf(out, len, "%s", name);
	else
		snprintf(out, len, "%u", (unsigned)uid);
}

void cn_pagerwire_text(char *dst, size_t len, const char *src, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && src[i] && o + 1 < len; i++)
		dst[o++] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[o] = '\0';
}

int cn_pagerwire_put(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*o >= len)
		return -ENOSPC;
	va_start(ap, fmt);
	n = vsnprintf(buf + *o, len - *o, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *o)
		return -ENOSPC;
	*o += (size_t)n;
	return 0;
}

int cn_pagerwire_need_fmt(const struct cn_pagerwire_need *n, char *buf, size_t len)
{
	char gpu[CN_UUID_STR_LEN], what[sizeof(n->what)];
	size_t o = 0;

	cn_uuid_fmt(&n->gpu, gpu);
	cn_pagerwire_text(what, sizeof(what), n->what, strlen(n->what));
	if (cn_pagerwire_put(buf, len, &o, "need gpu=%s mib=%llu context=%d light=%d what=%s", gpu,
			     (unsigned long long)n->mib, n->context, n->light, what) < 0)
		return -ENOSPC;
	return (int)o;
}

int cn_pagerwire_answer_fmt(const struct cn_pagerwire_answer *a, char *buf, size_t len)
{
	size_t o = 0;
	int r = 0;

	if (a->kind < CN_PW_COMING || a->kind > CN_PW_REFUSED)
		return -EINVAL;
	r |= cn_pagerwire_put(buf, len, &o, "%s", cn_pagerwire_word_to_string(a->kind));
	if ((a->kind == CN_PW_MADE || a->kind == CN_PW_COMING) && a->gpu >= 0)
		r |= cn_pagerwire_put(buf, len, &o, " gpu=%d", a->gpu);
	if (a->kind == CN_PW_MADE || a->kind == CN_PW_WAIT)
		r |= cn_pagerwire_put(buf, len, &o, " s=%.2f", a->seconds);
	for (int i = 0; i < a->n && i < CN_PAGERWIRE_NAPPED; i++) {
		const struct cn_pagerwire_napped *p = &a->napped[i];
		char user[33];

		cn_pagerwire_user(p->user, 0, user, sizeof(user));
		r |= cn_pagerwire_put(buf, len, &o, "%s%d:%s:%llu:%.0f:%c",
				      i ? ";" : " napped=", p->pid, user,
				      (unsigned long long)p->mib, p->idle_s, p->light ? 'L' : 'F');
	}
	if (a->kind == CN_PW_REFUSED && a->soon_s > 0)
		r |= cn_pagerwire_put(buf, len, &o, " soon=%.2f", a->soon_s);
	if (a->kind == CN_PW_WAIT || a->kind == CN_PW_REFUSED) {
		char why[sizeof(a->why)];

		cn_pagerwire_text(why, sizeof(why), a->why, strlen(a->why));
		r |= cn_pagerwire_put(buf, len, &o, " why=%s", why);
	}
	return r < 0 ? -ENOSPC : (int)o;
}

/* The message's first word and the rest, copied NUL-terminated into line. */
static int split(const char *msg, size_t n, char *line, size_t len, const char **rest)
{
	size_t w;
	int k;

	if (n == 0 || n >= len || n > CN_PAGERWIRE_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] >= 0x7f)
			return -EINVAL;
	memcpy(line, msg, n);
	line[n] = '\0';
	w = strcspn(line, " ");
	*rest = line + w + (line[w] == ' ');
	line[w] = '\0'; /* the first word alone, for the table */
	k = cn_pagerwire_word_from_string(line);
	return k;
}

int cn_pagerwire_kind(const char *msg, size_t n)
{
	char line[CN_PAGERWIRE_MAX + 1];
	const char *rest;

	return split(msg, n, line, sizeof(line), &rest);
}

static int number(const char *v, size_t n, unsigned long long max, unsigned long long *out)
{
	char d[24], *end;

	if (n == 0 || n >= sizeof(d) || !isdigit((unsigned char)v[0]))
		return -EINVAL;
	memcpy(d, v, n);
	d[n] = '\0';
	errno = 0;
	*out = strtoull(d, &end, 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

static int seconds(const char *v, size_t n, double *out)
{
	char d[24], *end;

	if (n == 0 || n >= sizeof(d) || !isdigit((unsigned char)v[0]))
		return -EINVAL;
	memcpy(d, v, n);
	d[n] = '\0';
	*out = strtod(d, &end);
	return *end || !isfinite(*out) || *out > 1e7 ? -EINVAL : 0;
}

/* One key=value word of rest taken: its key and value (up to the next space; the free text
 * key's up to the end). 0, 1 at the end, -EINVAL. */
static int next(const char **rest, const char *free_key, const char **key, size_t *klen,
		const char **val, size_t *vlen)
{
	const char *s = *rest, *eq;

	if (!*s)
		return 1;
	eq = strchr(s, '=');
	if (!eq || eq == s || memchr(s, ' ', (size_t)(eq - s)))
		return -EINVAL;
	*key = s;
	*klen = (size_t)(eq - s);
	*val = eq + 1;
	if (free_key && *klen == strlen(free_key) && strncmp(s, free_key, *klen) == 0)
		*vlen = strlen(*val);
	else
		*vlen = strcspn(*val, " ");
	*rest = *val + *vlen + ((*val)[*vlen] == ' ');
	return 0;
}

static bool is_key(const char *key, size_t klen, const char *want)
{
	return klen == strlen(want) && strncmp(key, want, klen) == 0;
}

static int flag(const char *v, size_t n, bool *out)
{
	if (n != 1 || (v[0] != '0' && v[0] != '1'))
		return -EINVAL;
	*out = v[0] == '1';
	return 0;
}

int cn_pagerwire_need_parse(const char *msg, size_t n, struct cn_pagerwire_need *out)
{
	char line[CN_PAGERWIRE_MAX + 1], gpu[CN_UUID_STR_LEN];
	const char *rest, *key, *val;
	size_t klen, vlen;
	unsigned long long mib = 0;
	unsigned seen = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (split(msg, n, line, sizeof(line), &rest) != CN_PW_NEED)
		return -EINVAL;
	while ((r = next(&rest, "what", &key, &klen, &val, &vlen)) == 0) {
		unsigned bit;

		if (is_key(key, klen, "gpu") && vlen < sizeof(gpu)) {
			memcpy(gpu, val, vlen);
			gpu[vlen] = '\0';
			r = cn_uuid_parse(gpu, &out->gpu), bit = 1;
		} else if (is_key(key, klen, "mib")) {
			r = number(val, vlen, MIB_MAX, &mib), bit = 2;
			out->mib = mib;
		} else if (is_key(key, klen, "context")) {
			r = flag(val, vlen, &out->context), bit = 4;
		} else if (is_key(key, klen, "light")) {
			r = flag(val, vlen, &out->light), bit = 8;
		} else if (is_key(key, klen, "what") && vlen < sizeof(out->what)) {
			cn_pagerwire_text(out->what, sizeof(out->what), val, vlen), r = 0, bit = 16;
		} else {
			return -EINVAL;
		}
		if (r < 0 || (seen & bit))
			return -EINVAL;
		seen |= bit;
	}
	return r < 0 || (seen & 3) != 3 || out->mib == 0 ? -EINVAL : 0;
}

/* "PID:USER:MIB:IDLE:L|F;..." into a->napped. */
static int napped_list(const char *v, size_t n, struct cn_pagerwire_answer *a)
{
	char list[CN_PAGERWIRE_MAX + 1], *save = NULL;

	memcpy(list, v, n);
	list[n] = '\0';
	for (char *e = strtok_r(list, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
		struct cn_pagerwire_napped *p = &a->napped[a->n];
		char user[34], how;
		unsigned long long mib;
		double idle;
		int pid, used = 0;

		if (a->n >= CN_PAGERWIRE_NAPPED ||
		    sscanf(e, "%d:%33[A-Za-z0-9._-]:%llu:%lf:%c%n", &pid, user, &mib, &idle, &how,
			   &used) != 5 ||
		    e[used] || pid <= 0 || strlen(user) > 32 || mib > MIB_MAX || !isfinite(idle) ||
		    idle < 0 || idle > 1e9 || (how != 'L' && how != 'F'))
			return -EINVAL;
		*p = (struct cn_pagerwire_napped){
			.pid = pid, .mib = mib, .idle_s = idle, .light = how == 'L'
		};
		snprintf(p->user, sizeof(p->user), "%s", user);
		a->n++;
	}
	return 0;
}

int cn_pagerwire_answer_parse(const char *msg, size_t n, struct cn_pagerwire_answer *out)
{
	char line[CN_PAGERWIRE_MAX + 1];
	const char *rest, *key, *val;
	size_t klen, vlen;
	unsigned seen = 0;
	int k = (memset(out, 0, sizeof(*out)), split(msg, n, line, sizeof(line), &rest)), r;

	if (k < CN_PW_COMING)
		return -EINVAL;
	out->kind = (enum cn_pagerwire_kind)k;
	out->gpu = -1;
	while ((r = next(&rest, "why", &key, &klen, &val, &vlen)) == 0) {
		unsigned bit;

		if (is_key(key, klen, "s") && (k == CN_PW_MADE || k == CN_PW_WAIT))
			r = seconds(val, vlen, &out->seconds), bit = 1;
		else if (is_key(key, klen, "gpu") && (k == CN_PW_MADE || k == CN_PW_COMING)) {
			unsigned long long g = 0;

			r = number(val, vlen, 63, &g), bit = 16;
			out->gpu = (int)g;
		} else if (is_key(key, klen, "soon") && k == CN_PW_REFUSED)
			r = seconds(val, vlen, &out->soon_s), bit = 8;
		else if (is_key(key, klen, "napped") && k != CN_PW_WAIT && k != CN_PW_REFUSED)
			r = napped_list(val, vlen, out), bit = 2;
		else if (is_key(key, klen, "why") && (k == CN_PW_WAIT || k == CN_PW_REFUSED))
			cn_pagerwire_text(out->why, sizeof(out->why), val, vlen), r = 0, bit = 4;
		else
			return -EINVAL;
		if (r < 0 || (seen & bit))
			return -EINVAL;
		seen |= bit;
	}
	return r < 0 ? -EINVAL : 0;
}
