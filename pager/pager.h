/* pager: what the files of cudanap-pager, the node pager, share (main.c, clients.c, ctl.c,
 * scan.c, jobs.c, ask.c, ledger.c, log.c). One thread: main.c's loop; none of them blocks it
 * for long but a process's status read and the controller's answer. */
#ifndef CN_PAGER_H
#define CN_PAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cn_pagerconf.h"
#include "cn_pagerpick.h"
#include "cn_pagerwire.h"
#include "cn_uuid.h"
#include "ctl_proto.h"

/* ---- main.c ---- */
extern struct cn_pagerconf pg_policy; /* as loaded at the start or at the last SIGHUP */

/* ---- log.c: one line each, on stderr (the journal's, under systemd) ---- */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "2026-12-02T10:11:12.345Z", now */
void log_utc(char *out, size_t len);

/* ---- clients.c: the socket and the programs on it ---- */
struct client {
	int fd;
	int pid; /* its peer's, by SO_PEERCRED */
	uid_t uid;
	gid_t gid;
	unsigned long long starttime; /* the pid's when it connected: a reused pid is not it */
	char user[33];
	double since_ms; /* connected, or its last message */
	bool busy;	 /* a need of its is queued or served */
};
/* The socket systemd handed over (LISTEN_FDS), else one made at path: 0, or -1 said. */
int clients_listen(const char *path);
/* The fds to poll: the listening one first, then each client's; their count. */
int clients_fds(int *fds, int max);
/* An fd poll found ready: a connection taken, a message served, a peer gone. */
void clients_ready(int fd);
/* Connections that said nothing for too long closed. */
void clients_tick(double now_ms);
/* An answer to c: 0, or -1 when it cannot take it (then it is closed). */
int clients_send(struct client *c, const struct cn_pagerwire_answer *a);
/* The socket made by clients_listen removed, at the exit. */
void clients_close_all(void);

/* ---- ctl.c: its own controller, NVML's answers (the only code that loads it) ---- */
/* What CN_OP_GPU says of the GPU with this UUID: 0, or -1 with why. */
int ctl_gpu(const struct cn_uuid *gpu, struct cn_resp *r, char *why, size_t len);

/* ---- scan.c: the processes on one GPU, as the choice needs them ---- */
struct scan_proc {
	struct cn_pagerpick_proc pick;
	unsigned long long starttime;
	int sig;	   /* its suspend signal */
	unsigned long seq; /* its status's actions when read */
	char dir[4096];	   /* its status dir */
	double light_held; /* napping lightly: MiB on the host */
};
struct scan {
	struct cn_pagerpick_gpu gpu;
	struct cn_uuid uuid;
	int n;
	struct scan_proc p[CN_PAGERPICK_MAX];
	struct cn_pagerpick_proc pick[CN_PAGERPICK_MAX]; /* p[i].pick, for the choice */
};
/* The processes with memory on the GPU: 0, or -1 with why. */
int scan_gpu(const struct cn_uuid *gpu, struct scan *s, char *why, size_t len);
/* A user's rule, name and groups, looked up (the user database, never the process's word). */
int scan_rule_of(uid_t uid, gid_t gid, char *user, size_t len);

/* ---- ask.c: one process asked to nap, and its answer ---- */
/* ASK_WAIT: no word yet; ASK_BUSY: acting on it (its answer comes); ASK_NAPPED; ASK_NOT: it did
 * not nap (refused, failed, gone). */
enum ask_answer { ASK_WAIT, ASK_BUSY, ASK_NAPPED, ASK_NOT };
/* p asked to nap for the asker (its note, then its suspend signal, or for a light napper the
 * plain suspend signal that deepens it): 0, or -1. */
int ask_nap(const struct scan_proc *p, int for_pid, const char *for_user, uint64_t mib, int gpu);
/* Its answer as its status says it; the note taken back once it answered or gave up. */
enum ask_answer ask_answer(const struct scan_proc *p);
void ask_take_back(const struct scan_proc *p);

/* ---- jobs.c: the needs, served one GPU at a time ---- */
/* c's need, just received: queued. */
void jobs_need(struct client *c, const struct cn_pagerwire_need *n);
/* c said done, or is gone: its turn ends, its need leaves the queue. */
void jobs_done(struct client *c, bool gone);
/* Work on every GPU's turn; the ms until the next tick is due. */
int jobs_tick(double now_ms);

/* ---- ledger.c: what the pager did, per user, and the state file ---- */
void ledger_ask(uid_t uid, const char *user);
void ledger_made(uid_t uid, const char *user, double s);
void ledger_refused(uid_t uid, const char *user);
void ledger_waited(uid_t uid, const char *user, double s);
/* p napped for a program of for_uid's */
void ledger_napped(const struct scan_proc *p, uid_t for_uid);
/* One choice, as the log said it, kept for cudanap pager status. */
void ledger_choice(const char *line);
/* A GPU's usage by user and their shares, as the last scan found them. */
void ledger_gpu(const struct scan *s);
/* The naps' time kept up, the state file written when due (or now). */
void ledger_tick(double now_ms, bool now);

#endif
