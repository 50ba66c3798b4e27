/* Unit tests of the INI loader: every key, every error path with its FILE:LINE message, signal
 * names, gpu_map syntax and the status directory checks. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cn_config.h"
#include "cn_dirs.h"
#include "cn_gpumap.h"
#include "cn_near.h"
#include "cn_signame.h"
#include "tap.h"

static char dir[] = "/tmp/cn-unit-XXXXXX";

/* text written to the test's t.ini; its path. */
static const char *write_text(const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.ini", dir);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

/* Write text to a file and load it; returns the load result, err holds the message. */
static int load_text(const char *text, struct cn_config *c, char *err)
{
	const char *path = write_text(text);

	err[0] = '\0';
	return cn_config_load(c, path, err, CN_ERR_LEN);
}

static void expect_error(const char *text, const char *want_suffix)
{
	static struct cn_config c;
	char err[CN_ERR_LEN], want[CN_ERR_LEN];

	snprintf(want, sizeof(want), "%s/t.ini:%s", dir, want_suffix);
	ok(load_text(text, &c, err) < 0, "refused: %s", want_suffix);
	is_str(err, want, "message for: %s", want_suffix);
}

static void test_defaults(void)
{
	static struct cn_config c;
	char buf[64];

	setenv("XDG_RUNTIME_DIR", "/run/user/42", 1);
	cn_config_defaults(&c);
	ok(c.suspend_signal == SIGUSR1 && c.resume_signal == SIGUSR2, "default signals");
	ok(c.lock_timeout_ms == 10000, "default lock timeout 10000 ms");
	ok(c.log_level == CN_LOG_INFO && c.log_target[0] == '\0', "default log: info to stderr");
	ok(c.hook_timeout_ms == 30000, "default hook timeout");
	ok(c.hugepages && !c.keep_host_buffer && c.prefault_threads >= 1 && c.prefault_threads <= 8,
	   "default performance: huge pages, 1-8 prefault threads, no kept buffer");
	is_str(c.status_dir, "/run/user/42/cudanap", "status dir under XDG_RUNTIME_DIR");
	unsetenv("XDG_RUNTIME_DIR");
	cn_config_defaults(&c);
	snprintf(buf, sizeof(buf), "/tmp/cudanap-%u", (unsigned)getuid());
	is_str(c.status_dir, buf, "status dir without XDG_RUNTIME_DIR");
}

static void test_full_file(void)
{
	static struct cn_config c;
	char err[CN_ERR_LEN];
	const char *example = getenv("CN_EXAMPLE_INI");

	ok(example && cn_config_load(&c, example, err, sizeof(err)) == 0,
	   "the documented example INI loads");
	ok(c.suspend_signal == SIGUSR1 && c.resume_signal == SIGUSR2 &&
		   c.lock_timeout_ms == 10000 && c.gpu_map.n == 0 && c.hook_timeout_ms == 30000 &&
		   c.margin_mib == 256 && c.reserve && c.take_turns && !c.beside_restored &&
		   !c.allow_nccl && !c.nccl_suspendable,
	   "the example INI states the defaults");
	ok(load_text("; comment\n[signals]\nsuspend = SIGRTMIN+3\nresume = 40\n"
		     "[lock]\ntimeout_ms = 0\n[restore]\ngpu_map = 0=1, 1 = 0\nmargin_mib = 1024\n"
		     "reserve = off\ntake_turns = no\nbeside_restored = yes\n"
		     "[status]\ndir = /var/tmp/x\nif_unusable = Refuse\n[log]\nlevel = DEBUG\n"
		     "target = /tmp/cn.log\n"
		     "[hooks]\non_suspended = echo s\non_resumed = echo r\non_failure = echo f\n"
		     "timeout_ms = 5\n[performance]\nhugepages = no\nprefault_threads = 0\n"
		     "keep_host_buffer = On\n[preflight]\nallow_jax = yes\nallow_nccl = 1\n"
		     "[nccl]\nsuspendable = yes\n",
		     &c, err) == 0,
	   "a file setting every key loads");
	ok(c.suspend_signal == SIGRTMIN + 3 && c.resume_signal == 40, "signals set");
	ok(c.lock_timeout_ms == 0, "timeout 0 means wait forever");
	ok(c.gpu_map.n == 2 && c.gpu_map.pairs[0].from.index == 0 &&
		   c.gpu_map.pairs[0].to.index == 1 && c.gpu_map.pairs[1].from.index == 1 &&
		   c.gpu_map.pairs[1].to.index == 0,
	   "gpu_map parsed");
	is_str(c.status_dir, "/var/tmp/x", "status dir set");
	ok(c.status_refuse, "status.if_unusable = refuse");
	ok(c.log_level == CN_LOG_DEBUG, "log level is case-insensitive");
	is_str(c.log_target, "/tmp/cn.log", "log target set");
	is_str(c.on_suspended, "echo s", "on_suspended");
	is_str(c.on_resumed, "echo r", "on_resumed");
	is_str(c.on_failure, "echo f", "on_failure");
	ok(c.hook_timeout_ms == 5, "hook timeout");
	ok(!c.hugepages && c.prefault_threads == 0 && c.keep_host_buffer, "performance keys");
	ok(c.allow_jax && c.allow_nccl, "preflight keys");
	ok(c.nccl_suspendable, "nccl.suspendable");
	ok(c.margin_mib == 1024 && !c.reserve && !c.take_turns && c.beside_restored,
	   "restore margin, reservation, taking turns, moving beside restored processes");
	ok(load_text("[log]\ntarget = stderr\n", &c, err) == 0 && c.log_target[0] == '\0',
	   "log target stderr");
	ok(load_text("", &c, err) == 0 && c.suspend_signal == SIGUSR1, "an empty file is defaults");
}

/* [nap] make_room's words, and what each comes to with and without the node pager's socket. */
static void test_make_room(void)
{
	static const struct {
		const char *word;
		bool on, node, on_sock, node_sock;
	} want[] = {
		{ "false", false, false, false, false }, { "no", false, false, false, false },
		{ "user", true, false, true, false },	 { "node", true, true, true, true },
		{ "true", true, false, true, true },	 { "ON", true, false, true, true },
		{ "auto", false, false, true, true },
	};
	static struct cn_config c;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char err[CN_ERR_LEN], text[600];
	int fd, good = 0;

	cn_config_defaults(&c);
	ok(c.nap_room == CN_MAKE_ROOM_AUTO &&
		   strcmp(c.pager_socket, "/run/cudanap/pager.sock") == 0,
	   "make_room is auto by default, the node pager's socket in /run/cudanap");
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/pager.sock", dir);
	for (int sock = 0; sock < 2; sock++) {
		if (sock) {
			fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
			if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
				break;
		}
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			snprintf(text, sizeof(text), "[nap]\nmake_room = %s\npager_socket = %s\n",
				 want[i].word, a.sun_path);
			if (load_text(text, &c, err) == 0 &&
			    c.nap_make_room == (sock ? want[i].on_sock : want[i].on) &&
			    c.nap_room_node == (sock ? want[i].node_sock : want[i].node))
				good++;
			else
				printf("# make_room = %s, %s socket: on %d node %d (%s)\n",
				       want[i].word, sock ? "a" : "no", c.nap_make_room,
				       c.nap_room_node, err);
		}
	}
	ok(good == 2 * (int)(sizeof(want) / sizeof(want[0])),
	   "make_room's words, without the pager's socket and with it");
	unlink(a.sun_path);
	expect_error("[nap]\nmake_room = sometimes\n",
		     "2: nap.make_room: 'sometimes' is not true, false, user, node or auto");
	expect_error("[nap]\npager_socket = pager.sock\n",
		     "2: nap.pager_socket: 'pager.sock' must be an absolute path");
}

