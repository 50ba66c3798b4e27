/* pagerconf: the node pager's policy, /etc/cudanap/pager.ini, parsed and validated: who may be
 * napped for whom, each user's or group's share of each GPU's memory, priorities, what is never
 * napped, and what a program hears when no room can be made (docs/PAGER.md has every key). */
#ifndef CN_PAGERCONF_H
#define CN_PAGERCONF_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cn_ini.h"

#define CN_PAGERCONF_RULES    64
#define CN_PAGERCONF_PROGRAMS 16

/* A [user NAME] or [group NAME] section (or the [pager] defaults every other user has). */
struct cn_pagerconf_rule {
	bool group; /* a group: its members' memory counted together against its share */
	char name[33];
	unsigned id;	    /* uid or gid */
	unsigned share_pct; /* of each GPU's memory */
	int priority;	    /* a program is not napped for one of a lower priority */
	bool never;	    /* never napped for another user's program */
	int line;	    /* where the section begins, for the log */
	unsigned set;	    /* what the section said itself (the rest is [pager]'s) */
};

struct cn_pagerconf {
	char path[PATH_MAX]; /* "" for the defaults alone */
	char socket[PATH_MAX], state[PATH_MAX];
	unsigned min_idle_s; /* a program that worked more recently is not napped */
	bool wait;	     /* when_full = wait: a need without room waits wait_s for some */
	unsigned wait_s;
	unsigned margin_mib; /* free memory beyond a need, as [restore] margin_mib */
	bool debug;	     /* [pager] log = debug: every candidate said */
	struct cn_pagerconf_rule dflt;
	int n_rules;
	struct cn_pagerconf_rule rules[CN_PAGERCONF_RULES];
	int n_programs; /* never_nap_programs: executables (globs) never napped */
	char programs[CN_PAGERCONF_PROGRAMS][256];
};

void cn_pagerconf_defaults(struct cn_pagerconf *p);
/* Defaults, then the file at path: 0, or -errno with err "FILE:LINE: section.key: reason" (a user
 * or group named that this machine does not know is an error). */
int cn_pagerconf_load(struct cn_pagerconf *p, const char *path, char *err, size_t errlen);
/* cn_pagerconf_load, each error of the file kept (cn_ini.h): 0 when there is none. */
int cn_pagerconf_check(struct cn_pagerconf *p, const char *path, struct cn_ini_errors *errs);

/* The rule of a user with these groups (its primary first): its [user] section, else the first
 * [group] section of the file whose group it is in, else -1, the [pager] defaults. */
int cn_pagerconf_rule_of(const struct cn_pagerconf *p, uid_t uid, const gid_t *groups,
			 int n_groups);
/* Rule r (-1: the defaults). */
const struct cn_pagerconf_rule *cn_pagerconf_rule(const struct cn_pagerconf *p, int r);
/* Whether the program at exe (what /proc/PID/exe names) is never napped. */
bool cn_pagerconf_never_program(const struct cn_pagerconf *p, const char *exe);

#endif
