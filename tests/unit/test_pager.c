/* Unit tests of the node pager's pure parts (base/pagerwire.c, pagerconf.c, pagerpick.c): its
 * messages written and read back, garbage refused; its policy read, every refusal with its line;
 * its choice: over their share first, the asker over its share napping no one under theirs,
 * priorities, what is never napped, min_idle_s and the wait it gives, the host's room, light
 * nappers deepened only for a context. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cn_config.h"
#include "cn_pagerconf.h"
#include "cn_pagerpick.h"
#include "cn_pagerwire.h"
#include "tap.h"

#define MIB (1ull << 20)

static char dir[] = "/tmp/cudanap-test-pager.XXXXXX";

static void test_wire(void)
{
	struct cn_pagerwire_need n = { .mib = 3000, .context = true, .light = true }, m;
	struct cn_pagerwire_answer a = { .kind = CN_PW_MADE, .seconds = 1.25, .n = 2, .gpu = 3 }, b;
	char buf[CN_PAGERWIRE_MAX];
	int len;

	cn_uuid_parse("GPU-00000000-0000-0000-0000-0000000000aa", &n.gpu);
	snprintf(n.what, sizeof(n.what), "its wake");
	len = cn_pagerwire_need_fmt(&n, buf, sizeof(buf));
	is_str(len > 0 ? buf : "",
	       "need gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=3000 context=1 light=1 "
	       "what=its wake",
	       "a need, written");
	ok(cn_pagerwire_need_parse(buf, (size_t)len, &m) == 0 && m.mib == 3000 && m.context &&
		   m.light && cn_uuid_eq(&m.gpu, &n.gpu) && strcmp(m.what, "its wake") == 0,
	   "and read back whole");
	ok(cn_pagerwire_kind(buf, (size_t)len) == CN_PW_NEED, "its kind");
	a.napped[0] = (struct cn_pagerwire_napped){ 4711, "alice", 6000, 120.4, true };
	a.napped[1] = (struct cn_pagerwire_napped){ 4712, "bad name!", 1000, 61, false };
	len = cn_pagerwire_answer_fmt(&a, buf, sizeof(buf));
	is_str(len > 0 ? buf : "",
	       "made gpu=3 s=1.25 napped=4711:alice:6000:120:L;4712:0:1000:61:F",
	       "an answer, written (a name that is not one goes as a number)");
	ok(cn_pagerwire_answer_parse(buf, (size_t)len, &b) == 0 && b.kind == CN_PW_MADE &&
		   b.gpu == 3 && b.n == 2 && b.napped[0].pid == 4711 &&
		   strcmp(b.napped[0].user, "alice") == 0 && b.napped[0].light &&
		   b.napped[1].mib == 1000 && !b.napped[1].light,
	   "and read back");
	a = (struct cn_pagerwire_answer){ .kind = CN_PW_REFUSED };
	snprintf(a.why, sizeof(a.why), "GPU 0 has 10 MiB free\n\033[31m");
	len = cn_pagerwire_answer_fmt(&a, buf, sizeof(buf));
	is_str(len > 0 ? buf : "", "refused why=GPU 0 has 10 MiB free??[31m",
	       "a refusal: its line without control characters");
	ok(cn_pagerwire_answer_parse(buf, (size_t)len, &b) == 0 &&
		   strcmp(b.why, "GPU 0 has 10 MiB free??[31m") == 0,
	   "read back");
	a.soon_s = 2.5;
	len = cn_pagerwire_answer_fmt(&a, buf, sizeof(buf));
	ok(cn_pagerwire_answer_parse(buf, (size_t)len, &b) == 0 && b.soon_s == 2.5 &&
		   strstr(buf, " soon=2.50 why="),
	   "a refusal with the time one will be idle enough: %s", buf);
	static const char *const bad[] = {
		"need gpu=GPU-00000000-0000-0000-0000-0000000000aa",
		"need gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=0",
		"need gpu=GPU-zz mib=10",
		"need gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=10 mib=20",
		"need gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=99999999999999999999",
		"need gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=10 pid=1",
		"need gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=10 context=2",
		"need gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=-5",
		"need  gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=10",
		"needs gpu=GPU-00000000-0000-0000-0000-0000000000aa mib=10",
		"",
	};
	int refused = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused += cn_pagerwire_need_parse(bad[i], strlen(bad[i]), &m) == -EINVAL;
	ok(refused == (int)(sizeof(bad) / sizeof(bad[0])),
	   "every malformed need refused (%d of %zu)", refused, sizeof(bad) / sizeof(bad[0]));
	ok(cn_pagerwire_need_parse("need mib=1\ngpu=x", 16, &m) == -EINVAL &&
		   cn_pagerwire_kind("done\0", 5) == -EINVAL,
	   "a control character or a NUL anywhere: refused");
	memset(buf, 'x', sizeof(buf));
	ok(cn_pagerwire_kind(buf, sizeof(buf) + 0) == -EINVAL, "a datagram of every byte: refused");
	ok(cn_pagerwire_answer_parse("made napped=1:a:1:1:L;x", 24, &b) == -EINVAL &&
		   cn_pagerwire_answer_parse("wait napped=1:a:1:1:L", 21, &b) == -EINVAL &&
		   cn_pagerwire_answer_parse("made s=nan", 10, &b) == -EINVAL,
	   "malformed answers refused");
}

/* pager.ini written with text, loaded: the error ("" when none). */
static const char *load(struct cn_pagerconf *p, const char *text)
{
	static char err[CN_ERR_LEN];
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/pager.ini", dir);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	err[0] = '\0';
	if (cn_pagerconf_load(p, path, err, sizeof(err)) < 0 && !err[0])
		snprintf(err, sizeof(err), "failed without a word");
	return err[0] ? strstr(err, "pager.ini") : "";
}

