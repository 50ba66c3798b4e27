/* names: one table of words per enum, as NAME_to_string() and NAME_from_string() (systemd's string
 * tables); code compares the enum, and its words exist only where a file is written or read. */
#ifndef CN_NAMES_H
#define CN_NAMES_H

#include <stddef.h>
#include <strings.h>

/* The two functions of the enum type whose values run from first on, one word each; they take and
 * give an int, so that a table of them holds every enum's (the status file's fields). */
#define CN_NAMES_DECLARE(name, type)                                                               \
	const char *name##_to_string(int v);                                                       \
	int name##_from_string(const char *s)

/* Their table: words[i] names first + i. A value without a word reads as "", a word without a
 * value (any case) as unknown. */
#define CN_NAMES_DEFINE(name, type, first, unknown, ...)                                           \
	static const char *const name##_words[] = { __VA_ARGS__ };                                 \
	const char *name##_to_string(int v)                                                        \
	{                                                                                          \
		long i = (long)v - (long)(type)(first);                                            \
                                                                                                   \
		return i >= 0 && i < (long)(sizeof(name##_words) / sizeof(name##_words[0]))        \
			       ? name##_words[i]                                                   \
			       : "";                                                               \
	}                                                                                          \
	int name##_from_string(const char *s)                                                      \
	{                                                                                          \
		for (size_t i = 0; s && i < sizeof(name##_words) / sizeof(name##_words[0]); i++)   \
			if (strcasecmp(name##_words[i], s) == 0)                                   \
				return (int)(first) + (int)i;                                      \
		return unknown;                                                                    \
	}

#endif
