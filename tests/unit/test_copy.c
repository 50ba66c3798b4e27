/* Unit tests of preload/copy.c, compiled into this program, against the fake driver library: its
 * memcpy/memmove calls, and only its, run in parallel while armed, correctly, and go back to
 * normal once disarmed. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "hostcopy/copy.h"
#include "fakecuda.h"
#include "tap.h"

#define MIB (1ul << 20)

static int firsts, copieds;

static void first_large(void)
{
	firsts++;
}

static void on_copied(void)
{
	copieds++;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 2654435761u) >> 11 ^ seed);
}

/* Copies and moves by the driver, large and small, at every alignment: exact; the window's
 * counts. */
static void test_exact(unsigned char *a, unsigned char *b, unsigned char *c, size_t n)
{
	struct cn_copy_stats st;
	bool exact = true;

	fill(a, n, 1);
	ok(cn_copy_arm(4, NULL, NULL, 0) >= 1,
	   "armed: the driver library's memcpy/memmove slots are hooked");
	memset(b, 0, n);
	fake_copy(b, a, n);
	ok(memcmp(a, b, n) == 0, "a 64 MiB copy by the driver is exact");
	fake_copy(b + 1, a + 3, 3 * MIB);
	ok(memcmp(a + 3, b + 1, 3 * MIB) == 0, "unaligned copy exact");
	/* Every alignment of source and destination, lengths that leave tails. */
	for (size_t o = 0; o < 17; o++) {
		size_t len = 2 * MIB + o * 4099;

		memset(c, 0, len + 64);
		fake_copy(c + o, a + 16 - o, len);
		exact &= memcmp(c + o, a + 16 - o, len) == 0 && c[o + len] == 0 &&
			 (o == 0 || c[o - 1] == 0);
	}
	ok(exact, "17 alignments and tails: exact, nothing written around");
	fake_copy(c, a, 100);
	ok(memcmp(a, c, 100) == 0, "small copy exact");
	memcpy(c, b, 8 * MIB);
	fake_move(b + 4096, b, 8 * MIB);
	ok(memcmp(b + 4096, c, 8 * MIB) == 0, "overlapping memmove keeps memmove's meaning");
	fake_move(c, a, 16 * MIB);
	ok(memcmp(a, c, 16 * MIB) == 0, "disjoint memmove exact");
	memcpy(c, a, 32 * MIB); /* ours, not the driver's: not counted */
	cn_copy_disarm(&st);
	ok(st.hooked >= 1 && st.threads == 4, "4 threads per large copy (%u)", st.threads);
	ok(st.calls == 22, "the driver's calls counted, nobody else's (%lu)", st.calls);
	ok(st.big_calls == 21 &&
		   st.big_bytes == n + 3 * MIB + 8 * MIB + 16 * MIB + 17 * 2 * MIB + 136 * 4099,
	   "large calls and bytes (%lu, %zu)", st.big_calls, st.big_bytes);
	ok(st.largest == n, "largest copy");
	fake_copy(b, a, 4 * MIB);
	cn_copy_arm(2, NULL, NULL, 0);
	cn_copy_disarm(&st);
	ok(st.calls == 0, "disarmed: the slots are back, calls no longer pass through us");
}

/* A later window (the restore after the checkpoint) must start clean: its helpers must not replay
 * the last job of the window before, whose buffers may be gone. */
static void test_windows(unsigned char *a, size_t n)
{
	struct cn_copy_stats st;

	for (int w = 0; w < 3; w++) {
		unsigned char *d = malloc(n);

		fill(a, n, 7 + w);
		cn_copy_arm(4, NULL, NULL, 0);
		usleep(20000); /* let the helpers start and look for work */
		memset(d, 0, n);
		fake_copy(d, a, n);
		cn_copy_disarm(&st);
		ok(memcmp(a, d, n) == 0 && st.big_calls == 1, "window %d after the first: exact",
		   w + 2);
		free(d);
	}
}

/* Blocks as the driver copies them, a few MiB each, some right after the other (the helpers
 * spinning) and some after a pause (the helpers asleep). */