static void test_conf(void)
{
	struct cn_pagerconf p;
	gid_t root_groups[] = { 0 };

	is_str(load(&p, "[pager]\nmin_idle_s = 30\nwhen_full = wait\nwait_s = 20\nshare = 50%\n"
			"never_nap_programs = /opt/serve/bin/* /usr/bin/vllm\n"
			"[user root]\nshare = 80\npriority = 10\n[group root]\nnever_nap = yes\n"
			"[user 4242]\npriority = 1\n"),
	       "", "a policy with every kind of section loads");
	ok(p.min_idle_s == 30 && p.wait && p.wait_s == 20 && p.dflt.share_pct == 50 &&
		   p.n_rules == 3 && p.rules[0].id == 0 && p.rules[0].share_pct == 80 &&
		   p.rules[0].priority == 10 && p.rules[1].group && p.rules[1].never &&
		   p.rules[1].share_pct == 50 && p.rules[2].id == 4242 &&
		   p.rules[2].share_pct == 50,
	   "its values, a section's unsaid keys the [pager] section's");
	ok(cn_pagerconf_rule_of(&p, 0, root_groups, 1) == 0 &&
		   cn_pagerconf_rule_of(&p, 999, root_groups, 1) == 1 &&
		   cn_pagerconf_rule_of(&p, 999, NULL, 0) == -1,
	   "a user's rule: its own section, then its groups', then the defaults");
	ok(cn_pagerconf_never_program(&p, "/opt/serve/bin/server") &&
		   !cn_pagerconf_never_program(&p, "/opt/serve/bin/x/y") &&
		   cn_pagerconf_never_program(&p, "/usr/bin/vllm") &&
		   !cn_pagerconf_never_program(&p, "/usr/bin/python3"),
	   "never_nap_programs: globs of executables");
	is_str(load(&p, "[user root]\npriority = 1\n[pager]\nshare = 30\n"), "", "[pager] after");
	ok(p.rules[0].share_pct == 30, "still gives its defaults");
	is_str(load(&p, "[user nosuchuser-cudanap]\nshare = 10\n"),
	       "pager.ini:2: user nosuchuser-cudanap: no such user on this machine",
	       "an unknown user, with its line");
	is_str(load(&p, "[pager]\nshare = 120%\n"),
	       "pager.ini:2: pager.share: '120' is not a number of percent from 0 to 100",
	       "a share over 100 %%");
	is_str(load(&p, "[pager]\nwhen_full = later\n"),
	       "pager.ini:2: pager.when_full: 'later' is not fail or wait", "when_full's words");
	is_str(load(&p, "[user root]\nmin_idle_s = 3\n"),
	       "pager.ini:2: user root.min_idle_s: unknown key (a user's or group's: share, "
	       "priority, never_nap)",
	       "a [pager] key in a user's section");
	is_str(load(&p, "[user root]\nshare = 1\n[pager]\nshare = 3\n[user root]\nshare = 2\n"),
	       "pager.ini:6: [user root]: given twice (first at line 2)", "a section twice");
	is_str(load(&p, "[pager]\nmin_idle_s = 1\nmin_idle_s = 2\n"),
	       "pager.ini:3: pager.min_idle_s: given more than once", "a key twice");
	is_str(load(&p, "[nap]\nidle_s = 3\n"),
	       "pager.ini:2: [nap]: unknown section (pager, user NAME, group NAME)",
	       "a job INI's section");
	is_str(load(&p, "[pager]\nnever_nap_programs = vllm\n"),
	       "pager.ini:2: pager.never_nap_programs: 'vllm' must be an absolute path",
	       "a program by its path only");
	is_str(load(&p, "[user root]\npriority = -5\n"), "", "a negative priority");
	ok(p.rules[0].priority == -5, "read as such");
}

