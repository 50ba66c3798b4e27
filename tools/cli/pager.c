/* pager: the node pager seen from the command line: `cudanap pager status` prints its state file,
 * `cudanap metrics` adds its figures per user. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cn_json.h"
#include "cn_pagerstate.h"
#include "cn_pagerwire.h"
#include "cn_safe.h"

const char cli_usage_pager[] =
	"usage: cudanap pager status [--json] [--state FILE]\n"
	"\n"
	"What the node pager (cudanap-pager, run by root) did for each user: needs asked, rooms\n"
	"made and refused, waits, their programs napped for others' and for their own, the time\n"
	"napped; each GPU's memory by user against the users' shares as it last looked; its last\n"
	"choices, as its log said them. Read from its state file; the pager is asked nothing.\n"
	"\n"
	"  --json            one JSON object\n"
	"  --state FILE      the state file (default " CN_PAGER_STATE ", [pager] state)\n"
	"\n"
	"Exit status: 0, 1 when there is no state file to believe, 2 on usage errors.\n";

int pager_read_state(const char *path, struct cn_pagerstate *s, char *why, size_t len)
{
	char *text = malloc(CN_PAGERSTATE_MAX);
	ssize_t n;

	if (!text) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	n = cn_safe_read(AT_FDCWD, path, (struct cn_owner){ getuid(), true }, text,
			 CN_PAGERSTATE_MAX, why, len);
	if (n >= 0 && cn_pagerstate_parse(text, s) < 0) {
		snprintf(why, len, "%s: not the node pager's state file", path);
		n = -EINVAL;
	}
	free(text);
	return n < 0 ? (int)n : 0;
}

static void table(const struct cn_pagerstate *s, const char *path)
{
	printf("node pager %d, since %s, policy %s (%s)\n", s->pid, s->started, s->policy, path);
	for (int g = 0; g < s->n_gpus; g++) {
		const struct cn_pagerstate_gpu *gp = &s->gpus[g];

		printf("GPU %d %s: %llu MiB, %llu MiB free at %s\n", gp->index, gp->uuid,
		       (unsigned long long)gp->total_mib, (unsigned long long)gp->free_mib, gp->at);
		for (int i = 0; i < s->n_uses; i++)
			if (s->uses[i].gpu == gp->index)
				printf("  %-20s holds %8llu MiB of its share %8llu MiB%s\n",
				       s->uses[i].name, (unsigned long long)s->uses[i].used_mib,
				       (unsigned long long)s->uses[i].share_mib,
				       s->uses[i].used_mib > s->uses[i].share_mib ? "  (over it)"
										  : "");
	}
	printf("%-16s %6s %6s %8s %6s %9s %11s %10s %10s\n", "USER", "ASKS", "MADE", "REFUSED",
	       "WAITS", "WAITED_S", "FOR_OTHERS", "FOR_SELF", "NAPPED_S");
	for (int i = 0; i < s->n_users; i++) {
		const struct cn_pagerstate_user *u = &s->users[i];

		printf("%-16s %6lu %6lu %8lu %6lu %9.1f %11lu %10lu %10.1f\n", u->name, u->asks,
		       u->made, u->refused, u->waits, u->wait_s, u->naps_for_others,
		       u->naps_for_self, u->napped_s);
	}
	if (s->n_choices)
		printf("its last choices, the latest last:\n");
	for (int i = 0; i < s->n_choices; i++)
		printf("  %s\n", s->choices[i]);
}

static void json_str(const char *key, const char *v, const char *sep)
{
	char out[4000];

	cn_json_str(out, sizeof(out), v);
	printf("\"%s\":%s%s", key, out, sep);
}

static void json(const struct cn_pagerstate *s)
{
	printf("{\"pid\":%d,", s->pid);
	json_str("started", s->started, ",");
	json_str("policy", s->policy, ",\"users\":[");
	for (int i = 0; i < s->n_users; i++) {
		const struct cn_pagerstate_user *u = &s->users[i];

		printf("%s{\"uid\":%u,", i ? "," : "", (unsigned)u->uid);
		json_str("user", u->name, ",");
		printf("\"asks\":%lu,\"made\":%lu,\"refused\":%lu,\"waits\":%lu,\"wait_s\":%.2f,"
		       "\"naps_for_others\":%lu,\"naps_for_self\":%lu,\"napped_s\":%.2f}",
		       u->asks, u->made, u->refused, u->waits, u->wait_s, u->naps_for_others,
		       u->naps_for_self, u->napped_s);
	}
	printf("],\"gpus\":[");
	for (int g = 0; g < s->n_gpus; g++) {
		const struct cn_pagerstate_gpu *gp = &s->gpus[g];
		int k = 0;

		printf("%s{\"index\":%d,", g ? "," : "", gp->index);
		json_str("uuid", gp->uuid, ",");
		printf("\"total_mib\":%llu,\"free_mib\":%llu,", (unsigned long long)gp->total_mib,
		       (unsigned long long)gp->free_mib);
		json_str("at", gp->at, ",\"uses\":[");
		for (int i = 0; i < s->n_uses; i++)
			if (s->uses[i].gpu == gp->index) {
				printf("%s{", k++ ? "," : "");
				json_str("name", s->uses[i].name, ",");
				printf("\"used_mib\":%llu,\"share_mib\":%llu}",
				       (unsigned long long)s->uses[i].used_mib,
				       (unsigned long long)s->uses[i].share_mib);
			}
		printf("]}");
	}
	printf("],\"choices\":[");
	for (int i = 0; i < s->n_choices; i++) {
		char out[4000];

		cn_json_str(out, sizeof(out), s->choices[i]);
		printf("%s%s", i ? "," : "", out);
	}
	printf("]}\n");
}

int pager_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "state", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = CN_PAGER_STATE;
	static struct cn_pagerstate s;
	char why[600];
	bool as_json = false;
	int c;

	if (argc < 2 || strcmp(argv[1], "status") != 0)
		cli_die_usage(cli_usage_pager);
	argc--, argv++;
	while ((c = getopt_long(argc, argv, ":js:h", opts, NULL)) != -1) {
		if (c == 'j')
			as_json = true;
		else if (c == 's')
			path = optarg;
		else
			cli_die_option("pager status", argv, c);
	}
	if (optind < argc)
		cli_die_usage(cli_usage_pager);
	if (pager_read_state(path, &s, why, sizeof(why)) < 0) {
		fprintf(stderr,
			"%s pager: no node pager's state to believe (%s): is cudanap-pager "
			"running? (systemctl status cudanap-pager)\n",
			cli_prog, why);
		return 1;
	}
	if (as_json)
		json(&s);
	else
		table(&s, path);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* One sample per user of the state file's figures. */
