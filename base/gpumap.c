/* gpumap: [restore] gpu_map, its text parsed and resolved against a machine's GPUs (see
 * cn_gpumap.h). */
#define _GNU_SOURCE
#include "cn_gpumap.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int resolve_ref(const struct cn_gpu_ref *r, const struct cn_uuid *gpus, int n, char *why,
		       size_t len)
{
	char s[CN_UUID_STR_LEN];
	int i;

	if (r->index >= 0) {
		if (r->index < n)
			return r->index;
		snprintf(why, len, "gpu_map names GPU %d, but this machine has GPUs 0-%d", r->index,
			 n - 1);
		return -1;
	}
	if ((i = cn_uuid_index(gpus, n, &r->uuid)) >= 0)
		return i;
	cn_uuid_fmt(&r->uuid, s);
	snprintf(why, len, "gpu_map names %s, which this machine does not have", s);
	return -1;
}

int cn_gpumap_want(const struct cn_gpumap *map, const struct cn_uuid *gpus, int n, int *want,
		   char *why, size_t len)
{
	int src_of[CN_MAX_GPUS];

	for (int i = 0; i < n; i++)
		src_of[i] = want[i] = -1;
	for (unsigned p = 0; p < map->n && p < CN_MAX_GPUS; p++) {
		int a = resolve_ref(&map->pairs[p].from, gpus, n, why, len);
		int b = a < 0 ? -1 : resolve_ref(&map->pairs[p].to, gpus, n, why, len);

		if (b < 0)
			return -1;
		if (want[a] >= 0 || src_of[b] >= 0) {
			snprintf(why, len,
				 "gpu_map moves GPU %d twice or puts two GPUs onto GPU %d", a, b);
			return -1;
		}
		want[a] = b;
		src_of[b] = a;
	}
	/* The driver wants every GPU placed: the unnamed ones stay, where that is unambiguous. */
	for (int i = 0; i < n; i++) {
		if (want[i] >= 0)
			continue;
		if (src_of[i] >= 0) {
			snprintf(
				why, len,
				"gpu_map moves GPU %d onto GPU %d but says nothing of where GPU %d "
				"goes; add %d=N",
				src_of[i], i, i, i);
			return -1;
		}
		want[i] = i;
	}
	return 0;
}

int cn_gpumap_now(const struct cn_gpu_move *moves, unsigned n_moves, const struct cn_uuid *gpus,
		  int n, int *cur, char *why, size_t len)
{
	for (int i = 0; i < n; i++)
		cur[i] = i;
	for (unsigned m = 0; m < n_moves; m++) {
		int h = cn_uuid_index(gpus, n, &moves[m].home);
		int w = cn_uuid_index(gpus, n, &moves[m].now);

		if (h < 0 || w < 0) {
			char s[CN_UUID_STR_LEN];

			cn_uuid_fmt(h < 0 ? &moves[m].home : &moves[m].now, s);
			snprintf(why, len, "the job was on %s, which this machine does not have",
				 s);
			return -1;
		}
		cur[h] = w;
	}
	return 0;
}

unsigned cn_gpumap_moves(const int *want, const struct cn_uuid *gpus, int n,
			 struct cn_gpu_move *out)
{
	unsigned k = 0;

	for (int h = 0; h < n; h++)
		if (want[h] != h) {
			out[k].home = gpus[h];
			out[k].now = gpus[want[h]];
			k++;
		}
	return k;
}

int cn_gpumap_elsewhere(const int *cur, int n, const int *at, const unsigned long long *need, int k,
			const unsigned long long *free_bytes, const unsigned char *fits, int *want)
{
	int target[CN_MAX_GPUS], left[CN_MAX_GPUS], n_left = 0, next = 0;
	bool taken[CN_MAX_GPUS] = { false }, moved = false;

	if (k <= 0 || k > n || n > CN_MAX_GPUS)
		return 0;
	for (int u = 0; u < k; u++) {
		taken[at[u]] =
			true; /* a part that leaves frees its GPU for whatever was on the target */
		target[u] = free_bytes[at[u]] >= need[u] ? at[u] : -1;
	}
	for (;;) {
		int u = -1;

		for (int v = 0; v < k; v++)
			if (target[v] < 0 && (u < 0 || need[v] > need[u]))
				u = v;
		if (u < 0)
			break;
		for (int g = 0; g < n && target[u] < 0; g++)
			if (!taken[g] && fits[g] && free_bytes[g] >= need[u])
				target[u] = g;
		if (target[u] < 0)
			return 0;
		taken[target[u]] = moved = true;
		left[n_left++] = at[u];
	}
	if (!moved)
		return 0;
	/* Every home GPU stays where it is now, but the parts' homes, which follow their parts, and
	 * the homes of what was on their new GPUs, which take the GPUs the parts left. */
	for (int h = 0; h < n; h++)
		want[h] = cur[h];
	for (int h = 0; h < n; h++) {
		bool part = false;

		for (int u = 0; u < k; u++)
			if (cur[h] == at[u]) {
				want[h] = target[u];
				part = true;
			}
		for (int u = 0; u < k && !part; u++)
			if (cur[h] == target[u] && target[u] != at[u])
				want[h] = left[next++];
	}
	return 1;
}

void cn_gpumap_of_want(const int *want, int n, struct cn_gpumap *map)
{
	map->n = 0;
	for (int h = 0; h < n && h < CN_MAX_GPUS; h++)
		if (want[h] != h)
			map->pairs[map->n++] = (struct cn_gpu_pair){ .from = { .index = h },
								     .to = { .index = want[h] } };
}