/* A process for the choice. */
static struct cn_pagerpick_proc proc(int pid, uid_t uid, const char *user, int rule, unsigned mib,
				     double idle)
{
	struct cn_pagerpick_proc p = { .pid = pid,
				       .uid = uid,
				       .rule = rule,
				       .bytes = mib * MIB,
				       .gives = mib * MIB,
				       .idle_s = idle,
				       .kind = CN_PP_AWAKE,
				       .light = true };

	snprintf(p.user, sizeof(p.user), "%s", user);
	return p;
}

/* The choice as "pid pid ..." or "E: why" (E: AGAIN or NOSPC). */
static const char *choose(const struct cn_pagerconf *pc, const struct cn_pagerpick_ask *a,
			  unsigned free_mib, const struct cn_pagerpick_proc *p, int n)
{
	static char out[1200];
	struct cn_pagerpick_gpu g = { 0, 10000 * MIB, free_mib * MIB };
	struct cn_pagerpick pk;
	char why[1000];
	int r = cn_pagerpick_choose(pc, a, &g, p, n, &pk, why, sizeof(why));
	size_t o = 0;

	out[0] = '\0';
	if (r < 0) {
		snprintf(out, sizeof(out), "%s: %s", r == -EAGAIN ? "AGAIN" : "NOSPC", why);
		return out;
	}
	for (int i = 0; i < pk.n; i++)
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%d", i ? " " : "",
				      p[pk.idx[i]].pid);
	return pk.n ? out : "none";
}

