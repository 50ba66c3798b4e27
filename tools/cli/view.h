/* view: the table cudanap status prints, a row per process and the lines under it; status.c
 * gathers the rows. */
#ifndef CN_CLI_VIEW_H
#define CN_CLI_VIEW_H

#include "cli.h"

/* The processes to show, gathered first: the table's columns fit its widest row. */
struct rows {
	struct cn_status *s;
	int n, cap;
	const char *node;    /* --slurm: this node's name, in a column of its own */
	unsigned char *mark; /* each row's marks (below), once every row is in */
};

/* What NOW_MIB and SUSPEND may claim. An answer given before the process's last action says
 * nothing of it now (a suspend since, or a wake), nor one it could not give now (stopped, not
 * answering): its columns are marked, lest a sleeper show 'yes' or a stopped process 'yes
 * 0.3/0.2'. A process that could not be asked would refuse a suspend now, as the dry run says:
 * its SUSPEND is this command's 'no'. */
enum {
	STALE_NOW = 1, /* NOW_MIB is as last asked */
	STALE_ASK = 2, /* so is SUSPEND */
	TOLD_NO = 4,   /* SUSPEND is 'no' because it could not be asked now */
};

/* The table of r, then a line for each thing a row cannot say, and what a '?' means when one
 * was printed. */
void view_table(const struct rows *r);

/* The rows of the tables each node of a Slurm job printed (texts[i], under --slurm: NODE first;
 * names[i] the node's name that starts its rows), laid out again in one table whose columns hold
 * every node's words. The lines under each node's table are not printed. */
void view_relay(char *const *texts, const char *const *names, int n);

#endif