/* A value that is not its key's: one line, the file's line, the key, what it must be. */
static void test_values(void)
{
	expect_error("timeout_ms = 3\n", "1: timeout_ms: a key before any [section]; did you mean "
					 "[lock] timeout_ms or [hooks] timeout_ms?");
	expect_error("[signals]\nsuspend = SIGFOO\n",
		     "2: signals.suspend: 'SIGFOO' is not a signal that can be used (try SIGUSR1, "
		     "USR2, SIGRTMIN+3 or a number)");
	expect_error("\n\n[signals]\nresume = KILL\n",
		     "4: signals.resume: 'KILL' is not a signal that can be used (try SIGUSR1, "
		     "USR2, SIGRTMIN+3 or a number)");
	expect_error("[lock]\ntimeout_ms = -1\n",
		     "2: lock.timeout_ms: '-1' is not a number of milliseconds from 0 to 86400000");
	expect_error(
		"[lock]\ntimeout_ms = 10s\n",
		"2: lock.timeout_ms: '10s' is not a number of milliseconds from 0 to 86400000");
	expect_error("[lock]\ntimeout_ms = 86400001\n",
		     "2: lock.timeout_ms: '86400001' is not a number of milliseconds from 0 to "
		     "86400000");
	expect_error("[restore]\ngpu_map = 0:1\n", "2: restore.gpu_map: '0:1' is not OLD=NEW");
	expect_error("[restore]\nmargin_mib = -1\n",
		     "2: restore.margin_mib: '-1' is not a number of MiB from 0 to 1048576");
	expect_error("[restore]\nreserve = maybe\n",
		     "2: restore.reserve: 'maybe' is not true or false");
	expect_error("[restore]\ngpu_map = 0=GPU-12\n",
		     "2: restore.gpu_map: '0=GPU-12': each side must be a GPU index (0-63) or a "
		     "UUID like GPU-8c5c8d2e-0000-1111-2222-333344445555");
	expect_error("[restore]\ngpu_map = 0=1, 0=2\n",
		     "2: restore.gpu_map: GPU '0' is mapped twice");
	expect_error("[restore]\ngpu_map = 0=2, 1=2\n",
		     "2: restore.gpu_map: two GPUs are mapped onto '2'");
	expect_error("[restore]\ngpu_map = 64=0\n",
		     "2: restore.gpu_map: '64=0': each side must be a GPU index (0-63) or a UUID "
		     "like GPU-8c5c8d2e-0000-1111-2222-333344445555");
}

