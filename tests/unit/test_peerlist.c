/* peerlist: the directions between a process's GPUs said in one bounded line, as the status, the
 * logs and the refusals say them, from two GPUs to sixteen. */
#include <stdio.h>
#include <string.h>

#include "cuda/peerlist.h"
#include "tap.h"

#define WHO "cuCtxEnablePeerAccess in xla_cuda_plugin.so"

static struct cn_peerlist_dir v[512];

/* Every ordered pair of GPUs 0..g-1, in the order a program turns them on (each GPU to all the
 * others); the process's numbers the other way round, as the fake driver's are. */
static int mesh(int g)
{
	int n = 0;

	for (int a = 0; a < g; a++)
		for (int b = 0; b < g; b++)
			if (a != b)
				v[n++] = (struct cn_peerlist_dir){ a, b, { g - 1 - a, g - 1 - b } };
	return n;
}

static void test_few(void)
{
	char out[400];
	size_t o;

	v[0] = (struct cn_peerlist_dir){ 1, 0, { 0, 1 } };
	v[1] = (struct cn_peerlist_dir){ 0, 1, { 1, 0 } };
	o = cn_peerlist_say(v, 2, "cuCtxEnablePeerAccess in fake_target", out, sizeof(out), 0);
	is_str(out, "GPU 1->0, GPU 0->1 by cuCtxEnablePeerAccess in fake_target",
	       "two GPUs: both directions, in the order they came, then who");
	ok(o == strlen(out), "the end returned is the string's");
	v[1] = v[0];
	cn_peerlist_say(v, 2, "x", out, sizeof(out), 0);
	is_str(out, "GPU 1->0 by x", "a direction twice (two contexts on a GPU) is said once");
	v[0] = (struct cn_peerlist_dir){ -1, 0, { 0, 1 } };
	cn_peerlist_say(v, 1, NULL, out, sizeof(out), 0);
	is_str(out, "cuda:0->cuda:1", "a GPU not known: the process's numbers, and no who asked");
	strcpy(out, "head: ");
	cn_peerlist_say(v, 0, "x", out, sizeof(out), 6);
	is_str(out, "head: ", "no directions: nothing added");
	/* GPU 0 to 1 and 2 only: no mesh */
	v[0] = (struct cn_peerlist_dir){ 0, 1, { 2, 1 } };
	v[1] = (struct cn_peerlist_dir){ 0, 2, { 2, 0 } };
	v[2] = (struct cn_peerlist_dir){ 1, 0, { 1, 2 } };
	cn_peerlist_say(v, 3, "x", out, sizeof(out), 0);
	is_str(out, "GPU 0->1, GPU 0->2, GPU 1->0 by x", "three GPUs, not every pair: listed");
}

static void test_mesh(void)
{
	char out[400];
	int n;

	n = mesh(3);
	cn_peerlist_say(v, n, "x", out, sizeof(out), 0);
	is_str(out, "all 6 directions between GPUs 0,1,2 by x",
	       "three GPUs, every pair: said as one");
	n = mesh(8);
	cn_peerlist_say(v, n, WHO, out, sizeof(out), 0);
	is_str(out, "all 56 directions between GPUs 0,1,2,3,4,5,6,7 by " WHO,
	       "eight GPUs, all 56 directions (JAX's default): one short line");
	n = mesh(16);
	cn_peerlist_say(v, n, WHO, out, sizeof(out), 0);
	is_str(out, "all 240 directions between GPUs 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 by " WHO,
	       "sixteen GPUs, 240 directions: the same");
	/* a process over GPUs 2,5,7 of a machine */
	v[0] = (struct cn_peerlist_dir){ 2, 5, { 0, 1 } };
	v[1] = (struct cn_peerlist_dir){ 5, 2, { 1, 0 } };
	v[2] = (struct cn_peerlist_dir){ 2, 7, { 0, 2 } };
	v[3] = (struct cn_peerlist_dir){ 7, 2, { 2, 0 } };
	v[4] = (struct cn_peerlist_dir){ 5, 7, { 1, 2 } };
	v[5] = (struct cn_peerlist_dir){ 7, 5, { 2, 1 } };
	cn_peerlist_say(v, 6, "x", out, sizeof(out), 0);
	is_str(out, "all 6 directions between GPUs 2,5,7 by x", "the GPUs it is on, by index");
	n = mesh(8);
	v[3].a = -1; /* one GPU not known: listed */
	cn_peerlist_say(v, n, "x", out, sizeof(out), 0);
	ok(strncmp(out, "GPU 0->1, GPU 0->2, GPU 0->3, cuda:7->cuda:3, GPU 0->5", 54) == 0,
	   "a GPU not known among them: no mesh claimed (%.60s)", out);
}

/* A list longer than the line: cut at a whole direction, the rest counted, who kept. */
static void test_cut(void)
{
	char out[400], small[60], canary[80];
	int n = mesh(8);
	size_t o;

	v[n - 1] = v[0]; /* 55 directions and a repeat: not every pair */
	o = cn_peerlist_say(v, n, WHO, out, sizeof(out), 0);
	ok(o < sizeof(out) && strlen(out) == o, "within the line (%zu bytes)", o);
	ok(strstr(out, " more by " WHO) != NULL && o >= strlen(" more by " WHO) &&
		   strcmp(out + o - strlen(" more by " WHO), " more by " WHO) == 0,
	   "cut with \"and N more\", who whole at the end: ...%s", out + (o > 60 ? o - 60 : 0));
	{
		int listed = 0, more = -1;
		const char *c = out, *m = strstr(out, ", and ");

		while ((c = strstr(c, "GPU ")) != NULL && (!m || c < m)) {
			listed++;
			c += 4;
		}
		if (m)
			sscanf(m, ", and %d more", &more);
		ok(listed + more == 55, "every direction said or counted: %d listed, %d more",
		   listed, more);
	}
	strcpy(out, "peer access (");
	o = cn_peerlist_say(v, n, WHO, out, 120, strlen(out));
	ok(o <= 119 && strncmp(out, "peer access (GPU 0->1", 21) == 0 && strstr(out, " by " WHO),
	   "after a head, in 120 bytes: some listed, who kept: %s", out);
	memset(canary, '#', sizeof(canary));
	o = cn_peerlist_say(v, n, WHO, canary, 60, 0);
	ok(o < 60 && strlen(canary) == o && strspn(canary + 60, "#") == sizeof(canary) - 60,
	   "60 bytes, too few for who: cut, terminated, nothing written past them (%s)", canary);
	o = cn_peerlist_say(v, n, "w", small, 12, 0);
	ok(o <= 11 && strlen(small) == o, "12 bytes: \"%s\"", small);
	o = cn_peerlist_say(v, n, "w", small, 1, 0);
	ok(o == 0 && small[0] == '\0', "1 byte: empty");
	o = cn_peerlist_say(v, n, "w", small, sizeof(small), 100);
	ok(o < sizeof(small), "an offset past the end: held inside");
}

int main(void)
{
	test_few();
	test_mesh();
	test_cut();
	return tap_done();
}