static void test_pick(void)
{
	struct cn_pagerconf pc;
	struct cn_pagerpick_ask bob = {
		.pid = 100, .uid = 2, .rule = -1, .user = "bob", .bytes = 3000 * MIB
	};
	struct cn_pagerpick_proc p[4];

	cn_pagerconf_defaults(&pc);
	pc.margin_mib = 0;
	pc.min_idle_s = 10;
	p[0] = proc(1, 1, "alice", -1, 4000, 100);
	p[1] = proc(2, 1, "alice", -1, 2000, 300);
	p[2] = proc(3, 3, "carol", -1, 2500, 50);
	is_str(choose(&pc, &bob, 4000, p, 3), "none", "room there already: nobody napped");
	is_str(choose(&pc, &bob, 500, p, 3), "2 1",
	       "everyone's share whole: the longest idle first");
	pc.dflt.share_pct = 50; /* 5000 MiB each */
	p[2].idle_s = 900;
	is_str(choose(&pc, &bob, 500, p, 3), "2 3",
	       "alice over her share (6000 of 5000 MiB): hers first, though carol idles longer; "
	       "then, alice under hers, the longest idle");
	p[0].idle_s = 5;
	is_str(choose(&pc, &bob, 500, p, 3), "2 3", "her other one worked 5 s ago: carol's next");
	p[0].idle_s = 100;
	bob.bytes = 5500 * MIB;
	is_str(choose(&pc, &bob, 0, p, 3),
	       "NOSPC: GPU 0 has 0 MiB free, 5500 MiB wanted ([pager] margin_mib included); 6500 "
	       "MiB of users under their share (alice, carol), bob holding 0 MiB and asking 5500 "
	       "over its share of 50 % (5000 MiB)",
	       "bob asking over his share: alice's first nap puts her under hers, then no more");
	p[3] = proc(4, 2, "bob", -1, 1000, 20);
	is_str(choose(&pc, &bob, 4500, p + 2, 2), "4",
	       "bob's own idle program napped for him over his share, carol's not");
	bob.bytes = 3000 * MIB;
}

/* Priorities, never_nap, min_idle_s's wait, the host's room, light nappers, the asker. */
static void test_pick_limits(void)
{
	struct cn_pagerconf pc;
	struct cn_pagerpick_ask bob = {
		.pid = 100, .uid = 2, .rule = -1, .user = "bob", .bytes = 3000 * MIB
	};
	struct cn_pagerpick_proc p[2];
	struct cn_pagerpick pk;
	struct cn_pagerpick_gpu g = { 0, 10000 * MIB, 0 };
	char why[1000];

	cn_pagerconf_defaults(&pc);
	pc.margin_mib = 0;
	pc.min_idle_s = 10;
	pc.n_rules = 1;
	pc.rules[0] = (struct cn_pagerconf_rule){ .id = 3, .share_pct = 100, .priority = 5 };
	snprintf(pc.rules[0].name, sizeof(pc.rules[0].name), "carol");
	p[0] = proc(1, 1, "alice", -1, 3000, 3);
	p[1] = proc(3, 3, "carol", 0, 4000, 500);
	is_str(choose(&pc, &bob, 0, p, 2),
	       "AGAIN: GPU 0 has 0 MiB free, 3000 MiB wanted ([pager] margin_mib included); 3000 "
	       "MiB that worked less than [pager] min_idle_s (10 s) ago (alice); 4000 MiB of a "
	       "higher priority (carol)",
	       "carol's priority above bob's; alice worked 3 s ago and would do: try again");
	cn_pagerpick_choose(&pc, &bob, &g, p, 2, &pk, why, sizeof(why));
	ok(pk.soon_pid == 1 && pk.soon_s > 6.9 && pk.soon_s < 7.1, "in 7 s, when 1 is idle 10 s");
	p[0].idle_s = -1;
	ok(cn_pagerpick_choose(&pc, &bob, &g, p, 2, &pk, why, sizeof(why)) == -ENOSPC,
	   "one working now gives no time to wait for");
	pc.rules[0].priority = 0;
	pc.rules[0].never = true;
	is_str(choose(&pc, &bob, 0, p + 1, 1),
	       "NOSPC: GPU 0 has 0 MiB free, 3000 MiB wanted ([pager] margin_mib included); 4000 "
	       "MiB never napped (carol)",
	       "carol never napped for bob");
	struct cn_pagerpick_ask carol = {
		.pid = 101, .uid = 3, .rule = 0, .user = "carol", .bytes = 2000 * MIB
	};
	is_str(choose(&pc, &carol, 0, p + 1, 1), "3", "but napped for carol's own programs");
	p[1].never = true;
	is_str(choose(&pc, &carol, 0, p + 1, 1),
	       "NOSPC: GPU 0 has 0 MiB free, 2000 MiB wanted ([pager] margin_mib included); 4000 "
	       "MiB never napped (carol)",
	       "a program never napped is not napped for its own user either");
	pc.n_rules = 0;
	p[1] = proc(6, 4, "dave", -1, 3000, 1000);
	p[1].no_host = true;
	is_str(choose(&pc, &bob, 1000, p + 1, 1),
	       "NOSPC: GPU 0 has 1000 MiB free, 3000 MiB wanted ([pager] margin_mib included); "
	       "3000 MiB whose nap's copy the host has no memory for (dave)",
	       "a nap the host has no memory for");
	p[1].no_host = false;
	p[1].kind = CN_PP_LIGHT;
	p[1].gives = 500 * MIB;
	bob.bytes = 512 * MIB;
	is_str(choose(&pc, &bob, 100, p + 1, 1),
	       "NOSPC: GPU 0 has 100 MiB free, 512 MiB wanted ([pager] margin_mib included); no "
	       "idle program under cudanap there to nap for it",
	       "a light napper is not deepened for memory");
	bob.context = true;
	is_str(choose(&pc, &bob, 100, p + 1, 1), "6", "but for a context");
	p[1].kind = CN_PP_NOT;
	is_str(choose(&pc, &bob, 100, p + 1, 1),
	       "NOSPC: GPU 0 has 100 MiB free, 512 MiB wanted ([pager] margin_mib included); no "
	       "idle program under cudanap there to nap for it",
	       "one that is not cudanap's, or busy, is never picked");
	p[1] = proc(100, 2, "bob", -1, 9000, 999);
	is_str(choose(&pc, &bob, 100, p + 1, 1),
	       "NOSPC: GPU 0 has 100 MiB free, 512 MiB wanted ([pager] margin_mib included); no "
	       "idle program under cudanap there to nap for it",
	       "the asker itself is never picked");
}

