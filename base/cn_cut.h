/* cut: the arithmetic of an NCCL job's cut, shared by whoever leads it: the command line that
 * suspends or resumes the job (tools/cli/ncclcut.c), or, when none does, the rank that leads it
 * (preload/agent/lead.c). The ranks' lines are "KEY RANK NRANKS ISSUED" (cn_words.h). */
#ifndef CN_CUT_H
#define CN_CUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cn_cut_line {
	int who; /* whose line: the caller's index or pid */
	uint64_t key;
	int rank, nranks;
	unsigned long issued;
};

/* The lines of text appended to lines[n..max), each marked who. The new count. */
int cn_cut_parse(const char *text, int who, struct cn_cut_line *lines, int n, int max);
/* Every communicator with all of its ranks among the lines; else false and why not. */
bool cn_cut_whole(const struct cn_cut_line *lines, int n, char *why, size_t len);
/* who's answer at a suspend: for each of its communicators the most any rank has issued ("KEY
 * COUNT" lines). 0, or -1 when text was too short. */
int cn_cut_targets(const struct cn_cut_line *lines, int n, int who, char *text, size_t len);

#endif
