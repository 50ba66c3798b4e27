/* ini: an INI file read key by key with its line numbers, every error kept at its own line, for
 * the job's INI (config.c) and the node pager's policy (pagerconf.c) (docs/FILES.md). */
#ifndef CN_INI_H
#define CN_INI_H

#include <stddef.h>

/* One key: 0, or -EINVAL with why ("section.key: reason") filled. A why that ends with
 * CN_INI_MEANT, a name and '?' gives that name as the error's hint. */
typedef int (*cn_ini_fn)(void *user, const char *section, const char *key, const char *value,
			 int line, char *why, size_t len);
#define CN_INI_MEANT "; did you mean "

/* One error of an INI file: its line (0: the file as a whole) and what is wrong, in one line
 * without the file's name ("nap.idel_s: unknown key; did you mean idle_s?"); the section and the
 * key it concerns and the word meant, as the file would write it ("idle_s", "[nap]", "[memory]
 * host_cache"), each "" where there is none. */
struct cn_ini_error {
	int line;
	char section[64], key[64], hint[80];
	char msg[512];
};

/* Where the errors of a reading go: cap of them, in the file's order (the first ones by line),
 * and how many more there were. */
struct cn_ini_sink {
	struct cn_ini_error *at;
	unsigned cap, n, more;
};

#define CN_INI_MAX_ERRORS 32

/* Every error of a file: the first CN_INI_MAX_ERRORS, and how many more there are. */
struct cn_ini_errors {
	unsigned n, more;
	struct cn_ini_error at[CN_INI_MAX_ERRORS];
};

/* path read, fn called for each key, every error kept in errs: 0, or -errno (-EINVAL for the
 * file's errors). sections, when not NULL, are the n known ones: a [section] of another name is
 * an error at its line, with the nearest known one, and its keys are not handed to fn; with NULL
 * fn judges each key's section. */
int cn_ini_read(const char *path, const char *const *sections, size_t n, cn_ini_fn fn, void *user,
		struct cn_ini_sink *errs);

/* An error of line (0: the file as a whole) kept in its place among the others; section, key and
 * hint may be "". */
void cn_ini_error(struct cn_ini_sink *errs, int line, const char *section, const char *key,
		  const char *hint, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The first error as one line: "FILE:LINE: MESSAGE", and how many more there are. */
void cn_ini_first(const char *path, const struct cn_ini_sink *errs, char *err, size_t len);

/* cn_ini_read with the first error alone, said in err: 0, or -errno. */
int cn_ini_parse(const char *path, cn_ini_fn fn, void *user, char *err, size_t errlen);

#endif
