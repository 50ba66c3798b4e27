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
#include "cn_signame.h"
#include "tap.h"

static char dir[] = "/tmp/cn-unit-XXXXXX";

/* Write text to a file and load it; returns the load result, err holds the message. */
static int load_text(const char *text, struct cn_config *c, char *err)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.ini", dir);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
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
	expect_error("timeout_ms = 3\n", "1: timeout_ms: a key before any [section]");
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
	expect_error("[lock]\ntimeout = 5\n", "2: lock.timeout: unknown key");
	expect_error("[performance]\nhugepages = maybe\n",
		     "2: performance.hugepages: 'maybe' is not true or false");
	expect_error(
		"[performance]\nprefault_threads = 257\n",
		"2: performance.prefault_threads: '257' is not a number of threads from 0 to 256");
	expect_error("[nope]\nx = 1\n", "2: nope.x: unknown section");
	expect_error("[memory]\nown = sometimes\n",
		     "2: memory.own: 'sometimes' is not auto, always or never");
	ok(load_text("[memory]\nown = ALWAYS\n", &c, err) == 0 && c.own == CN_OWN_ALWAYS &&
		   load_text("[memory]\nown = never\n", &c, err) == 0 && c.own == CN_OWN_NEVER &&
		   load_text("[log]\nlevel = info\n", &c, err) == 0 && c.own == CN_OWN_AUTO,
	   "[memory] own: always, never, and auto by default");
	expect_error("[signals]\nsuspend\n", "2: syntax error: expected [section] or key = value");
	expect_error("[signals\n", "1: syntax error: expected [section] or key = value");
	{
		char text[600];

		snprintf(text, sizeof(text), "[hooks]\non_failure = %0500d\n", 0);
		expect_error(text, "2: line longer than 198 characters");
	}
	ok(cn_config_load(&c, "/nonexistent/job.ini", err, sizeof(err)) < 0, "missing file");
	is_str(err, "/nonexistent/job.ini: cannot open: No such file or directory",
	       "missing file message");
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
