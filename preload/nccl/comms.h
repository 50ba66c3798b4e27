/* comms: the process's NCCL communicators and the gate on the app's NCCL calls. See comms.c. */
#ifndef CN_COMMS_H
#define CN_COMMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_sha256.h"
#include "nccl_abi.h"

/* ---- from the interposed NCCL calls (interpose.c), in the app's threads ---- */

/* The real NCCL function name, resolved once: the next definition after the preload, else the
 * loaded libnccl.so.2's own. NULL when none is loaded. */
void *cn_comms_sym(const char *name);

/* A communicator created (key: the same on every rank of it; secret: what only its ranks know,
 * NULL for none) or gone. */
void cn_comms_add(ncclComm_t comm, uint64_t key, const uint8_t *secret, int rank, int nranks);
void cn_comms_remove(ncclComm_t comm);
uint64_t cn_comms_key(ncclComm_t comm);		 /* 0 when not known */
const uint8_t *cn_comms_secret(ncclComm_t comm); /* NULL when none */

/* The gate: every call that issues work or changes a communicator enters before it calls NCCL
 * and leaves after. CN_COMMS_OP: an operation on comm outside a group (a collective, a send or
 * receive, a split); CN_COMMS_GROUP: the start of an outermost group, which leaves at its end;
 * CN_COMMS_OTHER: a communicator created, destroyed or registering memory. Enter blocks while the
 * agent has the gate closed; while it drains, an operation passes until its communicator has
 * issued its share, a group while any communicator has not, and nothing else. */
enum { CN_COMMS_OP, CN_COMMS_GROUP, CN_COMMS_OTHER };
void cn_comms_enter(ncclComm_t comm, int kind);
void cn_comms_leave(void);
/* One more operation issued on comm (inside a group too): counted once it passed the gate. */
void cn_comms_issued(ncclComm_t comm);

/* ---- for the hold on the app's driver calls (hold.c), in the app's threads ---- */

/* The calling thread is inside an NCCL call or group of the app's (past the gate). */
bool cn_comms_thread_inside(void);
/* It left one and has not been held since (cn_comms_thread_held: hold.c held it as it tried to
 * start GPU work). */
bool cn_comms_thread_finishing(void);
void cn_comms_thread_held(void);
/* So finishing, it began a new collective (its clock runs) while the driver gate held the app. */
void cn_comms_thread_began(void);
/* The gate drains and some communicator is behind its target: the app must run to get there. */
bool cn_comms_behind(void);

/* ---- from the agent thread ---- */

/* The loaded NCCL: its version (2.30.7: 23007; 0 when none is loaded) and whether it has
 * ncclCommSuspend and ncclCommResume. */
int cn_comms_nccl_version(void);
bool cn_comms_have_api(void);
int cn_comms_count(void);      /* live communicators */
bool cn_comms_suspended(void); /* the last suspend of them has not been resumed */
/* The keys of its communicators that have ranks in other processes, the ones a job's processes
 * share: "KEY,KEY" (hex, the first CN_COMMS_KEYS, in the registry's order); "" when none. */
#define CN_COMMS_KEYS 8
void cn_comms_keys(char *out, size_t len);
/* The secrets of its live communicators that have one, each once, into out (max of them); their
 * number. */
int cn_comms_secrets(uint8_t (*out)[CN_SHA256_LEN], int max);

/* Close the gate and wait, at most timeout_ms, for the app's NCCL calls under way to return.
 * cut gets a line per communicator: "KEY RANK NRANKS ISSUED" (hex key), ISSUED counting the
 * operations app threads wait at the gate to issue (their work has begun: they are part of the
 * cut). 0, or -1 with why (the gate is open again). */
int cn_comms_quiesce(unsigned timeout_ms, char *cut, size_t len, char *why, size_t wlen);

/* The same lines, as they are now. 0, or -1 when they do not fit. */
int cn_comms_list(char *out, size_t len);

/* App threads waiting at the gate now with a collective begun under the hold
 * (cn_comms_thread_began): such a thread must not wait there while the process sleeps. */
int cn_comms_began_waiting(void);

/* Let the app issue operations until each communicator has issued as many as targets say ("KEY
 * COUNT" lines, every rank's most), then close the gate again; at most timeout_ms. 0, or -1 with
 * why (the gate is open again). */
int cn_comms_drain(const char *targets, unsigned timeout_ms, char *why, size_t wlen);

/* ncclCommSuspend(NCCL_SUSPEND_MEM) on every communicator, each a collective its peers make too.
 * 0, or -1 with why. The gate stays closed until cn_comms_resume. */
int cn_comms_suspend(char *why, size_t wlen);
/* ncclCommResume on every suspended communicator, then the gate opens. 0, or -1 with why. */
int cn_comms_resume(char *why, size_t wlen);
/* The gate opens (a suspend given up before its communicators were suspended). */
void cn_comms_open(void);

/* In a forked child: the parent's communicators are not the child's, nor its gate's waiters. */
void cn_comms_after_fork(void);

#endif
