/* pagerstate: the node pager's state file written and read (see cn_pagerstate.h). */
#define _GNU_SOURCE
#include "cn_pagerstate.h"
#include "cn_pagerwire.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "cudanap-pager 1"

/* How a word's value is read, and where it goes. */
enum kind { T_INT, T_ULONG, T_U64, T_DOUBLE, T_STR, T_TEXT };
struct field {
	const char *key;
	enum kind kind;
	size_t offset, size;
};

#define F(type, k, member, how)                                                                    \
	{                                                                                          \
		k, how, offsetof(type, member), sizeof(((type *)0)->member)                        \
	}

static const struct field user_fields[] = {
	F(struct cn_pagerstate_user, "uid", uid, T_INT),
	F(struct cn_pagerstate_user, "name", name, T_STR),
	F(struct cn_pagerstate_user, "asks", asks, T_ULONG),
	F(struct cn_pagerstate_user, "made", made, T_ULONG),
	F(struct cn_pagerstate_user, "refused", refused, T_ULONG),
	F(struct cn_pagerstate_user, "waits", waits, T_ULONG),
	F(struct cn_pagerstate_user, "naps_for_others", naps_for_others, T_ULONG),
	F(struct cn_pagerstate_user, "naps_for_self", naps_for_self, T_ULONG),
	F(struct cn_pagerstate_user, "wait_s", wait_s, T_DOUBLE),
	F(struct cn_pagerstate_user, "napped_s", napped_s, T_DOUBLE),
	{ NULL, 0, 0, 0 },
};
static const struct field gpu_fields[] = {
	F(struct cn_pagerstate_gpu, "index", index, T_INT),
	F(struct cn_pagerstate_gpu, "uuid", uuid, T_STR),
	F(struct cn_pagerstate_gpu, "total_mib", total_mib, T_U64),
	F(struct cn_pagerstate_gpu, "free_mib", free_mib, T_U64),
	F(struct cn_pagerstate_gpu, "at", at, T_STR),
	{ NULL, 0, 0, 0 },
};
static const struct field use_fields[] = {
	F(struct cn_pagerstate_use, "gpu", gpu, T_INT),
	F(struct cn_pagerstate_use, "name", name, T_STR),
	F(struct cn_pagerstate_use, "used_mib", used_mib, T_U64),
	F(struct cn_pagerstate_use, "share_mib", share_mib, T_U64),
	{ NULL, 0, 0, 0 },
};
static const struct field head_fields[] = {
	F(struct cn_pagerstate, "pid", pid, T_INT),
	F(struct cn_pagerstate, "started", started, T_STR),
	F(struct cn_pagerstate, "policy", policy, T_STR),
	{ NULL, 0, 0, 0 },
};

/* A word as it may be written: no space or control character (others become '_'). */
static void word_copy(char *dst, size_t size, const char *src, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && src[i] && o + 1 < size; i++)
		dst[o++] = src[i] > 0x20 && src[i] < 0x7f ? src[i] : '_';
	dst[o] = '\0';
}

/* The fields of one thing at base, as " key=value" words. */
static int put_fields(char *buf, size_t len, size_t *o, const struct field *f, const void *base)
{
	int r = 0;

	for (; f->key; f++) {
		const char *at = (const char *)base + f->offset;
		char w[256];

		switch (f->kind) {
		case T_INT:
			r |= cn_pagerwire_put(buf, len, o, " %s=%d", f->key, *(const int *)at);
			break;
		case T_ULONG:
			r |= cn_pagerwire_put(buf, len, o, " %s=%lu", f->key,
					      *(const unsigned long *)at);
			break;
		case T_U64:
			r |= cn_pagerwire_put(buf, len, o, " %s=%llu", f->key,
					      (unsigned long long)*(const uint64_t *)at);
			break;
		case T_DOUBLE:
			r |= cn_pagerwire_put(buf, len, o, " %s=%.2f", f->key, *(const double *)at);
			break;
		case T_STR:
		case T_TEXT:
			word_copy(w, sizeof(w), at, f->size);
			r |= cn_pagerwire_put(buf, len, o, " %s=%s", f->key, w[0] ? w : "-");
			break;
		}
	}
	return r;
}

