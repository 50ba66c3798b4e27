/* hostlist: Slurm's compressed host lists (see cn_hostlist.h). An element of the list is text with
 * bracket groups in it ("rack1-n[01-08]-ib"); a group is ranges separated by commas ("1-4,7"), a
 * number's width that of the range's first bound as written (01-10: 01, 02, ... 10). */
#define _GNU_SOURCE
#include "cn_hostlist.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HOSTS  1000000
#define MAX_GROUPS 8

/* The end of the element that starts at p: the first comma outside brackets, or the end. */
static const char *element_end(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		else if (*p == ',' && depth == 0)
			break;
	}
	return p;
}

/* One range "a" or "a-b" of a group, from p (up to end): its bounds and width; the next range,
 * or NULL when it does not parse. */
static const char *range(const char *p, const char *end, unsigned long *lo, unsigned long *hi,
			 int *width)
{
	char *e;

	if (p >= end || !isdigit((unsigned char)*p))
		return NULL;
	*lo = strtoul(p, &e, 10);
	*width = (int)(e - p);
	*hi = *lo;
	if (e < end && *e == '-') {
		p = e + 1;
		if (p >= end || !isdigit((unsigned char)*p))
			return NULL;
		*hi = strtoul(p, &e, 10);
	}
	if (*hi < *lo || *hi - *lo >= MAX_HOSTS || e > end || (e < end && *e != ','))
		return NULL;
	return e < end ? e + 1 : end;
}

/* The hosts a group "[...]" (p just after its '[', close at its ']') stands for, or -1. */
static long group_count(const char *p, const char *close)
{
	unsigned long lo, hi;
	long n = 0;
	int w;

	while (p < close) {
		if (!(p = range(p, close, &lo, &hi, &w)))
			return -1;
		n += (long)(hi - lo + 1);
		if (n > MAX_HOSTS)
			return -1;
	}
	return n ? n : -1;
}

/* The kth host of a group, appended to out at o. */
static int group_nth(const char *p, const char *close, long k, char *out, size_t len, size_t *o)
{
	unsigned long lo, hi;
	int w, n;

	while (p < close) {
		if (!(p = range(p, close, &lo, &hi, &w)))
			return -1;
		if (k <= (long)(hi - lo)) {
			n = snprintf(out + *o, len - *o, "%0*lu", w, lo + (unsigned long)k);
			if (n < 0 || (size_t)n >= len - *o)
				return -1;
			*o += (size_t)n;
			return 0;
		}
		k -= (long)(hi - lo + 1);
	}
	return -1;
}

/* The element [p, end): its hosts counted, and, with out, the kth written there. */
static long element(const char *p, const char *end, long k, char *out, size_t len)
{
	const char *open[MAX_GROUPS], *close[MAX_GROUPS];
	long sizes[MAX_GROUPS], n = 1;
	int g = 0;
	size_t o = 0;

	if (p == end)
		return -1;
	for (const char *q = p; q < end; q++) {
		if (*q == ']')
			return -1;
		if (*q != '[')
			continue;
		if (g == MAX_GROUPS || !(close[g] = memchr(q, ']', (size_t)(end - q))))
			return -1;
		open[g] = q + 1;
		if ((sizes[g] = group_count(open[g], close[g])) < 0 || (n *= sizes[g]) > MAX_HOSTS)
			return -1;
		q = close[g++];
	}
	if (!out)
		return n;
	if (k < 0 || k >= n)
		return -1;
	for (int i = 0; i <= g; i++) {
		const char *from = i ? close[i - 1] + 1 : p, *to = i < g ? open[i] - 1 : end;
		long below = 1;

		if ((size_t)(to - from) >= len - o)
			return -1;
		memcpy(out + o, from, (size_t)(to - from));
		o += (size_t)(to - from);
		if (i == g)
			break;
		for (int j = i + 1; j < g; j++)
			below *= sizes[j];
		if (group_nth(open[i], close[i], k / below % sizes[i], out, len, &o) < 0)
			return -1;
	}
	out[o] = '\0';
	return n;
}

static int walk(const char *list, int i, char *out, size_t len)
{
	long total = 0;

	if (!list || !*list)
		return out ? -1 : 0;
	for (const char *p = list;;) {
		const char *end = element_end(p);
		long n = element(p, end, 0, NULL, 0);

		if (n < 0 || (total += n) > MAX_HOSTS)
			return -1;
		if (out && i < total)
			return element(p, end, i - (total - n), out, len) < 0 ? -1 : 0;
		if (!*end)
			break;
		p = end + 1;
	}
	return out ? -1 : (int)total;
}

int cn_hostlist_count(const char *list)
{
	return walk(list, 0, NULL, 0);
}

int cn_hostlist_nth(const char *list, int i, char *out, size_t len)
{
	if (!len)
		return -1;
	out[0] = '\0';
	return i < 0 ? -1 : walk(list, i, out, len);
}

bool cn_hostlist_has(const char *list, const char *host)
{
	char name[256];
	int n = cn_hostlist_count(list);

	for (int i = 0; i < n; i++)
		if (cn_hostlist_nth(list, i, name, sizeof(name)) == 0 && strcmp(name, host) == 0)
			return true;
	return false;
}
