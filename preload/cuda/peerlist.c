/* peerlist: a set of directions between GPUs said in one bounded line, for the status, the logs
 * and the refusals (peers.c: the agent's thread). Pure: no driver, no state. */
#include "cuda/peerlist.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* printf at o, cut at len - 1: the new end. */
__attribute__((format(printf, 4, 5))) static size_t put(char *out, size_t len, size_t o,
							const char *fmt, ...)
{
	va_list ap;
	int w;

	if (o + 1 >= len)
		return len ? len - 1 : 0;
	va_start(ap, fmt);
	w = vsnprintf(out + o, len - o, fmt, ap);
	va_end(ap);
	if (w < 0)
		return o;
	return o + (size_t)w < len ? o + (size_t)w : len - 1;
}

/* Whether v[i] repeats one before it. */
static bool repeated(const struct cn_peerlist_dir *v, int i)
{
	for (int j = 0; j < i; j++)
		if (v[j].a == v[i].a && v[j].b == v[i].b && v[j].dev[0] == v[i].dev[0] &&
		    v[j].dev[1] == v[i].dev[1])
			return true;
	return false;
}

/* Whether the directions are every ordered pair among the GPUs they name, three or more, all
 * known: those GPUs in *set, the directions' count in *count. */
static bool every_pair(const struct cn_peerlist_dir *v, int n, uint64_t *set, int *count)
{
	uint64_t to[64] = { 0 }, s = 0;
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (v[i].a < 0 || v[i].b < 0 || v[i].a >= 64 || v[i].b >= 64 || v[i].a == v[i].b)
			return false;
		to[v[i].a] |= 1ull << v[i].b;
		s |= 1ull << v[i].a | 1ull << v[i].b;
	}
	for (int g = 0; g < 64; g++)
		if (s >> g & 1) {
			if (to[g] != (s & ~(1ull << g)))
				return false;
			k++;
		}
	*set = s;
	*count = k * (k - 1);
	return k >= 3;
}

/* One direction, in words. */
static void one(const struct cn_peerlist_dir *d, char *buf, size_t len)
{
	if (d->a >= 0 && d->b >= 0)
		snprintf(buf, len, "GPU %d->%d", d->a, d->b);
	else
		snprintf(buf, len, "cuda:%d->cuda:%d", d->dev[0], d->dev[1]);
}

size_t cn_peerlist_say(const struct cn_peerlist_dir *v, int n, const char *who, char *out,
		       size_t len, size_t o)
{
	/* what must stay after the list: " by WHO" and ", and 9999 more" */
	size_t tail = (who ? strlen(who) + 4 : 0) + 16;
	uint64_t set;
	int count, said = 0, left = 0;
	char item[48];

	if (!len)
		return 0;
	if (n <= 0)
		return o < len ? o : len - 1;
	if (o >= len)
		o = len - 1;
	out[o] = '\0';
	if (every_pair(v, n, &set, &count)) {
		o = put(out, len, o, "all %d directions between GPUs ", count);
		for (int g = 0, first = 1; g < 64; g++)
			if (set >> g & 1) {
				o = put(out, len, o, "%s%d", first ? "" : ",", g);
				first = 0;
			}
	} else {
		for (int i = 0; i < n; i++) {
			if (repeated(v, i))
				continue;
			if (left) {
				left++;
				continue;
			}
			one(&v[i], item, sizeof(item));
			if (o + strlen(item) + 2 + tail >= len) {
				left = 1;
				continue;
			}
			o = put(out, len, o, "%s%s", said++ ? ", " : "", item);
		}
		if (left)
			o = put(out, len, o, said ? ", and %d more" : "%d directions", left);
	}
	return who ? put(out, len, o, " by %s", who) : o;
}
