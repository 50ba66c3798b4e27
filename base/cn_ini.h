/* ini: an INI file read key by key with its line numbers, for the job's INI (config.c) and the
 * node pager's policy (pagerconf.c). */
#ifndef CN_INI_H
#define CN_INI_H

#include <stddef.h>

/* One key: 0, or -EINVAL with why ("section.key: reason") filled. */
typedef int (*cn_ini_fn)(void *user, const char *section, const char *key, const char *value,
			 int line, char *why, size_t len);

/* path read, fn called for each key: 0, or -errno with err filled. */
int cn_ini_parse(const char *path, cn_ini_fn fn, void *user, char *err, size_t errlen);

#endif