/* The rest of the file's errors: paths, words, a key given twice, unknown keys and sections, its
 * syntax, a line too long, a file missing. */
static void test_errors(void)
{
	static struct cn_config c;
	char err[CN_ERR_LEN];

	expect_error("[status]\ndir = relative/dir\n",
		     "2: status.dir: 'relative/dir' must be an absolute path");
	expect_error("[status]\nif_unusable = exit\n",
		     "2: status.if_unusable: 'exit' is not one of run, refuse");
	expect_error("[log]\nlevel = loud\n",
		     "2: log.level: 'loud' is not one of error, info, debug");
	expect_error("[log]\ntarget = cn.log\n",
		     "2: log.target: 'cn.log' must be an absolute path");
	expect_error(
		"[hooks]\ntimeout_ms = 0\n",
		"2: hooks.timeout_ms: must be at least 1 ms: hooks always run under a timeout");
	expect_error("[signals]\nsuspend = USR1\nsuspend = USR2\n",
		     "3: signals.suspend: given more than once (an indented line continues the key "
		     "above)");
	expect_error("[lock]\ntimeout = 5\n",
		     "2: lock.timeout: unknown key; did you mean timeout_ms?");
	expect_error("[lock]\nzzz = 5\n", "2: lock.zzz: unknown key");
	expect_error("[performance]\nhugepages = maybe\n",
		     "2: performance.hugepages: 'maybe' is not true or false");
	expect_error(
		"[performance]\nprefault_threads = 257\n",
		"2: performance.prefault_threads: '257' is not a number of threads from 0 to 256");
	expect_error("[nope]\nx = 1\n", "1: [nope]: unknown section");
	expect_error("[memory]\nown = sometimes\n",
		     "2: memory.own: 'sometimes' is not auto, always or never");
	ok(load_text("[memory]\nown = ALWAYS\n", &c, err) == 0 && c.own == CN_OWN_ALWAYS &&
		   load_text("[memory]\nown = never\n", &c, err) == 0 && c.own == CN_OWN_NEVER &&
		   load_text("[log]\nlevel = info\n", &c, err) == 0 && c.own == CN_OWN_AUTO,
	   "[memory] own: always, never, and auto by default");
	expect_error("[signals]\nsuspend\n", "2: syntax error: 'suspend' is not key = value, a "
					     "[section] or a ; comment");
	expect_error("[signals\n", "1: syntax error: '[signals' is a [section] without its ']'");
	{
		char text[600];

		snprintf(text, sizeof(text), "[hooks]\non_failure = %0500d\n", 0);
		expect_error(text, "2: line longer than 198 characters");
	}
	ok(cn_config_load(&c, "/nonexistent/job.ini", err, sizeof(err)) < 0, "missing file");
	is_str(err, "/nonexistent/job.ini: cannot open: No such file or directory",
	       "missing file message");
}