int cn_gpumap_resolve(const struct cn_gpumap *map, const struct cn_gpu_move *moves,
		      unsigned n_moves, const struct cn_uuid *gpus, int n,
		      const struct cn_gpu_use *use, unsigned n_use, struct cn_gpumap_plan *p,
		      char *why, size_t len)
{
	if (cn_gpumap_want(map, gpus, n, p->want, why, len) < 0 ||
	    cn_gpumap_now(moves, n_moves, gpus, n, p->cur, why, len) < 0)
		return -1;
	p->moved = false;
	for (int h = 0; h < n; h++)
		p->moved |= p->cur[h] != p->want[h];
	/* The memory on GPU at goes with the home GPU now there, if anything moves. */
	for (unsigned u = 0; u < n_use && u < CN_MAX_GPUS; u++) {
		int at = cn_uuid_index(gpus, n, &use[u].uuid), h = 0;

		while (p->moved && at >= 0 && h < n && p->cur[h] != at)
			h++;
		p->to[u] = p->moved && at >= 0 && h < n ? p->want[h] : at;
	}
	return 0;
}

void cn_gpumap_home_of(const struct cn_gpu_move *moves, unsigned n_moves, const struct cn_uuid *now,
		       struct cn_uuid *home)
{
	*home = *now;
	for (unsigned m = 0; m < n_moves; m++)
		if (cn_uuid_eq(&moves[m].now, now))
			*home = moves[m].home;
}

void cn_gpumap_list(const struct cn_uuid *uuids, int k, const struct cn_uuid *gpus, int n,
		    char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < k && i < CN_GPU_LIST_MAX && o < len; i++) {
		char s[CN_UUID_STR_LEN];

		int at = cn_uuid_index(gpus, n, &uuids[i]);
		char idx[8] = "?";

		if (at >= 0)
			snprintf(idx, sizeof(idx), "%d", at);
		cn_uuid_fmt(&uuids[i], s);
		o += (size_t)snprintf(out + o, len - o, "%s%s=%s", i ? "," : "", idx, s);
	}
}

/* ---- the text: GPU references and the map ---- */

static void ref_format(const struct cn_gpu_ref *r, char *out, size_t len)
{
	char u[CN_UUID_STR_LEN];

	if (r->index >= 0) {
		snprintf(out, len, "%d", r->index);
	} else {
		cn_uuid_fmt(&r->uuid, u);
		snprintf(out, len, "%s", u);
	}
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int gpu_ref_parse(char *s, struct cn_gpu_ref *r)
{
	unsigned long n;

	char *end;

	s = trim(s);
	n = isdigit((unsigned char)s[0]) ? strtoul(s, &end, 10) : CN_MAX_GPUS;
	if (isdigit((unsigned char)s[0]) && !*end && n < CN_MAX_GPUS) {
		r->index = (int)n;
		return 0;
	}
	r->index = -1;
	return cn_uuid_parse(s, &r->uuid);
}

static bool gpu_ref_same(const struct cn_gpu_ref *a, const struct cn_gpu_ref *b)
{
	if (a->index >= 0 || b->index >= 0)
		return a->index == b->index;
	return cn_uuid_eq(&a->uuid, &b->uuid);
}

void cn_gpumap_write(const struct cn_gpumap *map, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (unsigned p = 0; p < map->n && p < CN_MAX_GPUS && o < len; p++) {
		char from[CN_UUID_STR_LEN], to[CN_UUID_STR_LEN];

		ref_format(&map->pairs[p].from, from, sizeof(from));
		ref_format(&map->pairs[p].to, to, sizeof(to));
		o += (size_t)snprintf(out + o, len - o, "%s%s=%s", o ? ", " : "", from, to);
	}
}

int cn_gpumap_parse(const char *s, struct cn_gpumap *map, char *err, size_t errlen)
{
	char buf[CN_MAX_GPUS * 96], *save = NULL, *item;
	struct cn_gpu_pair *pairs = map->pairs;
	unsigned count = 0;

	if (strlen(s) >= sizeof(buf)) {
		snprintf(err, errlen, "too long");
		return -EINVAL;
	}
	strcpy(buf, s);
	if (trim(buf)[0] == '\0') {
		map->n = 0;
		return 0;
	}
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		struct cn_gpu_pair *p = &pairs[count];

		if (count == CN_MAX_GPUS) {
			snprintf(err, errlen, "more than %d pairs", CN_MAX_GPUS);
			return -EINVAL;
		}
		if (!eq) {
			snprintf(err, errlen, "'%s' is not OLD=NEW", trim(item));
			return -EINVAL;
		}
		*eq = '\0';
		if (gpu_ref_parse(item, &p->from) || gpu_ref_parse(eq + 1, &p->to)) {
			snprintf(err, errlen,
				 "'%s=%s': each side must be a GPU index (0-%d) or a UUID like "
				 "GPU-8c5c8d2e-0000-1111-2222-333344445555",
				 trim(item), trim(eq + 1), CN_MAX_GPUS - 1);
			return -EINVAL;
		}
		for (unsigned i = 0; i < count; i++) {
			if (gpu_ref_same(&pairs[i].from, &p->from)) {
				snprintf(err, errlen, "GPU '%s' is mapped twice", trim(item));
				return -EINVAL;
			}
			if (gpu_ref_same(&pairs[i].to, &p->to)) {
				snprintf(err, errlen, "two GPUs are mapped onto '%s'",
					 trim(eq + 1));
				return -EINVAL;
			}
		}
		count++;
	}
	map->n = count;
	return 0;
}
