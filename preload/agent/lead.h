/* lead: who answers a rank at its NCCL job's cut. See lead.c. */
#ifndef CN_AGENT_LEAD_H
#define CN_AGENT_LEAD_H

#include <stdbool.h>
#include <stddef.h>

#define CN_LEAD_MAX_PEERS 256

/* Who leads one action's cut and whom this rank met there: made by cn_lead_begin at the start of
 * the action, passed to its other calls. */
struct cn_lead {
	const char *dir; /* the status directory the ranks share */
	bool by_cli;	 /* the command line leads (it left a note before its signal) */
	int leader;	 /* the rank that answers; 0: the command line, or not known yet */
	/* The ranks met at the last gathering, this one among them. */
	int n_peers;
	int peers[CN_LEAD_MAX_PEERS];
};

/* At the start of a suspend or a resume: whether the command line leads this one, into l, the ranks
 * meeting in the status directory dir. Always called, so that no note outlives its action. */
void cn_lead_begin(struct cn_lead *l, const char *dir);

/* After this rank said its lines in the note said: the answer what (the counts to reach, or the
 * go) into buf, from whoever leads the cut, within timeout_ms. 0, or -1 with why (the leader gave
 * up and why, or no answer in time). */
int cn_lead_answer(struct cn_lead *l, const char *said, const char *what, char *buf, size_t len,
		   unsigned timeout_ms, char *why, size_t wlen);

/* This rank gives up its part in the cut: with no command line to tell them, the ranks it met are
 * told, so that none of them waits for it (nothing to do when the command line leads). */
void cn_lead_give_up(struct cn_lead *l, const char *why);

#endif