/* Write text and check it whole: every error kept. */
static int check_text(const char *text, struct cn_ini_errors *e)
{
	static struct cn_config c;

	return cn_config_check(&c, write_text(text), e);
}

/* The errors' lines and messages, one "LINE: MESSAGE" per line. */
static const char *listed(const struct cn_ini_errors *e)
{
	static char out[8192];
	size_t o = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < e->n && o < sizeof(out); i++)
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%d: %s\n", e->at[i].line,
				      e->at[i].msg);
	return out;
}

/* Two mistakes or more: each error at its own line with its own message, all of them, in the
 * file's order; the first of them, with how many more, in cn_config_load's one line. */
static void test_every_error(void)
{
	static struct cn_ini_errors e;
	static struct cn_config c;
	char err[CN_ERR_LEN], want[CN_ERR_LEN], text[8192];
	size_t o = 0;

	ok(check_text("[nap]\nidel_s = 10\n[lock]\ntimeout_ms = soon\n", &e) == -EINVAL && e.n == 2,
	   "two mistakes: two errors");
	is_str(listed(&e),
	       "2: nap.idel_s: unknown key; did you mean idle_s?\n"
	       "4: lock.timeout_ms: 'soon' is not a number of milliseconds from 0 to 86400000\n",
	       "each at its own line, with its own message");
	ok(load_text("[nap]\nidel_s = 10\n[lock]\ntimeout_ms = soon\n", &c, err) == -EINVAL,
	   "cn_config_load refuses it too");
	snprintf(want, sizeof(want),
		 "%s/t.ini:2: nap.idel_s: unknown key; did you mean idle_s? (and 1 more error: "
		 "cudanap check-config lists them)",
		 dir);
	is_str(err, want, "in one line: the first error, its own line, and how many more");
	ok(check_text("[nape]\nidle_s = 1\nto = x\n[Nap]\n[signals]\nsuspend\n[lock\n"
		      "[memory]\nhost_cache = 95\n[nap]\nhost_cache = 3\n  more\n"
		      "keep_host_copy = maybe\nIdle_S = 3\n",
		      &e) == -EINVAL,
	   "a file of many mistakes is refused");
	is_str(listed(&e),
	       "1: [nape]: unknown section; did you mean [nap]?\n"
	       "4: [Nap]: unknown section; did you mean [nap]?\n"
	       "6: syntax error: 'suspend' is not key = value, a [section] or a ; comment\n"
	       "7: syntax error: '[lock' is a [section] without its ']'\n"
	       "9: memory.host_cache: '95' is not a number of percent from 0 to 90\n"
	       "11: nap.host_cache: unknown key; did you mean [memory] host_cache?\n"
	       "13: nap.keep_host_copy: 'maybe' is not true or false\n"
	       "14: nap.Idle_S: unknown key; did you mean idle_s?\n",
	       "each said once: a section's keys not again, an indented line not again");
	is_str(e.at[0].section, "nape", "an error names its section");
	is_str(e.at[0].hint, "[nap]", "and the section meant");
	ok(e.at[5].line == 11 && strcmp(e.at[5].section, "nap") == 0 &&
		   strcmp(e.at[5].key, "host_cache") == 0 &&
		   strcmp(e.at[5].hint, "[memory] host_cache") == 0,
	   "a key of another section: its section, key and the one meant");
	ok(e.at[2].section[0] == '\0' && e.at[2].key[0] == '\0' && e.at[2].hint[0] == '\0',
	   "a syntax error names no key");
	ok(check_text("[nap]\nto = disk\nidle_s = x\n[signals]\nprepare = USR1\n", &e) == -EINVAL,
	   "errors of values and of keys together");
	is_str(listed(&e),
	       "2: nap.to: disk needs a directory in [hibernate] dir\n"
	       "3: nap.idle_s: 'x' is not a number of seconds from 0 to 86400\n"
	       "5: signals.prepare: is the suspend or resume signal too; prepare needs a signal "
	       "of its own\n",
	       "the checks between keys are said at their lines too, in order");
	snprintf(text, sizeof(text), "[hooks]\non_failure = %0500d\n[lock]\ntimeout_ms = x\n", 0);
	ok(check_text(text, &e) == -EINVAL && e.n == 2, "a line too long and an error after it");
	is_str(listed(&e),
	       "2: line longer than 198 characters\n"
	       "4: lock.timeout_ms: 'x' is not a number of milliseconds from 0 to 86400000\n",
	       "the long line said once, the next line's error at its own line");
	ok(check_text("\xef\xbb\xbf[nap] ; a comment\nidle_s: 5 ; five\n# note\n\n   \n"
		      "[signals]\nsuspend = USR1\n  \n",
		      &e) == 0 &&
		   e.n == 0,
	   "no error where inih sees none: a BOM, inline comments, key: value, blank lines");
	for (int i = 0; i < 40; i++)
		o += (size_t)snprintf(text + o, sizeof(text) - o, "[lock]\nt%d = 1\n", i);
	ok(check_text(text, &e) == -EINVAL && e.n == CN_INI_MAX_ERRORS &&
		   e.more == 40 - CN_INI_MAX_ERRORS && e.at[0].line == 2 &&
		   e.at[CN_INI_MAX_ERRORS - 1].line == 2 * CN_INI_MAX_ERRORS,
	   "40 errors: the first %d kept, in order, and the number of the rest", CN_INI_MAX_ERRORS);
	ok(check_text("[signals]\nsuspend = \x01\x1b[2J\n", &e) == -EINVAL &&
		   !strpbrk(e.at[0].msg, "\x01\x1b"),
	   "a value's control bytes are not in the message");
	ok(cn_config_check(&c, "/nonexistent/job.ini", &e) == -ENOENT && e.n == 1 &&
		   e.at[0].line == 0,
	   "a missing file: one error, of the file as a whole");
	is_str(e.at[0].msg, "cannot open: No such file or directory", "its message");
}