static void test_groups(void)
{
	struct cn_pagerconf pc;
	struct cn_pagerpick_ask eve = {
		.pid = 100, .uid = 5, .rule = -1, .user = "eve", .bytes = 2000 * MIB
	};
	struct cn_pagerpick_proc p[3];

	cn_pagerconf_defaults(&pc);
	pc.margin_mib = 0;
	pc.min_idle_s = 0;
	pc.dflt.share_pct = 30;
	pc.n_rules = 1;
	pc.rules[0] = (struct cn_pagerconf_rule){ .group = true, .id = 50, .share_pct = 40 };
	snprintf(pc.rules[0].name, sizeof(pc.rules[0].name), "lab");
	p[0] = proc(1, 1, "ann", 0, 2500, 50);
	p[1] = proc(2, 2, "ben", 0, 2000, 100);
	p[2] = proc(3, 3, "cat", -1, 2500, 500);
	ok(cn_pagerpick_used(&pc, 1, 0, p, 3) == 4500 * MIB &&
		   cn_pagerpick_share(&pc, 0, 10000 * MIB) == 4000 * MIB,
	   "a group's members counted together against its share");
	is_str(choose(&pc, &eve, 0, p, 3), "2",
	       "the lab over its 40 %% together: its longest idle first, though cat idles longer");
	eve.bytes = 4000 * MIB;
	is_str(choose(&pc, &eve, 0, p, 3),
	       "NOSPC: GPU 0 has 0 MiB free, 4000 MiB wanted ([pager] margin_mib included); 5000 "
	       "MiB of users under their share (ann, cat), eve holding 0 MiB and asking 4000 over "
	       "its share of 30 % (3000 MiB)",
	       "eve over her share: the lab napped down to its share, no further, cat not at all");
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_wire();
	test_conf();
	test_pick();
	test_pick_limits();
	test_groups();
	{
		char path[300];

		snprintf(path, sizeof(path), "%s/pager.ini", dir);
		unlink(path);
		rmdir(dir);
	}
	return tap_done();
}