static void test_blocks(unsigned char *a, unsigned char *b, size_t n)
{
	struct cn_copy_stats st;
	bool exact = true;

	fill(a, n, 42);
	memset(b, 0, n);
	cn_copy_arm(4, NULL, NULL, 0);
	for (size_t o = 0, k = 0; o + 2 * MIB <= n; o += 2 * MIB, k++) {
		if (k % 8 == 7)
			usleep(2000);
		fake_copy(b + o, a + o, 2 * MIB);
	}
	cn_copy_disarm(&st);
	for (size_t o = 0; o + 2 * MIB <= n; o += 2 * MIB)
		exact &= memcmp(a + o, b + o, 2 * MIB) == 0;
	ok(exact && st.big_calls == n / (2 * MIB),
	   "%lu blocks of 2 MiB back to back and after pauses: exact", st.big_calls);
}

/* More helpers than CPUs, as when several processes restore at once: helpers that the scheduler
 * sets aside come late to a block the others have copied, and must take nothing of the next one by
 * mistake. Blocks of uneven sizes, each on other bytes than the last. */
static void test_many_helpers(unsigned char *a, unsigned char *b, size_t n)
{
	struct cn_copy_stats st;
	unsigned long blocks = 0;
	bool exact = true;

	cn_copy_arm(32, NULL, NULL, 0);
	for (unsigned round = 0; round < 8; round++) {
		size_t o = 0;

		fill(a, n, 7 + round);
		memset(b, 0, n);
		for (size_t k = 0; o + 3 * MIB <= n; k++, blocks++) {
			size_t len = 2 * MIB + (k * 65537 + round * 4099) % MIB;

			fake_copy(b + o, a + o, len);
			o += len;
		}
		exact &= memcmp(a, b, o) == 0;
		for (size_t i = o; i < n; i++)
			exact &= b[i] == 0;
	}
	cn_copy_disarm(&st);
	ok(exact && st.big_calls == blocks && st.threads == 32,
	   "%lu blocks of 2-3 MiB on 32 threads: exact, nothing written past them", st.big_calls);
}

/* The restore turns' cues: the first large copy of a window, once; the end of the copy, once the
 * large copies have moved all but 1/64 of the expected bytes, not before, and not without an
 * expected size. */
static void test_cues(unsigned char *a, unsigned char *c)
{
	struct cn_copy_stats st;

	cn_copy_arm(4, first_large, NULL, 0);
	fake_copy(c, a, 100);
	ok(firsts == 0, "first_large: not for a small copy");
	fake_copy(c, a, 2 * MIB);
	fake_copy(c, a, 4 * MIB);
	ok(firsts == 1, "first_large: once, at the first large copy (%d)", firsts);
	cn_copy_disarm(&st);
	cn_copy_arm(4, first_large, NULL, 0);
	fake_move(c, a, 2 * MIB);
	cn_copy_disarm(&st);
	ok(firsts == 2, "first_large: again in the next window, memmove too (%d)", firsts);
	cn_copy_arm(4, NULL, NULL, 0);
	fake_copy(c, a, 2 * MIB);
	cn_copy_disarm(&st);
	ok(firsts == 2, "first_large: not when not asked for");
	cn_copy_arm(4, NULL, on_copied, 64 * MIB);
	for (int i = 0; i < 31; i++)
		fake_copy(c, a, 2 * MIB);
	fake_copy(c, a, MIB);
	ok(copieds == 0, "copied: not after 62 MiB of 64, nor for a small copy (%d)", copieds);
	fake_copy(c, a, 2 * MIB);
	fake_copy(c, a, 2 * MIB);
	ok(copieds == 1, "copied: once, at the first large copy past 63 MiB (%d)", copieds);
	cn_copy_disarm(&st);
	cn_copy_arm(4, NULL, on_copied, 0);
	for (int i = 0; i < 4; i++)
		fake_copy(c, a, 2 * MIB);
	cn_copy_disarm(&st);
	ok(copieds == 1, "copied: never without an expected size (%d)", copieds);
}

int main(void)
{
	size_t n = 64 * MIB + 12345;
	unsigned char *a = malloc(n), *b = malloc(n), *c = malloc(n);

	test_exact(a, b, c, n);
	test_windows(a, n);
	test_blocks(a, b, n);
	test_many_helpers(a, b, n);
	test_cues(a, c);
	ok(cn_copy_arm(0, NULL, NULL, 0) == 0, "0 threads: nothing is hooked");
	free(a);
	free(b);
	free(c);
	return tap_done();
}