/* The hint's word: one slip (a letter in, out, changed or two swapped), two in a longer word. */
static void test_near(void)
{
	static const char *const keys[] = { "idle_s", "to", "wake_on", "make_room", "min_idle_s" };

	ok(cn_near_distance("idel_s", "idle_s") == 1, "two letters swapped: one edit");
	ok(cn_near_distance("IDLE_S", "idle_s") == 0, "case is no edit");
	ok(cn_near_distance("idle", "idle_s") == 2, "two letters left out: two edits");
	ok(cn_near_distance("", "to") == 2 && cn_near_distance("abc", "") == 3,
	   "to and from nothing");
	ok(cn_near_best("idel_s", keys, 5) == 0, "idel_s: idle_s");
	ok(cn_near_best("tp", keys, 5) == 1, "tp: to");
	ok(cn_near_best("xy", keys, 5) == -1, "xy: nothing near in a short word");
	ok(cn_near_best("makeroom", keys, 5) == 3, "makeroom: make_room");
	ok(cn_near_best("min_idle", keys, 5) == 4, "min_idle: min_idle_s");
	ok(cn_near_best("wake", keys, 5) == -1, "wake: too far from wake_on (three edits)");
	ok(cn_near_best("completely_different", keys, 5) == -1, "a word near nothing");
}

