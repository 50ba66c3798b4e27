/* near: the distance between two words and the known word a mistyped one was meant to be. */
#include "cn_near.h"

#include <ctype.h>
#include <string.h>

#define NEAR_MAX 64

unsigned cn_near_distance(const char *a, const char *b)
{
	/* d[i][j]: the edits from a's first i letters to b's first j (optimal string alignment) */
	static const unsigned far = 1000;
	unsigned d[NEAR_MAX][NEAR_MAX];
	size_t la = strlen(a), lb = strlen(b);

	if (la >= NEAR_MAX || lb >= NEAR_MAX)
		return far;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]),
			    cb = tolower((unsigned char)b[j - 1]);
			unsigned best = d[i - 1][j - 1] + (ca != cb);

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

int cn_near_best(const char *typed, const char *const *words, size_t n)
{
	unsigned best = 0;
	int at = -1;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(words[i]);
		unsigned d = cn_near_distance(typed, words[i]), most = len <= 4	  ? 1
								       : len <= 8 ? 2
										  : 3;

		if (d <= most && (at < 0 || d < best)) {
			best = d;
			at = (int)i;
		}
	}
	return at;
}
