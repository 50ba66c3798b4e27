/* ini: an INI file read key by key with its line numbers, every error kept at its own line
 * (docs/FILES.md). */
#define _GNU_SOURCE
#include "cn_config.h"
#include "cn_ini.h"
#include "cn_near.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

/* A reading under way: what inih is handling, and where its errors go. */
struct reading {
	FILE *f;
	cn_ini_fn fn;
	void *user;
	struct cn_ini_sink *errs;
	const char *const *sections; /* the known ones, or NULL: fn judges them */
	size_t n_sections;
	int line;	 /* the line inih handles now */
	size_t bytes;	 /* read so far: CN_CONFIG_MAX at most */
	bool handled;	 /* inih called the handler for it */
	bool bad_syntax; /* a line inih takes for no section, key or comment */
	bool cut;	 /* longer than inih's buffer: said, nothing else said of it */
	bool after_key;	 /* a key since the last [section]: an indented line continues it */
	bool continues;	 /* this line is one of those */
	bool unknown;	 /* the section is none of sections: said, its keys not handed on */
	bool key_failed; /* the last key's error was said: a line continuing it says no more */
	char text[64];	 /* the line's start, as an error shows it */
};

/* inih's find_chars_or_comment: the first of chars (NULL: none) in s, or of an inline comment (a
 * ';' after white space), or its end. */