static void test_signals(void)
{
	static const struct {
		const char *s;
		int sig;
	} good[] = {
		{ "SIGUSR1", SIGUSR1 }, { "usr2", SIGUSR2 },	  { "SIGTSTP", SIGTSTP },
		{ "12", 12 },		{ "SIGWINCH", SIGWINCH }, { "RTMIN", 0 },
		{ "SIGRTMIN+3", 3 },	{ "RTMAX-1", -1 },
	};
	static const char *const bad[] = { "0",		  "65",		"32",	      "KILL",
					   "SIGSTOP",	  "SEGV",	"SIGBUS",     "abort",
					   "SIGRTMIN+99", "SIGRTMAX+1", "SIGRTMIN-1", "",
					   "USR1x",	  "-1",		"SIGTERM",    "15",
					   "HUP",	  "SIGINT",	"QUIT",	      "9" };
	char buf[32];
	int sig;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int want = good[i].sig;

		if (strstr(good[i].s, "RTMIN"))
			want += SIGRTMIN;
		else if (strstr(good[i].s, "RTMAX"))
			want += SIGRTMAX;
		ok(cn_signame_parse(good[i].s, &sig) == 0 && sig == want, "signal '%s'", good[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(cn_signame_parse(bad[i], &sig) < 0, "signal '%s' refused", bad[i]);
	is_str(cn_signame_format(SIGUSR1, buf, sizeof(buf)), "SIGUSR1", "name of SIGUSR1");
	is_str(cn_signame_format(SIGRTMIN + 2, buf, sizeof(buf)), "SIGRTMIN+2",
	       "name of SIGRTMIN+2");
}

static void test_gpu_map(void)
{
	char err[CN_ERR_LEN], s[CN_UUID_STR_LEN], text[200];
	struct cn_gpumap m = { .n = 99 };
	struct cn_gpu_pair *p = m.pairs;
	struct cn_uuid u;

	ok(cn_gpumap_parse("  ", &m, err, sizeof(err)) == 0 && m.n == 0, "empty map");
	ok(cn_gpumap_parse("GPU-8c5c8d2e-0a1b-2c3d-4e5f-60718293a4b5=1", &m, err, sizeof(err)) ==
			   0 &&
		   m.n == 1 && p[0].from.index == -1 && p[0].from.uuid.b[0] == 0x8c &&
		   p[0].from.uuid.b[15] == 0xb5 && p[0].to.index == 1,
	   "UUID on the left, index on the right");
	cn_uuid_fmt(&p[0].from.uuid, s);
	is_str(s, "GPU-8c5c8d2e-0a1b-2c3d-4e5f-60718293a4b5", "UUID round trip");
	cn_gpumap_write(&m, text, sizeof(text));
	is_str(text, "GPU-8c5c8d2e-0a1b-2c3d-4e5f-60718293a4b5=1", "the map's text again");
	ok(cn_uuid_parse("gpu-8C5C8D2E0A1B2C3D4E5F60718293A4B5", &u) == 0, "UUID without dashes");
	ok(cn_uuid_parse("MIG-8c5c8d2e-0a1b-2c3d-4e5f-60718293a4b5", &u) < 0, "MIG UUID refused");
	ok(cn_uuid_parse("GPU-8c5c8d2e-0a1b-2c3d-4e5f-60718293a4b5ff", &u) < 0,
	   "long UUID refused");
	ok(cn_gpumap_parse("0=1,1=0,2=3,3=2", &m, err, sizeof(err)) == 0 && m.n == 4, "four pairs");
	cn_gpumap_write(&m, text, sizeof(text));
	is_str(text, "0=1, 1=0, 2=3, 3=2", "written back as it parses");
	ok(cn_gpumap_parse("0=1,", &m, err, sizeof(err)) == 0 && m.n == 1,
	   "trailing comma tolerated");
	ok(cn_gpumap_parse("=1", &m, err, sizeof(err)) < 0, "empty side refused");
}

/* The INI is read again at every action: only a regular file will do. */
static void test_not_a_file(void)
{
	static struct cn_config c;
	char err[CN_ERR_LEN], want[CN_ERR_LEN];

	ok(cn_config_load(&c, dir, err, sizeof(err)) == -EISDIR, "a directory is refused");
	snprintf(want, sizeof(want), "%s: a directory, not an INI file", dir);
	is_str(err, want, "and says so");
	ok(cn_config_load(&c, "/dev/null", err, sizeof(err)) < 0, "/dev/null is refused");
	is_str(err,
	       "/dev/null: not a regular file; an INI file is read again at each suspend and "
	       "resume",
	       "and says why");
}

/* An INI over 1 MiB is refused at a start, and root's reading of one another process names takes
 * none of it: both see the same file (1 MiB of comments before [status] hid a process from root).
 */
static void test_too_long(void)
{
	static struct cn_config c;
	char err[CN_ERR_LEN], want[CN_ERR_LEN], path[300], sdir[300];
	const char *tail = "[status]\ndir = /elsewhere\n";
	FILE *f;

	snprintf(path, sizeof(path), "%s/long.ini", dir);
	f = fopen(path, "w");
	for (int i = 0; i < (1 << 20) / 64; i++)
		fprintf(f, "; %61s\n", "a comment of sixty-four bytes, the line's end included");
	fputs(tail, f);
	fclose(f);
	ok(cn_config_load(&c, path, err, sizeof(err)) == -EFBIG, "an INI over 1 MiB is refused");
	snprintf(want, sizeof(want), "%s: %d bytes; an INI file is 1 MiB at most", path,
		 (1 << 20) + (int)strlen(tail));
	is_str(err, want, "and says so");
	cn_config_status_dir(path, NULL, "/run/user/1", getuid(), getgid(), sdir, sizeof(sdir));
	is_str(sdir, "/run/user/1/cudanap", "root's guess of its status dir takes none of it");
	if (truncate(path, (1 << 20) - 64) < 0)
		perror(path);
	f = fopen(path, "a");
	fputs(tail, f);
	fclose(f);
	ok(cn_config_load(&c, path, err, sizeof(err)) == 0, "one just under it is read");
	cn_config_status_dir(path, NULL, "/run/user/1", getuid(), getgid(), sdir, sizeof(sdir));
	is_str(sdir, "/elsewhere", "and root reads it whole too");
}

static void test_status_dir(void)
{
	char d[300], err[CN_ERR_LEN], want[CN_ERR_LEN];
	struct stat st;

	snprintf(d, sizeof(d), "%s/status", dir);
	ok(cn_dirs_status_check(d, err, sizeof(err)) == 0,
	   "a missing status dir that can be made passes the check");
	ok(stat(d, &st) < 0, "and the check made nothing");
	snprintf(d, sizeof(d), "%s/none/status", dir);
	ok(cn_dirs_status_check(d, err, sizeof(err)) < 0, "one whose parent is missing does not");
	snprintf(want, sizeof(want), "status dir %s: cannot be created: %s/none is not a directory",
		 d, dir);
	is_str(err, want, "and says why");
	snprintf(d, sizeof(d), "%s/status", dir);
	ok(cn_dirs_status_prepare(d, err, sizeof(err)) == 0, "status dir created");
	ok(stat(d, &st) == 0 && (st.st_mode & 0777) == 0700, "status dir is 0700");
	ok(cn_dirs_status_prepare(d, err, sizeof(err)) == 0, "existing status dir accepted");
	chmod(d, 0777);
	ok(cn_dirs_status_prepare(d, err, sizeof(err)) < 0, "world-writable status dir refused");
	snprintf(want, sizeof(want), "status dir %s: mode 777 lets others write; chmod 700 it", d);
	is_str(err, want, "world-writable message");
	ok(cn_dirs_status_check(d, err, sizeof(err)) < 0, "the check refuses it too");
	is_str(err, want, "with the same message");
	chmod(d, 0700);
	snprintf(d, sizeof(d), "%s/link", dir);
	if (symlink("status", d) < 0)
		perror("symlink");
	ok(cn_dirs_status_prepare(d, err, sizeof(err)) < 0, "symlinked status dir refused");
	if (geteuid() == 0) {
		snprintf(d, sizeof(d), "%s/other", dir);
		mkdir(d, 0700);
		if (chown(d, 65534, 65534) < 0)
			perror("chown");
		ok(cn_dirs_status_prepare(d, err, sizeof(err)) < 0,
		   "another user's status dir refused");
		snprintf(
			want, sizeof(want),
			"status dir %s: owned by uid 65534, not by you (uid 0): another user made "
			"it; name another ([status] dir, CUDANAP_STATUS_DIR or XDG_RUNTIME_DIR) or "
			"have it removed",
			d);
		is_str(err, want, "another user's dir message: its owner and the way out");
	} else {
		ok(1, "another user's status dir refused # SKIP needs root to make one");
		ok(1, "another user's dir message # SKIP needs root");
	}
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_defaults();
	test_full_file();
	test_values();
	test_errors();
	test_make_room();
	test_every_error();
	test_near();
	test_signals();
	test_gpu_map();
	test_not_a_file();
	test_too_long();
	test_status_dir();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return tap_done();
}
