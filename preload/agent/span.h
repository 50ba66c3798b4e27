/* span: a rank's part in its NCCL job's cut across nodes, over TCP. See span.c. */
#ifndef CN_AGENT_SPAN_H
#define CN_AGENT_SPAN_H

#include <stdbool.h>
#include <stddef.h>

/* This rank is a task of a Slurm step on several nodes, and port ([nccl] cut_port) lets its ranks
 * meet: a cut no command line leads goes over TCP. */
bool cn_span_wanted(unsigned port);

/* At a step of the cut: this rank's lines (text, "KEY RANK NRANKS ISSUED" lines) said as phase
 * (the note's name) to the job's leader, found or started first on the job's ports from port;
 * its answer (the counts to reach, or the go) into buf within wait_ms. hub_ms: the leader's own
 * bound for the step; final: the cut's last step, after which the meeting is over. 0, or -1 with
 * why. */
int cn_span_answer(unsigned port, const char *phase, const char *text, unsigned hub_ms,
		   unsigned wait_ms, bool final, char *buf, size_t len, char *why, size_t wlen);
/* This rank gives up: the leader told why (it tells the others), the meeting over for it. */
void cn_span_give_up(const char *why);
/* The meeting over: the connection closed, and the leader, if it was this rank's, ended. */
void cn_span_end(void);
/* In a forked child: the parent's connection and leader's descriptors closed, nothing joined. */
void cn_span_after_fork(void);

#endif