static void per_user(FILE *f, const struct cn_pagerstate *s, const char *name, const char *type,
		     const char *text, size_t offset, bool seconds)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
	for (int i = 0; i < s->n_users; i++) {
		const char *u = (const char *)&s->users[i];
		double v = seconds ? *(const double *)(u + offset)
				   : (double)*(const unsigned long *)(u + offset);
		char user[40];

		cn_pagerwire_user(s->users[i].name, s->users[i].uid, user, sizeof(user));
		fprintf(f, "%s{user=\"%s\"} %.10g\n", name, user, v);
	}
}

void pager_metrics(FILE *f, const struct cn_pagerstate *s)
{
	static const struct {
		const char *name, *text;
		bool share;
	} gauges[] = {
		{ "cudanap_pager_gpu_used_bytes",
		  "GPU memory of a user (or a group, @NAME) as the node pager last looked.",
		  false },
		{ "cudanap_pager_gpu_share_bytes",
		  "The share of the GPU's memory the node pager's policy gives a user (or a group, "
		  "@NAME).",
		  true },
	};

#define AT(m) offsetof(struct cn_pagerstate_user, m)
	per_user(f, s, "cudanap_pager_asks_total", "counter",
		 "Needs of the user's programs the node pager heard.", AT(asks), false);
	per_user(f, s, "cudanap_pager_rooms_made_total", "counter",
		 "Needs of the user's programs the node pager made room for.", AT(made), false);
	per_user(f, s, "cudanap_pager_refused_total", "counter",
		 "Needs of the user's programs the node pager made no room for.", AT(refused),
		 false);
	per_user(f, s, "cudanap_pager_waits_total", "counter",
		 "Needs of the user's programs that waited for room ([pager] when_full = wait).",
		 AT(waits), false);
	per_user(f, s, "cudanap_pager_wait_seconds_total", "counter",
		 "The time those needs waited.", AT(wait_s), true);
	per_user(f, s, "cudanap_pager_naps_for_others_total", "counter",
		 "The user's programs napped by the node pager for another user's program.",
		 AT(naps_for_others), false);
	per_user(f, s, "cudanap_pager_naps_for_self_total", "counter",
		 "The user's programs napped by the node pager for another of the user's own.",
		 AT(naps_for_self), false);
	per_user(f, s, "cudanap_pager_napped_seconds_total", "counter",
		 "The time the user's programs stayed napped by the node pager.", AT(napped_s),
		 true);
#undef AT
	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g].name, gauges[g].text,
			gauges[g].name);
		for (int i = 0; i < s->n_uses; i++)
			fprintf(f, "%s{gpu=\"%d\",user=\"%s\"} %llu\n", gauges[g].name,
				s->uses[i].gpu, s->uses[i].name,
				(unsigned long long)(gauges[g].share ? s->uses[i].share_mib
								     : s->uses[i].used_mib)
					<< 20);
	}
}
