/* pagerwire: the messages between a program and the node pager (cudanap-pager), one a datagram
 * of its SOCK_SEQPACKET socket, each a line of words: the kind, then key=value words, the one
 * free text (why=) last. Written and read here for both sides; docs/PAGER.md has the exchange. */
#ifndef CN_PAGERWIRE_H
#define CN_PAGERWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cn_names.h"
#include "cn_uuid.h"

#define CN_PAGER_SOCKET "/run/cudanap/pager.sock"
#define CN_PAGER_STATE	"/run/cudanap/pager.state"
#define CN_PAGER_POLICY "/etc/cudanap/pager.ini"

/* A message's bytes at most: a longer datagram is refused. */
#define CN_PAGERWIRE_MAX 1024
/* The processes an answer names at most. */
#define CN_PAGERWIRE_NAPPED 12

enum cn_pagerwire_kind {
	CN_PW_NEED = 1, /* program: room wanted on one GPU */
	CN_PW_DONE,   /* program: the room was used (or not wanted any more): the GPU's turn ends */
	CN_PW_COMING, /* pager: processes asked to nap lightly; their memory comes piece by piece */
	CN_PW_WAIT,   /* pager: no room now; it waits for some (the operator's when_full = wait) */
	CN_PW_MADE,   /* pager: the room is there; the turn is the program's until it is done */
	CN_PW_REFUSED, /* pager: no room made, why in one line */
};
/* Each kind's word on the wire, the first of its line. */
CN_NAMES_DECLARE(cn_pagerwire_word, enum cn_pagerwire_kind);

/* A program's need: room for mib on the GPU gpu. */
struct cn_pagerwire_need {
	struct cn_uuid gpu;
	uint64_t mib;
	bool context;  /* for a new context (what a light nap keeps counts) */
	bool light;    /* a light nap's wake: it can copy in as others copy out (COMING) */
	char what[48]; /* the call that needs it, or "its wake": for the logs */
};

/* A process the pager napped (or asked to) for the program. */
struct cn_pagerwire_napped {
	int pid;
	char user[33]; /* its user's name, or uid as a number */
	uint64_t mib;  /* what its nap gives back */
	double idle_s;
	bool light;
};

/* The pager's answer. */
struct cn_pagerwire_answer {
	enum cn_pagerwire_kind kind;
	double seconds; /* MADE: how long it took; WAIT: how long it waits at most */
	double soon_s;	/* REFUSED: when one that worked too recently will be idle enough (0: none)
			 */
	int gpu;	/* MADE, COMING: the GPU's index (nvidia-smi's); -1 when not said */
	int n;
	struct cn_pagerwire_napped napped[CN_PAGERWIRE_NAPPED];
	char why[600]; /* REFUSED, WAIT: one line */
};

/* Each message written into buf (len CN_PAGERWIRE_MAX at least): its length, -ENOSPC. */
int cn_pagerwire_need_fmt(const struct cn_pagerwire_need *n, char *buf, size_t len);
int cn_pagerwire_answer_fmt(const struct cn_pagerwire_answer *a, char *buf, size_t len);
/* The kind of the n bytes of msg (a message as received: not NUL-terminated), or -EINVAL. */
int cn_pagerwire_kind(const char *msg, size_t n);
/* Each message read back: 0, or -EINVAL for anything but a well-formed message of that kind
 * (unknown keys, numbers out of bounds, control characters, a name that is not one). */
int cn_pagerwire_need_parse(const char *msg, size_t n, struct cn_pagerwire_need *out);
int cn_pagerwire_answer_parse(const char *msg, size_t n, struct cn_pagerwire_answer *out);

/* name as it may travel and be written in logs: a user's name of letters, digits and ._-
 * (32 at most, not first '-'), else "uid N". */
void cn_pagerwire_user(const char *name, uid_t uid, char *out, size_t len);

/* Helpers of the pager's text, for pagerstate.c too: n bytes of src as they may be written in a
 * line (printable ASCII, '?' for the rest), at most len - 1 of them; and fmt appended to buf at
 * *o (0, or -ENOSPC when it does not fit). */
void cn_pagerwire_text(char *dst, size_t len, const char *src, size_t n);
int cn_pagerwire_put(char *buf, size_t len, size_t *o, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
