/* spanstep: what span.c (the step on every node of a Slurm job, and its words) and spanjob.c (an
 * action over them) share. Only those two include it. */
#ifndef CN_CLI_SPANSTEP_H
#define CN_CLI_SPANSTEP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cli.h"
#include "cn_cut.h"

#define MAX_NODES 4096
#define PER_NODE  65536 /* a cut line's who: node * PER_NODE + the process's index there */

struct node {
	char name[256];
	int procs;
	bool hello, dead, ended;
	double heard;
	char note[1024]; /* hello's why, the refusal, the cut's note, the result's line */
	char said[16], state[16], result[16];
	int rolled, bad; /* rolledback's */
	bool got;	 /* the report asked for is in */
};

struct proc {
	int node, pid, order;
	bool ok;
	char outcome[32], line[600];
	char *json;
};

struct span {
	const char *job;
	struct node *nodes;
	int n;
	int to, from, errs;
	pid_t srun;
	char in[1 << 16], err_line[512];
	size_t used;
	bool eof;
	struct proc *procs;
	int n_procs, cap_procs;
	struct cn_cut_line *lines;
	int n_lines, cap_lines;
	double deadline;
};

/* One line to every node (its next report answers this one). */
void span_tell(struct span *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Until every node that has processes of the job and answers has reported on what was last told,
 * or the deadline; a node silent too long is taken for gone meanwhile. */
void span_collect(struct span *s);
bool span_active(const struct node *n); /* has processes of the job, and answers */
/* The first node that stopped answering, into why; false when none did. */
bool span_lost(const struct span *s, char *why, size_t len);
/* One phase of the NCCL ranks' cut (SPAN_COUNT, SPAN_THERE, SPAN_RESTORED): every node's lines,
 * then the answer to all. True when the ranks go on; false when there was no cut or it was given
 * up. */
bool span_phase(struct span *s, const char *name);
/* s for job over the nodes of its host list (n of them); 0, or -1 without memory. */
int span_setup(struct span *s, const char *job, const char *nodes, int n);
/* srun started with one task per node, each running this program with args, its lines under
 * their task's number (--label). 0, or -1 with why. */
int span_start(struct span *s, char *const args[], char *why, size_t len);
/* Every node's hello; the number of the job's processes on all of them. */
int span_hellos(struct span *s);
void span_finish(struct span *s);     /* srun's end: its stdin closed, reaped or killed */
void span_teardown(struct span *s);   /* what s holds freed */
void span_json_str(const char *text); /* text printed as a JSON string */

#endif
