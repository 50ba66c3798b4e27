/* pagerpick: the node pager's choice, given the policy and what is on one GPU: which idle
 * programs to nap, in order, so that a program's need fits, or why none can be (docs/PAGER.md,
 * The choice). Arithmetic only: the pager gathers the facts and acts. */
#ifndef CN_PAGERPICK_H
#define CN_PAGERPICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cn_pagerconf.h"

#define CN_PAGERPICK_MAX 64

enum cn_pagerpick_kind {
	CN_PP_AWAKE, /* runs, may be napped if idle long enough */
	CN_PP_LIGHT, /* napping lightly: its context stays, and a nap deepened gives it back */
	CN_PP_NOT,   /* anything else: no cudanap, busy, napping, refused, not believed */
};

/* A process holding memory on the GPU. */
struct cn_pagerpick_proc {
	int pid;
	uid_t uid;
	char user[33];
	int rule;	/* cn_pagerconf_rule_of its user */
	uint64_t bytes; /* held on the GPU now (NVML's) */
	uint64_t gives; /* what its nap gives back (a light one: what cudanap owns) */
	double idle_s;	/* its CUDA idle this long; < 0 while it works or when not known */
	enum cn_pagerpick_kind kind;
	bool light;   /* its nap would be light */
	bool never;   /* its program is never napped ([pager] never_nap_programs) */
	bool no_host; /* the host has not the memory its nap's copy takes */
};

/* The program that needs room. */
struct cn_pagerpick_ask {
	int pid;
	uid_t uid;
	char user[33];
	int rule;
	uint64_t bytes;
	bool context; /* a new context: light nappers may be deepened for it */
};

struct cn_pagerpick_gpu {
	int index; /* nvidia-smi's */
	uint64_t total, free;
};

struct cn_pagerpick {
	int n;			   /* processes to nap, in order (0: the room is there) */
	int idx[CN_PAGERPICK_MAX]; /* into the processes given */
	bool all_light;		   /* each of them naps lightly (none deepened) */
	uint64_t want;		   /* the need and the margin */
	double soon_s;		   /* -EAGAIN: when one passed over for working is idle enough */
	int soon_pid;
};

/* The choice for a on GPU g among its n processes p: 0 with out's naps (they make the room with
 * what is free), -EAGAIN when no room can be made now but one passed over for having worked
 * too recently would make it once idle [pager] min_idle_s (soon_s), -ENOSPC when none can; why
 * says it in one line either way. */
int cn_pagerpick_choose(const struct cn_pagerconf *pc, const struct cn_pagerpick_ask *a,
			const struct cn_pagerpick_gpu *g, const struct cn_pagerpick_proc *p, int n,
			struct cn_pagerpick *out, char *why, size_t len);

/* The share of GPU memory (bytes) that rule r's principal has on a GPU of total bytes, and what
 * the principal of (uid, rule) holds among p: for the status and the log. */
uint64_t cn_pagerpick_share(const struct cn_pagerconf *pc, int rule, uint64_t total);
uint64_t cn_pagerpick_used(const struct cn_pagerconf *pc, uid_t uid, int rule,
			   const struct cn_pagerpick_proc *p, int n);

#endif
