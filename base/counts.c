/* counts: the actions a process ended, by action and result, and its histograms (cn_counts.h). */
#include "cn_counts.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cn_json.h"
#include "cn_outcome.h"

/* From a suspend of a small process (0.1 s) to a hibernated 80 GiB one (minutes). */
const double cn_counts_bounds[CN_COUNTS_BUCKETS - 1] = { 0.1, 0.25, 0.5, 1,  2,	 5,
							 10,  20,   30,	 60, 120 };

/* Exactly representable in a double, so that a metric says the count as it is. */
#define MAX_COUNT (1ULL << 53)

/* A result's name as cudanap and the driver write them: letters, digits, '_'. */
static bool a_name(const char *r)
{
	size_t n = strlen(r);

	return n > 0 && n < sizeof(((struct cn_count *)0)->result) &&
	       strspn(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static struct cn_count *find(struct cn_counts *c, int action, const char *result)
{
	for (int i = 0; i < c->n_by; i++)
		if (c->by[i].action == action && strcmp(c->by[i].result, result) == 0)
			return &c->by[i];
	return NULL;
}

static void add_n(struct cn_counts *c, int action, const char *result, unsigned long long n)
{
	struct cn_count *e = find(c, action, result);

	/* The last pair left is its action's OTHER; once that is taken too, what does not fit is
	 * counted in the last pair, whatever its action. */
	if (!e && c->n_by >= CN_COUNTS_MAX - 1) {
		result = "OTHER";
		e = find(c, action, result);
	}
	if (!e && c->n_by < CN_COUNTS_MAX) {
		e = &c->by[c->n_by++];
		e->n = 0;
	}
	if (!e)
		e = &c->by[CN_COUNTS_MAX - 1];
	if (e->n == 0) {
		e->action = action;
		snprintf(e->result, sizeof(e->result), "%s", result);
	}
	e->n = e->n + n < MAX_COUNT ? e->n + n : MAX_COUNT - 1;
}

void cn_counts_add(struct cn_counts *c, int action, const char *result)
{
	add_n(c, action, a_name(result) ? result : "OTHER", 1);
}

/* A sum of seconds: finite, 0 or more, below a billion years; else 0. */
static double sane_s(double s)
{
	return isfinite(s) && s >= 0 && s < 3.2e16 ? s : 0;
}

void cn_counts_observe(struct cn_hist *h, double s)
{
	int k = 0;

	if (!isfinite(s) || s < 0)
		return;
	while (k < CN_COUNTS_BUCKETS - 1 && s > cn_counts_bounds[k])
		k++;
	if (h->n[k] + 1 < MAX_COUNT)
		h->n[k]++;
	h->sum_s = sane_s(h->sum_s + s);
}

static int format(const struct cn_counts *c, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < c->n_by; i++) {
		int n = snprintf(buf + o, len - o, "%s%s %s %llu", o ? "," : "",
				 cn_outcome_action_to_string(c->by[i].action), c->by[i].result,
				 c->by[i].n);

		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	return (int)o;
}

static int format_hist(const struct cn_hist *h, char *buf, size_t len)
{
	size_t o = 0;

	for (int k = 0; k < CN_COUNTS_BUCKETS; k++) {
		int n = snprintf(buf + o, len - o, "%s%llu", k ? "," : "", h->n[k]);

		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	return (int)o;
}

/* A count: digits only, below MAX_COUNT; -1 when not. */
static long long count_of(const char *p, size_t n)
{
	char num[24];
	unsigned long long v;

	if (n == 0 || n >= sizeof(num) || strspn(p, "0123456789") < n)
		return -1;
	memcpy(num, p, n);
	num[n] = '\0';
	v = strtoull(num, NULL, 10);
	return v < MAX_COUNT ? (long long)v : -1;
}

static void parse(struct cn_counts *c, const char *text)
{
	c->n_by = 0;
	for (const char *p = text; *p; p += *p == ',') {
		size_t n = strcspn(p, ","), a = strcspn(p, " "), r;
		char action[16], result[sizeof(c->by[0].result)];
		long long v;

		r = a < n ? strcspn(p + a + 1, " ") : 0;
		if (a < n && a < sizeof(action) && a + 1 + r < n && r < sizeof(result)) {
			memcpy(action, p, a);
			action[a] = '\0';
			memcpy(result, p + a + 1, r);
			result[r] = '\0';
			v = count_of(p + a + 1 + r + 1, n - a - 1 - r - 1);
			if (v >= 0 && a_name(result) &&
			    cn_outcome_action_from_string(action) != CN_ACTION_UNKNOWN)
				add_n(c, cn_outcome_action_from_string(action), result,
				      (unsigned long long)v);
		}
		p += n;
	}
}

static void parse_hist(struct cn_hist *h, const char *text)
{
	const char *p = text;
	int k;

	for (k = 0; k < CN_COUNTS_BUCKETS; k++) {
		size_t n = strcspn(p, ",");
		long long v = count_of(p, n);

		if (v < 0)
			break;
		h->n[k] = (unsigned long long)v;
		p += n;
		if (k == CN_COUNTS_BUCKETS - 1)
			continue;
		if (*p != ',')
			break;
		p++;
	}
	/* All the buckets, and nothing after them, or none at all. */
	if (k < CN_COUNTS_BUCKETS || *p)
		memset(h->n, 0, sizeof(h->n));
}

/* The counts and histograms as the status file's fields: "actions", then each histogram's buckets
 * and sum. */
static const struct {
	const char *buckets, *sum;
	size_t off;
} hists[] = {
	{ "suspend_buckets", "suspend_sum_s", offsetof(struct cn_counts, suspend) },
	{ "resume_buckets", "resume_sum_s", offsetof(struct cn_counts, resume) },
	{ "wake_buckets", "wake_sum_s", offsetof(struct cn_counts, wake) },
};
#define N_HISTS (sizeof(hists) / sizeof(hists[0]))

static struct cn_hist *hist(const struct cn_counts *c, size_t i)
{
	return (struct cn_hist *)((char *)c + hists[i].off);
}

int cn_counts_json(const struct cn_counts *c, char *buf, size_t len)
{
	char text[CN_COUNTS_MAX * 80], v[sizeof(text) * 6 + 3];
	size_t o;
	int n;

	if (format(c, text, sizeof(text)) < 0 || cn_json_str(v, sizeof(v), text) < 0)
		return -ENOSPC;
	n = snprintf(buf, len, ",\"actions\":%s", v);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	o = (size_t)n;
	for (size_t i = 0; i < N_HISTS; i++) {
		if (format_hist(hist(c, i), text, sizeof(text)) < 0)
			return -ENOSPC;
		n = snprintf(buf + o, len - o, ",\"%s\":\"%s\",\"%s\":%.3f", hists[i].buckets, text,
			     hists[i].sum, hist(c, i)->sum_s);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	return (int)o;
}

bool cn_counts_field(struct cn_counts *c, const char *key, const char *value)
{
	if (strcmp(key, "actions") == 0) {
		parse(c, value);
		return true;
	}
	for (size_t i = 0; i < N_HISTS; i++)
		if (strcmp(key, hists[i].buckets) == 0) {
			parse_hist(hist(c, i), value);
			return true;
		} else if (strcmp(key, hists[i].sum) == 0) {
			hist(c, i)->sum_s = sane_s(strtod(value, NULL));
			return true;
		}
	return false;
}
