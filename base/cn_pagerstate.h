/* pagerstate: the node pager's state file (/run/cudanap/pager.state), written by cudanap-pager,
 * read by `cudanap pager status` and `cudanap metrics`. */
#ifndef CN_PAGERSTATE_H
#define CN_PAGERSTATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CN_PAGERSTATE_USERS   128
#define CN_PAGERSTATE_GPUS    16
#define CN_PAGERSTATE_USES    256
#define CN_PAGERSTATE_CHOICES 24
#define CN_PAGERSTATE_MAX     (96 * 1024)

struct cn_pagerstate_user {
	uid_t uid;
	char name[33];
	unsigned long asks, made, refused, waits;
	unsigned long naps_for_others; /* its programs napped for another user's */
	unsigned long naps_for_self;   /* ... for its own */
	double wait_s;		       /* its needs' time waiting (when_full = wait) */
	double napped_s;	       /* its programs' time napped by the pager */
};

struct cn_pagerstate_gpu {
	int index;
	char uuid[48];
	uint64_t total_mib, free_mib;
	char at[32]; /* UTC, when it was looked at */
};

/* What one user (or group, its members together) holds on a GPU, and its share there. */
struct cn_pagerstate_use {
	int gpu;
	char name[40]; /* the user, or "group NAME" */
	uint64_t used_mib, share_mib;
};

struct cn_pagerstate {
	int pid;
	char started[32], policy[256];
	int n_users, n_gpus, n_uses, n_choices;
	struct cn_pagerstate_user users[CN_PAGERSTATE_USERS];
	struct cn_pagerstate_gpu gpus[CN_PAGERSTATE_GPUS];
	struct cn_pagerstate_use uses[CN_PAGERSTATE_USES];
	char choices[CN_PAGERSTATE_CHOICES][640]; /* the oldest first */
};

/* s written into buf: its length, or -ENOSPC. */
int cn_pagerstate_format(const struct cn_pagerstate *s, char *buf, size_t len);
/* text read into s: 0, or -EINVAL (not a state file: its first line). Lines it does not know,
 * or that are malformed, are left out; numbers are bounded, text has no control characters. */
int cn_pagerstate_parse(const char *text, struct cn_pagerstate *s);

#endif