static const char *scan(const char *s, const char *chars)
{
	bool was_space = false;

	while (*s && (!chars || !strchr(chars, *s)) && !(was_space && *s == ';')) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

/* The line's text for a message: from its first letter, control bytes as '?', cut short (not
 * inside a UTF-8 character). */
static void excerpt(const char *s, char *out, size_t len)
{
	size_t o = 0, i, n = strcspn(s, "\r\n");

	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	for (i = 0; i < n && o + 4 < len; i++)
		out[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (i < n) {
		while (o && ((unsigned char)s[i] & 0xc0) == 0x80)
			o--, i--;
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* A [section] line: an unknown name said at once, with the known one it is nearest. */
static void section(struct reading *x, const char *name, size_t len)
{
	char sec[50], hint[64];
	int near;

	/* inih keeps 49 bytes of a name */
	snprintf(sec, sizeof(sec), "%.*s", (int)(len < 49 ? len : 49), name);
	x->after_key = x->unknown = false;
	if (!x->sections)
		return;
	for (size_t i = 0; i < x->n_sections; i++)
		if (strcmp(sec, x->sections[i]) == 0)
			return;
	x->unknown = true;
	near = cn_near_best(sec, x->sections, x->n_sections);
	if (near < 0) {
		cn_ini_error(x->errs, x->line, sec, "", "", "[%s]: unknown section", sec);
		return;
	}
	snprintf(hint, sizeof(hint), "[%s]", x->sections[near]);
	cn_ini_error(x->errs, x->line, sec, "", hint, "[%s]: unknown section" CN_INI_MEANT "%s?",
		     sec, hint);
}

/* What inih will make of the line it is given next (ini_parse_stream's branches, in order). */
static void look(struct reading *x, const char *str)
{
	const char *s = str, *end;

	if (x->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	while (isspace((unsigned char)*s))
		s++;
	excerpt(s, x->text, sizeof(x->text));
	x->bad_syntax = x->continues = false;
	if (!*s || *s == ';' || *s == '#')
		return;
	if (x->after_key && s > str) {
		x->continues = true; /* the handler has it, as the key above's */
		return;
	}
	if (*s == '[') {
		end = scan(s + 1, "]");
		if (*end == ']')
			section(x, s + 1, (size_t)(end - s - 1));
		else
			x->bad_syntax = true;
		return;
	}
	end = scan(s, "=:");
	x->bad_syntax = *end != '=' && *end != ':';
	x->after_key |= !x->bad_syntax;
}

/* The line inih is done with: a syntax error said if it was one. */
static void finish(struct reading *x)
{
	if (!x->line || x->cut || !x->bad_syntax || x->handled)
		return;
	if (x->text[0] == '[')
		cn_ini_error(x->errs, x->line, "", "", "",
			     "syntax error: '%s' is a [section] without its ']'", x->text);
	else
		cn_ini_error(x->errs, x->line, "", "", "",
			     "syntax error: '%s' is not key = value, a [section] or a ; comment",
			     x->text);
	x->bad_syntax = false;
}

/* inih's reader: the next line, counted and looked at once inih is done with the one before. */
static char *reader(char *str, int num, void *stream)
{
	struct reading *x = stream;
	size_t len;

	finish(x);
	if (!fgets(str, num, x->f))
		return NULL;
	len = strlen(str);
	if ((x->bytes += len) > CN_CONFIG_MAX)
		return NULL; /* grown past it since its size was checked */
	x->line++;
	x->handled = false;
	x->cut = len == (size_t)num - 1 && str[len - 1] != '\n';
	if (x->cut) {
		int ch;

		while ((ch = fgetc(x->f)) != EOF && ch != '\n')
			;
		cn_ini_error(x->errs, x->line, "", "", "", "line longer than %d characters",
			     num - 2);
	}
	look(x, str);
	return str;
}

/* The word meant, from a why that ends with CN_INI_MEANT, a name and '?'; "" without one. */
static void meant(const char *why, char *hint, size_t len)
{
	const char *p = strstr(why, CN_INI_MEANT);
	size_t n;

	hint[0] = '\0';
	if (!p)
		return;
	p += strlen(CN_INI_MEANT);
	n = strlen(p);
	if (n && p[n - 1] == '?')
		snprintf(hint, len, "%.*s", (int)(n - 1), p);
}

/* inih's handler: the key handed to fn, its error kept. Always 1: the errors are kept here, and
 * every line of the file is looked at. */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct reading *x = user;
	char why[sizeof(x->errs->at[0].msg) - 64], hint[80];
	int r;

	x->handled = true;
	if (x->cut || x->unknown || (x->continues && x->key_failed))
		return 1;
	r = x->fn(x->user, section, name, value, x->line, why, sizeof(why));
	if (!x->continues)
		x->key_failed = r < 0;
	if (r < 0) {
		meant(why, hint, sizeof(hint));
		cn_ini_error(x->errs, x->line, section, name, hint, "%s", why);
	}
	return 1;
}

/* The INI at path, opened without blocking (a FIFO opens at once) and judged by what it is: a
 * regular file of CN_CONFIG_MAX bytes at most, read again at every action, not a directory, a
 * device or a pipe. Links are followed: a Kubernetes ConfigMap's files are links. NULL with the
 * error kept and -errno in *rc. */
static FILE *open_ini(struct cn_ini_sink *errs, const char *path, int *rc)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		*rc = -errno;
		cn_ini_error(errs, 0, "", "", "", "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);

		cn_ini_error(errs, 0, "", "", "", "%s",
			     dir ? "a directory, not an INI file"
				 : "not a regular file; an INI file is read again at each "
				   "suspend and resume");
		*rc = dir ? -EISDIR : -EINVAL;
		close(fd);
		return NULL;
	}
	if (st.st_size > (off_t)CN_CONFIG_MAX) {
		cn_ini_error(errs, 0, "", "", "", "%lld bytes; an INI file is 1 MiB at most",
			     (long long)st.st_size);
		*rc = -EFBIG;
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "re");
	if (!f) {
		*rc = -errno;
		cn_ini_error(errs, 0, "", "", "", "cannot open: %s", strerror(errno));
		close(fd);
	}
	return f;
}

int cn_ini_read(const char *path, const char *const *sections, size_t n, cn_ini_fn fn, void *user,
		struct cn_ini_sink *errs)
{
	struct reading x = {
		.fn = fn, .user = user, .errs = errs, .sections = sections, .n_sections = n
	};
	bool broken;
	int r;

	if (!(x.f = open_ini(errs, path, &r)))
		return r;
	r = ini_parse_stream(reader, &x, on_key, &x);
	if (x.bytes > CN_CONFIG_MAX) {
		fclose(x.f);
		cn_ini_error(errs, 0, "", "", "",
			     "longer than 1 MiB; an INI file is 1 MiB at most");
		return -EFBIG;
	}
	broken = ferror(x.f) || r < 0;
	if (broken)
		cn_ini_error(errs, 0, "", "", "", "cannot read: %s",
			     strerror(r < 0 ? ENOMEM : EIO));
	else if (r > 0 && !errs->more) {
		/* inih's first bad line, when nothing here explains it */
		bool said = false;

		for (unsigned i = 0; i < errs->n; i++)
			said |= errs->at[i].line == r;
		if (!said)
			cn_ini_error(errs, r, "", "", "",
				     "syntax error: expected [section] or key = value");
	}
	fclose(x.f);
	if (broken)
		return -EIO;
	return errs->n || errs->more ? -EINVAL : 0;
}

void cn_ini_error(struct cn_ini_sink *x, int line, const char *section, const char *key,
		  const char *hint, const char *fmt, ...)
{
	struct cn_ini_error *e;
	unsigned at = x->n;
	va_list ap;

	/* in the file's order: after every error of its line or before */
	while (at > 0 && x->at[at - 1].line > line)
		at--;
	if (at >= x->cap) {
		x->more++;
		return;
	}
	if (x->n == x->cap)
		x->more++;
	else
		x->n++;
	memmove(&x->at[at + 1], &x->at[at], (x->n - 1 - at) * sizeof(x->at[0]));
	e = &x->at[at];
	e->line = line;
	snprintf(e->section, sizeof(e->section), "%s", section);
	snprintf(e->key, sizeof(e->key), "%s", key);
	snprintf(e->hint, sizeof(e->hint), "%s", hint);
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	/* a value's control bytes would reach a terminal or a log line */
	for (char *p = e->msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

void cn_ini_first(const char *path, const struct cn_ini_sink *errs, char *err, size_t len)
{
	const struct cn_ini_error *e = &errs->at[0];
	unsigned more = errs->n + errs->more - 1;
	int o;

	if (!errs->n) {
		snprintf(err, len, "%s: broken", path);
		return;
	}
	if (e->line)
		o = snprintf(err, len, "%s:%d: %s", path, e->line, e->msg);
	else
		o = snprintf(err, len, "%s: %s", path, e->msg);
	if (more && o >= 0 && (size_t)o < len)
		snprintf(err + o, len - (size_t)o,
			 " (and %u more error%s: cudanap check-config lists them)", more,
			 more == 1 ? "" : "s");
}

int cn_ini_parse(const char *path, cn_ini_fn fn, void *user, char *err, size_t errlen)
{
	struct cn_ini_error first;
	struct cn_ini_sink one = { .at = &first, .cap = 1 };
	int r = cn_ini_read(path, NULL, 0, fn, user, &one);

	if (r < 0)
		cn_ini_first(path, &one, err, errlen);
	return r;
}
