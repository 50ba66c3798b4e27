/* cut: the arithmetic of an NCCL job's cut (see cn_cut.h). */
#define _GNU_SOURCE
#include "cn_cut.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int cn_cut_parse(const char *text, int who, struct cn_cut_line *lines, int n, int max)
{
	for (const char *p = text, *e; *p; p = e + (*e != '\0')) {
		struct cn_cut_line *l = &lines[n];

		e = p + strcspn(p, "\n");
		if (n < max && sscanf(p, "%" SCNx64 " %d %d %lu", &l->key, &l->rank, &l->nranks,
				      &l->issued) == 4) {
			l->who = who;
			n++;
		}
	}
	return n;
}

bool cn_cut_whole(const struct cn_cut_line *lines, int n, char *why, size_t len)
{
	for (int a = 0; a < n; a++) {
		int ranks = 0;

		/* each rank of the communicator counted once, whoever said it twice */
		for (int b = 0; b < n; b++) {
			bool again = false;

			if (lines[b].key != lines[a].key)
				continue;
			for (int c = 0; c < b && !again; c++)
				again = lines[c].key == lines[b].key &&
					lines[c].rank == lines[b].rank;
			ranks += !again;
		}
		if (lines[a].nranks <= 0 || ranks != lines[a].nranks) {
			snprintf(
				why, len,
				"communicator %016" PRIx64 " has %d ranks and %d of them are here: "
				"suspend and resume the whole job at once (--tree, --slurm, --all)",
				lines[a].key, lines[a].nranks, ranks);
			return false;
		}
	}
	return true;
}

int cn_cut_targets(const struct cn_cut_line *lines, int n, int who, char *text, size_t len)
{
	size_t o = 0;

	text[0] = '\0';
	for (int a = 0; a < n; a++) {
		unsigned long most = 0;

		if (lines[a].who != who)
			continue;
		for (int b = 0; b < n; b++)
			if (lines[b].key == lines[a].key && lines[b].issued > most)
				most = lines[b].issued;
		o += (size_t)snprintf(text + o, o < len ? len - o : 0, "%016" PRIx64 " %lu\n",
				      lines[a].key, most);
	}
	return o < len ? 0 : -1;
}