int cn_pagerstate_format(const struct cn_pagerstate *s, char *buf, size_t len)
{
	size_t o = 0;
	int r = cn_pagerwire_put(buf, len, &o, MAGIC);

	r |= put_fields(buf, len, &o, head_fields, s);
	r |= cn_pagerwire_put(buf, len, &o, "\n");
	for (int i = 0; i < s->n_users; i++) {
		r |= cn_pagerwire_put(buf, len, &o, "user");
		r |= put_fields(buf, len, &o, user_fields, &s->users[i]);
		r |= cn_pagerwire_put(buf, len, &o, "\n");
	}
	for (int i = 0; i < s->n_gpus; i++) {
		r |= cn_pagerwire_put(buf, len, &o, "gpu");
		r |= put_fields(buf, len, &o, gpu_fields, &s->gpus[i]);
		r |= cn_pagerwire_put(buf, len, &o, "\n");
	}
	for (int i = 0; i < s->n_uses; i++) {
		r |= cn_pagerwire_put(buf, len, &o, "use");
		r |= put_fields(buf, len, &o, use_fields, &s->uses[i]);
		r |= cn_pagerwire_put(buf, len, &o, "\n");
	}
	for (int i = 0; i < s->n_choices; i++) {
		char line[sizeof(s->choices[0])];

		cn_pagerwire_text(line, sizeof(line), s->choices[i], sizeof(line));
		r |= cn_pagerwire_put(buf, len, &o, "choice text=%s\n", line);
	}
	return r ? -ENOSPC : (int)o;
}

/* One "key=value" word into base's field of that key; false when it is not one or malformed. */
static bool take_field(const struct field *f, void *base, const char *key, size_t klen,
		       const char *v)
{
	char *end;

	for (; f->key; f++)
		if (strlen(f->key) == klen && strncmp(f->key, key, klen) == 0)
			break;
	if (!f->key)
		return false;
	char *at = (char *)base + f->offset;

	errno = 0;
	switch (f->kind) {
	case T_INT: {
		long n = strtol(v, &end, 10);

		if (*end || errno || n < -1 || n > 0x7fffffff)
			return false;
		*(int *)at = (int)n;
		return true;
	}
	case T_ULONG:
	case T_U64: {
		unsigned long long n = isdigit((unsigned char)*v) ? strtoull(v, &end, 10) : 0;

		if (!isdigit((unsigned char)*v) || *end || errno || n > (1ull << 53))
			return false;
		if (f->kind == T_ULONG)
			*(unsigned long *)at = (unsigned long)n;
		else
			*(uint64_t *)at = n;
		return true;
	}
	case T_DOUBLE: {
		double d = strtod(v, &end);

		if (*end || !isfinite(d) || d < 0 || d > 1e15)
			return false;
		*(double *)at = d;
		return true;
	}
	case T_STR:
	case T_TEXT:
		word_copy(at, f->size, strcmp(v, "-") ? v : "", strlen(v));
		return true;
	}
	return false;
}

/* A line's words after its kind into base (size bytes, cleared first); false when one is
 * malformed. */
static bool take_line(char *rest, const struct field *f, void *base, size_t size)
{
	char *save = NULL;

	memset(base, 0, size);
	for (char *w = strtok_r(rest, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');

		if (!eq || !take_field(f, base, w, (size_t)(eq - w), eq + 1))
			return false;
	}
	return true;
}

/* The first line's words after "cudanap-pager 1". */
static void head(char *rest, struct cn_pagerstate *s)
{
	char *save = NULL;

	rest = strchr(rest, ' ');
	for (char *w = rest ? strtok_r(rest + 1, " ", &save) : NULL; w;
	     w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');

		if (eq)
			take_field(head_fields, s, w, (size_t)(eq - w), eq + 1);
	}
}

int cn_pagerstate_parse(const char *text, struct cn_pagerstate *s)
{
	char line[1024];
	const char *p = text;

	memset(s, 0, sizeof(*s));
	if (strncmp(text, MAGIC " ", strlen(MAGIC) + 1) != 0)
		return -EINVAL;
	while (*p) {
		size_t n = strcspn(p, "\n");
		char *rest;

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			rest = strchr(line, ' ');
			if (rest)
				*rest++ = '\0';
			if (!rest)
				;
			else if (!strcmp(line, "cudanap-pager"))
				head(rest, s);
			else if (!strcmp(line, "user") && s->n_users < CN_PAGERSTATE_USERS)
				s->n_users += take_line(rest, user_fields, &s->users[s->n_users],
							sizeof(s->users[0]));
			else if (!strcmp(line, "gpu") && s->n_gpus < CN_PAGERSTATE_GPUS)
				s->n_gpus += take_line(rest, gpu_fields, &s->gpus[s->n_gpus],
						       sizeof(s->gpus[0]));
			else if (!strcmp(line, "use") && s->n_uses < CN_PAGERSTATE_USES)
				s->n_uses += take_line(rest, use_fields, &s->uses[s->n_uses],
						       sizeof(s->uses[0]));
			else if (!strcmp(line, "choice") && !strncmp(rest, "text=", 5) &&
				 s->n_choices < CN_PAGERSTATE_CHOICES)
				cn_pagerwire_text(s->choices[s->n_choices++], sizeof(s->choices[0]),
						  rest + 5, strlen(rest + 5));
		}
		p += n + (p[n] == '\n');
	}
	return 0;
}
